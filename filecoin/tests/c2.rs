//! C2 end to end on real 2 KiB sectors: our proofs against filecoin-proofs' `verify_seal`.
//!
//! Parameters: insecure development parameters generated once with the engine's generator
//! into `<target>/tmp/filecoin-params` (CARGO_TARGET_TMPDIR) and reused by later runs.
use std::sync::{Once, OnceLock};

use arenaprove_filecoin::params::{ensure_params, ParamFiles};
use arenaprove_filecoin::verify::PARTITION_PROOF_BYTES;
use arenaprove_filecoin::{
    rng_from_seed, seal_sector, verify_seal, C2Engine, C2Options, C2Prover, FilecoinError,
    RegisteredSealProof, SealRequest, SealedSector, SectorSize, Verdict,
};

/// The parameter cache shared by every test run in this target directory.
const PARAM_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/filecoin-params");

/// Points filecoin-proofs at the test cache (before anything reads its settings) and
/// generates 2 KiB parameters there when absent.
fn params_2kib() -> RegisteredSealProof {
    static SETUP: Once = Once::new();
    let proof = SectorSize::Kib2.default_registered_proof();
    SETUP.call_once(|| {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
        let status = ensure_params(proof, &mut rng_from_seed(0xc2)).expect("2 KiB development params");
        eprintln!("2 KiB params: {status:?}");
    });
    proof
}

#[test]
fn generated_params_are_read_by_filecoin_proofs() {
    let proof = params_2kib();
    let files = ParamFiles::for_proof(proof).unwrap();
    assert!(files.params.starts_with(PARAM_CACHE), "{}", files.params.display());
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

/// One prover for the whole test binary: params are loaded once, as a provider would.
fn prover_2kib() -> &'static C2Prover {
    static PROVER: OnceLock<C2Prover> = OnceLock::new();
    PROVER.get_or_init(|| C2Prover::load(params_2kib(), false).expect("load 2 KiB params"))
}

#[test]
fn our_c2_is_accepted_by_verify_seal_and_tampering_is_rejected() {
    let prover = prover_2kib();
    let sector = sealed(SectorSize::Kib2, 31);
    let out = prover.prove(&sector.c1, &mut rng_from_seed(1)).expect("c2");
    assert_eq!(out.proof.len(), PARTITION_PROOF_BYTES, "2 KiB: one partition proof");
    // 2,687,921 circuit constraints plus bellperson's 40 `input_i * 0 = 0` rows.
    assert_eq!(out.stages.constraints, 2_687_921 + 40, "the 2 KiB StackedDrg circuit");
    assert_eq!(verify_seal(&sector.info, &out.proof).unwrap(), Verdict::Accepted);

    // Public inputs agree with filecoin-proofs' get_seal_inputs.
    let job = arenaprove_filecoin::c2::SectorJob::new(&sector.c1).unwrap();
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
    assert_eq!(verify_seal(&other_seed, &out.proof).unwrap(), Verdict::Rejected);
    // Another sector id: another replica id.
    let mut other_id = sector.info.clone();
    other_id.sector_id ^= 1;
    assert_eq!(verify_seal(&other_id, &out.proof).unwrap(), Verdict::Rejected);

    // A flipped byte anywhere in A, B or C: never accepted (Rejected, or Malformed when
    // the point no longer decodes).
    for index in [0, 47, 48, 100, 143, 144, 191] {
        let mut bad = out.proof.clone();
        bad[index] ^= 0x01;
        let verdict = verify_seal(&sector.info, &bad).unwrap();
        assert!(!verdict.is_accepted(), "byte {index} flipped: {verdict:?}");
    }
    // Truncated or padded proofs are malformed.
    assert!(matches!(verify_seal(&sector.info, &out.proof[..191]).unwrap(), Verdict::Malformed(_)));
    let mut long = out.proof.clone();
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
    let prover = prover_2kib();
    let (sector, _) = sealed_with_tampered_seed();

    // With checks on (the default) the mismatch is caught before proving.
    let err = prover.prove(&sector.c1, &mut rng_from_seed(3)).unwrap_err();
    assert!(matches!(err, FilecoinError::Synthesis { partition: 0, .. }), "{err}");
    assert!(err.to_string().contains("public inputs"), "{err}");
}

/// With checks off a tampered C1 still proves, and the proof is one for the original
/// seed. A full extra prove (~35 s on 2 cores), so not in CI: run with
/// `cargo test --release -p arenaprove-filecoin --test c2 -- --ignored`.
#[test]
#[ignore]
fn unchecked_c2_of_a_tampered_seed_proves_only_the_original_seed() {
    let prover = prover_2kib();
    let (sector, original_seed) = sealed_with_tampered_seed();
    // Without it the bytes come out. The seed enters the circuit only through the public
    // inputs (the challenges); the witness is the vanilla proofs, made for the original
    // challenges. So the proof is one for the original seed: verify_seal accepts it with
    // that seed and rejects it with the seed the tampered C1 claims.
    let out = prover
        .prove_with(&sector.c1, &mut rng_from_seed(4), C2Options { self_verify: false })
        .expect("proving yields bytes");
    let mut with_claimed_seed = sector.info.clone();
    with_claimed_seed.seed = sector.c1.seed();
    assert_eq!(verify_seal(&with_claimed_seed, &out.proof).unwrap(), Verdict::Rejected);
    assert_eq!(sector.info.seed, original_seed);
    assert_eq!(verify_seal(&sector.info, &out.proof).unwrap(), Verdict::Accepted);
}

