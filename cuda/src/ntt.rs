//! NTTs and the h pipeline on the device, with the CPU engine's domain conventions
//! (engine/src/groth16/domain.rs, bellperson 0.27): omega is `Scalar::ROOT_OF_UNITY`
//! squared down to the domain, cosets use `Scalar::MULTIPLICATIVE_GENERATOR`, inverse
//! transforms scale by `1/n`. Outputs equal the CPU's bit for bit (tests/gpu.rs). The
//! tables these read are in `ntt_tables.rs`.

use blst::{blst_p1, blst_p1_affine};
use blstrs::{G1Projective, Scalar};

use crate::arena::{Bump, DevPtr, DevSpan};
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::Dims;
use crate::msm::{combine_parts, BaseSet, Curve, DenseRun, G1Bases, Scalars};
use crate::ntt_passes::{passes, BLOCK_LOG, PASS_STAGES_MAX};
use crate::ntt_tables::{powers, NttTables, FR_BYTES, NTT_LOG_MAX};

/// Stages done in shared memory by one block (2^10 scalars = 32 KiB): ntt.cu's
/// `NTT_SHARED_LOG` (a test checks they agree).
const SHARED_LOG: u32 = BLOCK_LOG;
const THREADS: u32 = 256;

/// The NTT kernels a [`Gpu`] runs ([`Gpu::set_ntt_kernels`]); every choice gives the same
/// bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NttKernels {
    /// Per transform a bit-reversal pass, ten stages in shared memory, then one pass over
    /// device memory per two stages; the h pipeline's seven transforms each so. The
    /// kernels before [`NttKernels::Passes`], kept as the bench's baseline.
    Stages,
    /// `fr_ntt_pass` (ntt_passes.rs): up to 8 stages per pass over device memory (3 passes
    /// at 2^24, 4 at 2^27), a barrier per stage; the h pipeline pairs DIF inverse and DIT
    /// forward transforms, so only its last step permutes.
    PassesRadix2,
    /// As `PassesRadix2`, two stages per barrier (`fr_ntt_pass4`: four entries per thread
    /// in registers).
    Passes,
    /// As `Passes`, three stages per barrier (`fr_ntt_pass8_ahead`, or `fr_ntt_pass8` with
    /// [`Gpu::set_ntt_twiddles_ahead`] off: eight entries per thread in registers, a pass's
    /// last step one or two stages when 3 does not divide its count).
    Passes8,
    /// `Passes8` for transforms of at least 2^[`PASSES8_FROM_LOG`], `Passes` below. With
    /// the twiddles read ahead ([`Gpu::set_ntt_twiddles_ahead`], the default) radix 8 was
    /// 1.05x radix 4 on the h transforms at 2^20, 1.14x at 2^24 and 1.16x at 2^27, and tied on
    /// one NTT at 2^20 (an H100; BENCHMARKS.md, thirty-first session); without them the
    /// crossing was 2^22 (the H200, eighteenth session). The default.
    #[default]
    Auto,
}

/// The smallest transform (log2) [`NttKernels::Auto`] runs radix 8 on.
pub const PASSES8_FROM_LOG: u32 = 20;

impl NttKernels {
    /// The pass kernel's radix (log2: 1, 2 or 3) for a transform of 2^`log_n` (`Stages`: 1,
    /// not used by its own kernels).
    fn radix_log(self, log_n: u32) -> u32 {
        match self {
            NttKernels::Stages | NttKernels::PassesRadix2 => 1,
            NttKernels::Passes => 2,
            NttKernels::Passes8 => 3,
            NttKernels::Auto if log_n >= PASSES8_FROM_LOG => 3,
            NttKernels::Auto => 2,
        }
    }
}

/// h's coefficients left on the device by [`Gpu::h_quotient_resident`] (canonical bytes
/// at the start of the arena's scratch), valid until the next operation on that GPU.
#[derive(Debug)]
#[must_use = "h on the device is only useful to Gpu::msm_h_resident"]
pub struct DeviceH {
    ptr: DevPtr,
    len: usize,
    arena_id: u64,
    /// The arena's scratch epoch when h was written (no scratch laid out since).
    epoch: u64,
}

