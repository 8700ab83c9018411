//! Writers that do not zero what they are about to overwrite: `extend_stale`,
//! `extend_par_map`, `map_in_place`; `extend_with`'s length under a panicking producer;
//! heap-backed slabs start zeroed (so `Lease::bytes` never shows uninitialized memory).

use std::sync::Arc;

use arenaprove_arena::{map_in_place, Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};

fn pool(slab_bytes: usize) -> Arc<SlabPool> {
    let cfg = SlabPoolConfig::new("writers", slab_bytes, 1).with_region(RegionConfig::heap());
    SlabPool::new(cfg, &Ledger::unlimited(), None).unwrap()
}

#[test]
fn heap_backed_slabs_start_zeroed() {
    let p = pool(1 << 16);
    let lease = p.try_lease(1 << 16).unwrap();
    assert!(lease.bytes().iter().all(|&b| b == 0), "a fresh heap region reads as zeros");
}

#[test]
fn extend_stale_exposes_the_previous_tenant_and_par_map_overwrites_it() {
    let p = pool(64 * 1024 * 8);
    let n = 64 * 1024;
    {
        let mut v: SlabVec<u64> = SlabVec::new(p.try_lease(n * 8).unwrap());
        v.resize(n, 7).unwrap();
    }
    let mut v: SlabVec<u64> = SlabVec::new(p.try_lease(n * 8).unwrap());
    let stale = v.extend_stale(3).unwrap();
    if !cfg!(feature = "verify") {
        assert_eq!(stale, &[7, 7, 7], "not zeroed: what the slab held");
    }
    v.clear();
    let src: Vec<u32> = (0..n as u32).collect();
    v.extend_par_map(&src, |&x| u64::from(x) * 3).unwrap();
    assert_eq!(v.len(), n);
    assert!(v.iter().enumerate().all(|(i, &x)| x == 3 * i as u64));
    let e = v.extend_stale(1).unwrap_err();
    assert!(e.to_string().contains("writers"), "{e}");
    assert_eq!(v.len(), n, "a refused extension leaves the length alone");
}

#[test]
fn map_in_place_converts_each_element_in_its_own_slot() {
    let mut xs: Vec<u64> = (0..100_000u64).collect();
    let ys: &mut [i64] = map_in_place(&mut xs, |x: u64| -(x as i64));
    assert_eq!(ys.len(), 100_000);
    assert!(ys.iter().enumerate().all(|(i, &y)| y == -(i as i64)));
}

#[test]
fn extend_with_keeps_what_was_written_when_the_producer_panics() {
    let p = pool(4096);
    let mut v: SlabVec<u64> = SlabVec::new(p.try_lease(4096).unwrap());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        v.extend_with(10, |i| if i == 6 { panic!("producer fails at 6") } else { i as u64 }).unwrap();
    }));
    assert!(r.is_err());
    assert_eq!(v.as_slice(), &[0, 1, 2, 3, 4, 5], "length stops at the last written element");
    v.extend_with(4, |i| i as u64 * 10).unwrap();
    assert_eq!(&v[6..], &[60, 70, 80, 90]);
}
