//! [`Engine`]: the pipeline's public face (see the module docs in `mod.rs`): start-up
//! (plan, reservation, threads), submission and shutdown. The stage loops are in
//! `stages.rs`, where memory comes from in `reserve.rs`, the plan in `plan.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use arenaprove_arena::{deinit_check, DeinitReport, Ledger, LedgerSnapshot};
use arenaprove_circuits::Shape;
use crossbeam::channel::{bounded, Receiver, Sender};
use rand_core::{RngCore, SeedableRng};

use super::config::{AllocMode, CircuitSpec, EngineConfig, SLOTS_MAX};
use super::error::EngineError;
use super::job::{Job, JobCanceller, JobHandle, JobOutput};
use super::plan::MemoryPlan;
use super::reserve::{Kind, SlotMemory};
use super::stages::{
    cancel_queued, dispatcher, finalizer_loop, prover_loop, JobState, Partition, Shared, Started,
    Synthesized, WorkItem,
};
use super::timeline::Timeline;
use crate::backend::Backend;
use crate::groth16::{prepare_verifying_key, ProofShape};

/// How [`Engine::shutdown`] treats jobs still queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    /// Finish every accepted job.
    Drain,
    /// Fail every partition that has not reached the prover with
    /// [`PartitionError::Cancelled`](super::PartitionError::Cancelled) (queued ones at once);
    /// let those proving end.
    Cancel,
}

/// What the engine had at shutdown.
#[derive(Clone, Debug)]
pub struct ShutdownReport {
    pub ledger: LedgerSnapshot,
    /// Slabs still leased when the pools were dropped (must be 0).
    pub slabs_outstanding: usize,
    /// The arena's shutdown check: which pools still had slabs out, and whether the ledger
    /// balanced. `deinit.is_clean()` is the engine's promise.
    pub deinit: DeinitReport,
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

/// Whether the engine's backend computes `spec`'s a, b, c from its recording (then its
/// partitions lease the witness only).
fn proves_from_witness(config: &EngineConfig, spec: &CircuitSpec) -> bool {
    config.alloc == AllocMode::Slab
        && spec.matrices.as_deref().is_some_and(|rows| {
            config.backend.proves_from_witness_for(&ProofShape::of_params(&spec.params), rows)
        })
}

/// Whether `spec`'s partitions lease a, b, c only at their products
/// ([`arenaprove_circuits::LateAbc`]): a precompiled kind whose backend proves from the
/// witness (its finalize builds the split vectors itself, so it never leases from the `abc`
/// pool) but keeps no recording for this kind, so a, b, c are computed on the host and read
/// only by the h stage.
fn late_abc(config: &EngineConfig, spec: &CircuitSpec) -> bool {
    config.alloc == AllocMode::Slab
        && spec.matrices.is_some()
        && config.backend.proves_from_witness()
        && !proves_from_witness(config, spec)
}

/// How long a partition that leases a, b, c late waits for a set before it fails.
const LATE_ABC_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The long-lived proving engine. See the module docs.
pub struct Engine {
    shared: Arc<Shared>,
    kinds: HashMap<String, Arc<Kind>>,
    plan: MemoryPlan,
    dispatch_tx: Option<Sender<WorkItem>>,
    /// The dispatcher's queue, for [`ShutdownMode::Cancel`] to empty at once.
    dispatch_rx: Receiver<WorkItem>,
    threads: Vec<JoinHandle<()>>,
    next_job: AtomicU64,
}

impl Engine {
    /// Reserves every slab for `specs` (slots x the largest shape), freezes the arena and
    /// starts the pipeline's threads.
    pub fn new(config: EngineConfig, specs: Vec<CircuitSpec>) -> Result<Engine, EngineError> {
        let plan = Engine::plan(&config, &specs)?;
        Engine::with_plan(config, specs, plan)
    }

