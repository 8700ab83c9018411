//! G1 and G2 multi-scalar multiplication on the device (Pippenger, buckets in xyzz
//! coordinates), for blst's layouts: bases `blst_p1_affine` / `blst_p2_affine` (Montgomery
//! limbs, infinity as (0, 0)) and scalars as canonical 32-byte little-endian strings, the
//! engine's split vectors. The result equals blst's `MultiPoint::mult(.., 255)` as a group
//! element (tests/gpu.rs).
//!
//! Buckets are sized per call from `n` (window bits `c`, see [`MsmPlan`]); a bucket with
//! more than `piece_len` points is summed as several pieces, so skewed scalars do not
//! serialize on one thread.
//!
//! Two digit schemes ([`MsmKernels`]): signed digits (the default): each window's digit
//! Booth-recoded into [-2^(c-1), 2^(c-1)] from its bits and the bit below it, a negative
//! digit adding the negated point to bucket |d| - 1. Half the buckets per window, so the
//! windows are up to 16 bits wide: 16 windows for 255-bit scalars instead of 20 at 13 bits,
//! a fifth fewer bucket additions at 2^24. Unsigned c-bit digits (2^c buckets per window,
//! c <= 13) are the kernels before them, kept as the benches' baseline.
//!
//! The 0/1 fast path: scalars equal to one (most nonzero scalars of boolean-heavy
//! witnesses, SHA-256's and PoRep's) never enter a bucket. A grid-stride kernel sums their
//! bases on every thread of the device and a few fan-in rounds fold those sums to one
//! point, which is added to the windows' total; zeros are skipped as before. Without it the
//! ones formed one giant bucket of window 0, summed by a few hundred threads.

use std::marker::PhantomData;
use std::time::Duration;

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Projective, G2Projective};
use group::Group;

use crate::arena::{Bump, DevPtr, DevSpan};
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::{
    Dims, MsmAccumulate, MsmBuckets, MsmFoldTree, MsmOnes, MsmOnesCompact, MsmReduce, MsmWindowRuns,
    MsmWindowSegments, MsmWindowSums,
};

/// Bytes of one scalar.
pub const SCALAR_BYTES: usize = 32;
/// Bits of a scalar read (r < 2^255), as blst.
const SCALAR_BITS: u32 = 255;
/// Bytes of one Fp element.
const FP_BYTES: usize = 48;
/// Widest unsigned window: the per-tile histogram is `2^c` u32 in shared memory (32 KiB at
/// 13, within the 48 KiB every device gives a block without opting in).
const WINDOW_BITS_MAX: u32 = 13;
/// Widest signed window: 2^15 buckets per window, a 128 KiB shared histogram (the hist and
/// scatter kernels opt in to the device's limit at load: 227 KiB on the H100/H200).
const SIGNED_WINDOW_BITS_MAX: u32 = 16;
/// Bucket bits the host plans signed windows with when it does not know the device (the
/// device plan, the dry layouts): what an H100/H200 allows. A [`Gpu`] plans with its own
/// shared-memory limit ([`bucket_bits_max_for`]).
pub const BUCKET_BITS_MAX_DEFAULT: u32 = SIGNED_WINDOW_BITS_MAX - 1;
/// Points one block histograms and scatters (one global atomic per (tile, digit)), unsigned.
const TILE_POINTS: usize = 1 << 16;
/// Signed windows: tiles sized so the two tile kernels launch about this many blocks (one
/// 128 KiB block per SM at a time), within these bounds (a tile flushes `2^(c-1)` counts).
const SIGNED_TILE_BLOCKS: usize = 512;
const SIGNED_TILE_POINTS: (usize, usize) = (1 << 12, 1 << 18);
/// Threads of a tile block: unsigned (several blocks per SM), signed (one block per SM).
const SORT_THREADS: (u32, u32) = (THREADS, 1024);
/// Block size of the signed accumulate kernels, as `MSM_POINT_KERNELS(.., ACC_THREADS)`
/// bounds them in msm_g1.cu / msm_g2.cu (a test checks). G1: 512 threads hold it to 128
/// registers (40 bytes spilled) for 16 warps per SM; measured on the H200 against 384
/// threads at 146 registers (12 warps): accumulation 118.9 vs 124.9 ms at 2^24, 32.7 vs
/// 34.4 ms at 2^22 (BENCHMARKS.md, eleventh session). G2 needs its 255 registers: 256.
pub(crate) const SIGNED_ACC_THREADS: (u32, u32) = (512, 256);

/// Threads of a batch-affine accumulate block (`BA_THREADS` in
/// `kernels/msm_batch_affine.cuh`, the bound its kernels are compiled for).
pub(crate) const BA_THREADS: u32 = 256;

/// The batch-affine accumulate kernels' pieces per thread, one instance each
/// (`MSM_BA_KERNELS` lines of `kernels/msm_g1.cu`).
pub(crate) const BA_PIECES: [u32; 3] = [4, 8, 16];
/// Signed windows: runs per window chosen so about `2^this` threads run the running sums
/// (no multiplication: each run's sum goes to the second level, which weighs the sums by
/// their runs' first bucket), then fold rounds of fan-in [`ONES_FAN`] take each window's
/// runs to one point.
const SEGMENT_THREADS_LOG: u32 = 16;
/// The signed reduction's second level: about `2^this` threads, each running sums over a
/// segment of the runs' sums and one multiplication by its segment's first index.
const SEGMENT2_THREADS_LOG: u32 = 14;
/// Widest window of [`MsmKernels::Wide`]: 2^21 buckets per window, whose counts (8 MiB)
/// stay in the H200's L2 (50 MiB) while that window's sort runs.
const WIDE_WINDOW_BITS_MAX: u32 = 22;
/// The global-memory sort (`Wide`, `SignedGlobal`): points one of its blocks reads, and
/// its block size.
const WIDE_TILE_POINTS: usize = 1 << 12;
const WIDE_SORT_THREADS: u32 = 256;
/// Wide windows: about `2^this` threads run the running sums (their windows have up to 64
/// times the buckets of a signed one).
const WIDE_SEGMENT_THREADS_LOG: u32 = 17;
/// Bucket counts one block of the multi-block scan covers (msm_sort.cu's
/// `SCAN_BLOCK_COUNTS`: 1024 threads of 8).
const SCAN_BLOCK_COUNTS: usize = 1024 * 8;
/// Length classes of the pieces' order (msm_sort.cu's `PIECE_CLASSES`), and the grid of
/// its two kernels (blocks of [`THREADS`]).
const PIECE_CLASSES: usize = 4096;
const PIECE_ORDER_BLOCKS: u32 = 512;
/// Most points per call: bucket offsets are u32 and count `n * windows` entries.
pub const MSM_POINTS_MAX: usize = 1 << 27;
/// How many evenly spaced host scalars [`scalars_look_dense`] reads.
const DENSE_SAMPLE: usize = 1024;
/// Fewest host scalars whose sample [`Gpu::set_msm_dense_auto`] reads: below, the 0/1 fast
/// path's pass costs about what the sample does (2^18 G1 scalars: ~0.05 ms).
pub const DENSE_SAMPLE_MIN: usize = 1 << 18;
const THREADS: u32 = 256;
/// Smallest piece (points one accumulate thread sums at most); the piece length is
/// `max(this, sqrt(n))`, which balances the two serial chains a skewed bucket of up to `n`
/// points runs (piece sums, then one thread summing the pieces). Measured on the H200
/// (BENCHMARKS.md, the CUDA kernel runs 2 and 3): a fixed 256 was 3-23% faster on random
/// scalars (G1 2^22 78 vs 87 ms, G2 2^22 225 vs 292 ms) but 2.4x slower on 0/1 scalars
/// (G1 2^24 378 vs 157 ms: one thread summed 21,800 pieces), so sqrt(n) stays until the
/// pieces of a large bucket are summed by a parallel tree.
const PIECE_POINTS_MIN: u32 = 64;
/// Over fixed-base windows, pieces are at most `2^-this` of the entries (but at least
/// [`PIECE_POINTS_MIN`] points): ~2^18 accumulate threads however few buckets there are.
const FIXED_PIECES_LOG: u32 = 18;
/// 0/1 fast path: points one `msm_ones` thread scans at least, the unit of its thread count
/// (the G1 block of the compacting kernel, [`SIGNED_ACC_THREADS`]), most threads, and the
/// fan-in of each `msm_reduce` round. The kernel before the sparse sort (`msm_ones_*`, 146
/// registers unbounded: 8 warps per SM) runs 256-thread blocks and at most
/// [`ONES_THREADS_BEFORE`] threads, as it always did; the compacting kernel runs the
/// accumulation's block size (G1: 512 threads, 128 registers, 16 warps per SM).
const ONES_POINTS_PER_THREAD: usize = 8;
const ONES_UNIT: usize = 512;
const ONES_THREADS_MAX: usize = 256 * ONES_UNIT;
const ONES_THREADS_BEFORE: usize = 256 * THREADS as usize;
const ONES_FAN: u32 = 16;
/// Block size of the fold trees (`MSM_FULL_KERNELS(.., TREE)` in msm_g1.cu / msm_g2.cu):
/// G1, G2. A block's points fill the 48 KiB of static shared memory (192 and 384 bytes).
pub(crate) const FOLD_TREE_THREADS: (u32, u32) = (256, 128);
/// The sparse sort lists at most `ceil(n / REST_SHARE)` scalars that are neither 0 nor 1;
/// with more, the sort reads every scalar (the list would cost more than it saves).
const REST_SHARE: usize = 4;

const _: () = assert!(std::mem::size_of::<blst_p1_affine>() == 2 * FP_BYTES);
const _: () = assert!(std::mem::size_of::<blst_p1>() == 3 * FP_BYTES);
const _: () = assert!(std::mem::size_of::<blst_p2_affine>() == 4 * FP_BYTES);
const _: () = assert!(std::mem::size_of::<blst_p2>() == 6 * FP_BYTES);

/// Which group an MSM runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    G1,
    G2,
}

impl Curve {
    /// Fp elements per coordinate.
    fn degree(self) -> usize {
        match self {
            Curve::G1 => 1,
            Curve::G2 => 2,
        }
    }

    /// A bucket: xyzz, four coordinates.
    fn xyzz_bytes(self) -> usize {
        4 * FP_BYTES * self.degree()
    }

    /// A window sum as blst's Jacobian point.
    fn jacobian_bytes(self) -> usize {
        3 * FP_BYTES * self.degree()
    }

    /// A base: blst's affine point.
    pub fn affine_bytes(self) -> usize {
        2 * FP_BYTES * self.degree()
    }
}

/// The MSM kernels a [`Gpu`] runs ([`Gpu::set_msm_kernels`]); every choice gives the same
/// point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MsmKernels {
    /// Unsigned digits, `c <= 13`, one 256-thread block per SM for the accumulation, the
    /// segments of each window summed by one thread: the kernels before the signed ones,
    /// kept as the baseline kernel_bench and peer-gpu-bench --msm time them against.
    Unsigned,
    /// Signed (Booth) digits, `c <= 16`, the G1 accumulation at 16 warps per SM, the
    /// segments folded by rounds, the sort in shared memory (a histogram of `2^(c-1)`
    /// counters per tile block and window). The default from the eleventh session, when
    /// the H200 checked it against blst and timed it against `Unsigned`: 1.28-1.59x on G1,
    /// 1.46-1.65x on G2 (BENCHMARKS.md); kept as the baseline of `SignedGlobal`.
    Signed,
    /// `Signed`'s windows, point kernels and segments with `Wide`'s sort in global memory:
    /// one atomic per entry, where the shared sort zeroes and flushes `2^(c-1)` counters per
    /// tile block and window whatever the block holds. That flush is most of the sort on a
    /// witness's scalars, 99% zeros and ones (the 0/1 path takes those): at 2^27 the sort
    /// was 1.7 against 19.8 ms (BENCHMARKS.md, sixteenth session). The default.
    #[default]
    SignedGlobal,
    /// Signed digits in wider windows, up to 22 bits, chosen from `n` by the same cost as
    /// `Signed` (13 windows of 20 bits at 2^24, 12 of 22 bits at 2^27, where `Signed` has 16
    /// of 16): fewer windows, so fewer bucket additions for the same points. 2^21 buckets
    /// per window do not fit a shared histogram, so the sort counts and scatters with one
    /// global atomic per entry and scans the counts in three launches (`msm_hist_global`,
    /// `msm_scan_sums`/`_top`/`_write`, `msm_scatter_global`); the point kernels are
    /// `Signed`'s.
    Wide,
}

impl MsmKernels {
    /// The kernels of an MSM over dense random scalars (the h MSM) unless a [`Gpu`] is told
    /// otherwise ([`Gpu::set_msm_dense_kernels`]).
    pub const DENSE_DEFAULT: MsmKernels = MsmKernels::Wide;
}

/// The bucket bits a device with `smem_optin_bytes` of shared memory per block allows the
/// signed windows (their shared histogram is `2^bits` u32), at most the default's.
pub fn bucket_bits_max_for(smem_optin_bytes: usize) -> u32 {
    let words = (smem_optin_bytes / 4).max(1);
    (usize::BITS - 1 - words.leading_zeros()).clamp(3, BUCKET_BITS_MAX_DEFAULT)
}

/// Device time of each stage of the last MSM (ms, summed over its chunks), measured by
/// events between the stages when [`Gpu::set_msm_stage_timing`] is on (kernel_bench
/// prints it to show where an MSM's time goes). The marks cover each bucket-method run
/// (one per chunk): work an MSM does before its first run (a witness MSM's gather, a
/// chunked MSM's first upload) or between chunks (waits for a chunk's host scalars or
/// streamed bases) is outside them, so [`MsmStageTimes::total_ms`] can be less than the
/// call's device time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MsmStageTimes {
    /// The run's scalars into place (a host upload, or a device copy of a chunk's) and the
    /// bucket counts zeroed.
    pub scalars_ms: f64,
    /// The 0/1 fast path's sum of the bases whose scalar is one.
    pub ones_ms: f64,
    /// Histograms, scan, scatter and pieces: point indices sorted into buckets.
    pub sort_ms: f64,
    /// Pieces' and buckets' sums of affine points.
    pub accumulate_ms: f64,
    /// Each window's weighted bucket sum (running sums, folds, Jacobian out).
    pub reduce_ms: f64,
}

// Five stages between the six marks an MSM run records.
const _: () = assert!(crate::device::STAGE_MARKS == 6);

impl MsmStageTimes {
    fn as_mut_array(&mut self) -> [&mut f64; 5] {
        [
            &mut self.scalars_ms,
            &mut self.ones_ms,
            &mut self.sort_ms,
            &mut self.accumulate_ms,
            &mut self.reduce_ms,
        ]
    }

    /// The five stages' sum.
    pub fn total_ms(&self) -> f64 {
        self.scalars_ms + self.ones_ms + self.sort_ms + self.accumulate_ms + self.reduce_ms
    }
}

