//! [`ArenaAssignment`]: the prover's assignment with every vector in a slab.
//!
//! a, b, c (each sized to the shape's domain, so the NTTs can run in place), the input and
//! aux assignments and the three density bitmaps are [`SlabVec`]s leased from
//! [`AssignmentPools`] when the assignment is made, sized from a [`Shape`]. Nothing grows:
//!
//! * `alloc` past the shape's aux (or inputs) fails at once with
//!   [`CircuitError::OverShape`] (as a `SynthesisError` through the bellpepper trait);
//! * `enforce` cannot return an error in bellpepper-core's trait, so a row past the
//!   shape's constraints is counted, not stored, and the error is *sticky*: it is reported
//!   by [`ArenaAssignment::finish`] (which [`synthesize_arena`] and [`synthesize_native`]
//!   call) naming the shape and how many rows were asked for.
//!
//! Leases are guards: dropping the assignment (also on `SynthesisError` or a panic
//! unwinding through synthesis) hands every slab back to its pool.
//!
//! Conventions are bellperson 0.27's (see the crate docs). Namespaces are no-ops.
//! `is_witness_generator` stays `false`: the witness-generator hooks (`extend_aux`,
//! `allocate_empty*`) let a gadget write aux values without constraints, which a prover,
//! needing a, b, c, cannot accept.

use std::sync::Arc;

use arenaprove_arena::{ArenaError, Ledger, RegionConfig, SlabPool, SlabPoolConfig, SlabVec, VecPool};
use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::density::words_for_bits;
use crate::heap::scaled;
use crate::native::{Lc, LcScratch, NativeCircuit, NativeCs, Term};
use crate::witness::AbcRef;
use crate::{CircuitError, Density, Precompiled, ProverWitness, Shape};

const SCALAR_BYTES: usize = std::mem::size_of::<Scalar>();

/// The pools an [`ArenaAssignment`] leases from, sized for one shape.
#[derive(Clone)]
pub struct AssignmentPools {
    /// a, b, c: three slabs of `domain_size` scalars per assignment. `None` where no
    /// assignment holds a, b, c on the host (an engine whose backend computes them on the
    /// device from precompiled constraints): then only
    /// [`ArenaAssignment::witness_only`] assignments can be made.
    pub abc: Option<Arc<SlabPool>>,
    /// The input assignment: one slab of `inputs` scalars per assignment.
    pub inputs: Arc<SlabPool>,
    /// The aux assignment: one slab of `aux` scalars per assignment.
    pub aux: Arc<SlabPool>,
    /// a_aux, b_input, b_aux bitmaps: three slabs per assignment.
    pub density: Arc<SlabPool>,
    /// Recycled term storage for long-lived linear combinations.
    pub lc_terms: Arc<VecPool<Term>>,
}

/// One of the three assignment pools, as [`AssignmentPools::plan`] sizes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssignmentPoolPlan {
    pub name: &'static str,
    pub what: &'static str,
    pub slab_bytes: usize,
    pub slabs_per_assignment: usize,
}

impl AssignmentPools {
    /// The abc, inputs, aux and density pools for assignments of `shape`: what
    /// [`AssignmentPools::for_shape`] reserves, per assignment, each slab sized for what it
    /// holds.
    pub fn plan(shape: &Shape) -> [AssignmentPoolPlan; 4] {
        [
            AssignmentPoolPlan {
                name: "abc",
                what: "a, b, c evaluations (domain-sized)",
                slab_bytes: shape.domain_size * SCALAR_BYTES,
                slabs_per_assignment: 3,
            },
            AssignmentPoolPlan {
                name: "inputs",
                what: "input assignment",
                slab_bytes: shape.inputs.max(1) * SCALAR_BYTES,
                slabs_per_assignment: 1,
            },
            AssignmentPoolPlan {
                name: "aux",
                what: "aux assignment",
                slab_bytes: shape.aux.max(1) * SCALAR_BYTES,
                slabs_per_assignment: 1,
            },
            AssignmentPoolPlan {
                name: "density",
                what: "density bitmaps (a_aux, b_input, b_aux)",
                slab_bytes: shape.aux_density_words().max(shape.input_density_words()).max(1) * 8,
                slabs_per_assignment: 3,
            },
        ]
    }

