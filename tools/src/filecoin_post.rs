//! `arenaprove filecoin post-params`, `post-bench`, `snap-params` and `snap-bench`: proofs
//! of spacetime and SnapDeals on real sectors.
//!
//! * `post-params --proof NAME`: generate insecure development parameters for a PoSt
//!   circuit into the cache when absent (what the daemon's `winning-*` / `wpost-*`
//!   circuits load);
//! * `post-bench --kind winning|window --sector-size S`: seal the sectors a WinningPoSt
//!   (one) or a WindowPoSt partition (the proof's sector count, 2 up to 512 MiB) needs,
//!   keep their replicas, draw the vanilla proofs with filecoin-proofs' PoSt worker
//!   functions (as Curio's tasks do), then prove them with ours and with filecoin-proofs'
//!   `generate_winning_post_with_vanilla` / `generate_single_window_post_with_vanilla`
//!   (the baseline, in this process, or with `--peer-exe` another build of it as a child
//!   process, e.g. `filecoin-baseline` with cuda-supraseal), alternating, each proof
//!   checked by its verifier;
//! * `snap-params`, `snap-bench --sector-size S`: the same for a SnapDeals update proof: a
//!   sector sealed, kept, updated with new data (`encode_into`), its partition proofs
//!   (`generate_partition_proofs`), ours against
//!   `generate_empty_sector_update_proof_with_vanilla`, both checked by
//!   `verify_empty_sector_update_proof`.
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove::engine::pipeline::{AllocMode, EngineConfig, ShutdownMode};
use arenaprove::filecoin::post::{self, PostCircuit, PostKind, RegisteredPoStProof};
use arenaprove::filecoin::snap::{self, RegisteredUpdateProof};
use arenaprove::filecoin::{self as fc, SectorSize};
use clap::Args as ClapArgs;

use crate::common::{self, BackendChoice, MemoryLimit};

#[derive(ClapArgs)]
pub struct PostParamsArgs {
    /// Registered PoSt proof (filecoin-proofs-api name, e.g. StackedDrgWinning2KiBV1, or
    /// go-state-types number 0..=14).
    #[arg(long)]
    proof: String,
    /// Seed of the toxic waste (development parameters are insecure by construction).
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
}

#[derive(ClapArgs)]
pub struct PostBenchArgs {
    /// winning or window.
    #[arg(long, default_value = "window")]
    kind: String,
    /// Sector size: 2KiB, 8MiB or 512MiB (sealed here).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    #[command(flatten)]
    bench: BenchRun,
}

/// What `post-bench` and `snap-bench` share.
#[derive(ClapArgs)]
struct BenchRun {
    /// Runs of each side (median reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed for the sectors sealed and their randomness or new data.
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
    /// Prover backend: cpu, or gpu.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendChoice,
    /// Partitions in flight (default: as `arenaprove serve` sizes itself: half the cores
    /// synthesizing, two slots more per device).
    #[arg(long)]
    slots: Option<usize>,
    /// Synthesis threads (default: half the cores, at most the slots).
    #[arg(long)]
    synth_workers: Option<usize>,
    /// Synthesize through the bellpepper trait instead of the precompiled constraints.
    #[arg(long)]
    no_precompiled: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// The baseline as a child process: another build of filecoin-proofs, e.g. with
    /// cuda-supraseal (`scripts/peer-gpu.sh` builds `filecoin-baseline`), one process per run
    /// (its own untimed warm-up, then one timed proof), alternating with ours. Default:
    /// filecoin-proofs' `generate_*_with_vanilla` of this build, in this process.
    #[arg(long, value_name = "EXE")]
    peer_exe: Option<std::path::PathBuf>,
}

/// A baseline's prover: (seconds it measured, proof) per call.
type Baseline<'a> = Box<dyn FnMut() -> Result<(f64, Vec<u8>)> + 'a>;

