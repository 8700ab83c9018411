//! What `prove`, `soak`, `params` and `plan` share: the circuit kinds, the parameter
//! cache, the engine set-up, the memory guard every command runs before it generates
//! parameters or reserves memory, and small report helpers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove::arena::RegionConfig;
use arenaprove::circuits::circuits::{AnyCircuit, CircuitKind, SectorPartitionCircuit};
use arenaprove::circuits::shape::shape_of_native;
use arenaprove::circuits::Shape;
use arenaprove::circuits::{Precompiled, PrecompiledError};
use arenaprove::engine::deps::blstrs::Scalar;
use arenaprove::engine::deps::rand_chacha::ChaCha20Rng;
use arenaprove::engine::deps::rand_core::SeedableRng;
use arenaprove::engine::groth16::{
    generate_random_parameters, write_parameters_from_matrices_with, FixedBaseSource, Parameters,
    ParamsMemory, ProofShape, ToxicWaste,
};
use arenaprove::engine::pipeline::{
    native, AllocMode, CircuitSpec, Engine, EngineConfig, MemoryPlan, PartitionCircuit, SLOTS_MAX,
};
use arenaprove::engine::{BackendFactory, CpuBackend};

/// The circuit of `kind` nearest `constraints`, for partition `partition` of sector
/// `sector_id` (the bench workloads' [`arenaprove::benchkit::sector::partition`]).
pub fn circuit(
    kind: CircuitKind,
    constraints: usize,
    sector_id: u64,
    partition: usize,
) -> Result<AnyCircuit> {
    arenaprove::benchkit::sector::partition(kind, constraints, sector_id, partition)
        .map_err(anyhow::Error::msg)
}

pub use arenaprove::circuits::native::ViaBridge;

pub fn partition_circuit(c: AnyCircuit) -> Box<dyn PartitionCircuit> {
    native(c)
}

/// `$ARENAPROVE_CACHE`, else `$XDG_CACHE_HOME/arenaprove`, else `~/.cache/arenaprove`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("ARENAPROVE_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("arenaprove");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("arenaprove")
}

/// Parameters for one circuit kind, with where they came from.
pub struct LoadedParams {
    pub params: Arc<Parameters>,
    pub shape: Shape,
    pub path: PathBuf,
    pub generated: bool,
    pub seconds: f64,
}

/// How absent development parameters are made.
pub enum Generation<'a> {
    /// In memory from the circuit (`generate_parameters`: ~3x the file at its peak).
    InMemory,
    /// Written section by section from the circuit's recording
    /// (`write_parameters_from_matrices_with`: the QAP at its peak, so any size fits), the
    /// points made by `products` (a GPU's; `None`: the CPU's).
    FromRecording { recording: &'a Precompiled, products: Option<FixedBaseSource> },
}

/// Loads `--params FILE` (checked), or the cached development params for this shape,
/// generating and caching them when absent or stale.
pub fn params_for(
    kind: CircuitKind,
    constraints: usize,
    explicit: Option<&Path>,
    quiet: bool,
) -> Result<LoadedParams> {
    params_for_with(kind, constraints, explicit, quiet, Generation::InMemory)
}