    /// Pools for `assignments` assignments of `shape` at once, charged to `ledger`.
    pub fn for_shape(
        shape: &Shape,
        assignments: usize,
        ledger: &Arc<Ledger>,
        region: RegionConfig,
    ) -> Result<Self, CircuitError> {
        let [abc, inputs, aux, density] = Self::plan(shape).map(|p| {
            SlabPool::new(
                SlabPoolConfig::new(p.name, p.slab_bytes, p.slabs_per_assignment * assignments)
                    .with_region(region.clone()),
                ledger,
                None,
            )
        });
        Ok(AssignmentPools {
            abc: Some(abc?),
            inputs: inputs?,
            aux: aux?,
            density: density?,
            lc_terms: Arc::new(VecPool::new()),
        })
    }

    /// Slabs out right now, over every pool.
    pub fn outstanding(&self) -> usize {
        self.pools().iter().map(|p| p.outstanding()).sum()
    }

    /// The slab pools (for shutdown checks): abc where there is one, inputs, aux, density.
    pub fn pools(&self) -> Vec<&SlabPool> {
        let mut v: Vec<&SlabPool> = self.abc.iter().map(|p| &**p).collect();
        v.extend([&*self.inputs, &*self.aux, &*self.density]);
        v
    }
}

/// A density bitmap in a slab: one bit per variable, grown by `SlabBits::add_element`.
pub struct SlabBits {
    words: SlabVec<u64>,
    len_bits: usize,
}

impl SlabBits {
    fn new(words: SlabVec<u64>) -> Self {
        SlabBits { words, len_bits: 0 }
    }
    /// Appends one clear bit; a new word is zeroed as it is reached (slabs are not).
    #[inline]
    fn add_element(&mut self) -> Result<(), ArenaError> {
        if self.len_bits % 64 == 0 {
            self.words.push(0)?;
        }
        self.len_bits += 1;
        Ok(())
    }
    #[inline(always)]
    fn set(&mut self, i: usize) {
        self.words[i >> 6] |= 1u64 << (i & 63);
    }
    pub fn as_density(&self) -> Density<'_> {
        Density::new(self.words.as_slice(), self.len_bits)
    }
}

/// Where a partition's a, b, c come from when they are leased at its products rather than
/// with its witness ([`ArenaAssignment::witness_then_abc`]): an engine whose backend reads
/// a, b, c only in the h stage (a GPU that cannot keep the recording) holds a few sets for
/// many partitions in flight, since a set is busy only from the products to the h upload.
#[derive(Clone, Debug)]
pub struct LateAbc {
    /// The `abc` pool (fewer sets than partitions in flight).
    pub pool: Arc<SlabPool>,
    /// Taken while one partition leases its three slabs, so two partitions never hold part
    /// of a set each and wait for each other.
    pub gate: Arc<std::sync::Mutex<()>>,
    /// How long a partition waits for a set before its synthesis fails.
    pub wait: std::time::Duration,
}

/// The arena-backed assignment (see the module docs).
pub struct ArenaAssignment {
    shape: Shape,
    abc: Option<[SlabVec<Scalar>; 3]>,
    /// a, b, c still to lease, when the products are computed ([`LateAbc`]).
    late_abc: Option<LateAbc>,
    /// Leased without a, b, c ([`ArenaAssignment::witness_only`]).
    witness_only: bool,
    /// The recording whose products give a, b, c, left to the backend
    /// ([`Precompiled::defer_products`]).
    deferred: Option<Arc<Precompiled>>,
    inputs: SlabVec<Scalar>,
    aux: SlabVec<Scalar>,
    a_aux_density: SlabBits,
    b_input_density: SlabBits,
    b_aux_density: SlabBits,
    constraints: usize,
    /// Rows asked for past the shape (not stored).
    rows_over: usize,
    /// The first error `enforce` could not return.
    sticky: Option<CircuitError>,
    /// Linear-combination temporaries: synthesis memory, so [`ArenaAssignment::finish`]
    /// returns them to the pool when synthesis ends (not at handback).
    scratch: Option<LcScratch>,
    lc_terms: Arc<VecPool<Term>>,
}

impl Drop for ArenaAssignment {
    fn drop(&mut self) {
        // The slabs go back by their leases' own Drop; scratch Vecs still held (synthesis
        // ended without `finish`) go back here.
        self.release_scratch();
    }
}

impl std::fmt::Debug for ArenaAssignment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArenaAssignment")
            .field("shape", &self.shape)
            .field("constraints", &self.constraints)
            .field("inputs", &self.inputs.len())
            .field("aux", &self.aux.len())
            .field("sticky", &self.sticky)
            .finish()
    }
}

