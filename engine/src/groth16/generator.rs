//! A development parameter generator. **Insecure by design**: the toxic waste (tau, alpha,
//! beta, gamma, delta) comes from the caller's rng and is known to whoever holds that rng.
//! Use it for tests and benchmarks only, never for parameters anyone relies on.
//!
//! It computes exactly what bellperson 0.27's `generate_parameters` computes (same QAP,
//! same Lagrange basis through an inverse NTT of the powers of tau, same identity filtering
//! of the A/B queries, `h` of length `domain - 1`), and draws the toxic waste from the rng
//! in the same order as `generate_random_parameters`, so the same seed gives the same file.
//! It is faster because every scalar multiplication by the fixed generators uses a
//! precomputed table of `d * 2^(w j) * g` (affine) and costs only ~255/w additions (no
//! doublings), done in affine coordinates for a batch of scalars at once, window by window,
//! with one shared (Montgomery) batch inversion per window step, in parallel batches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use super::domain::Domain;
use super::error::{Groth16Error, Result};
use super::params::{ParamsFileWriter, ParamsMemory, VerifyingKey};
use super::Parameters;
use arenaprove_circuits::Precompiled;

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
    /// `(1 / gamma, 1 / delta)`, or why the toxic waste is degenerate.
    fn inverses(&self) -> Result<(Scalar, Scalar)> {
        let inv = |x: Scalar, name: &str| {
            Option::<Scalar>::from(x.invert())
                .ok_or_else(|| Groth16Error::Degenerate(format!("toxic waste: {name} is zero")))
        };
        Ok((inv(self.gamma, "gamma")?, inv(self.delta, "delta")?))
    }

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

/// A curve group whose affine points expose their coordinates, so that additions can be
/// done in affine coordinates with a batch inversion shared by many independent sums.
trait FixedBaseGroup: Curve + Send + Sync
where
    Self::AffineRepr: Copy + Send + Sync + Default,
{
    /// The coordinate field.
    type Base: Field;
    /// `(x, y)` of a point that is not the identity.
    fn coords(p: &Self::AffineRepr) -> (Self::Base, Self::Base);
    /// The point `(x, y)`, which the caller knows lies in the group.
    fn from_coords(x: Self::Base, y: Self::Base) -> Self::AffineRepr;
    /// blst's affine type (the same bytes).
    type Raw: Copy + Send + Sync;
    fn to_raw(p: &Self::AffineRepr) -> Self::Raw;
    fn from_raw(p: &Self::Raw) -> Self::AffineRepr;
}
impl FixedBaseGroup for G1Projective {
    type Base = Fp;
    #[inline]
    fn coords(p: &G1Affine) -> (Fp, Fp) {
        (p.x(), p.y())
    }
    #[inline]
    fn from_coords(x: Fp, y: Fp) -> G1Affine {
        G1Affine::from_raw_unchecked(x, y, false)
    }
    type Raw = blst_p1_affine;
    #[inline]
    fn to_raw(p: &G1Affine) -> blst_p1_affine {
        *p.as_ref()
    }
    #[inline]
    fn from_raw(p: &blst_p1_affine) -> G1Affine {
        super::params::g1(p)
    }
}
impl FixedBaseGroup for G2Projective {
    type Base = Fp2;
    #[inline]
    fn coords(p: &G2Affine) -> (Fp2, Fp2) {
        (p.x(), p.y())
    }
    #[inline]
    fn from_coords(x: Fp2, y: Fp2) -> G2Affine {
        G2Affine::from_raw_unchecked(x, y, false)
    }
    type Raw = blst_p2_affine;
    #[inline]
    fn to_raw(p: &G2Affine) -> blst_p2_affine {
        *p.as_ref()
    }
    #[inline]
    fn from_raw(p: &blst_p2_affine) -> G2Affine {
        super::params::g2(p)
    }
}

