//! What `prove`, `soak` and `params` share: the circuit kinds, the parameter cache, the
//! engine set-up and small report helpers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove::arena::RegionConfig;
use arenaprove::circuits::circuits::{AnyCircuit, CircuitKind, SectorPartitionCircuit};
use arenaprove::circuits::native::synthesize_bellpepper;
use arenaprove::circuits::shape::shape_of_native;
use arenaprove::circuits::Shape;
use arenaprove::engine::deps::bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use arenaprove::engine::deps::blstrs::Scalar;
use arenaprove::engine::deps::rand_chacha::ChaCha20Rng;
use arenaprove::engine::deps::rand_core::SeedableRng;
use arenaprove::engine::groth16::{generate_random_parameters, Parameters, ParamsMemory};
use arenaprove::engine::pipeline::{native, AllocMode, CircuitSpec, Engine, EngineConfig, PartitionCircuit};
use arenaprove::engine::{BackendFactory, CpuBackend};

/// The circuit of `kind` nearest `constraints`, for partition `partition` of sector `sector_id`.
pub fn circuit(
    kind: CircuitKind,
    constraints: usize,
    sector_id: u64,
    partition: usize,
) -> Result<AnyCircuit> {
    Ok(match kind {
        CircuitKind::Sector => {
            AnyCircuit::Sector(SectorPartitionCircuit::for_constraints(sector_id, partition, constraints))
        }
        // chain and sha: one instance per (sector, partition), seeded by both.
        _ => arenaprove::circuits::circuits::build(kind, constraints, sector_id * 1_000 + partition as u64)?,
    })
}

/// A native circuit seen through bellpepper-core's `Circuit` trait (the same constraints
/// as the native path, so parameters made through it fit native proving).
pub struct ViaBridge(pub AnyCircuit);

impl Circuit<Scalar> for ViaBridge {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        synthesize_bellpepper(&self.0, cs)
    }
}

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

/// Loads `--params FILE` (checked), or the cached development params for this shape,
/// generating and caching them when absent or stale.
pub fn params_for(
    kind: CircuitKind,
    constraints: usize,
    explicit: Option<&Path>,
    quiet: bool,
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
    let dir = cache_dir().join("params");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("{kind}-c{}-i{}-a{}.params", shape.constraints, shape.inputs, shape.aux));
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
    let params = generate_dev_params(sample, &mem)?;
    let tmp = path.with_extension("params.tmp");
    params.write_file(&tmp)?;
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

/// Synthesis workers: one per core beyond the first, at least 1 and at most `slots`.
pub fn synth_workers(slots: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).clamp(1, slots.max(1))
}

/// `--mlock` (a global flag): lock every engine region in memory.
pub static MLOCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--backend`: which prover the engine uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Cpu,
    /// The CUDA backend on GPU 0; the CPU one (said once) where there is none.
    Gpu,
}

/// The backend factory for `choice`. `gpu` falls back to the CPU backend, saying so once
/// on stderr, on a binary built without the `cuda` feature or a host without a GPU.
pub fn backend_factory(choice: BackendChoice) -> Arc<dyn BackendFactory> {
    match choice {
        BackendChoice::Cpu => Arc::new(CpuBackend),
        BackendChoice::Gpu => gpu_factory(),
    }
}

#[cfg(feature = "cuda")]
fn gpu_factory() -> Arc<dyn BackendFactory> {
    match arenaprove::cuda::CudaFactory::open(0) {
        Ok(f) => {
            eprintln!("backend: GPU, {}", f.describe());
            Arc::new(f)
        }
        Err(e) => {
            eprintln!("backend: no GPU ({e}); using the CPU backend");
            Arc::new(CpuBackend)
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn gpu_factory() -> Arc<dyn BackendFactory> {
    eprintln!("backend: built without the `cuda` feature; using the CPU backend");
    Arc::new(CpuBackend)
}

/// Engine limits the CLI uses: slots for overlap, one synthesis worker per spare core.
pub fn engine(
    kind: CircuitKind,
    loaded: &LoadedParams,
    slots: usize,
    alloc: AllocMode,
    backend: Arc<dyn BackendFactory>,
) -> Result<Engine> {
    let mut cfg = EngineConfig {
        slots,
        synth_workers: synth_workers(slots),
        alloc,
        backend,
        ..EngineConfig::default()
    };
    cfg.region.mlock = MLOCK.load(std::sync::atomic::Ordering::Relaxed);
    let spec = CircuitSpec { kind: kind.to_string(), shape: loaded.shape, params: loaded.params.clone() };
    Ok(Engine::new(cfg, vec![spec])?)
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

pub fn quantile_u64(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}
