//! The Groth16 prover, written once and reading like the paper, in two stages as the
//! pipeline runs them. A backend supplies only its device operations ([`ProverOps`]: the
//! h quotient, the G1 and G2 MSMs over its resident bases); this file owns the rest for
//! every backend: the witness checks, leases, density split vectors, the proof formula, the
//! tracing spans and the stage timings.
//!
//! 1. [`Prover::prove_start`] reads a, b, c: `h = (a * b - c) / z` by NTTs on a coset
//!    (span `ntt_h`), then the h MSM (span `msm_h`); the a, b, c slabs go back
//!    (`release_abc`).
//! 2. [`Prover::finalize`]: the L, A, B_G1, B_G2 MSMs over density-filtered split vectors
//!    (spans `msm_l` .. `msm_b_g2`) and the proof (span `finalize`), exactly as bellperson
//!    0.27 combines them (with a, b1, b2 the raw sums):
//!    `A = alpha + a + r delta`, `B = beta + b2 + s delta`,
//!    `C = s A + r (beta + b1 + s delta) - r s delta + H + L`.
//!
//! Every buffer besides the witness is a slab from [`ProverMemory`]: the twiddle table (one
//! per domain, shared) and three scalar slabs per proof in `finalize` (L's scalars and the
//! A and B split vectors). In the engine those come from the a, b, c pool: by `finalize` the
//! partition's own a, b, c slabs are back, so the split vectors cost no memory of their
//! own. Nothing large is allocated per proof.
//!
//! [`Prover<CpuOps>`] (the default type) is the CPU backend; the CUDA backend is
//! `Prover<CudaOps>`. Both are the engine's [`crate::Backend`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use arenaprove_arena::{Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};
use arenaprove_circuits::{Density, ProverWitness, Shape};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand_core::RngCore;
use rayon::prelude::*;

use super::domain::{Domain, Twiddles};
use super::error::{Groth16Error, Result};
use super::msm::SCALAR_BYTES;
use super::ops::{same_len, CpuOps, G1Query, G2Query, ProverOps, ScalarBytes, WitnessScalars};
use super::{Parameters, Proof};

/// How long a lease waits for a slab before the proof fails (a slab that does not come
/// back within this is a leak or an over-committed pipeline, not contention).
const LEASE_TIMEOUT: Duration = Duration::from_secs(60);
/// Variables per parallel task when filtering by density (a multiple of 64: whole words).
const FILTER_CHUNK_BITS: usize = 64 * 1024;
// `append_dense` counts each chunk by whole density words.
const _: () = assert!(FILTER_CHUNK_BITS % 64 == 0);

/// The sizes of one proof that the pool plan needs: from the parameters (exact) or from a
/// circuit [`Shape`] (an upper bound: every variable dense).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofShape {
    /// Inputs, ONE included.
    pub inputs: usize,
    pub aux: usize,
    pub domain_size: usize,
    /// Points of the A query (inputs + dense aux).
    pub a_points: usize,
    /// Points of the B queries (dense inputs + dense aux).
    pub b_points: usize,
}

impl ProofShape {
    pub fn of_params(p: &Parameters) -> ProofShape {
        ProofShape {
            inputs: p.vk.ic.len(),
            aux: p.l().len(),
            domain_size: p.domain_size(),
            a_points: p.a().len(),
            b_points: p.b_g1().len(),
        }
    }
    pub fn of_circuit(s: &Shape) -> ProofShape {
        ProofShape {
            inputs: s.inputs,
            aux: s.aux,
            domain_size: s.domain_size,
            a_points: s.inputs + s.aux,
            b_points: s.inputs + s.aux,
        }
    }
}

/// Scalar slabs one proof leases in `finalize`: L's scalars (all aux), the A split vector,
/// the B split vector (shared by B_G1 and B_G2). `prove_start` leases none (h is computed
/// and converted in place in the witness's `a`).
pub const SCALAR_SLABS_PER_PROOF: usize = 3;

impl ProofShape {
    /// Bytes of the largest scalar slab a proof of this shape leases.
    pub fn scalar_slab_bytes(&self) -> usize {
        self.aux.max(self.a_points).max(self.b_points).max(1) * SCALAR_BYTES
    }
}

