//! `SlabVec<T>` against `Vec<T>` as a model: push, extend, resize, clear, truncate, and
//! capacity errors that leave the vector unchanged. Heap-backed pools (Miri-compatible).

use std::sync::Arc;

use arenaprove_arena::{ArenaError, Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Push(u64),
    ExtendFromSlice(Vec<u64>),
    ExtendWith(usize),
    ExtendFill(usize, u64),
    Resize(usize, u64),
    Truncate(usize),
    Clear,
    SetAt(usize, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u64>().prop_map(Op::Push),
        2 => proptest::collection::vec(any::<u64>(), 0..40).prop_map(Op::ExtendFromSlice),
        2 => (0usize..40).prop_map(Op::ExtendWith),
        1 => (0usize..40, any::<u64>()).prop_map(|(n, v)| Op::ExtendFill(n, v)),
        2 => (0usize..80, any::<u64>()).prop_map(|(n, v)| Op::Resize(n, v)),
        1 => (0usize..80).prop_map(Op::Truncate),
        1 => Just(Op::Clear),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Op::SetAt(i, v)),
    ]
}

fn pool(slab_bytes: usize) -> Arc<SlabPool> {
    let cfg = SlabPoolConfig::new("slabvec", slab_bytes, 1).with_region(RegionConfig::heap());
    SlabPool::new(cfg, &Ledger::unlimited(), None).unwrap()
}

fn expect_capacity(r: Result<(), ArenaError>, cap: usize, requested: usize) -> Result<(), TestCaseError> {
    match r {
        Err(ArenaError::Capacity { capacity, requested: req, pool }) => {
            prop_assert_eq!(capacity, cap);
            prop_assert_eq!(req, requested);
            prop_assert_eq!(pool, "slabvec");
            Ok(())
        }
        other => Err(TestCaseError::fail(format!("expected a capacity error, got {other:?}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn slabvec_matches_vec(cap in 0usize..64, ops in proptest::collection::vec(op(), 0..80)) {
        // Slab bytes not a multiple of 8 on purpose: capacity rounds down.
        let pool = pool(cap * 8 + 7);
        let mut sv = SlabVec::<u64>::new(pool.try_lease(cap * 8 + 7).unwrap());
        prop_assert_eq!(sv.capacity(), cap);
        let mut model: Vec<u64> = Vec::new();
        for op in ops {
            match op {
                Op::Push(v) => {
                    if model.len() < cap {
                        sv.push(v).unwrap();
                        model.push(v);
                    } else {
                        expect_capacity(sv.push(v), cap, model.len() + 1)?;
                    }
                }
                Op::ExtendFromSlice(vs) => {
                    if model.len() + vs.len() <= cap {
                        sv.extend_from_slice(&vs).unwrap();
                        model.extend_from_slice(&vs);
                    } else {
                        expect_capacity(sv.extend_from_slice(&vs), cap, model.len() + vs.len())?;
                    }
                }
                Op::ExtendWith(n) => {
                    let f = |i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    if model.len() + n <= cap {
                        sv.extend_with(n, f).unwrap();
                        let start = model.len();
                        model.extend((start..start + n).map(f));
                    } else {
                        expect_capacity(sv.extend_with(n, f), cap, model.len() + n)?;
                    }
                }
                Op::ExtendFill(n, v) => {
                    if model.len() + n <= cap {
                        let s = sv.extend_fill(n, v).unwrap();
                        prop_assert_eq!(s.len(), n);
                        model.resize(model.len() + n, v);
                    } else {
                        expect_capacity(sv.extend_fill(n, v).map(|_| ()), cap, model.len() + n)?;
                    }
                }
                Op::Resize(n, v) => {
                    if n <= cap {
                        sv.resize(n, v).unwrap();
                        model.resize(n, v);
                    } else {
                        expect_capacity(sv.resize(n, v), cap, n)?;
                    }
                }
                Op::Truncate(n) => {
                    sv.truncate(n);
                    model.truncate(n);
                }
                Op::Clear => {
                    sv.clear();
                    model.clear();
                }
                Op::SetAt(i, v) => {
                    if !model.is_empty() {
                        let i = i % model.len();
                        sv[i] = v;
                        model[i] = v;
                    }
                }
            }
            // A refused operation leaves the vector as it was: the model did not change.
            prop_assert_eq!(sv.len(), model.len());
            prop_assert_eq!(sv.as_slice(), model.as_slice());
            prop_assert_eq!(sv.capacity(), cap);
        }
        let lease = sv.into_lease();
        prop_assert_eq!(lease.slab_index(), 0);
        drop(lease);
        prop_assert_eq!(pool.free_count(), 1);
    }
}

#[test]
fn scalars_fill_a_slab() {
    use ff::Field;
    let pool = pool(1 << 12);
    let mut sv = SlabVec::<blstrs::Scalar>::new(pool.try_lease(1 << 12).unwrap());
    assert_eq!(sv.capacity(), (1 << 12) / 32);
    sv.extend_with(sv.capacity(), |i| blstrs::Scalar::from(i as u64)).unwrap();
    assert_eq!(sv[5], blstrs::Scalar::from(5u64));
    assert!(sv.push(blstrs::Scalar::ONE).is_err());
    let sum: blstrs::Scalar = sv.iter().sum();
    let n = sv.len() as u64;
    assert_eq!(sum, blstrs::Scalar::from(n * (n - 1) / 2));
}

/// Fills larger than `PAR_FILL_BYTES` take the parallel path: every slot written, none past.
#[test]
fn large_resize_fills_every_slot_in_parallel() {
    let n = 3 * arenaprove_arena::slabvec::PAR_FILL_BYTES / 8 + 5;
    let mut v = SlabVec::<u64>::new(pool((n + 7) * 8).try_lease((n + 7) * 8).unwrap());
    v.resize(3, 1).unwrap();
    let filled = v.extend_fill(n - 3, 7).unwrap();
    assert_eq!(filled.len(), n - 3);
    assert_eq!(v.len(), n);
    assert_eq!(&v[..3], &[1, 1, 1]);
    assert!(v[3..].iter().all(|&x| x == 7));
}