/// [`params_for`], absent parameters made as `generation` says.
pub fn params_for_with(
    kind: CircuitKind,
    constraints: usize,
    explicit: Option<&Path>,
    quiet: bool,
    generation: Generation<'_>,
) -> Result<LoadedParams> {
    let sample = circuit(kind, constraints, 0, 0)?;
    let shape = shape_of_native(&sample).context("measuring the circuit's shape")?;
    let mem = ParamsMemory {
        region: RegionConfig { huge_pages: true, ..RegionConfig::default() },
        ..ParamsMemory::default()
    };
    let t0 = Instant::now();
    if let Some(path) = explicit {
        let params = Parameters::read_file(path, true, &mem)?;
        if let Err(e) = params.check_fits(&shape) {
            bail!("{}: {e} ({kind} at {constraints} constraints, shape {shape})", path.display());
        }
        return Ok(LoadedParams {
            params: Arc::new(params),
            shape,
            path: path.into(),
            generated: false,
            seconds: t0.elapsed().as_secs_f64(),
        });
    }
    let path = cached_params_path(kind, &shape);
    let dir = path.parent().expect("a file under the cache's params/");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    if path.exists() {
        match Parameters::read_file(&path, false, &mem) {
            Ok(p) if p.check_fits(&shape).is_ok() => {
                return Ok(LoadedParams {
                    params: Arc::new(p),
                    shape,
                    path,
                    generated: false,
                    seconds: t0.elapsed().as_secs_f64(),
                })
            }
            Ok(_) => eprintln!("cached {} does not fit the circuit; regenerating", path.display()),
            Err(e) => eprintln!("cached {} is unreadable ({e}); regenerating", path.display()),
        }
    }
    let spinner = spinner(
        quiet,
        format!("generating development params for {kind} ({} constraints, insecure)", shape.constraints),
    );
    let tmp = path.with_extension("params.tmp");
    let params = match generation {
        Generation::InMemory => {
            let params = generate_dev_params(sample, &mem)?;
            params.write_file(&tmp)?;
            params
        }
        Generation::FromRecording { recording, products } => {
            let tw = ToxicWaste::random(&mut ChaCha20Rng::from_entropy());
            let written = write_parameters_from_matrices_with(recording, &tw, &tmp, products.as_ref())
                .inspect_err(|_| {
                    let _ = std::fs::remove_file(&tmp);
                })?;
            // stderr, also with --json (stdout is the report).
            eprintln!(
                "params: wrote {} bytes from the recording, the points made by {} ({:.1} s in the products)",
                written.bytes,
                written.products,
                written.products_time.as_secs_f64()
            );
            Parameters::read_file(&tmp, false, &mem)?
        }
    };
    std::fs::rename(&tmp, &path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    Ok(LoadedParams {
        params: Arc::new(params),
        shape,
        path,
        generated: true,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// INSECURE development parameters for `circuit` (random toxic waste from the OS).
pub fn generate_dev_params(circuit: AnyCircuit, mem: &ParamsMemory) -> Result<Parameters> {
    let mut rng = ChaCha20Rng::from_entropy();
    Ok(generate_random_parameters(ViaBridge(circuit), &mut rng, mem)?)
}

pub fn spinner(quiet: bool, msg: String) -> Option<indicatif::ProgressBar> {
    if quiet {
        return None;
    }
    let s = indicatif::ProgressBar::new_spinner();
    s.set_message(msg);
    s.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(s)
}

pub fn bar(quiet: bool, len: u64, what: &str) -> Option<indicatif::ProgressBar> {
    if quiet {
        return None;
    }
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>10} [{bar:40}] {pos}/{len} {elapsed_precise} eta {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    Some(b)
}

/// Logs to stderr at the level `ARENAPROVE_LOG` sets (default `warn`). From `info` on,
/// every closing span is a line with its busy time: the stage spans (`synthesize`,
/// `ntt_h`, `msm_h`, `msm_l`, `msm_a`, `msm_b_g1`, `msm_b_g2`, `finalize`), the same on
/// every backend.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ARENAPROVE_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .init();
}

/// Synthesis workers: one per core beyond the first, at least 1 and at most `slots`.
pub fn synth_workers(slots: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).clamp(1, slots.max(1))
}

/// A `--slots` value the engine takes (1 ..= `SLOTS_MAX`), else an error naming the range.
pub fn check_slots(slots: usize) -> Result<()> {
    if slots == 0 || slots > SLOTS_MAX {
        bail!("--slots {slots} not in 1..={SLOTS_MAX}");
    }
    Ok(())
}

/// Partitions in flight and synthesis threads of an engine, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineSizes {
    pub slots: usize,
    pub synth_workers: usize,
    pub why: String,
}

/// The daemon's sizing (`serve::lifecycle::engine_sizes`, and the benches' defaults) over a
/// `fits(slots, synth_workers)` test of the plan: configured values
/// win; otherwise `max(1, cores / 2)` synthesis workers (a PoRep partition's witness
/// already spreads its challenges over the engine's witness pool; several partitions at
/// once keep the cores busy where a partition has few challenges) and two slots more per
/// device, then the most slots up to that which the plan fits (at least 1: the engine's own
/// refusal then names the plan).
pub fn choose_sizes(
    slots: Option<usize>,
    synth: Option<usize>,
    cores: usize,
    devices: usize,
    fits: impl Fn(usize, usize) -> bool,
) -> EngineSizes {
    // Two slots per device more than the synthesis workers, within the engine's slot limit.
    let extra = 2 * devices.max(1);
    let synth_want = synth.unwrap_or((cores / 2).clamp(1, SLOTS_MAX.saturating_sub(extra).max(1)));
    match slots {
        Some(s) => EngineSizes {
            slots: s,
            synth_workers: synth_want.min(s),
            why: format!(
                "slots {s} (configured), synth workers {} ({})",
                synth_want.min(s),
                if synth.is_some() { "configured" } else { "half the cores, at most the slots" }
            ),
        },
        None => {
            let want = (synth_want + extra).min(SLOTS_MAX);
            let fitting = (1..=want).rev().find(|&n| fits(n, synth_want.min(n)));
            let slots = fitting.unwrap_or(1);
            let why = match fitting {
                Some(n) if n == want => format!(
                    "slots {n} = synth workers + {extra} (2 per device; fits the memory limit), synth workers {} ({} of {cores} cores)",
                    synth_want.min(n),
                    if synth.is_some() { "configured" } else { "half" }
                ),
                Some(n) => format!(
                    "slots {n}: the most the memory limit fits (wanted {want}), synth workers {}",
                    synth_want.min(n)
                ),
                None => "slots 1: even one does not fit the memory limit (the engine says why)".to_string(),
            };
            EngineSizes { slots, synth_workers: synth_want.min(slots), why }
        }
    }
}

/// `--mlock` (a global flag): lock every engine region in memory.
pub static MLOCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Not `--no-huge-pages` (a global flag): engine regions ask for transparent huge pages.
pub static HUGE_PAGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// `--device-memory` (a global flag), in bytes; 0: not given.
pub static DEVICE_MEMORY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The device-memory budget per GPU from `--device-memory`, if given.
pub fn device_memory() -> Option<usize> {
    match DEVICE_MEMORY.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        b => Some(b as usize),
    }
}

