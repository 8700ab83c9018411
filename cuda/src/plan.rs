//! [`DevicePlan`]: the device arena's size as a named sum of its consumers, for the
//! engine's memory plan (`arenaprove plan` prints these terms). Every term comes from the
//! same layout code the operations run (dry `Bump` layouts, the NTT table sizes that
//! `prepare_ntt` asserts), so a reservation of [`DevicePlan::total_bytes`] holds them.

use crate::arena::SPAN_ALIGN_BYTES;
use crate::error::CudaError;
use crate::msm::{
    fixed_msm_scratch_bytes, h_msm_scratch_bytes, msm_scratch_bytes, Curve, FixedWindows, MsmChoice, MsmPlan,
};
use crate::ntt::h_scratch_bytes;
use crate::ntt_tables::ntt_tables_bytes;
use crate::products::{h_rows_scratch_bytes, witness_scratch_bytes, WitnessMsm};

/// A parameter set's five base sets, in the order a device-memory budget keeps them
/// resident: H, L, A, B_G1 in G1, then B_G2 (the G2 MSM does the most work per byte
/// copied, so it hides a streamed copy best and is the first to stream).
pub const BASE_SETS: [(&str, Curve); 5] =
    [("H", Curve::G1), ("L", Curve::G1), ("A", Curve::G1), ("B_G1", Curve::G1), ("B_G2", Curve::G2)];

/// Chunks of streamed bases: the largest that fits the budget, from 2^24 points (the
/// H200's G1 MSM is at its best per point there: 13 ns at 2^24 against 19 at 2^22,
/// BENCHMARKS.md) down to 2^16.
const CHUNK_LOG_MAX: u32 = 24;
const CHUNK_LOG_MIN: u32 = 16;

/// What a device plan is made for: a proof's sizes as the device sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceShape {
    /// The h domain is `2^domain_log`.
    pub domain_log: u32,
    /// Points of each base set, in [`BASE_SETS`] order.
    pub lens: [usize; 5],
    pub inputs: usize,
    pub aux: usize,
    /// The kind's recording, when a, b, c may be computed on the device from it (its
    /// resident bytes, [`crate::rows_resident_bytes`]).
    pub rows_bytes: Option<usize>,
}

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
    /// The witness MSMs: the largest MSM's layout plus the aux and density staged above
    /// it once for all four (scratch): [`DevicePlan::for_proofs`].
    pub witness_scratch_bytes: usize,
    /// Which base sets ([`BASE_SETS`] order) are resident; the others stay in page-locked
    /// host memory and stream to the device `chunk_points` at a time for each MSM.
    pub resident: [bool; 5],
    /// Points per streamed chunk (0 when every set is resident).
    pub chunk_points: usize,
    /// Bytes of the streamed sets: what goes over the bus per proof.
    pub streamed_bytes: usize,
    /// The device-memory budget the plan was made within (`None`: the whole set resident,
    /// no budget asked for).
    pub budget_bytes: Option<usize>,
    /// Fixed-base windows of the resident H set ([`FixedWindows`]: copies of its bases
    /// shifted by `2^(c t)`, made once at load), chosen in what a budget leaves over
    /// ([`DevicePlan::within_budget`]; `None`: plain bases, always without a budget).
    pub h_fixed: Option<FixedWindows>,
    /// The H set's copies beyond the bases themselves (persistent; 0 without).
    pub h_copies_bytes: usize,
}

