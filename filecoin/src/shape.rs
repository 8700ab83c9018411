//! The shape of one PoRep C2 partition circuit for every network sector size (2 KiB to
//! 64 GiB), so that a memory plan can be made for a sector this build does not prove.
//!
//! A shape is *counted*, never written down: the blank circuit that parameter generation
//! synthesizes (`StackedCompound::blank_circuit`, no witness) goes through a counting
//! recorder ([`RecordingCs::counting`]), which counts variables, constraints and the
//! bytes of the circuit's precompiled-constraints file without keeping the matrices. The public params this needs are cheap for every size: the stacked
//! graph is parametric (parents are computed on demand, the Feistel keys are a few words),
//! so nothing the size of a sector, and no Groth16 parameter file, is read or built.
//!
//! Counting a 32 GiB partition (130M constraints) takes the better part of a minute on the
//! 2-core development machine (BENCHMARKS.md), so [`porep_shape`] keeps each count in a
//! small JSON file, keyed by the registered proof (sector size and API version) and the
//! filecoin-proofs version, and answers later calls from it in milliseconds. A file that
//! does not parse or names another key is counted again and rewritten (write to a
//! temporary name, then rename: a reader never sees half a file).
//!
//! Tree shapes: 2 KiB, 8 MiB and 512 MiB are `SectorShapeBase`, 32 GiB `SectorShapeSub8`,
//! 64 GiB `SectorShapeTop2` (filecoin-proofs' `constants`); the two large ones are
//! monomorphised here for counting only.
use std::path::{Path, PathBuf};
use std::time::Instant;

use arenaprove_circuits::precompiled::RecordingCs;
use arenaprove_circuits::Shape;
use bellpepper_core::Circuit;
use filecoin_proofs::constants::{
    DefaultPieceHasher, SectorShapeBase, SectorShapeSub8, SectorShapeTop2, SECTOR_SIZE_2_KIB,
    SECTOR_SIZE_8_MIB,
};
use filecoin_proofs::types::PoRepConfig;
use serde::{Deserialize, Serialize};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

use crate::api::RegisteredSealProof;
use crate::circuit::compound_public_params;
use crate::error::FilecoinError;

/// The filecoin-proofs release whose circuits are counted (the `=` pin in Cargo.toml; a
/// test checks the two agree). Part of the cache key: another release may change a circuit.
pub const FILECOIN_PROOFS_VERSION: &str = "19.1.0";

/// Every network sector size, smallest first: (name, bytes).
pub const POREP_SECTOR_SIZES: [(&str, u64); 5] = [
    ("2KiB", SECTOR_SIZE_2_KIB),
    ("8MiB", SECTOR_SIZE_8_MIB),
    ("512MiB", 1 << 29),
    ("32GiB", 1 << 35),
    ("64GiB", 1 << 36),
];

/// Bytes of a network sector size named `2KiB` .. `64GiB` (any case) or given in bytes.
pub fn porep_sector_size(name: &str) -> Result<u64, FilecoinError> {
    let trimmed = name.trim();
    POREP_SECTOR_SIZES
        .iter()
        .find(|(n, bytes)| n.eq_ignore_ascii_case(trimmed) || trimmed.parse::<u64>() == Ok(*bytes))
        .map(|&(_, bytes)| bytes)
        .ok_or_else(|| {
            FilecoinError::BadArgument(format!(
                "unknown sector size `{name}` (expected one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB, or a size in \
                 bytes)"
            ))
        })
}

/// The name (`32GiB`) of a network sector size in bytes.
pub fn porep_sector_size_name(bytes: u64) -> Result<&'static str, FilecoinError> {
    POREP_SECTOR_SIZES
        .iter()
        .find(|&&(_, b)| b == bytes)
        .map(|&(n, _)| n)
        .ok_or(FilecoinError::UnsupportedSectorSize { bytes })
}