/// Scratch bytes of [`Gpu::h_pipeline`] on a domain of `2^log_n` (a, b, c on the device).
pub fn h_scratch_bytes(log_n: u32) -> usize {
    let mut b = Bump::dry();
    h_spans(&mut b, (1usize << log_n) * FR_BYTES).expect("a dry layout has room");
    b.used_bytes()
}

/// The h pipeline's three vectors, each `bytes` long.
pub(crate) fn h_spans(b: &mut Bump, bytes: usize) -> Result<[DevSpan; 3]> {
    Ok([b.take("h pipeline: a", bytes)?, b.take("h pipeline: b", bytes)?, b.take("h pipeline: c", bytes)?])
}

impl Gpu {
    /// Computes the NTT tables for domains up to `2^max_log` into the arena's persistent
    /// part. Idempotent for a `max_log` no larger than the prepared one.
    pub fn prepare_ntt(&mut self, max_log: u32) -> Result<()> {
        if max_log == 0 || max_log > NTT_LOG_MAX {
            return Err(CudaError::Limit {
                what: "NTT domain log2",
                value: max_log as usize,
                limit: NTT_LOG_MAX as usize,
            });
        }
        if let Some(t) = &self.ntt {
            if max_log <= t.max_log {
                return Ok(());
            }
            return Err(CudaError::Limit {
                what: "NTT domain log2 (tables prepared)",
                value: max_log as usize,
                limit: t.max_log as usize,
            });
        }
        self.dev.bind()?;
        let arena = self.arena.as_mut().ok_or(CudaError::NoArena)?;
        self.ntt = Some(NttTables::prepare(&self.dev, arena, max_log)?);
        Ok(())
    }

    fn tables(&self, log_n: u32) -> Result<&NttTables> {
        let t = self.ntt.as_ref().ok_or(CudaError::NotPrepared("NTT tables (Gpu::prepare_ntt)"))?;
        if log_n > t.max_log {
            return Err(CudaError::Limit {
                what: "NTT domain log2",
                value: log_n as usize,
                limit: t.max_log as usize,
            });
        }
        Ok(t)
    }

    /// Domain size check: `len` must be a power of two within the prepared tables.
    pub(crate) fn domain_log(&self, what: &'static str, len: usize) -> Result<u32> {
        if !len.is_power_of_two() {
            return Err(CudaError::Length { what, got: len, want: len.max(1).next_power_of_two() });
        }
        let log = len.trailing_zeros();
        self.tables(log)?;
        Ok(log)
    }

    /// Enqueues an unscaled NTT (root `w` or `w^-1` of order `2^log_n`) on device data,
    /// natural order in and out.
    fn ntt_enqueue(&self, a: DevPtr, log_n: u32, inverse: bool) -> Result<()> {
        self.tables(log_n)?;
        if log_n == 0 {
            return Ok(());
        }
        let n = 1usize << log_n;
        if self.ntt_kernels == NttKernels::Stages {
            return self.ntt_stages_enqueue(a, log_n, inverse);
        }
        self.dev.k.fr_bitrev.launch(Dims::per_item(n, THREADS), a, log_n)?;
        self.passes_enqueue(a, log_n, inverse, false)
    }

    /// Enqueues the pass kernel's transform: DIT (`dif` false) from bit-reversed to natural
    /// order, or DIF from natural to bit-reversed order.
    fn passes_enqueue(&self, a: DevPtr, log_n: u32, inverse: bool, dif: bool) -> Result<()> {
        let t = self.tables(log_n)?;
        if log_n == 0 {
            return Ok(());
        }
        let (k, inv, tw, tw_log) = (&self.dev.k, inverse as u32, t.twiddles(), t.max_log);
        let mut plan = passes(log_n, BLOCK_LOG, PASS_STAGES_MAX);
        if dif {
            plan.reverse();
        }
        let radix_log = self.ntt_kernels.radix_log(log_n);
        for p in plan {
            let blocks = 1u32 << (log_n - p.block_log);
            // Radix 2^r runs on 2^(block_log - r) threads, so at most radix 2^block_log.
            let r = radix_log.min(p.block_log);
            let kernel = match (r, self.ntt_twiddles_ahead) {
                (3, false) => &k.fr_ntt_pass8,
                (3, true) => &k.fr_ntt_pass8_ahead,
                (2, _) => &k.fr_ntt_pass4,
                _ => &k.fr_ntt_pass,
            };
            kernel.launch(
                Dims::blocks(blocks, 1 << (p.block_log - r)),
                a,
                tw,
                p.s0,
                p.k,
                p.block_log,
                tw_log,
                inv,
                dif as u32,
            )?;
        }
        Ok(())
    }

