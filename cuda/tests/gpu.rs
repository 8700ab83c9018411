//! The CUDA backend against the CPU engine, bit for bit: NTTs and the h pipeline against
//! engine/src/groth16/domain.rs, G1 MSMs against blst's Pippenger (the engine's msm_g1).
//! Each test prints `SKIP: <reason>` and passes on a host without kernels, driver or GPU
//! (CI), unless `ARENAPROVE_REQUIRE_GPU=1` (the GPU machine, scripts/gpu-test.sh): then it
//! fails. Any other error opening the GPU fails it always (tests/common `decide`).

mod common;

use arenaprove_cuda::{CudaError, FixedWindows, Gpu, MsmKernels, MsmPlan, NttKernels};
use arenaprove_engine::deps::blstrs::{G1Affine, G1Projective, Scalar};
use arenaprove_engine::deps::ff::Field;
use arenaprove_engine::deps::group::Group;
use arenaprove_engine::groth16::domain::Domain;
use arenaprove_engine::groth16::msm::{msm_g1, msm_g2};
use blst::{blst_p1_affine, blst_p2_affine};
use common::*;

#[test]
fn open_reports_a_typed_reason_or_a_device() {
    use arenaprove_cuda::{driver_present, kernels_built};
    match Gpu::open(0) {
        Ok(g) => println!("opened {}", g.name()),
        Err(e) => {
            match e {
                CudaError::NotBuilt => assert!(!kernels_built()),
                CudaError::NoDriver => assert!(kernels_built() && !driver_present()),
                CudaError::NoDevice { .. } => assert!(kernels_built() && driver_present()),
                ref other => panic!("unexpected error opening the GPU: {other}"),
            }
            skip_or_fail(e.is_no_gpu(), 1, &e);
        }
    }
    // An absurd ordinal is a typed error too, never a panic.
    assert!(Gpu::open(1 << 20).is_err());
}

/// The skip rule itself (no GPU needed): skip only on an absent GPU that the environment
/// does not require.
#[test]
fn gpu_tests_skip_only_when_no_gpu_is_there_and_none_is_required() {
    use common::NoGpu::{Fail, Skip};
    assert_eq!(decide(true, 1, 0), Skip, "CI: no GPU, none required");
    assert_eq!(decide(true, 1, 1), Fail, "ARENAPROVE_REQUIRE_GPU=1 and no GPU");
    assert_eq!(decide(false, 1, 0), Fail, "a GPU that fails to open, never a skip");
    assert_eq!(decide(true, 2, 1), Skip, "a two-GPU test on a host required to have one");
    assert_eq!(decide(true, 2, 2), Fail);
    for absent in [CudaError::NotBuilt, CudaError::NoDriver, CudaError::NoDevice { ordinal: 0, count: 0 }] {
        assert!(absent.is_no_gpu(), "{absent}");
    }
    for failed in [
        CudaError::NoArena,
        CudaError::Devices("GPU 0 twice".into()),
        CudaError::NotPrepared("fr_bitrev"),
        CudaError::ArenaTooSmall { what: "msm", need_bytes: 2, free_bytes: 1, reserved_bytes: 1 },
    ] {
        assert!(!failed.is_no_gpu(), "{failed}");
    }
}

#[test]
fn ntt_matches_cpu_domain_2e1_to_2e20() {
    let Some(mut g) = gpu(20) else { return };
    // Every kernel choice, at sizes of one, two and three passes (ntt_passes.rs).
    for (mode, log) in modes().flat_map(|m| (1..=12).chain([14, 16, 17, 18, 19, 20]).map(move |l| (m, l))) {
        set_ntt(&mut g, mode);
        let d = Domain::new(1 << log).unwrap();
        let coeffs = random_scalars(d.size, log as u64);
        let mut tw = vec![Scalar::ZERO; d.twiddle_len()];
        let mut cpu = coeffs.clone();
        d.fft(&mut cpu, &mut tw);
        let mut dev = coeffs.clone();
        g.ntt(&mut dev, false).unwrap();
        assert!(dev == cpu, "{mode:?}: forward NTT 2^{log} differs from the CPU");
        d.ifft(&mut cpu, &mut tw);
        g.ntt(&mut dev, true).unwrap();
        assert!(dev == cpu, "{mode:?}: inverse NTT 2^{log} differs from the CPU");
        assert!(dev == coeffs, "{mode:?}: inverse NTT 2^{log} does not invert");
    }
}

/// The NTT kernel choices: the default first, `Auto` with radix 8's twiddles read inline,
/// then every distinct kernel.
fn modes() -> impl Iterator<Item = (NttKernels, bool)> {
    [NTT_DEFAULT, (NttKernels::Auto, false)].into_iter().chain(NTT_CHOICES)
}

/// The CPU prover's h steps (engine/src/groth16/prover.rs, prove_start).
fn cpu_h(a: &mut [Scalar], b: &mut [Scalar], c: &mut [Scalar]) {
    let d = Domain::new(a.len()).unwrap();
    let mut tw = vec![Scalar::ZERO; d.twiddle_len().max(1)];
    for v in [&mut *a, &mut *b, &mut *c] {
        d.ifft(v, &mut tw);
        d.coset_fft(v, &mut tw);
    }
    for i in 0..a.len() {
        a[i] = a[i] * b[i] - c[i];
    }
    d.divide_by_z_on_coset(a);
    d.icoset_fft(a, &mut tw);
}

#[test]
fn h_pipeline_matches_cpu_2e10_to_2e20() {
    let Some(mut g) = gpu(20) else { return };
    for (mode, log) in modes().flat_map(|m| [1u32, 2, 10, 11, 13, 16, 19, 20].map(move |l| (m, l))) {
        set_ntt(&mut g, mode);
        let n = 1usize << log;
        let (a, b) = (random_scalars(n, 100 + log as u64), random_scalars(n, 200 + log as u64));
        // A satisfied system: c = a * b pointwise, so h's top coefficient is zero.
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let mut h = vec![Scalar::ZERO; n];
        g.h_pipeline(&a, &b, &c, &mut h).unwrap();
        let (mut ca, mut cb, mut cc) = (a.clone(), b.clone(), c.clone());
        cpu_h(&mut ca, &mut cb, &mut cc);
        assert!(h == ca, "{mode:?}: h pipeline 2^{log} differs from the CPU");
        assert_eq!(h[n - 1], Scalar::ZERO, "2^{log}: top coefficient of h for a satisfied system");
        let mut hb = vec![[0u8; 32]; n - 1];
        g.h_pipeline_bytes(&a, &b, &c, &mut hb).unwrap();
        assert!(hb.iter().zip(&ca).all(|(x, y)| *x == y.to_bytes_le()), "{mode:?}: h bytes 2^{log}");
    }
    set_ntt(&mut g, NTT_DEFAULT);
    // Unsatisfied (random c) too: the pipeline is the same arithmetic.
    let n = 1 << 12;
    let (a, b, c) = (random_scalars(n, 1), random_scalars(n, 2), random_scalars(n, 3));
    let mut h = vec![Scalar::ZERO; n];
    g.h_pipeline(&a, &b, &c, &mut h).unwrap();
    let (mut ca, mut cb, mut cc) = (a, b, c);
    cpu_h(&mut ca, &mut cb, &mut cc);
    assert!(h == ca);
}

#[test]
fn bad_lengths_are_typed_errors() {
    let Some(mut g) = gpu(12) else { return };
    let mut odd = vec![Scalar::ONE; 3];
    assert!(matches!(g.ntt(&mut odd, false), Err(CudaError::Length { .. })));
    let mut big = vec![Scalar::ONE; 1 << 13];
    assert!(matches!(g.ntt(&mut big, false), Err(CudaError::Limit { .. })));
    let v = vec![Scalar::ONE; 8];
    let mut h = vec![Scalar::ZERO; 4];
    assert!(matches!(g.h_pipeline(&v, &v, &v, &mut h), Err(CudaError::Length { .. })));
    let bases = bases(4, 1);
    assert!(matches!(g.msm_g1(&bases, &[[0u8; 32]; 3]), Err(CudaError::Length { .. })));
}

/// Every MSM kernel choice (the default: signed windows sorted in global memory; the
/// signed windows sorted in shared memory; the unsigned baseline; the wide windows).
const MSM_KERNELS: [MsmKernels; 4] =
    [MsmKernels::SignedGlobal, MsmKernels::Signed, MsmKernels::Unsigned, MsmKernels::Wide];

/// The point arithmetic of the accumulation: the mixed additions written out
/// ([`Gpu::set_msm_madd`], the default) or sppark's, and batch-affine in G1
/// ([`Gpu::set_msm_batch_affine`], k pieces a thread; G2 ignores it).
#[derive(Clone, Copy, Debug)]
struct Arith {
    madd: bool,
    batch_affine: Option<u32>,
}