/// The registered proof a sector of `bytes` is sealed with today: interactive PoRep of API
/// version 1.1 (`StackedDrg32GiBV1_1`). Its circuit is the one counted.
fn registered_proof_v1_1(bytes: u64) -> Result<RegisteredSealProof, FilecoinError> {
    use RegisteredSealProof::*;
    [StackedDrg2KiBV1_1, StackedDrg8MiBV1_1, StackedDrg512MiBV1_1, StackedDrg32GiBV1_1, StackedDrg64GiBV1_1]
        .into_iter()
        .find(|p| p.sector_size_bytes() == bytes)
        .ok_or(FilecoinError::UnsupportedSectorSize { bytes })
}

/// filecoin-proofs' `PoRepConfig` for `proof`, built as `RegisteredSealProof::porep_config`
/// builds it but for every sector size (that one refuses the sizes this build cannot prove).
fn any_size_porep_config(proof: RegisteredSealProof) -> Result<PoRepConfig, FilecoinError> {
    PoRepConfig::new_groth16_with_features(
        proof.sector_size_bytes(),
        proof.porep_id(),
        proof.api_version(),
        proof.api_features(),
    )
    .map_err(|e| FilecoinError::proofs("building the PoRep config", e))
}

/// Counts the blank circuit of one partition of tree shape `Tree` with a counting
/// recorder: its shape (one row per `enforce`, plus bellperson's one row per input) and
/// the bytes its precompiled-constraints file would have.
fn count_blank<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<(Shape, u64), FilecoinError> {
    let public_params = compound_public_params::<Tree>(config)?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'static, Tree, DefaultPieceHasher>,
        StackedCircuit<Tree, DefaultPieceHasher>,
    >>::blank_circuit(&public_params.vanilla_params);
    let mut cs = RecordingCs::counting("porep shape count")?;
    if let Err(e) = circuit.synthesize(&mut cs) {
        // The recorder's own (typed) error beats the string bellpepper carries it in.
        return Err(match cs.take_error() {
            Some(sticky) => sticky.into(),
            None => FilecoinError::groth16("counting the blank circuit", e.into()),
        });
    }
    if let Some(e) = cs.take_error() {
        return Err(e.into());
    }
    let (rows, inputs, aux) = cs.counts();
    Ok((Shape::new(rows + inputs, inputs, aux), cs.file_bytes()))
}

/// One partition circuit's shape, and how many partitions a sector has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoRepShape {
    pub sector_size_bytes: u64,
    pub registered_proof: RegisteredSealProof,
    /// Shape of one partition circuit, as bellperson synthesizes it (input rows included).
    pub shape: Shape,
    /// Partition circuits per sector (10 for 32 GiB and 64 GiB, 1 below).
    pub partitions: usize,
    /// Bytes of the circuit's precompiled-constraints file (`filecoin pce`; C2's default
    /// synthesis maps it read-only, so its pages count in RSS once read).
    pub precompiled_bytes: u64,
}

/// Counts the shape of one C2 partition circuit of a sector of `sector_size_bytes` by
/// synthesizing the blank circuit into the shape counter (no cache: see [`porep_shape`]).
pub fn count_porep_shape(sector_size_bytes: u64) -> Result<PoRepShape, FilecoinError> {
    let registered_proof = registered_proof_v1_1(sector_size_bytes)?;
    let config = any_size_porep_config(registered_proof)?;
    let _span = tracing::info_span!("count_porep_shape", sector_size_bytes).entered();
    let (shape, precompiled_bytes) = match sector_size_bytes {
        b if b <= 1 << 29 => count_blank::<SectorShapeBase>(&config)?,
        b if b == 1 << 35 => count_blank::<SectorShapeSub8>(&config)?,
        b if b == 1 << 36 => count_blank::<SectorShapeTop2>(&config)?,
        bytes => return Err(FilecoinError::UnsupportedSectorSize { bytes }),
    };
    Ok(PoRepShape {
        sector_size_bytes,
        registered_proof,
        shape,
        partitions: usize::from(config.partitions),
        precompiled_bytes,
    })
}

