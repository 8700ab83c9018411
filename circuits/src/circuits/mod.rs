//! Test circuits with deterministic witnesses drawn from a seed, and [`CircuitKind`] to
//! pick the instance nearest a target constraint count.
pub mod chain;
pub mod sector;
pub mod sha;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;

pub use chain::ChainCircuit;
pub use sector::{Sector, SectorPartitionCircuit};
pub use sha::{ShaBellpepperCircuit, ShaCircuit};

use crate::native::{NativeCircuit, NativeCs};
use crate::CircuitError;

/// The test circuit families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitKind {
    Chain,
    Sha,
    Sector,
}

impl CircuitKind {
    pub const ALL: [CircuitKind; 3] = [CircuitKind::Chain, CircuitKind::Sha, CircuitKind::Sector];
    pub fn name(&self) -> &'static str {
        match self {
            CircuitKind::Chain => "chain",
            CircuitKind::Sha => "sha",
            CircuitKind::Sector => "sector",
        }
    }
}

impl std::str::FromStr for CircuitKind {
    type Err = CircuitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CircuitKind::ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| CircuitError::Invalid {
            what: "circuit kind",
            reason: format!("'{s}' is not one of chain, sha, sector"),
        })
    }
}

impl std::fmt::Display for CircuitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Largest target accepted by [`build`] (2^28: beyond any partition on this machine).
pub const TARGET_CONSTRAINTS_MAX: usize = 1 << 28;

/// The instance of `kind` whose size is nearest `target_constraints` (seeded by `seed`;
/// for `sector`, `seed` is the sector id and the partition is 0).
pub fn build(kind: CircuitKind, target_constraints: usize, seed: u64) -> Result<AnyCircuit, CircuitError> {
    if target_constraints == 0 || target_constraints > TARGET_CONSTRAINTS_MAX {
        return Err(CircuitError::Invalid {
            what: "target constraints",
            reason: format!("{target_constraints} not in 1..={TARGET_CONSTRAINTS_MAX}"),
        });
    }
    Ok(match kind {
        CircuitKind::Chain => AnyCircuit::Chain(ChainCircuit::new(
            ChainCircuit::steps_for_constraints(target_constraints),
            seed,
        )),
        CircuitKind::Sha => {
            AnyCircuit::Sha(ShaCircuit::new(ShaCircuit::blocks_for_constraints(target_constraints), seed))
        }
        CircuitKind::Sector => {
            AnyCircuit::Sector(SectorPartitionCircuit::for_constraints(seed, 0, target_constraints))
        }
    })
}

/// One of the test circuits. As a `bellpepper_core::Circuit` it is the *generic* path:
/// chain's own bellpepper code, sha with bellpepper's SHA-256 gadget, sector through the
/// bridge; as a [`NativeCircuit`] it is the native path.
#[derive(Clone, Debug)]
pub enum AnyCircuit {
    Chain(ChainCircuit),
    Sha(ShaCircuit),
    Sector(SectorPartitionCircuit),
}

impl AnyCircuit {
    pub fn kind(&self) -> CircuitKind {
        match self {
            AnyCircuit::Chain(_) => CircuitKind::Chain,
            AnyCircuit::Sha(_) => CircuitKind::Sha,
            AnyCircuit::Sector(_) => CircuitKind::Sector,
        }
    }
    /// What the generic path runs, in words.
    pub fn generic_gadgets(&self) -> &'static str {
        match self {
            AnyCircuit::Chain(_) => "bellpepper-core API",
            AnyCircuit::Sha(_) => "bellpepper 0.2 sha256 gadget",
            AnyCircuit::Sector(_) => "native gadgets via bellpepper bridge",
        }
    }
}

impl NativeCircuit for AnyCircuit {
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError> {
        match self {
            AnyCircuit::Chain(c) => c.synthesize_native(cs),
            AnyCircuit::Sha(c) => c.synthesize_native(cs),
            AnyCircuit::Sector(c) => c.synthesize_native(cs),
        }
    }
}

impl Circuit<Scalar> for AnyCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            AnyCircuit::Chain(c) => c.synthesize(cs),
            AnyCircuit::Sha(c) => c.bellpepper().synthesize(cs),
            AnyCircuit::Sector(c) => c.synthesize(cs),
        }
    }
}
