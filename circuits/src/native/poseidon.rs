//! A Poseidon-style field hash: width 3 (capacity 1, rate 2), x^5 S-box, 8 full rounds
//! and 57 partial rounds (the round numbers of Poseidon for a ~255-bit field at width 3).
//!
//! **Not a standardized Poseidon instance.** Round constants are drawn from ChaCha20
//! seeded with [`CONSTANTS_SEED`], and the MDS matrix is the Cauchy matrix
//! `M[i][j] = 1 / (i + (3 + j))`; neither comes from the Poseidon paper's Grain LFSR or
//! any deployed parameter set. It is a workload with Poseidon's shape (field-heavy
//! constraints with non-unit coefficients), for benchmarks and tests.
//!
//! Circuit form: the state is kept as affine expressions ([`Affine`]: at most 3 variables
//! plus a constant). A round adds constants, applies x^5 (3 constraints: x^2, x^4, x^5)
//! to every element in a full round and to element 0 in a partial round, where elements
//! 1 and 2 are materialized (one constraint each) so expressions stay small, then mixes
//! by the MDS matrix (free: it only changes coefficients). 8*9 + 57*5 + 1 = 358
//! constraints per hash of two elements.

use std::sync::OnceLock;

use bellpepper_core::Variable;
use blstrs::Scalar;
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::NativeCs;
use crate::CircuitError;

pub const WIDTH: usize = 3;
pub const FULL_ROUNDS: usize = 8;
pub const PARTIAL_ROUNDS: usize = 57;
pub const ROUNDS: usize = FULL_ROUNDS + PARTIAL_ROUNDS;
/// Seed of the round constants (a fixed ASCII string).
pub const CONSTANTS_SEED: [u8; 32] = *b"arenaprove poseidon-like x5 w3 0";
/// The capacity element's initial value (a domain tag for 2-to-1 hashing).
pub const DOMAIN_TAG: u64 = 3;
/// Constraints of one [`hash2`].
pub const CONSTRAINTS_PER_HASH: usize = FULL_ROUNDS * WIDTH * 3 + PARTIAL_ROUNDS * (3 + WIDTH - 1) + 1;

/// Round constants and MDS matrix.
pub struct Params {
    pub round_constants: [[Scalar; WIDTH]; ROUNDS],
    pub mds: [[Scalar; WIDTH]; WIDTH],
}

pub fn params() -> &'static Params {
    static P: OnceLock<Params> = OnceLock::new();
    P.get_or_init(|| {
        let mut rng = ChaCha20Rng::from_seed(CONSTANTS_SEED);
        let round_constants = std::array::from_fn(|_| std::array::from_fn(|_| Scalar::random(&mut rng)));
        let mds = std::array::from_fn(|i| {
            std::array::from_fn(|j| Scalar::from((i + WIDTH + j) as u64).invert().expect("i + 3 + j != 0"))
        });
        Params { round_constants, mds }
    })
}

fn is_full(round: usize) -> bool {
    !(FULL_ROUNDS / 2..FULL_ROUNDS / 2 + PARTIAL_ROUNDS).contains(&round)
}

#[inline(always)]
fn pow5(x: Scalar) -> Scalar {
    let x2 = x.square();
    x2.square() * x
}

#[allow(clippy::needless_range_loop)]
/// The hash of two field elements, out of circuit (`state[1]` after the permutation).
pub fn hash2_native(left: Scalar, right: Scalar) -> Scalar {
    let p = params();
    let mut s = [Scalar::from(DOMAIN_TAG), left, right];
    for r in 0..ROUNDS {
        for i in 0..WIDTH {
            s[i] += p.round_constants[r][i];
        }
        if is_full(r) {
            for x in s.iter_mut() {
                *x = pow5(*x);
            }
        } else {
            s[0] = pow5(s[0]);
        }
        s = std::array::from_fn(|i| (0..WIDTH).fold(Scalar::ZERO, |acc, j| acc + p.mds[i][j] * s[j]));
    }
    s[1]
}

/// An affine expression `sum coeff_k * var_k + constant` with at most 3 variables, and
/// its value.
#[derive(Clone, Copy, Debug)]
pub struct Affine {
    vars: [(Variable, Scalar); WIDTH],
    n: usize,
    constant: Scalar,
    value: Scalar,
}

