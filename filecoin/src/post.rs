//! Proofs of spacetime on the engine: a WinningPoSt, or one partition of a WindowPoSt, from
//! the vanilla proofs Curio sends (one bincode `FallbackPoStSectorProof` per sector).
//!
//! What filecoin-proofs 19.1.0 does, and this module does the same way with its own types:
//! * **WinningPoSt** (`generate_winning_post_with_vanilla`): one vanilla proof (the
//!   challenged sector, 66 challenges), `partition_vanilla_proofs` unrolls it into the
//!   circuit's 66 one-challenge "sectors" and checks it, one partition circuit
//!   (`FallbackPoStCompound::circuit(.., Some(0))`); the output is its 192-byte proof.
//! * **WindowPoSt, one partition** (`generate_single_window_post_with_vanilla`): the
//!   sectors of partition `partition_index` of a deadline (at most `sector_count` of them:
//!   2 below 32 GiB, 2349 at 32 GiB, 2300 at 64 GiB), `single_partition_vanilla_proofs`,
//!   one circuit built with `Some(0)` as filecoin-proofs' `circuit_proofs` does; the output
//!   is the 192-byte partition proof Curio merges.
//!
//! Before proving, the vanilla proofs are checked against the randomness, prover id and
//! comm_r's (as filecoin-proofs' vanilla verifier does), and after synthesis the public
//! inputs the circuit computed must equal those the verifier derives
//! (`FallbackPoStCompound::generate_public_inputs` with the partition's index), exactly as
//! for PoRep C2 ([`crate::c2`]).
//!
//! Registered proofs are numbered as go-state-types numbers `abi.RegisteredPoStProof`
//! (Winning 0-4, Window V1 5-9, Window V1_1 10-14) and named as filecoin-proofs-api names
//! them (Go's WindowPoSt `V1_1` is the API's `V1_2`: the grindability fix, `ApiVersion`
//! 1.2.0). V1 and V1_2 share one circuit and one parameter file (the parameter identifier
//! has no API version); they differ in how challenges are derived, outside the circuit.
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use arenaprove_circuits::precompiled::{PartCs, PartedCircuit, WitnessCs};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_proofs::constants::{
    WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT,
    WINNING_POST_SECTOR_COUNT,
};
use filecoin_proofs::types::{
    FallbackPoStSectorProof, PoStConfig, PoStType, PublicReplicaInfo, VanillaProof,
};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::gadgets::por::PoRCircuit;
use storage_proofs_core::gadgets::variables::Root;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, Sector,
};

use crate::api::SectorSize;
use crate::error::{no_panic, FilecoinError};
use crate::params::ParamFiles;
use crate::tree::{each_shape, with_tree, SealTree};
use crate::verify::Verdict;

/// The two proofs of spacetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PostKind {
    Winning,
    Window,
}

impl PostKind {
    /// `WinningPoSt` or `WindowPoSt`.
    pub fn name(self) -> &'static str {
        match self {
            PostKind::Winning => "WinningPoSt",
            PostKind::Window => "WindowPoSt",
        }
    }

    fn typ(self) -> PoStType {
        match self {
            PostKind::Winning => PoStType::Winning,
            PostKind::Window => PoStType::Window,
        }
    }
}

impl fmt::Display for PostKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// filecoin-proofs-api's `RegisteredPoStProof`, in its declaration order, which is
/// go-state-types' numbering (`abi.RegisteredPoStProof`).
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegisteredPoStProof {
    StackedDrgWinning2KiBV1,
    StackedDrgWinning8MiBV1,
    StackedDrgWinning512MiBV1,
    StackedDrgWinning32GiBV1,
    StackedDrgWinning64GiBV1,
    StackedDrgWindow2KiBV1,
    StackedDrgWindow8MiBV1,
    StackedDrgWindow512MiBV1,
    StackedDrgWindow32GiBV1,
    StackedDrgWindow64GiBV1,
    StackedDrgWindow2KiBV1_2,
    StackedDrgWindow8MiBV1_2,
    StackedDrgWindow512MiBV1_2,
    StackedDrgWindow32GiBV1_2,
    StackedDrgWindow64GiBV1_2,
}

impl RegisteredPoStProof {
    /// Every registered PoSt proof, in numeric order.
    pub const ALL: [RegisteredPoStProof; 15] = {
        use RegisteredPoStProof::*;
        [
            StackedDrgWinning2KiBV1,
            StackedDrgWinning8MiBV1,
            StackedDrgWinning512MiBV1,
            StackedDrgWinning32GiBV1,
            StackedDrgWinning64GiBV1,
            StackedDrgWindow2KiBV1,
            StackedDrgWindow8MiBV1,
            StackedDrgWindow512MiBV1,
            StackedDrgWindow32GiBV1,
            StackedDrgWindow64GiBV1,
            StackedDrgWindow2KiBV1_2,
            StackedDrgWindow8MiBV1_2,
            StackedDrgWindow512MiBV1_2,
            StackedDrgWindow32GiBV1_2,
            StackedDrgWindow64GiBV1_2,
        ]
    };

