//! The engine's face of a prover: [`Backend`], the object the pipeline, filecoin C2,
//! `bench-prove` and [`prove_circuit`] prove through, in two stages:
//!
//! * [`Backend::prove_start`] reads a, b, c (h, the h MSM) and hands them back to their
//!   pool before it returns (`ProverWitness::release_abc`);
//! * [`Backend::finalize`] reads the assignment and densities (L, A, B MSMs) and returns
//!   the proof, exactly as bellperson 0.27 combines it.
//!
//! It is implemented once, by the one Groth16 prover [`Prover<O>`] over any backend's
//! device operations `O` ([`ProverOps`]). What differs between the CPU and a GPU is only
//! those operations and what a [`BackendFactory`] reserves for them:
//!
//! ```text
//!   Engine / C2 driver / bench ──> dyn Backend ──> Prover<O>   (checks, leases, density split,
//!                                                    │          spans, timings, proof formula)
//!                                                    └─ O: ProverOps  h_quotient · msm_h ·
//!                                                          msm_g1(query) · msm_g2(query)
//!                                      CpuOps (NTT + blst)   CudaOps (kernels, resident bases)
//! ```
//!
//! A factory owns its backends' resident parameters and whatever it holds beyond the
//! engine's shared pools (device buffers, pinned staging), which it reports as
//! [`BackendFactory::plan_terms`], so that [`crate::pipeline::MemoryPlan`] is the whole bill.

use std::sync::Arc;
use std::time::Duration;

use arenaprove_arena::SharedHook;
use arenaprove_circuits::{Precompiled, ProverWitness};
use bellpepper_core::Circuit;
use blstrs::Scalar;

use crate::groth16::error::Result;
use crate::groth16::prover::{stage, Stage};
use crate::groth16::{
    Parameters, Proof, ProofShape, ProveStart, Prover, ProverMemory, ProverOps, StageTimings,
};
use crate::pipeline::PlanTerm;

/// A Groth16 prover for one parameter set, as the engine holds it (see the module docs).
/// Object safe; its one implementation is [`Prover<O>`].
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// `"cpu"`, `"cuda"`.
    fn name(&self) -> &'static str;
    /// The parameters this backend proves with.
    fn params(&self) -> &Arc<Parameters>;
    /// Stage 1: h and its MSM; a, b, c are handed back before this returns.
    fn prove_start(&self, w: &mut dyn ProverWitness) -> Result<ProveStart>;
    /// Stage 2: the remaining MSMs and the proof.
    fn finalize(
        &self,
        start: ProveStart,
        w: &dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)>;
    /// Both stages with the caller's randomness (bellperson's `create_proof(.., r, s)`).
    fn prove_with_randomness(
        &self,
        w: &mut dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)>;
}

impl<O: ProverOps> Backend for Prover<O> {
    fn name(&self) -> &'static str {
        self.ops().name()
    }
    fn params(&self) -> &Arc<Parameters> {
        Prover::params(self)
    }
    fn prove_start(&self, w: &mut dyn ProverWitness) -> Result<ProveStart> {
        Prover::prove_start(self, w)
    }
    fn finalize(
        &self,
        start: ProveStart,
        w: &dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        Prover::finalize(self, start, w, r, s)
    }
    fn prove_with_randomness(
        &self,
        w: &mut dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        Prover::prove_with_randomness(self, w, r, s)
    }
}

/// Synthesizes `circuit` (bellperson-identical heap synthesis), then proves it on `backend`.
pub fn prove_circuit<C: Circuit<Scalar>>(
    backend: &dyn Backend,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimings)> {
    prove_synthesized(backend, || arenaprove_circuits::synthesize_heap(circuit), r, s)
}

/// Runs `synthesize` (span and timer `synthesize`), then proves its witness on `backend`:
/// one proof outside the engine's pipeline, whatever the synthesis (heap, native, arena).
pub fn prove_synthesized<W, E>(
    backend: &dyn Backend,
    synthesize: impl FnOnce() -> std::result::Result<W, E>,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimings)>
