//! The C2 adapter: a commit-phase-1 output becomes one engine job per partition.
//!
//! For partition k the circuit is exactly what `StackedCompound::circuit_proofs` builds in
//! storage-proofs-core's `compound_proof.rs`:
//! `<StackedCompound as CompoundProof>::circuit(&PublicInputs { replica_id, tau: Some(Tau {
//! comm_d, comm_r }), k: None, seed: Some(seed) }, Default::default(), &vanilla_proofs[k],
//! &vanilla_params, Some(k))`, and its public inputs are
//! `StackedCompound::generate_public_inputs(.., Some(k))` (what `get_seal_inputs` returns).
use std::fmt;
use std::time::{Duration, Instant};

use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::{shape_of, AssignmentPools, ProverWitness, Shape};
use arenaprove_engine::groth16::prover::{ProofShape, Prover, StageTimings};
use arenaprove_engine::groth16::PROOF_BYTES;
use arenaprove_engine::pipeline::{
    CircuitSpec, Engine, EngineConfig, Job, JobHandle, JobOutput, MemoryPlan, ShutdownMode, ShutdownReport,
};
use arenaprove_engine::Backend;
use arenaprove_engine::{
    prepare_verifying_key, verify_proof, Groth16Error, Parameters, ParamsMemory, PreparedVerifyingKey,
};
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::Domain;
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher, SectorShapeBase};
use filecoin_proofs::types::{PoRepConfig, VanillaSealProof};
use rand_core::RngCore;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::api::{C1Output, RegisteredSealProof, SectorInfo, ShapedC1};
use crate::error::FilecoinError;
use crate::params::ParamFiles;
use crate::pce::Synthesis;

/// The StackedDrg circuit of this crate's tree shape.
pub type SealCircuit = StackedCircuit<SectorShapeBase, DefaultPieceHasher>;
type Compound = StackedCompound<SectorShapeBase, DefaultPieceHasher>;
type Drg = StackedDrg<'static, SectorShapeBase, DefaultPieceHasher>;

/// The compound public params `seal_commit_phase2` sets up for `config`, for any tree shape
/// (this module proves `SectorShapeBase`; [`crate::shape`] counts the others).
pub(crate) fn compound_public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>, FilecoinError>
{
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(config)
            .map_err(|e| FilecoinError::proofs("setup_params", e))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'static, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
    >>::setup(&setup)
    .map_err(|e| FilecoinError::proofs("setup", e))
}

/// The circuit with no witness that parameter generation synthesizes (`blank_circuit`).
pub fn blank_circuit(registered_proof: RegisteredSealProof) -> Result<SealCircuit, FilecoinError> {
    let config = registered_proof.porep_config()?;
    let public_params = compound_public_params(&config)?;
    Ok(<Compound as CompoundProof<Drg, SealCircuit>>::blank_circuit(&public_params.vanilla_params))
}

/// One sector's C2 work: the public params and inputs shared by its partitions, and the
/// vanilla proofs each partition circuit is built from.
pub struct SectorJob<'a> {
    registered_proof: RegisteredSealProof,
    public_params: compound_proof::PublicParams<'static, Drg>,
    public_inputs: stacked::PublicInputs<PoseidonDomain, DefaultPieceDomain>,
    vanilla_proofs: &'a [Vec<VanillaSealProof<SectorShapeBase>>],
}

impl<'a> SectorJob<'a> {
    /// Sets up the job as `seal_commit_phase2_circuit_proofs` does, config from the C1's
    /// registered proof.
    pub fn new(c1: &'a C1Output) -> Result<Self, FilecoinError> {
        let config = c1.registered_proof.porep_config()?;
        let ShapedC1::Base(out) = &c1.shaped;
        let comm_r: PoseidonDomain = filecoin_proofs::as_safe_commitment(&out.comm_r, "comm_r")
            .map_err(|e| FilecoinError::BadC1(format!("{e:#}")))?;
        let comm_d = DefaultPieceDomain::try_from_bytes(&out.comm_d)
            .map_err(|e| FilecoinError::BadC1(format!("comm_d: {e:#}")))?;
        let public_inputs = stacked::PublicInputs {
            replica_id: out.replica_id,
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(out.seed),
        };
        let public_params = compound_public_params(&config)?;
        let partitions = usize::from(config.partitions);
        if out.vanilla_proofs.len() != partitions {
            return Err(FilecoinError::BadC1(format!(
                "{} partitions of vanilla proofs, {:?} has {partitions}",
                out.vanilla_proofs.len(),
                c1.registered_proof
            )));
        }
        Ok(SectorJob {
            registered_proof: c1.registered_proof,
            public_params,
            public_inputs,
            vanilla_proofs: &out.vanilla_proofs,
        })
    }