    /// The proof go-state-types numbers `n`.
    pub fn from_number(n: u64) -> Option<Self> {
        usize::try_from(n).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// go-state-types' number.
    pub fn number(self) -> u64 {
        self as u64
    }

    /// The proof Curio sends today for `kind` and `size`: WinningPoSt V1, WindowPoSt V1_2
    /// (Go's V1_1).
    pub fn current(kind: PostKind, size: SectorSize) -> Self {
        let i = SectorSize::ALL.iter().position(|s| *s == size).unwrap_or(0);
        Self::ALL[i + if kind == PostKind::Winning { 0 } else { 10 }]
    }

    pub fn kind(self) -> PostKind {
        if (self as usize) < 5 {
            PostKind::Winning
        } else {
            PostKind::Window
        }
    }

    pub fn sector_size(self) -> SectorSize {
        SectorSize::ALL[self as usize % 5]
    }

    /// V1_2 for the WindowPoSt grindability fix, V1_0 otherwise (filecoin-proofs-api).
    pub fn api_version(self) -> ApiVersion {
        if (self as usize) >= 10 {
            ApiVersion::V1_2_0
        } else {
            ApiVersion::V1_0_0
        }
    }

    /// filecoin-proofs-api's `as_v1_config`.
    pub fn post_config(self) -> Result<PoStConfig, FilecoinError> {
        let bytes = self.sector_size().bytes();
        let (challenge_count, sector_count) = match self.kind() {
            PostKind::Winning => (WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT),
            PostKind::Window => {
                let counts = WINDOW_POST_SECTOR_COUNT
                    .read()
                    .map_err(|_| FilecoinError::Internal("WINDOW_POST_SECTOR_COUNT poisoned".into()))?;
                let count = counts.get(&bytes).copied().ok_or_else(|| {
                    FilecoinError::Internal(format!("no WindowPoSt sector count for {bytes}-byte sectors"))
                })?;
                (WINDOW_POST_CHALLENGE_COUNT, count)
            }
        };
        Ok(PoStConfig {
            sector_size: filecoin_proofs::types::SectorSize(bytes),
            challenge_count,
            sector_count,
            typ: self.kind().typ(),
            priority: true,
            api_version: self.api_version(),
        })
    }

    /// The Groth16 parameter files of this proof's circuit in `dir`.
    pub fn param_files(self, dir: &Path) -> Result<ParamFiles, FilecoinError> {
        let config = self.post_config()?;
        let size = self.sector_size();
        let cache_id = with_tree!(size.tree_shape(), Tree => config.get_cache_identifier::<Tree>())
            .map_err(|e| FilecoinError::proofs("locating the parameter cache", e))?;
        Ok(ParamFiles::named(
            size.name(),
            format!("{size} {}", self.kind()),
            format!("arenaprove filecoin post-params --proof {:?}", Self::current(self.kind(), size)),
            cache_id,
            dir,
        ))
    }

    /// The files in filecoin-proofs' own cache directory (what its verifier reads).
    pub fn default_param_files(self) -> Result<ParamFiles, FilecoinError> {
        self.param_files(&crate::params::default_cache_dir())
    }
}

impl fmt::Display for RegisteredPoStProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl FromStr for RegisteredPoStProof {
    type Err = FilecoinError;

    /// filecoin-proofs-api's name (`StackedDrgWindow2KiBV1_2`) or go-state-types' number.
    fn from_str(s: &str) -> Result<Self, FilecoinError> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u64>() {
            return Self::from_number(n).ok_or_else(|| {
                FilecoinError::BadArgument(format!("unknown registered PoSt proof {n} (they are 0..=14)"))
            });
        }
        Self::ALL.into_iter().find(|p| format!("{p:?}") == s).ok_or_else(|| {
            FilecoinError::BadArgument(format!(
                "unknown registered PoSt proof `{s}` (filecoin-proofs-api names, e.g. StackedDrgWinning2KiBV1, \
                 StackedDrgWindow32GiBV1_2, or go-state-types numbers 0..=14)"
            ))
        })
    }
}

/// The FallbackPoSt circuit, of the tree shape of its sector size: storage-proofs'
/// `FallbackPoStCircuit`, unchanged, behind one type.
#[derive(Clone)]
pub enum FallbackCircuit {
    Base(FallbackPoStCircuit<filecoin_proofs::constants::SectorShapeBase>),
    Sub8(FallbackPoStCircuit<filecoin_proofs::constants::SectorShapeSub8>),
    Top2(FallbackPoStCircuit<filecoin_proofs::constants::SectorShapeTop2>),
}

impl Circuit<Scalar> for FallbackCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        each_shape!(self, FallbackCircuit, c => Circuit::synthesize(c, cs))
    }
}

/// The FallbackPoSt circuit as a parallel witness ([`PartedCircuit`]): no prologue, one
/// part per circuit "sector" (WinningPoSt: 66 one-challenge sectors; WindowPoSt: the
/// partition's sectors), in the order `FallbackPoStCircuit` synthesizes them, each in one
/// piece per challenge, so that a WindowPoSt of a few sectors (a small provider's
/// deadline) still spreads over the cores. Every part has the same shape (one tree, one
/// challenge count), which the precompiled witness requires and checks.
///
/// Piece 0 is storage-proofs' own `Sector` circuit with the sector's first challenge only:
/// the sector's own values (comm_r_last, comm_c, comm_r as an input, comm_r =
/// H(comm_c, comm_r_last)) and that challenge's inclusion proof. Piece `j > 0` is challenge
/// `j`'s inclusion proof, `PoRCircuit` against comm_r_last as `Sector::synthesize` calls
/// it; comm_r_last, allocated in piece 0, is rebuilt inside [`PartCs::replay`].
pub struct PostParts(pub FallbackCircuit);