impl DevicePlan {
    /// For an h domain of `2^domain_log`, resident base sets of the given lengths (one
    /// entry per set: each set is one span), and MSMs of up to `msm_points_max` scalars.
    pub fn new(domain_log: u32, g1_sets: &[usize], g2_sets: &[usize], msm_points_max: usize) -> DevicePlan {
        let span = |bytes: usize| bytes.max(1).next_multiple_of(SPAN_ALIGN_BYTES);
        let msm = MsmPlan::new(msm_points_max);
        // The h MSM (2^domain_log - 1 points) runs the dense kernels.
        let h_msm = h_msm_scratch_bytes((1usize << domain_log) - 1, None);
        let msm_scratch_bytes =
            if g2_sets.is_empty() { msm.scratch_bytes(Curve::G1) } else { msm.scratch_bytes(Curve::G2) }
                .max(h_msm);
        DevicePlan {
            ntt_tables_bytes: ntt_tables_bytes(domain_log),
            g1_bases_bytes: g1_sets.iter().map(|n| span(n * Curve::G1.affine_bytes())).sum(),
            g2_bases_bytes: g2_sets.iter().map(|n| span(n * Curve::G2.affine_bytes())).sum(),
            h_scratch_bytes: h_scratch_bytes(domain_log),
            msm_scratch_bytes,
            rows_bytes: 0,
            h_rows_scratch_bytes: 0,
            witness_scratch_bytes: 0,
            resident: [true; 5],
            chunk_points: 0,
            streamed_bytes: 0,
            budget_bytes: None,
            h_fixed: None,
            h_copies_bytes: 0,
        }
    }

    /// The plan of proofs of `shape` with the base sets `resident` kept in the arena and the
    /// others streamed `chunk` points at a time, and a, b, c computed on the device from
    /// the recording when `rows` (and the shape has one). Each MSM's scratch is the layout
    /// the call makes: resident, or streamed (every scalar, two chunk buffers, a chunk's
    /// MSM).
    pub fn for_proofs(shape: &DeviceShape, resident: [bool; 5], chunk: usize, rows: bool) -> DevicePlan {
        let span = |bytes: usize| bytes.max(1).next_multiple_of(SPAN_ALIGN_BYTES);
        let placed = |i: usize| (!resident[i]).then_some(chunk);
        let (mut g1, mut g2, mut streamed) = (0, 0, 0);
        for (i, (_, curve)) in BASE_SETS.iter().enumerate() {
            let bytes = shape.lens[i] * curve.affine_bytes();
            match (resident[i], curve) {
                (true, Curve::G1) => g1 += span(bytes),
                (true, Curve::G2) => g2 += span(bytes),
                (false, _) => streamed += bytes,
            }
        }
        // Set 0 is h: its MSM runs the dense kernels.
        let msm = (0..5)
            .map(|i| match i {
                0 => h_msm_scratch_bytes(shape.lens[0], placed(0)),
                _ => msm_scratch_bytes(BASE_SETS[i].1, shape.lens[i], placed(i)),
            })
            .max()
            .unwrap_or(0);
        let aux = shape.aux;
        // The witness MSMs: L over all aux, A and B (G1, G2) over the aux their density
        // picks, the aux staged once above the largest of their layouts.
        let one = |curve, i: usize, dense| WitnessMsm { curve, n: shape.lens[i], chunk: placed(i), dense };
        let witness = witness_scratch_bytes(
            &[
                one(Curve::G1, 1, false),
                one(Curve::G1, 2, true),
                one(Curve::G1, 3, true),
                one(Curve::G2, 4, true),
            ],
            aux,
        );
        let plan = DevicePlan {
            ntt_tables_bytes: ntt_tables_bytes(shape.domain_log),
            g1_bases_bytes: g1,
            g2_bases_bytes: g2,
            h_scratch_bytes: h_scratch_bytes(shape.domain_log),
            msm_scratch_bytes: msm,
            rows_bytes: 0,
            h_rows_scratch_bytes: 0,
            witness_scratch_bytes: witness,
            resident,
            chunk_points: if resident.iter().all(|&r| r) { 0 } else { chunk },
            streamed_bytes: streamed,
            budget_bytes: None,
            h_fixed: None,
            h_copies_bytes: 0,
        };
        match shape.rows_bytes.filter(|_| rows) {
            Some(b) => plan.with_rows(b, shape.domain_log, shape.inputs, aux),
            None => plan,
        }
    }