impl BenchRun {
    /// The baseline's prover: the child process of `--peer-exe` on the request file `write`
    /// writes, or `in_process` (timed here); (seconds, proof) per call.
    fn baseline<'a>(
        &self,
        cache: &Path,
        write: impl FnOnce(&Path) -> std::result::Result<(), fc::FilecoinError>,
        in_process: impl Fn() -> std::result::Result<Vec<u8>, fc::FilecoinError> + 'a,
    ) -> Result<Baseline<'a>> {
        Ok(match &self.peer_exe {
            Some(exe) => {
                let peer = crate::filecoin::Peer::for_request(exe, write, cache)?;
                Box::new(move || peer.run())
            }
            None => Box::new(move || {
                let started = Instant::now();
                let proof = in_process()?;
                Ok((started.elapsed().as_secs_f64(), proof))
            }),
        })
    }

    /// Our engine's configuration: the slots and synthesis workers given, else those the
    /// daemon would choose on this host (`common::choose_sizes`; a plan over the memory
    /// limit is the engine's error to name). Says which on stderr.
    fn engine_config(&self, limit: &common::ResolvedLimit) -> Result<EngineConfig> {
        if let Some(s) = self.slots {
            common::check_slots(s)?;
        }
        if self.synth_workers == Some(0) {
            bail!("--synth-workers must be at least 1");
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let sizes = common::choose_sizes(self.slots, self.synth_workers, cores, 1, |_, _| true);
        eprintln!("engine: {}", sizes.why);
        let backend = common::backend_factory(self.backend);
        let mut config = common::engine_config(sizes.slots, AllocMode::Slab, limit, backend);
        config.synth_workers = sizes.synth_workers;
        Ok(config)
    }

    /// What the report names as the baseline.
    fn baseline_name(&self, function: &str) -> String {
        match &self.peer_exe {
            Some(exe) => format!("{function}, child process {}", exe.display()),
            None => format!("{function}, this build, in process"),
        }
    }
}

/// A directory under the system's temporary one, removed with everything in it on drop.
struct WorkDir(std::path::PathBuf);

impl WorkDir {
    fn new() -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("arenaprove-post-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(WorkDir(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ensure(proof: RegisteredPoStProof, cache: &Path, seed: u64) -> Result<()> {
    let mut rng = fc::rng_from_seed(seed ^ 0x706f_7374);
    ensure_files(&proof.param_files(cache)?, |files| post::ensure_post_params(proof, files, &mut rng))
}

/// Development parameters for `files` when absent (`generate` writes them), said on stderr.
fn ensure_files(
    files: &fc::params::ParamFiles,
    generate: impl FnOnce(&fc::params::ParamFiles) -> Result<fc::params::ParamsStatus, fc::FilecoinError>,
) -> Result<()> {
    if files.params.is_file() {
        eprintln!("params: {} (present)", files.params.display());
        return Ok(());
    }
    eprintln!(
        "params: generating INSECURE development parameters for {} (random toxic waste) into {}",
        files.circuit,
        files.cache_dir.display()
    );
    if let fc::params::ParamsStatus::Generated { params_bytes, seconds, .. } = generate(files)? {
        eprintln!("params: wrote {} ({params_bytes} bytes) in {seconds:.1} s", files.params.display());
    }
    Ok(())
}

pub fn post_params(a: PostParamsArgs, cache: &Path) -> Result<()> {
    let proof: RegisteredPoStProof = a.proof.parse()?;
    ensure(proof, cache, a.rng_seed)?;
    println!("{}", proof.param_files(cache)?.params.display());
    Ok(())
}

pub fn post_bench(a: PostBenchArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    if a.bench.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let kind = match a.kind.as_str() {
        "winning" => PostKind::Winning,
        "window" => PostKind::Window,
        other => bail!("--kind: `{other}` (winning or window)"),
    };
    let size: SectorSize = a.sector_size.parse()?;
    let proof = RegisteredPoStProof::current(kind, size);
    let config = proof.post_config()?;
    let sectors = match kind {
        PostKind::Winning => 1,
        PostKind::Window => config.sector_count,
    };
    if sectors > 16 {
        bail!("a {proof} partition takes {sectors} sectors; post-bench seals test sectors up to 512 MiB");
    }
    ensure(proof, cache, a.bench.rng_seed)?;

    // The sectors, sealed and kept, and the vanilla proofs a PoSt worker would send.
    let work = WorkDir::new()?;
    let mut rng = fc::rng_from_seed(a.bench.rng_seed);
    let prover_id = fc::SealRequest::random(size, &mut rng).prover_id;
    let started = Instant::now();
    let mut replicas = Vec::new();
    for i in 0..sectors {
        let mut request = fc::SealRequest::random(size, &mut rng);
        request.prover_id = prover_id;
        let (_, replica) =
            fc::seal::seal_sector_keep(&request, &mut rng, &work.path().join(format!("s{i}")))?;
        replicas.push(replica);
    }
    eprintln!("sealed {sectors} {size} sector(s) in {:.1} s", started.elapsed().as_secs_f64());
    let mut randomness = [0u8; 32];
    arenaprove::engine::deps::rand_core::RngCore::fill_bytes(&mut rng, &mut randomness);
    randomness[31] &= 0x3f;
    let request = post::vanilla_request(proof, randomness, prover_id, 0, &replicas)?;

    // Ours: the PoSt circuit only.
    let limit = limit.resolve()?;
    let engine_config = a.bench.engine_config(&limit)?;
    let started = Instant::now();
    let options = fc::LoadOptions { precompiled: !a.bench.no_precompiled, ..fc::LoadOptions::default() };
    let circuit = PostCircuit::load(proof, cache, options)?;
    let synthesis = circuit.synthesis().describe();
    let engine = fc::C2Engine::with_posts(engine_config, vec![], vec![circuit])?;
    let load_s = started.elapsed().as_secs_f64();
    eprintln!("params load {load_s:.2} s; synthesis: {synthesis}");

    let verify = |bytes: &[u8]| Ok(post::verify_post(&request, bytes)?);
    let theirs = a.bench.baseline(
        cache,
        |path| fc::request_file::write_post(&request, path),
        || post::reference_post(&request),
    )?;
    let (ours, theirs, stages) =
        alternate(a.bench.runs, || Ok(engine.submit_post(&request)?.wait()?), theirs, verify)?;
    stop(engine)?;
    let baseline = a.bench.baseline_name(match kind {
        PostKind::Winning => "generate_winning_post_with_vanilla",
        PostKind::Window => "generate_single_window_post_with_vanilla",
    });
    report_bench(
        &format!("{kind} {size} ({sectors} sector(s))"),
        &baseline,
        a.bench.json,
        a.bench.backend,
        a.bench.runs,
        (&ours, &theirs, &stages),
        load_s,
        serde_json::json!({ "proof": proof.to_string(), "sector_size": size.name(), "sectors": sectors }),
    );
    Ok(())
}

#[derive(ClapArgs)]
pub struct SnapParamsArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Seed of the toxic waste.
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
}

