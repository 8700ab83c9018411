//! # arenaprove: a memory-arena-centric Groth16 proving engine (facade)
//!
//! This crate is what an embedder depends on. It re-exports:
//! * [`arena`]: regions, slab pools, leases, `SlabVec`, `VecPool`, `Scratch`, the ledger;
//! * [`circuits`]: the arena-backed `ArenaAssignment` (a bellpepper-core 0.2
//!   `ConstraintSystem`), native gadgets and the test circuits;
//! * [`engine`]: Groth16 params, prover and verifier, and the long-lived pipeline.
//!
//! [`benchkit`] holds the workloads shared by the criterion benches and the
//! `arenaprove bench-*` commands, so both measure exactly the same code.
#![forbid(unsafe_code)]

pub use arenaprove_arena as arena;
pub use arenaprove_circuits as circuits;
pub use arenaprove_engine as engine;
/// Filecoin PoRep commit phase 2 (feature `filecoin`).
#[cfg(feature = "filecoin")]
pub use arenaprove_filecoin as filecoin;

/// The CUDA backend (feature `cuda`): `cuda::CudaFactory` for `EngineConfig::backend`.
#[cfg(feature = "cuda")]
pub use arenaprove_cuda as cuda;

pub mod benchkit;