impl Arith {
    const DEFAULT: Arith = Arith { madd: true, batch_affine: None };

    fn set(self, g: &mut Gpu) {
        g.set_msm_madd(self.madd);
        g.set_msm_batch_affine(self.batch_affine).unwrap();
    }
}

/// Every kernel choice: each of [`MSM_KERNELS`] under each arithmetic ([`Arith`]: sppark's,
/// written out, batch-affine with each compiled pieces-per-thread).
fn kernel_choices() -> impl Iterator<Item = (MsmKernels, Arith)> {
    MSM_KERNELS.into_iter().flat_map(|k| {
        [None, Some(4), Some(8), Some(16)]
            .into_iter()
            .map(move |batch_affine| (k, Arith { madd: true, batch_affine }))
            .chain([(k, Arith { madd: false, batch_affine: None })])
    })
}

/// The GPU's MSM under every kernel choice against blst's (leaves the default set).
fn check_msm(g: &mut Gpu, bases: &[blst_p1_affine], scalars: &[[u8; 32]], what: &str) {
    let cpu = msm_g1(bases, scalars);
    for (k, a) in kernel_choices() {
        g.set_msm_kernels(k);
        a.set(g);
        let dev = g.msm_g1(bases, scalars).unwrap();
        assert!(
            dev == cpu,
            "{what}: GPU MSM ({k:?}, {a:?}, plan {:?}) differs from blst",
            g.msm_plan(scalars.len())
        );
    }
    g.set_msm_kernels(MsmKernels::default());
    Arith::DEFAULT.set(g);
}

/// [`check_msm`] in G2 (batch-affine is G1's only: those choices run the written-out
/// arithmetic again).
fn check_msm_g2(g: &mut Gpu, bases: &[blst_p2_affine], scalars: &[[u8; 32]], what: &str) {
    let cpu = msm_g2(bases, scalars);
    for (k, a) in kernel_choices().filter(|(_, a)| a.batch_affine.is_none()) {
        g.set_msm_kernels(k);
        a.set(g);
        let dev = g.msm_g2(bases, scalars).unwrap();
        assert!(
            dev == cpu,
            "{what}: GPU G2 MSM ({k:?}, {a:?}, plan {:?}) differs from blst",
            g.msm_plan(scalars.len())
        );
    }
    g.set_msm_kernels(MsmKernels::default());
    Arith::DEFAULT.set(g);
}

#[test]
fn msm_g1_matches_blst_2e10_to_2e20() {
    let Some(mut g) = gpu(1) else { return };
    for log in [10u32, 12, 14, 16, 18, 20] {
        let n = 1usize << log;
        let b = bases(n, log as u64);
        let s = to_bytes(&random_scalars(n, 1000 + log as u64));
        check_msm(&mut g, &b, &s, &format!("random 2^{log} (default plan {:?})", MsmPlan::new(n)));
    }
    // Odd sizes.
    for n in [1usize, 2, 3, 1000, 70_001] {
        let b = bases(n, 7);
        let s = to_bytes(&random_scalars(n, n as u64));
        check_msm(&mut g, &b, &s, &format!("random n={n}"));
    }
}

#[test]
fn msm_g1_edge_cases_match_blst() {
    let Some(mut g) = gpu(1) else { return };
    let n = 1 << 16;
    let b = bases(n, 3);
    // Boolean-heavy: 0/1 scalars (one huge bucket, split into pieces).
    let s01: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 != 0) as u64).to_bytes_le()).collect();
    check_msm(&mut g, &b, &s01, "0/1 scalars");
    // All ones, all zero, small values, r - 1.
    check_msm(&mut g, &b, &vec![Scalar::ONE.to_bytes_le(); n], "all ones");
    check_msm(&mut g, &b, &vec![[0u8; 32]; n], "all zero");
    let small: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 17) as u64).to_bytes_le()).collect();
    check_msm(&mut g, &b, &small, "small scalars");
    let minus_one = (-Scalar::ONE).to_bytes_le();
    check_msm(&mut g, &b, &vec![minus_one; n], "r - 1");
    // Repeated bases (the doubling path inside buckets) and bases at infinity.
    let mut rep = vec![b[5]; n];
    for (i, p) in rep.iter_mut().enumerate() {
        if i % 5 == 0 {
            *p = blst_p1_affine::default();
        }
    }
    let s = to_bytes(&random_scalars(n, 9));
    check_msm(&mut g, &rep, &s, "repeated bases and infinity");
    // A few points, their negations and infinity, interleaved: inside one piece the
    // batch-affine sums meet P + P (a doubling), P + (-P) (infinity), a sum at infinity
    // taking the next point, 2P + (-P); with small scalars the pieces are long.
    let p = G1Projective::random(&mut rng(21));
    let q = G1Projective::random(&mut rng(22));
    let few: Vec<G1Affine> = [p, -p, p, q, G1Projective::identity(), p, p.double(), -p, -q, q]
        .iter()
        .map(G1Affine::from)
        .collect();
    let mix: Vec<blst_p1_affine> = (0..n).map(|i| *few[i % few.len()].as_ref()).collect();
    check_msm(&mut g, &mix, &s, "few points, negations and infinity, random scalars");
    check_msm(&mut g, &mix, &small, "few points, negations and infinity, small scalars");
    // The 0/1 fast path against the plain bucket method and blst, on a mix: ones, zeros,
    // small values, random scalars, ones at infinity bases and a one whose base repeats.
    let mut mixed: Vec<[u8; 32]> = to_bytes(&random_scalars(n, 11));
    for (i, s) in mixed.iter_mut().enumerate() {
        match i % 8 {
            0..=3 => *s = Scalar::ONE.to_bytes_le(),
            4 | 5 => *s = [0u8; 32],
            6 => *s = Scalar::from((i % 5) as u64).to_bytes_le(),
            _ => {}
        }
    }
    let mut mb = b.clone();
    mb[0] = blst_p1_affine::default();
    mb[8] = mb[16];
    check_msm(&mut g, &mb, &mixed, "mixed, ones fast path");
    g.set_msm_ones_fast_path(false);
    check_msm(&mut g, &mb, &mixed, "mixed, plain bucket method");
    check_msm(&mut g, &b, &s01, "0/1 scalars, plain bucket method");
    g.set_msm_ones_fast_path(true);
    // Odd sizes around the fast path's grid (one block, several, the block cap).
    for n in [1usize, 255, 257, 2049, 600_000] {
        let bb = bases(n, 13);
        let s: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 == 1) as u64).to_bytes_le()).collect();
        check_msm(&mut g, &bb, &s, &format!("0/1 scalars n={n}"));
    }
    // Signed digits at their edges: every window digit 2^(c-1) (carry-free) and 2^(c-1) + 1
    // (negated, carrying), for the widths the plans use.
    for c in [13u32, 16] {
        let half = Scalar::from(2).pow_vartime([(c - 1) as u64]);
        let edge: Vec<[u8; 32]> = (0..n)
            .map(|i| {
                let w = (i % 15) as u64;
                let x = half * Scalar::from(2).pow_vartime([c as u64 * w]);
                if i % 2 == 0 { x } else { x + Scalar::from(2).pow_vartime([c as u64 * w]) }.to_bytes_le()
            })
            .collect();
        check_msm(&mut g, &b, &edge, &format!("signed digit edges, c {c}"));
    }
    // x and -x: cancellation to infinity, under every kernel choice.
    let one = [Scalar::ONE.to_bytes_le(), minus_one];
    for (k, a) in kernel_choices() {
        g.set_msm_kernels(k);
        a.set(&mut g);
        assert!(bool::from(g.msm_g1(&[b[1], b[1]], &one).unwrap().is_identity()));
        assert!(bool::from(g.msm_g1(&[], &[]).unwrap().is_identity()));
        // The same base twice with one scalar (not 0 or 1, so not the ones' fast path): a
        // bucket's doubling; and with x and -x (a bucket's point and its negation).
        let five = Scalar::from(5u64);
        let two = [five.to_bytes_le(), five.to_bytes_le()];
        let opposite = [five.to_bytes_le(), (-five).to_bytes_le()];
        assert!(bool::from(g.msm_g1(&[b[1], b[1]], &opposite).unwrap().is_identity()));
        let doubled = g.msm_g1(&[b[1], b[1]], &two).unwrap();
        assert!(doubled == msm_g1(&[b[1], b[1]], &two), "{k:?}, {a:?}: a doubling in a bucket");
    }
    g.set_msm_kernels(MsmKernels::default());
    Arith::DEFAULT.set(&mut g);
    assert!(matches!(g.set_msm_batch_affine(Some(5)), Err(CudaError::Limit { .. })));
}

