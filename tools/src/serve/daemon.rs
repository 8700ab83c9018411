//! The daemon's core: the job table, a bounded priority queue, and one `Engine` fed from it.
//!
//! * A job is queued by [`Daemon::submit`] after its request was checked and parsed.
//! * One dispatcher thread starts the highest-priority job (oldest first within a priority)
//!   whenever fewer partitions are in flight than the engine has slots, so a `CRITICAL`
//!   job waits only for partitions already started, never behind queued `LOW` ones; and
//!   the engine still gets the next job while the last partitions of the current one
//!   prove (synthesis overlaps proving).
//! * Each started job has a thread that builds its partition circuits, submits them to the
//!   engine, waits, checks the public inputs against filecoin-proofs' and publishes the
//!   outcome. The engine verifies every partition proof before handing it back.
//! * Limits: `pending_max` jobs queued or running (RESOURCE_EXHAUSTED beyond),
//!   `finished_keep` finished jobs remembered for AwaitProof and idempotent resubmission.
//! * PreloadSRS / EvictSRS change the engine's circuit kinds: queued jobs wait while the
//!   running ones finish, then the engine is shut down (every slab back) and rebuilt with
//!   the new set of parameters (those already loaded are shared, not read again).
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arenaprove::circuits::ArenaAssignment;
use arenaprove::engine::pipeline::{
    generic, CircuitSpec, Engine, EngineConfig, Job, JobOutput, PartitionCircuit, ShutdownMode,
    ShutdownReport,
};
use arenaprove::engine::{BackendFactory, CpuBackend};
use arenaprove::filecoin::c2::{LoadedParams, SectorJob};
use arenaprove::filecoin::params::ParamFiles;
use arenaprove::filecoin::FilecoinError;
use bellpepper_core::SynthesisError;
use tokio::sync::{oneshot, watch};
use tonic::Status;

use super::circuits::{self, CircuitId};
use super::config::ServeConfig;
use super::metrics::{self, Gauges, JobSeconds, Metrics};
use super::pb::{self, await_proof_response::Status as JobStatus, Priority, SubmitProofRequest};
use super::request::{self, PorepRequest};
use crate::backend::{gpu_factory, GpuInfo};

/// Partitions one job may carry (PoRep: 10 for 32 GiB; 1 for the sizes proven today).
const PARTITIONS_PER_JOB_MAX: usize = 16;
/// Priorities, highest first, as GetStatus and the metrics list them.
const PRIORITIES: [Priority; 4] = [Priority::Critical, Priority::High, Priority::Normal, Priority::Low];

/// What the daemon knows about one job; shared by the table, the queue and its thread.
pub struct JobEntry {
    pub id: String,
    request_id: String,
    fingerprint: u64,
    circuit: CircuitId,
    priority: Priority,
    partitions: usize,
    submitted: Instant,
    cancel: Arc<AtomicBool>,
    done: watch::Sender<Option<Arc<Outcome>>>,
}

/// How a job ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: JobStatus,
    pub proof: Vec<u8>,
    pub error: String,
    pub queue_wait_ms: u64,
    pub synthesis_ms: u64,
    pub prove_ms: u64,
    pub total_ms: u64,
}

impl Outcome {
    fn ended(status: JobStatus, error: String, entry: &JobEntry, started: Option<Instant>) -> Outcome {
        let now = Instant::now();
        Outcome {
            status,
            proof: Vec::new(),
            error,
            queue_wait_ms: ms(started.unwrap_or(now).saturating_duration_since(entry.submitted)),
            synthesis_ms: 0,
            prove_ms: 0,
            total_ms: ms(now.saturating_duration_since(entry.submitted)),
        }
    }

