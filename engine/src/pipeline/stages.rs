//! The pipeline's stage loops: dispatcher, synthesis workers, prover, finalizer; and how a
//! partition ends (its result stored, its slot freed, its slabs back).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arenaprove_arena::Ledger;
use arenaprove_circuits::{CircuitError, ProverWitness as _};
use blstrs::Scalar;
use crossbeam::channel::{Receiver, Sender};
use ff::Field;

use super::config::EngineConfig;
use super::job::{
    panic_message, JobCanceller, JobOutput, PartitionCircuit, PartitionError, PartitionOutput, Randomness,
};
use super::reserve::{Held, Kind, SlotMemory};
use super::timeline::{Level, Timeline, Who};
use super::work::{WorkScope, WorkTag};
use crate::groth16::{Groth16Error, ProveStart};

/// Thread ids in timelines: 0 dispatcher, 1..=n synthesis workers, then one per prover,
/// then one per finalizer.
pub(super) const TID_DISPATCH: u32 = 0;

pub(super) struct Shared {
    pub config: EngineConfig,
    /// Where a partition's synthesis runs its own parallel work (`witness_threads`).
    pub witness_pool: rayon::ThreadPool,
    pub ledger: Arc<Ledger>,
    pub memory: SlotMemory,
    pub cancel: AtomicBool,
    pub slot_tx: Sender<usize>,
    pub slot_rx: Receiver<usize>,
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub jobs_done: AtomicU64,
    pub rng: Mutex<rand_chacha::ChaCha20Rng>,
}

pub(super) struct JobState {
    pub id: u64,
    /// Shared with every [`WorkTag`] of the job (no allocation per stage).
    pub kind: Arc<str>,
    /// [`super::Job::priority`].
    pub priority: i32,
    pub start: Instant,
    pub results: Mutex<Vec<Option<Result<PartitionOutput, PartitionError>>>>,
    pub remaining: AtomicUsize,
    pub timeline: Timeline,
    pub tx: Sender<JobOutput>,
    /// Set by [`super::JobHandle::cancel`].
    pub cancel: JobCanceller,
}

impl JobState {
    /// This job's partition `partition` at `stage`, for the backend's device activity.
    fn tag(&self, partition: u32, stage: &'static str) -> WorkTag {
        WorkTag { job: self.id, partition, kind: self.kind.clone(), stage }
    }

    /// Whether this job's partitions that have not reached the prover are to be cancelled:
    /// the job was, or the engine is shutting down with `ShutdownMode::Cancel`.
    fn cancelled(&self, sh: &Shared) -> bool {
        self.cancel.is_cancelled() || sh.cancel.load(Ordering::SeqCst)
    }
}

/// Which partition of which job, as it travels through the stages.
pub(super) struct Partition {
    pub job: Arc<JobState>,
    pub kind: Arc<Kind>,
    pub partition: u32,
    pub randomness: Option<Randomness>,
}

/// A partition waiting for synthesis: its circuit is consumed there.
pub(super) struct WorkItem {
    pub item: Partition,
    pub circuit: Box<dyn PartitionCircuit>,
}

pub(super) struct Synthesized {
    item: Partition,
    slot: usize,
    held: Held,
    enqueued: Instant,
}

pub(super) struct Started {
    item: Partition,
    slot: usize,
    held: Held,
    start: ProveStart,
    enqueued: Instant,
}