impl ArenaAssignment {
    /// Leases every vector for `shape` from `pools` (fails at once if a pool is empty or
    /// its slabs are too small for the shape).
    pub fn new(pools: &AssignmentPools, shape: &Shape) -> Result<Self, CircuitError> {
        let Some(abc_pool) = &pools.abc else {
            return Err(CircuitError::Invalid {
                what: "assignment",
                reason: "these pools hold no a, b, c (its engine computes them on the device from \
                         precompiled constraints): only a witness-only assignment can be made"
                    .into(),
            });
        };
        let abc = [
            lease_scalars(abc_pool, shape.domain_size)?,
            lease_scalars(abc_pool, shape.domain_size)?,
            lease_scalars(abc_pool, shape.domain_size)?,
        ];
        Self::leased(pools, shape, Some(abc))
    }

    /// Leases the witness only (inputs, aux, densities), no a, b, c: for precompiled
    /// synthesis whose products a backend computes from the recording
    /// ([`Precompiled::defer_products`]). Any other synthesis into it fails at its first
    /// row with a typed error.
    pub fn witness_only(pools: &AssignmentPools, shape: &Shape) -> Result<Self, CircuitError> {
        Self::leased(pools, shape, None)
    }

    /// Leases the witness now and a, b, c from `late` when precompiled synthesis computes
    /// the products ([`Precompiled::products_or_defer`]), waiting for a set then. Until
    /// then it is a witness-only assignment.
    pub fn witness_then_abc(
        pools: &AssignmentPools,
        shape: &Shape,
        late: LateAbc,
    ) -> Result<Self, CircuitError> {
        let mut cs = Self::leased(pools, shape, None)?;
        cs.late_abc = Some(late);
        Ok(cs)
    }

    /// Whether a, b, c are still to be leased ([`ArenaAssignment::witness_then_abc`]).
    pub fn takes_abc_late(&self) -> bool {
        // `lease_abc_late` takes it: present means not leased yet.
        self.late_abc.is_some()
    }

    /// Leases the three a, b, c slabs of a [`ArenaAssignment::witness_then_abc`]
    /// assignment, one set at a time under the gate, waiting up to its `wait` for a set.
    pub fn lease_abc_late(&mut self) -> Result<(), CircuitError> {
        let Some(late) = self.late_abc.take() else {
            return Err(CircuitError::Invalid {
                what: "late a, b, c",
                reason: "this assignment was not made to lease a, b, c late".into(),
            });
        };
        let bytes = self.shape.domain_size * SCALAR_BYTES;
        let sets = {
            let _one_at_a_time = late.gate.lock().unwrap_or_else(|e| e.into_inner());
            let lease = || -> Result<SlabVec<Scalar>, ArenaError> {
                Ok(SlabVec::new(late.pool.lease(bytes, late.wait)?))
            };
            [lease()?, lease()?, lease()?]
        };
        self.abc = Some(sets);
        self.witness_only = false;
        Ok(())
    }