    /// The kernels before the pass kernel ([`NttKernels::Stages`]), natural order in and out.
    fn ntt_stages_enqueue(&self, a: DevPtr, log_n: u32, inverse: bool) -> Result<()> {
        let t = self.tables(log_n)?;
        let n = 1usize << log_n;
        let (k, inv, tw, tw_log) = (&self.dev.k, inverse as u32, t.twiddles(), t.max_log);
        k.fr_bitrev.launch(Dims::per_item(n, THREADS), a, log_n)?;
        let sh = log_n.min(SHARED_LOG);
        k.fr_ntt_shared.launch(Dims::blocks((n >> sh) as u32, 1 << (sh - 1)), a, tw, sh, tw_log, inv)?;
        let mut s = sh;
        while s < log_n {
            if s + 1 < log_n {
                k.fr_ntt_stage2.launch(Dims::per_item(n / 4, THREADS), a, tw, log_n, s, tw_log, inv)?;
                s += 2;
            } else {
                k.fr_ntt_stage.launch(Dims::per_item(n / 2, THREADS), a, tw, log_n, s, tw_log, inv)?;
                s += 1;
            }
        }
        Ok(())
    }

    /// Enqueues `a[i] *= (1/n) * (coset ? g^(+-i) : 1)`: `coset` is `None` for no coset,
    /// `Some(inverse)` for the powers of `g` or of `g^-1`.
    fn scale_enqueue(&self, a: DevPtr, log_n: u32, coset: Option<bool>) -> Result<()> {
        let t = self.tables(log_n)?;
        let n = 1usize << log_n;
        let (lo, hi, split) = match coset {
            None => (DevPtr::NULL, DevPtr::NULL, t.coset_powers(false).2),
            Some(inverse) => t.coset_powers(inverse),
        };
        self.dev.k.fr_scale_powers.launch(Dims::per_item(n, THREADS), a, n, t.n_inv(log_n), lo, hi, split)
    }

    /// In-place NTT of `a` (a power-of-two length within the prepared tables): forward is
    /// the CPU's `Domain::fft`, inverse its `Domain::ifft` (scaled by `1/n`).
    pub fn ntt(&mut self, a: &mut [Scalar], inverse: bool) -> Result<()> {
        let log_n = self.domain_log("NTT input", a.len())?;
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let d = b.take("NTT buffer", std::mem::size_of_val(a))?;
        // SAFETY: `d` is a scratch span of exactly `a`'s size, used by this call alone.
        unsafe { self.dev.upload_async(d.ptr, a) }?;
        self.ntt_enqueue(d.dev_ptr(), log_n, inverse)?;
        if inverse {
            self.scale_enqueue(d.dev_ptr(), log_n, None)?;
        }
        // SAFETY: the span holds `a.len()` scalars the kernels wrote fully reduced (any
        // 4 x u64 is a valid `Scalar` bit pattern; reduced ones are also valid values).
        unsafe { self.dev.download(a, d.ptr) }?;
        self.arena_mut()?.note_scratch(&b);
        Ok(())
    }

