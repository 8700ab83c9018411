//! The free list of a [`SlabPool`](crate::SlabPool): one bit per slab, set while the slab
//! is free.
//!
//! Handback is a single `fetch_or` on one word: wait-free, one cache line.
//! Taking a slab scans for a set bit from the lowest word and clears it with a CAS, so the
//! lowest-numbered free slab (the one most recently warm in cache and TLB) is reused first.
//!
//! Why not a queue: a bounded MPMC queue (crossbeam's `ArrayQueue`, or a `Mutex<Vec>`)
//! writes each handback into a separate small heap buffer. On the 2-core development VM
//! about 1% of those pushes stalled for 100-190 µs with no guest context switch and no page
//! fault, most likely the hypervisor write-protecting guest pages now and then and taking
//! the next write (`arenaprove probe-stalls` shows such stalls with no engine code at all,
//! and far fewer on huge-page-backed memory). With the bits here, a handback writes one word in the
//! pool's own region (after the last slab: pre-faulted, huge-page backed) and the ledger's
//! counters, and the per-slab handback p99 fell from up to 131 µs to 0.5-4 µs
//! (BENCHMARKS.md, "Handback stalls found and removed").

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

const BITS: usize = 64;

pub(crate) struct FreeMap {
    len: usize,
    words: NonNull<AtomicU64>,
}

// SAFETY: the words are only ever accessed through `&AtomicU64`.
unsafe impl Send for FreeMap {}
// SAFETY: as above.
unsafe impl Sync for FreeMap {}

/// What [`FreeMap::put`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AlreadyFree;

impl FreeMap {
    /// Bytes the words for `len` slabs take (a whole number of cache lines).
    pub(crate) fn bytes_for(len: usize) -> usize {
        (len.div_ceil(BITS) * 8).next_multiple_of(64)
    }

    /// A map of `len` slabs, all free, written into `at`.
    ///
    /// # Safety
    /// `at` is 8-byte aligned, valid for [`FreeMap::bytes_for`]`(len)` bytes, used by
    /// nothing else, and outlives the map.
    pub(crate) unsafe fn new_full_in(len: usize, at: NonNull<u8>) -> FreeMap {
        let words = at.cast::<AtomicU64>();
        for w in 0..len.div_ceil(BITS) {
            let n = len.saturating_sub(w * BITS).min(BITS);
            let full = if n == BITS { u64::MAX } else { (1u64 << n) - 1 };
            // SAFETY: w < len.div_ceil(64), inside the span the caller vouched for.
            unsafe { words.as_ptr().add(w).write(AtomicU64::new(full)) };
        }
        FreeMap { len, words }
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `new_full_in` initialised this many words, valid while the map lives.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr(), self.len.div_ceil(BITS)) }
    }

    /// Takes the lowest free slab, if any.
    pub(crate) fn take(&self) -> Option<u32> {
        for (w, word) in self.words().iter().enumerate() {
            let mut cur = word.load(Ordering::Acquire);
            while cur != 0 {
                let bit = cur.trailing_zeros() as usize;
                match word.compare_exchange_weak(
                    cur,
                    cur & !(1u64 << bit),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Some((w * BITS + bit) as u32),
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    /// Marks slab `index` free again. `Err` when it already was (a double handback).
    pub(crate) fn put(&self, index: u32) -> Result<(), AlreadyFree> {
        let index = index as usize;
        assert!(index < self.len, "slab index {index} out of range 0..{}", self.len);
        let bit = 1u64 << (index % BITS);
        let before = self.words()[index / BITS].fetch_or(bit, Ordering::AcqRel);
        if before & bit != 0 {
            Err(AlreadyFree)
        } else {
            Ok(())
        }
    }

    /// Free slabs right now (a snapshot; exact when nothing runs concurrently).
    pub(crate) fn count(&self) -> usize {
        self.words().iter().map(|w| w.load(Ordering::Acquire).count_ones() as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::sync::Arc;

    /// A map over heap words (the words outlive it: both are returned together).
    fn map_on_heap(len: usize) -> (Box<[u64]>, FreeMap) {
        let mut words = vec![0u64; FreeMap::bytes_for(len) / 8].into_boxed_slice();
        let at = NonNull::new(words.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: aligned, sized by bytes_for, and the box is kept alive with the map.
        let map = unsafe { FreeMap::new_full_in(len, at) };
        (words, map)
    }

    #[test]
    fn takes_lowest_first_and_reports_double_put() {
        for len in [1, 2, 63, 64, 65, 255, 256, 257, 1000] {
            let (_words, m) = map_on_heap(len);
            assert_eq!(m.count(), len, "len {len}");
            let taken: Vec<u32> = std::iter::from_fn(|| m.take()).collect();
            assert_eq!(taken, (0..len as u32).collect::<Vec<_>>(), "len {len}");
            assert_eq!(m.count(), 0);
            m.put(len as u32 - 1).unwrap();
            assert_eq!(m.put(len as u32 - 1), Err(AlreadyFree));
            assert_eq!(m.take(), Some(len as u32 - 1));
            assert_eq!(m.take(), None);
        }
    }

    #[test]
    fn concurrent_take_and_put_never_duplicate_a_slab() {
        let len = 300;
        let (_words, m) = map_on_heap(len);
        let m = Arc::new(m);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    let mut held = Vec::new();
                    for round in 0..20_000 {
                        if round % 3 != 2 {
                            if let Some(i) = m.take() {
                                held.push(i);
                            }
                        } else if let Some(i) = held.pop() {
                            m.put(i).expect("a held slab is not free");
                        }
                    }
                    held
                })
            })
            .collect();
        let mut all = BTreeSet::new();
        let mut held_total = 0;
        for t in threads {
            let held = t.join().unwrap();
            held_total += held.len();
            for i in held {
                assert!(all.insert(i), "slab {i} held by two threads");
            }
        }
        assert_eq!(m.count() + held_total, len);
    }
}
