//! G1 multi-scalar multiplication on the device (Pippenger, buckets in xyzz coordinates),
//! for blst's layouts: bases `blst_p1_affine` (Montgomery Fp, infinity as (0, 0)) and
//! scalars as canonical 32-byte little-endian strings, the engine's split vectors. The
//! result equals blst's `MultiPoint::mult(.., 255)` as a group element (tests/msm.rs).
//!
//! Buckets are sized per call from `n` (window bits `c`, see [`MsmPlan`]); a bucket with
//! more than `piece_len` points is summed as several pieces, so skewed scalars (many 1s,
//! as boolean-heavy witnesses have) do not serialize on one thread.

use blst::{blst_p1, blst_p1_affine};
use blstrs::G1Projective;
use group::Group;

use crate::arena::{Bump, DevSpan};
use crate::device::Arg;
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;

/// Bytes of one scalar.
pub const SCALAR_BYTES: usize = 32;
/// Bits of a scalar read (r < 2^255), as blst.
const SCALAR_BITS: u32 = 255;
const AFFINE_BYTES: usize = std::mem::size_of::<blst_p1_affine>();
/// A bucket: xyzz, four Fp.
const XYZZ_BYTES: usize = 4 * 48;
const JACOBIAN_BYTES: usize = std::mem::size_of::<blst_p1>();
/// Widest window: the per-tile histogram is `2^c` u32 in shared memory (32 KiB at 13).
const WINDOW_BITS_MAX: u32 = 13;
/// Points one block histograms and scatters (one global atomic per (tile, digit)).
const TILE_POINTS: usize = 1 << 16;
/// Most points per call: bucket offsets are u32 and count `n * windows` entries.
pub const MSM_POINTS_MAX: usize = 1 << 27;
const THREADS: u32 = 256;

const _: () = assert!(AFFINE_BYTES == 96 && JACOBIAN_BYTES == 144);

/// Sizes of one MSM, chosen from `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmPlan {
    pub n: usize,
    /// Window bits.
    pub c: u32,
    pub windows: u32,
    /// `windows * 2^c` buckets.
    pub buckets: usize,
    /// Points one accumulate thread sums at most.
    pub piece_len: u32,
    pub pieces_max: usize,
    /// log2 of buckets per reduction segment.
    pub seg_log: u32,
}

impl MsmPlan {
    pub fn new(n: usize) -> MsmPlan {
        let log_n = n.max(2).next_power_of_two().trailing_zeros();
        // Measured choice pending (BENCHMARKS.md): ~2^(log n - 8) buckets per window keeps
        // the reduction small against n * windows additions.
        let c = log_n.saturating_sub(8).clamp(4, WINDOW_BITS_MAX);
        let windows = SCALAR_BITS.div_ceil(c);
        let buckets = (windows as usize) << c;
        let piece_len = (1u32 << log_n.div_ceil(2)).max(64);
        let entries = n * windows as usize;
        MsmPlan {
            n,
            c,
            windows,
            buckets,
            piece_len,
            pieces_max: buckets + entries.div_ceil(piece_len as usize) + 1,
            seg_log: 5.min(c - 2),
        }
    }

    /// Device scratch bytes of one call (bases not counted).
    pub fn scratch_bytes(&self) -> usize {
        let u32s = 4 * (self.buckets + 1);
        let round = |b: usize| b.next_multiple_of(crate::arena::SPAN_ALIGN_BYTES);
        round(self.n * SCALAR_BYTES)
            + 4 * round(u32s)
            + round(4 * self.n * self.windows as usize)
            + round(8 * self.pieces_max)
            + round(XYZZ_BYTES * self.pieces_max)
            + round(XYZZ_BYTES * self.buckets)
            + round(XYZZ_BYTES * ((self.windows as usize) << (self.c - self.seg_log)))
            + round(JACOBIAN_BYTES * self.windows as usize)
    }
}