    /// The Groth16 quotient's coefficients: with `a, b, c` the evaluations of A, B, C
    /// on the domain (equal power-of-two lengths), writes into `h` the coefficients of
    /// `(A*B - C) / Z` computed on the coset, exactly as the CPU prover:
    /// `ifft; coset_fft` for each of a, b, c, then `a*b - c`, `divide_by_z_on_coset`,
    /// `icoset_fft`. For a satisfied circuit `h[n-1]` is zero.
    pub fn h_pipeline(&mut self, a: &[Scalar], b: &[Scalar], c: &[Scalar], h: &mut [Scalar]) -> Result<()> {
        let n = a.len();
        if h.len() != n {
            return Err(CudaError::Length { what: "h pipeline: h", got: h.len(), want: n });
        }
        let log_n = self.domain_log("h pipeline: a", n)?;
        let (spans, bump) = match self.h_enqueue(a, b, c, log_n, false) {
            Ok(v) => v,
            Err(e) => {
                // Copies may be queued from a, b, c: wait for them before handing them back.
                let _ = self.dev.sync_all();
                return Err(e);
            }
        };
        // SAFETY: the span holds `n` reduced scalars written by the kernels.
        unsafe { self.dev.download(h, spans[0].ptr) }?;
        self.arena_mut()?.note_scratch(&bump);
        Ok(())
    }

    /// Uploads a, b, c and enqueues the h pipeline; h ends in the first span (as canonical
    /// bytes when `canonical`).
    fn h_enqueue(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        log_n: u32,
        canonical: bool,
    ) -> Result<([DevSpan; 3], Bump)> {
        let n = a.len();
        for (what, len) in [("h pipeline: b", b.len()), ("h pipeline: c", c.len())] {
            if len != n {
                return Err(CudaError::Length { what, got: len, want: n });
            }
        }
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut bump = arena.scratch();
        let spans = h_spans(&mut bump, std::mem::size_of_val(a))?;
        // All three uploads go on the copy stream at once; each vector's transforms wait
        // only for its own copy (events, no host sync), so b and c copy while a computes.
        for (slot, (s, v)) in spans.iter().zip([a, b, c]).enumerate() {
            // SAFETY: each span holds `bytes`; the host slices stay borrowed by the
            // caller until its download synchronizes the compute stream, which waits for
            // every copy event first.
            unsafe { self.dev.upload_overlapped(slot, s.ptr, v) }?;
        }
        self.h_transforms(&spans, log_n, true, canonical)?;
        Ok((spans, bump))
    }

    /// Enqueues the h pipeline over a, b, c in `spans` (each `2^log_n` scalars); with
    /// `uploaded`, each vector's transforms first wait for its upload (event slot 0, 1, 2).
    /// h ends in the first span, as canonical bytes (MSM scalars) when `canonical`.
    pub(crate) fn h_transforms(
        &self,
        spans: &[DevSpan; 3],
        log_n: u32,
        uploaded: bool,
        canonical: bool,
    ) -> Result<()> {
        if self.ntt_kernels == NttKernels::Stages {
            self.h_transforms_stages(spans, log_n, uploaded)?;
            if canonical {
                let (n, h) = (1usize << log_n, spans[0].dev_ptr());
                // In place: each thread reads its element before writing it.
                self.dev.k.fr_to_canonical.launch(Dims::per_item(n, THREADS), h, h, n)?;
            }
            return Ok(());
        }
        let n = 1usize << log_n;
        let t = self.tables(log_n)?;
        let (k, n_inv) = (&self.dev.k, t.n_inv(log_n));
        for (slot, s) in spans.iter().enumerate() {
            if uploaded {
                self.dev.wait_upload(slot)?;
            }
            // ifft as DIF (coefficients in bit-reversed order), its 1/n and coset_fft's
            // distribute_powers(g) at the bit-reversed indices, coset_fft as DIT from there.
            let d = s.dev_ptr();
            self.passes_enqueue(d, log_n, true, true)?;
            let (lo, hi, split) = t.coset_powers(false);
            k.fr_scale_powers_bitrev.launch(Dims::per_item(n, THREADS), d, log_n, n_inv, lo, hi, split)?;
            self.passes_enqueue(d, log_n, false, false)?;
        }
        let [d_a, d_b, d_c] = spans.map(|s| s.dev_ptr());
        // (a*b - c)/z into b's span, icoset_fft's DIF there, and the last step back into
        // a's span in natural order: ifft's 1/n, distribute_powers(g^-1), canonical bytes.
        k.fr_ab_minus_c_div_z_to.launch(Dims::per_item(n, THREADS), d_b, d_a, d_b, d_c, n, t.z_inv(log_n))?;
        self.passes_enqueue(d_b, log_n, true, true)?;
        let (lo, hi, split) = t.coset_powers(true);
        k.fr_unbitrev_scale_canonical.launch(
            Dims::per_item(n, THREADS),
            d_b,
            d_a,
            log_n,
            n_inv,
            lo,
            hi,
            split,
            canonical as u32,
        )
    }

