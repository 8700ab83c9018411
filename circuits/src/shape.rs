//! [`ShapeCs`]: a constraint system that only counts, so that slabs can be sized for a
//! circuit before it is proven (and the shape cached per circuit kind).

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;

use arenaprove_arena::VecPool;

use crate::density::words_for_bits;
use crate::native::{Lc, LcScratch, NativeCircuit, NativeCs, Term};
use crate::CircuitError;

/// Sizes of one circuit as bellperson 0.27 synthesizes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Rows of a, b, c: the circuit's constraints plus one `input_i * 0 = 0` per input.
    pub constraints: usize,
    /// Inputs, ONE included.
    pub inputs: usize,
    /// Auxiliary (private) variables.
    pub aux: usize,
    /// Evaluation domain: the smallest power of two >= `constraints`.
    pub domain_size: usize,
}

impl Shape {
    /// A shape from counts; `domain_size` is derived.
    pub fn new(constraints: usize, inputs: usize, aux: usize) -> Self {
        Shape { constraints, inputs, aux, domain_size: constraints.max(1).next_power_of_two() }
    }
    /// The smallest shape every one of `shapes` fits in (each count the maximum over them).
    pub fn covering(shapes: &[Shape]) -> Shape {
        shapes.iter().fold(Shape { constraints: 0, inputs: 0, aux: 0, domain_size: 0 }, |m, s| Shape {
            constraints: m.constraints.max(s.constraints),
            inputs: m.inputs.max(s.inputs),
            aux: m.aux.max(s.aux),
            domain_size: m.domain_size.max(s.domain_size),
        })
    }
    /// `u64` words of the a_aux / b_aux bitmaps.
    pub fn aux_density_words(&self) -> usize {
        words_for_bits(self.aux)
    }
    /// `u64` words of the b_input bitmap.
    pub fn input_density_words(&self) -> usize {
        words_for_bits(self.inputs)
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} constraints, {} inputs, {} aux, domain 2^{}",
            self.constraints,
            self.inputs,
            self.aux,
            self.domain_size.trailing_zeros()
        )
    }
}

/// Counts variables and constraints; never evaluates a witness closure.
#[derive(Debug, Default)]
pub struct ShapeCs {
    pub constraints: usize,
    pub inputs: usize,
    pub aux: usize,
    scratch: LcScratch,
    pool: VecPool<Term>,
}

impl ShapeCs {
    pub fn new() -> Self {
        Self::default()
    }
    /// The shape so far (call after [`ShapeCs::finish`] to include input constraints).
    pub fn shape(&self) -> Shape {
        Shape::new(self.constraints, self.inputs, self.aux)
    }
    /// Adds the `input_i * 0 = 0` constraints bellperson appends after synthesis.
    pub fn finish(mut self) -> Shape {
        self.constraints += self.inputs;
        self.shape()
    }
}

/// The shape of `circuit` as bellperson's prover would synthesize it: ONE first, the
/// circuit, then one constraint per input.
pub fn shape_of<C: Circuit<Scalar>>(circuit: C) -> Result<Shape, SynthesisError> {
    let mut cs = ShapeCs::new();
    ConstraintSystem::alloc_input(&mut cs, || "one", || Ok(Scalar::from(1u64)))?;
    circuit.synthesize(&mut cs)?;
    Ok(cs.finish())
}

/// The shape of a native circuit (ONE, the circuit, one constraint per input).
pub fn shape_of_native<C: NativeCircuit + ?Sized>(circuit: &C) -> Result<Shape, CircuitError> {
    let mut cs = ShapeCs::new();
    NativeCs::alloc_input(&mut cs, Scalar::from(1u64))?;
    circuit.synthesize_native(&mut cs)?;
    Ok(cs.finish())
}

impl NativeCs for ShapeCs {
    fn alloc_aux(&mut self, _value: Scalar) -> Result<Variable, CircuitError> {
        self.aux += 1;
        Ok(Variable(Index::Aux(self.aux - 1)))
    }
    fn alloc_input(&mut self, _value: Scalar) -> Result<Variable, CircuitError> {
        self.inputs += 1;
        Ok(Variable(Index::Input(self.inputs - 1)))
    }
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
        &self.pool
    }
}

impl ConstraintSystem<Scalar> for ShapeCs {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable(Index::Input(self.inputs - 1)))
    }

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
}
