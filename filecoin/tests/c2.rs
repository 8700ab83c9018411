//! C2 end to end on real 2 KiB sectors through the one driver, [`C2Engine`]: our proofs
//! against filecoin-proofs' `verify_seal`, cancellation, and every refusal typed.
//!
//! Parameters: insecure development parameters generated once with the engine's generator
//! into `<target>/tmp/filecoin-params` (CARGO_TARGET_TMPDIR) and reused by later runs.
//! One engine (one slot) serves every test in turn, so each can count what the engine did.
use std::path::Path;
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

use arenaprove_engine::pipeline::{EngineConfig, Job, ShutdownMode};
use arenaprove_filecoin::params::{ensure_params, ParamFiles};
use arenaprove_filecoin::verify::PARTITION_PROOF_BYTES;
use arenaprove_filecoin::{
    rng_from_seed, seal_sector, verify_seal, C2Circuit, C2Engine, FilecoinError, LoadOptions,
    RegisteredSealProof, SealRequest, SealedSector, SectorSize, Verdict,
};

/// The parameter cache shared by every test run in this target directory.
const PARAM_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/filecoin-params");

/// The test cache's files for `proof`: the driver is given them explicitly.
fn files(proof: RegisteredSealProof) -> ParamFiles {
    ParamFiles::in_dir(proof, Path::new(PARAM_CACHE)).unwrap()
}

/// Generates 2 KiB parameters in the test cache when absent, and points filecoin-proofs'
/// own `verify_seal` there (it reads only `FIL_PROOFS_PARAMETER_CACHE`, once per process:
/// set before anything reads it).
fn params_2kib() -> RegisteredSealProof {
    static SETUP: Once = Once::new();
    let proof = SectorSize::Kib2.default_registered_proof();
    SETUP.call_once(|| {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
        let status =
            ensure_params(proof, &files(proof), &mut rng_from_seed(0xc2)).expect("2 KiB development params");
        eprintln!("2 KiB params: {status:?}");
    });
    proof
}

#[test]
fn generated_params_are_read_by_filecoin_proofs() {
    let proof = params_2kib();
    let files = ParamFiles::for_proof(proof).unwrap();
    assert_eq!(files, self::files(proof), "filecoin-proofs reads the cache the tests write");
    let name = files.params.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.starts_with("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"),
        "{name}"
    );
    // The official 2 KiB parameter file has this name (storage-proofs-core parameters.json).
    assert!(storage_proofs_core::parameter_cache::get_parameter_data_from_id(&name).is_some(), "{name}");
    let mapped = storage_proofs_core::parameter_cache::read_cached_params(&files.params)
        .expect("bellperson maps our .params");
    assert_eq!(mapped.vk.ic.len(), 40, "2 KiB C2: 39 public inputs + ONE");
    let vk_bytes = std::fs::read(&files.vk).unwrap();
    let vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&vk_bytes[..])
        .expect("bellperson reads our .vk");
    assert!(vk == mapped.vk, ".vk equals the vk inside .params");
}

fn sealed(size: SectorSize, seed: u64) -> SealedSector {
    let mut rng = rng_from_seed(seed);
    let request = SealRequest::random(size, &mut rng);
    let work = tempfile::tempdir().expect("tempdir");
    seal_sector(&request, &mut rng, work.path()).expect("seal")
}

/// The 2 KiB circuit, loaded once (parameters and precompiled constraints).
fn circuit_2kib() -> &'static C2Circuit {
    static CIRCUIT: OnceLock<C2Circuit> = OnceLock::new();
    CIRCUIT.get_or_init(|| {
        let proof = params_2kib();
        C2Circuit::load(proof, &files(proof), LoadOptions::default()).expect("load 2 KiB params")
    })
}

fn one_slot() -> EngineConfig {
    EngineConfig { slots: 1, synth_workers: 1, ..Default::default() }
}

/// The one engine of this binary, held by one test at a time.
fn engine_2kib() -> MutexGuard<'static, C2Engine> {
    static ENGINE: OnceLock<Mutex<C2Engine>> = OnceLock::new();
    let engine = ENGINE
        .get_or_init(|| Mutex::new(C2Engine::new(one_slot(), vec![circuit_2kib().clone()]).expect("engine")));
    engine.lock().unwrap_or_else(|p| p.into_inner())
}

