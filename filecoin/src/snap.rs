//! SnapDeals (empty sector update) proofs on the engine, from the vanilla partition proofs
//! Curio sends (`SNAP_DEALS_UPDATE`: one bincode `PartitionProof` per partition, and the raw
//! comm_r_old, comm_r_new and comm_d_new).
//!
//! As filecoin-proofs 19.1.0's `generate_empty_sector_update_proof_with_vanilla`: the
//! update config from the registered update proof (`SectorUpdateConfig::from_porep_config`:
//! partitions and `h` from the sector's node count), one `EmptySectorUpdateCircuit` per
//! partition (`EmptySectorUpdateCompound::circuit(.., Some(k))`), the proof the partition
//! proofs concatenated (192 bytes each). Before anything is built the vanilla proofs are
//! checked against the three commitments (`EmptySectorUpdate::verify_all_partitions`, what
//! filecoin-proofs' `verify_partition_proofs` runs): storage-proofs' circuit asserts on
//! malformed proofs, so nothing malformed may reach it. The circuit's public inputs depend
//! on the commitments and the partition index only; the engine checks them against
//! `EmptySectorUpdateCompound::generate_public_inputs` as for every kind.
//!
//! Registered update proofs are numbered as go-state-types numbers
//! `abi.RegisteredUpdateProof` (2 KiB .. 64 GiB: 0..=4); the PoRep config is
//! filecoin-proofs-api's `as_v1_config` (porep id: the proof's number and nonce 0, API
//! version 1.2.0, no features).
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use blstrs::Scalar;
use filecoin_proofs::types::{PoRepConfig, PoRepProofPartitions, SectorUpdateConfig};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs,
    PublicParams, SetupParams,
};

use crate::api::SectorSize;
use crate::c2::LoadOptions;
use crate::error::{no_panic, FilecoinError};
use crate::params::ParamFiles;
use crate::pce::Synthesis;
use crate::tree::{each_shape, with_tree, SealTree};
use crate::verify::Verdict;

/// filecoin-proofs-api's `RegisteredUpdateProof`, numbered as go-state-types does.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegisteredUpdateProof {
    StackedDrg2KiBV1,
    StackedDrg8MiBV1,
    StackedDrg512MiBV1,
    StackedDrg32GiBV1,
    StackedDrg64GiBV1,
}

impl RegisteredUpdateProof {
    pub const ALL: [RegisteredUpdateProof; 5] = [
        RegisteredUpdateProof::StackedDrg2KiBV1,
        RegisteredUpdateProof::StackedDrg8MiBV1,
        RegisteredUpdateProof::StackedDrg512MiBV1,
        RegisteredUpdateProof::StackedDrg32GiBV1,
        RegisteredUpdateProof::StackedDrg64GiBV1,
    ];

