//! `arenaprove serve` proving WinningPoSt, WindowPoSt partitions and SnapDeals as Curio
//! sends them (`WINNING_POST`, `WINDOW_POST_PARTITION`: one bincode
//! `FallbackPoStSectorProof` per sector in `vanilla_proofs`, `randomness`, `miner_id`,
//! `partition_index`; `SNAP_DEALS_UPDATE`: one bincode `PartitionProof` per partition and
//! the raw commitments, `sector_size` unset as on Curio's proof-share path), driven over
//! gRPC by the client generated from our proto, on real 2 KiB sectors sealed (and updated)
//! by filecoin-proofs; every proof accepted by filecoin-proofs' `verify_winning_post`,
//! `verify_window_post`, `verify_empty_sector_update_proof`; bad requests refused with
//! typed statuses before anything is queued.
#![allow(clippy::result_large_err)]

mod common;

use arenaprove::filecoin::post::{vanilla_request, verify_post};
use arenaprove::filecoin::snap::verify_snap;
use arenaprove::filecoin::Verdict;
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start_with, Overrides, ServeConfig, TestHooks};
use common::{kinds_2kib, post_request, randomness, snap_request, PARAM_CACHE, SNAP, WINDOW, WINNING};
use tonic::Code;

fn prover_id() -> [u8; 32] {
    arenaprove_tools::serve::request::prover_id(common::MINER)
}

