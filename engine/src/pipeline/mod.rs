//! The long-lived engine: a pipeline of partition *slots* over memory reserved at start.
//!
//! ```text
//! submit(job) -> [dispatch queue] -> dispatcher: waits for a free slot (backpressure)
//!   -> synthesis workers (rayon pool): ArenaAssignment from the slot's slabs
//!   -> [prover queue, depth = slots] -> prover thread: prove_start (a, b, c handed back after h)
//!   -> [finalize queue, depth = slots] -> finalizer thread: finalize, verify, handback, slot freed
//! ```
//!
//! Memory is `slots` x (one partition's working set) + one twiddle table per domain, all
//! reserved by [`Engine::new`] through [`MemoryPlan::reserve`] from the shapes of the
//! circuit kinds it serves (the prover's split vectors reuse the a, b, c slabs once h is
//! out), after which the arena is frozen ([`arenaprove_arena::Ledger::freeze`]): the steady state reserves
//! nothing. A slot is held from synthesis until the proof is handed back, so at most
//! `slots` partitions are ever in flight and memory use is known before the first job.
//!
//! Faults stay inside their job: a circuit that errors, panics (caught) or is unsatisfiable
//! (its proof fails verification) ends that partition with a [`PartitionError`]; its
//! slabs come back through their lease guards and the next job runs. A job can be
//! cancelled ([`JobHandle::cancel`]): its partitions that have not reached the prover end
//! with [`PartitionError::Cancelled`] and give their slots back.
//!
//! Modules, each using only those listed after it: `engine` (start-up, submit, shutdown),
//! `stages` (the loops), `reserve` (where a partition's memory comes from), `precompiled`,
//! `job`, `error`, `plan`, `config`, `timeline`.

mod config;
mod engine;
mod error;
mod job;
mod plan;
mod precompiled;
mod reserve;
mod stages;
pub mod timeline;
mod work;

pub use config::{AllocMode, CircuitSpec, EngineConfig, UnknownAllocMode, SLOTS_MAX};
pub use engine::{Engine, EngineStats, ShutdownMode, ShutdownReport};
pub use error::EngineError;
pub use job::{
    generic, native, panic_message, Generic, Job, JobCanceller, JobHandle, JobOutput, Native,
    PartitionCircuit, PartitionError, PartitionOutput, Randomness,
};
pub use plan::{blst_msm_scratch_bytes, msm_heap_term, EngineMemory, MemoryPlan, PlanError, PlanTerm, Scope};
pub use precompiled::{
    precompiled, precompiled_native, precompiled_parts, PartedPrecompiled, PrecompiledCircuit,
    PrecompiledNative,
};
pub use timeline::{chrome_trace_json, Level, Span, StageGap, Timeline, Who};
pub use work::{current_work, WorkTag};
