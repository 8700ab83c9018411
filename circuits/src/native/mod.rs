//! The native synthesis path: [`NativeCs`], the small constraint-system trait our gadgets
//! are written against, and [`NativeCircuit`], a circuit written with them.
//!
//! Design:
//! * Gadgets carry their own witness values (a `Bit` knows its bool, a `UInt32` its u32),
//!   so `alloc_aux(value)` takes a value, not a closure, and nothing reads the assignment
//!   back during synthesis.
//! * `enforce(a, b, c)` hands each closure a scratch [`Lc`] owned by the constraint system
//!   and cleared, never freed, between constraints; combinations that must live across
//!   constraints (MultiEq accumulators, Poseidon state) come from a [`VecPool`] via
//!   [`NativeCs::take_lc`] / [`NativeCs::give_lc`]. In steady state nothing is allocated.
//! * Duplicate variables are merged by [`Lc::normalize`] before evaluation, exactly as
//!   bellpepper-core 0.2's `LinearCombination` merges on insert, so density bits match.
//! * Implementations: [`crate::ArenaAssignment`] (the fast path), [`crate::ShapeCs`]
//!   (counts only), and [`Bridge`] over any bellpepper-core `ConstraintSystem`: it turns
//!   every constraint into three temporary `LinearCombination`s, the way a bellpepper
//!   gadget would. So a [`NativeCircuit`] also runs as a `bellpepper_core::Circuit` (see
//!   [`synthesize_bellpepper`]), under bellperson's keygen and prover, the heap baseline
//!   and `TestConstraintSystem`, with the same constraints in the same order.

pub mod boolean;
pub mod lc;
pub mod merkle;
pub mod poseidon;
pub mod sha256;
pub mod uint32;

use arenaprove_arena::VecPool;
use bellpepper_core::{ConstraintSystem, Index, SynthesisError, Variable};
use blstrs::Scalar;

pub use boolean::Bit;
pub use lc::{Lc, LcScratch, Term, VarKey};
pub use uint32::{MultiEq, UInt32};

use crate::CircuitError;

/// ONE, input 0.
pub const ONE: Variable = Variable(Index::Input(0));

/// A constraint system for the native gadgets (see the module docs).
pub trait NativeCs {
    /// Allocates a private variable holding `value`.
    fn alloc_aux(&mut self, value: Scalar) -> Result<Variable, CircuitError>;
    /// Allocates a public input holding `value` (ONE is input 0, allocated by the caller of
    /// the circuit).
    fn alloc_input(&mut self, value: Scalar) -> Result<Variable, CircuitError>;
    /// Enforces `a * b = c`. The combinations may be normalized in place.
    fn enforce_lc(&mut self, a: &mut Lc, b: &mut Lc, c: &mut Lc);
    /// The scratch combinations `enforce` fills.
    fn lc_scratch(&mut self) -> &mut LcScratch;
    /// Recycled storage for combinations that outlive one constraint.
    fn lc_pool(&self) -> &VecPool<Term>;

    /// Enforces `a * b = c`, each side built by a closure into a cleared scratch [`Lc`].
    #[inline]
    fn enforce<FA, FB, FC>(&mut self, fa: FA, fb: FB, fc: FC)
    where
        FA: FnOnce(&mut Lc),
        FB: FnOnce(&mut Lc),
        FC: FnOnce(&mut Lc),
    {
        let mut s = std::mem::take(self.lc_scratch());
        s.a.clear();
        s.b.clear();
        s.c.clear();
        fa(&mut s.a);
        fb(&mut s.b);
        fc(&mut s.c);
        self.enforce_lc(&mut s.a, &mut s.b, &mut s.c);
        *self.lc_scratch() = s;
    }
    /// An empty combination over recycled storage; give it back with [`NativeCs::give_lc`].
    fn take_lc(&self) -> Lc {
        Lc::from_pool(self.lc_pool())
    }
    fn give_lc(&self, lc: Lc) {
        lc.recycle(self.lc_pool())
    }
}

/// A circuit written against [`NativeCs`].
pub trait NativeCircuit {
    /// Allocates the circuit's variables and constraints (ONE is already input 0; the
    /// `input_i * 0 = 0` rows come after, added by the caller).
    fn synthesize_native<CS: NativeCs>(&self, cs: &mut CS) -> Result<(), CircuitError>;
}

/// Runs a native circuit on any bellpepper-core constraint system (the body of the test
/// circuits' `bellpepper_core::Circuit` impls).
pub fn synthesize_bellpepper<C, CS>(circuit: &C, cs: &mut CS) -> Result<(), SynthesisError>
where
    C: NativeCircuit + ?Sized,
    CS: ConstraintSystem<Scalar>,
{
    let mut bridge = Bridge::new(cs);
    circuit.synthesize_native(&mut bridge).map_err(CircuitError::into_synthesis)
}

/// A native circuit seen through bellpepper-core's `Circuit` trait: the same constraints
/// as the native path, so parameters made through it fit native proving, and a bellpepper
/// prover (bellperson) given it proves the same R1CS as the engine.
pub struct ViaBridge<C>(pub C);

impl<C: NativeCircuit> bellpepper_core::Circuit<Scalar> for ViaBridge<C> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        synthesize_bellpepper(&self.0, cs)
    }
}

/// [`NativeCs`] over a bellpepper-core `ConstraintSystem`: each `enforce` builds three
/// temporary `LinearCombination`s term by term, like a bellpepper gadget. Variable and
/// constraint names (`v<n>`, `c<n>`) are only formatted if the inner system asks for them
/// (`TestConstraintSystem` does; the provers do not).
pub struct Bridge<'a, CS: ConstraintSystem<Scalar>> {
    cs: &'a mut CS,
    scratch: LcScratch,
    pool: VecPool<Term>,
    vars: usize,
    constraints: usize,
}

impl<'a, CS: ConstraintSystem<Scalar>> Bridge<'a, CS> {
    pub fn new(cs: &'a mut CS) -> Self {
        Bridge { cs, scratch: LcScratch::default(), pool: VecPool::new(), vars: 0, constraints: 0 }
    }
}

impl<CS: ConstraintSystem<Scalar>> NativeCs for Bridge<'_, CS> {
    fn alloc_aux(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.vars;
        self.vars += 1;
        Ok(self.cs.alloc(|| format!("v{n}"), || Ok(value))?)
    }
    fn alloc_input(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.vars;
        self.vars += 1;
        Ok(self.cs.alloc_input(|| format!("v{n}"), || Ok(value))?)
    }
    fn enforce_lc(&mut self, a: &mut Lc, b: &mut Lc, c: &mut Lc) {
        let n = self.constraints;
        self.constraints += 1;
        self.cs.enforce(|| format!("c{n}"), |lc| a.append_to(lc), |lc| b.append_to(lc), |lc| c.append_to(lc));
    }
    fn lc_scratch(&mut self) -> &mut LcScratch {
        &mut self.scratch
    }
    fn lc_pool(&self) -> &VecPool<Term> {
        &self.pool
    }
}
