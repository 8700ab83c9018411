//! The long-lived engine: jobs through the pipeline, every proof verified, faults contained,
//! slabs all back, nothing reserved after freeze.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use arenaprove_arena::{RegionConfig, RegionHook, SharedHook};
use arenaprove_circuits::{shape_of, ArenaAssignment, Shape};
use arenaprove_engine::groth16::{
    generate_random_parameters, verify_proof, Groth16Error, Parameters, ParamsMemory,
};
use arenaprove_engine::pipeline::{
    generic, AllocMode, CircuitSpec, Engine, EngineConfig, EngineError, Job, JobOutput, PartitionCircuit,
    PartitionError, Scope, ShutdownMode,
};
use arenaprove_engine::{BackendFactory, CpuBackend};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// What a test partition does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Ok,
    /// Returns a SynthesisError after `n` steps.
    Error(usize),
    /// Panics after `n` steps.
    Panic(usize),
    /// Same shape, but one step's witness is wrong: the proof cannot verify.
    Unsat,
}

/// x_{i+1} = x_i^2 + 7 for `steps` steps; public input x_steps.
#[derive(Clone)]
struct Squares {
    steps: usize,
    x0: u64,
    mode: Mode,
}

impl Circuit<Scalar> for Squares {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let k = Scalar::from(7u64);
        let mut x = Scalar::from(self.x0);
        let mut xv = cs.alloc(|| "x0", || Ok(x))?;
        for i in 0..self.steps {
            match self.mode {
                Mode::Error(n) if n == i => return Err(SynthesisError::Unsatisfiable),
                Mode::Panic(n) if n == i => panic!("injected panic at step {i}"),
                _ => {}
            }
            let mut next = x.square() + k;
            if self.mode == Mode::Unsat && i == self.steps / 2 {
                next += Scalar::ONE;
            }
            let nv = if i + 1 == self.steps {
                cs.alloc_input(|| "out", || Ok(next))?
            } else {
                cs.alloc(|| "x", || Ok(next))?
            };
            cs.enforce(|| "step", |lc| lc + xv, |lc| lc + xv, |lc| lc + nv - (k, CS::one()));
            x = next;
            xv = nv;
        }
        Ok(())
    }
}

fn part(steps: usize, x0: u64, mode: Mode) -> Box<dyn PartitionCircuit> {
    generic(Squares { steps, x0, mode })
}

const STEPS: usize = 60;