/// Two sectors on one slot: the second is cancelled while the first holds the slot, so
/// it is never synthesized; the first proves, and verify_seal accepts it (and only it).
#[test]
fn c2_is_accepted_by_verify_seal_and_a_cancelled_sector_is_not_proven() {
    let engine = engine_2kib();
    let before = engine.engine().stats();
    let sector = sealed(SectorSize::Kib2, 31);
    let cancelled = sealed(SectorSize::Kib2, 35);
    let pending = engine.submit(&sector.c1).expect("submit");
    let doomed = engine.submit(&cancelled.c1).expect("submit");
    doomed.canceller().cancel();
    let out = pending.wait().expect("c2");
    let err = doomed.wait().unwrap_err();
    assert!(matches!(err, FilecoinError::Cancelled { partitions_stopped: 1, partitions: 1 }), "{err}");
    let after = engine.engine().stats();
    assert_eq!(after.partitions_ok - before.partitions_ok, 1, "only the first sector was proven");
    assert_eq!(after.partitions_failed - before.partitions_failed, 1, "the cancelled one ended");
    assert_eq!(engine.engine().slabs_outstanding(), 0);

    let proof = out.proof();
    assert_eq!(proof.len(), PARTITION_PROOF_BYTES, "2 KiB: one partition proof");
    // 2,687,921 circuit constraints plus bellperson's 40 `input_i * 0 = 0` rows.
    assert_eq!(out.stages().constraints, 2_687_921 + 40, "the 2 KiB StackedDrg circuit");
    assert_eq!(out.stages().synthesis_kind, "precompiled", "the default synthesis");
    assert!(out.stages().synthesis > std::time::Duration::ZERO && out.stages().prove() > out.stages().verify);
    assert_eq!(verify_seal(&sector.info, proof).unwrap(), Verdict::Accepted);

    // Public inputs agree with filecoin-proofs' get_seal_inputs.
    let job = arenaprove_filecoin::circuit::SectorJob::new(&sector.c1).unwrap();
    let config = sector.info.registered_proof.porep_config().unwrap();
    let theirs = filecoin_proofs::get_seal_inputs::<filecoin_proofs::constants::SectorShapeBase>(
        &config,
        sector.info.comm_r,
        sector.info.comm_d,
        sector.info.prover_id,
        sector.info.sector_id.into(),
        sector.info.ticket,
        sector.info.seed,
    )
    .unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(job.public_inputs(0).unwrap(), theirs[0]);
    assert_eq!(theirs[0].len() + 1, 40, "40 inputs with ONE");

    // Another seed: the chain's challenges differ, the proof does not verify.
    let mut other_seed = sector.info.clone();
    other_seed.seed[0] ^= 0x55;
    assert_eq!(verify_seal(&other_seed, proof).unwrap(), Verdict::Rejected);
    // Another sector id: another replica id.
    let mut other_id = sector.info.clone();
    other_id.sector_id ^= 1;
    assert_eq!(verify_seal(&other_id, proof).unwrap(), Verdict::Rejected);

    // A flipped byte anywhere in A, B or C: never accepted (Rejected, or Malformed when
    // the point no longer decodes).
    for index in [0, 47, 48, 100, 143, 144, 191] {
        let mut bad = proof.to_vec();
        bad[index] ^= 0x01;
        let verdict = verify_seal(&sector.info, &bad).unwrap();
        assert!(!verdict.is_accepted(), "byte {index} flipped: {verdict:?}");
    }
    // Truncated or padded proofs are malformed.
    assert!(matches!(verify_seal(&sector.info, &proof[..191]).unwrap(), Verdict::Malformed(_)));
    let mut long = proof.to_vec();
    long.push(0);
    assert!(matches!(verify_seal(&sector.info, &long).unwrap(), Verdict::Malformed(_)));
}

/// A sealed 2 KiB sector whose C1 claims another seed; also returns the original seed.
fn sealed_with_tampered_seed() -> (SealedSector, [u8; 32]) {
    let mut sector = sealed(SectorSize::Kib2, 32);
    let original_seed = sector.c1.seed();
    let mut seed = original_seed;
    seed[3] ^= 0xa5;
    sector.c1.set_seed(seed);
    (sector, original_seed)
}

#[test]
fn a_c1_with_a_tampered_seed_is_refused_before_proving() {
    let engine = engine_2kib();
    let before = engine.engine().stats();
    let (sector, _) = sealed_with_tampered_seed();
    let err = engine.prove(&sector.c1).unwrap_err();
    assert!(matches!(err, FilecoinError::InputsMismatch { partition: 0 }), "{err}");
    assert!(err.to_string().contains("public inputs"), "{err}");
    let after = engine.engine().stats();
    assert_eq!(
        (after.partitions_ok, after.partitions_failed),
        (before.partitions_ok, before.partitions_failed + 1)
    );
    assert_eq!(engine.engine().slabs_outstanding(), 0, "the slot came back");
}

