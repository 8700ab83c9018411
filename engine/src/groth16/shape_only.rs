//! Parameters of a circuit's shape that are **not a setup**: for timing only.
//!
//! A mainnet-sized circuit (a 32 GiB PoRep partition: domain 2^27, ~47 GiB of points) gets
//! no development parameters from [`super::generate_parameters`] in the time of one run:
//! that is about 500M fixed-base multiplications, and the QAP of the whole circuit. To time
//! the prover at that size, these parameters have every section at the length the prover
//! checks (`vk.ic`, `h`, `l`, `a`, `b_g1`, `b_g2`), and every point is a distinct, valid
//! point of its group (consecutive multiples of the generator from a seeded random start
//! per section), so each MSM does the work it does on a real file. They come from no toxic
//! waste and encode no QAP: **no proof made with them verifies**. The commands that use
//! them say "timing only" in their output.
//!
//! Making them costs one mixed addition and a share of one batch normalization per point,
//! in parallel.

use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

use arenaprove_arena::SlabVec;
use arenaprove_circuits::Shape;

use super::error::{Groth16Error, Result};
use super::params::{ParamsMemory, VerifyingKey};
use super::Parameters;

/// Points per parallel task (one batch normalization each).
const CHUNK: usize = 1 << 14;

/// The A and B query lengths of a circuit (its density bitmaps say them; a recording gives
/// them without synthesizing a witness): `a` = every input plus the aux variables in A,
/// `b` = the inputs and aux variables in B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryPoints {
    pub a: usize,
    pub b: usize,
}

/// Parameters for a circuit of `shape` whose A and B queries are `queries` long, made of
/// valid points that are not a setup (see the module docs: timing only; no proof made with
/// them verifies). The same `seed` gives the same points.
pub fn shape_only_parameters(
    shape: &Shape,
    queries: QueryPoints,
    seed: u64,
    mem: &ParamsMemory,
) -> Result<Parameters> {
    if shape.domain_size < 2 || shape.inputs == 0 {
        return Err(Groth16Error::Degenerate(format!(
            "shape-only parameters need a domain of at least 2 and the ONE input ({shape})"
        )));
    }
    if queries.a < shape.inputs
        || queries.a > shape.inputs + shape.aux
        || queries.b > shape.inputs + shape.aux
    {
        return Err(Groth16Error::Degenerate(format!(
            "query lengths a {} / b {} do not fit {shape} (a: inputs up to every variable; b: at most every variable)",
            queries.a, queries.b
        )));
    }
    let _span = tracing::info_span!("shape_only_parameters", domain = shape.domain_size).entered();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut start = || Scalar::random(&mut rng);
    let g1 = G1Projective::generator();
    let g2 = G2Projective::generator();
    let p1 = |s: Scalar| (g1 * s).to_affine();
    let p2 = |s: Scalar| (g2 * s).to_affine();
    let vk = VerifyingKey {
        alpha_g1: p1(start()),
        beta_g1: p1(start()),
        beta_g2: p2(start()),
        gamma_g2: p2(start()),
        delta_g1: p1(start()),
        delta_g2: p2(start()),
        ic: (0..shape.inputs).map(|_| p1(start())).collect(),
    };
    let h = section1(mem, "h", shape.domain_size - 1, start())?;
    let l = section1(mem, "l", shape.aux, start())?;
    let a = section1(mem, "a", queries.a, start())?;
    let b_g1 = section1(mem, "b_g1", queries.b, start())?;
    let b_g2 = section2(mem, "b_g2", queries.b, start())?;
    Ok(Parameters::from_slabs(vk, h, l, a, b_g1, b_g2))
}

/// `count` G1 points `(r + i) * g`, i < count, in a slab of section `name`.
fn section1(mem: &ParamsMemory, name: &str, count: usize, r: Scalar) -> Result<SlabVec<blst_p1_affine>> {
    let mut v = mem.slab::<blst_p1_affine>(name, count)?;
    let out = v.extend_stale(count)?;
    fill::<G1Projective>(out, r, |p: &G1Affine| *p.as_ref());
    Ok(v)
}

/// `count` G2 points `(r + i) * g`, i < count, in a slab of section `name`.
fn section2(mem: &ParamsMemory, name: &str, count: usize, r: Scalar) -> Result<SlabVec<blst_p2_affine>> {
    let mut v = mem.slab::<blst_p2_affine>(name, count)?;
    let out = v.extend_stale(count)?;
    fill::<G2Projective>(out, r, |p: &G2Affine| *p.as_ref());
    Ok(v)
}

/// `out[i] = (r + i) * g`: each chunk starts with one scalar multiplication, then adds `g`
/// point by point and normalizes the chunk at once.
fn fill<G>(out: &mut [G::Raw], r: Scalar, raw: impl Fn(&G::AffineRepr) -> G::Raw + Sync)
where
    G: ParPoint,
    G::AffineRepr: Default + Copy + Send + Sync,
{
    let g = G::generator();
    let ga = g.to_affine();
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
        let mut acc = g * (r + Scalar::from((k * CHUNK) as u64));
        let mut proj = Vec::with_capacity(chunk.len());
        for _ in 0..chunk.len() {
            proj.push(acc);
            acc = G::add_affine(&acc, &ga);
        }
        normalize(&proj, chunk, &raw);
    });
}

