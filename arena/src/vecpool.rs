//! [`VecPool<T>`]: recycled small `Vec`s for variable-size temporaries (linear-combination
//! terms and the like).
//!
//! `take` returns an empty `Vec` whose capacity is kept from an earlier use; `give` clears
//! a `Vec` and keeps it for the next `take`. [`VecPool::take_guard`] returns a
//! [`PooledVec`] that gives itself back on `Drop`.
//!
//! ## Design
//! The free list is split into shards, each a bounded lock-free queue (crossbeam
//! `ArrayQueue`). Every thread has a home shard (assigned round-robin the first time the
//! thread touches any pool), so threads that take and give on their own shard never
//! contend: there is no global lock, and the hot path is one `pop` or one `push`. A `take`
//! that finds its home shard empty steals from the other shards before allocating.
//!
//! ## Limits
//! * At most [`VecPoolConfig::keep_max`] vectors are kept (split evenly over the shards);
//!   a `give` beyond that drops the vector.
//! * A vector whose capacity exceeds [`VecPoolConfig::capacity_bytes_max`] is dropped on
//!   `give`, so one outlier cannot pin memory. The memory a pool can pin is therefore at
//!   most `keep_max * capacity_bytes_max` (the default: 1024 x 256 KiB = 256 MiB).
//!
//! Counters (kept per shard, summed by [`VecPool::stats`]) say how often a `take` was
//! served from the pool and why vectors were dropped.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam::queue::ArrayQueue;
use crossbeam::utils::CachePadded;

/// Default limit on vectors kept by one pool.
pub const VEC_POOL_KEEP_MAX: usize = 1024;
/// Default limit on the capacity (in bytes) of a vector the pool keeps.
pub const VEC_POOL_CAPACITY_BYTES_MAX: usize = 256 << 10;
/// Limit on shards per pool (a power of two; more shards than cores buys nothing).
pub const VEC_POOL_SHARDS_MAX: usize = 64;

/// Limits of a [`VecPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VecPoolConfig {
    /// Vectors kept in all (rounded up to a multiple of the shard count).
    pub keep_max: usize,
    /// A given-back vector whose `capacity() * size_of::<T>()` exceeds this is dropped.
    pub capacity_bytes_max: usize,
    /// Shards (rounded up to a power of two, at most [`VEC_POOL_SHARDS_MAX`]); 0 picks
    /// one per available core.
    pub shards: usize,
}

impl Default for VecPoolConfig {
    fn default() -> Self {
        VecPoolConfig {
            keep_max: VEC_POOL_KEEP_MAX,
            capacity_bytes_max: VEC_POOL_CAPACITY_BYTES_MAX,
            shards: 0,
        }
    }
}

/// Counters of a [`VecPool`] (sums over its shards; a snapshot, not atomic as a whole).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VecPoolStats {
    /// `take`s served by a kept vector.
    pub hits: u64,
    /// `take`s that had to return a new, empty vector.
    pub misses: u64,
    /// `give`s that kept the vector.
    pub kept: u64,
    /// `give`s dropped because the capacity exceeded `capacity_bytes_max`.
    pub dropped_oversized: u64,
    /// `give`s dropped because the pool already kept `keep_max` vectors.
    pub dropped_full: u64,
}

#[derive(Default)]
struct ShardCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    kept: AtomicU64,
    dropped_oversized: AtomicU64,
    dropped_full: AtomicU64,
}

struct Shard<T> {
    free: ArrayQueue<Vec<T>>,
    counters: ShardCounters,
}

/// Recycled `Vec`s; share it by reference (`&VecPool<T>` is `Sync` when `T: Send`).
pub struct VecPool<T> {
    shards: Box<[CachePadded<Shard<T>>]>,
    /// `shards.len() - 1` (the shard count is a power of two).
    shard_mask: usize,
    capacity_bytes_max: usize,
}

/// Round-robin source of home shards for threads.
static NEXT_THREAD_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // A const-initialised Cell: no allocation, no destructor.
    static THREAD_SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// This thread's slot (the same for every pool; masked to a shard index by each pool).
fn thread_slot() -> usize {
    THREAD_SLOT
        .try_with(|s| {
            let mut v = s.get();
            if v == usize::MAX {
                v = NEXT_THREAD_SLOT.fetch_add(1, Ordering::Relaxed);
                s.set(v);
            }
            v
        })
        // During thread teardown the slot is gone: any shard is correct, 0 will do.
        .unwrap_or(0)
}

impl<T> VecPool<T> {
    /// A pool with the default limits ([`VecPoolConfig::default`]).
    pub fn new() -> Self {
        Self::with_config(VecPoolConfig::default())
    }

