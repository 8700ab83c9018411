//! [`CountingAlloc`]: a global allocator that counts, for tests and benches.
//!
//! It wraps [`std::alloc::System`] and counts allocations, deallocations, reallocations
//! and bytes, process-wide (atomics) and per thread (const-initialised thread-locals: no
//! allocation, no destructor, so they are safe to touch from inside the allocator).
//!
//! Which process counts is decided per binary, at build time, by the one
//! `#[global_allocator]` static a binary may have: this crate installs nothing itself, so a
//! library that depends on it (the `arenaprove` facade, and so an embedder) never gets it.
//! Install it in a test or bench binary only; in this workspace those are test targets,
//! the criterion benches and `arenaprove-bench` (the `bench-*` commands), never
//! `arenaprove` itself (`prove`, `soak`, `serve`):
//!
//! ```ignore
//! use arenaprove_arena::count_alloc::CountingAlloc;
//! #[global_allocator]
//! static ALLOC: CountingAlloc = CountingAlloc::new();
//!
//! let before = ALLOC.snapshot();
//! work();
//! let d = ALLOC.snapshot().since(&before);
//! assert_eq!(d.allocs, 0, "the steady state allocates nothing");
//! // Only this thread's allocations (others may be running concurrently):
//! let (r, mine) = CountingAlloc::measure_thread(|| work());
//! ```
//!
//! Cost: a few relaxed atomic adds per call (plus one `fetch_max` for the peak), which
//! contend across threads; fine for tests and benches, not meant for production builds.
//! The process-wide counters see every thread, including the test harness's own.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of a [`CountingAlloc`] (or of one thread), at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocSnapshot {
    /// `alloc` + `alloc_zeroed` calls.
    pub allocs: u64,
    pub deallocs: u64,
    pub reallocs: u64,
    /// Bytes handed out (by `alloc*`, plus the new size of every `realloc`).
    pub bytes_allocated: u64,
    /// Bytes taken back (by `dealloc`, plus the old size of every `realloc`).
    pub bytes_freed: u64,
}

impl AllocSnapshot {
    /// What happened between `earlier` and `self` (counters only grow, so this is a
    /// plain difference; saturating in case snapshots were swapped).
    pub fn since(&self, earlier: &AllocSnapshot) -> AllocSnapshot {
        AllocSnapshot {
            allocs: self.allocs.saturating_sub(earlier.allocs),
            deallocs: self.deallocs.saturating_sub(earlier.deallocs),
            reallocs: self.reallocs.saturating_sub(earlier.reallocs),
            bytes_allocated: self.bytes_allocated.saturating_sub(earlier.bytes_allocated),
            bytes_freed: self.bytes_freed.saturating_sub(earlier.bytes_freed),
        }
    }

    /// Calls of any kind (allocs + deallocs + reallocs).
    pub fn calls(&self) -> u64 {
        self.allocs + self.deallocs + self.reallocs
    }

    /// Bytes allocated minus bytes freed (negative when more was freed).
    pub fn net_bytes(&self) -> i64 {
        self.bytes_allocated as i64 - self.bytes_freed as i64
    }
}

/// A counting wrapper around the system allocator. See the module docs.
#[derive(Debug)]
pub struct CountingAlloc {
    allocs: AtomicU64,
    deallocs: AtomicU64,
    reallocs: AtomicU64,
    bytes_allocated: AtomicU64,
    bytes_freed: AtomicU64,
    live_bytes: AtomicU64,
    live_bytes_peak: AtomicU64,
}

thread_local! {
    // Const-initialised, no Drop: access never allocates and never registers a destructor.
    static THREAD_COUNTS: Cell<AllocSnapshot> = const {
        Cell::new(AllocSnapshot { allocs: 0, deallocs: 0, reallocs: 0, bytes_allocated: 0, bytes_freed: 0 })
    };
}

