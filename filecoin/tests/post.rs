//! WinningPoSt and WindowPoSt end to end on real 2 KiB sectors sealed by filecoin-proofs:
//! vanilla proofs from filecoin-proofs' own PoSt worker functions, proven on the engine
//! (through Curio's bincode encoding too), every proof accepted by filecoin-proofs'
//! `verify_winning_post` / `verify_window_post`; every refusal typed, and the engine
//! proving again after each.
//!
//! Parameters: insecure development parameters generated once into
//! `<target>/tmp/filecoin-params` (shared with the c2 tests; the PoSt files are small).
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use arenaprove_engine::pipeline::{EngineConfig, Randomness};
use arenaprove_filecoin::post::{
    ensure_post_params, post_shape, reference_post, vanilla_request, verify_post, PostCircuit, PostKind,
    PostRequest, RegisteredPoStProof, Replica,
};
use arenaprove_filecoin::seal::seal_sector_keep;
use arenaprove_filecoin::verify::PARTITION_PROOF_BYTES;
use arenaprove_filecoin::{
    rng_from_seed, C2Engine, FilecoinError, LoadOptions, SealRequest, SectorSize, Verdict,
};
use ff::Field;

const PARAM_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/filecoin-params");

const WINNING: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
const WINDOW: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;

/// Parameters of both 2 KiB PoSt circuits in the test cache; filecoin-proofs' verifier
/// pointed there (it reads `FIL_PROOFS_PARAMETER_CACHE` once per process).
fn params() {
    static SETUP: OnceLock<()> = OnceLock::new();
    SETUP.get_or_init(|| {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
        for proof in [WINNING, WINDOW] {
            let files = proof.param_files(Path::new(PARAM_CACHE)).unwrap();
            let status = ensure_post_params(proof, &files, &mut rng_from_seed(0x9057)).expect("PoSt params");
            eprintln!("{proof} params: {status:?}");
        }
    });
}

/// Two sealed 2 KiB sectors kept on disk (replica and cache), sealed once per run.
fn replicas() -> &'static [Replica] {
    static REPLICAS: OnceLock<(tempfile::TempDir, Vec<Replica>)> = OnceLock::new();
    &REPLICAS
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let mut rng = rng_from_seed(0x5ea1);
            let prover_id = prover_id();
            let replicas = (0..2)
                .map(|i| {
                    let mut request = SealRequest::random(SectorSize::Kib2, &mut rng);
                    request.prover_id = prover_id;
                    request.sector_id = 100 + i;
                    let path: PathBuf = dir.path().join(format!("sector-{i}"));
                    seal_sector_keep(&request, &mut rng, &path).expect("seal").1
                })
                .collect();
            (dir, replicas)
        })
        .1
}

/// Miner 1000's prover id, as Curio derives it (the LEB128 actor id, left-aligned).
fn prover_id() -> [u8; 32] {
    let mut id = [0u8; 32];
    id[..2].copy_from_slice(&[0xe8, 0x07]);
    id
}

/// Chain randomness as Lotus hands it to proofs (top bits masked into the field).
fn randomness(seed: u8) -> [u8; 32] {
    let mut r = [seed; 32];
    r[31] &= 0x3f;
    r
}

fn engine_config() -> EngineConfig {
    EngineConfig { slots: 1, synth_workers: 1, ..Default::default() }
}

fn circuits(options: LoadOptions) -> Vec<PostCircuit> {
    params();
    [WINNING, WINDOW]
        .into_iter()
        .map(|p| PostCircuit::load(p, Path::new(PARAM_CACHE), options.clone()).expect("load PoSt circuit"))
        .collect()
}

/// The binary's engine: both 2 KiB PoSt circuits, precompiled, one slot.
fn engine() -> MutexGuard<'static, C2Engine> {
    static ENGINE: OnceLock<Mutex<C2Engine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            Mutex::new(
                C2Engine::with_posts(engine_config(), vec![], circuits(LoadOptions::default())).unwrap(),
            )
        })
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn prove(engine: &C2Engine, request: &PostRequest) -> Result<Vec<u8>, FilecoinError> {
    engine.submit_post(request)?.wait().map(|out| out.into_proof())
}

