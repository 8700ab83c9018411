//! Parameters made once per circuit kind and size fit every seed.
//!
//! The engine (and `arenaprove params gen`) generates Groth16 parameters from one instance
//! of a kind at a size, (sector 0, partition 0), and proves every other sector and
//! partition with them. That is only sound if the constraint system of a kind at a size
//! does not depend on the seed: the seed may draw witness values, never structure (the
//! chain constant k, for one, is [`CHAIN_K`], not drawn). For each kind at a small size,
//! this test makes parameters from instance (0, 0) through the native gadget code (the
//! bridge, the very constraints the native path produces), proves other instances through
//! the native arena path, and verifies the proofs against their own public inputs.
use std::sync::Arc;

use arenaprove::arena::{Ledger, RegionConfig};
use arenaprove::benchkit::sector::partition as partition_circuit;
use arenaprove::circuits::circuits::chain::CHAIN_K;
use arenaprove::circuits::circuits::{AnyCircuit, CircuitKind};
use arenaprove::circuits::native::ViaBridge;
use arenaprove::circuits::{shape_of_native, synthesize_native, AssignmentPools, ProverWitness, Shape};
use arenaprove::engine::groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proof, ParamsMemory, Prover,
};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// The instance of `kind` for (sector, partition), as the CLI and the benches make it.
/// Parameters are made through `ViaBridge` (the native gadgets; for `sha`, `AnyCircuit`'s
/// own `Circuit` impl would run bellpepper's SHA-256 gadget: another constraint system).
fn instance(kind: CircuitKind, target_constraints: usize, sector_id: u64, partition: usize) -> AnyCircuit {
    partition_circuit(kind, target_constraints, sector_id, partition).unwrap()
}

/// Sector 0 partition 0 makes the parameters; these are proved with them.
const OTHERS: [(u64, usize); 3] = [(0, 0), (7, 0), (7, 3)];

fn params_fit_every_seed(kind: CircuitKind, target_constraints: usize) {
    let first = instance(kind, target_constraints, 0, 0);
    let shape: Shape = shape_of_native(&first).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x6b69_6e64);
    let params =
        Arc::new(generate_random_parameters(ViaBridge(first), &mut rng, &ParamsMemory::heap()).unwrap());
    let pvk = prepare_verifying_key(&params.vk);
    let prover = Prover::with_heap_pool(params.clone()).unwrap();
    let pools = AssignmentPools::for_shape(&shape, 1, &Ledger::unlimited(), RegionConfig::heap()).unwrap();

    let mut inputs_seen: Vec<Vec<Scalar>> = Vec::new();
    for (sector_id, partition) in OTHERS {
        let what = format!("{kind} @{target_constraints}, sector {sector_id} partition {partition}");
        let c = instance(kind, target_constraints, sector_id, partition);
        assert_eq!(shape_of_native(&c).unwrap(), shape, "{what}: shape differs from (0, 0)'s");
        let mut w = synthesize_native(&c, &pools, &shape).unwrap();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let (proof, _) = prover.prove_with_randomness(&mut w, r, s).unwrap();
        let inputs = w.input_assignment()[1..].to_vec();
        drop(w);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "{what}: proof rejected");
        // The check has teeth: the proof does not verify for another instance's inputs.
        for other in &inputs_seen {
            if *other != inputs {
                assert!(!verify_proof(&pvk, &proof, other).unwrap(), "{what}: accepted for other inputs");
            }
        }
        assert!(
            inputs_seen.iter().all(|o| *o != inputs),
            "{what}: public inputs equal another seed's (the seed must change the witness)"
        );
        inputs_seen.push(inputs);
    }
    assert_eq!(pools.outstanding(), 0, "{kind}: slabs not returned");
}

#[test]
fn chain_params_fit_every_seed() {
    assert_eq!(CHAIN_K, 5, "chain's constant is fixed, not drawn from the seed");
    params_fit_every_seed(CircuitKind::Chain, 2048);
}

#[test]
fn sha_params_fit_every_seed() {
    // The smallest sha instance: one 64-byte block of message.
    params_fit_every_seed(CircuitKind::Sha, 1);
}

#[test]
fn sector_params_fit_every_seed() {
    params_fit_every_seed(CircuitKind::Sector, 2048);
}
