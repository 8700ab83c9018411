//! `arenaprove serve` in-process, driven over gRPC by a tonic client generated from our
//! `proto/cuzk/v1/proving.proto`: real 2 KiB PoRep C2 proofs, through the precompiled
//! synthesis, that filecoin-proofs' `verify_seal` accepts, idempotent resubmission, every
//! bad input with its typed status, PreloadSRS / EvictSRS, a job whose circuit panics
//! (a typed failure, and the next job proves), priorities, queue full, await timeout,
//! cancel (queued and running), and the SIGTERM drain. Also: a configured GPU that does
//! not open stops the start, naming it, unless `gpus.fallback = "cpu"`.
//!
//! One daemon (one parameter load, one engine with one slot) serves the whole scenario, in
//! order: the queue tests need a known queue. Four 2 KiB proofs in all (~1-2 min on 2
//! cores). Parameters: the 2 KiB development parameters the filecoin crate's tests
//! generate into `<target>/tmp/filecoin-params` (generated here when absent).
// tonic::Status (the error of every gRPC call, ~176 bytes) is returned by value as tonic
// itself does; boxing it would only add an allocation per refusal.
#![allow(clippy::result_large_err)]

mod common;

use std::time::{Duration, Instant};

use std::sync::Arc;

use arenaprove::filecoin::{verify_seal, SealedSector, Verdict};
use arenaprove_tools::serve::daemon::StartError;
use arenaprove_tools::serve::jobs::JobError;
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use arenaprove_tools::serve::{start_with, Daemon, Overrides, ServeConfig, TestHooks};
use common::{envelope, params_2kib, porep, sealed, PARAM_CACHE};
use tonic::transport::Channel;
use tonic::Code;

async fn submit(
    c: &mut ProvingEngineClient<Channel>,
    r: SubmitProofRequest,
) -> Result<SubmitProofResponse, tonic::Status> {
    c.submit_proof(r).await.map(|r| r.into_inner())
}

async fn await_job(
    c: &mut ProvingEngineClient<Channel>,
    job_id: &str,
    timeout_ms: u64,
) -> AwaitProofResponse {
    c.await_proof(AwaitProofRequest { job_id: job_id.into(), timeout_ms }).await.expect("await").into_inner()
}

/// Asserts that the metrics text has this line (name, labels and value).
fn has_line(metrics: &str, line: &str) {
    assert!(metrics.lines().any(|l| l == line), "no `{line}` in:\n{metrics}");
}

/// Asserts the refusal's code and that its message names the problem.
fn refused<T: std::fmt::Debug>(r: Result<T, tonic::Status>, code: Code, needle: &str) {
    let status = r.expect_err("refused");
    assert_eq!(status.code(), code, "{needle}: {}", status.message());
    assert!(status.message().contains(needle), "expected `{needle}` in: {}", status.message());
}