    /// The plan `Engine::new` would reserve for `specs`, checked against the configured
    /// limit, without reserving anything.
    pub fn plan(config: &EngineConfig, specs: &[CircuitSpec]) -> Result<MemoryPlan, EngineError> {
        if config.slots == 0 || config.slots > SLOTS_MAX {
            return Err(EngineError::Config(format!("slots = {} not in 1..={SLOTS_MAX}", config.slots)));
        }
        if config.synth_workers == 0 || config.synth_workers > config.slots {
            return Err(EngineError::Config(format!(
                "synth_workers = {} not in 1..=slots ({})",
                config.synth_workers, config.slots
            )));
        }
        if let Some(n) = config.finalize_workers {
            if n == 0 || n > config.slots {
                return Err(EngineError::Config(format!(
                    "finalize_workers = {n} not in 1..=slots ({})",
                    config.slots
                )));
            }
        }
        if specs.is_empty() {
            return Err(EngineError::Config("no circuit kinds".into()));
        }
        for s in specs {
            check_params_fit(s)?;
        }
        let shapes: Vec<Shape> = specs.iter().map(|s| s.shape).collect();
        let mut plan = MemoryPlan::for_shapes(&shapes, config.slots);
        if !config.backend.host_twiddles() {
            plan = plan.without_host_twiddles();
        }
        if specs.iter().all(|s| proves_from_witness(config, s)) {
            plan = plan.without_host_abc();
        } else if specs.iter().all(|s| proves_from_witness(config, s) || late_abc(config, s)) {
            plan = plan.with_late_abc_sets(config.late_abc_sets());
        }
        plan.mlock = config.region.mlock;
        for s in specs {
            plan = plan.with_resident(
                &format!("'{}' parameters (h, l, a, b_g1, b_g2)", s.kind),
                s.params.resident_bytes(),
            );
            // The backend's own terms (the GPU's device arena), known before it reserves.
            let rows = s.matrices.as_deref().filter(|_| proves_from_witness(config, s));
            let shape = ProofShape::of_params(&s.params);
            plan = plan.with_terms(config.backend.plan_terms(&shape, rows, config.slots));
        }
        plan.check_fits(config.memory_limit_bytes)?;
        Ok(plan)
    }