/// A pending affine addition `acc[i] += table[t]` (or a doubling when the points are equal).
#[derive(Clone, Copy)]
struct Pending {
    i: u32,
    t: u32,
    double: bool,
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
        Self::with_window(g, window_bits)
    }

    /// The table for `window_bits`-bit digits.
    fn with_window(g: G, window_bits: usize) -> Self {
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

    /// The w-bit digit of window `j` of a little-endian scalar.
    #[inline]
    fn digit(&self, bytes: &[u8; 32], j: usize) -> usize {
        let per = (1usize << self.window_bits) - 1;
        let bit = j * self.window_bits;
        let byte = bit / 8;
        let mut raw = [0u8; 4];
        let avail = (bytes.len() - byte).min(4);
        raw[..avail].copy_from_slice(&bytes[byte..byte + avail]);
        (u32::from_le_bytes(raw) >> (bit % 8)) as usize & per
    }

    /// `out[i] = scalars[i] * g`: the batch's accumulators stay affine and advance window
    /// by window, each step's additions sharing one batch inversion (Montgomery's trick).
    fn mul_batch(&self, scalars: &[Scalar], out: &mut [G::AffineRepr]) {
        let n = scalars.len();
        let per = (1usize << self.window_bits) - 1;
        let bytes: Vec<[u8; 32]> = scalars.iter().map(|s| s.to_bytes_le()).collect();
        let mut ax = vec![G::Base::ZERO; n];
        let mut ay = vec![G::Base::ZERO; n];
        let mut inf = vec![true; n];
        let mut pending: Vec<Pending> = Vec::with_capacity(n);
        let mut prod: Vec<G::Base> = Vec::with_capacity(n);
        for j in 0..self.windows {
            pending.clear();
            prod.clear();
            let mut run = G::Base::ONE;
            for i in 0..n {
                let d = self.digit(&bytes[i], j);
                if d == 0 {
                    continue;
                }
                let t = j * per + d - 1;
                let (px, py) = G::coords(&self.table[t]);
                if inf[i] {
                    (ax[i], ay[i], inf[i]) = (px, py, false);
                    continue;
                }
                let (den, double) = if ax[i] != px {
                    (px - ax[i], false)
                } else if ay[i] == py {
                    // The group has no point of order 2, so y != 0 here.
                    (ay[i].double(), true)
                } else {
                    // acc == -p: the sum is the identity.
                    inf[i] = true;
                    continue;
                };
                run *= den;
                prod.push(run);
                pending.push(Pending { i: i as u32, t: t as u32, double });
            }
            if pending.is_empty() {
                continue;
            }
            // Every denominator is non-zero, so their product is invertible.
            let mut inv = run.invert().unwrap();
            for k in (0..pending.len()).rev() {
                let Pending { i, t, double } = pending[k];
                let i = i as usize;
                let (px, py) = G::coords(&self.table[t as usize]);
                let (x1, y1) = (ax[i], ay[i]);
                // 1 / den_k = inv * prod[k - 1]; then strip den_k from inv.
                let den_inv = if k > 0 { inv * prod[k - 1] } else { inv };
                let (num, den) = if double {
                    let xx = x1.square();
                    (xx.double() + xx, y1.double())
                } else {
                    (py - y1, px - x1)
                };
                inv *= den;
                let lambda = num * den_inv;
                let x3 = lambda.square() - x1 - px;
                ay[i] = lambda * (x1 - x3) - y1;
                ax[i] = x3;
            }
        }
        for i in 0..n {
            out[i] = if inf[i] { G::AffineRepr::default() } else { G::from_coords(ax[i], ay[i]) };
        }
    }

    /// `out[i] = scalars[i] * g`, in parallel batches.
    fn mul_many(&self, scalars: &[Scalar], out: &mut [G::AffineRepr]) {
        assert_eq!(scalars.len(), out.len());
        out.par_chunks_mut(BATCH).zip(scalars.par_chunks(BATCH)).for_each(|(o, s)| self.mul_batch(s, o));
    }

    /// [`FixedBase::mul_many`] into blst's affine points.
    fn mul_many_raw(&self, scalars: &[Scalar], out: &mut [G::Raw]) {
        assert_eq!(scalars.len(), out.len());
        out.par_chunks_mut(BATCH).zip(scalars.par_chunks(BATCH)).for_each(|(o, s)| {
            let mut a = vec![G::AffineRepr::default(); s.len()];
            self.mul_batch(s, &mut a);
            o.iter_mut().zip(&a).for_each(|(o, p)| *o = G::to_raw(p));
        });
    }

    /// The table as another backend takes it.
    fn window_table(&self) -> WindowTable<G::Raw> {
        WindowTable {
            window_bits: self.window_bits,
            windows: self.windows,
            points: self.table.par_iter().map(G::to_raw).collect(),
        }
    }
}

