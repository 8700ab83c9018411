//! The daemon's face: the calls the gRPC service makes (submit, await, cancel, preload,
//! evict, drain, shutdown), each a short critical section over the shared state.
//!
//! Where the rest lives: the job table and outcomes in [`super::jobs`], the priority
//! queue in [`super::queue`], loading circuits and building the engine in
//! [`super::lifecycle`], the dispatcher and the job threads in [`super::worker`], GetStatus
//! and GetMetrics in [`super::status`], the shared state in [`super::state`].
//!
//! * A job is queued by [`Daemon::submit`] after its request was checked and parsed.
//! * Limits: `pending_max` jobs queued or running (RESOURCE_EXHAUSTED beyond),
//!   `finished_keep` finished jobs remembered for AwaitProof and idempotent resubmission.
//! * Every job (PoRep C2, WinningPoSt, a WindowPoSt partition) proves through the one
//!   driver (`C2Engine`), with precompiled synthesis
//!   unless `engine.synthesis = "generic"`; every proof handed back was verified by it.
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use arenaprove::engine::pipeline::ShutdownReport;
use tokio::sync::oneshot;
use tonic::Status;

use super::circuits::CircuitId;
use super::config::ServeConfig;
use super::jobs::{JobEntry, JobError, Outcome};
use super::lifecycle::{self, Engines};
use super::pb::{self, await_proof_response::Status as JobStatus, SubmitProofRequest};
use super::queue::Queued;
use super::request;
use super::state::{Control, Inner, Sched};
use super::worker;

pub use super::lifecycle::StartError;
use super::state::TestHooks;

/// The daemon; cheap to clone (one shared state).
#[derive(Clone)]
pub struct Daemon {
    inner: Arc<Inner>,
}

impl Daemon {
    /// Loads the preload list's parameters and starts the engine and the dispatcher. A GPU
    /// configured that does not open is an error naming it (unless `gpus.fallback = "cpu"`).
    pub fn start(config: ServeConfig) -> Result<Daemon, StartError> {
        Daemon::start_with(config, TestHooks::default())
    }

    /// [`Daemon::start`] with hooks (tests).
    #[doc(hidden)]
    pub fn start_with(config: ServeConfig, hooks: TestHooks) -> Result<Daemon, StartError> {
        // The backend first: a GPU that does not open fails the start before any loading.
        let backend = lifecycle::backend(&config)
            .map_err(|lifecycle::GpuError { which, source }| StartError::Gpu { which, source })?;
        let mut engines = Engines::default();
        for id in lifecycle::preload_list(&config)? {
            let started = std::time::Instant::now();
            engines.loaded.insert(id, lifecycle::load(&config, id)?);
            tracing::info!(circuit = %id, load_ms = super::jobs::ms(started.elapsed()), "parameters loaded");
        }
        if engines.loaded.is_empty() {
            tracing::warn!(cache = %config.param_cache.display(), "no parameters loaded: every PoRep request will be refused until PreloadSRS");
        }
        engines.running = lifecycle::build(&config, engines.circuits(), backend)?;
        let inner = Arc::new(Inner::new(config, engines, hooks));
        let handle = worker::spawn_dispatcher(inner.clone()).map_err(StartError::Thread)?;
        *inner.dispatcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        Ok(Daemon { inner })
    }

    pub(super) fn inner(&self) -> &Inner {
        &self.inner
    }

    pub fn config(&self) -> &ServeConfig {
        &self.inner.config
    }

    pub fn metrics(&self) -> &super::metrics::Metrics {
        &self.inner.metrics
    }

    /// Checks, parses and queues a request; the job and its queue position.
    pub async fn submit(&self, req: SubmitProofRequest) -> Result<(String, u32), Status> {
        let kind = request::check_kind(&req)?;
        let priority = request::priority(&req)?;
        let checked = request::check(&req, kind)?;
        let circuit = checked.circuit();
        let req = Arc::new(req);
        let for_hash = req.clone();
        let fp = tokio::task::spawn_blocking(move || request::fingerprint(&for_hash))
            .await
            .map_err(|e| Status::internal(format!("hashing the request: {e}")))?;
        // Cheap refusals and idempotent answers before the payload is parsed.
        {
            let g = self.inner.lock();
            if let Some(found) = existing(&g, &req.request_id, fp)? {
                return Ok(found);
            }
            self.admit(&g, circuit)?;
        }
        let for_parse = req.clone();
        let parsed = tokio::task::spawn_blocking(move || checked.parse(&for_parse))
            .await
            .map_err(|e| Status::internal(format!("parsing the request: {e}")))??;

        let mut g = self.inner.lock();
        if let Some(found) = existing(&g, &req.request_id, fp)? {
            return Ok(found);
        }
        self.admit(&g, circuit)?;
        let n = self.inner.next_job.fetch_add(1, Ordering::SeqCst);
        let partitions = parsed.partitions();
        let entry = Arc::new(JobEntry::new(
            format!("job-{n}"),
            req.request_id.clone(),
            fp,
            circuit,
            priority,
            partitions,
        ));
        let sector = match &parsed {
            request::JobRequest::Porep(p) => p.sector_number,
            request::JobRequest::Post(_) | request::JobRequest::Snap(_) => req.sector_number,
        };
        tracing::info!(job = %entry.id, request = %entry.request_id, circuit = %circuit, sector, ?priority, "queued");
        g.jobs.insert(entry.clone());
        let position = g.queue.push(Queued { seq: n, entry: entry.clone(), request: parsed });
        drop(g);
        self.inner.wake.notify_all();
        Ok((entry.id.clone(), position))
    }

