//! `arenaprove filecoin ...`: real Filecoin sectors (feature `filecoin`).
//!
//! * `seal`: seal a test sector with filecoin-proofs up to commit phase 1, write
//!   `c1.json` (filecoin-proofs-api format) and `sector.json`, and generate development
//!   parameters into the cache when absent;
//! * `c2`: prove a C1 output with our engine, write the concatenated partition proofs;
//! * `verify`: filecoin-proofs' `verify_seal` on a proof (exit 0 only when accepted);
//! * `bench`: our C2 against filecoin-proofs' `seal_commit_phase2`, same C1, same params
//!   (in this process, or `--peer-exe`: another build of it, e.g. with cuda-supraseal, as a
//!   child process);
//! * `witness`: one partition's serial witness against the parallel one;
//! * `pce`: map, or record and save, the precompiled constraints of a sector size's circuit;
//! * `post-params`, `post-bench`, `snap-params`, `snap-bench`: WinningPoSt, WindowPoSt and
//!   SnapDeals ([`crate::filecoin_post`]).
//!
//! `c2`, `bench` and `soak` prove through the one C2 driver, `C2Engine` (`c2` and `bench`
//! on one slot), on the backend `--backend` picks, and synthesize through the precompiled
//! constraints (recorded on first use, beside the parameters); `--no-precompiled` goes
//! through the bellpepper trait.
//!
//! The parameter cache (`--param-cache`, else filecoin-proofs' own) is handed to every step
//! of ours explicitly. filecoin-proofs' own `verify_seal` and `seal_commit_phase2` read
//! parameters only from `FIL_PROOFS_PARAMETER_CACHE`, once per process, so for them
//! `--param-cache` also sets that variable: first thing, while the process runs one thread.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove::engine::pipeline::{AllocMode, ShutdownMode};
use arenaprove::filecoin::params::ParamFiles;
use arenaprove::filecoin::{self as fc, C1Output, RegisteredSealProof, SectorInfo, SectorSize};
use clap::{Args as ClapArgs, Subcommand};

use crate::common::{self, BackendChoice, MemoryLimit, ParamsEstimate, ResolvedLimit};

#[derive(ClapArgs)]
pub struct Args {
    /// Groth16 parameter cache directory (also sets FIL_PROOFS_PARAMETER_CACHE for
    /// filecoin-proofs' own verify_seal; default: that variable, else
    /// /var/tmp/filecoin-proof-parameters/).
    #[arg(long, global = true, value_name = "DIR")]
    param_cache: Option<PathBuf>,
    /// Memory a command may use (engine slabs + params): bytes (or with KiB/MiB/GiB), or
    /// auto (MemAvailable). A plan above it is refused before anything is generated.
    #[arg(long, global = true, default_value = "auto")]
    memory_limit: MemoryLimit,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Seal a test sector up to commit phase 1; write DIR/c1.json and DIR/sector.json.
    Seal(SealArgs),
    /// Commit phase 2 with our engine: C1 output in, concatenated partition proofs out.
    C2(C2Args),
    /// Check a seal proof with filecoin-proofs' verify_seal (exit 0 only when accepted).
    Verify(VerifyArgs),
    /// Our C2 against filecoin-proofs' seal_commit_phase2 on the same C1 and params.
    Bench(BenchArgs),
    /// Seal and prove N distinct sectors back to back on the long-lived engine; every
    /// proof checked with verify_seal; the `soak` report.
    Soak(SoakArgs),
    /// Map the precompiled constraints of a sector size's C2 circuit from beside its
    /// parameters, or record and save them there; print which, how long and how large.
    Pce(PceArgs),
    /// Generate INSECURE development parameters for a sector size's PoRep C2 circuit into the
    /// cache when absent (any size, 32 GiB and 64 GiB included): the circuit is recorded
    /// first, then the parameters are written from the recording section by section, so the
    /// peak is the QAP, not the file (`plan --filecoin SIZE` prints it).
    Params(FcParamsArgs),
    /// Generate development parameters for a PoSt circuit (WinningPoSt, WindowPoSt) into
    /// the cache when absent.
    PostParams(crate::filecoin_post::PostParamsArgs),
    /// WinningPoSt or a WindowPoSt partition on freshly sealed sectors: ours against
    /// filecoin-proofs' generate_*_with_vanilla, same vanilla proofs, both verified.
    PostBench(crate::filecoin_post::PostBenchArgs),
    /// Generate development parameters for a sector size's SnapDeals circuit when absent.
    SnapParams(crate::filecoin_post::SnapParamsArgs),
    /// A SnapDeals update proof on a freshly sealed and updated sector: ours against
    /// filecoin-proofs' generate_empty_sector_update_proof_with_vanilla, both verified.
    SnapBench(crate::filecoin_post::SnapBenchArgs),
    /// Witness generation of one partition: the serial witness (baseline) against the
    /// parallel one (challenges in pieces, in parallel), alternating, on a freshly sealed sector (or a
    /// random C1 of the real shape); byte identity checked every run; the ratio printed.
    Witness(WitnessArgs),
}

#[derive(ClapArgs)]
struct WitnessArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB (sealed here), 32GiB or 64GiB (with --random).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Instead of sealing, a C1 of the real shape with random values (any size; timing
    /// and identity only: its proofs could not verify).
    #[arg(long)]
    random: bool,
    /// Runs of each side (median reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seed for the sector sealed.
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Also compute the products on GPU 0 (kernels/products.cu, stream and witness copied up
    /// each run), check them against the host's bit for bit and time them (binary built
    /// with `--features cuda`).
    #[arg(long)]
    device_products: bool,
}

#[derive(ClapArgs)]
struct FcParamsArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Seed for the toxic waste (default 1).
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
    /// Who makes the parameters' points (the fixed-base products): the CPU, or GPU 0 (the
    /// CPU, said on stderr, where there is none). The same file either way.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendChoice,
}

