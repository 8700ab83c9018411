//! The steady state allocates nothing large: after warm-up and `freeze()`, 1,000
//! lease/fill/return cycles reserve no new region, take (almost) no page faults, and
//! leave the ledger balanced.
//!
//! This file holds a single test so that no other test of the same process adds page
//! faults while it measures (getrusage counts the whole process).

use std::time::Duration;

use arenaprove_arena::{
    deinit_check, ledger::page_faults, ArenaError, Ledger, SlabPool, SlabPoolConfig, SlabVec,
};

/// Slab size: moderate, so 1,000 fills stay fast (8 GiB of writes in all).
const SLAB_BYTES: usize = 8 << 20;
const SLAB_COUNT: usize = 3;
const CYCLES: u64 = 1000;

#[test]
fn frozen_steady_state_allocates_nothing_and_does_not_fault() {
    let ledger = Ledger::unlimited();
    // Default config: an anonymous mapping, THP-advised, pre-faulted at creation.
    let abc = SlabPool::new(SlabPoolConfig::new("abc", SLAB_BYTES, SLAB_COUNT), &ledger, None).unwrap();
    let aux = SlabPool::new(SlabPoolConfig::new("aux", SLAB_BYTES / 4, 1), &ledger, None).unwrap();

    // Warm-up: one full cycle, so the code paths and the test's own small buffers exist.
    let cycle = |round: u64| {
        let mut ws: Vec<SlabVec<[u64; 4]>> = Vec::with_capacity(SLAB_COUNT + 1);
        for _ in 0..SLAB_COUNT {
            ws.push(SlabVec::new(abc.lease(SLAB_BYTES, Duration::from_secs(5)).unwrap()));
        }
        ws.push(SlabVec::new(aux.try_lease(SLAB_BYTES / 4).unwrap()));
        let mut check = 0u64;
        for v in ws.iter_mut() {
            let cap = v.capacity();
            v.extend_with(cap, |i| [i as u64, round, !(i as u64), round ^ i as u64]).unwrap();
            check = check.wrapping_add(v[cap - 1][0]);
        }
        drop(ws); // hand back: four queue pushes
        check
    };
    cycle(0);
    ledger.freeze();
    let before = ledger.snapshot();
    let (minflt0, majflt0) = page_faults();
    let mut check = 0u64;
    for round in 1..=CYCLES {
        check = check.wrapping_add(cycle(round));
    }
    let (minflt1, majflt1) = page_faults();
    let after = ledger.snapshot();

    let expected_check =
        CYCLES * ((SLAB_COUNT as u64) * (SLAB_BYTES as u64 / 32 - 1) + (SLAB_BYTES as u64 / 128 - 1));
    assert_eq!(check, expected_check, "every element was written");
    let faults_per_cycle = (minflt1 - minflt0 + majflt1 - majflt0) as f64 / CYCLES as f64;
    eprintln!(
        "steady state: {CYCLES} cycles, {} minor + {} major faults ({faults_per_cycle:.3}/cycle); \
         handback p50 {} ns, p99 {} ns, max {} ns",
        minflt1 - minflt0,
        majflt1 - majflt0,
        after.handback_ns_p50(),
        after.handback_ns_p99(),
        after.handback_ns_max
    );
    assert!(faults_per_cycle < 1.0, "{faults_per_cycle} page faults per cycle after freeze");
    assert_eq!(after.regions_after_freeze, 0);
    assert_eq!(after.refused_after_freeze, 0);
    assert_eq!(after.reserved_bytes, before.reserved_bytes, "no new memory reserved");
    assert_eq!(after.regions, 2);
    assert_eq!(after.leases_total - before.leases_total, CYCLES * (SLAB_COUNT as u64 + 1));
    assert_eq!(after.leased_bytes_hwm, SLAB_COUNT * SLAB_BYTES + SLAB_BYTES / 4);
    assert!(after.balanced(), "{after:?}");
    assert!(ledger.minor_faults_since_freeze().is_some());

    // And growing now is refused, and counted.
    let e = SlabPool::new(SlabPoolConfig::new("late", SLAB_BYTES, 1), &ledger, None).unwrap_err();
    assert!(matches!(e, ArenaError::Frozen { .. }), "{e}");
    assert_eq!(ledger.snapshot().refused_after_freeze, 1);
    assert!(deinit_check(&[&abc, &aux], &ledger).is_clean());
}
