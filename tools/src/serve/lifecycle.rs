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
use arenaprove::filecoin::post::PostCircuit;
use arenaprove::filecoin::snap::{RegisteredUpdateProof, SnapCircuit};
use arenaprove::filecoin::{C2Circuit, C2Engine, FilecoinError, LoadOptions};

use super::circuits::{self, CircuitId, Family};
use super::config::Devices;
use super::config::{GpuFallback, ServeConfig};
use crate::backend::{open_gpus, GpuOpenError, GpusInfo};
pub use crate::common::{choose_sizes, EngineSizes};

/// Partitions one job may carry (PoRep: 10 for 32 GiB; 1 for the sizes proven today).
pub const PARTITIONS_PER_JOB_MAX: usize = 16;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Params(#[from] FilecoinError),
    #[error("srs.preload: {0}")]
    Preload(String),
    /// A configured GPU did not open (and `gpus.fallback` does not allow the CPU).
    #[error(
        "{which} (gpus.devices / --gpu) does not open: {source}; set gpus.fallback = \"cpu\" to prove \
         on the CPU instead"
    )]
    Gpu {
        /// `"GPU 1"`, `"GPUs [0, 1]"`.
        which: String,
        #[source]
        source: GpuOpenError,
    },
    #[error("starting the dispatcher thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// One circuit's parameters, loaded.
pub struct Loaded {
    pub circuit: LoadedCircuit,
    /// The parameter file's size (what EvictSRS frees).
    pub size_bytes: u64,
}

/// A loaded PoRep or PoSt circuit (cheap to clone: shared parameters).
#[derive(Clone)]
pub enum LoadedCircuit {
    Porep(C2Circuit),
    Post(PostCircuit),
    Snap(SnapCircuit),
}

impl LoadedCircuit {
    /// How its partitions are synthesized, for people.
    pub fn describe(&self) -> String {
        match self {
            LoadedCircuit::Porep(c) => c.synthesis().describe(),
            LoadedCircuit::Post(c) => c.synthesis().describe(),
            LoadedCircuit::Snap(c) => c.synthesis().describe(),
        }
    }
}

/// The circuits an engine serves, by family.
pub type CircuitSet = arenaprove::filecoin::Circuits;

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
    /// The engine's GPUs (GetStatus, metrics), `None` on the CPU backend.
    pub gpus: Option<GpusInfo>,
    /// Its slots and synthesis workers, and why.
    pub sizes: EngineSizes,
}

/// The files of `id`'s parameters in the configured cache.
pub fn param_files(config: &ServeConfig, id: CircuitId) -> Result<ParamFiles, FilecoinError> {
    if id.family == Family::Snap {
        return RegisteredUpdateProof::for_size(id.size).param_files(&config.param_cache);
    }
    match (id.registered_proof(), id.post_proof()) {
        (Some(seal), _) => ParamFiles::in_dir(seal, &config.param_cache),
        (None, Some(post)) => post.param_files(&config.param_cache),
        (None, None) => Err(FilecoinError::Internal(format!("{id}: no registered proof"))),
    }
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
    // srs.checked on a GPU daemon: the subgroup tests on its first GPU.
    let gpu = match &config.devices {
        _ if !config.checked => None,
        Devices::Cpu => None,
        Devices::AllVisible => Some(0),
        Devices::Gpus(named) => named.first().map(|&o| o as usize),
    };
    let options = LoadOptions {
        checked: config.checked,
        precompiled: config.precompiled,
        subgroup_check: crate::backend::subgroup_check_source(gpu),
    };
    let circuit = match (id.family, id.registered_proof(), id.post_proof()) {
        (Family::Porep, Some(seal), _) => LoadedCircuit::Porep(C2Circuit::load(seal, &files, options)?),
        (Family::Snap, _, _) => LoadedCircuit::Snap(SnapCircuit::load(
            RegisteredUpdateProof::for_size(id.size),
            &config.param_cache,
            options,
        )?),
        (_, _, Some(post)) => LoadedCircuit::Post(PostCircuit::load(post, &config.param_cache, options)?),
        _ => return Err(FilecoinError::Internal(format!("{id}: no registered proof"))),
    };
    let size_bytes = std::fs::metadata(&files.params).map(|m| m.len()).unwrap_or(0);
    tracing::info!(circuit = %id, synthesis = %circuit.describe(), "circuit loaded");
    Ok(Loaded { circuit, size_bytes })
}