    /// A pool with the given limits. `keep_max == 0` makes a pool that keeps nothing
    /// (every `take` allocates); that is allowed, for A/B measurements.
    pub fn with_config(cfg: VecPoolConfig) -> Self {
        let shards_wanted = if cfg.shards == 0 {
            // Read once per process: every ShapeCs and assignment makes a pool, and
            // available_parallelism reads cgroup files each time.
            static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
            *CPUS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
        } else {
            cfg.shards
        };
        let shard_count = shards_wanted.clamp(1, VEC_POOL_SHARDS_MAX).next_power_of_two();
        // ArrayQueue needs a capacity of at least 1; a keep_max of 0 is enforced in `give`.
        let per_shard = cfg.keep_max.div_ceil(shard_count).max(1);
        let shards: Box<[CachePadded<Shard<T>>]> = (0..shard_count)
            .map(|_| {
                CachePadded::new(Shard {
                    free: ArrayQueue::new(per_shard),
                    counters: ShardCounters::default(),
                })
            })
            .collect();
        let capacity_bytes_max = if cfg.keep_max == 0 { 0 } else { cfg.capacity_bytes_max };
        debug_assert!(shards.len().is_power_of_two());
        VecPool { shard_mask: shards.len() - 1, shards, capacity_bytes_max }
    }

    /// Number of shards (a power of two).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Largest capacity, in bytes, of a vector this pool keeps.
    pub fn capacity_bytes_max(&self) -> usize {
        self.capacity_bytes_max
    }

    /// Vectors kept right now (a snapshot).
    pub fn kept_count(&self) -> usize {
        self.shards.iter().map(|s| s.free.len()).sum()
    }

    /// Most vectors this pool keeps at once.
    pub fn keep_max(&self) -> usize {
        if self.capacity_bytes_max == 0 {
            return 0;
        }
        self.shards.iter().map(|s| s.free.capacity()).sum()
    }

    fn home(&self) -> usize {
        thread_slot() & self.shard_mask
    }

    /// An empty vector, with the capacity of an earlier one when the pool has one.
    #[inline]
    pub fn take(&self) -> Vec<T> {
        let home = self.home();
        let shard = &self.shards[home];
        if let Some(v) = shard.free.pop() {
            debug_assert!(v.is_empty(), "VecPool: a kept vector was not cleared");
            shard.counters.hits.fetch_add(1, Ordering::Relaxed);
            return v;
        }
        // Steal from the other shards before allocating.
        for step in 1..self.shards.len() {
            if let Some(v) = self.shards[(home + step) & self.shard_mask].free.pop() {
                shard.counters.hits.fetch_add(1, Ordering::Relaxed);
                return v;
            }
        }
        shard.counters.misses.fetch_add(1, Ordering::Relaxed);
        Vec::new()
    }

    /// An empty vector with room for at least `capacity` elements.
    pub fn take_with_capacity(&self, capacity: usize) -> Vec<T> {
        let mut v = self.take();
        v.reserve(capacity);
        v
    }

    /// Clears `v` (running its elements' `Drop`) and keeps it for a later `take`, unless it
    /// is oversized or the pool is full, in which case it is dropped. Vectors that never
    /// allocated are not worth keeping and are dropped too.
    #[inline]
    pub fn give(&self, mut v: Vec<T>) {
        let shard = &self.shards[self.home()];
        let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
        if v.capacity() == 0 {
            return;
        }
        if bytes > self.capacity_bytes_max {
            shard.counters.dropped_oversized.fetch_add(1, Ordering::Relaxed);
            return;
        }
        v.clear();
        match shard.free.push(v) {
            Ok(()) => {
                shard.counters.kept.fetch_add(1, Ordering::Relaxed);
            }
            Err(v) => {
                // Home shard full: try the others once before dropping.
                let home = self.home();
                let mut v = v;
                for step in 1..self.shards.len() {
                    match self.shards[(home + step) & self.shard_mask].free.push(v) {
                        Ok(()) => {
                            shard.counters.kept.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                        Err(back) => v = back,
                    }
                }
                shard.counters.dropped_full.fetch_add(1, Ordering::Relaxed);
                drop(v);
            }
        }
    }

    /// An empty vector that gives itself back to this pool when dropped.
    pub fn take_guard(&self) -> PooledVec<'_, T> {
        PooledVec { vec: self.take(), pool: self }
    }

    /// Drops every kept vector (returns how many).
    pub fn clear(&self) -> usize {
        let mut n = 0;
        for s in self.shards.iter() {
            while s.free.pop().is_some() {
                n += 1;
            }
        }
        n
    }

    pub fn stats(&self) -> VecPoolStats {
        let mut st = VecPoolStats::default();
        for s in self.shards.iter() {
            let c = &s.counters;
            st.hits += c.hits.load(Ordering::Relaxed);
            st.misses += c.misses.load(Ordering::Relaxed);
            st.kept += c.kept.load(Ordering::Relaxed);
            st.dropped_oversized += c.dropped_oversized.load(Ordering::Relaxed);
            st.dropped_full += c.dropped_full.load(Ordering::Relaxed);
        }
        st
    }
}