#[test]
fn winning_post_is_accepted_by_filecoin_proofs() {
    let engine = engine();
    let replicas = replicas();
    let request = vanilla_request(WINNING, randomness(7), prover_id(), 0, &replicas[..1]).unwrap();
    let pending = engine.submit_post(&request).unwrap();
    let out = pending.wait().expect("winning post");
    assert_eq!(out.proof().len(), PARTITION_PROOF_BYTES, "WinningPoSt: one partition");
    assert_eq!(out.stages().synthesis_kind, "precompiled");
    assert_eq!(out.stages().constraints, post_shape(WINNING).unwrap().constraints);
    assert_eq!(verify_post(&request, out.proof()).unwrap(), Verdict::Accepted);

    // Other randomness: filecoin-proofs rejects the proof.
    let mut other = vanilla_request(WINNING, randomness(7), prover_id(), 0, &replicas[..1]).unwrap();
    other.randomness = randomness(8);
    assert_eq!(verify_post(&other, out.proof()).unwrap(), Verdict::Rejected);
    // filecoin-proofs' own prover on the same request verifies too (the baseline).
    let theirs = reference_post(&request).unwrap();
    assert_eq!(verify_post(&request, &theirs).unwrap(), Verdict::Accepted);
}

#[test]
fn window_post_partitions_are_accepted_by_filecoin_proofs() {
    let engine = engine();
    let replicas = replicas();
    // Both API versions Curio may name (Go's V1 and V1_1 = the API's V1_2) prove on the one
    // circuit; one sector (padded, as filecoin-proofs pads) and two.
    for (proof, sectors) in [(WINDOW, 2), (WINDOW, 1), (RegisteredPoStProof::StackedDrgWindow2KiBV1, 2)] {
        let request = vanilla_request(proof, randomness(3), prover_id(), 0, &replicas[..sectors]).unwrap();
        let bytes = prove(&engine, &request).unwrap_or_else(|e| panic!("{proof} x{sectors}: {e}"));
        assert_eq!(bytes.len(), PARTITION_PROOF_BYTES);
        assert_eq!(verify_post(&request, &bytes).unwrap(), Verdict::Accepted, "{proof} x{sectors}");
    }
}

/// Curio's encoding: one bincode `FallbackPoStSectorProof` per sector, parsed and proven.
#[test]
fn bincode_vanilla_proofs_as_curio_sends_them() {
    let engine = engine();
    let replicas = replicas();
    let request = vanilla_request(WINDOW, randomness(5), prover_id(), 0, replicas).unwrap();
    let blobs = request.vanilla_bincode().unwrap();
    assert_eq!(blobs.len(), 2);
    let parsed = PostRequest::from_bincode(WINDOW, randomness(5), prover_id(), 0, &blobs).unwrap();
    assert_eq!(parsed.sectors(), request.sectors());
    assert_eq!(parsed.sectors().iter().map(|s| s.0).collect::<Vec<_>>(), vec![100, 101]);
    let bytes = prove(&engine, &parsed).unwrap();
    assert_eq!(verify_post(&request, &bytes).unwrap(), Verdict::Accepted);

    // Damaged blobs: a typed error naming the proof, never a panic.
    for (i, damaged) in
        [blobs[0][..blobs[0].len() / 2].to_vec(), vec![], vec![0xff; 64]].into_iter().enumerate()
    {
        let err =
            PostRequest::from_bincode(WINDOW, randomness(5), prover_id(), 0, &[blobs[0].clone(), damaged])
                .err()
                .unwrap_or_else(|| panic!("damaged blob {i} parsed"));
        assert!(matches!(err, FilecoinError::BadVanilla(_)), "{err}");
        assert!(err.to_string().contains("vanilla proof 1"), "{err}");
    }
}

