//! SHA-256 over [`Bit`]s: the compression function and the padded hash (FIPS 180-4).
//!
//! Same techniques as bellpepper's gadget, written for [`NativeCs`]: constant folding in
//! every bit operation, one constraint per `ch` bit, two per general `maj` bit, additions
//! deferred so that `e = d + temp1` and `a = temp1 + temp2` each become one `addmany`, and
//! all additions of a compression packed through one [`MultiEq`]. Constraint counts are
//! therefore no larger than bellpepper's (a test compares them). No heap allocation: the
//! schedule and state live on the stack, the MultiEq's combinations are recycled.

use super::{Bit, MultiEq, NativeCs, UInt32};
use crate::CircuitError;

pub const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

pub const IV: [u32; 8] =
    [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// Operands of an addition not yet performed (at most 7: h, S1, ch, K, w, and d or S0+maj).
#[derive(Clone, Copy)]
struct Deferred {
    ops: [UInt32; 7],
    n: usize,
}

impl Deferred {
    fn concrete(v: UInt32) -> Self {
        let mut ops = [v; 7];
        ops[0] = v;
        Deferred { ops, n: 1 }
    }
    fn of(parts: &[&UInt32]) -> Self {
        let mut d = Deferred { ops: [*parts[0]; 7], n: 0 };
        for p in parts {
            d.ops[d.n] = **p;
            d.n += 1;
        }
        d
    }
    /// The value as a word, adding `extra` (performing the deferred addition).
    fn compute<CS: NativeCs>(
        &self,
        cs: &mut CS,
        eq: &mut MultiEq,
        extra: Option<&UInt32>,
    ) -> Result<UInt32, CircuitError> {
        if self.n == 1 && extra.is_none() {
            return Ok(self.ops[0]);
        }
        let mut refs: [&UInt32; 8] = [&self.ops[0]; 8];
        let mut k = 0;
        for op in &self.ops[..self.n] {
            refs[k] = op;
            k += 1;
        }
        if let Some(e) = extra {
            refs[k] = e;
            k += 1;
        }
        UInt32::addmany(cs, eq, &refs[..k])
    }
}

fn sigma<CS: NativeCs>(
    cs: &mut CS,
    x: &UInt32,
    r: [usize; 2],
    last: usize,
    last_is_shift: bool,
) -> Result<UInt32, CircuitError> {
    let t = x.rotr(r[0]).xor(cs, &x.rotr(r[1]))?;
    let third = if last_is_shift { x.shr(last) } else { x.rotr(last) };
    t.xor(cs, &third)
}

/// One compression: `state` updated with the 512-bit `block` (bits most significant
/// first, as bytes are read).
pub fn compress<CS: NativeCs>(
    cs: &mut CS,
    block: &[Bit; 512],
    state: &[UInt32; 8],
) -> Result<[UInt32; 8], CircuitError> {
    compress_rounds(cs, block, state, ROUNDS)
}

/// Rounds of the SHA-256 compression function.
pub const ROUNDS: usize = 64;

/// The compression function cut to its first `rounds` rounds (1..=[`ROUNDS`]): the
/// message schedule is extended only as far as those rounds read it, then the state is
/// fed forward as usual. **Only `rounds == 64` is SHA-256**; fewer rounds is a smaller
/// workload of the same kind, used by test circuits that must scale down.
pub fn compress_rounds<CS: NativeCs>(
    cs: &mut CS,
    block: &[Bit; 512],
    state: &[UInt32; 8],
    rounds: usize,
) -> Result<[UInt32; 8], CircuitError> {
    if !(1..=ROUNDS).contains(&rounds) {
        return Err(CircuitError::Invalid {
            what: "sha256 compression rounds",
            reason: format!("{rounds} not in 1..={ROUNDS}"),
        });
    }
    let mut eq = MultiEq::new(cs);
    let r = compress_with(cs, &mut eq, block, state, rounds);
    eq.finish(cs);
    r
}

fn compress_with<CS: NativeCs>(
    cs: &mut CS,
    eq: &mut MultiEq,
    block: &[Bit; 512],
    state: &[UInt32; 8],
    rounds: usize,
) -> Result<[UInt32; 8], CircuitError> {
    let mut w = [UInt32::constant(0); 64];
    for (i, word) in w.iter_mut().take(16).enumerate() {
        *word = UInt32::from_bits_be(&block[32 * i..32 * i + 32]);
    }
    for i in 16..rounds {
        let s0 = sigma(cs, &w[i - 15], [7, 18], 3, true)?;
        let s1 = sigma(cs, &w[i - 2], [17, 19], 10, true)?;
        w[i] = UInt32::addmany(cs, eq, &[&w[i - 16], &s0, &w[i - 7], &s1])?;
    }

    let mut a = Deferred::concrete(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Deferred::concrete(state[4]);
    for i in 0..rounds {
        let new_e = e.compute(cs, eq, None)?;
        let s1 = sigma(cs, &new_e, [6, 11], 25, false)?;
        let ch = UInt32::ch(cs, &new_e, &f, &g)?;
        let k = UInt32::constant(ROUND_CONSTANTS[i]);
        let new_a = a.compute(cs, eq, None)?;
        let s0 = sigma(cs, &new_a, [2, 13], 22, false)?;
        let maj = UInt32::maj(cs, &new_a, &b, &c)?;
        // temp1 = h + S1 + ch + K + w;  e' = d + temp1;  a' = temp1 + S0 + maj
        let e_next = Deferred::of(&[&h, &s1, &ch, &k, &w[i], &d]);
        let a_next = Deferred::of(&[&h, &s1, &ch, &k, &w[i], &s0, &maj]);
        h = g;
        g = f;
        f = new_e;
        e = e_next;
        d = c;
        c = b;
        b = new_a;
        a = a_next;
    }
    Ok([
        a.compute(cs, eq, Some(&state[0]))?,
        UInt32::addmany(cs, eq, &[&state[1], &b])?,
        UInt32::addmany(cs, eq, &[&state[2], &c])?,
        UInt32::addmany(cs, eq, &[&state[3], &d])?,
        e.compute(cs, eq, Some(&state[4]))?,
        UInt32::addmany(cs, eq, &[&state[5], &f])?,
        UInt32::addmany(cs, eq, &[&state[6], &g])?,
        UInt32::addmany(cs, eq, &[&state[7], &h])?,
    ])
}

/// The IV as constant words.
pub fn iv() -> [UInt32; 8] {
    IV.map(UInt32::constant)
}

/// SHA-256 of `n_bytes` bytes whose bits (most significant first) `bit(i)` yields, with
/// FIPS padding (padding bits are constants). Returns the digest as 256 bits, most
/// significant first. Bits are requested in order, once each.
pub fn sha256<CS: NativeCs>(
    cs: &mut CS,
    n_bytes: usize,
    mut bit: impl FnMut(&mut CS, usize) -> Result<Bit, CircuitError>,
) -> Result<[Bit; 256], CircuitError> {
    let msg_bits = n_bytes * 8;
    let total_bits = (msg_bits + 1 + 64).div_ceil(512) * 512;
    let mut state = iv();
    let mut block = [Bit::Const(false); 512];
    for start in (0..total_bits).step_by(512) {
        for (j, slot) in block.iter_mut().enumerate() {
            let i = start + j;
            *slot = if i < msg_bits {
                bit(cs, i)?
            } else if i == msg_bits {
                Bit::Const(true)
            } else if i >= total_bits - 64 {
                Bit::Const((msg_bits as u64 >> (total_bits - 1 - i)) & 1 == 1)
            } else {
                Bit::Const(false)
            };
        }
        state = compress(cs, &block, &state)?;
    }
    Ok(digest_bits(&state))
}

/// The state as 256 bits, most significant first.
pub fn digest_bits(state: &[UInt32; 8]) -> [Bit; 256] {
    let mut out = [Bit::Const(false); 256];
    for (k, word) in state.iter().enumerate() {
        out[32 * k..32 * k + 32].copy_from_slice(&word.bits_be());
    }
    out
}

/// Digest bytes from digest bits (most significant first).
pub fn digest_bytes(bits: &[Bit; 256]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in bits.iter().enumerate() {
        out[i / 8] |= (b.value() as u8) << (7 - i % 8);
    }
    out
}
