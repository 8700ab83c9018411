//! Bad input gets a clear error and nothing leaks; the native path allocates nothing per
//! constraint in steady state (counted by arena's CountingAlloc).
use std::panic::{catch_unwind, AssertUnwindSafe};

use arenaprove_arena::count_alloc::CountingAlloc;
use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{ChainCircuit, SectorPartitionCircuit};
use arenaprove_circuits::{
    shape_of, shape_of_native, synthesize_arena, synthesize_native, AssignmentPools, CircuitError,
    NativeCircuit, NativeCs, ProverWitness, Shape,
};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

/// Allocates and constrains like chain, then fails or panics at step `fail_at`.
#[derive(Clone, Copy)]
struct Faulty {
    steps: usize,
    fail_at: usize,
    panic: bool,
}

impl Circuit<Scalar> for Faulty {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = cs.alloc(|| "x0", || Ok(Scalar::from(3u64)))?;
        for i in 0..self.steps {
            if i == self.fail_at {
                if self.panic {
                    panic!("faulty circuit panics at step {i}");
                }
                return Err(SynthesisError::AssignmentMissing);
            }
            let y = cs.alloc(|| format!("x{}", i + 1), || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| format!("c{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
            x = y;
        }
        Ok(())
    }
}

fn setup(shape: &Shape) -> (std::sync::Arc<Ledger>, AssignmentPools) {
    let ledger = Ledger::unlimited();
    let pools = AssignmentPools::for_shape(shape, 1, &ledger, RegionConfig::heap()).unwrap();
    (ledger, pools)
}

fn assert_all_back(ledger: &Ledger, pools: &AssignmentPools) {
    assert_eq!(pools.outstanding(), 0, "slabs still leased");
    let abc = pools.abc.as_ref().unwrap();
    assert_eq!(abc.free_count(), abc.slab_count());
    assert!(ledger.snapshot().balanced(), "ledger unbalanced: {:?}", ledger.snapshot());
}

#[test]
fn synthesis_error_part_way_returns_leases() {
    let full = Faulty { steps: 50, fail_at: usize::MAX, panic: false };
    let shape = shape_of(full).unwrap();
    let (ledger, pools) = setup(&shape);
    let err = synthesize_arena(Faulty { fail_at: 20, ..full }, &pools, &shape).unwrap_err();
    assert!(matches!(err, CircuitError::Synthesis(SynthesisError::AssignmentMissing)), "{err}");
    assert_all_back(&ledger, &pools);
    // The pools work again afterwards.
    let ok = synthesize_arena(full, &pools, &shape).unwrap();
    assert_eq!(ok.num_constraints(), shape.constraints);
    drop(ok);
    assert_all_back(&ledger, &pools);
}

#[test]
fn panic_inside_synthesis_returns_leases() {
    let full = Faulty { steps: 50, fail_at: usize::MAX, panic: false };
    let shape = shape_of(full).unwrap();
    let (ledger, pools) = setup(&shape);
    let r = catch_unwind(AssertUnwindSafe(|| {
        synthesize_arena(Faulty { fail_at: 10, panic: true, ..full }, &pools, &shape)
    }));
    assert!(r.is_err(), "the circuit panicked");
    assert_all_back(&ledger, &pools);
}

#[test]
fn circuit_larger_than_its_shape_is_refused() {
    let small = shape_of(ChainCircuit::new(40, 1)).unwrap();
    let (ledger, pools) = setup(&small);
    // Bellpepper path: aux runs out first (alloc can return the error).
    let err = synthesize_arena(ChainCircuit::new(41, 1), &pools, &small).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CircuitError::OverShape { what: "aux", .. }), "{msg}");
    assert!(msg.contains("40 aux") && msg.contains("shape"), "names the shape: {msg}");
    // Native path too.
    let err = synthesize_native(&ChainCircuit::new(41, 1), &pools, &small).unwrap_err();
    assert!(matches!(err, CircuitError::OverShape { what: "aux", .. }), "{err}");
    // Too many constraints with enough variables: enforce cannot fail, so the error is
    // sticky and reported at the end.
    let lying = Shape { constraints: small.constraints - 3, ..small };
    let err = synthesize_arena(ChainCircuit::new(40, 1), &pools, &lying).unwrap_err();
    match err {
        CircuitError::OverShape { what: "constraints", requested, capacity, .. } => {
            assert_eq!((requested, capacity), (small.constraints, lying.constraints))
        }
        e => panic!("wrong error: {e}"),
    }
    // A shape the pools cannot hold fails before synthesis.
    let big = Shape::new(small.domain_size * 4, small.inputs, small.aux);
    assert!(matches!(
        synthesize_native(&ChainCircuit::new(40, 1), &pools, &big),
        Err(CircuitError::Arena(_))
    ));
    assert_all_back(&ledger, &pools);
}

