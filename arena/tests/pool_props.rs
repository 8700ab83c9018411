//! Property tests: random lease/return programs against a model, single- and
//! multi-threaded. Every slab comes back exactly once, no two live leases overlap in
//! memory, and the ledger balances at the end.
//!
//! Pools here are heap-backed (`RegionConfig::heap()`), so the same code runs under Miri
//! (proptest cases are skipped there: too slow). Miri is not installed on the development
//! machine; run `cargo +nightly miri test -p arenaprove-arena` where it is.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arenaprove_arena::{ArenaError, Lease, Ledger, RegionConfig, SlabPool, SlabPoolConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// try_lease of `bytes` (may exceed the slab size on purpose).
    TryLease(usize),
    /// lease with a zero timeout (must behave like try_lease when nothing comes back).
    LeaseNow(usize),
    /// Drop the live lease at position `k % live.len()`.
    Drop(usize),
}

fn op(slab_bytes: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..=slab_bytes + 64).prop_map(Op::TryLease),
        1 => (0..=slab_bytes).prop_map(Op::LeaseNow),
        4 => any::<usize>().prop_map(Op::Drop),
    ]
}

fn pool(slab_bytes: usize, slab_count: usize) -> (Arc<Ledger>, Arc<SlabPool>) {
    let ledger = Ledger::unlimited();
    let cfg = SlabPoolConfig::new("props", slab_bytes, slab_count).with_region(RegionConfig::heap());
    let pool = SlabPool::new(cfg, &ledger, None).expect("pool");
    (ledger, pool)
}

