//! `sector`: a partition-shaped circuit mimicking a PoRep partition's mix: per challenge,
//! boolean-heavy SHA-256 work (one compression of a 64-byte block of private bits, like a
//! labeling step) and field-heavy Poseidon-style Merkle inclusion (the digest, packed to a
//! field element, is the leaf of a depth-[`MERKLE_DEPTH`] path whose root is a public
//! input). Everything is drawn from a seed made of the sector id and the partition index.
//! A *sector* is [`Sector::partitions`] such circuits (default [`PARTITIONS_DEFAULT`], as
//! in PoRep).
//!
//! Roots differ per challenge (siblings are random), so each is its own public input.
//!
//! # Sizing ([`SectorPartitionCircuit::for_constraints`])
//! * **Targets of at least one full challenge** (64 rounds, depth 30: 37,156
//!   constraints with the partition's ONE row): full challenges are added until the target
//!   is nearest; the rest is made up by extra levels on the last path.
//! * **Smaller targets** (engine soaks at 4,096, CI at 1-4k): one *reduced* challenge of
//!   `sha_rounds` rounds of the compression function ([`sha256::compress_rounds`]: the
//!   schedule is extended only as far as those rounds read it, then the usual feed-forward;
//!   **not SHA-256** below 64 rounds, a smaller workload of the same kind) and a Merkle path
//!   of `depth` levels (1..=30). The boolean share (constraints outside the Merkle path
//!   over all) of a full challenge is 0.709; of the pairs within [`FIT_TOLERANCE`] (10%)
//!   of the target, the one with the least `size error + SHARE_WEIGHT * share mismatch`
//!   is taken, or, if none is that close, the nearest. A round costs 264..443 constraints
//!   and a level 360, so sizes come in steps: the 512 private block bits are always
//!   allocated and the smallest partition (1 round, depth 1) has 947 constraints, the next
//!   1,211. Hence: within 12.3% of the target from 1,024 up, within 10% from 1,212 up;
//!   boolean share within 0.06 of a full challenge's from 4,096 up (0.62 at 1,024 and
//!   2,048). Fits (target -> constraints, rounds/depth): 1,024 -> 947 (1/1);
//!   2,048 -> 1,900 (3/2); 4,096 -> 4,092 (9/3); 16,384 -> 16,403 (31/13);
//!   then full challenges: 65,536 -> 65,596 (1 challenge + 79 levels); 2^18 -> 262,246.
//!
//! The constraint system of a partition depends only on its size parameters
//! (`challenges`, `sha_rounds`, `depth`, `extra_levels`), never on the seed: the seed draws
//! witness values only (block bits, path directions, siblings), and every gadget here
//! allocates the same variables whatever their values. So parameters generated for one
//! partition fit every sector and partition of that size.

use std::sync::OnceLock;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::native::merkle::{merkle_root, PathStep, CONSTRAINTS_PER_LEVEL};
use crate::native::{sha256, synthesize_bellpepper, uint32::pow2, Bit, NativeCircuit, NativeCs};
use crate::CircuitError;

/// Depth of each full challenge's Merkle path (a 32 GiB sector has 2^30 32-byte nodes).
pub const MERKLE_DEPTH: usize = 30;
/// Partitions per sector (PoRep's 10).
pub const PARTITIONS_DEFAULT: usize = 10;
/// How far from the target a reduced challenge may be (relative) while its boolean
/// share is being matched (see the module docs).
pub const FIT_TOLERANCE: f64 = 0.10;
/// Weight of the boolean-share mismatch against the relative size error when choosing a
/// reduced challenge: 0.3 keeps the share within 0.06 of a full challenge's for every
/// target from 4,096 up, at a mean size error of 0.7% (swept over 1,024..37,156 in steps
/// of 16; 0.05 gave 0.3% error but shares as low as 0.29, e.g. 2,048 -> 1 round, depth 4).
pub const SHARE_WEIGHT: f64 = 0.3;
/// Bits of the digest packed into the Merkle leaf.
const LEAF_BITS: usize = 254;

/// One partition circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectorPartitionCircuit {
    pub sector_id: u64,
    pub partition: usize,
    pub challenges: usize,
    /// Rounds of the compression function per challenge (1..=64; 64 is SHA-256).
    pub sha_rounds: usize,
    /// Merkle path depth per challenge ([`MERKLE_DEPTH`] for a full challenge).
    pub depth: usize,
    /// Levels added to the last challenge's path to reach the target size.
    pub extra_levels: usize,
}

impl SectorPartitionCircuit {
    /// `challenges` full challenges (64 rounds, depth [`MERKLE_DEPTH`]) plus
    /// `extra_levels` on the last path.
    pub fn full(sector_id: u64, partition: usize, challenges: usize, extra_levels: usize) -> Self {
        SectorPartitionCircuit {
            sector_id,
            partition,
            challenges,
            sha_rounds: sha256::ROUNDS,
            depth: MERKLE_DEPTH,
            extra_levels,
        }
    }

