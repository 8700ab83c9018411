//! Parallel witness generation for circuits made of a prologue and independent parts of
//! one shape (a PoRep partition: replica id and commitments, then one sub-circuit per
//! challenge).
//!
//! The serial witness of such a circuit is the prologue's values followed by part 0's,
//! part 1's, ... in order. [`Precompiled::witness_parts`] runs the prologue once into the
//! assignment (under [`WitnessCs`]), derives every part's input and aux range from what the
//! prologue allocated and the recorded totals (`(total - prologue) / parts` each; a
//! remainder is a [`PrecompiledError::Parts`] error), extends the slabs once, and then runs
//! the parts in parallel (rayon), each under a [`PartCs`] that writes straight into its own
//! window of the slabs. A part that allocates or enforces more or less than its share fails
//! the partition with the part's index ([`PrecompiledError::Parts`]); nothing is silent,
//! so the result is the serial witness byte for byte or an error.
//!
//! A part may *replay* the prologue first (a circuit whose only public entry point
//! synthesizes the prologue before each part, as storage-proofs' `StackedCircuit` does):
//! [`PartCs`] then discards the first `prologue` allocations and constraints, whose values
//! already are in the assignment, into a scratch buffer.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Precompiled, PrecompiledError, WitnessCs};
use crate::{ArenaAssignment, CircuitError};

/// Counts of one piece of witness synthesis: inputs (ONE excluded), aux and constraints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub inputs: usize,
    pub aux: usize,
    pub constraints: usize,
}

/// A circuit whose witness is a prologue followed by [`PartedCircuit::parts`] parts of one
/// shape that depend on the prologue's values only (see the module docs).
pub trait PartedCircuit: Send + Sync {
    /// Synthesizes the prologue.
    fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError>;
    /// How many parts follow the prologue.
    fn parts(&self) -> usize;
    /// Synthesizes part `i` (after the prologue again, if [`PartedCircuit::replays_prologue`]).
    fn part(&self, i: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError>;
    /// Whether [`PartedCircuit::part`] synthesizes the prologue before the part.
    fn replays_prologue(&self) -> bool;
}

/// The witness-only constraint system of one part: allocations go into the part's window
/// of the assignment's input and aux slabs (after `replay`'s, which are discarded), with
/// the variable indices the serial synthesis gives them; `enforce` only counts.
pub struct PartCs<'a> {
    aux: &'a mut [Scalar],
    inputs: &'a mut [Scalar],
    /// Global index of this part's first aux / input value (what `Variable`s carry).
    aux_base: usize,
    input_base: usize,
    /// What to discard first (the prologue, when replayed).
    replay: Counts,
    /// Allocations and constraints seen so far, replay included.
    seen: Counts,
    scratch_aux: Vec<Scalar>,
    scratch_inputs: Vec<Scalar>,
    sticky: Option<PrecompiledError>,
    part: usize,
    identity: &'a str,
}

impl<'a> PartCs<'a> {
    fn new(
        identity: &'a str,
        part: usize,
        windows: (&'a mut [Scalar], &'a mut [Scalar]),
        bases: (usize, usize),
        replay: Counts,
    ) -> Self {
        let (inputs, aux) = windows;
        PartCs {
            aux,
            inputs,
            input_base: bases.0,
            aux_base: bases.1,
            replay,
            seen: Counts::default(),
            scratch_aux: Vec::new(),
            scratch_inputs: Vec::new(),
            sticky: None,
            part,
            identity,
        }
    }

    fn refuse(&mut self, what: &'static str, synthesized: usize, expected: usize) {
        if self.sticky.is_none() {
            self.sticky = Some(PrecompiledError::Parts {
                identity: self.identity.to_string(),
                part: Some(self.part),
                what,
                synthesized,
                expected,
            });
        }
    }

