//! [`NttTables`]: the NTTs' persistent device tables, made once by
//! [`crate::Gpu::prepare_ntt`] in the arena's persistent part, for domains up to
//! `2^max_log`: the twiddles `w_max^k` (`2^(max_log-1)` scalars; smaller domains stride
//! through them, inverse twiddles are read as `-w^(N/2-k)`), the coset powers `g^i` and
//! `g^-i` split as `lo[i mod 2^s] * hi[i >> s]` (2 x 2^(max_log/2) scalars each), and per
//! domain size the constants `1/n` and `1/(g^n - 1)`.
//!
//! Conventions are the CPU engine's (engine/src/groth16/domain.rs, bellperson 0.27):
//! omega is `Scalar::ROOT_OF_UNITY` squared down to the domain, cosets use
//! `Scalar::MULTIPLICATIVE_GENERATOR`.

use blst::blst_fr;
use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::arena::{DevPtr, DevSpan, DeviceArena, SPAN_ALIGN_BYTES};
use crate::device::Device;
use crate::error::Result;
use crate::kernels::Dims;

/// Largest supported domain, log2: twiddles for 2^28 take 4 GiB of device memory, and the
/// kernels index with 32-bit in-block offsets and 64-bit global ones.
pub const NTT_LOG_MAX: u32 = 28;
/// Bytes of one Fr scalar.
pub(crate) const FR_BYTES: usize = 32;
/// Constants per domain size in the table: `1/n`, `1/(g^n - 1)`.
const CONSTS_PER_LOG: usize = 2;
const THREADS: u32 = 256;

/// The tables' spans in the arena's persistent part.
pub(crate) struct NttTables {
    pub max_log: u32,
    tw: DevSpan,
    coset: [DevSpan; 2],
    coset_inv: [DevSpan; 2],
    coset_split: u32,
    consts: DevSpan,
}

pub(crate) fn to_words(s: &Scalar) -> [u64; 4] {
    blst_fr::from(*s).l
}

/// `w^i` for `i < count`.
pub(crate) fn powers(w: Scalar, count: usize) -> Vec<[u64; 4]> {
    let mut p = Scalar::ONE;
    (0..count)
        .map(|_| {
            let v = to_words(&p);
            p *= w;
            v
        })
        .collect()
}

/// The root of unity of order `2^log`, exactly as the CPU domain derives it.
pub fn omega(log: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log..Scalar::S {
        w = w.square();
    }
    w
}

/// Scalars in each persistent table for domains up to `2^max_log` (`max_log >= 1`):
/// twiddles, the four coset power tables (g lo/hi, g^-1 lo/hi), the per-size constants.
pub(crate) fn table_scalars(max_log: u32) -> [usize; 6] {
    let coset_split = max_log.div_ceil(2);
    let (lo_n, hi_n) = (1usize << coset_split, 1usize << (max_log - coset_split));
    [1usize << (max_log - 1), lo_n, hi_n, lo_n, hi_n, (max_log as usize + 1) * CONSTS_PER_LOG]
}

/// Persistent device bytes of [`crate::Gpu::prepare_ntt`]`(max_log)`.
pub fn ntt_tables_bytes(max_log: u32) -> usize {
    table_scalars(max_log.max(1)).iter().map(|c| (c * FR_BYTES).next_multiple_of(SPAN_ALIGN_BYTES)).sum()
}