/// The global region flags (`--mlock`, `--no-huge-pages`) on an engine's regions: every
/// engine the CLI starts (`prove`, `soak`, `filecoin soak`) takes them the same way.
pub fn region_flags(region: &mut arenaprove::arena::RegionConfig) {
    region.mlock = MLOCK.load(std::sync::atomic::Ordering::Relaxed);
    region.huge_pages = HUGE_PAGES.load(std::sync::atomic::Ordering::Relaxed);
}

/// `--backend`: which prover the engine uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Cpu,
    /// The CUDA backend on every visible GPU (`CUDA_VISIBLE_DEVICES` picks them); the CPU
    /// one (said once) where there is none.
    Gpu,
}

/// The backend factory for `choice`. `gpu` falls back to the CPU backend, saying so once
/// on stderr, on a binary built without the `cuda` feature or a host without a GPU.
pub fn backend_factory(choice: BackendChoice) -> Arc<dyn BackendFactory> {
    match choice {
        BackendChoice::Cpu => Arc::new(CpuBackend),
        BackendChoice::Gpu => crate::backend::all_gpus_factory(),
    }
}

/// Engine limits the CLI uses: slots for overlap, one synthesis worker per spare core, the
/// memory limit [`refuse_unless_fits`] checked the plan against, and the region flags.
pub fn engine_config(
    slots: usize,
    alloc: AllocMode,
    limit: &ResolvedLimit,
    backend: Arc<dyn BackendFactory>,
) -> EngineConfig {
    let mut cfg = EngineConfig {
        slots,
        synth_workers: synth_workers(slots),
        alloc,
        memory_limit_bytes: usize::try_from(limit.bytes).unwrap_or(usize::MAX),
        backend,
        ..EngineConfig::default()
    };
    region_flags(&mut cfg.region);
    cfg
}

/// An engine of [`engine_config`] serving `kind`.
pub fn engine(
    kind: CircuitKind,
    loaded: &LoadedParams,
    slots: usize,
    alloc: AllocMode,
    limit: &ResolvedLimit,
    backend: Arc<dyn BackendFactory>,
) -> Result<Engine> {
    engine_with(kind, loaded, slots, alloc, limit, backend, None)
}

