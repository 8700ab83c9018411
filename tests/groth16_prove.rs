//! Proofs: with the same parameters and the same r, s our proof bytes equal bellperson
//! 0.27's `create_proof`; each side verifies the other's proofs; a flipped bit or a wrong
//! public input fails in both; wrong shapes and input counts are clear errors.
//!
//! Sizes are small so the suite stays fast in release on 2 cores; the 2^16 cases are
//! `#[ignore]`d: `cargo test --release --test groth16_prove -- --ignored`.
use std::sync::Arc;

use arenaprove::circuits::circuits::ChainCircuit;
use arenaprove::circuits::synthesize_heap;
use arenaprove::engine::groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proof, verify_proofs_batch, Groth16Error,
    Parameters, ParamsMemory, Proof, Prover, PROOF_BYTES,
};
use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

type BpParams = bellperson::groth16::Parameters<Bls12>;
type BpProof = bellperson::groth16::Proof<Bls12>;

/// bellpepper's SHA-256 gadget over `len` bytes; the digest is packed into public inputs.
#[derive(Clone)]
struct Sha256Circuit {
    preimage: Vec<u8>,
}

impl Sha256Circuit {
    fn new(len: usize, seed: u8) -> Self {
        Sha256Circuit { preimage: (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect() }
    }
}

impl Circuit<Scalar> for Sha256Circuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = multipack::bytes_to_bits(&self.preimage);
        let bits = bits
            .iter()
            .enumerate()
            .map(|(i, b)| {
                Ok(Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(*b))?))
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

/// Public inputs (ONE excluded) as the prover's synthesis sees them.
fn public_inputs<C: Circuit<Scalar>>(c: C) -> Vec<Scalar> {
    synthesize_heap(c).unwrap().input_assignment[1..].to_vec()
}

struct Setup {
    ours: Arc<Parameters>,
    theirs: BpParams,
}

fn setup<C: Circuit<Scalar>>(c: C, seed: u64) -> Setup {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ours = generate_random_parameters(c, &mut rng, &ParamsMemory::heap()).unwrap();
    let theirs = BpParams::read(&ours.to_bytes()[..], false).unwrap();
    Setup { ours: Arc::new(ours), theirs }
}

fn flip(bytes: &[u8; PROOF_BYTES], bit: usize) -> [u8; PROOF_BYTES] {
    let mut b = *bytes;
    b[bit / 8] ^= 1 << (bit % 8);
    b
}

/// Ours verifies `bytes`: a decode error counts as a rejection.
fn ours_accepts(s: &Setup, bytes: &[u8], inputs: &[Scalar]) -> bool {
    let pvk = prepare_verifying_key(&s.ours.vk);
    Proof::from_bytes(bytes).map(|p| verify_proof(&pvk, &p, inputs).unwrap()).unwrap_or(false)
}

fn theirs_accepts(s: &Setup, bytes: &[u8], inputs: &[Scalar]) -> bool {
    let pvk = bellperson::groth16::prepare_verifying_key(&s.theirs.vk);
    BpProof::read(bytes)
        .map(|p| bellperson::groth16::verify_proof(&pvk, &p, inputs).unwrap())
        .unwrap_or(false)
}

/// The whole cross-check for one circuit.
fn cross_check<C: Circuit<Scalar> + Clone + Send>(name: &str, c: C, seed: u64) {
    let s = setup(c.clone(), seed);
    let inputs = public_inputs(c.clone());
    let prover = Prover::with_heap_pool(s.ours.clone()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 100);
    let mut proofs = Vec::new();
    for round in 0..2 {
        let (r, sr) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let (ours, timings) = prover.prove_circuit(c.clone(), r, sr).unwrap();
        let theirs = bellperson::groth16::create_proof(c.clone(), &s.theirs, r, sr).unwrap();
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        let ours_bytes = ours.to_bytes();
        assert_eq!(
            ours_bytes.as_slice(),
            theirs_bytes.as_slice(),
            "{name} round {round}: proof bytes differ"
        );
        assert!(timings.total() > std::time::Duration::ZERO);
        // Each side verifies both proofs (they are the same bytes, but go through each
        // side's decoder and verifier).
        assert!(theirs_accepts(&s, &ours_bytes, &inputs), "{name}: bellperson rejects our proof");
        assert!(ours_accepts(&s, &theirs_bytes, &inputs), "{name}: we reject bellperson's proof");
        proofs.push(ours);
    }
    // Flipped bits (one in each of A, B, C) fail in both.
    let good = proofs[0].to_bytes();
    for bit in [5, 48 * 8 + 77, 144 * 8 + 300] {
        let bad = flip(&good, bit);
        assert!(!ours_accepts(&s, &bad, &inputs), "{name}: we accept bit {bit} flipped");
        assert!(!theirs_accepts(&s, &bad, &inputs), "{name}: bellperson accepts bit {bit} flipped");
    }
    // A wrong public input fails in both.
    let mut wrong = inputs.clone();
    wrong[0] += Scalar::ONE;
    assert!(
        !ours_accepts(&s, &good, &wrong) && !theirs_accepts(&s, &good, &wrong),
        "{name}: wrong input accepted"
    );
    // A wrong number of public inputs is an error, not a `false`.
    let pvk = prepare_verifying_key(&s.ours.vk);
    let mut extra = inputs.clone();
    extra.push(Scalar::ONE);
    match verify_proof(&pvk, &proofs[0], &extra) {
        Err(Groth16Error::PublicInputs { expected, got }) => {
            assert_eq!((expected, got), (inputs.len(), inputs.len() + 1))
        }
        other => panic!("{name}: {other:?}"),
    }
    // Batch verification: all good passes, one bad proof fails the batch.
    let all = vec![inputs.clone(); proofs.len()];
    assert!(verify_proofs_batch(&pvk, &mut rng, &proofs, &all).unwrap(), "{name}: batch rejects good proofs");
    let mut bad = proofs.clone();
    bad[1].c = proofs[0].c;
    assert!(!verify_proofs_batch(&pvk, &mut rng, &bad, &all).unwrap(), "{name}: batch accepts a bad proof");
    let mut bad_inputs = all.clone();
    bad_inputs[1] = wrong;
    assert!(!verify_proofs_batch(&pvk, &mut rng, &proofs, &bad_inputs).unwrap());
}

#[test]
fn chain_proofs_equal_bellperson() {
    for (steps, seed) in [(1usize, 1u64), (254, 2), (1022, 3), (4094, 4)] {
        cross_check(&format!("chain {steps}"), ChainCircuit::new(steps, seed), seed);
    }
}

#[test]
fn sha256_gadget_proofs_equal_bellperson() {
    // 0 bytes: one compression (~27k constraints, domain 2^15).
    cross_check("sha256 of 0 bytes", Sha256Circuit::new(0, 1), 11);
}

#[test]
fn circuits_crate_sha_and_sector_equal_bellperson() {
    use arenaprove::circuits::circuits::{build, CircuitKind};
    // sha: the circuits crate's instance (bellpepper gadget on the generic path), 1 block.
    cross_check("sha (circuits crate)", build(CircuitKind::Sha, 20_000, 3).unwrap(), 31);
    // sector: the smallest partition (one challenge, ~37k constraints, domain 2^16).
    cross_check("sector (circuits crate)", build(CircuitKind::Sector, 1, 3).unwrap(), 32);
}

/// Our prover fed by the circuits crate's native, slab-backed synthesis gives bellperson's
/// bytes too. (Not sha: its native gadget is a different constraint system from
/// bellpepper's SHA-256 gadget, so parameters made from one do not fit the other's proofs.)
#[test]
fn native_arena_witness_proofs_equal_bellperson() {
    use arenaprove::arena::{Ledger, RegionConfig};
    use arenaprove::circuits::circuits::{build, CircuitKind};
    use arenaprove::circuits::{shape_of_native, synthesize_native, AssignmentPools};
    for (kind, n) in [(CircuitKind::Chain, 3000usize), (CircuitKind::Sector, 1)] {
        let c = build(kind, n, 9).unwrap();
        let s = setup(c.clone(), 41);
        let shape = shape_of_native(&c).unwrap();
        let pools =
            AssignmentPools::for_shape(&shape, 1, &Ledger::unlimited(), RegionConfig::heap()).unwrap();
        let prover = Prover::with_heap_pool(s.ours.clone()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (r, sr) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let mut w = synthesize_native(&c, &pools, &shape).unwrap();
        let start = prover.prove_start(&mut w).unwrap();
        // a, b, c went back to their pool the moment h was computed.
        assert_eq!(
            pools.abc.as_ref().unwrap().outstanding(),
            0,
            "{kind}: a, b, c slabs not released by prove_start"
        );
        let (ours, _) = prover.finalize(start, &w, r, sr).unwrap();
        drop(w);
        assert_eq!(pools.outstanding(), 0);
        let theirs = bellperson::groth16::create_proof(c.clone(), &s.theirs, r, sr).unwrap();
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        assert_eq!(
            ours.to_bytes().as_slice(),
            theirs_bytes.as_slice(),
            "{kind}: native-witness proof differs"
        );
    }
}

#[test]
#[ignore = "2^16-domain circuits: ~1 minute in release on 2 cores"]
fn large_proofs_equal_bellperson() {
    cross_check("sha256 of 64 bytes", Sha256Circuit::new(64, 2), 12);
    cross_check("chain 2^16 - 2", ChainCircuit::new((1 << 16) - 2, 5), 13);
}

#[test]
fn params_for_another_shape_or_bad_witness_are_errors() {
    let s = setup(ChainCircuit::new(100, 1), 21);
    let prover = Prover::with_heap_pool(s.ours.clone()).unwrap();
    // More steps: more aux variables than the L query has.
    let e = prover.prove_circuit(ChainCircuit::new(101, 1), Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(e, Groth16Error::ShapeMismatch { section: "l", params_len: 100, circuit_len: 101 }),
        "{e}"
    );
    assert!(e.to_string().contains("'l'"), "{e}");
    // Much larger: the domain differs first.
    let e = prover.prove_circuit(ChainCircuit::new(1000, 1), Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(e, Groth16Error::ShapeMismatch { section: "h", .. }), "{e}");
    // Another public input count.
    let e = prover.prove_circuit(Sha256Circuit::new(0, 1), Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(e, Groth16Error::ShapeMismatch { section: "vk.ic", .. }), "{e}");
    // A proof from a wrong witness (right shape) is rejected by both verifiers.
    let mut w = synthesize_heap(ChainCircuit::new(100, 1)).unwrap();
    w.aux_assignment[7] += Scalar::ONE;
    let (p, _) = prover.prove_with_randomness(&mut w, Scalar::ONE, Scalar::ONE).unwrap();
    let inputs = ChainCircuit::new(100, 1).public_inputs();
    assert!(!ours_accepts(&s, &p.to_bytes(), &inputs) && !theirs_accepts(&s, &p.to_bytes(), &inputs));
    // Proof bytes of the wrong length, or with infinity, are errors.
    assert!(matches!(Proof::from_bytes(&[0u8; 191]), Err(Groth16Error::ProofBytes { .. })));
    let mut inf = [0u8; PROOF_BYTES];
    inf[0] = 0xc0;
    inf[48] = 0xc0;
    inf[144] = 0xc0;
    let e = Proof::from_bytes(&inf).unwrap_err();
    assert!(e.to_string().contains("infinity"), "{e}");
    // The pool is whole again after the proofs.
    assert_eq!(prover.memory().scalars.as_ref().unwrap().outstanding(), 0);
}
