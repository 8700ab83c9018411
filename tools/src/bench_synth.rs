//! `arenaprove bench-synth`: synthesis into the heap baseline, into the
//! arena through bellpepper-core, through the native gadgets (test circuits) and through
//! precompiled constraints (witness + products), same run. See
//! `arenaprove::benchkit::synth` for what is measured.
use anyhow::Context;
use arenaprove::benchkit::synth::{self, Config, PathReport, Target};

#[derive(clap::Args)]
pub struct Args {
    /// Circuit: chain, sha or sector (test circuits), or filecoin-2KiB / filecoin-8MiB (one
    /// real PoRep C2 partition; needs the filecoin feature).
    #[arg(long, default_value = "sector")]
    pub circuit: String,
    /// Target constraint count of a test circuit (the nearest instance is built).
    #[arg(long, default_value_t = 1 << 18)]
    pub constraints: usize,
    /// Witness seed (for sector: the sector id; for filecoin: the sealing rng).
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
    let mut v = serde_json::json!({
        "path": r.path.name(),
        "circuit": r.circuit,
        "constraints": r.constraints,
        "gadgets": r.gadgets,
        "secs_median": r.secs_median,
        "secs_min": r.secs_min,
        "constraints_per_s": r.constraints_per_s,
        "allocs_per_constraint": r.allocs_per_constraint,
        "allocs_counted": r.allocs_counted,
        "ratio_to_heap": r.ratio_to_heap,
        "threads": threads(),
    });
    if let Some(s) = &r.split {
        v["witness_s_median"] = s.witness_s_median.into();
        v["products_s_median"] = s.products_s_median.into();
        v["witness_allocs_per_constraint"] = s.witness_allocs_per_constraint.into();
        v["record_s"] = s.record_s.into();
        v["matrix_bytes"] = s.matrix_bytes.into();
        v["terms"] = s.terms.into();
        v["terms_general"] = s.terms_general.into();
    }
    v
}

fn reports(target: Target, a: &Args) -> anyhow::Result<Vec<PathReport>> {
    match target {
        Target::Test(kind) => {
            let cfg = Config { kind, target_constraints: a.constraints, seed: a.seed, reps: a.reps };
            synth::run(&cfg).map_err(anyhow::Error::msg)
        }
        #[cfg(feature = "filecoin")]
        Target::Filecoin(size) => synth::run_filecoin(size, a.seed, a.reps).map_err(anyhow::Error::msg),
        #[cfg(not(feature = "filecoin"))]
        Target::Filecoin(_) => anyhow::bail!("--circuit {}: build with --features filecoin", a.circuit),
    }
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let target: Target = a.circuit.parse().map_err(anyhow::Error::msg).context("--circuit")?;
    let reports = reports(target, &a)?;
    if a.json {
        for r in &reports {
            println!("{}", json_line(r));
        }
        return Ok(());
    }
    let size = match target {
        Target::Test(_) => format!("target {} constraints", a.constraints),
        Target::Filecoin(_) => "partition 0".to_string(),
    };
    println!(
        "bench-synth: circuit {}, {size}, {} reps (median), {} threads",
        target.name(),
        a.reps,
        threads()
    );
    println!(
        "{:<24} {:>10} {:>10} {:>14} {:>12} {:>8}  gadgets",
        "path", "constr", "secs", "constr/s", "allocs/constr", "ratio"
    );
    for r in &reports {
        println!(
            "{:<24} {:>10} {:>10.3} {:>14.0} {:>12.3} {:>7.2}x  {}",
            r.path.name(),
            r.constraints,
            r.secs_median,
            r.constraints_per_s,
            r.allocs_per_constraint,
            r.ratio_to_heap,
            r.gadgets
        );
    }
    for (name, s) in reports.iter().filter_map(|r| r.split.map(|s| (r.path.name(), s))) {
        println!(
            "{name}: witness {:.3} s ({:.3} allocs/constraint) + products {:.3} s; recorded once in {:.3} s, \
             {:.1} MB, {} terms ({} multiply)",
            s.witness_s_median,
            s.witness_allocs_per_constraint,
            s.products_s_median,
            s.record_s,
            s.matrix_bytes as f64 / 1e6,
            s.terms,
            s.terms_general
        );
    }
    if !reports.first().is_some_and(|r| r.allocs_counted) {
        println!("(allocations not counted: CountingAlloc is not the global allocator)");
    }
    Ok(())
}

/// Threads the products run on (rayon's default pool: one per available core).
fn threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
