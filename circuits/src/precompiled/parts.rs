//! Parallel witness generation for circuits made of a prologue and independent parts of
//! one shape (a PoRep partition: replica id and commitments, then one sub-circuit per
//! challenge), each part possibly in pieces.
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
//! synthesizes the prologue before each part, as storage-proofs' `StackedCircuit::synthesize`
//! does when handed one challenge): [`PartCs`] then discards the first `prologue`
//! allocations and constraints, whose values already are in the assignment, into a scratch
//! buffer.
//!
//! A part may also be split into [`PartedCircuit::pieces`] pieces (a PoRep challenge: its
//! merkle paths level by level, each label's SHA-256 block by block), so that a partition
//! of few parts still fills the machine. Piece `j` of every part has one shape; the pieces'
//! windows are measured on part 0 (piece by piece, in parallel, values included, nothing
//! written), checked to add up to a part's share, and kept with the [`Precompiled`] for
//! the next partition with the same share and piece count (another share or count measures
//! again). A piece rebuilds what it needs from earlier pieces inside [`PartCs::replay`],
//! whose allocations and constraints go to scratch and are not the piece's own; its own
//! then must be exactly its window, or the partition fails naming the part and the piece.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{Precompiled, PrecompiledError, WitnessCs};
use crate::{ArenaAssignment, CircuitError};

/// Counts of one piece of witness synthesis: inputs (ONE excluded), aux and constraints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            inputs: self.inputs + o.inputs,
            aux: self.aux + o.aux,
            constraints: self.constraints + o.constraints,
        }
    }
}

impl std::iter::Sum for Counts {
    fn sum<I: Iterator<Item = Counts>>(iter: I) -> Counts {
        iter.fold(Counts::default(), |a, b| a + b)
    }
}

/// The windows of a part's pieces, measured for parts of share `each` (kept by
/// [`Precompiled`]).
#[derive(Clone, Debug)]
pub(crate) struct PieceLayout {
    each: Counts,
    pieces: Vec<Counts>,
}

/// What [`mismatch`] calls the counts of one piece, and of part 0's pieces measured.
const OWN: [&str; 3] = ["inputs", "aux", "constraints"];
const MEASURED: [&str; 3] = [
    "inputs of part 0's pieces, measured",
    "aux of part 0's pieces, measured",
    "constraints of part 0's pieces, measured",
];