    /// The wire form.
    pub fn response(&self, job_id: &str) -> pb::AwaitProofResponse {
        pb::AwaitProofResponse {
            job_id: job_id.to_string(),
            status: self.status as i32,
            proof: self.proof.clone(),
            error_message: self.error.clone(),
            queue_wait_ms: self.queue_wait_ms,
            srs_load_ms: 0, // parameters are loaded before a job can be queued
            synthesis_ms: self.synthesis_ms,
            gpu_compute_ms: self.prove_ms,
            total_ms: self.total_ms,
        }
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// A queued job: ordered by priority, then submission order.
struct Queued {
    seq: u64,
    entry: Arc<JobEntry>,
    request: PorepRequest,
}

impl Queued {
    fn key(&self) -> (i32, std::cmp::Reverse<u64>) {
        (self.entry.priority as i32, std::cmp::Reverse(self.seq))
    }
}
impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Parameters loaded for one circuit.
struct Loaded {
    spec: CircuitSpec,
    params_path: PathBuf,
    size_bytes: u64,
}

enum Control {
    Load { id: CircuitId, reply: oneshot::Sender<Result<u64, Status>> },
    Evict { id: CircuitId, reply: oneshot::Sender<Result<(bool, u64), Status>> },
}

struct Sched {
    engine: Option<Arc<Engine>>,
    /// The engine's GPU (GetStatus), `None` on the CPU backend.
    gpu: Option<GpuInfo>,
    loaded: BTreeMap<CircuitId, Loaded>,
    queue: BinaryHeap<Queued>,
    jobs: HashMap<String, Arc<JobEntry>>,
    /// request_id -> job id, for idempotent resubmission.
    by_request: HashMap<String, String>,
    /// Finished job ids, oldest first (forgotten beyond `finished_keep`).
    finished: VecDeque<String>,
    /// Running job ids -> when they started.
    running: HashMap<String, Instant>,
    inflight_partitions: usize,
    draining: bool,
    stop: bool,
    controls: VecDeque<Control>,
}

struct Inner {
    config: ServeConfig,
    started: Instant,
    sched: Mutex<Sched>,
    wake: Condvar,
    metrics: Metrics,
    next_job: AtomicU64,
    dispatcher: Mutex<Option<JoinHandle<()>>>,
}

/// The daemon; cheap to clone (one shared state).
#[derive(Clone)]
pub struct Daemon {
    inner: Arc<Inner>,
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Params(#[from] FilecoinError),
    #[error("srs.param_cache: {0}")]
    Cache(String),
    #[error("engine: {0}")]
    Engine(String),
}

fn engine_config(c: &ServeConfig, backend: Arc<dyn BackendFactory>) -> EngineConfig {
    EngineConfig {
        backend,
        slots: c.slots,
        synth_workers: c.synth_workers,
        // The dispatcher never has more than slots + one job's partitions at the engine,
        // so its submit never blocks.
        job_queue_max: c.slots + PARTITIONS_PER_JOB_MAX,
        partitions_per_job_max: PARTITIONS_PER_JOB_MAX,
        memory_limit_bytes: c.memory_limit_bytes,
        verify: true,
        ..EngineConfig::default()
    }
}

/// Points filecoin-proofs at `dir`. storage-proofs-core reads the variable once per process,
/// so a process that already read another directory is refused.
fn use_param_cache(dir: &std::path::Path) -> Result<(), StartError> {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    let files = ParamFiles::for_proof(circuits::ALL[0].registered_proof())?;
    let (want, got) = (
        dir.canonicalize().unwrap_or(dir.into()),
        files.cache_dir.canonicalize().unwrap_or(files.cache_dir.clone()),
    );
    if want != got {
        return Err(StartError::Cache(format!(
            "this process already reads parameters from {} (FIL_PROOFS_PARAMETER_CACHE is read once per process), not {}",
            files.cache_dir.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The circuits to load at start: the configured list, else every size with a params file.
pub fn preload_list(config: &ServeConfig) -> Result<Vec<CircuitId>, StartError> {
    use_param_cache(&config.param_cache)?;
    if !config.preload.is_empty() {
        let mut ids = Vec::new();
        for s in &config.preload {
            let id = CircuitId::parse(s).map_err(|e| StartError::Cache(format!("srs.preload: {e}")))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        return Ok(ids);
    }
    let mut ids = Vec::new();
    for id in circuits::ALL {
        if ParamFiles::for_proof(id.registered_proof())?.params.is_file() {
            ids.push(id);
        }
    }
    Ok(ids)
}

fn load(id: CircuitId, checked: bool) -> Result<Loaded, FilecoinError> {
    let proof = id.registered_proof();
    let files = ParamFiles::for_proof(proof)?;
    let loaded = LoadedParams::load(proof, &files, checked)?;
    let size_bytes = std::fs::metadata(&files.params).map(|m| m.len()).unwrap_or(0);
    Ok(Loaded {
        spec: CircuitSpec { kind: id.name().to_string(), shape: loaded.shape, params: loaded.params },
        params_path: files.params,
        size_bytes,
    })
}

/// An engine over `loaded`, on the configured GPU (a fresh `CudaFactory` per engine, so
/// its device arena is sized for exactly these circuits and freed with the engine) or
/// the CPU.
fn build_engine(config: &ServeConfig, loaded: &BTreeMap<CircuitId, Loaded>) -> Result<Built, String> {
    if loaded.is_empty() {
        return Ok((None, None));
    }
    let (backend, gpu) = match config.gpu {
        Some(n) => gpu_factory(n),
        None => (Arc::new(CpuBackend) as Arc<dyn BackendFactory>, None),
    };
    let specs = loaded.values().map(|l| l.spec.clone()).collect();
    let engine = Engine::new(engine_config(config, backend), specs).map_err(|e| e.to_string())?;
    Ok((Some(Arc::new(engine)), gpu))
}

/// An engine (none while no parameters are loaded) and the GPU it proves on.
type Built = (Option<Arc<Engine>>, Option<GpuInfo>);

/// Takes the engine out of the scheduler (to stop or rebuild it), and its GPU with it.
fn take_engine(g: &mut Sched) -> Option<Arc<Engine>> {
    g.gpu = None;
    g.engine.take()
}

/// Shuts an engine down once nothing else holds it; its report.
fn stop_engine(engine: Arc<Engine>) -> Result<ShutdownReport, String> {
    let engine = Arc::try_unwrap(engine).map_err(|_| "the engine is still in use by a job".to_string())?;
    let report = engine.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        tracing::error!(slabs = report.slabs_outstanding, "engine stopped with slabs outstanding");
    }
    Ok(report)
}

/// A partition circuit that does nothing once its job is cancelled: a cancelled job's
/// partitions not yet synthesized end at once and free their slot.
struct Cancellable {
    inner: Box<dyn PartitionCircuit>,
    cancel: Arc<AtomicBool>,
}

impl PartitionCircuit for Cancellable {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        if self.cancel.load(Ordering::SeqCst) {
            return Err(SynthesisError::IoError(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the job was cancelled",
            )));
        }
        self.inner.synthesize_into(cs)
    }
}

impl Daemon {
    /// Loads the preload list's parameters and starts the engine and the dispatcher.
    pub fn start(config: ServeConfig) -> Result<Daemon, StartError> {
        let mut loaded = BTreeMap::new();
        for id in preload_list(&config)? {
            let started = Instant::now();
            loaded.insert(id, load(id, config.checked)?);
            tracing::info!(circuit = %id, load_ms = ms(started.elapsed()), "parameters loaded");
        }
        if loaded.is_empty() {
            tracing::warn!(cache = %config.param_cache.display(), "no parameters loaded: every PoRep request will be refused until PreloadSRS");
        }
        let (engine, gpu) = build_engine(&config, &loaded).map_err(StartError::Engine)?;
        let inner = Arc::new(Inner {
            started: Instant::now(),
            sched: Mutex::new(Sched {
                engine,
                gpu,
                loaded,
                queue: BinaryHeap::new(),
                jobs: HashMap::new(),
                by_request: HashMap::new(),
                finished: VecDeque::new(),
                running: HashMap::new(),
                inflight_partitions: 0,
                draining: false,
                stop: false,
                controls: VecDeque::new(),
            }),
            wake: Condvar::new(),
            metrics: Metrics::default(),
            next_job: AtomicU64::new(1),
            dispatcher: Mutex::new(None),
            config,
        });
        let for_thread = inner.clone();
        let handle = std::thread::Builder::new()
            .name("arenaprove-serve-dispatch".into())
            .spawn(move || dispatch_loop(for_thread))
            .map_err(|e| StartError::Engine(format!("spawning the dispatcher: {e}")))?;
        *inner.dispatcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(Daemon { inner })
    }

    pub fn config(&self) -> &ServeConfig {
        &self.inner.config
    }

    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    fn lock(&self) -> MutexGuard<'_, Sched> {
        self.inner.sched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The memory plan of the running engine, as text.
    pub fn memory_plan_text(&self) -> String {
        self.lock()
            .engine
            .as_ref()
            .map(|e| e.memory_plan().to_string())
            .unwrap_or_else(|| "no engine (no parameters loaded)\n".into())
    }

    /// Checks, parses and queues a request; the job and its queue position.
    pub async fn submit(&self, req: SubmitProofRequest) -> Result<(String, u32), Status> {
        request::check_kind(&req)?;
        let priority = request::priority(&req)?;
        let (proof, circuit) = request::check_proof(&req)?;
        let req = Arc::new(req);
        let for_hash = req.clone();
        let fp = tokio::task::spawn_blocking(move || request::fingerprint(&for_hash))
            .await
            .map_err(|e| Status::internal(format!("hashing the request: {e}")))?;
        let files = ParamFiles::for_proof(proof).map_err(|e| Status::internal(e.to_string()))?;
        // Cheap refusals and idempotent answers before the payload is parsed.
        {
            let g = self.lock();
            if let Some(found) = self.existing(&g, &req.request_id, fp)? {
                return Ok(found);
            }
            self.admit(&g, circuit, &files)?;
        }
        let for_parse = req.clone();
        let parsed = tokio::task::spawn_blocking(move || request::parse_porep(&for_parse, proof, circuit))
            .await
            .map_err(|e| Status::internal(format!("parsing the request: {e}")))??;
        debug_assert_eq!(parsed.priority, priority);

        let mut g = self.lock();
        if let Some(found) = self.existing(&g, &req.request_id, fp)? {
            return Ok(found);
        }
        self.admit(&g, circuit, &files)?;
        let n = self.inner.next_job.fetch_add(1, Ordering::SeqCst);
        let partitions = parsed.c1.partitions();
        let (done, _) = watch::channel(None);
        let entry = Arc::new(JobEntry {
            id: format!("job-{n}"),
            request_id: req.request_id.clone(),
            fingerprint: fp,
            circuit,
            priority,
            partitions,
            submitted: Instant::now(),
            cancel: Arc::new(AtomicBool::new(false)),
            done,
        });
        tracing::info!(job = %entry.id, request = %entry.request_id, circuit = %circuit, sector = parsed.sector_number, ?priority, "queued");
        g.jobs.insert(entry.id.clone(), entry.clone());
        if !entry.request_id.is_empty() {
            g.by_request.insert(entry.request_id.clone(), entry.id.clone());
        }
        let queued = Queued { seq: n, entry: entry.clone(), request: parsed };
        let position = position(&g, &queued);
        g.queue.push(queued);
        drop(g);
        self.inner.wake.notify_all();
        Ok((entry.id.clone(), position))
    }

    /// The live job a request id names, when the same content is resubmitted; an error
    /// when the id names other content. A failed or cancelled job is not reused: its
    /// request may be retried.
    fn existing(&self, g: &Sched, request_id: &str, fp: u64) -> Result<Option<(String, u32)>, Status> {
        if request_id.is_empty() {
            return Ok(None);
        }
        let Some(entry) = g.by_request.get(request_id).and_then(|id| g.jobs.get(id)) else {
            return Ok(None);
        };
        if entry.fingerprint != fp {
            return Err(Status::already_exists(format!(
                "request_id `{request_id}` names {} whose request had other contents",
                entry.id
            )));
        }
        let ended = entry.done.borrow().as_ref().map(|o| o.status);
        if matches!(ended, Some(JobStatus::Failed | JobStatus::Cancelled)) {
            return Ok(None);
        }
        let pos = g.queue.iter().find(|q| q.entry.id == entry.id).map_or(0, |q| position(g, q));
        Ok(Some((entry.id.clone(), pos)))
    }

    /// Refuses a new job when draining, when its parameters are not loaded, or when the
    /// queue is full.
    fn admit(&self, g: &Sched, circuit: CircuitId, files: &ParamFiles) -> Result<(), Status> {
        if g.draining {
            return Err(Status::unavailable("the daemon is shutting down (draining); no new jobs"));
        }
        match g.loaded.get(&circuit) {
            None => {
                files.require_params().map_err(|e| Status::failed_precondition(e.to_string()))?;
                return Err(Status::failed_precondition(format!(
                    "parameters for {circuit} ({}) are in the cache but not loaded: PreloadSRS(\"{circuit}\") or add it to srs.preload",
                    files.params.display()
                )));
            }
            Some(l) if l.params_path != files.params => {
                return Err(Status::failed_precondition(format!(
                    "this proof needs parameters {}, not loaded (loaded for {circuit}: {})",
                    files.params.display(),
                    l.params_path.display()
                )));
            }
            Some(_) => {}
        }
        let pending = g.queue.len() + g.running.len();
        if pending >= self.inner.config.pending_max {
            return Err(Status::resource_exhausted(format!(
                "queue full: {pending} jobs queued or running, queue.pending_max is {}",
                self.inner.config.pending_max
            )));
        }
        Ok(())
    }

    /// Waits for a job; `timeout_ms` 0 waits until it ends.
    pub async fn await_job(&self, job_id: &str, timeout_ms: u64) -> Result<pb::AwaitProofResponse, Status> {
        let entry = self.entry(job_id)?;
        let mut rx = entry.done.subscribe();
        let wait = async {
            let r = rx.wait_for(|o| o.is_some()).await;
            r.ok().and_then(|o| o.clone())
        };
        let outcome = if timeout_ms == 0 {
            wait.await
        } else {
            match tokio::time::timeout(Duration::from_millis(timeout_ms), wait).await {
                Ok(o) => o,
                Err(_) => {
                    return Ok(pb::AwaitProofResponse {
                        job_id: job_id.to_string(),
                        status: JobStatus::Timeout as i32,
                        error_message: format!("job {job_id} still running after {timeout_ms} ms"),
                        ..Default::default()
                    })
                }
            }
        };
        let outcome =
            outcome.ok_or_else(|| Status::internal(format!("job {job_id} ended without an outcome")))?;
        Ok(outcome.response(job_id))
    }

    fn entry(&self, job_id: &str) -> Result<Arc<JobEntry>, Status> {
        self.lock().jobs.get(job_id).cloned().ok_or_else(|| {
            Status::not_found(format!(
                "unknown job id `{job_id}` (finished jobs are remembered for the last {})",
                self.inner.config.finished_keep
            ))
        })
    }

    /// Cancels a queued or running job; whether it was running.
    pub fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        let mut g = self.lock();
        let entry = g
            .jobs
            .get(job_id)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("unknown job id `{job_id}`")))?;
        if let Some(o) = entry.done.borrow().as_ref() {
            return Err(Status::failed_precondition(format!(
                "job {job_id} already ended ({})",
                o.status.as_str_name()
            )));
        }
        entry.cancel.store(true, Ordering::SeqCst);
        let started = g.running.get(job_id).copied();
        let was_running = started.is_some();
        if !was_running {
            g.queue.retain(|q| q.entry.id != job_id);
        }
        let outcome =
            Outcome::ended(JobStatus::Cancelled, format!("job {job_id} was cancelled"), &entry, started);
        if finish(&mut g, &self.inner.config, &entry, outcome) && !was_running {
            self.inner.metrics.job_done(entry.circuit.name(), "cancelled", None);
        }
        drop(g);
        self.inner.wake.notify_all();
        tracing::info!(job = job_id, was_running, "cancelled");
        Ok(was_running)
    }

    /// GetStatus.
    pub fn status(&self) -> pb::GetStatusResponse {
        let g = self.lock();
        let (completed, failed) = self.inner.metrics.totals();
        let ledger = g.engine.as_ref().map(|e| e.ledger());
        let loaded_srs = g
            .loaded
            .iter()
            .map(|(id, l)| pb::SrsStatus {
                circuit_id: id.name().to_string(),
                tier: pb::srs_status::Tier::Hot as i32,
                size_bytes: l.size_bytes,
                ref_count: g
                    .running
                    .keys()
                    .filter(|j| g.jobs.get(*j).is_some_and(|e| e.circuit == *id))
                    .count() as u32,
            })
            .collect();
        let queues = queue_counts(&g)
            .into_iter()
            .map(|(p, pending, running)| pb::QueueStatus {
                proof_kind: format!("POREP_SEAL_COMMIT/{p}"),
                pending,
                in_progress: running,
            })
            .collect();
        // The GPU's memory is read after the scheduler lock is released: the query waits
        // for the device operation in flight, which must not hold up submissions.
        let gpu = g.gpu.clone();
        let mut running: Vec<String> = g.running.keys().cloned().collect();
        running.sort();
        let pinned_memory_bytes = ledger.as_ref().map_or(0, |l| l.reserved_bytes as u64);
        drop(g);
        let gpus = gpu
            .iter()
            .map(|gpu| {
                let (free, total) = (gpu.mem)().unwrap_or((0, 0));
                pb::GpuStatus {
                    ordinal: gpu.ordinal,
                    name: gpu.name.clone(),
                    vram_total_bytes: total,
                    vram_free_bytes: free,
                    // Every job the engine has in flight runs on this GPU.
                    current_job_id: running.join(","),
                    current_proof_kind: if running.is_empty() {
                        String::new()
                    } else {
                        "POREP_SEAL_COMMIT".into()
                    },
                }
            })
            .collect();
        pb::GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: completed,
            total_proofs_failed: failed,
            uptime_seconds: self.inner.started.elapsed().as_secs(),
            pinned_memory_bytes,
            pinned_memory_limit_bytes: self.inner.config.memory_limit_bytes as u64,
        }
    }

    /// GetMetrics.
    pub fn metrics_text(&self) -> String {
        let g = self.lock();
        let ledger = g.engine.as_ref().map(|e| e.ledger());
        let gauges = Gauges {
            uptime_s: self.inner.started.elapsed().as_secs(),
            queues: queue_counts(&g),
            plan_bytes: g.engine.as_ref().map_or(0, |e| e.memory_plan().total_bytes() as u64),
            reserved_bytes: ledger.as_ref().map_or(0, |l| l.reserved_bytes as u64),
            leased_bytes: ledger.as_ref().map_or(0, |l| l.leased_bytes as u64),
            leased_bytes_hwm: ledger.as_ref().map_or(0, |l| l.leased_bytes_hwm as u64),
            limit_bytes: self.inner.config.memory_limit_bytes as u64,
            slabs_outstanding: g.engine.as_ref().map_or(0, |e| e.slabs_outstanding() as u64),
            handback_ns_max: ledger.as_ref().map_or(0, |l| l.handback_ns_max),
            rss_bytes: metrics::rss_bytes(),
        };
        drop(g);
        self.inner.metrics.render(&gauges)
    }

    /// PreloadSRS: whether it was loaded already, and the load time.
    pub async fn preload(&self, circuit_id: &str) -> Result<(bool, u64), Status> {
        let id = CircuitId::parse(circuit_id).map_err(Status::invalid_argument)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut g = self.lock();
            if g.loaded.contains_key(&id) {
                return Ok((true, 0));
            }
            if g.draining {
                return Err(Status::unavailable("the daemon is shutting down"));
            }
            let files =
                ParamFiles::for_proof(id.registered_proof()).map_err(|e| Status::internal(e.to_string()))?;
            files.require_params().map_err(|e| Status::failed_precondition(e.to_string()))?;
            g.controls.push_back(Control::Load { id, reply: tx });
        }
        self.inner.wake.notify_all();
        let ms = rx.await.map_err(|_| Status::unavailable("the daemon stopped before loading"))??;
        Ok((false, ms))
    }

    /// EvictSRS: whether it was loaded, and the parameter bytes freed.
    pub async fn evict(&self, circuit_id: &str) -> Result<(bool, u64), Status> {
        let id = CircuitId::parse(circuit_id).map_err(Status::invalid_argument)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut g = self.lock();
            if !g.loaded.contains_key(&id) {
                return Ok((false, 0));
            }
            if g.queue.iter().any(|q| q.entry.circuit == id)
                || g.running.keys().any(|j| g.jobs.get(j).is_some_and(|e| e.circuit == id))
            {
                return Err(Status::failed_precondition(format!(
                    "{id} has queued or running jobs; evict it when they are done"
                )));
            }
            g.controls.push_back(Control::Evict { id, reply: tx });
        }
        self.inner.wake.notify_all();
        rx.await.map_err(|_| Status::unavailable("the daemon stopped before evicting"))?
    }

