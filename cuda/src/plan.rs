//! [`DevicePlan`]: the device arena's size as a named sum of its consumers, for the
//! engine's memory plan (`arenaprove plan` prints these terms). Every term comes from the
//! same layout code the operations run (dry `Bump` layouts, the NTT table sizes that
//! `prepare_ntt` asserts), so a reservation of [`DevicePlan::total_bytes`] holds them.

use crate::arena::SPAN_ALIGN_BYTES;
use crate::msm::{Curve, MsmPlan};
use crate::ntt::h_scratch_bytes;
use crate::ntt_tables::ntt_tables_bytes;
use crate::products::{h_rows_scratch_bytes, witness_msm_scratch_bytes};

/// Bytes of one blst affine point: G1 (two Fp), G2 (two Fp2).
const G1_AFFINE_BYTES: usize = 96;
const G2_AFFINE_BYTES: usize = 192;

/// Device memory of one GPU for proofs of one shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevicePlan {
    /// Twiddles, coset powers and constants for domains up to `2^domain_log` (persistent).
    pub ntt_tables_bytes: usize,
    /// Resident G1 bases (H, L, A, B_G1 sets; persistent).
    pub g1_bases_bytes: usize,
    /// Resident G2 bases (B_G2; persistent).
    pub g2_bases_bytes: usize,
    /// The h pipeline's a, b, c on the device (scratch).
    pub h_scratch_bytes: usize,
    /// The largest MSM's buckets, sorted indices and scalars (scratch).
    pub msm_scratch_bytes: usize,
    /// A precompiled recording kept resident to compute a, b, c on the device (persistent;
    /// 0 without one): [`DevicePlan::with_rows`].
    pub rows_bytes: usize,
    /// The h pipeline fed from the resident recording: a, b, c plus the witness (scratch).
    pub h_rows_scratch_bytes: usize,
    /// The largest witness MSM: the MSM plus the aux and density staged above it
    /// (scratch): [`DevicePlan::with_witness_msms`].
    pub witness_scratch_bytes: usize,
}

impl DevicePlan {
    /// For an h domain of `2^domain_log`, resident base sets of the given lengths (one
    /// entry per set: each set is one span), and MSMs of up to `msm_points_max` scalars.
    pub fn new(domain_log: u32, g1_sets: &[usize], g2_sets: &[usize], msm_points_max: usize) -> DevicePlan {
        let span = |bytes: usize| bytes.max(1).next_multiple_of(SPAN_ALIGN_BYTES);
        let msm = MsmPlan::new(msm_points_max);
        let msm_scratch_bytes =
            if g2_sets.is_empty() { msm.scratch_bytes(Curve::G1) } else { msm.scratch_bytes(Curve::G2) };
        DevicePlan {
            ntt_tables_bytes: ntt_tables_bytes(domain_log),
            g1_bases_bytes: g1_sets.iter().map(|n| span(n * G1_AFFINE_BYTES)).sum(),
            g2_bases_bytes: g2_sets.iter().map(|n| span(n * G2_AFFINE_BYTES)).sum(),
            h_scratch_bytes: h_scratch_bytes(domain_log),
            msm_scratch_bytes,
            rows_bytes: 0,
            h_rows_scratch_bytes: 0,
            witness_scratch_bytes: 0,
        }
    }

    /// With the witness MSMs ([`crate::Gpu::msm_witness_g1`]) of a proof with `aux`
    /// variables: L (all aux), A over `a_points` and B over `b_points` (G1 and G2), each
    /// staging the aux and, for A and B, the density above its MSM.
    pub fn with_witness_msms(mut self, aux: usize, a_points: usize, b_points: usize) -> DevicePlan {
        self.witness_scratch_bytes = [
            witness_msm_scratch_bytes(Curve::G1, aux, aux, false),
            witness_msm_scratch_bytes(Curve::G1, a_points, aux, true),
            witness_msm_scratch_bytes(Curve::G1, b_points, aux, true),
            witness_msm_scratch_bytes(Curve::G2, b_points, aux, true),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        self
    }

    /// With a recording of `rows_bytes` resident ([`crate::rows_resident_bytes`]) and the
    /// h pipeline fed from it (a domain of `2^domain_log`, a witness of `inputs` + `aux`).
    pub fn with_rows(mut self, rows_bytes: usize, domain_log: u32, inputs: usize, aux: usize) -> DevicePlan {
        self.rows_bytes = rows_bytes;
        self.h_rows_scratch_bytes = h_rows_scratch_bytes(domain_log, inputs, aux);
        self
    }

    pub fn persistent_bytes(&self) -> usize {
        self.ntt_tables_bytes + self.g1_bases_bytes + self.g2_bases_bytes + self.rows_bytes
    }

    /// Operations run one at a time and reuse the same scratch: the largest one counts.
    pub fn scratch_bytes(&self) -> usize {
        self.h_scratch_bytes
            .max(self.msm_scratch_bytes)
            .max(self.h_rows_scratch_bytes)
            .max(self.witness_scratch_bytes)
    }

    /// What [`crate::Gpu::reserve_arena`] should reserve.
    pub fn total_bytes(&self) -> usize {
        self.persistent_bytes() + self.scratch_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_add_up_and_scale_with_the_shape() {
        let small = DevicePlan::new(20, &[1 << 20, 1 << 19], &[1 << 19], 1 << 20);
        let big = DevicePlan::new(24, &[1 << 24, 1 << 23], &[1 << 23], 1 << 24);
        for p in [small, big] {
            assert_eq!(p.total_bytes(), p.persistent_bytes() + p.scratch_bytes());
            assert!(p.scratch_bytes() >= p.h_scratch_bytes && p.scratch_bytes() >= p.msm_scratch_bytes);
        }
        // 2^24: twiddles alone are 2^23 scalars (256 MiB); h's a, b, c 3 x 512 MiB.
        assert!(big.ntt_tables_bytes >= 256 << 20 && big.ntt_tables_bytes < 260 << 20);
        assert_eq!(big.h_scratch_bytes, 3 * (512 << 20));
        assert_eq!(big.g1_bases_bytes, 96 * ((1 << 24) + (1 << 23)));
        assert_eq!(big.g2_bases_bytes, 192 << 23);
        // Run 1 of the CUDA kernel bench (BENCHMARKS.md) measured a scratch high-water
        // of 1,872 MiB with 2^24 G1 MSMs and h pipelines: the plan's MSM term, laid out by
        // the same code. The 0/1 fast path added its two buffers (65,536 + 4,096 G1 xyzz
        // points, 12.75 MiB): 1,885 MiB.
        let g1_only = DevicePlan::new(24, &[1 << 24], &[], 1 << 24);
        assert_eq!(g1_only.scratch_bytes() >> 20, 1885, "{g1_only:?}");
        assert!(small.total_bytes() < big.total_bytes());
    }
}
