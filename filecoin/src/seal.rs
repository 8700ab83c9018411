//! Sealing a real test sector with filecoin-proofs, up to commit phase 1.
//!
//! add_piece (random data filling the whole sector), pre-commit phase 1 (SDR labels),
//! pre-commit phase 2 (tree_c, tree_r_last, comm_r), commit phase 1 (vanilla proofs for
//! the challenges the seed picks). All on temporary files under a work directory that is
//! removed when done. None of these steps needs Groth16 parameters; PC1 writes the SDR
//! parents cache under `FIL_PROOFS_PARENT_CACHE` (default `/var/tmp/filecoin-parents`).
use std::io::{Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use filecoin_proofs::constants::SectorShapeBase;
use filecoin_proofs::types::{PieceInfo, PoRepConfig, ProverId, Ticket, UnpaddedBytesAmount};
use rand_core::RngCore;
use storage_proofs_core::sector::SectorId;

use crate::api::{C1Output, RegisteredSealProof, SectorInfo, SectorSize, ShapedC1};
use crate::error::FilecoinError;

/// The identity of a sector to seal: who seals it, which sector, with which randomness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealRequest {
    pub registered_proof: RegisteredSealProof,
    pub prover_id: ProverId,
    pub sector_id: u64,
    /// Chain randomness for the replica id (PC1).
    pub ticket: Ticket,
    /// Chain randomness for the PoRep challenges (C1). Never all zero.
    pub seed: Ticket,
}

impl SealRequest {
    /// A request with random ids and randomness for a sector of `size`.
    pub fn random(size: SectorSize, rng: &mut impl RngCore) -> Self {
        let mut bytes = || {
            let mut b = [0u8; 32];
            rng.fill_bytes(&mut b);
            b
        };
        let prover_id = bytes();
        let ticket = bytes();
        let mut seed = bytes();
        seed[0] |= 1; // never all zero
        let sector_id = u64::from_le_bytes(bytes()[..8].try_into().unwrap_or([1; 8]));
        SealRequest { registered_proof: size.default_registered_proof(), prover_id, sector_id, ticket, seed }
    }
}

/// Time spent in each sealing step.
#[derive(Clone, Copy, Debug, Default)]
pub struct SealTimings {
    pub add_piece: Duration,
    pub pc1: Duration,
    pub pc2: Duration,
    pub c1: Duration,
}

/// A sealed test sector: its C1 output and what the verifier needs.
#[derive(Debug)]
pub struct SealedSector {
    pub c1: C1Output,
    pub info: SectorInfo,
    pub timings: SealTimings,
}

/// Seals one sector filled with bytes from `rng`, working in a temporary directory under
/// `work_dir` (removed on return).
pub fn seal_sector(
    request: &SealRequest,
    rng: &mut impl RngCore,
    work_dir: &Path,
) -> Result<SealedSector, FilecoinError> {
    std::fs::create_dir_all(work_dir).map_err(|e| FilecoinError::io(work_dir, e))?;
    let tmp = tempfile::Builder::new()
        .prefix("arenaprove-seal-")
        .tempdir_in(work_dir)
        .map_err(|e| FilecoinError::io(work_dir, e))?;
    seal_in(request, rng, tmp.path())
}

/// [`seal_sector`] in `dir` (created), leaving the sector there for proofs of spacetime:
/// the sealed replica (`dir/sealed`) and its cache (`dir/cache`: trees and `p_aux`); the
/// piece and the staged copy are removed. `dir` must not hold a sector already.
pub fn seal_sector_keep(
    request: &SealRequest,
    rng: &mut impl RngCore,
    dir: &Path,
) -> Result<(SealedSector, crate::post::Replica), FilecoinError> {
    std::fs::create_dir_all(dir).map_err(|e| FilecoinError::io(dir, e))?;
    let sealed = seal_in(request, rng, dir)?;
    for scratch in ["piece", "staged"] {
        let path = dir.join(scratch);
        std::fs::remove_file(&path).map_err(|e| FilecoinError::io(&path, e))?;
    }
    let replica = crate::post::Replica {
        sector_id: request.sector_id,
        comm_r: sealed.info.comm_r,
        sealed: dir.join("sealed"),
        cache_dir: dir.join("cache"),
    };
    Ok((sealed, replica))
}