impl<T> Default for VecPool<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for VecPool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VecPool")
            .field("shards", &self.shards.len())
            .field("kept", &self.kept_count())
            .field("capacity_bytes_max", &self.capacity_bytes_max)
            .finish()
    }
}

/// A vector from a [`VecPool`] that gives itself back when dropped. Derefs to `Vec<T>`.
pub struct PooledVec<'p, T> {
    vec: Vec<T>,
    pool: &'p VecPool<T>,
}

impl<T> PooledVec<'_, T> {
    /// Keeps the vector for good (it will not go back to the pool).
    pub fn into_inner(mut self) -> Vec<T> {
        std::mem::take(&mut self.vec)
    }
}

impl<T> Deref for PooledVec<'_, T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.vec
    }
}

impl<T> DerefMut for PooledVec<'_, T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.vec
    }
}

impl<T> Drop for PooledVec<'_, T> {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.vec));
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for PooledVec<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.vec.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_give_keeps_capacity_and_clears() {
        let pool = VecPool::<u64>::with_config(VecPoolConfig { shards: 1, ..Default::default() });
        let mut v = pool.take();
        assert_eq!(v.capacity(), 0);
        v.extend(0..100);
        let cap = v.capacity();
        let ptr = v.as_ptr();
        pool.give(v);
        assert_eq!(pool.kept_count(), 1);
        let w = pool.take();
        assert!(w.is_empty());
        assert_eq!(w.capacity(), cap);
        assert_eq!(w.as_ptr(), ptr, "the same buffer came back");
        let st = pool.stats();
        assert_eq!((st.hits, st.misses, st.kept), (1, 1, 1));
    }

    #[test]
    fn oversized_and_full_are_dropped() {
        let pool =
            VecPool::<u64>::with_config(VecPoolConfig { keep_max: 2, capacity_bytes_max: 64, shards: 1 });
        pool.give(Vec::with_capacity(9)); // 72 bytes > 64
        assert_eq!(pool.stats().dropped_oversized, 1);
        pool.give(Vec::with_capacity(8));
        pool.give(Vec::with_capacity(8));
        pool.give(Vec::with_capacity(8));
        assert_eq!(pool.kept_count(), 2);
        assert_eq!(pool.stats().dropped_full, 1);
        assert_eq!(pool.clear(), 2);
        assert_eq!(pool.kept_count(), 0);
    }

    #[test]
    fn keep_nothing_pool() {
        let pool = VecPool::<u8>::with_config(VecPoolConfig { keep_max: 0, ..Default::default() });
        pool.give(vec![1, 2, 3]);
        assert_eq!(pool.kept_count(), 0);
        assert_eq!(pool.keep_max(), 0);
    }

    #[test]
    fn guard_gives_back_on_drop_and_runs_element_drops() {
        use std::rc::Rc;
        let pool = VecPool::<Rc<()>>::with_config(VecPoolConfig { shards: 1, ..Default::default() });
        let marker = Rc::new(());
        {
            let mut g = pool.take_guard();
            g.push(marker.clone());
            g.push(marker.clone());
            assert_eq!(Rc::strong_count(&marker), 3);
        }
        assert_eq!(Rc::strong_count(&marker), 1, "elements dropped on give");
        assert_eq!(pool.kept_count(), 1);
        let g = pool.take_guard();
        let v = g.into_inner();
        assert!(v.capacity() >= 2);
        assert_eq!(pool.kept_count(), 0);
    }

    #[test]
    fn steals_from_other_shards() {
        let pool =
            VecPool::<u32>::with_config(VecPoolConfig { keep_max: 64, shards: 4, ..Default::default() });
        assert_eq!(pool.shard_count(), 4);
        // Give on another thread (likely another home shard), take here.
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..8 {
                    pool.give(Vec::with_capacity(4));
                }
            });
        });
        for _ in 0..8 {
            assert!(pool.take().capacity() >= 4);
        }
        assert_eq!(pool.stats().misses, 0);
    }

    #[test]
    fn many_threads() {
        let pool = VecPool::<u64>::new();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let pool = &pool;
                s.spawn(move || {
                    for i in 0..(if cfg!(miri) { 20 } else { 2000 }) {
                        let mut v = pool.take();
                        assert!(v.is_empty());
                        v.extend(0..(i % 17 + t));
                        pool.give(v);
                    }
                });
            }
        });
        let st = pool.stats();
        assert!(st.hits + st.misses > 0);
        assert!(pool.kept_count() <= pool.keep_max());
    }
}
