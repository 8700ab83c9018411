//! The daemon under load, not in CI: 8 concurrent clients x 5
//! `Prove` calls of real 2 KiB sectors, with 200 bad requests of every kind interleaved.
//! Every good proof must be accepted by `verify_seal`, every bad request must get its
//! typed status, and the resident set at the end must be within 2% of the one after the
//! first proof. Prints one JSON summary line (recorded in BENCHMARKS.md).
//!
//! `cargo test --release -p arenaprove-tools --test serve_load -- --ignored --nocapture`
// tonic::Status (the error of every gRPC call, ~176 bytes) is returned by value as tonic
// itself does; boxing it would only add an allocation per refusal.
#![allow(clippy::result_large_err)]

mod common;

use std::time::Instant;

use arenaprove::filecoin::{verify_seal, SealedSector, Verdict};
use arenaprove_tools::serve::metrics::rss_bytes;
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start, Overrides, ServeConfig};
use common::{envelope, params_2kib, porep, sealed, PARAM_CACHE};
use tonic::Code;

/// Clients and proofs per client: 8 x 5 unless `ARENAPROVE_LOAD_CLIENTS` /
/// `ARENAPROVE_LOAD_PROVES` say otherwise (a shorter run on a busy machine).
fn load_shape() -> (usize, usize) {
    let var =
        |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    (var("ARENAPROVE_LOAD_CLIENTS", 8).max(1), var("ARENAPROVE_LOAD_PROVES", 5).max(1))
}
/// Bad requests each client sends before each of its proofs (8 x 5 x 5 = 200).
const BAD_PER_PROVE: usize = 5;