    /// The partition circuit nearest `target_constraints` (see the module docs). The
    /// result's size parameters depend on the target only, never on the seed.
    pub fn for_constraints(sector_id: u64, partition: usize, target_constraints: usize) -> Self {
        let table = boolean_part_constraints();
        // shape(1 full challenge) = per_challenge + 1 (ONE's input row); each challenge
        // adds its root input row too.
        let one = table[sha256::ROUNDS - 1] + MERKLE_DEPTH * CONSTRAINTS_PER_LEVEL;
        if target_constraints >= one {
            let per = one - 1;
            let challenges = (target_constraints - 1) / per;
            let rest = target_constraints - (challenges * per + 1);
            let extra_levels = (rest as f64 / CONSTRAINTS_PER_LEVEL as f64).round() as usize;
            return Self::full(sector_id, partition, challenges, extra_levels);
        }
        let (sha_rounds, depth) = reduced_fit(table, one, target_constraints);
        SectorPartitionCircuit { sector_id, partition, challenges: 1, sha_rounds, depth, extra_levels: 0 }
    }

    fn rng(&self) -> ChaCha8Rng {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.sector_id.to_le_bytes());
        seed[8..16].copy_from_slice(&(self.partition as u64).to_le_bytes());
        seed[16..].copy_from_slice(b"arenaprove:part!");
        ChaCha8Rng::from_seed(seed)
    }
}

/// `(sha_rounds, depth)` of the one-challenge partition for a target below one full
/// challenge (`one` constraints): of the pairs within [`FIT_TOLERANCE`], the least
/// `error + SHARE_WEIGHT * |share - share_full|`; if none is that close, the nearest size.
fn reduced_fit(table: &[usize; sha256::ROUNDS], one: usize, target: usize) -> (usize, usize) {
    let share_full = table[sha256::ROUNDS - 1] as f64 / one as f64;
    let target_f = target.max(1) as f64;
    let mut best = (1, 1);
    // (1 if outside the tolerance, score), ordered lexicographically.
    let mut best_key = (1u8, f64::INFINITY);
    for (r_index, &boolean_part) in table.iter().enumerate() {
        for depth in 1..=MERKLE_DEPTH {
            let size = boolean_part + depth * CONSTRAINTS_PER_LEVEL;
            let err = (size as f64 - target_f).abs() / target_f;
            let share = boolean_part as f64 / size as f64;
            let key = if err <= FIT_TOLERANCE {
                (0u8, err + SHARE_WEIGHT * (share - share_full).abs())
            } else {
                (1u8, err)
            };
            if key.0 < best_key.0 || (key.0 == best_key.0 && key.1 < best_key.1) {
                best_key = key;
                best = (r_index + 1, depth);
            }
        }
    }
    best
}

/// Constraints of a one-challenge partition with `r` rounds and an empty path, at index
/// `r - 1` (ONE's input row and the root's input row included). A one-challenge
/// partition of depth `d` has `table[r - 1] + d * CONSTRAINTS_PER_LEVEL` (a test checks).
/// Counted once per process.
pub fn boolean_part_constraints() -> &'static [usize; sha256::ROUNDS] {
    static TABLE: OnceLock<[usize; sha256::ROUNDS]> = OnceLock::new();
    TABLE.get_or_init(|| {
        std::array::from_fn(|r_index| {
            let c = SectorPartitionCircuit {
                sector_id: 0,
                partition: 0,
                challenges: 1,
                sha_rounds: r_index + 1,
                depth: 0,
                extra_levels: 0,
            };
            crate::shape_of_native(&c).expect("rounds in 1..=64 are valid").constraints
        })
    })
}