#[derive(ClapArgs)]
pub struct SnapBenchArgs {
    /// Sector size: 2KiB, 8MiB or 512MiB (sealed and updated here).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    #[command(flatten)]
    bench: BenchRun,
}

fn ensure_snap(proof: RegisteredUpdateProof, cache: &Path, seed: u64) -> Result<()> {
    let mut rng = fc::rng_from_seed(seed ^ 0x736e_6170);
    ensure_files(&proof.param_files(cache)?, |files| snap::ensure_update_params(proof, files, &mut rng))
}

pub fn snap_params(a: SnapParamsArgs, cache: &Path) -> Result<()> {
    let proof = RegisteredUpdateProof::for_size(a.sector_size.parse()?);
    ensure_snap(proof, cache, a.rng_seed)?;
    println!("{}", proof.param_files(cache)?.params.display());
    Ok(())
}

pub fn snap_bench(a: SnapBenchArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    if a.bench.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let size: SectorSize = a.sector_size.parse()?;
    let proof = RegisteredUpdateProof::for_size(size);
    ensure_snap(proof, cache, a.bench.rng_seed)?;
    let work = WorkDir::new()?;
    let mut rng = fc::rng_from_seed(a.bench.rng_seed);
    let started = Instant::now();
    let sealed = fc::SealRequest::random(size, &mut rng);
    let dir = work.path().join("sector");
    let (_, replica) = fc::seal::seal_sector_keep(&sealed, &mut rng, &dir)?;
    let request = snap::encode_update(&replica, &dir, &mut rng)?;
    eprintln!("sealed and updated a {size} sector in {:.1} s", started.elapsed().as_secs_f64());

    let limit = limit.resolve()?;
    let engine_config = a.bench.engine_config(&limit)?;
    let started = Instant::now();
    let options = fc::LoadOptions { precompiled: !a.bench.no_precompiled, ..fc::LoadOptions::default() };
    let circuit = snap::SnapCircuit::load(proof, cache, options)?;
    let synthesis = circuit.synthesis().describe();
    let engine = fc::C2Engine::with_circuits(
        engine_config,
        fc::Circuits { snap: vec![circuit], ..Default::default() },
    )?;
    let load_s = started.elapsed().as_secs_f64();
    eprintln!("params load {load_s:.2} s; synthesis: {synthesis}");
    let verify = |bytes: &[u8]| Ok(snap::verify_snap(&request, bytes)?);
    let theirs = a.bench.baseline(
        cache,
        |path| fc::request_file::write_snap(&request, path),
        || snap::reference_snap(&request),
    )?;
    let (ours, theirs, stages) =
        alternate(a.bench.runs, || Ok(engine.submit_snap(&request)?.wait()?), theirs, verify)?;
    stop(engine)?;
    report_bench(
        &format!("SnapDeals {size}"),
        &a.bench.baseline_name("generate_empty_sector_update_proof_with_vanilla"),
        a.bench.json,
        a.bench.backend,
        a.bench.runs,
        (&ours, &theirs, &stages),
        load_s,
        serde_json::json!({ "proof": proof.to_string(), "sector_size": size.name() }),
    );
    Ok(())
}

