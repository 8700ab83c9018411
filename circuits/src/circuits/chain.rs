//! `chain`: x_{i+1} = x_i^2 + k for N steps, one constraint each; public input x_N.
//!
//! Variables: x_0 .. x_{N-1} are aux, x_N is input 1 (after ONE). Constraint i is
//! `x_i * x_i = x_{i+1} - k * ONE`. With the two `input_i * 0 = 0` rows the shape has
//! N + 2 constraints, N aux and 2 inputs.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The circuit's constant k (the anchors' chain is x' = x^2 + 5). It is part of the
/// constraints, so it must not depend on the seed: parameters made for one instance must
/// prove every other instance of the same size.
pub const CHAIN_K: u64 = 5;

/// The chain circuit with its witness (x_0 drawn from the seed; k = [`CHAIN_K`]).
#[derive(Clone, Debug)]
pub struct ChainCircuit {
    pub steps: usize,
    pub x0: Scalar,
    pub k: Scalar,
}

impl ChainCircuit {
    /// `steps` squarings from a witness drawn deterministically from `seed`.
    pub fn new(steps: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6368_6169_6e00_0000);
        let x0 = Scalar::random(&mut rng);
        ChainCircuit { steps, x0, k: Scalar::from(CHAIN_K) }
    }

    /// Steps whose shape has `constraints` rows (N + 2), at least 1.
    pub fn steps_for_constraints(constraints: usize) -> usize {
        constraints.saturating_sub(2).max(1)
    }

    /// x_N: the public input.
    pub fn output(&self) -> Scalar {
        (0..self.steps).fold(self.x0, |x, _| x.square() + self.k)
    }

    /// The public inputs a verifier needs (ONE excluded).
    pub fn public_inputs(&self) -> Vec<Scalar> {
        vec![self.output()]
    }
}

impl Circuit<Scalar> for ChainCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if self.steps == 0 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let mut x_val = self.x0;
        let mut x = cs.alloc(|| "x_0", || Ok(x_val))?;
        for i in 0..self.steps {
            let next_val = x_val.square() + self.k;
            let next = if i + 1 == self.steps {
                cs.alloc_input(|| "x_N", || Ok(next_val))?
            } else {
                cs.alloc(|| format!("x_{}", i + 1), || Ok(next_val))?
            };
            let k = self.k;
            cs.enforce(|| format!("step {i}"), |lc| lc + x, |lc| lc + x, |lc| lc + next - (k, CS::one()));
            x = next;
            x_val = next_val;
        }
        Ok(())
    }
}

impl crate::NativeCircuit for ChainCircuit {
    fn synthesize_native<CS: crate::NativeCs>(&self, cs: &mut CS) -> Result<(), crate::CircuitError> {
        if self.steps == 0 {
            return Err(crate::CircuitError::Invalid {
                what: "chain steps",
                reason: "must be at least 1".into(),
            });
        }
        let mut x_val = self.x0;
        let mut x = cs.alloc_aux(x_val)?;
        let neg_k = -self.k;
        for i in 0..self.steps {
            let next_val = x_val.square() + self.k;
            let next = if i + 1 == self.steps { cs.alloc_input(next_val)? } else { cs.alloc_aux(next_val)? };
            cs.enforce(
                |a| {
                    a.add_var(x);
                },
                |b| {
                    b.add_var(x);
                },
                |c| {
                    c.add_var(next).add_const(neg_k);
                },
            );
            x = next;
            x_val = next_val;
        }
        Ok(())
    }
}
