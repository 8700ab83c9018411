//! The engine on the CUDA backend against the engine on the CPU backend: same params, same
//! circuits, same r and s (`Job.randomness`), so the proofs must be byte-identical, and
//! every one verified, by the engine and by bellperson 0.27's verifier (proof and verifying
//! key in bellperson's byte format). Chain, sha and sector circuits from 2^10 to 2^18
//! constraints; 2^22 behind `--ignored` (minutes of CPU proving: run it on the GPU
//! machine, `test-engine --ignored --test-threads=1`). Also
//! counted: device allocations (the arena's one) and host registrations (one per region,
//! at start) stay put over the proofs after warm-up.
//!
//! Each test prints `SKIP: <reason>` and passes on a host without kernels, driver or GPU
//! (CI), unless `ARENAPROVE_REQUIRE_GPU` requires the GPUs it needs (scripts/gpu-test.sh
//! builds this binary for the GPU machine and runs it with `ARENAPROVE_REQUIRE_GPU=1`);
//! any other error opening a GPU fails it (tests/common `decide`).

mod common;

use std::sync::Arc;
use std::time::Instant;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{build, AnyCircuit, CircuitKind, SectorPartitionCircuit};
use arenaprove_circuits::native::synthesize_bellpepper;
use arenaprove_circuits::shape_of_native;
use arenaprove_cuda::CudaFactory;
use arenaprove_engine::deps::bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use arenaprove_engine::deps::blstrs::Scalar;
use arenaprove_engine::deps::ff::Field;
use arenaprove_engine::deps::tracing;
use arenaprove_engine::groth16::{
    generate_random_parameters, Parameters, ParamsMemory, ProofShape, ProverMemory,
};
use arenaprove_engine::pipeline::{
    native, AllocMode, CircuitSpec, Engine, EngineConfig, Job, JobOutput, Level, Randomness, Scope,
    ShutdownMode,
};
use arenaprove_engine::{prove_circuit, Backend, BackendFactory, CpuBackend};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// A native circuit through bellpepper-core's trait (for parameter generation).
struct ViaBridge(AnyCircuit);

impl Circuit<Scalar> for ViaBridge {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        synthesize_bellpepper(&self.0, cs)
    }
}

fn circuit(kind: CircuitKind, constraints: usize, partition: u64) -> AnyCircuit {
    match kind {
        CircuitKind::Sector => {
            AnyCircuit::Sector(SectorPartitionCircuit::for_constraints(7, partition as usize, constraints))
        }
        _ => build(kind, constraints, 7_000 + partition).expect("a test circuit"),
    }
}

fn open_or_skip() -> Option<Arc<CudaFactory>> {
    common::opened_or_skip(CudaFactory::open(0)).map(Arc::new)
}

fn engine(
    params: &Arc<Parameters>,
    kind: CircuitKind,
    constraints: usize,
    gpu: Option<Arc<CudaFactory>>,
) -> Engine {
    engine_with(params, kind, constraints, gpu, AllocMode::Slab)
}

fn engine_with(
    params: &Arc<Parameters>,
    kind: CircuitKind,
    constraints: usize,
    gpu: Option<Arc<CudaFactory>>,
    alloc: AllocMode,
) -> Engine {
    let shape = shape_of_native(&circuit(kind, constraints, 0)).expect("shape");
    let mut cfg = EngineConfig {
        slots: 2,
        synth_workers: 2,
        alloc,
        region: RegionConfig { huge_pages: false, ..RegionConfig::default() },
        ..EngineConfig::default()
    };
    if let Some(f) = gpu {
        cfg.backend = f;
    }
    Engine::new(
        cfg,
        vec![CircuitSpec { kind: kind.to_string(), shape, params: params.clone(), matrices: None }],
    )
    .expect("engine")
}

/// Development parameters for `kind` at `constraints`, from toxic waste seeded by `seed`.
fn params_for(kind: CircuitKind, constraints: usize, seed: u64) -> Arc<Parameters> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let circuit = ViaBridge(circuit(kind, constraints, 0));
    Arc::new(generate_random_parameters(circuit, &mut rng, &ParamsMemory::heap()).expect("params"))
}

