//! The files a storage provider holds, read and written in the formats the Filecoin stack
//! uses: the commit-phase-1 (C1) output and our small `sector.json`.
//!
//! # The C1 formats
//! * **filecoin-proofs-api** (what filecoin-ffi, Lotus and Curio hand around): the serde
//!   JSON of `filecoin_proofs_api::seal::SealCommitPhase1Output` (checked against
//!   rust-filecoin-proofs-api 19.0.0, its `seal` and `registry` modules):
//!   ```text
//!   { "registered_proof": "StackedDrg2KiBV1_1",
//!     "vanilla_proofs": { "StackedDrg2KiBV1": [ [ <stacked::Proof>, ... ], ... ] },
//!     "comm_r": [32 numbers], "comm_d": [32 numbers], "replica_id": [32 numbers],
//!     "seed": [32 numbers], "ticket": [32 numbers] }
//!   ```
//!   `registered_proof` is the name of a `RegisteredSealProof` variant; `vanilla_proofs` is
//!   an externally tagged enum whose tag names the sector shape only (always `...V1`, for
//!   every API version), holding one list of vanilla proofs per partition.
//! * **filecoin-proofs** (`filecoin_proofs::SealCommitPhase1Output<Tree>`): the same
//!   fields without `registered_proof` and with the untagged list of lists. It does not say
//!   which proof it is for, so the caller names it ([`C1Output::from_json`]'s `plain_as`).
//!
//! The vanilla proofs themselves are parsed into filecoin-proofs' own types, so their
//! serde format is by construction the one both crates write.
//!
//! # Supported shapes
//! Every network size: 2 KiB, 8 MiB and 512 MiB sectors (`SectorShapeBase` in
//! filecoin-proofs 19.1.0), 32 GiB (`SectorShapeSub8`) and 64 GiB (`SectorShapeTop2`), for
//! every interactive registered proof (V1, V1_1, V1_1 synthetic PoRep); see [`crate::tree`].
//! Proving 32 GiB and 64 GiB needs their parameters (~47 GiB and ~47 GiB files); a
//! missing file is [`FilecoinError::MissingParams`] naming it.
//! Non-interactive PoRep (`..._Feat_NonInteractivePoRep`) is refused: its C2 output is an
//! aggregate (SnarkPack) proof, not concatenated partition proofs.
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_proofs::constants::{
    SectorShapeBase, SectorShapeSub8, SectorShapeTop2, SECTOR_SIZE_2_KIB, SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::types::{
    Commitment, PoRepConfig, ProverId, SealCommitPhase1Output, Ticket, VanillaSealProof,
};
use serde::{Deserialize, Serialize};
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};

use crate::error::FilecoinError;
use crate::tree::{each_shape, SealTree, TreeShape};

/// 512 MiB, in bytes (filecoin-proofs' `SECTOR_SIZE_512_MIB`).
const SECTOR_SIZE_512_MIB: u64 = 1 << 29;
/// 32 GiB, in bytes.
const SECTOR_SIZE_32_GIB: u64 = 1 << 35;
/// 64 GiB, in bytes.
const SECTOR_SIZE_64_GIB: u64 = 1 << 36;

/// The sector sizes this crate proves (and, up to 512 MiB, seals), smallest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectorSize {
    /// 2 KiB test sector: one partition of 2,687,921 constraints.
    Kib2,
    /// 8 MiB test sector: one partition of 3,844,929 constraints.
    Mib8,
    /// 512 MiB sector: one partition.
    Mib512,
    /// 32 GiB sector: ten partitions of 130,278,869 constraints.
    Gib32,
    /// 64 GiB sector: ten partitions.
    Gib64,
}

impl SectorSize {
    /// Every supported size, smallest first.
    pub const ALL: [SectorSize; 5] =
        [SectorSize::Kib2, SectorSize::Mib8, SectorSize::Mib512, SectorSize::Gib32, SectorSize::Gib64];