/// Every refusal is typed and comes before proving; the engine proves the next request.
#[test]
fn bad_post_requests_are_refused_and_the_engine_goes_on() {
    let engine = engine();
    let replicas = replicas();
    let good = vanilla_request(WINNING, randomness(11), prover_id(), 0, &replicas[..1]).unwrap();
    let blobs = good.vanilla_bincode().unwrap();
    let bad_vanilla = |r: Result<PostRequest, FilecoinError>, what: &str| {
        let err = r.err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(matches!(err, FilecoinError::BadVanilla(_)), "{what}: {err}");
        err.to_string()
    };
    // WinningPoSt takes one sector and one partition.
    let two = [blobs[0].clone(), blobs[0].clone()];
    let msg = bad_vanilla(PostRequest::from_bincode(WINNING, randomness(11), prover_id(), 0, &two), "two");
    assert!(msg.contains("takes 1 vanilla proof"), "{msg}");
    bad_vanilla(PostRequest::from_bincode(WINNING, randomness(11), prover_id(), 1, &blobs), "partition 1");
    // A WindowPoSt partition of no sectors, the same sector twice, a partition index past a deadline's.
    let none: [Vec<u8>; 0] = [];
    bad_vanilla(PostRequest::from_bincode(WINDOW, randomness(11), prover_id(), 0, &none), "empty");
    let window = vanilla_request(WINDOW, randomness(11), prover_id(), 0, &replicas[..1]).unwrap();
    let wblobs = window.vanilla_bincode().unwrap();
    let msg = bad_vanilla(
        PostRequest::from_bincode(
            WINDOW,
            randomness(11),
            prover_id(),
            0,
            &[wblobs[0].clone(), wblobs[0].clone()],
        ),
        "duplicate",
    );
    assert!(msg.contains("two vanilla proofs"), "{msg}");
    bad_vanilla(PostRequest::from_bincode(WINDOW, randomness(11), prover_id(), 1 << 20, &wblobs), "index");
    // A 2 KiB proof read as a 32 GiB one (another tree shape): a decoding error.
    bad_vanilla(
        PostRequest::from_bincode(
            RegisteredPoStProof::StackedDrgWinning32GiBV1,
            randomness(11),
            prover_id(),
            0,
            &blobs,
        ),
        "32 GiB",
    );

    // Only challenge 0 of a WinningPoSt is what filecoin-proofs' own pre-check verifies:
    // two later challenges swapped are refused here too, before any proof.
    type Base = filecoin_proofs::constants::SectorShapeBase;
    let mut v: filecoin_proofs::types::FallbackPoStSectorProof<Base> =
        bincode::deserialize(&blobs[0]).unwrap();
    v.vanilla_proof.sectors[0].inclusion_proofs.swap(5, 6);
    let swapped = PostRequest::from_bincode(
        WINNING,
        randomness(11),
        prover_id(),
        0,
        &[bincode::serialize(&v).unwrap()],
    )
    .unwrap();
    let err = engine.submit_post(&swapped).expect_err("challenges 5 and 6 swapped");
    assert!(
        matches!(err, FilecoinError::BadVanilla(_)) && err.to_string().contains("every one of 66"),
        "{err}"
    );
    // A comm_r_last that is not the paths' root (the circuit would use it): refused at parse.
    let mut v: filecoin_proofs::types::FallbackPoStSectorProof<Base> =
        bincode::deserialize(&blobs[0]).unwrap();
    v.vanilla_proof.sectors[0].comm_r_last = v.vanilla_proof.sectors[0].comm_c;
    let msg = bad_vanilla(
        PostRequest::from_bincode(
            WINNING,
            randomness(11),
            prover_id(),
            0,
            &[bincode::serialize(&v).unwrap()],
        ),
        "comm_r_last",
    );
    assert!(msg.contains("root is not the sector's comm_r_last"), "{msg}");

    // Vanilla proofs of another epoch's randomness: refused before synthesis.
    let stale = PostRequest::from_bincode(WINNING, randomness(12), prover_id(), 0, &blobs).unwrap();
    let err = engine.submit_post(&stale).expect_err("stale randomness");
    assert!(matches!(err, FilecoinError::BadVanilla(_)), "{err}");
    let stale = PostRequest::from_bincode(WINDOW, randomness(12), prover_id(), 0, &wblobs).unwrap();
    let err = engine.submit_post(&stale).expect_err("stale randomness");
    assert!(matches!(err, FilecoinError::BadVanilla(_)), "{err}");
    // Randomness outside the field (the top bits not masked): filecoin-proofs refuses it too.
    let unmasked = PostRequest::from_bincode(WINNING, [0xff; 32], prover_id(), 0, &blobs).unwrap();
    let err = engine.submit_post(&unmasked).expect_err("unmasked randomness");
    assert!(matches!(err, FilecoinError::BadArgument(_)) && err.to_string().contains("randomness"), "{err}");
    // An 8 MiB proof is not a 2 KiB one (the tree's paths are checked at parse).
    let msg = bad_vanilla(
        PostRequest::from_bincode(
            RegisteredPoStProof::StackedDrgWinning8MiBV1,
            randomness(11),
            prover_id(),
            0,
            &blobs,
        ),
        "8 MiB",
    );
    assert!(msg.contains("not a path of this sector size's tree"), "{msg}");
    // A kind the engine was not started for.
    let winning_only =
        C2Engine::with_posts(engine_config(), vec![], circuits(LoadOptions::default())[..1].to_vec())
            .expect("engine");
    let err = winning_only.submit_post(&window).expect_err("not served");
    assert!(matches!(err, FilecoinError::NotServed { .. }), "{err}");
    assert!(
        err.to_string().contains("2KiB WindowPoSt") && err.to_string().contains("2KiB WinningPoSt"),
        "{err}"
    );
    drop(winning_only);

    // And the engine proves the good request.
    let bytes = prove(&engine, &good).unwrap();
    assert_eq!(verify_post(&good, &bytes).unwrap(), Verdict::Accepted);
    assert_eq!(engine.engine().slabs_outstanding(), 0);
}

