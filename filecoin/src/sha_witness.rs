//! The witness of bellperson 0.27's `sha256_compression_function`, computed natively: the
//! values it allocates, in its order, and the number of constraints it enforces, without
//! its linear combinations (its `UInt32::addmany` builds one per operand bit even when a
//! witness generator drops every constraint: most of a label piece's time).
//!
//! Each function below follows one of the gadget's (bellperson's `uint32.rs`, `sha256.rs`,
//! `multieq.rs`; bellpepper-core's `boolean.rs`) case by case: which operand patterns
//! (constant, allocated, negated) allocate, what value goes in, how many constraints each
//! enforces. A bit is what a `Boolean` is to a witness ([`Bit`]). The test at the end runs
//! both on the same inputs (every mix of constant, allocated and negated bits, constant and
//! allocated states) and compares the aux values, the constraint counts and the outputs.
use arenaprove_circuits::native::sha256::ROUND_CONSTANTS;
use bellpepper_core::boolean::Boolean;
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// A `Boolean` as a witness sees it: a constant, an allocated variable's value, or the
/// negation of an allocated variable (its variable's value inside).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    Const(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    /// The `Boolean`'s bit; `None` when an allocated bit has no value.
    pub(crate) fn of(b: &Boolean) -> Option<Bit> {
        Some(match b {
            Boolean::Constant(v) => Bit::Const(*v),
            Boolean::Is(a) => Bit::Is(a.get_value()?),
            Boolean::Not(a) => Bit::Not(a.get_value()?),
        })
    }

    fn value(self) -> bool {
        match self {
            Bit::Const(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    fn not(self) -> Bit {
        match self {
            Bit::Const(v) => Bit::Const(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }
}

/// A `UInt32`: its bits least significant first.
pub(crate) type Word = [Bit; 32];

/// `UInt32::constant`.
pub(crate) fn constant(v: u32) -> Word {
    std::array::from_fn(|i| Bit::Const((v >> i) & 1 == 1))
}

/// The word's value.
pub(crate) fn value(w: &Word) -> u32 {
    w.iter().enumerate().fold(0, |acc, (i, b)| acc | (u32::from(b.value()) << i))
}

/// What the gadget allocated and enforced: the aux values in order and the constraint
/// count, with `MultiEq`'s pending bits.
#[derive(Debug, Default)]
pub(crate) struct Witness {
    pub aux: Vec<Scalar>,
    pub constraints: usize,
    multieq_bits: usize,
}

impl Witness {
    /// `cs.alloc` of a bit's value.
    fn alloc(&mut self, v: bool) -> Bit {
        self.aux.push(if v { Scalar::ONE } else { Scalar::ZERO });
        Bit::Is(v)
    }

    /// `AllocatedBit::alloc`, and its `xor`, `and`, `and_not`, `nor`: one variable, one
    /// constraint.
    fn bit(&mut self, v: bool) -> Bit {
        self.constraints += 1;
        self.alloc(v)
    }

    /// `Boolean::xor`.
    fn xor(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x.not(),
            (is @ Bit::Is(_), not @ Bit::Not(_)) | (not @ Bit::Not(_), is @ Bit::Is(_)) => {
                self.xor(is, not.not()).not()
            }
            (Bit::Is(x), Bit::Is(y)) | (Bit::Not(x), Bit::Not(y)) => self.bit(x ^ y),
        }
    }

    /// `Boolean::and`.
    fn and(&mut self, a: Bit, b: Bit) -> Bit {
        match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            (Bit::Is(is), Bit::Not(not)) | (Bit::Not(not), Bit::Is(is)) => self.bit(is & !not),
            (Bit::Not(x), Bit::Not(y)) => self.bit(!x & !y),
            (Bit::Is(x), Bit::Is(y)) => self.bit(x & y),
        }
    }

    /// `Boolean::sha256_ch`.
    fn ch(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        let v = (a.value() & b.value()) ^ (!a.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(v),
            (Bit::Const(false), _, c) => c,
            (a, Bit::Const(false), c) => self.and(a.not(), c),
            (a, b, Bit::Const(false)) => self.and(a, b),
            (a, b, Bit::Const(true)) => self.and(a, b.not()).not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not()).not(),
            // `(Constant(true), _, _)` and every allocated mix: one variable, one constraint.
            _ => {
                self.constraints += 1;
                self.alloc(v)
            }
        }
    }

    /// `Boolean::sha256_maj`.
    fn maj(&mut self, a: Bit, b: Bit, c: Bit) -> Bit {
        let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(v),
            (Bit::Const(false), b, c) => self.and(b, c),
            (a, Bit::Const(false), c) => self.and(a, c),
            (a, b, Bit::Const(false)) => self.and(a, b),
            (a, b, Bit::Const(true)) => self.and(a.not(), b.not()).not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not()).not(),
            (Bit::Const(true), b, c) => self.and(b.not(), c.not()).not(),
            // Every allocated mix: the result, then `b and c`, then the maj constraint.
            _ => {
                let maj = self.alloc(v);
                self.and(b, c);
                self.constraints += 1;
                maj
            }
        }
    }

    /// `UInt32::xor`.
    fn xor_word(&mut self, a: &Word, b: &Word) -> Word {
        std::array::from_fn(|i| self.xor(a[i], b[i]))
    }

    /// `UInt32::sha256_ch` (bit by bit, least significant first).
    fn ch_word(&mut self, a: &Word, b: &Word, c: &Word) -> Word {
        std::array::from_fn(|i| self.ch(a[i], b[i], c[i]))
    }

    /// `UInt32::sha256_maj`.
    fn maj_word(&mut self, a: &Word, b: &Word, c: &Word) -> Word {
        std::array::from_fn(|i| self.maj(a[i], b[i], c[i]))
    }

    /// `UInt32::addmany` under a `MultiEq`: all constant, a constant; otherwise one bit per
    /// bit of the largest possible sum, then the equality into the `MultiEq`.
    fn addmany(&mut self, operands: &[Word]) -> Word {
        let sum: u64 = operands.iter().map(|w| u64::from(value(w))).sum();
        if operands.iter().all(|w| w.iter().all(|b| b.is_const())) {
            return constant(sum as u32);
        }
        let bits = (64 - (operands.len() as u64 * u64::from(u32::MAX)).leading_zeros()) as usize;
        let mut out = [Bit::Const(false); 32];
        for i in 0..bits {
            let b = self.bit((sum >> i) & 1 == 1);
            if let Some(o) = out.get_mut(i) {
                *o = b;
            }
        }
        self.multieq(bits);
        out
    }

    /// `MultiEq::enforce_equal` of `bits` bits: a constraint whenever the field's capacity
    /// would be reached.
    fn multieq(&mut self, bits: usize) {
        if Scalar::CAPACITY as usize <= self.multieq_bits + bits {
            self.constraints += 1;
            self.multieq_bits = 0;
        }
        self.multieq_bits += bits;
    }

    /// `MultiEq`'s drop.
    fn multieq_done(&mut self) {
        if self.multieq_bits > 0 {
            self.constraints += 1;
            self.multieq_bits = 0;
        }
    }
}

