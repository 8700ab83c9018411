//! [`Engine`]: the pipeline itself (see the module docs in `mod.rs`).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use arenaprove_arena::{Ledger, LedgerSnapshot, RegionConfig};
use arenaprove_circuits::{ArenaAssignment, AssignmentPools, CircuitError, ProverWitness, Shape};
use blstrs::Scalar;
use crossbeam::channel::{bounded, Receiver, Sender};
use ff::Field;
use rand_core::{RngCore, SeedableRng};

use super::config::{AllocMode, EngineConfig, SLOTS_MAX};
use super::job::{Job, JobHandle, JobOutput, PartitionCircuit, PartitionError, PartitionOutput, Randomness};
use super::plan::MemoryPlan;
use super::timeline::{Level, Timeline, Who};
use crate::groth16::prover::{ProveStart, Prover};
use crate::groth16::{prepare_verifying_key, Parameters, PreparedVerifyingKey};

/// A circuit kind the engine serves: its name, its shape and its parameters.
#[derive(Clone)]
pub struct CircuitSpec {
    pub kind: String,
    pub shape: Shape,
    pub params: Arc<Parameters>,
}

/// Why the engine refused something (a job's own failures are [`PartitionError`]s).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error("unknown circuit kind '{kind}' (the engine serves: {known})")]
    UnknownKind { kind: String, known: String },
    #[error("job has {partitions} partitions; limit is {limit} (partitions_per_job_max)")]
    TooManyPartitions { partitions: usize, limit: usize },
    #[error("job has no partitions")]
    NoPartitions,
    #[error("job gives {got} randomness pairs for {partitions} partitions")]
    Randomness { got: usize, partitions: usize },
    #[error("parameters for '{kind}' do not fit its shape: {reason}")]
    ParamsShape { kind: String, reason: String },
    #[error("reserving engine memory: {0}")]
    Memory(String),
    #[error("the engine is shut down")]
    ShutDown,
}

/// How [`Engine::shutdown`] treats jobs still queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    /// Finish every accepted job.
    Drain,
    /// Fail partitions not yet started with [`PartitionError::Cancelled`]; let running ones end.
    Cancel,
}

/// What the engine had at shutdown.
#[derive(Clone, Debug)]
pub struct ShutdownReport {
    pub ledger: LedgerSnapshot,
    /// Slabs still leased when the pools were dropped (must be 0).
    pub slabs_outstanding: usize,
    pub partitions_ok: u64,
    pub partitions_failed: u64,
}

/// Counters since start.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    pub partitions_ok: u64,
    pub partitions_failed: u64,
    pub jobs_done: u64,
}

struct Kind {
    spec: CircuitSpec,
    pvk: PreparedVerifyingKey,
    /// Slab mode: one prover whose split-vector pool serves every slot.
    prover: Option<Prover>,
}

/// Memory of slab mode, shared by all slots (each pool holds exactly `slots` working sets).
struct SlabMemory {
    assign: AssignmentPools,
}

struct JobState {
    id: u64,
    kind: String,
    start: Instant,
    results: Mutex<Vec<Option<Result<PartitionOutput, PartitionError>>>>,
    remaining: AtomicUsize,
    timeline: Timeline,
    tx: Sender<JobOutput>,
}

/// Which partition of which job, as it travels through the stages.
struct Partition {
    job: Arc<JobState>,
    kind: Arc<Kind>,
    partition: u32,
    randomness: Option<Randomness>,
}

/// A partition waiting for synthesis: its circuit is consumed there.
struct WorkItem {
    item: Partition,
    circuit: Box<dyn PartitionCircuit>,
}

/// Storage of one in-flight partition: the assignment, plus (fresh mode) the pools and
/// prover it was made from, which are dropped, i.e. unmapped, with it.
struct Held {
    witness: ArenaAssignment,
    fresh: Option<(AssignmentPools, Prover)>,
}

struct Synthesized {
    item: Partition,
    slot: usize,
    held: Held,
    enqueued: Instant,
}

struct Started {
    item: Partition,
    slot: usize,
    held: Held,
    start: ProveStart,
    enqueued: Instant,
}

