//! How an NTT is cut into passes over device memory (`fr_ntt_pass` in ntt.cu): each pass
//! loads blocks of `2^block_log` scalars into shared memory, runs `k` radix-2 stages there
//! and writes them back, so an NTT of `2^log_n` reads and writes HBM `passes` times instead
//! of once per stage (or per two stages).
//!
//! Pass `[s0, s0 + k)` sees element `i = hi * 2^(s0 + k) + m * 2^s0 + lo` as entry `m` of a
//! `2^k`-point sub-transform; one block holds every `m` for `2^(block_log - k)` consecutive
//! `lo` (consecutive threads read consecutive scalars). The first pass (`s0 = 0`) works on
//! contiguous blocks. Decimation in time (DIT: bit-reversed input, natural output) runs
//! the passes and their stages in increasing order; decimation in frequency (DIF: natural
//! input, bit-reversed output) runs the same passes and stages in decreasing order. The
//! h pipeline pairs them so that no transform needs a bit-reversal pass of its own.
//!
//! The test module holds a CPU model of the kernel (same indices, same twiddles) checked
//! against the CPU engine's transforms, so the index arithmetic is tested on any machine.

/// Scalars one block holds in shared memory (2^10 x 32 bytes = 32 KiB): the kernel's
/// `NTT_SHARED_LOG`.
pub(crate) const BLOCK_LOG: u32 = 10;
/// Most stages in one pass after the first: at least 2^(10 - 8) = 4 consecutive scalars
/// (128 bytes) per row, so loads and stores stay whole cache lines.
pub(crate) const PASS_STAGES_MAX: u32 = 8;

/// One pass: stages `[s0, s0 + k)` in blocks of `2^block_log` scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    pub s0: u32,
    pub k: u32,
    pub block_log: u32,
}

