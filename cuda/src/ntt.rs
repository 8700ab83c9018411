//! NTTs and the h pipeline on the device, with the CPU engine's domain conventions
//! (engine/src/groth16/domain.rs, bellperson 0.27): omega is `Scalar::ROOT_OF_UNITY`
//! squared down to the domain, cosets use `Scalar::MULTIPLICATIVE_GENERATOR`, inverse
//! transforms scale by `1/n`. Outputs equal the CPU's bit for bit (tests/gpu.rs).
//!
//! Tables, made once by [`Gpu::prepare_ntt`] in the arena's persistent part, for domains up
//! to `2^max_log`: the twiddles `w_max^k` (`2^(max_log-1)` scalars; smaller domains stride
//! through them, inverse twiddles are read as `-w^(N/2-k)`), the coset powers `g^i` and
//! `g^-i` split as `lo[i mod 2^s] * hi[i >> s]` (2 x 2^(max_log/2) scalars each), and per
//! domain size the constants `1/n` and `1/(g^n - 1)`.

use blst::{blst_fr, blst_p1};
use blstrs::{G1Projective, Scalar};
use ff::{Field, PrimeField};

use crate::arena::{Bump, DevSpan, SPAN_ALIGN_BYTES};
use crate::device::Arg;
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::msm::{combine, Curve, G1Bases, Scalars};

/// Largest supported domain, log2: twiddles for 2^28 take 4 GiB of device memory, and the
/// kernels index with 32-bit in-block offsets and 64-bit global ones.
pub const NTT_LOG_MAX: u32 = 28;
/// Stages done in shared memory by one block (2^10 scalars = 32 KiB).
const SHARED_LOG: u32 = 10;
const THREADS: u32 = 256;
const FR_BYTES: usize = 32;
/// Constants per domain size in the table: `1/n`, `1/(g^n - 1)`.
const CONSTS_PER_LOG: usize = 2;

pub(crate) struct NttTables {
    pub max_log: u32,
    tw: DevSpan,
    coset: [DevSpan; 2],
    coset_inv: [DevSpan; 2],
    coset_split: u32,
    consts: DevSpan,
}

fn to_words(s: &Scalar) -> [u64; 4] {
    blst_fr::from(*s).l
}

/// `w^i` for `i < count`.
fn powers(w: Scalar, count: usize) -> Vec<[u64; 4]> {
    let mut p = Scalar::ONE;
    (0..count)
        .map(|_| {
            let v = to_words(&p);
            p *= w;
            v
        })
        .collect()
}

/// The root of unity of order `2^log`, exactly as the CPU domain derives it.
pub fn omega(log: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log..Scalar::S {
        w = w.square();
    }
    w
}

/// Scalars in each persistent table for domains up to `2^max_log` (`max_log >= 1`):
/// twiddles, the four coset power tables (g lo/hi, g^-1 lo/hi), the per-size constants.
pub(crate) fn table_scalars(max_log: u32) -> [usize; 6] {
    let coset_split = max_log.div_ceil(2);
    let (lo_n, hi_n) = (1usize << coset_split, 1usize << (max_log - coset_split));
    [1usize << (max_log - 1), lo_n, hi_n, lo_n, hi_n, (max_log as usize + 1) * CONSTS_PER_LOG]
}

/// Persistent device bytes of [`Gpu::prepare_ntt`]`(max_log)`.
pub fn ntt_tables_bytes(max_log: u32) -> usize {
    table_scalars(max_log.max(1)).iter().map(|c| (c * FR_BYTES).next_multiple_of(SPAN_ALIGN_BYTES)).sum()
}

/// Scratch bytes of [`Gpu::h_pipeline`] on a domain of `2^log_n` (a, b, c on the device).
pub fn h_scratch_bytes(log_n: u32) -> usize {
    let mut b = Bump::dry();
    h_spans(&mut b, (1usize << log_n) * FR_BYTES).expect("a dry layout has room");
    b.used_bytes()
}