fn seal_in(request: &SealRequest, rng: &mut impl RngCore, dir: &Path) -> Result<SealedSector, FilecoinError> {
    let config = request.registered_proof.porep_config()?;
    let size = request.registered_proof.sector_size()?;
    if request.seed == [0; 32] {
        return Err(FilecoinError::BadArgument("the challenge seed must not be all zero".into()));
    }
    if size.tree_shape() != crate::tree::TreeShape::Base {
        return Err(FilecoinError::Unsupported(format!(
            "sealing a {size} sector: this tool seals test sectors up to 512 MiB (a {size} sector needs {size} of \
             disk per layer and hours of PC1); prove {size} C1 outputs from a sealing pipeline instead"
        )));
    }
    let _span = tracing::info_span!("seal", sector_size = %size, sector_id = request.sector_id).entered();
    let (shaped, comm_r, comm_d, timings) = seal_base(&config, request, rng, dir)?;
    let info = SectorInfo {
        registered_proof: request.registered_proof,
        sector_size: size.bytes(),
        prover_id: request.prover_id,
        sector_id: request.sector_id,
        ticket: request.ticket,
        seed: request.seed,
        comm_r,
        comm_d,
    };
    let c1 = C1Output { registered_proof: request.registered_proof, shaped };
    Ok(SealedSector { c1, info, timings })
}

type Sealed = (ShapedC1, [u8; 32], [u8; 32], SealTimings);

fn seal_base(
    config: &PoRepConfig,
    request: &SealRequest,
    rng: &mut impl RngCore,
    dir: &Path,
) -> Result<Sealed, FilecoinError> {
    let proofs = |what: &'static str| move |e: anyhow::Error| FilecoinError::proofs(what, e);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| FilecoinError::io(&path, e)
    };
    let mut timings = SealTimings::default();
    let piece_path = dir.join("piece");
    let staged_path = dir.join("staged");
    let sealed_path = dir.join("sealed");
    let cache_dir = dir.join("cache");
    std::fs::create_dir_all(&cache_dir).map_err(io(&cache_dir))?;

    // The piece: random bytes filling the sector (unpadded size: 127 of every 128 bytes).
    let piece_bytes_count = config.unpadded_bytes_amount();
    let mut piece = vec![0u8; u64::from(piece_bytes_count) as usize];
    rng.fill_bytes(&mut piece);
    let mut piece_file = std::fs::File::create_new(&piece_path).map_err(io(&piece_path))?;
    piece_file.write_all(&piece).map_err(io(&piece_path))?;
    drop(piece_file);

    let started = Instant::now();
    let mut piece_file = std::fs::File::open(&piece_path).map_err(io(&piece_path))?;
    let piece_info = filecoin_proofs::generate_piece_commitment(&mut piece_file, piece_bytes_count)
        .map_err(proofs("generate_piece_commitment"))?;
    piece_file.rewind().map_err(io(&piece_path))?;
    let mut staged = std::fs::File::create_new(&staged_path).map_err(io(&staged_path))?;
    filecoin_proofs::add_piece(
        &mut piece_file,
        &mut staged,
        piece_bytes_count,
        &[] as &[UnpaddedBytesAmount],
    )
    .map_err(proofs("add_piece"))?;
    staged.sync_all().map_err(io(&staged_path))?;
    drop(staged);
    std::fs::File::create_new(&sealed_path).map_err(io(&sealed_path))?;
    timings.add_piece = started.elapsed();
    let piece_infos: Vec<PieceInfo> = vec![piece_info];
    let sector_id = SectorId::from(request.sector_id);

    let started = Instant::now();
    let pc1 = filecoin_proofs::seal_pre_commit_phase1::<_, _, _, SectorShapeBase>(
        config,
        &cache_dir,
        &staged_path,
        &sealed_path,
        request.prover_id,
        sector_id,
        request.ticket,
        &piece_infos,
    )
    .map_err(proofs("seal_pre_commit_phase1"))?;
    timings.pc1 = started.elapsed();

    let started = Instant::now();
    let pre_commit = filecoin_proofs::seal_pre_commit_phase2(config, pc1, &cache_dir, &sealed_path)
        .map_err(proofs("seal_pre_commit_phase2"))?;
    timings.pc2 = started.elapsed();

    let started = Instant::now();
    let (comm_r, comm_d) = (pre_commit.comm_r, pre_commit.comm_d);
    let c1 = filecoin_proofs::seal_commit_phase1::<_, SectorShapeBase>(
        config,
        &cache_dir,
        &sealed_path,
        request.prover_id,
        sector_id,
        request.ticket,
        request.seed,
        pre_commit,
        &piece_infos,
    )
    .map_err(proofs("seal_commit_phase1"))?;
    timings.c1 = started.elapsed();
    tracing::debug!(?timings, "sealed");
    Ok((ShapedC1::Base(c1), comm_r, comm_d, timings))
}
