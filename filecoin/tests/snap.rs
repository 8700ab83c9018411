//! SnapDeals end to end on a real 2 KiB sector sealed by filecoin-proofs and updated with
//! new data by its `encode_into`: the partition proofs from `generate_partition_proofs`
//! (as Curio's update task makes them), proven on the engine (through Curio's bincode
//! encoding too), accepted by filecoin-proofs' `verify_empty_sector_update_proof`; every
//! refusal typed, and the engine proving again after each.
use std::path::Path;
use std::sync::OnceLock;

use arenaprove_engine::pipeline::EngineConfig;
use arenaprove_filecoin::seal::seal_sector_keep;
use arenaprove_filecoin::snap::{
    encode_update, ensure_update_params, reference_snap, update_shape, verify_snap, RegisteredUpdateProof,
    SnapCircuit, SnapRequest,
};
use arenaprove_filecoin::verify::PARTITION_PROOF_BYTES;
use arenaprove_filecoin::{
    rng_from_seed, C2Engine, Circuits, FilecoinError, LoadOptions, SealRequest, SectorSize, Verdict,
};

const PARAM_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/filecoin-params");
const PROOF: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;

/// A sealed 2 KiB sector updated with new data, and its update's request (once per run).
fn updated() -> &'static SnapRequest {
    static UPDATE: OnceLock<(tempfile::TempDir, SnapRequest)> = OnceLock::new();
    &UPDATE
        .get_or_init(|| {
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
            let files = PROOF.param_files(Path::new(PARAM_CACHE)).unwrap();
            let status = ensure_update_params(PROOF, &files, &mut rng_from_seed(0x5a9)).expect("params");
            eprintln!("{PROOF} params: {status:?}");
            let dir = tempfile::tempdir().unwrap();
            let mut rng = rng_from_seed(0x5a90);
            let request = SealRequest::random(SectorSize::Kib2, &mut rng);
            let (_, replica) =
                seal_sector_keep(&request, &mut rng, &dir.path().join("sector")).expect("seal");
            let update = encode_update(&replica, &dir.path().join("sector"), &mut rng).expect("encode_into");
            (dir, update)
        })
        .1
}

fn engine(options: LoadOptions) -> C2Engine {
    let circuit = SnapCircuit::load(PROOF, Path::new(PARAM_CACHE), options).expect("load");
    let config = EngineConfig { slots: 1, synth_workers: 1, ..Default::default() };
    C2Engine::with_circuits(config, Circuits { snap: vec![circuit], ..Circuits::default() }).expect("engine")
}