    /// Size in bytes (padded, as filecoin-proofs counts it).
    pub fn bytes(self) -> u64 {
        match self {
            SectorSize::Kib2 => SECTOR_SIZE_2_KIB,
            SectorSize::Mib8 => SECTOR_SIZE_8_MIB,
            SectorSize::Mib512 => SECTOR_SIZE_512_MIB,
            SectorSize::Gib32 => SECTOR_SIZE_32_GIB,
            SectorSize::Gib64 => SECTOR_SIZE_64_GIB,
        }
    }

    /// The size as written in proof names and on the command line (`2KiB`).
    pub fn name(self) -> &'static str {
        match self {
            SectorSize::Kib2 => "2KiB",
            SectorSize::Mib8 => "8MiB",
            SectorSize::Mib512 => "512MiB",
            SectorSize::Gib32 => "32GiB",
            SectorSize::Gib64 => "64GiB",
        }
    }

    /// The size for a byte count, if supported.
    pub fn from_bytes(bytes: u64) -> Result<Self, FilecoinError> {
        SectorSize::ALL
            .into_iter()
            .find(|s| s.bytes() == bytes)
            .ok_or(FilecoinError::UnsupportedSectorSize { bytes })
    }

    /// The registered proof a freshly sealed sector of this size gets: the interactive
    /// PoRep of API version 1.1 (`StackedDrg2KiBV1_1`), what the network uses today.
    pub fn default_registered_proof(self) -> RegisteredSealProof {
        match self {
            SectorSize::Kib2 => RegisteredSealProof::StackedDrg2KiBV1_1,
            SectorSize::Mib8 => RegisteredSealProof::StackedDrg8MiBV1_1,
            SectorSize::Mib512 => RegisteredSealProof::StackedDrg512MiBV1_1,
            SectorSize::Gib32 => RegisteredSealProof::StackedDrg32GiBV1_1,
            SectorSize::Gib64 => RegisteredSealProof::StackedDrg64GiBV1_1,
        }
    }

    /// The tree shape of this size's replica (which types its C1, circuit and params).
    pub fn tree_shape(self) -> TreeShape {
        match self {
            SectorSize::Kib2 | SectorSize::Mib8 | SectorSize::Mib512 => TreeShape::Base,
            SectorSize::Gib32 => TreeShape::Sub8,
            SectorSize::Gib64 => TreeShape::Top2,
        }
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SectorSize {
    type Err = FilecoinError;

    /// Accepts `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB` (any case) or the size in bytes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if let Ok(bytes) = trimmed.parse::<u64>() {
            return SectorSize::from_bytes(bytes);
        }
        SectorSize::ALL.into_iter().find(|size| size.name().eq_ignore_ascii_case(trimmed)).ok_or_else(|| {
            FilecoinError::BadArgument(format!(
                "unknown sector size `{s}` (expected one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB, or a size in bytes)"
            ))
        })
    }
}

/// filecoin-proofs-api's `RegisteredSealProof`, spelled exactly as its serde writes it.
/// The enum is append-only upstream; the order here is the upstream order, and
/// [`RegisteredSealProof::proof_id`] is the index upstream's `REGISTERED_PROOF_IDS` gives.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RegisteredSealProof {
    StackedDrg2KiBV1,
    StackedDrg8MiBV1,
    StackedDrg512MiBV1,
    StackedDrg32GiBV1,
    StackedDrg64GiBV1,

    StackedDrg2KiBV1_1,
    StackedDrg8MiBV1_1,
    StackedDrg512MiBV1_1,
    StackedDrg32GiBV1_1,
    StackedDrg64GiBV1_1,

    StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
    StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
    StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
    StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
    StackedDrg64GiBV1_1_Feat_SyntheticPoRep,

    StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
    StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
    StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
    StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
    StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
}

/// Proof families in upstream order: five sector sizes per family.
const SIZES_PER_FAMILY: u64 = 5;