fn setup(steps: usize) -> (Shape, Arc<Parameters>) {
    let c = Squares { steps, x0: 3, mode: Mode::Ok };
    let shape = shape_of(c.clone()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let params = generate_random_parameters(c, &mut rng, &ParamsMemory::heap()).unwrap();
    (shape, Arc::new(params))
}

/// The tests' engine config: one synthesis worker, 4 KiB pages, a 1 GiB limit.
fn config(alloc: AllocMode, slots: usize) -> EngineConfig {
    EngineConfig {
        slots,
        synth_workers: 1,
        alloc,
        region: RegionConfig { huge_pages: false, ..RegionConfig::default() },
        memory_limit_bytes: 1 << 30,
        ..EngineConfig::default()
    }
}

fn engine(alloc: AllocMode, slots: usize) -> (Engine, Arc<Parameters>) {
    let (shape, params) = setup(STEPS);
    let cfg = config(alloc, slots);
    let e = Engine::new(
        cfg,
        vec![CircuitSpec { kind: "squares".into(), shape, params: params.clone(), matrices: None }],
    )
    .unwrap();
    (e, params)
}

/// Submits `jobs` jobs of `parts` "squares" partitions (witness seeds `10 * j + p`) all at
/// once, waits for each, and checks that every partition proved and verified, by the
/// engine and again here. The outputs come back, in order, for the caller's own checks.
fn prove_all_verified(e: &Engine, params: &Parameters, jobs: u64, parts: u64) -> Vec<JobOutput> {
    let pvk = arenaprove_engine::groth16::prepare_verifying_key(&params.vk);
    let handles: Vec<_> = (0..jobs)
        .map(|j| {
            e.submit(Job::new("squares", (0..parts).map(|p| part(STEPS, 10 * j + p, Mode::Ok)).collect()))
                .unwrap()
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            let out = h.wait().unwrap();
            assert!(out.is_ok(), "{:?}", out.first_error());
            assert_eq!(out.partitions.len(), parts as usize);
            for p in out.partitions.iter().map(|p| p.as_ref().unwrap()) {
                assert!(p.verified);
                // Independently of the engine's own check.
                assert!(verify_proof(&pvk, &p.proof, &p.public_inputs).unwrap());
            }
            out
        })
        .collect()
}

#[test]
fn sectors_prove_and_verify_and_memory_comes_back() {
    let (e, params) = engine(AllocMode::Slab, 2);
    let reserved = e.ledger().reserved_bytes;
    assert!(e.ledger().frozen);
    for out in prove_all_verified(&e, &params, 4, 3) {
        for p in out.partitions.iter().map(|p| p.as_ref().unwrap()) {
            assert_eq!(p.public_inputs.len(), 1);
        }
        assert_eq!(out.proof_bytes().unwrap().len(), 3 * 192);
        let names: Vec<&str> = out.spans.iter().map(|s| s.name).collect();
        for stage in
            ["synthesize", "prove_start", "ntt_h", "msm_h", "finalize", "msm_l", "handback", "verify"]
        {
            assert!(names.contains(&stage), "timeline lacks {stage}: {names:?}");
        }
        assert!(out.gaps.iter().any(|g| g.stage == "prove_start" && g.inner_ns > 0));
    }
    let snap = e.ledger();
    assert_eq!(snap.reserved_bytes, reserved, "no region reserved after start");
    assert_eq!(snap.regions_after_freeze, 0);
    assert_eq!(e.slabs_outstanding(), 0);
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    assert!(report.ledger.balanced(), "{:?}", report.ledger);
    assert_eq!(report.partitions_ok, 12);
}

#[test]
fn given_randomness_gives_the_same_proof_in_both_alloc_modes() {
    let r = arenaprove_engine::pipeline::Randomness { r: Scalar::from(5u64), s: Scalar::from(9u64) };
    let mut proofs = Vec::new();
    for mode in [AllocMode::Slab, AllocMode::Fresh] {
        let (e, _) = engine(mode, 1);
        let mut job = Job::new("squares", vec![part(STEPS, 4, Mode::Ok)]);
        job.randomness = Some(vec![r]);
        let out = e.prove(job).unwrap();
        proofs.push(out.proof_bytes().unwrap());
    }
    assert_eq!(proofs[0], proofs[1]);
}

#[test]
fn faults_end_their_job_only() {
    let (e, _) = engine(AllocMode::Slab, 2);
    let bad = [Mode::Error(5), Mode::Panic(17), Mode::Unsat];
    for (i, mode) in bad.into_iter().enumerate() {
        let out = e.prove(Job::new("squares", vec![part(STEPS, 1, Mode::Ok), part(STEPS, 2, mode)])).unwrap();
        assert!(out.partitions[0].is_ok());
        let err = out.partitions[1].as_ref().unwrap_err();
        match (mode, err) {
            (Mode::Error(_), PartitionError::Synthesis { partition: 1, .. }) => {}
            (Mode::Panic(_), PartitionError::Panicked { partition: 1, reason }) => {
                assert!(reason.contains("injected panic"), "{reason}")
            }
            (Mode::Unsat, PartitionError::Unverified { partition: 1 }) => {}
            other => panic!("case {i}: unexpected {other:?}"),
        }
        // The next job still succeeds, and every slab is back.
        assert!(e.prove(Job::new("squares", vec![part(STEPS, 9, Mode::Ok)])).unwrap().is_ok());
        assert_eq!(e.slabs_outstanding(), 0);
    }
    // A circuit larger than the shape the engine reserved for: a clear error, no growth.
    let out = e.prove(Job::new("squares", vec![part(STEPS * 2, 1, Mode::Ok)])).unwrap();
    let err = out.first_error().unwrap().to_string();
    assert!(err.contains("larger than its shape"), "{err}");
    assert_eq!(e.ledger().regions_after_freeze, 0);
    let report = e.shutdown(ShutdownMode::Drain);
    assert!(report.ledger.balanced());
}

#[test]
fn random_faults_over_hundreds_of_partitions_keep_memory_flat() {
    let (e, _) = engine(AllocMode::Slab, 3);
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let reserved = e.ledger().reserved_bytes;
    let mut handles = Vec::new();
    let mut expected_bad = 0;
    for j in 0..60u64 {
        let parts: Vec<_> = (0..5)
            .map(|p| {
                let mode = match rng.next_u32() % 10 {
                    0 => Mode::Error((rng.next_u32() as usize) % STEPS),
                    1 => Mode::Panic((rng.next_u32() as usize) % STEPS),
                    2 => Mode::Unsat,
                    _ => Mode::Ok,
                };
                if mode != Mode::Ok {
                    expected_bad += 1;
                }
                part(STEPS, j * 5 + p, mode)
            })
            .collect();
        handles.push(e.submit(Job::new("squares", parts)).unwrap());
    }
    let (mut ok, mut bad) = (0, 0);
    for h in handles {
        let out = h.wait().unwrap();
        assert_eq!(out.partitions.len(), 5);
        for p in &out.partitions {
            match p {
                Ok(p) => {
                    assert!(p.verified);
                    ok += 1
                }
                Err(_) => bad += 1,
            }
        }
    }
    assert_eq!(ok + bad, 300, "every partition accounted for");
    assert_eq!(bad, expected_bad);
    let snap = e.ledger();
    assert_eq!(snap.reserved_bytes, reserved);
    assert_eq!(snap.regions_after_freeze, 0);
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    assert!(report.ledger.balanced());
}

#[test]
fn bad_jobs_are_refused_at_submit() {
    let (e, _) = engine(AllocMode::Slab, 1);
    match e.submit(Job::new("nope", vec![part(STEPS, 1, Mode::Ok)])) {
        Err(EngineError::UnknownKind { kind, known }) => {
            assert_eq!(kind, "nope");
            assert_eq!(known, "squares");
        }
        other => panic!("{:?}", other.err()),
    }
    assert!(matches!(e.submit(Job::new("squares", vec![])), Err(EngineError::NoPartitions)));
    let mut j = Job::new("squares", vec![part(STEPS, 1, Mode::Ok)]);
    j.randomness = Some(vec![]);
    assert!(matches!(e.submit(j), Err(EngineError::Randomness { got: 0, partitions: 1 })));
    let too_many = (0..65).map(|i| part(STEPS, i, Mode::Ok)).collect();
    assert!(matches!(e.submit(Job::new("squares", too_many)), Err(EngineError::TooManyPartitions { .. })));
}

#[test]
fn params_for_another_shape_are_refused_at_start() {
    let (shape, _) = setup(STEPS);
    let (_, other) = setup(STEPS + 40);
    let r = Engine::new(
        EngineConfig::default(),
        vec![CircuitSpec { kind: "squares".into(), shape, params: other, matrices: None }],
    );
    let err = r.err().expect("must refuse");
    let msg = err.to_string();
    assert!(msg.contains("do not fit"), "{msg}");
    // The parameters' own error, typed, as the source.
    match &err {
        EngineError::ParamsShape { kind, source: Groth16Error::ShapeMismatch { .. } } => {
            assert_eq!(kind, "squares")
        }
        other => panic!("{other:?}"),
    }
    let source = std::error::Error::source(&err).expect("a source");
    assert!(source.downcast_ref::<Groth16Error>().is_some(), "{source:?}");
}

/// A partition that, once its synthesis has begun (so it holds a slot), says so on
/// `started` and waits for the gate before synthesizing `inner`.
struct Gated {
    started: mpsc::Sender<()>,
    gate: mpsc::Receiver<()>,
    inner: Box<dyn PartitionCircuit>,
}

impl PartitionCircuit for Gated {
    fn synthesize_into(self: Box<Self>, cs: &mut ArenaAssignment) -> Result<(), SynthesisError> {
        self.started.send(()).expect("the test waits for the start");
        // A message opens the gate; so does the test dropping it (when it fails).
        let _ = self.gate.recv();
        self.inner.synthesize_into(cs)
    }
}

/// A gated "squares" partition: the circuit, the receiver of its start, the gate.
fn gated(x0: u64) -> (Box<dyn PartitionCircuit>, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started) = mpsc::channel();
    let (gate, gate_rx) = mpsc::channel();
    (Box::new(Gated { started: started_tx, gate: gate_rx, inner: part(STEPS, x0, Mode::Ok) }), started, gate)
}

