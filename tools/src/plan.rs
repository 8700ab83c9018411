//! `arenaprove plan`: the memory plan for a circuit and a slot count, reserving nothing.
//! Per role (the engine's `MemoryPlan` terms, the parameters among them), per slot, the
//! total, the peak RSS it predicts, and whether it fits the memory limit. `--filecoin SIZE` plans a real PoRep C2 partition
//! (2 KiB to 64 GiB: its shape counted once on the blank circuit, then cached) and puts
//! cuzk's figures beside ours. This is the same plan every proving command checks first.

use anyhow::{bail, Result};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::circuits::Shape;
use serde_json::json;

use crate::common::{self, MemoryLimit, ParamsEstimate};

#[derive(clap::Args)]
pub struct Args {
    /// Test circuit kind: chain, sha or sector.
    #[arg(long, default_value = "sector", conflicts_with = "filecoin")]
    pub circuit: CircuitKind,
    /// Target constraints per partition (each kind picks its nearest size).
    #[arg(long, default_value_t = 16_384, conflicts_with = "filecoin")]
    pub constraints: usize,
    /// A Filecoin PoRep C2 partition instead: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB
    /// (needs the `filecoin` feature).
    #[arg(long, value_name = "SECTOR_SIZE")]
    pub filecoin: Option<String>,
    /// The test circuit as `soak --precompiled` runs it: synthesized through its recording
    /// (which must be in the cache: `soak --precompiled` makes it; its file's size is the
    /// recording's term), parameters written from it when absent. With `--backend gpu` a
    /// slot holds the witness alone.
    #[arg(long, conflicts_with = "filecoin")]
    pub precompiled: bool,
    /// Partitions in flight.
    #[arg(long, default_value_t = 2)]
    pub slots: usize,
    /// The backend to plan for: cpu, or gpu (one GPU: its device terms, no host twiddles;
    /// a Filecoin partition is precompiled, so a, b, c and the split vectors live on the
    /// device and a slot holds the witness alone).
    #[arg(long, default_value = "cpu")]
    pub backend: String,
    /// The limit to compare with: bytes (or with KiB/MiB/GiB), or auto (MemAvailable).
    #[arg(long, default_value = "auto")]
    pub memory_limit: MemoryLimit,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// What is planned: a test circuit or a Filecoin partition, with its shape and params.
struct Subject {
    /// `sector`, `stacked-drg-32GiB`.
    name: String,
    shape: Shape,
    params: ParamsEstimate,
    /// Details for the JSON and the report (target, sector size, cache).
    details: serde_json::Value,
    /// cuzk's figures, for the 32 GiB partition they measured.
    cuzk: Option<Cuzk>,
    /// Bytes of the circuit's precompiled-constraints file (Filecoin partitions: C2's
    /// default synthesis maps it read-only).
    precompiled_bytes: Option<u64>,
    /// The proof's sizes from the parameters file's section counts, where the file exists
    /// (what the engine sizes its device arena by); else the shape's upper bound is used.
    file_shape: Option<arenaprove::engine::groth16::ProofShape>,
}

/// The proof's sizes from the section counts of the parameters file at `path`, if it is
/// there and its headers read.
fn file_shape(path: Option<&std::path::Path>) -> Option<arenaprove::engine::groth16::ProofShape> {
    use arenaprove::engine::groth16::params::SectionCounts;
    SectionCounts::read_file(path?).ok().map(|c| c.proof_shape())
}

/// cuzk's figures for one 32 GiB PoRep partition (their published figures, quoted in the README).
#[derive(Clone, Copy)]
struct Cuzk {
    constraints: u64,
    inputs: u64,
    aux: u64,
    /// a, b, c (4.17 GiB each), aux (0.74 GiB), ~13.6 GiB in all.
    working_set_per_partition_bytes: u64,
    /// Peak RSS rule: ~69 GiB (SRS ~44 + precompiled matrices 25.7) + 20 GiB per worker.
    rss_base_bytes: u64,
    rss_per_partition_bytes: u64,
    /// ~47 GiB of Groth16 parameters (SRS ~44 GiB resident in the RSS rule).
    params_bytes: u64,
}

const GIB: f64 = (1u64 << 30) as f64;

#[cfg_attr(not(feature = "filecoin"), allow(dead_code))]
const CUZK_32GIB: Cuzk = Cuzk {
    constraints: 130_278_869,
    inputs: 328,
    aux: 130_169_893,
    working_set_per_partition_bytes: (13.6 * GIB) as u64,
    rss_base_bytes: 69 << 30,
    rss_per_partition_bytes: 20 << 30,
    params_bytes: 44 << 30,
};

pub fn run(a: Args) -> Result<()> {
    crate::common::check_slots(a.slots)?;
    let subject = match &a.filecoin {
        Some(size) => filecoin_subject(size, a.json)?,
        None => test_subject(a.circuit, a.constraints, a.precompiled)?,
    };
    let plan = match a.backend.as_str() {
        "cpu" => common::plan_with_params(&subject.shape, a.slots, &subject.params, 1),
        "gpu" => gpu_plan(&subject, a.slots)?,
        other => bail!("--backend {other}: cpu or gpu"),
    };
    let limit = a.memory_limit.resolve()?;
    // Slab bytes (per-slot and shared terms), the regions they are carved from, and the
    // host total the engine checks: regions + resident params.
    let engine_bytes = plan.total_bytes() as u64;
    let total_bytes = common::plan_host_bytes(&plan);
    let need_bytes = total_bytes.max(subject.params.generation_bytes.unwrap_or(0));
    let fits = need_bytes <= limit.bytes;
    // A proving process starts from about what this one holds now (binary, heap, no params).
    let base_rss_bytes = arenaprove::arena::ledger::rss_bytes();
    let peak_rss_bytes = plan.predicted_peak_rss(base_rss_bytes as usize) as u64;
    let cuzk_rss_bytes = subject.cuzk.map(|c| c.rss_base_bytes + c.rss_per_partition_bytes * a.slots as u64);

    if a.json {
        let terms: Vec<serde_json::Value> = plan
            .terms
            .iter()
            .map(|t| {
                json!({"pool": t.pool, "what": t.what, "scope": format!("{:?}", t.scope),
                       "slab_bytes": t.slab_bytes, "count": t.count, "bytes": t.bytes()})
            })
            .collect();
        let s = subject.shape;
        let out = json!({
            "subject": subject.name,
            "details": subject.details,
            "shape": {"constraints": s.constraints, "inputs": s.inputs, "aux": s.aux, "domain_size": s.domain_size},
            "slots": plan.slots,
            "terms": terms,
            "engine_bytes": engine_bytes,
            "region_bytes": plan.region_bytes(),
            "slot_bytes": plan.slot_bytes(),
            "backend": a.backend,
            "device_bytes": plan.device_bytes(),
            "host_abc": plan.host_abc(),
            "params_bytes": plan.resident_bytes(),
            "params_source": subject.params.source,
            "params_generation_bytes": subject.params.generation_bytes,
            "device_sizes_from": if subject.file_shape.is_some() { "the parameters file's sections" } else { "the circuit's shape (an upper bound)" },
            "total_bytes": total_bytes,
            "predicted_peak_rss_bytes": peak_rss_bytes,
            "precompiled_matrices_bytes": subject.precompiled_bytes,
            "predicted_peak_rss_with_matrices_bytes": subject.precompiled_bytes.map(|b| peak_rss_bytes + b),
            "base_rss_bytes": base_rss_bytes,
            "memory_limit_bytes": limit.bytes,
            "memory_limit_source": limit.source,
            "fits": fits,
            "cuzk": subject.cuzk.map(|c| json!({
                "source": "cuzk published figures, 32 GiB PoRep",
                "constraints": c.constraints,
                "inputs": c.inputs,
                "aux": c.aux,
                "working_set_per_partition_bytes": c.working_set_per_partition_bytes,
                "rss_per_partition_in_flight_bytes": c.rss_per_partition_bytes,
                "params_bytes": c.params_bytes,
                "rss_rule_bytes": cuzk_rss_bytes,
            })),
        });
        println!("{out}");
        return Ok(());
    }

    println!("plan for {}: {}", subject.name, subject.shape);
    if let Some(line) = subject.details.get("note").and_then(|n| n.as_str()) {
        println!("  {line}");
    }
    print!("{plan}");
    println!("  per slot       {:>10.2} GiB (host, per partition in flight)", plan.slot_bytes() as f64 / GIB);
    if plan.device_bytes() > 0 {
        println!(
            "  device         {:>10.2} GiB on cuda:0 ({}; not in the host total)",
            plan.device_bytes() as f64 / GIB,
            if plan.host_abc() { "a, b, c on the host" } else { "a, b, c and split vectors on the device" }
        );
    }
    println!(
        "  engine slabs   {:>10.2} GiB ({} slots; {:.2} GiB of regions)",
        engine_bytes as f64 / GIB,
        plan.slots,
        plan.region_bytes() as f64 / GIB
    );
    let params_note = match subject.params.source {
        "file" => "the parameter file's size",
        _ => "estimate: every A and B query point present; real files are smaller where B is sparse",
    };
    println!("  params         {:>10.2} GiB ({params_note})", plan.resident_bytes() as f64 / GIB);
    if let Some(g) = subject.params.generation_bytes {
        println!(
            "  params gen     {:>10.2} GiB at its peak, when the params must be generated first",
            g as f64 / GIB
        );
    }
    println!("  total          {:>10.2} GiB (engine regions + params)", total_bytes as f64 / GIB);
    println!(
        "  peak RSS       {:>10.2} GiB predicted (from a base of {:.0} MiB)",
        peak_rss_bytes as f64 / GIB,
        base_rss_bytes as f64 / (1u64 << 20) as f64
    );
    if let Some(b) = subject.precompiled_bytes {
        println!(
            "  precompiled    {:>10.2} GiB recording file (mapped read-only by the precompiled synthesis; its pages \
             add to RSS as they are read): peak RSS {:.2} GiB with it",
            b as f64 / GIB,
            (peak_rss_bytes + b) as f64 / GIB
        );
    }
    println!(
        "  limit          {:>10.2} GiB ({}): {}",
        limit.bytes as f64 / GIB,
        limit.source,
        if fits { "fits" } else { "does NOT fit: proving commands refuse this plan" }
    );
    if let (Some(c), Some(rss)) = (subject.cuzk, cuzk_rss_bytes) {
        println!("cuzk, beside it (published figures, 32 GiB PoRep partition):");
        println!("  shape          {} constraints, {} inputs, {} aux", c.constraints, c.inputs, c.aux);
        println!(
            "  per partition  {:>10.2} GiB working set (a, b, c, aux); ~{:.0} GiB in flight by its RSS rule",
            c.working_set_per_partition_bytes as f64 / GIB,
            c.rss_per_partition_bytes as f64 / GIB
        );
        println!("  params         {:>10.2} GiB (SRS resident)", c.params_bytes as f64 / GIB);
        println!(
            "  peak RSS rule  {:>10.2} GiB = 69 GiB + 20 GiB x {} partitions in flight",
            rss as f64 / GIB,
            plan.slots
        );
    }
    Ok(())
}

/// The plan a GPU engine makes for `subject` (as `Engine::plan` with the CUDA factory over
/// one GPU): no host twiddle table; for a precompiled Filecoin partition no a, b, c slabs
/// (the recording resident on the device, its size estimated from the recording file's);
/// the device terms from the same layout code the backend reserves with.
///
/// With `--device-memory`, the plan within that budget (`CudaFactory::with_device_memory`):
/// streamed base sets named, and a, b, c back on the host when the recording does not fit.
fn gpu_plan(subject: &Subject, slots: usize) -> Result<arenaprove::engine::pipeline::MemoryPlan> {
    use arenaprove::engine::groth16::ProofShape;
    use arenaprove::engine::pipeline::MemoryPlan;
    let mut plan = MemoryPlan::for_shapes(&[subject.shape], slots).without_host_twiddles();
    // The recorded rows plus one u32 offset per row, estimated from the file (which also
    // holds the densities, not uploaded: an over-estimate by those bits).
    let rows_bytes = subject.precompiled_bytes.map(|b| b as usize + subject.shape.constraints * 4);
    // The engine sizes its arena from the loaded file's sections: so does the plan where
    // the file is there (the shape's figure assumes every variable has A and B points).
    let shape = subject.file_shape.unwrap_or_else(|| ProofShape::of_circuit(&subject.shape));
    let device = arenaprove_cuda::device_plan_within(&shape, rows_bytes, common::device_memory())
        .map_err(|e| anyhow::anyhow!("--device-memory: {e}"))?;
    if device.rows_resident() {
        plan = plan.without_host_abc();
    }
    Ok(common::with_params(plan.with_terms(arenaprove_cuda::device_terms(0, &device)), &subject.params, 1))
}

fn test_subject(kind: CircuitKind, constraints: usize, precompiled: bool) -> Result<Subject> {
    let shape = common::predicted_shape(kind, constraints)?;
    let cached = common::cached_params_path(kind, &shape);
    let (params, precompiled_bytes) = match precompiled {
        false => (ParamsEstimate::for_file(Some(&cached), &shape), None),
        true => {
            let recording = common::recording_path(kind, &shape);
            let bytes = std::fs::metadata(&recording).map(|m| m.len()).map_err(|e| {
                anyhow::anyhow!(
                    "--precompiled: no recording of {kind} at {constraints} constraints at {} ({e}); \
                     `arenaprove soak --precompiled` with the same --circuit and --constraints makes it",
                    recording.display()
                )
            })?;
            (ParamsEstimate::for_streamed_file(Some(&cached), &shape), Some(bytes))
        }
    };
    Ok(Subject {
        name: kind.to_string(),
        shape,
        details: json!({
            "circuit": kind.to_string(),
            "target_constraints": constraints,
            "params_file": cached.exists().then(|| cached.display().to_string()),
        }),
        params,
        cuzk: None,
        precompiled_bytes,
        file_shape: file_shape(Some(&cached)),
    })
}

#[cfg(feature = "filecoin")]
fn filecoin_subject(size: &str, quiet: bool) -> Result<Subject> {
    use arenaprove::filecoin::shape::{porep_sector_size, porep_sector_size_name, porep_shape};
    let bytes = porep_sector_size(size)?;
    let name = porep_sector_size_name(bytes)?;
    let spinner = common::spinner(
        quiet,
        format!("shape of the {name} C2 partition circuit (counted once on the blank circuit, then cached)"),
    );
    let counted = porep_shape(bytes, &common::cache_dir());
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let counted = counted?;
    let shape = counted.porep.shape;
    let params_file = filecoin_params_file(counted.porep.registered_proof);
    let params = ParamsEstimate::for_streamed_file(params_file.as_deref(), &shape);
    let note = format!(
        "{} partitions per sector; shape {} ({:.1} s to count){}",
        counted.porep.partitions,
        if counted.from_cache { format!("from {}", counted.path.display()) } else { "counted now".into() },
        counted.count_s,
        if name == "32GiB" { "" } else { "; cuzk's figures are for 32 GiB only" }
    );
    Ok(Subject {
        name: format!("stacked-drg-{name}"),
        shape,
        details: json!({
            "sector_size": name,
            "sector_size_bytes": bytes,
            "registered_proof": format!("{:?}", counted.porep.registered_proof),
            "partitions": counted.porep.partitions,
            "shape_cache_file": counted.path.display().to_string(),
            "shape_from_cache": counted.from_cache,
            "count_s": counted.count_s,
            "note": note,
        }),
        params,
        cuzk: (name == "32GiB").then_some(CUZK_32GIB),
        precompiled_bytes: Some(counted.porep.precompiled_bytes),
        file_shape: file_shape(params_file.as_deref()),
    })
}

/// The parameter file filecoin-proofs would read for `proof`, for the sizes this build
/// proves (None for 32 GiB and 64 GiB, whose parameters no machine here holds).
#[cfg(feature = "filecoin")]
fn filecoin_params_file(proof: arenaprove::filecoin::RegisteredSealProof) -> Option<std::path::PathBuf> {
    arenaprove::filecoin::params::ParamFiles::for_proof(proof).ok().map(|f| f.params)
}

#[cfg(not(feature = "filecoin"))]
fn filecoin_subject(_size: &str, _quiet: bool) -> Result<Subject> {
    bail!("--filecoin needs the `filecoin` feature: cargo run --release -p arenaprove-tools --features filecoin -- plan --filecoin ...")
}
