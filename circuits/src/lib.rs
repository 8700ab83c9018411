//! # arenaprove-circuits
//! Owns the prover's assignment (`ArenaAssignment`, a bellpepper-core 0.2
//! `ConstraintSystem` whose a, b, c, assignments and density bitmaps live in slabs), the
//! shape counter, the heap baseline that mirrors bellperson 0.27, native gadgets and the
//! test circuits (`chain`, `sha`, `sector`).
#![forbid(unsafe_code)]

pub mod density;
pub use density::Density;