    /// The registered proof of this sector.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.registered_proof
    }

    /// Number of partitions (circuits) of this sector.
    pub fn partitions(&self) -> usize {
        self.vanilla_proofs.len()
    }

    /// The circuit of partition `k`, as `StackedCompound::circuit_proofs` builds it.
    pub fn circuit(&self, k: usize) -> Result<SealCircuit, FilecoinError> {
        let vanilla = self.vanilla_proofs.get(k).ok_or_else(|| {
            FilecoinError::Internal(format!("partition {k} of a {}-partition sector", self.partitions()))
        })?;
        <Compound as CompoundProof<Drg, SealCircuit>>::circuit(
            &self.public_inputs,
            (), // StackedCircuit's ComponentPrivateInputs (circuit_proofs passes Default::default())
            vanilla,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| FilecoinError::Synthesis {
            partition: k,
            reason: format!("building the circuit: {e:#}"),
        })
    }

    /// Checks every partition's vanilla proofs against the public inputs (seed, replica id,
    /// commitments) as filecoin-proofs' commit phase 1 does before returning them
    /// (`StackedDrg::verify_all_partitions`): Merkle paths and labels only, no circuit.
    /// A C1 that was tampered with or mixed up with another sector's fails here, before
    /// any synthesis. `Ok(false)` when a proof does not verify.
    pub fn verify_vanilla(&self) -> Result<bool, FilecoinError> {
        <Drg as ProofScheme>::verify_all_partitions(
            &self.public_params.vanilla_params,
            &self.public_inputs,
            self.vanilla_proofs,
        )
        .map_err(|e| FilecoinError::proofs("verify_all_partitions", e))
    }

    /// The public inputs of partition `k` (ONE excluded), as `get_seal_inputs` returns them.
    pub fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        Compound::generate_public_inputs(&self.public_inputs, &self.public_params.vanilla_params, Some(k))
            .map_err(|e| FilecoinError::proofs("generate_public_inputs", e))
    }
}

/// Where one C2 run spent its time, summed over partitions.
#[derive(Clone, Debug, Default)]
pub struct C2Stages {
    pub partitions: usize,
    /// Constraints of one partition circuit (bellperson's count, input constraints included).
    pub constraints: usize,
    pub circuit_build: Duration,
    pub synthesis: Duration,
    /// Wall time of `prove_start` (ntt_h + msm_h).
    pub prove_start: Duration,
    /// Wall time of `finalize` (msm_l, msm_a, msm_b_g1, msm_b_g2, combine).
    pub finalize: Duration,
    /// The engine's own per-stage split, summed over partitions (its `synthesize` unused).
    pub engine: StageTimings,
    pub self_verify: Duration,
}

fn add_timings(sum: &mut StageTimings, t: &StageTimings) {
    sum.synthesize += t.synthesize;
    sum.ntt_h += t.ntt_h;
    sum.msm_h += t.msm_h;
    sum.msm_l += t.msm_l;
    sum.msm_a += t.msm_a;
    sum.msm_b_g1 += t.msm_b_g1;
    sum.msm_b_g2 += t.msm_b_g2;
    sum.finalize += t.finalize;
}

