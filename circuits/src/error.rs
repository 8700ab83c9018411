//! [`CircuitError`]: what can go wrong while synthesizing into an assignment.

use arenaprove_arena::ArenaError;
use bellpepper_core::SynthesisError;

use crate::Shape;

/// Errors of synthesis and of the assignment's storage. Each names what refused.
#[derive(Debug, thiserror::Error)]
pub enum CircuitError {
    /// The circuit needs more of `what` (constraints, aux, inputs) than the shape it was
    /// leased for. Raised during synthesis (the first time a row would not fit), never by
    /// reallocating.
    #[error(
        "circuit is larger than its shape: {what} needs {requested} but capacity is {capacity} \
         (shape: {shape})"
    )]
    OverShape { what: &'static str, requested: usize, capacity: usize, shape: Shape },
    /// The circuit itself failed (from `bellpepper_core::SynthesisError`).
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// A slab could not be leased, or a SlabVec refused.
    #[error("arena: {0}")]
    Arena(#[from] ArenaError),
    /// `abc*` was called after `release_abc`.
    #[error("a, b, c were already released")]
    AbcReleased,
    /// `abc*` on an assignment whose products were left to the backend: a, b, c exist only
    /// where the backend computes them from the recording's matrices.
    #[error(
        "a, b, c of this assignment are computed by the backend from the recording '{recording}' \
         (products on the device); the host never held them"
    )]
    AbcDeferred { recording: String },
    /// `abc_padded_mut` with a domain smaller than the number of constraints.
    #[error("domain size {domain_size} is smaller than the {constraints} constraints")]
    DomainTooSmall { domain_size: usize, constraints: usize },
    /// A parameter of a test circuit or of a shape is out of range.
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    /// Precompiled constraints refused (a file, or a circuit that does not match them).
    #[error("precompiled: {0}")]
    Precompiled(#[from] crate::precompiled::PrecompiledError),
}

impl CircuitError {
    /// Converts into a `SynthesisError` for code that must return one (bellpepper's
    /// `Circuit::synthesize`). The message survives in an `io::Error`.
    pub fn into_synthesis(self) -> SynthesisError {
        match self {
            CircuitError::Synthesis(e) => e,
            other => SynthesisError::IoError(std::io::Error::other(other.to_string())),
        }
    }
}