    /// The plan for proofs of `shape` within a device-memory `budget` (bytes; `None`: no
    /// budget, everything resident). The whole set resident when it fits; otherwise the
    /// largest chunk (2^24 down to 2^16 points) with which every set streamed fits, then the
    /// sets kept resident in [`BASE_SETS`] order while they fit; a, b, c on the device from
    /// the recording while that fits at all, else from the host (the plan's `rows_bytes`
    /// is then 0). Then, with H resident, fixed-base windows for it in the room left
    /// ([`DevicePlan::with_h_fixed_where`]). An error naming the least budget when nothing
    /// fits.
    pub fn within_budget(shape: &DeviceShape, budget: Option<usize>) -> Result<DevicePlan, CudaError> {
        DevicePlan::within_budget_where(shape, budget, |p| p.total_bytes() <= budget.unwrap_or(usize::MAX))
    }

    /// [`DevicePlan::within_budget`] where `fits` says whether a candidate plan fits (with
    /// several kinds on one GPU: the arena of every kind planned so far with this one).
    pub fn within_budget_where(
        shape: &DeviceShape,
        budget: Option<usize>,
        fits: impl Fn(&DevicePlan) -> bool,
    ) -> Result<DevicePlan, CudaError> {
        let full = DevicePlan::for_proofs(shape, [true; 5], 0, true);
        let Some(budget) = budget else { return Ok(full) };
        if fits(&full) {
            return Ok(DevicePlan { budget_bytes: Some(budget), ..full }.with_h_fixed_where(shape, &fits));
        }
        let longest = shape.lens.iter().copied().max().unwrap_or(1).max(1);
        let chunk_logs = (CHUNK_LOG_MIN..=CHUNK_LOG_MAX)
            .rev()
            .filter(|&l| l == CHUNK_LOG_MIN || (1usize << (l - 1)) < longest);
        for rows in [true, false] {
            if rows && shape.rows_bytes.is_none() {
                continue;
            }
            for log in chunk_logs.clone() {
                let chunk = 1usize << log;
                let mut resident = [false; 5];
                if !fits(&DevicePlan::for_proofs(shape, resident, chunk, rows)) {
                    continue;
                }
                for i in 0..5 {
                    resident[i] = true;
                    if !fits(&DevicePlan::for_proofs(shape, resident, chunk, rows)) {
                        resident[i] = false;
                    }
                }
                let plan = DevicePlan::for_proofs(shape, resident, chunk, rows);
                return Ok(DevicePlan { budget_bytes: Some(budget), ..plan }.with_h_fixed_where(shape, &fits));
            }
        }
        let least = DevicePlan::for_proofs(shape, [false; 5], 1 << CHUNK_LOG_MIN, false);
        Err(CudaError::Budget {
            budget_bytes: budget,
            need_bytes: least.total_bytes(),
            least: "every base set streamed in chunks of 2^16 points, a, b, c from the host",
        })
    }

    /// This plan with fixed-base windows `fixed` for the H set of `shape` (resident): the
    /// copies beyond the bases as a persistent term, and the h MSM's layout over them in
    /// the MSM term.
    pub fn with_h_fixed(self, shape: &DeviceShape, fixed: FixedWindows) -> DevicePlan {
        let span = |bytes: usize| bytes.max(1).next_multiple_of(SPAN_ALIGN_BYTES);
        let n = shape.lens[0];
        DevicePlan {
            h_fixed: Some(fixed),
            h_copies_bytes: span(fixed.bytes(Curve::G1, n)) - span(n * Curve::G1.affine_bytes()),
            msm_scratch_bytes: self.msm_scratch_bytes.max(fixed_msm_scratch_bytes(n, fixed)),
            ..self
        }
    }