    fn with_plan(
        config: EngineConfig,
        specs: Vec<CircuitSpec>,
        plan: MemoryPlan,
    ) -> Result<Engine, EngineError> {
        let ledger = Ledger::new(config.memory_limit_bytes);
        let memory = match config.alloc {
            AllocMode::Slab => {
                // The backend's hook (the GPU pins each region once, here at start) unless
                // the embedder set one.
                let mut region = config.region.clone();
                if region.hook.is_none() {
                    region.hook = config.backend.region_hook();
                }
                SlotMemory::Slab(
                    plan.reserve(&ledger, &region).map_err(|source| EngineError::Reserve { source })?,
                )
            }
            AllocMode::Fresh => SlotMemory::Fresh,
        };
        let mut kinds = HashMap::new();
        let late_gate = Arc::new(Mutex::new(()));
        for spec in specs {
            let backend: Option<Arc<dyn Backend>> = match &memory {
                SlotMemory::Slab(mem) => {
                    let shape = ProofShape::of_params(&spec.params);
                    let pm = mem.prover_memory(&shape);
                    let rows = spec.matrices.clone().filter(|_| proves_from_witness(&config, &spec));
                    let backend = config.backend.build(spec.params.clone(), rows, pm);
                    Some(backend.map_err(|source| EngineError::Backend { kind: spec.kind.clone(), source })?)
                }
                SlotMemory::Fresh => None,
            };
            let pvk = prepare_verifying_key(&spec.params.vk);
            let witness_only = proves_from_witness(&config, &spec);
            let late_abc = match &memory {
                SlotMemory::Slab(mem) if late_abc(&config, &spec) => mem.assign.abc.clone().map(|pool| {
                    arenaprove_circuits::LateAbc { pool, gate: late_gate.clone(), wait: LATE_ABC_WAIT }
                }),
                _ => None,
            };
            kinds.insert(spec.kind.clone(), Arc::new(Kind { spec, pvk, backend, witness_only, late_abc }));
        }
        if config.alloc == AllocMode::Slab {
            ledger.freeze();
        }

        let (slot_tx, slot_rx) = bounded(config.slots);
        for i in 0..config.slots {
            slot_tx.send(i).expect("slot channel sized to slots");
        }
        let witness_threads = config
            .witness_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let witness_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(witness_threads)
            .thread_name(|i| format!("arenaprove-witness-{i}"))
            .build()?;
        let shared = Arc::new(Shared {
            witness_pool,
            ledger,
            memory,
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
        let n_synth = config.synth_workers as u32;
        let n_prove = config.backend.prover_workers().clamp(1, config.slots.max(1));
        let tid_prover = n_synth + 1;
        let tid_final = tid_prover + n_prove as u32;
        let n_final = config.finalize_workers();

        let mut threads = Vec::new();
        let (sh, rx) = (shared.clone(), dispatch_rx.clone());
        let synth_workers = config.synth_workers;
        threads.push(spawn("arenaprove-dispatch", move || dispatcher(sh, rx, synth_workers, prove_tx))?);
        for i in 0..n_prove {
            let (sh, rx, tx) = (shared.clone(), prove_rx.clone(), fin_tx.clone());
            let tid = tid_prover + i as u32;
            threads.push(spawn(&format!("arenaprove-prove-{i}"), move || prover_loop(sh, rx, tx, tid))?);
        }
        drop((prove_rx, fin_tx));
        for i in 0..n_final {
            let (sh, rx) = (shared.clone(), fin_rx.clone());
            let tid = tid_final + i as u32;
            threads.push(spawn(&format!("arenaprove-final-{i}"), move || finalizer_loop(sh, rx, tid))?);
        }
        drop(fin_rx);

        Ok(Engine {
            shared,
            kinds,
            plan,
            dispatch_tx: Some(dispatch_tx),
            dispatch_rx,
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
        match &self.shared.memory {
            SlotMemory::Slab(m) => m.assign.outstanding(),
            SlotMemory::Fresh => 0,
        }
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
        let cancel = JobCanceller::new();
        let id = self.next_job.fetch_add(1, Ordering::SeqCst);
        let state = Arc::new(JobState {
            id,
            kind: Arc::from(job.kind.as_str()),
            priority: job.priority,
            start: Instant::now(),
            results: Mutex::new((0..n).map(|_| None).collect()),
            remaining: AtomicUsize::new(n),
            timeline: Timeline::new(),
            tx: out_tx,
            cancel: cancel.clone(),
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
        Ok(JobHandle { job_id: id, rx: out_rx, cancel })
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
        let pools = match &self.shared.memory {
            SlotMemory::Slab(m) => m.slot_pools(),
            SlotMemory::Fresh => Vec::new(),
        };
        // Logs each pool with slabs out at `error` level.
        let deinit = deinit_check(&pools, &self.shared.ledger);
        ShutdownReport {
            ledger: self.shared.ledger.snapshot(),
            slabs_outstanding,
            deinit,
            partitions_ok: self.shared.ok.load(Ordering::SeqCst),
            partitions_failed: self.shared.failed.load(Ordering::SeqCst),
        }
    }

    fn stop(&mut self, mode: ShutdownMode) {
        if mode == ShutdownMode::Cancel {
            self.shared.cancel.store(true, Ordering::SeqCst);
        }
        self.dispatch_tx.take();
        if mode == ShutdownMode::Cancel {
            // Queued partitions end now, not once the dispatcher gets to them (it may be
            // waiting for a slot): their jobs' handles return at once.
            while let Ok(work) = self.dispatch_rx.try_recv() {
                cancel_queued(&self.shared, work);
            }
        }
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

/// Starts an engine thread. On an error the threads already started end by themselves:
/// their channels close when `Engine::new` returns it.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, EngineError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|source| EngineError::Spawn { thread: name.to_string(), source })
}

fn os_seed() -> [u8; 32] {
    let mut seed = [0u8; 32];
    rand_core::OsRng.fill_bytes(&mut seed);
    seed
}

fn check_params_fit(s: &CircuitSpec) -> Result<(), EngineError> {
    s.params.check_fits(&s.shape).map_err(|source| EngineError::ParamsShape { kind: s.kind.clone(), source })
}