/// Ends one partition: stores its result, frees its slot, and completes the job when it
/// was the last one.
fn complete(
    sh: &Shared,
    item_job: &Arc<JobState>,
    partition: u32,
    result: Result<PartitionOutput, PartitionError>,
) {
    if result.is_ok() {
        sh.ok.fetch_add(1, Ordering::SeqCst);
    } else {
        sh.failed.fetch_add(1, Ordering::SeqCst);
    }
    item_job.results.lock().unwrap_or_else(|p| p.into_inner())[partition as usize] = Some(result);
    if item_job.remaining.fetch_sub(1, Ordering::SeqCst) == 1 {
        let results = std::mem::take(&mut *item_job.results.lock().unwrap_or_else(|p| p.into_inner()));
        let out = JobOutput {
            job_id: item_job.id,
            kind: item_job.kind.to_string(),
            partitions: results.into_iter().map(|r| r.expect("every partition completed once")).collect(),
            spans: item_job.timeline.spans(),
            gaps: item_job.timeline.gaps(),
            wall: item_job.start.elapsed(),
        };
        sh.jobs_done.fetch_add(1, Ordering::SeqCst);
        let _ = item_job.tx.send(out); // the caller may have dropped its handle
    }
}

fn free_slot(sh: &Shared, slot: usize) {
    sh.slot_tx.send(slot).expect("slot channel never overflows: one token per slot");
}

/// Ends a partition before it reaches the finalizer: its slabs back, its slot freed, its
/// error recorded.
fn end_early(
    sh: &Shared,
    job: &Arc<JobState>,
    held: Held,
    slot: usize,
    partition: u32,
    error: PartitionError,
) {
    drop(held);
    free_slot(sh, slot);
    complete(sh, job, partition, Err(error));
}

/// Ends a partition that never got a slot (its job or the engine was cancelled).
pub(super) fn cancel_queued(sh: &Shared, work: WorkItem) {
    let p = work.item.partition;
    complete(sh, &work.item.job, p, Err(PartitionError::Cancelled { partition: p }));
}

/// A partition waiting for a slot, in the dispatcher's queue: highest job priority first,
/// then arrival order.
struct Waiting {
    key: (i32, std::cmp::Reverse<u64>),
    work: WorkItem,
    /// When it reached the dispatcher (its `wait_slot` span starts here).
    arrived: Instant,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// The partitions that reached the dispatcher, by priority ([`super::Job::priority`]).
struct WaitQueue {
    heap: std::collections::BinaryHeap<Waiting>,
    arrived: u64,
    /// Partitions it holds at most (`job_queue_max`): beyond, they wait in the channel and
    /// `submit` blocks (backpressure).
    cap: usize,
    /// The submit side is still open.
    open: bool,
}

impl WaitQueue {
    fn push(&mut self, work: WorkItem) {
        self.arrived += 1;
        let key = (work.item.job.priority, std::cmp::Reverse(self.arrived));
        self.heap.push(Waiting { key, work, arrived: Instant::now() });
    }

    /// Ends every waiting partition of a cancelled job (or all, once the engine cancels),
    /// wherever it sits in the queue: none of them waits for a slot.
    fn sweep_cancelled(&mut self, sh: &Shared) {
        if !self.heap.iter().any(|w| w.work.item.job.cancelled(sh)) {
            return;
        }
        let (gone, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.heap).into_iter().partition(|w| w.work.item.job.cancelled(sh));
        self.heap = kept.into();
        for w in gone {
            cancel_queued(sh, w.work);
        }
    }