    fn leased(
        pools: &AssignmentPools,
        shape: &Shape,
        abc: Option<[SlabVec<Scalar>; 3]>,
    ) -> Result<Self, CircuitError> {
        let words = |n_bits: usize| -> Result<SlabBits, ArenaError> {
            Ok(SlabBits::new(SlabVec::new(pools.density.try_lease(words_for_bits(n_bits) * 8)?)))
        };
        let assignment = ArenaAssignment {
            shape: *shape,
            witness_only: abc.is_none(),
            abc,
            late_abc: None,
            deferred: None,
            inputs: lease_scalars(&pools.inputs, shape.inputs)?,
            aux: lease_scalars(&pools.aux, shape.aux)?,
            a_aux_density: words(shape.aux)?,
            b_input_density: words(shape.inputs)?,
            b_aux_density: words(shape.aux)?,
            constraints: 0,
            rows_over: 0,
            sticky: None,
            scratch: Some(LcScratch::from_pool(&pools.lc_terms)),
            lc_terms: pools.lc_terms.clone(),
        };
        // Pair assertion: the leases hold the shape.
        debug_assert!(assignment.aux.capacity() >= shape.aux && assignment.inputs.capacity() >= shape.inputs);
        Ok(assignment)
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Allocates ONE as input 0 (the first thing bellperson's prover does).
    pub fn alloc_one(&mut self) -> Result<Variable, CircuitError> {
        assert!(self.inputs.is_empty(), "ONE must be input 0");
        NativeCs::alloc_input(self, Scalar::ONE)
    }

    /// Appends the `input_i * 0 = 0` rows and reports any sticky error. With the products
    /// deferred to the backend the rows are only counted (the backend writes them).
    pub fn finish(&mut self) -> Result<(), CircuitError> {
        self.release_scratch();
        if self.deferred.is_some() {
            let rows = self.constraints + self.inputs.len();
            if rows > self.shape.constraints {
                self.rows_over += rows - self.shape.constraints;
            }
            self.constraints = rows.min(self.shape.constraints);
        } else {
            for i in 0..self.inputs.len() {
                self.push_row(self.inputs[i], Scalar::ZERO, Scalar::ZERO);
            }
        }
        if let Some(e) = self.sticky.take() {
            return Err(e);
        }
        if self.rows_over > 0 {
            return Err(CircuitError::OverShape {
                what: "constraints",
                requested: self.shape.constraints + self.rows_over,
                capacity: self.shape.constraints,
                shape: self.shape,
            });
        }
        Ok(())
    }

    /// Hands the linear-combination scratch Vecs back to their pool.
    fn release_scratch(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            scratch.recycle(&self.lc_terms);
        }
    }

    /// Records an over-shape error (the first error sticks) and returns one for the caller.
    fn refuse(&mut self, what: &'static str, requested: usize, capacity: usize) -> CircuitError {
        self.record(self.over(what, requested, capacity));
        self.over(what, requested, capacity)
    }

    fn over(&self, what: &'static str, requested: usize, capacity: usize) -> CircuitError {
        CircuitError::OverShape { what, requested, capacity, shape: self.shape }
    }

    fn record(&mut self, e: CircuitError) {
        if self.sticky.is_none() {
            self.sticky = Some(e);
        }
    }

    #[inline]
    fn push_row(&mut self, a: Scalar, b: Scalar, c: Scalar) {
        if self.constraints >= self.shape.constraints {
            self.rows_over += 1;
            return;
        }
        let Some([va, vb, vc]) = self.abc.as_mut() else {
            let e = if self.witness_only { witness_only_error() } else { CircuitError::AbcReleased };
            self.record(e);
            return;
        };
        // Capacity is domain_size >= shape.constraints, so these cannot fail; keep the
        // error anyway rather than panic.
        if let Err(e) = va.push(a).and_then(|_| vb.push(b)).and_then(|_| vc.push(c)) {
            self.record(e.into());
            return;
        }
        self.constraints += 1;
    }

    #[inline]
    fn alloc_aux_value(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.aux.len();
        if n >= self.shape.aux {
            return Err(self.refuse("aux", n + 1, self.shape.aux));
        }
        self.aux.push(value)?;
        self.a_aux_density.add_element()?;
        self.b_aux_density.add_element()?;
        Ok(Variable(Index::Aux(n)))
    }

    #[inline]
    fn alloc_input_value(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.inputs.len();
        if n >= self.shape.inputs {
            return Err(self.refuse("inputs", n + 1, self.shape.inputs));
        }
        self.inputs.push(value)?;
        self.b_input_density.add_element()?;
        Ok(Variable(Index::Input(n)))
    }

    fn unknown_variable(&mut self, key_is_input: bool, index: usize) {
        let (what, have) = if key_is_input { ("input", self.inputs.len()) } else { ("aux", self.aux.len()) };
        self.record(CircuitError::Invalid {
            what: "variable",
            reason: format!("{what} {index} used in a constraint but only {have} allocated"),
        });
    }
}

/// The assignment as precompiled synthesis fills it (see [`crate::precompiled`]): values are
/// appended without density bookkeeping (the densities come with the matrices, through
/// [`ArenaAssignment::set_densities`]), and a, b, c are written in place by
/// [`ArenaAssignment::abc_fill`]. Crate-private: only the precompiled path may leave the
/// densities to be set afterwards.
impl ArenaAssignment {
    /// Appends one aux value; density bits are left to [`ArenaAssignment::set_densities`].
    #[inline]
    pub(crate) fn push_aux_witness(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.aux.len();
        if n >= self.shape.aux {
            return Err(self.refuse("aux", n + 1, self.shape.aux));
        }
        self.aux.push(value)?;
        Ok(Variable(Index::Aux(n)))
    }

