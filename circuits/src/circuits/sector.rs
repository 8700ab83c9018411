//! `sector`: a partition-shaped circuit mimicking a PoRep partition's mix: per challenge,
//! boolean-heavy SHA-256 work (one compression of a 64-byte block of private bits, like a
//! labeling step) and field-heavy Poseidon-style Merkle inclusion (the digest, packed to a
//! field element, is the leaf of a depth-[`MERKLE_DEPTH`] path whose root is a public
//! input). Challenges are added until the target constraint count is nearest; the rest
//! is made up by extra levels on the last path. Everything is drawn from a seed made of
//! the sector id and the partition index. A *sector* is [`Sector::partitions`] such
//! circuits (default [`PARTITIONS_DEFAULT`], as in PoRep).
//!
//! Roots differ per challenge (siblings are random), so each is its own public input.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::native::merkle::{merkle_root, PathStep, CONSTRAINTS_PER_LEVEL};
use crate::native::{sha256, synthesize_bellpepper, uint32::pow2, Bit, NativeCircuit, NativeCs};
use crate::CircuitError;

/// Depth of each challenge's Merkle path (a 32 GiB sector has 2^30 32-byte nodes).
pub const MERKLE_DEPTH: usize = 30;
/// Partitions per sector (PoRep's 10).
pub const PARTITIONS_DEFAULT: usize = 10;
/// Bits of the digest packed into the Merkle leaf.
const LEAF_BITS: usize = 254;

/// One partition circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorPartitionCircuit {
    pub sector_id: u64,
    pub partition: usize,
    pub challenges: usize,
    /// Levels added to the last challenge's path to reach the target size.
    pub extra_levels: usize,
}

impl SectorPartitionCircuit {
    /// The partition circuit nearest `target_constraints` (at least one challenge).
    pub fn for_constraints(sector_id: u64, partition: usize, target_constraints: usize) -> Self {
        let probe = SectorPartitionCircuit { sector_id, partition, challenges: 1, extra_levels: 0 };
        // shape(1 challenge) = per_challenge + 1 (ONE's input row); each challenge adds its
        // root input row too.
        let one = crate::shape_of_native(&probe).map(|s| s.constraints).unwrap_or(1);
        let per = one - 1;
        let challenges = (target_constraints.saturating_sub(1) / per).max(1);
        let used = challenges * per + 1;
        let rest = target_constraints.saturating_sub(used);
        let extra_levels = (rest as f64 / CONSTRAINTS_PER_LEVEL as f64).round() as usize;
        SectorPartitionCircuit { sector_id, partition, challenges, extra_levels }
    }

    fn rng(&self) -> ChaCha8Rng {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.sector_id.to_le_bytes());
        seed[8..16].copy_from_slice(&(self.partition as u64).to_le_bytes());
        seed[16..].copy_from_slice(b"arenaprove:part!");
        ChaCha8Rng::from_seed(seed)
    }
}

impl NativeCircuit for SectorPartitionCircuit {
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError> {
        if self.challenges == 0 {
            return Err(CircuitError::Invalid {
                what: "sector challenges",
                reason: "must be at least 1".into(),
            });
        }
        let mut rng = self.rng();
        for ch in 0..self.challenges {
            // Boolean-heavy: one SHA-256 compression over 512 private bits.
            let mut block = [Bit::Const(false); 512];
            let mut byte = 0u8;
            for (i, slot) in block.iter_mut().enumerate() {
                if i % 8 == 0 {
                    byte = rng.next_u32() as u8;
                }
                *slot = Bit::alloc(cs, (byte >> (7 - i % 8)) & 1 == 1)?;
            }
            let state = sha256::compress(cs, &block, &sha256::iv())?;
            let digest = sha256::digest_bits(&state);
            // Leaf = first 254 digest bits packed: (sum 2^j bit_j) * ONE = leaf.
            let leaf_x = digest[..LEAF_BITS].iter().enumerate().fold(Scalar::from(0u64), |acc, (j, b)| {
                if b.value() {
                    acc + pow2(j)
                } else {
                    acc
                }
            });
            let leaf = cs.alloc_aux(leaf_x)?;
            cs.enforce(
                |l| {
                    for (j, b) in digest[..LEAF_BITS].iter().enumerate() {
                        b.add_to_lc(l, pow2(j));
                    }
                },
                |l| {
                    l.add_const(Scalar::from(1u64));
                },
                |l| {
                    l.add_var(leaf);
                },
            );
            // Field-heavy: a Poseidon-style Merkle path.
            let depth = MERKLE_DEPTH + if ch + 1 == self.challenges { self.extra_levels } else { 0 };
            let path_rng = &mut rng;
            let steps = (0..depth).map(|_| {
                let is_right = path_rng.next_u32() & 1 == 1;
                PathStep { sibling: Scalar::random(&mut *path_rng), is_right }
            });
            let (root, root_x) = merkle_root(cs, (leaf, leaf_x), steps)?;
            let root_in = cs.alloc_input(root_x)?;
            cs.enforce(
                |l| {
                    l.add_var(root);
                },
                |l| {
                    l.add_const(Scalar::from(1u64));
                },
                |l| {
                    l.add_var(root_in);
                },
            );
        }
        Ok(())
    }
}

impl Circuit<Scalar> for SectorPartitionCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        synthesize_bellpepper(&self, cs)
    }
}

/// A sector: `partitions` partition circuits of about `constraints_per_partition` each.
#[derive(Clone, Copy, Debug)]
pub struct Sector {
    pub sector_id: u64,
    pub partitions: usize,
    pub constraints_per_partition: usize,
}

impl Sector {
    pub fn new(sector_id: u64, constraints_per_partition: usize) -> Self {
        Sector { sector_id, partitions: PARTITIONS_DEFAULT, constraints_per_partition }
    }
    pub fn partition(&self, k: usize) -> SectorPartitionCircuit {
        assert!(k < self.partitions, "partition {k} of {}", self.partitions);
        SectorPartitionCircuit::for_constraints(self.sector_id, k, self.constraints_per_partition)
    }
    pub fn circuits(&self) -> impl Iterator<Item = SectorPartitionCircuit> + '_ {
        (0..self.partitions).map(|k| self.partition(k))
    }
}
