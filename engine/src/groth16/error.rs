//! [`Groth16Error`]: every way loading parameters, proving or verifying can refuse. Each
//! variant names the file, the section and the index where that applies.

use arenaprove_arena::ArenaError;
use arenaprove_circuits::CircuitError;

/// What is wrong with one encoded curve point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointFault {
    /// The bytes are not a valid encoding (flag bits, or a coordinate >= the field modulus).
    BadEncoding,
    /// The coordinates do not satisfy the curve equation.
    NotOnCurve,
    /// On the curve but outside the prime-order subgroup.
    NotInSubgroup,
    /// The point at infinity where bellperson 0.27 rejects it.
    Infinity,
}

impl std::fmt::Display for PointFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PointFault::BadEncoding => "not a valid point encoding",
            PointFault::NotOnCurve => "not on the curve",
            PointFault::NotInSubgroup => "not in the prime-order subgroup",
            PointFault::Infinity => "the point at infinity",
        })
    }
}

/// Errors of the Groth16 engine.
#[derive(Debug, thiserror::Error)]
pub enum Groth16Error {
    #[error("{file}: {op}: {source}")]
    Io { file: String, op: &'static str, source: std::io::Error },
    /// The file ends inside `section` (at element `index`, or at its length prefix).
    #[error(
        "{file}: truncated in section '{section}' at index {index}: needs {needed_bytes} bytes at \
         offset {offset}, file has {file_bytes}"
    )]
    Truncated {
        file: String,
        section: &'static str,
        index: usize,
        offset: usize,
        needed_bytes: usize,
        file_bytes: usize,
    },
    #[error("{file}: {extra_bytes} unexpected bytes after the last section (offset {offset})")]
    TrailingBytes { file: String, offset: usize, extra_bytes: usize },
    /// A section's length prefix is over the limit (corrupt file).
    #[error("{file}: section '{section}' claims {count} points, over the limit of {limit}")]
    SectionTooLong { file: String, section: &'static str, count: usize, limit: usize },
    #[error("{file}: section '{section}', point {index} (offset {offset}): {fault}")]
    BadPoint { file: String, section: &'static str, index: usize, offset: usize, fault: PointFault },
    /// Parameters made for another circuit shape.
    #[error("parameters do not fit this circuit: section '{section}' has {params_len} points, the circuit needs {circuit_len}")]
    ShapeMismatch { section: &'static str, params_len: usize, circuit_len: usize },
    #[error("wrong number of public inputs: the verifying key takes {expected} (ONE excluded), got {got}")]
    PublicInputs { expected: usize, got: usize },
    #[error("proof bytes: {reason}")]
    ProofBytes { reason: String },
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] bellpepper_core::SynthesisError),
    #[error("circuit: {0}")]
    Circuit(#[from] CircuitError),
    #[error("arena: {0}")]
    Arena(#[from] ArenaError),
    /// A value that must be invertible or non-identity was not (degenerate toxic waste or
    /// a variable that no constraint touches).
    #[error("{0}")]
    Degenerate(String),
    /// A proving backend other than the CPU (the CUDA one in `cuda/`) failed: its own typed
    /// error is the source.
    #[error("{backend} backend: {source}")]
    Backend {
        backend: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A limit of the engine (domain size, batch size) was exceeded.
    /// A backend asked for an operation it does not have (e.g. products from a recording
    /// on the CPU backend).
    #[error("the {backend} backend cannot {what}")]
    Unsupported { backend: &'static str, what: &'static str },
    #[error("limit exceeded: {what} is {value}, limit {limit}")]
    Limit { what: &'static str, value: usize, limit: usize },
}

pub type Result<T, E = Groth16Error> = std::result::Result<T, E>;
