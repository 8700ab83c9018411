//! # arenaprove-engine
//! Owns Groth16 over BLS12-381 (parameters in bellperson 0.27's byte format, the prover
//! split in `prove_start` / `finalize`, the verifier), the CPU backend and the long-lived
//! pipeline of partition slots.
#![forbid(unsafe_code)]

pub mod groth16;

pub use groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proof, verify_proofs_batch, Groth16Error,
    Parameters, ParamsMemory, PreparedVerifyingKey, Proof, Prover, StageTimings, VerifyingKey,
};
