//! The device seam: the few operations a backend supplies to the one Groth16 prover
//! ([`super::Prover`]). Everything else (the witness checks, leases, density filtering, the
//! proof formula, tracing spans and timings) is the prover's, written once.
//!
//! An operation runs over the parameter set's bases wherever the backend keeps them (the
//! CPU: the resident parameter slabs; a GPU: copies in its device arena) and adds the time
//! the device spent on it, if it measures one, to the `device` timer it is given.
//!
//! [`CpuOps`] is the CPU's implementation: in-place NTTs over the domain's twiddle table and
//! blst's Pippenger.

use std::sync::Arc;
use std::time::Duration;

use arenaprove_arena::map_in_place;
use arenaprove_circuits::{Density, Precompiled};
use blstrs::{G1Projective, G2Projective, Scalar};

use super::domain::{Domain, Twiddles};
use super::error::{Groth16Error, Result};
use super::msm::{msm_g1, msm_g2, SCALAR_BYTES};
use super::Parameters;

/// One scalar of an MSM: canonical little-endian bytes (blst's and the kernels' input).
pub type ScalarBytes = [u8; SCALAR_BYTES];

/// The G1 queries of a parameter set, the bases of the prover's G1 MSMs (the h query is
/// read only through [`ProverOps::msm_h`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G1Query {
    /// The aux variables' L query (all aux, full density).
    L,
    /// The A query (every input, then dense aux).
    A,
    /// The B query in G1 (dense inputs, then dense aux).
    BG1,
}

/// The G2 queries of a parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G2Query {
    /// The B query in G2 (the same split vector as [`G1Query::BG1`]).
    BG2,
}

/// `Ok` when the parameters' `section` has the length the circuit needs; a typed
/// [`Groth16Error::ShapeMismatch`] otherwise (never blst's panic on an MSM's lengths).
pub fn same_len(section: &'static str, params_len: usize, circuit_len: usize) -> Result<()> {
    if params_len == circuit_len {
        Ok(())
    } else {
        Err(Groth16Error::ShapeMismatch { section, params_len, circuit_len })
    }
}

impl G1Query {
    /// The query's name in the parameters (`l`, `a`, `b_g1`).
    pub fn name(self) -> &'static str {
        match self {
            G1Query::L => "l",
            G1Query::A => "a",
            G1Query::BG1 => "b_g1",
        }
    }

    /// The query's bases in the parameters.
    pub fn bases(self, p: &Parameters) -> &[blst::blst_p1_affine] {
        match self {
            G1Query::L => p.l(),
            G1Query::A => p.a(),
            G1Query::BG1 => p.b_g1(),
        }
    }
}

impl G2Query {
    /// The query's name in the parameters (`b_g2`).
    pub fn name(self) -> &'static str {
        match self {
            G2Query::BG2 => "b_g2",
        }
    }

    /// The query's bases in the parameters.
    pub fn bases(self, p: &Parameters) -> &[blst::blst_p2_affine] {
        match self {
            G2Query::BG2 => p.b_g2(),
        }
    }
}

/// The scalars of one witness MSM as the assignment holds them, for a backend that builds
/// the split vector itself ([`ProverOps::proves_from_witness`]): `head` (canonical bytes)
/// first, then `aux[i]` (Montgomery form, as in the slab) for every set bit `i` of
/// `density` (every `i` when `None`), each as canonical bytes. The prover checked the
/// lengths: `head.len()` plus the set bits is the query's length.
#[derive(Clone, Copy, Debug)]
pub struct WitnessScalars<'a> {
    pub head: &'a [ScalarBytes],
    pub aux: &'a [Scalar],
    pub density: Option<Density<'a>>,
}