/// Configured GPUs that do not open.
#[derive(Debug, thiserror::Error)]
#[error("{which} does not open: {source}")]
pub struct GpuError {
    /// `"GPU 1"`, `"GPUs [0, 1]"`.
    pub which: String,
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
    circuits: CircuitSet,
    backend: Backend,
) -> Result<Option<Running>, FilecoinError> {
    if circuits.is_empty() {
        return Ok(None);
    }
    let (backend, gpus) = backend;
    let devices = gpus.as_ref().map_or(1, |g| g.count);
    let sizes = engine_sizes(config, &circuits, &backend, devices);
    tracing::info!(
        slots = sizes.slots,
        synth_workers = sizes.synth_workers,
        memory_limit_mib = config.memory_limit_bytes >> 20,
        "engine sizes: {}",
        sizes.why
    );
    let engine_config = engine_config(config, backend, sizes.slots, sizes.synth_workers);
    let engine = C2Engine::with_circuits(engine_config, circuits)?;
    Ok(Some(Running { c2: Arc::new(engine), gpus, sizes }))
}

/// The engine's configuration for `slots` partitions in flight.
fn engine_config(
    config: &ServeConfig,
    backend: Arc<dyn BackendFactory>,
    slots: usize,
    synth_workers: usize,
) -> EngineConfig {
    EngineConfig {
        backend,
        slots,
        synth_workers,
        // The dispatcher never has more than slots + PARTITIONS_PER_JOB_MAX partitions at
        // the engine (a higher job overtaking included: JobQueue::start_next), and the
        // engine queues twice this before a submit blocks.
        job_queue_max: slots + PARTITIONS_PER_JOB_MAX,
        partitions_per_job_max: PARTITIONS_PER_JOB_MAX,
        memory_limit_bytes: config.memory_limit_bytes,
        verify: true,
        ..EngineConfig::default()
    }
}

/// The configured slots and synthesis workers, else chosen for this host
/// ([`choose_sizes`]): half the cores synthesizing, two more slots per device (one
/// partition at its prover, one at its finalizer), as many as the memory plan of
/// `circuits` fits under the memory limit.
pub fn engine_sizes(
    config: &ServeConfig,
    circuits: &CircuitSet,
    backend: &Arc<dyn BackendFactory>,
    devices: usize,
) -> EngineSizes {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let specs = circuits.specs();
    // Only a plan over the memory limit means "fewer slots": any other refusal (a
    // configuration or parameters error) is the engine's to report with its first size.
    let fits = |slots: usize, synth: usize| {
        use arenaprove::engine::pipeline::{Engine, EngineError, PlanError};
        let cfg = engine_config(config, backend.clone(), slots, synth);
        !matches!(Engine::plan(&cfg, &specs), Err(EngineError::Plan(PlanError::TooLarge { .. })))
    };
    choose_sizes(config.slots, config.synth_workers, cores, devices, fits)
}

/// A backend factory and the GPUs it proves on (`None`: the CPU).
pub type Backend = (Arc<dyn BackendFactory>, Option<GpusInfo>);