/// Where a prover's large buffers come from (see the module docs).
#[derive(Clone, Debug)]
pub struct ProverMemory {
    /// Slabs of at least [`ProofShape::scalar_slab_bytes`] for the split vectors; `None`
    /// for a backend that builds them itself ([`ProverOps::proves_from_witness`]).
    pub scalars: Option<Arc<SlabPool>>,
    /// The domain's host twiddle table, for a backend that runs its NTTs on the CPU
    /// (`None` where the engine's backend keeps its own tables, e.g. on the device:
    /// [`crate::BackendFactory::host_twiddles`]).
    pub twiddles: Option<Arc<Twiddles>>,
}

impl ProverMemory {
    /// Reserves memory (charged to `ledger`) for `proofs_in_flight` proofs of `shape`: its
    /// own scalar pool and twiddle table. The engine does not use this (its plan shares the
    /// a, b, c pool and one twiddle table per domain); single provers and the fresh
    /// baseline do.
    pub fn reserve(
        shape: &ProofShape,
        proofs_in_flight: usize,
        ledger: &Arc<Ledger>,
        region: RegionConfig,
    ) -> Result<ProverMemory> {
        let cfg = SlabPoolConfig::new(
            "prove.scalars",
            shape.scalar_slab_bytes(),
            SCALAR_SLABS_PER_PROOF * proofs_in_flight.max(1),
        )
        .with_region(region.clone());
        let scalars = SlabPool::new(cfg, ledger, None)?;
        let twiddles = Arc::new(reserve_twiddles(shape.domain_size, ledger, region)?);
        Ok(ProverMemory { scalars: Some(scalars), twiddles: Some(twiddles) })
    }
}

/// A twiddle table for `domain_size` in a one-slab pool of its own.
pub fn reserve_twiddles(domain_size: usize, ledger: &Arc<Ledger>, region: RegionConfig) -> Result<Twiddles> {
    let domain = Domain::new(domain_size)?;
    let bytes = twiddle_bytes(domain_size);
    let pool =
        SlabPool::new(SlabPoolConfig::new("prove.twiddles", bytes, 1).with_region(region), ledger, None)?;
    Twiddles::new(&domain, SlabVec::new(pool.try_lease(bytes)?))
}

/// Bytes of the twiddle table of a domain of `domain_size` points (with its compact copy).
pub fn twiddle_bytes(domain_size: usize) -> usize {
    super::domain::twiddle_table_len(domain_size.max(1).next_power_of_two()) * SCALAR_BYTES
}

/// Device time of a backend's calls, measured on the device (GPU events around the call's
/// copies and kernels); zero for calls that ran on the CPU. Each lies inside the wall time
/// of the [`StageTimings`] field of the same name.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceTimings {
    pub ntt_h: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
}

/// Wall time of each stage of one proof.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimings {
    pub synthesize: Duration,
    pub ntt_h: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    /// The proof formula after the MSMs.
    pub finalize: Duration,
    /// The device's share of the calls above (GPU backends).
    pub device: DeviceTimings,
}

impl StageTimings {
    pub fn total(&self) -> Duration {
        self.synthesize
            + self.ntt_h
            + self.msm_h
            + self.msm_l
            + self.msm_a
            + self.msm_b_g1
            + self.msm_b_g2
            + self.finalize
    }
    /// `(name, seconds)` per stage, in pipeline order.
    pub fn stages(&self) -> [(&'static str, f64); 8] {
        [
            ("synthesize", self.synthesize.as_secs_f64()),
            ("ntt_h", self.ntt_h.as_secs_f64()),
            ("msm_h", self.msm_h.as_secs_f64()),
            ("msm_l", self.msm_l.as_secs_f64()),
            ("msm_a", self.msm_a.as_secs_f64()),
            ("msm_b_g1", self.msm_b_g1.as_secs_f64()),
            ("msm_b_g2", self.msm_b_g2.as_secs_f64()),
            ("finalize", self.finalize.as_secs_f64()),
        ]
    }
}

/// What `prove_start` hands to `finalize`: the h sum (a, b, c are already released).
#[derive(Debug)]
pub struct ProveStart {
    h: G1Projective,
    timings: StageTimings,
}

impl ProveStart {
    pub fn h(&self) -> &G1Projective {
        &self.h
    }
    pub fn timings(&self) -> &StageTimings {
        &self.timings
    }
}

/// The stages of one proof, each a tracing span named as in the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Synthesize,
    NttH,
    MsmH,
    MsmL,
    MsmA,
    MsmBG1,
    MsmBG2,
    /// The proof formula after the MSMs.
    Finalize,
}