    /// [`Gpu::h_transforms`] with the kernels before the pass kernel; h is left in
    /// Montgomery form.
    fn h_transforms_stages(&self, spans: &[DevSpan; 3], log_n: u32, uploaded: bool) -> Result<()> {
        let n = 1usize << log_n;
        for (slot, s) in spans.iter().enumerate() {
            if uploaded {
                self.dev.wait_upload(slot)?;
            }
            self.ntt_enqueue(s.dev_ptr(), log_n, true)?;
            // ifft's 1/n and coset_fft's distribute_powers(g) in one pass.
            self.scale_enqueue(s.dev_ptr(), log_n, Some(false))?;
            self.ntt_enqueue(s.dev_ptr(), log_n, false)?;
        }
        let [d_a, d_b, d_c] = spans.map(|s| s.dev_ptr());
        let z_inv = self.tables(log_n)?.z_inv(log_n);
        self.dev.k.fr_ab_minus_c_div_z.launch(Dims::per_item(n, THREADS), d_a, d_b, d_c, n, z_inv)?;
        self.ntt_enqueue(d_a, log_n, true)?;
        // icoset_fft: ifft's 1/n and distribute_powers(g^-1) in one pass.
        self.scale_enqueue(d_a, log_n, Some(true))
    }

    /// [`Gpu::h_pipeline`] with `h`'s first `n - 1` coefficients written as canonical
    /// little-endian bytes (the h MSM's scalars, as the CPU's `Scalar::to_bytes_le`):
    /// [`Gpu::h_quotient_resident`], then h read back.
    pub fn h_pipeline_bytes(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        h: &mut [[u8; 32]],
    ) -> Result<()> {
        let n = a.len();
        if h.len() + 1 != n {
            return Err(CudaError::Length {
                what: "h pipeline: h bytes",
                got: h.len(),
                want: n.saturating_sub(1),
            });
        }
        let d = self.h_quotient_resident(a, b, c)?;
        // SAFETY: `d` holds `n - 1 = h.len()` canonical scalars (32 bytes each), written by
        // the kernels `h_quotient_resident` waited for.
        unsafe { self.dev.download(h, d.ptr.addr()) }
    }