    /// This plan with the fixed-base windows for H that save the most additions of its
    /// MSM and still `fits` (copies beyond the bases, at least two copies; the fewer copies
    /// between two that cost the same), or as it is when none saves any or fits, or H is
    /// not resident. The cost is [`FixedWindows::additions`], against the h MSM's own plan
    /// as one copy of its windows (its chunks share one set of buckets per window).
    pub fn with_h_fixed_where(self, shape: &DeviceShape, fits: impl Fn(&DevicePlan) -> bool) -> DevicePlan {
        let n = shape.lens[0];
        if !self.resident[0] || n == 0 {
            return self;
        }
        let own = MsmChoice::DENSE.plan(crate::msm::resident_chunk(n).unwrap_or(n).min(n));
        let plain = FixedWindows { c: own.c, copies: 1 }.additions(n);
        let mut candidates: Vec<(usize, FixedWindows)> = FixedWindows::candidates(n)
            .filter(|f| f.copies > 1)
            .map(|f| (f.additions(n), f))
            .filter(|&(cost, _)| cost < plain)
            .collect();
        candidates.sort_by_key(|&(cost, f)| (cost, f.copies));
        candidates.into_iter().map(|(_, f)| self.with_h_fixed(shape, f)).find(|p| fits(p)).unwrap_or(self)
    }

    /// Whether a, b, c are computed on the device from a resident recording.
    pub fn rows_resident(&self) -> bool {
        self.rows_bytes > 0
    }

    /// With a recording of `rows_bytes` resident ([`crate::rows_resident_bytes`]) and the
    /// h pipeline fed from it (a domain of `2^domain_log`, a witness of `inputs` + `aux`).
    pub fn with_rows(mut self, rows_bytes: usize, domain_log: u32, inputs: usize, aux: usize) -> DevicePlan {
        self.rows_bytes = rows_bytes;
        self.h_rows_scratch_bytes = h_rows_scratch_bytes(domain_log, inputs, aux);
        self
    }

    pub fn persistent_bytes(&self) -> usize {
        self.ntt_tables_bytes
            + self.g1_bases_bytes
            + self.g2_bases_bytes
            + self.rows_bytes
            + self.h_copies_bytes
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
        // points, 12.75 MiB): 1,885 MiB. The signed windows, the default since, lay out
        // 1,777 MiB: 16 windows' sorted indices, not 20, and 2^15 buckets per window.
        // The sparse sort's list (2^22 u32, 16 MiB) and the 0/1 path's sums for twice the
        // threads (131,072 + 8,192 points, +12.75 MiB): 1,806 MiB. The pieces' order (a
        // u32 per piece, 589,825 pieces, and 4,096 length classes): 1,808 MiB.
        assert_eq!(MsmPlan::new(1 << 24).scratch_bytes(Curve::G1) >> 20, 1808);
        // The h MSM (2^24 - 1 points) runs the wide windows since: 13 windows of 20 bits,
        // 2^19 buckets each (1.2 GiB of buckets and as much of piece sums): 4,093 MiB.
        let g1_only = DevicePlan::new(24, &[1 << 24], &[], 1 << 24);
        assert_eq!(g1_only.scratch_bytes() >> 20, 4093, "{g1_only:?}");
        assert!(small.total_bytes() < big.total_bytes());
    }

    /// A 32 GiB PoRep partition as the device sees it (domain 2^27, the recording's
    /// measured resident size; A and B counts of that order).
    fn porep_32gib() -> DeviceShape {
        DeviceShape {
            domain_log: 27,
            lens: [(1 << 27) - 1, 130_169_893, 100_000_000, 60_000_000, 60_000_000],
            inputs: 328,
            aux: 130_169_893,
            rows_bytes: Some(4_863_643_356),
        }
    }

    const GIB: usize = 1 << 30;

