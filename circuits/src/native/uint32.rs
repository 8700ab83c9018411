//! [`UInt32`] (32 [`Bit`]s, least significant first) and [`MultiEq`], which packs several
//! equalities `lhs_k = rhs_k` of `n_k` bits into one constraint
//! `(sum 2^{s_k} lhs_k) * ONE = sum 2^{s_k} rhs_k` while the shifts fit the field's
//! capacity (254 bits for BLS12-381's scalar field), as bellpepper's `MultiEq` does.

use std::sync::OnceLock;

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::{Bit, Lc, NativeCs};
use crate::CircuitError;

/// Bits an equality may use in one packed constraint.
pub const MULTIEQ_BITS_MAX: usize = Scalar::CAPACITY as usize;

/// 2^k for k in 0..=255, computed once.
pub fn pow2(k: usize) -> Scalar {
    static TABLE: OnceLock<[Scalar; 256]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [Scalar::ONE; 256];
        for i in 1..256 {
            t[i] = t[i - 1].double();
        }
        t
    })[k]
}

/// A 32-bit word of bits, least significant first, with its value.
#[derive(Clone, Copy, Debug)]
pub struct UInt32 {
    pub bits: [Bit; 32],
    pub value: u32,
}

impl UInt32 {
    pub fn constant(value: u32) -> Self {
        UInt32 { bits: std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)), value }
    }
    /// From 32 bits, most significant first (SHA-256's order).
    pub fn from_bits_be(bits: &[Bit]) -> Self {
        assert_eq!(bits.len(), 32, "UInt32 needs 32 bits");
        let bits: [Bit; 32] = std::array::from_fn(|i| bits[31 - i]);
        let value = bits.iter().enumerate().fold(0u32, |v, (i, b)| v | ((b.value() as u32) << i));
        UInt32 { bits, value }
    }
    /// Bits most significant first.
    pub fn bits_be(&self) -> [Bit; 32] {
        std::array::from_fn(|i| self.bits[31 - i])
    }
    pub fn rotr(&self, by: usize) -> Self {
        let by = by % 32;
        UInt32 {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32]),
            value: self.value.rotate_right(by as u32),
        }
    }
    pub fn shr(&self, by: usize) -> Self {
        UInt32 {
            bits: std::array::from_fn(|i| if i + by < 32 { self.bits[i + by] } else { Bit::Const(false) }),
            value: self.value >> by,
        }
    }
    pub fn xor<CS: NativeCs>(&self, cs: &mut CS, other: &Self) -> Result<Self, CircuitError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, out) in bits.iter_mut().enumerate() {
            *out = Bit::xor(cs, &self.bits[i], &other.bits[i])?;
        }
        Ok(UInt32 { bits, value: self.value ^ other.value })
    }
    pub fn ch<CS: NativeCs>(cs: &mut CS, a: &Self, b: &Self, c: &Self) -> Result<Self, CircuitError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, out) in bits.iter_mut().enumerate() {
            *out = Bit::ch(cs, &a.bits[i], &b.bits[i], &c.bits[i])?;
        }
        Ok(UInt32 { bits, value: (a.value & b.value) ^ (!a.value & c.value) })
    }
    pub fn maj<CS: NativeCs>(cs: &mut CS, a: &Self, b: &Self, c: &Self) -> Result<Self, CircuitError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, out) in bits.iter_mut().enumerate() {
            *out = Bit::maj(cs, &a.bits[i], &b.bits[i], &c.bits[i])?;
        }
        Ok(UInt32 { bits, value: (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value) })
    }

    /// Sum of 2..=10 words mod 2^32: the result (with carries) is allocated bit by bit
    /// (one booleanity constraint each) and one packed equality is added to `eq`.
    pub fn addmany<CS: NativeCs>(
        cs: &mut CS,
        eq: &mut MultiEq,
        operands: &[&UInt32],
    ) -> Result<Self, CircuitError> {
        assert!((2..=10).contains(&operands.len()), "addmany takes 2..=10 operands");
        let sum: u64 = operands.iter().map(|o| o.value as u64).sum();
        let value = sum as u32;
        if operands.iter().all(|o| o.bits.iter().all(Bit::is_const)) {
            return Ok(UInt32::constant(value));
        }
        let max_value = operands.len() as u64 * u32::MAX as u64;
        let result_bits = 64 - max_value.leading_zeros() as usize;
        // Allocate the result bits (carries included) first, as bellpepper does.
        let mut bits = [Bit::Const(false); 32];
        let mut carries = [Bit::Const(false); 4];
        for i in 0..result_bits {
            let b = Bit::alloc(cs, (sum >> i) & 1 == 1)?;
            if i < 32 {
                bits[i] = b;
            } else {
                carries[i - 32] = b;
            }
        }
        let shift = eq.reserve(cs, result_bits);
        let mut constant = 0u64;
        for op in operands {
            for (i, b) in op.bits.iter().enumerate() {
                match b {
                    Bit::Const(true) => constant += 1 << i,
                    Bit::Const(false) => {}
                    _ => b.add_to_lc(&mut eq.lhs, pow2(shift + i)),
                }
            }
        }
        if constant != 0 {
            eq.lhs.add_const(Scalar::from(constant) * pow2(shift));
        }
        for (i, b) in bits.iter().chain(carries.iter()).take(result_bits).enumerate() {
            b.add_to_lc(&mut eq.rhs, pow2(shift + i));
        }
        Ok(UInt32 { bits, value })
    }
}

/// Packs equalities into shared constraints (see the module docs). Call
/// [`MultiEq::finish`] at the end; its combinations come from the constraint system's
/// recycled storage and go back there.
pub struct MultiEq {
    lhs: Lc,
    rhs: Lc,
    one: Lc,
    bits_used: usize,
}

impl MultiEq {
    pub fn new<CS: NativeCs>(cs: &CS) -> Self {
        let mut one = cs.take_lc();
        one.add_const(Scalar::ONE);
        let lhs = cs.take_lc();
        let rhs = cs.take_lc();
        MultiEq { lhs, rhs, one, bits_used: 0 }
    }

    /// Makes room for `num_bits` more bits (flushing if needed); returns the shift.
    fn reserve<CS: NativeCs>(&mut self, cs: &mut CS, num_bits: usize) -> usize {
        assert!(num_bits < MULTIEQ_BITS_MAX);
        if self.bits_used + num_bits >= MULTIEQ_BITS_MAX {
            self.flush(cs);
        }
        let shift = self.bits_used;
        self.bits_used += num_bits;
        shift
    }

    fn flush<CS: NativeCs>(&mut self, cs: &mut CS) {
        cs.enforce_lc(&mut self.lhs, &mut self.one, &mut self.rhs);
        self.lhs.clear();
        self.rhs.clear();
        self.bits_used = 0;
    }

    /// Enforces what is pending and recycles the storage.
    pub fn finish<CS: NativeCs>(mut self, cs: &mut CS) {
        if self.bits_used > 0 {
            self.flush(cs);
        }
        // Reverse order of `new`, so each role gets its own grown Vec back next time.
        cs.give_lc(self.rhs);
        cs.give_lc(self.lhs);
        cs.give_lc(self.one);
    }
}