impl PartedCircuit for PostParts {
    fn prologue(&self, _cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError> {
        Ok(())
    }
    fn parts(&self) -> usize {
        each_shape!(&self.0, FallbackCircuit, c => c.sectors.len())
    }
    fn pieces(&self) -> usize {
        each_shape!(&self.0, FallbackCircuit, c => c.sectors.first().map_or(1, |s| s.leafs.len().max(1)))
    }
    fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError> {
        each_shape!(&self.0, FallbackCircuit, c => {
            let sector = c.sectors.get(i).ok_or(SynthesisError::AssignmentMissing)?;
            sector_piece(sector, i, piece, cs)
        })
    }
    fn replays_prologue(&self) -> bool {
        false
    }
}

/// Piece `piece` of `sector`, the circuit's part `i` (see [`PostParts`]).
fn sector_piece<Tree: 'static + MerkleTreeTrait>(
    sector: &Sector<Tree>,
    i: usize,
    piece: usize,
    cs: &mut PartCs<'_>,
) -> Result<(), SynthesisError> {
    if sector.leafs.len() != sector.paths.len() || piece >= sector.leafs.len().max(1) {
        return Err(SynthesisError::AssignmentMissing);
    }
    if piece == 0 {
        let first = Sector::<Tree> {
            comm_r: sector.comm_r,
            comm_c: sector.comm_c,
            comm_r_last: sector.comm_r_last,
            id: sector.id,
            leafs: sector.leafs.iter().take(1).copied().collect(),
            paths: sector.paths.iter().take(1).cloned().collect(),
        };
        return Circuit::synthesize(&first, &mut cs.namespace(|| format!("sector_{i}")));
    }
    // `Sector::synthesize` allocated comm_r_last before the challenges (piece 0): rebuilt
    // as scratch, since the inclusion proof needs its value (its root), not its index.
    let comm_r_last = cs.replay(|cs| {
        AllocatedNum::alloc(cs.namespace(|| "comm_r_last"), || {
            sector.comm_r_last.ok_or(SynthesisError::AssignmentMissing)
        })
    })?;
    let mut cs = cs.namespace(|| format!("sector_{i}"));
    PoRCircuit::<Tree>::synthesize(
        cs.namespace(|| format!("challenge_inclusion_{piece}")),
        Root::Val(sector.leafs[piece]),
        sector.paths[piece].clone(),
        Root::Var(comm_r_last),
        true,
    )
}

/// Vanilla proofs of one request, by tree shape (not `Clone`: filecoin-proofs derives
/// `Clone` for them only where the tree type is, and no tree is).
pub enum PostVanilla {
    Base(Vec<FallbackPoStSectorProof<filecoin_proofs::constants::SectorShapeBase>>),
    Sub8(Vec<FallbackPoStSectorProof<filecoin_proofs::constants::SectorShapeSub8>>),
    Top2(Vec<FallbackPoStSectorProof<filecoin_proofs::constants::SectorShapeTop2>>),
}

type Post<Tree> = FallbackPoSt<'static, Tree>;
type Compound<Tree> = FallbackPoStCompound<Tree>;

fn public_params<Tree: SealTree>(
    config: &PoStConfig,
) -> Result<compound_proof::PublicParams<'static, Post<Tree>>, FilecoinError> {
    let vanilla_params = match config.typ {
        PoStType::Winning => filecoin_proofs::parameters::winning_post_setup_params(config)
            .map_err(|e| FilecoinError::proofs("winning_post_setup_params", e))?,
        PoStType::Window => filecoin_proofs::parameters::window_post_setup_params(config),
    };
    let setup = compound_proof::SetupParams { vanilla_params, partitions: None, priority: config.priority };
    <Compound<Tree> as CompoundProof<Post<Tree>, FallbackPoStCircuit<Tree>>>::setup(&setup)
        .map_err(|e| FilecoinError::proofs("setup", e))
}

/// The circuit with no witness that parameter generation synthesizes.
pub fn blank_post_circuit(proof: RegisteredPoStProof) -> Result<FallbackCircuit, FilecoinError> {
    let config = proof.post_config()?;
    with_tree!(proof.sector_size().tree_shape(), Tree => {
        let pp = public_params::<Tree>(&config)?;
        Ok(Tree::post_circuit(<Compound<Tree> as CompoundProof<Post<Tree>, FallbackPoStCircuit<Tree>>>::blank_circuit(
            &pp.vanilla_params,
        )))
    })
}

/// The shape of `proof`'s circuit, counted on the blank circuit.
pub fn post_shape(proof: RegisteredPoStProof) -> Result<arenaprove_circuits::Shape, FilecoinError> {
    arenaprove_circuits::shape_of(blank_post_circuit(proof)?)
        .map_err(|e| FilecoinError::groth16(format!("counting the {proof} circuit's shape"), e.into()))
}

/// Makes sure `files` hold parameters for `proof`'s circuit: **insecure development
/// parameters** are generated and written when the `.params` file is absent (as
/// [`crate::params::ensure_params`] does for PoRep).
pub fn ensure_post_params(
    proof: RegisteredPoStProof,
    files: &ParamFiles,
    rng: &mut impl rand_core::RngCore,
) -> Result<crate::params::ParamsStatus, FilecoinError> {
    crate::params::ensure_params_of(
        files,
        proof.sector_size().bytes(),
        rng,
        Some(&post_identity(files)),
        None,
        || blank_post_circuit(proof),
    )
}

/// The identity of a PoSt circuit's recording (beside its parameters in `files`).
fn post_identity(files: &ParamFiles) -> String {
    format!("fallback-post {} {} {POST_CIRCUIT_CODE}", files.circuit, files.cache_id)
}

