//! Subgroup membership on the GPU: the second half of a checked parameter load
//! ([`arenaprove_engine::groth16::Parameters::read_file_checked_by`]) for files too large
//! for blst's per-point test on the CPU (a 32 GiB PoRep's ~47 GB of points).
//!
//! The kernels (`kernels/subgroup.cu`) run Scott's endomorphism tests, the ones blst runs:
//! `sigma(P) == -[z^2] P` in G1 and `psi(P) == [z] P` in G2. Their constants (the cube root
//! of unity beta; psi's cx, cy) are not written out here: [`Endomorphisms::derive`] reads
//! them off the generators (`sigma(G1) = -[z^2] G1` gives beta, `psi(G2) = [z] G2` gives cx
//! and cy), and the unit tests check the identities on random points on the CPU, and that
//! points outside the subgroups fail them. The GPU tests check the kernels against blst's
//! `is_torsion_free`.

use std::sync::OnceLock;
use std::time::Duration;

use arenaprove_engine::groth16::{Groth16Error, SubgroupCheck};
use blst::{blst_fp, blst_fp2, blst_p1_affine, blst_p2_affine};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;

use crate::arena::DevSpan;
use crate::backend::backend_err;
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::Dims;
use crate::msm::Curve;

/// |z| for BLS12-381's curve parameter z = -0xd201000000010000.
pub(crate) const Z_ABS: u64 = 0xd201_0000_0001_0000;

/// Points per kernel launch: each of the two upload buffers holds this many (96 MiB of G1,
/// 192 MiB of G2).
pub const SUBGROUP_CHUNK_POINTS: usize = 1 << 20;

const THREADS: u32 = 256;

/// The device scratch a subgroup check lays out for `curve` (its arena must have this much
/// free above the persistent part): two chunk buffers, the constants, the result word.
pub fn subgroup_scratch_bytes(curve: Curve) -> usize {
    let align = crate::arena::SPAN_ALIGN_BYTES;
    2 * (SUBGROUP_CHUNK_POINTS * curve.affine_bytes()).next_multiple_of(align) + 2 * align
}

/// The endomorphisms' constants, in blst's (Montgomery) layout as the kernels read them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Endomorphisms {
    /// sigma(x, y) = (beta x, y) acts on G1 as [-z^2].
    beta: Fp,
    /// psi(x, y) = (cx conj(x), cy conj(y)) acts on G2 as [z].
    cx: Fp2,
    cy: Fp2,
}

fn conj(a: Fp2) -> Fp2 {
    Fp2::new(a.c0(), -a.c1())
}

impl Endomorphisms {
    /// Reads the constants off the generators (see the module docs). `None` only if the
    /// generators had a zero coordinate, which BLS12-381's do not.
    fn derive() -> Option<Endomorphisms> {
        let z = Scalar::from(Z_ABS);
        let g1 = G1Affine::generator();
        // -[z^2] G1 = sigma(G1) = (beta x, y).
        let s = G1Affine::from(-(G1Projective::generator() * (z * z)));
        let beta = s.x() * Option::<Fp>::from(g1.x().invert())?;
        let g2 = G2Affine::generator();
        // [z] G2 = -[|z|] G2 = psi(G2).
        let p = G2Affine::from(-(G2Projective::generator() * z));
        let cx = p.x() * Option::<Fp2>::from(conj(g2.x()).invert())?;
        let cy = p.y() * Option::<Fp2>::from(conj(g2.y()).invert())?;
        Some(Endomorphisms { beta, cx, cy })
    }

    pub(crate) fn get() -> &'static Endomorphisms {
        static E: OnceLock<Endomorphisms> = OnceLock::new();
        E.get_or_init(|| Endomorphisms::derive().expect("BLS12-381's generators have nonzero coordinates"))
    }

    /// sigma(p) on the host (the unit tests' reference for the G1 kernel).
    #[cfg(test)]
    fn sigma(&self, p: &G1Affine) -> G1Affine {
        G1Affine::from_raw_unchecked(self.beta * p.x(), p.y(), false)
    }

    /// psi(p) on the host (the unit tests' reference for the G2 kernel).
    #[cfg(test)]
    fn psi(&self, p: &G2Affine) -> G2Affine {
        G2Affine::from_raw_unchecked(self.cx * conj(p.x()), self.cy * conj(p.y()), false)
    }
}

impl Gpu {
    /// The index of the first of `points` (each on the curve, as a decode leaves them) outside
    /// G1's prime-order subgroup, if any; the same answer as blst's `is_torsion_free` per
    /// point. Needs [`subgroup_scratch_bytes`] free in the arena.
    pub fn first_outside_subgroup_g1(&mut self, points: &[blst_p1_affine]) -> Result<Option<usize>> {
        let beta: blst_fp = Endomorphisms::get().beta.into();
        self.first_outside(Curve::G1, points, std::slice::from_ref(&beta))
    }