impl WitnessScalars<'_> {
    /// Scalars of the MSM: `head` plus the aux variables the density selects.
    pub fn len(&self) -> usize {
        self.head.len() + self.density.map_or(self.aux.len(), |d| d.count_ones())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a backend supplies to the Groth16 prover (see the module docs). Implementations
/// hold their parameter set's bases; every call is for that parameter set.
pub trait ProverOps: Send + Sync + std::fmt::Debug + 'static {
    /// h's coefficients between [`ProverOps::h_quotient`] and [`ProverOps::msm_h`],
    /// wherever the backend leaves them (the CPU: canonical bytes in `a`'s slab; a GPU:
    /// its device scratch, with the device held).
    type Quotient<'a>
    where
        Self: 'a;

    /// The witness's aux where the backend's witness MSMs read it, between
    /// [`ProverOps::witness_begin`] and the last of them (a GPU: uploaded once to its
    /// device scratch, with the device held). Only for [`ProverOps::proves_from_witness`].
    type Witness<'a>
    where
        Self: 'a;

    /// `"cpu"`, `"cuda"`.
    fn name(&self) -> &'static str;

    /// `h = (a * b - c) / z` on a coset of `domain` from the evaluations a, b, c (padded to
    /// the domain's size), its first `domain.size - 1` coefficients made ready for
    /// [`ProverOps::msm_h`]. The backend may overwrite a, b and c; when this returns it
    /// reads them no more (they may go back to their pool once the quotient is consumed).
    fn h_quotient<'a>(
        &'a self,
        domain: &Domain,
        a: &'a mut [Scalar],
        b: &'a mut [Scalar],
        c: &'a mut [Scalar],
        device: &mut Duration,
    ) -> Result<Self::Quotient<'a>>;

    /// `sum h[i] * H[i]` over the quotient's coefficients.
    fn msm_h(&self, h: Self::Quotient<'_>, device: &mut Duration) -> Result<G1Projective>;

    /// `sum scalars[i] * query[i]`, with exactly one scalar per base of the query (the
    /// prover checked the witness against the parameters; a backend errs on another length).
    fn msm_g1(&self, query: G1Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G1Projective>;

    /// `sum scalars[i] * query[i]` in G2, one scalar per base.
    fn msm_g2(&self, query: G2Query, scalars: &[ScalarBytes], device: &mut Duration) -> Result<G2Projective>;

    /// Whether this backend proves from the witness alone: it computes a, b, c itself from
    /// a precompiled recording ([`ProverOps::h_quotient_rows`]) and builds the L, A and B
    /// scalars from the assignment ([`ProverOps::msm_witness_g1`],
    /// [`ProverOps::msm_witness_g2`]). The prover then leases no split vectors, and the
    /// engine plans no a, b, c slabs for the kinds it synthesizes through a recording.
    /// The CPU does not (its NTTs run in place in the a, b, c slabs).
    fn proves_from_witness(&self) -> bool {
        false
    }

    /// [`ProverOps::h_quotient`] with a, b, c computed by the backend from the recording
    /// `rows` and the witness (`inputs`, ONE first; `aux`), exactly as
    /// `Precompiled::products_into` then the `input_i * 0 = 0` rows and the zero padding
    /// would have written them.
    fn h_quotient_rows<'a>(
        &'a self,
        _domain: &Domain,
        _rows: &'a Precompiled,
        _inputs: &'a [Scalar],
        _aux: &'a [Scalar],
        _device: &mut Duration,
    ) -> Result<Self::Quotient<'a>> {
        Err(Groth16Error::Unsupported { backend: self.name(), what: "compute a, b, c from a recording" })
    }

    /// Makes the aux assignment ready for the L, A, B_G1 and B_G2 witness MSMs, which then
    /// read it through the returned [`ProverOps::Witness`] (it is the `aux` of each of
    /// their [`WitnessScalars`]): one copy for the four, not one each.
    fn witness_begin<'a>(&'a self, _aux: &'a [Scalar], _device: &mut Duration) -> Result<Self::Witness<'a>> {
        Err(Groth16Error::Unsupported { backend: self.name(), what: "build split vectors itself" })
    }

    /// `sum s[i] * query[i]` over the witness scalars `s` (see [`WitnessScalars`]), their
    /// aux the one `w` was begun with.
    fn msm_witness_g1(
        &self,
        _w: &mut Self::Witness<'_>,
        _query: G1Query,
        _s: WitnessScalars<'_>,
        _device: &mut Duration,
    ) -> Result<G1Projective> {
        Err(Groth16Error::Unsupported { backend: self.name(), what: "build split vectors itself" })
    }

    /// `sum s[i] * query[i]` in G2 over the witness scalars `s`.
    fn msm_witness_g2(
        &self,
        _w: &mut Self::Witness<'_>,
        _query: G2Query,
        _s: WitnessScalars<'_>,
        _device: &mut Duration,
    ) -> Result<G2Projective> {
        Err(Groth16Error::Unsupported { backend: self.name(), what: "build split vectors itself" })
    }
}

/// The CPU's operations: NTTs in place in the witness's slabs over a shared twiddle table,
/// blst's Pippenger over the parameters' resident bases. Measures no device time.
#[derive(Debug)]
pub struct CpuOps {
    params: Arc<Parameters>,
    twiddles: Arc<Twiddles>,
}

impl CpuOps {
    /// The CPU operations over `params` with the twiddle table of their domain (checked).
    pub fn new(params: Arc<Parameters>, twiddles: Arc<Twiddles>) -> Result<CpuOps> {
        let domain_size = params.domain_size();
        if twiddles.domain_size() != domain_size {
            return Err(Groth16Error::ShapeMismatch {
                section: "twiddles",
                params_len: domain_size,
                circuit_len: twiddles.domain_size(),
            });
        }
        Ok(CpuOps { params, twiddles })
    }
}

impl ProverOps for CpuOps {
    /// h's canonical bytes, written in place over the first `m - 1` scalars of `a`.
    type Quotient<'a> = &'a [ScalarBytes];
    /// Never made: the CPU builds split vectors on the host.
    type Witness<'a> = std::convert::Infallible;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn h_quotient<'a>(
        &'a self,
        domain: &Domain,
        a: &'a mut [Scalar],
        b: &'a mut [Scalar],
        c: &'a mut [Scalar],
        _device: &mut Duration,
    ) -> Result<&'a [ScalarBytes]> {
        let m = domain.size;
        domain.quotient_in_place(a, b, c, &self.twiddles);
        // The top coefficient is zero for a satisfied circuit; h has m - 1 terms.
        Ok(map_in_place(&mut a[..m - 1], |s: Scalar| -> ScalarBytes { s.to_bytes_le() }))
    }

    fn msm_h(&self, h: &[ScalarBytes], _device: &mut Duration) -> Result<G1Projective> {
        Ok(msm_g1(self.params.h(), h))
    }

    fn msm_g1(
        &self,
        query: G1Query,
        scalars: &[ScalarBytes],
        _device: &mut Duration,
    ) -> Result<G1Projective> {
        Ok(msm_g1(query.bases(&self.params), scalars))
    }

    fn msm_g2(
        &self,
        query: G2Query,
        scalars: &[ScalarBytes],
        _device: &mut Duration,
    ) -> Result<G2Projective> {
        Ok(msm_g2(query.bases(&self.params), scalars))
    }
}
