//! The dispatcher and the job threads.
//!
//! * One dispatcher thread starts the next job whenever the queue allows it (see
//!   [`super::queue`]), and applies PreloadSRS / EvictSRS once no job runs: the engine is
//!   stopped (every slab back) and rebuilt over the new set of circuits (those loaded
//!   already are shared, not read again).
//! * Each started job has a thread that submits its sector or PoSt to the [`C2Engine`] (its
//!   circuits are built there), waits, and publishes the outcome. A [`JobGuard`] owns the
//!   job's bookkeeping: whatever happens on the thread, a panic included, the job gets an
//!   outcome (a panic is [`JobError::Panicked`]), its partitions leave the running count
//!   and the dispatcher goes on with the next job.
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use arenaprove::engine::pipeline::panic_message;
use arenaprove::filecoin::{C2Engine, C2Output, C2Request, FilecoinError, SubmitOptions};
use tonic::Status;

use super::jobs::{ms, JobEntry, JobError, Outcome};
use super::lifecycle::{self, BuildError};
use super::metrics::JobSeconds;
use super::pb::await_proof_response::Status as JobStatus;
use super::queue::Queued;
use super::request::JobRequest;
use super::state::{Control, Inner};

/// Starts the dispatcher thread.
pub fn spawn_dispatcher(inner: Arc<Inner>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("arenaprove-serve-dispatch".into()).spawn(move || dispatch_loop(inner))
}

fn dispatch_loop(inner: Arc<Inner>) {
    let mut g = inner.lock();
    loop {
        if !g.controls.is_empty() && g.queue.nothing_running() {
            let control = g.controls.pop_front();
            drop(g);
            if let Some(c) = control {
                apply_control(&inner, c);
            }
            g = inner.lock();
            continue;
        }
        if g.controls.is_empty() {
            // The engine's slots (chosen at its build); with no engine a job starts at once
            // and fails, naming the missing circuit.
            let slots = g.engines.running.as_ref().map_or(1, |r| r.sizes.slots);
            if let Some((q, started)) = g.queue.start_next(slots, lifecycle::PARTITIONS_PER_JOB_MAX) {
                let engine = g.engines.running.as_ref().map(|r| r.c2.clone());
                drop(g);
                start_job(&inner, q, engine, started);
                g = inner.lock();
                continue;
            }
        }
        if g.stop && g.queue.pending() == 0 && g.controls.is_empty() {
            break;
        }
        g = inner.wake.wait(g).unwrap_or_else(|p| p.into_inner());
    }
}

/// Runs a started job on a thread of its own.
fn start_job(inner: &Arc<Inner>, q: Queued, engine: Option<Arc<C2Engine>>, started: Instant) {
    let entry = q.entry.clone();
    let for_thread = inner.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("arenaprove-{}", entry.id))
        .spawn(move || run_job(&for_thread, q, engine, started));
    if let Err(e) = spawned {
        end_job(inner, &entry, started, Err(JobError::Thread(e)));
    }
}

/// One job, from its sector to its published outcome: a panic while proving is that job's
/// typed failure, and the job leaves the running count either way.
fn run_job(inner: &Inner, q: Queued, engine: Option<Arc<C2Engine>>, started: Instant) {
    let Queued { entry, request, .. } = q;
    let proven = std::panic::catch_unwind(AssertUnwindSafe(|| prove(inner, &entry, request, engine)));
    let result = proven.unwrap_or_else(|p| Err(JobError::Panicked { reason: panic_message(&*p) }));
    end_job(inner, &entry, started, result);
}

/// Submits the sector to the driver and waits for its verified proof.
fn prove(
    inner: &Inner,
    entry: &JobEntry,
    request: JobRequest,
    engine: Option<Arc<C2Engine>>,
) -> Result<C2Output, JobError> {
    let not_loaded = || JobError::NotLoaded { circuit: entry.circuit };
    let engine = engine.ok_or_else(not_loaded)?;
    let served = match &request {
        JobRequest::Porep(_) => engine.circuit(entry.circuit.sector_size()).is_some(),
        JobRequest::Post(post) => engine.post_circuit(post.proof).is_some(),
        JobRequest::Snap(snap) => engine.snap_circuit(snap.proof).is_some(),
    };
    if !served {
        return Err(not_loaded());
    }
    if entry.cancel_requested() {
        return Err(JobError::Cancelled { job: entry.id.clone() });
    }
    if let Some(hook) = &inner.hooks.before_circuits {
        hook(&entry.request_id);
    }
    let what = match &request {
        JobRequest::Porep(porep) => C2Request::Porep(&porep.c1),
        JobRequest::Post(post) => C2Request::Post(post),
        JobRequest::Snap(snap) => C2Request::Snap(snap),
    };
    // The engine gives each free slot to the waiting partition of the highest priority.
    let options = SubmitOptions { priority: entry.priority as i32, ..SubmitOptions::default() };
    let pending = engine.submit_request(what, options)?;
    entry.at_engine(pending.canceller(), pending.job_id());
    drop(request); // the circuits own what they need; the C1 output or vanilla proofs go now
    drop(engine);
    Ok(pending.wait()?)
}