    pub fn from_number(n: u64) -> Option<Self> {
        usize::try_from(n).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    pub fn number(self) -> u64 {
        self as u64
    }

    /// The proof of a sector size.
    pub fn for_size(size: SectorSize) -> Self {
        Self::ALL[SectorSize::ALL.iter().position(|s| *s == size).unwrap_or(0)]
    }

    pub fn sector_size(self) -> SectorSize {
        SectorSize::ALL[self as usize]
    }

    /// filecoin-proofs-api's `as_v1_config`.
    pub fn porep_config(self) -> Result<PoRepConfig, FilecoinError> {
        let bytes = self.sector_size().bytes();
        let partitions = filecoin_proofs::constants::POREP_PARTITIONS
            .read()
            .map_err(|_| FilecoinError::Internal("POREP_PARTITIONS poisoned".into()))?
            .get(&bytes)
            .copied()
            .ok_or_else(|| {
                FilecoinError::Internal(format!("no PoRep partitions for {bytes}-byte sectors"))
            })?;
        let mut porep_id = [0u8; 32];
        porep_id[..8].copy_from_slice(&self.number().to_le_bytes());
        Ok(PoRepConfig {
            sector_size: filecoin_proofs::types::SectorSize(bytes),
            partitions: PoRepProofPartitions(partitions),
            porep_id,
            api_version: ApiVersion::V1_2_0,
            api_features: vec![],
        })
    }

    /// The update config (partitions, `h`) filecoin-proofs derives from the PoRep config.
    pub fn update_config(self) -> Result<SectorUpdateConfig, FilecoinError> {
        Ok(SectorUpdateConfig::from_porep_config(&self.porep_config()?))
    }

    /// Partition proofs of one update proof.
    pub fn partitions(self) -> Result<usize, FilecoinError> {
        Ok(usize::from(self.update_config()?.update_partitions))
    }

    fn public_params(self) -> PublicParams {
        PublicParams::from_sector_size(self.sector_size().bytes())
    }

    /// The Groth16 parameter files of this proof's circuit in `dir`.
    pub fn param_files(self, dir: &Path) -> Result<ParamFiles, FilecoinError> {
        let size = self.sector_size();
        let pp = self.public_params();
        let cache_id = with_tree!(size.tree_shape(), Tree => <EmptySectorUpdateCompound<Tree> as CacheableParameters<
            EmptySectorUpdateCircuit<Tree>,
            PublicParams,
        >>::cache_identifier(&pp));
        Ok(ParamFiles::named(
            size.name(),
            format!("{size} SnapDeals"),
            format!("arenaprove filecoin snap-params --sector-size {size}"),
            cache_id,
            dir,
        ))
    }
}

impl fmt::Display for RegisteredUpdateProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl FromStr for RegisteredUpdateProof {
    type Err = FilecoinError;

    /// filecoin-proofs-api's name (`StackedDrg32GiBV1`) or go-state-types' number.
    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        let s = s.trim();
        let found = match s.parse::<u64>() {
            Ok(n) => Self::from_number(n),
            Err(_) => Self::ALL.into_iter().find(|p| format!("{p:?}") == s),
        };
        found.ok_or_else(|| {
            FilecoinError::BadArgument(format!(
                "unknown registered update proof `{s}` (StackedDrg2KiBV1 .. StackedDrg64GiBV1, or 0..=4)"
            ))
        })
    }
}

/// The empty-sector-update circuit, of the tree shape of its sector size.
pub enum UpdateCircuit {
    Base(EmptySectorUpdateCircuit<filecoin_proofs::constants::SectorShapeBase>),
    Sub8(EmptySectorUpdateCircuit<filecoin_proofs::constants::SectorShapeSub8>),
    Top2(EmptySectorUpdateCircuit<filecoin_proofs::constants::SectorShapeTop2>),
}

impl bellpepper_core::Circuit<Scalar> for UpdateCircuit {
    fn synthesize<CS: bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellpepper_core::SynthesisError> {
        each_shape!(self, UpdateCircuit, c => bellpepper_core::Circuit::synthesize(c, cs))
    }
}

/// Vanilla partition proofs of one update, by tree shape.
pub enum SnapVanilla {
    Base(Vec<PartitionProof<filecoin_proofs::constants::SectorShapeBase>>),
    Sub8(Vec<PartitionProof<filecoin_proofs::constants::SectorShapeSub8>>),
    Top2(Vec<PartitionProof<filecoin_proofs::constants::SectorShapeTop2>>),
}

type Update<Tree> = EmptySectorUpdate<Tree>;
type Compound<Tree> = EmptySectorUpdateCompound<Tree>;

/// The circuit with no witness that parameter generation synthesizes.
pub fn blank_update_circuit(proof: RegisteredUpdateProof) -> UpdateCircuit {
    let pp = proof.public_params();
    with_tree!(proof.sector_size().tree_shape(), Tree => Tree::update_circuit(
        <Compound<Tree> as CompoundProof<Update<Tree>, EmptySectorUpdateCircuit<Tree>>>::blank_circuit(&pp)
    ))
}