fn rotr(w: &Word, by: usize) -> Word {
    std::array::from_fn(|i| w[(i + by) % 32])
}

fn shr(w: &Word, by: usize) -> Word {
    std::array::from_fn(|i| if i + by < 32 { w[i + by] } else { Bit::Const(false) })
}

/// A `Maybe` of the gadget: a word, or the operands of a sum not yet computed.
enum Maybe {
    Deferred(Vec<Word>),
    Concrete(Word),
}

impl Maybe {
    fn compute(self, w: &mut Witness, others: &[Word]) -> Word {
        match self {
            Maybe::Concrete(v) => v,
            Maybe::Deferred(mut v) => {
                v.extend_from_slice(others);
                w.addmany(&v)
            }
        }
    }
}

/// `sha256_compression_function(cs, input, current)`: its witness goes to `w`, its result
/// comes back. `input` is the block's 512 bits as the gadget takes them (big-endian words).
pub(crate) fn compress(
    w: &mut Witness,
    input: &[Bit],
    current: &[Word; 8],
) -> Result<[Word; 8], SynthesisError> {
    if input.len() != 512 {
        return Err(SynthesisError::Unsatisfiable);
    }
    // `UInt32::from_bits_be`: each 32-bit chunk, least significant first.
    let mut m: Vec<Word> =
        input.chunks(32).map(|c| std::array::from_fn(|i| c[31 - i])).collect::<Vec<Word>>();
    for i in 16..64 {
        let mut s0 = rotr(&m[i - 15], 7);
        s0 = w.xor_word(&s0, &rotr(&m[i - 15], 18));
        s0 = w.xor_word(&s0, &shr(&m[i - 15], 3));
        let mut s1 = rotr(&m[i - 2], 17);
        s1 = w.xor_word(&s1, &rotr(&m[i - 2], 19));
        s1 = w.xor_word(&s1, &shr(&m[i - 2], 10));
        let next = w.addmany(&[m[i - 16], s0, m[i - 7], s1]);
        m.push(next);
    }
    let mut a = Maybe::Concrete(current[0]);
    let (mut b, mut c, mut d) = (current[1], current[2], current[3]);
    let mut e = Maybe::Concrete(current[4]);
    let (mut f, mut g, mut h) = (current[5], current[6], current[7]);
    for (i, k) in ROUND_CONSTANTS.iter().enumerate() {
        let new_e = e.compute(w, &[]);
        let mut s1 = rotr(&new_e, 6);
        s1 = w.xor_word(&s1, &rotr(&new_e, 11));
        s1 = w.xor_word(&s1, &rotr(&new_e, 25));
        let ch = w.ch_word(&new_e, &f, &g);
        let temp1 = [h, s1, ch, constant(*k), m[i]];
        let new_a = a.compute(w, &[]);
        let mut s0 = rotr(&new_a, 2);
        s0 = w.xor_word(&s0, &rotr(&new_a, 13));
        s0 = w.xor_word(&s0, &rotr(&new_a, 22));
        let maj = w.maj_word(&new_a, &b, &c);
        h = g;
        g = f;
        f = new_e;
        e = Maybe::Deferred(temp1.iter().copied().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Maybe::Deferred(temp1.iter().copied().chain([s0, maj]).collect());
    }
    let h0 = a.compute(w, &[current[0]]);
    let h1 = w.addmany(&[current[1], b]);
    let h2 = w.addmany(&[current[2], c]);
    let h3 = w.addmany(&[current[3], d]);
    let h4 = e.compute(w, &[current[4]]);
    let h5 = w.addmany(&[current[5], f]);
    let h6 = w.addmany(&[current[6], g]);
    let h7 = w.addmany(&[current[7], h]);
    w.multieq_done();
    Ok([h0, h1, h2, h3, h4, h5, h6, h7])
}

#[cfg(test)]
mod tests {
    use arenaprove_circuits::HeapAssignment as Recorder;
    use bellpepper_core::boolean::AllocatedBit;
    use bellpepper_core::ConstraintSystem;
    use bellperson::gadgets::sha256::sha256_compression_function;
    use bellperson::gadgets::uint32::UInt32;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    use super::*;

    /// A random `Boolean`: allocated when `mix` is 0; else constant (one time in `mix` of
    /// a third), negated (a third) or allocated.
    fn boolean(cs: &mut Recorder, rng: &mut ChaCha8Rng, mix: u32) -> Boolean {
        let v = rng.next_u32() & 1 == 1;
        let allocated = |cs: &mut Recorder| Boolean::from(AllocatedBit::alloc(&mut *cs, Some(v)).unwrap());
        match rng.next_u32() % 3 {
            _ if mix == 0 => allocated(cs),
            0 if rng.next_u32() % mix == 0 => Boolean::constant(v),
            1 => allocated(cs).not(),
            _ => allocated(cs),
        }
    }

    /// The gadget and the native witness agree, block after block, on inputs with every
    /// mix of constant, allocated and negated bits, from the IV (constant) and from
    /// allocated midstates: the aux values, the constraints and the result.
    #[test]
    fn the_native_compression_is_the_gadgets_witness() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (case, mix) in [0u32, 1, 2, 4, 16, 1000].into_iter().cycle().take(18).enumerate() {
            // The baseline assignment keeps the aux values and one a-row per constraint.
            let mut cs = Recorder::new();
            cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
            let inputs: Vec<Boolean> = (0..1024).map(|_| boolean(&mut cs, &mut rng, mix)).collect();
            let start: Vec<UInt32> = if case % 2 == 0 {
                [
                    0x6a09e667u32,
                    0xbb67ae85,
                    0x3c6ef372,
                    0xa54ff53a,
                    0x510e527f,
                    0x9b05688c,
                    0x1f83d9ab,
                    0x5be0cd19,
                ]
                .iter()
                .map(|&v| UInt32::constant(v))
                .collect()
            } else {
                (0..8).map(|_| UInt32::alloc(&mut cs, Some(rng.next_u32())).unwrap()).collect()
            };
            let bits = |b: &Boolean| Bit::of(b).unwrap();
            let mut native: [Word; 8] = std::array::from_fn(|j| {
                let le = start[j].clone().into_bits();
                std::array::from_fn(|i| bits(&le[i]))
            });
            let (before_aux, before_constraints) = (cs.aux_assignment.len(), cs.a.len());
            let mut cur = start;
            let mut w = Witness::default();
            for block in inputs.chunks(512) {
                cur = sha256_compression_function(&mut cs, block, &cur).unwrap();
                let input: Vec<Bit> = block.iter().map(bits).collect();
                native = compress(&mut w, &input, &native).unwrap();
            }
            assert_eq!(&cs.aux_assignment[before_aux..], &w.aux[..], "case {case} (mix {mix}): aux values");
            assert_eq!(cs.a.len() - before_constraints, w.constraints, "case {case}: constraints");
            for (j, word) in cur.into_iter().enumerate() {
                let want: Vec<Bit> = word.into_bits().iter().map(bits).collect();
                assert_eq!(&want[..], &native[j][..], "case {case}: word {j}");
            }
        }
    }
}
