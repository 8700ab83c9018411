//! A mixed soak through the daemon: `ARENAPROVE_SOAK_JOBS` jobs (default 500) of the four
//! kinds Curio sends (PoRep C2, WinningPoSt, a WindowPoSt partition, SnapDeals; 2 KiB
//! sectors sealed by filecoin-proofs), submitted by 8 concurrent clients over gRPC, every
//! proof checked by filecoin-proofs' verifier for its kind. Asserts 0 failures, and that
//! the process's RSS and (on a GPU) the device memory in use stay flat from job 50 on
//! (within 2% of their value at job 50, sampled after every job).
//!
//! `#[ignore]`: minutes of proving. On the GPU machine, a binary built with
//! `--features cuda,serve`: `ARENAPROVE_SERVE_GPU=0 serve_soak --ignored --nocapture`.
#![allow(clippy::result_large_err)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use arenaprove::filecoin::post::{vanilla_request, verify_post, PostRequest};
use arenaprove::filecoin::snap::verify_snap;
use arenaprove::filecoin::{verify_seal, Verdict};
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start_with, Overrides, ServeConfig, TestHooks};
use common::{kinds_2kib, params_2kib, porep, post_request, randomness, sealed, snap_request, PARAM_CACHE};

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    kib << 10
}

/// (job index, RSS, device bytes in use) after each job.
type Samples = Arc<Mutex<Vec<(usize, u64, u64)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore]
async fn five_hundred_mixed_jobs_through_the_daemon() {
    let jobs: usize = std::env::var("ARENAPROVE_SOAK_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    params_2kib();
    let kinds = kinds_2kib();
    let sector = sealed(61);
    let prover = arenaprove_tools::serve::request::prover_id(common::MINER);
    let winning = vanilla_request(common::WINNING, randomness(1), prover, 0, &kinds.replicas[1..]).unwrap();
    let window = vanilla_request(common::WINDOW, randomness(2), prover, 0, &kinds.replicas).unwrap();

    let (_, gpus) = common::serve_backend();
    let toml = format!(
        "[daemon]\nlisten = [\"127.0.0.1:0\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\n\
         preload = [\"porep-2k\", \"winning-2k\", \"wpost-2k\", \"snap-2k\"]\n[queue]\npending_max = 16\n{gpus}"
    );
    let config = ServeConfig::from_toml(&toml, &Overrides::default()).unwrap();
    let running = start_with(config, TestHooks::default()).await.expect("daemon starts");
    let addr = format!("http://{}", running.tcp[0]);

    let requests: Arc<Vec<(&str, SubmitProofRequest)>> = Arc::new(vec![
        ("porep", porep("", &sector, Priority::Normal)),
        ("winning", post_request("", ProofKind::WinningPost, &winning, 0)),
        ("window", post_request("", ProofKind::WindowPostPartition, &window, 2048)),
        ("snap", snap_request("", &kinds.update)),
    ]);
    let samples: Samples = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let verify = |what: &str, proof: &[u8], winning: &PostRequest, window: &PostRequest| -> Verdict {
        match what {
            "porep" => verify_seal(&sector.info, proof).unwrap(),
            "winning" => verify_post(winning, proof).unwrap(),
            "window" => verify_post(window, proof).unwrap(),
            _ => verify_snap(&kinds.update, proof).unwrap(),
        }
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, &'static str, Vec<u8>)>();
    let mut clients = Vec::new();
    for _ in 0..8 {
        let (addr, requests, next, tx, samples) =
            (addr.clone(), requests.clone(), next.clone(), tx.clone(), samples.clone());
        clients.push(tokio::spawn(async move {
            let mut c = ProvingEngineClient::connect(addr).await.unwrap();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= jobs {
                    break;
                }
                let (what, template) = &requests[i % requests.len()];
                let mut request = template.clone();
                request.request_id = format!("soak-{i}");
                let r = c
                    .prove(ProveRequest { submit: Some(request) })
                    .await
                    .unwrap()
                    .into_inner()
                    .result
                    .unwrap();
                assert_eq!(r.status(), JobStatus::Completed, "job {i} ({what}): {}", r.error_message);
                let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
                let device = status.gpus.first().map_or(0, |g| g.vram_total_bytes - g.vram_free_bytes);
                samples.lock().unwrap().push((i, rss_bytes(), device));
                let what: &'static str = match *what {
                    "porep" => "porep",
                    "winning" => "winning",
                    "window" => "window",
                    _ => "snap",
                };
                tx.send((i, what, r.proof)).unwrap();
            }
        }));
    }
    drop(tx);
    let mut verified = std::collections::BTreeMap::<&str, usize>::new();
    while let Some((i, what, proof)) = rx.recv().await {
        assert_eq!(verify(what, &proof, &winning, &window), Verdict::Accepted, "job {i} ({what})");
        *verified.entry(what).or_default() += 1;
    }
    for c in clients {
        c.await.expect("a client failed (see its panic)");
    }
    let wall = started.elapsed().as_secs_f64();
    let status =
        ProvingEngineClient::connect(addr.clone()).await.unwrap().get_status(GetStatusRequest {}).await;
    let status = status.unwrap().into_inner();
    assert_eq!(status.total_proofs_failed, 0);
    let report = running.drain(std::future::pending()).await.unwrap().expect("an engine ran");
    assert_eq!(report.slabs_outstanding, 0);

    let mut samples = samples.lock().unwrap().clone();
    samples.sort_unstable();
    let after: Vec<_> = samples.iter().filter(|s| s.0 >= 50.min(jobs / 2)).collect();
    let (rss_at, dev_at) = (after[0].1, after[0].2);
    let rss_max = after.iter().map(|s| s.1).max().unwrap();
    let rss_min = after.iter().map(|s| s.1).min().unwrap();
    let dev_max = after.iter().map(|s| s.2).max().unwrap();
    let dev_min = after.iter().map(|s| s.2).min().unwrap();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    eprintln!(
        "{jobs} jobs in {wall:.1} s ({:.1} proofs/min), verified by kind {verified:?}; from job {}: RSS {:.3} GiB \
         (min {:.3}, max {:.3}, end {:.3}), device in use {:.3} GiB (min {:.3}, max {:.3})",
        jobs as f64 / wall * 60.0,
        after[0].0,
        gib(rss_at),
        gib(rss_min),
        gib(rss_max),
        gib(samples.last().unwrap().1),
        gib(dev_at),
        gib(dev_min),
        gib(dev_max),
    );
    assert_eq!(verified.values().sum::<usize>(), jobs, "every proof verified");
    assert!(rss_max as f64 <= rss_at as f64 * 1.02 && rss_min as f64 >= rss_at as f64 * 0.98, "RSS not flat");
    assert!(
        dev_max as f64 <= dev_at as f64 * 1.02 && dev_min as f64 >= dev_at as f64 * 0.98,
        "device not flat"
    );
}