impl C2Stages {
    /// The split as a JSON object (seconds).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "partitions": self.partitions,
            "constraints": self.constraints,
            "circuit_build_s": self.circuit_build.as_secs_f64(),
            "synthesis_s": self.synthesis.as_secs_f64(),
            "prove_start_s": self.prove_start.as_secs_f64(),
            "finalize_s": self.finalize.as_secs_f64(),
            "ntt_h_s": self.engine.ntt_h.as_secs_f64(),
            "msm_h_s": self.engine.msm_h.as_secs_f64(),
            "msm_l_s": self.engine.msm_l.as_secs_f64(),
            "msm_a_s": self.engine.msm_a.as_secs_f64(),
            "msm_b_g1_s": self.engine.msm_b_g1.as_secs_f64(),
            "msm_b_g2_s": self.engine.msm_b_g2.as_secs_f64(),
            "combine_s": self.engine.finalize.as_secs_f64(),
            "self_verify_s": self.self_verify.as_secs_f64(),
        })
    }
}

impl fmt::Display for C2Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} partition(s) of {} constraints: circuit {:.3} s, synthesis {:.2} s, prove_start {:.2} s \
             (ntt_h {:.2}, msm_h {:.2}), finalize {:.2} s (msm_l {:.2}, msm_a {:.2}, msm_b_g1 {:.2}, \
             msm_b_g2 {:.2}), self-verify {:.3} s",
            self.partitions,
            self.constraints,
            self.circuit_build.as_secs_f64(),
            self.synthesis.as_secs_f64(),
            self.prove_start.as_secs_f64(),
            self.engine.ntt_h.as_secs_f64(),
            self.engine.msm_h.as_secs_f64(),
            self.finalize.as_secs_f64(),
            self.engine.msm_l.as_secs_f64(),
            self.engine.msm_a.as_secs_f64(),
            self.engine.msm_b_g1.as_secs_f64(),
            self.engine.msm_b_g2.as_secs_f64(),
            self.self_verify.as_secs_f64()
        )
    }
}

/// A C2 result: the partition proofs concatenated in partition order, and the stage split.
#[derive(Clone, Debug)]
pub struct C2Output {
    pub proof: Vec<u8>,
    pub stages: C2Stages,
}

/// filecoin-proofs' own `seal_commit_phase2` on the same C1 and the same parameter cache
/// (the baseline; it verifies its proof with `verify_seal` before returning).
pub fn reference_c2(c1: &C1Output, info: &SectorInfo) -> Result<Vec<u8>, FilecoinError> {
    let config = c1.registered_proof.porep_config()?;
    crate::params::ParamFiles::for_proof(c1.registered_proof)?.require_params()?;
    // seal_commit_phase2 takes the output by value; round-trip it through its own serde
    // (C1 outputs are not Clone in filecoin-proofs 19.1.0). Excluded from nothing: this
    // costs ~1 ms for 2 KiB.
    let ShapedC1::Base(out) = &c1.shaped;
    let json = serde_json::to_vec(out).map_err(|e| FilecoinError::Internal(format!("C1 copy: {e}")))?;
    let owned =
        serde_json::from_slice(&json).map_err(|e| FilecoinError::Internal(format!("C1 copy: {e}")))?;
    let output = filecoin_proofs::seal_commit_phase2::<SectorShapeBase>(
        &config,
        owned,
        info.prover_id,
        storage_proofs_core::sector::SectorId::from(info.sector_id),
    )
    .map_err(|e| FilecoinError::proofs("seal_commit_phase2", e))?;
    Ok(output.proof)
}

const INPUTS_MISMATCH: &str = "the public inputs the circuit computes from the vanilla proofs differ from \
     those the verifier derives from the C1's seed, replica id and commitments (a tampered or mixed-up C1)";

/// Options of one C2 run.
#[derive(Clone, Copy, Debug)]
pub struct C2Options {
    /// Check each partition's public inputs against the circuit's before proving, and
    /// verify every partition proof with our verifier before returning it (~2 ms each), as
    /// `seal_commit_phase2` does with `verify_seal`: a C1 whose vanilla proofs do not match
    /// its seed or commitments fails at once instead of yielding a useless proof.
    pub self_verify: bool,
}

impl Default for C2Options {
    fn default() -> Self {
        C2Options { self_verify: true }
    }
}

/// Parameters loaded from the cache and checked against the circuit's shape.
pub struct LoadedParams {
    pub params: Arc<Parameters>,
    /// Shape of one partition circuit, counted on the blank circuit.
    pub shape: Shape,
}

