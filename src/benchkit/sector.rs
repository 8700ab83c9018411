//! Sector throughput: sectors of `partitions` partition circuits proved one
//! after another by one long-lived engine (any backend), in steady state. The GPU
//! comparison against bellperson 0.27 + supraseal-c2's `create_random_proof_batch` (how
//! filecoin-proofs proves a sector) runs this as "ours" and the batch as the baseline, in
//! one process: `peer-gpu/` (a separate crate, because bellperson's `cuda-supraseal`
//! feature replaces its CPU prover for every crate of a build).

use std::sync::Arc;
use std::time::Instant;

use crate::circuits::circuits::{build, AnyCircuit, CircuitKind, SectorPartitionCircuit};
use crate::circuits::{record_native, shape_of_native};
use crate::engine::deps::blstrs::Scalar;
use crate::engine::groth16::Parameters;
use crate::engine::pipeline::{
    native, precompiled_native, CircuitSpec, Engine, EngineConfig, Job, JobOutput, ShutdownMode, Span,
};
use crate::engine::BackendFactory;

/// What one run proves.
#[derive(Clone, Debug)]
pub struct Config {
    pub kind: CircuitKind,
    /// Target constraints per partition (each kind picks its nearest shape).
    pub constraints: usize,
    pub partitions: usize,
    /// Sectors proved; the first is the warm-up and is not in the steady-state figure.
    pub sectors: usize,
    /// Partitions of the warm-up sector (at most `partitions`; fewer saves time at large
    /// sizes: a warm-up loads, uploads and faults everything the first partition touches).
    pub warmup_partitions: usize,
    /// Partitions in flight in the engine (synthesis of one beside proving of another).
    pub slots: usize,
    /// Threads synthesizing partitions at once.
    pub synth_workers: usize,
    /// Finalizer threads (`None`: the backend's choice, see `EngineConfig::finalize_workers`).
    pub finalize_workers: Option<usize>,
    /// Synthesize through the circuit's recording (made once before the run, not timed):
    /// each partition computes its native witness alone, and the products a, b, c come from
    /// the recording (on the device where the backend proves from the witness). Otherwise
    /// each partition runs the native gadgets, constraints and all.
    pub precompiled: bool,
}

/// The circuit of `kind` nearest `constraints` for partition `partition` of sector
/// `sector`: the sector circuit by its ids, chain and sha seeded by both. The same circuit
/// for every prover of a run (and every CLI command), so their public inputs agree.
pub fn partition(
    kind: CircuitKind,
    constraints: usize,
    sector: u64,
    partition: usize,
) -> Result<AnyCircuit, String> {
    Ok(match kind {
        CircuitKind::Sector => {
            AnyCircuit::Sector(SectorPartitionCircuit::for_constraints(sector, partition, constraints))
        }
        _ => build(kind, constraints, sector * 1_000 + partition as u64).map_err(|e| e.to_string())?,
    })
}

