//! `arenaprove bench-synth` (issue 3): synthesis into the heap baseline, into the arena
//! through bellpepper-core, and through the native gadgets, same run. See
//! `arenaprove::benchkit::synth` for what is measured.
use anyhow::Context;
use arenaprove::benchkit::synth::{self, Config, PathReport};
use arenaprove::circuits::circuits::CircuitKind;

#[derive(clap::Args)]
pub struct Args {
    /// Circuit family: chain, sha or sector.
    #[arg(long, default_value = "sector")]
    pub circuit: String,
    /// Target constraint count (the nearest instance is built).
    #[arg(long, default_value_t = 1 << 18)]
    pub constraints: usize,
    /// Witness seed (for sector: the sector id).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Measured runs per path (median reported).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// One JSON object per path per line.
    #[arg(long)]
    pub json: bool,
}

fn json_line(r: &PathReport) -> serde_json::Value {
    serde_json::json!({
        "path": r.path.name(),
        "circuit": r.circuit.name(),
        "constraints": r.constraints,
        "gadgets": r.gadgets,
        "secs_median": r.secs_median,
        "secs_min": r.secs_min,
        "constraints_per_s": r.constraints_per_s,
        "allocs_per_constraint": r.allocs_per_constraint,
        "allocs_counted": r.allocs_counted,
        "ratio_to_heap": r.ratio_to_heap,
    })
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let kind: CircuitKind = a.circuit.parse().context("--circuit")?;
    let cfg = Config { kind, target_constraints: a.constraints, seed: a.seed, reps: a.reps };
    let reports = synth::run(&cfg).map_err(anyhow::Error::msg)?;
    if a.json {
        for r in &reports {
            println!("{}", json_line(r));
        }
        return Ok(());
    }
    println!("bench-synth: circuit {kind}, target {} constraints, {} reps (median)", a.constraints, a.reps);
    println!(
        "{:<18} {:>10} {:>10} {:>14} {:>12} {:>8}  gadgets",
        "path", "constr", "secs", "constr/s", "allocs/constr", "ratio"
    );
    for r in &reports {
        println!(
            "{:<18} {:>10} {:>10.3} {:>14.0} {:>12.3} {:>7.2}x  {}",
            r.path.name(),
            r.constraints,
            r.secs_median,
            r.constraints_per_s,
            r.allocs_per_constraint,
            r.ratio_to_heap,
            r.gadgets
        );
    }
    if !reports.first().is_some_and(|r| r.allocs_counted) {
        println!("(allocations not counted: CountingAlloc is not the global allocator)");
    }
    Ok(())
}