/// Runs `f` inside the tracing span of `stage`, adding its wall time to `slot`.
pub(crate) fn stage<T>(stage: Stage, slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    // One static span per stage (tracing needs literal names).
    let out = match stage {
        Stage::Synthesize => tracing::info_span!("synthesize").in_scope(f),
        Stage::NttH => tracing::info_span!("ntt_h").in_scope(f),
        Stage::MsmH => tracing::info_span!("msm_h").in_scope(f),
        Stage::MsmL => tracing::info_span!("msm_l").in_scope(f),
        Stage::MsmA => tracing::info_span!("msm_a").in_scope(f),
        Stage::MsmBG1 => tracing::info_span!("msm_b_g1").in_scope(f),
        Stage::MsmBG2 => tracing::info_span!("msm_b_g2").in_scope(f),
        Stage::Finalize => tracing::info_span!("finalize").in_scope(f),
    };
    *slot += t0.elapsed();
    out
}

/// The Groth16 prover over one parameter set, on a backend's operations `O` (the CPU's by
/// default). See the module docs.
pub struct Prover<O: ProverOps = CpuOps> {
    params: Arc<Parameters>,
    memory: ProverMemory,
    ops: O,
}

impl<O: ProverOps> std::fmt::Debug for Prover<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prover").field("params", &self.params).field("ops", &self.ops).finish()
    }
}

impl Prover<CpuOps> {
    /// A CPU prover over `params` whose buffers come from `memory` (checked to fit the params).
    pub fn with_memory(params: Arc<Parameters>, memory: ProverMemory) -> Result<Prover> {
        let twiddles = memory.twiddles.clone().ok_or(Groth16Error::ShapeMismatch {
            section: "twiddles (none reserved for the CPU's NTTs)",
            params_len: params.domain_size(),
            circuit_len: 0,
        })?;
        let ops = CpuOps::new(params.clone(), twiddles)?;
        Prover::from_ops(params, memory, ops)
    }

    /// Reserves the prover's own memory (charged to `ledger`) for `proofs_in_flight` proofs.
    pub fn new(
        params: Arc<Parameters>,
        ledger: &Arc<Ledger>,
        region: RegionConfig,
        proofs_in_flight: usize,
    ) -> Result<Prover> {
        let memory =
            ProverMemory::reserve(&ProofShape::of_params(&params), proofs_in_flight, ledger, region)?;
        Prover::with_memory(params, memory)
    }

    /// A prover with its own unlimited ledger and heap-backed memory (tests, tools).
    pub fn with_heap_pool(params: Arc<Parameters>) -> Result<Prover> {
        Prover::new(params, &Ledger::unlimited(), RegionConfig::heap(), 1)
    }
}

impl<O: ProverOps> Prover<O> {
    /// A prover on a backend's operations `ops` (made for `params`), its split vectors
    /// leased from `memory` (checked to fit the params).
    pub fn from_ops(params: Arc<Parameters>, memory: ProverMemory, ops: O) -> Result<Prover<O>> {
        let shape = ProofShape::of_params(&params);
        if !ops.proves_from_witness() {
            let have = memory.scalars.as_ref().map_or(0, |p| p.slab_bytes());
            if have < shape.scalar_slab_bytes() {
                return Err(Groth16Error::ShapeMismatch {
                    section: "scalar slabs (bytes)",
                    params_len: shape.scalar_slab_bytes(),
                    circuit_len: have,
                });
            }
        }
        Ok(Prover { params, memory, ops })
    }

    pub fn params(&self) -> &Arc<Parameters> {
        &self.params
    }
    pub fn memory(&self) -> &ProverMemory {
        &self.memory
    }
    /// The backend's operations.
    pub fn ops(&self) -> &O {
        &self.ops
    }

    fn lease<T: arenaprove_arena::Plain>(&self, count: usize) -> Result<SlabVec<T>> {
        let bytes = (count * std::mem::size_of::<T>()).max(1);
        let pool = self.memory.scalars.as_ref().ok_or(Groth16Error::ShapeMismatch {
            section: "scalar slabs (none reserved)",
            params_len: bytes,
            circuit_len: 0,
        })?;
        Ok(SlabVec::new(pool.lease(bytes, LEASE_TIMEOUT)?))
    }