/// Our side of a run.
#[derive(Clone, Debug, Default)]
pub struct Ours {
    pub backend: String,
    pub warmup_s: f64,
    /// Wall time of sectors 2..=N, submitted back to back (the pipeline stays full).
    pub steady_s: f64,
    pub steady_partitions: usize,
    /// `steady_s / steady_partitions`.
    pub per_partition_s: f64,
    /// Every proof of the run, checked by the engine's verifier.
    pub proofs_verified: usize,
    /// Per-stage medians over the steady sectors' spans (the engine's timeline), seconds,
    /// in order of first appearance.
    pub stages_s_median: Vec<(&'static str, f64)>,
    /// The three-timer check over the steady partitions: the largest gap between a
    /// composite stage's timer (prove_start, finalize) and the sum of its calls, as a
    /// percentage of the stage.
    pub stage_gap_max_pct: f64,
    /// Public inputs per (sector - 1, partition): what a baseline's proofs of the same
    /// circuits must verify against.
    pub public_inputs: Vec<Vec<Vec<Scalar>>>,
}

/// Proves `cfg.sectors` sectors through one engine on `backend`. Fails if any proof fails
/// or does not verify.
pub fn run_ours(
    cfg: &Config,
    params: Arc<Parameters>,
    backend: Arc<dyn BackendFactory>,
) -> Result<Ours, String> {
    if cfg.sectors < 2 || cfg.partitions == 0 {
        return Err(format!(
            "need at least 2 sectors (one warm-up) and 1 partition, got {} x {}",
            cfg.sectors, cfg.partitions
        ));
    }
    let first = partition(cfg.kind, cfg.constraints, 1, 0)?;
    let shape = shape_of_native(&first).map_err(|e| e.to_string())?;
    let recording = match cfg.precompiled {
        true => Some(Arc::new(
            record_native(&first, &format!("{}@{}", cfg.kind, cfg.constraints)).map_err(|e| e.to_string())?,
        )),
        false => None,
    };
    let name = backend.name().to_string();
    let config = EngineConfig {
        slots: cfg.slots,
        synth_workers: cfg.synth_workers,
        finalize_workers: cfg.finalize_workers,
        job_queue_max: cfg.sectors,
        partitions_per_job_max: cfg.partitions.max(1),
        backend,
        ..EngineConfig::default()
    };
    let spec = CircuitSpec { kind: cfg.kind.to_string(), shape, params, matrices: recording.clone() };
    let engine = Engine::new(config, vec![spec]).map_err(|e| e.to_string())?;
    let job = |sector: u64| -> Result<Job, String> {
        let n = if sector == 1 { cfg.warmup_partitions.clamp(1, cfg.partitions) } else { cfg.partitions };
        let parts = (0..n)
            .map(|p| {
                partition(cfg.kind, cfg.constraints, sector, p).map(|c| match &recording {
                    Some(pc) => precompiled_native(c, pc.clone()),
                    None => native(c),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Job::new(cfg.kind.to_string(), parts))
    };
    let mut out = Ours { backend: name, ..Ours::default() };
    let mut spans: Vec<Span> = Vec::new();
    let mut collect = |o: JobOutput, steady: bool, out: &mut Ours| -> Result<(), String> {
        if steady {
            spans.extend_from_slice(&o.spans);
            out.stage_gap_max_pct = o.gaps.iter().map(|g| g.percent()).fold(out.stage_gap_max_pct, f64::max);
        }
        let mut inputs = Vec::with_capacity(o.partitions.len());
        for (i, p) in o.partitions.into_iter().enumerate() {
            let p = p.map_err(|e| format!("partition {i}: {e}"))?;
            if !p.verified {
                return Err(format!("partition {i}: proof not verified"));
            }
            out.proofs_verified += 1;
            inputs.push(p.public_inputs);
        }
        out.public_inputs.push(inputs);
        Ok(())
    };
    let t0 = Instant::now();
    let first = engine.submit(job(1)?).map_err(|e| e.to_string())?.wait().map_err(|e| e.to_string())?;
    collect(first, false, &mut out)?;
    out.warmup_s = t0.elapsed().as_secs_f64();
    // The steady sectors' circuits are built before the clock starts (witness generation of
    // the test circuits is part of neither prover's figure: both get the same objects).
    let jobs = (2..=cfg.sectors as u64).map(job).collect::<Result<Vec<_>, _>>()?;
    let t1 = Instant::now();
    let handles = jobs
        .into_iter()
        .map(|j| engine.submit(j).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    for h in handles {
        collect(h.wait().map_err(|e| e.to_string())?, true, &mut out)?;
    }
    out.steady_s = t1.elapsed().as_secs_f64();
    out.steady_partitions = (cfg.sectors - 1) * cfg.partitions;
    out.per_partition_s = out.steady_s / out.steady_partitions as f64;
    out.stages_s_median = super::spans_by_name(&spans)
        .into_iter()
        .map(|(n, _, d)| (n, super::median(&d.iter().map(|&ns| ns as f64 / 1e9).collect::<Vec<_>>())))
        .collect();
    let report = engine.shutdown(ShutdownMode::Drain);
    if report.slabs_outstanding != 0 {
        return Err(format!("{} slabs outstanding at shutdown", report.slabs_outstanding));
    }
    Ok(out)
}