impl NativeCircuit for SectorPartitionCircuit {
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError> {
        if self.challenges == 0 {
            return Err(CircuitError::Invalid {
                what: "sector challenges",
                reason: "must be at least 1".into(),
            });
        }
        if !(1..=sha256::ROUNDS).contains(&self.sha_rounds) {
            return Err(CircuitError::Invalid {
                what: "sector sha_rounds",
                reason: format!("{} not in 1..={}", self.sha_rounds, sha256::ROUNDS),
            });
        }
        let mut rng = self.rng();
        for ch in 0..self.challenges {
            // Boolean-heavy: one SHA-256 compression (or its first `sha_rounds` rounds)
            // over 512 private bits.
            let mut block = [Bit::Const(false); 512];
            let mut byte = 0u8;
            for (i, slot) in block.iter_mut().enumerate() {
                if i % 8 == 0 {
                    byte = rng.next_u32() as u8;
                }
                *slot = Bit::alloc(cs, (byte >> (7 - i % 8)) & 1 == 1)?;
            }
            let state = sha256::compress_rounds(cs, &block, &sha256::iv(), self.sha_rounds)?;
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
            let depth = self.depth + if ch + 1 == self.challenges { self.extra_levels } else { 0 };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape_of_native;

    #[test]
    fn targets_fit_within_ten_percent() {
        for target in [1024usize, 2048, 4096, 16384, 65536] {
            let c = SectorPartitionCircuit::for_constraints(3, 1, target);
            let got = shape_of_native(&c).unwrap().constraints;
            let err = (got as f64 - target as f64).abs() / target as f64;
            assert!(err <= 0.10, "{target} -> {got} ({c:?}): {:.1}% off", err * 100.0);
        }
    }

    #[test]
    fn reduced_fits_keep_a_boolean_majority() {
        let table = boolean_part_constraints();
        let one = table[sha256::ROUNDS - 1] + MERKLE_DEPTH * CONSTRAINTS_PER_LEVEL;
        let share_full = table[sha256::ROUNDS - 1] as f64 / one as f64;
        for target in [1024usize, 2048, 4096, 8192, 16384, 30000] {
            let c = SectorPartitionCircuit::for_constraints(0, 0, target);
            assert_eq!(c.challenges, 1);
            assert!(c.depth >= 1 && c.sha_rounds >= 1, "{c:?}");
            let size = table[c.sha_rounds - 1] + c.depth * CONSTRAINTS_PER_LEVEL;
            let share = table[c.sha_rounds - 1] as f64 / size as f64;
            assert!(share > 0.6, "{target}: boolean share {share:.3}");
            if target >= 4096 {
                assert!((share - share_full).abs() < 0.06, "{target}: share {share:.3} vs {share_full:.3}");
            }
        }
    }

    #[test]
    fn table_predicts_shapes() {
        let table = boolean_part_constraints();
        assert!(table.windows(2).all(|w| w[0] < w[1]), "more rounds, more constraints");
        for (r, d) in [(1, 1), (3, 2), (17, 5), (64, MERKLE_DEPTH)] {
            let c = SectorPartitionCircuit {
                sector_id: 9,
                partition: 2,
                challenges: 1,
                sha_rounds: r,
                depth: d,
                extra_levels: 0,
            };
            assert_eq!(shape_of_native(&c).unwrap().constraints, table[r - 1] + d * CONSTRAINTS_PER_LEVEL);
        }
    }

    #[test]
    fn full_sizes_unchanged() {
        // At and above one full challenge the partition is made of full challenges.
        let table = boolean_part_constraints();
        let one = table[sha256::ROUNDS - 1] + MERKLE_DEPTH * CONSTRAINTS_PER_LEVEL;
        for target in [one, one + 5_000, 3 * one, 1 << 18] {
            let c = SectorPartitionCircuit::for_constraints(1, 0, target);
            assert_eq!((c.sha_rounds, c.depth), (sha256::ROUNDS, MERKLE_DEPTH), "{target}");
            assert_eq!(c.challenges, (target - 1) / (one - 1));
        }
        let just_below = SectorPartitionCircuit::for_constraints(1, 0, one - 1);
        assert_eq!(shape_of_native(&just_below).unwrap().constraints, one);
    }

    #[test]
    fn size_does_not_depend_on_seed() {
        for target in [1024usize, 4096, 50_000] {
            let a = SectorPartitionCircuit::for_constraints(0, 0, target);
            let b = SectorPartitionCircuit::for_constraints(u64::MAX, 9, target);
            assert_eq!(
                (a.challenges, a.sha_rounds, a.depth, a.extra_levels),
                (b.challenges, b.sha_rounds, b.depth, b.extra_levels)
            );
            assert_eq!(shape_of_native(&a).unwrap(), shape_of_native(&b).unwrap());
        }
    }

    #[test]
    fn bad_rounds_is_an_error() {
        for r in [0, 65] {
            let c = SectorPartitionCircuit {
                sector_id: 0,
                partition: 0,
                challenges: 1,
                sha_rounds: r,
                depth: 1,
                extra_levels: 0,
            };
            let e = shape_of_native(&c).unwrap_err().to_string();
            assert!(e.contains("sha_rounds"), "{e}");
        }
    }

    #[test]
    #[ignore = "prints the size table; run with --ignored --nocapture"]
    fn print_size_table() {
        for target in
            [1usize, 512, 1024, 1536, 2048, 3000, 4096, 8192, 16384, 30000, 36000, 37163, 65536, 1 << 18]
        {
            let c = SectorPartitionCircuit::for_constraints(0, 0, target);
            let got = shape_of_native(&c).unwrap().constraints;
            println!("{target:>7} -> {got:>7} ({:+.1}%) {c:?}", (got as f64 / target as f64 - 1.0) * 100.0);
        }
    }
}