    /// Checks that the parameters were made for this witness's circuit.
    pub fn check_witness(&self, w: &dyn ProverWitness) -> Result<Domain> {
        let p = &self.params;
        let domain = Domain::new(w.num_constraints())?;
        let inputs = w.input_assignment().len();
        let aux = w.aux_assignment().len();
        same_len("vk.ic", p.vk.ic.len(), inputs)?;
        same_len("h", p.h().len(), domain.size - 1)?;
        same_len("l", p.l().len(), aux)?;
        let (a_aux, b_in, b_aux) = (w.a_aux_density(), w.b_input_density(), w.b_aux_density());
        same_len("a_aux_density", a_aux.len(), aux)?;
        same_len("b_input_density", b_in.len(), inputs)?;
        same_len("b_aux_density", b_aux.len(), aux)?;
        same_len("a", p.a().len(), inputs + a_aux.count_ones())?;
        let b_points = b_in.count_ones() + b_aux.count_ones();
        same_len("b_g1", p.b_g1().len(), b_points)?;
        same_len("b_g2", p.b_g2().len(), b_points)?;
        Ok(domain)
    }

    /// Stage 1: the h quotient (a, b, c padded to the domain, or computed by the backend
    /// from the recording when synthesis deferred them), the h MSM; then a, b, c go back.
    pub fn prove_start(&self, w: &mut dyn ProverWitness) -> Result<ProveStart> {
        let domain = self.check_witness(w)?;
        let mut t = StageTimings::default();
        let dev = &mut t.device;
        let h = match w.deferred_products() {
            Some(rows) => {
                let rows = rows.clone();
                if rows.rows() + w.input_assignment().len() != w.num_constraints() {
                    return Err(Groth16Error::ShapeMismatch {
                        section: "recorded rows + input rows",
                        params_len: rows.rows() + w.input_assignment().len(),
                        circuit_len: w.num_constraints(),
                    });
                }
                let (inputs, aux) = (w.input_assignment(), w.aux_assignment());
                let quotient = stage(Stage::NttH, &mut t.ntt_h, || {
                    self.ops.h_quotient_rows(&domain, &rows, inputs, aux, &mut dev.ntt_h)
                })?;
                stage(Stage::MsmH, &mut t.msm_h, || self.ops.msm_h(quotient, &mut dev.msm_h))?
            }
            None => {
                // The padding to the domain (zeros past the constraints) counts as ntt_h.
                let t_pad = Instant::now();
                let [a, b, c] = w.abc_padded_mut(domain.size)?;
                t.ntt_h += t_pad.elapsed();
                let quotient = stage(Stage::NttH, &mut t.ntt_h, || {
                    self.ops.h_quotient(&domain, a, b, c, &mut dev.ntt_h)
                })?;
                stage(Stage::MsmH, &mut t.msm_h, || self.ops.msm_h(quotient, &mut dev.msm_h))?
            }
        };
        w.release_abc();
        Ok(ProveStart { h, timings: t })
    }