where
    W: ProverWitness,
    crate::groth16::Groth16Error: From<E>,
{
    let mut synth = Duration::ZERO;
    let mut w = stage(Stage::Synthesize, &mut synth, synthesize)?;
    let (proof, mut t) = backend.prove_with_randomness(&mut w, r, s)?;
    t.synthesize = synth;
    Ok((proof, t))
}

/// Makes a kind's [`Backend`] at engine start: how an embedder (or the CLI's `--backend`)
/// picks CPU or GPU without the engine depending on the GPU crate.
pub trait BackendFactory: Send + Sync + std::fmt::Debug {
    /// `"cpu"`, `"cuda"`.
    fn name(&self) -> &'static str;
    /// What a backend for parameters of `shape` will hold beyond the engine's pools, with
    /// `slots` partitions in flight (device terms), known before anything is reserved.
    /// `rows` is the kind's precompiled recording when its backend proves from the witness
    /// ([`BackendFactory::proves_from_witness`]) and will keep it (a GPU: resident).
    fn plan_terms(&self, _shape: &ProofShape, _rows: Option<&Precompiled>, _slots: usize) -> Vec<PlanTerm> {
        Vec::new()
    }
    /// Whether its backends prove from the witness alone ([`crate::groth16::ProverOps::proves_from_witness`]):
    /// a, b, c computed from a kind's recording and the split vectors built by the backend,
    /// so the engine plans no a, b, c slabs for kinds synthesized through a recording.
    fn proves_from_witness(&self) -> bool {
        false
    }
    /// [`BackendFactory::proves_from_witness`] for one kind: parameters of `shape` and its
    /// recording `rows`. A backend may decline for a kind whose recording it has no room
    /// for (a GPU under a device-memory budget); that kind's partitions then hold a, b, c
    /// on the host.
    fn proves_from_witness_for(&self, _shape: &ProofShape, _rows: &Precompiled) -> bool {
        self.proves_from_witness()
    }
    /// Whether its backends run NTTs on the CPU, over a host twiddle table per domain (the
    /// plan reserves one only then). The GPU's tables live in its device arena.
    fn host_twiddles(&self) -> bool {
        true
    }
    /// A hook for every host region the engine reserves (the GPU backend pins them once).
    fn region_hook(&self) -> Option<SharedHook> {
        None
    }
    /// Finalizer threads the engine runs when its config leaves it open. One suits a
    /// backend whose `finalize` keeps every core busy (the CPU's MSMs); a backend whose
    /// `finalize` waits on a device can overlap two, one's host work with the other's
    /// device time. The engine caps it at its slots.
    fn finalize_workers(&self) -> usize {
        1
    }
    /// Prover threads (`prove_start`) the engine runs: one per device the backend drives
    /// (the GPU backend over several GPUs), so each device takes its own partition's h
    /// stage. One for the CPU, whose NTTs and MSMs already use every core. The engine caps
    /// it at its slots.
    fn prover_workers(&self) -> usize {
        1
    }
    /// The backend for one kind, over the engine's memory for it; `rows` as in
    /// [`BackendFactory::plan_terms`].
    fn build(
        &self,
        params: Arc<Parameters>,
        rows: Option<Arc<Precompiled>>,
        memory: ProverMemory,
    ) -> Result<Arc<dyn Backend>>;
}

/// The CPU backend's factory (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl BackendFactory for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }
    /// blst's MSM scratch on the heap, for the largest MSM of the shape, over blst's pool
    /// (one worker per CPU).
    fn plan_terms(&self, shape: &ProofShape, _rows: Option<&Precompiled>, _slots: usize) -> Vec<PlanTerm> {
        let g1 = shape.domain_size.saturating_sub(1).max(shape.aux).max(shape.a_points).max(shape.b_points);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        vec![crate::pipeline::msm_heap_term(g1, shape.b_points, threads)]
    }
    fn build(
        &self,
        params: Arc<Parameters>,
        _rows: Option<Arc<Precompiled>>,
        memory: ProverMemory,
    ) -> Result<Arc<dyn Backend>> {
        Ok(Arc::new(Prover::with_memory(params, memory)?))
    }
}