impl RegisteredSealProof {
    /// The registered proof id that becomes bytes 0..8 of the porep id (upstream's
    /// `REGISTERED_PROOF_IDS`: the declaration index).
    pub fn proof_id(self) -> u64 {
        self as u64
    }

    /// Index of the sector size inside a family: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB.
    fn size_index(self) -> u64 {
        self.proof_id() % SIZES_PER_FAMILY
    }

    /// Sector size in bytes.
    pub fn sector_size_bytes(self) -> u64 {
        [SECTOR_SIZE_2_KIB, SECTOR_SIZE_8_MIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_64_GIB]
            [self.size_index() as usize]
    }

    /// The porep id: registered proof id (u64 little-endian) then nonce 0 (u64 LE), then
    /// zeros, as upstream's `RegisteredSealProof::porep_id` builds it.
    pub fn porep_id(self) -> [u8; 32] {
        let nonce: u64 = 0;
        let mut porep_id = [0u8; 32];
        porep_id[0..8].copy_from_slice(&self.proof_id().to_le_bytes());
        porep_id[8..16].copy_from_slice(&nonce.to_le_bytes());
        porep_id
    }

    /// The proofs API version of this proof.
    pub fn api_version(self) -> ApiVersion {
        match self.proof_id() / SIZES_PER_FAMILY {
            0 => ApiVersion::V1_0_0,
            1 => ApiVersion::V1_1_0,
            _ => ApiVersion::V1_2_0,
        }
    }

    /// The features this proof enables.
    pub fn api_features(self) -> Vec<ApiFeature> {
        match self.proof_id() / SIZES_PER_FAMILY {
            2 => vec![ApiFeature::SyntheticPoRep],
            3 => vec![ApiFeature::NonInteractivePoRep],
            _ => Vec::new(),
        }
    }

    /// The sector size, when this crate supports it.
    pub fn sector_size(self) -> Result<SectorSize, FilecoinError> {
        SectorSize::from_bytes(self.sector_size_bytes())
    }

    /// The tag the api writes on `vanilla_proofs` for this proof's sector shape.
    pub fn vanilla_tag(self) -> &'static str {
        [
            "StackedDrg2KiBV1",
            "StackedDrg8MiBV1",
            "StackedDrg512MiBV1",
            "StackedDrg32GiBV1",
            "StackedDrg64GiBV1",
        ][self.size_index() as usize]
    }

    /// filecoin-proofs' `PoRepConfig` for this proof, as upstream's `as_v1_config` builds it.
    /// Refuses sizes this crate does not prove and non-interactive PoRep.
    pub fn porep_config(self) -> Result<PoRepConfig, FilecoinError> {
        let size = self.sector_size()?;
        if self.api_features().contains(&ApiFeature::NonInteractivePoRep) {
            return Err(FilecoinError::Unsupported(format!(
                "{self:?}: non-interactive PoRep C2 output is an aggregate proof, not partition proofs"
            )));
        }
        PoRepConfig::new_groth16_with_features(
            size.bytes(),
            self.porep_id(),
            self.api_version(),
            self.api_features(),
        )
        .map_err(|e| FilecoinError::proofs("building the PoRep config", e))
    }
}

impl FromStr for RegisteredSealProof {
    type Err = FilecoinError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| FilecoinError::BadArgument(format!("unknown registered seal proof `{s}`")))
    }
}

/// The vanilla proofs of one C1 output, tagged by sector shape as filecoin-proofs-api
/// writes them. One inner list per partition.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum VanillaSealProofs {
    StackedDrg2KiBV1(Vec<Vec<VanillaSealProof<SectorShapeBase>>>),
    StackedDrg8MiBV1(Vec<Vec<VanillaSealProof<SectorShapeBase>>>),
    StackedDrg512MiBV1(Vec<Vec<VanillaSealProof<SectorShapeBase>>>),
    StackedDrg32GiBV1(Vec<Vec<VanillaSealProof<SectorShapeSub8>>>),
    StackedDrg64GiBV1(Vec<Vec<VanillaSealProof<SectorShapeTop2>>>),
}

