//! Sector throughput on one GPU: arenaprove's engine with the CUDA backend against
//! bellperson 0.27 + supraseal-c2 proving the same sectors with
//! `create_random_proof_batch` (how filecoin-proofs proves a sector's partitions), in one
//! process, same parameters file, same circuits. Every proof of both sides is verified
//! (ours by the engine; the baseline's by bellperson's verifier against the public inputs
//! our engine reported for the same circuits).
//!
//!     peer-gpu-bench --circuit chain|sha|sector --constraints N [--partitions 10]
//!         [--sectors 3] [--warmup-partitions P] [--rounds 1] [--slots 2]
//!         [--synth-workers W] [--finalize-workers F] [--no-peer] [--cpu] [--peer-exe PATH] [--peer-timeout S]
//!         [--bellperson-params] [--precompiled]
//!     peer-gpu-bench --msm 20,22,24 [--msm-reps 5] [--msm-fixed-gib G]
//!
//! The baseline runs in a child process (`--peer-only`), so the two CUDA stacks (cudarc's
//! driver API here, supraseal's static CUDA runtime there) and the two sets of thread
//! pools never share a process. `--peer-exe` names the binary the child runs: the
//! baseline build (`peer-baseline`, its own workspace under baseline/, where sppark is the
//! version supraseal-c2 0.1.2's lockfile names; scripts/peer-gpu.sh builds both). Without
//! it the child is this binary. `--cpu` puts our engine on the CPU backend.
//! `--bellperson-params` (diagnosis) has the baseline prove with parameters from
//! bellperson's own generator instead of the file ours wrote. `--precompiled` has ours
//! synthesize through the circuit's recording (native witness alone, products from the
//! recording on the device); the baseline synthesizes as bellperson does either way.
//!
//! Prints one line per side and round, then one JSON object (`ratio` = baseline seconds
//! per partition / ours; higher is better for us). Build: scripts/peer-gpu.sh.

extern crate blst;

#[cfg(feature = "ours-gpu")]
mod msm;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arenaprove::benchkit::median;
use arenaprove::benchkit::sector::{partition, run_ours, Config};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::circuits::native::ViaBridge;
use arenaprove::engine::deps::blstrs::{Bls12, Scalar};
use arenaprove::engine::groth16::{generate_random_parameters, Parameters, ParamsMemory};
use arenaprove::engine::{BackendFactory, CpuBackend};
use bellperson::groth16::{
    create_random_proof_batch, prepare_verifying_key, verify_proof, SuprasealParameters, VerifyingKey,
};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

