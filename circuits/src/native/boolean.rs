//! [`Bit`]: a boolean in a circuit (a constant, an allocated bit, or its negation), with
//! `add_to_lc` / `sub_from_lc` that accumulate into an existing [`Lc`] instead of building
//! a temporary linear combination.
//!
//! Constraint costs equal bellpepper-core's `Boolean` for every operation (constants fold
//! for free; one constraint per `xor`/`and`/`ch`, two per general `maj`).

use std::ops::Not;

use bellpepper_core::Variable;
use blstrs::Scalar;
use ff::Field;

use super::{Lc, NativeCs};
use crate::CircuitError;

/// A boolean; `Is(v, x)` / `Not(v, x)` carry the value `x` of the variable `v`.
#[derive(Clone, Copy, Debug)]
pub enum Bit {
    Const(bool),
    Is(Variable, bool),
    Not(Variable, bool),
}

impl std::ops::Not for Bit {
    type Output = Bit;
    #[inline(always)]
    fn not(self) -> Bit {
        match self {
            Bit::Const(b) => Bit::Const(!b),
            Bit::Is(v, x) => Bit::Not(v, x),
            Bit::Not(v, x) => Bit::Is(v, x),
        }
    }
}

#[inline(always)]
fn fe(b: bool) -> Scalar {
    if b {
        Scalar::ONE
    } else {
        Scalar::ZERO
    }
}

impl Bit {
    /// Allocates a bit holding `value` with the booleanity constraint `(1 - v) * v = 0`.
    #[inline]
    pub fn alloc<CS: NativeCs>(cs: &mut CS, value: bool) -> Result<Bit, CircuitError> {
        let v = cs.alloc_aux(fe(value))?;
        cs.enforce(
            |a| {
                a.add_const(Scalar::ONE).sub_var(v);
            },
            |b| {
                b.add_var(v);
            },
            |_| {},
        );
        Ok(Bit::Is(v, value))
    }

    /// The bit's value.
    #[inline(always)]
    pub fn value(&self) -> bool {
        match *self {
            Bit::Const(b) => b,
            Bit::Is(_, b) => b,
            Bit::Not(_, b) => !b,
        }
    }

    #[inline(always)]
    pub fn is_const(&self) -> bool {
        matches!(self, Bit::Const(_))
    }

    /// `lc += coeff * self` (a negated bit adds `coeff * (ONE - v)`).
    #[inline(always)]
    pub fn add_to_lc(&self, lc: &mut Lc, coeff: Scalar) {
        match *self {
            Bit::Const(false) => {}
            Bit::Const(true) => {
                lc.add_const(coeff);
            }
            Bit::Is(v, _) => {
                lc.add(v, coeff);
            }
            Bit::Not(v, _) => {
                lc.add_const(coeff).add(v, -coeff);
            }
        }
    }

    /// `lc -= coeff * self`.
    #[inline(always)]
    pub fn sub_from_lc(&self, lc: &mut Lc, coeff: Scalar) {
        self.add_to_lc(lc, -coeff)
    }

