//! # arenaprove-arena: memory that is reserved once and lent out by reset
//!
//! This crate owns every large buffer of the engine, the recycled small ones, and the
//! accounting that proves the steady state allocates nothing large. Its promise:
//!
//! * **Reserve at start.** A [`Region`] is one anonymous mapping, 2 MiB aligned, advised
//!   for transparent huge pages, pre-faulted in parallel and optionally `mlock`ed. A
//!   [`SlabPool`] carves a fixed number of equal slabs out of one region when it is built;
//!   after [`Ledger::freeze`] no region can be reserved any more (attempts fail with
//!   [`ArenaError::Frozen`] and are counted in `refused_after_freeze`).
//! * **Lend by guard, hand back by reset.** [`SlabPool::lease`] returns a [`Lease`];
//!   dropping the lease sets the slab's bit in a free bitmap kept in the pool's own region
//!   (one wait-free `fetch_or`): O(1), no `munmap`, no `free`, no `memset` (the `verify`
//!   feature poisons returned slabs).
//! * **Typed views.** [`SlabVec<T>`] is a fixed-capacity vector over a lease for
//!   [`Plain`] element types; exceeding capacity is an [`ArenaError::Capacity`], never a
//!   reallocation.
//! * **Small recycled storage.** [`VecPool`] recycles small `Vec`s (linear-combination
//!   terms) through per-thread home shards of lock-free queues, with limits on how many
//!   and how large; [`Scratch`] is a bump arena reset between units of work, one per
//!   rayon worker via [`ScratchSet`] or per thread via [`with_thread_scratch`].
//! * **Accounting.** The [`Ledger`] counts bytes reserved and leased, the high-water mark,
//!   leases, the handback latency histogram (p50/p99/max) and page faults (getrusage,
//!   also since the freeze). [`deinit_check`] is the shutdown check: which pools still
//!   have slabs out, and whether the ledger balances. [`CountingAlloc`] is a counting
//!   global allocator for tests and benches of every crate.
//!
//! ## Invariants
//! * A slab is lent to at most one [`Lease`] at a time; live leases never overlap in
//!   memory; every lease comes back exactly once (its `Drop`), and then
//!   `leases_total == handbacks_total` and `leases_out == 0` ([`LedgerSnapshot::balanced`]).
//! * A region's bytes are charged to the ledger before it is mapped and released only
//!   when it is unmapped; the sum never exceeds [`Ledger::limit_bytes`].
//! * Leasing, handing back, `VecPool::take/give` when warm, and `Scratch` units when warm
//!   allocate nothing (tests/count_alloc.rs proves it with [`CountingAlloc`]); after
//!   `freeze()` a lease/fill/return cycle takes no page fault (tests/steady_state.rs).
//!
//! ## Sharp edges
//! * Slab memory is never zeroed on handback: a new lease sees the previous tenant's
//!   bytes. [`SlabVec`] only exposes elements written through it, so safe code can never
//!   read them as `T`; raw byte access ([`Lease::bytes_mut`]) sees whatever is there.
//! * No `Drop` runs for elements of a [`SlabVec`] ([`Plain`] types have none), nor for
//!   values placed in a [`Scratch`] (bumpalo's rule).
//! * Dropping a [`SlabPool`] while leases are out is impossible by construction (every
//!   lease holds an `Arc` of its pool); dropping the *engine's* handle while leases are
//!   out is reported by [`deinit_check`], [`SlabPool::outstanding`] and the ledger.
//! * Page-fault counters are process-wide: other threads' faults count too.
//!
//! ## Testing
//! Unit and property tests use heap-backed regions ([`RegionConfig::heap`]) so they can
//! run under Miri (`cargo +nightly miri test -p arenaprove-arena`; Miri skips the
//! getrusage calls and runs few proptest cases). Miri is not installed on the development
//! machine (stable toolchain only), so that run has not been made here.
//!
//! `unsafe` is allowed in this crate (and in `cuda/`) only; every block says why it holds.

pub mod count_alloc;
pub mod error;
mod freemap;
pub mod ledger;
pub mod mapped;
pub mod plain;
pub mod region;
pub mod scratch;
pub mod slab;
pub mod slabvec;
pub mod vecpool;

/// The bump allocator [`Scratch`] is built on, re-exported so dependants use the same version.
pub use bumpalo;
pub use count_alloc::{AllocSnapshot, CountingAlloc};
pub use error::ArenaError;
pub use ledger::{Ledger, LedgerSnapshot};
pub use mapped::MappedFile;
pub use plain::Plain;
pub use region::{Region, RegionConfig, RegionHook, SharedHook};
pub use scratch::{with_thread_scratch, Scratch, ScratchSet};
pub use slab::{deinit_check, DeinitReport, Lease, OutstandingSlabs, SlabPool, SlabPoolConfig};
pub use slabvec::{map_in_place, AnyBits, SlabVec};
pub use vecpool::{PooledVec, VecPool, VecPoolConfig, VecPoolStats};

/// 2 MiB: the x86-64 huge page size; regions and slabs are aligned to it.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;
/// Alignment of every slab start (a cache line is enough for correctness; huge-page
/// alignment keeps slabs from sharing a huge page, so pinning and THP work per slab).
pub const SLAB_ALIGN_BYTES: usize = 4096;