/// Sizes of one MSM, chosen from `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    pub n: usize,
    /// The points the layout is sized for (`n`, or a chunked MSM's full chunk for its
    /// shorter last chunk: [`MsmPlan::for_chunk`]).
    pub slots: usize,
    pub kernels: MsmKernels,
    /// Window bits (windows are `c` bits apart under both schemes).
    pub c: u32,
    pub windows: u32,
    /// log2 of buckets per window: `c` unsigned, `c - 1` signed.
    pub bucket_bits: u32,
    /// Windows per set of buckets: 1, or over fixed-base windows ([`FixedWindows`]) their
    /// copies, each group of `group` consecutive windows sharing one set.
    pub group: u32,
    /// Sets of buckets, each reduced to one point: `ceil(windows / group)`, which the host
    /// combines `c * group` bits apart.
    pub sets: u32,
    /// Over fixed-base windows, the points between two copies of the bases (0 otherwise).
    pub stride: u32,
    /// `sets * 2^bucket_bits` buckets.
    pub buckets: usize,
    /// Points one accumulate thread sums at most.
    pub piece_len: u32,
    pub pieces_max: usize,
    /// log2 of buckets per reduction segment (signed windows: per run of the first level,
    /// whose sums the second level weighs).
    pub seg_log: u32,
    /// Signed windows: log2 of the runs' sums per segment of the reduction's second level
    /// (unsigned: 0, no second level).
    pub seg2_log: u32,
    /// Threads of the 0/1 fast path's `msm_ones` kernel (a multiple of every block size it
    /// runs with).
    pub ones_threads: usize,
    /// Most scalars neither 0 nor 1 the sparse sort lists (`ceil(n / 4)`).
    pub rest_cap: usize,
    /// Points per block of the hist and scatter kernels, and their block size.
    pub tile: usize,
    pub sort_threads: u32,
}

/// [`MsmPlan::sort_one_read_pays`]: most bytes of bucket counters (every window's).
pub const ONE_READ_COUNTERS_BYTES_MAX: usize = 4 << 20;
/// [`MsmPlan::sort_one_read_pays`]: fewest tile blocks.
pub const ONE_READ_TILES_MIN: usize = 256;
/// [`hist_overlap_chunk`]: the fewest scalars a chunk of an upload overlapped with the
/// global sort's counts.
pub const HIST_OVERLAP_CHUNK_MIN: usize = 1 << 18;
/// [`hist_overlap_chunk`]: the chunks an upload overlapped with the counts is cut in.
pub const HIST_OVERLAP_CHUNKS: usize = 8;

/// Scalars a chunk of the upload that the global sort's counts overlap
/// ([`Gpu::set_msm_hist_overlap`]): an eighth of the plan's, whole tiles, at least
/// [`HIST_OVERLAP_CHUNK_MIN`] (an MSM of fewer than two such chunks uploads in one copy).
pub fn hist_overlap_chunk(p: &MsmPlan) -> usize {
    p.n.div_ceil(HIST_OVERLAP_CHUNKS).next_multiple_of(p.tile).max(HIST_OVERLAP_CHUNK_MIN)
}

/// The grid of a global-sort pass (the counts, the scatter) over `n` scalars: a block a
/// tile, a row per `wins` windows (one row for all when it reads each scalar once).
fn sort_grid(p: &MsmPlan, n: usize, wins: u32) -> Dims {
    Dims::blocks_2d((n.div_ceil(p.tile) as u32, p.windows / wins), p.sort_threads)
}

impl MsmPlan {
    /// The plan of the default kernels on a device with the default shared memory.
    pub fn new(n: usize) -> MsmPlan {
        MsmPlan::with(n, MsmKernels::default(), BUCKET_BITS_MAX_DEFAULT)
    }

    /// The plan of `kernels`, signed windows of at most `bucket_bits_max + 1` bits.
    pub fn with(n: usize, kernels: MsmKernels, bucket_bits_max: u32) -> MsmPlan {
        MsmPlan::with_window(n, kernels, bucket_bits_max, None)
    }

    /// [`MsmPlan::with`], the window width fixed at `window` bits where the scheme allows
    /// it ([`window_bits_allowed`]; otherwise, and for `None`, chosen from `n`).
    pub fn with_window(n: usize, kernels: MsmKernels, bucket_bits_max: u32, window: Option<u32>) -> MsmPlan {
        MsmPlan::layout(n, kernels, bucket_bits_max, window, 1)
    }

    /// The plan of an MSM of `n` points over fixed-base windows `fixed` whose copies lie
    /// `stride` points apart (the wide kernels, `fixed.c`-bit windows, the windows of each
    /// copy group sharing a set of buckets). `fixed` must pass [`FixedWindows::check`].
    pub fn with_fixed(n: usize, fixed: FixedWindows, stride: usize) -> MsmPlan {
        debug_assert!(fixed.check(stride).is_ok() && n <= stride.max(n));
        let p = MsmPlan::layout(n, MsmKernels::Wide, BUCKET_BITS_MAX_DEFAULT, Some(fixed.c), fixed.copies);
        MsmPlan { stride: u32::try_from(stride).expect("checked: copies x points < 2^31"), ..p }
    }

    fn layout(
        n: usize,
        kernels: MsmKernels,
        bucket_bits_max: u32,
        window: Option<u32>,
        group: u32,
    ) -> MsmPlan {
        let log_n = n.max(2).next_power_of_two().trailing_zeros();
        let window = window.filter(|&c| window_bits_allowed(kernels, bucket_bits_max, c));
        let (c, windows, bucket_bits) = match kernels {
            MsmKernels::Unsigned => {
                // ~2^(log n - 8) buckets per window keeps the reduction small against
                // n * windows additions.
                let c = log_n.saturating_sub(8).clamp(4, WINDOW_BITS_MAX);
                (c, SCALAR_BITS.div_ceil(c), c)
            }
            MsmKernels::Signed | MsmKernels::SignedGlobal | MsmKernels::Wide => {
                let c = window.unwrap_or_else(|| {
                    signed_window_bits(n, signed_window_bits_max(kernels, bucket_bits_max))
                });
                (c, signed_windows(c), c - 1)
            }
        };
        let group = group.clamp(1, windows);
        let sets = windows.div_ceil(group);
        let buckets = (sets as usize) << bucket_bits;
        let entries = n * windows as usize;
        let mut piece_len = (1u32 << log_n.div_ceil(2)).max(PIECE_POINTS_MIN);
        if group > 1 {
            // Few sets of buckets hold many points each (one set of 2^15 at 2^20 points: 512
            // a bucket): pieces short enough that ~2^18 threads accumulate.
            let fill = (entries >> FIXED_PIECES_LOG).max(1).next_power_of_two();
            piece_len = piece_len.min((fill as u32).max(PIECE_POINTS_MIN));
        }
        let (seg_log, seg2_log, tile, sort_threads) = match kernels {
            MsmKernels::Unsigned => (5.min(c - 2), 0, TILE_POINTS, SORT_THREADS.0),
            MsmKernels::Signed | MsmKernels::SignedGlobal | MsmKernels::Wide => {
                let wide = kernels == MsmKernels::Wide;
                let win_log = sets.next_power_of_two().trailing_zeros();
                // Wide windows of up to 16 bits have a signed window's buckets: its segments
                // too (at 2^20 on the H200 the reduction took 2.6 ms with them, 4.2 without).
                let seg_threads_log = if wide && c > SIGNED_WINDOW_BITS_MAX {
                    WIDE_SEGMENT_THREADS_LOG
                } else {
                    SEGMENT_THREADS_LOG
                };
                // Runs leave at least 4 sums per set for the second level (bucket_bits >= 3).
                let seg_log =
                    (bucket_bits + win_log).saturating_sub(seg_threads_log).clamp(1, bucket_bits - 2);
                let runs_log = bucket_bits - seg_log;
                let seg2_log =
                    (runs_log + win_log).saturating_sub(SEGMENT2_THREADS_LOG).clamp(1, runs_log - 1);
                if kernels != MsmKernels::Signed {
                    (seg_log, seg2_log, WIDE_TILE_POINTS, WIDE_SORT_THREADS)
                } else {
                    let tile = (entries / SIGNED_TILE_BLOCKS)
                        .next_power_of_two()
                        .clamp(SIGNED_TILE_POINTS.0, SIGNED_TILE_POINTS.1);
                    (seg_log, seg2_log, tile, SORT_THREADS.1)
                }
            }
        };
        MsmPlan {
            n,
            slots: n,
            kernels,
            c,
            windows,
            bucket_bits,
            group,
            sets,
            stride: 0,
            buckets,
            piece_len,
            // A bucket's pieces are ceil(count / piece_len) <= 1 + count / piece_len, and only
            // a bucket with an entry has any: at most min(buckets, entries) + entries / len.
            pieces_max: buckets.min(entries) + entries.div_ceil(piece_len as usize) + 1,
            seg_log,
            seg2_log,
            ones_threads: n
                .div_ceil(ONES_UNIT * ONES_POINTS_PER_THREAD)
                .clamp(1, ONES_THREADS_MAX / ONES_UNIT)
                * ONES_UNIT,
            rest_cap: n.div_ceil(REST_SHARE).max(1),
            tile,
            sort_threads,
        }
    }

    /// This plan for `n <= self.slots` of its points: the same windows, buckets and layout
    /// (a chunked MSM runs every chunk on its full chunk's plan, so that the chunks share
    /// one set of buckets at one address).
    pub fn for_chunk(self, n: usize) -> MsmPlan {
        assert!(n <= self.slots, "a chunk of at most the plan's points");
        MsmPlan { n, ..self }
    }

    /// Whether the global-memory sort should read each scalar once for all its windows:
    /// when every window's counters together stay small (at most
    /// [`ONE_READ_COUNTERS_BYTES_MAX`]: the signed windows of at most 16 bits, whose
    /// counters stay in L2 whatever the window) and the grid has at least
    /// [`ONE_READ_TILES_MIN`] tile blocks (it has no window dimension). On the H200 the
    /// sort of `SignedGlobal` took 15.2 against 17.1 ms at 2^24 and 122 against 137 at 2^27
    /// so; the wide windows' (2^19 counters each) 21.6 against 18.2, and a G2 MSM of 2^14
    /// points (4 tiles) 0.36 against 0.08 (BENCHMARKS.md, eighteenth session).
    pub fn sort_one_read_pays(&self) -> bool {
        self.buckets * 4 <= ONE_READ_COUNTERS_BYTES_MAX && self.n.div_ceil(self.tile) >= ONE_READ_TILES_MIN
    }

    /// Whether the digits are signed.
    pub fn signed(&self) -> bool {
        self.kernels != MsmKernels::Unsigned
    }

    /// Whether the sort runs in global memory (`Wide`, `SignedGlobal`).
    pub fn global_sort(&self) -> bool {
        matches!(self.kernels, MsmKernels::Wide | MsmKernels::SignedGlobal)
    }

    /// Blocks of the multi-block scan over the bucket counts (the global sort; 0 otherwise).
    fn scan_blocks(&self) -> usize {
        if self.global_sort() {
            self.buckets.div_ceil(SCAN_BLOCK_COUNTS)
        } else {
            0
        }
    }

    /// Dynamic shared memory of a tile block: its histogram, one u32 per bucket of a window.
    pub fn tile_smem_bytes(&self) -> usize {
        4 << self.bucket_bits
    }

    /// Device scratch bytes of one call in `curve` (bases not counted): the layout
    /// [`Gpu`]'s MSM takes, laid out on a dry run.
    pub fn scratch_bytes(&self, curve: Curve) -> usize {
        let mut b = Bump::dry();
        MsmSpans::take(&mut b, self, curve).expect("a dry layout has room");
        b.used_bytes()
    }
}

/// Fixed-base windows for bases that never change (the parameters'): `copies` copies of
/// the bases on the device, copy `t` holding `2^(c t)` times each base, made once when
/// they are uploaded ([`Gpu::upload_g1_bases_fixed`]). An MSM over them runs the wide
/// kernels with `c`-bit signed windows and gives each group of `copies` consecutive windows
/// one set of buckets (window `q * copies + t` adds copy `t`'s points to set `q`), so it
/// reduces `ceil(windows / copies)` sets instead of `windows` windows, and the sets fill
/// with `copies` times the points. The price is `copies` times the bases' device memory;
/// [`FixedWindows::choose`] weighs it against the additions saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedWindows {
    /// Window bits.
    pub c: u32,
    /// Copies of the bases (1: the bases alone, a fixed window width and nothing more).
    pub copies: u32,
}

/// [`FixedWindows::additions`]' term, per bucket of a set (one set or many: the chains of
/// several sets run side by side), for what a set's buckets cost beyond three additions.
const REDUCE_CHAIN_ADDITIONS: usize = 7;
/// Most `copies * points` of [`FixedWindows`]: a sorted index keeps bit 31 for the sign.
pub const FIXED_INDEX_MAX: usize = 1 << 31;

impl FixedWindows {
    /// The signed windows of `c` bits.
    pub fn windows(self) -> u32 {
        signed_windows(self.c)
    }

    /// The sets of buckets an MSM reduces: `ceil(windows / copies)`.
    pub fn sets(self) -> u32 {
        self.windows().div_ceil(self.copies.max(1))
    }

    /// Device bytes of the copies of `n` bases of `curve` (the bases included).
    pub fn bytes(self, curve: Curve, n: usize) -> usize {
        (self.copies as usize).saturating_mul(n).saturating_mul(curve.affine_bytes())
    }

    /// That the wide kernels run these windows over `n` bases: `c` a width they run (4 to
    /// 22 bits, not dividing 255), 1 to `windows` copies (more would share no set), and
    /// `copies * n` indices below [`FIXED_INDEX_MAX`].
    pub fn check(self, n: usize) -> Result<()> {
        if !window_bits_allowed(MsmKernels::Wide, BUCKET_BITS_MAX_DEFAULT, self.c) {
            return Err(CudaError::Limit {
                what: "fixed-base windows: window bits (4 to 22, not dividing 255)",
                value: self.c as usize,
                limit: WIDE_WINDOW_BITS_MAX as usize,
            });
        }
        if !(1..=self.windows()).contains(&self.copies) {
            return Err(CudaError::Limit {
                what: "fixed-base windows: copies (1 to the windows)",
                value: self.copies as usize,
                limit: self.windows() as usize,
            });
        }
        let indices = (self.copies as usize).saturating_mul(n);
        if indices > FIXED_INDEX_MAX {
            return Err(CudaError::Limit {
                what: "fixed-base windows: copies x points",
                value: indices,
                limit: FIXED_INDEX_MAX,
            });
        }
        Ok(())
    }

    /// The cost model's windows for MSMs of `n` points whose copies take at most
    /// `budget_bytes` (one copy, the bases themselves, always fits): the fewest
    /// [`FixedWindows::additions`], the fewer copies where two cost the same.
    pub fn choose(curve: Curve, n: usize, budget_bytes: usize) -> FixedWindows {
        let n = n.max(1);
        FixedWindows::candidates(n)
            .filter(|f| f.copies == 1 || f.bytes(curve, n) <= budget_bytes)
            .min_by_key(|f| (f.additions(n), f.copies))
            .expect("one copy of a width the kernels run always qualifies")
    }

    /// The cost model of an MSM of `n` points over these windows, in additions: `windows *
    /// n + (3 * sets + REDUCE_CHAIN_ADDITIONS) * 2^(c-1)`. Each point is added once per
    /// window; each bucket costs about three additions to reduce; and a set's buckets cost
    /// more than that in its sort (the scan, the pieces) and its reduction's serial chains
    /// (runs, segments weighted by their first bucket, folds), which grow with them. Fitted
    /// to the stage splits of an H100 (BENCHMARKS.md, "The fixed-base cost model"): sort
    /// and reduction together cost 10.7 additions a bucket more for one set of 2^19 buckets
    /// than for one of 2^15 at 2^20 points (three a bucket put the 2^19 set's reduction at
    /// 0.6 ms; it took 2.5), and 7.7 more for one of 2^21 than for one of 2^19 at 2^24.
    pub fn additions(self, n: usize) -> usize {
        self.windows() as usize * n + ((3 * self.sets() as usize + REDUCE_CHAIN_ADDITIONS) << (self.c - 1))
    }

    /// The top window's raw bits, `255 - (windows - 1) * c` (its digits fill about
    /// `2^top_bits` buckets of its set).
    pub fn top_bits(self) -> u32 {
        SCALAR_BITS - (self.windows() - 1) * self.c
    }