    /// Takes what has arrived, without waiting, up to the cap.
    fn take_arrived(&mut self, rx: &Receiver<WorkItem>) {
        while self.open && self.heap.len() < self.cap {
            match rx.try_recv() {
                Ok(w) => self.push(w),
                Err(crossbeam::channel::TryRecvError::Empty) => break,
                Err(crossbeam::channel::TryRecvError::Disconnected) => self.open = false,
            }
        }
    }
}

/// How often the dispatcher, waiting for a slot, looks for cancelled jobs in its queue.
const CANCEL_SWEEP: std::time::Duration = std::time::Duration::from_millis(50);

/// Waits for the next partition to dispatch and a slot for it: the highest-priority
/// partition in the queue when a slot frees. A higher job queued behind lower ones waits
/// only for the next slot, while the queue has room (`job_queue_max` partitions; beyond,
/// the channel is FIFO). Partitions of cancelled jobs leave without a slot, within
/// [`CANCEL_SWEEP`]; so does everything once the engine cancels at shutdown. `None` when
/// the submit side is closed and nothing waits.
fn next_dispatch(sh: &Shared, rx: &Receiver<WorkItem>, q: &mut WaitQueue) -> Option<(WorkItem, usize)> {
    loop {
        q.take_arrived(rx);
        q.sweep_cancelled(sh);
        if q.heap.is_empty() {
            if !q.open {
                return None;
            }
            match rx.recv() {
                Ok(w) => q.push(w),
                Err(_) => q.open = false,
            }
            continue;
        }
        let slot = if q.open && q.heap.len() < q.cap {
            // New partitions (maybe of a higher job, or the engine closing) wake us too;
            // a cancelled job is swept at least every CANCEL_SWEEP.
            crossbeam::channel::select! {
                recv(sh.slot_rx) -> s => s.expect("the engine holds a slot sender"),
                recv(rx) -> w => {
                    match w {
                        Ok(w) => q.push(w),
                        Err(_) => q.open = false,
                    }
                    continue;
                }
                default(CANCEL_SWEEP) => continue,
            }
        } else {
            // Full, or closed: only a slot moves us (polled for cancels).
            match sh.slot_rx.recv_timeout(CANCEL_SWEEP) {
                Ok(s) => s,
                Err(_) => continue,
            }
        };
        // What arrived while we waited competes for this slot too.
        q.take_arrived(rx);
        let Waiting { work, arrived, .. } = q.heap.pop().expect("non-empty while waiting");
        let item = &work.item;
        item.job.timeline.record_interval(
            "wait_slot",
            Level::Stage,
            Who { job_id: item.job.id, partition: item.partition, thread: TID_DISPATCH },
            arrived,
            arrived.elapsed(),
        );
        if item.job.cancelled(sh) {
            free_slot(sh, slot);
            cancel_queued(sh, work);
            continue;
        }
        return Some((work, slot));
    }
}

/// The dispatcher: gives each partition a slot, highest job priority first
/// ([`next_dispatch`]), and hands it to one of
/// `synth_workers` synthesis threads. They are plain threads, not a rayon pool: a rayon
/// worker that waits on another pool (the witness pool, `Shared::witness_pool`) runs its
/// own pool's queued tasks meanwhile, so the next partitions would start nested on the
/// same thread and finish in reverse order.
pub(super) fn dispatcher(
    sh: Arc<Shared>,
    rx: Receiver<WorkItem>,
    synth_workers: usize,
    prove_tx: Sender<Synthesized>,
) {
    // At most `slots` partitions hold a slot, so at most that many wait here.
    let (work_tx, work_rx) = crossbeam::channel::unbounded::<(WorkItem, usize)>();
    let mut workers = Vec::with_capacity(synth_workers);
    for i in 0..synth_workers.max(1) {
        let (sh, rx, tx) = (sh.clone(), work_rx.clone(), prove_tx.clone());
        let tid = i as u32 + 1;
        let spawned = std::thread::Builder::new().name(format!("arenaprove-synth-{i}")).spawn(move || {
            for (work, slot) in rx.iter() {
                synthesize(sh.clone(), work, slot, tx.clone(), tid);
            }
        });
        match spawned {
            Ok(h) => workers.push(h),
            // Fewer workers than configured still drain the channel; with none, this
            // thread synthesizes.
            Err(e) => tracing::error!("synthesis thread {i} did not start: {e}"),
        }
    }
    let mut queue = WaitQueue {
        heap: std::collections::BinaryHeap::new(),
        arrived: 0,
        cap: sh.config.job_queue_max.max(1),
        open: true,
    };
    while let Some((work, slot)) = next_dispatch(&sh, &rx, &mut queue) {
        if workers.is_empty() {
            synthesize(sh.clone(), work, slot, prove_tx.clone(), 1);
        } else if let Err(back) = work_tx.send((work, slot)) {
            // Unreachable while a worker lives (they end only when this sender drops).
            let (work, slot) = back.into_inner();
            free_slot(&sh, slot);
            cancel_queued(&sh, work);
        }
    }
    drop(prove_tx);
    // The workers finish what is queued, then their prove_tx clones close.
    drop(work_tx);
    for w in workers {
        let _ = w.join();
    }
}

fn synth_err(partition: u32, e: impl Into<Groth16Error>) -> PartitionError {
    PartitionError::Synthesis { partition, source: Arc::new(e.into()) }
}

fn synthesize(sh: Arc<Shared>, work: WorkItem, slot: usize, tx: Sender<Synthesized>, tid: u32) {
    let t0 = Instant::now();
    let WorkItem { item, circuit } = work;
    let (job, kind, partition) = (&item.job, &item.kind, item.partition);
    let result = (|| -> Result<Held, PartitionError> {
        let mut held = sh.memory.held(&sh.config, kind).map_err(|e| synth_err(partition, e))?;
        let cs = &mut held.witness;
        cs.alloc_one().map_err(|e| synth_err(partition, e))?;
        let span = tracing::info_span!("synthesize", job = job.id, partition);
        // On the witness pool: the partition's parallel work (parts, products) spreads over
        // every core, not over this worker's pool.
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            sh.witness_pool.install(|| span.in_scope(|| circuit.synthesize_into(cs)))
        }));
        match run {
            Err(p) => return Err(PartitionError::Panicked { partition, reason: panic_message(&*p) }),
            Ok(Err(e)) => {
                // A typed over-shape error recorded by the assignment beats its string form.
                return Err(match cs.finish() {
                    Err(sticky @ CircuitError::OverShape { .. }) => synth_err(partition, sticky),
                    _ => synth_err(partition, e),
                });
            }
            Ok(Ok(())) => {}
        }
        cs.finish().map_err(|e| synth_err(partition, e))?;
        Ok(held)
    })();
    job.timeline.record_interval(
        "synthesize",
        Level::Stage,
        Who { job_id: job.id, partition, thread: tid },
        t0,
        t0.elapsed(),
    );
    match result {
        Ok(held) => {
            let msg = Synthesized { item, slot, held, enqueued: Instant::now() };
            if let Err(e) = tx.send(msg) {
                // The prover is gone (shutdown): give everything back.
                let m = e.into_inner();
                let p = m.item.partition;
                end_early(&sh, &m.item.job, m.held, m.slot, p, PartitionError::Cancelled { partition: p });
            }
        }
        Err(e) => {
            // The assignment (if any) was dropped inside the closure: slabs are back.
            free_slot(&sh, slot);
            complete(&sh, &item.job, partition, Err(e));
        }
    }
}

