//! [`PrecompiledError`]: what can go wrong recording, saving, opening or using
//! precompiled constraints. Every variant names the file (or `<memory>`) it is about.

use crate::Shape;

/// Errors of the precompiled path (see the module docs of [`crate::precompiled`]).
#[derive(Debug, thiserror::Error)]
pub enum PrecompiledError {
    #[error("{path}: {op}: {source}")]
    Io { path: String, op: &'static str, source: std::io::Error },
    /// The file does not start with the precompiled magic.
    #[error("{path}: not a precompiled-constraints file (bad magic)")]
    NotPrecompiled { path: String },
    #[error("{path}: format version {found}, this build reads version {expected}")]
    Version { path: String, found: u32, expected: u32 },
    /// The file was recorded from another circuit.
    #[error("{path}: recorded for circuit '{found}', expected circuit '{expected}'")]
    WrongCircuit { path: String, expected: String, found: String },
    /// Same identity, another shape (the circuit changed without its identity changing).
    #[error("{path}: recorded shape ({found}) differs from the circuit's ({expected})")]
    WrongShape { path: String, expected: Shape, found: Shape },
    /// The file is shorter than its header says.
    #[error("{path}: truncated: header says {expected_bytes} bytes, file has {found_bytes}")]
    Truncated { path: String, expected_bytes: u64, found_bytes: u64 },
    /// A checksum or a structural check failed.
    #[error("{path}: corrupt: {reason}")]
    Corrupt { path: String, reason: String },
    /// The circuit cannot be recorded in this format (a limit, or a malformed constraint).
    #[error("recording '{identity}': {reason}")]
    Record { identity: String, reason: String },
    /// Witness synthesis of a circuit did not match the recorded matrices.
    #[error("circuit does not match precompiled '{identity}': {what}: synthesized {synthesized}, recorded {recorded}")]
    Mismatch { identity: String, what: &'static str, synthesized: usize, recorded: usize },
    /// A parallel witness ([`crate::precompiled::PartedCircuit`]) did not split as
    /// recorded: a part (`Some(index)`; and the piece, where parts are synthesized in
    /// pieces) allocated or enforced other than its share; part 0's pieces, measured, do not
    /// add up to a part's share (`part: Some(0)`, `piece: None`); or the counts after the
    /// prologue do not divide among the parts (`part: None`; `expected` is the number of
    /// parts).
    #[error("circuit does not match precompiled '{identity}' in parallel witness{}{}: {what}: synthesized {synthesized}, expected {expected}", part.map(|p| format!(" (part {p})")).unwrap_or_default(), piece.map(|p| format!(" (piece {p})")).unwrap_or_default())]
    Parts {
        identity: String,
        part: Option<usize>,
        piece: Option<usize>,
        what: &'static str,
        synthesized: usize,
        expected: usize,
    },
    /// A part of a parallel witness (or a piece of one) failed to synthesize: the
    /// circuit's own error, with where.
    #[error("parallel witness of '{identity}', part {part}{}: {source}", piece.map(|p| format!(", piece {p}")).unwrap_or_default())]
    PartFailed {
        identity: String,
        part: usize,
        piece: Option<usize>,
        source: bellpepper_core::SynthesisError,
    },
}