/// [`engine`], the kind synthesized through `matrices` when given (its recording: the
/// witness alone, then the products from the recording, on the device where the backend
/// proves from the witness).
pub fn engine_with(
    kind: CircuitKind,
    loaded: &LoadedParams,
    slots: usize,
    alloc: AllocMode,
    limit: &ResolvedLimit,
    backend: Arc<dyn BackendFactory>,
    matrices: Option<Arc<Precompiled>>,
) -> Result<Engine> {
    let cfg = engine_config(slots, alloc, limit, backend);
    let spec =
        CircuitSpec { kind: kind.to_string(), shape: loaded.shape, params: loaded.params.clone(), matrices };
    Ok(Engine::new(cfg, vec![spec])?)
}

/// The recording of `kind` at `constraints` (the circuit `circuit(kind, constraints, ..)`
/// builds; every sector and partition has the same constraints): mapped from its file beside
/// the cached parameters when there, else recorded now and saved there. Says which on
/// stderr.
pub fn recording_for(kind: CircuitKind, constraints: usize, shape: &Shape) -> Result<Arc<Precompiled>> {
    let path = recording_path(kind, shape);
    let dir = path.parent().expect("a file under the cache's params/");
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let identity = format!("{kind}-c{}-i{}-a{}", shape.constraints, shape.inputs, shape.aux);
    let t = Instant::now();
    let (pc, origin) = Precompiled::open_or_record(&path, &identity, Some(shape), || {
        let c = circuit(kind, constraints, 0, 0)
            .map_err(|e| PrecompiledError::Record { identity: identity.clone(), reason: e.to_string() })?;
        arenaprove::circuits::record(ViaBridge(c), &identity)
    })
    .with_context(|| format!("the recording of {kind} at {constraints} constraints ({})", path.display()))?;
    eprintln!("recording: {} ({origin:?}) in {:.1} s", path.display(), t.elapsed().as_secs_f64());
    Ok(Arc::new(pc))
}

