//! Engine configuration: every limit of the pipeline in one place.

use std::sync::Arc;

use arenaprove_arena::RegionConfig;
use arenaprove_circuits::{Precompiled, Shape};

use crate::backend::{BackendFactory, CpuBackend};
use crate::groth16::Parameters;

/// A circuit kind the engine serves: its name, its shape and its parameters, and the
/// precompiled recording its partitions are synthesized through, if any.
#[derive(Clone)]
pub struct CircuitSpec {
    pub kind: String,
    pub shape: Shape,
    pub params: Arc<Parameters>,
    /// The kind's recording, when its jobs use precompiled synthesis: with a backend that
    /// proves from the witness ([`BackendFactory::proves_from_witness`], the GPU) the
    /// backend keeps it and computes a, b, c from it, and the kind's partitions lease no
    /// a, b, c slabs. Jobs of the kind must then be synthesized through this recording.
    pub matrices: Option<Arc<Precompiled>>,
}

impl CircuitSpec {
    /// A kind without a recording (its partitions hold a, b, c on the host).
    pub fn new(kind: impl Into<String>, shape: Shape, params: Arc<Parameters>) -> CircuitSpec {
        CircuitSpec { kind: kind.into(), shape, params, matrices: None }
    }

    /// The same kind synthesized through `matrices`.
    pub fn with_matrices(self, matrices: Arc<Precompiled>) -> CircuitSpec {
        CircuitSpec { matrices: Some(matrices), ..self }
    }
}

/// Where a partition's large vectors come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocMode {
    /// Slabs reserved at start, lent per partition and handed back by reset (the design).
    Slab,
    /// The reference stack's way, as a baseline: every partition maps fresh, un-faulted
    /// memory for its vectors and unmaps it synchronously on the finalizer thread when done.
    Fresh,
}

impl std::str::FromStr for AllocMode {
    type Err = UnknownAllocMode;
    fn from_str(s: &str) -> Result<Self, UnknownAllocMode> {
        match s {
            "slab" => Ok(AllocMode::Slab),
            "fresh" => Ok(AllocMode::Fresh),
            _ => Err(UnknownAllocMode(s.to_string())),
        }
    }
}

/// A name that is not an [`AllocMode`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown alloc mode '{0}' (slab|fresh)")]
pub struct UnknownAllocMode(pub String);

/// Limits of the engine. Defaults suit the 2-core development machine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Partitions in flight at once (synthesized, proving or finalizing). Each slot owns a
    /// full working set, so memory = slots x slot bytes, known before the first job.
    pub slots: usize,
    /// Threads synthesizing partitions in parallel (at most `slots`).
    pub synth_workers: usize,
    /// Threads one partition's synthesis may spread its own parallel work over (the
    /// parallel witness's parts, the host products), shared by every synthesis worker;
    /// `None`: one per core. Without this pool a partition's parallel work would run on
    /// the synthesis workers' own pool, i.e. serially with one worker.
    pub witness_threads: Option<usize>,
    /// Threads finalizing partitions side by side (at most `slots`); `None` takes the
    /// backend's choice ([`BackendFactory::finalize_workers`]): one on the CPU, whose MSMs
    /// already use every core; one per GPU on CUDA (a second on one GPU only queued on the
    /// device, BENCHMARKS.md).
    pub finalize_workers: Option<usize>,
    /// Partitions accepted but not yet given a slot: the dispatcher's priority queue holds
    /// up to this many and its channel as many again; `submit` blocks (backpressure) beyond.
    pub job_queue_max: usize,
    /// Partitions one job may carry (PoRep: 10).
    pub partitions_per_job_max: usize,
    /// Host bytes the engine may hold: every region it reserves (slabs rounded as the pools
    /// carve them, with their free bitmaps: [`MemoryPlan::region_bytes`]) plus the
    /// resident parameters of every kind ([`MemoryPlan::resident_bytes`]), though the caller
    /// loads those. [`Engine::new`] refuses a plan over it before reserving anything
    /// ([`MemoryPlan::check_fits`]). Not counted: the CPU MSMs' transient heap
    /// ([`Scope::Heap`]) and device memory ([`Scope::Device`]). The slot pools are also
    /// charged to a ledger with this limit.
    ///
    /// [`MemoryPlan::region_bytes`]: super::MemoryPlan::region_bytes
    /// [`MemoryPlan::resident_bytes`]: super::MemoryPlan::resident_bytes
    /// [`MemoryPlan::check_fits`]: super::MemoryPlan::check_fits
    /// [`Engine::new`]: super::Engine::new
    /// [`Scope::Heap`]: super::Scope::Heap
    /// [`Scope::Device`]: super::Scope::Device
    pub memory_limit_bytes: usize,
    pub region: RegionConfig,
    pub alloc: AllocMode,
    /// Verify every proof before handing it back (~1-3 ms per proof on the dev machine).
    pub verify: bool,
    /// Makes each kind's proving backend (CPU by default; the `cuda` crate has a GPU one).
    pub backend: Arc<dyn BackendFactory>,
    /// Host a, b, c sets for precompiled kinds whose backend proves from the witness but
    /// keeps no recording (a GPU under a device-memory budget too small for it): such a
    /// partition leases a set only when it computes its products and hands it back after
    /// the h stage, so fewer sets than slots can serve them (less host memory; each set
    /// is busy from a partition's products to its h stage, so too few sets make the
    /// products wait: with 2 sets for 8 slots, two 32 GiB sectors did not finish in 240 s
    /// where 4 slots with a set each took 151 s, BENCHMARKS.md). `None`: one set per slot
    /// (no waiting; the host memory of a, b, c per slot).
    pub late_abc_sets: Option<usize>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            slots: 2,
            synth_workers: 1,
            witness_threads: None,
            finalize_workers: None,
            job_queue_max: 64,
            partitions_per_job_max: 64,
            memory_limit_bytes: 16 << 30,
            region: RegionConfig::default(),
            alloc: AllocMode::Slab,
            verify: true,
            backend: Arc::new(CpuBackend),
            late_abc_sets: None,
        }
    }
}

impl EngineConfig {
    /// The a, b, c sets of kinds that lease them late ([`EngineConfig::late_abc_sets`]).
    pub fn late_abc_sets(&self) -> usize {
        self.late_abc_sets.unwrap_or(self.slots).clamp(1, self.slots.max(1))
    }

    /// The finalizer threads this config runs: its own choice, or the backend's capped at
    /// the slots.
    pub fn finalize_workers(&self) -> usize {
        self.finalize_workers.unwrap_or_else(|| self.backend.finalize_workers().clamp(1, self.slots.max(1)))
    }
}

/// Slots at most (each is a full partition working set).
pub const SLOTS_MAX: usize = 64;