/// Bad request number `i` (12 kinds in turn) and the code it must get.
async fn bad_request(
    c: &mut ProvingEngineClient<tonic::transport::Channel>,
    i: usize,
    sector: &SealedSector,
    tampered: &SealedSector,
    finished_job: &str,
) -> (Code, &'static str) {
    let mut r = porep(format!("bad-{i}"), sector, Priority::Normal);
    let c1 = sector.c1.to_api_json().unwrap();
    let submit = |c: &mut ProvingEngineClient<tonic::transport::Channel>, r: SubmitProofRequest| {
        let mut c = c.clone();
        async move { c.submit_proof(r).await.map(|_| ()) }
    };
    let (kind, result) = match i % 12 {
        0 => {
            r.vanilla_proof = b"{\"SectorNum\": 1, \"Pha".to_vec();
            ("truncated JSON", submit(c, r).await)
        }
        1 => {
            r.vanilla_proof = b"not json at all".to_vec();
            ("malformed JSON", submit(c, r).await)
        }
        2 => {
            let id = sector.info.sector_id;
            r.vanilla_proof =
                format!(r#"{{"SectorNum": {id}, "Phase1Out": "%%", "SectorSize": 2048}}"#).into_bytes();
            ("bad base64", submit(c, r).await)
        }
        3 => {
            r.vanilla_proof = envelope(&c1[..c1.len() / 3], sector.info.sector_id, 2048);
            ("truncated C1", submit(c, r).await)
        }
        4 => {
            r.registered_proof = 77;
            ("unknown registered proof", submit(c, r).await)
        }
        5 => {
            r.sector_size = 4096;
            ("sector size mismatch", submit(c, r).await)
        }
        6 => {
            (r.registered_proof, r.sector_size) = (6, 8 << 20);
            ("params missing", submit(c, r).await)
        }
        7 => (
            "vanilla proofs do not verify",
            submit(c, porep(format!("bad-{i}"), tampered, Priority::Normal)).await,
        ),
        8 => {
            let job_id = format!("job-unknown-{i}");
            ("unknown job id", c.await_proof(AwaitProofRequest { job_id, timeout_ms: 1 }).await.map(|_| ()))
        }
        9 => {
            let job_id = format!("job-unknown-{i}");
            ("cancel unknown job", c.cancel_proof(CancelProofRequest { job_id }).await.map(|_| ()))
        }
        10 => {
            let job_id = finished_job.to_string();
            ("cancel finished job", c.cancel_proof(CancelProofRequest { job_id }).await.map(|_| ()))
        }
        _ => {
            r.proof_kind = ProofKind::SnapDealsUpdate as i32;
            ("a seal proof's number as an update proof", submit(c, r).await)
        }
    };
    (result.expect_err(kind).code(), kind)
}

fn expected_code(i: usize) -> Code {
    match i % 12 {
        6 | 10 => Code::FailedPrecondition,
        8 | 9 => Code::NotFound,
        _ => Code::InvalidArgument,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn forty_proofs_from_eight_clients_with_two_hundred_bad_requests() {
    params_2kib();
    let (clients, proves_per_client) = load_shape();
    let sectors: Vec<SealedSector> = (0..clients as u64).map(|i| sealed(600 + i)).collect();
    let mut tampered = sealed(700);
    let mut seed = tampered.c1.seed();
    seed[0] ^= 0x40;
    tampered.c1.set_seed(seed);
    let toml = format!(
        "[daemon]\nlisten = \"127.0.0.1:0\"\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\npreload = [\"porep-2k\"]\n\
         [engine]\nslots = 2\nsynth_workers = 1\n[queue]\npending_max = 64\n"
    );
    let running = start(ServeConfig::from_toml(&toml, &Overrides::default()).unwrap()).await.unwrap();
    let url = format!("http://{}", running.tcp[0]);
    let mut c = ProvingEngineClient::connect(url.clone()).await.unwrap();

    // The first proof: warm-up, and the RSS reference.
    let t0 = Instant::now();
    let first = c
        .prove(ProveRequest { submit: Some(porep("warm-up", &sectors[0], Priority::Normal)) })
        .await
        .unwrap();
    let first = first.into_inner().result.unwrap();
    assert_eq!(first.status(), JobStatus::Completed, "{}", first.error_message);
    assert_eq!(verify_seal(&sectors[0].info, &first.proof).unwrap(), Verdict::Accepted);
    let rss_first = rss_bytes();
    let warm_s = t0.elapsed().as_secs_f64();

    let sectors = std::sync::Arc::new(sectors);
    let tampered = std::sync::Arc::new(tampered);
    let t1 = Instant::now();
    let mut tasks = Vec::new();
    let rss_first_mib = rss_first >> 20;
    eprintln!(
        "first proof: {warm_s:.1} s, RSS {rss_first_mib} MiB; {clients} clients x {proves_per_client} proofs"
    );
    for client in 0..clients {
        let url = url.clone();
        let sectors = sectors.clone();
        let tampered = tampered.clone();
        let finished = first.job_id.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = ProvingEngineClient::connect(url).await.unwrap();
            let sector = &sectors[client];
            let mut jobs = Vec::new();
            let mut bad_ok = 0;
            for k in 0..proves_per_client {
                // Bad requests between good ones: BAD_PER_PROVE before each Prove.
                for b in 0..BAD_PER_PROVE {
                    let i = (client * proves_per_client + k) * BAD_PER_PROVE + b;
                    let (code, kind) = bad_request(&mut c, i, sector, &tampered, &finished).await;
                    assert_eq!(code, expected_code(i), "bad request {i} ({kind})");
                    bad_ok += 1;
                }
                let req = porep(format!("load-{client}-{k}"), sector, Priority::Normal);
                let r = c.prove(ProveRequest { submit: Some(req) }).await.unwrap().into_inner().result.unwrap();
                assert_eq!(r.status(), JobStatus::Completed, "{}", r.error_message);
                assert_eq!(verify_seal(&sector.info, &r.proof).unwrap(), Verdict::Accepted);
                eprintln!(
                    "client {client} proof {k}: accepted; queue_wait {} ms, synthesis {} ms, prove {} ms, total {} ms; RSS {} MiB",
                    r.queue_wait_ms, r.synthesis_ms, r.gpu_compute_ms, r.total_ms, rss_bytes() >> 20
                );
                jobs.push(r);
            }
            (jobs, bad_ok)
        }));
    }
    let mut jobs = Vec::new();
    let mut bad = 0;
    for t in tasks {
        let (j, b) = t.await.unwrap();
        jobs.extend(j);
        bad += b;
    }
    let wall_s = t1.elapsed().as_secs_f64();
    let rss_end = rss_bytes();
    assert_eq!(jobs.len(), clients * proves_per_client);
    assert_eq!(bad, clients * proves_per_client * BAD_PER_PROVE);
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(status.total_proofs_completed, 1 + jobs.len() as u64);
    assert_eq!(status.total_proofs_failed, 0);

    let mut qw: Vec<u64> = jobs.iter().map(|j| j.queue_wait_ms).collect();
    let mut prove: Vec<u64> = jobs.iter().map(|j| j.synthesis_ms + j.gpu_compute_ms).collect();
    qw.sort();
    prove.sort();
    let rss_ratio = rss_end as f64 / rss_first as f64;
    let report = running.drain(std::future::pending()).await.unwrap().expect("engine report");
    println!(
        "{}",
        serde_json::json!({
            "proofs_ok": jobs.len(),
            "bad_requests_typed": bad,
            "warm_up_s": warm_s,
            "wall_s": wall_s,
            "s_per_proof": wall_s / jobs.len() as f64,
            "queue_wait_ms_p50": qw[qw.len() / 2], "queue_wait_ms_max": qw[qw.len() - 1],
            "synthesis_plus_prove_ms_p50": prove[prove.len() / 2], "synthesis_plus_prove_ms_max": prove[prove.len() - 1],
            "per_job": jobs.iter().map(|j| (j.queue_wait_ms, j.synthesis_ms, j.gpu_compute_ms, j.total_ms)).collect::<Vec<_>>(),
            "clients": clients, "proofs_per_client": proves_per_client,
            "rss_after_first_mib": rss_first_mib,
            "rss_end_mib": rss_end >> 20,
            "rss_end_over_first": rss_ratio,
            "slabs_outstanding": report.slabs_outstanding,
        })
    );
    assert_eq!(report.slabs_outstanding, 0);
    assert!((rss_ratio - 1.0).abs() <= 0.02, "RSS {rss_first} -> {rss_end} ({rss_ratio:.4})");
}
