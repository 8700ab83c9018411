//! [`Gpu`]: one device, its kernels, its [`DeviceArena`]. The NTT and MSM entry points
//! live in `ntt.rs` and `msm.rs` as further `impl Gpu` blocks; this module depends on
//! neither (the types of `Gpu`'s fields live below it: `device`, `arena`, `ntt_tables`).

use std::cell::Cell;
use std::time::{Duration, Instant};

use crate::arena::{ArenaStats, DeviceArena};
use crate::device::Device;
use crate::error::{CudaError, DriverContext, Result};
use crate::msm::{DenseRun, MsmKernels, MsmStageTimes};
use crate::ntt::NttKernels;
use crate::ntt_tables::NttTables;

/// One opened GPU. Methods take `&mut self`: one operation at a time per device (the
/// backend keeps each `Gpu` behind a mutex that its prover and finalizer threads share).
pub struct Gpu {
    pub(crate) dev: Device,
    pub(crate) arena: Option<DeviceArena>,
    pub(crate) ntt: Option<NttTables>,
    ordinal: usize,
    name: String,
    /// The MSM's 0/1 fast path (on by default; off to measure it against the plain bucket
    /// method, `kernel_bench`, and for one call at a time over dense scalars:
    /// `Gpu::with_dense_run`).
    pub(crate) msm_ones: bool,
    /// The 0/1 fast path's sparse sort (on by default; off only to measure it against the
    /// sort over every scalar, `kernel_bench`).
    pub(crate) msm_sparse: bool,
    /// A chunked MSM's chunks add into one set of buckets that the last reduces (on by
    /// default; off: each chunk reduces its own windows, the code before, for a bench).
    pub(crate) msm_shared_buckets: bool,
    /// Resident MSMs of more than `.0` points run in chunks of `.1` (the defaults:
    /// `msm::RESIDENT_CHUNK_ABOVE`, `msm::RESIDENT_CHUNK`, which the device plan assumes).
    pub(crate) resident_chunking: (usize, usize),
    /// Which NTT kernels run (the pass kernel by default; the others to measure against).
    pub(crate) ntt_kernels: NttKernels,
    /// The radix 8 pass kernel reads a group's twiddles before its products
    /// ([`Gpu::set_ntt_twiddles_ahead`]).
    pub(crate) ntt_twiddles_ahead: bool,
    /// Which MSM kernels run (signed windows by default; the unsigned ones to measure against).
    pub(crate) msm_kernels: MsmKernels,
    /// A fixed signed window width ([`Gpu::set_msm_window_bits`]).
    pub(crate) msm_window_bits: Option<u32>,
    /// Whether the signed kernels accumulate their pieces longest first.
    pub(crate) msm_piece_order: bool,
    pub(crate) msm_sort_one_read: Option<bool>,
    /// Whether the global sort's counts run under the scalars' upload ([`Gpu::set_msm_hist_overlap`]).
    pub(crate) msm_hist_overlap: bool,
    /// Whether the MSM's mixed additions run written out ([`Gpu::set_msm_madd`]).
    pub(crate) msm_madd: bool,
    /// Whether signed windows reduce in two levels ([`Gpu::set_msm_reduce_two_levels`]).
    pub(crate) msm_reduce_two_levels: bool,
    /// Whether the reduction's folds run as trees ([`Gpu::set_msm_fold_tree`]).
    pub(crate) msm_fold_tree: bool,
    /// Batch-affine accumulation in G1, K pieces per thread ([`Gpu::set_msm_batch_affine`]).
    pub(crate) msm_batch_affine: Option<u32>,
    /// The kernels of the h MSM, whose scalars are dense ([`Gpu::set_msm_dense_kernels`]).
    pub(crate) msm_dense_kernels: MsmKernels,
    /// Whether an MSM over host scalars that a sample finds dense runs the dense kernels
    /// (G1, where they pay) and skips the 0/1 pass ([`Gpu::set_msm_dense_auto`]).
    pub(crate) msm_dense_auto: bool,
    /// The kernels the last MSM ran ([`Gpu::last_msm_kernels`]).
    pub(crate) last_msm_kernels: Cell<MsmKernels>,
    /// Whether the last MSM ran the 0/1 fast path ([`Gpu::last_msm_ones_pass`]).
    pub(crate) last_msm_ones: Cell<bool>,
    /// How many chunks the last MSM ran in ([`Gpu::last_msm_chunks`]).
    pub(crate) last_msm_chunks: Cell<usize>,
    /// Device time of the last MSM or h pipeline call (GPU events).
    pub(crate) last_device: Cell<Duration>,
    /// Whether MSMs record events between their stages (off by default: a bench's split).
    pub(crate) msm_stage_timing: bool,
    /// The last MSM's stage split (zero unless `msm_stage_timing`).
    pub(crate) last_msm_stages: Cell<MsmStageTimes>,
    /// Witness auxes uploaded so far: (packed, whole).
    pub(crate) aux_uploads: Cell<(u64, u64)>,
}