    /// Slots for `n` values starting at logical position `at` of a part's stream: the
    /// scratch while replaying, the window after; a run across the boundary or past the
    /// window is refused (and lent scratch so synthesis can go on to report it).
    fn slots<'s>(
        window: &'s mut [Scalar],
        scratch: &'s mut Vec<Scalar>,
        replay: usize,
        at: usize,
        n: usize,
    ) -> Result<&'s mut [Scalar], &'s mut [Scalar]> {
        let refuse = |scratch: &'s mut Vec<Scalar>| {
            scratch.clear();
            scratch.resize(n, Scalar::ZERO);
            &mut scratch[..]
        };
        if at + n <= replay {
            return Ok(refuse(scratch));
        }
        if at < replay || at - replay + n > window.len() {
            return Err(refuse(scratch));
        }
        Ok(&mut window[at - replay..at - replay + n])
    }

    fn take_aux(&mut self, n: usize) -> &mut [Scalar] {
        let at = self.seen.aux;
        self.seen.aux += n;
        let expected = self.replay.aux + self.aux.len();
        match Self::slots(self.aux, &mut self.scratch_aux, self.replay.aux, at, n) {
            Ok(s) => s,
            Err(s) => {
                if self.sticky.is_none() {
                    self.sticky = Some(PrecompiledError::Parts {
                        identity: self.identity.to_string(),
                        part: Some(self.part),
                        what: "aux (replay included)",
                        synthesized: at + n,
                        expected,
                    });
                }
                s
            }
        }
    }

    fn take_inputs(&mut self, n: usize) -> &mut [Scalar] {
        let at = self.seen.inputs;
        self.seen.inputs += n;
        let expected = self.replay.inputs + self.inputs.len();
        match Self::slots(self.inputs, &mut self.scratch_inputs, self.replay.inputs, at, n) {
            Ok(s) => s,
            Err(s) => {
                if self.sticky.is_none() {
                    self.sticky = Some(PrecompiledError::Parts {
                        identity: self.identity.to_string(),
                        part: Some(self.part),
                        what: "inputs (replay included)",
                        synthesized: at + n,
                        expected,
                    });
                }
                s
            }
        }
    }

    /// The variable the serial synthesis gives the value at logical position `at`.
    /// (The prologue's aux start at 0 and its inputs at 1, after ONE.)
    fn aux_variable(&self, at: usize) -> Variable {
        let index = if at < self.replay.aux { at } else { self.aux_base + at - self.replay.aux };
        Variable::new_unchecked(Index::Aux(index))
    }

    fn input_variable(&self, at: usize) -> Variable {
        let index = if at < self.replay.inputs { 1 + at } else { self.input_base + at - self.replay.inputs };
        Variable::new_unchecked(Index::Input(index))
    }

    /// The part's result: its first error, or a count that is not exactly its share.
    fn finish(mut self, result: Result<(), SynthesisError>, rows: usize) -> Result<(), CircuitError> {
        if let Some(e) = self.sticky.take() {
            return Err(CircuitError::Precompiled(e));
        }
        result.map_err(CircuitError::Synthesis)?;
        let want = Counts {
            inputs: self.replay.inputs + self.inputs.len(),
            aux: self.replay.aux + self.aux.len(),
            constraints: self.replay.constraints + rows,
        };
        for (what, got, expected) in [
            ("inputs (replay included)", self.seen.inputs, want.inputs),
            ("aux (replay included)", self.seen.aux, want.aux),
            ("constraints (replay included)", self.seen.constraints, want.constraints),
        ] {
            if got != expected {
                self.refuse(what, got, expected);
            }
        }
        match self.sticky {
            Some(e) => Err(CircuitError::Precompiled(e)),
            None => Ok(()),
        }
    }
}

impl ConstraintSystem<Scalar> for PartCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let at = self.seen.aux;
        self.take_aux(1)[0] = value;
        Ok(self.aux_variable(at))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let at = self.seen.inputs;
        self.take_inputs(1)[0] = value;
        Ok(self.input_variable(at))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.seen.constraints += 1;
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
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.take_inputs(new_inputs.len()).copy_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.take_aux(new_aux.len()).copy_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        // Both runs are checked (and counted) before either slice is lent.
        let (aux_at, inputs_at) = (self.seen.aux, self.seen.inputs);
        let _ = self.take_aux(aux_n);
        let _ = self.take_inputs(inputs_n);
        let aux = match Self::slots(self.aux, &mut self.scratch_aux, self.replay.aux, aux_at, aux_n) {
            Ok(s) | Err(s) => s,
        };
        let inputs =
            match Self::slots(self.inputs, &mut self.scratch_inputs, self.replay.inputs, inputs_at, inputs_n)
            {
                Ok(s) | Err(s) => s,
            };
        for v in aux.iter_mut().chain(inputs.iter_mut()) {
            *v = Scalar::ZERO;
        }
        (aux, inputs)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        let s = self.take_inputs(n);
        s.fill(Scalar::ZERO);
        s
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        let s = self.take_aux(n);
        s.fill(Scalar::ZERO);
        s
    }

    /// This part's inputs so far (not the whole assignment's: parts run concurrently).
    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs[..self.seen.inputs.saturating_sub(self.replay.inputs).min(self.inputs.len())]
    }

    /// This part's aux so far (not the whole assignment's: parts run concurrently).
    fn aux_slice(&self) -> &[Scalar] {
        &self.aux[..self.seen.aux.saturating_sub(self.replay.aux).min(self.aux.len())]
    }
}