    /// `a xor b`: free if either is constant, else one constraint `(2a) * b = a + b - c`.
    pub fn xor<CS: NativeCs>(cs: &mut CS, a: &Bit, b: &Bit) -> Result<Bit, CircuitError> {
        match (*a, *b) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => Ok(x),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => Ok(x.not()),
            (Bit::Is(x, xv), Bit::Is(y, yv)) | (Bit::Not(x, xv), Bit::Not(y, yv)) => {
                alloc_xor(cs, x, xv, y, yv)
            }
            (Bit::Is(x, xv), Bit::Not(y, yv)) | (Bit::Not(x, xv), Bit::Is(y, yv)) => {
                Ok(alloc_xor(cs, x, xv, y, yv)?.not())
            }
        }
    }

    /// `a and b`: free if either is constant, else one constraint.
    pub fn and<CS: NativeCs>(cs: &mut CS, a: &Bit, b: &Bit) -> Result<Bit, CircuitError> {
        match (*a, *b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Ok(Bit::Const(false)),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => Ok(x),
            // All variable cases: (a) * (b) = c over the bits' own linear forms.
            (x, y) => {
                let value = x.value() & y.value();
                let c = cs.alloc_aux(fe(value))?;
                cs.enforce(
                    |l| x.add_to_lc(l, Scalar::ONE),
                    |l| y.add_to_lc(l, Scalar::ONE),
                    |l| {
                        l.add_var(c);
                    },
                );
                Ok(Bit::Is(c, value))
            }
        }
    }

    /// SHA-256 `ch(a, b, c) = (a and b) xor (not a and c)`: at most one constraint.
    pub fn ch<CS: NativeCs>(cs: &mut CS, a: &Bit, b: &Bit, c: &Bit) -> Result<Bit, CircuitError> {
        match (*a, *b, *c) {
            (Bit::Const(true), x, _) => Ok(x),
            (Bit::Const(false), _, z) => Ok(z),
            (_, Bit::Const(x), Bit::Const(z)) if x == z => Ok(Bit::Const(x)),
            (x, Bit::Const(true), Bit::Const(false)) => Ok(x),
            (x, Bit::Const(false), Bit::Const(true)) => Ok(x.not()),
            (x, Bit::Const(false), z) => Bit::and(cs, &x.not(), &z),
            (x, Bit::Const(true), z) => Ok(Bit::and(cs, &x.not(), &z.not())?.not()),
            (x, y, Bit::Const(false)) => Bit::and(cs, &x, &y),
            (x, y, Bit::Const(true)) => Ok(Bit::and(cs, &x, &y.not())?.not()),
            (x, y, z) => {
                // ch = c + a (b - c):  (a) * (b - c) = ch - c
                let value = if x.value() { y.value() } else { z.value() };
                let v = cs.alloc_aux(fe(value))?;
                cs.enforce(
                    |l| x.add_to_lc(l, Scalar::ONE),
                    |l| {
                        y.add_to_lc(l, Scalar::ONE);
                        z.sub_from_lc(l, Scalar::ONE);
                    },
                    |l| {
                        l.add_var(v);
                        z.sub_from_lc(l, Scalar::ONE);
                    },
                );
                Ok(Bit::Is(v, value))
            }
        }
    }

    /// SHA-256 `maj(a, b, c)`: free / one constraint with a constant, else two.
    pub fn maj<CS: NativeCs>(cs: &mut CS, a: &Bit, b: &Bit, c: &Bit) -> Result<Bit, CircuitError> {
        let (x, y, z) = (*a, *b, *c);
        let consts = [x, y, z].iter().filter(|b| b.is_const()).count();
        if consts == 3 {
            let n = [x, y, z].iter().filter(|b| b.value()).count();
            return Ok(Bit::Const(n >= 2));
        }
        if consts >= 1 {
            // maj(0, p, q) = p and q; maj(1, p, q) = p or q = not(not p and not q).
            let (k, p, q) = match (x, y, z) {
                (Bit::Const(k), p, q) | (p, Bit::Const(k), q) | (p, q, Bit::Const(k)) => (k, p, q),
                _ => unreachable!("one operand is constant"),
            };
            return if k { Ok(Bit::and(cs, &p.not(), &q.not())?.not()) } else { Bit::and(cs, &p, &q) };
        }
        // maj = a (b + c - 2bc) + bc:  bc = b and c;  (2bc - b - c) * (a) = bc - maj
        let bc = Bit::and(cs, &y, &z)?;
        let value = (x.value() as u8 + y.value() as u8 + z.value() as u8) >= 2;
        let m = cs.alloc_aux(fe(value))?;
        let two = Scalar::ONE.double();
        cs.enforce(
            |l| {
                bc.add_to_lc(l, two);
                y.sub_from_lc(l, Scalar::ONE);
                z.sub_from_lc(l, Scalar::ONE);
            },
            |l| x.add_to_lc(l, Scalar::ONE),
            |l| {
                bc.add_to_lc(l, Scalar::ONE);
                l.sub_var(m);
            },
        );
        Ok(Bit::Is(m, value))
    }
}

#[inline]
fn alloc_xor<CS: NativeCs>(
    cs: &mut CS,
    x: Variable,
    xv: bool,
    y: Variable,
    yv: bool,
) -> Result<Bit, CircuitError> {
    let value = xv ^ yv;
    let c = cs.alloc_aux(fe(value))?;
    let two = Scalar::ONE.double();
    cs.enforce(
        |l| {
            l.add(x, two);
        },
        |l| {
            l.add_var(y);
        },
        |l| {
            l.add_var(x).add_var(y).sub_var(c);
        },
    );
    Ok(Bit::Is(c, value))
}