    #[test]
    fn without_a_budget_or_within_a_large_one_everything_is_resident() {
        let shape = porep_32gib();
        let full = DevicePlan::within_budget(&shape, None).unwrap();
        assert_eq!(full.resident, [true; 5]);
        assert_eq!((full.chunk_points, full.streamed_bytes, full.budget_bytes), (0, 0, None));
        assert!(full.rows_resident());
        let roomy = DevicePlan::within_budget(&shape, Some(full.total_bytes())).unwrap();
        assert_eq!(DevicePlan { budget_bytes: None, ..roomy }, full);
    }

    #[test]
    fn a_budget_streams_what_does_not_fit_and_the_plan_stays_within_it() {
        let shape = porep_32gib();
        let full = DevicePlan::within_budget(&shape, None).unwrap();
        let all_bytes: usize = (0..5).map(|i| shape.lens[i] * BASE_SETS[i].1.affine_bytes()).sum();
        let mut last_streamed = 0;
        assert!(full.total_bytes() > 64 * GIB, "{}", full.total_bytes());
        for budget in [64 * GIB, 40 * GIB, 24 * GIB, 16 * GIB] {
            let p = DevicePlan::within_budget(&shape, Some(budget)).unwrap();
            assert!(p.total_bytes() <= budget, "{budget}: {} over", p.total_bytes());
            assert!(p.total_bytes() < full.total_bytes());
            assert_eq!(p.budget_bytes, Some(budget));
            // What streams is what is not resident, and a smaller budget streams no less.
            let streamed: usize = (0..5)
                .filter(|&i| !p.resident[i])
                .map(|i| shape.lens[i] * BASE_SETS[i].1.affine_bytes())
                .sum();
            assert_eq!(p.streamed_bytes, streamed);
            assert!(p.streamed_bytes > 0 && p.streamed_bytes <= all_bytes);
            assert!(p.streamed_bytes >= last_streamed, "{budget}");
            last_streamed = p.streamed_bytes;
            assert!(p.chunk_points.is_power_of_two() && p.chunk_points <= 1 << CHUNK_LOG_MAX);
        }
        // 24 GiB keeps the recording (a, b, c on the device); 16 GiB cannot.
        assert!(DevicePlan::within_budget(&shape, Some(24 * GIB)).unwrap().rows_resident());
        let small = DevicePlan::within_budget(&shape, Some(16 * GIB)).unwrap();
        assert!(!small.rows_resident());
        assert_eq!(small.h_rows_scratch_bytes, 0);
    }

    #[test]
    fn a_budget_below_the_least_plan_is_a_typed_error_naming_the_least() {
        let shape = porep_32gib();
        match DevicePlan::within_budget(&shape, Some(4 * GIB)) {
            Err(CudaError::Budget { budget_bytes, need_bytes, .. }) => {
                assert_eq!(budget_bytes, 4 * GIB);
                // The h pipeline's a, b, c alone are 12 GiB at 2^27.
                assert!(need_bytes > 12 * GIB, "{need_bytes}");
                let least = DevicePlan::within_budget(&shape, Some(need_bytes)).unwrap();
                assert!(least.total_bytes() <= need_bytes);
            }
            other => panic!("expected a budget error, got {other:?}"),
        }
    }

    /// Resident MSMs over 2^25 points run in 2^24 chunks: their scratch is every scalar
    /// plus one chunk's layout, far below one 2^27 layout's (10 GiB of sorted indices).
    #[test]
    fn a_resident_2e27_msm_is_laid_out_in_chunks() {
        use crate::msm::msm_scratch_bytes;
        let n = 1 << 27;
        let chunked = msm_scratch_bytes(Curve::G1, n, None);
        assert!(chunked >= 32 * n + MsmPlan::new(1 << 24).scratch_bytes(Curve::G1));
        assert!(chunked < MsmPlan::new(n).scratch_bytes(Curve::G1) * 2 / 3, "{chunked}");
        // Up to 2^25 a resident MSM is one piece.
        assert_eq!(
            msm_scratch_bytes(Curve::G1, 1 << 25, None),
            MsmPlan::new(1 << 25).scratch_bytes(Curve::G1)
        );
    }