    /// Refuses new jobs from now on (SIGTERM).
    pub fn begin_drain(&self) {
        self.lock().draining = true;
        tracing::info!("draining: new jobs are refused");
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        let g = self.lock();
        g.queue.len() + g.running.len()
    }

    /// Cancels every queued and running job (a second signal).
    pub fn cancel_all(&self) -> usize {
        let ids: Vec<String> = {
            let g = self.lock();
            g.queue.iter().map(|q| q.entry.id.clone()).chain(g.running.keys().cloned()).collect()
        };
        ids.iter().filter(|id| self.cancel(id).is_ok()).count()
    }

    /// Stops the dispatcher once queued and running jobs are done (call [`Daemon::cancel_all`]
    /// first to not wait), then shuts the engine down; its report (every slab back).
    pub fn shutdown(&self) -> Option<ShutdownReport> {
        {
            let mut g = self.lock();
            g.draining = true;
            g.stop = true;
        }
        self.inner.wake.notify_all();
        let handle = self.inner.dispatcher.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let engine = self.lock().engine.take();
        engine.and_then(|e| stop_engine(e).map_err(|e| tracing::error!("{e}")).ok())
    }
}

/// Jobs ahead of `q` in the queue.
fn position(g: &Sched, q: &Queued) -> u32 {
    g.queue.iter().filter(|o| o.key() > q.key()).count() as u32
}