/// The shape of one partition of `proof`'s circuit.
pub fn update_shape(proof: RegisteredUpdateProof) -> Result<arenaprove_circuits::Shape, FilecoinError> {
    arenaprove_circuits::shape_of(blank_update_circuit(proof))
        .map_err(|e| FilecoinError::groth16(format!("counting the {proof} circuit's shape"), e.into()))
}

/// Development parameters for `proof`'s circuit when `files` lack them (insecure: known
/// toxic waste), as [`crate::params::ensure_params`] does for PoRep.
pub fn ensure_update_params(
    proof: RegisteredUpdateProof,
    files: &ParamFiles,
    rng: &mut impl rand_core::RngCore,
) -> Result<crate::params::ParamsStatus, FilecoinError> {
    crate::params::ensure_params_of(
        files,
        proof.sector_size().bytes(),
        rng,
        Some(&update_identity(files)),
        None,
        || Ok(blank_update_circuit(proof)),
    )
}

/// The identity of a SnapDeals circuit's recording (beside its parameters in `files`).
fn update_identity(files: &ParamFiles) -> String {
    format!("empty-sector-update {} {} {UPDATE_CIRCUIT_CODE}", files.circuit, files.cache_id)
}

/// One SnapDeals update to prove.
pub struct SnapRequest {
    pub proof: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    vanilla: SnapVanilla,
}

impl fmt::Debug for SnapRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapRequest").field("proof", &self.proof).field("partitions", &self.len()).finish()
    }
}

impl SnapRequest {
    /// Parses the vanilla proofs as Curio sends them: one bincode `PartitionProof` per
    /// partition (filecoin-proofs-api's `PartitionProofBytes`).
    pub fn from_bincode<B: AsRef<[u8]>>(
        proof: RegisteredUpdateProof,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
        vanilla: &[B],
    ) -> Result<Self, FilecoinError> {
        let size = proof.sector_size();
        let vanilla = with_tree!(size.tree_shape(), Tree => Tree::snap_vanilla(crate::post::decode_all(
            vanilla,
            &format!("partition proof {{}} is not a bincode PartitionProof of a {size} sector"),
            |_: &PartitionProof<Tree>| Ok(()),
        )?));
        SnapRequest::new(proof, comm_r_old, comm_r_new, comm_d_new, vanilla)
    }

    /// A request from partition proofs in filecoin-proofs' types.
    pub fn new(
        proof: RegisteredUpdateProof,
        comm_r_old: [u8; 32],
        comm_r_new: [u8; 32],
        comm_d_new: [u8; 32],
        vanilla: SnapVanilla,
    ) -> Result<Self, FilecoinError> {
        let shape = match &vanilla {
            SnapVanilla::Base(_) => crate::tree::TreeShape::Base,
            SnapVanilla::Sub8(_) => crate::tree::TreeShape::Sub8,
            SnapVanilla::Top2(_) => crate::tree::TreeShape::Top2,
        };
        if shape != proof.sector_size().tree_shape() {
            return Err(FilecoinError::BadVanilla(format!(
                "partition proofs of another tree shape than {proof}'s"
            )));
        }
        let request = SnapRequest { proof, comm_r_old, comm_r_new, comm_d_new, vanilla };
        let want = proof.partitions()?;
        if request.len() != want {
            return Err(FilecoinError::BadVanilla(format!(
                "{proof} takes {want} partition proofs, got {}",
                request.len()
            )));
        }
        Ok(request)
    }

