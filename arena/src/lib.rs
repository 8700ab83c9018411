//! # arenaprove-arena: memory that is reserved once and lent out by reset
//!
//! This crate owns every large buffer of the engine. Its promise:
//!
//! * **Reserve at start.** A [`Region`] is one anonymous mapping, 2 MiB aligned, advised
//!   for transparent huge pages, pre-faulted in parallel and optionally `mlock`ed. A
//!   [`SlabPool`] carves a fixed number of equal slabs out of one region when it is built;
//!   after [`Ledger::freeze`] no region can be reserved any more (attempts fail and are
//!   counted).
//! * **Lend by guard, hand back by reset.** [`SlabPool::lease`] returns a [`Lease`];
//!   dropping the lease pushes the slab's index back on a lock-free queue: O(1), no
//!   `munmap`, no `free`, no `memset` (the `verify` feature poisons returned slabs).
//! * **Typed views.** [`SlabVec<T>`] is a fixed-capacity vector over a lease for
//!   [`Plain`] element types; exceeding capacity is an error, never a reallocation.
//! * **Small recycled storage.** [`VecPool`] recycles small `Vec`s (linear-combination
//!   terms); [`Scratch`] is a per-worker bump arena reset between units of work.
//! * **Accounting.** The [`Ledger`] counts bytes reserved and leased, the high-water mark,
//!   the handback latency histogram and page faults.
//!
//! ## Sharp edges
//! * Slab memory is never zeroed on handback: a new lease sees the previous tenant's
//!   bytes. [`SlabVec`] only exposes elements written through it, so safe code can never
//!   read them as `T`; raw byte access ([`Lease::bytes_mut`]) sees whatever is there.
//! * No `Drop` runs for elements of a [`SlabVec`]: [`Plain`] types have none.
//! * Dropping a [`SlabPool`] while leases are out is impossible by construction (every
//!   lease holds an `Arc` of its pool); dropping the *engine's* handle while leases are
//!   out is reported by [`SlabPool::outstanding`] and by the ledger.
//!
//! `unsafe` is allowed in this crate (and in `cuda/`) only; every block says why it holds.

pub mod count_alloc;
pub mod error;
pub mod ledger;
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
pub use plain::Plain;
pub use region::{Region, RegionConfig, RegionHook};
pub use scratch::{with_thread_scratch, Scratch, ScratchSet};
pub use slab::{deinit_check, DeinitReport, Lease, OutstandingSlabs, SlabPool, SlabPoolConfig};
pub use slabvec::SlabVec;
pub use vecpool::{PooledVec, VecPool, VecPoolConfig, VecPoolStats};

/// 2 MiB: the x86-64 huge page size; regions and slabs are aligned to it.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;
/// Alignment of every slab start (a cache line is enough for correctness; huge-page
/// alignment keeps slabs from sharing a huge page, so pinning and THP work per slab).
pub const SLAB_ALIGN_BYTES: usize = 4096;
