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

use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::Domain;
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher, SectorShapeBase};
use filecoin_proofs::types::{PoRepConfig, VanillaSealProof};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::api::{C1Output, RegisteredSealProof, SectorInfo, ShapedC1};
use crate::error::FilecoinError;

/// The StackedDrg circuit of this crate's tree shape.
pub type SealCircuit = StackedCircuit<SectorShapeBase, DefaultPieceHasher>;
type Compound = StackedCompound<SectorShapeBase, DefaultPieceHasher>;
type Drg = StackedDrg<'static, SectorShapeBase, DefaultPieceHasher>;

/// The compound public params `seal_commit_phase2` sets up for `config`.
fn compound_public_params(
    config: &PoRepConfig,
) -> Result<compound_proof::PublicParams<'static, Drg>, FilecoinError> {
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(config)
            .map_err(|e| FilecoinError::proofs("setup_params", e))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <Compound as CompoundProof<Drg, SealCircuit>>::setup(&setup)
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
            Default::default(),
            vanilla,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| FilecoinError::Synthesis {
            partition: k,
            reason: format!("building the circuit: {e:#}"),
        })
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
    pub prove_start: Duration,
    pub finalize: Duration,
    pub self_verify: Duration,
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
            "self_verify_s": self.self_verify.as_secs_f64(),
        })
    }
}

impl fmt::Display for C2Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} partition(s) of {} constraints: circuit {:.3} s, synthesis {:.2} s, prove_start {:.2} s, \
             finalize {:.2} s, self-verify {:.3} s",
            self.partitions,
            self.constraints,
            self.circuit_build.as_secs_f64(),
            self.synthesis.as_secs_f64(),
            self.prove_start.as_secs_f64(),
            self.finalize.as_secs_f64(),
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

#[allow(dead_code)]
fn elapsed(started: Instant) -> Duration {
    started.elapsed()
}