/// What [`porep_shape`] answered with, and where from.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedShape {
    pub porep: PoRepShape,
    /// The cache file (read, or written after counting).
    pub path: PathBuf,
    /// True when the answer came from the file; false when it was counted now.
    pub from_cache: bool,
    /// Seconds the count took (now, or when the file was written).
    pub count_s: f64,
}

/// The cache file's contents.
#[derive(Debug, Serialize, Deserialize)]
struct ShapeFile {
    registered_proof: RegisteredSealProof,
    filecoin_proofs_version: String,
    sector_size_bytes: u64,
    partitions: usize,
    constraints: usize,
    inputs: usize,
    aux: usize,
    domain_size: usize,
    /// Absent in files written before it was counted: such a file is counted again.
    #[serde(default)]
    precompiled_bytes: u64,
    count_s: f64,
}

/// The cache file for `proof` under `cache_dir`.
fn shape_file_path(cache_dir: &Path, proof: RegisteredSealProof) -> PathBuf {
    cache_dir.join("porep-shapes").join(format!("{proof:?}-filecoin-proofs-{FILECOIN_PROOFS_VERSION}.json"))
}

/// The shape of one C2 partition circuit of a sector of `sector_size_bytes`: from
/// `<cache_dir>/porep-shapes/<proof>-filecoin-proofs-<version>.json` when it holds a valid
/// count for the same key, else counted (see [`count_porep_shape`]) and written there.
pub fn porep_shape(sector_size_bytes: u64, cache_dir: &Path) -> Result<CachedShape, FilecoinError> {
    let registered_proof = registered_proof_v1_1(sector_size_bytes)?;
    let path = shape_file_path(cache_dir, registered_proof);
    if let Some(hit) = read_shape_file(&path, registered_proof) {
        return Ok(hit);
    }
    let started = Instant::now();
    let porep = count_porep_shape(sector_size_bytes)?;
    let count_s = started.elapsed().as_secs_f64();
    let file = ShapeFile {
        registered_proof,
        filecoin_proofs_version: FILECOIN_PROOFS_VERSION.to_string(),
        sector_size_bytes,
        partitions: porep.partitions,
        constraints: porep.shape.constraints,
        inputs: porep.shape.inputs,
        aux: porep.shape.aux,
        domain_size: porep.shape.domain_size,
        precompiled_bytes: porep.precompiled_bytes,
        count_s,
    };
    let dir = path.parent().expect("a file under porep-shapes/");
    std::fs::create_dir_all(dir).map_err(|e| FilecoinError::io(dir, e))?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let json = serde_json::to_string_pretty(&file).expect("a plain struct serializes");
    std::fs::write(&tmp, json + "\n").map_err(|e| FilecoinError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| FilecoinError::io(&path, e))?;
    Ok(CachedShape { porep, path, from_cache: false, count_s })
}

/// A valid cache entry at `path` for `proof`, or None (absent, unreadable, another key, or
/// counts that disagree with each other: the caller counts again).
fn read_shape_file(path: &Path, proof: RegisteredSealProof) -> Option<CachedShape> {
    let bytes = std::fs::read(path).ok()?;
    let f: ShapeFile = serde_json::from_slice(&bytes).ok()?;
    let shape = Shape::new(f.constraints, f.inputs, f.aux);
    let valid = f.registered_proof == proof
        && f.filecoin_proofs_version == FILECOIN_PROOFS_VERSION
        && f.sector_size_bytes == proof.sector_size_bytes()
        && shape.domain_size == f.domain_size
        && f.partitions >= 1
        && f.inputs >= 1
        && f.constraints >= f.inputs
        && f.precompiled_bytes > 0;
    valid.then(|| CachedShape {
        porep: PoRepShape {
            sector_size_bytes: f.sector_size_bytes,
            registered_proof: proof,
            shape,
            partitions: f.partitions,
            precompiled_bytes: f.precompiled_bytes,
        },
        path: path.to_path_buf(),
        from_cache: true,
        count_s: f.count_s,
    })
}