    pub fn len(&self) -> usize {
        each_shape!(&self.vanilla, SnapVanilla, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The partition proofs in Curio's encoding.
    pub fn vanilla_bincode(&self) -> Result<Vec<Vec<u8>>, FilecoinError> {
        let encode = |e: bincode::Error| FilecoinError::Internal(format!("bincode: {e}"));
        each_shape!(&self.vanilla, SnapVanilla, v => v.iter().map(|p| bincode::serialize(p).map_err(encode)).collect())
    }
}

/// One update's circuits and the inputs the verifier derives, from a checked request.
pub struct SnapJob {
    shaped: ShapedSnapJob,
}

enum ShapedSnapJob {
    Base(SnapJobOf<filecoin_proofs::constants::SectorShapeBase>),
    Sub8(SnapJobOf<filecoin_proofs::constants::SectorShapeSub8>),
    Top2(SnapJobOf<filecoin_proofs::constants::SectorShapeTop2>),
}

struct SnapJobOf<Tree: SealTree> {
    public_params: compound_proof::PublicParams<'static, Update<Tree>>,
    public_inputs: PublicInputs,
    partitions: Vec<PartitionProof<Tree>>,
}

impl<Tree: SealTree> SnapJobOf<Tree> {
    fn new(request: &SnapRequest, vanilla: &[PartitionProof<Tree>]) -> Result<Self, FilecoinError> {
        use filecoin_hashers::Domain;
        let config = request.proof.update_config()?;
        let partitions = usize::from(config.update_partitions);
        let bad = |what: &'static str| {
            move |e: anyhow::Error| {
                FilecoinError::BadArgument(format!("{what} is not a BLS12-381 scalar: {e:#}"))
            }
        };
        let public_inputs = PublicInputs {
            k: partitions,
            comm_r_old: Domain::try_from_bytes(&request.comm_r_old).map_err(bad("comm_r_old"))?,
            comm_d_new: Domain::try_from_bytes(&request.comm_d_new).map_err(bad("comm_d_new"))?,
            comm_r_new: Domain::try_from_bytes(&request.comm_r_new).map_err(bad("comm_r_new"))?,
            h: config.h,
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: SetupParams { sector_bytes: request.proof.sector_size().bytes() },
            partitions: Some(partitions),
            priority: false,
        };
        let public_params =
            <Compound<Tree> as CompoundProof<Update<Tree>, EmptySectorUpdateCircuit<Tree>>>::setup(&setup)
                .map_err(|e| FilecoinError::proofs("setup", e))?;
        let ok = no_panic("verifying the partition proofs", || {
            <Update<Tree> as ProofScheme>::verify_all_partitions(
                &public_params.vanilla_params,
                &public_inputs,
                vanilla,
            )
            .map_err(|e| FilecoinError::BadVanilla(format!("verifying the partition proofs: {e:#}")))
        })?;
        if !ok {
            return Err(FilecoinError::BadVanilla(format!(
                "the partition proofs do not verify against comm_r_old, comm_r_new and comm_d_new ({})",
                request.proof
            )));
        }
        Ok(SnapJobOf { public_params, public_inputs, partitions: vanilla.to_vec() })
    }

    fn circuit(&self, k: usize) -> Result<UpdateCircuit, FilecoinError> {
        let partition = self
            .partitions
            .get(k)
            .ok_or_else(|| FilecoinError::Internal(format!("partition {k} of {}", self.partitions.len())))?;
        no_panic("building the circuit", || {
            <Compound<Tree> as CompoundProof<Update<Tree>, EmptySectorUpdateCircuit<Tree>>>::circuit(
                &self.public_inputs,
                (), // the circuit's private inputs, as circuit_proofs passes them
                partition,
                &self.public_params.vanilla_params,
                Some(k),
            )
            .map(Tree::update_circuit)
            .map_err(|source| FilecoinError::CircuitBuild { partition: k, source })
        })
    }

    fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        <Compound<Tree> as CompoundProof<Update<Tree>, EmptySectorUpdateCircuit<Tree>>>::generate_public_inputs(
            &self.public_inputs,
            &self.public_params.vanilla_params,
            Some(k),
        )
        .map_err(|e| FilecoinError::proofs("generate_public_inputs", e))
    }
}

