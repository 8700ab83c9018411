//! One error type for the crate: every failure names the file, partition or limit involved.
use std::path::{Path, PathBuf};

/// What can go wrong reading, sealing, proving or verifying a sector.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A problem inside a named file.
    #[error("{}: {inner}", path.display())]
    InFile { path: PathBuf, inner: Box<FilecoinError> },
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
        "no Groth16 parameters for {sector_size} sectors: {} is missing (parameter cache {}; set \
         FIL_PROOFS_PARAMETER_CACHE, or generate development parameters with `arenaprove filecoin seal \
         --sector-size {sector_size}`)",
        path.display(),
        cache_dir.display()
    )]
    MissingParams { sector_size: String, path: PathBuf, cache_dir: PathBuf },
    /// The parameter file does not fit the circuit (another sector size, a corrupted file).
    #[error("parameters {} do not fit the {sector_size} circuit: {reason}", path.display())]
    ParamsMismatch { sector_size: String, path: PathBuf, reason: String },
    /// The circuit of one partition failed to synthesize.
    #[error("partition {partition}: synthesis failed: {reason}")]
    Synthesis { partition: usize, reason: String },
    /// The proving engine reported an error.
    #[error("engine: {0}")]
    Engine(String),
    /// filecoin-proofs reported an error.
    #[error("filecoin-proofs, {what}: {reason}")]
    Proofs { what: String, reason: String },
    /// Precompiled constraints could not be recorded, saved or mapped (names the file).
    #[error("precompiled constraints: {0}")]
    Precompiled(#[from] arenaprove_circuits::PrecompiledError),
    /// A bug: a state the code should never reach.
    #[error("internal error: {0}")]
    Internal(String),
}

impl FilecoinError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        FilecoinError::Io { path: path.to_path_buf(), source }
    }

    /// A filecoin-proofs (anyhow) error while doing `what`, with its whole cause chain.
    pub fn proofs(what: &str, e: anyhow::Error) -> Self {
        FilecoinError::Proofs { what: what.to_string(), reason: format!("{e:#}") }
    }

    /// Attaches the file this error was found in (not twice).
    pub fn in_file(self, path: &Path) -> Self {
        match self {
            e @ (FilecoinError::Io { .. } | FilecoinError::InFile { .. }) => e,
            e => FilecoinError::InFile { path: path.to_path_buf(), inner: Box::new(e) },
        }
    }
}