#[test]
fn native_steady_state_allocates_nothing_per_constraint() {
    let circuit = SectorPartitionCircuit::full(5, 1, 1, 0);
    let shape = shape_of_native(&circuit).unwrap();
    let (_ledger, pools) = setup(&shape);
    // Warm up: constant tables, recycled Vecs grown to their working sizes.
    for _ in 0..3 {
        drop(synthesize_native(&circuit, &pools, &shape).unwrap());
    }
    let (w, counted) = CountingAlloc::measure_thread(|| synthesize_native(&circuit, &pools, &shape).unwrap());
    assert_eq!(w.num_constraints(), shape.constraints);
    assert_eq!(counted.allocs + counted.reallocs, 0, "{} constraints, {counted:?}", shape.constraints);
    drop(w);
    // The generic bellpepper path into the same assignment does allocate (its LCs).
    let (w, counted) = CountingAlloc::measure_thread(|| synthesize_arena(circuit, &pools, &shape).unwrap());
    assert!(counted.allocs as usize > shape.constraints, "{counted:?}");
    drop(w);
}

/// A native circuit that fails part-way with an error of its own.
struct NativeFails;
impl NativeCircuit for NativeFails {
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError> {
        cs.alloc_aux(Scalar::from(1u64))?;
        Err(CircuitError::Invalid { what: "test", reason: "fails on purpose".into() })
    }
}

#[test]
fn native_error_part_way_returns_leases() {
    let shape = Shape::new(4, 1, 4);
    let (ledger, pools) = setup(&shape);
    let err = synthesize_native(&NativeFails, &pools, &shape).unwrap_err();
    assert!(err.to_string().contains("fails on purpose"));
    assert_all_back(&ledger, &pools);
}

#[test]
fn lc_scratch_goes_back_when_synthesis_finishes_not_at_handback() {
    let circuit = SectorPartitionCircuit::full(5, 1, 1, 0);
    let shape = shape_of_native(&circuit).unwrap();
    let (ledger, pools) = setup(&shape);
    drop(synthesize_native(&circuit, &pools, &shape).unwrap());
    let before = pools.lc_terms.stats();
    let w = synthesize_native(&circuit, &pools, &shape).unwrap();
    let finished = pools.lc_terms.stats();
    // Every Vec synthesis took (the assignment's a, b, c scratch and the gadgets'
    // temporaries) is back once `finish` has run, while the witness (and its slabs) is
    // still held for proving.
    let taken = (finished.hits + finished.misses) - (before.hits + before.misses);
    assert!(taken >= 3, "{before:?} -> {finished:?}");
    assert_eq!(finished.kept - before.kept, taken, "{before:?} -> {finished:?}");
    assert!(pools.outstanding() > 0, "the witness still holds its slabs");
    drop(w);
    assert_eq!(pools.lc_terms.stats().kept, finished.kept, "nothing more to give back at handback");
    assert_all_back(&ledger, &pools);
}