#[derive(ClapArgs)]
struct PceArgs {
    /// Sector size: 2KiB or 8MiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(ClapArgs)]
struct SoakArgs {
    /// Sectors to seal and prove.
    #[arg(long, default_value_t = 20)]
    sectors: usize,
    /// Partition slots of the engine (each a full working set).
    #[arg(long, default_value_t = 2)]
    slots: usize,
    /// TIMING ONLY, for sizes no one can seal here (32GiB, 64GiB): each sector is a random C1
    /// of the real shape (nothing sealed), and the parameters are shape-only points made in
    /// memory (no setup; no parameter file read). The proofs are made in full but cannot
    /// verify, so none is checked; the report says "timing only". Precompiled synthesis.
    #[arg(long)]
    timing_only: bool,
    #[command(flatten)]
    run: SealAndProveArgs,
}

/// What `bench` and `soak`, which seal sectors and prove them, share.
#[derive(ClapArgs)]
struct SealAndProveArgs {
    /// Sector size: 2KiB or 8MiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Seed for the sectors sealed (default 1).
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
    /// One final JSON object on stdout instead of the human report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    prover: ProverArgs,
}

/// How the commands that prove (`c2`, `bench`, `soak`) prove.
#[derive(ClapArgs)]
struct ProverArgs {
    /// Prover backend: cpu, or gpu (CUDA; falls back to cpu, saying so, without a GPU).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendChoice,
    /// Synthesize through the bellpepper trait instead of the precompiled constraints
    /// (which are recorded on first use and cached beside the parameters).
    #[arg(long)]
    no_precompiled: bool,
}

#[derive(ClapArgs)]
struct SealArgs {
    /// Sector size: 2KiB or 8MiB.
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Output directory (created if absent).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Seed for the sector's data, ids and randomness (default: from the clock; printed).
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Do not generate parameters when the cache lacks them.
    #[arg(long)]
    no_params: bool,
}

#[derive(ClapArgs)]
struct C2Args {
    /// Commit-phase-1 output (filecoin-proofs-api JSON; filecoin-proofs' plain JSON with
    /// --sector-size or --registered-proof).
    #[arg(long, value_name = "FILE")]
    c1: PathBuf,
    /// Where to write the proof (partition proofs concatenated, 192 bytes each).
    #[arg(long, value_name = "PROOF")]
    out: PathBuf,
    /// The C1 file is filecoin-proofs' plain format for this sector size (proof
    /// StackedDrg<size>V1_1).
    #[arg(long)]
    sector_size: Option<String>,
    /// The C1 file is filecoin-proofs' plain format for this registered proof.
    #[arg(long, conflicts_with = "sector_size")]
    registered_proof: Option<String>,
    /// Validate every parameter point while loading (slower; with `--backend gpu` the
    /// subgroup tests run on GPU 0).
    #[arg(long)]
    checked: bool,
    /// Draw the proving randomness (r, s) of every partition from this seed, so that two
    /// runs (the CPU and the GPU backend) give the same bytes. INSECURE: for comparisons
    /// only; a proof's zero knowledge rests on fresh, secret r and s.
    #[arg(long, value_name = "SEED")]
    insecure_randomness_seed: Option<u64>,
    #[command(flatten)]
    prover: ProverArgs,
}

#[derive(ClapArgs)]
struct VerifyArgs {
    /// Commit-phase-1 output the proof was made from (gives the registered proof).
    #[arg(long, value_name = "FILE")]
    c1: PathBuf,
    /// sector.json as `seal` writes it.
    #[arg(long, value_name = "SECTOR_JSON")]
    sector: PathBuf,
    /// The proof file.
    #[arg(long, value_name = "PROOF")]
    proof: PathBuf,
    /// The C1 file is filecoin-proofs' plain format (registered proof from sector.json).
    #[arg(long)]
    plain: bool,
}

#[derive(ClapArgs)]
struct BenchArgs {
    /// Runs of each side (median reported).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// The baseline as a child process: filecoin-proofs' seal_commit_phase2 from another
    /// build, e.g. with cuda-supraseal (`scripts/peer-gpu.sh` builds `filecoin-baseline`),
    /// one process per run (its own untimed warm-up, then one timed C2), alternating with
    /// ours. Default: seal_commit_phase2 of this build, in this process.
    #[arg(long, value_name = "EXE")]
    peer_exe: Option<PathBuf>,
    /// A sector sealed before (a directory `filecoin seal --out` wrote: c1.json,
    /// sector.json) instead of sealing one now: a 512 MiB seal takes minutes.
    #[arg(long, value_name = "DIR")]
    sealed: Option<PathBuf>,
    #[command(flatten)]
    run: SealAndProveArgs,
}

pub fn run(args: Args) -> Result<()> {
    let cache = param_cache(args.param_cache.as_deref())?;
    let limit = args.memory_limit;
    match args.cmd {
        Cmd::Seal(a) => seal(a, &cache, limit),
        Cmd::C2(a) => c2(a, &cache, limit),
        Cmd::Verify(a) => verify(a),
        Cmd::Bench(a) => bench(a, &cache, limit),
        Cmd::Soak(a) => soak(a, &cache, limit),
        Cmd::Pce(a) => pce(a, &cache),
        Cmd::Params(a) => {
            let size: SectorSize = a.sector_size.parse()?;
            let registered_proof = size.default_registered_proof();
            let files = files_in(&cache, registered_proof)?;
            guard("filecoin params", &files, registered_proof, None, 1, limit)?;
            ensure_params(registered_proof, &files, a.rng_seed, a.backend)
        }
        Cmd::Witness(a) => witness(a, &cache),
        Cmd::PostParams(a) => crate::filecoin_post::post_params(a, &cache),
        Cmd::PostBench(a) => crate::filecoin_post::post_bench(a, &cache, limit),
        Cmd::SnapParams(a) => crate::filecoin_post::snap_params(a, &cache),
        Cmd::SnapBench(a) => crate::filecoin_post::snap_bench(a, &cache, limit),
    }
}

const PARAM_CACHE_VAR: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// The parameter cache every step of ours is given: `--param-cache`, else the directory
/// filecoin-proofs reads. With `--param-cache`, filecoin-proofs' own steps (`verify_seal`,
/// `seal_commit_phase2`), which read only `FIL_PROOFS_PARAMETER_CACHE`, are pointed there
/// too, by setting it now: only while this process runs a single thread, since the
/// environment must not change once another thread may read it.
fn param_cache(flag: Option<&Path>) -> Result<PathBuf> {
    let Some(dir) = flag else { return Ok(fc::params::default_cache_dir()) };
    if std::env::var_os(PARAM_CACHE_VAR).as_deref() != Some(dir.as_os_str()) {
        let threads = threads_now();
        if threads != Some(1) {
            bail!(
                "--param-cache: this process already runs {} threads, so it cannot set {PARAM_CACHE_VAR} \
                 for filecoin-proofs; set {PARAM_CACHE_VAR}={} in the environment instead",
                threads.map_or("several".to_string(), |n| n.to_string()),
                dir.display()
            );
        }
        std::env::set_var(PARAM_CACHE_VAR, dir);
    }
    Ok(dir.to_path_buf())
}

/// Threads of this process (Linux `/proc/self/status`).
fn threads_now() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Threads:"))?.trim().parse().ok()
}