struct Shared {
    config: EngineConfig,
    ledger: Arc<Ledger>,
    slab: Option<SlabMemory>,
    cancel: AtomicBool,
    slot_tx: Sender<usize>,
    slot_rx: Receiver<usize>,
    ok: AtomicU64,
    failed: AtomicU64,
    jobs_done: AtomicU64,
    rng: Mutex<rand_chacha::ChaCha20Rng>,
}

/// The long-lived proving engine. See the module docs.
pub struct Engine {
    shared: Arc<Shared>,
    kinds: HashMap<String, Arc<Kind>>,
    plan: MemoryPlan,
    dispatch_tx: Option<Sender<WorkItem>>,
    threads: Vec<JoinHandle<()>>,
    next_job: AtomicU64,
}

/// Thread ids in timelines: 0 dispatcher, 1..=n synthesis workers, then prover, finalizer.
const TID_DISPATCH: u32 = 0;

impl Engine {
    /// Reserves every slab for `specs` (slots x the largest shape), freezes the arena and
    /// starts the pipeline's threads.
    pub fn new(config: EngineConfig, specs: Vec<CircuitSpec>) -> Result<Engine, EngineError> {
        if config.slots == 0 || config.slots > SLOTS_MAX {
            return Err(EngineError::Config(format!("slots = {} not in 1..={SLOTS_MAX}", config.slots)));
        }
        if config.synth_workers == 0 || config.synth_workers > config.slots {
            return Err(EngineError::Config(format!(
                "synth_workers = {} not in 1..=slots ({})",
                config.synth_workers, config.slots
            )));
        }
        if specs.is_empty() {
            return Err(EngineError::Config("no circuit kinds".into()));
        }
        for s in &specs {
            check_params_fit(s)?;
        }
        let shapes: Vec<Shape> = specs.iter().map(|s| s.shape).collect();
        let plan = MemoryPlan::for_shapes(&shapes, config.slots);
        let ledger = Ledger::new(config.memory_limit_bytes);
        let mem_err = |e: &dyn std::fmt::Display| EngineError::Memory(e.to_string());
        let max_shape = Shape::covering(&shapes);

        let slab = match config.alloc {
            AllocMode::Slab => Some(SlabMemory {
                assign: AssignmentPools::for_shape(&max_shape, config.slots, &ledger, config.region.clone())
                    .map_err(|e| mem_err(&e))?,
            }),
            AllocMode::Fresh => None,
        };
        let mut kinds = HashMap::new();
        for spec in specs {
            let prover = match config.alloc {
                AllocMode::Slab => Some(
                    Prover::new(spec.params.clone(), &ledger, config.region.clone(), config.slots)
                        .map_err(|e| mem_err(&e))?,
                ),
                AllocMode::Fresh => None,
            };
            let pvk = prepare_verifying_key(&spec.params.vk);
            kinds.insert(spec.kind.clone(), Arc::new(Kind { spec, pvk, prover }));
        }
        if config.alloc == AllocMode::Slab {
            ledger.freeze();
        }

        let (slot_tx, slot_rx) = bounded(config.slots);
        for i in 0..config.slots {
            slot_tx.send(i).expect("slot channel sized to slots");
        }
        let shared = Arc::new(Shared {
            ledger,
            slab,
            cancel: AtomicBool::new(false),
            slot_tx,
            slot_rx,
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            jobs_done: AtomicU64::new(0),
            rng: Mutex::new(rand_chacha::ChaCha20Rng::from_seed(os_seed())),
            config: config.clone(),
        });

        let (dispatch_tx, dispatch_rx) = bounded::<WorkItem>(config.job_queue_max.max(1));
        let (prove_tx, prove_rx) = bounded::<Synthesized>(config.slots);
        let (fin_tx, fin_rx) = bounded::<Started>(config.slots);
        let synth_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.synth_workers)
            .thread_name(|i| format!("arenaprove-synth-{i}"))
            .build()
            .map_err(|e| EngineError::Config(format!("synthesis pool: {e}")))?;
        let n_synth = config.synth_workers as u32;
        let tid_prover = n_synth + 1;
        let tid_final = n_synth + 2;

        let mut threads = Vec::new();
        let sh = shared.clone();
        threads.push(spawn("arenaprove-dispatch", move || dispatcher(sh, dispatch_rx, synth_pool, prove_tx)));
        let sh = shared.clone();
        threads.push(spawn("arenaprove-prove", move || prover_loop(sh, prove_rx, fin_tx, tid_prover)));
        let sh = shared.clone();
        threads.push(spawn("arenaprove-final", move || finalizer_loop(sh, fin_rx, tid_final)));