struct Args {
    cfg: Config,
    rounds: usize,
    peer: bool,
    cpu: bool,
    params_dir: PathBuf,
    /// The binary the baseline's child process runs (default: this one).
    peer_exe: Option<PathBuf>,
    /// Kill the baseline's process after this long (default: wait).
    peer_timeout: Option<std::time::Duration>,
    /// Diagnosis: the baseline proves with parameters from bellperson's own generator (same
    /// circuit, other toxic waste) instead of the file our generator wrote.
    bellperson_params: bool,
    /// Child mode: (params file, public inputs file) of the parent's run.
    peer_only: Option<(PathBuf, PathBuf)>,
    /// `--msm 20,22,24`: our G1 MSM against sppark's at these sizes (msm.rs), nothing else.
    msm: Vec<u32>,
    msm_reps: usize,
    /// `--msm-fixed-gib G`: ours also over fixed-base windows, the cost model's choice
    /// within G GiB of copies (0: not run).
    msm_fixed_gib: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        cfg: Config {
            kind: CircuitKind::Chain,
            constraints: 1 << 20,
            partitions: 10,
            sectors: 3,
            warmup_partitions: 10,
            slots: 2,
            synth_workers: 2,
            finalize_workers: None,
            precompiled: false,
        },
        rounds: 1,
        peer: true,
        cpu: false,
        params_dir: std::env::temp_dir(),
        peer_exe: None,
        bellperson_params: false,
        peer_timeout: None,
        peer_only: None,
        msm: Vec::new(),
        msm_reps: 5,
        msm_fixed_gib: 0,
    };
    let mut synth_workers = None;
    let mut warmup = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--circuit" => a.cfg.kind = value()?.parse().map_err(|e| format!("--circuit: {e}"))?,
            "--constraints" => a.cfg.constraints = num(value()?)?,
            "--partitions" => a.cfg.partitions = num(value()?)?,
            "--sectors" => a.cfg.sectors = num(value()?)?,
            "--rounds" => a.rounds = num(value()?)?.max(1),
            "--slots" => a.cfg.slots = num(value()?)?,
            "--synth-workers" => synth_workers = Some(num(value()?)?),
            "--finalize-workers" => a.cfg.finalize_workers = Some(num(value()?)?),
            "--warmup-partitions" => warmup = Some(num(value()?)?),
            "--params-dir" => a.params_dir = PathBuf::from(value()?),
            "--peer-exe" => a.peer_exe = Some(PathBuf::from(value()?)),
            "--bellperson-params" => a.bellperson_params = true,
            "--peer-timeout" => a.peer_timeout = Some(std::time::Duration::from_secs(num(value()?)? as u64)),
            "--no-peer" => a.peer = false,
            "--precompiled" => a.cfg.precompiled = true,
            "--msm" => {
                a.msm = value()?
                    .split(',')
                    .map(|x| x.parse().map_err(|e| format!("--msm {x}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--msm-reps" => a.msm_reps = num(value()?)?,
            "--msm-fixed-gib" => a.msm_fixed_gib = num(value()?)?,
            "--cpu" => a.cpu = true,
            "--peer-only" => {
                let params = PathBuf::from(value()?);
                a.peer_only = Some((params, PathBuf::from(value()?)));
            }
            "-h" | "--help" => {
                println!("{}", include_str!("main.rs").lines().take(26).collect::<Vec<_>>().join("\n"));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}' (--help)")),
        }
    }
    a.cfg.synth_workers = synth_workers.unwrap_or(a.cfg.slots).max(1);
    a.cfg.warmup_partitions = warmup.unwrap_or(a.cfg.partitions).clamp(1, a.cfg.partitions.max(1));
    Ok(a)
}

#[cfg(not(feature = "ours-gpu"))]
fn gpu_factory() -> Arc<dyn BackendFactory> {
    eprintln!("ours: built without the CUDA backend (the baseline's build); CPU backend");
    Arc::new(CpuBackend)
}

#[cfg(feature = "ours-gpu")]
fn gpu_factory() -> Arc<dyn BackendFactory> {
    // Every visible GPU, as supraseal-c2 on the baseline side uses them all.
    match arenaprove::cuda::CudaFactory::open_all() {
        Ok(f) => {
            eprintln!("ours: GPU backend, {}", f.describe());
            Arc::new(f)
        }
        Err(e) => {
            eprintln!("ours: no GPU ({e}); CPU backend");
            Arc::new(CpuBackend)
        }
    }
}

/// Deletes a file when dropped: the run's parameter and input files go however it ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The baseline: each sector as one `create_random_proof_batch`; returns seconds per
/// partition over sectors 2..=N, every proof verified.
fn run_peer(
    cfg: &Config,
    path: &std::path::Path,
    params: &Parameters,
    inputs: &[Vec<Vec<Scalar>>],
    bellperson_params: bool,
) -> Result<f64, String> {
    let mut bp_file = None;
    let (path, vk_bytes) = if bellperson_params {
        let t = Instant::now();
        let bp = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
            ViaBridge(partition(cfg.kind, cfg.constraints, 1, 0)?),
            &mut ChaCha8Rng::seed_from_u64(43),
        )
        .map_err(|e| format!("bellperson's generator: {e}"))?;
        let bp_path = path.with_extension("bellperson.params");
        bp_file = Some(RemoveOnDrop(bp_path.clone()));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&bp_path).map_err(|e| e.to_string())?);
        bp.write(&mut file).map_err(|e| e.to_string())?;
        drop(file);
        let mut vk = Vec::new();
        bp.vk.write(&mut vk).map_err(|e| e.to_string())?;
        eprintln!(
            "peer: bellperson's generator wrote {} in {:.1} s",
            bp_path.display(),
            t.elapsed().as_secs_f64()
        );
        (bp_path, vk)
    } else {
        (path.to_path_buf(), params.vk.to_bytes())
    };
    let t_load = Instant::now();
    let sp = SuprasealParameters::<Bls12>::new(path.clone()).map_err(|e| format!("supraseal params: {e}"))?;
    eprintln!("peer: SRS loaded in {:.1} s", t_load.elapsed().as_secs_f64());
    let vk = VerifyingKey::<Bls12>::read(&vk_bytes[..]).map_err(|e| e.to_string())?;
    let pvk = prepare_verifying_key(&vk);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut steady = 0.0;
    for sector in 1..=cfg.sectors as u64 {
        let n = if sector == 1 { cfg.warmup_partitions } else { cfg.partitions };
        let circuits = (0..n)
            .map(|p| partition(cfg.kind, cfg.constraints, sector, p).map(ViaBridge))
            .collect::<Result<Vec<_>, _>>()?;
        let t0 = Instant::now();
        let proofs = create_random_proof_batch(circuits, &sp, &mut rng).map_err(|e| e.to_string())?;
        let dt = t0.elapsed().as_secs_f64();
        eprintln!("peer: sector {sector}: batch of {} in {dt:.3} s", proofs.len());
        if sector > 1 {
            steady += dt;
        }
        for (p, proof) in proofs.iter().enumerate() {
            let public = &inputs[sector as usize - 1][p];
            match verify_proof(&pvk, proof, public) {
                Ok(true) => {}
                other => {
                    return Err(format!("peer: sector {sector} partition {p} does not verify: {other:?}"))
                }
            }
        }
    }
    drop(bp_file);
    Ok(steady / ((cfg.sectors - 1) * cfg.partitions) as f64)
}

