//! `CountingAlloc` installed as this test binary's global allocator: it counts what the
//! code does, and proves that the recycled paths (VecPool, Scratch, SlabPool leases)
//! allocate nothing once warm.

use std::time::Duration;

use arenaprove_arena::{CountingAlloc, Ledger, RegionConfig, Scratch, SlabPool, SlabPoolConfig, VecPool};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

#[test]
fn counts_this_threads_allocations() {
    let (v, d) = CountingAlloc::measure_thread(|| {
        let mut v: Vec<u64> = Vec::with_capacity(100);
        v.push(1);
        v
    });
    assert_eq!(d.allocs, 1);
    assert_eq!(d.bytes_allocated, 800);
    assert_eq!(d.deallocs, 0);
    let (_, d) = CountingAlloc::measure_thread(|| drop(v));
    assert_eq!((d.deallocs, d.bytes_freed), (1, 800));
    let (_, d) = CountingAlloc::measure_thread(|| {
        let mut v: Vec<u8> = Vec::with_capacity(16);
        v.extend(std::iter::repeat(0).take(1000));
        v
    });
    assert!(d.reallocs >= 1, "{d:?}");
    // Process-wide counters see at least this thread's calls.
    let g0 = ALLOC.snapshot();
    let b = Box::new([0u8; 4096]);
    let g1 = ALLOC.snapshot();
    drop(b);
    assert!(g1.since(&g0).allocs >= 1);
    assert!(g1.since(&g0).bytes_allocated >= 4096);
    assert!(ALLOC.live_bytes_peak() >= 4096);
}

#[test]
fn warm_recycled_paths_allocate_nothing() {
    // VecPool: after one warm-up round, take/fill/give cycles reuse the same buffers.
    let pool = VecPool::<(usize, u64)>::new();
    let round = |pool: &VecPool<(usize, u64)>| {
        let mut a = pool.take();
        let mut b = pool.take();
        a.extend((0..200).map(|i| (i, i as u64)));
        b.extend((0..50).map(|i| (i, 0)));
        pool.give(a);
        pool.give(b);
    };
    round(&pool);
    let ((), d) = CountingAlloc::measure_thread(|| {
        for _ in 0..1000 {
            round(&pool);
        }
    });
    assert_eq!(d.calls(), 0, "warm VecPool allocated: {d:?}");

    // Scratch: after the first unit the chunk is big enough.
    let mut s = Scratch::new();
    let unit = |s: &mut Scratch| {
        let xs = s.bump().alloc_slice_fill_with(5000, |i| i as u64);
        let sum: u64 = xs.iter().sum();
        s.reset();
        sum
    };
    unit(&mut s);
    let (sums, d) = CountingAlloc::measure_thread(|| (0..100).map(|_| unit(&mut s)).sum::<u64>());
    assert_eq!(sums, 100 * (0..5000).sum::<u64>());
    assert_eq!(d.calls(), 0, "warm Scratch allocated: {d:?}");

    // SlabPool: a lease and its handback allocate nothing.
    let ledger = Ledger::unlimited();
    let slabs =
        SlabPool::new(SlabPoolConfig::new("p", 4096, 2).with_region(RegionConfig::heap()), &ledger, None)
            .unwrap();
    drop(slabs.try_lease(4096).unwrap());
    let ((), d) = CountingAlloc::measure_thread(|| {
        for _ in 0..1000 {
            let a = slabs.try_lease(4096).unwrap();
            let b = slabs.lease(100, Duration::from_secs(1)).unwrap();
            drop((a, b));
        }
    });
    assert_eq!(d.calls(), 0, "lease/handback allocated: {d:?}");
    assert!(ledger.snapshot().balanced());
}