        Ok(Engine {
            shared,
            kinds,
            plan,
            dispatch_tx: Some(dispatch_tx),
            threads,
            next_job: AtomicU64::new(1),
        })
    }

    /// What the engine reserved, term by term.
    pub fn memory_plan(&self) -> &MemoryPlan {
        &self.plan
    }

    pub fn ledger(&self) -> LedgerSnapshot {
        self.shared.ledger.snapshot()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    pub fn stats(&self) -> EngineStats {
        EngineStats {
            partitions_ok: self.shared.ok.load(Ordering::SeqCst),
            partitions_failed: self.shared.failed.load(Ordering::SeqCst),
            jobs_done: self.shared.jobs_done.load(Ordering::SeqCst),
        }
    }

    /// Slabs leased right now (0 when idle).
    pub fn slabs_outstanding(&self) -> usize {
        let a = self.shared.slab.as_ref().map_or(0, |m| m.assign.outstanding());
        a + self
            .kinds
            .values()
            .filter_map(|k| k.prover.as_ref())
            .map(|p| p.pool().outstanding())
            .sum::<usize>()
    }

    pub fn kinds(&self) -> Vec<&str> {
        self.kinds.keys().map(|s| s.as_str()).collect()
    }

    /// Queues a job; blocks while the dispatch queue is full (backpressure).
    pub fn submit(&self, job: Job) -> Result<JobHandle, EngineError> {
        let kind = self.kinds.get(&job.kind).cloned().ok_or_else(|| {
            let mut known: Vec<&str> = self.kinds.keys().map(|s| s.as_str()).collect();
            known.sort();
            EngineError::UnknownKind { kind: job.kind.clone(), known: known.join(", ") }
        })?;
        let n = job.partitions.len();
        if n == 0 {
            return Err(EngineError::NoPartitions);
        }
        if n > self.shared.config.partitions_per_job_max {
            return Err(EngineError::TooManyPartitions {
                partitions: n,
                limit: self.shared.config.partitions_per_job_max,
            });
        }
        if let Some(r) = &job.randomness {
            if r.len() != n {
                return Err(EngineError::Randomness { got: r.len(), partitions: n });
            }
        }
        let tx = self.dispatch_tx.as_ref().ok_or(EngineError::ShutDown)?;
        let (out_tx, out_rx) = bounded(1);
        let id = self.next_job.fetch_add(1, Ordering::SeqCst);
        let state = Arc::new(JobState {
            id,
            kind: job.kind.clone(),
            start: Instant::now(),
            results: Mutex::new((0..n).map(|_| None).collect()),
            remaining: AtomicUsize::new(n),
            timeline: Timeline::new(),
            tx: out_tx,
        });
        let randomness = job.randomness;
        for (i, circuit) in job.partitions.into_iter().enumerate() {
            let item = WorkItem {
                item: Partition {
                    job: state.clone(),
                    kind: kind.clone(),
                    partition: i as u32,
                    randomness: randomness.as_ref().map(|r| r[i]),
                },
                circuit,
            };
            tx.send(item).map_err(|_| EngineError::ShutDown)?;
        }
        Ok(JobHandle { job_id: id, rx: out_rx })
    }

    /// Submits a job and waits for it.
    pub fn prove(&self, job: Job) -> Result<JobOutput, EngineError> {
        self.submit(job)?.wait()
    }

    /// Stops the pipeline: drains or cancels queued work, joins every thread and reports
    /// what came back. Every slab must be back (checked and reported).
    pub fn shutdown(mut self, mode: ShutdownMode) -> ShutdownReport {
        self.stop(mode);
        let slabs_outstanding = self.slabs_outstanding();
        if slabs_outstanding != 0 {
            tracing::error!(slabs_outstanding, "engine shut down with slabs still leased");
        }
        ShutdownReport {
            ledger: self.shared.ledger.snapshot(),
            slabs_outstanding,
            partitions_ok: self.shared.ok.load(Ordering::SeqCst),
            partitions_failed: self.shared.failed.load(Ordering::SeqCst),
        }
    }

    fn stop(&mut self, mode: ShutdownMode) {
        if mode == ShutdownMode::Cancel {
            self.shared.cancel.store(true, Ordering::SeqCst);
        }
        self.dispatch_tx.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop(ShutdownMode::Cancel);
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new().name(name.into()).spawn(f).expect("spawning an engine thread")
}

fn os_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    rand_core::OsRng.fill_bytes(&mut seed);
    seed
}

