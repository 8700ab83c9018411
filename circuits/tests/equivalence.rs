//! For every test circuit (and bellpepper's own SHA-256 gadget), the
//! arena assignment is satisfied row by row and equals the heap baseline exactly: a, b, c,
//! input and aux assignments and the three density bitmaps. Both arena paths are checked:
//! through the bellpepper-core trait and (where the circuit has one) the native path.
use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{
    build, AnyCircuit, ChainCircuit, CircuitKind, SectorPartitionCircuit, ShaCircuit,
};
use arenaprove_circuits::native::sha256;
use arenaprove_circuits::{
    shape_of, shape_of_native, synthesize_arena, synthesize_heap, synthesize_native, AssignmentPools,
    HeapAssignment, NativeCircuit, ProverWitness,
};
use bellpepper_core::test_cs::TestConstraintSystem;
use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use sha2::Digest;

fn assert_same(what: &str, heap: &HeapAssignment, w: &impl ProverWitness) {
    assert_eq!(w.num_constraints(), heap.num_constraints(), "{what}: constraints");
    assert_eq!(w.input_assignment(), heap.input_assignment(), "{what}: inputs");
    assert_eq!(w.aux_assignment(), heap.aux_assignment(), "{what}: aux");
    assert_eq!(w.a_aux_density(), heap.a_aux_density(), "{what}: a_aux density");
    assert_eq!(w.b_input_density(), heap.b_input_density(), "{what}: b_input density");
    assert_eq!(w.b_aux_density(), heap.b_aux_density(), "{what}: b_aux density");
    let (a, b, c) = w.abc().unwrap();
    let (ha, hb, hc) = heap.abc().unwrap();
    for i in 0..a.len() {
        assert_eq!((a[i], b[i], c[i]), (ha[i], hb[i], hc[i]), "{what}: row {i}");
        assert_eq!(a[i] * b[i], c[i], "{what}: row {i} unsatisfied");
    }
}

type NativeRun =
    dyn Fn(&AssignmentPools, &arenaprove_circuits::Shape) -> arenaprove_circuits::ArenaAssignment;

fn pools_for(shape: &arenaprove_circuits::Shape) -> (Arc<Ledger>, AssignmentPools) {
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(shape, 1, &ledger, RegionConfig::heap()).unwrap();
    (ledger, pools)
}

/// Heap baseline of `generic`; arena through bellpepper; arena through the native path
/// (if given, which must be the same constraint system).
fn check<C: Circuit<Scalar> + Clone>(what: &str, generic: C, native: Option<&NativeRun>) {
    let heap = synthesize_heap(generic.clone()).unwrap();
    let shape = shape_of(generic.clone()).unwrap();
    assert_eq!(
        (shape.constraints, shape.inputs, shape.aux),
        (heap.num_constraints(), heap.input_assignment().len(), heap.aux_assignment().len()),
        "{what}: shape"
    );
    let (a, b, c) = heap.abc().unwrap();
    for i in 0..a.len() {
        assert_eq!(a[i] * b[i], c[i], "{what}: heap row {i}");
    }
    let (ledger, pools) = pools_for(&shape);
    {
        let arena = synthesize_arena(generic.clone(), &pools, &shape).unwrap();
        assert_same(&format!("{what} (arena, bellpepper trait)"), &heap, &arena);
        if let Some(native) = native {
            drop(arena);
            let arena = native(&pools, &shape);
            assert_same(&format!("{what} (arena, native)"), &heap, &arena);
        }
    }
    assert_eq!(pools.outstanding(), 0);
    assert!(ledger.snapshot().balanced());

    let mut tcs = TestConstraintSystem::<Scalar>::new();
    generic.synthesize(&mut tcs).unwrap();
    assert!(
        tcs.is_satisfied(),
        "{what}: TestConstraintSystem unsatisfied at {:?}",
        tcs.which_is_unsatisfied()
    );
    assert_eq!(tcs.num_constraints() + heap.input_assignment().len(), heap.num_constraints());
}