impl LoadedParams {
    /// Loads `files.params` for `registered_proof`'s circuit; a file made for another
    /// circuit (another sector size) is refused here, naming the section.
    pub fn load(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        checked: bool,
    ) -> Result<Self, FilecoinError> {
        files.require_params()?;
        let size = registered_proof.sector_size()?;
        let mismatch = |reason: String| FilecoinError::ParamsMismatch {
            sector_size: size.name().to_string(),
            path: files.params.clone(),
            reason,
        };
        // The circuit's shape, counted on the blank circuit parameter generation uses.
        let shape = shape_of(blank_circuit(registered_proof)?).map_err(|e| FilecoinError::Synthesis {
            partition: 0,
            reason: format!("counting the circuit shape: {e}"),
        })?;
        let params =
            Parameters::read_file(&files.params, checked, &ParamsMemory::default()).map_err(|e| match e {
                e @ Groth16Error::Io { .. } => FilecoinError::Engine(e.to_string()),
                e => mismatch(e.to_string()),
            })?;
        params.check_fits(&shape).map_err(|e| mismatch(format!("{e} ({size} circuit)")))?;
        Ok(LoadedParams { params: Arc::new(params), shape })
    }
}

/// Proves C1 outputs of one registered proof's sector size, against parameters loaded
/// once from the cache. The assignment and prover slabs are reserved at load, sized from
/// the circuit's shape, and reused by every partition of every sector.
pub struct C2Prover {
    registered_proof: RegisteredSealProof,
    files: ParamFiles,
    shape: Shape,
    /// The proving backend (CPU), over memory the engine's plan reserves for one slot.
    backend: Arc<dyn Backend>,
    pvk: PreparedVerifyingKey,
    pools: AssignmentPools,
    synthesis: Synthesis,
}

impl fmt::Debug for C2Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("C2Prover")
            .field("registered_proof", &self.registered_proof)
            .field("params", &self.files.params)
            .field("shape", &self.shape)
            .finish()
    }
}

impl C2Prover {
    /// Loads the parameters for `registered_proof` from the parameter cache
    /// (`FIL_PROOFS_PARAMETER_CACHE`), `checked` validating every point.
    pub fn load(registered_proof: RegisteredSealProof, checked: bool) -> Result<Self, FilecoinError> {
        Self::load_from(registered_proof, &ParamFiles::for_proof(registered_proof)?, checked)
    }

    /// Loads the parameters from `files` (any directory laid out like the cache), and the
    /// precompiled constraints beside them (recorded on first use).
    pub fn load_from(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        checked: bool,
    ) -> Result<Self, FilecoinError> {
        Self::load_with(registered_proof, files, checked, true)
    }

    /// [`C2Prover::load_from`]; `precompiled: false` synthesizes through the bellpepper trait.
    pub fn load_with(
        registered_proof: RegisteredSealProof,
        files: &ParamFiles,
        checked: bool,
        precompiled: bool,
    ) -> Result<Self, FilecoinError> {
        let loaded = LoadedParams::load(registered_proof, files, checked)?;
        let pvk = prepare_verifying_key(&loaded.params.vk);
        // One slot of the engine's plan: the same reservation path as `Engine::new`.
        let memory = MemoryPlan::for_shapes(&[loaded.shape], 1)
            .reserve(&Ledger::unlimited(), &RegionConfig::default())
            .map_err(|e| FilecoinError::Engine(format!("reserving the slot's slabs: {e}")))?;
        let prover_memory = memory
            .prover_memory(&ProofShape::of_params(&loaded.params))
            .ok_or_else(|| FilecoinError::Engine("no twiddle table for the parameters' domain".into()))?;
        let backend: Arc<dyn Backend> = Arc::new(
            Prover::with_memory(loaded.params, prover_memory)
                .map_err(|e| FilecoinError::Engine(format!("building the prover: {e}")))?,
        );
        let synthesis = Synthesis::for_proof(registered_proof, files, &loaded.shape, precompiled)?;
        Ok(C2Prover {
            registered_proof,
            files: files.clone(),
            shape: loaded.shape,
            backend,
            pvk,
            pools: memory.assign,
            synthesis,
        })
    }

