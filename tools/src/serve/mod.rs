//! `arenaprove serve`: a long-lived proving daemon that speaks Curio's cuzk gRPC API
//! (`cuzk.v1.ProvingEngine`, `proto/cuzk/v1/proving.proto`), proving every kind Curio sends
//! on one arena [`Engine`](arenaprove::engine::pipeline::Engine) over every GPU configured.
//!
//! * [`config`]: the TOML file and the flags over it;
//! * [`request`]: a request checked and parsed, each problem a typed gRPC status;
//! * [`daemon`]: the calls the service makes (submit, await, cancel, preload, evict, drain);
//! * [`jobs`]: the job table and how each job ended ([`jobs::JobError`], typed);
//! * [`queue`]: the bounded priority queue and the jobs running;
//! * [`lifecycle`]: loading circuits, opening the GPUs, building and stopping the engine;
//! * [`worker`]: the dispatcher and the job threads, each job under a guard;
//! * [`status`]: GetStatus and GetMetrics;
//! * [`state`]: what they share, under one lock;
//! * [`service`]: the gRPC methods over the daemon;
//! * [`metrics`]: Prometheus text.
//!
//! Invariants: a request is checked (kind, sizes, parameters, the C1's vanilla proofs)
//! before it is queued, so a queued job fails only when proving itself fails; every job
//! proves through the one C2 driver, `C2Engine` (precompiled synthesis by default), and
//! every proof handed back was verified by it against the public inputs filecoin-proofs
//! derives; a failed, cancelled or panicking job hands its slabs back like any other and
//! the daemon goes on with the next; the daemon never panics on a request (bad input is a
//! status); a named GPU that does not open stops the daemon at start, unless
//! `gpus.fallback = "cpu"`; the process environment is never changed.
// tonic::Status (the error of every gRPC call, ~176 bytes) is returned by value as tonic
// itself does; boxing it would only add an allocation per refusal.
#![allow(clippy::result_large_err)]

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::watch;

pub mod circuits;
pub mod config;
pub mod daemon;
pub mod jobs;
mod lifecycle;
pub mod metrics;
mod queue;
pub mod request;
pub mod service;
mod state;
mod status;
mod worker;

pub use config::{Listen, Overrides, ServeConfig};
pub use daemon::Daemon;
#[doc(hidden)]
pub use state::TestHooks;

/// The code generated from `proto/cuzk/v1/proving.proto`.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("cuzk.v1");
}