/// Public inputs, per sector and partition, as the child reads them: for each sector a
/// u32 partition count, for each partition a u32 input count, then 32-byte LE scalars.
fn write_inputs(path: &std::path::Path, inputs: &[Vec<Vec<Scalar>>]) -> Result<(), String> {
    let mut out = Vec::new();
    out.extend_from_slice(&(inputs.len() as u32).to_le_bytes());
    for sector in inputs {
        out.extend_from_slice(&(sector.len() as u32).to_le_bytes());
        for part in sector {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            for x in part {
                out.extend_from_slice(&x.to_bytes_le());
            }
        }
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_inputs(path: &std::path::Path) -> Result<Vec<Vec<Vec<Scalar>>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8], String> {
        let s = bytes.get(at..at + n).ok_or_else(|| format!("{}: truncated", path.display()))?;
        at += n;
        Ok(s)
    };
    let mut out = Vec::new();
    let sectors = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    for _ in 0..sectors {
        let parts = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
        let mut sector = Vec::new();
        for _ in 0..parts {
            let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
            let mut part = Vec::new();
            for _ in 0..n {
                let b: [u8; 32] = take(32)?.try_into().expect("32 bytes");
                part.push(Option::from(Scalar::from_bytes_le(&b)).ok_or("a public input is not a scalar")?);
            }
            sector.push(part);
        }
        out.push(sector);
    }
    Ok(out)
}

/// Runs the baseline in a child process of this binary; its seconds per partition.
fn peer_in_child(a: &Args, params: &std::path::Path, inputs: &[Vec<Vec<Scalar>>]) -> Result<f64, String> {
    let path = params.with_extension("inputs");
    let _inputs_file = RemoveOnDrop(path.clone());
    write_inputs(&path, inputs)?;
    let exe = match &a.peer_exe {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| e.to_string())?,
    };
    let c = &a.cfg;
    let mut child = std::process::Command::new(exe)
        .args(["--circuit", &c.kind.to_string(), "--constraints", &c.constraints.to_string()])
        .args(["--partitions", &c.partitions.to_string(), "--sectors", &c.sectors.to_string()])
        .args(["--warmup-partitions", &c.warmup_partitions.to_string()])
        .args(a.bellperson_params.then_some("--bellperson-params"))
        .arg("--peer-only")
        .arg(params)
        .arg(&path)
        .stderr(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("baseline process: {e}"))?;
    // The baseline can hang inside a GPU kernel (BENCHMARKS.md): past --peer-timeout it is
    // killed and the run ends with that error instead of waiting for ever.
    if let Some(limit) = a.peer_timeout {
        let t0 = Instant::now();
        while child.try_wait().map_err(|e| format!("baseline process: {e}"))?.is_none() {
            if t0.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the baseline did not finish in {} s (killed)", limit.as_secs()));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("baseline process: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("baseline process failed ({}): {text}", out.status));
    }
    text.trim().parse::<f64>().map_err(|e| format!("baseline process printed '{text}': {e}"))
}

