//! `arenaprove params gen|inspect|verify`: parameter files in bellperson 0.27's format.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::engine::deps::blst::{blst_p1_affine, blst_p2_affine};
use arenaprove::engine::groth16::error::Result as GrothResult;
use arenaprove::engine::groth16::{CpuSubgroupCheck, Parameters, ParamsMemory, SubgroupCheck};

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Generates insecure development params (random toxic waste) for a test circuit.
    Gen {
        #[arg(long, default_value = "sector")]
        circuit: CircuitKind,
        #[arg(long, default_value_t = 16_384)]
        constraints: usize,
        #[arg(long)]
        out: PathBuf,
        /// Also writes the verifying key.
        #[arg(long)]
        vk_out: Option<PathBuf>,
        /// Memory generation may use: bytes (or with KiB/MiB/GiB), or auto (MemAvailable).
        #[arg(long, default_value = "auto")]
        memory_limit: common::MemoryLimit,
    },
    /// Prints the sections of a params file (unchecked load).
    Inspect { file: PathBuf },
    /// Loads a params file in checked mode (every point on the curve, in the subgroup) and,
    /// with --circuit/--constraints, checks it fits that circuit.
    Verify {
        file: PathBuf,
        /// Where the subgroup tests run: `cpu` (blst's per point, fused with the decode, on
        /// every core) or `gpu` (the decode on the CPU, then every section's subgroup test on
        /// GPU 0: what a 47 GB file needs).
        #[arg(long, value_enum, default_value = "cpu")]
        backend: common::BackendChoice,
        /// With `--backend gpu`: the baseline, blst's subgroup test on every core over the
        /// first N points of h and of b_g2, timed in the same run (0: none).
        #[arg(long, default_value_t = 1 << 20)]
        cpu_sample: usize,
        #[arg(long)]
        circuit: Option<CircuitKind>,
        #[arg(long)]
        constraints: Option<usize>,
    },
}

pub fn run(a: Args) -> Result<()> {
    match a.cmd {
        Cmd::Gen { circuit, constraints, out, vk_out, memory_limit } => {
            let shape = common::predicted_shape(circuit, constraints)?;
            let params = common::ParamsEstimate::for_file(None, &shape);
            common::refuse_unless_fits("params gen", None, params.generation_bytes, memory_limit)?;
            let sample = common::circuit(circuit, constraints, 0, 0)?;
            let t0 = Instant::now();
            let p = common::generate_dev_params(sample, &ParamsMemory::default())?;
            p.write_file(&out)?;
            println!(
                "wrote {} ({} bytes) in {:.2} s; INSECURE development parameters",
                out.display(),
                p.encoded_bytes(),
                t0.elapsed().as_secs_f64()
            );
            if let Some(v) = vk_out {
                p.vk.write_file(&v)?;
                println!("wrote {}", v.display());
            }
        }
        Cmd::Inspect { file } => {
            let p = Parameters::read_file(&file, false, &ParamsMemory::default())?;
            println!("{}", file.display());
            println!("  public inputs (IC, ONE incl.) {}", p.vk.ic.len());
            println!("  domain                        {}", p.domain_size());
            println!(
                "  h {}  l {}  a {}  b_g1 {}  b_g2 {}",
                p.h().len(),
                p.l().len(),
                p.a().len(),
                p.b_g1().len(),
                p.b_g2().len()
            );
            println!("  encoded bytes                 {}", p.encoded_bytes());
        }
        Cmd::Verify { file, backend, cpu_sample, circuit, constraints } => {
            let t0 = Instant::now();
            let (p, loaded) = match backend {
                common::BackendChoice::Cpu => (
                    Parameters::read_file(&file, true, &ParamsMemory::default())?,
                    t0.elapsed().as_secs_f64(),
                ),
                common::BackendChoice::Gpu => {
                    let mut check = Timed::new(arenaprove_tools::backend::subgroup_check(backend));
                    let p = Parameters::read_file_checked_by(&file, &mut check, &ParamsMemory::default())?;
                    let loaded = t0.elapsed().as_secs_f64();
                    let decoded = loaded - check.g1.1 - check.g2.1;
                    println!("decode and curve check on the CPU: {decoded:.2} s");
                    check.report(&p, cpu_sample);
                    (p, loaded)
                }
            };
            println!(
                "{}: every point valid ({loaded:.2} s checked load, {} bytes)",
                file.display(),
                p.encoded_bytes()
            );
            if let (Some(k), Some(n)) = (circuit, constraints) {
                let sample = common::circuit(k, n, 0, 0)?;
                let shape = arenaprove::circuits::shape::shape_of_native(&sample)?;
                if let Err(e) = p.check_fits(&shape) {
                    bail!("{}: {e} ({k} at {n} constraints, shape {shape})", file.display());
                }
                println!("fits {k} at {n} constraints (shape {shape})");
            }
        }
    }
    Ok(())
}

/// A [`SubgroupCheck`] that times its G1 and G2 calls (`params verify --backend gpu`).
struct Timed {
    inner: Box<dyn SubgroupCheck>,
    /// (points, seconds) over G1 calls and over G2 calls.
    g1: (usize, f64),
    g2: (usize, f64),
}

/// Runs `f` over `n` points, adding them and its time to `total`.
fn timed<R>(total: &mut (usize, f64), n: usize, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    *total = (total.0 + n, total.1 + t.elapsed().as_secs_f64());
    r
}

impl Timed {
    fn new(inner: Box<dyn SubgroupCheck>) -> Timed {
        Timed { inner, g1: (0, 0.0), g2: (0, 0.0) }
    }

    /// Prints the checker's rate per group and, over the first `sample` points of h and
    /// b_g2, blst's on every core (the baseline, same run) and the ratio.
    fn report(&self, p: &Parameters, sample: usize) {
        let rate = |(n, s): (usize, f64)| n as f64 / s.max(1e-9);
        let (n1, n2) = (sample.min(p.h().len()), sample.min(p.b_g2().len()));
        let mut baseline = [(0, 0.0); 2];
        let outside = [
            timed(&mut baseline[0], n1, || CpuSubgroupCheck.first_outside_g1(&p.h()[..n1])),
            timed(&mut baseline[1], n2, || CpuSubgroupCheck.first_outside_g2(&p.b_g2()[..n2])),
        ];
        for (group, ours, cpu, outside) in
            [("G1", self.g1, baseline[0], &outside[0]), ("G2", self.g2, baseline[1], &outside[1])]
        {
            print!(
                "subgroup check {group} on {}: {} points in {:.2} s ({:.1} M points/s)",
                self.inner.name(),
                ours.0,
                ours.1,
                rate(ours) / 1e6
            );
            if cpu.0 == 0 {
                println!();
                continue;
            }
            let agree = match outside {
                Ok(None) => "all in the subgroup",
                _ => "A POINT OUTSIDE (disagrees)",
            };
            println!(
                "; baseline blst on {} threads, first {} points: {:.2} M points/s ({agree}); ratio {:.1}x",
                rayon::current_num_threads(),
                cpu.0,
                rate(cpu) / 1e6,
                rate(ours) / rate(cpu)
            );
        }
    }
}

impl SubgroupCheck for Timed {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn first_outside_g1(&mut self, points: &[blst_p1_affine]) -> GrothResult<Option<usize>> {
        timed(&mut self.g1, points.len(), || self.inner.first_outside_g1(points))
    }
    fn first_outside_g2(&mut self, points: &[blst_p2_affine]) -> GrothResult<Option<usize>> {
        timed(&mut self.g2, points.len(), || self.inner.first_outside_g2(points))
    }
}