/// The passes of a transform of `2^log_n` (`log_n >= 1`), in DIT order, with blocks of at
/// most `2^block_log` scalars and at most `stages_max` stages per pass after the first
/// (`stages_max < block_log`). The stages after the first pass are spread evenly.
pub(crate) fn passes(log_n: u32, block_log: u32, stages_max: u32) -> Vec<Pass> {
    debug_assert!(stages_max >= 1 && stages_max < block_log);
    let blk = block_log.min(log_n);
    let mut out = vec![Pass { s0: 0, k: blk, block_log: blk }];
    let rest = log_n - blk;
    if rest == 0 {
        return out;
    }
    let count = rest.div_ceil(stages_max);
    let mut s0 = blk;
    for p in 0..count {
        // Even split: the first `rest % count` passes take one stage more.
        let k = rest / count + u32::from(p < rest % count);
        out.push(Pass { s0, k, block_log: blk });
        s0 += k;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arenaprove_engine::groth16::domain::Domain;
    use blstrs::Scalar;
    use ff::{Field, PrimeField};

    /// `w_max^k` for `k < 2^(tw_log - 1)`, as `NttTables` holds them.
    fn table(tw_log: u32) -> Vec<Scalar> {
        let w = crate::ntt_tables::omega(tw_log);
        let mut p = Scalar::ONE;
        (0..1usize << (tw_log - 1))
            .map(|_| {
                let v = p;
                p *= w;
                v
            })
            .collect()
    }

    /// ntt.cu's `twiddle`: `w^k`, or `w^-k = -w^(N/2 - k)`.
    fn twiddle(tw: &[Scalar], tw_log: u32, k: usize, inv: bool) -> Scalar {
        if !inv {
            return tw[k];
        }
        if k == 0 {
            return Scalar::ONE;
        }
        -tw[(1usize << (tw_log - 1)) - k]
    }

    /// ntt.cu's `pass_twiddle`: stage `s0 + t`, sub-transform index `x`, offset `lo`.
    fn pass_twiddle(tw: &[Scalar], tw_log: u32, s0: u32, t: u32, x: usize, lo: usize, inv: bool) -> Scalar {
        twiddle(tw, tw_log, ((x << s0) + lo) << (tw_log - s0 - t - 1), inv)
    }

    /// ntt.cu's `pass_group<R, DIF>`: the 2^r entries of group `g` for stages `t .. t + r`.
    #[allow(clippy::too_many_arguments)]
    fn group(
        sm: &mut [Scalar],
        tw: &[Scalar],
        tw_log: u32,
        s0: u32,
        t: u32,
        r: u32,
        lo_bits: u32,
        lo0: usize,
        g: usize,
        inv: bool,
        dif: bool,
    ) {
        let (lo, q) = (g & ((1 << lo_bits) - 1), g >> lo_bits);
        let x = q & ((1 << t) - 1);
        let m0 = ((q >> t) << (t + r)) | x;
        let (e0, h) = ((m0 << lo_bits) | lo, 1usize << (t + lo_bits));
        let l = lo0 + lo;
        let mut v: Vec<Scalar> = (0..1usize << r).map(|j| sm[e0 + j * h]).collect();
        for step in 0..r {
            let u = if dif { r - 1 - step } else { step };
            let half = 1usize << u;
            let w: Vec<Scalar> =
                (0..half).map(|k| pass_twiddle(tw, tw_log, s0, t + u, x + (k << t), l, inv)).collect();
            for j in (0..1usize << r).filter(|j| j & half == 0) {
                let a = v[j];
                if dif {
                    let b = v[j + half];
                    v[j] = a + b;
                    v[j + half] = (a - b) * w[j & (half - 1)];
                } else {
                    let b = v[j + half] * w[j & (half - 1)];
                    v[j] = a + b;
                    v[j + half] = a - b;
                }
            }
        }
        for (j, x) in v.into_iter().enumerate() {
            sm[e0 + j * h] = x;
        }
    }

    /// The kernels `fr_ntt_pass` (radix 2, `radix_log` 1), `fr_ntt_pass4` (radix 4, 2) and
    /// `fr_ntt_pass8` (radix 8, 3), block by block, each step as its groups of 2^r entries
    /// (the butterflies every kernel runs in that step; within a step they are independent,
    /// so their order does not matter).
    fn pass_model(
        a: &mut [Scalar],
        tw: &[Scalar],
        tw_log: u32,
        p: Pass,
        inv: bool,
        dif: bool,
        radix_log: u32,
    ) {
        let Pass { s0, k, block_log } = p;
        let lo_bits = block_log - k;
        assert!(lo_bits <= s0, "{p:?}");
        let lo_cnt = 1usize << lo_bits;
        let groups = 1usize << (s0 - lo_bits);
        let blocks = a.len() >> block_log;
        // ntt.rs launches radix 2^r with r at most block_log.
        let rmax = radix_log.min(block_log);
        let mut sm = vec![Scalar::ZERO; 1 << block_log];
        for block in 0..blocks {
            let (hi, lo0) = (block / groups, (block % groups) << lo_bits);
            let base = (hi << (s0 + k)) + lo0;
            for (e, v) in sm.iter_mut().enumerate() {
                *v = a[base + ((e >> lo_bits) << s0) + (e & (lo_cnt - 1))];
            }
            // Steps of rmax stages (fr_ntt_pass8's, and fr_ntt_pass4's and fr_ntt_pass's
            // written out), the short step last going up and first going down.
            let steps = k.div_ceil(rmax);
            for i in 0..steps {
                let t = rmax * if dif { steps - 1 - i } else { i };
                let r = rmax.min(k - t);
                for g in 0..1usize << (block_log - r) {
                    group(&mut sm, tw, tw_log, s0, t, r, lo_bits, lo0, g, inv, dif);
                }
            }
            for (e, v) in sm.iter().enumerate() {
                a[base + ((e >> lo_bits) << s0) + (e & (lo_cnt - 1))] = *v;
            }
        }
    }

    fn bitrev(a: &mut [Scalar]) {
        let log = a.len().trailing_zeros();
        for i in 0..a.len() {
            let j = if log == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - log) };
            if i < j {
                a.swap(i, j);
            }
        }
    }

    fn transform(
        a: &mut [Scalar],
        tw: &[Scalar],
        tw_log: u32,
        inv: bool,
        dif: bool,
        plan: &[Pass],
        radix_log: u32,
    ) {
        if dif {
            for p in plan.iter().rev() {
                pass_model(a, tw, tw_log, *p, inv, true, radix_log);
            }
        } else {
            for p in plan {
                pass_model(a, tw, tw_log, *p, inv, false, radix_log);
            }
        }
    }

    fn values(n: usize, seed: u64) -> Vec<Scalar> {
        (0..n as u64).map(|i| Scalar::from(seed + 7 * i * i + 3)).collect()
    }

    #[test]
    fn the_block_size_is_the_kernels() {
        let source = include_str!("../kernels/ntt.cu");
        assert!(source.contains(&format!("#define NTT_SHARED_LOG {BLOCK_LOG}\n")), "ntt.cu's NTT_SHARED_LOG");
    }

    #[test]
    fn passes_cover_every_stage_once_within_the_limits() {
        for log_n in 1..=28 {
            let p = passes(log_n, BLOCK_LOG, PASS_STAGES_MAX);
            let mut next = 0;
            for q in &p {
                assert_eq!(q.s0, next, "2^{log_n}: {p:?}");
                assert!(q.k >= 1 && q.block_log - q.k <= q.s0, "2^{log_n}: {p:?}");
                assert!(q.s0 == 0 || q.k <= PASS_STAGES_MAX, "2^{log_n}: {p:?}");
                next += q.k;
            }
            assert_eq!(next, log_n);
        }
        assert_eq!(passes(24, BLOCK_LOG, PASS_STAGES_MAX).len(), 3);
        assert_eq!(passes(27, BLOCK_LOG, PASS_STAGES_MAX).len(), 4);
    }

    /// The model of the kernel equals the CPU engine's transforms: DIT after a
    /// bit-reversal is `fft`; DIF then a bit-reversal is `ifft` (before its `1/n`); and
    /// the h pipeline's pairing (DIF inverse, coset scaling at bit-reversed indices, DIT
    /// forward) is `ifft` then `coset_fft` with no bit-reversal at all. Small blocks make
    /// many passes at small sizes; the kernel's own limits run too.
    #[test]
    fn the_pass_model_equals_the_cpu_transforms() {
        let tw_log = 14;
        let tw = table(tw_log);
        for (block_log, stages_max) in [(3, 2), (4, 3), (5, 4), (BLOCK_LOG, PASS_STAGES_MAX)] {
            for log_n in 1..=13u32 {
                let n = 1usize << log_n;
                let plan = passes(log_n, block_log, stages_max);
                let domain = Domain::new(n).unwrap();
                let mut scratch = vec![Scalar::ZERO; domain.twiddle_len()];
                for radix_log in [1, 2, 3] {
                    let what = format!("2^{log_n}, blocks 2^{block_log}, radix 2^{radix_log}: {plan:?}");
                    let x = values(n, log_n as u64);
                    let mut want = x.clone();
                    domain.fft(&mut want, &mut scratch);
                    let mut got = x.clone();
                    bitrev(&mut got);
                    transform(&mut got, &tw, tw_log, false, false, &plan, radix_log);
                    assert!(got == want, "fft, {what}");

                    let mut want = x.clone();
                    domain.ifft(&mut want, &mut scratch);
                    let mut got = x.clone();
                    transform(&mut got, &tw, tw_log, true, true, &plan, radix_log);
                    bitrev(&mut got);
                    let n_inv = Scalar::from(n as u64).invert().unwrap();
                    got.iter_mut().for_each(|v| *v *= n_inv);
                    assert!(got == want, "ifft, {what}");

                    // The h pipeline's pairing: no bit-reversal.
                    let mut want = x.clone();
                    domain.ifft(&mut want, &mut scratch);
                    domain.coset_fft(&mut want, &mut scratch);
                    let mut got = x.clone();
                    transform(&mut got, &tw, tw_log, true, true, &plan, radix_log);
                    let g = Scalar::MULTIPLICATIVE_GENERATOR;
                    for (i, v) in got.iter_mut().enumerate() {
                        let j = if log_n == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - log_n) };
                        *v *= n_inv * g.pow_vartime([j as u64]);
                    }
                    transform(&mut got, &tw, tw_log, false, false, &plan, radix_log);
                    assert!(got == want, "ifft + coset_fft, {what}");
                }
            }
        }
    }
}
