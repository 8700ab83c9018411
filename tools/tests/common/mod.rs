//! What the daemon's tests share: the 2 KiB development parameters, sealed sectors, and
//! requests built as Curio builds them.
// Each test binary uses part of this module.
#![allow(dead_code)]
use std::sync::Once;

use arenaprove::filecoin::params::{ensure_params, ParamFiles};
use arenaprove::filecoin::{rng_from_seed, seal_sector, SealRequest, SealedSector, SectorSize};
use arenaprove_tools::serve::pb::*;
use base64::Engine as _;

/// The parameter cache every test binary of this target directory shares.
pub const PARAM_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/filecoin-params");

/// Makes the 2 KiB development parameters in [`PARAM_CACHE`] when absent, and points
/// filecoin-proofs' own `verify_seal` there (it reads only `FIL_PROOFS_PARAMETER_CACHE`,
/// once per process). The daemon itself is given the directory in its configuration.
pub fn params_2kib() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
        let proof = SectorSize::Kib2.default_registered_proof();
        let files = ParamFiles::in_dir(proof, std::path::Path::new(PARAM_CACHE)).expect("2 KiB files");
        let status =
            ensure_params(proof, &files, &mut rng_from_seed(0xc2)).expect("2 KiB development params");
        eprintln!("2 KiB params: {status:?}");
    });
}

/// A 2 KiB sector sealed from `seed` (its C1 output is what C2 proves).
pub fn sealed(seed: u64) -> SealedSector {
    let mut rng = rng_from_seed(seed);
    let request = SealRequest::random(SectorSize::Kib2, &mut rng);
    let work = tempfile::tempdir().expect("tempdir");
    seal_sector(&request, &mut rng, work.path()).expect("seal")
}

/// Curio's envelope around a C1 output, as its cuzk client builds it.
pub fn envelope(c1_json: &[u8], sector_num: u64, sector_size: u64) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json),
        "SectorSize": sector_size,
    }))
    .unwrap()
}

/// A PoRep C2 request as Curio builds it (`PoRepSnarkCuzk`).
pub fn porep(request_id: impl Into<String>, sector: &SealedSector, priority: Priority) -> SubmitProofRequest {
    let c1 = sector.c1.to_api_json().unwrap();
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: sector.info.registered_proof.proof_id(),
        priority: priority as i32,
        vanilla_proof: envelope(&c1, sector.info.sector_id, 2048),
        sector_number: sector.info.sector_id,
        miner_id: 1000,
        ..Default::default()
    }
}

/// A gRPC channel to the daemon's unix socket at `path`.
pub async fn unix_channel(
    path: std::path::PathBuf,
) -> Result<tonic::transport::Channel, tonic::transport::Error> {
    tonic::transport::Endpoint::try_from("http://[::]:50051")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let path = path.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(path).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            }
        }))
        .await
}

/// The miner whose prover id the PoSt and SnapDeals tests use.
pub const MINER: u64 = 1000;

/// Chain randomness as Lotus hands it to proofs (the top bits masked into the field).
pub fn randomness(seed: u8) -> [u8; 32] {
    let mut r = [seed; 32];
    r[31] &= 0x3f;
    r
}

/// The 2 KiB PoSt and SnapDeals sectors and requests: params in the cache, two sectors
/// sealed and kept (prover: [`MINER`]), the second updated with new data.
pub struct Kinds {
    _dir: tempfile::TempDir,
    pub replicas: Vec<arenaprove::filecoin::post::Replica>,
    pub update: arenaprove::filecoin::snap::SnapRequest,
}

pub const WINNING: arenaprove::filecoin::post::RegisteredPoStProof =
    arenaprove::filecoin::post::RegisteredPoStProof::StackedDrgWinning2KiBV1;
pub const WINDOW: arenaprove::filecoin::post::RegisteredPoStProof =
    arenaprove::filecoin::post::RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
pub const SNAP: arenaprove::filecoin::snap::RegisteredUpdateProof =
    arenaprove::filecoin::snap::RegisteredUpdateProof::StackedDrg2KiBV1;

pub fn kinds_2kib() -> Kinds {
    use arenaprove::filecoin::{post, snap};
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
    let cache = std::path::Path::new(PARAM_CACHE);
    for proof in [WINNING, WINDOW] {
        post::ensure_post_params(proof, &proof.param_files(cache).unwrap(), &mut rng_from_seed(0x9057))
            .expect("PoSt params");
    }
    snap::ensure_update_params(SNAP, &SNAP.param_files(cache).unwrap(), &mut rng_from_seed(0x5a9))
        .expect("update params");
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rng_from_seed(0x5e71);
    let replicas: Vec<_> = (0..2)
        .map(|i| {
            let mut request = SealRequest::random(SectorSize::Kib2, &mut rng);
            request.prover_id = arenaprove_tools::serve::request::prover_id(MINER);
            request.sector_id = 7 + i;
            arenaprove::filecoin::seal::seal_sector_keep(
                &request,
                &mut rng,
                &dir.path().join(format!("s{i}")),
            )
            .expect("seal")
            .1
        })
        .collect();
    let update = snap::encode_update(&replicas[1], &dir.path().join("s1"), &mut rng).expect("encode_into");
    Kinds { _dir: dir, replicas, update }
}

/// A PoSt request as Curio's cuzk client builds it.
pub fn post_request(
    id: &str,
    kind: ProofKind,
    request: &arenaprove::filecoin::post::PostRequest,
    sector_size: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: kind as i32,
        sector_size,
        registered_proof: request.proof.number(),
        vanilla_proofs: request.vanilla_bincode().unwrap(),
        miner_id: MINER,
        randomness: request.randomness.to_vec(),
        partition_index: request.partition_index as u32,
        ..Default::default()
    }
}

/// A SnapDeals request as Curio's proof-share path builds it (`sector_size` unset).
pub fn snap_request(id: &str, update: &arenaprove::filecoin::snap::SnapRequest) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.into(),
        proof_kind: ProofKind::SnapDealsUpdate as i32,
        registered_proof: update.proof.number(),
        vanilla_proofs: update.vanilla_bincode().unwrap(),
        comm_r_old: update.comm_r_old.to_vec(),
        comm_r_new: update.comm_r_new.to_vec(),
        comm_d_new: update.comm_d_new.to_vec(),
        ..Default::default()
    }
}

/// The daemon's backend for the tests that run on a GPU too: `ARENAPROVE_SERVE_GPU` and
/// the TOML for it. `<ordinals>` (`0`, `0,1`): those GPUs; `all`: every visible one
/// (`gpus.devices = []`), both with a binary built with `--features cuda`, on the GPU
/// machine; unset: the CPU backend.
pub fn serve_backend() -> (Option<String>, String) {
    let gpu = std::env::var("ARENAPROVE_SERVE_GPU").ok();
    let toml = match gpu.as_deref() {
        None => "[engine]\nbackend = \"cpu\"\n".to_string(),
        Some("all") => "[gpus]\ndevices = []\n".to_string(),
        Some(g) => format!("[gpus]\ndevices = [{g}]\n"),
    };
    (gpu, toml)
}
