//! `arenaprove prove`: the main job. With no arguments: development params for the default
//! sector circuit (generated once, then cached), one sector proven through the long-lived
//! engine, every partition proof verified, and a short timeline.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::engine::groth16::{prepare_verifying_key, verify_proof};
use arenaprove::engine::pipeline::{chrome_trace_json, AllocMode, Job, JobOutput, Level};

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    /// Circuit kind: chain, sha or sector.
    #[arg(long, default_value = "sector")]
    pub circuit: CircuitKind,
    /// Target constraints per partition (each kind picks its nearest size).
    #[arg(long, default_value_t = 16_384)]
    pub constraints: usize,
    /// Partitions in the sector (PoRep has 10).
    #[arg(long, default_value_t = 10)]
    pub partitions: usize,
    /// Sector id (seeds the partitions' witnesses).
    #[arg(long, default_value_t = 1)]
    pub sector_id: u64,
    /// A parameter file in bellperson's format (checked on load) instead of cached dev params.
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Partitions in flight (memory = slots x one partition's working set).
    #[arg(long, default_value_t = 2)]
    pub slots: usize,
    /// Prover backend: cpu, or gpu (CUDA; falls back to cpu, saying so, without a GPU).
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: common::BackendChoice,
    /// Writes the proof(s) in bellperson's byte format (partitions concatenated in order).
    #[arg(long)]
    pub proof_out: Option<PathBuf>,
    /// Writes the verifying key in bellperson's byte format.
    #[arg(long)]
    pub vk_out: Option<PathBuf>,
    /// Writes the public inputs (ONE excluded) as JSON: 0x + 64 hex digits, little-endian.
    #[arg(long)]
    pub inputs_out: Option<PathBuf>,
    /// Writes a Chrome trace-event JSON of the run (open it in Perfetto).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Memory the run may use (engine slabs + params): bytes (or with KiB/MiB/GiB), or
    /// auto (MemAvailable). A plan above it is refused before anything is generated.
    #[arg(long, default_value = "auto")]
    pub memory_limit: common::MemoryLimit,
}

pub fn run(a: Args) -> Result<()> {
    if a.partitions == 0 {
        bail!("--partitions must be at least 1");
    }
    let slots = a.slots.clamp(1, a.partitions);
    let (shape, _, limit) = common::guard_test_circuit(
        "prove",
        a.circuit,
        a.constraints,
        slots,
        a.params.as_deref(),
        a.memory_limit,
    )?;
    println!("circuit: {} partition nearest {} constraints: {shape}", a.circuit, a.constraints);
    let loaded = common::params_for(a.circuit, a.constraints, a.params.as_deref(), a.quiet)?;
    println!(
        "params: {} ({}; {:.2} s)",
        loaded.path.display(),
        if loaded.generated { "generated, insecure dev params" } else { "loaded" },
        loaded.seconds
    );
    let engine = common::engine(
        a.circuit,
        &loaded,
        slots,
        AllocMode::Slab,
        &limit,
        common::backend_factory(a.backend),
    )?;
    print!("{}", engine.memory_plan());

    let parts = (0..a.partitions)
        .map(|k| common::circuit(a.circuit, a.constraints, a.sector_id, k).map(common::partition_circuit))
        .collect::<Result<Vec<_>>>()?;
    let spinner = common::spinner(a.quiet, format!("proving {} partitions", a.partitions));
    let t0 = Instant::now();
    let out = engine.prove(Job::new(a.circuit.to_string(), parts))?;
    let wall = t0.elapsed().as_secs_f64();
    if let Some(s) = spinner {
        s.finish_and_clear();
    }

    // Independent verification of every partition, with a freshly prepared key.
    let pvk = prepare_verifying_key(&loaded.params.vk);
    let mut verified = 0;
    for (k, p) in out.partitions.iter().enumerate() {
        match p {
            Ok(p) => {
                if !verify_proof(&pvk, &p.proof, &p.public_inputs)? {
                    bail!("partition {k}: proof does not verify");
                }
                verified += 1;
            }
            Err(e) => bail!("{e}"),
        }
    }
    print_timeline(&out);
    println!(
        "sector {}: {} of {} partition proofs verified; {:.2} s wall ({:.1} proofs/min)",
        a.sector_id,
        verified,
        a.partitions,
        wall,
        a.partitions as f64 * 60.0 / wall
    );

    let proofs = out.proof_bytes().context("a partition failed")?;
    if let Some(p) = &a.proof_out {
        std::fs::write(p, &proofs).with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {} ({} bytes)", p.display(), proofs.len());
    }
    if let Some(p) = &a.vk_out {
        loaded.params.vk.write_file(p)?;
        println!("wrote {}", p.display());
    }
    if let Some(p) = &a.inputs_out {
        let per: Vec<Vec<String>> = out
            .partitions
            .iter()
            .map(|p| {
                p.as_ref()
                    .map(|p| p.public_inputs.iter().map(common::scalar_hex).collect())
                    .unwrap_or_default()
            })
            .collect();
        let json = if per.len() == 1 {
            serde_json::to_string_pretty(&per[0])?
        } else {
            serde_json::to_string_pretty(&per)?
        };
        std::fs::write(p, json + "\n").with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {}", p.display());
    }
    if let Some(p) = &a.trace {
        std::fs::write(p, chrome_trace_json(&out.spans))
            .with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {} (open in Perfetto)", p.display());
    }
    let report = engine.shutdown(arenaprove::engine::pipeline::ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        bail!("{} slabs still leased at shutdown", report.slabs_outstanding);
    }
    Ok(())
}

/// Median per stage over the partitions, and the unaccounted gap of the composite stages.
pub fn print_timeline(out: &JobOutput) {
    println!("timeline (median over {} partitions, ms):", out.partitions.len());
    for (name, level, durations) in arenaprove::benchkit::spans_by_name(&out.spans) {
        let v: Vec<f64> = durations.iter().map(|&ns| ns as f64 / 1e6).collect();
        let indent = match level {
            Level::Stage => "  ",
            Level::Call => "    ",
            Level::Kernel => "      ",
        };
        println!("{indent}{name:<14} {:>10.3}", arenaprove::benchkit::upper_median(&v));
    }
    for stage in ["prove_start", "finalize"] {
        let gaps: Vec<f64> =
            out.gaps.iter().filter(|g| g.stage == stage).map(|g| g.gap_ns as f64 / 1e6).collect();
        let worst = out.gaps.iter().filter(|g| g.stage == stage).map(|g| g.percent()).fold(0.0, f64::max);
        if !gaps.is_empty() {
            println!(
                "  gap in {stage:<11} {:>10.3}  (outer timer minus its inner timers; worst partition {worst:.2}% of the stage)",
                arenaprove::benchkit::upper_median(&gaps)
            );
        }
    }
}
