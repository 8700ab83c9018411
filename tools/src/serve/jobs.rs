//! The job table: what the daemon knows about each job, how a job ended, and the finished
//! jobs remembered for AwaitProof and idempotent resubmission (`queue.finished_keep`).
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arenaprove::filecoin::{C2Cancel, FilecoinError};
use tokio::sync::watch;
use tonic::Status;

use super::circuits::CircuitId;
use super::pb::{self, await_proof_response::Status as JobStatus, Priority};

/// Why a job did not complete. Errors from below keep their type (`source`).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Cancelled by CancelProof or a second signal.
    #[error("job {job} was cancelled")]
    Cancelled { job: String },
    /// The job's parameters were evicted while it was queued.
    #[error("parameters for {circuit} are not loaded (evicted?)")]
    NotLoaded { circuit: CircuitId },
    /// The driver refused or failed the sector (engine, partition, inputs check, ...).
    #[error("{0}")]
    Prove(#[from] FilecoinError),
    /// A panic on the job's own thread (building its circuits, submitting): caught, the
    /// job failed, its slots came back, and the daemon went on.
    #[error("the job panicked: {reason}")]
    Panicked { reason: String },
    /// No thread could be started for the job.
    #[error("could not start a thread for the job: {0}")]
    Thread(#[source] std::io::Error),
}

/// How a job ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: JobStatus,
    /// The verified proof (COMPLETED only).
    pub proof: Vec<u8>,
    /// Why it did not complete (FAILED, CANCELLED).
    pub error: Option<Arc<JobError>>,
    /// Which synthesis ran (`precompiled`, `generic`); empty when none did.
    pub synthesis: &'static str,
    pub queue_wait_ms: u64,
    pub synthesis_ms: u64,
    pub prove_ms: u64,
    pub total_ms: u64,
}

impl Outcome {
    /// An outcome without a proof, timed from `entry`'s submission (and `started`, when it ran).
    pub fn ended(status: JobStatus, error: JobError, entry: &JobEntry, started: Option<Instant>) -> Outcome {
        Outcome { error: Some(Arc::new(error)), ..Outcome::timed(status, entry, started) }
    }

    /// An outcome with its waiting and total times, nothing else yet.
    pub fn timed(status: JobStatus, entry: &JobEntry, started: Option<Instant>) -> Outcome {
        let now = Instant::now();
        Outcome {
            status,
            proof: Vec::new(),
            error: None,
            synthesis: "",
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
            error_message: self.error.as_ref().map(|e| e.to_string()).unwrap_or_default(),
            srs_load_ms: 0, // parameters are loaded before a job can be queued
            queue_wait_ms: self.queue_wait_ms,
            synthesis_ms: self.synthesis_ms,
            gpu_compute_ms: self.prove_ms,
            total_ms: self.total_ms,
        }
    }
}

