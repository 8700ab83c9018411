//! A development parameter generator. **Insecure by design**: the toxic waste (tau, alpha,
//! beta, gamma, delta) comes from the caller's rng and is known to whoever holds that rng.
//! Use it for tests and benchmarks only, never for parameters anyone relies on.
//!
//! It computes exactly what bellperson 0.27's `generate_parameters` computes (same QAP,
//! same Lagrange basis through an inverse NTT of the powers of tau, same identity filtering
//! of the A/B queries, `h` of length `domain - 1`), and draws the toxic waste from the rng
//! in the same order as `generate_random_parameters`, so the same seed gives the same file.
//! It is faster because every scalar multiplication by the fixed generators uses a
//! precomputed table of `d * 2^(w j) * g` (affine) and costs only ~255/w mixed additions
//! (no doublings), in parallel, normalized in batches.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use super::domain::Domain;
use super::error::{Groth16Error, Result};
use super::params::{ParamsMemory, VerifyingKey};
use super::Parameters;

/// Scalar bits the tables cover.
const SCALAR_BITS: usize = 255;
/// Limit on table points (2^17 G1 points are 12 MiB; larger tables miss the caches more
/// than they save additions).
const TABLE_POINTS_MAX: usize = 1 << 17;
/// Scalars per parallel task (one batch normalization each).
const BATCH: usize = 1024;

/// Random toxic waste drawn in bellperson's order: g1, g2, alpha, beta, gamma, delta, tau.
#[derive(Clone, Copy, Debug)]
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub tau: Scalar,
}