/// Canonical little-endian bytes of a scalar as 0x + 64 hex digits.
pub fn scalar_hex(s: &Scalar) -> String {
    let mut out = String::with_capacity(66);
    out.push_str("0x");
    for b in s.to_bytes_le() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Peak resident set (VmHWM) in bytes, from /proc/self/status (0 where unavailable).
pub fn peak_rss_bytes() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else { return 0 };
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resets the peak resident set (VmHWM) to the current RSS (`5` to /proc/self/clear_refs,
/// Linux 4.0+), so a later [`peak_rss_bytes`] covers only what follows. False where it
/// cannot be reset.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub fn quantile_u64(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

// ---------------------------------------------------------------------------------------
// The memory guard.

/// Largest `--constraints` a plan is made for: 2^40 rows need more than 100 TiB, and beyond
/// it the plan's byte counts could overflow.
pub const PLAN_CONSTRAINTS_MAX: usize = 1 << 40;

/// The shape of the `kind` circuit nearest `constraints`, computed without synthesizing it:
/// every test circuit's shape is affine in its size parameters (chain: steps; sha: blocks;
/// sector: full challenges and extra levels), so small instances are counted and the rest
/// is extrapolated. Tests check it against the counted shape. This is what lets a request
/// for 10^12 constraints be refused at once instead of being synthesized for hours.
pub fn predicted_shape(kind: CircuitKind, constraints: usize) -> Result<Shape> {
    use arenaprove::circuits::circuits::{ChainCircuit, ShaCircuit};
    if constraints == 0 {
        bail!("--constraints must be at least 1 (each circuit kind picks its size nearest the target)");
    }
    if constraints > PLAN_CONSTRAINTS_MAX {
        bail!(
            "--constraints {constraints} is above {PLAN_CONSTRAINTS_MAX} (2^40), more than any memory holds"
        );
    }
    let count = |c: &AnyCircuit| shape_of_native(c).context("counting a small instance's shape");
    Ok(match kind {
        CircuitKind::Chain => {
            // N steps: N + 2 rows (ONE's and x_N's input rows), 2 inputs, N aux.
            let steps = ChainCircuit::steps_for_constraints(constraints);
            Shape::new(steps + 2, 2, steps)
        }
        CircuitKind::Sha => {
            let blocks = ShaCircuit::blocks_for_constraints(constraints);
            let one = count(&AnyCircuit::Sha(ShaCircuit::new(1, 0)))?;
            let per_block = count(&AnyCircuit::Sha(ShaCircuit::new(2, 0)))?;
            extrapolate(one, &[(per_block, blocks - 1)])
        }
        CircuitKind::Sector => {
            let p = SectorPartitionCircuit::for_constraints(0, 0, constraints);
            if p.challenges == 1 && p.extra_levels == 0 {
                return count(&AnyCircuit::Sector(p)); // one challenge: small, counted as is
            }
            let full = |challenges, extra| {
                count(&AnyCircuit::Sector(SectorPartitionCircuit::full(0, 0, challenges, extra)))
            };
            let base = full(1, 0)?;
            extrapolate(base, &[(full(2, 0)?, p.challenges - 1), (full(1, 1)?, p.extra_levels)])
        }
    })
}

/// `base` plus, for each `(one_more, n)`, n times what `one_more` adds to `base`.
fn extrapolate(base: Shape, steps: &[(Shape, usize)]) -> Shape {
    let (mut constraints, mut inputs, mut aux) = (base.constraints, base.inputs, base.aux);
    for &(one_more, n) in steps {
        constraints += n * (one_more.constraints - base.constraints);
        inputs += n * (one_more.inputs - base.inputs);
        aux += n * (one_more.aux - base.aux);
    }
    Shape::new(constraints, inputs, aux)
}

/// How much memory a command may use: the `--memory-limit` of every command that proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// MemAvailable from /proc/meminfo when the command starts.
    Auto,
    Bytes(u64),
}

impl std::str::FromStr for MemoryLimit {
    type Err = String;

    /// `auto`, or bytes with an optional binary suffix: `25769803776`, `24GiB`, `512MiB`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(MemoryLimit::Auto);
        }
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (digits, suffix) = t.split_at(split);
        let shift = match suffix.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kib" => 10,
            "m" | "mib" => 20,
            "g" | "gib" => 30,
            "t" | "tib" => 40,
            _ => {
                return Err(format!(
                    "memory limit `{s}`: expected auto, or bytes (a number, or with KiB/MiB/GiB/TiB)"
                ))
            }
        };
        let n: u64 =
            digits.parse().map_err(|_| format!("memory limit `{s}`: expected auto or a number of bytes"))?;
        n.checked_mul(1u64 << shift)
            .filter(|&b| b > 0)
            .map(MemoryLimit::Bytes)
            .ok_or_else(|| format!("memory limit `{s}`: must be above 0 and below 2^64 bytes"))
    }
}

/// A limit in bytes and where it came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedLimit {
    pub bytes: u64,
    pub source: &'static str,
}

impl MemoryLimit {
    pub fn resolve(self) -> Result<ResolvedLimit> {
        match self {
            MemoryLimit::Bytes(bytes) => Ok(ResolvedLimit { bytes, source: "--memory-limit" }),
            MemoryLimit::Auto => match mem_available_bytes() {
                Some(bytes) => Ok(ResolvedLimit { bytes, source: "MemAvailable in /proc/meminfo" }),
                None => bail!("cannot read MemAvailable from /proc/meminfo: give --memory-limit BYTES"),
            },
        }
    }
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb = s.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|kb| kb * 1024)
}

/// Bytes of resident Groth16 parameters for a circuit of `shape`, at most: h (domain - 1),
/// l (aux) and the a and b_g1 queries (inputs + aux, every variable dense) in G1, b_g2 in
/// G2, and the verifying key; 96 / 192 bytes a point, the same in the file and in memory.
/// A real file is smaller where B is sparse (32 GiB PoRep: b_aux is 25.4% dense, so ~47 GB
/// against this bound's ~75 GB).
pub fn params_bytes_max(shape: &Shape) -> u64 {
    use arenaprove::engine::groth16::params::{G1_BYTES, G2_BYTES, VK_FIXED_BYTES};
    let vars = (shape.inputs + shape.aux) as u64;
    let g1_points = (shape.domain_size as u64).saturating_sub(1) + shape.aux as u64 + 2 * vars;
    (VK_FIXED_BYTES + 6 * 4) as u64
        + shape.inputs as u64 * G1_BYTES as u64
        + g1_points * G1_BYTES as u64
        + vars * G2_BYTES as u64
}