/// G1 bases resident in the device arena's persistent part.
#[derive(Debug)]
pub struct G1Bases {
    span: DevSpan,
    len: usize,
    arena_id: u64,
}

impl G1Bases {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Gpu {
    /// Copies `bases` into the arena's persistent part, once (parameters' bases stay on
    /// the device for every proof).
    pub fn upload_g1_bases(&mut self, bases: &[blst_p1_affine]) -> Result<G1Bases> {
        self.dev.bind()?;
        let arena = self.arena_mut()?;
        let span = arena.carve_persistent("G1 bases", std::mem::size_of_val(bases))?;
        let arena_id = arena.id();
        // SAFETY: the span was carved with exactly the bases' size.
        unsafe { self.dev.upload(span.ptr, bases) }?;
        Ok(G1Bases { span, len: bases.len(), arena_id })
    }

    /// `sum scalars[i] * bases[i]` with resident bases (`scalars.len() <= bases.len()`;
    /// the first `scalars.len()` bases are used).
    pub fn msm_g1_resident(
        &mut self,
        bases: &G1Bases,
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G1Projective> {
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if bases.arena_id != arena.id() {
            return Err(CudaError::ForeignHandle("G1Bases"));
        }
        if scalars.len() > bases.len {
            return Err(CudaError::Length {
                what: "msm_g1_resident: scalars",
                got: scalars.len(),
                want: bases.len,
            });
        }
        self.dev.bind()?;
        let mut b = arena.scratch();
        let r = self.msm_g1_run(&mut b, bases.span.ptr, scalars);
        self.arena_mut()?.note_scratch(&b);
        r
    }

    /// `sum scalars[i] * bases[i]`, copying the bases in for this call.
    pub fn msm_g1(
        &mut self,
        bases: &[blst_p1_affine],
        scalars: &[[u8; SCALAR_BYTES]],
    ) -> Result<G1Projective> {
        if bases.len() != scalars.len() {
            return Err(CudaError::Length { what: "msm_g1: scalars", got: scalars.len(), want: bases.len() });
        }
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let span = b.take("msm_g1: bases", std::mem::size_of_val(bases).max(1))?;
        // SAFETY: the span holds the bases' size; `bases` stays borrowed until the
        // MSM's download synchronizes the stream.
        unsafe { self.dev.upload_async(span.ptr, bases) }?;
        let r = self.msm_g1_run(&mut b, span.ptr, scalars);
        self.arena_mut()?.note_scratch(&b);
        r
    }

    fn msm_g1_run(&self, b: &mut Bump, bases: u64, scalars: &[[u8; SCALAR_BYTES]]) -> Result<G1Projective> {
        let n = scalars.len();
        if n == 0 {
            return Ok(G1Projective::identity());
        }
        if n > MSM_POINTS_MAX {
            return Err(CudaError::Limit { what: "MSM points", value: n, limit: MSM_POINTS_MAX });
        }
        let p = MsmPlan::new(n);
        let m = p.buckets;
        let d_scalars = b.take("msm: scalars", n * SCALAR_BYTES)?;
        let counts = b.take("msm: bucket counts", 4 * m)?;
        let offsets = b.take("msm: bucket offsets", 4 * (m + 1))?;
        let cursor = b.take("msm: bucket cursors", 4 * m)?;
        let poffsets = b.take("msm: piece offsets", 4 * (m + 1))?;
        let idx = b.take("msm: sorted point indices", 4 * n * p.windows as usize)?;
        let pieces = b.take("msm: pieces", 8 * p.pieces_max)?;
        let partial = b.take("msm: piece sums", XYZZ_BYTES * p.pieces_max)?;
        let buckets = b.take("msm: buckets", XYZZ_BYTES * m)?;
        let nseg = 1u32 << (p.c - p.seg_log);
        let segs = b.take("msm: window segments", XYZZ_BYTES * (p.windows * nseg) as usize)?;
        let out = b.take("msm: window sums", JACOBIAN_BYTES * p.windows as usize)?;

        let k = &self.dev.k;
        // SAFETY: spans of this call's scratch layout, sized above.
        unsafe {
            self.dev.upload_async(d_scalars.ptr, scalars)?;
            self.dev.zero(counts.ptr, counts.len_bytes)?;
        }
        let tiles = n.div_ceil(TILE_POINTS) as u32;
        let tile = Arg::U32(TILE_POINTS as u32);
        let smem = 4u32 << p.c;
        let (nn, c) = (Arg::U32(n as u32), Arg::U32(p.c));
        self.dev.launch(
            k.msm_hist,
            (tiles, p.windows),
            THREADS,
            smem,
            &[Arg::U64(d_scalars.ptr), nn, c, tile, Arg::U64(counts.ptr)],
        )?;
        self.dev.launch(
            k.msm_scan,
            (1, 1),
            1024,
            0,
            &[
                Arg::U64(counts.ptr),
                Arg::U32(m as u32),
                Arg::U32(p.piece_len),
                Arg::U64(offsets.ptr),
                Arg::U64(cursor.ptr),
                Arg::U64(poffsets.ptr),
            ],
        )?;
        self.dev.launch(
            k.msm_scatter,
            (tiles, p.windows),
            THREADS,
            smem,
            &[Arg::U64(d_scalars.ptr), nn, c, tile, Arg::U64(cursor.ptr), Arg::U64(idx.ptr)],
        )?;
        let grid_m = (m.div_ceil(THREADS as usize) as u32, 1);
        self.dev.launch(
            k.msm_pieces,
            grid_m,
            THREADS,
            0,
            &[
                Arg::U64(counts.ptr),
                Arg::U64(offsets.ptr),
                Arg::U64(poffsets.ptr),
                Arg::U32(m as u32),
                Arg::U32(p.piece_len),
                Arg::U64(pieces.ptr),
            ],
        )?;
        let npieces = poffsets.ptr + 4 * m as u64;
        let grid_p = (p.pieces_max.div_ceil(THREADS as usize) as u32, 1);
        self.dev.launch(
            k.msm_accumulate,
            grid_p,
            THREADS,
            0,
            &[
                Arg::U64(bases),
                Arg::U64(idx.ptr),
                Arg::U64(pieces.ptr),
                Arg::U64(npieces),
                Arg::U64(partial.ptr),
            ],
        )?;
        self.dev.launch(
            k.msm_buckets,
            grid_m,
            THREADS,
            0,
            &[Arg::U64(partial.ptr), Arg::U64(poffsets.ptr), Arg::U32(m as u32), Arg::U64(buckets.ptr)],
        )?;
        let segs_n = (p.windows * nseg) as usize;
        self.dev.launch(
            k.msm_window_segments,
            (segs_n.div_ceil(64) as u32, 1),
            64,
            0,
            &[Arg::U64(buckets.ptr), c, Arg::U32(p.windows), Arg::U32(p.seg_log), Arg::U64(segs.ptr)],
        )?;
        self.dev.launch(
            k.msm_window_sums,
            (1, 1),
            p.windows.next_multiple_of(32),
            0,
            &[Arg::U64(segs.ptr), Arg::U32(nseg), Arg::U32(p.windows), Arg::U64(out.ptr)],
        )?;
        let mut sums = vec![blst_p1::default(); p.windows as usize];
        // SAFETY: `out` holds `windows` blst_p1 written by msm_window_sums (reduced Fp).
        unsafe { self.dev.download(&mut sums, out.ptr) }?;
        let mut acc = G1Projective::identity();
        for w in sums.iter().rev() {
            for _ in 0..p.c {
                acc = acc.double();
            }
            let mut pt = G1Projective::identity();
            *pt.as_mut() = *w;
            acc += pt;
        }
        Ok(acc)
    }
}