/// (priority name, pending, running) per priority, highest first.
fn queue_counts(g: &Sched) -> Vec<(&'static str, u32, u32)> {
    PRIORITIES
        .iter()
        .map(|&p| {
            let pending = g.queue.iter().filter(|q| q.entry.priority == p).count() as u32;
            let running =
                g.running.keys().filter(|id| g.jobs.get(*id).is_some_and(|e| e.priority == p)).count() as u32;
            (p.as_str_name(), pending, running)
        })
        .collect()
}

/// Publishes a job's outcome (once: a later call is ignored) and remembers it as finished,
/// forgetting the oldest finished jobs beyond `finished_keep`. Whether this call published.
fn finish(g: &mut Sched, config: &ServeConfig, entry: &JobEntry, outcome: Outcome) -> bool {
    let outcome = Arc::new(outcome);
    let published = entry.done.send_if_modified(|o| {
        if o.is_none() {
            *o = Some(outcome.clone());
            true
        } else {
            false
        }
    });
    if published {
        g.finished.push_back(entry.id.clone());
        while g.finished.len() > config.finished_keep {
            let Some(old) = g.finished.pop_front() else { break };
            if let Some(e) = g.jobs.remove(&old) {
                if g.by_request.get(&e.request_id) == Some(&old) {
                    g.by_request.remove(&e.request_id);
                }
            }
        }
    }
    published
}