impl VanillaSealProofs {
    fn tag(&self) -> &'static str {
        match self {
            VanillaSealProofs::StackedDrg2KiBV1(_) => "StackedDrg2KiBV1",
            VanillaSealProofs::StackedDrg8MiBV1(_) => "StackedDrg8MiBV1",
            VanillaSealProofs::StackedDrg512MiBV1(_) => "StackedDrg512MiBV1",
            VanillaSealProofs::StackedDrg32GiBV1(_) => "StackedDrg32GiBV1",
            VanillaSealProofs::StackedDrg64GiBV1(_) => "StackedDrg64GiBV1",
        }
    }
}

/// filecoin-proofs-api's `SealCommitPhase1Output`, field for field.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiSealCommitPhase1Output {
    pub registered_proof: RegisteredSealProof,
    pub vanilla_proofs: VanillaSealProofs,
    pub comm_r: Commitment,
    pub comm_d: Commitment,
    pub replica_id: PoseidonDomain,
    pub seed: Ticket,
    pub ticket: Ticket,
}

/// A C1 output in filecoin-proofs' typed form, by tree shape ([`crate::tree`]).
#[derive(Debug)]
pub enum ShapedC1 {
    /// 2 KiB, 8 MiB and 512 MiB sectors share filecoin-proofs' `SectorShapeBase`.
    Base(SealCommitPhase1Output<SectorShapeBase>),
    /// 32 GiB sectors.
    Sub8(SealCommitPhase1Output<SectorShapeSub8>),
    /// 64 GiB sectors.
    Top2(SealCommitPhase1Output<SectorShapeTop2>),
}

/// filecoin-proofs' plain C1 JSON as the output of tree `Tree`.
fn plain_c1<Tree: SealTree>(bytes: &[u8]) -> Result<ShapedC1, FilecoinError> {
    let plain: SealCommitPhase1Output<Tree> = serde_json::from_slice(bytes)
        .map_err(|e| FilecoinError::BadC1(format!("not filecoin-proofs' plain C1 format: {e}")))?;
    Ok(Tree::c1(plain))
}

/// The api output's fields around `vanilla_proofs` of tree `Tree`.
fn shaped_c1<Tree: SealTree>(
    vanilla_proofs: Vec<Vec<VanillaSealProof<Tree>>>,
    api: &ApiSealCommitPhase1Output,
) -> ShapedC1 {
    Tree::c1(SealCommitPhase1Output {
        vanilla_proofs,
        comm_r: api.comm_r,
        comm_d: api.comm_d,
        replica_id: api.replica_id,
        seed: api.seed,
        ticket: api.ticket,
    })
}

/// A parsed, checked commit-phase-1 output: which proof it is for, and its contents.
#[derive(Debug)]
pub struct C1Output {
    pub registered_proof: RegisteredSealProof,
    pub shaped: ShapedC1,
}

impl C1Output {
    /// Reads a C1 file. `plain_as: None` expects the filecoin-proofs-api format;
    /// `Some(proof)` expects filecoin-proofs' plain format for that proof.
    pub fn read(path: &Path, plain_as: Option<RegisteredSealProof>) -> Result<Self, FilecoinError> {
        let bytes = std::fs::read(path).map_err(|e| FilecoinError::io(path, e))?;
        Self::from_json(&bytes, plain_as).map_err(|e| e.in_file(path))
    }

    /// Parses C1 JSON; see [`C1Output::read`].
    pub fn from_json(bytes: &[u8], plain_as: Option<RegisteredSealProof>) -> Result<Self, FilecoinError> {
        let c1 = match plain_as {
            None => Self::from_api_json(bytes)?,
            Some(registered_proof) => {
                let shape = registered_proof.sector_size()?.tree_shape();
                let shaped = crate::tree::with_tree!(shape, Tree => plain_c1::<Tree>(bytes)?);
                C1Output { registered_proof, shaped }
            }
        };
        c1.check()?;
        Ok(c1)
    }

