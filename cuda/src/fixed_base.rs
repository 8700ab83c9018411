//! Fixed-base products on the GPU: the points of a development parameters file
//! ([`arenaprove_engine::groth16::write_parameters_from_matrices_with`]), `s * g` for
//! hundreds of millions of scalars `s` and the two generators, which the CPU's
//! batch-affine method makes at ~0.9 M points/s on 16 cores (a 32 GiB PoRep's 47 GB file:
//! ~8 minutes).
//!
//! The kernels (`kernels/fixed_base.cu`) take the window table the CPU generator built
//! ([`FixedBaseTables`]: `d * 2^(w j) * g`, affine), resident in the device arena, and make
//! one point per thread: a mixed addition per non-zero digit in xyzz coordinates, then one
//! Fermat inversion back to affine. The exponent `p - 2` is derived here from the field
//! ([`p_minus_2_words`], unit-tested against blstrs' inversion), not written out.

use std::time::Duration;

use arenaprove_engine::groth16::{FixedBaseProducts, FixedBaseTables, Groth16Error, WindowTable};
use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{Fp, Scalar};
use ff::Field;

use crate::arena::{DevSpan, SPAN_ALIGN_BYTES};
use crate::backend::backend_err;
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::Dims;
use crate::msm::Curve;

/// Scalars per launch (and per call the writer makes): 2^20 threads keep an H200 busy;
/// the scratch is 32 MiB of scalars and 96 MiB (G1) or 192 MiB (G2) of points.
pub const FIXED_BASE_CHUNK_POINTS: usize = 1 << 20;

const THREADS: u32 = 256;
const SCALAR_BYTES: usize = 32;

/// `p - 2` for BLS12-381's base field as 12 little-endian u32 words: the exponent of the
/// kernels' Fermat inversion, computed from the field rather than written out.
pub(crate) fn p_minus_2_words() -> [u32; 12] {
    // -1 = p - 1, canonical little-endian; p is odd, so p - 1 is even and the low byte
    // of p - 1 is not zero... but subtract with a borrow anyway.
    let mut b = (-Fp::ONE).to_bytes_le();
    for byte in b.iter_mut() {
        let (v, borrow) = byte.overflowing_sub(1);
        *byte = v;
        if !borrow {
            break;
        }
    }
    std::array::from_fn(|k| u32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]]))
}

/// The device bytes of [`GpuFixedBase`] for `tables`: both tables and the exponent
/// resident, and one chunk's scalars and points (G2's, the larger).
pub fn fixed_base_arena_bytes(tables: &FixedBaseTables) -> usize {
    let a = |b: usize| b.next_multiple_of(SPAN_ALIGN_BYTES);
    a(tables.g1.points.len() * Curve::G1.affine_bytes())
        + a(tables.g2.points.len() * Curve::G2.affine_bytes())
        + a(48)
        + a(FIXED_BASE_CHUNK_POINTS * SCALAR_BYTES)
        + a(FIXED_BASE_CHUNK_POINTS * Curve::G2.affine_bytes())
}

/// A window table resident on the device.
struct DeviceTable {
    span: DevSpan,
    window_bits: u32,
    windows: u32,
}

fn table_shape<A>(t: &WindowTable<A>) -> Result<(u32, u32)> {
    // Exactly the windows a 255-bit scalar has: the kernel reads the digit of window j from
    // words (j w) / 32 and the next, so a longer table would read past the scalar.
    let ok = (1..=24).contains(&t.window_bits)
        && t.windows == 255usize.div_ceil(t.window_bits)
        && t.points.len() == t.windows * ((1 << t.window_bits) - 1);
    if !ok {
        return Err(CudaError::Length {
            what: "fixed-base table: points for its windows",
            got: t.points.len(),
            want: t.windows.saturating_mul((1usize << t.window_bits.min(24)) - 1),
        });
    }
    Ok((t.window_bits as u32, t.windows as u32))
}

/// [`FixedBaseProducts`] on one GPU: what `filecoin params --backend gpu` (and any command
/// that generates parameters with a GPU backend) makes a parameters file's points with.
pub struct GpuFixedBase {
    gpu: Gpu,
    g1: DeviceTable,
    g2: DeviceTable,
    p_minus_2: DevSpan,
    busy: Duration,
}

impl GpuFixedBase {
    /// Opens GPU `ordinal` with an arena of [`fixed_base_arena_bytes`] and uploads the tables.
    pub fn open(ordinal: usize, tables: &FixedBaseTables) -> Result<GpuFixedBase> {
        let (w1, n1) = table_shape(&tables.g1)?;
        let (w2, n2) = table_shape(&tables.g2)?;
        let mut gpu = Gpu::open(ordinal)?;
        gpu.reserve_arena(fixed_base_arena_bytes(tables))?;
        gpu.dev.bind()?;
        let arena = gpu.arena_mut()?;
        let t1 = arena
            .carve_persistent("fixed-base G1 table", tables.g1.points.len() * Curve::G1.affine_bytes())?;
        let t2 = arena
            .carve_persistent("fixed-base G2 table", tables.g2.points.len() * Curve::G2.affine_bytes())?;
        let e = arena.carve_persistent("fixed-base p - 2", 48)?;
        // SAFETY: each span was carved with exactly these sizes; `upload` waits for its copy.
        unsafe {
            gpu.dev.upload(t1.ptr, &tables.g1.points)?;
            gpu.dev.upload(t2.ptr, &tables.g2.points)?;
            gpu.dev.upload(e.ptr, &p_minus_2_words())?;
        }
        Ok(GpuFixedBase {
            gpu,
            g1: DeviceTable { span: t1, window_bits: w1, windows: n1 },
            g2: DeviceTable { span: t2, window_bits: w2, windows: n2 },
            p_minus_2: e,
            busy: Duration::ZERO,
        })
    }