/// Every partition of `out` cancelled, each under its own index, none synthesized.
fn assert_all_cancelled(out: &JobOutput) {
    for (i, p) in out.partitions.iter().enumerate() {
        match p {
            Err(PartitionError::Cancelled { partition }) => assert_eq!(*partition as usize, i),
            other => panic!("job {} partition {i}: expected Cancelled, got {other:?}", out.job_id),
        }
    }
    assert!(!out.spans.iter().any(|s| s.name == "synthesize"), "job {} was synthesized", out.job_id);
}

/// One slot, held by a gated job; a job queued behind it is cancelled before the gate
/// opens: each of its partitions comes back cancelled without being synthesized, the
/// running job and the job queued after it prove, and every slab comes back.
#[test]
fn cancelling_a_queued_job_cancels_it_and_the_others_prove() {
    let (e, params) = engine(AllocMode::Slab, 1);
    let (circuit, started, gate) = gated(1);
    let running = e.submit(Job::new("squares", vec![circuit])).unwrap();
    started.recv().unwrap(); // it holds the only slot now
    let cancelled =
        e.submit(Job::new("squares", vec![part(STEPS, 2, Mode::Ok), part(STEPS, 3, Mode::Ok)])).unwrap();
    let after = e.submit(Job::new("squares", vec![part(STEPS, 4, Mode::Ok)])).unwrap();
    let canceller = cancelled.canceller();
    assert!(!canceller.is_cancelled());
    cancelled.cancel();
    assert!(canceller.is_cancelled(), "a canceller shares its job's flag");
    gate.send(()).unwrap();

    let pvk = arenaprove_engine::groth16::prepare_verifying_key(&params.vk);
    let cancelled = cancelled.wait().unwrap();
    assert_eq!(cancelled.partitions.len(), 2);
    assert_all_cancelled(&cancelled);
    for out in [running.wait().unwrap(), after.wait().unwrap()] {
        assert_eq!(out.partitions.len(), 1);
        let p = out.partitions[0].as_ref().unwrap_or_else(|e| panic!("job {}: {e}", out.job_id));
        assert!(p.verified && verify_proof(&pvk, &p.proof, &p.public_inputs).unwrap());
    }
    let stats = e.stats();
    assert_eq!((stats.partitions_ok, stats.partitions_failed, stats.jobs_done), (2, 2, 3));
    // Cancelling a finished job does nothing.
    canceller.cancel();
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    assert!(report.deinit.is_clean(), "{}", report.deinit);
}

