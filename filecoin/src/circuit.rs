//! The StackedDrg partition circuit of a C1 output, built exactly as filecoin-proofs builds
//! it, and its public inputs.
//!
//! For partition k the circuit is what `StackedCompound::circuit_proofs` builds in
//! storage-proofs-core's `compound_proof` module:
//! `<StackedCompound as CompoundProof>::circuit(&PublicInputs { replica_id, tau: Some(Tau {
//! comm_d, comm_r }), k: None, seed: Some(seed) }, Default::default(), &vanilla_proofs[k],
//! &vanilla_params, Some(k))`, and its public inputs are
//! `StackedCompound::generate_public_inputs(.., Some(k))` (what `get_seal_inputs` returns).
//!
//! This module depends on nothing else of the crate but [`crate::api`] and the error type:
//! the parameter cache ([`crate::params`]), the precompiled constraints ([`crate::pce`])
//! and the driver ([`crate::c2`]) build on it.
use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::Domain;
use filecoin_proofs::constants::{
    DefaultPieceDomain, DefaultPieceHasher, SectorShapeBase, SectorShapeSub8, SectorShapeTop2,
};
use filecoin_proofs::types::{PoRepConfig, VanillaSealProof};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use arenaprove_circuits::precompiled::{PartCs, PartedCircuit, WitnessCs};
use arenaprove_circuits::Shape;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};

use crate::api::{C1Output, RegisteredSealProof, ShapedC1};
use crate::challenge::{self, Publics};
use crate::error::FilecoinError;
use crate::tree::{each_shape, with_tree, SealTree};

type G = DefaultPieceHasher;

/// The StackedDrg partition circuit, of the tree shape of its sector size
/// ([`crate::tree`]): storage-proofs' `StackedCircuit`, unchanged, behind one type.
#[derive(Clone)]
pub enum SealCircuit {
    Base(StackedCircuit<SectorShapeBase, G>),
    Sub8(StackedCircuit<SectorShapeSub8, G>),
    Top2(StackedCircuit<SectorShapeTop2, G>),
}

impl Circuit<Scalar> for SealCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        each_shape!(self, SealCircuit, c => Circuit::synthesize(c, cs))
    }
}

type Compound<Tree> = StackedCompound<Tree, G>;
type Drg<Tree> = StackedDrg<'static, Tree, G>;

/// The compound public params `seal_commit_phase2` sets up for `config`, for any tree shape.
pub(crate) fn compound_public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<compound_proof::PublicParams<'static, Drg<Tree>>, FilecoinError> {
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(config)
            .map_err(|e| FilecoinError::proofs("setup_params", e))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    <Compound<Tree> as CompoundProof<Drg<Tree>, StackedCircuit<Tree, G>>>::setup(&setup)
        .map_err(|e| FilecoinError::proofs("setup", e))
}

fn blank_of<Tree: SealTree>(config: &PoRepConfig) -> Result<SealCircuit, FilecoinError> {
    let public_params = compound_public_params::<Tree>(config)?;
    Ok(Tree::circuit(<Compound<Tree> as CompoundProof<Drg<Tree>, StackedCircuit<Tree, G>>>::blank_circuit(
        &public_params.vanilla_params,
    )))
}

/// The circuit with no witness that parameter generation synthesizes (`blank_circuit`).
pub fn blank_circuit(registered_proof: RegisteredSealProof) -> Result<SealCircuit, FilecoinError> {
    let config = registered_proof.porep_config()?;
    with_tree!(registered_proof.sector_size()?.tree_shape(), Tree => blank_of::<Tree>(&config))
}

/// The shape of one partition of `registered_proof`'s circuit, counted on the blank
/// circuit parameter generation uses.
pub fn blank_shape(registered_proof: RegisteredSealProof) -> Result<Shape, FilecoinError> {
    let sector_size = registered_proof.sector_size()?;
    arenaprove_circuits::shape_of(blank_circuit(registered_proof)?)
        .map_err(|e| FilecoinError::groth16(format!("counting the {sector_size} circuit's shape"), e.into()))
}

/// One partition's challenges (vanilla proofs), by tree shape.
pub enum Challenges {
    Base(Vec<VanillaSealProof<SectorShapeBase>>),
    Sub8(Vec<VanillaSealProof<SectorShapeSub8>>),
    Top2(Vec<VanillaSealProof<SectorShapeTop2>>),
}

