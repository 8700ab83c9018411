//! The prove benchmark: our CPU prover against bellperson 0.27's
//! `create_random_proof`, same parameters, same circuit, same process, alternating sample
//! by sample. Also parameter generation (ours vs bellperson's `generate_random_parameters`)
//! and checked parameter loading (ours vs bellperson's `Parameters::read(.., true)` on the
//! same file).
//!
//! Our timed proof includes synthesis (bellperson-identical heap synthesis), as
//! bellperson's does. The bellperson side needs the `peer` feature (it is the baseline:
//! without it only our figures are produced and `speedup` is absent).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::arena::{Ledger, RegionConfig};
use crate::circuits::{shape_of_native, synthesize_native, AssignmentPools, Shape};
use crate::engine::deps::blstrs::Scalar;
use crate::engine::deps::ff::Field;
use crate::engine::deps::rand_chacha::ChaCha8Rng;
use crate::engine::deps::rand_core::SeedableRng;
use crate::engine::groth16::{
    generate_random_parameters, Parameters, ParamsMemory, ProofShape, Prover, StageTimings,
};
use crate::engine::pipeline::MemoryPlan;
use crate::engine::{prove_circuit, prove_synthesized, Backend};

/// Limits of the benchmark.
pub const CONSTRAINTS_MAX: usize = 1 << 22;
pub const SAMPLES_MAX: usize = 1000;

pub use crate::circuits::circuits::{build, AnyCircuit, CircuitKind};

/// How our side synthesizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synthesis {
    /// Native gadgets into an [`crate::circuits::ArenaAssignment`] (slabs).
    Native,
    /// bellperson-identical heap synthesis of the bellpepper circuit.
    Heap,
}