/// The most WindowPoSt partitions a deadline has (the miner actor's
/// `MaxPartitionsPerDeadline`): `partition_index` is below it.
pub const MAX_PARTITIONS: usize = 3000;

/// One PoSt to prove: the proof type, the chain's randomness, the prover, and the vanilla
/// proofs of the challenged sectors (WinningPoSt: the one sector; WindowPoSt: the sectors
/// of partition `partition_index`).
pub struct PostRequest {
    pub proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// WindowPoSt: the partition of the deadline these sectors are (0 for WinningPoSt).
    pub partition_index: usize,
    vanilla: PostVanilla,
}

impl fmt::Debug for PostRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostRequest")
            .field("proof", &self.proof)
            .field("partition_index", &self.partition_index)
            .field("sectors", &self.sectors().iter().map(|s| s.0).collect::<Vec<_>>())
            .finish()
    }
}

impl PostRequest {
    /// Parses the vanilla proofs as Curio sends them: one bincode `FallbackPoStSectorProof`
    /// per sector (what filecoin-proofs-api's `generate_*_with_vanilla` take). A proof that
    /// is not one, of another tree shape, or truncated is an error naming its index.
    pub fn from_bincode<B: AsRef<[u8]>>(
        proof: RegisteredPoStProof,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        partition_index: usize,
        vanilla: &[B],
    ) -> Result<Self, FilecoinError> {
        let size = proof.sector_size();
        let vanilla = with_tree!(size.tree_shape(), Tree => Tree::post_vanilla(decode_all(
            vanilla,
            &format!("vanilla proof {{}} is not a bincode FallbackPoStSectorProof of a {size} sector"),
            |p: &FallbackPoStSectorProof<Tree>| check_vanilla_shape(p, proof),
        )?));
        PostRequest::new(proof, randomness, prover_id, partition_index, vanilla)
    }

    /// A request from vanilla proofs already in filecoin-proofs' types.
    pub fn new(
        proof: RegisteredPoStProof,
        randomness: [u8; 32],
        prover_id: [u8; 32],
        partition_index: usize,
        vanilla: PostVanilla,
    ) -> Result<Self, FilecoinError> {
        let shape = match &vanilla {
            PostVanilla::Base(_) => crate::tree::TreeShape::Base,
            PostVanilla::Sub8(_) => crate::tree::TreeShape::Sub8,
            PostVanilla::Top2(_) => crate::tree::TreeShape::Top2,
        };
        if shape != proof.sector_size().tree_shape() {
            return Err(FilecoinError::BadVanilla(format!(
                "vanilla proofs of another tree shape ({shape:?}) than {proof}'s"
            )));
        }
        let request = PostRequest { proof, randomness, prover_id, partition_index, vanilla };
        request.check_counts()?;
        Ok(request)
    }

    /// The vanilla proofs in Curio's encoding (one bincode blob per sector).
    pub fn vanilla_bincode(&self) -> Result<Vec<Vec<u8>>, FilecoinError> {
        let encode = |e: bincode::Error| FilecoinError::Internal(format!("bincode: {e}"));
        each_shape!(&self.vanilla, PostVanilla, proofs => proofs
            .iter()
            .map(|p| bincode::serialize(p).map_err(encode))
            .collect())
    }

    /// The challenged sectors, in request order: (sector id, comm_r).
    pub fn sectors(&self) -> Vec<(u64, [u8; 32])> {
        use filecoin_hashers::Domain;
        each_shape!(&self.vanilla, PostVanilla, proofs => proofs
            .iter()
            .map(|p| {
                let mut comm_r = [0u8; 32];
                p.comm_r.write_bytes(&mut comm_r).ok();
                (u64::from(p.sector_id), comm_r)
            })
            .collect())
    }

    /// Number of vanilla proofs (sectors).
    pub fn len(&self) -> usize {
        each_shape!(&self.vanilla, PostVanilla, proofs => proofs.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check_counts(&self) -> Result<(), FilecoinError> {
        let config = self.proof.post_config()?;
        let n = self.len();
        let bad = |m: String| Err(FilecoinError::BadVanilla(m));
        match self.proof.kind() {
            PostKind::Winning if n != config.sector_count => {
                return bad(format!(
                    "{} takes {} vanilla proof(s), got {n}",
                    self.proof, config.sector_count
                ));
            }
            PostKind::Winning if self.partition_index != 0 => {
                return bad(format!(
                    "WinningPoSt has one partition; partition_index is {}",
                    self.partition_index
                ));
            }
            PostKind::Window if n == 0 || n > config.sector_count => {
                return bad(format!(
                    "a {} partition takes 1..={} vanilla proofs (one per sector), got {n}",
                    self.proof, config.sector_count
                ));
            }
            PostKind::Window if self.partition_index >= MAX_PARTITIONS => {
                return bad(format!(
                    "partition_index {} is beyond a deadline's {MAX_PARTITIONS} partitions",
                    self.partition_index
                ));
            }
            _ => {}
        }
        let mut ids: Vec<u64> = self.sectors().iter().map(|s| s.0).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("sector {} has two vanilla proofs", w[0]));
        }
        Ok(())
    }
}

/// Decodes Curio's bincode blobs (one proof each) and checks each with `check`; an error
/// names the blob: `what` with `{}` for its index, then why.
pub(crate) fn decode_all<T: serde::de::DeserializeOwned, B: AsRef<[u8]>>(
    blobs: &[B],
    what: &str,
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<Vec<T>, FilecoinError> {
    blobs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            let decoded = decode_bincode::<T>(bytes.as_ref()).map_err(|e| e.to_string());
            decoded.and_then(|p| check(&p).map(|()| p)).map_err(|e| {
                FilecoinError::BadVanilla(format!("{}: {e}", what.replacen("{}", &i.to_string(), 1)))
            })
        })
        .collect()
}