    /// The registered proof these parameters serve.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.registered_proof
    }

    /// The circuit shape of one partition.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// How partitions are synthesized.
    pub fn synthesis(&self) -> &Synthesis {
        &self.synthesis
    }

    /// C2 for one sector: every partition proven in order, proofs concatenated.
    pub fn prove(&self, c1: &C1Output, rng: &mut impl RngCore) -> Result<C2Output, FilecoinError> {
        self.prove_with(c1, rng, C2Options::default())
    }

    /// [`C2Prover::prove`] with options.
    pub fn prove_with(
        &self,
        c1: &C1Output,
        rng: &mut impl RngCore,
        options: C2Options,
    ) -> Result<C2Output, FilecoinError> {
        let ours = self.registered_proof.sector_size()?;
        let theirs = c1.registered_proof.sector_size()?;
        if ours != theirs {
            return Err(FilecoinError::ParamsMismatch {
                sector_size: ours.name().to_string(),
                path: self.files.params.clone(),
                reason: format!("the C1 output is for a {theirs} sector ({:?})", c1.registered_proof),
            });
        }
        let job = SectorJob::new(c1)?;
        let _span = tracing::info_span!("c2", sector_size = %ours, partitions = job.partitions()).entered();
        let mut stages = C2Stages {
            partitions: job.partitions(),
            constraints: self.shape.constraints,
            ..Default::default()
        };
        let mut proof_bytes = Vec::with_capacity(job.partitions() * PROOF_BYTES);
        for k in 0..job.partitions() {
            let engine = |e: Groth16Error| match e {
                e @ Groth16Error::ShapeMismatch { .. } => FilecoinError::ParamsMismatch {
                    sector_size: ours.name().to_string(),
                    path: self.files.params.clone(),
                    reason: format!("partition {k}: {e}"),
                },
                e => FilecoinError::Engine(format!("partition {k}: {e}")),
            };
            let started = Instant::now();
            let circuit = job.circuit(k)?;
            let inputs = job.public_inputs(k)?;
            stages.circuit_build += started.elapsed();

            let started = Instant::now();
            let mut witness = self
                .synthesis
                .synthesize(circuit, &self.pools, &self.shape)
                .map_err(|e| FilecoinError::Synthesis { partition: k, reason: e.to_string() })?;
            stages.synthesis += started.elapsed();
            // The circuit computes its public inputs from the vanilla proofs; they must be
            // the ones the verifier derives from the C1's seed, replica id and commitments.
            // Checked before the expensive part.
            if options.self_verify && witness.input_assignment().get(1..) != Some(&inputs[..]) {
                return Err(FilecoinError::Synthesis { partition: k, reason: INPUTS_MISMATCH.into() });
            }

            let r = Scalar::random(&mut *rng);
            let s = Scalar::random(&mut *rng);
            let started = Instant::now();
            let start = self.backend.prove_start(&mut witness).map_err(engine)?;
            stages.prove_start += started.elapsed();
            let started = Instant::now();
            let (proof, timings) = self.backend.finalize(start, &witness, r, s).map_err(engine)?;
            add_timings(&mut stages.engine, &timings);
            drop(witness);
            stages.finalize += started.elapsed();

            if options.self_verify {
                let started = Instant::now();
                let ok = verify_proof(&self.pvk, &proof, &inputs).map_err(engine)?;
                stages.self_verify += started.elapsed();
                if !ok {
                    return Err(FilecoinError::Synthesis {
                        partition: k,
                        reason: "the proof does not verify against the partition's public inputs".into(),
                    });
                }
            }
            proof_bytes.extend_from_slice(&proof.to_bytes());
        }
        Ok(C2Output { proof: proof_bytes, stages })
    }
}

/// C2 on the long-lived engine (issue 5's pipeline): one job per sector, one partition
/// circuit per vanilla proof list, parameters loaded once, slots reserved at start.
/// Synthesis of the next partition (or sector) overlaps proving of the current one.
pub struct C2Engine {
    registered_proof: RegisteredSealProof,
    kind: String,
    shape: Shape,
    engine: Engine,
    synthesis: Synthesis,
}