/// One slot, held by a gated job; a job of three partitions queued behind it, then a job of
/// higher priority: when the slot frees, the higher job's partition takes it, before every
/// partition of the job queued earlier, and those keep their order.
#[test]
fn a_higher_priority_job_takes_the_next_slot() {
    let (e, params) = engine(AllocMode::Slab, 1);
    let (circuit, started, gate) = gated(1);
    let running = e.submit(Job::new("squares", vec![circuit])).unwrap();
    started.recv().unwrap(); // it holds the only slot now
    let low = e.submit(Job::new("squares", (0..3).map(|p| part(STEPS, 20 + p, Mode::Ok)).collect())).unwrap();
    let high = e.submit(Job::new("squares", vec![part(STEPS, 30, Mode::Ok)]).with_priority(10)).unwrap();
    gate.send(()).unwrap();
    let pvk = arenaprove_engine::groth16::prepare_verifying_key(&params.vk);
    let outs = [running.wait().unwrap(), low.wait().unwrap(), high.wait().unwrap()];
    for out in &outs {
        assert!(out.is_ok(), "{:?}", out.first_error());
        for p in out.partitions.iter().map(|p| p.as_ref().unwrap()) {
            assert!(p.verified && verify_proof(&pvk, &p.proof, &p.public_inputs).unwrap());
        }
    }
    let starts = |out: &JobOutput| -> Vec<(u32, u64)> {
        let mut v: Vec<_> =
            out.spans.iter().filter(|s| s.name == "synthesize").map(|s| (s.partition, s.start_ns)).collect();
        v.sort_unstable();
        v
    };
    let (low, high) = (starts(&outs[1]), starts(&outs[2]));
    assert_eq!((low.len(), high.len()), (3, 1));
    assert!(low.iter().all(|&(_, t)| t > high[0].1), "high {high:?} before every low {low:?}");
    assert!(low.windows(2).all(|w| w[0].1 < w[1].1), "equal priority keeps arrival order: {low:?}");
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
}