// SAFETY: the driver handles inside (context, stream, functions, device pointers) may be
// used from any thread once the context is made current there, which every method does
// first (`Device::bind`); `&mut self` keeps two threads from using one `Gpu` at a time.
unsafe impl Send for Gpu {}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("arena", &self.arena)
            .finish()
    }
}

impl Gpu {
    /// Opens device `ordinal` and loads the embedded kernels.
    ///
    /// Errors (never panics): [`CudaError::NotBuilt`] without the `kernels` feature,
    /// [`CudaError::NoDriver`] on a host without libcuda, [`CudaError::NoDevice`] when
    /// the driver has no such device.
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let dev = Device::open(ordinal)?;
        let name = dev.ctx.name().op("cuDeviceGetName")?;
        Ok(Gpu {
            dev,
            arena: None,
            ntt: None,
            ordinal,
            name,
            msm_ones: true,
            msm_sparse: true,
            msm_shared_buckets: true,
            resident_chunking: crate::msm::RESIDENT_CHUNKING,
            ntt_kernels: NttKernels::default(),
            ntt_twiddles_ahead: true,
            msm_kernels: MsmKernels::default(),
            msm_window_bits: None,
            msm_piece_order: true,
            msm_sort_one_read: None,
            msm_hist_overlap: true,
            msm_madd: true,
            msm_reduce_two_levels: true,
            msm_fold_tree: true,
            msm_batch_affine: None,
            msm_dense_kernels: MsmKernels::DENSE_DEFAULT,
            msm_dense_auto: true,
            last_msm_kernels: Cell::new(MsmKernels::default()),
            last_msm_ones: Cell::new(false),
            last_msm_chunks: Cell::new(0),
            last_device: Cell::new(Duration::ZERO),
            msm_stage_timing: false,
            last_msm_stages: Cell::new(MsmStageTimes::default()),
            aux_uploads: Cell::new((0, 0)),
        })
    }

    /// Turns the MSM's 0/1 fast path on (the default) or off. Results are the same either
    /// way; off exists so a bench can time the plain bucket method in the same run. On, the
    /// pass still does not run for dense scalars: host ones whose sample is dense and has
    /// no one ([`Gpu::set_msm_dense_auto`]), and h's coefficients ([`Gpu::last_msm_ones_pass`]
    /// says whether it ran).
    pub fn set_msm_ones_fast_path(&mut self, on: bool) {
        self.msm_ones = on;
    }

    /// Turns the sparse sort on (the default) or off. With the 0/1 fast path on, the kernel
    /// that sums the ones also lists the scalars that are neither zero nor one, and while
    /// they are at most a quarter of the call the bucket sort reads only those (PoRep's A,
    /// B and L are ~99% zeros and ones) instead of every scalar once per window. Results
    /// are the same point; off runs the kernels before it, for a bench's baseline.
    pub fn set_msm_sparse_sort(&mut self, on: bool) {
        self.msm_sparse = on;
    }

    /// Turns the chunked MSM's shared buckets on (the default) or off (each chunk then
    /// reduces its own windows and the host adds the chunks' sums, as before). Results are
    /// the same point; off exists so a bench can time the two in the same run.
    pub fn set_msm_shared_buckets(&mut self, on: bool) {
        self.msm_shared_buckets = on;
    }

    /// Resident MSMs of more than `above` points run as MSMs of `chunk` points each (the
    /// default: above 2^25, chunks of 2^24). Results are the same; tests set small values
    /// to check the chunked path without 2^25 bases. The device plan assumes the default:
    /// a chunk larger than the default's may not fit an arena sized by it.
    pub fn set_resident_chunking(&mut self, above: usize, chunk: usize) {
        self.resident_chunking = (above, chunk.max(1));
    }

    /// The resident chunking in force: `(above, chunk)` as [`Gpu::set_resident_chunking`]
    /// takes it.
    pub fn resident_chunking(&self) -> (usize, usize) {
        self.resident_chunking
    }

    /// Chooses the NTT kernels ([`NttKernels::Auto`] by default). Results are the same
    /// bit for bit; the others exist so a bench can time them in the same run.
    pub fn set_ntt_kernels(&mut self, kernels: NttKernels) {
        self.ntt_kernels = kernels;
    }

    /// The radix 8 pass kernel reads each group's seven twiddles first, through a table
    /// index without a branch (`fr_ntt_pass8_ahead`), so that the loads are in flight
    /// together rather than one before each stage's products. On by default (on an H100:
    /// one NTT 1.07x, the h transforms 1.10-1.11x, from 2^20 to 2^27; BENCHMARKS.md,
    /// thirty-first session); off, the kernel before, for `kernel_bench --h` to time
    /// against. Results are the same bit for bit. Radix 4 reads its three twiddles
    /// before its products already.
    pub fn set_ntt_twiddles_ahead(&mut self, on: bool) {
        self.ntt_twiddles_ahead = on;
    }

    /// Chooses the MSM kernels ([`MsmKernels::SignedGlobal`] by default). Results are the same
    /// point; the unsigned ones exist so a bench can time them in the same run. The device
    /// plan assumes the default: another choice may need more scratch than it reserved.
    pub fn set_msm_kernels(&mut self, kernels: MsmKernels) {
        self.msm_kernels = kernels;
    }

    /// Chooses the kernels of the h MSM ([`Gpu::msm_h_resident`], [`Gpu::msm_h_over`]):
    /// [`MsmKernels::Wide`] by default, as its scalars are h's coefficients, dense and
    /// random, where the wide windows were 1.36x the signed ones at 2^27 on the H200; the
    /// witness MSMs' scalars are 99% zeros and ones, where the signed ones were faster
    /// (BENCHMARKS.md, fifteenth session). Results are the same point. The device plan
    /// assumes the default.
    pub fn set_msm_dense_kernels(&mut self, kernels: MsmKernels) {
        self.msm_dense_kernels = kernels;
    }

    /// Turns on (the default) or off the dense kernels for a G1 MSM over host scalars whose
    /// sample looks dense ([`crate::scalars_look_dense`]: at least 7/8 of 1,024 evenly
    /// spaced scalars neither zero nor one), where the dense kernels plan fewer windows than
    /// the default ones (from 2^23 points on the H100/H200: up to 2^22 both plan 16 windows
    /// of 16 bits), over plain bases, while the kernels are the default ones
    /// ([`Gpu::set_msm_kernels`] with another choice turns this off in effect), and only
    /// where the dense kernels' scratch fits the arena. A witness's scalars, 99% zeros and
    /// ones, keep the default kernels, which were 1.64x faster on them; random scalars get
    /// the wider windows (G1 2^24: 117 against 129 ms, BENCHMARKS.md). Results are the same
    /// point either way; [`Gpu::last_msm_kernels`] says which ran. The device plan and
    /// [`crate::msm_scratch_bytes`] assume the default kernels, and a dense MSM whose dense
    /// layout would not fit the scratch keeps them: reserve
    /// [`crate::msm_auto_scratch_bytes`] to leave room for the switch. The sample is read
    /// from [`crate::DENSE_SAMPLE_MIN`] scalars (the switch pays only from 2^23 anyway). A
    /// dense sample with no scalar equal to one also turns the 0/1 fast path's pass off for
    /// that call, over any bases and with any kernels: its pass over every scalar would
    /// find (almost) nothing, and a one that is there still lands in its bucket. A sample
    /// with ones keeps the pass, which spares the sort a crowded bucket of ones.
    pub fn set_msm_dense_auto(&mut self, on: bool) {
        self.msm_dense_auto = on;
    }

    /// Runs `f` as `run` says for dense scalars, then restores the choice in force: the h
    /// MSM's kernels (`run.kernels`), and the 0/1 fast path off (`run.ones_off`: for dense
    /// scalars with (almost) no ones, h's coefficients and random ones, whose pass over
    /// every scalar would find nothing, G1 2^24: 0.64 ms, 2^20: 0.13 ms on an H100; a
    /// scalar that is one still lands in its bucket). The result is the same point. The
    /// choice is restored however `f` ends, a panic included (a guard's drop), so a later
    /// call never runs switched kernels that its layout did not plan for.
    pub(crate) fn with_dense_run<R>(&mut self, run: DenseRun, f: impl FnOnce(&mut Gpu) -> R) -> R {
        /// Puts the saved kernels and 0/1 pass back when dropped.
        struct Restore<'a> {
            g: &'a mut Gpu,
            saved: (MsmKernels, bool),
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                (self.g.msm_kernels, self.g.msm_ones) = self.saved;
            }
        }
        let guard = Restore { saved: (self.msm_kernels, self.msm_ones), g: self };
        if run.kernels {
            guard.g.msm_kernels = guard.g.msm_dense_kernels;
        }
        if run.ones_off {
            guard.g.msm_ones = false;
        }
        f(&mut *guard.g)
    }

    /// Turns the pieces' order on (the default) or off. The accumulation runs one thread per
    /// piece of a bucket, so a warp takes as long as its longest piece; on, the signed
    /// kernels sort the pieces by length first (a counting sort, three small launches), so
    /// each warp sums pieces of one length. Results are the same point; off runs them in
    /// bucket order as before, for a bench's baseline.
    pub fn set_msm_piece_order(&mut self, on: bool) {
        self.msm_piece_order = on;
    }

    /// Whether the global-memory sort reads each scalar once for all its windows
    /// (`Some(true)`) or once per window, the grid's y being the window (`Some(false)`);
    /// `None` (the default) chooses per MSM ([`MsmPlan::sort_one_read_pays`]). Results are
    /// the same point.
    pub fn set_msm_sort_one_read(&mut self, on: Option<bool>) {
        self.msm_sort_one_read = on;
    }

    /// Whether an MSM of host scalars under the global-memory sort uploads them in chunks
    /// on the copy stream and takes each chunk's bucket counts as soon as it has landed (on,
    /// the default; [`hist_overlap_chunk`](crate::hist_overlap_chunk)), or uploads them
    /// in one copy and counts after it (off: the code before, a bench's baseline). Results
    /// are the same point.
    pub fn set_msm_hist_overlap(&mut self, on: bool) {
        self.msm_hist_overlap = on;
    }

    /// Which point arithmetic the MSM's mixed additions (bucket += base: the accumulation
    /// and the 0/1 sums) run (`kernels/msm_points.cuh`): on (the default), written out from
    /// the EFD formula so that the common case inlines into the loop, with a base added to
    /// itself or to its negation as a call of its own; off, sppark's `xyzz_t::add`, which
    /// nvcc keeps out of line for G2 (a call per point, the sum through local memory): the
    /// kernels before, a bench's baseline. On the H200 the G2 2^22 MSM went 135.2 ->
    /// 112.5 ms (BENCHMARKS.md, "The mixed addition written out"); G1 is unchanged. Results
    /// are the same point.
    pub fn set_msm_madd(&mut self, on: bool) {
        self.msm_madd = on;
    }

    /// How signed windows reduce their buckets to one point per window: on (the default),
    /// in two levels, running sums over runs of buckets whose sums a second level weighs
    /// (one multiplication per second-level segment); off, in one level, every segment's
    /// thread multiplying by its first bucket's index (the kernels before, a bench's
    /// baseline). Results are the same point.
    pub fn set_msm_reduce_two_levels(&mut self, on: bool) {
        self.msm_reduce_two_levels = on;
    }

    /// How signed windows fold their segments' sums to one point per window: on (the
    /// default), by trees in shared memory (a chain of `log2` of the block's points
    /// dependent additions a launch); off, by rounds where each thread sums 16 in a row
    /// (the kernels before, a bench's baseline). Results are the same point.
    pub fn set_msm_fold_tree(&mut self, on: bool) {
        self.msm_fold_tree = on;
    }

    /// Batch-affine accumulation in G1 (`kernels/msm_batch_affine.cuh`): `Some(k)` sums
    /// the pieces' points in affine coordinates, k pieces per thread, each block and round
    /// sharing one field inversion (Montgomery's trick: ~6 products an addition against the
    /// mixed addition's 10); `None` (the default) one thread per piece in xyzz. G2 keeps
    /// the mixed addition either way. Refused with [`CudaError::Limit`] for a k without a
    /// compiled instance (4, 8, 16). Results are the same point.
    pub fn set_msm_batch_affine(&mut self, pieces_per_thread: Option<u32>) -> Result<()> {
        if let Some(k) = pieces_per_thread {
            if !crate::msm::BA_PIECES.contains(&k) {
                return Err(CudaError::Limit {
                    what: "batch-affine pieces per thread (4, 8 or 16)",
                    value: k as usize,
                    limit: *crate::msm::BA_PIECES.last().unwrap() as usize,
                });
            }
        }
        self.msm_batch_affine = pieces_per_thread;
        Ok(())
    }

    /// Fixes the window width of the signed MSM kernels at `c` bits (`None`, the default:
    /// each MSM's width chosen from its size). Results are the same point; tests use it to
    /// run [`MsmKernels::Wide`]'s widest windows (2^21 buckets each) on a few thousand
    /// points, benches to time one width against another. Refused with
    /// [`CudaError::Limit`] for a width the kernels in force cannot run (4 to 16 bits
    /// signed, 4 to 22 wide, never one dividing 255); a later change of kernels that cannot
    /// run it falls back to the chosen width.
    pub fn set_msm_window_bits(&mut self, c: Option<u32>) -> Result<()> {
        if let Some(c) = c {
            let choice = self.msm_choice();
            if !crate::msm::window_bits_allowed(choice.kernels, choice.bucket_bits_max, c) {
                return Err(CudaError::Limit {
                    what: "MSM window bits",
                    value: c as usize,
                    limit: choice.widest_window() as usize,
                });
            }
        }
        self.msm_window_bits = c;
        Ok(())
    }

    /// Records GPU events between an MSM's stages (off by default), so that
    /// [`Gpu::last_msm_stages`] says where its device time went. The events add a few
    /// microseconds per call; results are unchanged.
    pub fn set_msm_stage_timing(&mut self, on: bool) {
        self.msm_stage_timing = on;
    }

    /// The last MSM's device time per stage, summed over its chunks (all zero unless
    /// [`Gpu::set_msm_stage_timing`] is on).
    pub fn last_msm_stages(&self) -> MsmStageTimes {
        self.last_msm_stages.get()
    }

    /// Device time of the last MSM or h call (`msm_*`, `h_quotient_resident`), measured by GPU
    /// events from before its first copy to after its last kernel: what the backend
    /// reports as kernel-level timers beside its host-clock call timers.
    pub fn last_device_time(&self) -> Duration {
        self.last_device.get()
    }

    /// Witness auxes this GPU took so far (the h stage's and the witness MSMs'), as
    /// (packed: [`crate::AuxPack`], whole).
    pub fn aux_uploads(&self) -> (u64, u64) {
        self.aux_uploads.get()
    }

    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `(free, total)` device memory in bytes, as the driver reports it now.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        self.dev.bind()?;
        self.dev.ctx.mem_get_info().op("cuMemGetInfo")
    }

    /// Reserves the device arena (once per `Gpu`): every later operation sub-allocates
    /// from it and none allocates device memory.
    pub fn reserve_arena(&mut self, bytes: usize) -> Result<()> {
        if let Some(a) = &self.arena {
            return Err(CudaError::ArenaReserved { reserved_bytes: a.stats().reserved_bytes });
        }
        self.arena = Some(DeviceArena::reserve(&self.dev.ctx, bytes)?);
        Ok(())
    }

    pub fn arena_stats(&self) -> Option<ArenaStats> {
        self.arena.as_ref().map(DeviceArena::stats)
    }

    pub(crate) fn arena_mut(&mut self) -> Result<&mut DeviceArena> {
        self.arena.as_mut().ok_or(CudaError::NoArena)
    }

    /// Turns the staging of uploads from pageable host memory on (the default) or off.
    /// On, an MSM's host scalars and bases (resident or copied per call) of at least 1 MiB
    /// that do not lie in page-locked memory go up through two 16 MiB page-locked buffers
    /// that the host's threads fill while the previous one is on the bus (made on the first
    /// such upload, kept for the `Gpu`'s life: [`Gpu::host_staging_bytes`]); off, the
    /// driver copies them from pageable memory itself (~7.5 GB/s on the H200 machine
    /// against ~55 GB/s page-locked, ANCHORS.md). Results are the same; off exists so a
    /// bench can time the two in the same run. Memory already page-locked
    /// ([`Gpu::is_page_locked`]) is copied in place either way.
    pub fn set_host_staging(&mut self, on: bool) {
        self.dev.staging_on = on;
    }

    /// Whether `src` lies in page-locked host memory (registered, as the engine's arena
    /// regions are, or allocated pinned), which the GPU copies from at full bus speed.
    pub fn is_page_locked<T>(&self, src: &[T]) -> bool {
        self.dev.bind().is_ok() && self.dev.is_page_locked(src)
    }

    /// Pinned host bytes this `Gpu`'s staging buffers hold: 0 until the first staged upload
    /// ([`Gpu::set_host_staging`]; an engine's is its parameters' bases at start-up, and it
    /// frees them after: [`Gpu::release_host_staging`]), then 32 MiB.
    pub fn host_staging_bytes(&self) -> usize {
        self.dev.staging_bytes()
    }

    /// Frees the staging buffers ([`Gpu::set_host_staging`]) until the next staged upload
    /// makes them again: for a process whose later uploads all come from page-locked memory
    /// (the engine's backend calls it once the parameters' bases are on the device).
    pub fn release_host_staging(&mut self) -> Result<()> {
        self.dev.bind()?;
        self.dev.release_staging()
    }

    /// Host-to-device copy bandwidth from `src` in GB/s (10^9 bytes per second), best of
    /// `reps` copies into the arena's scratch, the way an MSM's host scalars go up: in place
    /// from page-locked memory, through the staging buffers from pageable memory (or by the
    /// driver's own path with [`Gpu::set_host_staging`] off).
    pub fn h2d_gb_per_s(&mut self, src: &[u8], reps: usize) -> Result<f64> {
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let dst = b.take("h2d bench buffer", src.len())?;
        let mut best = f64::INFINITY;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            // SAFETY: `dst` is a scratch span of the arena holding `src.len()` bytes, and
            // no other operation runs (`&mut self`); `upload_wait` waits for the copies.
            unsafe { self.dev.upload_wait(dst.ptr, src) }?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        let arena = self.arena.as_mut().ok_or(CudaError::NoArena)?;
        arena.note_scratch(&b);
        Ok(src.len() as f64 / best / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `with_dense_run` puts the kernels and the 0/1 pass back when its closure panics.
    /// Needs a GPU (the GPU tests' skip rule, tests/common).
    #[test]
    fn dense_run_restores_after_a_panic() {
        let Some(mut g) = crate::test_common::opened_or_skip(Gpu::open(0)) else { return };
        g.msm_dense_kernels = MsmKernels::Wide;
        g.msm_kernels = MsmKernels::Signed;
        g.msm_ones = true;
        let run = DenseRun::ALL;
        let seen = g.with_dense_run(run, |g| (g.msm_kernels, g.msm_ones));
        assert_eq!(seen, (MsmKernels::Wide, false));
        assert_eq!((g.msm_kernels, g.msm_ones), (MsmKernels::Signed, true));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            g.with_dense_run(run, |_| panic!("an MSM panics"))
        }));
        assert!(caught.is_err());
        assert_eq!((g.msm_kernels, g.msm_ones), (MsmKernels::Signed, true), "restored after the panic");
    }
}