    /// Stage 2: the L, A, B_G1, B_G2 MSMs and the proof.
    pub fn finalize(
        &self,
        start: ProveStart,
        w: &dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        let p = &self.params;
        let vk = &p.vk;
        if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
            return Err(Groth16Error::Degenerate("verifying key: delta is the point at infinity".into()));
        }
        // Again (a few counts): `finalize` may be handed another witness than `prove_start`
        // was; every split vector below then has exactly its query's length.
        self.check_witness(w)?;
        let mut t = start.timings;
        let (l, a_sum, b1, b2) = if self.ops.proves_from_witness() {
            self.witness_msms(w, &mut t)?
        } else {
            self.split_vector_msms(w, &mut t)?
        };
        let sums = MsmSums { h: start.h, l, a: a_sum, b_g1: b1, b_g2: b2 };
        let proof = stage(Stage::Finalize, &mut t.finalize, || combine_proof(vk, &sums, r, s));
        Ok((proof, t))
    }

    /// The L, A, B_G1 and B_G2 sums over split vectors the prover builds on the host, in
    /// slabs leased for this proof.
    fn split_vector_msms(&self, w: &dyn ProverWitness, t: &mut StageTimings) -> Result<WitnessSums> {
        let p = &self.params;
        let dev = &mut t.device;
        let ops = &self.ops;
        let inputs = w.input_assignment();
        let aux = w.aux_assignment();
        // L: all aux, full density. Its bytes are reused for the A and B split vectors.
        // Each call's timer covers its lease and its vector's construction, so the stage's
        // timer is accounted for by its calls (the timeline's gap).
        let (l, aux_bytes) = stage(Stage::MsmL, &mut t.msm_l, || -> Result<_> {
            let mut aux_bytes = self.lease::<ScalarBytes>(aux.len())?;
            aux_bytes.extend_par_map(aux, |s| s.to_bytes_le())?;
            Ok((ops.msm_g1(G1Query::L, &aux_bytes, &mut dev.msm_l)?, aux_bytes))
        })?;
        // Public inputs are few (PoRep: 328): a small heap Vec, one per proof.
        let input_bytes: Vec<ScalarBytes> = inputs.iter().map(|s| s.to_bytes_le()).collect();

        // A: every input (full density through the input constraints), then dense aux.
        let a_sum = stage(Stage::MsmA, &mut t.msm_a, || -> Result<G1Projective> {
            let mut v = self.lease::<ScalarBytes>(p.a().len())?;
            v.extend_from_slice(&input_bytes)?;
            append_dense(&mut v, &aux_bytes, w.a_aux_density())?;
            ops.msm_g1(G1Query::A, &v, &mut dev.msm_a)
        })?;
        // B: dense inputs, then dense aux; one split vector for G1 and G2.
        let (b1, b_vec) = stage(Stage::MsmBG1, &mut t.msm_b_g1, || -> Result<_> {
            let mut b_vec = self.lease::<ScalarBytes>(p.b_g1().len())?;
            append_dense(&mut b_vec, &input_bytes, w.b_input_density())?;
            append_dense(&mut b_vec, &aux_bytes, w.b_aux_density())?;
            drop(aux_bytes);
            Ok((ops.msm_g1(G1Query::BG1, &b_vec, &mut dev.msm_b_g1)?, b_vec))
        })?;
        let b2 =
            stage(Stage::MsmBG2, &mut t.msm_b_g2, || ops.msm_g2(G2Query::BG2, &b_vec, &mut dev.msm_b_g2))?;
        Ok((l, a_sum, b1, b2))
    }

    /// The same sums with the backend building each split vector from the assignment
    /// ([`ProverOps::proves_from_witness`]): the host leases nothing; only the inputs (a
    /// few hundred) are converted here.
    fn witness_msms(&self, w: &dyn ProverWitness, t: &mut StageTimings) -> Result<WitnessSums> {
        let dev = &mut t.device;
        let ops = &self.ops;
        let aux = w.aux_assignment();
        let input_bytes: Vec<ScalarBytes> = w.input_assignment().iter().map(|s| s.to_bytes_le()).collect();
        let b_inputs: Vec<ScalarBytes> = {
            let d = w.b_input_density();
            input_bytes.iter().enumerate().filter(|&(i, _)| d.get(i)).map(|(_, b)| *b).collect()
        };
        // The aux is made ready once for the four (its copy counts as L's).
        let (l, mut held) = stage(Stage::MsmL, &mut t.msm_l, || -> Result<_> {
            let mut held = ops.witness_begin(aux, &mut dev.msm_l)?;
            let s = WitnessScalars { head: &[], aux, density: None };
            Ok((ops.msm_witness_g1(&mut held, G1Query::L, s, &mut dev.msm_l)?, held))
        })?;
        let a_sum = stage(Stage::MsmA, &mut t.msm_a, || {
            let s = WitnessScalars { head: &input_bytes, aux, density: Some(w.a_aux_density()) };
            ops.msm_witness_g1(&mut held, G1Query::A, s, &mut dev.msm_a)
        })?;
        let b = WitnessScalars { head: &b_inputs, aux, density: Some(w.b_aux_density()) };
        let b1 = stage(Stage::MsmBG1, &mut t.msm_b_g1, || {
            ops.msm_witness_g1(&mut held, G1Query::BG1, b, &mut dev.msm_b_g1)
        })?;
        let b2 = stage(Stage::MsmBG2, &mut t.msm_b_g2, || {
            ops.msm_witness_g2(&mut held, G2Query::BG2, b, &mut dev.msm_b_g2)
        })?;
        Ok((l, a_sum, b1, b2))
    }

    /// Both stages with the caller's randomness (bellperson's `create_proof(.., r, s)`).
    pub fn prove_with_randomness(
        &self,
        w: &mut dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        let start = self.prove_start(w)?;
        self.finalize(start, w, r, s)
    }

    /// Both stages with fresh randomness from `rng`.
    pub fn prove<R: RngCore>(&self, w: &mut dyn ProverWitness, rng: &mut R) -> Result<(Proof, StageTimings)> {
        let r = Scalar::random(&mut *rng);
        let s = Scalar::random(&mut *rng);
        self.prove_with_randomness(w, r, s)
    }

    /// Synthesizes `circuit` (bellperson-identical heap synthesis), then proves it.
    pub fn prove_circuit<C: bellpepper_core::Circuit<Scalar>>(
        &self,
        circuit: C,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        crate::backend::prove_circuit(self, circuit, r, s)
    }
}