/// `n` scalars, zeros and ones but for `k` others spread through them (random, and every
/// seventh a small value: 2, 3, ..), seeded by `seed`.
fn mostly_01(n: usize, k: usize, seed: u64) -> Vec<[u8; 32]> {
    let random = random_scalars(k, seed);
    let mut s: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 2) as u64).to_bytes_le()).collect();
    for (j, r) in random.iter().enumerate() {
        let i = (j * n) / k.max(1);
        s[i] = if j % 7 == 0 { Scalar::from(2 + j as u64) } else { *r }.to_bytes_le();
    }
    s
}

/// The sparse sort (the 0/1 kernel lists the scalars neither 0 nor 1, the sort reads only
/// those while they are at most a quarter of the call) against blst and against the sort
/// over every scalar: no other scalar, one, a few, exactly the list's capacity, one more
/// (the list overflows: the sort reads every scalar), all; G1 and G2, and chunked.
#[test]
fn sparse_sort_matches_blst_at_and_around_its_capacity() {
    use arenaprove_cuda::BaseSet;
    let Some(mut g) = gpu(1) else { return };
    let n = 1 << 14;
    let cap = g.msm_plan(n).rest_cap;
    assert_eq!(cap, n / 4);
    let b = bases(n, 31);
    for k in [0, 1, 163, cap - 1, cap, cap + 1, n / 2, n] {
        let s = mostly_01(n, k, 32 + k as u64);
        let cpu = msm_g1(&b, &s);
        for sparse in [true, false] {
            g.set_msm_sparse_sort(sparse);
            for kernels in MSM_KERNELS {
                g.set_msm_kernels(kernels);
                let dev = g.msm_g1(&b, &s).unwrap();
                assert!(
                    dev == cpu,
                    "G1, {k} scalars not 0/1 of {n}, sparse {sparse}, {kernels:?}: differs from blst"
                );
            }
        }
    }
    g.set_msm_sparse_sort(true);
    g.set_msm_kernels(MsmKernels::default());
    // G2, under the list's capacity and over it.
    let m = 1 << 12;
    let b2 = bases_g2(m, 33);
    for k in [m / 100, m / 4 + 1] {
        let s = mostly_01(m, k, 34);
        assert!(g.msm_g2(&b2, &s).unwrap() == msm_g2(&b2, &s), "G2, {k} scalars not 0/1 of {m}");
    }
    // Resident bases in chunks (which share one set of buckets, reduced by the last):
    // each chunk lists its own scalars (1%, and a chunk over its cap); the last chunk
    // shorter; under both kernel choices and both sorts.
    let resident = g.upload_g1_bases(&b).unwrap();
    g.set_resident_chunking(1 << 12, 3000);
    let mut s = mostly_01(n, n / 100, 35);
    s[..3000].copy_from_slice(&to_bytes(&random_scalars(3000, 36)));
    let cpu = msm_g1(&b, &s);
    for kernels in MSM_KERNELS {
        g.set_msm_kernels(kernels);
        for (sparse, shared) in [(true, true), (false, true), (true, false)] {
            g.set_msm_sparse_sort(sparse);
            g.set_msm_shared_buckets(shared);
            let got = g.msm_g1_over(BaseSet::Resident(&resident), &s).unwrap();
            assert!(
                got == cpu,
                "G1 resident in chunks, {kernels:?}, sparse {sparse}, shared buckets {shared}: differs from blst"
            );
        }
    }
    g.set_msm_sparse_sort(true);
    g.set_msm_shared_buckets(true);
    g.set_msm_kernels(MsmKernels::default());
    g.set_resident_chunking(1 << 25, 1 << 24);
}

/// Wide windows (their sort in global memory, the multi-block scan) at fixed widths up to
/// the widest, 2^21 buckets per window, on a few thousand points (most buckets empty):
/// random, 0/1-heavy (the sparse sort's list), one scalar everywhere (one bucket per
/// window holds every point), signed digit edges, chunks sharing buckets, and G2; each
/// equal to blst's. A width the kernels in force cannot run is refused.
#[test]
fn wide_windows_match_blst_at_every_fixed_width() {
    let Some(mut g) = opened_or_skip(Gpu::open(0)) else { return };
    // c = 22 lays out 2^21 x 12 buckets (4.5 GiB in G1): more than the other tests' arena.
    g.reserve_arena(8 << 30).expect("reserve an 8 GiB arena");
    assert!(
        matches!(g.set_msm_window_bits(Some(20)), Err(CudaError::Limit { .. })),
        "Signed runs <= 16 bits"
    );
    g.set_msm_kernels(MsmKernels::Wide);
    assert!(matches!(g.set_msm_window_bits(Some(17)), Err(CudaError::Limit { .. })), "17 divides 255");
    let n = 3001;
    let b = bases(n, 31);
    let resident = g.upload_g1_bases(&b).unwrap();
    let random = to_bytes(&random_scalars(n, 32));
    let same = vec![random[7]; n];
    let mix = mostly_01(n, 40, 33);
    for c in [18u32, 19, 20, 22] {
        g.set_msm_window_bits(Some(c)).unwrap();
        assert_eq!(g.msm_plan(n).c, c);
        let edge = digit_edges(n, c);
        for (what, s) in
            [("random", &random), ("one scalar everywhere", &same), ("0/1 mix", &mix), ("digit edges", &edge)]
        {
            assert!(g.msm_g1(&b, s).unwrap() == msm_g1(&b, s), "wide c {c}: {what}");
            // The sort reading each scalar once for all its windows.
            g.set_msm_sort_one_read(Some(true));
            assert!(g.msm_g1(&b, s).unwrap() == msm_g1(&b, s), "wide c {c}, one read: {what}");
            g.set_msm_sort_one_read(None);
        }
        // The reduction in one level (the kernels before the two-level one): the same point.
        g.set_msm_reduce_two_levels(false);
        assert!(g.msm_g1(&b, &edge).unwrap() == msm_g1(&b, &edge), "wide c {c}, one-level reduction");
        g.set_msm_reduce_two_levels(true);
        // The folds by rounds (the kernels before the trees): the same point.
        g.set_msm_fold_tree(false);
        assert!(g.msm_g1(&b, &edge).unwrap() == msm_g1(&b, &edge), "wide c {c}, folds by rounds");
        g.set_msm_fold_tree(true);
        // Resident, in chunks of 1000 sharing one set of buckets.
        g.set_resident_chunking(1000, 1000);
        assert!(g.msm_g1_resident(&resident, &random).unwrap() == msm_g1(&b, &random), "wide c {c}: chunked");
        g.set_resident_chunking(1 << 25, 1 << 24);
    }
    // The pieces in bucket order (the baseline of the pieces' order) at the widest window.
    g.set_msm_window_bits(Some(22)).unwrap();
    g.set_msm_piece_order(false);
    assert!(g.msm_g1(&b, &random).unwrap() == msm_g1(&b, &random), "wide c 22, pieces in bucket order");
    g.set_msm_piece_order(true);
    g.set_msm_window_bits(Some(19)).unwrap();
    let b2 = bases_g2(1000, 34);
    let s2 = to_bytes(&random_scalars(1000, 35));
    assert!(g.msm_g2(&b2, &s2).unwrap() == msm_g2(&b2, &s2), "wide G2, c 19");
    g.set_msm_sort_one_read(Some(true));
    assert!(g.msm_g2(&b2, &s2).unwrap() == msm_g2(&b2, &s2), "wide G2, c 19, one read");
    g.set_msm_window_bits(None).unwrap();
    g.set_msm_kernels(MsmKernels::SignedGlobal);
    for (what, s) in [("random", &random), ("0/1 mix", &mix)] {
        assert!(g.msm_g1(&b, s).unwrap() == msm_g1(&b, s), "signed-global, one read: {what}");
    }
    g.set_msm_sort_one_read(None);
    g.set_msm_window_bits(None).unwrap();
}

/// The global sort's counts taken chunk by chunk as the host scalars go up
/// (`Gpu::set_msm_hist_overlap`, on by default; an uneven last chunk), under the wide
/// windows and the signed ones (the one read): random scalars
/// and a 1% mix (counted densely under the copy, then scattered from the sparse list),
/// each equal to blst's, overlap on and off.
#[test]
fn counts_under_the_upload_match_blst() {
    let Some(mut g) = gpu(1) else { return };
    let n = (1 << 19) + 4097;
    assert!(n >= 2 * arenaprove_cuda::hist_overlap_chunk(&MsmPlan::new(n)), "the overlap runs");
    let b = bases(n, 51);
    let random = to_bytes(&random_scalars(n, 52));
    let mix = mostly_01(n, n / 100, 53);
    for (what, s) in [("random", &random), ("1% mix", &mix)] {
        let cpu = msm_g1(&b, s);
        for kernels in [MsmKernels::Wide, MsmKernels::SignedGlobal] {
            g.set_msm_kernels(kernels);
            for overlap in [true, false] {
                g.set_msm_hist_overlap(overlap);
                assert!(g.msm_g1(&b, s).unwrap() == cpu, "{what}, {kernels:?}, overlap {overlap}");
            }
            g.set_msm_hist_overlap(true);
        }
    }
    g.set_msm_kernels(MsmKernels::default());
}