fn refused<T: std::fmt::Debug>(r: Result<T, tonic::Status>, code: Code, needle: &str) {
    let status = r.expect_err("refused");
    assert_eq!(status.code(), code, "{needle}: {}", status.message());
    assert!(status.message().contains(needle), "expected `{needle}` in: {}", status.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_proves_winning_window_and_snap_deals() {
    let kinds = kinds_2kib();
    let (replicas, update) = (&kinds.replicas, &kinds.update);
    let snap_proof = SNAP;

    let (gpu, gpus) = common::serve_backend();
    let toml = format!(
        "[daemon]\nlisten = [\"127.0.0.1:0\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\n\
         preload = [\"winning-2k\", \"wpost-2k\", \"snap-2k\"]\n{gpus}"
    );
    let sizes = Overrides { slots: Some(2), synth_workers: Some(1), ..Overrides::default() };
    let config = ServeConfig::from_toml(&toml, &sizes).unwrap();
    let running = start_with(config, TestHooks::default()).await.expect("daemon starts");
    let mut c = ProvingEngineClient::connect(format!("http://{}", running.tcp[0])).await.unwrap();
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    let mut loaded: Vec<_> = status.loaded_srs.iter().map(|s| s.circuit_id.as_str()).collect();
    loaded.sort_unstable();
    assert_eq!(loaded, ["snap-2k", "winning-2k", "wpost-2k"]);
    assert_eq!(status.gpus.is_empty(), gpu.is_none(), "{:?}", status.gpus);

    // --- Both kinds at once; WinningPoSt with sector_size left 0 (taken from the proof).
    let winning = vanilla_request(WINNING, randomness(1), prover_id(), 0, &replicas[1..]).unwrap();
    let window = vanilla_request(WINDOW, randomness(2), prover_id(), 0, replicas).unwrap();
    let w = c.submit_proof(post_request("winning-1", ProofKind::WinningPost, &winning, 0)).await.unwrap();
    let d = c
        .submit_proof(post_request("wdpost-1", ProofKind::WindowPostPartition, &window, 2048))
        .await
        .unwrap();
    for (job, request, what) in [(w.into_inner(), &winning, "winning"), (d.into_inner(), &window, "window")] {
        let r = c
            .await_proof(AwaitProofRequest { job_id: job.job_id.clone(), timeout_ms: 0 })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status(), JobStatus::Completed, "{what}: {}", r.error_message);
        assert_eq!(r.proof.len(), 192, "{what}: one partition proof");
        assert_eq!(verify_post(request, &r.proof).unwrap(), Verdict::Accepted, "{what}");
    }
    // On the GPUs: GetStatus names, per GPU, the job and proof kind of the operation it runs.
    if gpu.is_some() {
        let job = c
            .submit_proof(post_request("wdpost-seen", ProofKind::WindowPostPartition, &window, 2048))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let mut seen = None;
        let t0 = std::time::Instant::now();
        while seen.is_none() && t0.elapsed() < std::time::Duration::from_secs(120) {
            let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
            seen = status.gpus.into_iter().find(|g| g.current_job_id == job);
            let done = c.await_proof(AwaitProofRequest { job_id: job.clone(), timeout_ms: 1 }).await.unwrap();
            if matches!(
                done.into_inner().status(),
                JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled
            ) {
                break;
            }
        }
        let seen = seen.expect("a GPU named the job while it ran");
        assert_eq!(seen.current_proof_kind, "WINDOW_POST_PARTITION", "{seen:?}");
        eprintln!("GetStatus during {job}: {seen:?}");
        let r = c.await_proof(AwaitProofRequest { job_id: job, timeout_ms: 0 }).await.unwrap().into_inner();
        assert_eq!(r.status(), JobStatus::Completed, "{}", r.error_message);
        let metrics = c.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
        let ops =
            metrics.lines().find(|l| l.starts_with("arenaprove_gpu_operations_total{")).expect(&metrics);
        assert!(!ops.ends_with(" 0"), "{ops}");
    }

    // SnapDeals, as the proof-share path sends it (sector_size unset).
    let snap = snap_request("snap-1", update);
    assert_eq!(snap.registered_proof, snap_proof.number());
    let r = c.prove(ProveRequest { submit: Some(snap.clone()) }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(r.status(), JobStatus::Completed, "snap: {}", r.error_message);
    assert_eq!(r.proof.len(), 192);
    assert_eq!(verify_snap(update, &r.proof).unwrap(), Verdict::Accepted);
    let mut other = snap.clone();
    other.request_id = "snap-bad".into();
    other.comm_r_old.pop();
    refused(
        c.submit_proof(other.clone()).await,
        Code::InvalidArgument,
        "comm_r_old must be exactly 32 bytes",
    );
    other.comm_r_old = update.comm_d_new.to_vec();
    refused(c.submit_proof(other.clone()).await, Code::InvalidArgument, "do not verify");
    other.comm_r_old = snap.comm_r_old.clone();
    other.vanilla_proofs.push(other.vanilla_proofs[0].clone());
    refused(c.submit_proof(other).await, Code::InvalidArgument, "takes 1 partition proof");

    // On the GPU: a kernel launch the driver refuses fails that job with a typed status
    // naming the call, and the next job proves on the same engine.
    #[cfg(feature = "cuda")]
    if gpu.is_some() {
        use arenaprove::cuda::fault;
        fault::fail_next_launches(1);
        let faulty = post_request("winning-fault", ProofKind::WinningPost, &winning, 0);
        let r = c.prove(ProveRequest { submit: Some(faulty) }).await.unwrap().into_inner().result.unwrap();
        assert_eq!(r.status(), JobStatus::Failed, "{r:?}");
        assert!(r.error_message.contains("cuLaunchKernel"), "{}", r.error_message);
        eprintln!("GPU fault: {} failed: {}", r.job_id, r.error_message);
        assert_eq!(fault::launches_armed(), 0, "the armed launch ran");
        let next = post_request("winning-after-fault", ProofKind::WinningPost, &winning, 0);
        let r = c.prove(ProveRequest { submit: Some(next) }).await.unwrap().into_inner().result.unwrap();
        assert_eq!(r.status(), JobStatus::Completed, "{}", r.error_message);
        assert_eq!(verify_post(&winning, &r.proof).unwrap(), Verdict::Accepted);
        eprintln!("GPU fault: the next job, {}, proved and verified", r.job_id);
    }

    let metrics = c.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    for circuit in ["winning-2k", "wpost-2k", "snap-2k"] {
        assert!(
            metrics.lines().any(|l| l.contains(&format!("circuit=\"{circuit}\"")) && l.contains("completed")),
            "{circuit} completed in:\n{metrics}"
        );
    }

    // --- Bad requests: typed, before anything is queued. (Not among them: another
    // miner_id. The prover id is no input of the FallbackPoSt statement, in filecoin-proofs
    // as here: the proof verifies for any prover, so the request is proven.)
    let good = post_request("bad", ProofKind::WindowPostPartition, &window, 2048);
    let with = |f: &dyn Fn(&mut SubmitProofRequest)| {
        let mut r = good.clone();
        f(&mut r);
        r
    };
    let cases: Vec<(SubmitProofRequest, Code, &str)> = vec![
        (with(&|r| r.randomness.truncate(31)), Code::InvalidArgument, "randomness must be exactly 32 bytes"),
        (with(&|r| r.vanilla_proofs.clear()), Code::InvalidArgument, "vanilla_proofs is empty"),
        (with(&|r| r.vanilla_proofs[1].truncate(100)), Code::InvalidArgument, "vanilla proof 1"),
        (with(&|r| r.randomness[0] ^= 1), Code::InvalidArgument, "do not"),
        (with(&|r| r.randomness = vec![0xff; 32]), Code::InvalidArgument, "not a BLS12-381 scalar"),
        (with(&|r| r.registered_proof = 0), Code::InvalidArgument, "is StackedDrgWinning2KiBV1"),
        (with(&|r| r.registered_proof = 99), Code::InvalidArgument, "0..=14"),
        (with(&|r| r.sector_size = 8 << 20), Code::InvalidArgument, "sector size mismatch"),
        (
            with(&|r| {
                r.proof_kind = ProofKind::WinningPost as i32;
                r.registered_proof = 1;
                r.sector_size = 0;
            }),
            Code::FailedPrecondition,
            "8MiB WinningPoSt",
        ),
        (
            with(&|r| {
                r.proof_kind = ProofKind::WinningPost as i32;
                r.registered_proof = 0;
                r.partition_index = 1;
            }),
            Code::InvalidArgument,
            "one partition",
        ),
    ];
    for (request, code, needle) in cases {
        refused(c.submit_proof(request).await, code, needle);
    }
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{:?}", status.queues);

    // --- And the daemon proves the next one (idempotent resubmission answers the first).
    let again = c.submit_proof(post_request("winning-1", ProofKind::WinningPost, &winning, 0)).await.unwrap();
    let r = c
        .await_proof(AwaitProofRequest { job_id: again.into_inner().job_id, timeout_ms: 0 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status(), JobStatus::Completed);
    assert_eq!(verify_post(&winning, &r.proof).unwrap(), Verdict::Accepted);
    let report = running.drain(std::future::pending()).await.unwrap().expect("an engine ran");
    assert_eq!(report.slabs_outstanding, 0, "every slab back");
}