/// A stage's result, with a caught panic turned into a typed error.
fn caught<T>(
    partition: u32,
    f: impl FnOnce() -> crate::groth16::error::Result<T>,
) -> Result<T, PartitionError> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(PartitionError::Prove { partition, source: Arc::new(e) }),
        Err(p) => Err(PartitionError::Panicked { partition, reason: panic_message(&*p) }),
    }
}

pub(super) fn prover_loop(sh: Arc<Shared>, rx: Receiver<Synthesized>, tx: Sender<Started>, tid: u32) {
    for Synthesized { item, slot, mut held, enqueued } in rx.iter() {
        let job = item.job.clone();
        let p = item.partition;
        let who = Who { job_id: job.id, partition: p, thread: tid };
        job.timeline.record_interval("wait_prove", Level::Stage, who, enqueued, enqueued.elapsed());
        if job.cancelled(&sh) {
            end_early(&sh, &job, held, slot, p, PartitionError::Cancelled { partition: p });
            continue;
        }
        let t0 = Instant::now();
        let backend = held.backend(&item.kind);
        let witness = &mut held.witness;
        let span = tracing::info_span!("prove_start", job = job.id, partition = p);
        let work = WorkScope::enter(job.tag(p, "prove_start"));
        let res = caught(p, || span.in_scope(|| backend.prove_start(witness)));
        drop(work);
        job.timeline.record_interval("prove_start", Level::Stage, who, t0, t0.elapsed());
        match res {
            Ok(start) => {
                let t = start.timings();
                let d = &t.device;
                job.timeline.record_calls(
                    who,
                    t0,
                    &[("ntt_h", t.ntt_h, d.ntt_h), ("msm_h", t.msm_h, d.msm_h)],
                );
                let msg = Started { item, slot, held, start, enqueued: Instant::now() };
                if let Err(e) = tx.send(msg) {
                    let m = e.into_inner();
                    end_early(&sh, &job, m.held, m.slot, p, PartitionError::Cancelled { partition: p });
                }
            }
            Err(e) => end_early(&sh, &job, held, slot, p, e),
        }
    }
}