/// A generator's window table in blst's affine layout: `points[j * (2^w - 1) + d - 1] =
/// d * 2^(w j) * g` for window `j < windows` and digit `1 <= d < 2^w` (`w = window_bits`,
/// `w * windows >= 255`), so `s * g` is the sum of one entry per non-zero w-bit digit of the
/// canonical scalar `s`, no doubling needed.
#[derive(Clone, Debug)]
pub struct WindowTable<A> {
    pub window_bits: usize,
    pub windows: usize,
    pub points: Vec<A>,
}

/// The tables of the two generators (the toxic waste's g1 and g2) whose multiples fill a
/// parameters file: what a [`FixedBaseSource`] is given to make its [`FixedBaseProducts`].
#[derive(Clone, Debug)]
pub struct FixedBaseTables {
    pub g1: WindowTable<blst_p1_affine>,
    pub g2: WindowTable<blst_p2_affine>,
}

impl FixedBaseTables {
    /// The tables of `g1` and `g2` for digits of the given bits (the generator picks its
    /// windows from the number of products; this is for tests and benches).
    pub fn with_windows(
        g1: G1Projective,
        g2: G2Projective,
        g1_bits: usize,
        g2_bits: usize,
    ) -> FixedBaseTables {
        assert!((1..=20).contains(&g1_bits) && (1..=20).contains(&g2_bits), "window bits in 1..=20");
        FixedBaseTables {
            g1: FixedBase::with_window(g1, g1_bits).window_table(),
            g2: FixedBase::with_window(g2, g2_bits).window_table(),
        }
    }
}

/// The fixed-base products of parameter generation, `out[i] = scalars[i] * g` for the
/// generator whose table the products were made from: [`write_parameters_from_matrices_with`]
/// asks for every point of the file through this seam. The CPU's ([`CpuFixedBase`]) runs
/// the batch-affine table method on every core; the CUDA backend runs the same table on the
/// GPU. A zero scalar gives the identity, `(0, 0)` in blst's layout.
pub trait FixedBaseProducts {
    /// Who multiplies, for logs ("cpu", "CUDA device 0").
    fn name(&self) -> String;
    /// Scalars per call that keep this backend busy (the writer's chunk).
    fn chunk_points(&self) -> usize;
    /// `out[i] = scalars[i] * g1` (`out.len() == scalars.len()`).
    fn g1(&mut self, scalars: &[Scalar], out: &mut [blst_p1_affine]) -> Result<()>;
    /// `out[i] = scalars[i] * g2`.
    fn g2(&mut self, scalars: &[Scalar], out: &mut [blst_p2_affine]) -> Result<()>;
}

/// Makes the [`FixedBaseProducts`] a parameter generation runs from its generators' tables (a
/// GPU's, opened for that generation): what a generator that may run on either takes.
pub type FixedBaseSource = Arc<dyn Fn(&FixedBaseTables) -> Result<Box<dyn FixedBaseProducts>> + Send + Sync>;

/// The CPU's [`FixedBaseProducts`]: the batch-affine table method on every core.
pub struct CpuFixedBase {
    g1: FixedBase<G1Projective>,
    g2: FixedBase<G2Projective>,
}

impl CpuFixedBase {
    /// From the tables as another backend gets them.
    pub fn new(tables: &FixedBaseTables) -> CpuFixedBase {
        fn own<G: FixedBaseGroup>(t: &WindowTable<G::Raw>) -> FixedBase<G>
        where
            G::AffineRepr: Copy + Send + Sync + Default,
        {
            FixedBase {
                window_bits: t.window_bits,
                windows: t.windows,
                table: t.points.par_iter().map(G::from_raw).collect(),
            }
        }
        CpuFixedBase { g1: own(&tables.g1), g2: own(&tables.g2) }
    }
}

