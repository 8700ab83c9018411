//! Bad use gets a clear error naming the limit: a lease larger than a slab, a pool larger
//! than the memory limit, a SlabVec pushed past capacity, a lease timing out, a reserve
//! after freeze (refused and counted), and nonsense configurations.

use std::time::{Duration, Instant};

use arenaprove_arena::{
    deinit_check, ArenaError, Ledger, Region, RegionConfig, SlabPool, SlabPoolConfig, SlabVec,
    HUGE_PAGE_BYTES,
};

fn heap_pool(name: &str, slab_bytes: usize, slab_count: usize) -> SlabPoolConfig {
    SlabPoolConfig::new(name, slab_bytes, slab_count).with_region(RegionConfig::heap())
}

#[test]
fn lease_larger_than_slab() {
    let ledger = Ledger::unlimited();
    let pool = SlabPool::new(heap_pool("abc", 1024, 2), &ledger, None).unwrap();
    let e = pool.try_lease(1025).unwrap_err();
    assert_eq!(e, ArenaError::LeaseTooLarge { pool: "abc".into(), requested_bytes: 1025, slab_bytes: 1024 });
    let msg = e.to_string();
    assert!(msg.contains("'abc'") && msg.contains("1025") && msg.contains("1024"), "{msg}");
    // The blocking form refuses at once too (it can never fit), without waiting.
    let t0 = Instant::now();
    assert!(matches!(pool.lease(4096, Duration::from_secs(60)), Err(ArenaError::LeaseTooLarge { .. })));
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert_eq!(ledger.snapshot().leases_total, 0, "a refused lease is not counted as a lease");
}

#[test]
fn pool_larger_than_memory_limit() {
    let limit = 8 * HUGE_PAGE_BYTES;
    let ledger = Ledger::new(limit);
    // Limit 16 MiB: a pool of 3 x 4 MiB slabs fits (14 MiB: the free map after the slabs
    // takes one more huge page); 2 x 4 MiB more (10 MiB) would make 24 MiB and is refused.
    let ok = SlabPool::new(heap_pool("small", 4 << 20, 3), &ledger, None).unwrap();
    let e = SlabPool::new(heap_pool("big", 4 << 20, 2), &ledger, None).unwrap_err();
    match &e {
        ArenaError::OverLimit { what, requested_bytes, reserved_bytes, limit_bytes } => {
            assert_eq!(what, "big");
            assert_eq!(*requested_bytes, 10 << 20);
            assert_eq!(*reserved_bytes, 14 << 20);
            assert_eq!(*limit_bytes, limit);
        }
        other => panic!("expected OverLimit, got {other:?}"),
    }
    assert!(e.to_string().contains("memory limit"), "{e}");
    // The refused reservation left the ledger as it was.
    let snap = ledger.snapshot();
    assert_eq!((snap.reserved_bytes, snap.regions), (14 << 20, 1));
    drop(ok);
    assert_eq!(ledger.snapshot().reserved_bytes, 0, "dropping the pool releases its region");
    // A pool that can never fit even an empty ledger.
    let e = SlabPool::new(heap_pool("huge", 1 << 20, 100), &Ledger::new(1 << 20), None).unwrap_err();
    assert!(matches!(e, ArenaError::OverLimit { .. }), "{e}");
}

