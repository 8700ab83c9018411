//! One error type for the crate: every failure names the file, partition or limit involved,
//! and an error from a layer below (the engine, a partition, Groth16, filecoin-proofs)
//! stays typed as its `source`, so a caller can match on it rather than on its text.
use std::path::{Path, PathBuf};

use arenaprove_engine::pipeline::{EngineError, PartitionError};
use arenaprove_engine::Groth16Error;

/// What can go wrong reading, sealing, proving or verifying a sector.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A problem inside a named file.
    #[error("{}: {inner}", path.display())]
    InFile {
        path: PathBuf,
        #[source]
        inner: Box<FilecoinError>,
    },
    /// The C1 output is malformed, truncated, foreign, or inconsistent.
    #[error("bad commit-phase-1 output: {0}")]
    BadC1(String),
    /// `sector.json` is malformed or inconsistent.
    #[error("bad sector info: {0}")]
    BadSectorInfo(String),
    /// A command-line style argument is not understood.
    #[error("{0}")]
    BadArgument(String),
    /// The sector size is not one this build seals or proves.
    #[error("unsupported sector size {bytes} bytes (this build proves 2KiB, 8MiB and 512MiB sectors)")]
    UnsupportedSectorSize { bytes: u64 },
    /// A proof kind this crate does not produce.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The Groth16 parameter file for the circuit is not in the cache.
    #[error(
        "no Groth16 parameters for {circuit}: {} is missing (parameter cache {}; set \
         FIL_PROOFS_PARAMETER_CACHE, or generate development parameters with `{generate}`)",
        path.display(),
        cache_dir.display()
    )]
    MissingParams { circuit: String, generate: String, path: PathBuf, cache_dir: PathBuf },
    /// The parameter file does not fit the circuit (another sector size, a corrupted file).
    #[error("parameters {} do not fit the {sector_size} circuit: {source}", path.display())]
    ParamsMismatch { sector_size: String, path: PathBuf, source: Box<Groth16Error> },
    /// A proof (a C1 output's sector size, a PoSt kind and size) the engine was not started for.
    #[error("this engine proves {served}; the request is for {sector_size}")]
    NotServed { sector_size: String, served: String },
    /// filecoin-proofs' circuit builder failed for one partition.
    #[error("partition {partition}: building the circuit: {source:#}")]
    CircuitBuild { partition: usize, source: anyhow::Error },
    /// The public inputs the circuit computed from the vanilla proofs differ from those
    /// the verifier derives from the C1's seed, replica id and commitments.
    #[error(
        "partition {partition}: the public inputs the circuit computes from the vanilla proofs differ \
         from those the verifier derives from the request's seed or randomness, ids and commitments (a \
         tampered or mixed-up C1 or PoSt request)"
    )]
    InputsMismatch { partition: usize },
    /// A partition proof came back without having been verified: never handed on.
    #[error("partition {partition}: the engine returned a proof it did not verify")]
    Unverified { partition: usize },
    /// The sector was cancelled: `partitions_stopped` of its partitions had not reached the
    /// prover and ended at once; the others finished, and their proofs were dropped.
    #[error("cancelled ({partitions_stopped} of {partitions} partitions stopped before proving)")]
    Cancelled { partitions_stopped: usize, partitions: usize },
    /// The engine refused a job, or could not start.
    #[error("engine: {0}")]
    Engine(#[source] Box<EngineError>),
    /// One partition of a sector failed in the engine (synthesis, proving, verification).
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// PoSt vanilla proofs that cannot be proven: not decodable, the wrong number, or not
    /// verifying against the randomness, prover id and comm_r's.
    #[error("vanilla proofs: {0}")]
    BadVanilla(String),
    /// A Groth16 operation failed (reading, writing or generating parameters, counting a shape).
    #[error("{what}: {source}")]
    Groth16 { what: String, source: Box<Groth16Error> },
    /// filecoin-proofs reported an error (its whole cause chain is the source).
    #[error("filecoin-proofs, {what}: {source:#}")]
    Proofs { what: String, source: anyhow::Error },
    /// Precompiled constraints could not be recorded, saved or mapped (names the file).
    #[error("precompiled constraints: {0}")]
    Precompiled(#[from] arenaprove_circuits::PrecompiledError),
    /// A bug: a state the code should never reach.
    #[error("internal error: {0}")]
    Internal(String),
}

// Groth16 and engine errors are large (a file name, an offset, a section); boxed, they
// leave every `Result<_, FilecoinError>` small.
impl From<EngineError> for FilecoinError {
    fn from(e: EngineError) -> Self {
        FilecoinError::Engine(Box::new(e))
    }
}

impl FilecoinError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        FilecoinError::Io { path: path.to_path_buf(), source }
    }

    /// A filecoin-proofs (anyhow) error while doing `what`.
    pub fn proofs(what: &str, source: anyhow::Error) -> Self {
        FilecoinError::Proofs { what: what.to_string(), source }
    }

    /// A Groth16 error while doing `what`.
    pub fn groth16(what: impl Into<String>, source: Groth16Error) -> Self {
        FilecoinError::Groth16 { what: what.into(), source: Box::new(source) }
    }

    /// Attaches the file this error was found in (not twice).
    pub fn in_file(self, path: &Path) -> Self {
        match self {
            e @ (FilecoinError::Io { .. } | FilecoinError::InFile { .. }) => e,
            e => FilecoinError::InFile { path: path.to_path_buf(), inner: Box::new(e) },
        }
    }
}

/// A panic inside storage-proofs' code while reading untrusted proofs, as an error.
pub(crate) fn no_panic<T>(
    what: &str,
    f: impl FnOnce() -> Result<T, FilecoinError>,
) -> Result<T, FilecoinError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let reason = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        Err(FilecoinError::BadVanilla(format!("{what}: storage-proofs refused the proofs ({reason})")))
    })
}