/// Host scalars in pageable memory go up through the two staging buffers: more chunks than
/// buffers (so each is refilled after its copy), an uneven last chunk, with the counts
/// under the upload (global sorts) and without (the plain signed windows, one copy); each
/// result equal to blst's and to the driver's own pageable copy (staging off) and to the
/// scalars page-locked, which are copied in place.
#[test]
fn pageable_scalars_through_the_staging_buffers_match_blst() {
    let Some(mut g) = gpu(1) else { return };
    let n = (3 << 19) + 4097; // 4 buffers' worth (16 MiB = 2^19 scalars each), uneven
    let b = bases(n, 61);
    let s = to_bytes(&random_scalars(n, 62));
    let cpu = msm_g1(&b, &s);
    assert!(!g.is_page_locked(&s), "a Vec is pageable");
    assert_eq!(g.host_staging_bytes(), 0, "no staging before the first pageable upload");
    let resident = g.upload_g1_bases(&b).unwrap();
    for kernels in [MsmKernels::Wide, MsmKernels::SignedGlobal, MsmKernels::Signed] {
        g.set_msm_kernels(kernels);
        for staging in [true, false] {
            g.set_host_staging(staging);
            assert!(g.msm_g1_resident(&resident, &s).unwrap() == cpu, "{kernels:?}, staging {staging}");
        }
    }
    g.set_host_staging(true);
    g.set_msm_kernels(MsmKernels::default());
    assert_eq!(g.host_staging_bytes(), 32 << 20, "two 16 MiB buffers, made once");
    assert!(g.msm_g1(&b, &s).unwrap() == cpu, "bases copied in too");
    // A short call (one 2 MiB chunk) after the long ones reuses buffer 0; a tiny one (32
    // KiB, under STAGING_MIN_BYTES) goes to the driver as it is.
    for k in [1 << 16, 1000] {
        let short = &s[..k];
        assert!(g.msm_g1_resident(&resident, short).unwrap() == msm_g1(&b[..k], short), "{k} scalars");
    }
    let reg = {
        let base = std::ptr::NonNull::new(s.as_ptr() as *mut u8).unwrap();
        // SAFETY (test): `s` outlives the registration, dropped below.
        unsafe { g.register_host(base, std::mem::size_of_val(&s[..])) }.unwrap()
    };
    assert!(g.is_page_locked(&s) && g.is_page_locked(&s[n - 1..]), "registered");
    assert!(g.msm_g1_resident(&resident, &s).unwrap() == cpu, "page-locked, copied in place");
    drop(reg);
    assert!(!g.is_page_locked(&s), "pageable again once unregistered");
    assert_eq!(g.host_staging_bytes(), 32 << 20, "still the same two buffers");
    g.release_host_staging().unwrap();
    assert_eq!(g.host_staging_bytes(), 0, "freed");
    assert!(g.msm_g1_resident(&resident, &s).unwrap() == cpu, "made again for the next pageable call");
    assert_eq!(g.host_staging_bytes(), 32 << 20);
}

/// The dense kernels for dense host scalars (`Gpu::set_msm_dense_auto`, on by default):
/// random scalars at 2^23 points (where the dense plan has fewer windows) run `Wide`,
/// resident and copied; a witness-like 99% 0/1 mix, 2^22 random scalars (both plans alike),
/// the switch turned off, and an arena with room for the default kernels' layout only keep
/// the default kernels. Every result equal to blst's.
#[test]
fn dense_host_scalars_run_the_dense_kernels_where_they_fit() {
    use arenaprove_cuda::{msm_auto_scratch_bytes, msm_scratch_bytes, Curve};
    let Some(mut g) = opened_or_skip(Gpu::open(0)) else { return };
    let n = 1usize << 23;
    let (default, auto) = (msm_scratch_bytes(Curve::G1, n, None), msm_auto_scratch_bytes(Curve::G1, n, None));
    assert!(auto > default + (2 << 20), "the dense layout is larger here: {auto} against {default}");
    // Resident bases, the copied call's bases, the dense layout.
    g.reserve_arena(2 * 96 * n + auto + (16 << 20)).unwrap();
    let b = bases(n, 71);
    let dense = to_bytes(&random_scalars(n, 72));
    let witness = mostly_01(n, n / 100, 73);
    let resident = g.upload_g1_bases(&b).unwrap();
    for (s, want, what) in
        [(&dense, MsmKernels::Wide, "random"), (&witness, MsmKernels::default(), "99% 0/1")]
    {
        let cpu = msm_g1(&b, s);
        let ones = want != MsmKernels::Wide;
        assert!(g.msm_g1_resident(&resident, s).unwrap() == cpu, "{what}, resident");
        assert_eq!((g.last_msm_kernels(), g.last_msm_ones_pass()), (want, ones), "{what}, resident");
        assert!(g.msm_g1(&b, s).unwrap() == cpu, "{what}, copied");
        assert_eq!((g.last_msm_kernels(), g.last_msm_ones_pass()), (want, ones), "{what}, copied");
    }
    // A dense sample turns the 0/1 fast path off, and the scalars that are zero or one
    // (1/32 each here, between the sampled ones: a multiple of 4096 apart) land in their
    // buckets.
    let mut half = dense[..n / 2].to_vec();
    for (i, s) in half.iter_mut().enumerate().filter(|(i, _)| (1..3).contains(&(i % 32))) {
        *s = Scalar::from((i % 2) as u64).to_bytes_le();
    }
    assert!(arenaprove_cuda::scalars_look_dense(&half));
    assert!(g.msm_g1_resident(&resident, &half).unwrap() == msm_g1(&b[..n / 2], &half), "2^22");
    assert_eq!(g.last_msm_kernels(), MsmKernels::default(), "2^22: the plans are alike");
    assert!(!g.last_msm_ones_pass(), "2^22: a dense sample skips the 0/1 pass");
    // Ones among the sampled scalars (1 in 16 of them) keep the pass: without it they
    // would all crowd one bucket.
    let mut sampled_ones = half.clone();
    for s in sampled_ones.iter_mut().step_by(4096 * 16) {
        *s = Scalar::ONE.to_bytes_le();
    }
    assert!(arenaprove_cuda::scalars_look_dense(&sampled_ones));
    let cpu = msm_g1(&b[..n / 2], &sampled_ones);
    assert!(g.msm_g1_resident(&resident, &sampled_ones).unwrap() == cpu, "2^22, ones sampled");
    assert!(g.last_msm_ones_pass(), "2^22: ones in the sample keep the 0/1 pass");
    assert!(g.msm_g1_resident(&resident, &witness).unwrap() == msm_g1(&b, &witness), "99% 0/1 again");
    assert!(g.last_msm_ones_pass(), "a witness's scalars keep the 0/1 pass");
    let cpu = msm_g1(&b, &dense);
    g.set_msm_dense_auto(false);
    assert!(g.msm_g1_resident(&resident, &dense).unwrap() == cpu, "switch off");
    assert_eq!(g.last_msm_kernels(), MsmKernels::default(), "switch off");
    assert!(g.last_msm_ones_pass(), "switch off: the 0/1 pass runs");
    drop(g);
    // An arena with the bases and the default layout, short of the dense one.
    let Some(mut g) = opened_or_skip(Gpu::open(0)) else { return };
    g.reserve_arena(96 * n + default + (1 << 20)).unwrap();
    let resident = g.upload_g1_bases(&b).unwrap();
    assert!(g.msm_g1_resident(&resident, &dense).unwrap() == cpu, "default layout's arena");
    assert_eq!(g.last_msm_kernels(), MsmKernels::default(), "no room for the dense layout");
}

/// Scalars whose signed `c`-bit digits sit at the edges: `2^(c-1)` (the most negative
/// digit's carry) and `2^(c-1) + 1` times a power of `2^c`, in every window.
fn digit_edges(n: usize, c: u32) -> Vec<[u8; 32]> {
    let half = Scalar::from(2).pow_vartime([(c - 1) as u64]);
    (0..n)
        .map(|i| {
            let w = (i % 11) as u64;
            let x = half * Scalar::from(2).pow_vartime([c as u64 * w]);
            if i % 2 == 0 { x } else { x + Scalar::from(2).pow_vartime([c as u64 * w]) }.to_bytes_le()
        })
        .collect()
}