    /// As [`Gpu::first_outside_subgroup_g1`], for G2.
    pub fn first_outside_subgroup_g2(&mut self, points: &[blst_p2_affine]) -> Result<Option<usize>> {
        let e = Endomorphisms::get();
        let psi: [blst_fp2; 2] = [e.cx.into(), e.cy.into()];
        self.first_outside(Curve::G2, points, &psi)
    }

    /// Uploads `points` chunk by chunk on the copy stream (chunk j + 1 while chunk j is
    /// tested) and runs the curve's test kernel over each; every failing point lowers one
    /// result word to its index.
    fn first_outside<A, C>(&mut self, curve: Curve, points: &[A], consts: &[C]) -> Result<Option<usize>> {
        assert_eq!(std::mem::size_of::<A>(), curve.affine_bytes(), "point type matches the curve");
        if u32::try_from(points.len()).map_or(true, |n| n == u32::MAX) {
            return Err(CudaError::Length {
                what: "subgroup check: points",
                got: points.len(),
                want: 1 << 31,
            });
        }
        if points.is_empty() {
            return Ok(None);
        }
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut b = arena.scratch();
        let chunk = SUBGROUP_CHUNK_POINTS.min(points.len());
        let bufs: [DevSpan; 2] = [
            b.take("subgroup check: points", chunk * curve.affine_bytes())?,
            b.take("subgroup check: points", chunk * curve.affine_bytes())?,
        ];
        let consts_span = b.take("subgroup check: constants", std::mem::size_of_val(consts))?;
        let bad = b.take("subgroup check: first index", 4)?;
        let r = self.run_subgroup(curve, points, chunk, &bufs, consts, &consts_span, &bad);
        if r.is_err() {
            // The copy stream may still read host points.
            let _ = self.dev.sync_all();
        }
        self.arena_mut()?.note_scratch(&b);
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn run_subgroup<A, C>(
        &self,
        curve: Curve,
        points: &[A],
        chunk: usize,
        bufs: &[DevSpan; 2],
        consts: &[C],
        consts_span: &DevSpan,
        bad: &DevSpan,
    ) -> Result<Option<usize>> {
        let kernel = match curve {
            Curve::G1 => &self.dev.k.subgroup_g1,
            Curve::G2 => &self.dev.k.subgroup_g2,
        };
        // SAFETY: both spans were taken with these sizes; `upload` waits for its copy.
        unsafe {
            self.dev.upload(consts_span.ptr, consts)?;
            self.dev.upload(bad.ptr, &[u32::MAX])?;
        }
        self.dev.timer_start()?;
        let ranges: Vec<_> =
            (0..points.len()).step_by(chunk).map(|s| s..(s + chunk).min(points.len())).collect();
        // SAFETY: each buffer holds `chunk` points; `points` is borrowed for the whole call,
        // and every way out waits for the copy stream (the last launch waits for the last
        // upload and the download below synchronizes; errors sync both streams in
        // `first_outside`). Buffer j % 2 is refilled only after the compute stream has
        // finished the launch that read it (the synchronize before each upload).
        let upload = |j: usize| unsafe {
            self.dev.upload_overlapped(j % 2, bufs[j % 2].ptr, &points[ranges[j].clone()])
        };
        upload(0)?;
        for (j, r) in ranges.iter().enumerate() {
            if j + 1 < ranges.len() {
                self.dev.sync()?;
                upload(j + 1)?;
            }
            self.dev.wait_upload(j % 2)?;
            kernel.launch(
                Dims::per_item(r.len(), THREADS),
                bufs[j % 2].dev_ptr(),
                r.len(),
                r.start,
                consts_span.dev_ptr(),
                Z_ABS as usize,
                bad.dev_ptr(),
            )?;
        }
        self.dev.timer_stop()?;
        let mut first = [0u32];
        // SAFETY: `bad` holds one u32; any bit pattern is a valid u32.
        unsafe { self.dev.download(&mut first, bad.ptr) }?;
        self.last_device.set(self.dev.timer_elapsed().unwrap_or(Duration::ZERO));
        Ok((first[0] != u32::MAX).then_some(first[0] as usize))
    }
}

/// [`SubgroupCheck`] on one GPU: what `params verify --backend gpu` and the daemon's
/// checked load use for the subgroup half of a checked load.
pub struct GpuSubgroupCheck {
    gpu: Gpu,
}

impl GpuSubgroupCheck {
    /// Opens GPU `ordinal` with an arena just large enough for the check.
    pub fn open(ordinal: usize) -> Result<GpuSubgroupCheck> {
        let mut gpu = Gpu::open(ordinal)?;
        gpu.reserve_arena(subgroup_scratch_bytes(Curve::G1).max(subgroup_scratch_bytes(Curve::G2)))?;
        Ok(GpuSubgroupCheck { gpu })
    }