/// `Ok` where `got` is `want`, else the first count that differs as a
/// [`PrecompiledError::Parts`] at `at`, named from `names` ([`OWN`], [`MEASURED`]).
fn mismatch(
    identity: &str,
    at: (Option<usize>, Option<usize>),
    names: [&'static str; 3],
    got: Counts,
    want: Counts,
) -> Result<(), CircuitError> {
    for (what, got, expected) in [
        (names[0], got.inputs, want.inputs),
        (names[1], got.aux, want.aux),
        (names[2], got.constraints, want.constraints),
    ] {
        if got != expected {
            return Err(CircuitError::Precompiled(parts_error(identity, at, what, got, expected)));
        }
    }
    Ok(())
}

/// [`PrecompiledError::Parts`]: `part`, `piece` (where the part is in pieces) or neither.
fn parts_error(
    identity: &str,
    (part, piece): (Option<usize>, Option<usize>),
    what: &'static str,
    synthesized: usize,
    expected: usize,
) -> PrecompiledError {
    PrecompiledError::Parts { identity: identity.to_string(), part, piece, what, synthesized, expected }
}

/// A circuit whose witness is a prologue followed by [`PartedCircuit::parts`] parts of one
/// shape that depend on the prologue's values only (see the module docs).
pub trait PartedCircuit: Send + Sync {
    /// Synthesizes the prologue.
    fn prologue(&self, cs: &mut WitnessCs<'_>) -> Result<(), SynthesisError>;
    /// How many parts follow the prologue.
    fn parts(&self) -> usize;
    /// How many pieces each part is synthesized in (1: the part at once). Piece `j` of every
    /// part must have one shape; the pieces of a part, in order, are the part.
    fn pieces(&self) -> usize {
        1
    }
    /// Synthesizes piece `piece` of part `i` (after the prologue again, if
    /// [`PartedCircuit::replays_prologue`]); what it needs from earlier pieces it rebuilds
    /// inside [`PartCs::replay`].
    fn part(&self, i: usize, piece: usize, cs: &mut PartCs<'_>) -> Result<(), SynthesisError>;
    /// Whether [`PartedCircuit::part`] synthesizes the prologue before the part.
    fn replays_prologue(&self) -> bool;
}

/// One slab's side of a piece (aux, or inputs): its window, what replaying the prologue
/// discards first, and how many values the piece has allocated so far outside
/// [`PartCs::replay`] blocks (the replayed prologue included).
struct Stream<'a> {
    what: &'static str,
    window: &'a mut [Scalar],
    /// Index the serial synthesis gives this part's first value, and the prologue's first.
    base: usize,
    prologue_base: usize,
    /// Values of the replayed prologue (0 when the circuit does not replay it).
    prologue: usize,
    seen: usize,
    /// Measuring a piece's shape: everything goes to scratch, counted.
    measuring: bool,
    scratch: Vec<Scalar>,
}

impl<'a> Stream<'a> {
    fn new(
        what: &'static str,
        window: &'a mut [Scalar],
        base: usize,
        prologue_base: usize,
        prologue: usize,
    ) -> Self {
        Stream { what, window, base, prologue_base, prologue, seen: 0, measuring: false, scratch: Vec::new() }
    }

    /// `n` slots of scratch, zeroed.
    fn scratch(&mut self, n: usize) -> &mut [Scalar] {
        self.scratch.clear();
        self.scratch.resize(n, Scalar::ZERO);
        &mut self.scratch[..]
    }

    /// All this part allocates, replay included.
    fn expected(&self) -> usize {
        self.prologue + self.window.len()
    }

    /// Slots for the next `n` values: scratch while replaying, the window after. A run
    /// across the boundary or past the window is lent scratch (so synthesis can go on) and
    /// reported as `(synthesized, expected)`. Window slots are zero as lent: the window
    /// comes zeroed from `extend_witness` and each slot is lent once.
    fn take(&mut self, n: usize) -> (&mut [Scalar], Option<(usize, usize)>) {
        let at = self.seen;
        self.seen += n;
        if self.measuring {
            return (self.scratch(n), None);
        }
        let overrun = at < self.prologue && at + n > self.prologue || at + n > self.expected();
        if at + n <= self.prologue || overrun {
            let report = overrun.then(|| (at + n, self.expected()));
            return (self.scratch(n), report);
        }
        let from = at - self.prologue;
        (&mut self.window[from..from + n], None)
    }

    /// The variable the serial synthesis gives the value at position `at` (replay included).
    fn index(&self, at: usize) -> usize {
        if at < self.prologue {
            self.prologue_base + at
        } else {
            self.base + at - self.prologue
        }
    }
}

/// The witness-only constraint system of one piece of a part (the whole part where it is
/// not in pieces): allocations go into the piece's window of the assignment's input and aux
/// slabs (after the replayed prologue's, and apart from [`PartCs::replay`] blocks', which
/// go to scratch), with the variable indices the serial synthesis gives them; `enforce`
/// only counts.
pub struct PartCs<'a> {
    aux: Stream<'a>,
    inputs: Stream<'a>,
    /// Constraints seen (replay included) and the replay's share of them.
    constraints: usize,
    replay_constraints: usize,
    /// Depth of [`PartCs::replay`] blocks open: their work goes to scratch, uncounted.
    replaying: usize,
    sticky: Option<PrecompiledError>,
    part: usize,
    /// `None` where the part is not in pieces.
    piece: Option<usize>,
    identity: &'a str,
}

impl<'a> PartCs<'a> {
    fn new(
        identity: &'a str,
        (part, piece): (usize, Option<usize>),
        windows: (&'a mut [Scalar], &'a mut [Scalar]),
        bases: (usize, usize),
        replay: Counts,
    ) -> Self {
        let (inputs, aux) = windows;
        let replays = replay != Counts::default();
        let (aux_what, inputs_what) = if replays {
            ("aux (replayed prologue included)", "inputs (replayed prologue included)")
        } else {
            ("aux", "inputs")
        };
        PartCs {
            // The prologue's aux start at 0 and its inputs at 1, after ONE.
            aux: Stream::new(aux_what, aux, bases.1, 0, replay.aux),
            inputs: Stream::new(inputs_what, inputs, bases.0, 1, replay.inputs),
            constraints: 0,
            replay_constraints: replay.constraints,
            replaying: 0,
            sticky: None,
            part,
            piece,
            identity,
        }
    }

    /// A piece run only to count its own allocations and constraints (nothing written).
    fn measuring(identity: &'a str, piece: usize, replay: Counts) -> Self {
        let mut cs = PartCs::new(identity, (0, Some(piece)), (&mut [], &mut []), (0, 0), replay);
        cs.aux.measuring = true;
        cs.inputs.measuring = true;
        cs
    }

    /// Runs `f` with its allocations and constraints sent to scratch: the values a piece
    /// rebuilds from earlier pieces (or the prologue) to synthesize its own. The variables it
    /// returns are witness-only stand-ins (their indices are not the serial synthesis's),
    /// which is all a witness needs: values.
    pub fn replay<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, SynthesisError>,
    ) -> Result<T, SynthesisError> {
        self.replaying += 1;
        let result = f(self);
        self.replaying -= 1;
        result
    }

    fn error(&self, what: &'static str, synthesized: usize, expected: usize) -> PrecompiledError {
        parts_error(self.identity, (Some(self.part), self.piece), what, synthesized, expected)
    }

    /// What the piece synthesized of its own after the replayed prologue, or its first error.
    fn own(self, result: Result<(), SynthesisError>) -> Result<Counts, CircuitError> {
        if let Some(e) = self.sticky {
            return Err(CircuitError::Precompiled(e));
        }
        result.map_err(|source| {
            CircuitError::Precompiled(PrecompiledError::PartFailed {
                identity: self.identity.to_string(),
                part: self.part,
                piece: self.piece,
                source,
            })
        })?;
        let mut own = Counts::default();
        for (what, got, replay, out) in [
            (self.inputs.what, self.inputs.seen, self.inputs.prologue, &mut own.inputs),
            (self.aux.what, self.aux.seen, self.aux.prologue, &mut own.aux),
            (
                "constraints (replayed prologue included)",
                self.constraints,
                self.replay_constraints,
                &mut own.constraints,
            ),
        ] {
            if got < replay {
                return Err(CircuitError::Precompiled(self.error(what, got, replay)));
            }
            *out = got - replay;
        }
        Ok(own)
    }

    /// The piece's result: its first error, or a count that is not exactly its window.
    fn finish(self, result: Result<(), SynthesisError>, want: Counts) -> Result<(), CircuitError> {
        let (identity, at) = (self.identity, (Some(self.part), self.piece));
        let got = self.own(result)?;
        mismatch(identity, at, OWN, got, want)
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
        let at = self.aux.seen;
        self.allocate_empty_aux(1)[0] = value;
        Ok(Variable::new_unchecked(Index::Aux(self.aux.index(at))))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let at = self.inputs.seen;
        self.allocate_empty_inputs(1)[0] = value;
        Ok(Variable::new_unchecked(Index::Input(self.inputs.index(at))))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _a: LA, _b: LB, _c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        if self.replaying == 0 {
            self.constraints += 1;
        }
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
        self.allocate_empty_inputs(new_inputs.len()).copy_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.allocate_empty_aux(new_aux.len()).copy_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        if self.replaying > 0 {
            return (self.aux.scratch(aux_n), self.inputs.scratch(inputs_n));
        }
        let (aux_what, inputs_what) = (self.aux.what, self.inputs.what);
        let (aux, aux_overrun) = self.aux.take(aux_n);
        let (inputs, inputs_overrun) = self.inputs.take(inputs_n);
        let overrun = aux_overrun.map(|o| (aux_what, o)).or(inputs_overrun.map(|o| (inputs_what, o)));
        if let (Some((what, (got, want))), None) = (overrun, &self.sticky) {
            self.sticky = Some(parts_error(self.identity, (Some(self.part), self.piece), what, got, want));
        }
        (aux, inputs)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(n, 0).0
    }

    /// This piece's own inputs so far (not the whole assignment's: pieces run concurrently;
    /// nor a [`PartCs::replay`] block's, which go to scratch).
    fn inputs_slice(&self) -> &[Scalar] {
        let s = &self.inputs;
        &s.window[..s.seen.saturating_sub(s.prologue).min(s.window.len())]
    }

    /// This piece's own aux so far (see [`PartCs::inputs_slice`]).
    fn aux_slice(&self) -> &[Scalar] {
        let s = &self.aux;
        &s.window[..s.seen.saturating_sub(s.prologue).min(s.window.len())]
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
                return Err(CircuitError::Precompiled(parts_error(
                    &h.identity,
                    (None, None),
                    what,
                    total,
                    parts,
                )));
            }
            Ok(total / parts)
        };
        let each = Counts {
            inputs: share("inputs after the prologue, shared by the parts", remaining.inputs)?,
            aux: share("aux after the prologue, shared by the parts", remaining.aux)?,
            constraints: share("constraints after the prologue, shared by the parts", remaining.constraints)?,
        };
        let replay = if circuit.replays_prologue() { prologue } else { Counts::default() };
        let layout = self.piece_layout(circuit, replay, each)?;
        let (input_base, aux_base) = (inputs.len(), aux.len());
        let (aux_w, input_w) = cs.extend_witness(remaining.aux, remaining.inputs)?;
        let identity = h.identity.as_str();
        // Every (part, piece) with its windows and the serial indices of their first values.
        let mut work = Vec::with_capacity(parts * layout.len());
        let (mut input_rest, mut aux_rest) = (input_w, aux_w);
        let (mut input_at, mut aux_at) = (input_base, aux_base);
        for i in 0..parts {
            for (j, want) in layout.iter().enumerate() {
                let (inputs, tail) = std::mem::take(&mut input_rest).split_at_mut(want.inputs);
                input_rest = tail;
                let (aux, tail) = std::mem::take(&mut aux_rest).split_at_mut(want.aux);
                aux_rest = tail;
                work.push(((i, j), (inputs, aux), (input_at, aux_at), *want));
                input_at += want.inputs;
                aux_at += want.aux;
            }
        }
        let in_pieces = layout.len() > 1;
        let results: Vec<Result<(), CircuitError>> = work
            .into_par_iter()
            .map(|((i, j), windows, bases, want)| {
                let mut pcs = PartCs::new(identity, (i, in_pieces.then_some(j)), windows, bases, replay);
                let result = circuit.part(i, j, &mut pcs);
                pcs.finish(result, want)
            })
            .collect();
        results.into_iter().collect()
    }

    /// The windows of one part's pieces: `[each]` for a part in one piece; otherwise kept
    /// from an earlier partition with the same share and piece count, or measured on part 0
    /// (each piece once, in parallel, nothing written), checked to add up to the share, and
    /// kept.
    fn piece_layout<P: PartedCircuit + ?Sized>(
        &self,
        circuit: &P,
        replay: Counts,
        each: Counts,
    ) -> Result<Vec<Counts>, CircuitError> {
        let pieces = circuit.pieces();
        if pieces <= 1 {
            return Ok(vec![each]);
        }
        let kept = self.pieces.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(kept) = kept.filter(|k| k.each == each && k.pieces.len() == pieces) {
            return Ok(kept.pieces);
        }
        let identity = self.header.identity.as_str();
        let measured: Vec<Counts> = (0..pieces)
            .into_par_iter()
            .map(|j| {
                let mut pcs = PartCs::measuring(identity, j, replay);
                let result = circuit.part(0, j, &mut pcs);
                pcs.own(result)
            })
            .collect::<Result<_, _>>()?;
        mismatch(identity, (Some(0), None), MEASURED, measured.iter().copied().sum(), each)?;
        *self.pieces.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(PieceLayout { each, pieces: measured.clone() });
        Ok(measured)
    }
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