fn thread_add(f: impl FnOnce(&mut AllocSnapshot)) {
    // try_with: during thread teardown the slot may be gone; then the call is not counted
    // per thread (the process-wide counters still see it).
    let _ = THREAD_COUNTS.try_with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

impl CountingAlloc {
    /// Counting from the first call.
    pub const fn new() -> Self {
        CountingAlloc {
            allocs: AtomicU64::new(0),
            deallocs: AtomicU64::new(0),
            reallocs: AtomicU64::new(0),
            bytes_allocated: AtomicU64::new(0),
            bytes_freed: AtomicU64::new(0),
            live_bytes: AtomicU64::new(0),
            live_bytes_peak: AtomicU64::new(0),
        }
    }

    /// Process-wide counters now.
    pub fn snapshot(&self) -> AllocSnapshot {
        AllocSnapshot {
            allocs: self.allocs.load(Ordering::Relaxed),
            deallocs: self.deallocs.load(Ordering::Relaxed),
            reallocs: self.reallocs.load(Ordering::Relaxed),
            bytes_allocated: self.bytes_allocated.load(Ordering::Relaxed),
            bytes_freed: self.bytes_freed.load(Ordering::Relaxed),
        }
    }

    /// Bytes allocated and not yet freed, through this allocator, process-wide.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes.load(Ordering::Relaxed)
    }

    /// Highest `live_bytes` seen since start or since the last [`Self::reset_peak`].
    pub fn live_bytes_peak(&self) -> u64 {
        self.live_bytes_peak.load(Ordering::Relaxed)
    }

    /// Restarts the peak from the current live bytes.
    pub fn reset_peak(&self) {
        self.live_bytes_peak.store(self.live_bytes(), Ordering::Relaxed);
    }

    /// The calling thread's counters now: calls made on this thread through any
    /// `CountingAlloc` (all zero if none is installed or called).
    pub fn thread_snapshot() -> AllocSnapshot {
        THREAD_COUNTS.try_with(Cell::get).unwrap_or_default()
    }

    /// Runs `f` and returns what the calling thread allocated meanwhile (work `f` hands to
    /// other threads is not included).
    pub fn measure_thread<R>(f: impl FnOnce() -> R) -> (R, AllocSnapshot) {
        let before = Self::thread_snapshot();
        let r = f();
        (r, Self::thread_snapshot().since(&before))
    }

    /// `live_bytes -= bytes`, saturating (a block freed here that was not counted in: one
    /// allocated through another `CountingAlloc` value, as the unit tests do).
    fn live_sub(&self, bytes: u64) {
        let _ = self
            .live_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(bytes)));
    }

    fn on_alloc(&self, bytes: usize) {
        let bytes = bytes as u64;
        self.allocs.fetch_add(1, Ordering::Relaxed);
        self.bytes_allocated.fetch_add(bytes, Ordering::Relaxed);
        let live = self.live_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.live_bytes_peak.fetch_max(live, Ordering::Relaxed);
        thread_add(|t| {
            t.allocs += 1;
            t.bytes_allocated += bytes;
        });
    }

    fn on_dealloc(&self, bytes: usize) {
        let bytes = bytes as u64;
        self.deallocs.fetch_add(1, Ordering::Relaxed);
        self.bytes_freed.fetch_add(bytes, Ordering::Relaxed);
        self.live_sub(bytes);
        thread_add(|t| {
            t.deallocs += 1;
            t.bytes_freed += bytes;
        });
    }

    fn on_realloc(&self, old_bytes: usize, new_bytes: usize) {
        let (old_bytes, new_bytes) = (old_bytes as u64, new_bytes as u64);
        self.reallocs.fetch_add(1, Ordering::Relaxed);
        self.bytes_allocated.fetch_add(new_bytes, Ordering::Relaxed);
        self.bytes_freed.fetch_add(old_bytes, Ordering::Relaxed);
        if new_bytes >= old_bytes {
            let live =
                self.live_bytes.fetch_add(new_bytes - old_bytes, Ordering::Relaxed) + new_bytes - old_bytes;
            self.live_bytes_peak.fetch_max(live, Ordering::Relaxed);
        } else {
            self.live_sub(old_bytes - new_bytes);
        }
        thread_add(|t| {
            t.reallocs += 1;
            t.bytes_allocated += new_bytes;
            t.bytes_freed += old_bytes;
        });
    }
}

impl Default for CountingAlloc {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// System's guarantees are ours; the counting touches only atomics and const-initialised
// thread-locals, which never allocate (no recursion into the allocator) and never unwind.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract (non-zero size).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            self.on_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            self.on_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (i.e. System) handed out, with
        // its layout.
        unsafe { System.dealloc(ptr, layout) };
        self.on_dealloc(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract; the block came from
        // System through this wrapper.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.on_realloc(layout.size(), new_size);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_delta() {
        let a = AllocSnapshot { allocs: 5, deallocs: 3, reallocs: 1, bytes_allocated: 100, bytes_freed: 40 };
        let b = AllocSnapshot { allocs: 7, deallocs: 6, reallocs: 1, bytes_allocated: 180, bytes_freed: 140 };
        let d = b.since(&a);
        assert_eq!(
            d,
            AllocSnapshot { allocs: 2, deallocs: 3, reallocs: 0, bytes_allocated: 80, bytes_freed: 100 }
        );
        assert_eq!(d.calls(), 5);
        assert_eq!(d.net_bytes(), -20);
        assert_eq!(a.since(&b), AllocSnapshot::default());
    }

    #[test]
    fn counts_direct_calls() {
        // Not installed as the global allocator here: call it directly.
        let c = CountingAlloc::new();
        let layout = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: non-zero size; the block is freed below with the same layout.
        unsafe {
            let p = c.alloc(layout);
            assert!(!p.is_null());
            let p = c.realloc(p, layout, 128);
            assert!(!p.is_null());
            c.dealloc(p, Layout::from_size_align(128, 8).unwrap());
        }
        let s = c.snapshot();
        assert_eq!((s.allocs, s.reallocs, s.deallocs), (1, 1, 1));
        assert_eq!(s.bytes_allocated, 64 + 128);
        assert_eq!(s.bytes_freed, 64 + 128);
        assert_eq!(c.live_bytes(), 0);
        assert_eq!(c.live_bytes_peak(), 128);
    }
}