impl Precompiled {
    /// Witness-only synthesis of a [`PartedCircuit`] into `cs` (holding ONE only), the
    /// parts in parallel (see the module docs). The assignment equals
    /// [`Precompiled::witness_into`]'s for the same circuit run serially.
    pub fn witness_parts<P: PartedCircuit + ?Sized>(
        &self,
        circuit: &P,
        cs: &mut ArenaAssignment,
    ) -> Result<(), CircuitError> {
        let prologue_rows =
            self.witness_run(cs, true, |w| circuit.prologue(w).map_err(CircuitError::Synthesis))?;
        let (inputs, aux) = cs.witness_values();
        // ONE is not the prologue's: a replaying part does not allocate it.
        let prologue = Counts { inputs: inputs.len() - 1, aux: aux.len(), constraints: prologue_rows };
        let h = &self.header;
        let parts = circuit.parts();
        let remaining = Counts {
            inputs: (h.inputs as usize).saturating_sub(inputs.len()),
            aux: (h.aux as usize).saturating_sub(aux.len()),
            constraints: self.rows().saturating_sub(prologue_rows),
        };
        let share = |what: &'static str, total: usize| -> Result<usize, CircuitError> {
            if parts == 0 || total % parts != 0 {
                return Err(CircuitError::Precompiled(PrecompiledError::Parts {
                    identity: h.identity.clone(),
                    part: None,
                    what,
                    synthesized: total,
                    expected: parts,
                }));
            }
            Ok(total / parts)
        };
        let each = Counts {
            inputs: share("inputs after the prologue, shared by the parts", remaining.inputs)?,
            aux: share("aux after the prologue, shared by the parts", remaining.aux)?,
            constraints: share("constraints after the prologue, shared by the parts", remaining.constraints)?,
        };
        let (input_base, aux_base) = (inputs.len(), aux.len());
        let (aux_w, input_w) = cs.extend_witness(remaining.aux, remaining.inputs)?;
        let replay = if circuit.replays_prologue() { prologue } else { Counts::default() };
        let identity = h.identity.as_str();
        let results: Vec<Result<(), CircuitError>> = chunks(input_w, each.inputs, parts)
            .into_par_iter()
            .zip(chunks(aux_w, each.aux, parts))
            .enumerate()
            .map(|(i, (inputs, aux))| {
                let bases = (input_base + i * each.inputs, aux_base + i * each.aux);
                let mut pcs = PartCs::new(identity, i, (inputs, aux), bases, replay);
                let result = circuit.part(i, &mut pcs);
                pcs.finish(result, each.constraints)
            })
            .collect();
        results.into_iter().collect()
    }
}

/// `parts` consecutive windows of `each` values (`each` may be 0).
fn chunks(slice: &mut [Scalar], each: usize, parts: usize) -> Vec<&mut [Scalar]> {
    let mut out = Vec::with_capacity(parts);
    let mut rest = slice;
    for _ in 0..parts {
        let (head, tail) = rest.split_at_mut(each);
        out.push(head);
        rest = tail;
    }
    out
}

/// [`super::synthesize_precompiled`] with the parallel witness: ONE, the prologue, the
/// parts in parallel, the products, then the `input_i * 0 = 0` rows.
pub fn synthesize_precompiled_parts<P: PartedCircuit + ?Sized>(
    circuit: &P,
    pc: &Precompiled,
    pools: &crate::AssignmentPools,
    shape: &crate::Shape,
) -> Result<ArenaAssignment, CircuitError> {
    let mut cs = ArenaAssignment::new(pools, shape)?;
    cs.alloc_one()?;
    pc.witness_parts(circuit, &mut cs)?;
    pc.products_into(&mut cs)?;
    cs.finish()?;
    Ok(cs)
}
