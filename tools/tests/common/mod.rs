//! What the daemon's tests share: the 2 KiB development parameters, sealed sectors, and
//! requests built as Curio builds them.
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
#[allow(dead_code)] // the tests that listen on a unix socket use it
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
