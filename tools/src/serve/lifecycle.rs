//! The engine's life: which circuits are loaded (parameters and precompiled constraints,
//! from the configured cache, passed explicitly: the process environment is never
//! touched), the backend it proves on, and building or stopping the one [`C2Engine`]
//! that serves them.
//!
//! A GPU named in the configuration that does not open is an error naming the GPU and why
//! ([`StartError::Gpu`] at start, the RPC's status on a rebuild), unless `gpus.fallback =
//! "cpu"` allows the CPU backend.
use std::collections::BTreeMap;
use std::sync::Arc;

use arenaprove::engine::pipeline::{EngineConfig, ShutdownMode, ShutdownReport};
use arenaprove::engine::{BackendFactory, CpuBackend};
use arenaprove::filecoin::params::ParamFiles;
use arenaprove::filecoin::{C2Circuit, C2Engine, FilecoinError, LoadOptions};

use super::circuits::{self, CircuitId};
use super::config::{GpuFallback, ServeConfig};
use crate::backend::{open_gpu, GpuInfo, GpuOpenError};

/// Partitions one job may carry (PoRep: 10 for 32 GiB; 1 for the sizes proven today).
pub const PARTITIONS_PER_JOB_MAX: usize = 16;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Params(#[from] FilecoinError),
    #[error("srs.preload: {0}")]
    Preload(String),
    /// The configured GPU did not open (and `gpus.fallback` does not allow the CPU).
    #[error(
        "GPU {ordinal} (gpus.devices / --gpu) does not open: {source}; set gpus.fallback = \"cpu\" to prove \
         on the CPU instead"
    )]
    Gpu {
        ordinal: u32,
        #[source]
        source: GpuOpenError,
    },
    #[error("starting the dispatcher thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// One circuit's parameters, loaded.
pub struct Loaded {
    pub circuit: C2Circuit,
    /// The parameter file's size (what EvictSRS frees).
    pub size_bytes: u64,
}

/// The engine (none while no parameters are loaded) and the circuits loaded.
#[derive(Default)]
pub struct Engines {
    pub running: Option<Running>,
    pub loaded: BTreeMap<CircuitId, Loaded>,
}

/// An engine and the GPU it proves on: taken, stopped and put back together.
#[derive(Clone)]
pub struct Running {
    pub c2: Arc<C2Engine>,
    /// The engine's GPU (GetStatus), `None` on the CPU backend.
    pub gpu: Option<GpuInfo>,
}

/// The files of `id`'s parameters in the configured cache.
pub fn param_files(config: &ServeConfig, id: CircuitId) -> Result<ParamFiles, FilecoinError> {
    ParamFiles::in_dir(id.registered_proof(), &config.param_cache)
}

/// The circuits to load at start: the configured list, else every size with a params file.
pub fn preload_list(config: &ServeConfig) -> Result<Vec<CircuitId>, StartError> {
    if !config.preload.is_empty() {
        let mut ids = Vec::new();
        for s in &config.preload {
            let id = CircuitId::parse(s).map_err(StartError::Preload)?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        return Ok(ids);
    }
    let mut ids = Vec::new();
    for id in circuits::ALL {
        if param_files(config, id)?.params.is_file() {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Loads `id`'s parameters (and its precompiled constraints, unless configured otherwise).
pub fn load(config: &ServeConfig, id: CircuitId) -> Result<Loaded, FilecoinError> {
    let files = param_files(config, id)?;
    let options = LoadOptions { checked: config.checked, precompiled: config.precompiled };
    let circuit = C2Circuit::load(id.registered_proof(), &files, options)?;
    let size_bytes = std::fs::metadata(&files.params).map(|m| m.len()).unwrap_or(0);
    tracing::info!(circuit = %id, synthesis = %circuit.synthesis().describe(), "circuit loaded");
    Ok(Loaded { circuit, size_bytes })
}

/// A configured GPU that does not open.
#[derive(Debug, thiserror::Error)]
#[error("GPU {ordinal} does not open: {source}")]
pub struct GpuError {
    pub ordinal: u32,
    #[source]
    pub source: GpuOpenError,
}

/// Why an engine could not be rebuilt or stopped (PreloadSRS, EvictSRS).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("{0}")]
    Engine(#[from] FilecoinError),
    /// The engine could not stop: a job still holds it (it stays installed).
    #[error("the engine is still in use by a job; it was not stopped")]
    EngineBusy,
}

/// An engine over `circuits` on `backend` (from [`backend`]: a fresh GPU factory per
/// engine, so its device arena is sized for exactly these circuits and freed with the
/// engine). No circuit: no engine.
pub fn build(
    config: &ServeConfig,
    circuits: Vec<C2Circuit>,
    backend: Backend,
) -> Result<Option<Running>, FilecoinError> {
    if circuits.is_empty() {
        return Ok(None);
    }
    let (backend, gpu) = backend;
    let engine_config = EngineConfig {
        backend,
        slots: config.slots,
        synth_workers: config.synth_workers,
        // The dispatcher never has more than slots + one job's partitions at the engine,
        // so its submit never blocks.
        job_queue_max: config.slots + PARTITIONS_PER_JOB_MAX,
        partitions_per_job_max: PARTITIONS_PER_JOB_MAX,
        memory_limit_bytes: config.memory_limit_bytes,
        verify: true,
        ..EngineConfig::default()
    };
    let engine = C2Engine::new(engine_config, circuits)?;
    Ok(Some(Running { c2: Arc::new(engine), gpu }))
}

/// A backend factory and the GPU it proves on (`None`: the CPU).
pub type Backend = (Arc<dyn BackendFactory>, Option<GpuInfo>);

/// The configured backend: the GPU when one is named and opens; the CPU when none is
/// named, or when it does not open and `gpus.fallback = "cpu"`.
pub fn backend(config: &ServeConfig) -> Result<Backend, GpuError> {
    let Some(ordinal) = config.gpu else {
        return Ok((Arc::new(CpuBackend), None));
    };
    match open_gpu(ordinal) {
        Ok((factory, info)) => Ok((factory, Some(info))),
        Err(reason) if config.gpu_fallback == GpuFallback::Cpu => {
            tracing::warn!(ordinal, %reason, "GPU does not open; proving on the CPU (gpus.fallback = \"cpu\")");
            Ok((Arc::new(CpuBackend), None))
        }
        Err(source) => Err(GpuError { ordinal, source }),
    }
}

/// Shuts an engine down once nothing else holds it; its report (every slab back).
/// Gives the engine back when something else still holds it.
pub fn stop(running: Running) -> Result<ShutdownReport, Running> {
    let Running { c2, gpu } = running;
    let engine = Arc::try_unwrap(c2).map_err(|c2| Running { c2, gpu })?;
    let report = engine.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        tracing::error!(slabs = report.slabs_outstanding, "engine stopped with slabs outstanding");
    }
    Ok(report)
}

impl Engines {
    /// The circuits loaded, as an engine takes them (cheap: shared parameters).
    pub fn circuits(&self) -> Vec<C2Circuit> {
        self.loaded.values().map(|l| l.circuit.clone()).collect()
    }
}
