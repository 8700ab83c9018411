//! Precompiled synthesis: proofs made from it on the engine verify, and with the same
//! randomness they are byte-identical to the proofs of the generic (bellpepper-trait) path.
//! A partition whose circuit does not match the recording fails alone, with a named error.
use std::sync::Arc;

use arenaprove::circuits::circuits::{ChainCircuit, SectorPartitionCircuit};
use arenaprove::circuits::{record, shape_of};
use arenaprove::engine::deps::ff::Field;
use arenaprove::engine::deps::rand_chacha::ChaCha20Rng;
use arenaprove::engine::deps::rand_core::SeedableRng;
use arenaprove::engine::groth16::{generate_random_parameters, ParamsMemory};
use arenaprove::engine::pipeline::{
    generic, precompiled, CircuitSpec, Engine, EngineConfig, Job, PartitionCircuit, Randomness, ShutdownMode,
};
use blstrs::Scalar;

fn randomness(n: usize) -> Vec<Randomness> {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    (0..n).map(|_| Randomness { r: Scalar::random(&mut rng), s: Scalar::random(&mut rng) }).collect()
}

fn prove(engine: &Engine, kind: &str, partitions: Vec<Box<dyn PartitionCircuit>>) -> Vec<u8> {
    let n = partitions.len();
    let mut job = Job::new(kind, partitions);
    job.randomness = Some(randomness(n));
    let out = engine.prove(job).unwrap();
    assert!(out.is_ok(), "{:?}", out.first_error());
    assert!(out.partitions.iter().all(|p| p.as_ref().unwrap().verified));
    out.proof_bytes().unwrap()
}

/// `ours` and `theirs` (the same circuits through two paths) prove the same bytes with the
/// same randomness.
fn same_proofs(
    engine: &Engine,
    kind: &str,
    ours: Vec<Box<dyn PartitionCircuit>>,
    theirs: Vec<Box<dyn PartitionCircuit>>,
) {
    assert_eq!(
        prove(engine, kind, ours),
        prove(engine, kind, theirs),
        "{kind}: same randomness, same proofs"
    );
}

/// A job of `foreign` (a partition synthesized through another kind's recording, named
/// `recording`) then `next`: the first fails alone with the recording named, the next
/// proves; then every slab is back at the drain.
fn foreign_recording_fails_alone(
    engine: Engine,
    kind: &str,
    foreign: Box<dyn PartitionCircuit>,
    next: Box<dyn PartitionCircuit>,
    recording: &str,
) {
    let out = engine.prove(Job::new(kind, vec![foreign, next])).unwrap();
    let err = out.partitions[0].as_ref().unwrap_err().to_string();
    assert!(err.contains(recording), "{err}");
    assert!(out.partitions[1].is_ok());
    let report = engine.shutdown(ShutdownMode::Drain);
    assert_eq!(report.slabs_outstanding, 0);
}

#[test]
fn precompiled_proofs_verify_and_equal_the_generic_path() {
    let chain = |seed| ChainCircuit::new(2_000, seed);
    let sector = |seed| SectorPartitionCircuit::for_constraints(seed, 0, 4096);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mem = ParamsMemory::default();
    let specs = vec![
        CircuitSpec {
            kind: "chain".into(),
            shape: shape_of(chain(0)).unwrap(),
            params: Arc::new(generate_random_parameters(chain(0), &mut rng, &mem).unwrap()),
            matrices: None,
        },
        CircuitSpec {
            kind: "sector".into(),
            shape: shape_of(sector(0)).unwrap(),
            params: Arc::new(generate_random_parameters(sector(0), &mut rng, &mem).unwrap()),
            matrices: None,
        },
    ];
    let config = EngineConfig { slots: 2, synth_workers: 2, ..EngineConfig::default() };
    let engine = Engine::new(config, specs).unwrap();
    // Recorded from the circuit with seed 0; proven for other witnesses.
    let chain_pc = Arc::new(record(chain(0), "chain@2000").unwrap());
    let sector_pc = Arc::new(record(sector(0), "sector@4096").unwrap());

    same_proofs(
        &engine,
        "chain",
        (1..=3).map(|s| precompiled(chain(s), chain_pc.clone())).collect(),
        (1..=3).map(|s| generic(chain(s))).collect(),
    );
    same_proofs(
        &engine,
        "sector",
        (7..=8).map(|s| precompiled(sector(s), sector_pc.clone())).collect(),
        (7..=8).map(|s| generic(sector(s))).collect(),
    );
    // The chain recording used for a sector circuit: that partition fails, named.
    foreign_recording_fails_alone(
        engine,
        "sector",
        precompiled(sector(9), chain_pc.clone()),
        generic(sector(10)),
        "chain@2000",
    );
}

/// The native witness through a recording (`precompiled_native`: the gadgets' `enforce`s
/// only count) proves the same bytes as the generic path, for every test circuit kind; a
/// recording of another kind fails that partition alone, named, and the next proves.
#[test]
fn precompiled_native_proofs_verify_and_equal_the_generic_path() {
    use arenaprove::circuits::circuits::ShaCircuit;
    use arenaprove::circuits::native::ViaBridge;
    use arenaprove::circuits::record_native;
    use arenaprove::engine::pipeline::precompiled_native;
    let chain = |seed| ChainCircuit::new(2_000, seed);
    let sector = |seed| SectorPartitionCircuit::for_constraints(seed, 0, 4096);
    let sha = |seed| ShaCircuit::new(2, seed);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mem = ParamsMemory::default();
    let spec = |kind: &str, shape, params| CircuitSpec {
        kind: kind.into(),
        shape,
        params: Arc::new(params),
        matrices: None,
    };
    let specs = vec![
        spec(
            "chain",
            shape_of(chain(0)).unwrap(),
            generate_random_parameters(chain(0), &mut rng, &mem).unwrap(),
        ),
        spec(
            "sector",
            shape_of(sector(0)).unwrap(),
            generate_random_parameters(sector(0), &mut rng, &mem).unwrap(),
        ),
        spec("sha", shape_of(sha(0)).unwrap(), generate_random_parameters(sha(0), &mut rng, &mem).unwrap()),
    ];
    let config = EngineConfig { slots: 2, synth_workers: 2, ..EngineConfig::default() };
    let engine = Engine::new(config, specs).unwrap();
    let chain_pc = Arc::new(record_native(&chain(0), "chain@2000").unwrap());
    let sector_pc = Arc::new(record_native(&sector(0), "sector@4096").unwrap());
    // sha recorded through the bridge: the same constraints as the native recording.
    let sha_pc = Arc::new(record(ViaBridge(sha(0)), "sha@2").unwrap());

    same_proofs(
        &engine,
        "chain",
        (1..=3).map(|s| precompiled_native(chain(s), chain_pc.clone())).collect(),
        (1..=3).map(|s| generic(chain(s))).collect(),
    );
    same_proofs(
        &engine,
        "sector",
        (7..=8).map(|s| precompiled_native(sector(s), sector_pc.clone())).collect(),
        (7..=8).map(|s| generic(sector(s))).collect(),
    );
    same_proofs(
        &engine,
        "sha",
        (3..=4).map(|s| precompiled_native(sha(s), sha_pc.clone())).collect(),
        (3..=4).map(|s| generic(sha(s))).collect(),
    );
    foreign_recording_fails_alone(
        engine,
        "sha",
        precompiled_native(sha(5), chain_pc),
        generic(sha(6)),
        "chain@2000",
    );
}