async fn unix_client(path: std::path::PathBuf) -> ProvingEngineClient<Channel> {
    ProvingEngineClient::new(common::unix_channel(path).await.expect("unix socket connect"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_serves_curio_requests() {
    params_2kib();
    let sector = sealed(51);
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("serve.sock");
    let toml = format!(
        "[daemon]\nlisten = [\"127.0.0.1:0\", \"unix://{}\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\npreload = [\"porep-2k\"]\n\
         [engine]\nslots = 1\nsynth_workers = 1\n[queue]\npending_max = 4\n",
        sock.display()
    );
    let config = ServeConfig::from_toml(&toml, &Overrides::default()).unwrap();
    assert!(config.precompiled, "precompiled synthesis is the default");
    // The one way into a job's thread: a panic where filecoin-proofs builds the circuits.
    let hooks = TestHooks {
        before_circuits: Some(Arc::new(|request_id: &str| {
            assert_ne!(request_id, PANICS, "the circuit builder panicked (injected)");
        })),
    };
    let running = start_with(config, hooks).await.expect("daemon starts");
    let mut c = ProvingEngineClient::connect(format!("http://{}", running.tcp[0])).await.unwrap();

    // --- Status over the unix socket: parameters loaded, queues empty, memory reserved.
    let status = unix_client(sock.clone()).await.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(status.loaded_srs.len(), 1);
    assert_eq!(status.loaded_srs[0].circuit_id, "porep-2k");
    assert!(status.loaded_srs[0].size_bytes > 0);
    assert_eq!(status.queues.len(), 16, "one queue per proof kind and priority: {:?}", status.queues);
    assert_eq!(status.queues[0].proof_kind, "POREP_SEAL_COMMIT/CRITICAL");
    assert_eq!(status.queues[15].proof_kind, "WINNING_POST/LOW");
    assert!(status.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0));
    assert!(status.pinned_memory_bytes > 0 && status.pinned_memory_bytes <= status.pinned_memory_limit_bytes);

    bad_inputs(&mut c, &sector).await;
    preload_and_evict(&mut c, &sector).await;
    a_panicking_job_fails_alone(&mut c, &running.daemon, &sector).await;
    let first = end_to_end(&mut c, &sector).await;
    queue_priorities_cancel(&mut c, &sector, first, running).await;
}

/// Every bad request gets its typed status; nothing is queued.
async fn bad_inputs(c: &mut ProvingEngineClient<Channel>, sector: &SealedSector) {
    let good = porep("bad", sector, Priority::Normal);
    let c1 = sector.c1.to_api_json().unwrap();
    let with = |f: &dyn Fn(&mut SubmitProofRequest)| {
        let mut r = good.clone();
        f(&mut r);
        r
    };
    let payload = |bytes: Vec<u8>| with(&|r: &mut SubmitProofRequest| r.vanilla_proof = bytes.clone());

    refused(
        submit(c, payload(b"{\"SectorNum\": 1, \"Phase".to_vec())).await,
        Code::InvalidArgument,
        "truncated",
    );
    refused(submit(c, payload(b"[1, 2, 3]".to_vec())).await, Code::InvalidArgument, "malformed");
    refused(submit(c, payload(Vec::new())).await, Code::InvalidArgument, "vanilla_proof is empty");
    let not_b64 =
        format!(r#"{{"SectorNum": {}, "Phase1Out": "%%%", "SectorSize": 2048}}"#, sector.info.sector_id);
    let not_b64 = not_b64.into_bytes();
    refused(submit(c, payload(not_b64)).await, Code::InvalidArgument, "not base64");
    let truncated_c1 = envelope(&c1[..c1.len() / 2], sector.info.sector_id, 2048);
    refused(submit(c, payload(truncated_c1)).await, Code::InvalidArgument, "bad commit-phase-1 output");
    let renamed = String::from_utf8(c1.clone()).unwrap().replace("StackedDrg2KiBV1_1", "StackedDrg2KiBV9_9");
    let unknown_in_c1 = envelope(renamed.as_bytes(), sector.info.sector_id, 2048);
    refused(submit(c, payload(unknown_in_c1)).await, Code::InvalidArgument, "StackedDrg2KiBV9_9");

    refused(
        submit(c, with(&|r| r.registered_proof = 99)).await,
        Code::InvalidArgument,
        "unknown registered proof 99",
    );
    refused(submit(c, with(&|r| r.sector_size = 4096)).await, Code::InvalidArgument, "sector size mismatch");
    let wrong_envelope_size = envelope(&c1, sector.info.sector_id, 8 << 20);
    refused(submit(c, payload(wrong_envelope_size)).await, Code::InvalidArgument, "sector size mismatch");
    // The request says 2 KiB V1 (proof 0), the C1 is V1_1 (proof 5).
    refused(submit(c, with(&|r| r.registered_proof = 0)).await, Code::InvalidArgument, "StackedDrg2KiBV1_1");
    // 8 MiB: no parameters in the test cache (or, after the 8 MiB test ran, not loaded).
    refused(
        submit(c, with(&|r| (r.registered_proof, r.sector_size) = (6, 8 << 20))).await,
        Code::FailedPrecondition,
        "8MiB",
    );
    // 32 GiB: proven by this build, but its parameters are not in the test cache; the
    // refusal names the missing file (before the payload is read).
    refused(
        submit(c, with(&|r| (r.registered_proof, r.sector_size) = (8, 32 << 30))).await,
        Code::FailedPrecondition,
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-",
    );
    refused(
        submit(c, with(&|r| (r.registered_proof, r.sector_size) = (9, 64 << 30))).await,
        Code::FailedPrecondition,
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-2-sha256_hasher-",
    );
    // A C1 whose seed was changed: its vanilla proofs no longer verify.
    let mut tampered = sealed(52);
    let mut seed = tampered.c1.seed();
    seed[3] ^= 0xa5;
    tampered.c1.set_seed(seed);
    refused(
        submit(c, porep("tampered", &tampered, Priority::Normal)).await,
        Code::InvalidArgument,
        "vanilla proofs do not verify",
    );
    // Seal proof 5 is no registered update proof (those are 0..=4).
    refused(
        submit(c, with(&|r| r.proof_kind = ProofKind::SnapDealsUpdate as i32)).await,
        Code::InvalidArgument,
        "unknown registered update proof 5",
    );
    // A PoRep payload sent as a PoSt: seal proof 5 is PoSt proof 5 (WindowPoSt 2 KiB V1),
    // not a WinningPoSt; and this daemon loaded no WindowPoSt circuit.
    refused(
        submit(c, with(&|r| r.proof_kind = ProofKind::WinningPost as i32)).await,
        Code::InvalidArgument,
        "is StackedDrgWindow2KiBV1",
    );
    refused(
        submit(c, with(&|r| r.proof_kind = ProofKind::WindowPostPartition as i32)).await,
        Code::FailedPrecondition,
        "proof-of-spacetime-fallback",
    );
    refused(submit(c, with(&|r| r.proof_kind = 0)).await, Code::InvalidArgument, "PROOF_KIND_UNSPECIFIED");
    refused(c.prove(ProveRequest { submit: None }).await, Code::InvalidArgument, "submit is missing");
    refused(
        c.await_proof(AwaitProofRequest { job_id: "job-999999".into(), timeout_ms: 10 }).await,
        Code::NotFound,
        "job-999999",
    );
    refused(c.cancel_proof(CancelProofRequest { job_id: "nope".into() }).await, Code::NotFound, "nope");

    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "nothing queued: {status:?}");
    let metrics = c.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    has_line(&metrics, "arenaprove_requests_refused_total{code=\"INVALID_ARGUMENT\"} 15");
    assert!(!metrics.contains("UNIMPLEMENTED\"} "), "every kind Curio sends is proven:\n{metrics}");
}

/// PreloadSRS and EvictSRS: the engine is rebuilt without, then with, the 2 KiB circuit.
async fn preload_and_evict(c: &mut ProvingEngineClient<Channel>, sector: &SealedSector) {
    let r = c.preload_srs(PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(r.already_loaded);
    refused(
        c.preload_srs(PreloadSrsRequest { circuit_id: "porep-3k".into() }).await,
        Code::InvalidArgument,
        "porep-3k",
    );
    refused(
        c.preload_srs(PreloadSrsRequest { circuit_id: "porep-32g".into() }).await,
        Code::FailedPrecondition,
        "32GiB",
    );
    let r = c.evict_srs(EvictSrsRequest { circuit_id: "porep-8m".into() }).await.unwrap().into_inner();
    assert!(!r.was_loaded);

    let r = c.evict_srs(EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(r.was_loaded && r.freed_bytes > 0, "{r:?}");
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.loaded_srs.is_empty() && status.pinned_memory_bytes == 0, "{status:?}");
    refused(
        submit(c, porep("evicted", sector, Priority::Normal)).await,
        Code::FailedPrecondition,
        "not loaded",
    );

    let r = c.preload_srs(PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!r.already_loaded && r.load_time_ms > 0, "{r:?}");
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(status.loaded_srs.len(), 1);
    assert!(status.pinned_memory_bytes > 0);
}

/// The request id whose job panics in its circuit builder.
const PANICS: &str = "panics-in-circuit";

/// A job whose circuit building panics: FAILED with the panic as its typed error, its slot
/// back, nothing left running; the next job (`end_to_end`) proves.
async fn a_panicking_job_fails_alone(
    c: &mut ProvingEngineClient<Channel>,
    daemon: &Daemon,
    sector: &SealedSector,
) {
    let request = porep(PANICS, sector, Priority::Normal);
    let result = c.prove(ProveRequest { submit: Some(request) }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(result.status(), JobStatus::Failed, "{result:?}");
    assert!(result.error_message.contains("panicked") && result.proof.is_empty(), "{result:?}");
    let outcome = daemon.outcome(&result.job_id).expect("an outcome");
    let error = outcome.error.as_deref().expect("an error");
    assert!(matches!(error, JobError::Panicked { reason } if reason.contains("injected")), "{error:?}");
    let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(status.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{status:?}");
    assert_eq!(daemon.pending(), 0, "its slot came back");
}

/// Prove as Curio calls it; verify_seal accepts; the same request id returns the same job.
async fn end_to_end(c: &mut ProvingEngineClient<Channel>, sector: &SealedSector) -> Vec<u8> {
    let request = porep("porep-1000-1", sector, Priority::Normal);
    let result =
        c.prove(ProveRequest { submit: Some(request.clone()) }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(result.status(), JobStatus::Completed, "{}", result.error_message);
    assert_eq!(result.proof.len(), 192, "2 KiB: one partition proof");
    assert_eq!(verify_seal(&sector.info, &result.proof).unwrap(), Verdict::Accepted);
    assert!(result.synthesis_ms > 0 && result.gpu_compute_ms > 0, "{result:?}");
    let synthesized = c.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    has_line(
        &synthesized,
        "arenaprove_proofs_synthesized_total{circuit=\"porep-2k\",synthesis=\"precompiled\"} 1",
    );
    assert!(result.total_ms >= result.synthesis_ms + result.gpu_compute_ms, "{result:?}");

    // Idempotent: the same request id and content is the same (finished) job.
    let again = submit(c, request.clone()).await.unwrap();
    assert_eq!(again.job_id, result.job_id);
    let r = await_job(c, &again.job_id, 1000).await;
    assert_eq!((r.status(), &r.proof), (JobStatus::Completed, &result.proof));
    // The same id with other content is refused.
    // Priority is not part of the content.
    let mut other = request.clone();
    other.priority = Priority::High as i32;
    assert_eq!(submit(c, other).await.unwrap().job_id, result.job_id);
    let mut other = request;
    other.miner_id += 1;
    refused(submit(c, other).await, Code::AlreadyExists, "porep-1000-1");
    // Cancelling a finished job says so.
    refused(
        c.cancel_proof(CancelProofRequest { job_id: result.job_id.clone() }).await,
        Code::FailedPrecondition,
        "COMPLETED",
    );
    result.proof
}

/// One slot, pending_max 4: a running LOW job, two queued LOW jobs and a CRITICAL one, which
/// overtakes them.
async fn queue_priorities_cancel(
    c: &mut ProvingEngineClient<Channel>,
    sector: &SealedSector,
    first_proof: Vec<u8>,
    running: arenaprove_tools::serve::Running,
) {
    let l1 = submit(c, porep("low-1", sector, Priority::Low)).await.unwrap();
    // Wait until it runs (the dispatcher starts it at once: one free slot).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        if s.queues.iter().map(|q| q.in_progress).sum::<u32>() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "low-1 never started: {s:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let l2 = submit(c, porep("low-2", sector, Priority::Low)).await.unwrap();
    let l3 = submit(c, porep("low-3", sector, Priority::Low)).await.unwrap();
    let crit = submit(c, porep("critical", sector, Priority::Critical)).await.unwrap();
    assert_eq!((l2.queue_position, l3.queue_position, crit.queue_position), (0, 1, 0));
    refused(
        submit(c, porep("one-too-many", sector, Priority::Critical)).await,
        Code::ResourceExhausted,
        "queue full",
    );
    // The slot is low-1's, but CRITICAL is above every running job: it starts at once and
    // takes the next free slot at the engine, before the LOW jobs queued ahead of it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        let queue = |name: &str| {
            s.queues.iter().find(|q| q.proof_kind == format!("POREP_SEAL_COMMIT/{name}")).cloned().unwrap()
        };
        let now = (
            queue("LOW").pending,
            queue("LOW").in_progress,
            queue("CRITICAL").pending,
            queue("CRITICAL").in_progress,
        );
        if now == (2, 1, 0, 1) {
            break;
        }
        assert!(Instant::now() < deadline && now == (2, 1, 1, 0), "{s:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Await with a timeout: TIMEOUT, the job goes on.
    let t0 = Instant::now();
    let r = await_job(c, &l1.job_id, 100).await;
    assert_eq!(r.status(), JobStatus::Timeout);
    assert!(t0.elapsed() < Duration::from_secs(5));

    // Cancel a queued job, then the running one: both end CANCELLED at once.
    let r = c.cancel_proof(CancelProofRequest { job_id: l3.job_id.clone() }).await.unwrap().into_inner();
    assert!(!r.was_running);
    assert_eq!(await_job(c, &l3.job_id, 1000).await.status(), JobStatus::Cancelled);
    let r = c.cancel_proof(CancelProofRequest { job_id: l1.job_id.clone() }).await.unwrap().into_inner();
    assert!(r.was_running);
    assert_eq!(await_job(c, &l1.job_id, 1000).await.status(), JobStatus::Cancelled);
    refused(
        c.cancel_proof(CancelProofRequest { job_id: l3.job_id.clone() }).await,
        Code::FailedPrecondition,
        "CANCELLED",
    );
    // A cancelled request may be submitted again: a new job.
    let retry = submit(c, porep("low-3", sector, Priority::Low)).await.unwrap();
    assert_ne!(retry.job_id, l3.job_id);
    c.cancel_proof(CancelProofRequest { job_id: retry.job_id.clone() }).await.unwrap();

    // CRITICAL runs before the LOW job queued ahead of it.
    let r = await_job(c, &crit.job_id, 0).await;
    assert_eq!(r.status(), JobStatus::Completed, "{}", r.error_message);
    assert_eq!(verify_seal(&sector.info, &r.proof).unwrap(), Verdict::Accepted);
    assert_ne!(r.proof, first_proof, "fresh randomness per proof");
    let s = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(s.queues.iter().map(|q| q.pending + q.in_progress).sum::<u32>(), 1, "only low-2 left: {s:?}");

    // SIGTERM's drain, while low-2 runs: new jobs are refused, low-2 completes, every slab
    // comes back.
    let mut c2 = c.clone();
    let daemon = running.daemon.clone();
    let drain = tokio::spawn(running.drain(std::future::pending()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    refused(submit(&mut c2, porep("late", sector, Priority::Critical)).await, Code::Unavailable, "draining");
    let r = await_job(c, &l2.job_id, 0).await;
    assert_eq!(r.status(), JobStatus::Completed, "{}", r.error_message);
    assert!(r.queue_wait_ms > 0);
    assert_eq!(verify_seal(&sector.info, &r.proof).unwrap(), Verdict::Accepted);
    // The listeners close once the last job is answered: read the metrics in-process.
    let metrics = daemon.metrics_text();
    has_line(&metrics, "arenaprove_proofs_total{circuit=\"porep-2k\",outcome=\"completed\"} 3");
    has_line(&metrics, "arenaprove_proofs_total{circuit=\"porep-2k\",outcome=\"cancelled\"} 3");
    has_line(&metrics, "arenaprove_proofs_total{circuit=\"porep-2k\",outcome=\"failed\"} 1");
    has_line(
        &metrics,
        "arenaprove_proofs_synthesized_total{circuit=\"porep-2k\",synthesis=\"precompiled\"} 3",
    );
    has_line(&metrics, "arenaprove_job_seconds_count{stage=\"queue_wait\"} 3");
    has_line(&metrics, "arenaprove_slabs_outstanding 0");
    let report = tokio::time::timeout(Duration::from_secs(120), drain)
        .await
        .expect("drain ends")
        .unwrap()
        .unwrap()
        .expect("an engine report");
    assert_eq!(report.slabs_outstanding, 0);
    // E2E, low-1 (cancelled while running: its started partition still ends), critical, low-2.
    assert_eq!(report.partitions_ok + report.partitions_failed, 4, "{report:?}");
}

/// A GPU named in the configuration that does not open stops the start, naming the GPU and
/// why (GPU 99 exists on no machine); `gpus.fallback = "cpu"` starts on the CPU instead.
/// An empty parameter cache: nothing is loaded, so the start is quick.
#[tokio::test]
async fn a_configured_gpu_that_does_not_open_stops_the_start() {
    let cache = tempfile::tempdir().unwrap();
    let toml = |fallback: &str| {
        format!("[srs]\nparam_cache = \"{}\"\n[gpus]\ndevices = [99]\n{fallback}", cache.path().display())
    };
    let config = ServeConfig::from_toml(&toml(""), &Overrides::default()).unwrap();
    let err = Daemon::start(config).err().expect("the start is refused");
    assert!(matches!(&err, StartError::Gpu { which, .. } if which == "GPU 99"), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("GPU 99") && text.contains("does not open") && text.contains("gpus.fallback"),
        "{text}"
    );

    let config = ServeConfig::from_toml(&toml("fallback = \"cpu\""), &Overrides::default()).unwrap();
    let daemon = Daemon::start(config).expect("the CPU is allowed");
    assert!(daemon.status().await.gpus.is_empty(), "no GPU: the CPU backend");
    assert!(daemon.shutdown().is_none(), "nothing loaded: no engine to stop");
}