    /// A budget with room to spare gives H fixed-base windows within it: the copies as a
    /// persistent term, fewer additions than H's own plan; no room, or no budget, none.
    #[test]
    fn room_in_a_budget_goes_to_fixed_base_windows_for_h() {
        let shape = DeviceShape {
            domain_log: 24,
            lens: [(1 << 24) - 1, 1 << 24, 1 << 23, 1 << 23, 1 << 23],
            inputs: 2,
            aux: 1 << 24,
            rows_bytes: None,
        };
        let full = DevicePlan::within_budget(&shape, None).unwrap();
        assert_eq!((full.h_fixed, full.h_copies_bytes), (None, 0), "no budget, no copies");
        let tight = DevicePlan::within_budget(&shape, Some(full.total_bytes())).unwrap();
        assert_eq!((tight.h_fixed, tight.h_copies_bytes), (None, 0), "no room, no copies");
        let n = shape.lens[0];
        let own = MsmChoice::DENSE.plan(n);
        let own_cost = FixedWindows { c: own.c, copies: 1 }.additions(n);
        let mut last = 0;
        for extra in [4 * GIB, 12 * GIB, 24 * GIB] {
            let budget = full.total_bytes() + extra;
            let p = DevicePlan::within_budget(&shape, Some(budget)).unwrap();
            let f = p.h_fixed.expect("room for copies");
            assert!(p.total_bytes() <= budget, "{extra}: {} over {budget}", p.total_bytes());
            assert_eq!(p.persistent_bytes(), full.persistent_bytes() + p.h_copies_bytes);
            assert!(p.h_copies_bytes + SPAN_ALIGN_BYTES >= (f.copies as usize - 1) * n * 96, "{f:?}");
            assert!(f.copies > 1 && f.additions(n) < own_cost, "{f:?} saves additions");
            assert!(p.h_copies_bytes >= last, "more room, no fewer copies");
            last = p.h_copies_bytes;
        }
        // 24 GiB over: every window in one set of 22-bit windows (12 copies, 18 GiB).
        let roomy = DevicePlan::within_budget(&shape, Some(full.total_bytes() + 24 * GIB)).unwrap();
        assert_eq!(roomy.h_fixed, Some(FixedWindows { c: 22, copies: 12 }));
    }

    /// With another kind's resident bytes already in the arena, a plan leaves room for them.
    #[test]
    fn a_budget_shared_with_other_kinds_leaves_them_room() {
        let shape = porep_32gib();
        let (budget, others) = (40 * GIB, 20 * GIB);
        let alone = DevicePlan::within_budget(&shape, Some(budget)).unwrap();
        let shared =
            DevicePlan::within_budget_where(&shape, Some(budget), |p| p.total_bytes() + others <= budget)
                .unwrap();
        assert!(shared.total_bytes() + others <= budget && alone.total_bytes() <= budget);
        assert!(shared.streamed_bytes > alone.streamed_bytes, "{shared:?}\n{alone:?}");
    }

    /// A streamed MSM's scratch is its scalars, two chunk buffers and the chunk's layout,
    /// and it shrinks with the chunk.
    #[test]
    fn streamed_scratch_is_scalars_two_buffers_and_a_chunk() {
        use crate::msm::streamed_scratch_bytes;
        let n = 1 << 22;
        for curve in [Curve::G1, Curve::G2] {
            let k = 1 << 18;
            let s = streamed_scratch_bytes(curve, n, k);
            let want = 32 * n + 2 * k * curve.affine_bytes() + MsmPlan::new(k).scratch_bytes(curve);
            assert!(s >= want && s < want + 3 * SPAN_ALIGN_BYTES, "{curve:?}: {s} vs {want}");
            assert!(streamed_scratch_bytes(curve, n, 1 << 16) < s);
            // A last chunk shorter than the rest is laid out as it is.
            let odd = streamed_scratch_bytes(curve, n + 5, k);
            assert!(odd >= s);
        }
    }
}
