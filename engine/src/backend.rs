//! The backend seam: what proves a synthesized partition. The CPU backend
//! ([`crate::Prover`]) lives here in `engine/`; the CUDA backend in `cuda/` implements the
//! same trait. The engine's pipeline, filecoin C2, `bench-prove` and [`prove_circuit`]
//! all prove through it, in the same two stages:
//!
//! * [`Backend::prove_start`] reads a, b, c (h by NTTs, the h MSM) and hands them back to
//!   their pool before it returns (`ProverWitness::release_abc`);
//! * [`Backend::finalize`] reads the assignment and densities (L, A, B MSMs) and returns
//!   the proof, exactly as bellperson 0.27 combines it.
//!
//! A backend owns its resident parameters and whatever it holds beyond the engine's shared
//! pools (device buffers, pinned staging), which it reports as [`Backend::plan_terms`], so
//! that [`crate::pipeline::MemoryPlan`] is the whole bill.
//!
//! [`prove_circuit`]: crate::groth16::prove_circuit

use std::sync::Arc;

use arenaprove_arena::SharedHook;
use arenaprove_circuits::ProverWitness;
use blstrs::Scalar;

use crate::groth16::error::Result;
use crate::groth16::{Parameters, Proof, ProofShape, ProveStart, Prover, ProverMemory, StageTimings};
use crate::pipeline::PlanTerm;

/// A Groth16 prover for one parameter set (see the module docs).
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// `"cpu"`, `"cuda:0"`, ...
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
    /// Memory this backend holds beyond the engine's shared pools (host terms and device
    /// terms), for the memory plan. The CPU backend holds none: its scalars and twiddles
    /// come from the plan's pools.
    fn plan_terms(&self) -> Vec<PlanTerm> {
        Vec::new()
    }
    /// Both stages with the caller's randomness (bellperson's `create_proof(.., r, s)`).
    fn prove_with_randomness(
        &self,
        w: &mut dyn ProverWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, StageTimings)> {
        let start = self.prove_start(w)?;
        self.finalize(start, w, r, s)
    }
}

/// Makes a kind's [`Backend`] at engine start: how an embedder (or the CLI's `--backend`)
/// picks CPU or GPU without the engine depending on the GPU crate.
pub trait BackendFactory: Send + Sync + std::fmt::Debug {
    /// `"cpu"`, `"cuda"`.
    fn name(&self) -> &'static str;
    /// What a backend for parameters of `shape` will hold beyond the engine's pools, with
    /// `slots` partitions in flight (device terms), known before anything is reserved.
    fn plan_terms(&self, _shape: &ProofShape, _slots: usize) -> Vec<PlanTerm> {
        Vec::new()
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
    /// The backend for one kind, over the engine's memory for it.
    fn build(&self, params: Arc<Parameters>, memory: ProverMemory) -> Result<Arc<dyn Backend>>;
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
    fn plan_terms(&self, shape: &ProofShape, _slots: usize) -> Vec<PlanTerm> {
        let g1 = shape.domain_size.saturating_sub(1).max(shape.aux).max(shape.a_points).max(shape.b_points);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        vec![crate::pipeline::msm_heap_term(g1, shape.b_points, threads)]
    }
    fn build(&self, params: Arc<Parameters>, memory: ProverMemory) -> Result<Arc<dyn Backend>> {
        Ok(Arc::new(Prover::with_memory(params, memory)?))
    }
}