/// The configured backend: the named GPUs when they open; every visible GPU when none is
/// named (the CPU, logged, where there is none: no `cuda` build, no driver, no device);
/// the CPU with `engine.backend = "cpu"`, or when a GPU does not open and
/// `gpus.fallback = "cpu"`.
pub fn backend(config: &ServeConfig) -> Result<Backend, GpuError> {
    let cpu = || -> Backend { (Arc::new(CpuBackend), None) };
    let named = match &config.devices {
        Devices::Cpu => return Ok(cpu()),
        Devices::AllVisible => &[][..],
        Devices::Gpus(named) => named.as_slice(),
    };
    match open_gpus(named, config.device_memory_bytes) {
        // open_gpus logs which GPUs (CudaFactory::describe).
        Ok((factory, info)) => Ok((factory, Some(info))),
        // Nothing named and nothing there: the CPU, said once. A visible GPU that fails to
        // open is an error like a named one (a GPU daemon on the CPU is a silent slowdown).
        Err(reason) if named.is_empty() && reason.no_gpu() => {
            tracing::warn!(%reason, "no GPU to prove on (gpus.devices = []: every visible GPU); proving on the CPU");
            Ok(cpu())
        }
        Err(reason) if config.gpu_fallback == GpuFallback::Cpu => {
            tracing::warn!(gpus = ?named, %reason, "GPU does not open; proving on the CPU (gpus.fallback = \"cpu\")");
            Ok(cpu())
        }
        Err(source) => {
            let which = match named {
                [] => "every visible GPU".to_string(),
                [one] => format!("GPU {one}"),
                many => format!("GPUs {many:?}"),
            };
            Err(GpuError { which, source })
        }
    }
}

/// Shuts an engine down once nothing else holds it; its report (every slab back).
/// Gives the engine back when something else still holds it.
pub fn stop(running: Running) -> Result<ShutdownReport, Running> {
    let Running { c2, gpus, sizes } = running;
    let engine = Arc::try_unwrap(c2).map_err(|c2| Running { c2, gpus, sizes })?;
    let report = engine.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        tracing::error!(slabs = report.slabs_outstanding, "engine stopped with slabs outstanding");
    }
    Ok(report)
}

impl Engines {
    /// The circuits loaded, as an engine takes them (cheap: shared parameters).
    pub fn circuits(&self) -> CircuitSet {
        let mut set = CircuitSet::default();
        for l in self.loaded.values() {
            match &l.circuit {
                LoadedCircuit::Porep(c) => set.porep.push(c.clone()),
                LoadedCircuit::Post(c) => set.post.push(c.clone()),
                LoadedCircuit::Snap(c) => set.snap.push(c.clone()),
            }
        }
        set
    }
}

#[cfg(test)]
mod sizes_tests {
    use super::choose_sizes;
    use arenaprove::engine::pipeline::SLOTS_MAX;

    #[test]
    fn sizes_follow_the_cores_and_the_memory_plan() {
        // 16 cores, plenty of memory: 8 synthesizing, 10 slots.
        let s = choose_sizes(None, None, 16, 1, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (10, 8), "{}", s.why);
        // Memory for 3 slots only: 3 slots, 3 synthesizing.
        let s = choose_sizes(None, None, 16, 1, |slots, _| slots <= 3);
        assert_eq!((s.slots, s.synth_workers), (3, 3), "{}", s.why);
        assert!(s.why.contains("memory limit"), "{}", s.why);
        // Two cores (CI): one synthesizing, 3 slots.
        assert_eq!(choose_sizes(None, None, 2, 1, |_, _| true).slots, 3);
        // 256 cores: within the engine's 64 slots, two of them beyond the synthesis workers.
        let s = choose_sizes(None, None, 256, 1, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (SLOTS_MAX, SLOTS_MAX - 2), "{}", s.why);
        // Nothing fits: 1 slot, and the engine's own plan check will refuse it.
        let s = choose_sizes(None, None, 16, 1, |_, _| false);
        assert_eq!((s.slots, s.synth_workers), (1, 1));
        // Configured values win.
        let s = choose_sizes(Some(4), Some(2), 16, 1, |_, _| false);
        assert_eq!((s.slots, s.synth_workers), (4, 2));
        let s = choose_sizes(Some(2), None, 16, 1, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (2, 2));
        let s = choose_sizes(None, Some(1), 16, 1, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (3, 1));
        // Two GPUs: two slots more per GPU (a partition at each prover and finalizer).
        let s = choose_sizes(None, None, 32, 2, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (20, 16), "{}", s.why);
        let s = choose_sizes(None, None, 256, 8, |_, _| true);
        assert_eq!((s.slots, s.synth_workers), (SLOTS_MAX, SLOTS_MAX - 16), "{}", s.why);
    }
}