#[test]
fn fixed_base_windows_match_blst_for_every_grouping() {
    let Some(mut g) = opened_or_skip(Gpu::open(0)) else { return };
    // One set of 22-bit windows lays out 2^21 buckets; 8 GiB as the wide windows' test.
    g.reserve_arena(8 << 30).expect("reserve an 8 GiB arena");
    let n = 3001;
    let mut b = bases(n, 41);
    b[5] = blst_p1_affine::default(); // infinity, (0, 0): its copies stay (0, 0)
    b[6] = b[7]; // a base twice: its copies are equal too
    let random = to_bytes(&random_scalars(n, 42));
    let same = vec![random[9]; n];
    let mix = mostly_01(n, 40, 43);
    // Shapes the kernels do not run are refused by name before anything is carved.
    let persistent = g.arena_stats().unwrap().persistent_bytes;
    for bad in [
        FixedWindows { c: 17, copies: 1 },
        FixedWindows { c: 23, copies: 1 },
        FixedWindows { c: 16, copies: 0 },
        FixedWindows { c: 16, copies: 17 },
    ] {
        let e = g.upload_g1_bases_fixed(&b, bad).unwrap_err();
        assert!(
            matches!(e, CudaError::Limit { .. }) && e.to_string().contains("fixed-base windows"),
            "{bad:?}: {e}"
        );
    }
    assert_eq!(g.arena_stats().unwrap().persistent_bytes, persistent, "a refused shape carves nothing");
    // One set (copies = windows), sets of several windows with a shorter last group, one
    // copy (a fixed width alone), and the cost model's choice.
    let chosen = FixedWindows::choose(arenaprove_cuda::Curve::G1, n, 1 << 30);
    for f in [
        FixedWindows { c: 16, copies: 16 },
        FixedWindows { c: 18, copies: 5 },
        FixedWindows { c: 20, copies: 4 },
        FixedWindows { c: 22, copies: 12 },
        FixedWindows { c: 22, copies: 1 },
        FixedWindows { c: 13, copies: 7 },
        chosen,
    ] {
        let fb = g.upload_g1_bases_fixed(&b, f).unwrap();
        assert_eq!(fb.fixed(), Some(f));
        assert_eq!(fb.len(), n);
        let edge = digit_edges(n, f.c);
        for (what, s) in
            [("random", &random), ("one scalar everywhere", &same), ("0/1 mix", &mix), ("digit edges", &edge)]
        {
            assert!(g.msm_g1_resident(&fb, s).unwrap() == msm_g1(&b, s), "{f:?}: {what}");
        }
        // Without the 0/1 pass (as for dense scalars), zeros and ones go through the sort.
        g.set_msm_ones_fast_path(false);
        assert!(g.msm_g1_resident(&fb, &mix).unwrap() == msm_g1(&b, &mix), "{f:?}: 0/1 mix, no 0/1 pass");
        assert!(!g.last_msm_ones_pass());
        g.set_msm_ones_fast_path(true);
        // Whatever kernels the GPU is set to, fixed-base windows run the wide ones.
        g.set_msm_kernels(MsmKernels::Signed);
        g.set_msm_sort_one_read(Some(true));
        assert!(g.msm_g1_resident(&fb, &random).unwrap() == msm_g1(&b, &random), "{f:?}: one read");
        g.set_msm_sort_one_read(None);
        g.set_msm_kernels(MsmKernels::default());
        // Fewer scalars than bases, and chunks of 1000 sharing one layout.
        let k = 1234;
        assert!(
            g.msm_g1_resident(&fb, &random[..k]).unwrap() == msm_g1(&b[..k], &random[..k]),
            "{f:?}: {k} of {n} points"
        );
        assert_eq!(g.last_msm_chunks(), 1, "{f:?}: one piece");
        g.set_resident_chunking(1000, 1000);
        assert!(g.msm_g1_resident(&fb, &mix).unwrap() == msm_g1(&b, &mix), "{f:?}: chunked 0/1 mix");
        assert!(g.msm_g1_resident(&fb, &random).unwrap() == msm_g1(&b, &random), "{f:?}: chunked");
        assert_eq!(g.last_msm_chunks(), n.div_ceil(1000), "{f:?}: chunks of 1000");
        g.set_resident_chunking(1 << 25, 1 << 24);
    }
    assert!(chosen.copies > 1, "a 1 GiB budget holds copies of 3,001 bases: {chosen:?}");
}

#[test]
fn msm_g2_matches_blst() {
    let Some(mut g) = gpu(1) else { return };
    for log in [10u32, 13, 16, 18] {
        let n = 1usize << log;
        let b = bases_g2(n, log as u64);
        let s = to_bytes(&random_scalars(n, 2000 + log as u64));
        check_msm_g2(&mut g, &b, &s, &format!("G2 random 2^{log}"));
    }
    let n = 1 << 14;
    let mut b = bases_g2(n, 5);
    let s01: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 != 0) as u64).to_bytes_le()).collect();
    assert!(g.msm_g2(&b, &s01).unwrap() == msm_g2(&b, &s01), "G2 0/1 scalars");
    g.set_msm_ones_fast_path(false);
    assert!(g.msm_g2(&b, &s01).unwrap() == msm_g2(&b, &s01), "G2 0/1 scalars, plain bucket method");
    g.set_msm_ones_fast_path(true);
    for i in (0..n).step_by(7) {
        b[i] = if i % 2 == 0 { blst_p2_affine::default() } else { b[3] };
    }
    let s = to_bytes(&random_scalars(n, 6));
    check_msm_g2(&mut g, &b, &s, "G2 repeated bases and infinity");
    let resident = g.upload_g2_bases(&b).unwrap();
    assert!(g.msm_g2_resident(&resident, &s[..5000]).unwrap() == msm_g2(&b[..5000], &s[..5000]));
    assert!(matches!(g.msm_g2(&b[..2], &s[..3]), Err(CudaError::Length { .. })));
}

#[test]
fn resident_bases_and_a_flat_arena() {
    let Some(mut g) = gpu(16) else { return };
    let n = 1 << 16;
    let b = bases(n, 11);
    let resident = g.upload_g1_bases(&b).unwrap();
    let s = to_bytes(&random_scalars(n, 12));
    let cpu = msm_g1(&b, &s);
    let (a, bb) = (random_scalars(n, 13), random_scalars(n, 14));
    let c: Vec<Scalar> = a.iter().zip(&bb).map(|(x, y)| x * y).collect();
    let mut h = vec![Scalar::ZERO; n];
    // Warm-up: the first launches may size the driver's own per-kernel memory.
    g.msm_g1_resident(&resident, &s).unwrap();
    g.h_pipeline(&a, &bb, &c, &mut h).unwrap();
    let first = g.arena_stats().unwrap();
    let free_before = g.mem_info().unwrap().0;
    for round in 0..5 {
        assert!(g.msm_g1_resident(&resident, &s).unwrap() == cpu, "round {round}");
        // A prefix of the resident bases.
        assert!(g.msm_g1_resident(&resident, &s[..1000]).unwrap() == msm_g1(&b[..1000], &s[..1000]));
        g.h_pipeline(&a, &bb, &c, &mut h).unwrap();
        let st = g.arena_stats().unwrap();
        assert_eq!(st.device_allocs, 1);
        assert_eq!(st.persistent_bytes, first.persistent_bytes, "nothing persistent is added per call");
        assert_eq!(g.mem_info().unwrap().0, free_before, "device memory in use is flat (round {round})");
    }
    // Too many scalars for the resident set; a handle from another GPU's arena.
    let more = vec![[0u8; 32]; n + 1];
    assert!(matches!(g.msm_g1_resident(&resident, &more), Err(CudaError::Length { .. })));
    let mut g2 = gpu(1).unwrap();
    assert!(matches!(g2.msm_g1_resident(&resident, &s), Err(CudaError::ForeignHandle(_))));
    assert!(matches!(g.reserve_arena(1 << 20), Err(CudaError::ArenaReserved { .. })));
}

#[test]
fn arena_too_small_is_a_typed_error() {
    let Some(mut g) = opened_or_skip(Gpu::open(0)) else { return };
    assert!(matches!(g.prepare_ntt(10), Err(CudaError::NoArena)));
    g.reserve_arena(1 << 20).unwrap();
    assert!(matches!(g.prepare_ntt(20), Err(CudaError::ArenaTooSmall { .. })));
    g.prepare_ntt(8).unwrap();
    let b = bases(1 << 14, 1);
    let s = vec![[1u8; 32]; 1 << 14];
    assert!(matches!(g.msm_g1(&b, &s), Err(CudaError::ArenaTooSmall { .. })));
}

#[test]
fn pinned_registration_and_region_hook() {
    let Some(mut g) = gpu(1) else { return };
    use arenaprove_arena::{Ledger, Region, RegionConfig};
    let hook = g.region_hook();
    let ledger = Ledger::new(1 << 30);
    {
        let region =
            Region::new("pinned-test", 64 << 20, &RegionConfig::default(), &ledger, Some(hook.clone()))
                .unwrap();
        assert_eq!(hook.registrations(), 1);
        assert_eq!(hook.registered_bytes(), region.len_bytes());
        // SAFETY (test): the region is mapped for this whole block.
        let bytes = unsafe { std::slice::from_raw_parts(region.base().as_ptr(), region.len_bytes()) };
        let gbps = g.h2d_gb_per_s(bytes, 3).unwrap();
        println!("H2D from a registered region: {gbps:.1} GB/s");
    }
    assert_eq!(hook.registered_bytes(), 0, "unregistered when the region goes");
    assert_eq!(hook.registrations(), 1);
}

