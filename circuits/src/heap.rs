//! [`HeapAssignment`]: the heap baseline. It mirrors bellperson 0.27's private
//! `ProvingAssignment` step for step, so that [`crate::ArenaAssignment`] can be checked
//! against it and benchmarked against it:
//!
//! * a, b, c, inputs and aux are `Vec`s grown by `push` from empty;
//! * every `enforce` builds three fresh `LinearCombination`s (bellpepper-core's), then
//!   evaluates them: a coefficient of zero is skipped, a coefficient of ONE is not
//!   multiplied, and a density bit is set for every term whose merged coefficient is
//!   non-zero (A: aux only, since inputs have full density in A through the
//!   `input_i * 0 = 0` rows; B: inputs and aux; C: none).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::density::DensityBits;
use crate::witness::AbcRef;
use crate::{CircuitError, Density, ProverWitness};

/// The baseline assignment (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeapAssignment {
    pub a_aux_density: DensityBits,
    pub b_input_density: DensityBits,
    pub b_aux_density: DensityBits,
    pub a: Vec<Scalar>,
    pub b: Vec<Scalar>,
    pub c: Vec<Scalar>,
    pub input_assignment: Vec<Scalar>,
    pub aux_assignment: Vec<Scalar>,
    /// Rows before any padding (a, b, c may be longer after `abc_padded_mut`).
    constraints: usize,
    released: bool,
}

impl HeapAssignment {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the `input_i * 0 = 0` constraints, as bellperson does after synthesis.
    pub fn enforce_input_constraints(&mut self) {
        for i in 0..self.input_assignment.len() {
            self.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
    }
}

/// Synthesizes `circuit` exactly as bellperson 0.27's prover does: ONE as input 0, the
/// circuit, then one `input_i * 0 = 0` constraint per input.
pub fn synthesize_heap<C: Circuit<Scalar>>(circuit: C) -> Result<HeapAssignment, SynthesisError> {
    let mut cs = HeapAssignment::new();
    cs.alloc_input(|| "", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    cs.enforce_input_constraints();
    Ok(cs)
}

/// bellperson's `eval_with_trackers`: skip zero coefficients, do not multiply by ONE,
/// mark density for every non-zero term.
#[inline]
pub(crate) fn eval_tracked(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut DensityBits>,
    mut aux_density: Option<&mut DensityBits>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += scaled(inputs[i], coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.inc(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += scaled(aux[i], coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.inc(i);
            }
        }
    }
    acc
}

/// bellpepper's `LinearCombination::eval` (no zero skip, no density).
#[inline]
fn eval_plain(lc: &LinearCombination<Scalar>, inputs: &[Scalar], aux: &[Scalar]) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        acc += scaled(inputs[i], coeff);
    }
    for (&i, coeff) in lc.iter_aux() {
        acc += scaled(aux[i], coeff);
    }
    acc
}

#[inline(always)]
pub(crate) fn scaled(value: Scalar, coeff: &Scalar) -> Scalar {
    if *coeff == Scalar::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Scalar> for HeapAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        let b = b(LinearCombination::zero());
        let c = c(LinearCombination::zero());
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        let a_res = eval_tracked(&a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b_res =
            eval_tracked(&b, Some(&mut self.b_input_density), Some(&mut self.b_aux_density), inputs, aux);
        let c_res = eval_plain(&c, inputs, aux);
        self.a.push(a_res);
        self.b.push(b_res);
        self.c.push(c_res);
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

impl ProverWitness for HeapAssignment {
    fn num_constraints(&self) -> usize {
        self.constraints
    }
    fn input_assignment(&self) -> &[Scalar] {
        &self.input_assignment
    }
    fn aux_assignment(&self) -> &[Scalar] {
        &self.aux_assignment
    }
    fn a_aux_density(&self) -> Density<'_> {
        self.a_aux_density.as_density()
    }
    fn b_input_density(&self) -> Density<'_> {
        self.b_input_density.as_density()
    }
    fn b_aux_density(&self) -> Density<'_> {
        self.b_aux_density.as_density()
    }
    fn abc(&self) -> Result<AbcRef<'_>, CircuitError> {
        if self.released {
            return Err(CircuitError::AbcReleased);
        }
        let n = self.constraints;
        Ok((&self.a[..n], &self.b[..n], &self.c[..n]))
    }
    fn abc_padded_mut(&mut self, domain_size: usize) -> Result<[&mut [Scalar]; 3], CircuitError> {
        if self.released {
            return Err(CircuitError::AbcReleased);
        }
        if domain_size < self.constraints {
            return Err(CircuitError::DomainTooSmall { domain_size, constraints: self.constraints });
        }
        for v in [&mut self.a, &mut self.b, &mut self.c] {
            v.truncate(self.constraints);
            v.resize(domain_size, Scalar::ZERO);
        }
        Ok([&mut self.a[..], &mut self.b[..], &mut self.c[..]])
    }
    fn release_abc(&mut self) {
        self.released = true;
        self.a = Vec::new();
        self.b = Vec::new();
        self.c = Vec::new();
    }
}
