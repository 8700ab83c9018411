//! Verification: a prepared verifying key, single and batch verification.
//!
//! Single: `e(A, B) * e(C, -delta) * e(acc, -gamma) == e(alpha, beta)` with
//! `acc = ic[0] + sum_i input_i * ic[i + 1]`, as one multi-Miller loop and one final
//! exponentiation. Batch (random 128-bit weights z_j, drawn from the caller's rng):
//! `prod_j e(z_j A_j, B_j) * e(sum z_j acc_j, -gamma) * e(sum z_j C_j, -delta)
//!  == e(alpha, beta)^(sum z_j)`.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::{Field, PrimeField};
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;

use super::error::{Groth16Error, Result};
use super::{Proof, VerifyingKey};

/// Limit on proofs per batch (the per-proof Miller loops are held in memory at once).
pub const BATCH_PROOFS_MAX: usize = 1 << 16;

/// A verifying key with its pairing and G2 preparations done once.
#[derive(Clone, Debug)]
pub struct PreparedVerifyingKey {
    alpha_g1_beta_g2: Gt,
    neg_gamma_g2: G2Prepared,
    neg_delta_g2: G2Prepared,
    /// IC points, projective once here (blstrs' multi_exp takes projective bases).
    ic: Vec<G1Projective>,
}

pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    PreparedVerifyingKey {
        alpha_g1_beta_g2: blstrs::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: G2Prepared::from(-vk.gamma_g2),
        neg_delta_g2: G2Prepared::from(-vk.delta_g2),
        ic: vk.ic.iter().map(G1Projective::from).collect(),
    }
}

/// Public inputs up to which `input_acc` runs on the calling thread.
const INPUTS_SEQUENTIAL_MAX: usize = 16;

impl PreparedVerifyingKey {
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    /// `ic[0] + sum_i inputs[i] * ic[i + 1]`.
    fn input_acc(&self, inputs: &[Scalar]) -> Result<G1Projective> {
        if inputs.len() + 1 != self.ic.len() {
            return Err(Groth16Error::PublicInputs { expected: self.num_public_inputs(), got: inputs.len() });
        }
        // Not blst's multi_exp: that queues even a handful of points on blst's shared thread
        // pool, behind whatever MSM the prover is running (the engine verifies partition k
        // while partition k+1's MSMs run), which made `verify` take ~190 ms instead of
        // ~2 ms on the 16-core host. Scalar multiplications on this thread (few inputs) or
        // rayon chunks (many) do not wait for it.
        let term = |(p, s): (&G1Projective, &Scalar)| p * s;
        let sum = if inputs.len() <= INPUTS_SEQUENTIAL_MAX {
            self.ic[1..].iter().zip(inputs).map(term).fold(G1Projective::identity(), |a, b| a + b)
        } else {
            use rayon::prelude::*;
            self.ic[1..]
                .par_iter()
                .zip(inputs.par_iter())
                .map(term)
                .reduce(G1Projective::identity, |a, b| a + b)
        };
        Ok(self.ic[0] + sum)
    }
}

/// Verifies one proof. `Ok(false)` means the proof is wrong; `Err` means the call is
/// malformed (wrong number of public inputs).
pub fn verify_proof(pvk: &PreparedVerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    let acc = pvk.input_acc(public_inputs)?.to_affine();
    let b = G2Prepared::from(proof.b);
    let ml =
        Bls12::multi_miller_loop(&[(&proof.a, &b), (&proof.c, &pvk.neg_delta_g2), (&acc, &pvk.neg_gamma_g2)]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Verifies many proofs with one final exponentiation. Every proof must have exactly
/// `pvk.num_public_inputs()` inputs. `rng` draws the 128-bit weights: a batch with a bad
/// proof passes with probability at most 2^-128.
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    rng: &mut R,
    proofs: &[Proof],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool> {
    if proofs.len() != public_inputs.len() {
        return Err(Groth16Error::Limit {
            what: "public input sets (must equal the proof count)",
            value: public_inputs.len(),
            limit: proofs.len(),
        });
    }
    if proofs.len() > BATCH_PROOFS_MAX {
        return Err(Groth16Error::Limit {
            what: "proofs per batch",
            value: proofs.len(),
            limit: BATCH_PROOFS_MAX,
        });
    }
    if proofs.is_empty() {
        return Ok(true);
    }
    let mut z_sum = Scalar::ZERO;
    let mut acc_sum = G1Projective::identity();
    let mut c_sum = G1Projective::identity();
    let mut za = Vec::with_capacity(proofs.len());
    let mut b_prepared = Vec::with_capacity(proofs.len());
    for (proof, inputs) in proofs.iter().zip(public_inputs) {
        let z = Scalar::from_u128(((rng.next_u64() as u128) << 64) | rng.next_u64() as u128);
        acc_sum += pvk.input_acc(inputs)? * z;
        c_sum += G1Projective::from(proof.c) * z;
        za.push((G1Projective::from(proof.a) * z).to_affine());
        b_prepared.push(G2Prepared::from(proof.b));
        z_sum += z;
    }
    let acc_sum = acc_sum.to_affine();
    let c_sum = c_sum.to_affine();
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = za.iter().zip(b_prepared.iter()).collect();
    terms.push((&acc_sum, &pvk.neg_gamma_g2));
    terms.push((&c_sum, &pvk.neg_delta_g2));
    let ml = Bls12::multi_miller_loop(&terms);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2 * z_sum)
}

/// Convenience: prepares `vk` and verifies one proof.
pub fn verify_with_vk(vk: &VerifyingKey, proof: &Proof, public_inputs: &[Scalar]) -> Result<bool> {
    verify_proof(&prepare_verifying_key(vk), proof, public_inputs)
}