impl SnapJob {
    /// Sets the update up as filecoin-proofs does, its partition proofs verified first
    /// ([`FilecoinError::BadVanilla`] when they do not).
    pub fn new(request: &SnapRequest) -> Result<Self, FilecoinError> {
        let shaped = match &request.vanilla {
            SnapVanilla::Base(v) => ShapedSnapJob::Base(SnapJobOf::new(request, v)?),
            SnapVanilla::Sub8(v) => ShapedSnapJob::Sub8(SnapJobOf::new(request, v)?),
            SnapVanilla::Top2(v) => ShapedSnapJob::Top2(SnapJobOf::new(request, v)?),
        };
        Ok(SnapJob { shaped })
    }

    pub fn partitions(&self) -> usize {
        each_shape!(&self.shaped, ShapedSnapJob, j => j.partitions.len())
    }

    pub fn circuit(&self, k: usize) -> Result<UpdateCircuit, FilecoinError> {
        each_shape!(&self.shaped, ShapedSnapJob, j => j.circuit(k))
    }

    pub fn public_inputs(&self, k: usize) -> Result<Vec<Scalar>, FilecoinError> {
        each_shape!(&self.shaped, ShapedSnapJob, j => j.public_inputs(k))
    }
}

/// filecoin-proofs' `verify_empty_sector_update_proof` (verifying key from its cache).
pub fn verify_snap(request: &SnapRequest, proof_bytes: &[u8]) -> Result<Verdict, FilecoinError> {
    let config = request.proof.porep_config()?;
    request.proof.param_files(&crate::params::default_cache_dir())?.require_vk_source()?;
    let result = with_tree!(request.proof.sector_size().tree_shape(), Tree =>
        filecoin_proofs::verify_empty_sector_update_proof::<Tree>(
            &config, proof_bytes, request.comm_r_old, request.comm_r_new, request.comm_d_new));
    Ok(match result {
        Ok(true) => Verdict::Accepted,
        Ok(false) => Verdict::Rejected,
        Err(e) => Verdict::Malformed(format!("{e:#}")),
    })
}

/// filecoin-proofs' own `generate_empty_sector_update_proof_with_vanilla` (the baseline).
pub fn reference_snap(request: &SnapRequest) -> Result<Vec<u8>, FilecoinError> {
    let config = request.proof.porep_config()?;
    request.proof.param_files(&crate::params::default_cache_dir())?.require_params()?;
    let (old, new, d) = (request.comm_r_old, request.comm_r_new, request.comm_d_new);
    each_shape!(&request.vanilla, SnapVanilla, v => filecoin_proofs::generate_empty_sector_update_proof_with_vanilla(
        &config, v.clone(), old, new, d))
    .map(|p| p.0)
    .map_err(|e| FilecoinError::proofs("generate_empty_sector_update_proof_with_vanilla", e))
}