    fn from_api_json(bytes: &[u8]) -> Result<Self, FilecoinError> {
        let api: ApiSealCommitPhase1Output = serde_json::from_slice(bytes).map_err(|e| {
            let mut reason = e.to_string();
            // A plain filecoin-proofs C1 output lacks `registered_proof`; say so.
            if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(bytes) {
                if map.contains_key("vanilla_proofs") && !map.contains_key("registered_proof") {
                    reason.push_str(
                        " (no `registered_proof` field: this looks like filecoin-proofs' plain C1 format; \
                         give the sector size, e.g. --sector-size 2KiB)",
                    );
                }
            }
            FilecoinError::BadC1(format!("not a filecoin-proofs-api SealCommitPhase1Output: {reason}"))
        })?;
        Self::from_api(api)
    }

    /// Converts the api struct, checking that the vanilla proofs' tag matches the proof.
    pub fn from_api(api: ApiSealCommitPhase1Output) -> Result<Self, FilecoinError> {
        let registered_proof = api.registered_proof;
        let tag = api.vanilla_proofs.tag();
        if tag != registered_proof.vanilla_tag() {
            return Err(FilecoinError::BadC1(format!(
                "vanilla_proofs are tagged {tag} but registered_proof is {registered_proof:?} (expected tag {})",
                registered_proof.vanilla_tag()
            )));
        }
        registered_proof.sector_size()?;
        let mut api = api;
        let vanilla =
            std::mem::replace(&mut api.vanilla_proofs, VanillaSealProofs::StackedDrg2KiBV1(Vec::new()));
        let shaped = match vanilla {
            VanillaSealProofs::StackedDrg2KiBV1(p)
            | VanillaSealProofs::StackedDrg8MiBV1(p)
            | VanillaSealProofs::StackedDrg512MiBV1(p) => shaped_c1(p, &api),
            VanillaSealProofs::StackedDrg32GiBV1(p) => shaped_c1(p, &api),
            VanillaSealProofs::StackedDrg64GiBV1(p) => shaped_c1(p, &api),
        };
        Ok(C1Output { registered_proof, shaped })
    }

    /// The api struct for this output (clones the vanilla proofs).
    pub fn to_api(&self) -> ApiSealCommitPhase1Output {
        let vanilla_proofs = match &self.shaped {
            ShapedC1::Base(c1) => {
                let proofs = c1.vanilla_proofs.clone();
                match self.registered_proof.vanilla_tag() {
                    "StackedDrg2KiBV1" => VanillaSealProofs::StackedDrg2KiBV1(proofs),
                    "StackedDrg8MiBV1" => VanillaSealProofs::StackedDrg8MiBV1(proofs),
                    _ => VanillaSealProofs::StackedDrg512MiBV1(proofs),
                }
            }
            ShapedC1::Sub8(c1) => VanillaSealProofs::StackedDrg32GiBV1(c1.vanilla_proofs.clone()),
            ShapedC1::Top2(c1) => VanillaSealProofs::StackedDrg64GiBV1(c1.vanilla_proofs.clone()),
        };
        each_shape!(&self.shaped, ShapedC1, c1 => ApiSealCommitPhase1Output {
            registered_proof: self.registered_proof,
            vanilla_proofs,
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            replica_id: c1.replica_id,
            seed: c1.seed,
            ticket: c1.ticket,
        })
    }

    /// The api JSON of this output.
    pub fn to_api_json(&self) -> Result<Vec<u8>, FilecoinError> {
        serde_json::to_vec(&self.to_api())
            .map_err(|e| FilecoinError::Internal(format!("serializing C1: {e}")))
    }

    /// filecoin-proofs' plain JSON of this output.
    pub fn to_plain_json(&self) -> Result<Vec<u8>, FilecoinError> {
        each_shape!(&self.shaped, ShapedC1, c1 => serde_json::to_vec(c1))
            .map_err(|e| FilecoinError::Internal(format!("serializing C1: {e}")))
    }