/// With no inputs check a tampered C1 still proves (the raw engine, not the driver), and
/// the proof is one for the original seed. A full extra prove (~35 s on 2 cores), so not
/// in CI: `cargo test --release -p arenaprove-filecoin --test c2 -- --ignored`.
#[test]
#[ignore]
fn unchecked_c2_of_a_tampered_seed_proves_only_the_original_seed() {
    let circuit = circuit_2kib();
    let (sector, original_seed) = sealed_with_tampered_seed();
    // The seed enters the circuit only through the public inputs (the challenges); the
    // witness is the vanilla proofs, made for the original challenges. So the proof is one
    // for the original seed: verify_seal accepts it with that seed and rejects it with the
    // seed the tampered C1 claims.
    let engine = arenaprove_engine::pipeline::Engine::new(one_slot(), vec![circuit.spec()]).unwrap();
    let job = arenaprove_filecoin::circuit::SectorJob::new(&sector.c1).unwrap();
    let partition = circuit.synthesis().partition(&job, 0).unwrap();
    let out = engine.prove(Job::new(circuit.kind(), vec![partition])).unwrap();
    let proof = out.partitions[0].as_ref().expect("proven").proof.to_bytes();
    let mut with_claimed_seed = sector.info.clone();
    with_claimed_seed.seed = sector.c1.seed();
    assert_eq!(verify_seal(&with_claimed_seed, &proof).unwrap(), Verdict::Rejected);
    assert_eq!(sector.info.seed, original_seed);
    assert_eq!(verify_seal(&sector.info, &proof).unwrap(), Verdict::Accepted);
    assert_eq!(engine.shutdown(ShutdownMode::Drain).slabs_outstanding, 0);
}

