//! [`Scratch`]: per-worker bump arenas, reset between units of work.
//!
//! A unit of work (one gadget, one chunk of a parallel loop) allocates its temporaries
//! from a [`Scratch`] and the worker resets it when the unit is done: one pointer move
//! instead of a `free` per temporary. After a few units the arena's chunk is as large as
//! the largest unit needs, and the steady state allocates nothing.
//!
//! Three ways to get one:
//! * own a [`Scratch`] (a worker loop that owns its state);
//! * [`ScratchSet`]: one slot per rayon worker, indexed by `rayon::current_thread_index()`,
//!   plus one slot shared by threads outside the pool;
//! * [`with_thread_scratch`]: a thread-local arena, reset by the caller between units.
//!
//! ## Sharp edges (bumpalo's)
//! * No `Drop` runs for values in the arena: put only plain data there, or drop them
//!   yourself.
//! * `reset` keeps only the largest chunk (and frees the others), so the first units may
//!   allocate; give a capacity up front ([`Scratch::with_capacity`]) to avoid that.

use std::cell::RefCell;
use std::sync::Mutex;

use crossbeam::utils::CachePadded;

/// A bump arena reset between units of work.
pub struct Scratch {
    bump: bumpalo::Bump,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { bump: bumpalo::Bump::new() }
    }

    /// An arena whose first chunk holds at least `bytes`.
    pub fn with_capacity(bytes: usize) -> Self {
        Scratch { bump: bumpalo::Bump::with_capacity(bytes) }
    }

    /// An arena that refuses (allocation fails: `try_alloc*` errors, `alloc*` panics)
    /// once its chunks would exceed `bytes_max` in all.
    pub fn with_limit(bytes_max: usize) -> Self {
        let bump = bumpalo::Bump::new();
        bump.set_allocation_limit(Some(bytes_max));
        Scratch { bump }
    }

    pub fn bump(&self) -> &bumpalo::Bump {
        &self.bump
    }

    /// Forgets everything allocated since the last reset (no `Drop` runs) and keeps the
    /// largest chunk for the next unit.
    pub fn reset(&mut self) {
        self.bump.reset();
    }

    /// Bytes of chunk memory this arena holds (including what is free in its chunks).
    pub fn allocated_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scratch({} bytes)", self.allocated_bytes())
    }
}

/// One [`Scratch`] per rayon worker, plus one for threads outside the pool.
///
/// Each slot sits behind its own (uncontended) mutex, so the set is `Sync` and safe even
/// when two rayon pools map workers onto the same index: they then take turns.
pub struct ScratchSet {
    slots: Box<[CachePadded<Mutex<Scratch>>]>,
}

impl ScratchSet {
    /// A set for `workers` rayon workers (at least one).
    pub fn new(workers: usize) -> Self {
        Self::with_capacity(workers, 0)
    }

    /// A set for the current rayon pool (`rayon::current_num_threads()`).
    pub fn for_current_pool() -> Self {
        Self::new(rayon::current_num_threads())
    }

    /// A set whose arenas each start with room for `bytes`.
    pub fn with_capacity(workers: usize, bytes: usize) -> Self {
        let slots = (0..workers.max(1) + 1)
            .map(|_| {
                CachePadded::new(Mutex::new(if bytes == 0 {
                    Scratch::new()
                } else {
                    Scratch::with_capacity(bytes)
                }))
            })
            .collect();
        ScratchSet { slots }
    }

    /// Workers this set has a slot for (one more slot serves outside threads).
    pub fn workers(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot index the calling thread uses.
    pub fn slot_index(&self) -> usize {
        let workers = self.workers();
        match rayon::current_thread_index() {
            Some(i) => i % workers,
            None => workers,
        }
    }

    /// Runs `f` with the calling worker's arena. The arena is *not* reset afterwards:
    /// reset it in `f` at the start or end of each unit of work.
    pub fn with<R>(&self, f: impl FnOnce(&mut Scratch) -> R) -> R {
        let mut g = self.slots[self.slot_index()].lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    /// Runs `f` with the calling worker's arena, then resets it.
    pub fn unit<R>(&self, f: impl FnOnce(&bumpalo::Bump) -> R) -> R {
        self.with(|s| {
            let r = f(s.bump());
            s.reset();
            r
        })
    }

    /// Resets every arena.
    pub fn reset_all(&mut self) {
        for s in self.slots.iter_mut() {
            s.get_mut().unwrap_or_else(|p| p.into_inner()).reset();
        }
    }

    /// Chunk bytes held by all arenas together.
    pub fn allocated_bytes(&self) -> usize {
        self.slots.iter().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).allocated_bytes()).sum()
    }
}

impl std::fmt::Debug for ScratchSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScratchSet({} workers)", self.workers())
    }
}

thread_local! {
    static THREAD_SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Runs `f` with this thread's own arena. Reset it (`s.reset()`) between units of work.
/// A nested call (from inside `f`) gets a fresh temporary arena instead of panicking.
pub fn with_thread_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    let mut f = Some(f);
    let r = THREAD_SCRATCH
        .try_with(|cell| cell.try_borrow_mut().ok().map(|mut s| (f.take().expect("called once"))(&mut s)));
    match r {
        Ok(Some(r)) => r,
        // Re-entered, or the thread is tearing down: use a temporary arena.
        _ => (f.take().expect("called once"))(&mut Scratch::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_reuses_the_chunk() {
        let mut s = Scratch::with_capacity(1 << 16);
        let first = s.bump().alloc_slice_fill_copy(1000, 7u64).as_ptr() as usize;
        let held = s.allocated_bytes();
        s.reset();
        let again = s.bump().alloc_slice_fill_copy(1000, 9u64);
        assert_eq!(again.as_ptr() as usize, first, "same memory after reset");
        assert!(again.iter().all(|x| *x == 9));
        assert_eq!(s.allocated_bytes(), held);
    }

    #[test]
    fn limit_refuses() {
        let s = Scratch::with_limit(4096);
        assert!(s.bump().try_alloc_slice_fill_copy(1 << 20, 0u8).is_err());
    }

    #[test]
    fn scratch_set_outside_and_inside_rayon() {
        let set = ScratchSet::new(2);
        assert_eq!(set.workers(), 2);
        assert_eq!(set.slot_index(), 2, "outside threads use the extra slot");
        let n = set.unit(|b| b.alloc_slice_fill_copy(10, 1u32).iter().sum::<u32>());
        assert_eq!(n, 10);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let total: u64 = pool.install(|| {
            use rayon::prelude::*;
            (0..64u64)
                .into_par_iter()
                .map(|i| {
                    assert!(set.slot_index() < 2);
                    set.unit(|b| b.alloc_slice_fill_copy(i as usize, 1u64).iter().sum::<u64>())
                })
                .sum()
        });
        assert_eq!(total, (0..64).sum::<u64>());
    }

    #[test]
    fn thread_scratch_nests() {
        let r = with_thread_scratch(|outer| {
            let a = outer.bump().alloc(5u32);
            let b = with_thread_scratch(|inner| *inner.bump().alloc(6u32));
            *a + b
        });
        assert_eq!(r, 11);
        with_thread_scratch(|s| s.reset());
    }
}
