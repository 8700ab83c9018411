//! The heap baseline: shape, satisfaction and bellperson's conventions on `chain`.
use arenaprove_circuits::circuits::ChainCircuit;
use arenaprove_circuits::{shape_of, synthesize_heap, ProverWitness};
use bellpepper_core::test_cs::TestConstraintSystem;
use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;

#[test]
fn chain_heap_matches_shape_and_is_satisfied() {
    let circuit = ChainCircuit::new(100, 7);
    let shape = shape_of(circuit.clone()).unwrap();
    assert_eq!((shape.constraints, shape.inputs, shape.aux, shape.domain_size), (102, 2, 100, 128));
    let mut h = synthesize_heap(circuit.clone()).unwrap();
    assert_eq!(h.num_constraints(), shape.constraints);
    assert_eq!(h.input_assignment().len(), shape.inputs);
    assert_eq!(h.aux_assignment().len(), shape.aux);
    assert_eq!(h.input_assignment()[0], Scalar::ONE);
    assert_eq!(h.input_assignment()[1], circuit.output());
    let (a, b, c) = h.abc().unwrap();
    for i in 0..a.len() {
        assert_eq!(a[i] * b[i], c[i], "row {i}");
    }
    // Input rows: a = input_i, b = c = 0.
    assert_eq!(a[100], Scalar::ONE);
    assert_eq!(a[101], circuit.output());
    assert_eq!((b[101], c[101]), (Scalar::ZERO, Scalar::ZERO));
    // Every aux appears in A (x_i * x_i); no input appears in B; ONE only in C.
    assert_eq!(h.a_aux_density().count_ones(), 100);
    assert_eq!(h.b_aux_density().count_ones(), 100);
    assert_eq!(h.b_input_density().count_ones(), 0);
    let [pa, _, _] = h.abc_padded_mut(128).unwrap();
    assert_eq!(pa.len(), 128);
    assert_eq!(pa[127], Scalar::ZERO);
    h.release_abc();
    assert!(h.abc().is_err());

    let mut tcs = TestConstraintSystem::<Scalar>::new();
    circuit.synthesize(&mut tcs).unwrap();
    assert!(tcs.is_satisfied());
    assert_eq!(tcs.num_constraints(), 100);
}