    /// Appends one input value; density bits are left to [`ArenaAssignment::set_densities`].
    #[inline]
    pub(crate) fn push_input_witness(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        let n = self.inputs.len();
        if n >= self.shape.inputs {
            return Err(self.refuse("inputs", n + 1, self.shape.inputs));
        }
        self.inputs.push(value)?;
        Ok(Variable(Index::Input(n)))
    }

    /// Appends `aux_n` aux and `inputs_n` input values, zeroed, and lends them for writing
    /// (a witness generator's `allocate_empty`).
    pub(crate) fn extend_witness(
        &mut self,
        aux_n: usize,
        inputs_n: usize,
    ) -> Result<(&mut [Scalar], &mut [Scalar]), CircuitError> {
        let (have_aux, have_inputs) = (self.aux.len(), self.inputs.len());
        if have_aux + aux_n > self.shape.aux {
            return Err(self.refuse("aux", have_aux + aux_n, self.shape.aux));
        }
        if have_inputs + inputs_n > self.shape.inputs {
            return Err(self.refuse("inputs", have_inputs + inputs_n, self.shape.inputs));
        }
        let aux = self.aux.extend_fill(aux_n, Scalar::ZERO)?;
        let inputs = self.inputs.extend_fill(inputs_n, Scalar::ZERO)?;
        Ok((aux, inputs))
    }

    /// The input and aux values so far.
    pub(crate) fn witness_values(&self) -> (&[Scalar], &[Scalar]) {
        (&self.inputs, &self.aux)
    }

    /// Recycled term storage (for a wrapping constraint system's `NativeCs::lc_pool`).
    pub(crate) fn lc_terms_pool(&self) -> &VecPool<Term> {
        &self.lc_terms
    }

    /// Replaces the three density bitmaps by recorded ones, one bit per input / aux value
    /// allocated so far. Each slice must hold exactly that many bits' words.
    pub(crate) fn set_densities(
        &mut self,
        a_aux: &[u64],
        b_input: &[u64],
        b_aux: &[u64],
    ) -> Result<(), CircuitError> {
        let (inputs, aux) = (self.inputs.len(), self.aux.len());
        for (what, words, bits) in [
            ("a_aux density", a_aux, aux),
            ("b_input density", b_input, inputs),
            ("b_aux density", b_aux, aux),
        ] {
            if words.len() != words_for_bits(bits) {
                return Err(CircuitError::Invalid {
                    what: "density",
                    reason: format!("{what}: {} words for {bits} variables", words.len()),
                });
            }
        }
        for (bits, words, len_bits) in [
            (&mut self.a_aux_density, a_aux, aux),
            (&mut self.b_input_density, b_input, inputs),
            (&mut self.b_aux_density, b_aux, aux),
        ] {
            bits.words.clear();
            bits.words.extend_from_slice(words)?;
            bits.len_bits = len_bits;
        }
        Ok(())
    }

    /// Sets the number of rows to `rows` (before the `input_i * 0 = 0` rows that
    /// [`ArenaAssignment::finish`] appends) and lends a, b, c, each `rows` long and zeroed,
    /// for writing, with the witness to read from. Only on an assignment with no rows yet.
    pub(crate) fn abc_fill(&mut self, rows: usize) -> Result<AbcFill<'_>, CircuitError> {
        if self.constraints != 0 {
            return Err(CircuitError::Invalid {
                what: "abc fill",
                reason: format!("the assignment already has {} rows", self.constraints),
            });
        }
        if rows > self.shape.constraints {
            return Err(self.refuse("constraints", rows, self.shape.constraints));
        }
        let Some([a, b, c]) = self.abc.as_mut() else {
            return Err(if self.witness_only { witness_only_error() } else { CircuitError::AbcReleased });
        };
        for v in [&mut *a, &mut *b, &mut *c] {
            v.clear();
            v.resize(rows, Scalar::ZERO)?;
        }
        self.constraints = rows;
        Ok(AbcFill {
            inputs: &self.inputs,
            aux: &self.aux,
            a: a.as_mut_slice(),
            b: b.as_mut_slice(),
            c: c.as_mut_slice(),
        })
    }
}