/// `out[i]` = `proj[i]` in affine coordinates, with one shared inversion (Montgomery's trick;
/// blstrs' `batch_normalize` inverts point by point). blst's points are Jacobian:
/// `(X / Z^2, Y / Z^3)`.
fn normalize<G>(proj: &[G], out: &mut [G::Raw], raw: &impl Fn(&G::AffineRepr) -> G::Raw)
where
    G: ParPoint,
    G::AffineRepr: Default + Copy + Send + Sync,
{
    let mut prefix = Vec::with_capacity(proj.len());
    let mut acc = G::Base::ONE;
    for p in proj {
        prefix.push(acc);
        acc *= p.xyz().2;
    }
    let Some(mut inv) = Option::<G::Base>::from(acc.invert()) else {
        // A point at infinity among them (a multiple of the group order: never for random
        // starts, but not wrong): point by point.
        for (o, p) in out.iter_mut().zip(proj) {
            *o = raw(&p.to_affine());
        }
        return;
    };
    for i in (0..proj.len()).rev() {
        let (x, y, z) = proj[i].xyz();
        let z_inv = inv * prefix[i];
        inv *= z;
        let z_inv2 = z_inv.square();
        out[i] = raw(&G::from_xy(x * z_inv2, y * z_inv2 * z_inv));
    }
}

/// What [`fill`] needs of a group: its raw blst affine type and a mixed addition.
trait ParPoint: Curve + Group<Scalar = Scalar> + Send + Sync {
    type Raw: Send;
    /// The coordinate field.
    type Base: Field;
    fn add_affine(p: &Self, q: &Self::AffineRepr) -> Self;
    /// Jacobian coordinates.
    fn xyz(&self) -> (Self::Base, Self::Base, Self::Base);
    /// The affine point `(x, y)`, which the caller knows is on the curve.
    fn from_xy(x: Self::Base, y: Self::Base) -> Self::AffineRepr;
}

impl ParPoint for G1Projective {
    type Raw = blst_p1_affine;
    type Base = Fp;
    fn add_affine(p: &Self, q: &G1Affine) -> Self {
        p + q
    }
    fn xyz(&self) -> (Fp, Fp, Fp) {
        (self.x(), self.y(), self.z())
    }
    fn from_xy(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
}

impl ParPoint for G2Projective {
    type Raw = blst_p2_affine;
    type Base = Fp2;
    fn add_affine(p: &Self, q: &G2Affine) -> Self {
        p + q
    }
    fn xyz(&self) -> (Fp2, Fp2, Fp2) {
        (self.x(), self.y(), self.z())
    }
    fn from_xy(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_have_the_requested_lengths_and_are_valid_distinct_points() {
        // h spans three chunks, so the chunk starts are checked too.
        let shape = Shape::new(2 * CHUNK + 5, 3, 1200);
        let q = QueryPoints { a: 3 + 700, b: 400 };
        let p = shape_only_parameters(&shape, q, 7, &ParamsMemory::heap()).unwrap();
        assert_eq!(p.check_fits(&shape).map_err(|e| e.to_string()), Ok(()));
        assert_eq!((p.a().len(), p.b_g1().len(), p.b_g2().len()), (703, 400, 400));
        // A checked read of the encoded file validates every point (curve and subgroup).
        let bytes = p.to_bytes();
        let back = Parameters::from_bytes(&bytes, "shape-only", true, &ParamsMemory::heap()).unwrap();
        assert!(back == p);
        // Consecutive multiples: h[i + 1] - h[i] is the generator, across chunk borders too.
        let g = G1Projective::generator();
        let h: Vec<G1Affine> = p.h().iter().map(super::super::params::g1).collect();
        for w in h.windows(2) {
            assert_eq!(G1Projective::from(w[1]) - G1Projective::from(w[0]), g);
        }
        // Same seed, same points; another seed, other points.
        let again = shape_only_parameters(&shape, q, 7, &ParamsMemory::heap()).unwrap();
        assert!(again == p);
        let other = shape_only_parameters(&shape, q, 8, &ParamsMemory::heap()).unwrap();
        assert!(other != p);
    }

    #[test]
    fn query_lengths_outside_the_shape_are_refused() {
        let shape = Shape::new(100, 3, 50);
        for q in [QueryPoints { a: 2, b: 1 }, QueryPoints { a: 54, b: 1 }, QueryPoints { a: 3, b: 54 }] {
            let e = shape_only_parameters(&shape, q, 1, &ParamsMemory::heap()).unwrap_err().to_string();
            assert!(e.contains("do not fit"), "{e}");
        }
    }
}
