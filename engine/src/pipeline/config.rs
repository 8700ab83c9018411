//! Engine configuration: every limit of the pipeline in one place.

use std::sync::Arc;

use arenaprove_arena::RegionConfig;

use crate::backend::{BackendFactory, CpuBackend};

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
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "slab" => Ok(AllocMode::Slab),
            "fresh" => Ok(AllocMode::Fresh),
            _ => Err(format!("unknown alloc mode '{s}' (slab|fresh)")),
        }
    }
}

/// Limits of the engine. Defaults suit the 2-core development machine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Partitions in flight at once (synthesized, proving or finalizing). Each slot owns a
    /// full working set, so memory = slots x slot bytes, known before the first job.
    pub slots: usize,
    /// Threads synthesizing partitions in parallel (at most `slots`).
    pub synth_workers: usize,
    /// Threads finalizing partitions side by side (at most `slots`); `None` takes the
    /// backend's choice ([`BackendFactory::finalize_workers`]): one on the CPU, whose MSMs
    /// already use every core; one per GPU on CUDA (a second on one GPU only queued on the
    /// device, BENCHMARKS.md).
    pub finalize_workers: Option<usize>,
    /// Jobs accepted but not yet dispatched; `submit` blocks (backpressure) beyond this.
    pub job_queue_max: usize,
    /// Partitions one job may carry (PoRep: 10).
    pub partitions_per_job_max: usize,
    /// Total bytes the engine may reserve (parameters excluded: they are loaded by the caller).
    pub memory_limit_bytes: usize,
    pub region: RegionConfig,
    pub alloc: AllocMode,
    /// Verify every proof before handing it back (~1-3 ms per proof on the dev machine).
    pub verify: bool,
    /// Makes each kind's proving backend (CPU by default; the `cuda` crate has a GPU one).
    pub backend: Arc<dyn BackendFactory>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            slots: 2,
            synth_workers: 1,
            finalize_workers: None,
            job_queue_max: 64,
            partitions_per_job_max: 64,
            memory_limit_bytes: 16 << 30,
            region: RegionConfig::default(),
            alloc: AllocMode::Slab,
            verify: true,
            backend: Arc::new(CpuBackend),
        }
    }
}

impl EngineConfig {
    /// The finalizer threads this config runs: its own choice, or the backend's capped at
    /// the slots.
    pub fn finalize_workers(&self) -> usize {
        self.finalize_workers.unwrap_or_else(|| self.backend.finalize_workers().clamp(1, self.slots.max(1)))
    }
}

/// Slots at most (each is a full partition working set).
pub const SLOTS_MAX: usize = 64;
