//! # arenaprove: a memory-arena-centric Groth16 proving engine (facade)
//!
//! This crate is what an embedder depends on. It re-exports:
//! * [`arena`]: regions, slab pools, leases, `SlabVec`, `VecPool`, `Scratch`, the ledger;
//! * [`circuits`]: the arena-backed `ArenaAssignment` (a bellpepper-core 0.2
//!   `ConstraintSystem`), native gadgets and the test circuits;
//! * [`engine`]: Groth16 params, prover and verifier, and the long-lived pipeline.
//!
//! Errors are typed: the engine returns [`engine::pipeline::EngineError`] (and, per
//! partition of a job, [`engine::pipeline::PartitionError`]), which keep the
//! [`engine::Groth16Error`] beneath them, and through it the [`arena::ArenaError`], as
//! their `source`.
//!
//! `benchkit` (feature `benchkit`, off by default) holds the workloads shared by the
//! criterion benches and the `arenaprove-bench` commands, so both measure exactly the same
//! code. It is not part of the embedding API.
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

#[cfg(feature = "benchkit")]
pub mod benchkit;

#[cfg(test)]
mod tests {
    /// Linking the facade installs no counting global allocator (only the bench and test
    /// binaries that ask for one have it): nothing counts this thread's allocations.
    #[test]
    fn the_facade_installs_no_counting_allocator() {
        let (b, counted) = crate::arena::CountingAlloc::measure_thread(|| Box::new([7u8; 64]));
        assert_eq!(b[0], 7);
        assert_eq!(counted.allocs, 0, "a counting global allocator is installed");
    }
}