/// A row of 1,100 terms (escaped header) with general coefficients, and -1 terms.
#[derive(Clone)]
struct LongRow(u64);

impl arenaprove_engine::deps::bellpepper_core::Circuit<Scalar> for LongRow {
    fn synthesize<CS: arenaprove_engine::deps::bellpepper_core::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), arenaprove_engine::deps::bellpepper_core::SynthesisError> {
        let x = Scalar::from(self.0 + 3);
        let input = cs.alloc_input(|| "in", || Ok(x))?;
        let vars: Vec<_> = (0..1100u64)
            .map(|i| cs.alloc(|| "v", || Ok(x * Scalar::from(i + 1))))
            .collect::<Result<_, _>>()?;
        cs.enforce(
            || "long",
            |lc| vars.iter().enumerate().fold(lc, |lc, (i, &v)| lc + (Scalar::from(i as u64 + 2), v)),
            |lc| lc + CS::one() - input,
            |lc| lc - vars[0] + vars[1],
        );
        for w in vars.windows(2) {
            cs.enforce(
                || "pair",
                |lc| lc + w[0] - w[1],
                |lc| lc + (Scalar::from(5u64), w[1]),
                |lc| lc + input,
            );
        }
        Ok(())
    }
}

/// The device's sparse products (kernels/products.cu) equal the host's
/// `Precompiled::products_into` bit for bit: +1, -1 and general coefficients (sha's
/// packing), inputs and aux, several row blocks (sector at 4,096), an escaped row header.
#[test]
fn precompiled_products_on_the_device_match_the_host() {
    use arenaprove_arena::{Ledger, RegionConfig};
    use arenaprove_circuits::circuits::{ChainCircuit, SectorPartitionCircuit, ShaCircuit};
    use arenaprove_circuits::{record, shape_of, synthesize_precompiled, AssignmentPools, ProverWitness};
    use arenaprove_engine::deps::bellpepper_core::Circuit;

    fn check<C: Circuit<Scalar> + Clone>(g: &mut Gpu, what: &str, circuit: C) {
        let shape = shape_of(circuit.clone()).unwrap();
        let pc = record(circuit.clone(), what).unwrap();
        let ledger = Ledger::unlimited();
        let pools = AssignmentPools::for_shape(&shape, 1, &ledger, RegionConfig::heap()).unwrap();
        let host = synthesize_precompiled(circuit, &pc, &pools, &shape).unwrap();
        let m = pc.row_stream();
        let (ha, hb, hc) = host.abc().unwrap();
        let mut dev = [vec![Scalar::ZERO; m.rows], vec![Scalar::ZERO; m.rows], vec![Scalar::ZERO; m.rows]];
        let [da, db, dc] = &mut dev;
        g.products(&m, host.input_assignment(), host.aux_assignment(), [da, db, dc]).unwrap();
        for (name, d, h) in [("a", &dev[0], ha), ("b", &dev[1], hb), ("c", &dev[2], hc)] {
            if let Some(r) = (0..m.rows).find(|&r| d[r] != h[r]) {
                panic!("{what}: {name}[{r}] differs from the host's ({} rows)", m.rows);
            }
        }
        assert!(ha[..m.rows].iter().any(|v| !bool::from(v.is_zero())), "{what}: a is all zero");
        println!("{what}: {} rows, {} blocks: device products equal the host's", m.rows, m.blocks.len() - 1);
    }

    let Some(mut g) = gpu(12) else { return };
    check(&mut g, "chain", ChainCircuit::new(300, 11));
    check(&mut g, "sha (bellpepper)", ShaCircuit::new(2, 5).bellpepper());
    check(&mut g, "sector@4096", SectorPartitionCircuit::for_constraints(79, 1, 4096));
    check(&mut g, "long row", LongRow(7));
    // Lengths that do not match the recording: typed errors.
    let pc = record(ChainCircuit::new(300, 11), "chain").unwrap();
    let m = pc.row_stream();
    let mut out = [vec![Scalar::ZERO; m.rows], vec![Scalar::ZERO; m.rows], vec![Scalar::ZERO; m.rows - 1]];
    let [a, b, c] = &mut out;
    let err =
        g.products(&m, &vec![Scalar::ZERO; m.inputs], &vec![Scalar::ZERO; m.aux], [a, b, c]).unwrap_err();
    assert!(matches!(err, CudaError::Length { what: "products: c", .. }), "{err}");
}

/// Bases left in host memory and streamed up a chunk at a time (two buffers, the copy
/// stream filling one while the other's MSM runs) give blst's sum for every chunking: one
/// chunk, several, a short last chunk, fewer scalars than bases; in G1 and G2, and in the
/// witness MSM (split vector gathered on the device) against its resident form.
#[test]
fn streamed_bases_match_blst_for_every_chunking() {
    use arenaprove_circuits::Density;
    use arenaprove_cuda::BaseSet;
    let Some(mut g) = gpu(1) else { return };
    let n = 100_003;
    let b = bases(n, 21);
    let s = to_bytes(&random_scalars(n, 22));
    let cpu = msm_g1(&b, &s);
    for chunk in [1 << 12, 30_000, n - 1, n, 2 * n] {
        let got = g.msm_g1_over(BaseSet::Streamed { bases: &b, chunk }, &s).unwrap();
        assert!(got == cpu, "G1 streamed in chunks of {chunk} differs from blst");
    }
    let few = g.msm_g1_over(BaseSet::Streamed { bases: &b, chunk: 1 << 14 }, &s[..5000]).unwrap();
    assert!(few == msm_g1(&b[..5000], &s[..5000]), "fewer scalars than bases");
    let s01: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 != 0) as u64).to_bytes_le()).collect();
    let got = g.msm_g1_over(BaseSet::Streamed { bases: &b, chunk: 1 << 15 }, &s01).unwrap();
    assert!(got == msm_g1(&b, &s01), "0/1 scalars streamed");
    assert!(matches!(
        g.msm_g1_over(BaseSet::Streamed { bases: &b, chunk: 0 }, &s),
        Err(CudaError::Length { .. })
    ));
    assert!(matches!(
        g.msm_g1_over(BaseSet::Streamed { bases: &b[..10], chunk: 4 }, &s[..11]),
        Err(CudaError::Length { .. })
    ));
    let m = 20_000;
    let b2 = bases_g2(m, 23);
    let s2 = to_bytes(&random_scalars(m, 24));
    let got = g.msm_g2_over(BaseSet::Streamed { bases: &b2, chunk: 6000 }, &s2).unwrap();
    assert!(got == msm_g2(&b2, &s2), "G2 streamed differs from blst");

    // The witness MSM: head scalars, then the aux a density selects, gathered on the device.
    let aux = random_scalars(n, 25);
    let words: Vec<u64> =
        (0..n.div_ceil(64)).map(|i| 0x9E37_79B9_7F4A_7C15u64.rotate_left(i as u32)).collect();
    let density = Density::new(&words, n);
    let head = to_bytes(&random_scalars(3, 26));
    let selected = density.count_ones();
    let resident = g.upload_g1_bases(&b[..3 + selected]).unwrap();
    let want = g.msm_witness_g1(&resident, &head, &aux, Some(density)).unwrap();
    let mut split = head.clone();
    split.extend(aux.iter().enumerate().filter(|(i, _)| density.get(*i)).map(|(_, s)| s.to_bytes_le()));
    assert!(want == msm_g1(&b[..split.len()], &split), "resident witness MSM differs from blst");
    for chunk in [1 << 13, 40_000] {
        let got = g
            .msm_witness_g1_over(
                BaseSet::Streamed { bases: &b[..3 + selected], chunk },
                &head,
                &aux,
                Some(density),
            )
            .unwrap();
        assert!(got == want, "witness MSM streamed in chunks of {chunk} differs");
    }
    // Resident bases read in chunks (the path of MSMs above 2^25 points), forced small here.
    let on_device = g.upload_g1_bases(&b).unwrap();
    g.set_resident_chunking(1 << 14, 1 << 14);
    assert!(g.msm_g1_resident(&on_device, &s).unwrap() == cpu, "G1 resident in chunks differs from blst");
    let got = g.msm_witness_g1(&resident, &head, &aux, Some(density)).unwrap();
    assert!(got == want, "witness MSM over resident bases in chunks differs");
    let mut h = vec![[0u8; 32]; 0];
    h.extend(to_bytes(&random_scalars(70_000, 28)));
    assert!(
        g.msm_g1_resident(&on_device, &h).unwrap() == msm_g1(&b[..h.len()], &h),
        "chunked, fewer scalars"
    );
    g.set_resident_chunking(1 << 25, 1 << 24);
    let b2w = bases_g2(n, 27);
    let got =
        g.msm_witness_g2_over(BaseSet::Streamed { bases: &b2w, chunk: 1 << 14 }, &[], &aux, None).unwrap();
    assert!(got == msm_g2(&b2w, &to_bytes(&aux)), "G2 witness MSM (all aux) streamed differs from blst");

    // A proof's four witness MSMs over one staged aux: L (all aux, resident), A (head then
    // dense, streamed), B in G1 and G2 (the same density, streamed); each equals its MSM
    // staged alone, and the aux went up once.
    use arenaprove_cuda::{Curve, WitnessMsm};
    let b_len = 3 + selected;
    let msms = [
        WitnessMsm { curve: Curve::G1, n, chunk: None, dense: false },
        WitnessMsm { curve: Curve::G1, n: b_len, chunk: Some(1 << 13), dense: true },
        WitnessMsm { curve: Curve::G1, n: b_len, chunk: Some(40_000), dense: true },
        WitnessMsm { curve: Curve::G2, n: b_len, chunk: Some(1 << 14), dense: true },
    ];
    let mut w = g.stage_witness(&aux, &msms).unwrap();
    assert_eq!(w.aux_len(), n);
    let l = g.msm_witness_g1_staged(&mut w, BaseSet::Resident(&on_device), &[], &aux, None).unwrap();
    assert!(l == msm_g1(&b, &to_bytes(&aux)), "staged L differs from blst");
    let a = g
        .msm_witness_g1_staged(
            &mut w,
            BaseSet::Streamed { bases: &b[..b_len], chunk: 1 << 13 },
            &head,
            &aux,
            Some(density),
        )
        .unwrap();
    assert!(a == want, "staged A differs from its MSM staged alone");
    let b1 = g
        .msm_witness_g1_staged(
            &mut w,
            BaseSet::Streamed { bases: &b[..b_len], chunk: 40_000 },
            &head,
            &aux,
            Some(density),
        )
        .unwrap();
    assert!(b1 == want, "staged B_G1 differs");
    let b2_bases = bases_g2(b_len, 29);
    let b2 = g
        .msm_witness_g2_staged(
            &mut w,
            BaseSet::Streamed { bases: &b2_bases, chunk: 1 << 14 },
            &head,
            &aux,
            Some(density),
        )
        .unwrap();
    assert!(b2 == msm_g2(&b2_bases, &split), "staged B_G2 differs from blst");
    // Another aux than the staged one, a density on a witness staged without one, and any
    // use after another operation laid out the scratch: typed errors, never a wrong sum.
    let other = aux.clone();
    let err = g.msm_witness_g1_staged(&mut w, BaseSet::Resident(&on_device), &[], &other, None).unwrap_err();
    assert!(matches!(err, CudaError::Devices(ref m) if m.contains("not the one staged")), "{err}");
    let mut plain = g.stage_witness(&aux, &msms[..1]).unwrap();
    let err = g
        .msm_witness_g1_staged(&mut plain, BaseSet::Resident(&resident), &head, &aux, Some(density))
        .unwrap_err();
    assert!(matches!(err, CudaError::Devices(ref m) if m.contains("staged for unfiltered")), "{err}");
    assert!(matches!(
        g.msm_witness_g1_staged(&mut w, BaseSet::Resident(&on_device), &[], &aux, None),
        Err(CudaError::StaleScratch(_))
    ));
    // An MSM larger than the witness was staged for is refused before it could reach the aux.
    let mut small =
        g.stage_witness(&aux, &[WitnessMsm { curve: Curve::G1, n: 10, chunk: None, dense: false }]).unwrap();
    let err =
        g.msm_witness_g1_staged(&mut small, BaseSet::Resident(&on_device), &[], &aux, None).unwrap_err();
    assert!(matches!(err, CudaError::Limit { .. }), "{err}");
}