fn dispatch_loop(inner: Arc<Inner>) {
    let lock = || inner.sched.lock().unwrap_or_else(|p| p.into_inner());
    let mut g = lock();
    loop {
        if !g.controls.is_empty() && g.running.is_empty() {
            let control = g.controls.pop_front();
            drop(g);
            if let Some(c) = control {
                apply_control(&inner, c);
            }
            g = lock();
            continue;
        }
        if g.controls.is_empty() && g.inflight_partitions < inner.config.slots {
            if let Some(q) = g.queue.pop() {
                let started = Instant::now();
                g.running.insert(q.entry.id.clone(), started);
                g.inflight_partitions += q.entry.partitions;
                let engine = g.engine.clone();
                let for_job = inner.clone();
                let entry = q.entry.clone();
                let name = format!("arenaprove-{}", entry.id);
                let spawned = std::thread::Builder::new()
                    .name(name)
                    .spawn(move || run_job(for_job, q, engine, started));
                if let Err(e) = spawned {
                    g.running.remove(&entry.id);
                    g.inflight_partitions -= entry.partitions;
                    let error = format!("could not start a thread for the job: {e}");
                    finish(
                        &mut g,
                        &inner.config,
                        &entry,
                        Outcome::ended(JobStatus::Failed, error, &entry, Some(started)),
                    );
                    inner.metrics.job_done(entry.circuit.name(), "failed", None);
                }
                continue;
            }
        }
        if g.stop && g.queue.is_empty() && g.running.is_empty() && g.controls.is_empty() {
            break;
        }
        g = inner.wake.wait(g).unwrap_or_else(|p| p.into_inner());
    }
}