    /// The h pipeline with h left on the device for [`Gpu::msm_h_resident`]: h's first
    /// `n - 1` coefficients as canonical bytes, written in place into the pipeline's first
    /// span. That span starts the scratch, which is where the MSM's layout (laid out
    /// afresh from the scratch's start, over the pipeline's dead spans) keeps its scalars,
    /// so nothing is copied back or forth. Waits for the device: when it returns, a, b and
    /// c are no longer read, and [`Gpu::last_device_time`] is the pipeline's device time.
    pub fn h_quotient_resident(&mut self, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Result<DeviceH> {
        let n = a.len();
        let log_n = self.domain_log("h pipeline: a", n)?;
        self.dev.bind()?;
        self.dev.timer_start()?;
        // Once a copy is queued, every way out waits for both streams: a, b, c must not go
        // back to their pool while a copy reads them.
        let done =
            self.h_enqueue(a, b, c, log_n, true).and_then(|(spans, bump)| self.h_finish(&spans[0], n, bump));
        if done.is_err() {
            let _ = self.dev.sync_all();
        }
        done
    }

    /// After the h pipeline (h as canonical bytes in its first span): the device timer
    /// stopped, waited for and kept; h stays on the device.
    pub(crate) fn h_finish(&mut self, h_span: &DevSpan, n: usize, bump: Bump) -> Result<DeviceH> {
        let h = h_span.dev_ptr();
        self.dev.timer_stop()?;
        // The stop follows the last kernel, which waited for every upload: once it has
        // passed, the device reads none of a, b, c (they may go back to their pool).
        self.last_device.set(self.dev.timer_elapsed()?);
        let arena = self.arena_mut()?;
        arena.note_scratch(&bump);
        Ok(DeviceH { ptr: h, len: n - 1, arena_id: arena.id(), epoch: arena.scratch_epoch() })
    }

    /// The h MSM over h left on the device by [`Gpu::h_quotient_resident`]: `sum h[i] *
    /// bases[i]` (as the CPU prover: `msm_g1(params.h(), h_bytes)`), with `bases` resident.
    /// An error, never a wrong sum, when another operation has used the scratch since.
    pub fn msm_h_resident(&mut self, h: DeviceH, bases: &G1Bases) -> Result<G1Projective> {
        self.msm_h_over(h, BaseSet::Resident(bases))
    }

    /// [`Gpu::msm_h_resident`] over resident or streamed bases: streamed, the chunks'
    /// buffers and layouts go above h, which stays where it is.
    pub fn msm_h_over(&mut self, h: DeviceH, bases: BaseSet<'_, blst_p1_affine>) -> Result<G1Projective> {
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if h.arena_id != arena.id() {
            return Err(CudaError::ForeignHandle("h on the device"));
        }
        if h.epoch != arena.scratch_epoch() {
            return Err(CudaError::StaleScratch("h on the device"));
        }
        let scalars = Scalars::Device { ptr: h.ptr, n: h.len };
        // h's coefficients are dense: the dense kernels ([`Gpu::set_msm_dense_kernels`]), and
        // no 0/1 pass (none of them is one but by chance).
        let parts =
            self.with_dense_run(DenseRun::ALL, |g| g.msm_over::<_, blst_p1>(Curve::G1, bases, scalars))?;
        Ok(combine_parts(&parts))
    }

    /// Device time of one forward NTT of `2^log_n` scalars already on the device, in
    /// milliseconds (median of `reps`, host clock around the enqueue and a stream sync), on
    /// the powers of 7.
    pub fn bench_ntt_ms(&mut self, log_n: u32, reps: usize) -> Result<f64> {
        self.tables(log_n)?;
        self.dev.bind()?;
        let n = 1usize << log_n;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let d = b.take("NTT bench buffer", n * FR_BYTES)?;
        self.fill_bench(&d, n, 7)?;
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = std::time::Instant::now();
            self.ntt_enqueue(d.dev_ptr(), log_n, false)?;
            self.dev.sync()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        self.arena_mut()?.note_scratch(&b);
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// Fills the first `n` scalars of `span` with the powers of `base`, repeating every
    /// 2^16 (bench inputs: the values do not change a transform's time; the host makes
    /// 2^16 of them, the device copies them on).
    fn fill_bench(&self, span: &DevSpan, n: usize, base: u64) -> Result<()> {
        let seed: Vec<[u64; 4]> = powers(Scalar::from(base), n.min(1 << 16));
        // SAFETY: the span holds `n >= seed.len()` scalars.
        unsafe { self.dev.upload(span.ptr, &seed) }?;
        let mut have = seed.len();
        while have < n {
            let len = have.min(n - have);
            // SAFETY: [0, have) and [have, have + len) are disjoint and inside the span.
            unsafe { self.dev.copy_d2d(span.ptr + (have * FR_BYTES) as u64, span.ptr, len * FR_BYTES) }?;
            have += len;
        }
        Ok(())
    }

    /// Device time of the h pipeline's transforms on `2^log_n` (a, b, c already on the
    /// device: seven transforms, the scalings, `a*b - c`, h to canonical bytes), in
    /// milliseconds (median of `reps`, host clock around the enqueue and a stream sync).
    /// Timing only: the inputs are overwritten in place from one rep to the next.
    pub fn bench_h_ms(&mut self, log_n: u32, reps: usize) -> Result<f64> {
        self.tables(log_n)?;
        self.dev.bind()?;
        let n = 1usize << log_n;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let spans = h_spans(&mut b, n * FR_BYTES)?;
        for (s, base) in spans.iter().zip([3u64, 5, 7]) {
            self.fill_bench(s, n, base)?;
        }
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = std::time::Instant::now();
            self.h_transforms(&spans, log_n, false, true)?;
            self.dev.sync()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        self.arena_mut()?.note_scratch(&b);
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