/// A witness's aux packed on the host (`AuxPack`: two bits per 0 or 1, the others whole)
/// is unpacked on the device into the bytes the slab holds: the staged witness MSMs equal
/// those over the aux sent whole, and blst's. A pack that holds another aux goes up whole;
/// an aux with too many others does not pack.
#[test]
fn a_packed_aux_stages_the_same_witness() {
    use arenaprove_circuits::Density;
    use arenaprove_cuda::{AuxPack, BaseSet, Curve, WitnessMsm};
    let Some(mut g) = gpu(1) else { return };
    // Off the 256-variable block grid; a first block of others only, then ~1 in 48
    // neither 0 nor 1, alone and in pairs.
    let n = 70_001;
    let others = random_scalars(n, 31);
    let aux: Vec<Scalar> = (0..n)
        .map(|i| match i % 97 {
            _ if i < 256 => others[i],
            0 | 1 => others[i],
            k if k % 3 == 0 => Scalar::ONE,
            _ => Scalar::ZERO,
        })
        .collect();
    let words: Vec<u64> =
        (0..n.div_ceil(64)).map(|i| 0x9E37_79B9_7F4A_7C15u64.rotate_left(i as u32)).collect();
    let density = Density::new(&words, n);
    let selected = density.count_ones();
    let b = bases(n, 32);
    let all = g.upload_g1_bases(&b).unwrap();
    let dense = g.upload_g1_bases(&b[..selected]).unwrap();
    let split: Vec<[u8; 32]> =
        aux.iter().enumerate().filter(|(i, _)| density.get(*i)).map(|(_, s)| s.to_bytes_le()).collect();
    let want = (msm_g1(&b, &to_bytes(&aux)), msm_g1(&b[..selected], &split));
    let msms = [
        WitnessMsm { curve: Curve::G1, n, chunk: None, dense: false },
        WitnessMsm { curve: Curve::G1, n: selected, chunk: None, dense: true },
    ];
    let staged = |g: &mut Gpu, aux: &[Scalar], pack: Option<&AuxPack>| {
        let mut w = g.stage_witness_packed(aux, pack, &msms).unwrap();
        let l = g.msm_witness_g1_staged(&mut w, BaseSet::Resident(&all), &[], aux, None).unwrap();
        let a = g.msm_witness_g1_staged(&mut w, BaseSet::Resident(&dense), &[], aux, Some(density)).unwrap();
        (l, a)
    };
    let mut pack = AuxPack::new(n);
    assert!(pack.pack(&aux), "1 in 48 others packs");
    assert!(pack.packed_bytes() * 10 < n * 32, "{} bytes packed", pack.packed_bytes());
    let (p0, w0) = g.aux_uploads();
    assert!(staged(&mut g, &aux, None) == want, "the aux sent whole");
    assert_eq!(g.aux_uploads(), (p0, w0 + 1));
    assert!(staged(&mut g, &aux, Some(&pack)) == want, "the aux packed (pageable)");
    assert_eq!(g.aux_uploads(), (p0 + 1, w0 + 1));
    pack.register(&g).unwrap();
    assert!(pack.is_registered());
    assert!(staged(&mut g, &aux, Some(&pack)) == want, "the aux packed (page-locked)");
    assert_eq!(g.aux_uploads(), (p0 + 2, w0 + 1));
    // The same values at another address: the pack does not hold it, it goes up whole.
    let copy = aux.clone();
    assert!(staged(&mut g, &copy, Some(&pack)) == want, "another aux than the pack's");
    assert_eq!(g.aux_uploads(), (p0 + 2, w0 + 2));
    // Random values do not pack, and the pack then holds nothing.
    assert!(!pack.pack(&others));
    assert!(staged(&mut g, &aux, Some(&pack)) == want);
    assert_eq!(g.aux_uploads(), (p0 + 2, w0 + 3));
}

/// Parameters whose sections are `g1` (h, l, a, b_g1 alike) and `g2`, with a verifying key
/// of generator multiples (a checked load's subgroup half never looks at the key).
fn params_of(g1: &[blst_p1_affine], g2: &[blst_p2_affine]) -> arenaprove_engine::groth16::Parameters {
    use arenaprove_engine::deps::blstrs::{G1Affine, G2Affine};
    use arenaprove_engine::deps::group::prime::PrimeCurveAffine;
    use arenaprove_engine::groth16::{Parameters, ParamsMemory, VerifyingKey};
    let (a, b) = (G1Affine::generator(), G2Affine::generator());
    let vk = VerifyingKey {
        alpha_g1: a,
        beta_g1: a,
        beta_g2: b,
        gamma_g2: b,
        delta_g1: a,
        delta_g2: b,
        ic: vec![a; 3],
    };
    Parameters::from_sections(vk, g1, g1, g1, g1, g2, &ParamsMemory::heap()).unwrap()
}