    /// Every shape the kernels run over `n` bases, without wasted copies (each copy
    /// saves a set), in no particular order. Shared sets also leave out widths whose top
    /// window has fewer than `c / 2` raw bits: its `n` digits crowd a few of the set's
    /// buckets, whose pieces one thread then sums in a chain (on the H200 at 2^20, 18-bit
    /// windows, 3 top bits, 15 copies: accumulation 38 ms against 6.9 ms for 16-bit ones).
    pub fn candidates(n: usize) -> impl Iterator<Item = FixedWindows> {
        (4..=WIDE_WINDOW_BITS_MAX)
            .flat_map(|c| (1..=signed_windows(c)).map(move |copies| FixedWindows { c, copies }))
            .filter(move |f| {
                f.check(n).is_ok()
                    && (f.copies == 1
                        || (FixedWindows { copies: f.copies - 1, ..*f }.sets() > f.sets()
                            && 2 * f.top_bits() >= f.c))
            })
    }
}

/// Fixed-base windows as an MSM reads them: the windows and the points between copies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedBases {
    windows: FixedWindows,
    stride: usize,
}

/// Signed windows of `c` bits: `floor(255 / c) + 1`, so the top window has at most `c - 1`
/// raw bits and its carry-in never carries out (`c` dividing 255 would give a window of
/// carries alone, which [`signed_window_bits`] never picks).
fn signed_windows(c: u32) -> u32 {
    SCALAR_BITS / c + 1
}

/// The widest signed window `kernels` allow: `Signed` (and `SignedGlobal`, whose point
/// kernels are the same) within the device's shared histogram (`bucket_bits_max + 1`, at
/// most 16), `Wide` 22.
fn signed_window_bits_max(kernels: MsmKernels, bucket_bits_max: u32) -> u32 {
    match kernels {
        MsmKernels::Wide => WIDE_WINDOW_BITS_MAX,
        _ => (bucket_bits_max + 1).min(SIGNED_WINDOW_BITS_MAX),
    }
}

/// Whether a window of `c` bits can be fixed for `kernels` ([`Gpu::set_msm_window_bits`]):
/// a signed scheme, `4 <= c <=` its widest, and `c` not dividing 255.
pub fn window_bits_allowed(kernels: MsmKernels, bucket_bits_max: u32, c: u32) -> bool {
    kernels != MsmKernels::Unsigned
        && (4..=signed_window_bits_max(kernels, bucket_bits_max)).contains(&c)
        && SCALAR_BITS % c != 0
}

/// The signed window width for `n` points, at most `c_max`: the one with the fewest
/// additions, `windows * (n + 3 * 2^(c-1))` (each point once per window; the running sums
/// cost about three mixed additions per bucket), skipping widths that divide 255.
fn signed_window_bits(n: usize, c_max: u32) -> u32 {
    let cost = |c: u32| signed_windows(c) as usize * (n + (3usize << (c - 1)));
    (4..=c_max.clamp(4, WIDE_WINDOW_BITS_MAX))
        .filter(|c| SCALAR_BITS % c != 0)
        .min_by_key(|&c| cost(c))
        .expect("widths 4..=c_max include some that do not divide 255")
}

/// The scratch spans of one MSM, in the order they are taken from the arena.
struct MsmSpans {
    scalars: DevSpan,
    /// The bucket counts, then one more word: the sparse sort's count of listed scalars
    /// (zeroed with the counts).
    counts: DevSpan,
    offsets: DevSpan,
    cursor: DevSpan,
    poffsets: DevSpan,
    idx: DevSpan,
    pieces: DevSpan,
    partial: DevSpan,
    buckets: DevSpan,
    segs: DevSpan,
    ones: DevSpan,
    ones_folded: DevSpan,
    rest: DevSpan,
    out: DevSpan,
    /// The multi-block scan's per-block totals (the global-memory sort only: `Wide`,
    /// `SignedGlobal`).
    scan_sums: Option<DevSpan>,
    /// The pieces by decreasing length (signed kernels): the classes' counts, offsets,
    /// cursors and (unused) piece offsets for `msm_scan`, and the order.
    order: Option<PieceOrderSpans>,
}

/// The scratch of the pieces' order ([`Gpu::set_msm_piece_order`]).
struct PieceOrderSpans {
    counts: DevSpan,
    offsets: DevSpan,
    cursor: DevSpan,
    poffsets: DevSpan,
    perm: DevSpan,
}

impl MsmSpans {
    /// The sparse sort's count of listed scalars: the word after the bucket counts.
    fn nrest(&self) -> DevPtr {
        self.counts.at(self.counts.len_bytes - 4)
    }

    /// Where the sum of the ones goes: the point after the sets' sums in `out`.
    fn ones_out(&self, p: &MsmPlan, curve: Curve) -> DevPtr {
        self.out.at(curve.jacobian_bytes() * p.sets as usize)
    }

    fn take(b: &mut Bump, p: &MsmPlan, curve: Curve) -> Result<MsmSpans> {
        let (m, xyzz_bytes) = (p.buckets, curve.xyzz_bytes());
        let nseg = 1usize << (p.bucket_bits - p.seg_log);
        Ok(MsmSpans {
            scalars: b.take("msm: scalars", p.slots * SCALAR_BYTES)?,
            counts: b.take("msm: bucket counts", 4 * (m + 1))?,
            offsets: b.take("msm: bucket offsets", 4 * (m + 1))?,
            cursor: b.take("msm: bucket cursors", 4 * m)?,
            poffsets: b.take("msm: piece offsets", 4 * (m + 1))?,
            idx: b.take("msm: sorted point indices", 4 * p.slots * p.windows as usize)?,
            pieces: b.take("msm: pieces", 8 * p.pieces_max)?,
            partial: b.take("msm: piece sums", xyzz_bytes * p.pieces_max)?,
            buckets: b.take("msm: buckets", xyzz_bytes * m)?,
            segs: b.take("msm: window segments", xyzz_bytes * p.sets as usize * nseg)?,
            ones: b.take("msm: sums of the ones", xyzz_bytes * p.ones_threads)?,
            ones_folded: b.take(
                "msm: folded sums of the ones",
                xyzz_bytes * p.ones_threads.div_ceil(ONES_FAN as usize),
            )?,
            rest: b.take("msm: scalars neither 0 nor 1", 4 * p.rest_cap)?,
            // One Jacobian point per set of buckets (per window but over fixed-base windows),
            // then the sum of the ones.
            out: b.take("msm: window sums", curve.jacobian_bytes() * (p.sets as usize + 1))?,
            scan_sums: match p.scan_blocks() {
                0 => None,
                blocks => Some(b.take("msm: scan block totals", 8 * blocks)?),
            },
            order: if p.signed() {
                Some(PieceOrderSpans {
                    counts: b.take("msm: piece length classes", 4 * PIECE_CLASSES)?,
                    offsets: b.take("msm: piece class offsets", 4 * (PIECE_CLASSES + 1))?,
                    cursor: b.take("msm: piece class cursors", 4 * PIECE_CLASSES)?,
                    poffsets: b.take("msm: piece class scan", 4 * (PIECE_CLASSES + 1))?,
                    perm: b.take("msm: pieces by length", 4 * p.pieces_max)?,
                })
            } else {
                None
            },
        })
    }
}

/// One part of an MSM run by [`Gpu::msm_run_part`]: a chunk (or the whole call) on `plan`,
/// whether it is the first (its buckets replace the span's contents) and the last (it
/// reduces the windows).
#[derive(Clone, Copy, Debug)]
struct MsmPart {
    plan: MsmPlan,
    first: bool,
    last: bool,
}

/// Resident MSMs of more than this many points run in chunks of [`RESIDENT_CHUNK`]: on the
/// H200 the 2^27 h MSM took 2.04 s in one piece and 1.71 s as eight 2^24 chunks (the
/// streamed run of BENCHMARKS.md, "A device-memory budget"): each chunk's sorted indices
/// (1.25 GiB instead of 10) stay closer to the cache.
const RESIDENT_CHUNK_ABOVE: usize = 1 << 25;
const RESIDENT_CHUNK: usize = 1 << 24;
/// Both, as [`Gpu`] keeps them.
pub(crate) const RESIDENT_CHUNKING: (usize, usize) = (RESIDENT_CHUNK_ABOVE, RESIDENT_CHUNK);

/// Where a chunked MSM's bases are: in host memory, or resident at a span.
enum ChunkFrom<'a, A> {
    Host(&'a [A]),
    Device(DevSpan),
}

/// Where a chunked MSM reads each chunk's bases, once laid out.
enum ChunkBases<'a, A> {
    /// In host memory: each chunk is copied up into one of two buffers in turn.
    Host { bases: &'a [A], bufs: [DevSpan; 2] },
    /// Resident: each chunk is read where it lies.
    Device(DevSpan),
}

/// The layout of a chunked MSM: every scalar, where a plain MSM keeps its scalars (the
/// start of the scratch), then for streamed bases ([`BaseSet::Streamed`]) the two chunk
/// buffers. Each chunk's own MSM layout goes above them.
fn chunk_layout<'a, A>(
    b: &mut Bump,
    n: usize,
    chunk: usize,
    curve: Curve,
    from: ChunkFrom<'a, A>,
) -> Result<(DevSpan, ChunkBases<'a, A>)> {
    let scalars = b.take("chunked MSM: scalars", n * SCALAR_BYTES)?;
    let bases = match from {
        ChunkFrom::Host(bases) => {
            let buf = chunk.min(n) * curve.affine_bytes();
            let bufs =
                [b.take("streamed MSM: bases buffer 0", buf)?, b.take("streamed MSM: bases buffer 1", buf)?];
            ChunkBases::Host { bases, bufs }
        }
        ChunkFrom::Device(span) => ChunkBases::Device(span),
    };
    Ok((scalars, bases))
}

impl<A> Clone for ChunkBases<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for ChunkBases<'_, A> {}

/// The chunk length of a resident MSM of `n` points (`None`: one piece).
pub(crate) fn resident_chunk(n: usize) -> Option<usize> {
    (n > RESIDENT_CHUNK_ABOVE).then_some(RESIDENT_CHUNK)
}

/// The chunks of an `n`-point MSM streamed `chunk` points at a time.
fn chunk_ranges(n: usize, chunk: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let k = chunk.max(1);
    (0..n.div_ceil(k)).map(move |j| j * k..((j + 1) * k).min(n))
}

/// Device scratch bytes of an MSM of `n` scalars in `curve` over bases streamed `chunk`
/// at a time ([`BaseSet::Streamed`]): every scalar, two chunk buffers and the largest
/// chunk's MSM layout, laid out on a dry run as the call lays them out.
pub fn streamed_scratch_bytes(curve: Curve, n: usize, chunk: usize) -> usize {
    chunked_scratch_bytes(curve, n, chunk, true, |k| MsmChoice::DEFAULT.plan(k))
}

/// [`streamed_scratch_bytes`], or for resident bases read in place (`streamed` false), each
/// chunk on `plan` of the first (full) chunk's points.
fn chunked_scratch_bytes(
    curve: Curve,
    n: usize,
    chunk: usize,
    streamed: bool,
    plan: impl Fn(usize) -> MsmPlan,
) -> usize {
    let mut b = Bump::dry();
    let from =
        if streamed { ChunkFrom::Host(&[][..]) } else { ChunkFrom::Device(DevSpan { ptr: 0, len_bytes: 0 }) };
    chunk_layout::<u8>(&mut b, n, chunk.max(1), curve, from).expect("a dry layout has room");
    // Every chunk runs on the first (full) chunk's plan ([`MsmPlan::for_chunk`]).
    let above = if n == 0 { 0 } else { plan(chunk.max(1).min(n)).scratch_bytes(curve) };
    b.used_bytes() + above
}

/// Device scratch bytes of a G1 MSM of `n` scalars over as many resident bases with
/// fixed-base windows `fixed` (in chunks where plain resident bases would be).
pub fn fixed_msm_scratch_bytes(n: usize, fixed: FixedWindows) -> usize {
    match resident_chunk(n) {
        None => MsmPlan::with_fixed(n, fixed, n).scratch_bytes(Curve::G1),
        Some(k) => chunked_scratch_bytes(Curve::G1, n, k, false, |k| MsmPlan::with_fixed(k, fixed, n)),
    }
}

/// Device scratch bytes of an MSM of `n` scalars over bases resident (`chunk` `None`)
/// or streamed `chunk` at a time.
pub fn msm_scratch_bytes(curve: Curve, n: usize, chunk: Option<usize>) -> usize {
    layout_bytes(curve, n, chunk, resident_chunk(n), MsmChoice::DEFAULT)
}

/// Whether switching a `curve` MSM of `n` points, laid out in `chunk`s or (resident bases)
/// `resident` chunks, from the `default` kernels to the `dense` ones can pay: G1 only (in G2
/// the two measured alike), and only where the dense plan has fewer windows (up to 2^22
/// points on the H100/H200 both plan 16 of 16 bits).
fn dense_switch_pays(
    curve: Curve,
    n: usize,
    chunk: Option<usize>,
    resident: Option<usize>,
    dense: MsmChoice,
    default: MsmChoice,
) -> bool {
    let m = chunk.or(resident).map_or(n, |k| k.clamp(1, n.max(1)));
    curve == Curve::G1 && dense.plan(m).windows < default.plan(m).windows
}

/// [`msm_scratch_bytes`] with room for the dense kernels where [`Gpu::set_msm_dense_auto`]
/// may choose them (a G1 MSM whose dense plan has fewer windows than the default's): what
/// to reserve so that dense host scalars get the wider windows. The default kernels' layout
/// alone leaves such an MSM on the default kernels.
pub fn msm_auto_scratch_bytes(curve: Curve, n: usize, chunk: Option<usize>) -> usize {
    let default = msm_scratch_bytes(curve, n, chunk);
    let resident = resident_chunk(n);
    if !dense_switch_pays(curve, n, chunk, resident, MsmChoice::DENSE, MsmChoice::DEFAULT) {
        return default;
    }
    default.max(layout_bytes(curve, n, chunk, resident, MsmChoice::DENSE))
}

/// [`msm_scratch_bytes`] of the h MSM (G1, the dense kernels: [`MsmKernels::DENSE_DEFAULT`]).
pub fn h_msm_scratch_bytes(n: usize, chunk: Option<usize>) -> usize {
    layout_bytes(Curve::G1, n, chunk, resident_chunk(n), MsmChoice::DENSE)
}

/// [`msm_scratch_bytes`] with the resident chunk length given (`resident`: `None` for one
/// piece) and the kernels `choice`.
fn layout_bytes(
    curve: Curve,
    n: usize,
    chunk: Option<usize>,
    resident: Option<usize>,
    choice: MsmChoice,
) -> usize {
    match (chunk, resident) {
        (None, None) => choice.plan(n).scratch_bytes(curve),
        (None, Some(k)) => chunked_scratch_bytes(curve, n, k, false, |k| choice.plan(k)),
        (Some(k), _) => chunked_scratch_bytes(curve, n, k, true, |k| choice.plan(k)),
    }
}

/// Which kernels plan an MSM, and the widest signed window the device allows: what a
/// [`Gpu`] lays its MSMs out with ([`Gpu::msm_choice`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MsmChoice {
    pub kernels: MsmKernels,
    pub bucket_bits_max: u32,
    /// A fixed window width ([`Gpu::set_msm_window_bits`]; `None`: chosen from `n`).
    pub window_bits: Option<u32>,
}

impl MsmChoice {
    /// The default kernels on an H100/H200: what the device plan assumes.
    pub const DEFAULT: MsmChoice = MsmChoice {
        kernels: MsmKernels::SignedGlobal,
        bucket_bits_max: BUCKET_BITS_MAX_DEFAULT,
        window_bits: None,
    };
    /// The h MSM's default on an H100/H200.
    pub const DENSE: MsmChoice = MsmChoice { kernels: MsmKernels::DENSE_DEFAULT, ..MsmChoice::DEFAULT };