impl ArenaAssignment {
    /// Sets the number of rows to `rows` (before the `input_i * 0 = 0` rows) without
    /// computing a, b, c: they are left to the backend, from `matrices` and this witness
    /// ([`ProverWitness::deferred_products`]). Only on a witness-only assignment with no
    /// rows yet.
    pub(crate) fn defer_abc(&mut self, rows: usize, matrices: Arc<Precompiled>) -> Result<(), CircuitError> {
        if !self.witness_only || self.constraints != 0 {
            return Err(CircuitError::Invalid {
                what: "deferred products",
                reason: format!(
                    "only a witness-only assignment with no rows can leave a, b, c to the backend \
                     (this one has {} rows{})",
                    self.constraints,
                    if self.witness_only { "" } else { " and a, b, c slabs" }
                ),
            });
        }
        if rows > self.shape.constraints {
            return Err(self.refuse("constraints", rows, self.shape.constraints));
        }
        self.constraints = rows;
        self.deferred = Some(matrices);
        Ok(())
    }

    /// Whether a, b, c slabs were leased ([`ArenaAssignment::new`]) rather than the
    /// witness only.
    pub fn holds_abc_slabs(&self) -> bool {
        !self.witness_only
    }
}

fn witness_only_error() -> CircuitError {
    CircuitError::Invalid {
        what: "assignment",
        reason: "a witness-only assignment has no a, b, c: only precompiled synthesis with \
                 deferred products can fill it"
            .into(),
    }
}

fn lease_scalars(pool: &Arc<SlabPool>, n: usize) -> Result<SlabVec<Scalar>, ArenaError> {
    Ok(SlabVec::new(pool.try_lease(n * SCALAR_BYTES)?))
}

/// a, b, c lent for writing, with the witness they are computed from
/// ([`ArenaAssignment::abc_fill`]).
pub(crate) struct AbcFill<'a> {
    pub inputs: &'a [Scalar],
    pub aux: &'a [Scalar],
    pub a: &'a mut [Scalar],
    pub b: &'a mut [Scalar],
    pub c: &'a mut [Scalar],
}

/// Which density bitmaps a side of a constraint marks.
#[derive(Clone, Copy)]
enum Side {
    A,
    B,
    C,
}

/// Evaluates merged terms the way bellperson does: zero coefficients skipped, ONE not
/// multiplied, density marked for each non-zero term (A: aux; B: inputs and aux).
#[inline(always)]
fn eval_terms(
    cs: &mut ArenaAssignment,
    side: Side,
    terms: impl Iterator<Item = (bool, usize, Scalar)>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (is_input, i, coeff) in terms {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        let value = if is_input { cs.inputs.get(i) } else { cs.aux.get(i) };
        let Some(&value) = value else {
            cs.unknown_variable(is_input, i);
            continue;
        };
        acc += scaled(value, &coeff);
        match (side, is_input) {
            (Side::A, false) => cs.a_aux_density.set(i),
            (Side::B, true) => cs.b_input_density.set(i),
            (Side::B, false) => cs.b_aux_density.set(i),
            _ => {}
        }
    }
    acc
}

fn lc_terms(lc: &Lc) -> impl Iterator<Item = (bool, usize, Scalar)> + '_ {
    lc.terms().iter().map(|t| (t.var.is_input(), t.var.index(), t.coeff))
}

fn bp_terms(lc: &LinearCombination<Scalar>) -> impl Iterator<Item = (bool, usize, Scalar)> + '_ {
    lc.iter_inputs().map(|(&i, c)| (true, i, *c)).chain(lc.iter_aux().map(|(&i, c)| (false, i, *c)))
}

impl NativeCs for ArenaAssignment {
    #[inline]
    fn alloc_aux(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        self.alloc_aux_value(value)
    }
    #[inline]
    fn alloc_input(&mut self, value: Scalar) -> Result<Variable, CircuitError> {
        self.alloc_input_value(value)
    }
    #[inline]
    fn enforce_lc(&mut self, a: &mut Lc, b: &mut Lc, c: &mut Lc) {
        a.normalize();
        b.normalize();
        c.normalize();
        let va = eval_terms(self, Side::A, lc_terms(a));
        let vb = eval_terms(self, Side::B, lc_terms(b));
        let vc = eval_terms(self, Side::C, lc_terms(c));
        self.push_row(va, vb, vc);
    }
    #[inline]
    fn lc_scratch(&mut self) -> &mut LcScratch {
        // Only a circuit that keeps enforcing after `finish` takes the second path.
        let pool = &self.lc_terms;
        self.scratch.get_or_insert_with(|| LcScratch::from_pool(pool))
    }
    fn lc_pool(&self) -> &VecPool<Term> {
        &self.lc_terms
    }
}