/// One untimed run per side (filecoin-proofs maps and caches its parameters on first use),
/// then `runs` timed runs of ours and theirs, alternating, every proof checked by `verify`
/// (the run fails on any other verdict than accepted): the seconds of each side and our
/// stage splits.
type Runs = (Vec<f64>, Vec<f64>, Vec<fc::C2Stages>);
fn alternate(
    runs: usize,
    mut ours: impl FnMut() -> Result<fc::C2Output>,
    mut theirs: impl FnMut() -> Result<(f64, Vec<u8>)>,
    verify: impl Fn(&[u8]) -> Result<fc::Verdict>,
) -> Result<Runs> {
    let accepted = |bytes: &[u8], who: &str, run: usize| -> Result<()> {
        match verify(bytes)? {
            fc::Verdict::Accepted => Ok(()),
            v => bail!("run {run}: {who} proof not accepted by filecoin-proofs' verifier: {v:?}"),
        }
    };
    accepted(ours()?.proof(), "our", 0)?;
    accepted(&theirs()?.1, "filecoin-proofs'", 0)?;
    let (mut ours_s, mut theirs_s, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let started = Instant::now();
        let out = ours()?;
        ours_s.push(started.elapsed().as_secs_f64());
        accepted(out.proof(), "our", run)?;
        eprintln!("ours   run {run}: {:.3} s ({})", ours_s[run], out.stages());
        stages.push(out.stages().clone());
        let (seconds, bytes) = theirs()?;
        theirs_s.push(seconds);
        accepted(&bytes, "filecoin-proofs'", run)?;
        eprintln!("theirs run {run}: {:.3} s", theirs_s[run]);
    }
    Ok((ours_s, theirs_s, stages))
}

/// Stops the engine; an error unless every slab came back.
fn stop(engine: fc::C2Engine) -> Result<()> {
    let report = engine.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        bail!("{} slabs still leased at shutdown", report.slabs_outstanding);
    }
    Ok(())
}

/// The bench's last lines: medians, ratio, the stage split of the median run (or one JSON
/// object with `extra`'s fields).
#[allow(clippy::too_many_arguments)]
fn report_bench(
    what: &str,
    baseline: &str,
    json: bool,
    backend: BackendChoice,
    runs: usize,
    (ours, theirs, stages): (&[f64], &[f64], &[fc::C2Stages]),
    load_s: f64,
    extra: serde_json::Value,
) {
    let (ours_s, theirs_s) =
        (arenaprove::benchkit::upper_median(ours), arenaprove::benchkit::upper_median(theirs));
    let speedup = theirs_s / ours_s;
    let mid = &stages[stages.len() / 2];
    if json {
        let mut obj = serde_json::json!({
            "what": what,
            "backend": format!("{backend:?}").to_lowercase(),
            "runs": runs,
            "ours_s_median": ours_s,
            "ours_params_load_s": load_s,
            "baseline": baseline,
            "baseline_s_median": theirs_s,
            "speedup": speedup,
            "stages": mid.to_json(),
        });
        if let (Some(o), Some(e)) = (obj.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        println!("{obj}");
    } else {
        println!(
            "filecoin {what}: ours {ours_s:.3} s, baseline {theirs_s:.3} s, speedup {speedup:.2}x (median of \
             {runs} runs; both verified; params load {load_s:.2} s not included; baseline: {baseline})"
        );
        println!("ours stages: {mid}");
    }
}