impl Synthesis {
    pub fn name(&self) -> &'static str {
        match self {
            Synthesis::Native => "native",
            Synthesis::Heap => "heap",
        }
    }
    pub fn parse(s: &str) -> Result<Synthesis, String> {
        match s {
            "native" => Ok(Synthesis::Native),
            "heap" => Ok(Synthesis::Heap),
            other => Err(format!("unknown synthesis '{other}' (native, heap)")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    pub kind: CircuitKind,
    /// Requested constraints (the circuit's own; bellperson adds one per input).
    pub constraints: usize,
    /// Measured proofs per side.
    pub samples: usize,
    pub synthesis: Synthesis,
    /// Also run bellperson's generator (slow: ~24 s at 2^16 chain).
    pub keygen_baseline: bool,
    /// Also compare checked parameter loading (writes the params to a temporary file).
    pub params_load: bool,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub circuit: &'static str,
    pub synthesis: &'static str,
    pub constraints: usize,
    pub domain_size: usize,
    pub samples: usize,
    pub params_bytes: usize,
    pub ours_s: Vec<f64>,
    pub ours_s_median: f64,
    pub bellperson_s: Vec<f64>,
    pub bellperson_s_median: Option<f64>,
    pub speedup: Option<f64>,
    /// Per-stage medians of our proofs, seconds, in pipeline order.
    pub stages_s_median: Vec<(&'static str, f64)>,
    pub keygen_ours_s: f64,
    pub keygen_bellperson_s: Option<f64>,
    pub keygen_speedup: Option<f64>,
    pub load_checked_ours_s: Option<f64>,
    pub load_checked_bellperson_s: Option<f64>,
    pub load_speedup: Option<f64>,
}

pub use super::median;

/// Our parameters for `circuit` and their bytes.
pub fn our_params(circuit: AnyCircuit, seed: u64) -> Result<(Arc<Parameters>, Duration), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let t0 = Instant::now();
    let p =
        generate_random_parameters(circuit, &mut rng, &ParamsMemory::default()).map_err(|e| e.to_string())?;
    Ok((Arc::new(p), t0.elapsed()))
}

/// What our side needs to prove one circuit: the prover and, for native synthesis, the
/// assignment pools (reserved once, like the long-lived engine does).
pub struct Ours {
    pub backend: Arc<dyn Backend>,
    pub pools: AssignmentPools,
    pub shape: Shape,
    pub synthesis: Synthesis,
}

impl Ours {
    pub fn new(params: Arc<Parameters>, circuit: &AnyCircuit, synthesis: Synthesis) -> Result<Ours, String> {
        let shape = shape_of_native(circuit).map_err(|e| e.to_string())?;
        // One slot of the engine's memory plan: the same reservation path as `Engine::new`.
        let memory = MemoryPlan::for_shapes(&[shape], 1)
            .reserve(&Ledger::unlimited(), &RegionConfig::default())
            .map_err(|e| e.to_string())?;
        let pm = memory.prover_memory(&ProofShape::of_params(&params));
        let backend: Arc<dyn Backend> = Arc::new(Prover::with_memory(params, pm).map_err(|e| e.to_string())?);
        Ok(Ours { backend, pools: memory.assign, shape, synthesis })
    }

    /// One of our proofs, timed end to end (synthesis included).
    pub fn prove(
        &self,
        circuit: &AnyCircuit,
        rng: &mut ChaCha8Rng,
    ) -> Result<(crate::engine::Proof, Duration, StageTimings), String> {
        let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
        let t0 = Instant::now();
        let (proof, t) = match self.synthesis {
            Synthesis::Heap => {
                prove_circuit(&*self.backend, circuit.clone(), r, s).map_err(|e| e.to_string())?
            }
            Synthesis::Native => prove_synthesized(
                &*self.backend,
                || synthesize_native(circuit, &self.pools, &self.shape),
                r,
                s,
            )
            .map_err(|e| e.to_string())?,
        };
        Ok((proof, t0.elapsed(), t))
    }
}

#[cfg(feature = "peer")]
pub mod peer {
    //! The bellperson 0.27 side (needs the `peer` feature).
    use super::*;
    use crate::engine::deps::blstrs;
    pub use crate::engine::peer::bellperson;
    pub type BpParams = bellperson::groth16::Parameters<blstrs::Bls12>;

    pub fn to_bellperson(p: &Parameters) -> Result<BpParams, String> {
        BpParams::read(&p.to_bytes()[..], false).map_err(|e| e.to_string())
    }

    /// One `create_random_proof`, timed (synthesis included).
    pub fn prove_bellperson(
        params: &BpParams,
        circuit: AnyCircuit,
        rng: &mut ChaCha8Rng,
    ) -> Result<Duration, String> {
        let t0 = Instant::now();
        bellperson::groth16::create_random_proof(circuit, params, rng).map_err(|e| e.to_string())?;
        Ok(t0.elapsed())
    }

    /// bellperson verifies one of our proofs (public inputs from bellperson-identical synthesis).
    pub fn check_with_bellperson(
        params: &BpParams,
        proof: &crate::engine::Proof,
        circuit: &AnyCircuit,
    ) -> Result<(), String> {
        let inputs =
            crate::circuits::synthesize_heap(circuit.clone()).map_err(|e| e.to_string())?.input_assignment;
        let p = bellperson::groth16::Proof::<blstrs::Bls12>::read(&proof.to_bytes()[..])
            .map_err(|e| e.to_string())?;
        let pvk = bellperson::groth16::prepare_verifying_key(&params.vk);
        match bellperson::groth16::verify_proof(&pvk, &p, &inputs[1..]) {
            Ok(true) => Ok(()),
            other => Err(format!("bellperson does not accept our proof: {other:?}")),
        }
    }

    pub fn keygen_bellperson(circuit: AnyCircuit, seed: u64) -> Result<(BpParams, Duration), String> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let t0 = Instant::now();
        let p = bellperson::groth16::generate_random_parameters::<blstrs::Bls12, _, _>(circuit, &mut rng)
            .map_err(|e| e.to_string())?;
        Ok((p, t0.elapsed()))
    }

    pub fn load_checked_bellperson(path: &std::path::Path) -> Result<Duration, String> {
        let t0 = Instant::now();
        let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
        BpParams::read(std::io::BufReader::with_capacity(1 << 20, f), true).map_err(|e| e.to_string())?;
        Ok(t0.elapsed())
    }
}

/// Runs the whole comparison for one circuit.
pub fn run(cfg: &Config) -> Result<Report, String> {
    if cfg.constraints == 0 || cfg.constraints > CONSTRAINTS_MAX {
        return Err(format!("constraints {} not in 1..={CONSTRAINTS_MAX}", cfg.constraints));
    }
    if cfg.samples == 0 || cfg.samples > SAMPLES_MAX {
        return Err(format!("samples {} not in 1..={SAMPLES_MAX}", cfg.samples));
    }
    let circuit = build(cfg.kind, cfg.constraints, 1).map_err(|e| e.to_string())?;
    let (params, keygen_ours) = our_params(circuit.clone(), 42)?;
    let ours = Ours::new(params.clone(), &circuit, cfg.synthesis)?;
    let shape = ours.shape;
    let mut report = Report {
        circuit: cfg.kind.name(),
        synthesis: cfg.synthesis.name(),
        constraints: shape.constraints,
        domain_size: params.domain_size(),
        samples: cfg.samples,
        params_bytes: params.encoded_bytes(),
        ours_s: vec![],
        ours_s_median: 0.0,
        bellperson_s: vec![],
        bellperson_s_median: None,
        speedup: None,
        stages_s_median: vec![],
        keygen_ours_s: keygen_ours.as_secs_f64(),
        keygen_bellperson_s: None,
        keygen_speedup: None,
        load_checked_ours_s: None,
        load_checked_bellperson_s: None,
        load_speedup: None,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    #[cfg(feature = "peer")]
    let bp = peer::to_bellperson(&params)?;
    // One unmeasured warm-up proof per side; bellperson checks ours once.
    let (warm, _, _) = ours.prove(&circuit, &mut rng)?;
    #[cfg(feature = "peer")]
    {
        peer::prove_bellperson(&bp, circuit.clone(), &mut rng)?;
        peer::check_with_bellperson(&bp, &warm, &circuit)?;
    }
    #[cfg(not(feature = "peer"))]
    let _ = warm;
    let mut stages: Vec<StageTimings> = Vec::new();
    for _ in 0..cfg.samples {
        let (_, d, t) = ours.prove(&circuit, &mut rng)?;
        report.ours_s.push(d.as_secs_f64());
        stages.push(t);
        #[cfg(feature = "peer")]
        report.bellperson_s.push(peer::prove_bellperson(&bp, circuit.clone(), &mut rng)?.as_secs_f64());
    }
    report.ours_s_median = median(&report.ours_s);
    if !report.bellperson_s.is_empty() {
        let b = median(&report.bellperson_s);
        report.bellperson_s_median = Some(b);
        report.speedup = Some(b / report.ours_s_median);
    }
    report.stages_s_median = StageTimings::default()
        .stages()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (*name, median(&stages.iter().map(|t| t.stages()[i].1).collect::<Vec<_>>())))
        .collect();

    if cfg.params_load {
        let path = std::env::temp_dir().join(format!(
            "arenaprove-bench-{}-{}.params",
            cfg.kind.name(),
            std::process::id()
        ));
        params.write_file(&path).map_err(|e| e.to_string())?;
        // Warm the page cache for both sides alike.
        let _ = std::fs::read(&path);
        let t0 = Instant::now();
        let loaded =
            Parameters::read_file(&path, true, &ParamsMemory::default()).map_err(|e| e.to_string())?;
        report.load_checked_ours_s = Some(t0.elapsed().as_secs_f64());
        drop(loaded);
        #[cfg(feature = "peer")]
        {
            let b = peer::load_checked_bellperson(&path)?.as_secs_f64();
            report.load_checked_bellperson_s = Some(b);
            report.load_speedup = report.load_checked_ours_s.map(|o| b / o);
        }
        let _ = std::fs::remove_file(&path);
    }
    #[cfg(feature = "peer")]
    if cfg.keygen_baseline {
        let (bp_params, d) = peer::keygen_bellperson(circuit.clone(), 42)?;
        report.keygen_bellperson_s = Some(d.as_secs_f64());
        report.keygen_speedup = Some(d.as_secs_f64() / report.keygen_ours_s);
        // Same seed, same toxic waste: the files must be identical.
        let mut theirs = Vec::new();
        bp_params.write(&mut theirs).map_err(|e| e.to_string())?;
        if theirs != params.to_bytes() {
            return Err("our generator and bellperson's disagree for the same seed".into());
        }
    }
    Ok(report)
}