/// One partition's circuit for the parallel witness ([`PartedCircuit`]): the prologue
/// (replica id, comm_d, comm_r as inputs, comm_r = H(comm_c, comm_r_last)) and then one
/// part per challenge, in the order `StackedCircuit` synthesizes them, each in pieces
/// ([`crate::challenge`]: its comm_d path level by level, each label two SHA-256 blocks at
/// a time, ...), so that a partition of two challenges fills every core.
///
/// The prologue is storage-proofs' own `StackedCircuit::synthesize` with no challenges. A
/// challenge's pieces call storage-proofs', bellperson's and neptune's gadgets as
/// storage-proofs' per-challenge `Proof::synthesize` does; [`crate::challenge`] says how
/// each piece starts mid-chain, and the precompiled witness checks every piece against the
/// recording.
pub struct SealParts {
    publics: Publics,
    challenges: Challenges,
}

impl PartedCircuit for SealParts {
    fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError> {
        each_shape!(&self.challenges, Challenges, proofs => self.prologue_of(cs, proofs))
    }
    fn parts(&self) -> usize {
        each_shape!(&self.challenges, Challenges, proofs => proofs.len())
    }
    fn pieces(&self) -> usize {
        each_shape!(&self.challenges, Challenges, proofs => proofs.first().map_or(1, challenge::pieces))
    }
    fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError> {
        each_shape!(&self.challenges, Challenges, proofs => {
            let proof = proofs.get(i).ok_or(SynthesisError::AssignmentMissing)?;
            challenge::synthesize_piece(cs, &self.publics, proof, piece)
        })
    }
    fn replays_prologue(&self) -> bool {
        false
    }
}

impl SealParts {
    fn prologue_of<Tree: SealTree>(
        &self,
        cs: &mut WitnessCs<'_>,
        _: &[VanillaSealProof<Tree>],
    ) -> Result<(), SynthesisError> {
        let p = &self.publics;
        StackedCircuit::<Tree, G>::synthesize(
            cs,
            Some(p.replica_id),
            Some(p.comm_d),
            Some(p.comm_r),
            Some(p.comm_r_last),
            Some(p.comm_c),
            Vec::new(),
        )
    }
}

/// One sector's C2 work: the public params and inputs shared by its partitions, and the
/// vanilla proofs each partition circuit is built from.
pub struct SectorJob<'a> {
    registered_proof: RegisteredSealProof,
    shaped: ShapedJob<'a>,
}

enum ShapedJob<'a> {
    Base(JobOf<'a, SectorShapeBase>),
    Sub8(JobOf<'a, SectorShapeSub8>),
    Top2(JobOf<'a, SectorShapeTop2>),
}

/// [`SectorJob`] for one tree shape.
struct JobOf<'a, Tree: SealTree> {
    public_params: compound_proof::PublicParams<'static, Drg<Tree>>,
    public_inputs: stacked::PublicInputs<PoseidonDomain, DefaultPieceDomain>,
    vanilla_proofs: &'a [Vec<VanillaSealProof<Tree>>],
}

impl<'a, Tree: SealTree> JobOf<'a, Tree> {
    fn new(
        c1: &'a filecoin_proofs::types::SealCommitPhase1Output<Tree>,
        registered_proof: RegisteredSealProof,
    ) -> Result<Self, FilecoinError> {
        let config = registered_proof.porep_config()?;
        let comm_r: PoseidonDomain = filecoin_proofs::as_safe_commitment(&c1.comm_r, "comm_r")
            .map_err(|e| FilecoinError::BadC1(format!("{e:#}")))?;
        let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
            .map_err(|e| FilecoinError::BadC1(format!("comm_d: {e:#}")))?;
        let public_inputs = stacked::PublicInputs {
            replica_id: c1.replica_id,
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(c1.seed),
        };
        let public_params = compound_public_params::<Tree>(&config)?;
        let partitions = usize::from(config.partitions);
        if c1.vanilla_proofs.len() != partitions {
            return Err(FilecoinError::BadC1(format!(
                "{} partitions of vanilla proofs, {registered_proof:?} has {partitions}",
                c1.vanilla_proofs.len(),
            )));
        }
        Ok(JobOf { public_params, public_inputs, vanilla_proofs: &c1.vanilla_proofs })
    }

    fn vanilla(&self, k: usize) -> Result<&'a Vec<VanillaSealProof<Tree>>, FilecoinError> {
        self.vanilla_proofs.get(k).ok_or_else(|| {
            FilecoinError::Internal(format!(
                "partition {k} of a {}-partition sector",
                self.vanilla_proofs.len()
            ))
        })
    }

    fn circuit(&self, k: usize) -> Result<SealCircuit, FilecoinError> {
        <Compound<Tree> as CompoundProof<Drg<Tree>, StackedCircuit<Tree, G>>>::circuit(
            &self.public_inputs,
            (), // StackedCircuit's ComponentPrivateInputs (circuit_proofs passes Default::default())
            self.vanilla(k)?,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map(Tree::circuit)
        .map_err(|source| FilecoinError::CircuitBuild { partition: k, source })
    }

    fn parts(&self, k: usize) -> Result<SealParts, FilecoinError> {
        let vanilla = self.vanilla(k)?;
        let build =
            |reason: &str| FilecoinError::CircuitBuild { partition: k, source: anyhow::anyhow!("{reason}") };
        let first = vanilla.first().ok_or_else(|| build("Cannot create a circuit with no vanilla proofs"))?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        if vanilla.iter().any(|p| p.comm_r_last() != comm_r_last) {
            return Err(build("inconsistent comm_r_lasts"));
        }
        if vanilla.iter().any(|p| p.comm_c() != comm_c) {
            return Err(build("inconsistent comm_cs"));
        }
        for proof in vanilla {
            challenge::check_shape(proof).map_err(|reason| build(&reason))?;
        }
        let pieces = challenge::pieces(first);
        if vanilla.iter().any(|p| challenge::pieces(p) != pieces) {
            return Err(build("challenges of different shapes"));
        }
        let tau = self.public_inputs.tau.as_ref().ok_or_else(|| build("no comm_d, comm_r"))?;
        Ok(SealParts {
            publics: Publics {
                replica_id: self.public_inputs.replica_id,
                comm_d: tau.comm_d,
                comm_r: tau.comm_r,
                comm_r_last,
                comm_c,
            },
            challenges: Tree::challenges(vanilla.clone()),
        })
    }

    fn verify_vanilla(&self) -> Result<bool, FilecoinError> {
        <Drg<Tree> as ProofScheme>::verify_all_partitions(
            &self.public_params.vanilla_params,
            &self.public_inputs,
            self.vanilla_proofs,
        )
        .map_err(|e| FilecoinError::proofs("verify_all_partitions", e))
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        Compound::<Tree>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| FilecoinError::proofs("generate_public_inputs", e))
    }
}