#[test]
fn slabvec_past_capacity() {
    let pool = SlabPool::new(heap_pool("vec", 64, 1), &Ledger::unlimited(), None).unwrap();
    let mut v = SlabVec::<u64>::new(pool.try_lease(64).unwrap());
    for i in 0..8 {
        v.push(i).unwrap();
    }
    let e = v.push(8).unwrap_err();
    assert_eq!(e, ArenaError::Capacity { pool: "vec".into(), capacity: 8, requested: 9 });
    assert!(e.to_string().contains("full"), "{e}");
    assert_eq!(v.len(), 8);
    assert!(v.extend_from_slice(&[1, 2]).is_err());
    assert!(v.resize(9, 0).is_err());
    assert!(v.extend_with(1, |_| 0).is_err());
    assert!(v.extend(std::iter::once(3)).is_err());
    assert!(matches!(v.extend_fill(usize::MAX, 0), Err(ArenaError::Capacity { .. })));
    assert_eq!(v.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn lease_times_out() {
    let pool = SlabPool::new(heap_pool("one", 128, 1), &Ledger::unlimited(), None).unwrap();
    let held = pool.try_lease(128).unwrap();
    assert_eq!(pool.try_lease(1).unwrap_err(), ArenaError::Exhausted { pool: "one".into(), slab_count: 1 });
    let timeout = Duration::from_millis(30);
    let e = pool.lease(1, timeout).unwrap_err();
    assert_eq!(e, ArenaError::LeaseTimeout { pool: "one".into(), slab_count: 1, timeout });
    assert!(e.to_string().contains("within"), "{e}");
    drop(held);
    assert!(pool.lease(1, timeout).is_ok());
}

#[test]
fn reserve_after_freeze_is_refused_and_counted() {
    let ledger = Ledger::unlimited();
    let pool = SlabPool::new(heap_pool("warm", 4096, 2), &ledger, None).unwrap();
    ledger.freeze();
    assert!(ledger.is_frozen());
    let before = ledger.snapshot();
    for attempt in 1..=2 {
        let e = SlabPool::new(heap_pool("late", 4096, 1), &ledger, None).unwrap_err();
        assert_eq!(e, ArenaError::Frozen { what: "late".into(), requested_bytes: HUGE_PAGE_BYTES });
        assert_eq!(ledger.snapshot().refused_after_freeze, attempt);
    }
    let e = Region::new("late-region", 1, &RegionConfig::heap(), &ledger, None).unwrap_err();
    assert!(matches!(e, ArenaError::Frozen { .. }));
    let after = ledger.snapshot();
    assert_eq!(after.refused_after_freeze, 3);
    assert_eq!(after.regions_after_freeze, 0);
    assert_eq!(after.reserved_bytes, before.reserved_bytes);
    // Leasing from an existing pool still works after the freeze.
    drop(pool.try_lease(4096).unwrap());
    assert!(ledger.snapshot().balanced());
}

#[test]
fn bad_configurations() {
    let ledger = Ledger::unlimited();
    for (cfg, needle) in [
        (heap_pool("zero-bytes", 0, 1), "slab_bytes is 0"),
        (heap_pool("zero-count", 64, 0), "slab_count 0"),
        (heap_pool("too-many", 64, usize::MAX), "slab_count"),
        (heap_pool("overflow", usize::MAX / 2, 4), "overflows"),
    ] {
        let e = SlabPool::new(cfg.clone(), &ledger, None).unwrap_err();
        assert!(matches!(e, ArenaError::Config { ref what, .. } if *what == cfg.name), "{e}");
        assert!(e.to_string().contains(needle), "{e} lacks {needle}");
    }
    assert!(matches!(
        Region::new("empty", 0, &RegionConfig::heap(), &ledger, None),
        Err(ArenaError::Config { .. })
    ));
    assert_eq!(ledger.snapshot().reserved_bytes, 0);
}

#[test]
fn deinit_reports_slabs_still_out() {
    let ledger = Ledger::unlimited();
    let a = SlabPool::new(heap_pool("a", 64, 2), &ledger, None).unwrap();
    let b = SlabPool::new(heap_pool("b", 64, 3), &ledger, None).unwrap();
    let la = a.try_lease(8).unwrap();
    let lb: Vec<_> = (0..2).map(|_| b.try_lease(8).unwrap()).collect();
    let r = deinit_check(&[&a, &b], &ledger);
    assert!(!r.is_clean());
    assert_eq!(r.outstanding.len(), 2);
    assert_eq!((r.outstanding[1].pool.as_str(), r.outstanding[1].slabs_out), ("b", 2));
    assert_eq!(r.ledger.leases_out, 3);
    let text = r.to_string();
    assert!(text.contains("pool 'a': 1 of 2") && text.contains("pool 'b': 2 of 3"), "{text}");
    drop(la);
    drop(lb);
    let r = deinit_check(&[&a, &b], &ledger);
    assert!(r.is_clean(), "{r}");
}

#[test]
fn handback_histogram_quantiles() {
    let ledger = Ledger::unlimited();
    let pool = SlabPool::new(heap_pool("hist", 64, 1), &ledger, None).unwrap();
    for _ in 0..100 {
        drop(pool.try_lease(64).unwrap());
    }
    let s = ledger.snapshot();
    assert_eq!(s.handback_hist.iter().sum::<u64>(), 100);
    assert!(s.handback_ns_p50() <= s.handback_ns_p99());
    assert!(s.handback_ns_p99() <= s.handback_ns_max.max(1));
    assert!(s.handback_ns_max > 0);
}