#[test]
fn subgroup_checks_match_blst_across_chunks_and_name_the_first_point_outside() {
    use arenaprove_cuda::SUBGROUP_CHUNK_POINTS;
    use arenaprove_engine::groth16::params::{g1_points_on_curve, g2_points_on_curve};
    use arenaprove_engine::groth16::{CpuSubgroupCheck, SubgroupCheck};
    let Some(mut g) = gpu(10) else { return };
    let outside1 = g1_points_on_curve(1, 64);
    let outside2 = g2_points_on_curve(1, 64);

    // Each point outside its subgroup is caught alone, as blst says.
    for (i, p) in outside1.iter().enumerate() {
        let want = CpuSubgroupCheck.first_outside_g1(std::slice::from_ref(p)).unwrap();
        assert_eq!(want, Some(0), "blst: sample {i} is outside G1");
        assert_eq!(g.first_outside_subgroup_g1(std::slice::from_ref(p)).unwrap(), want, "G1 sample {i}");
    }
    for (i, p) in outside2.iter().enumerate() {
        let want = CpuSubgroupCheck.first_outside_g2(std::slice::from_ref(p)).unwrap();
        assert_eq!(want, Some(0), "blst: sample {i} is outside G2");
        assert_eq!(g.first_outside_subgroup_g2(std::slice::from_ref(p)).unwrap(), want, "G2 sample {i}");
    }
    assert_eq!(g.first_outside_subgroup_g1(&[]).unwrap(), None);

    // Two and a half chunks of subgroup points pass; a planted point is found wherever it
    // is, and the first of several is the one reported.
    let n = 2 * SUBGROUP_CHUNK_POINTS + 12_345;
    let mut pts = bases(n, 71);
    assert_eq!(g.first_outside_subgroup_g1(&pts).unwrap(), None, "G1 subgroup points");
    for (k, at) in [n - 1, SUBGROUP_CHUNK_POINTS + 7, SUBGROUP_CHUNK_POINTS - 1, 5].into_iter().enumerate() {
        pts[at] = outside1[k];
        assert_eq!(g.first_outside_subgroup_g1(&pts).unwrap(), Some(at), "G1, planted at {at}");
    }
    let n2 = SUBGROUP_CHUNK_POINTS + 999;
    let mut pts2 = bases_g2(n2, 72);
    assert_eq!(g.first_outside_subgroup_g2(&pts2).unwrap(), None, "G2 subgroup points");
    for (k, at) in [n2 - 1, SUBGROUP_CHUNK_POINTS, 3].into_iter().enumerate() {
        pts2[at] = outside2[k];
        assert_eq!(g.first_outside_subgroup_g2(&pts2).unwrap(), Some(at), "G2, planted at {at}");
    }
    println!("subgroup check: {n} G1 points in {:?} of device time", g.last_device_time());

    // Through the engine's seam: the GPU's error is the CPU checker's, word for word.
    let good = bases(5000, 73);
    let good2 = bases_g2(700, 74);
    let mut check = arenaprove_cuda::GpuSubgroupCheck::on(g);
    params_of(&good, &good2).check_subgroups("p", &mut check).unwrap();
    let mut bad = good.clone();
    bad[4321] = outside1[9];
    let cpu = params_of(&bad, &good2).check_subgroups("p", &mut CpuSubgroupCheck).unwrap_err().to_string();
    let gpu = params_of(&bad, &good2).check_subgroups("p", &mut check).unwrap_err().to_string();
    assert_eq!(gpu, cpu);
    assert!(
        gpu.contains("section 'h', point 4321") && gpu.contains("not in the prime-order subgroup"),
        "{gpu}"
    );
    let mut bad2 = good2.clone();
    bad2[699] = outside2[9];
    let cpu = params_of(&good, &bad2).check_subgroups("p", &mut CpuSubgroupCheck).unwrap_err().to_string();
    let gpu = params_of(&good, &bad2).check_subgroups("p", &mut check).unwrap_err().to_string();
    assert_eq!(gpu, cpu);
    assert!(gpu.contains("section 'b_g2', point 699"), "{gpu}");
}

#[test]
fn fixed_base_products_match_blst_and_write_the_cpu_generators_file() {
    use arenaprove_cuda::{GpuFixedBase, FIXED_BASE_CHUNK_POINTS};
    use arenaprove_engine::deps::group::Curve;
    use arenaprove_engine::groth16::params::{g1, g2};
    use arenaprove_engine::groth16::{CpuFixedBase, FixedBaseProducts, FixedBaseTables, ToxicWaste};
    use rand_chacha::rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
    let tw = ToxicWaste::random(&mut rng);
    // Scalars that reach every branch of the digit walk: zero, one, -1 (every window
    // full), single digits at window edges, then random ones.
    let mut scalars = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)];
    for bit in [11u64, 12, 13, 63, 64, 128, 250, 254] {
        let p = Scalar::from(2u64).pow_vartime([bit]);
        scalars.extend([p, p - Scalar::ONE, -p]);
    }
    while scalars.len() < 300 {
        scalars.push(Scalar::random(&mut rng));
    }

    // Small windows and the generator's (12 bits for a mainnet file's counts).
    for (w1, w2) in [(3, 5), (12, 12)] {
        let tables = FixedBaseTables::with_windows(tw.g1, tw.g2, w1, w2);
        let Some(mut gpu) = opened_or_skip(GpuFixedBase::open(0, &tables)) else { return };
        let mut o1 = vec![blst_p1_affine::default(); scalars.len()];
        let mut o2 = vec![blst_p2_affine::default(); scalars.len()];
        gpu.g1(&scalars, &mut o1).unwrap();
        gpu.g2(&scalars, &mut o2).unwrap();
        for (i, s) in scalars.iter().enumerate() {
            assert_eq!(g1(&o1[i]), (tw.g1 * s).to_affine(), "G1, w = {w1}, scalar {i}");
            assert_eq!(g2(&o2[i]), (tw.g2 * s).to_affine(), "G2, w = {w2}, scalar {i}");
        }
        assert_eq!(o1[0], blst_p1_affine::default(), "zero gives (0, 0)");

        // Across chunks, against the CPU's batch-affine products from the same tables.
        let many: Vec<Scalar> =
            (0..FIXED_BASE_CHUNK_POINTS + 4321).map(|_| Scalar::random(&mut rng)).collect();
        let mut cpu = CpuFixedBase::new(&tables);
        let (mut want, mut got) =
            (vec![blst_p1_affine::default(); many.len()], vec![blst_p1_affine::default(); many.len()]);
        cpu.g1(&many, &mut want).unwrap();
        gpu.g1(&many, &mut got).unwrap();
        assert!(want == got, "G1 across chunks, w = {w1}");
        let few = &many[..FIXED_BASE_CHUNK_POINTS / 4];
        let (mut want2, mut got2) =
            (vec![blst_p2_affine::default(); few.len()], vec![blst_p2_affine::default(); few.len()]);
        cpu.g2(few, &mut want2).unwrap();
        gpu.g2(few, &mut got2).unwrap();
        assert!(want2 == got2, "G2, w = {w2}");
        println!(
            "fixed base w = {w1}/{w2}: {} G1 + {} G2 products in {:?} of device time",
            many.len() + scalars.len(),
            few.len() + scalars.len(),
            gpu.device_time()
        );
        // A length mismatch is an error, not a panic.
        assert!(gpu.g1(&scalars, &mut o1[..1]).is_err());
    }

    // The streamed generator through the GPU writes the CPU's file, byte for byte.
    use arenaprove_circuits::circuits::SectorPartitionCircuit;
    use arenaprove_engine::groth16::{
        write_parameters_from_matrices, write_parameters_from_matrices_with, FixedBaseSource,
    };
    let pc =
        arenaprove_circuits::record(SectorPartitionCircuit::for_constraints(3, 1, 20_000), "sector").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cpu = write_parameters_from_matrices(&pc, &tw, &dir.path().join("cpu.params")).unwrap();
    let source: FixedBaseSource = std::sync::Arc::new(|t: &FixedBaseTables| {
        GpuFixedBase::open(0, t)
            .map(|g| Box::new(g) as Box<dyn FixedBaseProducts>)
            .map_err(|e| arenaprove_engine::Groth16Error::Backend { backend: "cuda", source: Box::new(e) })
    });
    let gpu =
        write_parameters_from_matrices_with(&pc, &tw, &dir.path().join("gpu.params"), Some(&source)).unwrap();
    assert!(gpu.products.starts_with("CUDA device 0"), "{}", gpu.products);
    assert_eq!((gpu.bytes, gpu.points), (cpu.bytes, cpu.points));
    let (a, b) = (
        std::fs::read(dir.path().join("cpu.params")).unwrap(),
        std::fs::read(dir.path().join("gpu.params")).unwrap(),
    );
    assert!(a == b, "the GPU's parameters file differs from the CPU's");
    println!(
        "params: {} bytes, products cpu {:?}, gpu {:?}",
        gpu.bytes, cpu.products_time, gpu.products_time
    );
}
