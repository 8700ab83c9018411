//! [`WitnessCs`]: witness-only synthesis into an [`ArenaAssignment`]'s slabs. `alloc`
//! closures run and their values go straight into the input and aux slabs; `enforce`
//! only counts (its closures are never called, so no linear combination is built); and
//! `is_witness_generator` is true, so gadgets that honour it (neptune's Poseidon
//! `circuit2`/sponge) write their aux values in bulk through `allocate_empty_aux` instead of
//! allocating one variable at a time.

use arenaprove_arena::VecPool;
use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

use crate::native::{Lc, LcScratch, NativeCs, Term};
use crate::{ArenaAssignment, CircuitError};

/// Witness-only constraint system over an assignment (see the module docs).
pub struct WitnessCs<'a> {
    cs: &'a mut ArenaAssignment,
    /// `enforce` calls seen (checked against the recorded rows).
    pub(crate) constraints: usize,
    /// Whether to report `is_witness_generator` (true in production; false in a test that
    /// checks both paths agree).
    generator: bool,
    /// The first error a witness-generator hook could not return.
    pub(crate) sticky: Option<CircuitError>,
    scratch: LcScratch,
}

impl<'a> WitnessCs<'a> {
    pub fn new(cs: &'a mut ArenaAssignment, generator: bool) -> Self {
        WitnessCs { cs, constraints: 0, generator, sticky: None, scratch: LcScratch::default() }
    }

    fn record(&mut self, e: CircuitError) {
        if self.sticky.is_none() {
            self.sticky = Some(e);
        }
    }

    /// Appends `aux_n` aux and `inputs_n` input slots (zeroed) and lends them; on over-shape
    /// the error is kept for the caller of synthesis and empty slices are lent.
    fn extend(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (inputs, aux) = self.cs.witness_values();
        let shape = *self.cs.shape();
        if aux.len() + aux_n > shape.aux || inputs.len() + inputs_n > shape.inputs {
            let (what, requested, capacity) = if aux.len() + aux_n > shape.aux {
                ("aux", aux.len() + aux_n, shape.aux)
            } else {
                ("inputs", inputs.len() + inputs_n, shape.inputs)
            };
            self.record(CircuitError::OverShape { what, requested, capacity, shape });
            return (&mut [], &mut []);
        }
        self.cs.extend_witness(aux_n, inputs_n).unwrap_or((&mut [], &mut []))
    }
}

impl NativeCs for WitnessCs<'_> {
    #[inline]
    fn alloc_aux(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        self.cs.push_aux_witness(value)
    }
    #[inline]
    fn alloc_input(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        self.cs.push_input_witness(value)
    }
    #[inline]
    fn enforce_lc(&mut self, _a: &mut Lc, _b: &mut Lc, _c: &mut Lc) {
        self.constraints += 1;
    }
    #[inline]
    fn enforce<FA, FB, FC>(&mut self, _fa: FA, _fb: FB, _fc: FC)
    where
        FA: FnOnce(&mut Lc),
        FB: FnOnce(&mut Lc),
        FC: FnOnce(&mut Lc),
    {
        self.constraints += 1;
    }
    fn lc_scratch(&mut self) -> &mut LcScratch {
        &mut self.scratch
    }
    fn lc_pool(&self) -> &VecPool<Term> {
        self.cs.lc_terms_pool()
    }
}

impl ConstraintSystem<Scalar> for WitnessCs<'_> {
    type Root = Self;

    #[inline]
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        self.cs.push_aux_witness(value).map_err(CircuitError::into_synthesis)
    }

    #[inline]
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        self.cs.push_input_witness(value).map_err(CircuitError::into_synthesis)
    }

    #[inline]
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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

    fn is_witness_generator(&self) -> bool {
        self.generator
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        let (_, slots) = self.extend(0, new_inputs.len());
        if slots.len() == new_inputs.len() {
            slots.copy_from_slice(new_inputs);
        }
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        let (slots, _) = self.extend(new_aux.len(), 0);
        if slots.len() == new_aux.len() {
            slots.copy_from_slice(new_aux);
        }
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.extend(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.extend(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.extend(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        self.cs.witness_values().0
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.cs.witness_values().1
    }
}