/// One slot, held by a gated job; a low job queued below a higher one: cancelling the low
/// job ends its partitions while the slot is still held, though they are not at the top
/// of the dispatcher's queue.
#[test]
fn a_cancelled_job_below_a_higher_one_ends_without_waiting_for_a_slot() {
    let (e, _) = engine(AllocMode::Slab, 1);
    let (circuit, started, gate) = gated(1);
    let running = e.submit(Job::new("squares", vec![circuit])).unwrap();
    started.recv().unwrap();
    let high = e.submit(Job::new("squares", vec![part(STEPS, 40, Mode::Ok)]).with_priority(5)).unwrap();
    let low =
        e.submit(Job::new("squares", vec![part(STEPS, 41, Mode::Ok), part(STEPS, 42, Mode::Ok)])).unwrap();
    low.cancel();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(low.wait().unwrap());
    });
    let low = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the cancelled job ended with the slot held");
    assert_all_cancelled(&low);
    gate.send(()).unwrap();
    assert!(running.wait().unwrap().is_ok());
    assert!(high.wait().unwrap().is_ok());
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
}

/// One slot, held by a gated job, five jobs queued behind it: `shutdown(Cancel)` ends the
/// queued jobs at once (while the slot is still held; at most the one the dispatcher holds
/// waits for the slot), and the gated job, synthesizing when the engine was cancelled, is
/// cancelled before it reaches the prover. Nothing proves; every slab comes back.
#[test]
fn cancel_at_shutdown_cancels_queued_and_synthesizing_partitions() {
    let (e, _) = engine(AllocMode::Slab, 1);
    let (circuit, started, gate) = gated(1);
    let running = e.submit(Job::new("squares", vec![circuit])).unwrap();
    started.recv().unwrap();
    let mut queued: Vec<_> = (0..5u64)
        .map(|j| e.submit(Job::new("squares", vec![part(STEPS, 10 + j, Mode::Ok)])).unwrap())
        .collect();
    let first = queued.remove(0); // the one the dispatcher may hold, waiting for the slot
    let shutdown = std::thread::spawn(move || e.shutdown(ShutdownMode::Cancel));
    // Were they not cancelled at once, they would wait for the slot: a watchdog opens the
    // gate in the end, so that such a failure fails rather than hangs.
    let watchdog_fired = Arc::new(AtomicBool::new(false));
    let (fired, watchdog_gate) = (watchdog_fired.clone(), gate.clone());
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        fired.store(true, Ordering::SeqCst);
        let _ = watchdog_gate.send(());
    });
    // These return while the gated job still holds the slot: shutdown cancelled them.
    for h in queued {
        assert_all_cancelled(&h.wait().unwrap());
    }
    assert!(!watchdog_fired.load(Ordering::SeqCst), "the queued jobs waited for the slot");
    gate.send(()).unwrap();
    assert_all_cancelled(&first.wait().unwrap());
    let running = running.wait().unwrap();
    assert!(
        matches!(running.partitions[0], Err(PartitionError::Cancelled { partition: 0 })),
        "{:?}",
        running.partitions[0]
    );
    assert!(running.spans.iter().any(|s| s.name == "synthesize"), "it was synthesizing");
    assert!(!running.spans.iter().any(|s| s.name == "prove_start"), "and never reached the prover");
    let report = shutdown.join().unwrap();
    assert_eq!((report.partitions_ok, report.partitions_failed), (0, 6));
    assert_eq!(report.slabs_outstanding, 0);
    assert!(report.deinit.is_clean(), "{}", report.deinit);
}