pub fn ms(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// A cancellation request and, once the job is at the engine, the engine's handle to it.
#[derive(Default)]
struct CancelState {
    requested: bool,
    engine: Option<C2Cancel>,
    /// The engine's job id, once submitted.
    engine_job: Option<u64>,
}

/// What the daemon knows about one job; shared by the table, the queue and its thread.
pub struct JobEntry {
    pub id: String,
    pub request_id: String,
    pub fingerprint: u64,
    pub circuit: CircuitId,
    pub priority: Priority,
    pub partitions: usize,
    pub submitted: Instant,
    cancel: Mutex<CancelState>,
    done: watch::Sender<Option<Arc<Outcome>>>,
}

impl JobEntry {
    pub fn new(
        id: String,
        request_id: String,
        fingerprint: u64,
        circuit: CircuitId,
        priority: Priority,
        partitions: usize,
    ) -> JobEntry {
        JobEntry {
            id,
            request_id,
            fingerprint,
            circuit,
            priority,
            partitions,
            submitted: Instant::now(),
            cancel: Mutex::new(CancelState::default()),
            done: watch::channel(None).0,
        }
    }

    fn cancel_state(&self) -> std::sync::MutexGuard<'_, CancelState> {
        self.cancel.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks the job to stop: at once at the engine when it is there, else before it gets there.
    pub fn request_cancel(&self) {
        let mut c = self.cancel_state();
        c.requested = true;
        if let Some(engine) = &c.engine {
            engine.cancel();
        }
    }

    pub fn cancel_requested(&self) -> bool {
        self.cancel_state().requested
    }

    /// The engine's handle to the job and its engine job id, once submitted (cancelled at
    /// once when asked before).
    pub fn at_engine(&self, engine: C2Cancel, engine_job: Option<u64>) {
        let mut c = self.cancel_state();
        if c.requested {
            engine.cancel();
        }
        c.engine = Some(engine);
        c.engine_job = engine_job;
    }

    /// The engine's id of this job once submitted (what a GPU's activity names).
    pub fn engine_job(&self) -> Option<u64> {
        self.cancel_state().engine_job
    }

    /// The outcome, once published.
    pub fn outcome(&self) -> Option<Arc<Outcome>> {
        self.done.borrow().clone()
    }

    /// Waits for the outcome (`None` when the entry went away without one).
    pub async fn ended(&self) -> Option<Arc<Outcome>> {
        let mut rx = self.done.subscribe();
        let r = rx.wait_for(|o| o.is_some()).await;
        r.ok().and_then(|o| o.clone())
    }
}

/// Every job known: queued, running, and the last `finished_keep` finished ones.
#[derive(Default)]
pub struct JobTable {
    jobs: HashMap<String, Arc<JobEntry>>,
    /// request_id -> job id, for idempotent resubmission.
    by_request: HashMap<String, String>,
    /// Finished job ids, oldest first (forgotten beyond `finished_keep`).
    finished: VecDeque<String>,
}

impl JobTable {
    pub fn insert(&mut self, entry: Arc<JobEntry>) {
        if !entry.request_id.is_empty() {
            self.by_request.insert(entry.request_id.clone(), entry.id.clone());
        }
        self.jobs.insert(entry.id.clone(), entry);
    }

    pub fn get(&self, job_id: &str) -> Option<&Arc<JobEntry>> {
        self.jobs.get(job_id)
    }

    /// The live job a request id names, when the same content is resubmitted; an error
    /// when the id names other content. A failed or cancelled job is not reused: its
    /// request may be retried.
    pub fn existing(&self, request_id: &str, fingerprint: u64) -> Result<Option<&Arc<JobEntry>>, Status> {
        if request_id.is_empty() {
            return Ok(None);
        }
        let Some(entry) = self.by_request.get(request_id).and_then(|id| self.jobs.get(id)) else {
            return Ok(None);
        };
        if entry.fingerprint != fingerprint {
            return Err(Status::already_exists(format!(
                "request_id `{request_id}` names {} whose request had other contents",
                entry.id
            )));
        }
        let ended = entry.outcome().map(|o| o.status);
        if matches!(ended, Some(JobStatus::Failed | JobStatus::Cancelled)) {
            return Ok(None);
        }
        Ok(Some(entry))
    }

    /// Publishes a job's outcome (once: a later call is ignored) and remembers it as
    /// finished, forgetting the oldest finished jobs beyond `keep`. Whether this call
    /// published.
    pub fn finish(&mut self, keep: usize, entry: &JobEntry, outcome: Outcome) -> bool {
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
            self.finished.push_back(entry.id.clone());
            while self.finished.len() > keep {
                let Some(old) = self.finished.pop_front() else { break };
                if let Some(e) = self.jobs.remove(&old) {
                    if self.by_request.get(&e.request_id) == Some(&old) {
                        self.by_request.remove(&e.request_id);
                    }
                }
            }
        }
        published
    }
}