#[test]
fn missing_or_foreign_params_are_clear_errors() {
    let proof_2kib = params_2kib();
    let files_2kib = ParamFiles::for_proof(proof_2kib).unwrap();
    let proof_8mib = SectorSize::Mib8.default_registered_proof();
    let files_8mib = ParamFiles::for_proof(proof_8mib).unwrap();
    assert_ne!(files_8mib.params, files_2kib.params, "the sizes have their own files");

    // An empty directory laid out like the cache: nothing there.
    let empty = tempfile::tempdir().unwrap();
    let in_empty = files_8mib.relocated(empty.path());
    let err = C2Prover::load_from(proof_8mib, &in_empty, false).unwrap_err();
    assert!(matches!(err, FilecoinError::MissingParams { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(in_empty.params.to_str().unwrap()) && text.contains("8MiB"), "{text}");

    // The 2 KiB file under the 8 MiB name: refused at load, naming the section.
    let foreign = tempfile::tempdir().unwrap();
    let in_foreign = files_8mib.relocated(foreign.path());
    std::fs::hard_link(&files_2kib.params, &in_foreign.params)
        .or_else(|_| std::os::unix::fs::symlink(&files_2kib.params, &in_foreign.params))
        .unwrap();
    let err = C2Prover::load_from(proof_8mib, &in_foreign, false).unwrap_err();
    assert!(matches!(err, FilecoinError::ParamsMismatch { .. }), "{err}");
    assert!(err.to_string().contains("8MiB"), "{err}");

    // A C1 for 8 MiB given to the 2 KiB prover.
    let sector_8mib = sealed(SectorSize::Mib8, 33);
    let err = prover_2kib().prove(&sector_8mib.c1, &mut rng_from_seed(5)).unwrap_err();
    assert!(matches!(err, FilecoinError::ParamsMismatch { .. }), "{err}");
    assert!(err.to_string().contains("8MiB"), "{err}");

    // A truncated params file: an error naming the file, no panic.
    let truncated = tempfile::tempdir().unwrap();
    let in_truncated = files_2kib.relocated(truncated.path());
    let bytes = std::fs::read(&files_2kib.params).unwrap();
    std::fs::write(&in_truncated.params, &bytes[..bytes.len() / 3]).unwrap();
    drop(bytes);
    let err = C2Prover::load_from(proof_2kib, &in_truncated, false).unwrap_err();
    assert!(err.to_string().contains(in_truncated.params.to_str().unwrap()), "{err}");
}

/// 8 MiB end to end: needs ~2 GB of development parameters (generated on first run) and
/// a few minutes on 2 cores. Run with
/// `cargo test --release -p arenaprove-filecoin --test c2 -- --ignored`.
#[test]
#[ignore]
fn our_c2_for_8mib_is_accepted_by_verify_seal() {
    params_2kib(); // sets the cache directory
    let proof = SectorSize::Mib8.default_registered_proof();
    ensure_params(proof, &mut rng_from_seed(0x8)).expect("8 MiB development params");
    let prover = C2Prover::load(proof, false).expect("load 8 MiB params");
    let sector = sealed(SectorSize::Mib8, 34);
    let out = prover.prove(&sector.c1, &mut rng_from_seed(6)).expect("c2");
    assert_eq!(out.stages.constraints, 3_844_929 + prover.shape().inputs, "the 8 MiB StackedDrg circuit");
    assert_eq!(verify_seal(&sector.info, &out.proof).unwrap(), Verdict::Accepted);
    let mut other_seed = sector.info.clone();
    other_seed.seed[0] ^= 0x55;
    assert_eq!(verify_seal(&other_seed, &out.proof).unwrap(), Verdict::Rejected);
    let mut bad = out.proof.clone();
    bad[150] ^= 0x01;
    assert!(!verify_seal(&sector.info, &bad).unwrap().is_accepted());
}

/// C2 through the long-lived engine (issue 5's pipeline): accepted by verify_seal, every
/// slab back at shutdown. (`arenaprove filecoin soak` runs many sectors back to back.)
#[test]
fn c2_on_the_engine_is_accepted_by_verify_seal() {
    let proof = params_2kib();
    let config =
        arenaprove_engine::pipeline::EngineConfig { slots: 1, synth_workers: 1, ..Default::default() };
    let engine = C2Engine::start(proof, config, false).expect("engine");
    let sectors = [sealed(SectorSize::Kib2, 41)];
    let pending: Vec<_> = sectors.iter().map(|s| engine.submit(&s.c1).expect("submit")).collect();
    for (sector, pending) in sectors.iter().zip(pending) {
        let (proof, out) = pending.wait().expect("engine C2");
        assert!(out.is_ok());
        assert_eq!(verify_seal(&sector.info, &proof).unwrap(), Verdict::Accepted);
        let mut other_seed = sector.info.clone();
        other_seed.seed[1] ^= 0x10;
        assert_eq!(verify_seal(&other_seed, &proof).unwrap(), Verdict::Rejected);
    }
    let report = engine.shutdown();
    assert_eq!(report.slabs_outstanding, 0);
    assert_eq!(report.partitions_ok, 1);
}