/// The memory plan is what `Engine::new` reserves, exactly: one region per slot term (pools
/// shared by every kind, each slab sized for what it holds), one twiddle table per domain.
#[test]
fn memory_plan_is_what_the_engine_reserves() {
    let (small_shape, small) = setup(STEPS);
    let (large_shape, large) = setup(4 * STEPS);
    let hook = Arc::new(CountingHook::default());
    let cfg = EngineConfig {
        slots: 2,
        synth_workers: 1,
        region: RegionConfig {
            huge_pages: false,
            hook: Some(SharedHook(hook.clone())),
            ..RegionConfig::default()
        },
        memory_limit_bytes: 1 << 30,
        ..EngineConfig::default()
    };
    let e = Engine::new(
        cfg,
        vec![
            CircuitSpec { kind: "small".into(), shape: small_shape, params: small, matrices: None },
            CircuitSpec { kind: "large".into(), shape: large_shape, params: large, matrices: None },
        ],
    )
    .unwrap();
    let plan = e.memory_plan().clone();
    let ledger = e.ledger();
    let slot_terms: Vec<_> = plan.terms.iter().filter(|t| t.scope == Scope::PerSlot).collect();
    assert_eq!(slot_terms.len(), 4, "abc, inputs, aux, density, shared by both kinds: {plan}");
    assert_eq!(plan.terms.iter().filter(|t| t.pool == "twiddles").count(), 2, "one table per domain: {plan}");
    assert_eq!(ledger.regions, slot_terms.len(), "one region per slot pool: {plan}");
    let slot_region_bytes: usize = slot_terms.iter().map(|t| t.region_bytes()).sum();
    assert_eq!(ledger.reserved_bytes, slot_region_bytes, "the plan is exact: {plan}");
    // Each slab sized for what it holds: inputs by inputs, not by aux.
    let inputs = plan.terms.iter().find(|t| t.pool == "inputs").unwrap();
    assert_eq!(inputs.slab_bytes, large_shape.inputs * 32, "{plan}");
    assert_eq!(plan.terms.iter().find(|t| t.pool == "abc").unwrap().count, 3 * 2, "{plan}");
    // The config's hook reached every pool: four slot pools and two twiddle tables.
    assert_eq!(hook.registered.load(Ordering::SeqCst), 6);
    let report = e.shutdown(ShutdownMode::Drain);
    assert!(report.deinit.is_clean(), "{}", report.deinit);
    assert_eq!(hook.unregistered.load(Ordering::SeqCst), 6, "every region unregistered at shutdown");
}

/// A plan over the configured limit is refused before anything is reserved, naming both.
#[test]
fn plan_over_the_limit_is_refused_at_once() {
    let (shape, params) = setup(STEPS);
    let cfg = EngineConfig { memory_limit_bytes: 1 << 20, ..EngineConfig::default() };
    let err = Engine::new(cfg, vec![CircuitSpec { kind: "s".into(), shape, params, matrices: None }])
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(matches!(err, EngineError::Plan(_)), "{msg}");
    assert!(msg.contains("over the limit of 1048576 bytes") && msg.contains("abc"), "{msg}");
}

#[derive(Default)]
struct CountingHook {
    registered: AtomicUsize,
    unregistered: AtomicUsize,
}