impl NttTables {
    /// Computes the tables for domains up to `2^max_log` (`1 ..= NTT_LOG_MAX`) into
    /// `arena`'s persistent part, on `dev` (bound to this thread); waits for the device.
    pub(crate) fn prepare(dev: &Device, arena: &mut DeviceArena, max_log: u32) -> Result<NttTables> {
        assert!((1..=NTT_LOG_MAX).contains(&max_log), "the caller checks the domain limit");
        let w = omega(max_log);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().expect("the generator is non-zero");
        let tw_count = 1usize << (max_log - 1);
        let tw_split = (max_log - 1).div_ceil(2);
        let tw_lo = powers(w, 1 << tw_split);
        let tw_hi = powers(w.pow_vartime([1u64 << tw_split]), 1 << (max_log - 1 - tw_split));
        let coset_split = max_log.div_ceil(2);
        let (lo_n, hi_n) = (1usize << coset_split, 1usize << (max_log - coset_split));
        let tables = [
            powers(g, lo_n),
            powers(g.pow_vartime([lo_n as u64]), hi_n),
            powers(g_inv, lo_n),
            powers(g_inv.pow_vartime([lo_n as u64]), hi_n),
        ];
        let mut consts = Vec::with_capacity((max_log as usize + 1) * CONSTS_PER_LOG);
        for log in 0..=max_log {
            let n = 1u64 << log;
            let n_inv = Scalar::from(n).invert().expect("n < r");
            let z_inv = (g.pow_vartime([n]) - Scalar::ONE).invert().expect("g^n != 1 for the generator");
            consts.push(to_words(&n_inv));
            consts.push(to_words(&z_inv));
        }

        let sizes =
            [tw_count, tables[0].len(), tables[1].len(), tables[2].len(), tables[3].len(), consts.len()];
        assert_eq!(sizes, table_scalars(max_log), "the memory plan's NTT table sizes match what is carved");
        let tw = arena.carve_persistent("NTT twiddles", tw_count * FR_BYTES)?;
        let mut spans = [tw; 4];
        for (s, t) in spans.iter_mut().zip(&tables) {
            *s = arena.carve_persistent("NTT coset powers", t.len() * FR_BYTES)?;
        }
        let consts_span = arena.carve_persistent("NTT constants", consts.len() * FR_BYTES)?;
        let mut b = arena.scratch();
        let lo = b.take("twiddle seeds (lo)", tw_lo.len() * FR_BYTES)?;
        let hi = b.take("twiddle seeds (hi)", tw_hi.len() * FR_BYTES)?;
        arena.note_scratch(&b);
        // SAFETY (all four uploads): each destination span was carved above with exactly
        // the source's byte length; `upload` waits for the copy.
        unsafe {
            for (s, t) in spans.iter().zip(&tables) {
                dev.upload(s.ptr, t)?;
            }
            dev.upload(consts_span.ptr, &consts)?;
            dev.upload(lo.ptr, &tw_lo)?;
            dev.upload(hi.ptr, &tw_hi)?;
        }
        dev.k.fr_powers_from_split.launch(
            Dims::per_item(tw_count, THREADS),
            tw.dev_ptr(),
            tw_count,
            lo.dev_ptr(),
            hi.dev_ptr(),
            tw_split,
        )?;
        dev.sync()?;
        Ok(NttTables {
            max_log,
            tw,
            coset: [spans[0], spans[1]],
            coset_inv: [spans[2], spans[3]],
            coset_split,
            consts: consts_span,
        })
    }

    /// The twiddles `w_max^k`.
    pub fn twiddles(&self) -> DevPtr {
        self.tw.dev_ptr()
    }

    /// `1/n` for the domain of `2^log_n` (`log_n <= max_log`).
    pub fn n_inv(&self, log_n: u32) -> DevPtr {
        self.consts.at((log_n as usize * CONSTS_PER_LOG) * FR_BYTES)
    }

    /// `1/(g^n - 1)`, the inverse of the vanishing polynomial on the coset of `2^log_n`.
    pub fn z_inv(&self, log_n: u32) -> DevPtr {
        self.consts.at((log_n as usize * CONSTS_PER_LOG + 1) * FR_BYTES)
    }

    /// The split powers of `g` (`inverse`: of `g^-1`) as `(lo, hi, split)`.
    pub fn coset_powers(&self, inverse: bool) -> (DevPtr, DevPtr, u32) {
        let [lo, hi] = if inverse { self.coset_inv } else { self.coset };
        (lo.dev_ptr(), hi.dev_ptr(), self.coset_split)
    }
}