fn job(kind: CircuitKind, constraints: usize, partitions: u64, seed: u64) -> Job {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let parts = (0..partitions).map(|p| native(circuit(kind, constraints, p))).collect();
    let mut j = Job::new(kind.to_string(), parts);
    j.randomness = Some(
        (0..partitions)
            .map(|_| Randomness { r: Scalar::random(&mut rng), s: Scalar::random(&mut rng) })
            .collect(),
    );
    j
}

/// A kind of `kind` at `constraints` synthesized through its recording: the recording,
/// its spec over `params`, and an engine config of two slots (CPU backend).
fn precompiled_kind(
    kind: CircuitKind,
    constraints: usize,
    params: &Arc<Parameters>,
) -> (Arc<arenaprove_circuits::Precompiled>, CircuitSpec, EngineConfig) {
    let pc = Arc::new(
        arenaprove_circuits::record_native(&circuit(kind, constraints, 0), &format!("{kind}@{constraints}"))
            .expect("recorded"),
    );
    let shape = shape_of_native(&circuit(kind, constraints, 0)).expect("shape");
    let spec = CircuitSpec::new(kind.to_string(), shape, params.clone()).with_matrices(pc.clone());
    let cfg = EngineConfig {
        slots: 2,
        synth_workers: 2,
        region: RegionConfig { huge_pages: false, ..RegionConfig::default() },
        ..EngineConfig::default()
    };
    (pc, spec, cfg)
}

/// A job of `partitions` partitions synthesized through `pc` (the native witness alone,
/// `precompiled_native`), with r and s seeded by `seed`.
fn precompiled_job(
    kind: CircuitKind,
    constraints: usize,
    pc: &Arc<arenaprove_circuits::Precompiled>,
    partitions: u64,
    seed: u64,
) -> Job {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let parts = (0..partitions)
        .map(|p| arenaprove_engine::pipeline::precompiled_native(circuit(kind, constraints, p), pc.clone()))
        .collect();
    let mut j = Job::new(kind.to_string(), parts);
    j.randomness = Some(
        (0..partitions)
            .map(|_| Randomness { r: Scalar::random(&mut rng), s: Scalar::random(&mut rng) })
            .collect(),
    );
    j
}

/// bellperson 0.27 verifies every partition's proof, read from our bytes, against the
/// verifying key read from our bytes.
fn bellperson_verifies(params: &Parameters, out: &JobOutput) {
    use arenaprove_engine::deps::blstrs::Bls12;
    let vk = bellperson::groth16::VerifyingKey::<Bls12>::read(&params.vk.to_bytes()[..])
        .expect("bellperson reads our vk");
    let pvk = bellperson::groth16::prepare_verifying_key(&vk);
    for p in &out.partitions {
        let p = p.as_ref().expect("proved");
        let proof = bellperson::groth16::Proof::<Bls12>::read(&p.proof.to_bytes()[..])
            .expect("bellperson reads our proof");
        let ok =
            bellperson::groth16::verify_proof(&pvk, &proof, &p.public_inputs).expect("bellperson verifies");
        assert!(ok, "bellperson rejects the GPU proof of partition {}", p.partition);
    }
}

