//! `arenaprove bench-alloc`: allocation strategies side by side on a
//! partition-shaped working set. See `arenaprove::benchkit::alloc` for what is measured.
use anyhow::{bail, Context};
use arenaprove::benchkit::alloc::{self, Config, Strategy, StrategyReport};

#[derive(clap::Args)]
pub struct Args {
    /// Working set per cycle, MiB (a, b, c and aux together; 64 to 4096 are typical).
    #[arg(long, default_value_t = 1024)]
    pub size_mib: usize,
    /// Measured cycles per strategy.
    #[arg(long, default_value_t = 10)]
    pub cycles: usize,
    /// Unmeasured warm-up cycles per strategy (every strategy alike).
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Strategies to run, comma-separated (default: all). fresh_vec, the baseline of the
    /// ratio, is always run first when listed.
    #[arg(long, value_delimiter = ',')]
    pub strategies: Vec<Strategy>,
    /// Print one JSON object per strategy per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn json_line(r: &StrategyReport) -> serde_json::Value {
    serde_json::json!({
        "strategy": r.strategy.name(),
        "size_mib": r.size_mib,
        "bytes": r.bytes,
        "cycles": r.cycles,
        "cycle_ms_median": r.cycle_ms_median,
        "cycle_ms_min": r.cycle_ms_min,
        "cycle_ms_max": r.cycle_ms_max,
        "release_us_median": r.release_us_median,
        "release_us_max": r.release_us_max,
        "minflt_per_cycle": r.minflt_per_cycle,
        "majflt_per_cycle": r.majflt_per_cycle,
        "setup_ms": r.setup_ms,
        "drain_ms": r.drain_ms,
        "ratio_to_fresh_vec": r.ratio_to_fresh_vec,
    })
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let strategies = if a.strategies.is_empty() { Strategy::ALL.to_vec() } else { a.strategies };
    let cfg = Config { size_mib: a.size_mib, cycles: a.cycles, warmup: a.warmup, strategies };
    let shape = alloc::Shape::for_size_mib(cfg.size_mib).map_err(anyhow::Error::msg)?;
    // async_drop can hold two working sets at once (one being dropped, one being filled).
    let need = 2 * shape.bytes() as u64;
    if let Some(avail) = crate::common::mem_available_bytes() {
        if need > avail {
            bail!(
                "--size-mib {}: up to {} MiB may be live at once, but only {} MiB are available",
                cfg.size_mib,
                need >> 20,
                avail >> 20
            );
        }
    }
    if !a.json {
        println!(
            "bench-alloc: working set {} MiB (a, b, c: {} x 32 B each; aux: {} x 32 B), {} cycles after {} warm-up",
            cfg.size_mib, shape.n, shape.aux_n, cfg.cycles, cfg.warmup
        );
        println!(
            "{:<11} {:>10} {:>10} {:>10} {:>12} {:>12} {:>11} {:>9} {:>9} {:>8}",
            "strategy",
            "cycle_ms",
            "min_ms",
            "max_ms",
            "release_us",
            "release_max",
            "minflt/cyc",
            "setup_ms",
            "drain_ms",
            "ratio"
        );
    }
    let json = a.json;
    alloc::run(&cfg, |r| {
        if json {
            println!("{}", json_line(r));
        } else {
            println!(
                "{:<11} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>12.1} {:>11.1} {:>9.1} {:>9.1} {:>8}",
                r.strategy.name(),
                r.cycle_ms_median,
                r.cycle_ms_min,
                r.cycle_ms_max,
                r.release_us_median,
                r.release_us_max,
                r.minflt_per_cycle,
                r.setup_ms,
                r.drain_ms,
                r.ratio_to_fresh_vec.map_or("-".to_string(), |x| format!("{x:.2}x")),
            );
        }
    })
    .map_err(anyhow::Error::msg)
    .context("bench-alloc")?;
    if !json {
        println!(
            "ratio = fresh_vec median cycle / this strategy's median cycle (higher is better); \
             release = time on the caller's thread; drain = waiting for detached drops after the cycles"
        );
    }
    Ok(())
}