/// Loads or evicts parameters and rebuilds the engine (no job is running).
fn apply_control(inner: &Inner, control: Control) {
    let lock = || inner.sched.lock().unwrap_or_else(|p| p.into_inner());
    match control {
        Control::Load { id, reply } => {
            let started = Instant::now();
            let result = load(id, inner.config.checked).map_err(|e| match e {
                e @ FilecoinError::MissingParams { .. } => Status::failed_precondition(e.to_string()),
                e => Status::internal(e.to_string()),
            });
            let result = result.and_then(|l| {
                let old = take_engine(&mut lock());
                if let Some(old) = old {
                    stop_engine(old).map_err(Status::internal)?;
                }
                let mut g = lock();
                g.loaded.insert(id, l);
                match build_engine(&inner.config, &g.loaded) {
                    Ok((e, gpu)) => {
                        (g.engine, g.gpu) = (e, gpu);
                        Ok(ms(started.elapsed()))
                    }
                    Err(e) => {
                        g.loaded.remove(&id);
                        (g.engine, g.gpu) = build_engine(&inner.config, &g.loaded).unwrap_or((None, None));
                        Err(Status::resource_exhausted(format!("engine with {id} added: {e}")))
                    }
                }
            });
            let _ = reply.send(result);
        }
        Control::Evict { id, reply } => {
            let result = (|| {
                let old = take_engine(&mut lock());
                if let Some(old) = old {
                    stop_engine(old).map_err(Status::internal)?;
                }
                let mut g = lock();
                let freed = g.loaded.remove(&id).map_or(0, |l| l.size_bytes);
                (g.engine, g.gpu) = build_engine(&inner.config, &g.loaded).map_err(Status::internal)?;
                Ok((true, freed))
            })();
            let _ = reply.send(result);
        }
    }
}