    /// Checks on `gpu`, which must have [`subgroup_scratch_bytes`] free in its arena.
    pub fn on(gpu: Gpu) -> GpuSubgroupCheck {
        GpuSubgroupCheck { gpu }
    }
}

impl SubgroupCheck for GpuSubgroupCheck {
    fn name(&self) -> String {
        format!("CUDA device {} ({})", self.gpu.ordinal(), self.gpu.name())
    }
    fn first_outside_g1(
        &mut self,
        points: &[blst_p1_affine],
    ) -> std::result::Result<Option<usize>, Groth16Error> {
        self.gpu.first_outside_subgroup_g1(points).map_err(backend_err)
    }
    fn first_outside_g2(
        &mut self,
        points: &[blst_p2_affine],
    ) -> std::result::Result<Option<usize>, Groth16Error> {
        self.gpu.first_outside_subgroup_g2(points).map_err(backend_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arenaprove_engine::groth16::params::{g1, g1_points_on_curve, g2, g2_points_on_curve};
    use group::Curve as _;
    use rand_chacha::rand_core::SeedableRng;

    fn rng() -> rand_chacha::ChaCha8Rng {
        rand_chacha::ChaCha8Rng::seed_from_u64(24)
    }

    #[test]
    fn the_derived_constants_are_the_endomorphisms() {
        let e = Endomorphisms::get();
        // beta is a nontrivial cube root of unity; cx, cy are not trivial.
        assert_eq!(e.beta.square() * e.beta, Fp::ONE);
        assert_ne!(e.beta, Fp::ONE);
        let z = Scalar::from(Z_ABS);
        let mut r = rng();
        for _ in 0..8 {
            let p = (G1Projective::random(&mut r)).to_affine();
            assert!(bool::from(p.is_on_curve()) && bool::from(p.is_torsion_free()));
            assert_eq!(e.sigma(&p), G1Affine::from(-(p * (z * z))), "sigma = [-z^2] on G1");
            let q = (G2Projective::random(&mut r)).to_affine();
            let psi = e.psi(&q);
            assert!(bool::from(psi.is_on_curve()), "psi maps onto the curve");
            assert_eq!(psi, G2Affine::from(-(q * z)), "psi = [z] on G2");
        }
    }

    /// [k] p by double-and-add over the group law, valid for any curve point (blst's
    /// `p * Scalar` may use the GLV/GLS endomorphism, which holds only inside the subgroup).
    fn times<G: Group>(p: G, k: u64) -> G {
        let mut acc = p;
        for bit in (0..63 - k.leading_zeros()).rev() {
            acc = acc.double();
            if (k >> bit) & 1 == 1 {
                acc += p;
            }
        }
        acc
    }

    /// The kernels' tests, run on the host with the group law: true iff in the subgroup.
    fn kernel_test_g1(e: &Endomorphisms, p: &G1Affine) -> bool {
        let q = times(times(G1Projective::from(p), Z_ABS), Z_ABS);
        e.sigma(p) == G1Affine::from(-q)
    }

    fn kernel_test_g2(e: &Endomorphisms, p: &G2Affine) -> bool {
        e.psi(p) == G2Affine::from(-times(G2Projective::from(p), Z_ABS))
    }

    #[test]
    fn the_kernels_tests_agree_with_blst_inside_and_outside_the_subgroups() {
        let e = Endomorphisms::get();
        assert_eq!(times(G1Projective::generator(), 6), G1Projective::generator() * Scalar::from(6u64));
        let mut r = rng();
        let outside1: Vec<G1Affine> = g1_points_on_curve(1, 16).iter().map(g1).collect();
        let inside1 = (0..8).map(|_| G1Projective::random(&mut r).to_affine());
        for (p, want) in outside1.iter().map(|p| (*p, false)).chain(inside1.map(|p| (p, true))) {
            assert!(bool::from(p.is_on_curve()));
            assert_eq!(bool::from(p.is_torsion_free()), want, "blst agrees with the sample's kind");
            assert_eq!(kernel_test_g1(e, &p), want, "the G1 test on {p:?}");
        }
        let outside2: Vec<G2Affine> = g2_points_on_curve(1, 16).iter().map(g2).collect();
        let inside2 = (0..8).map(|_| G2Projective::random(&mut r).to_affine());
        for (p, want) in outside2.iter().map(|p| (*p, false)).chain(inside2.map(|p| (p, true))) {
            assert!(bool::from(p.is_on_curve()));
            assert_eq!(bool::from(p.is_torsion_free()), want, "blst agrees with the sample's kind");
            assert_eq!(kernel_test_g2(e, &p), want, "the G2 test on {p:?}");
        }
    }

    #[test]
    fn scratch_holds_two_chunks() {
        assert!(subgroup_scratch_bytes(Curve::G1) >= 2 * SUBGROUP_CHUNK_POINTS * 96);
        assert!(subgroup_scratch_bytes(Curve::G2) >= 2 * SUBGROUP_CHUNK_POINTS * 192);
    }
}