/// Peak bytes of generating parameters for `shape` with the engine's generator: in
/// `generate_parameters` the dense point vectors, their filtered copies and the resident
/// slabs are alive at once at its last line, so three times [`params_bytes_max`].
/// Measured: 0.484 GiB peak RSS against 0.49 GiB predicted for `sector` at 2^18
/// (BENCHMARKS.md, "plan").
pub fn params_generation_bytes(shape: &Shape) -> u64 {
    3 * params_bytes_max(shape)
}

/// Peak bytes of writing parameters for `shape` from its recording
/// (`write_parameters_from_matrices`, what `filecoin seal` and the Filecoin commands use for
/// PoRep): the Lagrange coefficients with either the NTT's twiddles or the QAP (three scalars
/// per variable), plus one chunk of points and the fixed-base tables: 640 MiB, which covers
/// the GPU's chunk of 2^20 points (G2's: 192 MiB of points, 192 MiB encoded, 32 MiB of
/// scalars), both backends' copies of the tables and the CUDA driver's host memory. The
/// recording's own mapped pages come on top (the plan prints them apart).
pub fn streamed_params_generation_bytes(shape: &Shape) -> u64 {
    let scalar = 32u64;
    let m = shape.domain_size as u64;
    let vars = (shape.inputs + shape.aux) as u64;
    m * scalar + (m / 2 * scalar).max(3 * vars * scalar) + (640 << 20)
}

/// Where the parameters a command will hold come from, and how big they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamsEstimate {
    /// Resident bytes once loaded (one copy).
    pub bytes: u64,
    /// "file" (the size of an existing file) or "estimate" (see [`params_bytes_max`]).
    pub source: &'static str,
    /// Peak bytes of generating them first, when no file exists.
    pub generation_bytes: Option<u64>,
}

impl ParamsEstimate {
    /// [`ParamsEstimate::for_file`] for parameters written from a recording when absent
    /// (Filecoin PoRep): the generation peak is [`streamed_params_generation_bytes`].
    pub fn for_streamed_file(path: Option<&Path>, shape: &Shape) -> ParamsEstimate {
        let mut e = ParamsEstimate::for_file(path, shape);
        if e.generation_bytes.is_some() {
            e.generation_bytes = Some(streamed_params_generation_bytes(shape));
        }
        e
    }

    /// An existing file, else the estimate for `shape` with its generation.
    pub fn for_file(path: Option<&Path>, shape: &Shape) -> ParamsEstimate {
        match path.and_then(|p| std::fs::metadata(p).ok()) {
            Some(m) => ParamsEstimate { bytes: m.len(), source: "file", generation_bytes: None },
            None => ParamsEstimate {
                bytes: params_bytes_max(shape),
                source: "estimate",
                generation_bytes: Some(params_generation_bytes(shape)),
            },
        }
    }
}

/// Where the recording of a test circuit of `shape` is cached (beside its parameters).
pub fn recording_path(kind: CircuitKind, shape: &Shape) -> PathBuf {
    cached_params_path(kind, shape).with_extension("arenaprove-pce")
}