fn to_synthesis(e: CircuitError) -> SynthesisError {
    e.into_synthesis()
}

impl ConstraintSystem<Scalar> for ArenaAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        self.alloc_aux_value(value).map_err(to_synthesis)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        self.alloc_input_value(value).map_err(to_synthesis)
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
        let va = eval_terms(self, Side::A, bp_terms(&a));
        let vb = eval_terms(self, Side::B, bp_terms(&b));
        let vc = eval_terms(self, Side::C, bp_terms(&c));
        self.push_row(va, vb, vc);
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

impl ProverWitness for ArenaAssignment {
    fn num_constraints(&self) -> usize {
        self.constraints
    }
    fn input_assignment(&self) -> &[Scalar] {
        &self.inputs
    }
    fn aux_assignment(&self) -> &[Scalar] {
        &self.aux
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
        let [a, b, c] = self.abc.as_ref().ok_or_else(|| self.no_abc())?;
        let n = self.constraints;
        Ok((&a[..n], &b[..n], &c[..n]))
    }
    fn abc_padded_mut(&mut self, domain_size: usize) -> Result<[&mut [Scalar]; 3], CircuitError> {
        let n = self.constraints;
        if domain_size < n {
            return Err(CircuitError::DomainTooSmall { domain_size, constraints: n });
        }
        let shape = self.shape;
        let no_abc = self.no_abc();
        let abc = self.abc.as_mut().ok_or(no_abc)?;
        if domain_size > abc[0].capacity() {
            return Err(CircuitError::OverShape {
                what: "domain",
                requested: domain_size,
                capacity: abc[0].capacity(),
                shape,
            });
        }
        let [a, b, c] = abc;
        for v in [&mut *a, &mut *b, &mut *c] {
            v.truncate(n);
            v.resize(domain_size, Scalar::ZERO)?;
        }
        Ok([a.as_mut_slice(), b.as_mut_slice(), c.as_mut_slice()])
    }
    fn release_abc(&mut self) {
        self.abc = None;
    }
    fn deferred_products(&self) -> Option<&Arc<Precompiled>> {
        self.deferred.as_ref()
    }
}

impl ArenaAssignment {
    /// Why a, b, c cannot be read: left to the backend, never leased, or released.
    fn no_abc(&self) -> CircuitError {
        match &self.deferred {
            Some(pc) => CircuitError::AbcDeferred { recording: pc.identity().to_string() },
            None if self.witness_only => witness_only_error(),
            None => CircuitError::AbcReleased,
        }
    }
}

/// Synthesizes a bellpepper-core circuit into a new [`ArenaAssignment`] exactly as
/// bellperson 0.27's prover does (ONE, the circuit, one row per input).
pub fn synthesize_arena<C: Circuit<Scalar>>(
    circuit: C,
    pools: &AssignmentPools,
    shape: &Shape,
) -> Result<ArenaAssignment, CircuitError> {
    let mut cs = ArenaAssignment::new(pools, shape)?;
    cs.alloc_one()?;
    if let Err(e) = circuit.synthesize(&mut cs) {
        // Prefer the typed error the assignment recorded (over-shape) to its string form.
        return Err(cs.sticky.take().unwrap_or(CircuitError::Synthesis(e)));
    }
    cs.finish()?;
    Ok(cs)
}

/// Synthesizes a native circuit into a new [`ArenaAssignment`] (same order as
/// [`synthesize_arena`]).
pub fn synthesize_native<C: NativeCircuit + ?Sized>(
    circuit: &C,
    pools: &AssignmentPools,
    shape: &Shape,
) -> Result<ArenaAssignment, CircuitError> {
    let mut cs = ArenaAssignment::new(pools, shape)?;
    synthesize_native_into(circuit, &mut cs)?;
    Ok(cs)
}

/// Synthesizes a native circuit into an empty assignment (for callers that keep it).
pub fn synthesize_native_into<C: NativeCircuit + ?Sized>(
    circuit: &C,
    cs: &mut ArenaAssignment,
) -> Result<(), CircuitError> {
    cs.alloc_one()?;
    if let Err(e) = circuit.synthesize_native(cs) {
        return Err(cs.sticky.take().unwrap_or(e));
    }
    cs.finish()
}