impl Affine {
    pub fn constant(c: Scalar) -> Self {
        Affine { vars: [(super::ONE, Scalar::ZERO); WIDTH], n: 0, constant: c, value: c }
    }
    pub fn var(v: Variable, value: Scalar) -> Self {
        let mut a = Self::constant(Scalar::ZERO);
        a.vars[0] = (v, Scalar::ONE);
        a.n = 1;
        a.value = value;
        a
    }
    /// `sum coeff_k * var_k` with the given value.
    pub fn sum3(terms: [(Variable, Scalar); WIDTH], value: Scalar) -> Self {
        Affine { vars: terms, n: WIDTH, constant: Scalar::ZERO, value }
    }
    pub fn value(&self) -> Scalar {
        self.value
    }
    fn add_to(&self, lc: &mut super::Lc, scale: Scalar) {
        for &(v, c) in &self.vars[..self.n] {
            lc.add(v, c * scale);
        }
        if !bool::from(self.constant.is_zero()) {
            lc.add_const(self.constant * scale);
        }
    }
    fn add_to_one(&self, lc: &mut super::Lc) {
        for &(v, c) in &self.vars[..self.n] {
            lc.add(v, c);
        }
        if !bool::from(self.constant.is_zero()) {
            lc.add_const(self.constant);
        }
    }
}

/// Allocates `x^5` for an affine `x`: 3 constraints.
fn sbox<CS: NativeCs>(cs: &mut CS, x: &Affine) -> Result<(Variable, Scalar), CircuitError> {
    let x2v = x.value.square();
    let x2 = cs.alloc_aux(x2v)?;
    cs.enforce(
        |l| x.add_to_one(l),
        |l| x.add_to_one(l),
        |l| {
            l.add_var(x2);
        },
    );
    let x4v = x2v.square();
    let x4 = cs.alloc_aux(x4v)?;
    cs.enforce(
        |l| {
            l.add_var(x2);
        },
        |l| {
            l.add_var(x2);
        },
        |l| {
            l.add_var(x4);
        },
    );
    let x5v = x4v * x.value;
    let x5 = cs.alloc_aux(x5v)?;
    cs.enforce(
        |l| {
            l.add_var(x4);
        },
        |l| x.add_to_one(l),
        |l| {
            l.add_var(x5);
        },
    );
    Ok((x5, x5v))
}

/// Allocates a variable equal to `x`: one constraint `x * ONE = v`.
pub fn materialize<CS: NativeCs>(cs: &mut CS, x: &Affine) -> Result<(Variable, Scalar), CircuitError> {
    let v = cs.alloc_aux(x.value)?;
    cs.enforce(
        |l| x.add_to_one(l),
        |l| {
            l.add_const(Scalar::ONE);
        },
        |l| {
            l.add_var(v);
        },
    );
    Ok((v, x.value))
}

#[allow(clippy::needless_range_loop)]
/// The hash of two elements in circuit; returns the output as an allocated variable and
/// its value ([`CONSTRAINTS_PER_HASH`] constraints).
pub fn hash2<CS: NativeCs>(
    cs: &mut CS,
    left: &Affine,
    right: &Affine,
) -> Result<(Variable, Scalar), CircuitError> {
    let p = params();
    let mut state = [Affine::constant(Scalar::from(DOMAIN_TAG)), *left, *right];
    for r in 0..ROUNDS {
        for (i, s) in state.iter_mut().enumerate() {
            s.constant += p.round_constants[r][i];
            s.value += p.round_constants[r][i];
        }
        let full = is_full(r);
        let mut v = [(super::ONE, Scalar::ZERO); WIDTH];
        for i in 0..WIDTH {
            v[i] = if full || i == 0 { sbox(cs, &state[i])? } else { materialize(cs, &state[i])? };
        }
        state = std::array::from_fn(|i| {
            let mut a = Affine::constant(Scalar::ZERO);
            a.n = WIDTH;
            for j in 0..WIDTH {
                a.vars[j] = (v[j].0, p.mds[i][j]);
                a.value += p.mds[i][j] * v[j].1;
            }
            a
        });
    }
    materialize(cs, &state[1])
}

/// Adds `scale * x` to `lc` (for callers that bind hash inputs/outputs).
pub fn add_affine(lc: &mut super::Lc, x: &Affine, scale: Scalar) {
    x.add_to(lc, scale)
}
