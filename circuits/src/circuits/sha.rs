//! `sha`: SHA-256 over N 64-byte blocks of seeded random bytes (so N + 1 compressions
//! with the padding block), message bits allocated as private booleans, the digest packed
//! into public inputs (254 bits per input, bit j of a chunk weighted 2^j, digest bits most
//! significant first: bellpepper's `multipack::pack_into_inputs` convention).
//!
//! Two circuits with the same message and the same public inputs: [`ShaCircuit`] (native
//! gadgets; as a `bellpepper_core::Circuit` it runs them through the bridge) and
//! [`ShaBellpepperCircuit`] (bellpepper 0.2's own SHA-256 gadget).

use bellpepper::gadgets::multipack;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::native::{sha256, synthesize_bellpepper, Bit, NativeCircuit, NativeCs};
use crate::CircuitError;

/// Bits per packed public input.
pub const PACK_BITS: usize = Scalar::CAPACITY as usize;

fn message_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x7368_6132_3536_0000)
}

/// SHA-256 of `blocks * 64` seeded bytes, native gadgets.
#[derive(Clone, Copy, Debug)]
pub struct ShaCircuit {
    pub blocks: usize,
    pub seed: u64,
}

impl ShaCircuit {
    pub fn new(blocks: usize, seed: u64) -> Self {
        ShaCircuit { blocks, seed }
    }
    pub fn message(&self) -> Vec<u8> {
        let mut rng = message_rng(self.seed);
        (0..self.blocks * 64).map(|_| rng.next_u32() as u8).collect()
    }
    /// The bellpepper-gadget twin (same message, same public inputs).
    pub fn bellpepper(&self) -> ShaBellpepperCircuit {
        ShaBellpepperCircuit { blocks: self.blocks, seed: self.seed }
    }
    /// Blocks whose circuit is nearest `constraints` (at least 1).
    pub fn blocks_for_constraints(constraints: usize) -> usize {
        // Counted once per process (the sizes do not depend on the message).
        static ONE_TWO: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
        let &(one, two) = ONE_TWO.get_or_init(|| {
            let count = |blocks| crate::shape_of_native(&ShaCircuit::new(blocks, 0)).map(|s| s.constraints);
            (count(1).unwrap_or(1), count(2).unwrap_or(2))
        });
        let per = (two - one).max(1);
        let base = one - per;
        (((constraints.saturating_sub(base)) as f64 / per as f64).round() as usize).max(1)
    }
}

/// Packs digest bits (most significant first) into field elements, [`PACK_BITS`] each.
pub fn pack_bits(bits: &[bool]) -> Vec<Scalar> {
    bits.chunks(PACK_BITS)
        .map(|chunk| {
            chunk.iter().enumerate().fold(Scalar::ZERO, |acc, (j, &b)| {
                if b {
                    acc + crate::native::uint32::pow2(j)
                } else {
                    acc
                }
            })
        })
        .collect()
}

/// The public inputs (ONE excluded) of a sha circuit over `digest`.
pub fn digest_inputs(digest: &[u8; 32]) -> Vec<Scalar> {
    let bits: Vec<bool> = digest.iter().flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1 == 1)).collect();
    pack_bits(&bits)
}

/// Allocates the packed digest as public inputs: one constraint
/// `(sum 2^j bit_j) * ONE = input` per chunk.
pub fn pack_into_inputs<CS: NativeCs>(cs: &mut CS, bits: &[Bit]) -> Result<(), CircuitError> {
    for chunk in bits.chunks(PACK_BITS) {
        let value = chunk.iter().enumerate().fold(Scalar::ZERO, |acc, (j, b)| {
            if b.value() {
                acc + crate::native::uint32::pow2(j)
            } else {
                acc
            }
        });
        let input = cs.alloc_input(value)?;
        cs.enforce(
            |l| {
                for (j, b) in chunk.iter().enumerate() {
                    b.add_to_lc(l, crate::native::uint32::pow2(j));
                }
            },
            |l| {
                l.add_const(Scalar::ONE);
            },
            |l| {
                l.add_var(input);
            },
        );
    }
    Ok(())
}

impl NativeCircuit for ShaCircuit {
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError> {
        if self.blocks == 0 {
            return Err(CircuitError::Invalid { what: "sha blocks", reason: "must be at least 1".into() });
        }
        let mut rng = message_rng(self.seed);
        let mut byte = 0u8;
        let digest = sha256::sha256(cs, self.blocks * 64, |cs, i| {
            if i % 8 == 0 {
                byte = rng.next_u32() as u8;
            }
            Bit::alloc(cs, (byte >> (7 - i % 8)) & 1 == 1)
        })?;
        pack_into_inputs(cs, &digest)
    }
}

impl Circuit<Scalar> for ShaCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        synthesize_bellpepper(&self, cs)
    }
}

/// The same SHA-256 computation with bellpepper 0.2's gadget (`bellpepper::gadgets::sha256`).
#[derive(Clone, Copy, Debug)]
pub struct ShaBellpepperCircuit {
    pub blocks: usize,
    pub seed: u64,
}

impl Circuit<Scalar> for ShaBellpepperCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let message = ShaCircuit::new(self.blocks, self.seed).message();
        let mut bits = Vec::with_capacity(message.len() * 8);
        for (i, byte) in message.iter().enumerate() {
            for k in (0..8).rev() {
                let b =
                    AllocatedBit::alloc(cs.namespace(|| format!("bit {i}.{k}")), Some((byte >> k) & 1 == 1))?;
                bits.push(Boolean::from(b));
            }
        }
        let digest = bellpepper::gadgets::sha256::sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "pack"), &digest)
    }
}