    pub fn plan(self, n: usize) -> MsmPlan {
        MsmPlan::with_window(n, self.kernels, self.bucket_bits_max, self.window_bits)
    }

    /// The widest window these kernels run on this device (0: unsigned, no fixed width).
    pub fn widest_window(self) -> u32 {
        match self.kernels {
            MsmKernels::Unsigned => 0,
            k => signed_window_bits_max(k, self.bucket_bits_max),
        }
    }
}

/// Where an MSM's bases are.
#[derive(Debug)]
pub enum BaseSet<'a, A> {
    /// Resident in the device arena.
    Resident(&'a Bases<A>),
    /// In host memory (page-locked, for copies at full speed), copied up `chunk` points at
    /// a time on the copy stream while the previous chunk's MSM runs: for a device whose
    /// memory budget does not hold every base set. The chunks add their points into one
    /// set of buckets, which the last chunk reduces.
    Streamed { bases: &'a [A], chunk: usize },
}

impl<A> Clone for BaseSet<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for BaseSet<'_, A> {}

impl<A> BaseSet<'_, A> {
    pub fn len(&self) -> usize {
        match self {
            BaseSet::Resident(b) => b.len,
            BaseSet::Streamed { bases, .. } => bases.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk length of streamed bases (`None`: resident).
    pub(crate) fn streamed_chunk(&self) -> Option<usize> {
        match self {
            BaseSet::Resident(_) => None,
            BaseSet::Streamed { chunk, .. } => Some(*chunk),
        }
    }
}

/// Bases resident in the device arena's persistent part ([`G1Bases`], [`G2Bases`]).
#[derive(Debug)]
pub struct Bases<A> {
    pub(crate) span: DevSpan,
    pub(crate) len: usize,
    pub(crate) arena_id: u64,
    /// Fixed-base windows: the span holds their copies ([`Gpu::upload_g1_bases_fixed`]).
    pub(crate) fixed: Option<FixedWindows>,
    _affine: PhantomData<A>,
}

pub type G1Bases = Bases<blst_p1_affine>;
pub type G2Bases = Bases<blst_p2_affine>;

impl<A> Bases<A> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fixed-base windows these bases were uploaded with (`None`: plain bases).
    pub fn fixed(&self) -> Option<FixedWindows> {
        self.fixed
    }

    /// How an MSM reads them: its windows fixed, or chosen from its points.
    fn fixed_bases(&self) -> Option<FixedBases> {
        self.fixed.map(|windows| FixedBases { windows, stride: self.len })
    }
}

/// How an MSM runs for dense scalars ([`Gpu::with_dense_run`]): the dense kernels
/// (`kernels`), and the 0/1 fast path off (`ones_off`). [`Gpu::set_msm_dense_auto`] decides
/// both for host scalars; both false leave the choice in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DenseRun {
    pub(crate) kernels: bool,
    pub(crate) ones_off: bool,
}

impl DenseRun {
    /// h's coefficients: the dense kernels and no 0/1 pass (none of them is one but by
    /// chance).
    pub(crate) const ALL: DenseRun = DenseRun { kernels: true, ones_off: true };
}

/// What [`DENSE_SAMPLE`] evenly spaced scalars of a slice (all of them when there are fewer)
/// hold: how many were read, how many are neither zero nor one, how many are one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    read: usize,
    other: usize,
    ones: usize,
}

impl Sample {
    /// Reads at most 32 KiB, spread over the slice.
    fn of(scalars: &[[u8; SCALAR_BYTES]]) -> Sample {
        let n = scalars.len();
        let read = n.min(DENSE_SAMPLE);
        let (mut other, mut ones) = (0, 0);
        for s in (0..read).map(|i| &scalars[i * n / read]) {
            match (s[1..].iter().any(|&b| b != 0), s[0]) {
                (false, 0) => {}
                (false, 1) => ones += 1,
                _ => other += 1,
            }
        }
        Sample { read, other, ones }
    }

    /// At least 7/8 of the sample neither zero nor one.
    fn dense(self) -> bool {
        self.read > 0 && 8 * self.other >= 7 * self.read
    }
}

/// Whether `scalars` look dense: at least 7/8 of [`DENSE_SAMPLE`] evenly spaced ones (all of
/// them when there are fewer) are neither zero nor one. A witness's scalars are mostly
/// zeros and ones (PoRep's A, B and L: 99%), h's coefficients and random scalars almost
/// never are. Reads at most 32 KiB, spread over the slice.
pub fn scalars_look_dense(scalars: &[[u8; SCALAR_BYTES]]) -> bool {
    Sample::of(scalars).dense()
}

/// Where an MSM's scalars (canonical 32-byte strings) come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scalars<'a> {
    /// Host memory, copied in by the call.
    Host(&'a [[u8; SCALAR_BYTES]]),
    /// `n` scalars already at a device address the caller owns until the call returns
    /// (the h pipeline's output); copied device-to-device unless they already lie where
    /// the MSM's layout puts its scalars.
    Device { ptr: DevPtr, n: usize },
}

impl Scalars<'_> {
    fn len(&self) -> usize {
        match *self {
            Scalars::Host(s) => s.len(),
            Scalars::Device { n, .. } => n,
        }
    }
}

/// The point-side kernels of one group.
pub(crate) struct PointKernels<'k> {
    curve: Curve,
    ones: &'k MsmOnes,
    ones_compact: &'k MsmOnesCompact,
    reduce: &'k MsmReduce,
    fold_tree: &'k MsmFoldTree,
    /// The block size `fold_tree` is bounded for.
    fold_tree_threads: u32,
    accumulate: &'k MsmAccumulate,
    accumulate_signed: &'k MsmAccumulate,
    /// The block size `accumulate_signed` is bounded for.
    signed_acc_threads: u32,
    /// Batch-affine accumulation ([`Gpu::set_msm_batch_affine`]): the pieces per thread of
    /// both accumulate kernels, which then run [`BA_THREADS`] threads a block.
    ba_pieces: Option<u32>,
    buckets: &'k MsmBuckets,
    runs: &'k MsmWindowRuns,
    segments: &'k MsmWindowSegments,
    sums: &'k MsmWindowSums,
}