/// The files of `registered_proof`'s parameters in `cache`.
fn files_in(cache: &Path, registered_proof: RegisteredSealProof) -> Result<ParamFiles> {
    Ok(ParamFiles::in_dir(registered_proof, cache)?)
}

/// The C2 driver on `slots` partition slots and `backend` (`--backend`'s, opened by the
/// caller: the soak opens it before measuring its base RSS), with the parameters (and
/// precompiled constraints) of `files`; says on stderr how long loading took and which
/// synthesis runs.
fn start_engine(
    registered_proof: RegisteredSealProof,
    files: &ParamFiles,
    slots: usize,
    limit: &ResolvedLimit,
    prover: &ProverArgs,
    checked: bool,
    backend: Arc<dyn arenaprove::engine::BackendFactory>,
) -> Result<fc::C2Engine> {
    // A checked load on the GPU backend runs its subgroup tests on GPU 0.
    let gpu = (checked && backend.name() == "cuda").then_some(0);
    let config = common::engine_config(slots, AllocMode::Slab, limit, backend);
    let started = Instant::now();
    let options = fc::LoadOptions {
        checked,
        precompiled: !prover.no_precompiled,
        subgroup_check: arenaprove_tools::backend::subgroup_check_source(gpu),
    };
    let c2 = fc::C2Engine::start(registered_proof, files, config, options)?;
    let synthesis = c2.circuits().iter().map(|c| c.synthesis().describe()).collect::<Vec<_>>().join("; ");
    eprintln!("params load {:.2} s; synthesis: {synthesis}", started.elapsed().as_secs_f64());
    Ok(c2)
}

/// Stops the engine; an error unless every slab came back.
fn stop_engine(c2: fc::C2Engine) -> Result<()> {
    let report = c2.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        bail!("{} slabs still leased at shutdown", report.slabs_outstanding);
    }
    Ok(())
}

/// The memory guard for `registered_proof`'s C2 (common::refuse_unless_fits), before any
/// parameter generation or reservation: `slots` partitions in flight (None: the command only
/// generates parameters, and only when they are absent) and `params_copies` of the file.
fn guard(
    what: &str,
    files: &ParamFiles,
    registered_proof: RegisteredSealProof,
    slots: Option<usize>,
    params_copies: usize,
    limit: MemoryLimit,
) -> Result<ResolvedLimit> {
    let shape =
        fc::shape::porep_shape(registered_proof.sector_size_bytes(), &common::cache_dir())?.porep.shape;
    let params = ParamsEstimate::for_streamed_file(Some(&files.params), &shape);
    match slots {
        Some(slots) => {
            let plan = common::plan_with_params(&shape, slots, &params, params_copies);
            common::refuse_unless_fits(what, Some(&plan), params.generation_bytes, limit)
        }
        None if params.generation_bytes.is_some() => {
            common::refuse_unless_fits(what, None, params.generation_bytes, limit)
        }
        None => limit.resolve(),
    }
}

fn clock_seed() -> u64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
}

/// Generates the parameters when absent, their points made by `backend` (GPU 0's
/// fixed-base products with `gpu`).
fn ensure_params(
    registered_proof: RegisteredSealProof,
    files: &ParamFiles,
    seed: u64,
    backend: BackendChoice,
) -> Result<()> {
    if files.params.is_file() {
        eprintln!("params: {} (present)", files.params.display());
        return Ok(());
    }
    eprintln!(
        "params: generating INSECURE development parameters for {} (random toxic waste) into {}",
        files.sector_size,
        files.cache_dir.display()
    );
    let mut rng = fc::rng_from_seed(seed ^ 0x7061_7261_6d73);
    let products = arenaprove_tools::backend::fixed_base_source(backend);
    match fc::params::ensure_params_with(registered_proof, files, &mut rng, products.as_ref())? {
        fc::params::ParamsStatus::Generated {
            params_bytes,
            seconds,
            recording_seconds,
            products,
            products_seconds,
        } => {
            eprintln!(
                "params: wrote {} ({params_bytes} bytes) in {seconds:.1} s: recording {recording_seconds:.1} s, \
                 then the file with its points made by {products} ({products_seconds:.1} s in the products)",
                files.params.display()
            )
        }
        fc::params::ParamsStatus::Present => eprintln!("params: {} (present)", files.params.display()),
    }
    Ok(())
}