/// Precompiled and generic synthesis give the same proof for the same r and s.
#[test]
fn precompiled_and_generic_post_proofs_are_identical() {
    let replicas = replicas();
    let request = vanilla_request(WINDOW, randomness(9), prover_id(), 0, replicas).unwrap();
    let rs = || {
        Some(vec![Randomness { r: blstrs::Scalar::ONE.double(), s: blstrs::Scalar::ONE.double().double() }])
    };
    let precompiled = engine().submit_post_with(&request, rs()).unwrap().wait().unwrap().into_proof();
    let generic = C2Engine::with_posts(
        engine_config(),
        vec![],
        circuits(LoadOptions { precompiled: false, ..LoadOptions::default() }),
    )
    .unwrap();
    let out = generic.submit_post_with(&request, rs()).unwrap().wait().unwrap();
    assert_eq!(out.stages().synthesis_kind, "generic");
    assert_eq!(out.proof(), &precompiled[..], "same r, s: the same proof");
    assert_eq!(verify_post(&request, out.proof()).unwrap(), Verdict::Accepted);
}

#[test]
fn registered_post_proofs_follow_go_state_types() {
    for (n, proof) in RegisteredPoStProof::ALL.into_iter().enumerate() {
        assert_eq!(proof.number(), n as u64);
        assert_eq!(RegisteredPoStProof::from_number(n as u64), Some(proof));
        assert_eq!(proof.to_string().parse::<RegisteredPoStProof>().unwrap(), proof);
        assert_eq!(n.to_string().parse::<RegisteredPoStProof>().unwrap(), proof);
    }
    assert_eq!(RegisteredPoStProof::from_number(15), None);
    assert_eq!(RegisteredPoStProof::StackedDrgWinning32GiBV1.number(), 3);
    assert_eq!(RegisteredPoStProof::StackedDrgWindow32GiBV1_2.number(), 13);
    assert_eq!(RegisteredPoStProof::current(PostKind::Window, SectorSize::Gib32).number(), 13);
    assert_eq!(RegisteredPoStProof::current(PostKind::Winning, SectorSize::Gib64).number(), 4);
    let config = RegisteredPoStProof::StackedDrgWindow32GiBV1_2.post_config().unwrap();
    assert_eq!((config.sector_count, config.challenge_count), (2349, 10));
    let config = WINNING.post_config().unwrap();
    assert_eq!((config.sector_count, config.challenge_count), (1, 66));
    // V1 and V1_2 share the circuit's parameter file; Winning and Window do not.
    let dir = Path::new("/nonexistent");
    let v1 = RegisteredPoStProof::StackedDrgWindow2KiBV1.param_files(dir).unwrap();
    assert_eq!(v1, WINDOW.param_files(dir).unwrap());
    assert_ne!(v1.params, WINNING.param_files(dir).unwrap().params);
    assert!(v1
        .params
        .to_str()
        .unwrap()
        .contains("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0"));
    // The official parameter files have these names (storage-proofs-core parameters.json).
    for proof in [WINNING, WINDOW] {
        let name = proof.param_files(dir).unwrap().params.file_name().unwrap().to_str().unwrap().to_string();
        assert!(storage_proofs_core::parameter_cache::get_parameter_data_from_id(&name).is_some(), "{name}");
    }
    let err = "StackedDrgWindow2KiBV1_1".parse::<RegisteredPoStProof>().unwrap_err();
    assert!(err.to_string().contains("unknown registered PoSt proof"), "{err}");
    // Missing parameters name the file and how to make development ones.
    let err = PostCircuit::load(WINNING, dir, LoadOptions::default()).unwrap_err();
    assert!(matches!(err, FilecoinError::MissingParams { .. }), "{err}");
    assert!(err.to_string().contains("2KiB WinningPoSt") && err.to_string().contains("post-params"), "{err}");
}

/// A request written for a baseline's child process reads back as the same request; a file
/// that is not one is an error naming the file.
#[test]
fn a_request_file_reads_back_the_same_request() {
    use arenaprove_filecoin::request_file::ProofRequest;
    let replicas = replicas();
    let request = vanilla_request(WINDOW, randomness(6), prover_id(), 2, replicas).unwrap();
    let (sectors, blobs) = (request.sectors(), request.vanilla_bincode().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request");
    arenaprove_filecoin::request_file::write_post(&request, &path).unwrap();
    let ProofRequest::Post(back) = ProofRequest::read(&path).unwrap() else { panic!("a PoSt request") };
    assert_eq!((back.proof, back.randomness, back.prover_id), (WINDOW, randomness(6), prover_id()));
    assert_eq!(back.partition_index, 2);
    assert_eq!(back.sectors(), sectors);
    assert_eq!(back.vanilla_bincode().unwrap(), blobs);

    std::fs::write(&path, b"not a request").unwrap();
    let err = ProofRequest::read(&path).unwrap_err().to_string();
    assert!(err.contains("request") && err.contains("not a request file"), "{err}");
    let err = ProofRequest::read(&dir.path().join("absent")).unwrap_err().to_string();
    assert!(err.contains("absent"), "{err}");
}