impl ToxicWaste {
    pub fn random<R: RngCore>(rng: &mut R) -> ToxicWaste {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

/// Insecure random parameters for `circuit` (see the module docs).
pub fn generate_random_parameters<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    rng: &mut R,
    mem: &ParamsMemory,
) -> Result<Parameters> {
    let tw = ToxicWaste::random(rng);
    generate_parameters(circuit, &tw, mem)
}

/// The QAP of a circuit: for each variable, its (coefficient, constraint) terms in A, B, C,
/// stored flat.
#[derive(Default)]
struct KeyAssembly {
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    /// (matrix 0..3, variable, constraint, coefficient); variable = input i -> i, aux j ->
    /// num_inputs_max + j is resolved later, so keep the tag.
    terms: Vec<(u8, Index, u32, Scalar)>,
}

impl ConstraintSystem<Scalar> for KeyAssembly {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        Ok(Variable(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.num_constraints as u32;
        for (m, lc) in
            [a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero())]
                .into_iter()
                .enumerate()
        {
            for (var, coeff) in lc.iter() {
                self.terms.push((m as u8, var.get_unchecked(), row, *coeff));
            }
        }
        self.num_constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        false
    }
}

/// A curve group with mixed (projective + affine) addition.
trait FixedBaseGroup: Curve + Send + Sync
where
    Self::AffineRepr: Copy + Send + Sync + Default,
{
    fn add_affine(&mut self, p: &Self::AffineRepr);
}
impl FixedBaseGroup for G1Projective {
    #[inline]
    fn add_affine(&mut self, p: &G1Affine) {
        *self += p;
    }
}
impl FixedBaseGroup for G2Projective {
    #[inline]
    fn add_affine(&mut self, p: &G2Affine) {
        *self += p;
    }
}

/// `table[j * (2^w - 1) + d - 1] = d * 2^(w j) * g`: a scalar multiplication is one mixed
/// addition per non-zero w-bit digit.
struct FixedBase<G: FixedBaseGroup>
where
    G::AffineRepr: Copy + Send + Sync + Default,
{
    window_bits: usize,
    windows: usize,
    table: Vec<G::AffineRepr>,
}

impl<G: FixedBaseGroup> FixedBase<G>
where
    G::AffineRepr: Copy + Send + Sync + Default,
{
    /// Picks the window minimizing table building plus `count` multiplications.
    fn new(g: G, count: usize) -> Self {
        let cost = |w: usize| {
            let windows = SCALAR_BITS.div_ceil(w);
            (windows * ((1 << w) - 1), windows * count + windows * ((1 << w) - 1))
        };
        let window_bits = (2..=16)
            .filter(|&w| cost(w).0 <= TABLE_POINTS_MAX)
            .min_by_key(|&w| cost(w).1)
            .expect("w = 2 fits");
        let windows = SCALAR_BITS.div_ceil(window_bits);
        let per = (1usize << window_bits) - 1;
        let mut bases = Vec::with_capacity(windows);
        let mut b = g;
        for _ in 0..windows {
            bases.push(b);
            for _ in 0..window_bits {
                b = b.double();
            }
        }
        let mut table = vec![G::AffineRepr::default(); windows * per];
        table.par_chunks_mut(per).zip(bases.par_iter()).for_each(|(row, base)| {
            let mut acc = *base;
            let mut proj = Vec::with_capacity(per);
            for _ in 0..per {
                proj.push(acc);
                acc += base;
            }
            G::batch_normalize(&proj, row);
        });
        FixedBase { window_bits, windows, table }
    }

    #[inline]
    fn mul(&self, s: &Scalar) -> G {
        let bytes = s.to_bytes_le();
        let per = (1usize << self.window_bits) - 1;
        let mut acc = G::identity();
        for j in 0..self.windows {
            let bit = j * self.window_bits;
            let byte = bit / 8;
            let mut raw = [0u8; 4];
            let avail = (bytes.len() - byte).min(4);
            raw[..avail].copy_from_slice(&bytes[byte..byte + avail]);
            let d = (u32::from_le_bytes(raw) >> (bit % 8)) as usize & per;
            if d != 0 {
                acc.add_affine(&self.table[j * per + d - 1]);
            }
        }
        acc
    }

    /// `out[i] = scalars[i] * g`, in parallel, normalized per batch.
    fn mul_many(&self, scalars: &[Scalar], out: &mut [G::AffineRepr]) {
        assert_eq!(scalars.len(), out.len());
        out.par_chunks_mut(BATCH).zip(scalars.par_chunks(BATCH)).for_each(|(o, s)| {
            let proj: Vec<G> = s.iter().map(|s| self.mul(s)).collect();
            G::batch_normalize(&proj, o);
        });
    }
}

/// Parameters for `circuit` from the given toxic waste (see the module docs).
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    tw: &ToxicWaste,
    mem: &ParamsMemory,
) -> Result<Parameters> {
    let _span = tracing::info_span!("generate_parameters").entered();
    let mut cs = KeyAssembly::default();
    cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.num_inputs {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let (n_in, n_aux) = (cs.num_inputs, cs.num_aux);
    let domain = Domain::new(cs.num_constraints)?;
    let m = domain.size;

    let gamma_inv: Option<Scalar> = tw.gamma.invert().into();
    let gamma_inv = gamma_inv.ok_or_else(|| Groth16Error::Degenerate("toxic waste: gamma is zero".into()))?;
    let delta_inv: Option<Scalar> = tw.delta.invert().into();
    let delta_inv = delta_inv.ok_or_else(|| Groth16Error::Degenerate("toxic waste: delta is zero".into()))?;

    // Powers of tau, then h scalars tau^i * t(tau) / delta for i < m - 1.
    let mut lagrange = vec![Scalar::ZERO; m];
    lagrange.par_chunks_mut(BATCH).enumerate().for_each(|(k, ch)| {
        let mut p = tw.tau.pow_vartime([(k * BATCH) as u64]);
        for v in ch {
            *v = p;
            p *= tw.tau;
        }
    });
    let coeff = domain.z(&tw.tau) * delta_inv;
    let h_scalars: Vec<Scalar> = lagrange[..m - 1].par_iter().map(|p| *p * coeff).collect();
    // Lagrange coefficients at tau: the inverse NTT of the powers of tau.
    let mut twiddles = vec![Scalar::ZERO; domain.twiddle_len().max(1)];
    domain.ifft(&mut lagrange, &mut twiddles);
    drop(twiddles);

    // QAP polynomials at tau: at/bt/ct per variable (inputs first, then aux).
    let vars = n_in + n_aux;
    let mut qap = vec![[Scalar::ZERO; 3]; vars];
    for (mat, var, row, coeff) in &cs.terms {
        let v = match var {
            Index::Input(i) => *i,
            Index::Aux(j) => n_in + j,
        };
        qap[v][*mat as usize] += lagrange[*row as usize] * coeff;
    }
    drop(cs);
    drop(lagrange);
    let at: Vec<Scalar> = qap.par_iter().map(|q| q[0]).collect();
    let bt: Vec<Scalar> = qap.par_iter().map(|q| q[1]).collect();
    // ic (inputs, / gamma) and l (aux, / delta): (beta at + alpha bt + ct) / (gamma|delta).
    let ext: Vec<Scalar> = qap
        .par_iter()
        .enumerate()
        .map(|(v, q)| {
            (q[0] * tw.beta + q[1] * tw.alpha + q[2]) * if v < n_in { gamma_inv } else { delta_inv }
        })
        .collect();
    drop(qap);

    let g1_count = (m - 1) + 3 * vars;
    let g1_table = FixedBase::new(tw.g1, g1_count);
    let g2_table = FixedBase::new(tw.g2, vars);

    let mut h = vec![G1Affine::identity(); m - 1];
    g1_table.mul_many(&h_scalars, &mut h);
    drop(h_scalars);
    let mut a = vec![G1Affine::identity(); vars];
    g1_table.mul_many(&at, &mut a);
    let mut b_g1 = vec![G1Affine::identity(); vars];
    g1_table.mul_many(&bt, &mut b_g1);
    let mut b_g2 = vec![G2Affine::identity(); vars];
    g2_table.mul_many(&bt, &mut b_g2);
    let mut ext_pts = vec![G1Affine::identity(); vars];
    g1_table.mul_many(&ext, &mut ext_pts);

    let l = &ext_pts[n_in..];
    if let Some(j) = l.iter().position(|p| bool::from(p.is_identity())) {
        return Err(Groth16Error::Degenerate(format!(
            "aux variable {j} is unconstrained (its L point is the identity); bellperson refuses this circuit too"
        )));
    }
    let g1a = tw.g1.to_affine();
    let g2a = tw.g2.to_affine();
    let vk = VerifyingKey {
        alpha_g1: (g1a * tw.alpha).to_affine(),
        beta_g1: (g1a * tw.beta).to_affine(),
        beta_g2: (g2a * tw.beta).to_affine(),
        gamma_g2: (g2a * tw.gamma).to_affine(),
        delta_g1: (g1a * tw.delta).to_affine(),
        delta_g2: (g2a * tw.delta).to_affine(),
        ic: ext_pts[..n_in].to_vec(),
    };
    let raw1 = |v: &[G1Affine]| -> Vec<blst_p1_affine> {
        v.iter().filter(|p| !bool::from(p.is_identity())).map(|p| *p.as_ref()).collect()
    };
    let h_raw: Vec<blst_p1_affine> = h.iter().map(|p| *p.as_ref()).collect();
    let l_raw: Vec<blst_p1_affine> = l.iter().map(|p| *p.as_ref()).collect();
    let b_g2_raw: Vec<blst_p2_affine> =
        b_g2.iter().filter(|p| !bool::from(p.is_identity())).map(|p| *p.as_ref()).collect();
    Parameters::from_sections(vk, &h_raw, &l_raw, &raw1(&a), &raw1(&b_g1), &b_g2_raw, mem)
}

use group::prime::PrimeCurveAffine;