impl FixedBaseProducts for CpuFixedBase {
    fn name(&self) -> String {
        "cpu".into()
    }
    fn chunk_points(&self) -> usize {
        STREAM_CHUNK
    }
    fn g1(&mut self, scalars: &[Scalar], out: &mut [blst_p1_affine]) -> Result<()> {
        self.g1.mul_many_raw(scalars, out);
        Ok(())
    }
    fn g2(&mut self, scalars: &[Scalar], out: &mut [blst_p2_affine]) -> Result<()> {
        self.g2.mul_many_raw(scalars, out);
        Ok(())
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

    let (gamma_inv, delta_inv) = tw.inverses()?;

    // Powers of tau, then h scalars tau^i * t(tau) / delta for i < m - 1.
    let mut lagrange = vec![Scalar::ZERO; m];
    powers_into(tw.tau, 0, &mut lagrange);
    let coeff = domain.z(&tw.tau) * delta_inv;
    let h_scalars: Vec<Scalar> = lagrange[..m - 1].par_iter().map(|p| *p * coeff).collect();
    lagrange_from_powers(&domain, &mut lagrange);

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
    let vk = verifying_key(tw, ext_pts[..n_in].to_vec());
    let raw1 = |v: &[G1Affine]| -> Vec<blst_p1_affine> {
        v.iter().filter(|p| !bool::from(p.is_identity())).map(|p| *p.as_ref()).collect()
    };
    let h_raw: Vec<blst_p1_affine> = h.iter().map(|p| *p.as_ref()).collect();
    let l_raw: Vec<blst_p1_affine> = l.iter().map(|p| *p.as_ref()).collect();
    let b_g2_raw: Vec<blst_p2_affine> =
        b_g2.iter().filter(|p| !bool::from(p.is_identity())).map(|p| *p.as_ref()).collect();
    Parameters::from_sections(vk, &h_raw, &l_raw, &raw1(&a), &raw1(&b_g1), &b_g2_raw, mem)
}

/// Points made per chunk by [`write_parameters_from_matrices`] (12 MiB of G1 points).
const STREAM_CHUNK: usize = 1 << 17;

/// What [`write_parameters_from_matrices`] wrote.
#[derive(Clone, Debug)]
pub struct StreamedParameters {
    pub vk: VerifyingKey,
    /// Points per section: h, l, a, b_g1, b_g2.
    pub points: [usize; 5],
    /// Bytes of the file.
    pub bytes: u64,
    /// Who made the points ([`FixedBaseProducts::name`]).
    pub products: String,
    /// Time spent in the products' calls (the rest is the QAP, the scalars, encoding and
    /// writing).
    pub products_time: Duration,
}

/// [`generate_parameters`] for the circuit recorded in `pc`, written to `path` section by
/// section, so a mainnet-sized circuit gets development parameters without synthesizing it
/// and without holding them: the QAP at tau comes from the recorded matrices
/// ([`Precompiled::column_sums`] of the Lagrange coefficients), and each section's points are
/// made and written a chunk at a time. Memory: the Lagrange coefficients and the NTT's
/// twiddles while the QAP is evaluated, then the QAP itself (three scalars per variable) and
/// one chunk; for a 32 GiB PoRep partition about 12.5 GiB, against ~3 x its ~47 GiB of
/// parameters for [`generate_parameters`]. The file is byte-identical to
/// `generate_parameters(circuit, tw)`'s for the same toxic waste (tested), and as insecure.
/// Write to a temporary name and rename: an error leaves a partial file.
pub fn write_parameters_from_matrices(
    pc: &Precompiled,
    tw: &ToxicWaste,
    path: &std::path::Path,
) -> Result<StreamedParameters> {
    write_parameters_from_matrices_with(pc, tw, path, None)
}

/// [`write_parameters_from_matrices`] with the fixed-base products made by `products` (from
/// the generators' tables; `None`: the CPU's, [`CpuFixedBase`]): the same bytes whoever
/// makes them (tested for the GPU against the CPU).
pub fn write_parameters_from_matrices_with(
    pc: &Precompiled,
    tw: &ToxicWaste,
    path: &std::path::Path,
    products: Option<&FixedBaseSource>,
) -> Result<StreamedParameters> {
    let _span = tracing::info_span!("write_parameters_from_matrices").entered();
    let shape = pc.shape();
    let (n_in, n_aux) = (shape.inputs, shape.aux);
    let domain = Domain::new(shape.constraints)?;
    let m = domain.size;
    let (gamma_inv, delta_inv) = tw.inverses()?;

    let mut lagrange = vec![Scalar::ZERO; m];
    powers_into(tw.tau, 0, &mut lagrange);
    lagrange_from_powers(&domain, &mut lagrange);
    let [at, bt, ct] = pc
        .column_sums(&lagrange)
        .map_err(|e| Groth16Error::Degenerate(format!("evaluating the recorded matrices: {e}")))?;
    drop(lagrange);
    let vars = n_in + n_aux;
    let ext = |v: usize| {
        (at[v] * tw.beta + bt[v] * tw.alpha + ct[v]) * if v < n_in { gamma_inv } else { delta_inv }
    };
    if let Some(j) = (n_in..vars).into_par_iter().find_first(|&v| bool::from(ext(v).is_zero())) {
        return Err(Groth16Error::Degenerate(format!(
            "aux variable {} is unconstrained (its L point is the identity); bellperson refuses this circuit too",
            j - n_in
        )));
    }
    let g1_table = FixedBase::new(tw.g1, (m - 1) + 3 * vars);
    let g2_table = FixedBase::new(tw.g2, vars);
    let mut ic = vec![G1Affine::identity(); n_in];
    g1_table.mul_many(&(0..n_in).map(ext).collect::<Vec<_>>(), &mut ic);
    let vk = verifying_key(tw, ic);
    let mut products: Box<dyn FixedBaseProducts> = match products {
        Some(source) => {
            source(&FixedBaseTables { g1: g1_table.window_table(), g2: g2_table.window_table() })?
        }
        None => Box::new(CpuFixedBase { g1: g1_table, g2: g2_table }),
    };
    let chunk = products.chunk_points().max(1);
    let mut products_time = Duration::ZERO;

    let mut w = ParamsFileWriter::create(path, &vk)?;
    // Each G1 section: the next scalars of `scalars(out.len())`, times g1.
    let mut g1 =
        |w: &mut ParamsFileWriter, count: usize, mut scalars: Box<dyn FnMut(usize) -> Vec<Scalar> + '_>| {
            w.g1_section(count, chunk, |out| {
                let s = scalars(out.len());
                let t = Instant::now();
                products.g1(&s, out)?;
                products_time += t.elapsed();
                Ok(())
            })
        };
    // h: tau^i t(tau) / delta, i < m - 1.
    let h_coeff = domain.z(&tw.tau) * delta_inv;
    let mut next = 0usize;
    g1(
        &mut w,
        m - 1,
        Box::new(|n| {
            let mut s = vec![Scalar::ZERO; n];
            powers_into(tw.tau, next, &mut s);
            s.par_iter_mut().for_each(|x| *x *= h_coeff);
            next += n;
            s
        }),
    )?;
    // l: the aux variables' (beta at + alpha bt + ct) / delta.
    let mut next = n_in;
    g1(
        &mut w,
        n_aux,
        Box::new(|n| {
            let s = (next..next + n).into_par_iter().map(ext).collect();
            next += n;
            s
        }),
    )?;
    // a, b_g1: at and bt of every variable where they are not zero (the points that are
    // not the identity, as generate_parameters keeps them).
    let nonzero = |q: &[Scalar]| q.par_iter().filter(|x| !bool::from(x.is_zero())).count();
    let (a_points, b_points) = (nonzero(&at), nonzero(&bt));
    g1(&mut w, a_points, Box::new(nonzero_taker(&at)))?;
    g1(&mut w, b_points, Box::new(nonzero_taker(&bt)))?;
    let mut take_b = nonzero_taker(&bt);
    w.g2_section(b_points, chunk, |out| {
        let s = take_b(out.len());
        let t = Instant::now();
        products.g2(&s, out)?;
        products_time += t.elapsed();
        Ok(())
    })?;
    let bytes = w.finish()?;
    Ok(StreamedParameters {
        vk,
        points: [m - 1, n_aux, a_points, b_points, b_points],
        bytes,
        products: products.name(),
        products_time,
    })
}