impl Gpu {
    /// The point kernels of `curve`: the mixed additions' under this GPU's arithmetic
    /// ([`Gpu::set_msm_madd`]: written out, `_inl`, or sppark's), the full additions' sppark's.
    pub(crate) fn point_kernels(&self, curve: Curve) -> PointKernels<'_> {
        let k = &self.dev.k;
        let (ones, ones_compact, accumulate, accumulate_signed) = match (curve, self.msm_madd) {
            (Curve::G1, false) => {
                (&k.msm_ones_g1, &k.msm_ones_compact_g1, &k.msm_accumulate_g1, &k.msm_accumulate_signed_g1)
            }
            (Curve::G1, true) => (
                &k.msm_ones_g1_inl,
                &k.msm_ones_compact_g1_inl,
                &k.msm_accumulate_g1_inl,
                &k.msm_accumulate_signed_g1_inl,
            ),
            (Curve::G2, false) => {
                (&k.msm_ones_g2, &k.msm_ones_compact_g2, &k.msm_accumulate_g2, &k.msm_accumulate_signed_g2)
            }
            (Curve::G2, true) => (
                &k.msm_ones_g2_inl,
                &k.msm_ones_compact_g2_inl,
                &k.msm_accumulate_g2_inl,
                &k.msm_accumulate_signed_g2_inl,
            ),
        };
        let ba_pieces = self.msm_batch_affine.filter(|_| curve == Curve::G1);
        let (accumulate, accumulate_signed) = match ba_pieces {
            None => (accumulate, accumulate_signed),
            Some(4) => (&k.msm_accumulate_g1_ba4, &k.msm_accumulate_signed_g1_ba4),
            Some(8) => (&k.msm_accumulate_g1_ba8, &k.msm_accumulate_signed_g1_ba8),
            Some(_) => (&k.msm_accumulate_g1_ba16, &k.msm_accumulate_signed_g1_ba16),
        };
        let (reduce, fold_tree, fold_tree_threads) = match curve {
            Curve::G1 => (&k.msm_reduce_g1, &k.msm_fold_tree_g1, FOLD_TREE_THREADS.0),
            Curve::G2 => (&k.msm_reduce_g2, &k.msm_fold_tree_g2, FOLD_TREE_THREADS.1),
        };
        let (buckets, runs, segments, sums, signed_acc_threads) = match curve {
            Curve::G1 => (
                &k.msm_buckets_g1,
                &k.msm_window_runs_g1,
                &k.msm_window_segments_g1,
                &k.msm_window_sums_g1,
                SIGNED_ACC_THREADS.0,
            ),
            Curve::G2 => (
                &k.msm_buckets_g2,
                &k.msm_window_runs_g2,
                &k.msm_window_segments_g2,
                &k.msm_window_sums_g2,
                SIGNED_ACC_THREADS.1,
            ),
        };
        PointKernels {
            curve,
            ones,
            ones_compact,
            reduce,
            fold_tree,
            fold_tree_threads,
            accumulate,
            accumulate_signed,
            signed_acc_threads,
            ba_pieces,
            buckets,
            runs,
            segments,
            sums,
        }
    }

    fn upload_bases<A: Copy + Send + Sync>(&mut self, what: &'static str, bases: &[A]) -> Result<Bases<A>> {
        self.dev.bind()?;
        let arena = self.arena_mut()?;
        let span = arena.carve_persistent(what, std::mem::size_of_val(bases))?;
        let arena_id = arena.id();
        // SAFETY: the span was carved with exactly the bases' size; blst's affine points
        // are arrays of u64 limbs (no padding).
        unsafe { self.dev.upload_wait(span.ptr, bases) }?;
        Ok(Bases { span, len: bases.len(), arena_id, fixed: None, _affine: PhantomData })
    }

    /// Runs an MSM over resident or streamed bases, its scalars on the host or already on
    /// the device; the window sums of each chunk (one for unchunked bases; infinity but for
    /// the last chunk, which reduces every chunk's buckets) come back as `J`
    /// (blst_p1/p2) with their window bits.
    pub(crate) fn msm_over<A, J: Copy + Default>(
        &mut self,
        curve: Curve,
        bases: BaseSet<'_, A>,
        scalars: Scalars<'_>,
    ) -> Result<Vec<(Vec<J>, u32)>> {
        self.check_bases(&bases, scalars.len(), "MSM: scalars (over its bases)")?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        self.dev.bind()?;
        self.dev.timer_start()?;
        let mut b = arena.scratch();
        let dense = match (scalars, &bases) {
            (Scalars::Host(h), BaseSet::Resident(r)) => self.dense_auto(
                curve,
                h,
                None,
                self.resident_chunk(h.len()),
                r.fixed.is_some(),
                b.free_bytes(),
            ),
            (Scalars::Host(h), BaseSet::Streamed { chunk, .. }) => {
                self.dense_auto(curve, h, Some(*chunk), None, false, b.free_bytes())
            }
            _ => DenseRun::default(),
        };
        let r =
            self.with_msm_kernels(dense, |g| g.msm_placed(&mut b, &g.point_kernels(curve), bases, scalars));
        if r.is_err() {
            // The copy stream may still read host bases, the compute stream host scalars.
            let _ = self.dev.sync_all();
        }
        self.arena_mut()?.note_scratch(&b);
        r
    }

    /// What an MSM over host `scalars` runs for them ([`Gpu::set_msm_dense_auto`]): its
    /// layout's chunking as [`layout_bytes`] takes it, `fixed` whether its bases carry
    /// fixed-base windows (which run their own kernels), and `free`, the scratch bytes the
    /// layout may take. Reads the sample from [`DENSE_SAMPLE_MIN`] scalars; the 0/1 pass is
    /// skipped only where it holds no one (up to 1/8 of a dense sample may be zeros and
    /// ones, and without the pass every one would crowd one bucket).
    fn dense_auto(
        &self,
        curve: Curve,
        scalars: &[[u8; SCALAR_BYTES]],
        chunk: Option<usize>,
        resident: Option<usize>,
        fixed: bool,
        free: usize,
    ) -> DenseRun {
        let n = scalars.len();
        if !self.msm_dense_auto || n < DENSE_SAMPLE_MIN {
            return DenseRun::default();
        }
        let sample = Sample::of(scalars);
        if !sample.dense() {
            return DenseRun::default();
        }
        let (default, dense) =
            (self.msm_choice(), MsmChoice { kernels: self.msm_dense_kernels, ..self.msm_choice() });
        let kernels = !fixed
            && self.msm_kernels == MsmKernels::default()
            && dense_switch_pays(curve, n, chunk, resident, dense, default)
            && layout_bytes(curve, n, chunk, resident, dense) <= free;
        DenseRun { kernels, ones_off: sample.ones == 0 }
    }

    /// Runs `f` as `auto` says ([`Gpu::with_dense_run`]) and records which kernels ran
    /// ([`Gpu::last_msm_kernels`]).
    fn with_msm_kernels<R>(&mut self, auto: DenseRun, f: impl FnOnce(&mut Gpu) -> R) -> R {
        self.with_dense_run(auto, |g| {
            g.last_msm_kernels.set(g.msm_kernels);
            f(g)
        })
    }

    /// Whether the last MSM that ran its kernels ran the 0/1 fast path's pass: not where
    /// [`Gpu::set_msm_ones_fast_path`] turned it off, nor for dense host scalars with no one
    /// in their sample ([`Gpu::set_msm_dense_auto`]), nor for h's coefficients. False
    /// before any MSM.
    pub fn last_msm_ones_pass(&self) -> bool {
        self.last_msm_ones.get()
    }

    /// How many chunks the last MSM ran in: 1 for one piece (bases copied in for the call
    /// always), more where it was chunked (resident MSMs above 2^25 points, or
    /// [`Gpu::set_resident_chunking`]'s, and streamed bases). 0 before any.
    pub fn last_msm_chunks(&self) -> usize {
        self.last_msm_chunks.get()
    }

    /// What a new MSM call reports before it runs: no stage times, one piece (a chunked
    /// MSM sets its chunks).
    fn last_msm_reset(&self) {
        self.last_msm_stages.set(MsmStageTimes::default());
        self.last_msm_chunks.set(1);
    }

    /// The kernels the last MSM (not a fixed-base one, which runs its own) ran: the choice
    /// in force (the h MSM's: the dense kernels), or the dense kernels where
    /// [`Gpu::set_msm_dense_auto`] switched to them.
    pub fn last_msm_kernels(&self) -> MsmKernels {
        self.last_msm_kernels.get()
    }

    /// That `bases` can serve an MSM of `n` scalars here: resident ones in this GPU's arena,
    /// and at least `n` of them (`what` names the scalars in the error).
    pub(crate) fn check_bases<A>(&self, bases: &BaseSet<'_, A>, n: usize, what: &'static str) -> Result<()> {
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if let BaseSet::Resident(b) = bases {
            if b.arena_id != arena.id() {
                return Err(CudaError::ForeignHandle("MSM bases"));
            }
        }
        if n > bases.len() {
            return Err(CudaError::Length { what, got: n, want: bases.len() });
        }
        Ok(())
    }

    /// The chunk length of a resident MSM of `n` points on this GPU (`None`: one piece).
    fn resident_chunk(&self, n: usize) -> Option<usize> {
        let (above, chunk) = self.resident_chunking;
        (n > above).then_some(chunk)
    }

    /// The scratch an MSM of `n` points lays out on this GPU: [`msm_scratch_bytes`] with
    /// this GPU's resident chunking (a test may have changed it), so a witness MSM's
    /// staging always sits above the layout its MSM will make.
    pub(crate) fn msm_layout_bytes(&self, curve: Curve, n: usize, chunk: Option<usize>) -> usize {
        layout_bytes(curve, n, chunk, self.resident_chunk(n), self.msm_choice())
    }

    /// The kernels this GPU's MSMs run, and its widest signed window.
    pub(crate) fn msm_choice(&self) -> MsmChoice {
        MsmChoice {
            kernels: self.msm_kernels,
            bucket_bits_max: bucket_bits_max_for(self.dev.k.smem_optin_bytes),
            window_bits: self.msm_window_bits,
        }
    }

    /// The plan of an MSM of `n` points on this GPU.
    pub fn msm_plan(&self, n: usize) -> MsmPlan {
        self.msm_choice().plan(n)
    }

    /// The plan of an MSM of `n` points over bases with fixed-base windows, or (`None`)
    /// on this GPU's kernel choice.
    fn msm_plan_over(&self, n: usize, fixed: Option<FixedBases>) -> MsmPlan {
        match fixed {
            Some(f) => MsmPlan::with_fixed(n, f.windows, f.stride),
            None => self.msm_plan(n),
        }
    }

    /// The plan of an MSM of `n` points on this GPU with `kernels`.
    pub fn msm_plan_with(&self, n: usize, kernels: MsmKernels) -> MsmPlan {
        MsmChoice { kernels, ..self.msm_choice() }.plan(n)
    }

    /// [`Gpu::msm_run`] over resident bases (in chunks above 2^25 points), or
    /// [`Gpu::msm_chunked`] over streamed ones.
    pub(crate) fn msm_placed<A, J: Copy + Default>(
        &self,
        b: &mut Bump,
        pk: &PointKernels<'_>,
        bases: BaseSet<'_, A>,
        scalars: Scalars<'_>,
    ) -> Result<Vec<(Vec<J>, u32)>> {
        self.last_msm_reset();
        match bases {
            BaseSet::Resident(r) => match self.resident_chunk(scalars.len()) {
                None => Ok(vec![self.msm_run_over(b, pk, r.span.dev_ptr(), scalars, r.fixed_bases())?]),
                Some(k) => {
                    self.msm_chunked(b, pk, ChunkFrom::<A>::Device(r.span), k, scalars, r.fixed_bases())
                }
            },
            BaseSet::Streamed { bases, chunk } => {
                self.msm_chunked(b, pk, ChunkFrom::Host(bases), chunk, scalars, None)
            }
        }
    }

    /// An MSM `chunk` points at a time, every chunk on the full chunk's plan: each sorts
    /// and accumulates its points into one set of buckets (its own 0/1 sum comes back), and
    /// the last reduces the windows once for all (on the H200 a 2^24 chunk's reduction was
    /// 3 ms, 24.6 of the 170 ms of device work of a 2^27 MSM of 99% 0/1 scalars in eight
    /// chunks). The scalars go where a plain MSM keeps them; resident bases are read in place,
    /// host bases go up on the copy stream, chunk `j + 1`'s into one of two buffers while
    /// chunk `j`'s MSM runs over the other. The caller started the device timer; afterwards
    /// `last_device` is the compute stream's time over every chunk (waits for a chunk's
    /// bases included). `b` ends at the largest chunk's layout (for the scratch high-water
    /// mark).
    fn msm_chunked<A, J: Copy + Default>(
        &self,
        b: &mut Bump,
        pk: &PointKernels<'_>,
        from: ChunkFrom<'_, A>,
        chunk: usize,
        scalars: Scalars<'_>,
        fixed: Option<FixedBases>,
    ) -> Result<Vec<(Vec<J>, u32)>> {
        let n = scalars.len();
        if n == 0 {
            return Ok(vec![self.msm_run(b, pk, DevPtr::NULL, scalars)?]);
        }
        if chunk == 0 {
            return Err(CudaError::Length { what: "chunked MSM: chunk points", got: 0, want: 1 });
        }
        let affine = pk.curve.affine_bytes();
        assert_eq!(std::mem::size_of::<A>(), affine, "base type matches the curve");
        let (all_scalars, bases) = chunk_layout(b, n, chunk, pk.curve, from)?;
        // Host scalars go up a chunk at a time on the copy stream, chunk `j + 1`'s while
        // chunk `j` runs (all at once first, the 2^27 MSM's 4 GiB took ~78 ms before its
        // first kernel); scalars already on the device are copied into place now.
        let host_scalars = match scalars {
            Scalars::Host(h) => Some(h),
            Scalars::Device { .. } => {
                self.put_scalars(&all_scalars, scalars)?;
                None
            }
        };
        let uploads = host_scalars.is_some() || matches!(bases, ChunkBases::Host { .. });
        let ranges: Vec<_> = chunk_ranges(n, chunk).collect();
        self.last_msm_chunks.set(ranges.len());
        // SAFETY (every upload): each bases buffer holds `chunk` bases and `all_scalars`
        // every scalar (chunk `j`'s at its range); the host bases and scalars are borrowed
        // for the whole call and every way out waits for the copy stream (the last chunk's
        // MSM waited for its upload; an error path syncs both streams in `msm_over`). A
        // bases buffer is refilled only after the MSM that read it has downloaded its sums;
        // each chunk's scalars have a range of their own. Both uploads of chunk `j` record
        // event `j % 2` after them, in the copy stream's order.
        let upload = |j: usize| -> Result<()> {
            if let Some(h) = host_scalars {
                let at = all_scalars.at(ranges[j].start * SCALAR_BYTES).addr();
                unsafe { self.dev.upload_overlapped(j % 2, at, &h[ranges[j].clone()]) }?;
            }
            match bases {
                ChunkBases::Host { bases, bufs } => unsafe {
                    self.dev.upload_overlapped(j % 2, bufs[j % 2].ptr, &bases[ranges[j].clone()])
                },
                ChunkBases::Device(_) => Ok(()),
            }
        };
        upload(0)?;
        // One plan for every chunk, so each lays its spans out alike from `b`: their buckets
        // are one span, which each chunk adds its points into and only the last reduces.
        let plan = self.msm_plan_over(ranges[0].len(), fixed);
        let (mut out, mut device, mut high) =
            (Vec::with_capacity(ranges.len()), Duration::ZERO, None::<Bump>);
        for (j, r) in ranges.iter().enumerate() {
            if j + 1 < ranges.len() {
                upload(j + 1)?;
            }
            if j > 0 {
                self.dev.timer_start()?;
            }
            if uploads {
                self.dev.wait_upload(j % 2)?;
            }
            let chunk_bases = match bases {
                ChunkBases::Host { bufs, .. } => bufs[j % 2].dev_ptr(),
                ChunkBases::Device(span) => span.at(r.start * affine),
            };
            let mut cb = b.clone();
            let chunk_scalars = Scalars::Device { ptr: all_scalars.at(r.start * SCALAR_BYTES), n: r.len() };
            let part = if self.msm_shared_buckets {
                MsmPart { plan: plan.for_chunk(r.len()), first: j == 0, last: j + 1 == ranges.len() }
            } else {
                MsmPart { plan: self.msm_plan_over(r.len(), fixed), first: true, last: true }
            };
            out.push(self.msm_run_part(&mut cb, pk, chunk_bases, chunk_scalars, part)?);
            device += self.last_device.get();
            if high.as_ref().map_or(true, |h| h.used_bytes() < cb.used_bytes()) {
                high = Some(cb);
            }
        }
        self.last_device.set(device);
        if let Some(h) = high {
            *b = h;
        }
        Ok(out)
    }

    /// Runs an MSM copying the bases in for this call.
    fn msm_copied<A: Copy + Send + Sync, J: Copy + Default>(
        &mut self,
        curve: Curve,
        bases: &[A],
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<(Vec<J>, u32)> {
        if bases.len() != scalars.len() {
            return Err(CudaError::Length { what: "MSM: scalars", got: scalars.len(), want: bases.len() });
        }
        self.dev.bind()?;
        self.last_msm_reset();
        self.dev.timer_start()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let span = b.take("MSM: bases", std::mem::size_of_val(bases).max(1))?;
        // SAFETY: the span holds the bases' size; `bases` stays borrowed until the MSM's
        // download synchronizes the stream (both streams on an error, below).
        if let Err(e) = unsafe { self.dev.upload_chunks(span.ptr, bases, usize::MAX, |_| Ok(())) } {
            let _ = self.dev.sync_all();
            return Err(e);
        }
        let dense = self.dense_auto(curve, scalars, None, None, false, b.free_bytes());
        let r = self.with_msm_kernels(dense, |g| {
            g.msm_run(&mut b, &g.point_kernels(curve), span.dev_ptr(), Scalars::Host(scalars))
        });
        if r.is_err() {
            // The compute stream may still read host bases, the copy stream host scalars.
            let _ = self.dev.sync_all();
        }
        self.arena_mut()?.note_scratch(&b);
        r
    }

    /// Copies G1 `bases` into the arena's persistent part, once (parameters' bases stay
    /// on the device for every proof).
    pub fn upload_g1_bases(&mut self, bases: &[blst_p1_affine]) -> Result<G1Bases> {
        self.upload_bases("G1 bases", bases)
    }

    /// Copies G1 `bases` into the arena's persistent part with fixed-base windows `fixed`
    /// ([`FixedWindows`]): `fixed.copies` copies, copy `t` made on the device from copy
    /// `t - 1` (`c` doublings and one inversion a point), once. Every MSM over the handle
    /// then runs the wide kernels with `fixed.c`-bit windows and one set of buckets per
    /// group of copies. The device time of the copies is left in [`Gpu::last_device_time`].
    pub fn upload_g1_bases_fixed(
        &mut self,
        bases: &[blst_p1_affine],
        fixed: FixedWindows,
    ) -> Result<G1Bases> {
        fixed.check(bases.len())?;
        let (n, affine) = (bases.len(), Curve::G1.affine_bytes());
        self.dev.bind()?;
        let arena = self.arena_mut()?;
        let span = arena.carve_persistent("G1 bases with fixed-base windows", fixed.bytes(Curve::G1, n))?;
        let arena_id = arena.id();
        // SAFETY: the span holds `copies` times the bases' size; `upload_wait` waits for
        // its copy.
        unsafe { self.dev.upload_wait(span.ptr, bases) }?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        self.dev.timer_start()?;
        if fixed.copies > 1 && n > 0 {
            let e = b.take("fixed-base windows: p - 2", 48)?;
            // SAFETY: the span holds the 12 words; `upload` waits for its copy.
            unsafe { self.dev.upload(e.ptr, &crate::fixed_base::p_minus_2_words()) }?;
            for t in 1..fixed.copies as usize {
                self.dev.k.fixed_shift_g1.launch(
                    Dims::per_item(n, THREADS),
                    span.at((t - 1) * n * affine),
                    n,
                    fixed.c,
                    e.dev_ptr(),
                    span.at(t * n * affine),
                )?;
            }
        }
        self.dev.timer_stop()?;
        self.dev.sync()?;
        self.last_device.set(self.dev.timer_elapsed()?);
        self.arena_mut()?.note_scratch(&b);
        Ok(Bases { span, len: n, arena_id, fixed: Some(fixed), _affine: PhantomData })
    }

    /// Copies G2 `bases` into the arena's persistent part, once.
    pub fn upload_g2_bases(&mut self, bases: &[blst_p2_affine]) -> Result<G2Bases> {
        self.upload_bases("G2 bases", bases)
    }

    /// `sum scalars[i] * bases[i]` in G1 with resident bases (`scalars.len() <=
    /// bases.len()`; the first `scalars.len()` bases are used).
    pub fn msm_g1_resident(
        &mut self,
        bases: &G1Bases,
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G1Projective> {
        self.msm_g1_over(BaseSet::Resident(bases), scalars)
    }

    /// `sum scalars[i] * bases[i]` in G1 over resident or streamed bases (`scalars.len()
    /// <= bases.len()`).
    pub fn msm_g1_over(
        &mut self,
        bases: BaseSet<'_, blst_p1_affine>,
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G1Projective> {
        let parts = self.msm_over::<_, blst_p1>(Curve::G1, bases, Scalars::Host(scalars))?;
        Ok(combine_parts(&parts))
    }

    /// `sum scalars[i] * bases[i]` in G1, copying the bases in for this call.
    pub fn msm_g1(
        &mut self,
        bases: &[blst_p1_affine],
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G1Projective> {
        let (sums, c) = self.msm_copied::<_, blst_p1>(Curve::G1, bases, scalars)?;
        Ok(combine(&sums, c))
    }

    /// `sum scalars[i] * bases[i]` in G2 with resident bases.
    pub fn msm_g2_resident(
        &mut self,
        bases: &G2Bases,
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G2Projective> {
        self.msm_g2_over(BaseSet::Resident(bases), scalars)
    }

    /// `sum scalars[i] * bases[i]` in G2 over resident or streamed bases.
    pub fn msm_g2_over(
        &mut self,
        bases: BaseSet<'_, blst_p2_affine>,
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G2Projective> {
        let parts = self.msm_over::<_, blst_p2>(Curve::G2, bases, Scalars::Host(scalars))?;
        Ok(combine_parts(&parts))
    }

    /// `sum scalars[i] * bases[i]` in G2, copying the bases in for this call.
    pub fn msm_g2(
        &mut self,
        bases: &[blst_p2_affine],
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G2Projective> {
        let (sums, c) = self.msm_copied::<_, blst_p2>(Curve::G2, bases, scalars)?;
        Ok(combine(&sums, c))
    }

    /// The device pipeline; returns the window sums (lowest window first) followed by the
    /// sum of the bases whose scalar is one (infinity when the fast path is off), and `c`.
    /// The caller started the device timer (`timer_start`) before its first copy; this
    /// stops it after the last kernel and leaves the time in `last_device`.
    ///
    /// Steps, all enqueued on the compute stream with no host sync until the download:
    /// lay out the scratch, stage the scalars, sum the ones (0/1 fast path), sort point
    /// indices into buckets, accumulate the buckets, reduce each window, download.
    pub(crate) fn msm_run<J: Copy + Default>(
        &self,
        b: &mut Bump,
        pk: &PointKernels<'_>,
        bases: DevPtr,
        scalars: Scalars<'_>,
    ) -> Result<(Vec<J>, u32)> {
        self.msm_run_over(b, pk, bases, scalars, None)
    }

    /// [`Gpu::msm_run`] over bases with fixed-base windows (`None`: plain bases).
    fn msm_run_over<J: Copy + Default>(
        &self,
        b: &mut Bump,
        pk: &PointKernels<'_>,
        bases: DevPtr,
        scalars: Scalars<'_>,
        fixed: Option<FixedBases>,
    ) -> Result<(Vec<J>, u32)> {
        let n = scalars.len();
        if n == 0 {
            self.last_device.set(Duration::ZERO);
            return Ok((vec![J::default()], 1));
        }
        if n > MSM_POINTS_MAX {
            return Err(CudaError::Limit { what: "MSM points", value: n, limit: MSM_POINTS_MAX });
        }
        self.msm_run_part(
            b,
            pk,
            bases,
            scalars,
            MsmPart { plan: self.msm_plan_over(n, fixed), first: true, last: true },
        )
    }

    /// [`Gpu::msm_run`] as one part of a chunked MSM ([`MsmPart`]): the first part's
    /// buckets replace what their span held, a later part's add to them, and only the
    /// last part reduces the windows; an earlier part returns its windows as infinity
    /// (their points are in the buckets the last part reduces) and its sum of the ones.
    fn msm_run_part<J: Copy + Default>(
        &self,
        b: &mut Bump,
        pk: &PointKernels<'_>,
        bases: DevPtr,
        scalars: Scalars<'_>,
        part: MsmPart,
    ) -> Result<(Vec<J>, u32)> {
        let p = part.plan;
        self.last_device.set(Duration::ZERO);
        if scalars.len() != p.n {
            return Err(CudaError::Length { what: "MSM part: scalars", got: scalars.len(), want: p.n });
        }
        if p.n > MSM_POINTS_MAX {
            return Err(CudaError::Limit { what: "MSM points", value: p.n, limit: MSM_POINTS_MAX });
        }
        assert_eq!(std::mem::size_of::<J>(), pk.curve.jacobian_bytes(), "window sum type matches the curve");
        let s = MsmSpans::take(b, &p, pk.curve)?;
        self.msm_stage_mark(0)?;
        let counted = self.msm_stage_scalars(&p, &s, scalars)?;
        self.msm_stage_mark(1)?;
        self.msm_ones_or_infinity(pk, &p, &s, bases)?;
        self.msm_stage_mark(2)?;
        self.msm_bucket_sort(&p, &s, counted)?;
        self.msm_stage_mark(3)?;
        self.msm_accumulate(pk, &p, &s, bases, !part.first)?;
        self.msm_stage_mark(4)?;
        if part.last {
            self.msm_reduce_windows(pk, &p, &s)?;
        }
        self.msm_stage_mark(5)?;
        let (mut sums, c) = self.msm_download::<J>(&p, &s)?;
        if !part.last {
            // Not reduced: the windows' slots hold whatever was there.
            let (_, windows) = sums.split_last_mut().expect("the ones' sum is last");
            windows.fill(J::default());
        }
        self.msm_note_stages()?;
        Ok((sums, c))
    }

    /// Records stage mark `i` of this MSM call when the stage split is on.
    fn msm_stage_mark(&self, i: usize) -> Result<()> {
        if self.msm_stage_timing {
            self.dev.stage_mark(i)?;
        }
        Ok(())
    }

    /// Adds this call's stage times (between its six marks) to `last_msm_stages` when the
    /// stage split is on (after the download: the marks are done).
    fn msm_note_stages(&self) -> Result<()> {
        if !self.msm_stage_timing {
            return Ok(());
        }
        let stages = self.dev.stage_ms()?;
        let mut t = self.last_msm_stages.get();
        for (sum, ms) in t.as_mut_array().into_iter().zip(stages) {
            *sum += ms;
        }
        self.last_msm_stages.set(t);
        Ok(())
    }

    /// Zeroes the bucket counts and puts the scalars where the layout keeps them (a host
    /// copy, a device copy, or nothing when they already lie there). Host scalars of a
    /// global-sort plan of at least two [`hist_overlap_chunk`]s (with
    /// [`Gpu::set_msm_hist_overlap`] on, the default) go up in chunks on the copy stream,
    /// and each chunk's bucket counts are taken (`msm_hist_global`) as soon as it has
    /// landed: counts only add up, so a chunk waits for no other, and the sort's first pass
    /// runs under the copy. Host scalars in pageable memory pass through the staging
    /// buffers either way ([`Gpu::set_host_staging`]). Returns whether the counts were taken.
    fn msm_stage_scalars(&self, p: &MsmPlan, s: &MsmSpans, scalars: Scalars<'_>) -> Result<bool> {
        // SAFETY: the counts span of this call's scratch layout.
        unsafe { self.dev.zero(s.counts.ptr, s.counts.len_bytes) }?;
        let chunk = hist_overlap_chunk(p);
        match scalars {
            Scalars::Host(h) if self.msm_hist_overlap && p.global_sort() && h.len() >= 2 * chunk => {
                // SAFETY: the span holds every scalar, each chunk's at its range; the host
                // slice stays borrowed until the download synchronizes the compute stream,
                // which waits for every chunk (an error path syncs both streams: `msm_over`,
                // `msm_copied`).
                unsafe {
                    self.dev.upload_chunks(s.scalars.ptr, h, chunk, |r| {
                        self.msm_hist_global(
                            p,
                            s,
                            s.scalars.at(r.start * SCALAR_BYTES),
                            r.len(),
                            DevPtr::NULL,
                        )
                    })
                }?;
                Ok(true)
            }
            _ => self.put_scalars(&s.scalars, scalars).map(|()| false),
        }
    }

    /// Enqueues the copy that puts `scalars` into `dst` (a host upload, a device copy, or
    /// nothing when they already lie there). `dst` is a span of the caller's layout sized
    /// for `scalars.len()` scalars; host scalars stay borrowed by the caller until a later
    /// download synchronizes the stream (or a sync of both streams on an error). Host
    /// scalars go up on the copy stream ([`crate::device::Device::upload_chunks`]: through the staging
    /// buffers from pageable memory), and the compute stream waits for them.
    fn put_scalars(&self, dst: &DevSpan, scalars: Scalars<'_>) -> Result<()> {
        // SAFETY: see above: `dst` holds the scalars, and the host slice outlives the copy.
        unsafe {
            match scalars {
                Scalars::Host(h) => self.dev.upload_chunks(dst.ptr, h, usize::MAX, |_| Ok(())),
                Scalars::Device { ptr, n } if ptr != dst.dev_ptr() => {
                    self.dev.copy_d2d(dst.ptr, ptr.addr(), n * SCALAR_BYTES)
                }
                Scalars::Device { .. } => Ok(()),
            }
        }
    }

    /// The last point of `out`: the sum of the bases whose scalar is one (fast path on,
    /// [`Gpu::msm_sum_ones`]), or infinity (off).
    fn msm_ones_or_infinity(
        &self,
        pk: &PointKernels<'_>,
        p: &MsmPlan,
        s: &MsmSpans,
        bases: DevPtr,
    ) -> Result<()> {
        let ones_out = s.ones_out(p, pk.curve);
        self.last_msm_ones.set(self.msm_ones);
        if self.msm_ones {
            self.msm_sum_ones(pk, p, s, bases, ones_out)
        } else {
            // SAFETY: the last Jacobian point of `out`; all-zero bytes are infinity (Z = 0).
            unsafe { self.dev.zero(ones_out.addr(), pk.curve.jacobian_bytes()) }
        }
    }

    /// Whether this GPU's MSMs run the sparse sort (the 0/1 fast path and the sort both on).
    fn msm_sparse(&self) -> bool {
        self.msm_ones && self.msm_sparse
    }

    /// Sorts point indices into buckets: digit histograms per (tile, window), offsets by
    /// a scan, indices scattered to their bucket's slots, then each bucket cut into
    /// pieces of at most `piece_len` points. Under the sparse sort the histograms and the
    /// scatter read only the listed scalars that are neither 0 nor 1 (while the list did
    /// not overflow: the kernels read its count).
    /// `counted`: the global sort's counts were taken as the scalars went up
    /// ([`Gpu::msm_stage_scalars`]).
    fn msm_bucket_sort(&self, p: &MsmPlan, s: &MsmSpans, counted: bool) -> Result<()> {
        if p.global_sort() {
            return self.msm_bucket_sort_global(p, s, counted);
        }
        assert_eq!(p.group, 1, "fixed-base windows plan the global sort");
        let k = &self.dev.k;
        let (n, m) = (p.n as u32, p.buckets as u32);
        let (skip_ones, signed) = (self.msm_ones as u32, p.signed() as u32);
        let rest = if self.msm_sparse() { s.rest.dev_ptr() } else { DevPtr::NULL };
        let (nrest, cap) = (s.nrest(), p.rest_cap as u32);
        let tiles = Dims::blocks_2d((p.n.div_ceil(p.tile) as u32, p.windows), p.sort_threads)
            .smem(p.tile_smem_bytes() as u32);
        let tile = p.tile as u32;
        let scalars = s.scalars.dev_ptr();
        k.msm_hist.launch(
            tiles,
            scalars,
            n,
            p.c,
            tile,
            skip_ones,
            signed,
            rest,
            nrest,
            cap,
            s.counts.dev_ptr(),
        )?;
        k.msm_scan.launch(
            Dims::blocks(1, 1024),
            s.counts.dev_ptr(),
            m,
            p.piece_len,
            s.offsets.dev_ptr(),
            s.cursor.dev_ptr(),
            s.poffsets.dev_ptr(),
        )?;
        k.msm_scatter.launch(
            tiles,
            scalars,
            n,
            p.c,
            tile,
            skip_ones,
            signed,
            rest,
            nrest,
            cap,
            s.cursor.dev_ptr(),
            s.idx.dev_ptr(),
        )?;
        self.msm_cut_pieces(p, s)
    }

    /// Windows one row of the global sort's grid reads a scalar for: all of them (the one
    /// read, [`Gpu::set_msm_sort_one_read`]) or one.
    fn msm_sort_wins(&self, p: &MsmPlan) -> u32 {
        if self.msm_sort_one_read.unwrap_or_else(|| p.sort_one_read_pays()) {
            p.windows
        } else {
            1
        }
    }

    /// The global sort's bucket counts of `n` scalars at `scalars` (all of the plan's, or a
    /// chunk of them as they go up), added to `s.counts`; `rest`: the sparse sort's list
    /// (null: every scalar).
    fn msm_hist_global(
        &self,
        p: &MsmPlan,
        s: &MsmSpans,
        scalars: DevPtr,
        n: usize,
        rest: DevPtr,
    ) -> Result<()> {
        let wins = self.msm_sort_wins(p);
        self.dev.k.msm_hist_global.launch(
            sort_grid(p, n, wins),
            scalars,
            n as u32,
            p.c,
            p.tile as u32,
            self.msm_ones as u32,
            rest,
            s.nrest(),
            p.rest_cap as u32,
            wins,
            p.group,
            p.stride,
            s.counts.dev_ptr(),
        )
    }

    /// Each bucket cut into pieces of at most `piece_len` points (the sort's last step).
    fn msm_cut_pieces(&self, p: &MsmPlan, s: &MsmSpans) -> Result<()> {
        self.dev.k.msm_pieces.launch(
            Dims::per_item(p.buckets, THREADS),
            s.counts.dev_ptr(),
            s.offsets.dev_ptr(),
            s.poffsets.dev_ptr(),
            p.buckets as u32,
            p.piece_len,
            s.pieces.dev_ptr(),
        )
    }

    /// [`Gpu::msm_bucket_sort`] in global memory (`Wide`, `SignedGlobal`): counts and
    /// cursors in global memory (one atomic per entry), the offsets by the three-launch
    /// scan, then the pieces. `counted`: the counts were taken already.
    fn msm_bucket_sort_global(&self, p: &MsmPlan, s: &MsmSpans, counted: bool) -> Result<()> {
        let k = &self.dev.k;
        let (n, m) = (p.n as u32, p.buckets as u32);
        let skip_ones = self.msm_ones as u32;
        let rest = if self.msm_sparse() { s.rest.dev_ptr() } else { DevPtr::NULL };
        let (nrest, cap) = (s.nrest(), p.rest_cap as u32);
        let wins = self.msm_sort_wins(p);
        let (tile, scalars) = (p.tile as u32, s.scalars.dev_ptr());
        let sums = s.scan_sums.expect("a global-sort plan lays out the scan's totals").dev_ptr();
        let blocks = p.scan_blocks() as u32;
        if !counted {
            self.msm_hist_global(p, s, scalars, p.n, rest)?;
        }
        k.msm_scan_sums.launch(Dims::blocks(blocks, 1024), s.counts.dev_ptr(), m, p.piece_len, sums)?;
        k.msm_scan_top.launch(
            Dims::blocks(1, 1024),
            sums,
            blocks,
            s.offsets.at(4 * p.buckets),
            s.poffsets.at(4 * p.buckets),
        )?;
        k.msm_scan_write.launch(
            Dims::blocks(blocks, 1024),
            s.counts.dev_ptr(),
            m,
            p.piece_len,
            sums,
            s.offsets.dev_ptr(),
            s.cursor.dev_ptr(),
            s.poffsets.dev_ptr(),
        )?;
        k.msm_scatter_global.launch(
            sort_grid(p, p.n, wins),
            scalars,
            n,
            p.c,
            tile,
            skip_ones,
            rest,
            nrest,
            cap,
            wins,
            p.group,
            p.stride,
            s.cursor.dev_ptr(),
            s.idx.dev_ptr(),
        )?;
        self.msm_cut_pieces(p, s)
    }

    /// Sums each piece's points (one thread per piece), then each bucket's pieces, into
    /// the buckets (`add`: added to what they hold, a later chunk's).
    fn msm_accumulate(
        &self,
        pk: &PointKernels<'_>,
        p: &MsmPlan,
        s: &MsmSpans,
        bases: DevPtr,
        add: bool,
    ) -> Result<()> {
        // The scan's total piece count, after the `m` per-bucket piece offsets.
        let npieces = s.poffsets.at(4 * p.buckets);
        let (accumulate, threads) =
            if p.signed() { (pk.accumulate_signed, pk.signed_acc_threads) } else { (pk.accumulate, THREADS) };
        let perm = match (&s.order, self.msm_piece_order) {
            (Some(o), true) => self.msm_order_pieces(o, s.pieces.dev_ptr(), npieces)?,
            _ => DevPtr::NULL,
        };
        let grid = match pk.ba_pieces {
            // K pieces a thread: one block per BA_THREADS * K pieces.
            Some(k) => Dims::per_item(p.pieces_max.div_ceil(k as usize), BA_THREADS),
            None => Dims::per_item(p.pieces_max, threads),
        };
        accumulate.launch(
            grid,
            bases,
            s.idx.dev_ptr(),
            s.pieces.dev_ptr(),
            npieces,
            perm,
            s.partial.dev_ptr(),
        )?;
        pk.buckets.launch(
            Dims::per_item(p.buckets, THREADS),
            s.partial.dev_ptr(),
            s.poffsets.dev_ptr(),
            p.buckets as u32,
            add as u32,
            s.buckets.dev_ptr(),
        )
    }

    /// The pieces' indices by decreasing length into `o.perm` (a counting sort over
    /// [`PIECE_CLASSES`] length classes: histogram, scan, placement), which it returns.
    fn msm_order_pieces(&self, o: &PieceOrderSpans, pieces: DevPtr, npieces: DevPtr) -> Result<DevPtr> {
        let k = &self.dev.k;
        let grid = Dims::blocks(PIECE_ORDER_BLOCKS, THREADS);
        // SAFETY: the class counts' span of this call's layout.
        unsafe { self.dev.zero(o.counts.ptr, o.counts.len_bytes) }?;
        k.msm_piece_hist.launch(grid, pieces, npieces, o.counts.dev_ptr())?;
        k.msm_scan.launch(
            Dims::blocks(1, 1024),
            o.counts.dev_ptr(),
            PIECE_CLASSES as u32,
            1,
            o.offsets.dev_ptr(),
            o.cursor.dev_ptr(),
            o.poffsets.dev_ptr(),
        )?;
        k.msm_piece_order.launch(grid, pieces, npieces, o.cursor.dev_ptr(), o.perm.dev_ptr())?;
        Ok(o.perm.dev_ptr())
    }

    /// `sum_b weight(b) * B_b` per window, or per set of buckets over fixed-base windows
    /// (weight `b` unsigned, `b + 1` signed), into blst's Jacobian form in `out`. Unsigned:
    /// running sums over segments of `2^seg_log` buckets, each weighted by its first bucket's
    /// index, then one thread per window sums its segments. Signed, in two levels: running
    /// sums over runs of `2^seg_log` buckets (no multiplication; each run's sum left in its
    /// first bucket), then running sums over segments of `2^seg2_log` of those sums, each
    /// weighted by its first run's first bucket and added into the first level's slots
    /// (on the H200 one set of 2^19 buckets reduced in 6.8 ms with one level, whose threads
    /// each multiplied by their segment's first bucket); then folds within each window by
    /// trees of up to [`FOLD_TREE_THREADS`] points in shared memory, alternating between the
    /// segments' span and the buckets' (free once the second level has read the runs'
    /// sums), and the last single point per window converted. [`Gpu::set_msm_reduce_two_levels`]
    /// off: signed windows in one level as unsigned ones; [`Gpu::set_msm_fold_tree`] off:
    /// folds by rounds of fan-in up to [`ONES_FAN`], one thread summing each group.
    fn msm_reduce_windows(&self, pk: &PointKernels<'_>, p: &MsmPlan, s: &MsmSpans) -> Result<()> {
        let nseg = 1u32 << (p.bucket_bits - p.seg_log);
        // Running sums over segments of 2^seg_log items, 2^stride_log buckets apart.
        let segments = |segs: u32, seg_log: u32, base: u32, stride_log: u32| {
            pk.segments.launch(
                Dims::per_item((p.sets * segs) as usize, 64),
                s.buckets.dev_ptr(),
                p.bucket_bits,
                p.sets,
                seg_log,
                base,
                stride_log,
                s.segs.dev_ptr(),
            )
        };
        if !p.signed() || !self.msm_reduce_two_levels {
            segments(nseg, p.seg_log, p.signed() as u32, 0)?;
        }
        if !p.signed() {
            return pk.sums.launch(
                Dims::blocks(1, p.sets.next_multiple_of(32)),
                s.segs.dev_ptr(),
                nseg,
                p.sets,
                s.out.dev_ptr(),
            );
        }
        if self.msm_reduce_two_levels {
            pk.runs.launch(
                Dims::per_item((p.sets * nseg) as usize, 64),
                s.buckets.dev_ptr(),
                p.bucket_bits,
                p.sets,
                p.seg_log,
                1,
                s.segs.dev_ptr(),
            )?;
            segments(nseg >> p.seg2_log, p.seg2_log, 0, p.seg_log)?;
        }
        assert!(s.buckets.len_bytes >= s.segs.len_bytes, "the buckets' span holds a fold round");
        let (mut src, mut dst, mut per_window) = (s.segs.dev_ptr(), s.buckets.dev_ptr(), nseg);
        while per_window > 1 {
            // Powers of two: the fan divides each window's count, so no group straddles two
            // (nor, as it divides the tree's block, a block).
            let count = p.sets * per_window;
            let fan = if self.msm_fold_tree { pk.fold_tree_threads } else { ONES_FAN }.min(per_window);
            if self.msm_fold_tree {
                let dims = Dims::per_item(count as usize, pk.fold_tree_threads);
                pk.fold_tree.launch(dims, src, count, fan, dst)?;
            } else {
                pk.reduce.launch(Dims::per_item((count / fan) as usize, 64), src, count, fan, dst)?;
            }
            (src, dst, per_window) = (dst, src, per_window / fan);
        }
        pk.sums.launch(Dims::blocks(1, p.sets.next_multiple_of(32)), src, 1, p.sets, s.out.dev_ptr())
    }

    /// Stops the device timer after the last kernel, copies the window sums and the ones'
    /// sum back (waiting for the stream) and records the device time.
    fn msm_download<J: Copy + Default>(&self, p: &MsmPlan, s: &MsmSpans) -> Result<(Vec<J>, u32)> {
        self.dev.timer_stop()?;
        let mut sums = vec![J::default(); p.sets as usize + 1];
        assert!(std::mem::size_of_val(sums.as_slice()) <= s.out.len_bytes, "window sums fit `out`");
        // SAFETY: `out` holds `sets + 1` Jacobian points of `J`'s size (the caller
        // asserted `J` matches the curve), written by the window-sums kernel with reduced
        // field elements (the last one by the 0/1 fast path, or zeroed: infinity).
        unsafe { self.dev.download(&mut sums, s.out.ptr) }?;
        self.last_device.set(self.dev.timer_elapsed()?);
        // Sets `c * group` bits apart (windows `c` apart without fixed-base windows).
        Ok((sums, p.c * p.group))
    }

    /// The 0/1 fast path: the sum of the bases whose scalar is one, written as one
    /// Jacobian point at `out` (the hist and scatter kernels then skip those scalars).
    /// `msm_ones` leaves one partial sum per thread in `s.ones`; `msm_reduce` rounds of
    /// fan-in [`ONES_FAN`] fold them, alternating with `s.ones_folded`. Under the sparse
    /// sort the compacting kernel does the same and lists the other nonzero scalars.
    fn msm_sum_ones(
        &self,
        pk: &PointKernels<'_>,
        p: &MsmPlan,
        s: &MsmSpans,
        bases: DevPtr,
        out: DevPtr,
    ) -> Result<()> {
        let (scalars, bufs) = (s.scalars.dev_ptr(), [s.ones.dev_ptr(), s.ones_folded.dev_ptr()]);
        let threads = if self.msm_sparse() {
            let block = pk.signed_acc_threads as usize;
            pk.ones_compact.launch(
                Dims::blocks((p.ones_threads / block) as u32, block as u32),
                bases,
                scalars,
                p.n as u32,
                bufs[0],
                s.rest.dev_ptr(),
                s.nrest(),
                p.rest_cap as u32,
            )?;
            p.ones_threads
        } else {
            let threads = p.ones_threads.min(ONES_THREADS_BEFORE);
            pk.ones.launch(
                Dims::blocks((threads / THREADS as usize) as u32, THREADS),
                bases,
                scalars,
                p.n as u32,
                bufs[0],
            )?;
            threads
        };
        let (mut src, mut dst, mut count) = (bufs[0], bufs[1], threads);
        while count > 1 {
            let next = count.div_ceil(ONES_FAN as usize);
            pk.reduce.launch(Dims::per_item(next, THREADS), src, count as u32, ONES_FAN, dst)?;
            (src, dst, count) = (dst, src, next);
        }
        // One "window" of one segment: the xyzz sum to blst's Jacobian form.
        pk.sums.launch(Dims::blocks(1, 32), src, 1, 1, out)
    }
}

/// The sum of [`combine`] over the chunks of an MSM ([`Gpu::msm_over`]).
pub(crate) fn combine_parts<G: Group + AsMut<J>, J: Copy>(parts: &[(Vec<J>, u32)]) -> G {
    parts.iter().map(|(sums, c)| combine::<G, J>(sums, *c)).sum()
}

/// `sum_w 2^(c w) S_w` by Horner from the top window, plus the sum of the ones: `sums`
/// as [`Gpu::msm_run`] returns them (the windows, then the ones' sum), `J` blst's Jacobian
/// point of the group `G` (`blst_p1` for G1, `blst_p2` for G2).
pub(crate) fn combine<G: Group + AsMut<J>, J: Copy>(sums: &[J], c: u32) -> G {
    let point = |j: &J| {
        let mut pt = G::identity();
        *pt.as_mut() = *j;
        pt
    };
    let (ones, windows) = sums.split_last().expect("msm_run returns the ones' sum last");
    let mut acc = G::identity();
    for w in windows.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += point(w);
    }
    acc + point(ones)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_tells_dense_scalars_from_a_witness() {
        let one = |v: u8| {
            let mut s = [0u8; SCALAR_BYTES];
            s[0] = v;
            s
        };
        let random = |i: usize| {
            let mut s = [0u8; SCALAR_BYTES];
            s[..8].copy_from_slice(&(i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
            s[31] = (i % 64) as u8;
            s
        };
        let n = 1 << 16;
        let dense: Vec<_> = (0..n).map(random).collect();
        assert!(scalars_look_dense(&dense));
        // A witness: zeros and ones, 1% others.
        let witness: Vec<_> =
            (0..n).map(|i| if i % 100 == 0 { random(i) } else { one((i % 2) as u8) }).collect();
        assert!(!scalars_look_dense(&witness));
        // Half and half is not dense; 15 in 16 is; small values 2.. count as others.
        // (The picks hash the index: a stride would alias with the sample's.)
        let pick = |i: usize, in_16: u64| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60 < in_16;
        let half: Vec<_> = (0..n).map(|i| if pick(i, 8) { random(i) } else { one(1) }).collect();
        assert!(!scalars_look_dense(&half));
        let most: Vec<_> =
            (0..n).map(|i| if pick(i, 1) { one(0) } else { one(2 + (i % 200) as u8) }).collect();
        assert!(scalars_look_dense(&most));
        assert!(!scalars_look_dense(&[]));
        assert!(!scalars_look_dense(&[one(1); 5]));
        assert!(scalars_look_dense(&[one(7); 5]), "fewer than the sample: all read");
        // What gates the 0/1 pass: the sample's ones, counted apart from its zeros.
        let d = Sample::of(&dense);
        assert!(d.dense() && d.ones == 0 && d.read == DENSE_SAMPLE, "{d:?}");
        let mut some_ones = dense.clone();
        for s in some_ones.iter_mut().step_by(n / DENSE_SAMPLE * 16) {
            *s = one(1);
        }
        let smp = Sample::of(&some_ones);
        assert!(smp.dense() && smp.ones == DENSE_SAMPLE / 16, "{smp:?}");
        assert_eq!(Sample::of(&[]), Sample { read: 0, other: 0, ones: 0 });
    }

    #[test]
    fn auto_scratch_leaves_room_for_the_dense_layout_from_its_threshold() {
        for log in [20u32, 21, 22, 23, 24, 27] {
            let n = 1usize << log;
            let (default, auto) =
                (msm_scratch_bytes(Curve::G1, n, None), msm_auto_scratch_bytes(Curve::G1, n, None));
            let dense = layout_bytes(Curve::G1, n, None, resident_chunk(n), MsmChoice::DENSE);
            if log <= 22 {
                assert_eq!(auto, default, "2^{log}: both plan 16 windows, the default layout");
            } else {
                assert!(auto > default, "2^{log}: room for the dense layout");
                assert_eq!(auto, default.max(dense), "2^{log}");
            }
            assert_eq!(
                msm_auto_scratch_bytes(Curve::G2, n, None),
                msm_scratch_bytes(Curve::G2, n, None),
                "G2 2^{log}"
            );
        }
    }

    #[test]
    fn plans_cover_255_bits_and_bound_their_pieces() {
        for log in 0..=27u32 {
            let n = 1usize << log;
            let p = MsmPlan::with(n, MsmKernels::Unsigned, BUCKET_BITS_MAX_DEFAULT);
            assert!((4..=WINDOW_BITS_MAX).contains(&p.c), "2^{log}: c {}", p.c);
            assert!(
                p.windows * p.c >= SCALAR_BITS && (p.windows - 1) * p.c < SCALAR_BITS,
                "2^{log}: windows"
            );
            assert_eq!(p.buckets, (p.windows as usize) << p.c);
            // Every bucket's pieces: ceil(count / len) <= count / len + 1.
            let entries = n * p.windows as usize;
            assert!(p.pieces_max > entries / p.piece_len as usize + p.buckets.min(entries) - 1);
            // The worst bucket (all n points) is split into at most sqrt(n)-ish pieces,
            // and each piece is at most sqrt(n)-ish points.
            assert!(n.div_ceil(p.piece_len as usize) <= (1 << log.div_ceil(2)).max(1), "2^{log}");
            assert!(p.seg_log < p.c);
            // Offsets are u32.
            if n <= MSM_POINTS_MAX {
                assert!(entries < u32::MAX as usize);
            }
        }
    }

    /// The host model of msm_sort.cu's `scalar_entry` for signed digits: window `w`'s
    /// digit of the 255-bit little-endian scalar `s` (as i64).
    fn signed_digit(s: &[u32; 8], w: u32, c: u32) -> i64 {
        let raw = |j: u32| -> u32 {
            let bit = j * c;
            if bit >= SCALAR_BITS {
                return 0;
            }
            let wi = (bit >> 5) as usize;
            let mut v = s[wi] as u64;
            if wi + 1 < 8 {
                v |= (s[wi + 1] as u64) << 32;
            }
            let width = c.min(SCALAR_BITS - bit);
            ((v >> (bit & 31)) as u32) & ((1u32 << width) - 1)
        };
        let half = 1u32 << (c - 1);
        // Booth: the carry in is the top bit of the window below.
        let carry = if w == 0 { 0 } else { (raw(w - 1) >> (c - 1)) & 1 };
        let t = raw(w) + carry;
        if raw(w) >= half {
            t as i64 - (1i64 << c)
        } else {
            t as i64
        }
    }

    #[test]
    fn signed_digits_recompose_every_scalar_and_fit_their_buckets() {
        use blstrs::Scalar;
        use ff::{Field, PrimeField};
        use rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut scalars: Vec<Scalar> = (0..200).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(u64::MAX)]);
        // Powers of two around window edges, and all-ones runs in the low bits.
        for k in [14u64, 15, 16, 17, 31, 32, 63] {
            scalars.push(Scalar::from(2).pow_vartime([k]));
            scalars.push(Scalar::from(2).pow_vartime([k]) - Scalar::ONE);
        }
        for c in (4..=SIGNED_WINDOW_BITS_MAX).filter(|c| SCALAR_BITS % c != 0) {
            let windows = signed_windows(c);
            for x in &scalars {
                let bytes = x.to_repr();
                let mut s = [0u32; 8];
                for (i, w) in s.iter_mut().enumerate() {
                    *w = u32::from_le_bytes(bytes.as_ref()[4 * i..4 * i + 4].try_into().unwrap());
                }
                // sum_w d_w 2^(c w) == s, digits in [-2^(c-1), 2^(c-1)].
                let mut acc = Scalar::ZERO;
                for w in (0..windows).rev() {
                    acc *= Scalar::from(2).pow_vartime([c as u64]);
                    let d = signed_digit(&s, w, c);
                    assert!(d >= -(1i64 << (c - 1)) && d <= 1i64 << (c - 1), "c {c}: digit {d}");
                    let m = Scalar::from(d.unsigned_abs());
                    acc += if d < 0 { -m } else { m };
                }
                assert_eq!(acc, *x, "c {c}: the signed digits recompose the scalar");
                // No carry out of the top window: one more window would be zero.
                assert_eq!(signed_digit(&s, windows, c), 0, "c {c}");
            }
        }
    }

    #[test]
    fn the_one_read_sort_is_chosen_where_it_was_measured_to_pay() {
        let plan = |log: u32, k| MsmPlan::with(1 << log, k, BUCKET_BITS_MAX_DEFAULT);
        for log in [20u32, 24, 27] {
            assert!(plan(log, MsmKernels::SignedGlobal).sort_one_read_pays(), "signed-global 2^{log}");
        }
        for log in [24u32, 27] {
            assert!(
                !plan(log, MsmKernels::Wide).sort_one_read_pays(),
                "wide 2^{log}: 2^19+ counters a window"
            );
        }
        assert!(!plan(14, MsmKernels::SignedGlobal).sort_one_read_pays(), "2^14: four tiles");
    }

    #[test]
    fn overlap_chunks_follow_their_rules() {
        for log in 1..=27u32 {
            let p = MsmPlan::with(1 << log, MsmKernels::Wide, BUCKET_BITS_MAX_DEFAULT);
            let chunk = hist_overlap_chunk(&p);
            assert!(chunk % p.tile == 0 && chunk >= HIST_OVERLAP_CHUNK_MIN, "2^{log}: whole tiles");
            assert!(p.n.div_ceil(chunk) <= HIST_OVERLAP_CHUNKS, "2^{log}: at most the chunks");
        }
    }

    #[test]
    fn wide_plans_take_fewer_windows_where_n_pays_for_their_buckets() {
        for log in 0..=27u32 {
            let n = 1usize << log;
            let w = MsmPlan::with(n, MsmKernels::Wide, BUCKET_BITS_MAX_DEFAULT);
            let s = MsmPlan::with(n, MsmKernels::Signed, BUCKET_BITS_MAX_DEFAULT);
            assert!(w.signed() && w.global_sort() && !s.global_sort());
            assert!(w.c <= WIDE_WINDOW_BITS_MAX && SCALAR_BITS % w.c != 0, "2^{log}: c {}", w.c);
            assert_eq!((w.windows, w.bucket_bits), (SCALAR_BITS / w.c + 1, w.c - 1));
            assert!(w.windows <= s.windows, "2^{log}: never more windows than Signed");
            if w.c <= SIGNED_WINDOW_BITS_MAX {
                assert_eq!(w.c, s.c, "2^{log}: one cost model");
            }
            // Two reduction levels: runs of 2^seg_log buckets, then segments of 2^seg2_log
            // runs' sums, at least two of them per set.
            assert!(w.seg_log >= 1 && w.seg2_log >= 1 && w.seg_log + w.seg2_log < w.bucket_bits, "{w:?}");
            assert_eq!(w.scan_blocks(), w.buckets.div_ceil(SCAN_BLOCK_COUNTS));
            assert_eq!(s.scan_blocks(), 0);
            assert!(n * (w.windows as usize) < u32::MAX as usize, "offsets are u32");
        }
        let wc = |log: u32| {
            let p = MsmPlan::with(1 << log, MsmKernels::Wide, 15);
            (p.c, p.windows)
        };
        assert_eq!(wc(20), (16, 16));
        // Where the cost model keeps 16 bits, Wide plans as SignedGlobal does.
        for log in [10u32, 16, 20, 22] {
            let (w, g) = (MsmPlan::with(1 << log, MsmKernels::Wide, 15), MsmPlan::new(1 << log));
            assert!(w.c <= SIGNED_WINDOW_BITS_MAX, "2^{log}");
            assert_eq!(MsmPlan { kernels: MsmKernels::SignedGlobal, ..w }, g, "2^{log}");
        }
        assert_eq!(wc(24), (20, 13));
        assert_eq!(wc(27), (22, 12));
        // A fixed width: taken where the scheme runs it, ignored where it cannot.
        let f = MsmPlan::with_window(1 << 12, MsmKernels::Wide, 15, Some(22));
        assert_eq!((f.c, f.windows, f.bucket_bits), (22, 12, 21));
        assert_eq!(
            MsmPlan::with_window(1 << 12, MsmKernels::Signed, 15, Some(22)),
            MsmPlan::with(1 << 12, MsmKernels::Signed, 15)
        );
        assert!(
            window_bits_allowed(MsmKernels::Signed, 15, 16)
                && !window_bits_allowed(MsmKernels::Signed, 15, 18)
        );
        assert!(!window_bits_allowed(MsmKernels::Wide, 15, 17), "17 divides 255");
        assert!(
            !window_bits_allowed(MsmKernels::Unsigned, 15, 8)
                && !window_bits_allowed(MsmKernels::Wide, 15, 23)
        );
        // Few points in wide windows: the piece sums are bounded by the entries, not the
        // 2^21 buckets of each window.
        assert_eq!(f.pieces_max, 12 * 4096 + (12 * 4096usize).div_ceil(f.piece_len as usize) + 1);
    }

    #[test]
    fn signed_plans_are_wider_and_halve_the_buckets() {
        for log in 0..=27u32 {
            let n = 1usize << log;
            let p = MsmPlan::with(n, MsmKernels::Signed, BUCKET_BITS_MAX_DEFAULT);
            let u = MsmPlan::with(n, MsmKernels::Unsigned, BUCKET_BITS_MAX_DEFAULT);
            let g = MsmPlan::new(n);
            assert_eq!(g.kernels, MsmKernels::SignedGlobal, "signed digits, global sort: the default");
            // The same windows, buckets and segments as Signed; the sort's tiles as Wide's.
            assert_eq!(
                (g.c, g.windows, g.bucket_bits, g.buckets, g.seg_log, g.seg2_log, g.piece_len, g.pieces_max),
                (p.c, p.windows, p.bucket_bits, p.buckets, p.seg_log, p.seg2_log, p.piece_len, p.pieces_max)
            );
            assert!(g.global_sort() && !p.global_sort());
            assert_eq!((g.tile, g.sort_threads), (WIDE_TILE_POINTS, WIDE_SORT_THREADS));
            assert!(p.signed() && !u.signed());
            assert_eq!(p.bucket_bits, p.c - 1);
            assert!(p.c <= SIGNED_WINDOW_BITS_MAX && SCALAR_BITS % p.c != 0, "2^{log}: c {}", p.c);
            assert_eq!(p.windows, SCALAR_BITS / p.c + 1);
            assert_eq!(p.buckets, (p.windows as usize) << p.bucket_bits);
            assert!(p.seg_log >= 1 && p.seg2_log >= 1 && p.seg_log + p.seg2_log < p.bucket_bits, "{p:?}");
            assert_eq!(u.seg2_log, 0, "unsigned windows reduce in one level");
            assert!(
                p.tile.is_power_of_two() && p.tile >= SIGNED_TILE_POINTS.0 && p.tile <= SIGNED_TILE_POINTS.1
            );
            // Never more additions than the unsigned plan (the cost model's point).
            assert!(p.windows <= u.windows, "2^{log}: {} vs {} windows", p.windows, u.windows);
            // Offsets are u32.
            assert!(n * (p.windows as usize) < u32::MAX as usize);
        }
        // The sizes the issue measures: 16 windows of 16 bits at 2^20 and above.
        for log in [20u32, 22, 24, 27] {
            assert_eq!(MsmPlan::with(1 << log, MsmKernels::Signed, 15).windows, 16, "2^{log}");
        }
        assert_eq!(MsmPlan::with(1 << 24, MsmKernels::Unsigned, 15).windows, 20);
        // A device with less shared memory gets narrower windows.
        assert_eq!(bucket_bits_max_for(227 << 10), 15);
        assert_eq!(bucket_bits_max_for(99 << 10), 14);
        assert_eq!(MsmPlan::with(1 << 24, MsmKernels::Signed, 14).bucket_bits, 13);
        assert!(MsmPlan::with(1 << 24, MsmKernels::Signed, 15).tile_smem_bytes() <= 128 << 10);
    }

    /// The last argument (a block size) of each `MACRO(..)` line of `kernels/unit`.
    fn macro_bounds(unit: &str, macro_name: &str) -> Vec<(String, u32)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let src = std::fs::read_to_string(dir.join(unit)).unwrap();
        src.lines()
            .filter(|l| l.starts_with(&format!("{macro_name}(")))
            .map(|l| {
                (l.to_string(), l.trim_end_matches(')').rsplit(',').next().unwrap().trim().parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn signed_accumulate_block_sizes_match_the_kernels_bounds() {
        for (unit, threads) in [("msm_g1.cu", SIGNED_ACC_THREADS.0), ("msm_g2.cu", SIGNED_ACC_THREADS.1)] {
            // Both arithmetics' instances (`Gpu::set_msm_madd`).
            let lines = macro_bounds(unit, "MSM_MIXED_KERNELS");
            assert_eq!(lines.len(), 2, "{unit}: sppark's and the written-out kernels");
            for (line, bound) in lines {
                assert_eq!(bound, threads, "{unit}: launch bound vs SIGNED_ACC_THREADS in {line}");
            }
        }
    }

    #[test]
    fn fold_tree_block_sizes_match_the_kernels_bounds() {
        for (unit, threads) in [("msm_g1.cu", FOLD_TREE_THREADS.0), ("msm_g2.cu", FOLD_TREE_THREADS.1)] {
            let lines = macro_bounds(unit, "MSM_FULL_KERNELS");
            let (line, bound) = lines.first().expect("one instance");
            assert_eq!(*bound, threads, "{unit}: the tree's block vs FOLD_TREE_THREADS in {line}");
            // A power of two: every fan (a power of two up to it) divides it.
            assert!(threads.is_power_of_two());
        }
    }

    #[test]
    fn batch_affine_instances_match_the_kernels() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let header = std::fs::read_to_string(dir.join("msm_batch_affine.cuh")).unwrap();
        assert!(header.lines().any(|l| l == format!("#define BA_THREADS {BA_THREADS}")));
        let src = std::fs::read_to_string(dir.join("msm_g1.cu")).unwrap();
        // MSM_BA_KERNELS(g1_baK, fp_t, K, MINB): the name and K agree, one line per K.
        let mut ks: Vec<u32> = src
            .lines()
            .filter_map(|l| l.strip_prefix("MSM_BA_KERNELS("))
            .map(|l| {
                let args: Vec<_> = l.trim_end_matches(')').split(',').map(str::trim).collect();
                let k: u32 = args[2].parse().unwrap();
                assert_eq!(args[0], format!("g1_ba{k}"), "{l}");
                k
            })
            .collect();
        ks.sort();
        assert_eq!(ks, BA_PIECES);
    }

    #[test]
    fn the_sparse_sorts_list_and_the_ones_grid_fit_every_launch() {
        for log in 0..=27u32 {
            for n in [1usize << log, (1usize << log) + 3] {
                let p = MsmPlan::new(n);
                // A quarter of the scalars, at least one slot.
                assert_eq!(p.rest_cap, n.div_ceil(REST_SHARE).max(1), "n {n}");
                // Whole blocks under every block size the 0/1 kernels launch with: the
                // compacting kernel's (G1 512, G2 256) and the old kernel's 256.
                for block in [SIGNED_ACC_THREADS.0, SIGNED_ACC_THREADS.1, THREADS] {
                    assert_eq!(p.ones_threads % block as usize, 0, "n {n}, block {block}");
                }
                assert!(p.ones_threads <= ONES_THREADS_MAX && p.ones_threads >= ONES_UNIT);
                // The old kernel's grid stays what it was (at most 256 blocks of 256).
                assert!(p.ones_threads.min(ONES_THREADS_BEFORE) <= 256 * THREADS as usize);
            }
        }
    }

    #[test]
    fn chunks_share_the_full_chunks_layout() {
        let full = MsmPlan::new(1 << 16);
        let last = full.for_chunk(1000);
        assert_eq!((last.n, last.slots), (1000, 1 << 16));
        assert_eq!((last.c, last.windows, last.buckets), (full.c, full.windows, full.buckets));
        // The same spans, so every chunk's buckets lie at one address.
        assert_eq!(last.scratch_bytes(Curve::G1), full.scratch_bytes(Curve::G1));
        assert!(std::panic::catch_unwind(|| full.for_chunk((1 << 16) + 1)).is_err());
        // A chunked layout: every scalar, then the full chunk's layout (resident bases).
        for (n, chunk) in [(100_003usize, 30_000usize), (1 << 16, 1 << 14), (5000, 1 << 14)] {
            let want = 32 * n + MsmPlan::new(chunk.min(n)).scratch_bytes(Curve::G1);
            let got = chunked_scratch_bytes(Curve::G1, n, chunk, false, |k| MsmChoice::DEFAULT.plan(k));
            assert!(got >= want && got < want + 2 * crate::SPAN_ALIGN_BYTES, "n {n}, chunk {chunk}");
        }
    }

    #[test]
    fn fixed_windows_are_checked_and_chosen_within_their_budget() {
        let ok = FixedWindows { c: 20, copies: 4 };
        assert_eq!((ok.windows(), ok.sets()), (13, 4));
        assert!(ok.check(1 << 24).is_ok());
        assert_eq!(ok.bytes(Curve::G1, 1 << 20), (4 * 96) << 20);
        for bad in [
            FixedWindows { c: 17, copies: 1 }, // divides 255
            FixedWindows { c: 23, copies: 1 }, // wider than the wide kernels
            FixedWindows { c: 3, copies: 1 },
            FixedWindows { c: 20, copies: 0 },
            FixedWindows { c: 20, copies: 14 }, // more copies than windows
        ] {
            assert!(matches!(bad.check(8), Err(CudaError::Limit { .. })), "{bad:?}");
        }
        // Bit 31 of a sorted index is the sign: copies x points stay at most 2^31.
        assert!(FixedWindows { c: 16, copies: 16 }.check(1 << 27).is_ok());
        assert!(FixedWindows { c: 14, copies: 17 }.check(1 << 27).is_err());
        for log in [10u32, 16, 20, 24, 27] {
            let n = 1usize << log;
            // Without room for copies, the wide kernels' own width.
            let none = FixedWindows::choose(Curve::G1, n, 0);
            assert_eq!(
                none,
                FixedWindows { c: MsmPlan::with(n, MsmKernels::Wide, 15).c, copies: 1 },
                "2^{log}"
            );
            for budget in [1usize << 30, 8 << 30, 64 << 30, usize::MAX] {
                let f = FixedWindows::choose(Curve::G1, n, budget);
                assert!(f.check(n).is_ok(), "2^{log}: {f:?}");
                assert!(f.copies == 1 || f.bytes(Curve::G1, n) <= budget, "2^{log}: {f:?} within {budget}");
                // No copy wasted: one fewer would need another set.
                assert!(
                    f.copies == 1 || FixedWindows { copies: f.copies - 1, ..f }.sets() > f.sets(),
                    "{f:?}"
                );
                // A shared set's top window spreads over enough of its buckets.
                assert!(f.copies == 1 || 2 * f.top_bits() >= f.c, "{f:?}");
                assert!(f.additions(n) <= none.additions(n), "2^{log}: copies never cost more additions");
            }
        }
        // With room, every window shares one set at 2^20 and 2^24, the shapes that measured
        // fastest on an H100: at 2^20 of 16 bits, whose 2^15 buckets reduce in 0.8 ms where
        // the 2^19 of 20-bit windows took 2.5 (8.75 against 9.47 ms); at 2^24 of 22 bits (12
        // copies, 18 GiB: 110.1 against 116.3 ms for 20 x 13).
        let f20 = FixedWindows::choose(Curve::G1, 1 << 20, 8 << 30);
        assert_eq!(f20, FixedWindows { c: 16, copies: 16 });
        let f24 = FixedWindows::choose(Curve::G1, 1 << 24, 24 << 30);
        assert_eq!(f24, FixedWindows { c: 22, copies: 12 });
    }

    #[test]
    fn fixed_plans_share_sets_of_buckets_and_lay_out_less() {
        let n = 1 << 20;
        for f in [
            FixedWindows { c: 16, copies: 16 },
            FixedWindows { c: 18, copies: 5 },
            FixedWindows { c: 20, copies: 1 },
        ] {
            let p = MsmPlan::with_fixed(n, f, n);
            assert_eq!((p.kernels, p.c, p.windows, p.group), (MsmKernels::Wide, f.c, f.windows(), f.copies));
            assert_eq!((p.sets, p.stride as usize), (f.sets(), n));
            assert_eq!(p.buckets, (f.sets() as usize) << (f.c - 1));
            let plain = MsmPlan::with_window(n, MsmKernels::Wide, 15, Some(f.c));
            assert_eq!((plain.group, plain.sets, plain.windows), (1, plain.windows, f.windows()));
            assert!(p.scratch_bytes(Curve::G1) <= plain.scratch_bytes(Curve::G1), "{f:?}");
            if f.copies > 1 {
                assert!(p.scratch_bytes(Curve::G1) < plain.scratch_bytes(Curve::G1), "{f:?}: fewer buckets");
            }
            // A chunk keeps the full chunk's layout and the stride of every copy.
            assert_eq!(p.for_chunk(1000).stride as usize, n);
            // `out` holds each set's sum, then the ones' sum.
            let spans = MsmSpans::take(&mut Bump::dry(), &p, Curve::G1).unwrap();
            assert_eq!(spans.out.len_bytes, Curve::G1.jacobian_bytes() * (f.sets() as usize + 1));
            let _ = spans.ones_out(&p, Curve::G1);
        }
    }

    #[test]
    fn scratch_grows_with_n_and_g2_needs_more() {
        let (a, b) = (MsmPlan::new(1 << 20), MsmPlan::new(1 << 22));
        assert!(a.scratch_bytes(Curve::G1) < b.scratch_bytes(Curve::G1));
        assert!(a.scratch_bytes(Curve::G1) < a.scratch_bytes(Curve::G2));
        // At least the scalars and the sorted indices.
        assert!(b.scratch_bytes(Curve::G1) >= (1 << 22) * (SCALAR_BYTES + 4 * b.windows as usize));
    }
}