fn native_of<C: NativeCircuit + 'static>(
    c: C,
) -> impl Fn(&AssignmentPools, &arenaprove_circuits::Shape) -> arenaprove_circuits::ArenaAssignment {
    move |pools, shape| {
        assert_eq!(shape_of_native(&c).unwrap(), *shape, "native shape");
        synthesize_native(&c, pools, shape).unwrap()
    }
}

#[test]
fn chain_arena_equals_heap() {
    let c = ChainCircuit::new(300, 11);
    check("chain", c.clone(), Some(&native_of(c)));
}

#[test]
fn sha_native_arena_equals_heap() {
    let c = ShaCircuit::new(2, 5);
    check("sha (native gadgets)", c, Some(&native_of(c)));
}

#[test]
fn sha_bellpepper_gadget_arena_equals_heap() {
    check("sha (bellpepper gadget)", ShaCircuit::new(1, 5).bellpepper(), None);
}

#[test]
fn sector_arena_equals_heap() {
    let c = SectorPartitionCircuit::full(77, 3, 1, 2);
    check("sector", c, Some(&native_of(c)));
}

#[test]
fn small_sector_arena_equals_heap() {
    // Reduced challenges (fewer compression rounds, shorter path), as soaks and CI use.
    for target in [1024, 4096] {
        let c = SectorPartitionCircuit::for_constraints(78, 1, target);
        assert!(c.sha_rounds < sha256::ROUNDS, "{target}: {c:?} is reduced");
        check(&format!("sector@{target}"), c, Some(&native_of(c)));
    }
}

#[test]
fn sha_matches_sha2_and_bellpepper() {
    for blocks in [1, 3] {
        let c = ShaCircuit::new(blocks, 9 + blocks as u64);
        let expect: [u8; 32] = sha2::Sha256::digest(c.message()).into();
        // The digest through the native gadget, read from the circuit's bits.
        let mut cs = arenaprove_circuits::ShapeCs::new();
        let msg = c.message();
        let bits = sha256::sha256(&mut cs, msg.len(), |cs, i| {
            arenaprove_circuits::native::Bit::alloc(cs, (msg[i / 8] >> (7 - i % 8)) & 1 == 1)
        })
        .unwrap();
        assert_eq!(sha256::digest_bytes(&bits), expect, "{blocks} blocks");
        // Public inputs equal the packed sha2 digest, for both gadgets.
        let packed = arenaprove_circuits::circuits::sha::digest_inputs(&expect);
        let native = synthesize_heap(c).unwrap();
        let bp = synthesize_heap(c.bellpepper()).unwrap();
        assert_eq!(&native.input_assignment()[1..], &packed[..]);
        assert_eq!(&bp.input_assignment()[1..], &packed[..]);
        assert_eq!(native.input_assignment()[0], Scalar::ONE);
        // Constraint count no larger than bellpepper's gadget.
        let n_native = shape_of(c).unwrap().constraints;
        let n_bp = shape_of(c.bellpepper()).unwrap().constraints;
        assert!(n_native <= n_bp, "{blocks} blocks: native {n_native} > bellpepper {n_bp}");
        eprintln!("sha {blocks} blocks: native {n_native} constraints, bellpepper {n_bp}");
    }
}

#[test]
fn build_picks_nearest_size() {
    for kind in CircuitKind::ALL {
        for target in [1usize << 17, 1 << 18] {
            let c = build(kind, target, 1).unwrap();
            let n = shape_of_native(&c).unwrap().constraints;
            let dist = |m: usize| (m as i64 - target as i64).unsigned_abs() as usize;
            if let AnyCircuit::Sha(s) = c {
                // sha moves in whole blocks: no neighbour is nearer.
                for blocks in [s.blocks.saturating_sub(1).max(1), s.blocks + 1] {
                    let m = shape_of_native(&ShaCircuit::new(blocks, 1)).unwrap().constraints;
                    assert!(dist(n) <= dist(m), "sha target {target}: {n} but {blocks} blocks give {m}");
                }
            } else {
                assert!(dist(n) * 50 <= target, "{kind} target {target}: got {n}");
            }
        }
    }
    assert!(build(CircuitKind::Chain, 0, 1).is_err());
    assert!("nope".parse::<CircuitKind>().is_err());
}