#[test]
fn snap_deals_proofs_are_accepted_by_filecoin_proofs_and_bad_ones_refused() {
    let request = updated();
    let engine = engine(LoadOptions::default());
    let out = engine.submit_snap(request).unwrap().wait().expect("update proof");
    let partitions = PROOF.partitions().unwrap();
    assert_eq!(out.proof().len(), partitions * PARTITION_PROOF_BYTES);
    assert_eq!(out.stages().synthesis_kind, "precompiled");
    assert_eq!(out.stages().constraints, update_shape(PROOF).unwrap().constraints);
    assert_eq!(verify_snap(request, out.proof()).unwrap(), Verdict::Accepted);
    // filecoin-proofs' own prover on the same partition proofs verifies too (the baseline).
    assert_eq!(verify_snap(request, &reference_snap(request).unwrap()).unwrap(), Verdict::Accepted);

    // Curio's bytes: one bincode PartitionProof per partition.
    let blobs = request.vanilla_bincode().unwrap();
    assert_eq!(blobs.len(), partitions);
    let (old, new, d) = (request.comm_r_old, request.comm_r_new, request.comm_r_new);
    let parsed = SnapRequest::from_bincode(PROOF, old, new, request.comm_d_new, &blobs).unwrap();
    let bytes = engine.submit_snap(&parsed).unwrap().wait().unwrap().into_proof();
    assert_eq!(verify_snap(request, &bytes).unwrap(), Verdict::Accepted);

    // Refusals, each typed and before proving.
    let bad = |r: Result<SnapRequest, FilecoinError>, what: &str| -> String {
        let err = r.err().unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(matches!(err, FilecoinError::BadVanilla(_)), "{what}: {err}");
        err.to_string()
    };
    let msg = bad(SnapRequest::from_bincode(PROOF, old, new, request.comm_d_new, &blobs[..0]), "none");
    assert!(msg.contains("takes 1 partition proof"), "{msg}");
    let cut = [blobs[0][..blobs[0].len() / 3].to_vec()];
    let msg = bad(SnapRequest::from_bincode(PROOF, old, new, request.comm_d_new, &cut), "cut");
    assert!(msg.contains("partition proof 0"), "{msg}");
    // Commitments of another update: the partition proofs do not verify against them.
    let mut other_new = new;
    other_new[0] ^= 1;
    for (o, n, dd, what) in [(old, other_new, request.comm_d_new, "comm_r_new"), (old, new, d, "comm_d_new")]
    {
        let r = SnapRequest::from_bincode(PROOF, o, n, dd, &blobs).unwrap();
        let err = engine.submit_snap(&r).expect_err(what);
        assert!(matches!(err, FilecoinError::BadVanilla(_) | FilecoinError::BadArgument(_)), "{what}: {err}");
    }
    // Damaged proof bytes that still decode: refused by the vanilla check, no panic.
    for at in [blobs[0].len() / 2, blobs[0].len() - 40, 40] {
        let mut flipped = blobs[0].clone();
        flipped[at] ^= 0x10;
        if let Ok(r) = SnapRequest::from_bincode(PROOF, old, new, request.comm_d_new, &[flipped]) {
            let err = engine.submit_snap(&r).expect_err("flipped byte");
            assert!(matches!(err, FilecoinError::BadVanilla(_)), "{err}");
        }
    }
    // And the engine proves the good request again.
    let bytes = engine.submit_snap(request).unwrap().wait().unwrap().into_proof();
    assert_eq!(verify_snap(request, &bytes).unwrap(), Verdict::Accepted);
    assert_eq!(engine.engine().slabs_outstanding(), 0);
}

#[test]
fn registered_update_proofs_follow_go_state_types() {
    for (n, p) in RegisteredUpdateProof::ALL.into_iter().enumerate() {
        assert_eq!(p.number(), n as u64);
        assert_eq!(p.to_string().parse::<RegisteredUpdateProof>().unwrap(), p);
        assert_eq!(RegisteredUpdateProof::for_size(p.sector_size()), p);
    }
    assert_eq!(RegisteredUpdateProof::StackedDrg32GiBV1.partitions().unwrap(), 16);
    assert_eq!(PROOF.partitions().unwrap(), 1);
    let name =
        PROOF.param_files(Path::new("/x")).unwrap().params.file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.starts_with("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-"), "{name}");
    assert!(storage_proofs_core::parameter_cache::get_parameter_data_from_id(&name).is_some(), "{name}");
}

/// An update request written for a baseline's child process reads back as the same request.
#[test]
fn an_update_request_file_reads_back_the_same_request() {
    use arenaprove_filecoin::request_file::ProofRequest;
    let request = updated();
    let blobs = request.vanilla_bincode().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request");
    arenaprove_filecoin::request_file::write_snap(request, &path).unwrap();
    let ProofRequest::Snap(back) = ProofRequest::read(&path).unwrap() else { panic!("an update request") };
    assert_eq!(back.proof, PROOF);
    assert_eq!(
        (back.comm_r_old, back.comm_r_new, back.comm_d_new),
        (request.comm_r_old, request.comm_r_new, request.comm_d_new)
    );
    assert_eq!(back.vanilla_bincode().unwrap(), blobs);
}
