//! # arenaprove-engine
//! Owns Groth16 over BLS12-381 (parameters in bellperson 0.27's byte format, the prover
//! written once and split in `prove_start` / `finalize`, the verifier), the device seam
//! [`ProverOps`] every backend plugs into (the CPU's here, CUDA's in `cuda/`), the
//! engine's [`Backend`] face of a prover, the [`pipeline::MemoryPlan`] that sizes and
//! reserves every pool, and the long-lived pipeline of partition slots.
#![forbid(unsafe_code)]

pub mod backend;
pub mod groth16;
pub mod pipeline;

pub use backend::{prove_circuit, prove_synthesized, Backend, BackendFactory, CpuBackend};

pub use groth16::shape_only_parameters;
pub use groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proof, verify_proofs_batch, CpuOps, G1Query,
    G2Query, Groth16Error, Parameters, ParamsMemory, PreparedVerifyingKey, Proof, Prover, ProverMemory,
    ProverOps, QueryPoints, StageTimings, VerifyingKey,
};

/// bellperson 0.27, re-exported for cross-checks and baselines (feature `peer`).
#[cfg(feature = "peer")]
pub mod peer {
    pub use bellperson;
}

/// The crates the engine's API is made of, re-exported so embedders (and the facade's
/// bench workloads) use exactly the same versions.
pub mod deps {
    pub use bellpepper;
    pub use bellpepper_core;
    pub use blst;
    pub use blstrs;
    pub use ff;
    pub use group;
    pub use rand_chacha;
    pub use rand_core;
    pub use tracing;
}