/// Proves `partitions` partitions of `kind` at `2^log` constraints on both backends.
fn gpu_matches_cpu(gpu: &Arc<CudaFactory>, kind: CircuitKind, log: u32, partitions: u64) {
    let constraints = 1usize << log;
    let t0 = Instant::now();
    let params = params_for(kind, constraints, log as u64);
    let t_params = t0.elapsed();
    let cpu = engine(&params, kind, constraints, None);
    let t1 = Instant::now();
    let cpu_out = cpu.prove(job(kind, constraints, partitions, 99)).expect("cpu job");
    let t_cpu = t1.elapsed();
    assert!(cpu_out.is_ok(), "cpu: {:?}", cpu_out.first_error());
    cpu.shutdown(ShutdownMode::Drain);

    let dev = engine(&params, kind, constraints, Some(gpu.clone()));
    let device_terms: usize =
        dev.memory_plan().terms.iter().filter(|t| t.scope == Scope::Device).map(|t| t.bytes()).sum();
    assert!(device_terms > 0, "the plan has the device terms");
    assert!(
        dev.memory_plan().terms.iter().all(|t| t.pool != "twiddles"),
        "no host twiddle table for the GPU (its NTT tables are in the device arena)"
    );
    let t2 = Instant::now();
    let gpu_out = dev.prove(job(kind, constraints, partitions, 99)).expect("gpu job");
    let t_gpu = t2.elapsed();
    assert!(gpu_out.is_ok(), "gpu: {:?}", gpu_out.first_error());
    assert!(gpu_out.partitions.iter().all(|p| p.as_ref().unwrap().verified), "every GPU proof verified");
    assert_eq!(
        gpu_out.proof_bytes().unwrap(),
        cpu_out.proof_bytes().unwrap(),
        "{kind} 2^{log}: GPU proofs differ from the CPU backend's"
    );
    bellperson_verifies(&params, &gpu_out);
    // The same calls on both backends (the one prover times them), partition by partition.
    let calls = |out: &JobOutput, partition: u32| -> Vec<&'static str> {
        out.spans
            .iter()
            .filter(|s| s.level == Level::Call && s.partition == partition)
            .map(|s| s.name)
            .collect()
    };
    for k in 0..partitions as u32 {
        assert_eq!(
            calls(&gpu_out, k),
            calls(&cpu_out, k),
            "partition {k}: the GPU's calls differ from the CPU's"
        );
    }
    // Kernel-level timers: the device time of ntt_h (h pipeline), msm_h and the four
    // finalize MSMs, each nested at the end of its call; none on the CPU backend.
    let kernels: Vec<_> = gpu_out.spans.iter().filter(|s| s.level == Level::Kernel).collect();
    assert_eq!(kernels.len(), 6 * partitions as usize, "six device timers per partition");
    for k in &kernels {
        let call = gpu_out
            .spans
            .iter()
            .find(|c| {
                c.level == Level::Call
                    && c.partition == k.partition
                    && c.start_ns + c.dur_ns == k.start_ns + k.dur_ns
            })
            .expect("a kernel span ends with its call");
        assert!(k.dur_ns > 0 && k.dur_ns <= call.dur_ns, "{} within {}", k.name, call.name);
        assert_eq!(k.name, format!("gpu_{}", call.name));
    }
    assert!(cpu_out.spans.iter().all(|s| s.level != Level::Kernel), "no device timers on the CPU backend");
    println!(
        "{kind} 2^{log} x{partitions}: identical and verified; params {:.1}s, cpu {:.3}s, gpu {:.3}s",
        t_params.as_secs_f64(),
        t_cpu.as_secs_f64(),
        t_gpu.as_secs_f64()
    );
    dev.shutdown(ShutdownMode::Drain);
}

// One factory (one device, one arena) per test: each test builds one engine on it.
#[test]
fn chain_proofs_are_byte_identical_to_the_cpu_backend() {
    for log in [10, 14, 18] {
        let Some(gpu) = open_or_skip() else { return };
        gpu_matches_cpu(&gpu, CircuitKind::Chain, log, 3);
    }
}

#[test]
fn sha_proofs_are_byte_identical_to_the_cpu_backend() {
    for log in [10, 14, 18] {
        let Some(gpu) = open_or_skip() else { return };
        gpu_matches_cpu(&gpu, CircuitKind::Sha, log, 2);
    }
}

#[test]
fn sector_proofs_are_byte_identical_to_the_cpu_backend() {
    for log in [10, 14, 18] {
        let Some(gpu) = open_or_skip() else { return };
        gpu_matches_cpu(&gpu, CircuitKind::Sector, log, 2);
    }
}

/// 2^22 constraints, one partition of each kind (sector: domain 2^23). Minutes of CPU
/// proving for the reference proofs, hence `--ignored`.
#[test]
#[ignore = "2^22: minutes of CPU proving; run on the GPU machine with --ignored"]
fn proofs_are_byte_identical_to_the_cpu_backend_at_2e22() {
    for kind in [CircuitKind::Chain, CircuitKind::Sha, CircuitKind::Sector] {
        let Some(gpu) = open_or_skip() else { return };
        gpu_matches_cpu(&gpu, kind, 22, 1);
    }
}