/// Where the development params of a test circuit of `shape` are cached.
pub fn cached_params_path(kind: CircuitKind, shape: &Shape) -> PathBuf {
    cache_dir()
        .join("params")
        .join(format!("{kind}-c{}-i{}-a{}.params", shape.constraints, shape.inputs, shape.aux))
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// The engine's plan for `slots` partitions of `shape`, with `copies` of the parameters as
/// resident terms (the bench commands hold their baseline's copy beside ours).
pub fn plan_with_params(shape: &Shape, slots: usize, params: &ParamsEstimate, copies: usize) -> MemoryPlan {
    // The backend's own terms (the CPU one: blst's MSM scratch on the heap), as Engine::new adds them.
    let backend = EngineConfig::default().backend.plan_terms(&ProofShape::of_circuit(shape), None, slots);
    with_params(MemoryPlan::for_shapes(&[*shape], slots).with_terms(backend), params, copies)
}

/// `plan` with `copies` of the parameters as resident terms.
pub fn with_params(mut plan: MemoryPlan, params: &ParamsEstimate, copies: usize) -> MemoryPlan {
    for copy in 0..copies {
        let what = match (copy, params.source) {
            (0, "file") => "parameters (the file's size)".to_string(),
            (0, _) => "parameters (estimate: every A and B query point)".to_string(),
            _ => "the baseline's copy of the parameters".to_string(),
        };
        plan = plan.with_resident(&what, usize::try_from(params.bytes).unwrap_or(usize::MAX));
    }
    plan
}

/// Host bytes a plan holds: its regions (what `Engine::new` reserves) and its resident
/// parameters, the sum `MemoryPlan::check_fits` checks.
pub fn plan_host_bytes(plan: &MemoryPlan) -> u64 {
    (plan.region_bytes() as u64).saturating_add(plan.resident_bytes() as u64)
}

/// The one memory check of every command that generates parameters or builds an engine,
/// run before either: the plan (its regions and resident parameters; None for a command
/// that only generates parameters) and, first, generating the parameters
/// (`generation_bytes`, when they must be) must each fit under `limit`, or the command is
/// refused at once with the plan and the limit in the message. Returns the limit.
pub fn refuse_unless_fits(
    what: &str,
    plan: Option<&MemoryPlan>,
    generation_bytes: Option<u64>,
    limit: MemoryLimit,
) -> Result<ResolvedLimit> {
    let limit = limit.resolve()?;
    let mut lines = Vec::new();
    let mut need = 0;
    if let Some(plan) = plan {
        need = plan_host_bytes(plan);
        lines.push(format!(
            "  proving: {:.2} GiB = engine slabs {:.2} GiB ({} slots x {:.2} GiB, and shared) + resident params {:.2} GiB",
            gib(need),
            gib(plan.region_bytes() as u64),
            plan.slots,
            gib(plan.slot_bytes() as u64),
            gib(plan.resident_bytes() as u64),
        ));
    }
    if let Some(g) = generation_bytes {
        lines.push(format!("  generating params first: {:.2} GiB at its peak", gib(g)));
        need = need.max(g);
    }
    if need > limit.bytes {
        bail!(
            "refused: {what} needs {:.2} GiB ({need} bytes) but the memory limit is {:.2} GiB ({} bytes, {}); \
             nothing was generated or reserved. Try fewer --slots, a smaller circuit, or --memory-limit.\n{}\n{}",
            gib(need),
            gib(limit.bytes),
            limit.bytes,
            limit.source,
            lines.join("\n"),
            plan.map(|p| p.to_string().trim_end().to_string()).unwrap_or_default()
        );
    }
    Ok(limit)
}

/// The guard for a test circuit: its predicted shape, the engine's plan for `slots`, and
/// its parameters (`explicit`, else the cached file, else an estimate and its generation),
/// checked by [`refuse_unless_fits`] before anything is generated or reserved.
pub fn guard_test_circuit(
    what: &str,
    kind: CircuitKind,
    constraints: usize,
    slots: usize,
    explicit: Option<&Path>,
    limit: MemoryLimit,
) -> Result<(Shape, MemoryPlan, ResolvedLimit)> {
    guard_test_circuit_with(what, kind, constraints, slots, explicit, limit, None)
}

/// [`guard_test_circuit`] for a kind synthesized through its recording (`precompiled`:
/// the backend asked for): parameters written from the recording when absent (their
/// generation peak is the QAP's), and with `gpu` slots that hold the witness alone (the
/// products on the device). The recording's mapped pages are not in this plan (its size is
/// known once it is recorded); `soak` adds them to the peak it reports against.
pub fn guard_test_circuit_with(
    what: &str,
    kind: CircuitKind,
    constraints: usize,
    slots: usize,
    explicit: Option<&Path>,
    limit: MemoryLimit,
    precompiled: Option<BackendChoice>,
) -> Result<(Shape, MemoryPlan, ResolvedLimit)> {
    check_slots(slots)?;
    let shape = predicted_shape(kind, constraints)?;
    let cached = cached_params_path(kind, &shape);
    let params = match precompiled {
        Some(_) => ParamsEstimate::for_streamed_file(Some(explicit.unwrap_or(&cached)), &shape),
        None => ParamsEstimate::for_file(Some(explicit.unwrap_or(&cached)), &shape),
    };
    let mut plan = plan_with_params(&shape, slots, &params, 1);
    if precompiled == Some(BackendChoice::Gpu) {
        plan = plan.without_host_abc();
    }
    let limit = refuse_unless_fits(what, Some(&plan), params.generation_bytes, limit)?;
    Ok((shape, plan, limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The predicted shape is the counted one, for every kind across its sizing regimes
    /// (sector: reduced challenges, whole challenges, whole challenges with extra levels).
    #[test]
    fn predicted_shapes_are_the_counted_shapes() {
        let cases: &[(CircuitKind, &[usize])] = &[
            (CircuitKind::Chain, &[1, 3, 1024, 65_536]),
            (CircuitKind::Sha, &[1, 30_000, 100_000, 250_000]),
            (CircuitKind::Sector, &[1, 1024, 4096, 16_384, 37_156, 65_536, 100_000, 262_144]),
        ];
        for &(kind, sizes) in cases {
            for &n in sizes {
                let counted = shape_of_native(&circuit(kind, n, 0, 0).unwrap()).unwrap();
                assert_eq!(predicted_shape(kind, n).unwrap(), counted, "{kind} at {n}");
            }
        }
    }

    #[test]
    fn predicted_shape_refuses_zero_and_the_absurd_at_once() {
        let t = Instant::now();
        let e = predicted_shape(CircuitKind::Sector, 0).unwrap_err().to_string();
        assert!(e.contains("--constraints must be at least 1"), "{e}");
        assert!(predicted_shape(CircuitKind::Chain, PLAN_CONSTRAINTS_MAX + 1).is_err());
        // 10^12 constraints: planned, not synthesized.
        let s = predicted_shape(CircuitKind::Sector, 1_000_000_000_000).unwrap();
        assert!(s.constraints.abs_diff(1_000_000_000_000) < 40_000, "{s}");
        assert!(t.elapsed().as_secs() < 5);
    }

    #[test]
    fn memory_limits_parse() {
        assert_eq!("auto".parse(), Ok(MemoryLimit::Auto));
        assert_eq!("4096".parse(), Ok(MemoryLimit::Bytes(4096)));
        assert_eq!("24GiB".parse(), Ok(MemoryLimit::Bytes(24 << 30)));
        assert_eq!("512 mib".parse(), Ok(MemoryLimit::Bytes(512 << 20)));
        for bad in ["0", "", "GiB", "12 parsecs", "99999999999TiB", "-1"] {
            assert!(bad.parse::<MemoryLimit>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_guard_names_the_plan_and_the_limit() {
        let shape = predicted_shape(CircuitKind::Chain, 65_536).unwrap();
        let params = ParamsEstimate::for_file(None, &shape);
        assert_eq!(params.generation_bytes, Some(3 * params.bytes));
        let plan = plan_with_params(&shape, 2, &params, 1);
        assert_eq!(plan.resident_bytes() as u64, params.bytes);
        assert_eq!(plan_host_bytes(&plan), (plan.region_bytes() + plan.resident_bytes()) as u64);
        // What proving holds, or generating the params first, whichever is larger.
        let need = plan_host_bytes(&plan).max(3 * params.bytes);
        let gen = params.generation_bytes;
        let e = refuse_unless_fits("prove", Some(&plan), gen, MemoryLimit::Bytes(need - 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("needs {:.2} GiB ({need} bytes)", need as f64 / (1u64 << 30) as f64)),
            "{e}"
        );
        assert!(e.contains(&format!("({} bytes, --memory-limit)", need - 1)), "{e}");
        assert!(
            e.contains("engine slabs")
                && e.contains("generating params")
                && e.contains(plan.to_string().trim_end()),
            "{e}"
        );
        let ok = refuse_unless_fits("prove", Some(&plan), gen, MemoryLimit::Bytes(need)).unwrap();
        assert_eq!(ok, ResolvedLimit { bytes: need, source: "--memory-limit" });
        // The engine's own check agrees with the guard's sum.
        assert!(plan.check_fits(need as usize).is_ok());
        assert!(plan.check_fits(plan_host_bytes(&plan) as usize - 1).is_err());
        // An existing file: its size, nothing to generate.
        let file = ParamsEstimate::for_file(Some(Path::new("Cargo.toml")), &shape);
        assert_eq!((file.source, file.generation_bytes), ("file", None));
        assert!(MemoryLimit::Auto.resolve().unwrap().bytes > 0);
    }
}