impl fmt::Debug for C2Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("C2Engine").field("kind", &self.kind).field("shape", &self.shape).finish()
    }
}

/// A sector submitted to a [`C2Engine`].
pub struct C2Pending {
    handle: JobHandle,
    /// The public inputs filecoin-proofs derives, per partition.
    expected_inputs: Vec<Vec<Scalar>>,
}

impl C2Engine {
    /// Starts an engine serving `registered_proof`'s circuit with parameters from the cache
    /// and precompiled constraints beside them (recorded on first use).
    pub fn start(
        registered_proof: RegisteredSealProof,
        config: EngineConfig,
        checked: bool,
    ) -> Result<Self, FilecoinError> {
        Self::start_with(registered_proof, config, checked, true)
    }

    /// [`C2Engine::start`]; `precompiled: false` synthesizes through the bellpepper trait.
    pub fn start_with(
        registered_proof: RegisteredSealProof,
        config: EngineConfig,
        checked: bool,
        precompiled: bool,
    ) -> Result<Self, FilecoinError> {
        let files = ParamFiles::for_proof(registered_proof)?;
        let loaded = LoadedParams::load(registered_proof, &files, checked)?;
        let kind = format!("stacked-drg-{}", registered_proof.sector_size()?.name());
        let spec = CircuitSpec { kind: kind.clone(), shape: loaded.shape, params: loaded.params };
        let synthesis = Synthesis::for_proof(registered_proof, &files, &loaded.shape, precompiled)?;
        let engine = Engine::new(config, vec![spec]).map_err(|e| FilecoinError::Engine(e.to_string()))?;
        Ok(C2Engine { registered_proof, kind, shape: loaded.shape, engine, synthesis })
    }

    /// The engine (memory plan, ledger, stats).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The circuit shape of one partition.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// Submits one sector's C2 (blocks when the engine's job queue is full).
    pub fn submit(&self, c1: &C1Output) -> Result<C2Pending, FilecoinError> {
        let (ours, theirs) = (self.registered_proof.sector_size()?, c1.registered_proof.sector_size()?);
        if ours != theirs {
            return Err(FilecoinError::BadArgument(format!(
                "this engine proves {ours} sectors; the C1 output is for a {theirs} sector"
            )));
        }
        let job = SectorJob::new(c1)?;
        let mut circuits = Vec::with_capacity(job.partitions());
        let mut expected_inputs = Vec::with_capacity(job.partitions());
        for k in 0..job.partitions() {
            circuits.push(self.synthesis.partition(job.circuit(k)?));
            expected_inputs.push(job.public_inputs(k)?);
        }
        let handle = self
            .engine
            .submit(Job::new(self.kind.clone(), circuits))
            .map_err(|e| FilecoinError::Engine(e.to_string()))?;
        Ok(C2Pending { handle, expected_inputs })
    }

    /// Stops the engine, draining queued jobs.
    pub fn shutdown(self) -> ShutdownReport {
        self.engine.shutdown(ShutdownMode::Drain)
    }
}

impl C2Pending {
    /// Waits for the sector: its proof bytes (partitions concatenated in order) and the
    /// engine's job output (timeline). Fails when a partition failed, or when the public
    /// inputs the circuit computed differ from those filecoin-proofs derives.
    pub fn wait(self) -> Result<(Vec<u8>, JobOutput), FilecoinError> {
        let out = self.handle.wait().map_err(|e| FilecoinError::Engine(e.to_string()))?;
        if let Some(e) = out.first_error() {
            return Err(FilecoinError::Engine(e.to_string()));
        }
        for (k, (partition, expected)) in out.partitions.iter().zip(&self.expected_inputs).enumerate() {
            let got = partition.as_ref().map(|p| &p.public_inputs);
            if got.ok() != Some(expected) {
                return Err(FilecoinError::Synthesis { partition: k, reason: INPUTS_MISMATCH.into() });
            }
        }
        let proof =
            out.proof_bytes().ok_or_else(|| FilecoinError::Internal("a partition without a proof".into()))?;
        Ok((proof, out))
    }
}