/// Fills a lease with a pattern derived from `tag`, so an overlap with another lease
/// would be seen when the pattern is checked.
fn stamp(lease: &mut Lease, tag: u64) {
    for (i, b) in lease.bytes_mut().iter_mut().enumerate() {
        *b = (tag as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
}

fn check_stamp(lease: &Lease, tag: u64) -> bool {
    lease.bytes().iter().enumerate().all(|(i, b)| *b == (tag as usize).wrapping_mul(31).wrapping_add(i) as u8)
}

fn ranges_disjoint(live: &[(Lease, u64)], slab_bytes: usize) -> bool {
    let mut spans: Vec<(usize, usize)> = live
        .iter()
        .map(|(l, _)| {
            let start = l.as_ptr().as_ptr() as usize;
            (start, start + slab_bytes)
        })
        .collect();
    spans.sort();
    spans.windows(2).all(|w| w[0].1 <= w[1].0)
}

fn run_program(slab_bytes: usize, slab_count: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let (ledger, pool) = pool(slab_bytes, slab_count);
    let mut live: Vec<(Lease, u64)> = Vec::new();
    let mut next_tag = 1u64;
    let mut leased_ok = 0u64;
    // Model: how many times each slab index went out and came back.
    let mut out_count: BTreeMap<u32, u64> = BTreeMap::new();
    let mut back_count: BTreeMap<u32, u64> = BTreeMap::new();

    for op in ops {
        match *op {
            Op::TryLease(bytes) | Op::LeaseNow(bytes) => {
                let r = match op {
                    Op::TryLease(_) => pool.try_lease(bytes),
                    _ => pool.lease(bytes, Duration::ZERO),
                };
                let model_free = slab_count - live.len();
                match r {
                    Ok(mut l) => {
                        prop_assert!(bytes <= slab_bytes, "lease of {bytes} > slab {slab_bytes} granted");
                        prop_assert!(model_free > 0, "lease granted with no free slab in the model");
                        prop_assert_eq!(l.len_bytes(), bytes);
                        prop_assert!(
                            live.iter().all(|(o, _)| o.slab_index() != l.slab_index()),
                            "slab lent twice"
                        );
                        *out_count.entry(l.slab_index()).or_default() += 1;
                        stamp(&mut l, next_tag);
                        live.push((l, next_tag));
                        next_tag += 1;
                        leased_ok += 1;
                    }
                    Err(ArenaError::LeaseTooLarge { requested_bytes, slab_bytes: sb, .. }) => {
                        prop_assert!(bytes > slab_bytes);
                        prop_assert_eq!((requested_bytes, sb), (bytes, slab_bytes));
                    }
                    Err(ArenaError::Exhausted { slab_count: n, .. })
                    | Err(ArenaError::LeaseTimeout { slab_count: n, .. }) => {
                        prop_assert!(bytes <= slab_bytes);
                        prop_assert_eq!(model_free, 0, "refused while the model has a free slab");
                        prop_assert_eq!(n, slab_count);
                    }
                    Err(e) => prop_assert!(false, "unexpected error {e}"),
                }
            }
            Op::Drop(k) => {
                if live.is_empty() {
                    continue;
                }
                let (l, tag) = live.swap_remove(k % live.len());
                prop_assert!(check_stamp(&l, tag), "lease content changed under its owner: overlap");
                *back_count.entry(l.slab_index()).or_default() += 1;
                drop(l);
            }
        }
        prop_assert!(ranges_disjoint(&live, slab_bytes), "two live leases overlap");
        prop_assert_eq!(pool.outstanding(), live.len());
        prop_assert_eq!(ledger.snapshot().leases_out, live.len());
    }
    for (l, tag) in live.drain(..) {
        prop_assert!(check_stamp(&l, tag));
        *back_count.entry(l.slab_index()).or_default() += 1;
    }
    // Every lease came back exactly once.
    prop_assert_eq!(&out_count, &back_count);
    let snap = ledger.snapshot();
    prop_assert!(snap.balanced(), "ledger not balanced: {snap:?}");
    prop_assert_eq!(snap.leases_total, leased_ok);
    prop_assert_eq!(pool.free_count(), slab_count);
    // And every slab is free exactly once: leasing all of them yields distinct indices.
    let all: Vec<Lease> = (0..slab_count).map(|_| pool.try_lease(0).expect("free")).collect();
    let idx: BTreeSet<u32> = all.iter().map(|l| l.slab_index()).collect();
    prop_assert_eq!(idx.len(), slab_count);
    prop_assert!(pool.try_lease(0).is_err());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 128 }, ..ProptestConfig::default() })]

    #[test]
    fn single_thread_programs(
        (slab_bytes, slab_count, ops) in (1usize..512, 1usize..9).prop_flat_map(|(sb, n)| {
            (Just(sb), Just(n), proptest::collection::vec(op(sb), 0..120))
        })
    ) {
        run_program(slab_bytes, slab_count, &ops)?;
    }

    #[test]
    fn multi_thread_programs(
        slab_count in 1usize..6,
        programs in proptest::collection::vec(proptest::collection::vec(op(256), 0..60), 2..5),
    ) {
        let slab_bytes = 256;
        let (ledger, pool) = pool(slab_bytes, slab_count);
        // One flag per slab: set while leased. A second lease of a leased slab, or a
        // second handback, flips the wrong way and is caught.
        let in_use: Vec<AtomicBool> = (0..slab_count).map(|_| AtomicBool::new(false)).collect();
        let granted = std::sync::atomic::AtomicU64::new(0);
        let failures = std::sync::Mutex::new(Vec::<String>::new());
        std::thread::scope(|s| {
            for (t, prog) in programs.iter().enumerate() {
                let (pool, in_use, granted, failures) = (&pool, &in_use, &granted, &failures);
                s.spawn(move || {
                    let mut live: Vec<(Lease, u64)> = Vec::new();
                    let fail = |m: String| failures.lock().unwrap().push(m);
                    for (step, op) in prog.iter().enumerate() {
                        match *op {
                            Op::TryLease(bytes) | Op::LeaseNow(bytes) => {
                                let r = if matches!(op, Op::TryLease(_)) {
                                    pool.try_lease(bytes)
                                } else {
                                    pool.lease(bytes, Duration::from_millis(1))
                                };
                                match r {
                                    Ok(mut l) => {
                                        if in_use[l.slab_index() as usize].swap(true, Ordering::SeqCst) {
                                            fail(format!("slab {} lent while leased", l.slab_index()));
                                        }
                                        let tag = ((t as u64) << 32) | step as u64;
                                        stamp(&mut l, tag);
                                        granted.fetch_add(1, Ordering::SeqCst);
                                        live.push((l, tag));
                                    }
                                    Err(ArenaError::LeaseTooLarge { .. }) if bytes > slab_bytes => {}
                                    Err(ArenaError::Exhausted { .. }) | Err(ArenaError::LeaseTimeout { .. }) => {}
                                    Err(e) => fail(format!("unexpected {e}")),
                                }
                            }
                            Op::Drop(k) => {
                                if live.is_empty() {
                                    continue;
                                }
                                let (l, tag) = live.swap_remove(k % live.len());
                                if !check_stamp(&l, tag) {
                                    fail(format!("slab {} overwritten while leased", l.slab_index()));
                                }
                                // Clear the flag before the handback: once dropped, another
                                // thread may lease it at once.
                                if !in_use[l.slab_index() as usize].swap(false, Ordering::SeqCst) {
                                    fail(format!("slab {} handed back twice", l.slab_index()));
                                }
                                drop(l);
                            }
                        }
                    }
                    for (l, tag) in live {
                        if !check_stamp(&l, tag) {
                            fail(format!("slab {} overwritten while leased", l.slab_index()));
                        }
                        in_use[l.slab_index() as usize].store(false, Ordering::SeqCst);
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap();
        prop_assert!(failures.is_empty(), "{failures:?}");
        let snap = ledger.snapshot();
        prop_assert!(snap.balanced(), "ledger not balanced: {snap:?}");
        prop_assert_eq!(snap.leases_total, granted.load(Ordering::SeqCst));
        prop_assert_eq!(pool.free_count(), slab_count);
        prop_assert!(arenaprove_arena::deinit_check(&[&pool], &ledger).is_clean());
    }
}

/// A blocking lease is served by a handback from another thread.
#[test]
fn blocking_lease_is_woken_by_handback() {
    let (ledger, pool) = pool(64, 1);
    let held = pool.try_lease(64).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| pool.lease(8, Duration::from_secs(30)).map(|l| l.slab_index()));
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert_eq!(h.join().unwrap().unwrap(), 0);
    });
    assert!(ledger.snapshot().balanced());
}