#[test]
fn missing_or_foreign_params_and_unserved_sizes_are_typed_errors() {
    let proof_2kib = params_2kib();
    let files_2kib = files(proof_2kib);
    let proof_8mib = SectorSize::Mib8.default_registered_proof();
    let files_8mib = files(proof_8mib);
    assert_ne!(files_8mib.params, files_2kib.params, "the sizes have their own files");
    let options = LoadOptions::default();

    // An empty directory laid out like the cache: nothing there.
    let empty = tempfile::tempdir().unwrap();
    let in_empty = ParamFiles::in_dir(proof_8mib, empty.path()).unwrap();
    assert_eq!(in_empty, files_8mib.relocated(empty.path()));
    let err = C2Circuit::load(proof_8mib, &in_empty, options.clone()).unwrap_err();
    assert!(matches!(err, FilecoinError::MissingParams { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(in_empty.params.to_str().unwrap()) && text.contains("8MiB"), "{text}");

    // The 2 KiB file under the 8 MiB name: refused at load, naming the section, the
    // Groth16 error kept as the source.
    let foreign = tempfile::tempdir().unwrap();
    let in_foreign = files_8mib.relocated(foreign.path());
    std::fs::hard_link(&files_2kib.params, &in_foreign.params)
        .or_else(|_| std::os::unix::fs::symlink(&files_2kib.params, &in_foreign.params))
        .unwrap();
    let err = C2Circuit::load(proof_8mib, &in_foreign, options.clone()).unwrap_err();
    assert!(err.to_string().contains("8MiB"), "{err}");
    let FilecoinError::ParamsMismatch { source, .. } = &err else { panic!("{err}") };
    assert!(matches!(**source, arenaprove_engine::Groth16Error::ShapeMismatch { .. }), "{source}");
    assert!(std::error::Error::source(&err).is_some(), "the chain goes on below");

    // A truncated params file: an error naming the file, no panic.
    let truncated = tempfile::tempdir().unwrap();
    let in_truncated = files_2kib.relocated(truncated.path());
    let bytes = std::fs::read(&files_2kib.params).unwrap();
    std::fs::write(&in_truncated.params, &bytes[..bytes.len() / 3]).unwrap();
    drop(bytes);
    let err = C2Circuit::load(proof_2kib, &in_truncated, options).unwrap_err();
    assert!(err.to_string().contains(in_truncated.params.to_str().unwrap()), "{err}");

    // A checked load refuses a point outside its subgroup (h[3] here), the same way whether
    // blst tests every point during the decode or a SubgroupCheck tests the decoded sections
    // (the GPU's, from the CLI and the daemon; blst's here, counted).
    let tampered = tempfile::tempdir().unwrap();
    let in_tampered = files_2kib.relocated(tampered.path());
    let mut bytes = std::fs::read(&files_2kib.params).unwrap();
    let vk = arenaprove_engine::groth16::VerifyingKey::read_file(&files_2kib.vk).unwrap();
    let at = vk.encoded_bytes() + 4 + 3 * 96;
    bytes[at..at + 96].copy_from_slice(&arenaprove_engine::groth16::params::g1_outside_subgroup_bytes());
    std::fs::write(&in_tampered.params, &bytes).unwrap();
    drop(bytes);
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted: arenaprove_engine::groth16::SubgroupCheckSource = {
        let calls = calls.clone();
        std::sync::Arc::new(move || {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::new(arenaprove_engine::groth16::CpuSubgroupCheck)
        })
    };
    let fused = LoadOptions { checked: true, ..LoadOptions::default() };
    let handed = LoadOptions { checked: true, subgroup_check: Some(counted), ..LoadOptions::default() };
    let mut texts = Vec::new();
    for options in [fused, handed] {
        let err = C2Circuit::load(proof_2kib, &in_tampered, options).unwrap_err();
        let FilecoinError::ParamsMismatch { source, .. } = &err else { panic!("{err}") };
        assert!(
            matches!(
                **source,
                arenaprove_engine::Groth16Error::BadPoint {
                    section: "h",
                    index: 3,
                    fault: arenaprove_engine::groth16::PointFault::NotInSubgroup,
                    ..
                }
            ),
            "{source}"
        );
        texts.push(err.to_string());
    }
    assert_eq!(texts[0], texts[1]);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "the source made one checker");

    // An engine that would not verify is refused: the driver hands back verified proofs only.
    let unverified = EngineConfig { verify: false, ..one_slot() };
    let err = C2Engine::new(unverified, vec![circuit_2kib().clone()]).unwrap_err();
    assert!(matches!(err, FilecoinError::BadArgument(_)) && err.to_string().contains("verify"), "{err}");

    // A C1 for 8 MiB given to the 2 KiB engine, before anything is built.
    let sector_8mib = sealed(SectorSize::Mib8, 33);
    let err = engine_2kib().submit(&sector_8mib.c1).unwrap_err();
    assert!(matches!(err, FilecoinError::NotServed { .. }), "{err}");
    assert!(err.to_string().contains("8MiB") && err.to_string().contains("2KiB"), "{err}");
}

/// A saved recording gives C2 its circuit's shape (no count of the blank circuit); one of
/// another shape saved under the same identity is not trusted: the parameters do not fit
/// it, so the blank circuit is counted, the counted shape decides, and the circuit is
/// recorded again over the wrong file.
#[test]
fn c2_takes_the_shape_of_its_saved_recording_and_records_a_wrong_one_again() {
    use arenaprove_circuits::circuits::ChainCircuit;
    use arenaprove_circuits::Precompiled;
    use arenaprove_filecoin::pce::{pce_identity, pce_path};

    let proof = params_2kib();
    let files_2kib = files(proof);
    let counted = arenaprove_filecoin::circuit::blank_shape(proof).unwrap();
    assert_eq!(circuit_2kib().shape(), counted, "the first load (recording made if absent)");
    assert!(pce_path(&files_2kib).is_file(), "the recording is saved beside the parameters");
    let loaded = C2Circuit::load(proof, &files_2kib, LoadOptions::default()).unwrap();
    assert_eq!(loaded.shape(), counted, "a later load takes the saved recording's shape");

    // The same parameters; beside them, a chain circuit's recording under this circuit's name.
    let dir = tempfile::tempdir().unwrap();
    let moved = files_2kib.relocated(dir.path());
    std::fs::hard_link(&files_2kib.params, &moved.params)
        .or_else(|_| std::os::unix::fs::symlink(&files_2kib.params, &moved.params))
        .unwrap();
    let identity = pce_identity(&moved);
    let pce = pce_path(&moved);
    arenaprove_circuits::record(ChainCircuit::new(64, 1), &identity).unwrap().save(&pce).unwrap();
    let wrong = Precompiled::open(&pce, &identity, None).unwrap().shape();
    assert_ne!(wrong, counted);
    let reloaded = C2Circuit::load(proof, &moved, LoadOptions::default()).unwrap();
    assert_eq!(reloaded.shape(), counted, "the counted shape decides");
    let again = Precompiled::open(&pce, &identity, Some(&counted)).unwrap();
    assert_eq!(again.shape(), counted, "the wrong recording was recorded over");
}

/// 8 MiB end to end: needs ~2 GB of development parameters (generated on first run) and
/// a few minutes on 2 cores. Run with
/// `cargo test --release -p arenaprove-filecoin --test c2 -- --ignored`.
#[test]
#[ignore]
fn our_c2_for_8mib_is_accepted_by_verify_seal() {
    params_2kib(); // sets the cache directory
    let proof = SectorSize::Mib8.default_registered_proof();
    ensure_params(proof, &files(proof), &mut rng_from_seed(0x8)).expect("8 MiB development params");
    let engine = C2Engine::start(proof, &files(proof), one_slot(), LoadOptions::default()).expect("engine");
    let sector = sealed(SectorSize::Mib8, 34);
    let out = engine.prove(&sector.c1).expect("c2");
    let inputs = engine.circuits()[0].shape().inputs;
    assert_eq!(out.stages().constraints, 3_844_929 + inputs, "the 8 MiB StackedDrg circuit");
    assert_eq!(verify_seal(&sector.info, out.proof()).unwrap(), Verdict::Accepted);
    let mut other_seed = sector.info.clone();
    other_seed.seed[0] ^= 0x55;
    assert_eq!(verify_seal(&other_seed, out.proof()).unwrap(), Verdict::Rejected);
    let mut bad = out.into_proof();
    bad[150] ^= 0x01;
    assert!(!verify_seal(&sector.info, &bad).unwrap().is_accepted());
    assert_eq!(engine.shutdown(ShutdownMode::Drain).slabs_outstanding, 0);
}

/// `C2Circuit::timing_only`: the real circuit's shape and section lengths (every one equal
/// to the development parameters'), an engine only with verification off and only alone,
/// and a random C1 of the real shape proven in full (its challenges and paths are the
/// verifier's, so it passes the driver's inputs check) into bytes that do not verify.
#[test]
fn a_timing_only_circuit_proves_random_c1s_and_its_proofs_do_not_verify() {
    use arenaprove_filecoin::circuit::SectorJob;
    use arenaprove_filecoin::random::random_c1;

    let real = circuit_2kib();
    let proof = params_2kib();
    let refused = C2Circuit::timing_only(proof, &files(proof), 9, 1 << 30).unwrap_err().to_string();
    assert!(refused.contains("do not fit the 1.00 GiB"), "{refused}");
    let timing = C2Circuit::timing_only(proof, &files(proof), 9, u64::MAX).expect("timing-only circuit");
    assert!(timing.is_timing_only() && !real.is_timing_only());
    assert_eq!(timing.kind(), "stacked-drg-2KiB-timing-only");
    assert_eq!(timing.shape(), real.shape());
    let (t, r) = (timing.params(), real.params());
    assert_eq!(
        [t.vk.ic.len(), t.h().len(), t.l().len(), t.a().len(), t.b_g1().len(), t.b_g2().len()],
        [r.vk.ic.len(), r.h().len(), r.l().len(), r.a().len(), r.b_g1().len(), r.b_g2().len()],
        "every section as long as the real parameters'"
    );

    let refused = C2Engine::new(one_slot(), vec![timing.clone()]).unwrap_err().to_string();
    assert!(refused.contains("verify must be off"), "{refused}");
    let unverified = EngineConfig { verify: false, ..one_slot() };
    let mixed = C2Engine::with_circuits(
        unverified.clone(),
        arenaprove_filecoin::Circuits { porep: vec![timing.clone()], post: Vec::new(), snap: Vec::new() },
    );
    assert!(mixed.is_ok(), "alone it starts");
    mixed.unwrap().shutdown(ShutdownMode::Drain);
    let refused = C2Engine::new(EngineConfig { verify: false, ..one_slot() }, vec![real.clone()])
        .unwrap_err()
        .to_string();
    assert!(refused.contains("verify must be on"), "{refused}");

    let engine = C2Engine::new(unverified, vec![timing.clone()]).expect("timing engine");
    let c1 = random_c1(proof, &mut rng_from_seed(0x71)).unwrap();
    let out = engine.prove(&c1).expect("a random C1 of the real shape proves");
    assert!(out.is_timing_only());
    assert_eq!(out.proof().len(), c1.partitions() * PARTITION_PROOF_BYTES);
    let job = SectorJob::new(&c1).unwrap();
    let pvk = arenaprove_engine::prepare_verifying_key(&t.vk);
    for (k, bytes) in out.proof().chunks(PARTITION_PROOF_BYTES).enumerate() {
        let p = arenaprove_engine::Proof::from_bytes(bytes).expect("a proof's encoding");
        let ok = arenaprove_engine::verify_proof(&pvk, &p, &job.public_inputs(k).unwrap()).unwrap_or(false);
        assert!(!ok, "partition {k}: a proof made with shape-only parameters verified");
    }
    assert_eq!(engine.shutdown(ShutdownMode::Drain).slabs_outstanding, 0);
}