    /// Device time of the kernels so far.
    pub fn device_time(&self) -> Duration {
        self.busy
    }

    /// `out[i] = scalars[i] * g` for `curve`'s generator, chunk by chunk: scalars up,
    /// kernel, points down.
    fn products<A>(&mut self, curve: Curve, scalars: &[Scalar], out: &mut [A]) -> Result<()> {
        assert_eq!(std::mem::size_of::<A>(), curve.affine_bytes(), "point type matches the curve");
        if scalars.len() != out.len() {
            return Err(CudaError::Length {
                what: "fixed-base products: points out",
                got: out.len(),
                want: scalars.len(),
            });
        }
        if scalars.is_empty() {
            return Ok(());
        }
        let gpu = &mut self.gpu;
        gpu.dev.bind()?;
        let arena = gpu.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let chunk = FIXED_BASE_CHUNK_POINTS.min(scalars.len());
        let s_span = b.take("fixed-base products: scalars", chunk * SCALAR_BYTES)?;
        let o_span = b.take("fixed-base products: points", chunk * curve.affine_bytes())?;
        let (table, kernel) = match curve {
            Curve::G1 => (&self.g1, &gpu.dev.k.fixed_base_g1),
            Curve::G2 => (&self.g2, &gpu.dev.k.fixed_base_g2),
        };
        let mut elapsed = Duration::ZERO;
        for (s, o) in scalars.chunks(chunk).zip(out.chunks_mut(chunk)) {
            // SAFETY: the spans hold `chunk` scalars and points; `upload` and `download`
            // wait for their copies, and the download follows the launch on the stream.
            unsafe { gpu.dev.upload(s_span.ptr, s)? };
            gpu.dev.timer_start()?;
            kernel.launch(
                Dims::per_item(s.len(), THREADS),
                table.span.dev_ptr(),
                table.window_bits,
                table.windows,
                s_span.dev_ptr(),
                s.len(),
                self.p_minus_2.dev_ptr(),
                o_span.dev_ptr(),
            )?;
            gpu.dev.timer_stop()?;
            // SAFETY: as above; any bit pattern is a valid blst affine point.
            unsafe { gpu.dev.download(o, o_span.ptr)? };
            elapsed += gpu.dev.timer_elapsed().unwrap_or(Duration::ZERO);
        }
        gpu.arena_mut()?.note_scratch(&b);
        gpu.last_device.set(elapsed);
        self.busy += elapsed;
        Ok(())
    }
}

impl FixedBaseProducts for GpuFixedBase {
    fn name(&self) -> String {
        format!("CUDA device {} ({})", self.gpu.ordinal(), self.gpu.name())
    }
    fn chunk_points(&self) -> usize {
        FIXED_BASE_CHUNK_POINTS
    }
    fn g1(
        &mut self,
        scalars: &[Scalar],
        out: &mut [blst_p1_affine],
    ) -> std::result::Result<(), Groth16Error> {
        self.products(Curve::G1, scalars, out).map_err(backend_err)
    }
    fn g2(
        &mut self,
        scalars: &[Scalar],
        out: &mut [blst_p2_affine],
    ) -> std::result::Result<(), Groth16Error> {
        self.products(Curve::G2, scalars, out).map_err(backend_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    /// The kernels' exponent inverts: a^(p - 2) = 1 / a for random a, and p - 2 + 2 = p
    /// (the field's modulus, which reduces to zero).
    #[test]
    fn p_minus_2_is_the_fermat_exponent() {
        let w = p_minus_2_words();
        let limbs: Vec<u64> = w.chunks(2).map(|p| p[0] as u64 | (p[1] as u64) << 32).collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..8 {
            let a = Fp::random(&mut rng);
            assert_eq!(a.pow_vartime(&limbs), a.invert().unwrap());
        }
        assert_eq!(w[0] & 1, 1, "p - 2 is odd");
        assert_eq!(32 - w[11].leading_zeros() + 32 * 11, 381, "p - 2 has p's 381 bits");
    }

    #[test]
    fn a_table_of_the_wrong_length_is_refused_by_name() {
        let t = WindowTable { window_bits: 4, windows: 64, points: vec![0u8; 64 * 15 - 1] };
        let e = table_shape(&t).unwrap_err().to_string();
        assert!(e.contains("fixed-base table"), "{e}");
        let short = WindowTable { window_bits: 4, windows: 63, points: vec![0u8; 63 * 15] };
        assert!(table_shape(&short).is_err(), "4 x 63 bits do not cover a scalar");
        let long = WindowTable { window_bits: 4, windows: 65, points: vec![0u8; 65 * 15] };
        assert!(table_shape(&long).is_err(), "a 65th window would read past the scalar");
        let one_bit = WindowTable { window_bits: 1, windows: 256, points: vec![0u8; 256] };
        assert!(table_shape(&one_bit).is_err(), "bit 255 is past the scalar's 255 bits");
        let ok = WindowTable { window_bits: 4, windows: 64, points: vec![0u8; 64 * 15] };
        assert_eq!(table_shape(&ok).unwrap(), (4, 64));
    }
}