/// Decodes one of Curio's bincode blobs (filecoin-proofs-api's encoding).
pub(crate) fn decode_bincode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, bincode::Error> {
    use bincode::Options;
    // bincode::deserialize's own options (fixed-width integers, trailing bytes allowed),
    // with a limit: nothing in a proof is larger than the message it came in.
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
}

/// The shape filecoin-proofs' `generate_single_vanilla_proof` gives a sector's proof: one
/// sector of `challenge_count` Merkle inclusion proofs, each a path of the tree's arities
/// (bincode does not know them: a path of another tree decodes, and would reach the
/// circuit builder's assertions).
fn check_vanilla_shape<Tree: SealTree>(
    vanilla: &FallbackPoStSectorProof<Tree>,
    proof: RegisteredPoStProof,
) -> Result<(), String> {
    use storage_proofs_core::merkle::MerkleProofTrait;
    use typenum::Unsigned;
    let challenges = proof.post_config().map_err(|e| e.to_string())?.challenge_count;
    let leaves = (proof.sector_size().bytes() / 32) as usize;
    let (a, b, c) = (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let mut arities = vec![
        a;
        storage_proofs_core::merkle::base_path_length::<
            Tree::Arity,
            Tree::SubTreeArity,
            Tree::TopTreeArity,
        >(leaves)
    ];
    arities.extend([b, c].into_iter().filter(|&x| x > 0));
    let sectors = &vanilla.vanilla_proof.sectors;
    if sectors.len() != 1 {
        return Err(format!("{} sector proofs inside, one expected", sectors.len()));
    }
    // Every Poseidon hash must be a canonical scalar: filecoin-hashers panics on one that
    // is not ("from_repr failure") when it hashes or converts it.
    let canonical = |d: &PoseidonDomain| {
        let bytes: [u8; 32] = (*d).into();
        <Scalar as ff::PrimeField>::from_repr_vartime(bytes).is_some()
    };
    let s = &sectors[0];
    if ![vanilla.comm_r, s.comm_c, s.comm_r_last].iter().all(canonical) {
        return Err("a commitment (comm_r, comm_c or comm_r_last) is not a BLS12-381 scalar".into());
    }
    let inclusion = &sectors[0].inclusion_proofs;
    if inclusion.len() != challenges {
        return Err(format!(
            "{} inclusion proofs, {proof} challenges {challenges} per sector",
            inclusion.len()
        ));
    }
    for (j, p) in inclusion.iter().enumerate() {
        let path = p.path();
        let fits = path.len() == arities.len()
            && path
                .iter()
                .zip(&arities)
                .all(|((hashes, index), &arity)| hashes.len() + 1 == arity && *index < arity);
        if !fits {
            return Err(format!("inclusion proof {j} is not a path of this sector size's tree"));
        }
        let hashes: Vec<PoseidonDomain> =
            path.iter().flat_map(|(h, _)| h.iter().copied()).chain([p.leaf(), p.root()]).collect();
        if !hashes.iter().all(canonical) {
            return Err(format!("inclusion proof {j} holds a hash that is not a BLS12-381 scalar"));
        }
        // The circuit takes comm_r_last as every path's root (and hashes it into comm_r);
        // storage-proofs' vanilla check reads the paths' own roots: they must agree.
        if p.root() != s.comm_r_last {
            return Err(format!("inclusion proof {j}'s root is not the sector's comm_r_last"));
        }
    }
    Ok(())
}

/// One PoSt's circuits, as filecoin-proofs builds them, with the inputs the verifier
/// derives; built from a checked [`PostRequest`].
pub struct PostJob {
    proof: RegisteredPoStProof,
    shaped: ShapedPostJob,
}

enum ShapedPostJob {
    Base(PostJobOf<filecoin_proofs::constants::SectorShapeBase>),
    Sub8(PostJobOf<filecoin_proofs::constants::SectorShapeSub8>),
    Top2(PostJobOf<filecoin_proofs::constants::SectorShapeTop2>),
}

struct PostJobOf<Tree: SealTree> {
    public_params: compound_proof::PublicParams<'static, Post<Tree>>,
    /// What the circuits are built from (this request's sectors).
    pub_inputs: fallback::PublicInputs<PoseidonDomain>,
    /// What the verifier derives the inputs of partition `verifier_k` from.
    verifier_inputs: fallback::PublicInputs<PoseidonDomain>,
    verifier_k: usize,
    partitions: Vec<VanillaProof<Tree>>,
}

fn safe<T: filecoin_hashers::Domain>(bytes: &[u8; 32], what: &str) -> Result<T, FilecoinError> {
    filecoin_proofs::as_safe_commitment(bytes, what).map_err(|e| {
        FilecoinError::BadArgument(format!(
            "{what} is not a BLS12-381 scalar (filecoin-proofs refuses it): {e:#}"
        ))
    })
}

impl<Tree: SealTree> PostJobOf<Tree> {
    fn new(request: &PostRequest, vanilla: &[FallbackPoStSectorProof<Tree>]) -> Result<Self, FilecoinError> {
        let config = request.proof.post_config()?;
        let randomness: PoseidonDomain = safe(&request.randomness, "randomness")?;
        let prover_id: PoseidonDomain = safe(&request.prover_id, "prover_id")?;
        let public_params = public_params::<Tree>(&config)?;
        let sectors: Vec<PublicSector<PoseidonDomain>> =
            vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
        let rejected = |what: &str, e: anyhow::Error| {
            FilecoinError::BadVanilla(format!(
                "{what}: {e:#} (the vanilla proofs do not fit {} with this randomness and prover id)",
                request.proof
            ))
        };
        match config.typ {
            PoStType::Winning => {
                let pub_inputs = fallback::PublicInputs { randomness, prover_id, sectors, k: None };
                let partitions = public_params.partitions.unwrap_or(1);
                // Unrolls the sector's challenges into the circuit's shape and verifies the
                // Merkle paths against comm_r, as generate_winning_post_with_vanilla does.
                let partitions = filecoin_proofs::partition_vanilla_proofs(
                    &config,
                    &public_params.vanilla_params,
                    &pub_inputs,
                    partitions,
                    vanilla,
                )
                .map_err(|e| rejected("partition_vanilla_proofs", e))?;
                // verify_winning_post's inputs: the challenged sector once per circuit
                // "sector" (one challenge each), so challenge i is derived for index i.
                let circuit_sectors = public_params.vanilla_params.sector_count;
                let repeated: Vec<_> =
                    (0..circuit_sectors).flat_map(|_| pub_inputs.sectors.iter().cloned()).collect();
                // partition_vanilla_proofs' own check pairs the one public sector with the
                // first challenge only: every challenge is checked here, against the inputs
                // the verifier derives.
                let all =
                    fallback::PublicInputs { randomness, prover_id, sectors: repeated.clone(), k: Some(0) };
                let ok = partitions.iter().all(|p| {
                    <Post<Tree> as ProofScheme>::verify(&public_params.vanilla_params, &all, p)
                        .unwrap_or(false)
                });
                if !ok {
                    return Err(FilecoinError::BadVanilla(format!(
                        "the vanilla proof does not verify against the randomness and comm_r for every one of \
                         {} challenges ({})",
                        config.challenge_count, request.proof
                    )));
                }
                Ok(PostJobOf {
                    public_params,
                    verifier_inputs: fallback::PublicInputs {
                        randomness,
                        prover_id,
                        sectors: repeated,
                        k: None,
                    },
                    pub_inputs,
                    verifier_k: 0,
                    partitions,
                })
            }
            PoStType::Window => {
                let k = request.partition_index;
                let pub_inputs =
                    fallback::PublicInputs { randomness, prover_id, sectors: sectors.clone(), k: Some(k) };
                let partition = filecoin_proofs::single_partition_vanilla_proofs(
                    &config,
                    &public_params.vanilla_params,
                    &pub_inputs,
                    vanilla,
                )
                .map_err(|e| rejected("single_partition_vanilla_proofs", e))?;
                let ok = <Post<Tree> as ProofScheme>::verify(
                    &public_params.vanilla_params,
                    &pub_inputs,
                    &partition,
                )
                .map_err(|e| rejected("verifying the vanilla proofs", e))?;
                if !ok {
                    return Err(FilecoinError::BadVanilla(format!(
                        "the vanilla proofs do not verify against the randomness, prover id and comm_r's for \
                         partition {k} of a {} deadline (tampered, or another partition's or epoch's)",
                        request.proof
                    )));
                }
                // The verifier sees the whole deadline and takes partition k's chunk of it.
                // From API 1.2.0 on a challenge does not depend on the sector's index in the
                // deadline (get_challenge_index), so chunk 0 of our own sectors gives the same
                // inputs; before, the sectors ahead of ours fill the chunks before k.
                let index_free = !matches!(config.api_version, ApiVersion::V1_0_0 | ApiVersion::V1_1_0);
                let (deadline, verifier_k) = if index_free {
                    (sectors.clone(), 0)
                } else {
                    let mut deadline = vec![sectors[0].clone(); k * config.sector_count];
                    deadline.extend_from_slice(&sectors);
                    (deadline, k)
                };
                Ok(PostJobOf {
                    public_params,
                    pub_inputs,
                    verifier_inputs: fallback::PublicInputs {
                        randomness,
                        prover_id,
                        sectors: deadline,
                        k: None,
                    },
                    verifier_k,
                    partitions: vec![partition],
                })
            }
        }
    }

    fn circuit(&self, i: usize) -> Result<FallbackCircuit, FilecoinError> {
        let partition = self
            .partitions
            .get(i)
            .ok_or_else(|| FilecoinError::Internal(format!("partition {i} of {}", self.partitions.len())))?;
        // Some(i), as compound_proof's circuit_proofs builds the circuits it proves.
        <Compound<Tree> as CompoundProof<Post<Tree>, FallbackPoStCircuit<Tree>>>::circuit(
            &self.pub_inputs,
            Default::default(), // what circuit_proofs passes
            partition,
            &self.public_params.vanilla_params,
            Some(i),
        )
        .map(Tree::post_circuit)
        .map_err(|source| FilecoinError::CircuitBuild { partition: i, source })
    }

    fn public_inputs(&self, i: usize) -> Result<Vec<Scalar>, FilecoinError> {
        <Compound<Tree> as CompoundProof<Post<Tree>, FallbackPoStCircuit<Tree>>>::generate_public_inputs(
            &self.verifier_inputs,
            &self.public_params.vanilla_params,
            Some(self.verifier_k + i),
        )
        .map_err(|e| FilecoinError::proofs("generate_public_inputs", e))
    }
}

impl PostJob {
    /// Sets the request up as filecoin-proofs does, checking its vanilla proofs (a proof
    /// that does not verify is [`FilecoinError::BadVanilla`], before any synthesis).
    pub fn new(request: &PostRequest) -> Result<Self, FilecoinError> {
        // The proofs' shape and scalars were checked at parse; storage-proofs' own checks
        // run here on untrusted input, so a panic of theirs is this request's error.
        let shaped = no_panic("checking the vanilla proofs", || {
            Ok(match &request.vanilla {
                PostVanilla::Base(v) => ShapedPostJob::Base(PostJobOf::new(request, v)?),
                PostVanilla::Sub8(v) => ShapedPostJob::Sub8(PostJobOf::new(request, v)?),
                PostVanilla::Top2(v) => ShapedPostJob::Top2(PostJobOf::new(request, v)?),
            })
        })?;
        Ok(PostJob { proof: request.proof, shaped })
    }

    pub fn proof(&self) -> RegisteredPoStProof {
        self.proof
    }

    /// Number of circuits (always 1 for what Curio sends).
    pub fn partitions(&self) -> usize {
        each_shape!(&self.shaped, ShapedPostJob, j => j.partitions.len())
    }

    /// Circuit `i`, as filecoin-proofs' `circuit_proofs` builds it.
    pub fn circuit(&self, i: usize) -> Result<FallbackCircuit, FilecoinError> {
        no_panic("building the circuit", || each_shape!(&self.shaped, ShapedPostJob, j => j.circuit(i)))
    }

    /// The public inputs the verifier derives for circuit `i` (ONE excluded).
    pub fn public_inputs(&self, i: usize) -> Result<Vec<Scalar>, FilecoinError> {
        each_shape!(&self.shaped, ShapedPostJob, j => j.public_inputs(i))
    }
}

/// filecoin-proofs' own verifier on `proof_bytes`: `verify_winning_post`, or for a
/// WindowPoSt `verify_window_post` (which takes a whole deadline: so only partition 0 of
/// a deadline that fits one partition, which is every 2 KiB-512 MiB deadline of up to two
/// sectors; other partitions are checked by the engine's own verification only).
/// Verifying key: the `.vk` in filecoin-proofs' cache directory.
pub fn verify_post(request: &PostRequest, proof_bytes: &[u8]) -> Result<Verdict, FilecoinError> {
    let config = request.proof.post_config()?;
    request.proof.default_param_files()?.require_vk_source()?;
    let sectors = request.sectors();
    let replica = |comm_r: [u8; 32]| {
        PublicReplicaInfo::new(comm_r).map_err(|e| FilecoinError::BadVanilla(format!("comm_r: {e:#}")))
    };
    let shape = request.proof.sector_size().tree_shape();
    let result = match request.proof.kind() {
        PostKind::Winning => {
            let replicas = sectors
                .iter()
                .map(|(id, comm_r)| Ok((SectorId::from(*id), replica(*comm_r)?)))
                .collect::<Result<Vec<_>, FilecoinError>>()?;
            with_tree!(shape, Tree => filecoin_proofs::verify_winning_post::<Tree>(
                &config, &request.randomness, &replicas, request.prover_id, proof_bytes))
        }
        PostKind::Window => {
            if request.partition_index != 0 {
                return Err(FilecoinError::Unsupported(format!(
                    "filecoin-proofs verifies a whole WindowPoSt deadline; partition {} alone cannot be \
                     checked by verify_window_post",
                    request.partition_index
                )));
            }
            let replicas = sectors
                .iter()
                .map(|(id, comm_r)| Ok((SectorId::from(*id), replica(*comm_r)?)))
                .collect::<Result<BTreeMap<_, _>, FilecoinError>>()?;
            with_tree!(shape, Tree => filecoin_proofs::verify_window_post::<Tree>(
                &config, &request.randomness, &replicas, request.prover_id, proof_bytes))
        }
    };
    Ok(match result {
        Ok(true) => Verdict::Accepted,
        Ok(false) => Verdict::Rejected,
        Err(e) => Verdict::Malformed(format!("{e:#}")),
    })
}

/// filecoin-proofs' own prover on the same request (the baseline):
/// `generate_winning_post_with_vanilla` or `generate_single_window_post_with_vanilla`,
/// parameters from its cache directory.
pub fn reference_post(request: &PostRequest) -> Result<Vec<u8>, FilecoinError> {
    let config = request.proof.post_config()?;
    request.proof.default_param_files()?.require_params()?;
    // filecoin-proofs takes the proofs by value and they are not Clone: a copy through
    // their own bincode, as Curio's bytes would arrive (microseconds at these sizes).
    let copy = PostRequest::from_bincode(
        request.proof,
        request.randomness,
        request.prover_id,
        request.partition_index,
        &request.vanilla_bincode()?,
    )?;
    each_shape!(copy.vanilla, PostVanilla, proofs => match request.proof.kind() {
        PostKind::Winning => filecoin_proofs::generate_winning_post_with_vanilla(
            &config, &request.randomness, request.prover_id, proofs)
            .map_err(|e| FilecoinError::proofs("generate_winning_post_with_vanilla", e)),
        PostKind::Window => filecoin_proofs::generate_single_window_post_with_vanilla(
            &config, &request.randomness, request.prover_id, proofs, request.partition_index)
            .map(|p| p.0)
            .map_err(|e| FilecoinError::proofs("generate_single_window_post_with_vanilla", e)),
    })
}

/// A sealed replica on disk, as a PoSt prover reads it: the sealed file and the cache
/// directory holding its trees and `p_aux` (what `filecoin seal --keep` leaves).
#[derive(Clone, Debug)]
pub struct Replica {
    pub sector_id: u64,
    pub comm_r: [u8; 32],
    pub sealed: PathBuf,
    pub cache_dir: PathBuf,
}

/// The vanilla proofs a PoSt worker would send for `replicas` (filecoin-proofs'
/// `generate_fallback_sector_challenges` and `generate_single_vanilla_proof`, as Curio's
/// tasks call them), as a request: WinningPoSt takes the one challenged replica; a
/// WindowPoSt partition takes its sectors, which are put in ascending sector number, the
/// order of a partition on chain and of filecoin-proofs' verifier (a `BTreeMap` by sector
/// id; the prover proves them in the order given). Sealed sizes only (up to 512 MiB here).
pub fn vanilla_request(
    proof: RegisteredPoStProof,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    partition_index: usize,
    replicas: &[Replica],
) -> Result<PostRequest, FilecoinError> {
    let config = proof.post_config()?;
    let mut replicas = replicas.to_vec();
    replicas.sort_by_key(|r| r.sector_id);
    let vanilla = with_tree!(proof.sector_size().tree_shape(), Tree => {
        let ids: Vec<SectorId> = replicas.iter().map(|r| SectorId::from(r.sector_id)).collect();
        let challenges =
            filecoin_proofs::generate_fallback_sector_challenges::<Tree>(&config, &randomness, &ids, prover_id)
                .map_err(|e| FilecoinError::proofs("generate_fallback_sector_challenges", e))?;
        let mut proofs = Vec::with_capacity(replicas.len());
        for r in &replicas {
            let info = filecoin_proofs::PrivateReplicaInfo::<Tree>::new(r.sealed.clone(), r.comm_r, r.cache_dir.clone())
                .map_err(|e| FilecoinError::proofs("opening the replica", e))?;
            let id = SectorId::from(r.sector_id);
            let these = challenges.get(&id).ok_or_else(|| FilecoinError::Internal(format!("no challenges for {id:?}")))?;
            proofs.push(
                filecoin_proofs::generate_single_vanilla_proof::<Tree>(&config, id, &info, these)
                    .map_err(|e| FilecoinError::proofs("generate_single_vanilla_proof", e))?,
            );
        }
        Tree::post_vanilla(proofs)
    });
    PostRequest::new(proof, randomness, prover_id, partition_index, vanilla)
}

/// The storage-proofs line whose PoSt circuit is recorded (part of the recording's identity).
const POST_CIRCUIT_CODE: &str = "storage-proofs-post 19.1.0";

/// One PoSt circuit (a kind and a sector size; every API version of it shares the circuit
/// and its parameter file), ready for an engine: parameters loaded once and checked against
/// the circuit's shape, and its synthesis (precompiled by default, recorded beside the
/// parameters as for PoRep). Cheap to clone.
#[derive(Clone)]
pub struct PostCircuit {
    /// The engine's circuit kind: `winning-post-2KiB`, `window-post-32GiB`.
    kind: String,
    post: PostKind,
    sector_size: SectorSize,
    files: ParamFiles,
    shape: arenaprove_circuits::Shape,
    params: std::sync::Arc<arenaprove_engine::Parameters>,
    synthesis: crate::pce::Synthesis,
}

impl fmt::Debug for PostCircuit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostCircuit")
            .field("kind", &self.kind)
            .field("params", &self.files.params)
            .field("shape", &self.shape)
            .field("synthesis", &self.synthesis.name())
            .finish()
    }
}