impl RegionHook for CountingHook {
    fn register(&self, _name: &str, _base: NonNull<u8>, _len_bytes: usize) -> Result<(), String> {
        self.registered.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn unregister(&self, _name: &str, _base: NonNull<u8>, _len_bytes: usize) {
        self.unregistered.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn two_finalizers_prove_and_verify_and_stay_within_the_slots() {
    let (shape, params) = setup(STEPS);
    let spec = || CircuitSpec { kind: "squares".into(), shape, params: params.clone(), matrices: None };
    let cfg = |slots, finalize_workers| EngineConfig { finalize_workers, ..config(AllocMode::Slab, slots) };
    // The CPU backend's own choice is one finalizer; an explicit count must fit the slots.
    assert_eq!(cfg(3, None).finalize_workers(), 1);
    for bad in [0, 4] {
        match Engine::new(cfg(3, Some(bad)), vec![spec()]) {
            Err(EngineError::Config(m)) => assert!(m.contains("finalize_workers"), "{m}"),
            other => panic!("finalize_workers = {bad} with 3 slots: {:?}", other.map(|_| ())),
        }
    }
    let e = Engine::new(cfg(3, Some(2)), vec![spec()]).unwrap();
    // Thread ids: dispatcher 0, the synthesis worker 1, the prover 2, finalizers 3 and 4.
    for out in prove_all_verified(&e, &params, 3, 4) {
        let fin: Vec<u32> = out.spans.iter().filter(|s| s.name == "finalize").map(|s| s.thread).collect();
        assert_eq!(fin.len(), 4);
        assert!(fin.iter().all(|t| *t == 3 || *t == 4), "finalize ran on threads {fin:?}");
    }
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    assert_eq!(report.partitions_ok, 12);
}

/// A factory that builds the CPU backend while saying what a device backend says: how
/// many prover threads it wants (two, as the GPU backend with two GPUs) and whether its
/// NTTs read a host twiddle table (not the GPU's).
#[derive(Debug)]
struct DeviceLike {
    prover_workers: usize,
    host_twiddles: bool,
}

impl BackendFactory for DeviceLike {
    fn name(&self) -> &'static str {
        "device-like"
    }
    fn prover_workers(&self) -> usize {
        self.prover_workers
    }
    fn host_twiddles(&self) -> bool {
        self.host_twiddles
    }
    fn build(
        &self,
        params: Arc<Parameters>,
        rows: Option<Arc<arenaprove_circuits::Precompiled>>,
        memory: arenaprove_engine::groth16::ProverMemory,
    ) -> Result<Arc<dyn arenaprove_engine::Backend>, arenaprove_engine::groth16::Groth16Error> {
        CpuBackend.build(params, rows, memory)
    }
}

#[test]
fn a_factory_with_two_devices_gets_two_prover_threads() {
    let (shape, params) = setup(STEPS);
    let spec = CircuitSpec { kind: "squares".into(), shape, params: params.clone(), matrices: None };
    let two = DeviceLike { prover_workers: 2, host_twiddles: true };
    let cfg = EngineConfig { backend: Arc::new(two), ..config(AllocMode::Slab, 3) };
    let e = Engine::new(cfg, vec![spec]).unwrap();
    // Thread ids: dispatcher 0, the synthesis worker 1, provers 2 and 3, the finalizer 4.
    let mut provers = std::collections::BTreeSet::new();
    for out in prove_all_verified(&e, &params, 3, 4) {
        provers.extend(out.spans.iter().filter(|s| s.name == "prove_start").map(|s| s.thread));
        let fin: Vec<u32> = out.spans.iter().filter(|s| s.name == "finalize").map(|s| s.thread).collect();
        assert!(fin.iter().all(|t| *t == 4), "finalize ran on threads {fin:?}");
    }
    assert!(provers.iter().all(|t| *t == 2 || *t == 3), "prove_start ran on threads {provers:?}");
    let report = e.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
    assert_eq!(report.partitions_ok, 12);
}

#[test]
fn a_backend_without_host_ntts_gets_no_twiddle_table_and_the_cpu_cannot_run_without_one() {
    let (shape, params) = setup(STEPS);
    let spec = || CircuitSpec { kind: "squares".into(), shape, params: params.clone(), matrices: None };
    let with = Engine::plan(&config(AllocMode::Slab, 2), &[spec()]).unwrap();
    let twiddles = with.terms.iter().filter(|t| t.pool == "twiddles").count();
    assert_eq!(twiddles, 1, "the CPU backend's plan has the domain's table");
    let no_table = || Arc::new(DeviceLike { prover_workers: 1, host_twiddles: false });
    let cfg = || EngineConfig { backend: no_table(), ..config(AllocMode::Slab, 2) };
    let without = Engine::plan(&cfg(), &[spec()]).unwrap();
    assert!(without.terms.iter().all(|t| t.pool != "twiddles"), "no host table: {:?}", without.terms);
    // Only the table is left out (the heap term is the CPU factory's own, for blst).
    let pools = |p: &arenaprove_engine::pipeline::MemoryPlan| -> Vec<&str> {
        p.terms.iter().map(|t| t.pool).filter(|&n| n != "twiddles" && n != "heap").collect()
    };
    assert_eq!(pools(&without), pools(&with));
    // The CPU operations need the table: a typed error naming it, not a panic.
    match Engine::new(cfg(), vec![spec()]) {
        Err(EngineError::Backend { kind, source }) => {
            assert_eq!(kind, "squares");
            assert!(source.to_string().contains("twiddles"), "{source}");
        }
        Err(e) => panic!("expected a backend error, got {e}"),
        Ok(_) => panic!("the CPU backend built without a twiddle table"),
    }
}
