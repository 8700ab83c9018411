//! `kill -9` mid-job: the daemon (the `arenaprove serve` binary, a child process) is
//! killed while it proves a real 2 KiB sector, restarted with the same configuration, and
//! Curio's retry (the same request id and payload) proves: the proof comes back and
//! filecoin-proofs' `verify_seal` accepts it. The stale unix socket the killed process left
//! behind does not stop the restart.
//!
//! A job does not survive its process (nothing is persisted): the retry is a new job of the
//! new process, which is what Curio's client does when its call fails.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arenaprove::filecoin::{verify_seal, Verdict};
use arenaprove_tools::serve::pb::await_proof_response::Status as JobStatus;
use arenaprove_tools::serve::pb::proving_engine_client::ProvingEngineClient;
use arenaprove_tools::serve::pb::*;
use common::{params_2kib, porep, sealed, PARAM_CACHE};
use tonic::transport::Channel;

/// Starts `arenaprove serve --config <config>` with its output in `log`.
fn spawn_daemon(config: &std::path::Path, log: &std::path::Path) -> Child {
    let log = std::fs::File::create(log).expect("log file");
    Command::new(env!("CARGO_BIN_EXE_arenaprove"))
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("arenaprove serve starts")
}

/// A client over the daemon's unix socket, once it answers (parameters loaded).
async fn connect(
    sock: &std::path::Path,
    daemon: &mut Child,
    log: &std::path::Path,
) -> ProvingEngineClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(status) = daemon.try_wait().expect("wait") {
            panic!("the daemon exited ({status}): {}", std::fs::read_to_string(log).unwrap_or_default());
        }
        if let Ok(channel) = common::unix_channel(sock.to_path_buf()).await {
            let mut c = ProvingEngineClient::new(channel);
            if c.get_status(GetStatusRequest {}).await.is_ok() {
                return c;
            }
        }
        assert!(Instant::now() < deadline, "the daemon did not answer within 300 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_job_restarts_and_the_retry_proves() {
    params_2kib();
    let sector = sealed(61);
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("serve.sock");
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = [\"unix://{}\"]\n[srs]\nparam_cache = \"{PARAM_CACHE}\"\npreload = [\"porep-2k\"]\n\
             [engine]\nslots = 1\nsynth_workers = 1\n",
            sock.display()
        ),
    )
    .unwrap();
    let request = porep("porep-1000-61", &sector, Priority::Normal);

    // First life: the job starts, then the process is killed with SIGKILL.
    let log1 = dir.path().join("first.log");
    let mut first = spawn_daemon(&config, &log1);
    let mut c = connect(&sock, &mut first, &log1).await;
    let job = c.submit_proof(request.clone()).await.expect("submitted").into_inner();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
        if status.queues.iter().any(|q| q.in_progress > 0) {
            break;
        }
        assert!(Instant::now() < deadline, "the job never started: {status:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Mid-job: synthesis or proving of its one partition.
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.kill().expect("SIGKILL");
    let killed = first.wait().expect("reaped");
    assert!(!killed.success(), "killed, not finished: {killed}");
    assert!(sock.exists(), "the killed process left its socket behind");
    drop(c);

    // Second life: same configuration; the stale socket is replaced; Curio retries.
    let log2 = dir.path().join("second.log");
    let mut second = spawn_daemon(&config, &log2);
    let mut c = connect(&sock, &mut second, &log2).await;
    let result =
        c.prove(ProveRequest { submit: Some(request) }).await.expect("prove").into_inner().result.unwrap();
    assert_eq!(result.status(), JobStatus::Completed, "{}", result.error_message);
    assert_eq!(result.proof.len(), 192);
    assert_eq!(verify_seal(&sector.info, &result.proof).unwrap(), Verdict::Accepted);
    println!(
        "killed job {} mid-run; after the restart the retry proved in {} ms (job {})",
        job.job_id, result.total_ms, result.job_id
    );
    second.kill().ok();
    second.wait().ok();
}
