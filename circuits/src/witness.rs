//! [`ProverWitness`]: what the prover reads from a synthesized assignment.

use blstrs::Scalar;

use crate::{CircuitError, Density};

/// a, b, c evaluations borrowed together.
pub type AbcRef<'a> = (&'a [Scalar], &'a [Scalar], &'a [Scalar]);

/// A synthesized circuit as the Groth16 prover consumes it. Conventions are bellperson
/// 0.27's: input 0 is ONE, and after the circuit's own constraints come one constraint
/// `input_i * 0 = 0` per input (ONE included), so `num_constraints` counts those too.
pub trait ProverWitness {
    /// Rows of a, b, c, including the `input_i * 0 = 0` constraints.
    fn num_constraints(&self) -> usize;
    /// Input assignment; ONE is input 0.
    fn input_assignment(&self) -> &[Scalar];
    fn aux_assignment(&self) -> &[Scalar];
    /// One bit per aux variable: it appears in some A with a non-zero merged coefficient.
    fn a_aux_density(&self) -> Density<'_>;
    /// One bit per input: it appears in some B with a non-zero merged coefficient.
    fn b_input_density(&self) -> Density<'_>;
    fn b_aux_density(&self) -> Density<'_>;
    /// a, b, c evaluations, each `num_constraints` long.
    fn abc(&self) -> Result<AbcRef<'_>, CircuitError>;
    /// Zero-pads a, b, c to `domain_size` and lends them mutably for in-place NTTs.
    fn abc_padded_mut(&mut self, domain_size: usize) -> Result<[&mut [Scalar]; 3], CircuitError>;
    /// Hands a, b, c storage back (slabs return to their pools at once); later abc calls error.
    fn release_abc(&mut self);
    /// The precompiled recording whose products are a, b, c when synthesis left them to the
    /// backend (a witness-only assignment: `abc` errs, and the backend computes a = A.w,
    /// b = B.w, c = C.w from the recording and this witness, then the `input_i * 0 = 0`
    /// rows); `None` when a, b, c are in the witness.
    fn deferred_products(&self) -> Option<&std::sync::Arc<crate::Precompiled>> {
        None
    }
}
