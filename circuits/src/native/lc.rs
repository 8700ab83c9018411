//! [`Lc`]: linear-combination storage for the native path.
//!
//! Terms are appended without searching; [`Lc::normalize`] merges duplicate variables just
//! before a constraint is evaluated (a short quadratic scan for small combinations, an
//! in-place sort for large ones), so the merged coefficients, and therefore the density
//! bits, equal those bellpepper-core 0.2's `LinearCombination` (whose `Indexer` merges on
//! insert) would produce. Term order never matters: evaluation is an exact field sum.
//! The backing `Vec` is recycled (scratch Lcs of the assignment, or a [`VecPool`]), so
//! steady-state synthesis allocates nothing.

use arenaprove_arena::VecPool;
use bellpepper_core::{Index, LinearCombination, Variable};
use blstrs::Scalar;
use ff::Field;

/// Above this many terms, `normalize` sorts instead of scanning pairwise.
const QUADRATIC_MERGE_TERMS_MAX: usize = 12;

/// A variable packed into one word: `index << 1 | is_input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VarKey(u64);

impl VarKey {
    #[inline(always)]
    pub fn of(v: Variable) -> Self {
        match v.get_unchecked() {
            Index::Input(i) => VarKey(((i as u64) << 1) | 1),
            Index::Aux(i) => VarKey((i as u64) << 1),
        }
    }
    #[inline(always)]
    pub fn is_input(self) -> bool {
        self.0 & 1 == 1
    }
    #[inline(always)]
    pub fn index(self) -> usize {
        (self.0 >> 1) as usize
    }
    pub fn variable(self) -> Variable {
        if self.is_input() {
            Variable::new_unchecked(Index::Input(self.index()))
        } else {
            Variable::new_unchecked(Index::Aux(self.index()))
        }
    }
}

/// One term `coeff * var`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub var: VarKey,
    pub coeff: Scalar,
}

/// A linear combination under construction (see the module docs).
#[derive(Clone, Debug)]
pub struct Lc {
    terms: Vec<Term>,
    /// No variable appears twice (true when terms arrive in increasing key order).
    merged: bool,
    /// One more than the largest key so far (0: none).
    key_end: u64,
}

impl Default for Lc {
    fn default() -> Self {
        Lc { terms: Vec::new(), merged: true, key_end: 0 }
    }
}

impl Lc {
    pub fn new() -> Self {
        Self::default()
    }
    /// An Lc over a recycled Vec from `pool`.
    pub fn from_pool(pool: &VecPool<Term>) -> Self {
        Lc { terms: pool.take(), merged: true, key_end: 0 }
    }
    /// Hands the Vec back to `pool`.
    pub fn recycle(self, pool: &VecPool<Term>) {
        pool.give(self.terms);
    }
    #[inline]
    pub fn clear(&mut self) {
        self.terms.clear();
        self.merged = true;
        self.key_end = 0;
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.terms.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
    /// The terms (merged only after [`Lc::normalize`]).
    #[inline]
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// `self += coeff * var`.
    #[inline(always)]
    pub fn add(&mut self, var: Variable, coeff: Scalar) -> &mut Self {
        self.push_key(VarKey::of(var), coeff);
        self
    }
    /// `self += var`.
    #[inline(always)]
    pub fn add_var(&mut self, var: Variable) -> &mut Self {
        self.push_key(VarKey::of(var), Scalar::ONE);
        self
    }
    /// `self -= var`.
    #[inline(always)]
    pub fn sub_var(&mut self, var: Variable) -> &mut Self {
        self.push_key(VarKey::of(var), -Scalar::ONE);
        self
    }
    /// `self += coeff * ONE`.
    #[inline(always)]
    pub fn add_const(&mut self, coeff: Scalar) -> &mut Self {
        self.push_key(VarKey(1), coeff);
        self
    }
    /// `self += scale * other`.
    pub fn add_scaled(&mut self, other: &Lc, scale: Scalar) -> &mut Self {
        for t in &other.terms {
            self.push_key(t.var, t.coeff * scale);
        }
        self
    }
    /// `self += other`.
    pub fn add_lc(&mut self, other: &Lc) -> &mut Self {
        for t in &other.terms {
            self.push_key(t.var, t.coeff);
        }
        self
    }

    #[inline(always)]
    fn push_key(&mut self, var: VarKey, coeff: Scalar) {
        // Fast path like bellpepper's Indexer: the same variable as the last term.
        if let Some(last) = self.terms.last_mut() {
            if last.var == var {
                last.coeff += coeff;
                return;
            }
        }
        if var.0 < self.key_end {
            self.merged = false;
        } else {
            self.key_end = var.0 + 1;
        }
        self.terms.push(Term { var, coeff });
    }

    /// Merges duplicate variables in place (coefficients summed; zero sums are kept, as
    /// bellpepper keeps them, and skipped at evaluation).
    pub fn normalize(&mut self) {
        if self.merged {
            return;
        }
        let n = self.terms.len();
        if n <= QUADRATIC_MERGE_TERMS_MAX {
            let mut out = 0;
            'next: for i in 0..n {
                let t = self.terms[i];
                for j in 0..out {
                    if self.terms[j].var == t.var {
                        self.terms[j].coeff += t.coeff;
                        continue 'next;
                    }
                }
                self.terms[out] = t;
                out += 1;
            }
            self.terms.truncate(out);
        } else {
            self.terms.sort_unstable_by_key(|t| t.var);
            let mut out = 0;
            for i in 0..n {
                let t = self.terms[i];
                if out > 0 && self.terms[out - 1].var == t.var {
                    self.terms[out - 1].coeff += t.coeff;
                } else {
                    self.terms[out] = t;
                    out += 1;
                }
            }
            self.terms.truncate(out);
        }
        self.merged = true;
        self.key_end = self.terms.iter().map(|t| t.var.0 + 1).max().unwrap_or(0);
    }

    /// Appends the terms to a bellpepper `LinearCombination` one by one (its `Indexer`
    /// merges them), as a bellpepper gadget would build it.
    pub fn append_to(&self, mut lc: LinearCombination<Scalar>) -> LinearCombination<Scalar> {
        for t in &self.terms {
            lc = lc + (t.coeff, t.var.variable());
        }
        lc
    }

    /// The value of the combination under `value_of`.
    pub fn eval_with(&self, value_of: impl Fn(VarKey) -> Scalar) -> Scalar {
        self.terms.iter().fold(Scalar::ZERO, |acc, t| acc + value_of(t.var) * t.coeff)
    }
}

/// The three scratch combinations an assignment lends to [`crate::NativeCs::enforce`].
#[derive(Debug, Default)]
pub struct LcScratch {
    pub a: Lc,
    pub b: Lc,
    pub c: Lc,
}

impl LcScratch {
    /// Scratch over recycled Vecs (so a new assignment allocates nothing).
    pub fn from_pool(pool: &VecPool<Term>) -> Self {
        LcScratch { a: Lc::from_pool(pool), b: Lc::from_pool(pool), c: Lc::from_pool(pool) }
    }
    /// Hands the Vecs back, in reverse order of `from_pool`, so that a LIFO pool gives
    /// each role its own (already grown) Vec next time.
    pub fn recycle(self, pool: &VecPool<Term>) {
        self.c.recycle(pool);
        self.b.recycle(pool);
        self.a.recycle(pool);
    }
}