/// Hands out `q`'s non-zero scalars in order, `n` per call (the caller asks for no more
/// than there are).
fn nonzero_taker(q: &[Scalar]) -> impl FnMut(usize) -> Vec<Scalar> + '_ {
    let mut next = 0usize;
    move |n: usize| {
        let mut s = Vec::with_capacity(n);
        while s.len() < n && next < q.len() {
            if !bool::from(q[next].is_zero()) {
                s.push(q[next]);
            }
            next += 1;
        }
        s
    }
}

/// The Lagrange coefficients at tau, in place of the powers of tau (`domain.size` of
/// them): their inverse NTT.
fn lagrange_from_powers(domain: &Domain, powers: &mut [Scalar]) {
    let mut twiddles = vec![Scalar::ZERO; domain.twiddle_len().max(1)];
    domain.ifft(powers, &mut twiddles);
}

/// `out[i] = tau^(start + i)`, in parallel batches.
fn powers_into(tau: Scalar, start: usize, out: &mut [Scalar]) {
    out.par_chunks_mut(BATCH).enumerate().for_each(|(k, ch)| {
        let mut p = tau.pow_vartime([(start + k * BATCH) as u64]);
        for v in ch {
            *v = p;
            p *= tau;
        }
    });
}

/// The verifying key of the toxic waste `tw`, with `ic` given.
fn verifying_key(tw: &ToxicWaste, ic: Vec<G1Affine>) -> VerifyingKey {
    let g1a = tw.g1.to_affine();
    let g2a = tw.g2.to_affine();
    VerifyingKey {
        alpha_g1: (g1a * tw.alpha).to_affine(),
        beta_g1: (g1a * tw.beta).to_affine(),
        beta_g2: (g2a * tw.beta).to_affine(),
        gamma_g2: (g2a * tw.gamma).to_affine(),
        delta_g1: (g1a * tw.delta).to_affine(),
        delta_g2: (g2a * tw.delta).to_affine(),
        ic,
    }
}

