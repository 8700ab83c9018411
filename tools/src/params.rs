//! `arenaprove params gen|inspect|verify`: parameter files in bellperson 0.27's format.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::engine::groth16::{Parameters, ParamsMemory};

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
        Cmd::Verify { file, circuit, constraints } => {
            let t0 = Instant::now();
            let p = Parameters::read_file(&file, true, &ParamsMemory::default())?;
            println!(
                "{}: every point valid ({:.2} s checked load)",
                file.display(),
                t0.elapsed().as_secs_f64()
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
