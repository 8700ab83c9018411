//! # arenaprove-filecoin: Filecoin PoRep commit phase 2 on the arenaprove engine
//!
//! Owns the path from what a storage provider holds to what the chain verifies:
//! * [`api`]: the commit-phase-1 (C1) output in filecoin-proofs-api's JSON format (and
//!   filecoin-proofs' plain one), `sector.json`, registered proofs and their PoRep config;
//! * [`seal`]: sealing a real test sector with filecoin-proofs up to C1;
//! * [`params`]: the Groth16 parameter cache filecoin-proofs reads (names, presence);
//! * [`verify`]: filecoin-proofs' own `verify_seal`.
//!
//! Invariants: the PoRep config (sector size, porep id, API version, features) always comes
//! from the input's registered proof, as filecoin-proofs does; a proof is the partition
//! proofs (192 bytes each) concatenated in partition order; bad input is an error naming
//! the file and the problem, never a panic.
#![forbid(unsafe_code)]

pub mod api;
pub mod c2;
pub mod error;
pub mod params;
pub mod seal;
pub mod verify;

pub use api::{C1Output, RegisteredSealProof, SectorInfo, SectorSize};
pub use c2::{C2Engine, C2Options, C2Output, C2Pending, C2Prover, C2Stages};
pub use error::FilecoinError;
pub use seal::{seal_sector, SealRequest, SealedSector};
pub use verify::{verify_seal, Verdict};

/// A seeded ChaCha20 rng: sector data, ids, randomness and development toxic waste all
/// come from one, so a run can be repeated from its seed.
pub fn rng_from_seed(seed: u64) -> rand_chacha::ChaCha20Rng {
    <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(seed)
}