fn main() {
    // bellperson logs its stages through `log` (RUST_LOG=info shows them).
    env_logger::init();
    if let Err(e) = real_main() {
        eprintln!("peer-gpu-bench: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), String> {
    let a = parse()?;
    if !a.msm.is_empty() {
        #[cfg(feature = "ours-gpu")]
        return msm::run(&a.msm, a.msm_reps, a.msm_fixed_gib);
        #[cfg(not(feature = "ours-gpu"))]
        return Err("--msm needs the build with our GPU backend (ours-gpu)".into());
    }
    let cfg = &a.cfg;
    if let Some((params_path, inputs_path)) = &a.peer_only {
        let params =
            Parameters::read_file(params_path, false, &ParamsMemory::default()).map_err(|e| e.to_string())?;
        let inputs = read_inputs(inputs_path)?;
        let p = run_peer(cfg, params_path, &params, &inputs, a.bellperson_params)?;
        println!("{p}");
        return Ok(());
    }
    let t0 = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let params = Arc::new(
        generate_random_parameters(
            ViaBridge(partition(cfg.kind, cfg.constraints, 1, 0)?),
            &mut rng,
            &ParamsMemory::default(),
        )
        .map_err(|e| e.to_string())?,
    );
    let path =
        a.params_dir.join(format!("peer-gpu-{}-{}-{}.params", cfg.kind, cfg.constraints, std::process::id()));
    let _params_file = RemoveOnDrop(path.clone());
    params.write_file(&path).map_err(|e| e.to_string())?;
    eprintln!(
        "params: {} constraints' circuit, domain {}, generated and written in {:.1} s",
        cfg.constraints,
        params.domain_size(),
        t0.elapsed().as_secs_f64()
    );
    let (mut ours_pp, mut peer_pp) = (Vec::new(), Vec::new());
    let mut last_ours = None;
    for round in 1..=a.rounds {
        let backend: Arc<dyn BackendFactory> = if a.cpu { Arc::new(CpuBackend) } else { gpu_factory() };
        let ours = run_ours(cfg, params.clone(), backend)?;
        println!(
            "round {round} ours ({}): {:.4} s/partition ({} partitions in {:.2} s steady; warm-up sector {:.2} s), {} proofs verified",
            ours.backend, ours.per_partition_s, ours.steady_partitions, ours.steady_s, ours.warmup_s, ours.proofs_verified
        );
        ours_pp.push(ours.per_partition_s);
        if a.peer {
            let p = peer_in_child(&a, &path, &ours.public_inputs)?;
            println!("round {round} bellperson 0.27 + supraseal-c2 batch: {p:.4} s/partition, every proof verified");
            peer_pp.push(p);
        }
        last_ours = Some(ours);
    }
    let ours = last_ours.expect("at least one round");
    let (o, p) = (median(&ours_pp), median(&peer_pp));
    let ratio = if a.peer { Some(p / o) } else { None };
    if let Some(r) = ratio {
        println!("ratio (baseline s/partition / ours): {r:.2}x");
    }
    let stages: serde_json::Map<String, serde_json::Value> =
        ours.stages_s_median.iter().map(|(n, s)| (n.to_string(), serde_json::json!(s))).collect();
    println!(
        "{}",
        serde_json::json!({
            "circuit": cfg.kind.to_string(),
            "constraints": cfg.constraints,
            "domain": params.domain_size(),
            "partitions": cfg.partitions,
            "sectors": cfg.sectors,
            "slots": cfg.slots,
            "synth_workers": cfg.synth_workers,
            "finalize_workers": cfg.finalize_workers,
            "precompiled": cfg.precompiled,
            "rounds": a.rounds,
            "ours_backend": ours.backend,
            "ours_s_per_partition": ours_pp,
            "peer_s_per_partition": peer_pp,
            "ours_partitions_per_s": 1.0 / o,
            "peer_partitions_per_s": if a.peer { Some(1.0 / p) } else { None },
            "ratio": ratio,
            "ours_stage_medians_s": stages,
            "ours_stage_gap_max_pct": ours.stage_gap_max_pct,
        })
    );
    Ok(())
}
