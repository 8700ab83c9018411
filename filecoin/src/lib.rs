//! # arenaprove-filecoin: Filecoin PoRep commit phase 2 on the arenaprove engine
//!
//! Owns the path from what a storage provider holds to what the chain verifies:
//! * [`api`]: the commit-phase-1 (C1) output in filecoin-proofs-api's JSON format (and
//!   filecoin-proofs' plain one), `sector.json`, registered proofs and their PoRep config;
//! * [`seal`]: sealing a real test sector with filecoin-proofs 19.1.0 up to C1;
//! * [`params`]: the Groth16 parameter cache filecoin-proofs reads (names, presence) and
//!   insecure development parameters from the engine's generator;
//! * [`circuit`]: one StackedDrg circuit per partition, built exactly as
//!   `StackedCompound::circuit_proofs` builds it, and its public inputs from
//!   `StackedCompound::generate_public_inputs` (what `get_seal_inputs` returns);
//! * [`c2`]: the one C2 driver, [`C2Engine`]: a sector's partitions synthesized into
//!   `ArenaAssignment` and proven on the long-lived engine (one slot is still the engine),
//!   with cancellation, the public-inputs check and verified proofs only;
//! * [`pce`]: precompiled constraints of the C2 circuit, recorded once per sector size
//!   beside the parameters and mapped by later runs (the default synthesis);
//! * [`verify`]: filecoin-proofs' own `verify_seal`;
//! * [`random`]: C1 outputs of the real shape with random values (any size, no sealing),
//!   for synthesis identity and timing only;
//! * [`shape`]: the shape of one partition circuit for every network sector size, 2 KiB
//!   to 64 GiB (counted on the blank circuit, cached as JSON), for memory plans.
//!
//! Invariants: the PoRep config (sector size, porep id, API version, features) always comes
//! from the input's registered proof, as filecoin-proofs does; a proof is the partition
//! proofs (192 bytes each) concatenated in partition order, each verified before it is
//! handed out; parameters are loaded once per [`C2Circuit`] and checked against the
//! circuit's shape at load; before proving, the public
//! inputs the circuit computes from the vanilla proofs must equal those the verifier
//! derives from the C1's seed, replica id and commitments (a tampered C1 fails in
//! seconds, not after a proof); bad input is an error naming the file and the problem,
//! never a panic.
//!
//! Sharp edges:
//! * storage-proofs-core reads `FIL_PROOFS_PARAMETER_CACHE` once per process, at first use,
//!   and filecoin-proofs' own `verify_seal` and `seal_commit_phase2` read parameters only
//!   from there. This crate's own loading takes the directory explicitly
//!   ([`params::ParamFiles::in_dir`]), so a prover never needs the variable.
//! * Development parameters are insecure (known toxic waste). They carry the official file
//!   names, so never put them in a cache that production verifies from; official files
//!   load unchanged. `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` must stay off for development
//!   files (their digests are not in the manifest).
//! * Tree shapes: 2 KiB, 8 MiB and 512 MiB (filecoin-proofs' `SectorShapeBase`), 32 GiB
//!   (`SectorShapeSub8`) and 64 GiB (`SectorShapeTop2`), dispatched once in [`tree`];
//!   non-interactive PoRep is refused with a clear error (see [`api`]).
//!
//! Testing: `tests/api.rs` (formats, sealing; seconds), `tests/shape.rs` (the 2 KiB shape
//! from the blank circuit and its cache; 32 GiB against cuzk's figures, `#[ignore]`) and
//! `tests/c2.rs` (2 KiB end to end against `verify_seal`, cancellation, typed errors). The c2 tests generate 2 KiB development parameters once into
//! `<target>/tmp/filecoin-params` (1.1 GB; a few minutes on 2 cores) and reuse them in
//! later runs. Heavier checks (8 MiB, an unchecked proof of a tampered C1) are `#[ignore]`:
//! `cargo test --release -p arenaprove-filecoin --test c2 -- --ignored`.
#![forbid(unsafe_code)]

pub mod api;
pub mod c2;
mod challenge;
pub mod circuit;
pub mod error;
pub mod params;
pub mod pce;
pub mod post;
pub mod random;
pub mod request_file;
pub mod seal;
mod sha_witness;
pub mod shape;
pub mod snap;
pub mod tree;
pub mod verify;

pub use api::{C1Output, RegisteredSealProof, SectorInfo, SectorSize};
pub use c2::{
    C2Cancel, C2Circuit, C2Engine, C2Output, C2Pending, C2Request, C2Stages, Circuits, LoadOptions,
    SubmitOptions,
};
pub use error::FilecoinError;
pub use seal::{seal_sector, SealRequest, SealedSector};
pub use shape::{porep_shape, CachedShape, PoRepShape};
pub use verify::{verify_seal, Verdict};

/// A seeded ChaCha20 rng: sector data, ids, randomness and development toxic waste all
/// come from one, so a run can be repeated from its seed.
pub fn rng_from_seed(seed: u64) -> rand_chacha::ChaCha20Rng {
    <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(seed)
}