/// Records the names of the tracing spans made on the thread it is the default on.
#[derive(Default)]
struct SpanNames(std::sync::Mutex<Vec<&'static str>>);

impl tracing::Subscriber for SpanNames {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut names = self.0.lock().unwrap();
        names.push(span.metadata().name());
        tracing::span::Id::from_u64(names.len() as u64)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The tracing spans of one proof on `backend` (synthesis included), in order.
fn spans_of_one_proof(backend: &dyn Backend, circuit: AnyCircuit) -> Vec<&'static str> {
    let names = Arc::new(SpanNames::default());
    let (r, s) = (Scalar::from(5u64), Scalar::from(7u64));
    tracing::subscriber::with_default(names.clone(), || {
        prove_circuit(backend, ViaBridge(circuit), r, s).expect("proof");
    });
    let out = names.0.lock().unwrap().clone();
    out
}

#[test]
fn a_gpu_proof_shows_the_same_tracing_spans_as_a_cpu_proof() {
    let (kind, constraints) = (CircuitKind::Chain, 1 << 12);
    let params = params_for(kind, constraints, 3);
    let shape = ProofShape::of_params(&params);
    let memory =
        || ProverMemory::reserve(&shape, 1, &Ledger::unlimited(), RegionConfig::heap()).expect("memory");
    let cpu = CpuBackend.build(params.clone(), None, memory()).expect("cpu backend");
    let cpu_spans = spans_of_one_proof(&*cpu, circuit(kind, constraints, 0));
    assert_eq!(
        cpu_spans,
        ["synthesize", "ntt_h", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "finalize"],
        "the prover's stage spans, in the paper's order"
    );
    let Some(gpu) = open_or_skip() else { return };
    gpu.plan_terms(&shape, None, 1);
    let backend = gpu.build(params, None, memory()).expect("gpu backend");
    assert_eq!(backend.name(), "cuda");
    assert_eq!(spans_of_one_proof(&*backend, circuit(kind, constraints, 0)), cpu_spans);
}

/// Proving from the witness alone: a precompiled kind on the GPU engine plans no a, b, c
/// on the host (its slots hold inputs, aux and densities), keeps the recording resident on
/// the device, computes a, b, c there into the h pipeline and builds the L, A and B split
/// vectors there; the proofs equal the CPU engine's for the same r and s, byte for byte.
/// A generic job of that kind fails with a typed error (its slot has no a, b, c), and the
/// next job proves.
#[test]
fn a_precompiled_kind_proves_from_the_witness_alone_on_the_gpu() {
    for (kind, log) in [(CircuitKind::Sector, 14), (CircuitKind::Sha, 14), (CircuitKind::Chain, 12)] {
        // A factory per engine: its arena is sized for the shapes planned before its first
        // build, and these kinds have different domains.
        let Some(gpu) = open_or_skip() else { return };
        let constraints = 1usize << log;
        let params = params_for(kind, constraints, 40 + log as u64);
        let (pc, spec, cfg) = precompiled_kind(kind, constraints, &params);
        let cpu = Engine::new(cfg.clone(), vec![spec.clone()]).expect("cpu engine");
        assert!(cpu.memory_plan().host_abc(), "the CPU's NTTs run in the a, b, c slabs");
        let dev = Engine::new(EngineConfig { backend: gpu.clone(), ..cfg }, vec![spec]).expect("gpu engine");
        let plan = dev.memory_plan();
        assert!(!plan.host_abc(), "no a, b, c on the host:\n{plan}");
        assert!(plan.terms.iter().any(|t| t.what.contains("precompiled rows")), "{plan}");
        let precompiled_job = |seed: u64| precompiled_job(kind, constraints, &pc, 3, seed);
        let uploads_before = gpu.aux_uploads();
        let want = cpu.prove(precompiled_job(5)).expect("cpu job");
        assert!(want.is_ok(), "cpu: {:?}", want.first_error());
        let t = Instant::now();
        let got = dev.prove(precompiled_job(5)).expect("gpu job");
        let t_gpu = t.elapsed();
        assert!(got.is_ok(), "gpu: {:?}", got.first_error());
        assert_eq!(
            got.proof_bytes().unwrap(),
            want.proof_bytes().unwrap(),
            "{kind} 2^{log}: GPU proofs differ"
        );
        bellperson_verifies(&params, &got);
        // Each proof's aux went to the device twice (the h stage, the witness MSMs): packed
        // for sha, whose aux is bits; the others' have too many other values to pack.
        let (packed, whole) = gpu.aux_uploads();
        let (packed, whole) = (packed - uploads_before.0, whole - uploads_before.1);
        assert_eq!(packed + whole, 2 * 3, "{kind}: two aux uploads per proof");
        if kind == CircuitKind::Sha {
            assert_eq!(packed, 2 * 3, "{kind}: a witness of bits goes up packed");
        }
        // A generic job of this kind has nowhere to put a, b, c: a typed error, no panic.
        let generic = dev.prove(job(kind, constraints, 1, 3)).expect("submitted");
        let err =
            generic.first_error().expect("a generic partition on a witness-only slot fails").to_string();
        assert!(err.contains("witness-only"), "{err}");
        let again = dev.prove(precompiled_job(6)).expect("gpu job");
        assert!(again.is_ok(), "the next job proves: {:?}", again.first_error());
        println!(
            "{kind} 2^{log} x3 from the witness alone: identical to the CPU and verified; gpu job {:.3}s; aux uploads packed {packed}, whole {whole}; host per slot {} KiB (cpu: {} KiB)",
            t_gpu.as_secs_f64(),
            plan.slot_bytes() >> 10,
            cpu.memory_plan().slot_bytes() >> 10
        );
        cpu.shutdown(ShutdownMode::Drain);
        let report = dev.shutdown(ShutdownMode::Drain);
        assert!(report.deinit.is_clean(), "{:?}", report.deinit);
    }
}

/// After warm-up, proofs make no device allocation (the arena's one stays one, its
/// scratch high-water mark stays put) and no host registration (one per engine region,
/// made at start); the staging buffers the pageable bases went up through at start are
/// freed and not made again.
#[test]
fn no_device_allocation_or_registration_per_proof() {
    let Some(gpu) = open_or_skip() else { return };
    // 2^14 constraints: H's bases (1.5 MiB) are over the staging threshold (1 MiB).
    let (kind, constraints) = (CircuitKind::Chain, 1usize << 14);
    let params = params_for(kind, constraints, 5);
    let e = engine(&params, kind, constraints, Some(gpu.clone()));
    assert_eq!(gpu.host_staging_bytes(), 0, "the staging buffers are freed after start");
    let regs_at_start = gpu.hook().registrations();
    assert!(regs_at_start > 0, "the engine's regions are registered at start");
    assert!(gpu.hook().registered_bytes() > 0);
    let out = e.prove(job(kind, constraints, 4, 1)).unwrap(); // warm-up
    assert!(out.is_ok(), "{:?}", out.first_error());
    let warm = gpu.arena_stats().expect("the arena is reserved at build");
    for k in 0..5 {
        let out = e.prove(job(kind, constraints, 4, 10 + k)).unwrap();
        assert!(out.is_ok(), "{:?}", out.first_error());
    }
    let after = gpu.arena_stats().unwrap();
    assert_eq!(after.device_allocs, 1, "one device allocation, at start");
    assert_eq!(after, warm, "the arena is unchanged after warm-up");
    assert!(after.scratch_high_bytes + after.persistent_bytes <= after.reserved_bytes);
    assert_eq!(gpu.hook().registrations(), regs_at_start, "no host registration per proof");
    assert_eq!(gpu.host_staging_bytes(), 0, "no staging buffers made by a proof");
    println!(
        "20 proofs after warm-up: {} device allocation, arena {warm:?}, {regs_at_start} host registrations ({} MiB), all at start",
        after.device_allocs,
        gpu.hook().registered_bytes() >> 20
    );
    e.shutdown(ShutdownMode::Drain);
    assert_eq!(gpu.hook().registered_bytes(), 0, "regions unregistered at shutdown");
}

/// Fresh mode builds one prover per partition, and an embedder may rebuild its engine on
/// the same factory (the daemon's PreloadSRS/EvictSRS does): the parameters' bases go to
/// the device once per parameter set, not once per build (the arena frees nothing, so
/// uploading them again ran it out of room after one partition).
#[test]
fn bases_upload_once_per_params_across_fresh_mode_and_rebuilt_engines() {
    let Some(gpu) = open_or_skip() else { return };
    let (kind, constraints) = (CircuitKind::Sector, 1usize << 12);
    let params = params_for(kind, constraints, 6);
    let e = engine_with(&params, kind, constraints, Some(gpu.clone()), AllocMode::Fresh);
    let out = e.prove(job(kind, constraints, 3, 1)).unwrap();
    assert!(out.is_ok(), "{:?}", out.first_error());
    let warm = gpu.arena_stats().expect("the arena is reserved at the first build");
    for k in 0..3 {
        let out = e.prove(job(kind, constraints, 3, 20 + k)).unwrap();
        assert!(out.is_ok(), "fresh mode, job {k}: {:?}", out.first_error());
    }
    e.shutdown(ShutdownMode::Drain);
    // A second engine (slab mode this time) over the same factory and params.
    let e = engine_with(&params, kind, constraints, Some(gpu.clone()), AllocMode::Slab);
    let out = e.prove(job(kind, constraints, 3, 30)).unwrap();
    assert!(out.is_ok(), "rebuilt engine: {:?}", out.first_error());
    e.shutdown(ShutdownMode::Drain);
    let after = gpu.arena_stats().unwrap();
    assert_eq!(after.persistent_bytes, warm.persistent_bytes, "bases uploaded once for one parameter set");
    assert_eq!(after.device_allocs, 1, "one device allocation");
    println!("fresh mode, 12 partitions + a rebuilt engine: arena {after:?}");
}

/// Two GPUs behind one factory (skips on a host with fewer): the engine runs a prover
/// thread per GPU, operations go to whichever GPU is free, proofs stay byte-identical to
/// the CPU backend's, and each GPU made exactly one device allocation.
#[test]
fn two_gpus_share_the_work_and_match_the_cpu_backend() {
    if !common::gpus_or_skip(2) {
        return;
    }
    let count = arenaprove_cuda::device_count().expect("counted above");
    // One factory (one arena per GPU, sized for one kind) per kind.
    for (kind, partitions) in [(CircuitKind::Chain, 8), (CircuitKind::Sha, 6)] {
        let gpu = Arc::new(CudaFactory::open_many(&[0, 1]).expect("open GPUs 0 and 1"));
        assert_eq!(gpu.ordinals(), vec![0, 1]);
        println!("{count} GPUs; {}", gpu.describe());
        gpu_matches_cpu(&gpu, kind, 16, partitions);
        let each = gpu.arena_stats_each();
        for (i, st) in each.iter().enumerate() {
            let st = st.expect("every GPU's arena is reserved at build");
            assert_eq!(st.device_allocs, 1, "GPU {i}: one device allocation");
            assert!(st.persistent_bytes > 0, "GPU {i} holds the bases");
            assert!(st.scratch_high_bytes > 0, "{kind}: GPU {i} ran no operation");
        }
        println!("{kind}: arenas {each:?}");
        for a in gpu.activity() {
            assert!(a.operations > 0, "{kind}: GPU {} ran no operation: {a:?}", a.ordinal);
            assert!(!a.busy && a.working_for.is_none(), "idle after the jobs: {a:?}");
        }
    }
}

/// Each GPU says what it does: the partition an operation in flight works for (the engine's
/// job id, kind and stage), and its operations and busy time so far, read without waiting
/// for the device.
#[test]
fn each_gpu_reports_the_partition_it_works_for() {
    let Some(gpu) = open_or_skip() else { return };
    let (kind, constraints) = (CircuitKind::Chain, 1usize << 14);
    let params = params_for(kind, constraints, 6);
    let e = engine(&params, kind, constraints, Some(gpu.clone()));
    assert!(gpu.activity().iter().all(|a| a.operations == 0 && !a.busy));
    let handle = e.submit(job(kind, constraints, 6, 3)).unwrap();
    let job_id = handle.id();
    let mut seen = Vec::new();
    let t0 = std::time::Instant::now();
    while seen.is_empty() && t0.elapsed() < std::time::Duration::from_secs(60) {
        for a in gpu.activity() {
            if let Some(tag) = a.working_for {
                assert!(a.busy);
                seen.push(tag);
            }
        }
    }
    let out = handle.wait().unwrap();
    assert!(out.is_ok(), "{:?}", out.first_error());
    let tag = seen.first().expect("an operation was seen in flight");
    assert_eq!(tag.job, job_id);
    assert!(tag.partition < 6 && ["prove_start", "finalize"].contains(&tag.stage), "{tag:?}");
    assert_eq!(&*tag.kind, kind.to_string().as_str());
    let a = &gpu.activity()[0];
    // Per partition: the h stage (one hold) and the four witness MSMs over one staged aux
    // (one hold).
    assert_eq!(a.operations, 6 * 2, "{a:?}");
    assert!(!a.busy && a.busy_time > std::time::Duration::ZERO, "{a:?}");
    println!("GPU activity after 6 partitions: {a:?}; first seen in flight: {tag:?}");
    e.shutdown(ShutdownMode::Drain);
}

#[test]
fn a_bad_gpu_list_is_a_typed_error() {
    assert!(matches!(CudaFactory::open_many(&[]), Err(arenaprove_cuda::CudaError::Devices(_))));
    match CudaFactory::open_many(&[0, 0]) {
        Err(arenaprove_cuda::CudaError::Devices(m)) => assert!(m.contains("twice"), "{m}"),
        // Without kernels or a driver the duplicate check still comes first.
        other => panic!("GPU 0 twice: {:?}", other.map(|f| f.ordinals())),
    }
}

/// A device-memory budget with room beyond everything resident: the plan gives H fixed-base
/// windows (copies of its bases made once on the device), the memory plan names them, and
/// the proofs stay byte-identical to the CPU engine's and verify.
#[test]
fn room_in_a_device_budget_gives_h_fixed_base_windows_and_the_same_proofs() {
    let (kind, log) = (CircuitKind::Sector, 14u32);
    let constraints = 1usize << log;
    let params = params_for(kind, constraints, 91);
    let (pc, spec, cfg) = precompiled_kind(kind, constraints, &params);
    let precompiled_job = |seed: u64| precompiled_job(kind, constraints, &pc, 5, seed);
    let cpu = Engine::new(cfg.clone(), vec![spec.clone()]).expect("cpu engine");
    let want = cpu.prove(precompiled_job(9)).expect("cpu job");
    assert!(want.is_ok(), "cpu: {:?}", want.first_error());
    cpu.shutdown(ShutdownMode::Drain);

    let pshape = arenaprove_engine::groth16::ProofShape::of_params(&params);
    let full = arenaprove_cuda::device_plan_sized(
        &pshape,
        Some(arenaprove_cuda::rows_resident_bytes(&pc.row_stream())),
    );
    let budget = full.total_bytes() + (256 << 20);
    let Some(gpu) = common::opened_or_skip(CudaFactory::open(0)) else { return };
    let gpu = Arc::new(gpu.with_device_memory(Some(budget)));
    let plan = gpu.plan_for(&pshape, Some(&pc)).expect("a plan within the budget");
    let fixed = plan.h_fixed.expect("room for H's copies");
    assert!(fixed.copies > 1 && plan.streamed_bytes == 0 && plan.total_bytes() <= budget, "{plan:?}");
    let dev_cfg = EngineConfig { backend: gpu.clone(), slots: 2, synth_workers: 2, ..cfg.clone() };
    let dev = Engine::new(dev_cfg, vec![spec.clone()]).expect("gpu engine within the budget");
    let mp = dev.memory_plan();
    assert!(mp.terms.iter().any(|t| t.what.contains("H fixed-base windows")), "{mp}");
    for seed in [9u64, 10] {
        let got = dev.prove(precompiled_job(seed)).expect("gpu job");
        assert!(got.is_ok(), "gpu with {fixed:?}: {:?}", got.first_error());
        if seed == 9 {
            assert_eq!(got.proof_bytes().unwrap(), want.proof_bytes().unwrap(), "{fixed:?}: proofs differ");
        }
        bellperson_verifies(&params, &got);
    }
    let reserved = gpu.arena_stats().expect("reserved").reserved_bytes;
    assert!(reserved <= budget, "arena {reserved} over the budget {budget}");
    println!(
        "budget {budget} B: H with {fixed:?} ({} B of copies), arena {reserved} B; identical and verified",
        plan.h_copies_bytes
    );
    let report = dev.shutdown(ShutdownMode::Drain);
    assert!(report.deinit.is_clean(), "{:?}", report.deinit);
}

/// A device-memory budget below what the proofs need resident: the plan streams the base
/// sets that do not fit from page-locked host memory (and, when the recording does not
/// fit either, the partitions hold a, b, c on the host); the proofs stay byte-identical
/// to the CPU engine's and verify. A budget below the least plan refuses to start, naming
/// the least.
#[test]
fn a_device_memory_budget_streams_bases_and_proofs_stay_identical() {
    let (kind, log) = (CircuitKind::Sector, 14u32);
    let constraints = 1usize << log;
    let params = params_for(kind, constraints, 90);
    let (pc, spec, cfg) = precompiled_kind(kind, constraints, &params);
    let precompiled_job = |seed: u64| precompiled_job(kind, constraints, &pc, 5, seed);
    let cpu = Engine::new(cfg.clone(), vec![spec.clone()]).expect("cpu engine");
    let want = cpu.prove(precompiled_job(8)).expect("cpu job");
    assert!(want.is_ok(), "cpu: {:?}", want.first_error());
    cpu.shutdown(ShutdownMode::Drain);

    let pshape = arenaprove_engine::groth16::ProofShape::of_params(&params);
    let rows_bytes = arenaprove_cuda::rows_resident_bytes(&pc.row_stream());
    let full = arenaprove_cuda::device_plan_sized(&pshape, Some(rows_bytes));
    let least_host_abc = arenaprove_cuda::DevicePlan::for_proofs(
        &arenaprove_cuda::device_shape(&pshape, Some(rows_bytes)),
        [false; 5],
        1 << 16,
        false,
    );
    // One byte short of everything resident; then the least plan (a, b, c from the host).
    for (budget, rows_on_device) in [(full.total_bytes() - 1, true), (least_host_abc.total_bytes(), false)] {
        let Some(gpu) = common::opened_or_skip(CudaFactory::open(0)) else { return };
        let gpu = Arc::new(gpu.with_device_memory(Some(budget)));
        let plan = gpu.plan_for(&pshape, Some(&pc)).expect("a plan within the budget");
        assert!(plan.total_bytes() <= budget && plan.streamed_bytes > 0, "{plan:?}");
        assert_eq!(plan.rows_resident(), rows_on_device, "{plan:?}");
        // Three slots: a, b, c from the host come in two sets shared by them (leased at the
        // products, handed back after h), so partitions wait for a set now and then.
        let dev_cfg = EngineConfig {
            backend: gpu.clone(),
            slots: 3,
            synth_workers: 3,
            late_abc_sets: Some(2),
            ..cfg.clone()
        };
        let dev = Engine::new(dev_cfg, vec![spec.clone()]).expect("gpu engine within the budget");
        let mp = dev.memory_plan();
        assert_eq!(mp.host_abc(), !rows_on_device, "{mp}");
        if !rows_on_device {
            let abc = mp.terms.iter().find(|t| t.pool == "abc").expect("an abc term");
            assert_eq!((abc.count, abc.scope), (6, arenaprove_engine::pipeline::Scope::Shared), "{mp}");
        }
        assert!(mp.terms.iter().any(|t| t.what.contains("streamed per proof")), "{mp}");
        let got = dev.prove(precompiled_job(8)).expect("gpu job");
        assert!(got.is_ok(), "gpu within {budget} bytes: {:?}", got.first_error());
        assert_eq!(got.proof_bytes().unwrap(), want.proof_bytes().unwrap(), "budget {budget}: proofs differ");
        bellperson_verifies(&params, &got);
        let reserved = gpu.arena_stats().expect("reserved").reserved_bytes;
        assert!(reserved <= budget, "arena {reserved} over the budget {budget}");
        println!(
            "budget {budget} B (everything resident: {} B): arena {reserved} B, streamed {} B per proof in chunks of {}, a, b, c on the device: {rows_on_device}; identical and verified",
            full.total_bytes(),
            plan.streamed_bytes,
            plan.chunk_points
        );
        let report = dev.shutdown(ShutdownMode::Drain);
        assert!(report.deinit.is_clean(), "{:?}", report.deinit);
    }
    // Below the least plan: the engine does not start, and says why.
    let Some(gpu) = common::opened_or_skip(CudaFactory::open(0)) else { return };
    let gpu = Arc::new(gpu.with_device_memory(Some(least_host_abc.total_bytes() / 2)));
    let err =
        Engine::new(EngineConfig { backend: gpu, ..cfg }, vec![spec]).err().expect("refused").to_string();
    assert!(err.contains("budget"), "{err}");
}