impl PostCircuit {
    /// Loads the parameters of `proof`'s circuit from `dir` (a file of another circuit is
    /// refused, naming the section) and its recording beside them unless `options` say
    /// otherwise.
    pub fn load(
        proof: RegisteredPoStProof,
        dir: &Path,
        options: crate::c2::LoadOptions,
    ) -> Result<Self, FilecoinError> {
        let files = proof.param_files(dir)?;
        files.require_params()?;
        let identity = post_identity(&files);
        let (shape, params, synthesis) = crate::c2::load_parts(
            &files,
            options,
            &identity,
            || post_shape(proof),
            || blank_post_circuit(proof),
        )?;
        let kind = match proof.kind() {
            PostKind::Winning => "winning-post",
            PostKind::Window => "window-post",
        };
        Ok(PostCircuit {
            kind: format!("{kind}-{}", proof.sector_size()),
            post: proof.kind(),
            sector_size: proof.sector_size(),
            files,
            shape,
            params,
            synthesis,
        })
    }

    /// The engine's circuit kind (`window-post-2KiB`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn post_kind(&self) -> PostKind {
        self.post
    }

    pub fn sector_size(&self) -> SectorSize {
        self.sector_size
    }

    /// Whether this circuit proves `proof` (any API version of its kind and size).
    pub fn proves(&self, proof: RegisteredPoStProof) -> bool {
        proof.kind() == self.post && proof.sector_size() == self.sector_size
    }

    pub fn shape(&self) -> arenaprove_circuits::Shape {
        self.shape
    }

    pub fn params(&self) -> &std::sync::Arc<arenaprove_engine::Parameters> {
        &self.params
    }

    pub fn files(&self) -> &ParamFiles {
        &self.files
    }

    pub fn synthesis(&self) -> &crate::pce::Synthesis {
        &self.synthesis
    }

    /// The engine's circuit kind for this circuit (with its recording when precompiled).
    pub fn spec(&self) -> arenaprove_engine::pipeline::CircuitSpec {
        crate::c2::spec_of(&self.kind, self.shape, &self.params, &self.synthesis)
    }
}
