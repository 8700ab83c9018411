//! Test circuits with deterministic witnesses drawn from a seed.
pub mod chain;

pub use chain::ChainCircuit;
