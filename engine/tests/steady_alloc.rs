//! The steady state allocates a small constant per partition on the heap, and nothing
//! large: counted with the counting allocator over 50 partitions after warm-up.

use std::sync::Arc;

use arenaprove_arena::count_alloc::CountingAlloc;
use arenaprove_arena::RegionConfig;
use arenaprove_circuits::circuits::ChainCircuit;
use arenaprove_circuits::shape_of_native;
use arenaprove_engine::groth16::{generate_random_parameters, ParamsMemory};
use arenaprove_engine::pipeline::{native, CircuitSpec, Engine, EngineConfig, Job, ShutdownMode};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

/// Heap allocations per partition allowed in the steady state. The known sources, each a
/// small constant per partition (none scales with the circuit):
/// - the job: its `Box<dyn PartitionCircuit>`, `JobState` (results Vec, channel), the
///   timeline's span records (~16 per partition, amortized Vec growth);
/// - the prover: the public inputs' byte Vec, the density chunk counts and slices of
///   `append_dense` (2 x 2 Vecs), the verifier's public inputs Vec;
/// - blst's Pippenger: its scratch and per-thread point buffers, per MSM (5 MSMs);
/// - rayon's task bookkeeping for the parallel passes (job refs are heap-allocated when a
///   task is stolen).
const ALLOCS_PER_PARTITION_MAX: u64 = 400;
/// Bytes allocated per partition (transient): the largest is blst's MSM scratch.
const BYTES_PER_PARTITION_MAX: u64 = 4 << 20;

#[test]
fn steady_state_heap_allocations_are_a_small_constant_per_partition() {
    let steps = 1 << 10;
    let circuit = ChainCircuit::new(steps, 1);
    let shape = shape_of_native(&circuit).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let params = Arc::new(generate_random_parameters(circuit, &mut rng, &ParamsMemory::heap()).unwrap());
    let cfg = EngineConfig {
        slots: 2,
        region: RegionConfig { huge_pages: false, ..RegionConfig::default() },
        memory_limit_bytes: 1 << 30,
        ..EngineConfig::default()
    };
    let engine =
        Engine::new(cfg, vec![CircuitSpec { kind: "chain".into(), shape, params, matrices: None }]).unwrap();
    let run = |sectors: u64| {
        for k in 0..sectors {
            let parts = (0..5).map(|p| native(ChainCircuit::new(steps, 100 + k * 5 + p))).collect();
            let out = engine.prove(Job::new("chain", parts)).unwrap();
            assert!(out.is_ok(), "{:?}", out.first_error());
            assert!(out.partitions.iter().all(|p| p.as_ref().unwrap().verified));
        }
    };
    run(2); // warm-up: thread-locals, VecPool shards, rayon's and blst's pools
    let before = ALLOC.snapshot();
    let live_before = ALLOC.live_bytes();
    run(10); // 50 partitions
    let d = ALLOC.snapshot().since(&before);
    let partitions = 50;
    println!(
        "steady state over {partitions} partitions: {} allocs ({} per partition), {} bytes allocated ({} per partition), live {} -> {}",
        d.allocs,
        d.allocs / partitions,
        d.bytes_allocated,
        d.bytes_allocated / partitions,
        live_before,
        ALLOC.live_bytes()
    );
    assert!(
        d.allocs <= ALLOCS_PER_PARTITION_MAX * partitions,
        "{} allocs for {partitions} partitions",
        d.allocs
    );
    assert!(
        d.bytes_allocated <= BYTES_PER_PARTITION_MAX * partitions,
        "{} bytes for {partitions} partitions",
        d.bytes_allocated
    );
    let report = engine.shutdown(ShutdownMode::Drain);
    assert!(report.deinit.is_clean(), "{}", report.deinit);
    assert_eq!(report.ledger.refused_after_freeze, 0, "nothing reserved after freeze");
}