fn seal(a: SealArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    let size: SectorSize = a.sector_size.parse()?;
    let seed = a.rng_seed.unwrap_or_else(clock_seed);
    let mut rng = fc::rng_from_seed(seed);
    let request = fc::SealRequest::random(size, &mut rng);
    if !a.no_params {
        let files = files_in(cache, request.registered_proof)?;
        guard("filecoin seal (generating params)", &files, request.registered_proof, None, 1, limit)?;
        ensure_params(request.registered_proof, &files, seed, BackendChoice::Cpu)?;
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let sealed = fc::seal_sector(&request, &mut rng, &a.out)?;
    let c1_path = a.out.join("c1.json");
    std::fs::write(&c1_path, sealed.c1.to_api_json()?)
        .with_context(|| format!("writing {}", c1_path.display()))?;
    let sector_path = a.out.join("sector.json");
    sealed.info.write(&sector_path)?;
    let t = sealed.timings;
    eprintln!(
        "sealed {size} sector {} (rng seed {seed}): add_piece {:.1} ms, PC1 {:.1} ms, PC2 {:.1} ms, C1 {:.1} ms",
        request.sector_id,
        t.add_piece.as_secs_f64() * 1e3,
        t.pc1.as_secs_f64() * 1e3,
        t.pc2.as_secs_f64() * 1e3,
        t.c1.as_secs_f64() * 1e3
    );
    println!("{}", c1_path.display());
    println!("{}", sector_path.display());
    Ok(())
}

fn plain_as(
    sector_size: Option<&str>,
    registered_proof: Option<&str>,
) -> Result<Option<RegisteredSealProof>> {
    Ok(match (sector_size, registered_proof) {
        (Some(s), _) => Some(s.parse::<SectorSize>()?.default_registered_proof()),
        (None, Some(r)) => Some(r.parse::<RegisteredSealProof>()?),
        (None, None) => None,
    })
}

fn c2(a: C2Args, cache: &Path, limit: MemoryLimit) -> Result<()> {
    let plain = plain_as(a.sector_size.as_deref(), a.registered_proof.as_deref())?;
    let c1 = C1Output::read(&a.c1, plain)?;
    let files = files_in(cache, c1.registered_proof)?;
    let limit = guard("filecoin c2", &files, c1.registered_proof, Some(1), 1, limit)?;
    let backend = common::backend_factory(a.prover.backend);
    let engine = start_engine(c1.registered_proof, &files, 1, &limit, &a.prover, a.checked, backend)?;
    let randomness = a.insecure_randomness_seed.map(|seed| {
        use ff::Field;
        let mut rng = fc::rng_from_seed(seed);
        (0..c1.partitions())
            .map(|_| arenaprove::engine::pipeline::Randomness {
                r: blstrs::Scalar::random(&mut rng),
                s: blstrs::Scalar::random(&mut rng),
            })
            .collect()
    });
    let out = engine.submit_with(&c1, randomness)?.wait()?;
    write_file(&a.out, out.proof())?;
    eprintln!("{}", out.stages());
    stop_engine(engine)?;
    println!("{}", a.out.display());
    Ok(())
}

fn pce(a: PceArgs, cache: &Path) -> Result<()> {
    let size: SectorSize = a.sector_size.parse()?;
    let proof = size.default_registered_proof();
    let files = files_in(cache, proof)?;
    let started = Instant::now();
    let shape = fc::circuit::blank_shape(proof)?;
    let shape_s = started.elapsed().as_secs_f64();
    let loaded = fc::pce::load_or_record(proof, &files, &shape)?;
    let pc = &loaded.matrices;
    let origin = match &loaded.origin {
        arenaprove::circuits::precompiled::Origin::Mapped => "mapped".to_string(),
        arenaprove::circuits::precompiled::Origin::Recorded { replaced: None } => "recorded and saved".into(),
        arenaprove::circuits::precompiled::Origin::Recorded { replaced: Some(why) } => {
            format!("recorded and saved (replacing a file: {why})")
        }
        arenaprove::circuits::precompiled::Origin::RecordedUnsaved { why } => {
            format!("recorded, not saved: {why}")
        }
    };
    let terms = pc.terms();
    if a.json {
        let obj = serde_json::json!({
            "sector_size": size.name(),
            "path": pc.source(),
            "origin": origin,
            "seconds": loaded.elapsed.as_secs_f64(),
            "shape_count_s": shape_s,
            "bytes": pc.bytes(),
            "rows": pc.rows(),
            "terms_a": terms[0].total(), "terms_b": terms[1].total(), "terms_c": terms[2].total(),
            "terms_general": terms.iter().map(|t| t.general).sum::<u64>(),
            "coefficients": pc.coefficients(),
        });
        println!("{obj}");
    } else {
        println!(
            "{size}: {origin} in {:.2} s: {} ({:.1} MB; {} rows; A/B/C terms {}/{}/{}, {} multiply; {} distinct \
             coefficients); counting the shape took {shape_s:.2} s",
            loaded.elapsed.as_secs_f64(),
            pc.source(),
            pc.bytes() as f64 / 1e6,
            pc.rows(),
            terms[0].total(),
            terms[1].total(),
            terms[2].total(),
            terms.iter().map(|t| t.general).sum::<u64>(),
            pc.coefficients()
        );
    }
    Ok(())
}

fn witness(a: WitnessArgs, cache: &Path) -> Result<()> {
    use arenaprove::arena::{Ledger, RegionConfig};
    use arenaprove::circuits::{ArenaAssignment, AssignmentPools, ProverWitness};

    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let size: SectorSize = a.sector_size.parse()?;
    let proof = size.default_registered_proof();
    let files = files_in(cache, proof)?;
    // The recording is saved beside the parameters (which this command does not need).
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    // A saved recording's own shape, as C2 loads it; the blank circuit is counted only
    // before a first recording.
    let pc = match fc::pce::open_saved(&files, &fc::pce::pce_identity(&files)) {
        Some(saved) => saved.matrices,
        None => fc::pce::load_or_record(proof, &files, &fc::circuit::blank_shape(proof)?)?.matrices,
    };
    let shape = pc.shape();
    let mut rng = fc::rng_from_seed(a.rng_seed);
    let c1 = if a.random {
        fc::random::random_c1(proof, &mut rng)?
    } else {
        seal_one(&fc::SealRequest::random(size, &mut rng), &mut rng)?.c1
    };
    let job = fc::circuit::SectorJob::new(&c1)?;
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(&shape, 2, &ledger, RegionConfig::default())?;
    let (mut serial, mut parallel, mut products) = (Vec::new(), Vec::new(), Vec::new());
    let mut device = if a.device_products { Some(DeviceProducts::open(&pc.row_stream())?) } else { None };
    let mut device_times = Vec::new();
    let (mut parts, mut pieces) = (0, 0);
    for run in 0..a.runs {
        let mut want = ArenaAssignment::new(&pools, &shape)?;
        want.alloc_one()?;
        let circuit = job.circuit(0)?;
        let started = Instant::now();
        pc.witness_into(circuit, &mut want)?;
        serial.push(started.elapsed().as_secs_f64());

        let mut got = ArenaAssignment::new(&pools, &shape)?;
        got.alloc_one()?;
        let circuit = job.parts(0)?;
        parts = arenaprove::circuits::precompiled::PartedCircuit::parts(&circuit);
        pieces = arenaprove::circuits::precompiled::PartedCircuit::pieces(&circuit);
        let started = Instant::now();
        pc.witness_parts(&circuit, &mut got)?;
        parallel.push(started.elapsed().as_secs_f64());
        if got.input_assignment() != want.input_assignment() || got.aux_assignment() != want.aux_assignment()
        {
            bail!("run {run}: the parallel witness differs from the serial one");
        }
        // What follows the witness in a precompiled synthesis: a, b, c from the recording.
        let started = Instant::now();
        pc.products_into(&mut got)?;
        products.push(started.elapsed().as_secs_f64());
        if let Some(d) = device.as_mut() {
            let (kernel_s, total_s) = d.check(&pc.row_stream(), &got)?;
            eprintln!("run {run}: device products equal the host's: kernel {kernel_s:.4} s, with copies {total_s:.3} s");
            device_times.push((kernel_s, total_s));
        }
        eprintln!(
            "run {run}: serial {:.3} s, parallel {:.3} s ({parts} parts x {pieces} pieces{}); then products {:.3} s",
            serial[run],
            parallel[run],
            if run == 0 && pieces > 1 { ", the pieces measured first" } else { "" },
            products[run]
        );
    }
    let (serial_s, parallel_s) =
        (arenaprove::benchkit::upper_median(&serial), arenaprove::benchkit::upper_median(&parallel));
    let products_s = arenaprove::benchkit::upper_median(&products);
    let device_s = (!device_times.is_empty()).then(|| {
        let kernel: Vec<f64> = device_times.iter().map(|t| t.0).collect();
        let total: Vec<f64> = device_times.iter().map(|t| t.1).collect();
        (arenaprove::benchkit::upper_median(&kernel), arenaprove::benchkit::upper_median(&total))
    });
    let threads = rayon::current_num_threads();
    if a.json {
        let obj = serde_json::json!({
            "sector_size": size.name(), "c1": if a.random { "random (timing only)" } else { "sealed" },
            "constraints": shape.constraints, "aux": shape.aux, "parts": parts, "pieces_per_part": pieces,
            "threads": threads, "runs": a.runs, "serial_s_median": serial_s, "parallel_s_median": parallel_s,
            "speedup": serial_s / parallel_s, "identical": true, "products_s_median": products_s,
            "device_products_kernel_s_median": device_s.map(|d| d.0),
            "device_products_with_copies_s_median": device_s.map(|d| d.1),
        });
        println!("{obj}");
    } else {
        println!(
            "{size} witness, one partition ({} constraints, {} aux): serial {serial_s:.3} s, parallel {parallel_s:.3} s \
             ({parts} parts x {pieces} pieces on {threads} threads), speedup {:.2}x (median of {}; byte-identical every run); products \
             {products_s:.3} s",
            shape.constraints,
            shape.aux,
            serial_s / parallel_s,
            a.runs
        );
        if let Some((kernel, total)) = device_s {
            println!(
                "  products on the device: kernel {kernel:.4} s, {total:.3} s with the copies, equal to the host's \
                 every run; host {products_s:.3} s ({:.1}x the kernel)",
                products_s / kernel
            );
        }
    }
    Ok(())
}

/// `filecoin witness --device-products`: GPU 0 with an arena for one partition's products.
#[cfg(feature = "cuda")]
struct DeviceProducts(arenaprove::cuda::Gpu);

#[cfg(feature = "cuda")]
impl DeviceProducts {
    fn open(m: &arenaprove::circuits::precompiled::RowStream<'_>) -> Result<Self> {
        let mut gpu = arenaprove::cuda::Gpu::open(0)?;
        // The call's own layout: stream, block table, row offsets, coefficients, witness, a, b, c.
        gpu.reserve_arena(arenaprove::cuda::products_scratch_bytes(m))?;
        Ok(DeviceProducts(gpu))
    }

    /// The device's products of `host`'s witness, compared with `host`'s a, b, c: the
    /// kernel's seconds and the call's (copies included).
    fn check(
        &mut self,
        m: &arenaprove::circuits::precompiled::RowStream<'_>,
        host: &arenaprove::circuits::ArenaAssignment,
    ) -> Result<(f64, f64)> {
        use arenaprove::circuits::ProverWitness;
        let zero = blstrs::Scalar::from(0u64);
        let mut out = [vec![zero; m.rows], vec![zero; m.rows], vec![zero; m.rows]];
        let [a, b, c] = &mut out;
        let started = Instant::now();
        self.0.products(m, host.input_assignment(), host.aux_assignment(), [a, b, c])?;
        let total = started.elapsed().as_secs_f64();
        let (ha, hb, hc) = host.abc()?;
        for (name, d, h) in [("a", &out[0], ha), ("b", &out[1], hb), ("c", &out[2], hc)] {
            if d[..] != h[..m.rows] {
                bail!("the device's {name} differs from the host's");
            }
        }
        Ok((self.0.last_device_time().as_secs_f64(), total))
    }
}

#[cfg(not(feature = "cuda"))]
struct DeviceProducts;

#[cfg(not(feature = "cuda"))]
impl DeviceProducts {
    fn open(_: &arenaprove::circuits::precompiled::RowStream<'_>) -> Result<Self> {
        bail!("--device-products needs a binary built with --features cuda")
    }

    fn check(
        &mut self,
        _: &arenaprove::circuits::precompiled::RowStream<'_>,
        _: &arenaprove::circuits::ArenaAssignment,
    ) -> Result<(f64, f64)> {
        bail!("--device-products needs a binary built with --features cuda")
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn verify(a: VerifyArgs) -> Result<()> {
    let info = SectorInfo::read(&a.sector)?;
    let c1 = C1Output::read(&a.c1, a.plain.then_some(info.registered_proof))?;
    if c1.registered_proof != info.registered_proof {
        bail!(
            "{} is for {:?} but {} is for {:?}",
            a.c1.display(),
            c1.registered_proof,
            a.sector.display(),
            info.registered_proof
        );
    }
    let (comm_r, comm_d) = c1.commitments();
    if (comm_r, comm_d) != (info.comm_r, info.comm_d) {
        eprintln!("note: comm_r/comm_d of {} differ from {}", a.c1.display(), a.sector.display());
    }
    let proof = std::fs::read(&a.proof).with_context(|| format!("reading {}", a.proof.display()))?;
    match fc::verify_seal(&info, &proof)? {
        fc::Verdict::Accepted => {
            println!("accepted");
            Ok(())
        }
        fc::Verdict::Rejected => bail!("rejected: verify_seal returned false for {}", a.proof.display()),
        fc::Verdict::Malformed(why) => bail!("rejected: {}: {why}", a.proof.display()),
    }
}

fn bench(a: BenchArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let size: SectorSize = a.run.sector_size.parse()?;
    let registered_proof = size.default_registered_proof();
    let files = files_in(cache, registered_proof)?;
    // Ours holds one slot and the params; seal_commit_phase2 maps the same file beside it.
    let limit = guard("filecoin bench", &files, registered_proof, Some(1), 2, limit)?;
    let mut rng = fc::rng_from_seed(a.run.rng_seed);
    ensure_params(registered_proof, &files, a.run.rng_seed, a.run.prover.backend)?;
    let sealed = match &a.sealed {
        Some(dir) => {
            let info = SectorInfo::read(&dir.join("sector.json"))?;
            if info.registered_proof != registered_proof {
                bail!(
                    "{}: a sector of {:?}, not of --sector-size {size}",
                    dir.display(),
                    info.registered_proof
                );
            }
            let c1 = C1Output::read(&dir.join("c1.json"), None)?;
            fc::SealedSector { c1, info, timings: Default::default() }
        }
        None => seal_one(&fc::SealRequest::random(size, &mut rng), &mut rng)?,
    };

    let started = Instant::now();
    let backend = common::backend_factory(a.run.prover.backend);
    let engine = start_engine(registered_proof, &files, 1, &limit, &a.run.prover, false, backend)?;
    let ours_load_s = started.elapsed().as_secs_f64();
    // One untimed run per side: seal_commit_phase2 maps and caches its parameters on first
    // use (and faults them in during its first MSMs), while ours were loaded above. A child
    // baseline warms up in each of its processes.
    engine.prove(&sealed.c1)?;
    let peer = match &a.peer_exe {
        Some(exe) => Some(Peer::new(exe, &sealed, cache)?),
        None => {
            fc::c2::reference_c2(&sealed.c1, &sealed.info)?;
            None
        }
    };
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut stages = Vec::new();
    for run in 0..a.runs {
        let started = Instant::now();
        let out = engine.prove(&sealed.c1)?;
        ours.push(started.elapsed().as_secs_f64());
        if !fc::verify_seal(&sealed.info, out.proof())?.is_accepted() {
            bail!("run {run}: our proof was rejected by verify_seal");
        }
        eprintln!("ours   run {run}: {:.2} s ({})", ours[run], out.stages());
        stages.push(out.stages().clone());

        let (seconds, proof) = match &peer {
            Some(peer) => peer.run()?,
            None => {
                let started = Instant::now();
                let proof = fc::c2::reference_c2(&sealed.c1, &sealed.info)?;
                (started.elapsed().as_secs_f64(), proof)
            }
        };
        theirs.push(seconds);
        if !fc::verify_seal(&sealed.info, &proof)?.is_accepted() {
            bail!("run {run}: filecoin-proofs' proof was rejected by verify_seal");
        }
        eprintln!("theirs run {run}: {:.2} s (seal_commit_phase2, includes its verify_seal)", theirs[run]);
    }
    let (ours_s, theirs_s) =
        (arenaprove::benchkit::upper_median(&ours), arenaprove::benchkit::upper_median(&theirs));
    stop_engine(engine)?;
    let mid = &stages[stages.len() / 2];
    let speedup = theirs_s / ours_s;
    let baseline = match &a.peer_exe {
        Some(exe) => format!("child process {}", exe.display()),
        None => "seal_commit_phase2 of this build, in process".to_string(),
    };
    if a.run.json {
        let obj = serde_json::json!({
            "sector_size": size.name(),
            "backend": format!("{:?}", a.run.prover.backend).to_lowercase(),
            "runs": a.runs,
            "constraints": mid.constraints,
            "partitions": mid.partitions,
            "ours_s_median": ours_s,
            "ours_params_load_s": ours_load_s,
            "seal_commit_phase2_s_median": theirs_s,
            "baseline": baseline,
            "speedup": speedup,
            "stages": mid.to_json(),
        });
        println!("{obj}");
    } else {
        println!(
            "filecoin c2 {size}: ours {ours_s:.2} s, seal_commit_phase2 {theirs_s:.2} s, speedup {speedup:.2}x \
             (median of {} runs; params load {ours_load_s:.2} s not included; baseline: {baseline})",
            a.runs
        );
        println!("ours stages: {mid}");
    }
    Ok(())
}

/// A baseline binary run as a child process (`bench`, `post-bench`, `snap-bench`
/// `--peer-exe`; `peer-gpu/filecoin-baseline`): it reads its inputs from files in a
/// directory of its own and the parameters from `FIL_PROOFS_PARAMETER_CACHE`.
pub(crate) struct Peer {
    exe: PathBuf,
    dir: PathBuf,
    cache: PathBuf,
    /// The arguments naming the inputs (`--c1 .. --sector ..`, or `--request ..`).
    inputs: Vec<std::ffi::OsString>,
}

impl Peer {
    /// For a C2: the C1 and sector.json written for it.
    fn new(exe: &Path, sealed: &fc::SealedSector, cache: &Path) -> Result<Self> {
        let dir = tempfile_dir()?;
        let (c1, sector) = (dir.join("c1.json"), dir.join("sector.json"));
        write_file(&c1, &sealed.c1.to_api_json()?)?;
        sealed.info.write(&sector)?;
        Ok(Peer::at(exe, dir, cache, vec!["--c1".into(), c1.into(), "--sector".into(), sector.into()]))
    }

    /// For a PoSt or SnapDeals request: the request file `write` writes
    /// ([`fc::request_file::write_post`], [`fc::request_file::write_snap`]).
    pub(crate) fn for_request(
        exe: &Path,
        write: impl FnOnce(&Path) -> std::result::Result<(), fc::FilecoinError>,
        cache: &Path,
    ) -> Result<Self> {
        let dir = tempfile_dir()?;
        let path = dir.join("request");
        write(&path)?;
        Ok(Peer::at(exe, dir, cache, vec!["--request".into(), path.into()]))
    }

    fn at(exe: &Path, dir: PathBuf, cache: &Path, inputs: Vec<std::ffi::OsString>) -> Self {
        Peer { exe: exe.to_path_buf(), dir, cache: cache.to_path_buf(), inputs }
    }

    /// One process: its warm-up, then one timed proof; the seconds it measured and its proof.
    pub(crate) fn run(&self) -> Result<(f64, Vec<u8>)> {
        let proof_path = self.dir.join("proof");
        let output = std::process::Command::new(&self.exe)
            .env(PARAM_CACHE_VAR, &self.cache)
            .args(["--runs", "1"])
            .args(&self.inputs)
            .arg("--out")
            .arg(&proof_path)
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("running the baseline {}", self.exe.display()))?;
        if !output.status.success() {
            bail!("the baseline {} failed: {}", self.exe.display(), output.status);
        }
        let report: serde_json::Value = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("the baseline's report: {}", String::from_utf8_lossy(&output.stdout)))?;
        let seconds = report["seconds"][0].as_f64().context("the baseline's report has no seconds")?;
        let proof =
            std::fs::read(&proof_path).with_context(|| format!("reading {}", proof_path.display()))?;
        Ok((seconds, proof))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Seals one sector in this process's temporary directory, removed afterwards (also when
/// sealing fails).
fn seal_one(
    request: &fc::SealRequest,
    rng: &mut impl arenaprove::engine::deps::rand_core::RngCore,
) -> Result<fc::SealedSector> {
    let work = tempfile_dir()?;
    let sealed = fc::seal_sector(request, rng, &work);
    let _ = std::fs::remove_dir_all(&work);
    Ok(sealed?)
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("arenaprove-filecoin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn soak(a: SoakArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    use arenaprove::arena::ledger::rss_bytes;

    if a.sectors == 0 {
        bail!("--sectors must be at least 1");
    }
    common::check_slots(a.slots)?;
    if a.timing_only {
        return soak_timing_only(a, cache, limit);
    }
    let size: SectorSize = a.run.sector_size.parse()?;
    let registered_proof = size.default_registered_proof();
    let files = files_in(cache, registered_proof)?;
    let limit = guard("filecoin soak", &files, registered_proof, Some(a.slots), 1, limit)?;
    ensure_params(registered_proof, &files, a.run.rng_seed, a.run.prover.backend)?;
    // The backend first (a GPU's driver context holds host memory of its own): the base
    // RSS the plan's prediction starts from includes it.
    let backend = common::backend_factory(a.run.prover.backend);
    let rss_start = rss_bytes();
    let c2 = start_engine(registered_proof, &files, a.slots, &limit, &a.run.prover, false, backend)?;
    let predicted = planned_peak(&c2, rss_start);
    eprintln!("{}", c2.engine().memory_plan());
    let partitions = usize::from(registered_proof.porep_config()?.partitions);
    let work = tempfile_dir()?;
    let mut rng = fc::rng_from_seed(a.run.rng_seed);

    let mut rec = crate::soak::SoakRecorder::new(a.sectors, partitions, rss_start);
    let mut seal_s = 0.0f64;
    let all = partitions as u64;
    // Seal the next sector while the engine proves the ones in flight.
    let submit = |_: usize| -> Result<(SectorInfo, fc::C2Pending)> {
        let started = Instant::now();
        let request = fc::SealRequest::random(size, &mut rng);
        let sealed = fc::seal_sector(&request, &mut rng, &work)?;
        seal_s += started.elapsed().as_secs_f64();
        Ok((sealed.info, c2.submit(&sealed.c1)?))
    };
    crate::soak::drive(&mut rec, a.sectors, a.run.json, submit, |(info, pending), rec| {
        match pending.wait() {
            Ok(out) => {
                if fc::verify_seal(&info, out.proof())?.is_accepted() {
                    rec.sector_done(all, 0, &out.job().spans);
                } else {
                    eprintln!("sector {}: proof rejected by verify_seal", info.sector_id);
                    rec.sector_done(0, all, &out.job().spans);
                }
            }
            Err(e) => {
                eprintln!("sector {}: {e}", info.sector_id);
                rec.sector_done(0, all, &[]);
            }
        }
        Ok(())
    })?;
    let _ = std::fs::remove_dir_all(&work);
    let ledger = c2.engine().ledger();
    let constraints = c2.circuits()[0].shape().constraints;
    stop_engine(c2)?;
    let mut report = rec.report(format!("stacked-drg-{size}"), "slab".into(), constraints, &ledger);
    report.set_plan_peak(predicted);
    if a.run.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report;
        println!(
            "filecoin soak: {} {size} sectors sealed and proven ({} constraints per partition)",
            r.sectors, r.constraints
        );
        crate::soak::print_report(r, "verify_seal");
        println!("  sealing              {seal_s:.1} s");
    }
    if report.proofs_failed > 0 {
        bail!("{} proofs failed", report.proofs_failed);
    }
    Ok(())
}

/// `filecoin soak --timing-only`: the soak's pipeline and report on random C1s of the real
/// shape with shape-only parameters (see `SoakArgs::timing_only`). Every sector's proofs
/// are made in full; none can verify, and the output says so.
fn soak_timing_only(a: SoakArgs, cache: &Path, limit: MemoryLimit) -> Result<()> {
    use arenaprove::arena::ledger::rss_bytes;

    if a.run.prover.no_precompiled {
        bail!("--timing-only proves through the precompiled constraints (its shape is the recording's): drop --no-precompiled");
    }
    let size: SectorSize = a.run.sector_size.parse()?;
    let registered_proof = size.default_registered_proof();
    let files = files_in(cache, registered_proof)?;
    let limit = limit.resolve()?;
    let (backend, gpus) = timing_backend(a.run.prover.backend);
    let rss_start = rss_bytes();
    let started = Instant::now();
    // The parameters are refused before they are made when they alone exceed what the
    // limit leaves (the engine's plan is checked against it at start, with them).
    let room = limit.bytes.saturating_sub(rss_start);
    let circuit = fc::C2Circuit::timing_only(registered_proof, &files, a.run.rng_seed, room)?;
    let setup_s = started.elapsed().as_secs_f64();
    eprintln!(
        "TIMING ONLY: {size} partitions of {} constraints; random C1s (nothing sealed) and shape-only parameters \
         ({:.2} GiB of points, no setup): the proofs cannot verify and are not checked. Recording and parameters \
         ready in {setup_s:.1} s",
        circuit.shape().constraints,
        circuit.params().encoded_bytes() as f64 / (1u64 << 30) as f64,
    );
    let mut config = common::engine_config(a.slots, AllocMode::Slab, &limit, backend);
    config.verify = false;
    let c2 = fc::C2Engine::new(config, vec![circuit])?;
    let predicted = planned_peak(&c2, rss_start);
    eprintln!("{}", c2.engine().memory_plan());
    let partitions = usize::from(registered_proof.porep_config()?.partitions);
    let mut rng = fc::rng_from_seed(a.run.rng_seed);
    let busy = |g: &arenaprove_tools::backend::GpusInfo| -> f64 {
        (g.activity)().unwrap_or_default().iter().map(|a| a.busy_time.as_secs_f64()).sum()
    };
    let busy_start = gpus.as_ref().map(busy);
    let mut rec = crate::soak::SoakRecorder::new(a.sectors, partitions, rss_start);
    let measured = Instant::now();
    let all = partitions as u64;
    let submit = |_: usize| -> Result<fc::C2Pending> {
        let c1 = fc::random::random_c1(registered_proof, &mut rng)?;
        Ok(c2.submit(&c1)?)
    };
    crate::soak::drive(&mut rec, a.sectors, a.run.json, submit, |pending, rec| {
        match pending.wait() {
            Ok(out) if out.is_timing_only() => rec.sector_done(all, 0, &out.job().spans),
            Ok(_) => bail!("a timing-only engine handed back a sector not marked timing-only"),
            Err(e) => {
                eprintln!("sector: {e}");
                rec.sector_done(0, all, &[]);
            }
        }
        Ok(())
    })?;
    let measured_s = measured.elapsed().as_secs_f64();
    let busy_s = gpus.as_ref().zip(busy_start).map(|(g, b0)| (g.count.max(1) as f64, busy(g) - b0));
    let device_busy_fraction = busy_s.map(|(gpus, s)| s / measured_s / gpus);
    let device_seconds_per_partition = busy_s.map(|(_, s)| s / (a.sectors * partitions) as f64);
    let device_memory_used_bytes = gpus.as_ref().and_then(|g| {
        let each = (g.mem)()?;
        Some(each.iter().flatten().map(|(free, total)| total - free).sum())
    });
    let ledger = c2.engine().ledger();
    let constraints = c2.circuits()[0].shape().constraints;
    stop_engine(c2)?;
    let mut report =
        rec.report(format!("stacked-drg-{size}-timing-only"), "slab".into(), constraints, &ledger);
    report.timing_only = true;
    report.device_busy_fraction = device_busy_fraction;
    report.device_memory_used_bytes = device_memory_used_bytes;
    report.device_seconds_per_partition = device_seconds_per_partition;
    report.set_plan_peak(predicted);
    if a.run.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report;
        println!(
            "filecoin soak --timing-only: {} {size} sectors proven ({} constraints per partition); TIMING ONLY: \
             random C1s and shape-only parameters, no proof can verify",
            r.sectors, r.constraints
        );
        crate::soak::print_report(r, "proofs (unverifiable)");
        println!("  setup                {setup_s:.1} s (recording mapped or recorded, shape-only parameters made)");
        let stages: Vec<String> = r.stage_p50_ms.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
        println!("  stage p50 (ms)       {}", stages.join(", "));
    }
    if report.proofs_failed > 0 {
        bail!("{} partitions failed", report.proofs_failed);
    }
    Ok(())
}

/// The plan's peak RSS for `c2` from a base of `rss_start`: the engine's regions and resident
/// parameters, plus the precompiled recordings' file pages (mapped; read by the host
/// products or uploaded once to the device, so all of them count in RSS).
fn planned_peak(c2: &fc::C2Engine, rss_start: u64) -> u64 {
    let recording_bytes: usize = c2
        .circuits()
        .iter()
        .map(|c| match c.synthesis() {
            fc::pce::Synthesis::Precompiled(pc) => pc.bytes(),
            fc::pce::Synthesis::Generic => 0,
        })
        .sum();
    (c2.engine().memory_plan().predicted_peak_rss(rss_start as usize) + recording_bytes) as u64
}

/// `--backend`'s factory and, on GPUs, what reports their activity and memory.
fn timing_backend(
    choice: BackendChoice,
) -> (Arc<dyn arenaprove::engine::BackendFactory>, Option<arenaprove_tools::backend::GpusInfo>) {
    if choice == BackendChoice::Gpu {
        match arenaprove_tools::backend::open_gpus(&[], common::device_memory()) {
            Ok((factory, info)) => {
                eprintln!("backend: GPU ({} device(s))", info.count);
                return (factory, Some(info));
            }
            Err(e) => eprintln!("backend: no GPU ({e}); using the CPU backend"),
        }
    }
    (common::backend_factory(BackendChoice::Cpu), None)
}