impl<'a> SectorJob<'a> {
    /// Sets up the job as `seal_commit_phase2_circuit_proofs` does, config from the C1's
    /// registered proof.
    pub fn new(c1: &'a C1Output) -> Result<Self, FilecoinError> {
        let proof = c1.registered_proof;
        let shaped = match &c1.shaped {
            ShapedC1::Base(out) => ShapedJob::Base(JobOf::new(out, proof)?),
            ShapedC1::Sub8(out) => ShapedJob::Sub8(JobOf::new(out, proof)?),
            ShapedC1::Top2(out) => ShapedJob::Top2(JobOf::new(out, proof)?),
        };
        Ok(SectorJob { registered_proof: proof, shaped })
    }

    /// The registered proof of this sector.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.registered_proof
    }

    /// Number of partitions (circuits) of this sector.
    pub fn partitions(&self) -> usize {
        each_shape!(&self.shaped, ShapedJob, j => j.vanilla_proofs.len())
    }

    /// The circuit of partition `k`, as `StackedCompound::circuit_proofs` builds it.
    pub fn circuit(&self, k: usize) -> Result<SealCircuit, FilecoinError> {
        each_shape!(&self.shaped, ShapedJob, j => j.circuit(k))
    }

    /// The circuit of partition `k` as a prologue and one part per challenge, for the
    /// parallel witness: the same values [`SectorJob::circuit`] builds its circuit from,
    /// with the same checks (`StackedCompound::circuit`'s: some proofs, one comm_r_last
    /// and one comm_c).
    pub fn parts(&self, k: usize) -> Result<SealParts, FilecoinError> {
        each_shape!(&self.shaped, ShapedJob, j => j.parts(k))
    }

    /// Checks every partition's vanilla proofs against the public inputs (seed, replica id,
    /// commitments) as filecoin-proofs' commit phase 1 does before returning them
    /// (`StackedDrg::verify_all_partitions`): Merkle paths and labels only, no circuit.
    /// A C1 that was tampered with or mixed up with another sector's fails here, before
    /// any synthesis. `Ok(false)` when a proof does not verify.
    pub fn verify_vanilla(&self) -> Result<bool, FilecoinError> {
        each_shape!(&self.shaped, ShapedJob, j => j.verify_vanilla())
    }

    /// The public inputs of partition `k` (ONE excluded), as `get_seal_inputs` returns them.
    pub fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        each_shape!(&self.shaped, ShapedJob, j => j.public_inputs(k))
    }
}
