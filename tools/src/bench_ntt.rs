//! `arenaprove bench-ntt`: the h stage's NTTs over the strided twiddle table
//! (baseline) and the compact copy, on heap and slab memory, alternated in one run; then the
//! bit reversal alone, serial (baseline) against parallel. See `arenaprove::benchkit::ntt`
//! for what is measured.
use anyhow::Context;
use arenaprove::benchkit::ntt::{self, Config};

#[derive(clap::Args)]
pub struct Args {
    /// log2 of the domain (a proof of 2^20 constraints has domain 2^21).
    #[arg(long, default_value_t = 21)]
    pub log_size: u32,
    /// Measured reps per backing and layout (after one unmeasured pass of each).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Print one JSON object per backing and layout instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let json = a.json;
    if !json {
        println!(
            "bench-ntt: quotient_in_place (7 NTTs of 2^{}, 3 of them side by side), {} reps, {} cores",
            a.log_size,
            a.reps,
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
    }
    let rows = ntt::run(Config { log_size: a.log_size, reps: a.reps }, |line| {
        if !json {
            println!("  {line}");
        }
    })
    .map_err(anyhow::Error::msg)
    .context("bench-ntt")?;
    for r in &rows {
        if json {
            let v = serde_json::json!({
                "log_size": a.log_size, "backing": r.backing, "layout": r.layout,
                "median_ms": r.median_ms, "samples_ms": r.samples_ms,
                "speedup_vs_strided": r.speedup_vs_strided,
            });
            println!("{v}");
        } else {
            println!(
                "{:<7} {:<8} median {:>9.1} ms  {:.2}x strided",
                r.backing, r.layout, r.median_ms, r.speedup_vs_strided
            );
        }
    }
    if !json {
        let m = |b: &str, l: &str| {
            rows.iter().find(|r| r.backing == b && r.layout == l).map_or(f64::NAN, |r| r.median_ms)
        };
        for b in ["slab", "slab_4k"] {
            println!(
                "{b} / heap: strided {:.3}, compact {:.3} (above 1: {b} slower)",
                m(b, "strided") / m("heap", "strided"),
                m(b, "compact") / m("heap", "compact")
            );
        }
        println!("outputs identical in every run");
    }
    let (serial, parallel) = ntt::bit_reversal(Config { log_size: a.log_size, reps: a.reps })
        .map_err(anyhow::Error::msg)
        .context("bench-ntt bit reversal")?;
    if json {
        let v = serde_json::json!({
            "log_size": a.log_size, "bit_reversal_serial_ms": serial,
            "bit_reversal_parallel_ms": parallel, "speedup": serial / parallel,
        });
        println!("{v}");
    } else {
        println!(
            "bit reversal of one vector: serial {serial:.1} ms, parallel {parallel:.1} ms ({:.2}x)",
            serial / parallel
        );
    }
    Ok(())
}