/// One job on the engine, from circuits to its published outcome.
fn run_job(inner: Arc<Inner>, q: Queued, engine: Option<Arc<Engine>>, started: Instant) {
    let Queued { entry, request, .. } = q;
    let result = prove(&entry, request, engine);
    let synth_prove = result.as_ref().ok().map(|(_, out)| stage_ms(out));
    let mut g = inner.sched.lock().unwrap_or_else(|p| p.into_inner());
    g.running.remove(&entry.id);
    g.inflight_partitions -= entry.partitions;
    let cancelled = entry.cancel.load(Ordering::SeqCst);
    let mut outcome = Outcome::ended(JobStatus::Failed, String::new(), &entry, Some(started));
    let label = match (&result, cancelled) {
        (_, true) => {
            outcome.status = JobStatus::Cancelled;
            outcome.error = format!("job {} was cancelled", entry.id);
            "cancelled"
        }
        (Ok((proof, _)), false) => {
            outcome.status = JobStatus::Completed;
            outcome.proof = proof.clone();
            (outcome.synthesis_ms, outcome.prove_ms) = synth_prove.unwrap_or((0, 0));
            "completed"
        }
        (Err(e), false) => {
            outcome.error = e.clone();
            "failed"
        }
    };
    let seconds = JobSeconds {
        queue_wait: outcome.queue_wait_ms as f64 / 1e3,
        synthesis: outcome.synthesis_ms as f64 / 1e3,
        prove: outcome.prove_ms as f64 / 1e3,
        total: outcome.total_ms as f64 / 1e3,
    };
    tracing::info!(job = %entry.id, outcome = label, queue_wait_ms = outcome.queue_wait_ms, total_ms = outcome.total_ms, error = %outcome.error, "job ended");
    finish(&mut g, &inner.config, &entry, outcome);
    // Counted here, once its slot is free, whatever the outcome (a job cancelled while
    // running published CANCELLED at once, but is counted now).
    inner.metrics.job_done(entry.circuit.name(), label, (label == "completed").then_some(seconds));
    drop(g);
    inner.wake.notify_all();
}

