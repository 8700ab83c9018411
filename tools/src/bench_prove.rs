//! `arenaprove bench-prove`: our CPU Groth16 prover against bellperson 0.27's
//! `create_random_proof` on the same parameters in the same run; optionally parameter
//! generation and checked loading against bellperson's. See `arenaprove::benchkit::prove`.
use anyhow::anyhow;
use arenaprove::benchkit::prove::{self, CircuitKind, Config, Report, Synthesis};

#[derive(clap::Args)]
pub struct Args {
    /// Circuit kinds, comma-separated: chain, sha, sector.
    #[arg(long, value_delimiter = ',', default_value = "chain")]
    pub circuit: Vec<String>,
    /// Target constraints per circuit (e.g. 65536).
    #[arg(long, default_value_t = 1 << 16)]
    pub constraints: usize,
    /// Measured proofs per side (after one warm-up each).
    #[arg(long, default_value_t = 3)]
    pub samples: usize,
    /// Our synthesis path: native (arena) or heap (bellperson-identical).
    #[arg(long, default_value = "native")]
    pub synthesis: String,
    /// Also time bellperson's generate_random_parameters (slow: ~24 s at 2^16 chain).
    #[arg(long)]
    pub keygen: bool,
    /// Also compare checked parameter loading on the same file.
    #[arg(long)]
    pub params_load: bool,
    /// One JSON object per circuit per line.
    #[arg(long)]
    pub json: bool,
    /// Memory the run may use: bytes (or with KiB/MiB/GiB), or auto (MemAvailable). A
    /// circuit whose plan is above it is refused before its params are generated.
    #[arg(long, default_value = "auto")]
    pub memory_limit: crate::common::MemoryLimit,
}

fn json(r: &Report) -> serde_json::Value {
    let stages: serde_json::Map<String, serde_json::Value> =
        r.stages_s_median.iter().map(|(k, v)| (format!("{k}_s_median"), serde_json::json!(v))).collect();
    serde_json::json!({
        "circuit": r.circuit,
        "synthesis": r.synthesis,
        "constraints": r.constraints,
        "domain_size": r.domain_size,
        "samples": r.samples,
        "params_bytes": r.params_bytes,
        "ours_s": r.ours_s,
        "ours_s_median": r.ours_s_median,
        "bellperson_s": r.bellperson_s,
        "bellperson_s_median": r.bellperson_s_median,
        "speedup": r.speedup,
        "stages": stages,
        "keygen_ours_s": r.keygen_ours_s,
        "keygen_bellperson_s": r.keygen_bellperson_s,
        "keygen_speedup": r.keygen_speedup,
        "load_checked_ours_s": r.load_checked_ours_s,
        "load_checked_bellperson_s": r.load_checked_bellperson_s,
        "load_speedup": r.load_speedup,
    })
}

/// Our prover holds one slot's working set and the params; bellperson (the baseline) holds
/// its own copy of the params, converted from ours. Both are checked before generation.
fn guard(kind: CircuitKind, constraints: usize, limit: crate::common::MemoryLimit) -> anyhow::Result<()> {
    use crate::common;
    let shape = common::predicted_shape(kind, constraints)?;
    let params = common::ParamsEstimate::for_file(None, &shape);
    let plan = common::plan_with_params(&shape, 1, &params, 2);
    common::refuse_unless_fits(&format!("bench-prove {kind}"), Some(&plan), params.generation_bytes, limit)?;
    Ok(())
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map(|x| format!("{x:.3}{unit}")).unwrap_or_else(|| "-".into())
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let synthesis = Synthesis::parse(&a.synthesis).map_err(|e| anyhow!(e))?;
    for name in &a.circuit {
        let kind: CircuitKind = name.parse().map_err(|e| anyhow!("{e}"))?;
        guard(kind, a.constraints, a.memory_limit)?;
        let cfg = Config {
            kind,
            constraints: a.constraints,
            samples: a.samples,
            synthesis,
            keygen_baseline: a.keygen,
            params_load: a.params_load,
        };
        let r = prove::run(&cfg).map_err(|e| anyhow!("{name}: {e}"))?;
        if r.bellperson_s_median.is_none() {
            eprintln!("note: arenaprove was built without its `peer` feature: no bellperson baseline");
        }
        if a.json {
            println!("{}", json(&r));
            continue;
        }
        println!(
            "{} ({} synthesis): {} constraints, domain 2^{}, params {:.1} MB",
            r.circuit,
            r.synthesis,
            r.constraints,
            r.domain_size.trailing_zeros(),
            r.params_bytes as f64 / 1e6
        );
        println!(
            "  prove median: ours {:.3}s  bellperson {}  speedup {}",
            r.ours_s_median,
            opt(r.bellperson_s_median, "s"),
            opt(r.speedup, "x")
        );
        let stages: Vec<String> = r.stages_s_median.iter().map(|(k, v)| format!("{k} {v:.3}")).collect();
        println!("  ours per stage (s): {}", stages.join(", "));
        println!(
            "  keygen: ours {:.3}s  bellperson {}  speedup {}",
            r.keygen_ours_s,
            opt(r.keygen_bellperson_s, "s"),
            opt(r.keygen_speedup, "x")
        );
        if a.params_load {
            println!(
                "  checked load: ours {}  bellperson {}  speedup {}",
                opt(r.load_checked_ours_s, "s"),
                opt(r.load_checked_bellperson_s, "s"),
                opt(r.load_speedup, "x")
            );
        }
    }
    Ok(())
}