use group::prime::PrimeCurveAffine;

#[cfg(test)]
mod tests {
    use super::*;

    /// Batch-affine results equal plain scalar multiplication for real tables.
    fn check_tables<G>(g: G)
    where
        G: FixedBaseGroup + std::ops::Mul<Scalar, Output = G>,
        G::AffineRepr: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug,
    {
        for w in [2, 3, 5] {
            let t = FixedBase::with_window(g, w);
            let mut scalars = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)];
            for i in 1..40u64 {
                scalars.push(Scalar::from(i).pow_vartime([i * 0x9e37_79b9]) - Scalar::from(i));
            }
            let mut out = vec![G::AffineRepr::default(); scalars.len()];
            t.mul_many(&scalars, &mut out);
            for (s, o) in scalars.iter().zip(&out) {
                assert_eq!(*o, (g * *s).to_affine(), "w = {w}, scalar {s:?}");
            }
        }
    }

    /// Canonical scalars never add a point to itself or to its negation, so exercise those
    /// branches with a hand-made two-entry, one-bit table `[p, q]`: scalar 3 gives `p + q`.
    fn check_edge_cases<G: FixedBaseGroup>(g: G)
    where
        G::AffineRepr: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug,
    {
        let p = g.to_affine();
        let cases = [(g, g.double()), (-g, G::identity()), (g.double(), g + g.double())];
        for (q, want) in cases {
            let t = FixedBase::<G> { window_bits: 1, windows: 2, table: vec![p, q.to_affine()] };
            let scalars = [Scalar::from(3u64), Scalar::ONE, Scalar::from(2u64), Scalar::ZERO];
            let mut out = [G::AffineRepr::default(); 4];
            t.mul_batch(&scalars, &mut out);
            let id = G::identity().to_affine();
            assert_eq!(out, [want.to_affine(), p, q.to_affine(), id]);
        }
    }

    /// The streamed generator, fed the recording of a circuit, writes exactly the file
    /// `generate_parameters` makes from the circuit itself (same toxic waste): sector (many
    /// general coefficients, inputs in B), chain and sha.
    #[test]
    fn parameters_from_the_recording_are_byte_identical_to_the_generator() {
        use arenaprove_circuits::circuits::{ChainCircuit, SectorPartitionCircuit, ShaCircuit};
        use rand_core::SeedableRng;
        fn check<C: Circuit<Scalar> + Clone>(name: &str, c: C) {
            let tw = ToxicWaste::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(11));
            let want = generate_parameters(c.clone(), &tw, &ParamsMemory::heap()).unwrap();
            let pc = arenaprove_circuits::record(c, name).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("streamed.params");
            let got = write_parameters_from_matrices(&pc, &tw, &path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(got.bytes, bytes.len() as u64, "{name}");
            assert_eq!(
                got.points,
                [want.h().len(), want.l().len(), want.a().len(), want.b_g1().len(), want.b_g2().len()],
                "{name}"
            );
            assert!(got.vk == want.vk, "{name}: verifying key");
            assert!(bytes == want.to_bytes(), "{name}: the files differ");
            assert_eq!(got.products, "cpu");
            // Through the seam, from the tables as another backend gets them, in chunks
            // that do not divide the sections: the same bytes.
            let source: FixedBaseSource =
                Arc::new(|t: &FixedBaseTables| Ok(Box::new(OddChunks(CpuFixedBase::new(t))) as Box<_>));
            let path2 = dir.path().join("seam.params");
            let got2 = write_parameters_from_matrices_with(&pc, &tw, &path2, Some(&source)).unwrap();
            assert_eq!(got2.products, "cpu, 777 at a time");
            assert!(std::fs::read(&path2).unwrap() == bytes, "{name}: the seam's file differs");
        }
        check("sector", SectorPartitionCircuit::for_constraints(3, 1, 1500));
        check("chain", ChainCircuit::new(300, 2));
        check("sha", ShaCircuit::new(1, 4));
    }

    /// The CPU's products, 777 points per call.
    struct OddChunks(CpuFixedBase);
    impl FixedBaseProducts for OddChunks {
        fn name(&self) -> String {
            format!("{}, 777 at a time", self.0.name())
        }
        fn chunk_points(&self) -> usize {
            777
        }
        fn g1(&mut self, s: &[Scalar], out: &mut [blst_p1_affine]) -> Result<()> {
            assert!(s.len() <= 777);
            self.0.g1(s, out)
        }
        fn g2(&mut self, s: &[Scalar], out: &mut [blst_p2_affine]) -> Result<()> {
            assert!(s.len() <= 777);
            self.0.g2(s, out)
        }
    }

    /// A products backend that fails mid-file: the writer returns its error, unchanged.
    #[test]
    fn a_failing_products_backend_fails_the_write_with_its_error() {
        struct Fails(usize);
        impl FixedBaseProducts for Fails {
            fn name(&self) -> String {
                "fails".into()
            }
            fn chunk_points(&self) -> usize {
                64
            }
            fn g1(&mut self, _: &[Scalar], _: &mut [blst_p1_affine]) -> Result<()> {
                self.0 += 1;
                if self.0 == 3 {
                    return Err(Groth16Error::Backend {
                        backend: "test",
                        source: "device lost on the third chunk".into(),
                    });
                }
                Ok(())
            }
            fn g2(&mut self, _: &[Scalar], _: &mut [blst_p2_affine]) -> Result<()> {
                Ok(())
            }
        }
        use arenaprove_circuits::circuits::ChainCircuit;
        use rand_core::SeedableRng;
        let tw = ToxicWaste::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(3));
        let pc = arenaprove_circuits::record(ChainCircuit::new(300, 2), "chain").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let source: FixedBaseSource = Arc::new(|_: &FixedBaseTables| Ok(Box::new(Fails(0)) as Box<_>));
        let e =
            write_parameters_from_matrices_with(&pc, &tw, &dir.path().join("x"), Some(&source)).unwrap_err();
        assert!(e.to_string().contains("device lost on the third chunk"), "{e}");
    }

    /// A table handed to another backend and back multiplies as the original.
    #[test]
    fn window_tables_round_trip_through_blst_layout() {
        let tw =
            ToxicWaste::random(&mut <rand_chacha::ChaCha8Rng as rand_core::SeedableRng>::seed_from_u64(5));
        let (t1, t2) = (FixedBase::with_window(tw.g1, 5), FixedBase::with_window(tw.g2, 4));
        let tables = FixedBaseTables { g1: t1.window_table(), g2: t2.window_table() };
        assert_eq!((tables.g1.window_bits, tables.g1.windows, tables.g1.points.len()), (5, 51, 51 * 31));
        let mut cpu = CpuFixedBase::new(&tables);
        let s: Vec<Scalar> = (0..50u64).map(|i| Scalar::from(i).pow_vartime([i + 1]) - Scalar::ONE).collect();
        let mut o1 = vec![blst_p1_affine::default(); s.len()];
        let mut o2 = vec![blst_p2_affine::default(); s.len()];
        cpu.g1(&s, &mut o1).unwrap();
        cpu.g2(&s, &mut o2).unwrap();
        for (i, x) in s.iter().enumerate() {
            assert_eq!(super::super::params::g1(&o1[i]), (tw.g1 * x).to_affine(), "{i}");
            assert_eq!(super::super::params::g2(&o2[i]), (tw.g2 * x).to_affine(), "{i}");
        }
    }

    #[test]
    fn batch_affine_matches_scalar_multiplication() {
        check_tables(G1Projective::generator());
        check_tables(G2Projective::generator());
    }

    #[test]
    fn batch_affine_handles_doubling_and_inverse_points() {
        check_edge_cases(G1Projective::generator());
        check_edge_cases(G2Projective::generator());
    }
}