/// The h pipeline's three vectors, each `bytes` long.
fn h_spans(b: &mut Bump, bytes: usize) -> Result<[DevSpan; 3]> {
    Ok([b.take("h pipeline: a", bytes)?, b.take("h pipeline: b", bytes)?, b.take("h pipeline: c", bytes)?])
}

fn blocks(n: usize) -> u32 {
    n.div_ceil(THREADS as usize) as u32
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
        let w = omega(max_log);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().expect("the generator is non-zero");
        let tw_count = 1usize << (max_log - 1);
        let tw_split = (max_log - 1).div_ceil(2);
        let tw_lo = powers(w, 1 << tw_split);
        let tw_hi = powers(w.pow_vartime([1u64 << tw_split]), 1 << (max_log - 1 - tw_split));
        let coset_split = max_log.div_ceil(2);
        let (lo_n, hi_n) = (1usize << coset_split, 1usize << (max_log - coset_split));
        let tables = [
            powers(g, lo_n),
            powers(g.pow_vartime([lo_n as u64]), hi_n),
            powers(g_inv, lo_n),
            powers(g_inv.pow_vartime([lo_n as u64]), hi_n),
        ];
        let mut consts = Vec::with_capacity((max_log as usize + 1) * CONSTS_PER_LOG);
        for log in 0..=max_log {
            let n = 1u64 << log;
            let n_inv = Scalar::from(n).invert().expect("n < r");
            let z_inv = (g.pow_vartime([n]) - Scalar::ONE).invert().expect("g^n != 1 for the generator");
            consts.push(to_words(&n_inv));
            consts.push(to_words(&z_inv));
        }

        let sizes =
            [tw_count, tables[0].len(), tables[1].len(), tables[2].len(), tables[3].len(), consts.len()];
        assert_eq!(sizes, table_scalars(max_log), "the memory plan's NTT table sizes match what is carved");
        let arena = self.arena_mut()?;
        let tw = arena.carve_persistent("NTT twiddles", tw_count * FR_BYTES)?;
        let mut spans = [tw; 4];
        for (s, t) in spans.iter_mut().zip(&tables) {
            *s = arena.carve_persistent("NTT coset powers", t.len() * FR_BYTES)?;
        }
        let consts_span = arena.carve_persistent("NTT constants", consts.len() * FR_BYTES)?;
        let mut b = arena.scratch();
        let lo = b.take("twiddle seeds (lo)", tw_lo.len() * FR_BYTES)?;
        let hi = b.take("twiddle seeds (hi)", tw_hi.len() * FR_BYTES)?;
        arena.note_scratch(&b);
        // SAFETY (all four uploads): each destination span was carved above with exactly
        // the source's byte length; `upload` waits for the copy.
        unsafe {
            for (s, t) in spans.iter().zip(&tables) {
                self.dev.upload(s.ptr, t)?;
            }
            self.dev.upload(consts_span.ptr, &consts)?;
            self.dev.upload(lo.ptr, &tw_lo)?;
            self.dev.upload(hi.ptr, &tw_hi)?;
        }
        self.dev.launch(
            self.dev.k.fr_powers_from_split,
            (blocks(tw_count), 1),
            THREADS,
            0,
            &[
                Arg::U64(tw.ptr),
                Arg::U64(tw_count as u64),
                Arg::U64(lo.ptr),
                Arg::U64(hi.ptr),
                Arg::U32(tw_split),
            ],
        )?;
        self.dev.sync()?;
        self.ntt = Some(NttTables {
            max_log,
            tw,
            coset: [spans[0], spans[1]],
            coset_inv: [spans[2], spans[3]],
            coset_split,
            consts: consts_span,
        });
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
    fn domain_log(&self, what: &'static str, len: usize) -> Result<u32> {
        if !len.is_power_of_two() {
            return Err(CudaError::Length { what, got: len, want: len.max(1).next_power_of_two() });
        }
        let log = len.trailing_zeros();
        self.tables(log)?;
        Ok(log)
    }

    /// Enqueues an unscaled NTT (root `w` or `w^-1` of order `2^log_n`) on device data.
    fn ntt_enqueue(&self, a: u64, log_n: u32, inverse: bool) -> Result<()> {
        let t = self.tables(log_n)?;
        if log_n == 0 {
            return Ok(());
        }
        let n = 1usize << log_n;
        let (k, inv, tw) = (&self.dev.k, Arg::U32(inverse as u32), Arg::U64(t.tw.ptr));
        let tw_log = Arg::U32(t.max_log);
        self.dev.launch(k.fr_bitrev, (blocks(n), 1), THREADS, 0, &[Arg::U64(a), Arg::U32(log_n)])?;
        let sh = log_n.min(SHARED_LOG);
        self.dev.launch(
            k.fr_ntt_shared,
            ((n >> sh) as u32, 1),
            1 << (sh - 1),
            0,
            &[Arg::U64(a), tw, Arg::U32(sh), tw_log, inv],
        )?;
        let mut s = sh;
        while s < log_n {
            let args = [Arg::U64(a), tw, Arg::U32(log_n), Arg::U32(s), tw_log, inv];
            if s + 1 < log_n {
                self.dev.launch(k.fr_ntt_stage2, (blocks(n / 4), 1), THREADS, 0, &args)?;
                s += 2;
            } else {
                self.dev.launch(k.fr_ntt_stage, (blocks(n / 2), 1), THREADS, 0, &args)?;
                s += 1;
            }
        }
        Ok(())
    }

    /// Enqueues `a[i] *= consts[log_n][which] * (coset ? g^(+-i) : 1)`.
    fn scale_enqueue(&self, a: u64, log_n: u32, which: usize, coset: Option<bool>) -> Result<()> {
        let t = self.tables(log_n)?;
        let n = 1usize << log_n;
        let c = t.consts.ptr + ((log_n as usize * CONSTS_PER_LOG + which) * FR_BYTES) as u64;
        let (lo, hi) = match coset {
            None => (0, 0),
            Some(false) => (t.coset[0].ptr, t.coset[1].ptr),
            Some(true) => (t.coset_inv[0].ptr, t.coset_inv[1].ptr),
        };
        self.dev.launch(
            self.dev.k.fr_scale_powers,
            (blocks(n), 1),
            THREADS,
            0,
            &[
                Arg::U64(a),
                Arg::U64(n as u64),
                Arg::U64(c),
                Arg::U64(lo),
                Arg::U64(hi),
                Arg::U32(t.coset_split),
            ],
        )
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
        self.ntt_enqueue(d.ptr, log_n, inverse)?;
        if inverse {
            self.scale_enqueue(d.ptr, log_n, 0, None)?;
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
        let (spans, bump) = self.h_enqueue(a, b, c, log_n)?;
        // SAFETY: the span holds `n` reduced scalars written by the kernels.
        unsafe { self.dev.download(h, spans[0].ptr) }?;
        self.arena_mut()?.note_scratch(&bump);
        Ok(())
    }

    /// Uploads a, b, c and enqueues the h pipeline; h ends in the first span.
    fn h_enqueue(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        log_n: u32,
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
        for (slot, s) in spans.iter().enumerate() {
            self.dev.wait_upload(slot)?;
            self.ntt_enqueue(s.ptr, log_n, true)?;
            // ifft's 1/n and coset_fft's distribute_powers(g) in one pass.
            self.scale_enqueue(s.ptr, log_n, 0, Some(false))?;
            self.ntt_enqueue(s.ptr, log_n, false)?;
        }
        let t = self.tables(log_n)?;
        let z_inv = t.consts.ptr + ((log_n as usize * CONSTS_PER_LOG + 1) * FR_BYTES) as u64;
        self.dev.launch(
            self.dev.k.fr_ab_minus_c_div_z,
            (blocks(n), 1),
            THREADS,
            0,
            &[
                Arg::U64(spans[0].ptr),
                Arg::U64(spans[1].ptr),
                Arg::U64(spans[2].ptr),
                Arg::U64(n as u64),
                Arg::U64(z_inv),
            ],
        )?;
        self.ntt_enqueue(spans[0].ptr, log_n, true)?;
        // icoset_fft: ifft's 1/n and distribute_powers(g^-1) in one pass.
        self.scale_enqueue(spans[0].ptr, log_n, 0, Some(true))?;
        Ok((spans, bump))
    }

    /// [`Gpu::h_pipeline`] with `h`'s first `n - 1` coefficients written as canonical
    /// little-endian bytes (the h MSM's scalars, as the CPU prover's `scalars_to_bytes`),
    /// converted on the device.
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
        let log_n = self.domain_log("h pipeline: a", n)?;
        let (spans, bump) = self.h_enqueue(a, b, c, log_n)?;
        self.dev.launch(
            self.dev.k.fr_to_canonical,
            (blocks(n), 1),
            THREADS,
            0,
            &[Arg::U64(spans[0].ptr), Arg::U64(spans[1].ptr), Arg::U64(n as u64)],
        )?;
        // SAFETY: spans[1] holds `n >= h.len()` canonical scalars (32 bytes each).
        unsafe { self.dev.download(h, spans[1].ptr) }?;
        self.arena_mut()?.note_scratch(&bump);
        Ok(())
    }

    /// The h pipeline and the h MSM without h leaving the device: `sum h[i] * bases[i]`
    /// over h's first `n - 1` coefficients (as the CPU prover: `msm_g1(params.h(),
    /// h_bytes)`), with `bases` resident. h's canonical bytes are written in place into the
    /// pipeline's first span, which is where the MSM's layout (laid out afresh from the
    /// scratch's start, over the pipeline's dead spans) keeps its scalars, so nothing is
    /// copied back or forth. One download (the window sums) per call.
    pub fn h_msm_resident(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        bases: &G1Bases,
    ) -> Result<G1Projective> {
        let n = a.len();
        let log_n = self.domain_log("h pipeline: a", n)?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if bases.arena_id != arena.id() {
            return Err(CudaError::ForeignHandle("h MSM bases"));
        }
        if bases.len + 1 < n {
            return Err(CudaError::Length { what: "h MSM: bases", got: bases.len, want: n - 1 });
        }
        self.dev.bind()?;
        self.dev.timer_start()?;
        let (spans, bump) = self.h_enqueue(a, b, c, log_n)?;
        // In place: each thread reads its element before writing it.
        self.dev.launch(
            self.dev.k.fr_to_canonical,
            (blocks(n), 1),
            THREADS,
            0,
            &[Arg::U64(spans[0].ptr), Arg::U64(spans[0].ptr), Arg::U64(n as u64)],
        )?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut msm_bump = arena.scratch();
        let pk = self.point_kernels(Curve::G1);
        let r = self.msm_run::<blst_p1>(
            &mut msm_bump,
            &pk,
            bases.span.ptr,
            Scalars::Device { ptr: spans[0].ptr, n: n - 1 },
        );
        let arena = self.arena_mut()?;
        arena.note_scratch(&bump);
        arena.note_scratch(&msm_bump);
        let (sums, c) = r?;
        Ok(combine(&sums, c))
    }

    /// Device time of one forward NTT of `2^log_n` scalars already on the device, in
    /// milliseconds (median of `reps`, host clock around the enqueue and a stream sync). Data is `seed`-derived.
    pub fn bench_ntt_ms(&mut self, log_n: u32, reps: usize) -> Result<f64> {
        self.tables(log_n)?;
        self.dev.bind()?;
        let n = 1usize << log_n;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let d = b.take("NTT bench buffer", n * FR_BYTES)?;
        let host: Vec<[u64; 4]> = powers(Scalar::from(7u64), n);
        // SAFETY: `d` holds `n` scalars.
        unsafe { self.dev.upload(d.ptr, &host) }?;
        let mut times = Vec::with_capacity(reps.max(1));
        for _ in 0..reps.max(1) {
            let t = std::time::Instant::now();
            self.ntt_enqueue(d.ptr, log_n, false)?;
            self.dev.sync()?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        self.arena_mut()?.note_scratch(&b);
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