const CONFIG_HELP: &str = "\
Configuration file (TOML; every key optional, flags override it):

  [daemon]
  listen = [\"0.0.0.0:9820\"]          # TCP ip:port and/or \"unix:///path/to.sock\"
  message_bytes_max = 268435456      # largest message (a 32 GiB C1 is ~50 MB); >= 64 MiB

  [srs]
  param_cache = \"/var/tmp/filecoin-proof-parameters\"   # default: $FIL_PROOFS_PARAMETER_CACHE
  preload = [\"porep-2k\"]             # circuits loaded at start (porep-2k, porep-8m,
                                     # porep-512m); empty: every size in the cache
  checked = false                    # validate every parameter point while loading (on a
                                     # GPU daemon the subgroup tests run on its first GPU)

  [engine]
  slots = 10                         # partitions in flight; default: synth_workers + 2,
                                     # as many as the memory plan fits (chosen per engine)
  synth_workers = 8                  # synthesis threads, 1..=slots; default: half the cores
  memory_limit = \"16GiB\"             # host memory: the engine's regions + resident params;
                                     # default: 90% of MemAvailable at start
  synthesis = \"precompiled\"          # or \"generic\" (the bellpepper trait)
  backend = \"gpu\"                    # the GPUs of gpus.devices; \"cpu\": the CPU backend

  [queue]
  pending_max = 64                   # jobs queued or running; RESOURCE_EXHAUSTED beyond
  finished_keep = 1024               # finished jobs remembered for AwaitProof

  [gpus]
  devices = [0, 1]                   # GPUs to prove on (binary built with --features cuda);
                                     # []: every visible GPU (none: the CPU, logged)
  fallback = \"none\"                  # a named GPU that does not open is a startup error
                                     # naming it; \"cpu\": prove on the CPU instead

Signals: SIGTERM or SIGINT drains (running and queued jobs finish, new ones are refused
with UNAVAILABLE, then exit 0); a second signal cancels what is left.";

/// `arenaprove serve`.
#[derive(clap::Args, Debug)]
#[command(after_long_help = CONFIG_HELP)]
pub struct Args {
    /// TOML configuration file (keys: see `arenaprove serve --help`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to serve on, repeatable: ip:port or unix:///path (overrides daemon.listen).
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<String>,
    /// Groth16 parameter cache (overrides srs.param_cache).
    #[arg(long, value_name = "DIR")]
    pub param_cache: Option<PathBuf>,
    /// Circuit to load at start, repeatable: porep-2k, porep-8m, porep-512m (overrides srs.preload).
    #[arg(long, value_name = "CIRCUIT")]
    pub preload: Vec<String>,
    /// Partitions in flight (overrides engine.slots).
    #[arg(long)]
    pub slots: Option<usize>,
    /// Synthesis threads (overrides engine.synth_workers).
    #[arg(long)]
    pub synth_workers: Option<usize>,
    /// What the engine may reserve, e.g. 16GiB (overrides engine.memory_limit).
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<String>,
    /// Jobs queued or running at most (overrides queue.pending_max).
    #[arg(long)]
    pub pending_max: Option<usize>,
    /// Prove on these GPUs, e.g. `--gpu 0,1` (overrides gpus.devices).
    #[arg(long, value_name = "ORDINALS", value_delimiter = ',')]
    pub gpu: Vec<u32>,
    /// `gpu` (the GPUs of gpus.devices, every visible one by default) or `cpu` (overrides
    /// engine.backend).
    #[arg(long, value_name = "gpu|cpu")]
    pub backend: Option<String>,
    /// Validate the configuration, load the parameters, print the memory plan, and exit.
    #[arg(long)]
    pub check_config: bool,
}

impl Args {
    fn overrides(&self) -> Overrides {
        Overrides {
            listen: self.listen.clone(),
            param_cache: self.param_cache.clone(),
            preload: self.preload.clone(),
            slots: self.slots,
            synth_workers: self.synth_workers,
            memory_limit: self.memory_limit.clone(),
            pending_max: self.pending_max,
            gpus: self.gpu.clone(),
            backend: self.backend.clone(),
        }
    }
}

/// A daemon serving on its listeners.
pub struct Running {
    pub daemon: Daemon,
    /// The TCP addresses bound (port 0 resolved).
    pub tcp: Vec<SocketAddr>,
    unix: Vec<PathBuf>,
    stop: watch::Sender<bool>,
    servers: Vec<tokio::task::JoinHandle<Result<(), tonic::transport::Error>>>,
}

/// Starts the daemon (parameters loaded, engine reserved) and serves on every listener.
pub async fn start(config: ServeConfig) -> Result<Running> {
    start_with(config, TestHooks::default()).await
}

/// [`start`] with hooks (tests).
#[doc(hidden)]
pub async fn start_with(config: ServeConfig, hooks: TestHooks) -> Result<Running> {
    let listen = config.listen.clone();
    let message_bytes_max = config.message_bytes_max;
    let daemon = tokio::task::spawn_blocking(move || Daemon::start_with(config, hooks))
        .await
        .context("starting the daemon")??;
    let svc = pb::proving_engine_server::ProvingEngineServer::new(service::Service::new(daemon.clone()))
        .max_decoding_message_size(message_bytes_max)
        .max_encoding_message_size(message_bytes_max);
    let (stop, _) = watch::channel(false);
    let mut running = Running { daemon, tcp: Vec::new(), unix: Vec::new(), stop, servers: Vec::new() };
    for l in &listen {
        let mut rx = running.stop.subscribe();
        let signal = async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let router = tonic::transport::Server::builder().add_service(svc.clone());
        let server = match l {
            Listen::Tcp(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("daemon.listen: binding {addr}"))?;
                running.tcp.push(listener.local_addr()?);
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, signal))
            }
            Listen::Unix(path) => {
                remove_stale_socket(path)?;
                let listener = tokio::net::UnixListener::bind(path)
                    .with_context(|| format!("daemon.listen: binding unix://{}", path.display()))?;
                running.unix.push(path.clone());
                let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, signal))
            }
        };
        tracing::info!(%l, "serving cuzk.v1.ProvingEngine");
        running.servers.push(server);
    }
    Ok(running)
}