/// The L, A, B_G1 and B_G2 sums of one proof.
type WitnessSums = (G1Projective, G1Projective, G1Projective, G2Projective);

/// The five MSM sums of one proof.
#[derive(Clone, Copy, Debug)]
struct MsmSums {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: G2Projective,
}

/// The proof from the MSM sums, exactly as bellperson 0.27 combines them:
/// `A = alpha + a + r delta`, `B = beta + b2 + s delta`,
/// `C = s A + r (beta + b1 + s delta) - r s delta + H + L`.
fn combine_proof(vk: &super::VerifyingKey, m: &MsmSums, r: Scalar, s: Scalar) -> Proof {
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let g_a = G1Projective::from(vk.alpha_g1) + m.a + delta_g1 * r;
    let g_b = G2Projective::from(vk.beta_g2) + m.b_g2 + G2Projective::from(vk.delta_g2) * s;
    let b1_full = G1Projective::from(vk.beta_g1) + m.b_g1 + delta_g1 * s;
    let g_c = g_a * s + b1_full * r - delta_g1 * (r * s) + m.h + m.l;
    let mut aff = [blstrs::G1Affine::identity(); 2];
    G1Projective::batch_normalize(&[g_a, g_c], &mut aff);
    Proof { a: aff[0], b: g_b.to_affine(), c: aff[1] }
}

/// Appends `src[i]` for every set bit `i` of `density`, in parallel over word-aligned chunks:
/// the density filter of the A and B split vectors (the caller has checked the densities
/// against the witness, `Prover::check_witness`).
fn append_dense(dst: &mut SlabVec<ScalarBytes>, src: &[ScalarBytes], density: Density<'_>) -> Result<()> {
    assert_eq!(src.len(), density.len(), "density covers {} variables, {} scalars", density.len(), src.len());
    let chunks = src.len().div_ceil(FILTER_CHUNK_BITS);
    let counts: Vec<usize> = (0..chunks)
        .into_par_iter()
        .map(|k| {
            let end = ((k + 1) * FILTER_CHUNK_BITS).min(src.len());
            // Chunks start on a word boundary (FILTER_CHUNK_BITS is a multiple of 64).
            Density::new(&density.words()[k * FILTER_CHUNK_BITS / 64..], end - k * FILTER_CHUNK_BITS)
                .count_ones()
        })
        .collect();
    let total: usize = counts.iter().sum();
    let out = dst.extend_stale(total)?;
    let mut parts = Vec::with_capacity(chunks);
    let mut rest = out;
    for (k, &c) in counts.iter().enumerate() {
        let (head, tail) = rest.split_at_mut(c);
        parts.push((k, head));
        rest = tail;
    }
    parts.into_par_iter().for_each(|(k, part)| {
        let end = ((k + 1) * FILTER_CHUNK_BITS).min(src.len());
        let mut j = 0;
        let first = k * FILTER_CHUNK_BITS;
        for (i, v) in src[first..end].iter().enumerate() {
            if density.get(first + i) {
                part[j] = *v;
                j += 1;
            }
        }
        debug_assert_eq!(j, part.len());
    });
    Ok(())
}