/// A job ended: it leaves the running count, its outcome is published (a job cancelled
/// while running published CANCELLED at once; it is counted now, its slot free), the
/// dispatcher wakes.
fn end_job(inner: &Inner, entry: &JobEntry, started: Instant, result: Result<C2Output, JobError>) {
    let mut g = inner.lock();
    g.queue.end(entry);
    let (outcome, label) = if entry.cancel_requested() {
        let error = JobError::Cancelled { job: entry.id.clone() };
        (Outcome::ended(JobStatus::Cancelled, error, entry, Some(started)), "cancelled")
    } else {
        match result {
            Ok(out) => (completed(entry, started, out), "completed"),
            Err(e) => (Outcome::ended(JobStatus::Failed, e, entry, Some(started)), "failed"),
        }
    };
    let seconds = JobSeconds {
        queue_wait: outcome.queue_wait_ms as f64 / 1e3,
        synthesis: outcome.synthesis_ms as f64 / 1e3,
        prove: outcome.prove_ms as f64 / 1e3,
        total: outcome.total_ms as f64 / 1e3,
    };
    let error = outcome.error.as_ref().map(|e| e.to_string()).unwrap_or_default();
    tracing::info!(
        job = %entry.id,
        outcome = label,
        synthesis = outcome.synthesis,
        queue_wait_ms = outcome.queue_wait_ms,
        synthesis_ms = outcome.synthesis_ms,
        prove_ms = outcome.prove_ms,
        total_ms = outcome.total_ms,
        error = %error,
        "job ended"
    );
    let synthesis = outcome.synthesis;
    g.jobs.finish(inner.config.finished_keep, entry, outcome);
    let done = (label == "completed").then_some((seconds, synthesis));
    inner.metrics.job_done(entry.circuit.name(), label, done);
    drop(g);
    inner.wake.notify_all();
}

fn completed(entry: &JobEntry, started: Instant, out: C2Output) -> Outcome {
    let stages = out.stages();
    let mut outcome = Outcome::timed(JobStatus::Completed, entry, Some(started));
    outcome.synthesis = stages.synthesis_kind;
    outcome.synthesis_ms = ms(stages.synthesis);
    outcome.prove_ms = ms(stages.prove());
    outcome.proof = out.into_proof();
    outcome
}

/// Loads or evicts parameters and rebuilds the engine. Runs on the dispatcher, so no job
/// starts meanwhile (and none runs: controls wait for that).
fn apply_control(inner: &Inner, control: Control) {
    match control {
        Control::Load { id, reply } => {
            let started = Instant::now();
            let result = lifecycle::load(&inner.config, id).map_err(load_status).and_then(|loaded| {
                stop_engine(inner).map_err(|e| build_status(&format!("{id} added"), e))?;
                inner.lock().engines.loaded.insert(id, loaded);
                if let Err(e) = rebuild(inner) {
                    // Back to an engine over what was loaded before.
                    inner.lock().engines.loaded.remove(&id);
                    if let Err(again) = rebuild(inner) {
                        tracing::error!("no engine after a failed PreloadSRS: {again}");
                    }
                    return Err(build_status(&format!("an engine with {id} added"), e));
                }
                Ok(ms(started.elapsed()))
            });
            let _ = reply.send(result);
        }
        Control::Evict { id, reply } => {
            let result = stop_engine(inner).and_then(|()| {
                let freed = inner.lock().engines.loaded.remove(&id).map_or(0, |l| l.size_bytes);
                rebuild(inner).map(|()| (true, freed))
            });
            let _ = reply.send(result.map_err(|e| build_status(&format!("{id} evicted"), e)));
        }
    }
}

/// Stops the engine (every slab back); the circuits stay loaded.
fn stop_engine(inner: &Inner) -> Result<(), BuildError> {
    let Some(running) = inner.lock().engines.running.take() else { return Ok(()) };
    lifecycle::stop(running).map(drop).map_err(|busy| {
        // Still held by a job: it goes back, so the daemon keeps an engine.
        inner.lock().engines.running = Some(busy);
        BuildError::EngineBusy
    })
}

/// Builds an engine over the circuits loaded now (outside the lock: reserving takes
/// seconds) and installs it; none when nothing is loaded.
fn rebuild(inner: &Inner) -> Result<(), BuildError> {
    let circuits = inner.lock().engines.circuits();
    let running = if circuits.is_empty() {
        None
    } else {
        lifecycle::build(&inner.config, circuits, lifecycle::backend(&inner.config)?)?
    };
    inner.lock().engines.running = running;
    Ok(())
}

fn load_status(e: FilecoinError) -> Status {
    match e {
        e @ FilecoinError::MissingParams { .. } => Status::failed_precondition(e.to_string()),
        e => Status::internal(e.to_string()),
    }
}

fn build_status(what: &str, e: BuildError) -> Status {
    match e {
        e @ BuildError::Gpu(_) => Status::failed_precondition(format!("{what}: {e}")),
        e => Status::resource_exhausted(format!("{what}: {e}")),
    }
}