/// A sector updated with new data (SnapDeals' encode), and the request its update proof
/// is made from: `filecoin_proofs::encode_into` on a kept sealed replica (the sector key)
/// with `rng`'s bytes as the new piece, then `generate_partition_proofs`, as Curio's
/// update tasks do. Writes `dir/update` and `dir/update-cache`.
pub fn encode_update(
    replica: &crate::post::Replica,
    dir: &Path,
    rng: &mut impl rand_core::RngCore,
) -> Result<SnapRequest, FilecoinError> {
    use std::io::Seek;
    let size = crate::api::SectorSize::ALL
        .into_iter()
        .find(|s| std::fs::metadata(&replica.sealed).map(|m| m.len() == s.bytes()).unwrap_or(false))
        .ok_or_else(|| {
            FilecoinError::BadArgument(format!("{}: not a sealed sector", replica.sealed.display()))
        })?;
    let proof = RegisteredUpdateProof::for_size(size);
    let porep = proof.porep_config()?;
    let config = proof.update_config()?;
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| FilecoinError::io(&p, e)
    };
    let proofs_err = |what: &'static str| move |e: anyhow::Error| FilecoinError::proofs(what, e);
    let (piece_path, staged_path) = (dir.join("update-piece"), dir.join("update-staged"));
    let (new_replica, new_cache) = (dir.join("update"), dir.join("update-cache"));
    std::fs::create_dir_all(&new_cache).map_err(io(&new_cache))?;
    let unpadded = porep.unpadded_bytes_amount();
    let mut piece = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut piece);
    std::fs::write(&piece_path, &piece).map_err(io(&piece_path))?;
    let mut piece_file = std::fs::File::open(&piece_path).map_err(io(&piece_path))?;
    let piece_info = filecoin_proofs::generate_piece_commitment(&mut piece_file, unpadded)
        .map_err(proofs_err("generate_piece_commitment"))?;
    piece_file.rewind().map_err(io(&piece_path))?;
    let mut staged = std::fs::File::create(&staged_path).map_err(io(&staged_path))?;
    filecoin_proofs::add_piece(&mut piece_file, &mut staged, unpadded, &[])
        .map_err(proofs_err("add_piece"))?;
    drop(staged);
    // encode_into writes into a replica file of the sector's size.
    let replica_file = std::fs::File::create(&new_replica).map_err(io(&new_replica))?;
    replica_file.set_len(size.bytes()).map_err(io(&new_replica))?;
    drop(replica_file);
    let pieces = [piece_info];
    with_tree!(size.tree_shape(), Tree => {
        let encoded = filecoin_proofs::encode_into::<Tree>(
            &config, &new_replica, &new_cache, &replica.sealed, &replica.cache_dir, &staged_path, &pieces)
            .map_err(proofs_err("encode_into"))?;
        let proofs = filecoin_proofs::generate_partition_proofs::<Tree>(
            config, replica.comm_r, encoded.comm_r_new, encoded.comm_d_new,
            &replica.sealed, &replica.cache_dir, &new_replica, &new_cache)
            .map_err(proofs_err("generate_partition_proofs"))?;
        for scratch in [&piece_path, &staged_path] {
            std::fs::remove_file(scratch).map_err(io(scratch))?;
        }
        SnapRequest::new(proof, replica.comm_r, encoded.comm_r_new, encoded.comm_d_new, Tree::snap_vanilla(proofs))
    })
}

/// The storage-proofs line whose update circuit is recorded (part of the recording's identity).
const UPDATE_CIRCUIT_CODE: &str = "storage-proofs-update 19.1.0";

/// One SnapDeals circuit (a sector size), ready for an engine; cheap to clone.
#[derive(Clone)]
pub struct SnapCircuit {
    kind: String,
    proof: RegisteredUpdateProof,
    files: ParamFiles,
    shape: arenaprove_circuits::Shape,
    params: Arc<arenaprove_engine::Parameters>,
    synthesis: Synthesis,
}

impl fmt::Debug for SnapCircuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SnapCircuit")
            .field("kind", &self.kind)
            .field("params", &self.files.params)
            .field("synthesis", &self.synthesis.name())
            .finish()
    }
}

impl SnapCircuit {
    /// Loads `proof`'s parameters from `dir` and its recording beside them.
    pub fn load(
        proof: RegisteredUpdateProof,
        dir: &Path,
        options: LoadOptions,
    ) -> Result<Self, FilecoinError> {
        let files = proof.param_files(dir)?;
        files.require_params()?;
        let identity = update_identity(&files);
        let (shape, params, synthesis) = crate::c2::load_parts(
            &files,
            options,
            &identity,
            || update_shape(proof),
            || Ok(blank_update_circuit(proof)),
        )?;
        Ok(SnapCircuit {
            kind: format!("empty-sector-update-{}", proof.sector_size()),
            proof,
            files,
            shape,
            params,
            synthesis,
        })
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn proof(&self) -> RegisteredUpdateProof {
        self.proof
    }

    pub fn shape(&self) -> arenaprove_circuits::Shape {
        self.shape
    }

    pub fn files(&self) -> &ParamFiles {
        &self.files
    }

    pub fn synthesis(&self) -> &Synthesis {
        &self.synthesis
    }

    pub fn spec(&self) -> arenaprove_engine::pipeline::CircuitSpec {
        crate::c2::spec_of(&self.kind, self.shape, &self.params, &self.synthesis)
    }
}