fn check_params_fit(s: &CircuitSpec) -> Result<(), EngineError> {
    s.params
        .check_fits(&s.shape)
        .map_err(|e| EngineError::ParamsShape { kind: s.kind.clone(), reason: e.to_string() })
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
            kind: item_job.kind.clone(),
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

fn dispatcher(
    sh: Arc<Shared>,
    rx: Receiver<WorkItem>,
    pool: rayon::ThreadPool,
    prove_tx: Sender<Synthesized>,
) {
    for work in rx.iter() {
        let item = &work.item;
        if sh.cancel.load(Ordering::SeqCst) {
            let p = item.partition;
            complete(&sh, &item.job, p, Err(PartitionError::Cancelled { partition: p }));
            continue;
        }
        let t0 = Instant::now();
        let slot = sh.slot_rx.recv().expect("the engine holds a slot sender");
        item.job.timeline.record_interval(
            "wait_slot",
            Level::Stage,
            Who { job_id: item.job.id, partition: item.partition, thread: TID_DISPATCH },
            t0,
            t0.elapsed(),
        );
        let sh2 = sh.clone();
        let tx = prove_tx.clone();
        pool.spawn(move || synthesize(sh2, work, slot, tx));
    }
    // Dropping the pool waits for queued synthesis tasks; then prove_tx closes.
    drop(pool);
}

fn new_held(sh: &Shared, kind: &Kind) -> Result<Held, CircuitError> {
    let shape = &kind.spec.shape;
    match &sh.slab {
        Some(mem) => Ok(Held { witness: ArenaAssignment::new(&mem.assign, shape)?, fresh: None }),
        None => {
            // The baseline: fresh, un-faulted mappings for this partition alone.
            let ledger = Ledger::unlimited();
            let region = RegionConfig { prefault: false, huge_pages: false, ..sh.config.region.clone() };
            let pools = AssignmentPools::for_shape(shape, 1, &ledger, region.clone())?;
            let prover = Prover::new(kind.spec.params.clone(), &ledger, region, 1)
                .map_err(|e| CircuitError::Invalid { what: "fresh prover pool", reason: e.to_string() })?;
            Ok(Held { witness: ArenaAssignment::new(&pools, shape)?, fresh: Some((pools, prover)) })
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

fn synthesize(sh: Arc<Shared>, work: WorkItem, slot: usize, tx: Sender<Synthesized>) {
    let tid = rayon::current_thread_index().map_or(1, |i| i as u32 + 1);
    let t0 = Instant::now();
    let WorkItem { item, circuit } = work;
    let (job, kind, partition) = (&item.job, &item.kind, item.partition);
    let result = (|| -> Result<Held, PartitionError> {
        let mut held = new_held(&sh, kind)
            .map_err(|e| PartitionError::Synthesis { partition, reason: e.to_string() })?;
        let cs = &mut held.witness;
        cs.alloc_one().map_err(|e| PartitionError::Synthesis { partition, reason: e.to_string() })?;
        let span = tracing::info_span!("synthesize", job = job.id, partition);
        let run =
            std::panic::catch_unwind(AssertUnwindSafe(|| span.in_scope(|| circuit.synthesize_into(cs))));
        match run {
            Err(p) => return Err(PartitionError::Panicked { partition, reason: panic_message(&*p) }),
            Ok(Err(e)) => {
                // A typed over-shape error recorded by the assignment beats its string form.
                let reason = match cs.finish() {
                    Err(sticky @ CircuitError::OverShape { .. }) => sticky.to_string(),
                    _ => e.to_string(),
                };
                return Err(PartitionError::Synthesis { partition, reason });
            }
            Ok(Ok(())) => {}
        }
        cs.finish().map_err(|e| PartitionError::Synthesis { partition, reason: e.to_string() })?;
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

fn prover_of<'a>(kind: &'a Kind, fresh: &'a Option<(AssignmentPools, Prover)>) -> &'a Prover {
    match fresh {
        Some((_, p)) => p,
        None => kind.prover.as_ref().expect("slab mode has a prover per kind"),
    }
}

fn prover_loop(sh: Arc<Shared>, rx: Receiver<Synthesized>, tx: Sender<Started>, tid: u32) {
    for Synthesized { item, slot, mut held, enqueued } in rx.iter() {
        let job = item.job.clone();
        let p = item.partition;
        let who = Who { job_id: job.id, partition: p, thread: tid };
        job.timeline.record_interval("wait_prove", Level::Stage, who, enqueued, enqueued.elapsed());
        if sh.cancel.load(Ordering::SeqCst) {
            end_early(&sh, &job, held, slot, p, PartitionError::Cancelled { partition: p });
            continue;
        }
        let t0 = Instant::now();
        let Held { witness, fresh } = &mut held;
        let prover = prover_of(&item.kind, fresh);
        let span = tracing::info_span!("prove_start", job = job.id, partition = p);
        let res =
            std::panic::catch_unwind(AssertUnwindSafe(|| span.in_scope(|| prover.prove_start(witness))))
                .map_err(|panic| panic_message(&*panic))
                .and_then(|r| r.map_err(|e| e.to_string()));
        job.timeline.record_interval("prove_start", Level::Stage, who, t0, t0.elapsed());
        match res {
            Ok(start) => {
                let t = start.timings();
                job.timeline.record_calls(who, t0, &[("ntt_h", t.ntt_h), ("msm_h", t.msm_h)]);
                let msg = Started { item, slot, held, start, enqueued: Instant::now() };
                if let Err(e) = tx.send(msg) {
                    let m = e.into_inner();
                    end_early(&sh, &job, m.held, m.slot, p, PartitionError::Cancelled { partition: p });
                }
            }
            Err(reason) => {
                end_early(&sh, &job, held, slot, p, PartitionError::Prove { partition: p, reason })
            }
        }
    }
}

fn finalizer_loop(sh: Arc<Shared>, rx: Receiver<Started>, tid: u32) {
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
        let prover = prover_of(&item.kind, &held.fresh);
        let res = std::panic::catch_unwind(AssertUnwindSafe(|| {
            tracing::info_span!("finalize", job = job.id, partition = p)
                .in_scope(|| prover.finalize(start, &held.witness, r, s))
        }))
        .map_err(|panic| panic_message(&*panic))
        .and_then(|r| r.map_err(|e| e.to_string()));
        let fin_dur = t0.elapsed();
        job.timeline.record_interval("finalize", Level::Stage, who, t0, fin_dur);
        let result = match res {
            Ok((proof, t)) => {
                job.timeline.record_calls(
                    who,
                    t0,
                    &[
                        ("msm_l", t.msm_l),
                        ("msm_a", t.msm_a),
                        ("msm_b_g1", t.msm_b_g1),
                        ("msm_b_g2", t.msm_b_g2),
                        ("proof", t.finalize),
                    ],
                );
                let public_inputs = held.witness.input_assignment()[1..].to_vec();
                let verified = if sh.config.verify {
                    let tv = Instant::now();
                    let ok = tracing::info_span!("verify", job = job.id, partition = p).in_scope(|| {
                        crate::groth16::verify_proof(&item.kind.pvk, &proof, &public_inputs).unwrap_or(false)
                    });
                    job.timeline.record_interval("verify", Level::Stage, who, tv, tv.elapsed());
                    ok
                } else {
                    false
                };
                if sh.config.verify && !verified {
                    Err(PartitionError::Unverified { partition: p })
                } else {
                    Ok(PartitionOutput { partition: p, proof, public_inputs, verified })
                }
            }
            Err(reason) => Err(PartitionError::Prove { partition: p, reason }),
        };
        // Handback: the assignment's slabs (and in fresh mode its mappings) go back here.
        let th = Instant::now();
        tracing::info_span!("handback", job = job.id, partition = p).in_scope(|| drop(held));
        job.timeline.record_interval("handback", Level::Stage, who, th, th.elapsed());
        free_slot(&sh, slot);
        complete(&sh, &job, p, result);
    }
}
