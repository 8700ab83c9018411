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

use arenaprove_circuits::ProverWitness;
use blstrs::Scalar;

use crate::groth16::error::Result;
use crate::groth16::{Parameters, Proof, ProveStart, StageTimings};
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