pub(super) fn finalizer_loop(sh: Arc<Shared>, rx: Receiver<Started>, tid: u32) {
    for Started { item, slot, held, start, enqueued } in rx.iter() {
        let job = item.job.clone();
        let p = item.partition;
        let who = Who { job_id: job.id, partition: p, thread: tid };
        job.timeline.record_interval("wait_finalize", Level::Stage, who, enqueued, enqueued.elapsed());
        let Randomness { r, s } = item.randomness.unwrap_or_else(|| {
            let mut rng = sh.rng.lock().unwrap_or_else(|p| p.into_inner());
            Randomness { r: Scalar::random(&mut *rng), s: Scalar::random(&mut *rng) }
        });
        let t0 = Instant::now();
        let backend = held.backend(&item.kind);
        let work = WorkScope::enter(job.tag(p, "finalize"));
        let res = caught(p, || {
            tracing::info_span!("finalize", job = job.id, partition = p)
                .in_scope(|| backend.finalize(start, &held.witness, r, s))
        });
        drop(work);
        job.timeline.record_interval("finalize", Level::Stage, who, t0, t0.elapsed());
        let result = res.and_then(|(proof, t)| {
            job.timeline.record_calls(
                who,
                t0,
                &[
                    ("msm_l", t.msm_l, t.device.msm_l),
                    ("msm_a", t.msm_a, t.device.msm_a),
                    ("msm_b_g1", t.msm_b_g1, t.device.msm_b_g1),
                    ("msm_b_g2", t.msm_b_g2, t.device.msm_b_g2),
                    ("proof", t.finalize, Duration::ZERO),
                ],
            );
            let public_inputs = held.witness.input_assignment()[1..].to_vec();
            if !sh.config.verify {
                return Ok(PartitionOutput { partition: p, proof, public_inputs, verified: false });
            }
            let tv = Instant::now();
            let verdict = tracing::info_span!("verify", job = job.id, partition = p)
                .in_scope(|| crate::groth16::verify_proof(&item.kind.pvk, &proof, &public_inputs));
            job.timeline.record_interval("verify", Level::Stage, who, tv, tv.elapsed());
            match verdict {
                Ok(true) => Ok(PartitionOutput { partition: p, proof, public_inputs, verified: true }),
                Ok(false) => Err(PartitionError::Unverified { partition: p }),
                // An error is not a rejection: say what went wrong.
                Err(e) => Err(PartitionError::Verify { partition: p, source: Arc::new(e) }),
            }
        });
        // Handback: the assignment's slabs (and in fresh mode its mappings) go back here.
        let th = Instant::now();
        tracing::info_span!("handback", job = job.id, partition = p).in_scope(|| drop(held));
        job.timeline.record_interval("handback", Level::Stage, who, th, th.elapsed());
        free_slot(&sh, slot);
        complete(&sh, &job, p, result);
    }
}