    /// Number of partitions present.
    pub fn partitions(&self) -> usize {
        each_shape!(&self.shaped, ShapedC1, c1 => c1.vanilla_proofs.len())
    }

    /// The challenge seed.
    pub fn seed(&self) -> Ticket {
        each_shape!(&self.shaped, ShapedC1, c1 => c1.seed)
    }

    /// Replaces the challenge seed (for negative tests: a C1 proven with the wrong seed).
    pub fn set_seed(&mut self, seed: Ticket) {
        each_shape!(&mut self.shaped, ShapedC1, c1 => c1.seed = seed)
    }

    /// comm_r and comm_d.
    pub fn commitments(&self) -> (Commitment, Commitment) {
        each_shape!(&self.shaped, ShapedC1, c1 => (c1.comm_r, c1.comm_d))
    }

    /// What seal_commit_phase2 checks before proving, plus the partition count of the
    /// proof's config, so a bad file fails here and not inside synthesis.
    fn check(&self) -> Result<(), FilecoinError> {
        let config = self.registered_proof.porep_config()?;
        let shape = self.registered_proof.sector_size()?.tree_shape();
        let found = match &self.shaped {
            ShapedC1::Base(_) => TreeShape::Base,
            ShapedC1::Sub8(_) => TreeShape::Sub8,
            ShapedC1::Top2(_) => TreeShape::Top2,
        };
        if found != shape {
            return Err(FilecoinError::BadC1(format!(
                "vanilla proofs of tree shape {found:?}, but {:?} uses {shape:?}",
                self.registered_proof
            )));
        }
        let (comm_r, comm_d) = self.commitments();
        let bad = |reason: String| Err(FilecoinError::BadC1(reason));
        if comm_d == [0; 32] {
            return bad("comm_d is all zero".into());
        }
        if comm_r == [0; 32] {
            return bad("comm_r is all zero".into());
        }
        if self.seed() == [0; 32] {
            return bad("seed is all zero".into());
        }
        let partitions_expected = usize::from(config.partitions);
        if self.partitions() != partitions_expected {
            return bad(format!(
                "{} partitions of vanilla proofs, but {:?} has {partitions_expected}",
                self.partitions(),
                self.registered_proof
            ));
        }
        let empty =
            each_shape!(&self.shaped, ShapedC1, c1 => c1.vanilla_proofs.iter().position(|p| p.is_empty()));
        if let Some(k) = empty {
            return bad(format!("partition {k} has no vanilla proofs"));
        }
        Ok(())
    }
}

/// `sector.json`: what `verify_seal` needs besides the proof, written by `seal`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectorInfo {
    pub registered_proof: RegisteredSealProof,
    /// Padded sector size in bytes.
    pub sector_size: u64,
    pub prover_id: ProverId,
    pub sector_id: u64,
    pub ticket: Ticket,
    pub seed: Ticket,
    pub comm_r: Commitment,
    pub comm_d: Commitment,
}

impl SectorInfo {
    /// Reads and checks a `sector.json`.
    pub fn read(path: &Path) -> Result<Self, FilecoinError> {
        let bytes = std::fs::read(path).map_err(|e| FilecoinError::io(path, e))?;
        let info: SectorInfo = serde_json::from_slice(&bytes)
            .map_err(|e| FilecoinError::BadSectorInfo(e.to_string()).in_file(path))?;
        if info.sector_size != info.registered_proof.sector_size_bytes() {
            return Err(FilecoinError::BadSectorInfo(format!(
                "sector_size {} does not match {:?} ({} bytes)",
                info.sector_size,
                info.registered_proof,
                info.registered_proof.sector_size_bytes()
            ))
            .in_file(path));
        }
        Ok(info)
    }

    /// Writes it as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<(), FilecoinError> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| FilecoinError::Internal(format!("serializing sector info: {e}")))?;
        std::fs::write(path, json).map_err(|e| FilecoinError::io(path, e))
    }
}
