//! The daemon on the GPU with real sectors, not in CI (it needs a GPU and minutes of
//! sealing): for each size in `ARENAPROVE_SERVE_SIZES` (default `2KiB,8MiB`; `512MiB`
//! seals for ~6 minutes on 16 cores), development parameters made if absent, one sector
//! sealed by filecoin-proofs, a daemon started with `gpus.devices = [0]`, and the sector's
//! C1 sent as Curio sends it (`Prove`). The proof must come back COMPLETED, one 192-byte
//! proof per partition, and filecoin-proofs' `verify_seal` must accept it. Prints one JSON
//! line per size (recorded in BENCHMARKS.md). `ARENAPROVE_SERVE_SEALED=512MiB=/tmp/s512`
//! proves a sector `arenaprove filecoin seal --out /tmp/s512` sealed before instead of
//! sealing one.
//!
//! Build with the GPU backend and run on the GPU machine:
//! `cargo test --release -p arenaprove-tools --features cuda,serve --test serve_gpu --no-run`,
//! then `serve_gpu --ignored --nocapture --test-threads=1` there.

mod common;

use std::time::Instant;

use arenaprove::filecoin::params::{ensure_params, ParamFiles};
use arenaprove::filecoin::{
    rng_from_seed, seal_sector, verify_seal, C1Output, SealRequest, SealedSector, SectorInfo, SectorSize,
    Verdict,
};
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start, Overrides, ServeConfig};
use common::{porep, PARAM_CACHE};