/// Synthesis and proving milliseconds, summed over partitions, from the job's timeline.
fn stage_ms(out: &JobOutput) -> (u64, u64) {
    let sum = |names: &[&str]| {
        let ns: u64 = out.spans.iter().filter(|s| names.contains(&s.name)).map(|s| s.dur_ns).sum();
        ns / 1_000_000
    };
    (sum(&["synthesize"]), sum(&["prove_start", "finalize"]))
}

const INPUTS_MISMATCH: &str =
    "the public inputs the circuit computed from the vanilla proofs differ from those \
     filecoin-proofs derives from the C1's seed, replica id and commitments";

/// Builds the circuits, proves them on the engine, checks the public inputs.
fn prove(
    entry: &JobEntry,
    request: PorepRequest,
    engine: Option<Arc<Engine>>,
) -> Result<(Vec<u8>, JobOutput), String> {
    let engine =
        engine.ok_or_else(|| format!("parameters for {} are not loaded (evicted?)", entry.circuit))?;
    if !engine.kinds().contains(&entry.circuit.name()) {
        return Err(format!("parameters for {} are not loaded (evicted?)", entry.circuit));
    }
    if entry.cancel.load(Ordering::SeqCst) {
        return Err("cancelled".into());
    }
    let (handle, expected) = {
        let job = SectorJob::new(&request.c1).map_err(|e| e.to_string())?;
        let mut circuits = Vec::with_capacity(job.partitions());
        let mut expected = Vec::with_capacity(job.partitions());
        for k in 0..job.partitions() {
            let inner = generic(job.circuit(k).map_err(|e| e.to_string())?);
            circuits
                .push(Box::new(Cancellable { inner, cancel: entry.cancel.clone() })
                    as Box<dyn PartitionCircuit>);
            expected.push(job.public_inputs(k).map_err(|e| e.to_string())?);
        }
        let handle = engine.submit(Job::new(entry.circuit.name(), circuits)).map_err(|e| e.to_string())?;
        (handle, expected)
    };
    drop(request); // the circuits own what they need; the C1 output goes now
    drop(engine);
    let out = handle.wait().map_err(|e| e.to_string())?;
    if let Some(e) = out.first_error() {
        return Err(e.to_string());
    }
    for (k, (p, want)) in out.partitions.iter().zip(&expected).enumerate() {
        let p = p.as_ref().map_err(|e| e.to_string())?;
        if !p.verified {
            return Err(format!("partition {k}: the engine returned an unverified proof"));
        }
        if &p.public_inputs != want {
            return Err(format!("partition {k}: {INPUTS_MISMATCH}"));
        }
    }
    let proof = out.proof_bytes().ok_or_else(|| "a partition without a proof".to_string())?;
    Ok((proof, out))
}
