//! Groth16 over BLS12-381 on arena memory (CPU backend).
//!
//! * [`params`]: parameters in bellperson 0.27's byte format, loaded into resident slabs,
//!   `checked` mode validating every point in parallel;
//! * [`generator`]: an insecure development parameter generator;
//! * [`domain`]: radix-2 domains and in-place NTTs with bellperson's conventions;
//! * [`msm`]: blst Pippenger over affine bases and little-endian scalar split vectors;
//! * [`prover`]: the one Groth16 prover, `prove_start` (h, the h MSM) and `finalize` (L, A,
//!   B MSMs, the proof), every buffer from [`prover::ProverMemory`];
//! * [`ops`]: the device seam the prover runs on ([`ProverOps`]) and the CPU's operations;
//! * [`verifier`]: prepared verifying key, single and batch verification;
//! * [`proof`]: the 192-byte compressed proof encoding.

pub mod domain;
pub mod error;
pub mod generator;
pub mod msm;
pub mod ops;
pub mod params;
pub mod proof;
pub mod prover;
pub mod shape_only;
pub mod verifier;

pub use domain::Twiddles;
pub use error::{Groth16Error, PointFault};
pub use generator::{
    generate_parameters, generate_random_parameters, write_parameters_from_matrices,
    write_parameters_from_matrices_with, CpuFixedBase, FixedBaseProducts, FixedBaseSource, FixedBaseTables,
    StreamedParameters, ToxicWaste, WindowTable,
};
pub use ops::{CpuOps, G1Query, G2Query, ProverOps, ScalarBytes, WitnessScalars};
pub use params::{
    CpuSubgroupCheck, Parameters, ParamsFileWriter, ParamsMemory, SubgroupCheck, SubgroupCheckSource,
    VerifyingKey,
};
pub use proof::{Proof, PROOF_BYTES};
pub use prover::{
    reserve_twiddles, twiddle_bytes, DeviceTimings, ProofShape, ProveStart, Prover, ProverMemory,
    StageTimings, SCALAR_SLABS_PER_PROOF,
};
pub use shape_only::{shape_only_parameters, QueryPoints};
pub use verifier::{prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey};