/// The directory `ARENAPROVE_SERVE_SEALED` names for the size `name` (`SIZE=DIR,..`).
fn sealed_dir(name: &str) -> Option<std::path::PathBuf> {
    let v = std::env::var("ARENAPROVE_SERVE_SEALED").ok()?;
    v.split(',')
        .find_map(|kv| kv.split_once('=').filter(|(k, _)| k.trim() == name).map(|(_, d)| d.trim().into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a GPU and real sectors (minutes): run on the GPU machine"]
async fn the_daemon_proves_real_sectors_on_gpu_0() {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", PARAM_CACHE);
    let sizes = std::env::var("ARENAPROVE_SERVE_SIZES").unwrap_or_else(|_| "2KiB,8MiB".into());
    for name in sizes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let size: SectorSize = name.parse().expect("a sector size");
        let proof = size.default_registered_proof();
        let files = ParamFiles::in_dir(proof, std::path::Path::new(PARAM_CACHE)).expect("param files");
        let t = Instant::now();
        ensure_params(proof, &files, &mut rng_from_seed(0xc2)).expect("development params");
        let params_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sector = match sealed_dir(name) {
            Some(dir) => SealedSector {
                info: SectorInfo::read(&dir.join("sector.json")).expect("sector.json"),
                c1: C1Output::read(&dir.join("c1.json"), None).expect("c1.json"),
                timings: Default::default(),
            },
            None => {
                let mut rng = rng_from_seed(77);
                let work = tempfile::tempdir().expect("tempdir");
                seal_sector(&SealRequest::random(size, &mut rng), &mut rng, work.path()).expect("seal")
            }
        };
        assert_eq!(sector.info.registered_proof, proof, "{name}: the sealed sector's size");
        let seal_s = t.elapsed().as_secs_f64();

        let id = arenaprove_tools::serve::circuits::CircuitId::porep(size).name();
        let toml = format!(
            "[daemon]\nlisten = [\"127.0.0.1:0\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\npreload = [\"{id}\"]\n\
             [gpus]\ndevices = [0]\n[engine]\nslots = 2\n"
        );
        let config = ServeConfig::from_toml(&toml, &Overrides::default()).expect("config");
        let running = start(config).await.expect("daemon starts on GPU 0");
        let mut c = ProvingEngineClient::connect(format!("http://{}", running.tcp[0])).await.unwrap();
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        assert_eq!(status.gpus.len(), 1, "one GPU in the status: {status:?}");

        let mut request = porep(format!("gpu-{name}"), &sector, Priority::Normal);
        let bytes = size.bytes();
        request.sector_size = bytes;
        request.vanilla_proof =
            common::envelope(&sector.c1.to_api_json().unwrap(), sector.info.sector_id, bytes);
        let t = Instant::now();
        let result =
            c.prove(ProveRequest { submit: Some(request) }).await.unwrap().into_inner().result.unwrap();
        let prove_s = t.elapsed().as_secs_f64();
        assert_eq!(result.status(), JobStatus::Completed, "{name}: {}", result.error_message);
        assert_eq!(result.proof.len(), 192 * sector.c1.partitions(), "{name}: one proof per partition");
        assert_eq!(verify_seal(&sector.info, &result.proof).unwrap(), Verdict::Accepted, "{name}");
        println!(
            "{}",
            serde_json::json!({
                "sector_size": name,
                "partitions": sector.c1.partitions(),
                "gpu": status.gpus[0].name,
                "params_s": params_s,
                "seal_s": seal_s,
                "prove_call_s": prove_s,
                "synthesis_ms": result.synthesis_ms,
                "gpu_compute_ms": result.gpu_compute_ms,
                "total_ms": result.total_ms,
                "verify_seal": "accepted",
            })
        );
        let report = running.drain(std::future::pending()).await.expect("drain");
        if let Some(r) = report {
            assert!(r.deinit.is_clean(), "{name}: every slab back at shutdown: {}", r.deinit);
        }
    }
}

/// Issue 21: with a 32 GiB sector's parameters present, the daemon on GPU 0 loads the 32 GiB
/// circuit at start (parameters, recording, resident bases) and takes a 32 GiB request as
/// Curio sends it past the parameters' precondition to the job's own checks. This machine
/// cannot seal a 32 GiB sector (hours), so the C1 is of the real shape with random values
/// (`filecoin::random`), whose vanilla proofs the daemon refuses by INVALID_ARGUMENT: the
/// first check a real C1 passes. Without the parameters the same request is
/// FAILED_PRECONDITION naming the missing file (`serve.rs`, in CI).
/// `ARENAPROVE_SERVE_32G_CACHE`: a parameter cache `filecoin params --sector-size 32GiB`
/// filled (`scripts/gpu-filecoin.sh params-32GiB` leaves one in `PARAM_CACHE`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a GPU and the 47 GB 32 GiB parameters (ARENAPROVE_SERVE_32G_CACHE)"]
async fn the_daemon_loads_32gib_parameters_and_takes_a_32gib_request_to_its_checks() {
    use arenaprove::filecoin::random::random_c1;
    let cache = std::env::var("ARENAPROVE_SERVE_32G_CACHE")
        .expect("ARENAPROVE_SERVE_32G_CACHE: a parameter cache holding the 32 GiB files");
    let size: SectorSize = "32GiB".parse().unwrap();
    let proof = size.default_registered_proof();
    let files = ParamFiles::in_dir(proof, std::path::Path::new(&cache)).expect("param files");
    assert!(files.params.is_file(), "{} is absent", files.params.display());
    let id = arenaprove_tools::serve::circuits::CircuitId::porep(size).name();
    let toml = format!(
        "[daemon]\nlisten = [\"127.0.0.1:0\"]\n[srs]\nparam_cache = \"{cache}\"\npreload = [\"{id}\"]\n\
         [gpus]\ndevices = [0]\n[engine]\nslots = 1\n"
    );
    let config = ServeConfig::from_toml(&toml, &Overrides::default()).expect("config");
    let t = Instant::now();
    let running = start(config).await.expect("the daemon starts with the 32 GiB circuit loaded");
    let start_s = t.elapsed().as_secs_f64();
    let mut c = ProvingEngineClient::connect(format!("http://{}", running.tcp[0])).await.unwrap();
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.loaded_srs.iter().any(|s| s.circuit_id == id), "{id} loaded: {status:?}");
    assert_eq!(status.gpus.len(), 1, "{status:?}");

    let t = Instant::now();
    let c1 = random_c1(proof, &mut rng_from_seed(32)).expect("a random C1 of the real shape");
    let json = c1.to_api_json().unwrap();
    let c1_s = t.elapsed().as_secs_f64();
    let request = SubmitProofRequest {
        request_id: "porep-32g-random".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        sector_size: size.bytes(),
        registered_proof: proof.proof_id(),
        priority: Priority::Normal as i32,
        vanilla_proof: common::envelope(&json, 1, size.bytes()),
        sector_number: 1,
        miner_id: 1000,
        ..Default::default()
    };
    let payload_bytes = request.vanilla_proof.len();
    let t = Instant::now();
    let refused = c.submit_proof(request).await.expect_err("a random C1's vanilla proofs do not verify");
    let check_s = t.elapsed().as_secs_f64();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{}", refused.message());
    assert!(refused.message().contains("vanilla proofs do not verify"), "{}", refused.message());
    let after = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(after.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{after:?}");
    println!(
        "{}",
        serde_json::json!({
            "circuit": id,
            "start_s": start_s,
            "loaded_srs": format!("{:?}", status.loaded_srs),
            "pinned_memory_bytes": status.pinned_memory_bytes,
            "vram_free_bytes": status.gpus[0].vram_free_bytes,
            "vram_total_bytes": status.gpus[0].vram_total_bytes,
            "random_c1_s": c1_s,
            "payload_bytes": payload_bytes,
            "refused_in_s": check_s,
            "refusal": refused.message(),
        })
    );
    let report = running.drain(std::future::pending()).await.expect("drain");
    if let Some(r) = report {
        assert!(r.deinit.is_clean(), "every slab back at shutdown: {}", r.deinit);
    }
}
