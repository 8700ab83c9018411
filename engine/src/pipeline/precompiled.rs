//! Precompiled partition circuits: witness-only synthesis plus sparse products against
//! constraints recorded once per circuit kind (`arenaprove_circuits::precompiled`).

use std::sync::Arc;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;

use super::job::PartitionCircuit;
use arenaprove_circuits::native::NativeCircuit;
use arenaprove_circuits::precompiled::PartedCircuit;
use arenaprove_circuits::{ArenaAssignment, Precompiled};

/// A bellpepper-core circuit synthesized through its kind's recorded constraints: `alloc`
/// closures write the witness into the assignment's slabs, `enforce` is skipped, then
/// a, b, c are computed from the matrices in parallel. The assignment is byte-identical to
/// [`super::Generic`]'s; a circuit that does not match the recording fails its partition.
pub struct PrecompiledCircuit<C> {
    pub circuit: C,
    pub matrices: Arc<Precompiled>,
}

impl<C: Circuit<Scalar> + Send + 'static> PartitionCircuit for PrecompiledCircuit<C> {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        let PrecompiledCircuit { circuit, matrices } = *self;
        matrices.witness_into(circuit, cs).map_err(|e| e.into_synthesis())?;
        matrices.products_or_defer(cs).map_err(|e| e.into_synthesis())
    }
}

/// Boxes a bellpepper-core circuit as a partition circuit synthesized through `matrices`.
pub fn precompiled<C: Circuit<Scalar> + Send + 'static>(
    circuit: C,
    matrices: Arc<Precompiled>,
) -> Box<dyn PartitionCircuit> {
    Box::new(PrecompiledCircuit { circuit, matrices })
}

/// A native circuit synthesized through its kind's recorded constraints
/// ([`Precompiled::witness_into_native`]): its gadgets' `alloc`s write the witness and their
/// `enforce`s only count, so no linear combination is built (through the bellpepper bridge,
/// [`PrecompiledCircuit`] of a `ViaBridge`, every constraint's combinations are still
/// built, then dropped); then the products. The assignment is byte-identical to
/// [`super::Native`]'s.
pub struct PrecompiledNative<C> {
    pub circuit: C,
    pub matrices: Arc<Precompiled>,
}

impl<C: NativeCircuit + Send + 'static> PartitionCircuit for PrecompiledNative<C> {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        let PrecompiledNative { circuit, matrices } = *self;
        matrices.witness_into_native(&circuit, cs).map_err(|e| e.into_synthesis())?;
        matrices.products_or_defer(cs).map_err(|e| e.into_synthesis())
    }
}

/// Boxes a native circuit as a partition circuit synthesized through `matrices`.
pub fn precompiled_native<C: NativeCircuit + Send + 'static>(
    circuit: C,
    matrices: Arc<Precompiled>,
) -> Box<dyn PartitionCircuit> {
    Box::new(PrecompiledNative { circuit, matrices })
}

/// A circuit of a prologue and independent parts ([`PartedCircuit`]) synthesized through
/// its kind's recorded constraints with the parallel witness
/// ([`Precompiled::witness_parts`]: the parts run on the rayon pool, each into its own
/// range of the slabs), then the products. Byte-identical to the serial witness.
pub struct PartedPrecompiled<P> {
    pub circuit: P,
    pub matrices: Arc<Precompiled>,
}

impl<P: PartedCircuit + 'static> PartitionCircuit for PartedPrecompiled<P> {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        let PartedPrecompiled { circuit, matrices } = *self;
        matrices.witness_parts(&circuit, cs).map_err(|e| e.into_synthesis())?;
        matrices.products_or_defer(cs).map_err(|e| e.into_synthesis())
    }
}

/// Boxes a [`PartedCircuit`] as a partition circuit with the parallel witness.
pub fn precompiled_parts<P: PartedCircuit + 'static>(
    circuit: P,
    matrices: Arc<Precompiled>,
) -> Box<dyn PartitionCircuit> {
    Box::new(PartedPrecompiled { circuit, matrices })
}