    /// Refuses a new job when draining, when its parameters are not loaded, or when the
    /// queue is full.
    fn admit(&self, g: &Sched, circuit: CircuitId) -> Result<(), Status> {
        let config = &self.inner.config;
        if g.draining {
            return Err(Status::unavailable("the daemon is shutting down (draining); no new jobs"));
        }
        if !g.engines.loaded.contains_key(&circuit) {
            // Only here (a refusal) are the parameter files worked out, to name them.
            let files =
                lifecycle::param_files(config, circuit).map_err(|e| Status::internal(e.to_string()))?;
            files.require_params().map_err(|e| Status::failed_precondition(e.to_string()))?;
            return Err(Status::failed_precondition(format!(
                "parameters for {circuit} ({}) are in the cache but not loaded: PreloadSRS(\"{circuit}\") or add it to srs.preload",
                files.params.display()
            )));
        }
        let pending = g.queue.pending();
        if pending >= config.pending_max {
            return Err(Status::resource_exhausted(format!(
                "queue full: {pending} jobs queued or running, queue.pending_max is {}",
                config.pending_max
            )));
        }
        Ok(())
    }

    /// Waits for a job; `timeout_ms` 0 waits until it ends.
    pub async fn await_job(&self, job_id: &str, timeout_ms: u64) -> Result<pb::AwaitProofResponse, Status> {
        let entry = self.entry(job_id)?;
        let outcome = if timeout_ms == 0 {
            entry.ended().await
        } else {
            match tokio::time::timeout(Duration::from_millis(timeout_ms), entry.ended()).await {
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

    /// How a job ended (typed), once it has; `None` while it runs or once forgotten.
    pub fn outcome(&self, job_id: &str) -> Option<Arc<Outcome>> {
        self.inner.lock().jobs.get(job_id).and_then(|e| e.outcome())
    }

    fn entry(&self, job_id: &str) -> Result<Arc<JobEntry>, Status> {
        self.inner.lock().jobs.get(job_id).cloned().ok_or_else(|| {
            Status::not_found(format!(
                "unknown job id `{job_id}` (finished jobs are remembered for the last {})",
                self.inner.config.finished_keep
            ))
        })
    }

    /// Cancels a queued or running job; whether it was running. A running job's partitions
    /// not yet at the prover end at once; it is CANCELLED from now.
    pub fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        let mut g = self.inner.lock();
        let entry = g
            .jobs
            .get(job_id)
            .cloned()
            .ok_or_else(|| Status::not_found(format!("unknown job id `{job_id}`")))?;
        if let Some(o) = entry.outcome() {
            return Err(Status::failed_precondition(format!(
                "job {job_id} already ended ({})",
                o.status.as_str_name()
            )));
        }
        entry.request_cancel();
        let started = g.queue.started(job_id);
        let was_running = started.is_some();
        if !was_running {
            g.queue.remove_queued(job_id);
        }
        let error = JobError::Cancelled { job: job_id.to_string() };
        let outcome = Outcome::ended(JobStatus::Cancelled, error, &entry, started);
        if g.jobs.finish(self.inner.config.finished_keep, &entry, outcome) && !was_running {
            // A running job is counted when it ends (its slot free then).
            self.inner.metrics.job_done(entry.circuit.name(), "cancelled", None);
        }
        drop(g);
        self.inner.wake.notify_all();
        tracing::info!(job = job_id, was_running, "cancelled");
        Ok(was_running)
    }

    /// PreloadSRS: whether it was loaded already, and the load time.
    pub async fn preload(&self, circuit_id: &str) -> Result<(bool, u64), Status> {
        let id = CircuitId::parse(circuit_id).map_err(Status::invalid_argument)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut g = self.inner.lock();
            if g.engines.loaded.contains_key(&id) {
                return Ok((true, 0));
            }
            if g.draining {
                return Err(Status::unavailable("the daemon is shutting down"));
            }
            let files = lifecycle::param_files(&self.inner.config, id)
                .map_err(|e| Status::internal(e.to_string()))?;
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
            let mut g = self.inner.lock();
            if !g.engines.loaded.contains_key(&id) {
                return Ok((false, 0));
            }
            if g.queue.has_circuit(id) {
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
        self.inner.lock().draining = true;
        tracing::info!("draining: new jobs are refused");
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.inner.lock().queue.pending()
    }

    /// Cancels every queued and running job (a second signal).
    pub fn cancel_all(&self) -> usize {
        let ids = self.inner.lock().queue.ids();
        ids.iter().filter(|id| self.cancel(id).is_ok()).count()
    }

    /// Stops the dispatcher once queued and running jobs are done (call [`Daemon::cancel_all`]
    /// first to not wait), then shuts the engine down; its report (every slab back).
    pub fn shutdown(&self) -> Option<ShutdownReport> {
        {
            let mut g = self.inner.lock();
            g.draining = true;
            g.stop = true;
        }
        self.inner.wake.notify_all();
        let handle = self.inner.dispatcher.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
        let running = self.inner.lock().engines.running.take();
        running.and_then(|e| {
            lifecycle::stop(e)
                .map_err(|_| tracing::error!("the engine is still in use by a job; not stopped"))
                .ok()
        })
    }
}

/// The live job a request id names, with its queue position, when the same content is
/// resubmitted.
fn existing(g: &Sched, request_id: &str, fp: u64) -> Result<Option<(String, u32)>, Status> {
    Ok(g.jobs.existing(request_id, fp)?.map(|e| (e.id.clone(), g.queue.position(&e.id))))
}