/// A socket file left by an earlier run is removed; any other file there is an error.
fn remove_stale_socket(path: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("removing the stale socket {}", path.display())),
        Ok(_) => anyhow::bail!("daemon.listen: {} exists and is not a socket", path.display()),
        Err(_) => Ok(()),
    }
}

impl Running {
    /// Drains: new jobs are refused, queued and running ones finish (or, once `second`
    /// resolves, are cancelled), the listeners close after answering the calls in flight,
    /// and the engine is shut down. Its report says whether every slab came back.
    pub async fn drain(
        self,
        second: impl Future<Output = ()>,
    ) -> Result<Option<arenaprove::engine::pipeline::ShutdownReport>> {
        self.daemon.begin_drain();
        let daemon = self.daemon.clone();
        let idle = async {
            while daemon.pending() > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            _ = idle => {}
            _ = second => {
                let n = self.daemon.cancel_all();
                tracing::warn!(cancelled = n, "second signal: jobs left were cancelled");
            }
        }
        // Awaiting clients get their answers before the listeners close: the server's
        // graceful shutdown lets calls in flight finish.
        let _ = self.stop.send(true);
        for s in self.servers {
            match tokio::time::timeout(Duration::from_secs(30), s).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => tracing::warn!("server ended with: {e}"),
                Ok(Err(e)) => tracing::warn!("server task: {e}"),
                Err(_) => tracing::warn!("a listener did not close within 30 s"),
            }
        }
        for p in &self.unix {
            let _ = std::fs::remove_file(p);
        }
        let daemon = self.daemon.clone();
        Ok(tokio::task::spawn_blocking(move || daemon.shutdown()).await?)
    }
}

/// `arenaprove serve`: serve until SIGTERM or SIGINT, then drain and exit 0.
pub fn run(args: Args) -> Result<()> {
    let config = ServeConfig::load(args.config.as_deref(), &args.overrides())?;
    if args.check_config {
        return check_config(config);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("arenaprove-serve-rpc")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let running = start(config).await?;
        for a in &running.tcp {
            println!("arenaprove serve: listening on {a}");
        }
        for p in &running.unix {
            println!("arenaprove serve: listening on unix://{}", p.display());
        }
        print!("{}", running.daemon.memory_plan_text());
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        println!(
            "arenaprove serve: draining ({} jobs queued or running); signal again to cancel them",
            running.daemon.pending()
        );
        let second = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        let report = running.drain(second).await?;
        if let Some(r) = report {
            println!(
                "arenaprove serve: stopped; {} partitions proven, {} failed, {} slabs outstanding",
                r.partitions_ok, r.partitions_failed, r.slabs_outstanding
            );
            anyhow::ensure!(r.slabs_outstanding == 0, "{} slabs were not handed back", r.slabs_outstanding);
        }
        Ok(())
    })
}

/// `--check-config`: the resolved configuration, the parameters loaded and checked, the
/// engine's memory plan reserved and printed; nothing served.
fn check_config(config: ServeConfig) -> Result<()> {
    println!("listen: {}", config.listen.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "));
    println!("param cache: {}", config.param_cache.display());
    let auto = |v: Option<usize>| v.map_or("auto".to_string(), |n| n.to_string());
    println!(
        "slots {}, synth workers {}, memory limit {} MiB ({}), pending max {}, message max {} MiB",
        auto(config.slots),
        auto(config.synth_workers),
        config.memory_limit_bytes >> 20,
        config.memory_limit_source,
        config.pending_max,
        config.message_bytes_max >> 20
    );
    let preload = lifecycle::preload_list(&config)?;
    println!("circuits: {}", preload.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "));
    if preload.is_empty() {
        anyhow::bail!(
            "no circuit to load: the cache {} has no PoRep parameters",
            config.param_cache.display()
        );
    }
    let daemon = Daemon::start(config)?;
    print!("{}", daemon.memory_plan_text());
    let report = daemon.shutdown();
    if let Some(r) = report {
        anyhow::ensure!(r.slabs_outstanding == 0, "{} slabs were not handed back", r.slabs_outstanding);
    }
    println!("configuration ok");
    Ok(())
}
