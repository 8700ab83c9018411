//! Kernel figures for BENCHMARKS.md, each beside its CPU baseline measured in the same run:
//! NTT (device-only, and the h pipeline with its copies from pageable and from registered
//! memory), G1 and G2 MSMs with resident bases (checked against blst), H2D GB/s from
//! pageable and from registered memory.
//!
//!     kernel_bench [--quick] [--ntt 20,22,24] [--h 20,22,24,26,27] [--msm 20,22,24] [--g2 20,22,24]
//!                  [--chunks 25,26,27] [--sparse 24,27] [--witness 24,27] [--h2d-mib 1024]
//!                  [--msm-configs NAME,NAME,...] [--fixed 20,24] [--fixed-shapes C:COPIES,...]
//!                  [--fixed-gib 24] [--fixed-chunks 21,22,23]
//!
//! `--h`: the NTT kernels (`NttKernels`) against the kernels before them, alternating in one
//! run: one forward NTT and the h pipeline's transforms, device only. Every kernel choice's
//! NTT and h pipeline are checked bit for bit against the CPU at the `--ntt` sizes.
//!
//! `--msm`: the MSM kernels (`MsmKernels`): the signed windows (baseline, the default) and
//! the wide ones (candidate), alternating in one run on the same resident bases and
//! scalars (in registered memory); every result equal to blst's (sizes up to 2^24) and to
//! each other. Also 0/1 scalars, and at 2^24 and above a 99% 0/1 mix (1% random), both
//! kernel choices.
//!
//! `--chunks`: at MSM sizes the default chunking splits (above 2^25 points), the resident
//! MSM in chunks of each 2^k points (k at least the size: one piece) against the default
//! 2^24 chunks, alternating, under each kernel choice.
//!
//! `--sparse`: at those of the `--msm` sizes, the sparse sort (the default: the 0/1 kernel
//! lists the scalars neither 0 nor 1 and the bucket sort reads only those) against the sort
//! over every scalar (baseline), alternating, the scalars in registered memory, on mixes of
//! 0/1 scalars with 0.1%, 1% and 10% others, then each choice's stage split; results equal
//! to each other and (up to 2^24) to blst.
//!
//! `--fixed`: fixed-base windows (`Gpu::upload_g1_bases_fixed`: copies of the bases
//! shifted by `2^(c t)`, made once on the device) against the wide kernels over plain
//! resident bases (baseline: the h MSM's kernels), alternating, random scalars in registered
//! memory: the cost model's choice within `--fixed-gib` GiB of copies (default 24; the arena
//! grows by as much), then each `--fixed-shapes` shape; their stage splits; results equal to
//! each other and (up to 2^24) to blst.
//!
//! `--fixed-chunks`: in the `--fixed` runs, also plain bases and the cost model's shape with
//! the MSM in resident chunks of each 2^k points (`Gpu::set_resident_chunking`), as more
//! sides of the same alternation: chunk `j + 1`'s scalars go up while chunk `j` runs, and
//! the chunks share one set of buckets (one reduction).
//!
//! `--witness`: at those of the `--msm` sizes, a proof's witness MSMs (L, A, B_G1) with the
//! aux staged once for all against each staging its own (baseline), alternating.
//!
//! G2 sizes above 2^22 reuse the 2^22 bases four times over (inputs take long to make on
//! the CPU) and have no CPU baseline.
//!
//! Exits 0 with a printed reason when there is no GPU, and fails instead under
//! `ARENAPROVE_REQUIRE_GPU=1` (the GPU tests' rule, tests/common).

#[path = "../tests/common/mod.rs"]
mod common;

use std::cell::Cell;
use std::time::Instant;

use arenaprove_cuda::{Curve, FixedWindows, Gpu, MsmKernels, MsmPlan, NttKernels};
use arenaprove_engine::deps::blstrs::Scalar;
use arenaprove_engine::deps::ff::Field;
use arenaprove_engine::groth16::domain::Domain;
use arenaprove_engine::groth16::msm::{msm_g1, msm_g2};
use blst::blst_p2_affine;
use rayon::prelude::*;

fn list(args: &[String], flag: &str, default: &[u32]) -> Vec<u32> {
    match args.iter().position(|a| a == flag) {
        Some(i) => args[i + 1].split(',').map(|x| x.parse().expect("a list of integers")).collect(),
        None => default.to_vec(),
    }
}

/// Page-locks `v` for the returned registration's lifetime.
fn register<T>(g: &Gpu, v: &[T]) -> Result<arenaprove_cuda::HostRegistration, arenaprove_cuda::CudaError> {
    let base = std::ptr::NonNull::new(v.as_ptr() as *mut u8).expect("non-null");
    // SAFETY: every caller drops the registration before the vector it points into.
    unsafe { g.register_host(base, std::mem::size_of_val(v)) }
}

/// `msm` under each of `setups` configurations in turn (`setup(g, i)` switches to the i-th;
/// the first is the baseline), one untimed round then `reps` timed ones: each
/// configuration's median in ms, whether every call gave the same result, and the first
/// call's result.
fn alternate<P: PartialEq>(
    g: &mut Gpu,
    reps: usize,
    setups: usize,
    mut setup: impl FnMut(&mut Gpu, usize),
    mut msm: impl FnMut(&mut Gpu) -> Result<P, arenaprove_cuda::CudaError>,
) -> Result<(Vec<f64>, bool, P), arenaprove_cuda::CudaError> {
    let mut times = vec![Vec::new(); setups];
    let mut first: Option<P> = None;
    let mut agree = true;
    for rep in 0..=reps {
        for (i, t_i) in times.iter_mut().enumerate() {
            setup(g, i);
            let t = Instant::now();
            let r = msm(g)?;
            if rep > 0 {
                t_i.push(ms(t));
            }
            match &first {
                None => first = Some(r),
                Some(f) => agree &= *f == r,
            }
        }
    }
    let medians = times
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect();
    Ok((medians, agree, first.expect("ran")))
}

/// The 0/1 fast path (candidate) against the plain bucket method (baseline): `msm` run
/// alternately with the path on and off after one warm-up each, medians of 3. Returns the
/// two medians, whether every result agrees, and the fast path's result. Leaves the fast
/// path on.
fn ones_ab<P: PartialEq>(
    g: &mut Gpu,
    msm: impl FnMut(&mut Gpu) -> Result<P, arenaprove_cuda::CudaError>,
) -> Result<(f64, f64, bool, P), arenaprove_cuda::CudaError> {
    let (t, agree, fast) = alternate(g, 3, 2, |g, i| g.set_msm_ones_fast_path(i == 0), msm)?;
    g.set_msm_ones_fast_path(true);
    Ok((t[0], t[1], agree, fast))
}

/// The MSM kernel configurations a bench can alternate (`--msm-configs a,b,...` picks them
/// by name, the first the baseline; the default is the first four): the signed windows
/// with the global-memory sort one window at a time and the pieces longest first (the
/// default before the one-read sort), the same sort reading each scalar once for all its
/// windows (what the default now runs where `MsmPlan::sort_one_read_pays`), the wide
/// windows (the h MSM's), and the wide windows with the one-read sort, all with the mixed
/// additions written out (`Gpu::set_msm_madd`, the default); then the defaults, the
/// defaults and the wide windows with sppark's point arithmetic (the kernels before), and
/// the wide windows fixed at 22 bits (what the cost model picks for 2^27 points in one
/// piece; chunks of 2^24 plan for 2^24 points, 20 bits); then the wide windows and the
/// defaults with batch-affine accumulation, 4, 8 or 16 pieces a thread (G1 only); then the
/// wide windows and the defaults reducing in one level with folds by rounds (the kernels
/// before the two-level reduction), and in two levels with folds by rounds (before the
/// trees); then the wide windows and the defaults uploading the scalars in one copy before
/// the counts (`Gpu::set_msm_hist_overlap` off, the code before); then `auto`. The kernels
/// before the pieces' order and before the global sort were measured against these in
/// earlier sessions (BENCHMARKS.md).
struct MsmConfig {
    name: &'static str,
    kernels: MsmKernels,
    window: Option<u32>,
    one_read: Option<bool>,
    madd: bool,
    /// Batch-affine accumulation in G1, k pieces a thread (`Gpu::set_msm_batch_affine`).
    batch_affine: Option<u32>,
    /// The two-level reduction (`Gpu::set_msm_reduce_two_levels`, the default).
    two_levels: bool,
    /// The folds by trees (`Gpu::set_msm_fold_tree`, the default).
    fold_tree: bool,
    /// The counts under the scalars' upload (`Gpu::set_msm_hist_overlap`, the default).
    hist_overlap: bool,
    /// The dense kernels for host scalars whose sample looks dense (`Gpu::set_msm_dense_auto`,
    /// the default): on only in `auto`, so every other configuration runs the kernels it
    /// names. `auto` also skips the 0/1 pass where the sample is dense and holds no one
    /// (0.64 ms at 2^24), which the others run.
    dense_auto: bool,
}

const fn config(
    name: &'static str,
    kernels: MsmKernels,
    window: Option<u32>,
    one_read: Option<bool>,
    madd: bool,
) -> MsmConfig {
    MsmConfig {
        name,
        kernels,
        window,
        one_read,
        madd,
        batch_affine: None,
        two_levels: true,
        fold_tree: true,
        hist_overlap: true,
        dense_auto: false,
    }
}

/// [`config`] with one upload, then the counts (the code before the overlap).
const fn serial(name: &'static str, kernels: MsmKernels, one_read: Option<bool>) -> MsmConfig {
    MsmConfig { hist_overlap: false, ..config(name, kernels, None, one_read, true) }
}

/// [`config`] with the reduction in one level (`two_levels` false) or two, its folds by
/// rounds (the kernels before).
const fn rounds(
    name: &'static str,
    kernels: MsmKernels,
    one_read: Option<bool>,
    two_levels: bool,
) -> MsmConfig {
    MsmConfig { two_levels, fold_tree: false, ..config(name, kernels, None, one_read, true) }
}

/// [`config`] with batch-affine accumulation, `k` pieces a thread.
const fn ba(name: &'static str, kernels: MsmKernels, one_read: Option<bool>, k: u32) -> MsmConfig {
    MsmConfig { batch_affine: Some(k), ..config(name, kernels, None, one_read, true) }
}

const MSM_CATALOG: [MsmConfig; 21] = [
    config("signed-global", MsmKernels::SignedGlobal, None, Some(false), true),
    config("signed-global+one-read", MsmKernels::SignedGlobal, None, Some(true), true),
    config("wide", MsmKernels::Wide, None, Some(false), true),
    config("wide+one-read", MsmKernels::Wide, None, Some(true), true),
    config("default", MsmKernels::SignedGlobal, None, None, true),
    config("default-sppark", MsmKernels::SignedGlobal, None, None, false),
    config("wide-sppark", MsmKernels::Wide, None, Some(false), false),
    config("wide-c22", MsmKernels::Wide, Some(22), Some(false), true),
    ba("wide-ba4", MsmKernels::Wide, Some(false), 4),
    ba("wide-ba8", MsmKernels::Wide, Some(false), 8),
    ba("wide-ba16", MsmKernels::Wide, Some(false), 16),
    ba("default-ba4", MsmKernels::SignedGlobal, None, 4),
    ba("default-ba8", MsmKernels::SignedGlobal, None, 8),
    ba("default-ba16", MsmKernels::SignedGlobal, None, 16),
    rounds("wide-1level", MsmKernels::Wide, Some(false), false),
    rounds("wide-2level-rounds", MsmKernels::Wide, Some(false), true),
    rounds("default-1level", MsmKernels::SignedGlobal, None, false),
    rounds("default-2level-rounds", MsmKernels::SignedGlobal, None, true),
    serial("wide-serial", MsmKernels::Wide, Some(false)),
    serial("default-serial", MsmKernels::SignedGlobal, None),
    // What an embedder gets: the default kernels, or the dense ones for dense host scalars.
    MsmConfig { dense_auto: true, ..config("auto", MsmKernels::SignedGlobal, None, None, true) },
];

/// The configurations `--msm-configs` picked (set once in `main`).
static CONFIGS: std::sync::OnceLock<Vec<&'static MsmConfig>> = std::sync::OnceLock::new();

fn configs() -> &'static [&'static MsmConfig] {
    CONFIGS.get().expect("main picks the configurations first")
}

/// The configurations named in `--msm-configs` (default: the first four of the catalog).
fn pick_configs(args: &[String]) -> Vec<&'static MsmConfig> {
    match args.iter().position(|a| a == "--msm-configs") {
        Some(i) => args[i + 1]
            .split(',')
            .map(|name| {
                MSM_CATALOG.iter().find(|c| c.name == name).unwrap_or_else(|| {
                    let names: Vec<_> = MSM_CATALOG.iter().map(|c| c.name).collect();
                    panic!("--msm-configs: no configuration {name:?} (there are {})", names.join(", "))
                })
            })
            .collect(),
        None => MSM_CATALOG[..4].iter().collect(),
    }
}

/// Sets configuration `i` of [`configs`].
fn set_config(g: &mut Gpu, i: usize) {
    let c = configs()[i];
    g.set_msm_kernels(c.kernels);
    g.set_msm_sort_one_read(c.one_read);
    g.set_msm_madd(c.madd);
    g.set_msm_batch_affine(c.batch_affine).expect("every configuration's k has an instance");
    g.set_msm_window_bits(c.window).expect("every configuration's width is one its kernels run");
    g.set_msm_reduce_two_levels(c.two_levels);
    g.set_msm_fold_tree(c.fold_tree);
    g.set_msm_hist_overlap(c.hist_overlap);
    g.set_msm_dense_auto(c.dense_auto);
}

/// Back to the defaults.
fn default_config(g: &mut Gpu) {
    g.set_msm_kernels(MsmKernels::default());
    g.set_msm_piece_order(true);
    g.set_msm_sort_one_read(None);
    g.set_msm_madd(true);
    g.set_msm_batch_affine(None).expect("off is always allowed");
    g.set_msm_window_bits(None).expect("no fixed width is always allowed");
    g.set_msm_reduce_two_levels(true);
    g.set_msm_fold_tree(true);
    g.set_msm_hist_overlap(true);
    g.set_msm_dense_auto(true);
}

/// Each MSM kernel configuration run alternately (baseline first) after one warm-up each,
/// `reps` timed calls each: the medians, and whether every call of every configuration gave
/// one point. Then one more call of each with the stage split on, printed.
fn kernels_ab<P: PartialEq>(
    g: &mut Gpu,
    reps: usize,
    mut msm: impl FnMut(&mut Gpu) -> Result<P, arenaprove_cuda::CudaError>,
) -> Result<(Vec<f64>, bool, P), arenaprove_cuda::CudaError> {
    let (t, agree, first) = alternate(g, reps, configs().len(), set_config, &mut msm)?;
    // One more call of each configuration with the stage split on (not among the timed calls).
    g.set_msm_stage_timing(true);
    for (i, MsmConfig { name, .. }) in configs().iter().copied().enumerate() {
        set_config(g, i);
        msm(g)?;
        print_stages(name, g.last_msm_stages());
    }
    g.set_msm_stage_timing(false);
    default_config(g);
    Ok((t, agree, first))
}

/// "signed-global x ms (baseline) | wide y ms (ratio) | ...".
fn configs_line(t: Vec<f64>) -> String {
    let parts: Vec<String> = configs()
        .iter()
        .copied()
        .zip(&t)
        .enumerate()
        .map(|(i, (MsmConfig { name, .. }, ms))| {
            if i == 0 {
                format!("{name} {ms:.1} ms (baseline)")
            } else {
                format!("{name} {ms:.1} ms ({:.2}x)", t[0] / ms)
            }
        })
        .collect();
    parts.join(" | ")
}

/// `msm` with `switch` off (baseline) and on, alternating, `reps` timed calls each after a
/// warm-up (medians, whether every call agreed, the first result); then one more call of
/// each with the stage split on, printed under `names`. Leaves the switch on (the default).
fn switch_ab<P: PartialEq>(
    g: &mut Gpu,
    reps: usize,
    names: [&str; 2],
    switch: fn(&mut Gpu, bool),
    mut msm: impl FnMut(&mut Gpu) -> Result<P, arenaprove_cuda::CudaError>,
) -> Result<(Vec<f64>, bool, P), arenaprove_cuda::CudaError> {
    let r = alternate(g, reps, 2, |g, i| switch(g, i == 1), &mut msm)?;
    g.set_msm_stage_timing(true);
    for (i, name) in names.iter().enumerate() {
        switch(g, i == 1);
        msm(g)?;
        print_stages(name, g.last_msm_stages());
    }
    g.set_msm_stage_timing(false);
    Ok(r)
}

/// The sparse sort against the sort over every scalar (`--sparse`), on 0/1 mixes with one
/// other scalar in `every` (random, as PoRep's A, B and L: ~99% zeros and ones).
fn sparse_ab(
    g: &mut Gpu,
    log: u32,
    b: &[blst::blst_p1_affine],
    resident: &arenaprove_cuda::G1Bases,
) -> Result<(), arenaprove_cuda::CudaError> {
    let n = 1usize << log;
    for every in [1000usize, 100, 10] {
        let mix = mix01(n, every, 900 + every as u64);
        let reg = register(g, &mix)?;
        let (t, agree, r) = switch_ab(g, 5, ["every scalar", "sparse"], Gpu::set_msm_sparse_sort, |g| {
            g.msm_g1_resident(resident, &mix)
        })?;
        let equal = if log <= 24 {
            format!("equal to blst {}", r == msm_g1(b, &mix))
        } else {
            "no CPU baseline".into()
        };
        println!(
            "msm_g1 2^{log} 0/1 with 1 in {every} random: sparse sort {:.1} ms ({:.2}x) | every scalar sorted {:.1} ms (baseline) | registered scalars, medians of 5 alternating | agree {agree} | {equal}",
            t[1],
            t[0] / t[1],
            t[0]
        );
        drop(reg);
    }
    Ok(())
}

/// At a chunked size: the chunks' shared buckets (one reduction) against each chunk
/// reducing its own windows (baseline), alternating, scalars registered, on the random
/// scalars `s` and on a 0/1 mix with 1% random; then each choice's stage split.
fn shared_ab(
    g: &mut Gpu,
    log: u32,
    s: &[[u8; 32]],
    resident: &arenaprove_cuda::G1Bases,
) -> Result<(), arenaprove_cuda::CudaError> {
    let n = 1usize << log;
    let mix = mix01(n, 100, 1200);
    for (what, sc) in [("random", s), ("0/1 with 1 in 100 random", &mix[..])] {
        let reg = register(g, sc)?;
        let (t, agree, _) =
            switch_ab(g, 3, ["each chunk reduced", "shared buckets"], Gpu::set_msm_shared_buckets, |g| {
                g.msm_g1_resident(resident, sc)
            })?;
        println!(
            "msm_g1 2^{log} {what}, chunked: shared buckets {:.1} ms ({:.2}x) | each chunk reduced {:.1} ms (baseline) | registered scalars, medians of 3 alternating | agree {agree}",
            t[1],
            t[0] / t[1],
            t[0]
        );
        drop(reg);
    }
    Ok(())
}

/// A proof's witness MSMs (`--witness`), three in G1 over the resident bases' prefixes as
/// L (all aux), A (3 of 4 aux picked) and B_G1 (1 in 2), the aux staged once for the three
/// as a proof does, under each MSM kernel configuration ([`configs`]), alternating, the
/// aux in registered memory (as the engine's slabs) and 99% 0/1. G2's B is left out (its
/// 2^27 bases alone would be 24 GiB). The fourteenth session's run of this bench compared
/// the aux staged once against once per MSM (BENCHMARKS.md).
fn witness_ab(
    g: &mut Gpu,
    log: u32,
    resident: &arenaprove_cuda::G1Bases,
) -> Result<(), arenaprove_cuda::CudaError> {
    use arenaprove_circuits::Density;
    use arenaprove_cuda::{BaseSet, Curve, WitnessMsm};
    let n = 1usize << log;
    let rnd = common::random_scalars(n / 100 + 1, 1300);
    let aux: Vec<Scalar> = (0..n)
        .into_par_iter()
        .map(|i| if i % 100 == 7 { rnd[i / 100] } else { Scalar::from((i % 2) as u64) })
        .collect();
    let words = |pattern: u64| vec![pattern; n.div_ceil(64)];
    let (a_words, b_words) =
        (words(0x7777_7777_7777_7777 | 0x8888_0000_8888_0000), words(0x5555_5555_5555_5555));
    let (a_density, b_density) = (Density::new(&a_words, n), Density::new(&b_words, n));
    let head = common::to_bytes(&common::random_scalars(328, 1301));
    let reg = register(g, &aux)?;
    let msms = [(None, 0), (Some(a_density), head.len()), (Some(b_density), head.len())];
    let set: Vec<_> = msms
        .iter()
        .map(|(d, h)| WitnessMsm {
            curve: Curve::G1,
            n: h + d.map_or(n, |d: Density<'_>| d.count_ones()),
            chunk: None,
            dense: d.is_some(),
        })
        .collect();
    // As a proof runs them: the aux staged once for the three.
    let run = |g: &mut Gpu| -> Result<Vec<_>, arenaprove_cuda::CudaError> {
        let mut w = g.stage_witness(&aux, &set)?;
        let mut out = Vec::new();
        for (d, h) in &msms {
            let head = &head[..*h];
            out.push(g.msm_witness_g1_staged(&mut w, BaseSet::Resident(resident), head, &aux, *d)?);
        }
        Ok(out)
    };
    let (t, agree, _) = alternate(g, 3, configs().len(), set_config, run)?;
    default_config(g);
    println!(
        "witness MSMs 2^{log} (L, A, B_G1; aux 99% 0/1, registered, staged once): {} | medians of 3 alternating | agree {agree}",
        configs_line(t)
    );
    drop(reg);
    Ok(())
}

/// One configuration's MSM stage split, as every MSM bench prints it.
fn print_stages(name: &str, st: arenaprove_cuda::MsmStageTimes) {
    println!(
        "    {name} stages (device ms): scalars {:.2} | ones {:.2} | sort {:.2} | accumulate {:.2} | reduce {:.2} | total {:.2}",
        st.scalars_ms,
        st.ones_ms,
        st.sort_ms,
        st.accumulate_ms,
        st.reduce_ms,
        st.total_ms()
    );
}

/// One side of the `--fixed` alternation: plain bases (`handle` `None`) or fixed-base
/// shape `handle`, in resident chunks of `2^chunk`.
#[derive(Clone, Copy)]
struct FixedSide {
    handle: Option<usize>,
    chunk: Option<u32>,
}

impl FixedSide {
    const PLAIN: FixedSide = FixedSide { handle: None, chunk: None };

    fn name(self, wide_c: u32, shapes: &[FixedWindows]) -> String {
        let mut name = match self.handle {
            None if self.chunk.is_none() => format!("wide (c {wide_c}, plain bases)"),
            None => "wide plain bases".to_string(),
            Some(h) => format!("fixed c {} x {}", shapes[h].c, shapes[h].copies),
        };
        if let Some(k) = self.chunk {
            name += &format!(" in chunks of 2^{k}");
        }
        name
    }
}

/// `--fixed`: fixed-base windows against the wide kernels over plain bases (baseline),
/// alternating, 5 timed calls each after a warm-up, then each one's stage split.
fn fixed_ab(
    g: &mut Gpu,
    log: u32,
    shapes: &[FixedWindows],
    budget_bytes: usize,
    chunk_logs: &[u32],
) -> Result<(), arenaprove_cuda::CudaError> {
    let n = 1usize << log;
    let b = common::bases(n, 5);
    let s = common::to_bytes(&common::random_scalars(n, 177 + log as u64));
    let plain = g.upload_g1_bases(&b)?;
    let chosen = FixedWindows::choose(Curve::G1, n, budget_bytes);
    let shapes: Vec<FixedWindows> =
        std::iter::once(chosen).chain(shapes.iter().copied().filter(|&f| f != chosen)).collect();
    let mut handles = Vec::new();
    for (i, &f) in shapes.iter().enumerate() {
        let t = Instant::now();
        let h = g.upload_g1_bases_fixed(&b, f)?;
        println!(
            "fixed 2^{log} c {} x {} copies{}: {} windows in {} sets, {:.2} GiB of copies, made in {:.0} ms (upload included; shifts {:.0} ms on the device)",
            f.c,
            f.copies,
            if i == 0 { " (the cost model's choice)" } else { "" },
            f.windows(),
            f.sets(),
            f.bytes(Curve::G1, n) as f64 / (1u64 << 30) as f64,
            ms(t),
            g.last_device_time().as_secs_f64() * 1e3,
        );
        handles.push(h);
    }
    let reg = register(g, &s)?;
    // Sides: plain bases, each shape, then per chunk size plain bases and the chosen shape
    // (handle 0) in resident chunks of that size.
    let chunks: Vec<u32> = chunk_logs.iter().copied().filter(|&k| k < log).collect();
    let mut sides: Vec<FixedSide> = std::iter::once(FixedSide::PLAIN)
        .chain((0..handles.len()).map(|h| FixedSide { handle: Some(h), ..FixedSide::PLAIN }))
        .collect();
    for &k in &chunks {
        sides.push(FixedSide { chunk: Some(k), ..FixedSide::PLAIN });
        sides.push(FixedSide { handle: Some(0), chunk: Some(k) });
    }
    let default_chunking = g.resident_chunking();
    let which = Cell::new(0usize);
    let setup = |g: &mut Gpu, i: usize| {
        which.set(i);
        let side = sides[i];
        g.set_msm_kernels(MsmKernels::Wide);
        g.set_msm_sort_one_read(Some(false));
        match side.chunk {
            Some(k) => g.set_resident_chunking(1 << k, 1 << k),
            None => g.set_resident_chunking(default_chunking.0, default_chunking.1),
        }
    };
    let msm = |g: &mut Gpu| match sides[which.get()].handle {
        None => g.msm_g1_resident(&plain, &s),
        Some(h) => g.msm_g1_resident(&handles[h], &s),
    };
    let (t, agree, r) = alternate(g, 5, sides.len(), setup, msm)?;
    g.set_msm_stage_timing(true);
    let wide_c = g.msm_plan_with(n, MsmKernels::Wide).c;
    let names: Vec<String> = sides.iter().map(|side| side.name(wide_c, &shapes)).collect();
    for (i, name) in names.iter().enumerate() {
        setup(g, i);
        let t = Instant::now();
        msm(g)?;
        let wall = ms(t);
        print_stages(
            &format!("{name} ({} chunks, wall {wall:.2} ms)", g.last_msm_chunks()),
            g.last_msm_stages(),
        );
    }
    g.set_msm_stage_timing(false);
    g.set_resident_chunking(default_chunking.0, default_chunking.1);
    default_config(g);
    drop(reg);
    let equal =
        if log <= 24 { format!("equal to blst {}", r == msm_g1(&b, &s)) } else { "no CPU baseline".into() };
    let line: Vec<String> = names
        .iter()
        .zip(&t)
        .enumerate()
        .map(|(i, (name, ms))| {
            if i == 0 {
                format!("{name} {ms:.1} ms (baseline)")
            } else {
                format!("{name} {ms:.1} ms ({:.2}x)", t[0] / ms)
            }
        })
        .collect();
    println!(
        "msm_g1 2^{log} fixed-base windows: {} | random scalars in registered memory, medians of 5 alternating | agree {agree} | {equal}",
        line.join(" | ")
    );
    Ok(())
}

/// `n` scalars alternating 0 and 1 but for one random scalar in `every` (PoRep's A, B and
/// L are ~99% zeros and ones), the random ones seeded by `seed`.
fn mix01(n: usize, every: usize, seed: u64) -> Vec<[u8; 32]> {
    let rnd = common::to_bytes(&common::random_scalars(n / every + 1, seed));
    (0..n)
        .map(|i| if i % every == 7 { rnd[i / every] } else { Scalar::from((i % 2) as u64).to_bytes_le() })
        .collect()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    CONFIGS.set(pick_configs(&args)).ok().expect("configurations picked once");
    let ntt_logs = list(&args, "--ntt", if quick { &[16, 18] } else { &[20, 22, 24] });
    let h_logs = list(&args, "--h", if quick { &[16, 18] } else { &[20, 22, 24, 26, 27] });
    let msm_logs = list(&args, "--msm", if quick { &[16] } else { &[20, 22, 24] });
    let g2_logs = list(&args, "--g2", if quick { &[14] } else { &[20, 22, 24] });
    let chunk_logs = list(&args, "--chunks", &[]);
    let sparse_logs = list(&args, "--sparse", &[]);
    let witness_logs = list(&args, "--witness", &[]);
    let h2d_mib = list(&args, "--h2d-mib", &[if quick { 64 } else { 1024 }])[0] as usize;
    let fixed_logs = list(&args, "--fixed", &[]);
    let fixed_gib = list(&args, "--fixed-gib", &[24])[0] as usize;
    let fixed_chunks = list(&args, "--fixed-chunks", &[]);
    let fixed_shapes: Vec<FixedWindows> = match args.iter().position(|a| a == "--fixed-shapes") {
        Some(i) => args[i + 1]
            .split(',')
            .map(|x| {
                let (c, copies) = x.split_once(':').expect("--fixed-shapes: C:COPIES,...");
                FixedWindows { c: c.parse().expect("window bits"), copies: copies.parse().expect("copies") }
            })
            .collect(),
        None => Vec::new(),
    };
    // The GPU tests' skip rule: no GPU here skips, unless ARENAPROVE_REQUIRE_GPU says
    // there must be one; any other error fails.
    let Some(mut g) = common::opened_or_skip(Gpu::open(0)) else { return Ok(()) };
    let max_log = ntt_logs.iter().chain(&h_logs).copied().max().unwrap_or(1);
    let (free, total) = g.mem_info()?;
    println!(
        "device {}: {} MiB free of {} MiB; CPU threads {}",
        g.name(),
        free >> 20,
        total >> 20,
        rayon::current_num_threads()
    );
    let t = Instant::now();
    // 2^27 G1 bases are 12 GiB resident, beside the smaller sizes' and the G2 bases.
    let arena_gib = if msm_logs.iter().any(|&l| l > 24) { 56 } else { 24 };
    // Fixed-base windows' copies come on top (persistent: every size's stay).
    let arena_gib = arena_gib + if fixed_logs.is_empty() { 0 } else { fixed_gib + 4 };
    g.reserve_arena(arena_gib << 30)?;
    println!("arena reserve {arena_gib} GiB: {:.1} ms", ms(t));
    let t = Instant::now();
    g.prepare_ntt(max_log)?;
    println!("prepare_ntt(2^{max_log}): {:.1} ms", ms(t));

    // The NTT kernels, alternating: three rounds of every choice, medians of the rounds'
    // medians; the first choice (radix 8 as it was before its twiddles were read ahead) is
    // the baseline; then radix 8 with them (`Auto`'s from 2^20, `Gpu::set_ntt_twiddles_ahead`),
    // and radix 4 (`Auto`'s below). The kernels before `Passes` were measured against it in
    // the fourth session (BENCHMARKS.md).
    const MODES: [(NttKernels, bool); 3] =
        [(NttKernels::Passes8, false), (NttKernels::Passes8, true), (NttKernels::Passes, true)];
    for &log in &h_logs {
        let (mut ntt, mut h) = (vec![vec![]; MODES.len()], vec![vec![]; MODES.len()]);
        for round in 0..4 {
            for (i, &mode) in MODES.iter().enumerate() {
                common::set_ntt(&mut g, mode);
                let (n_ms, h_ms) = (g.bench_ntt_ms(log, 5)?, g.bench_h_ms(log, 3)?);
                if round > 0 {
                    ntt[i].push(n_ms);
                    h[i].push(h_ms);
                }
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let ntt: Vec<f64> = ntt.iter_mut().map(med).collect();
        let h: Vec<f64> = h.iter_mut().map(med).collect();
        for (what, v) in [("ntt", &ntt), ("h transforms", &h)] {
            let name = |(m, ahead): (NttKernels, bool)| format!("{m:?}{}", if ahead { "+ahead" } else { "" });
            let rest: Vec<String> = MODES
                .iter()
                .zip(v.iter())
                .skip(1)
                .map(|(&m, t)| format!("{} {t:.3} ms ({:.2}x)", name(m), v[0] / t))
                .collect();
            println!(
                "{what} 2^{log} (device only, medians): {} {:.3} ms (baseline) | {}",
                name(MODES[0]),
                v[0],
                rest.join(" | ")
            );
        }
    }
    common::set_ntt(&mut g, common::NTT_DEFAULT);

    for &log in &ntt_logs {
        let n = 1usize << log;
        let gpu_ms = g.bench_ntt_ms(log, 7)?;
        let d = Domain::new(n)?;
        let mut a = common::random_scalars(n, log as u64);
        let mut tw = vec![Scalar::ZERO; d.twiddle_len()];
        let t = Instant::now();
        d.fft(&mut a, &mut tw);
        let cpu_ms = ms(t);
        let mut exact = true;
        for mode in common::NTT_CHOICES {
            common::set_ntt(&mut g, mode);
            let mut dev = common::random_scalars(n, log as u64);
            g.ntt(&mut dev, false)?;
            exact &= dev == a;
        }
        common::set_ntt(&mut g, common::NTT_DEFAULT);
        println!("ntt 2^{log}: gpu {gpu_ms:.3} ms (device only, median of 7) | cpu {cpu_ms:.1} ms | cpu/gpu {:.1}x | bit-exact {exact}", cpu_ms / gpu_ms);

        let (a, b) = (common::random_scalars(n, 1), common::random_scalars(n, 2));
        let c: Vec<Scalar> = a.par_iter().zip(&b).map(|(x, y)| x * y).collect();
        let mut h = vec![Scalar::ZERO; n];
        g.h_pipeline(&a, &b, &c, &mut h)?; // warm
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            g.h_pipeline(&a, &b, &c, &mut h)?;
            best = best.min(ms(t));
        }
        let regs = [register(&g, &a)?, register(&g, &b)?, register(&g, &c)?, register(&g, &h)?];
        let mut pinned = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            g.h_pipeline(&a, &b, &c, &mut h)?;
            pinned = pinned.min(ms(t));
        }
        drop(regs);
        println!("h_pipeline 2^{log} from registered memory: gpu {pinned:.2} ms (best of 3; copies on their own stream)");
        let (mut ca, mut cb, mut cc) = (a.clone(), b.clone(), c.clone());
        let t = Instant::now();
        for v in [&mut ca, &mut cb, &mut cc] {
            d.ifft(v, &mut tw);
            d.coset_fft(v, &mut tw);
        }
        ca.par_iter_mut().zip(&cb).zip(&cc).for_each(|((a, b), c)| *a = *a * b - c);
        d.divide_by_z_on_coset(&mut ca);
        d.icoset_fft(&mut ca, &mut tw);
        let cpu_ms = ms(t);
        let mut exact = h == ca;
        for mode in common::NTT_CHOICES {
            common::set_ntt(&mut g, mode);
            g.h_pipeline(&a, &b, &c, &mut h)?;
            exact &= h == ca;
        }
        common::set_ntt(&mut g, common::NTT_DEFAULT);
        println!(
            "h_pipeline 2^{log}: gpu {best:.2} ms (3 H2D from pageable + 7 NTTs + D2H, best of 3) | cpu {cpu_ms:.1} ms | cpu/gpu {:.1}x | bit-exact (every kernel choice) {exact}",
            cpu_ms / best,
        );
    }

    for &log in &msm_logs {
        let n = 1usize << log;
        let t = Instant::now();
        let b = common::bases(n, 5);
        let s = common::to_bytes(&common::random_scalars(n, 77 + log as u64));
        println!(
            "msm 2^{log}: inputs made in {:.0} ms; plan {:?} (baseline plan: {} windows of {} bits)",
            ms(t),
            g.msm_plan(n),
            MsmPlan::with(n, MsmKernels::Unsigned, 15).windows,
            MsmPlan::with(n, MsmKernels::Unsigned, 15).c,
        );
        let t = Instant::now();
        let resident = g.upload_g1_bases(&b)?;
        println!("msm 2^{log}: bases upload {:.1} ms ({} MiB)", ms(t), (n * 96) >> 20);
        let reg = register(&g, &s)?;
        let (t3, agree, r) = kernels_ab(&mut g, 5, |g| g.msm_g1_resident(&resident, &s))?;
        let gpu_ms = t3.iter().copied().fold(f64::INFINITY, f64::min);
        let cpu = if log <= 24 {
            let t = Instant::now();
            let cpu = msm_g1(&b, &s);
            Some((ms(t), r == cpu))
        } else {
            None
        };
        println!(
            "msm_g1 2^{log}: {} | resident bases, scalars in registered memory, medians of 5 alternating | kernels agree {agree} | {}",
            configs_line(t3),
            match cpu {
                Some((cpu_ms, eq)) => format!("cpu blst {cpu_ms:.0} ms, cpu/gpu {:.1}x, equal {eq}", cpu_ms / gpu_ms),
                None => "no CPU baseline at this size".into(),
            }
        );
        let mut pinned = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            g.msm_g1_resident(&resident, &s)?;
            pinned.push(ms(t));
        }
        pinned.sort_by(f64::total_cmp);
        println!(
            "msm_g1 2^{log}: gpu {:.1} ms with the scalars in registered memory (median of 3)",
            pinned[1]
        );
        let default_chunking = g.resident_chunking();
        if n > default_chunking.0 && !chunk_logs.is_empty() {
            // Resident chunk sizes for this MSM (the default chunks first), the scalars in
            // registered memory, alternating, medians of 3 after one warm-up each.
            let default_log = default_chunking.1.trailing_zeros();
            let sizes: Vec<u32> = std::iter::once(default_log)
                .chain(chunk_logs.iter().copied().filter(|&c| c != default_log))
                .collect();
            let chunking = |g: &mut Gpu, i: usize| {
                let c: u32 = sizes[i];
                g.set_resident_chunking(if c >= log { n } else { 1 << c }, 1 << c);
            };
            for (ci, MsmConfig { name: kname, .. }) in configs().iter().copied().enumerate() {
                set_config(&mut g, ci);
                let (times, agree, out) =
                    alternate(&mut g, 3, sizes.len(), chunking, |g| g.msm_g1_resident(&resident, &s))?;
                let agree = agree && out == r;
                g.set_resident_chunking(default_chunking.0, default_chunking.1);
                let line: Vec<String> =
                    sizes.iter().zip(&times).map(|(c, t)| format!("chunks of 2^{c}: {t:.1} ms")).collect();
                println!("msm_g1 2^{log} resident chunk sizes, {kname} kernels (registered scalars, medians of 3 alternating, baseline first): {} | equal {agree}", line.join(" | "));
            }
            default_config(&mut g);
        }
        drop(reg);
        // The same scalars pageable (an embedder's own Vec): through the staging buffers
        // (the default) against the driver's own pageable copy, each configuration,
        // alternating, medians of 5 after one warm-up each.
        let k = configs().len();
        let staging = |g: &mut Gpu, i: usize| {
            set_config(g, i / 2);
            g.set_host_staging(i % 2 == 0);
        };
        let (tp, agree_p, rp) = alternate(&mut g, 5, 2 * k, staging, |g| g.msm_g1_resident(&resident, &s))?;
        // One more call of each with the stage split on, and its wall time beside it.
        g.set_msm_stage_timing(true);
        for i in 0..2 * k {
            staging(&mut g, i);
            let t = Instant::now();
            g.msm_g1_resident(&resident, &s)?;
            let wall = ms(t);
            let name = format!("{} {}", configs()[i / 2].name, ["staged", "driver"][i % 2]);
            print_stages(&format!("{name} (wall {wall:.2} ms)"), g.last_msm_stages());
        }
        g.set_msm_stage_timing(false);
        g.set_host_staging(true);
        default_config(&mut g);
        let line: Vec<String> = configs()
            .iter()
            .zip(tp.chunks(2))
            .map(|(c, t)| {
                format!("{}: staged {:.1} ms, driver {:.1} ms ({:.2}x)", c.name, t[0], t[1], t[1] / t[0])
            })
            .collect();
        println!(
            "msm_g1 2^{log} pageable scalars: {} | medians of 5 alternating | equal {}",
            line.join(" | "),
            agree_p && rp == r
        );
        // Boolean-heavy scalars (0/1), as SHA-256 / PoRep witnesses: the 0/1 fast path
        // against the plain bucket method (its baseline), alternating, median of 3 each.
        let s01: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 == 1) as u64).to_bytes_le()).collect();
        let (fast, plain, equal, r01) = ones_ab(&mut g, |g| g.msm_g1_resident(&resident, &s01))?;
        let t = Instant::now();
        let c01 = if log <= 24 { Some(msm_g1(&b, &s01)) } else { None };
        println!(
            "msm_g1 2^{log} 0/1 scalars: gpu {fast:.1} ms with the 0/1 fast path | {plain:.1} ms plain ({:.2}x) | cpu blst {:.0} ms | equal {}",
            plain / fast,
            ms(t),
            equal && c01.map_or(true, |c| r01 == c)
        );
        if witness_logs.contains(&log) {
            witness_ab(&mut g, log, &resident)?;
        }
        if sparse_logs.contains(&log) {
            sparse_ab(&mut g, log, &b, &resident)?;
            if n > g.resident_chunking().0 {
                shared_ab(&mut g, log, &s, &resident)?;
            }
        }
        if log >= 24 {
            // PoRep's A, B and L: 99% zeros and ones, 1% random.
            let mix = mix01(n, 100, 500 + log as u64);
            let (t3, agree, rm) = kernels_ab(&mut g, 3, |g| g.msm_g1_resident(&resident, &mix))?;
            let equal = if log <= 24 {
                format!("equal to blst {}", rm == msm_g1(&b, &mix))
            } else {
                "no CPU baseline".into()
            };
            println!(
                "msm_g1 2^{log} 99% 0/1 (1% random): {} | medians of 3 alternating | kernels agree {agree} | {equal}",
                configs_line(t3)
            );
        }
    }

    for &log in &fixed_logs {
        fixed_ab(&mut g, log, &fixed_shapes, fixed_gib << 30, &fixed_chunks)?;
    }

    let mut g2_bases: Vec<blst_p2_affine> = Vec::new();
    for &log in &g2_logs {
        let n = 1usize << log;
        let t = Instant::now();
        let made = n.min(1 << 22);
        if g2_bases.len() != made {
            g2_bases = common::bases_g2(made, 6);
        }
        let b: Vec<blst_p2_affine> = g2_bases.iter().copied().cycle().take(n).collect();
        let s = common::to_bytes(&common::random_scalars(n, 99 + log as u64));
        println!("msm_g2 2^{log}: inputs made in {:.0} ms ({} distinct bases)", ms(t), made);
        let resident = g.upload_g2_bases(&b)?;
        let reg = register(&g, &s)?;
        let (t3, agree, r) = kernels_ab(&mut g, 3, |g| g.msm_g2_resident(&resident, &s))?;
        drop(reg);
        let gpu_ms = t3.iter().copied().fold(f64::INFINITY, f64::min);
        let head = format!(
            "msm_g2 2^{log}: {} | resident bases, scalars in registered memory, medians of 3 alternating | kernels agree {agree}",
            configs_line(t3)
        );
        if log <= 22 {
            let t = Instant::now();
            let cpu = msm_g2(&b, &s);
            let cpu_ms = ms(t);
            println!(
                "{head} | cpu blst {cpu_ms:.0} ms | cpu/gpu {:.1}x | equal {}",
                cpu_ms / gpu_ms,
                r == cpu
            );
        } else {
            println!("{head} | no CPU baseline at this size");
        }
        let s01: Vec<[u8; 32]> = (0..n).map(|i| Scalar::from((i % 3 == 1) as u64).to_bytes_le()).collect();
        let (t01, agree01, _) = kernels_ab(&mut g, 3, |g| g.msm_g2_resident(&resident, &s01))?;
        println!(
            "msm_g2 2^{log} 0/1 scalars: {} | medians of 3 alternating | kernels agree {agree01}",
            configs_line(t01)
        );
        let (fast, plain, equal, _) = ones_ab(&mut g, |g| g.msm_g2_resident(&resident, &s01))?;
        println!(
            "msm_g2 2^{log} 0/1 scalars: gpu {fast:.1} ms with the 0/1 fast path | {plain:.1} ms plain ({:.2}x) | equal {equal}",
            plain / fast
        );
    }
    drop(g2_bases);

    let src = vec![0x5au8; h2d_mib << 20];
    g.set_host_staging(false);
    let pageable = g.h2d_gb_per_s(&src, 5)?;
    g.set_host_staging(true);
    let staged = g.h2d_gb_per_s(&src, 5)?;
    let t = Instant::now();
    // SAFETY: `src` lives (and is not moved or freed) until `reg` is dropped below.
    let reg = unsafe {
        g.register_host(std::ptr::NonNull::new(src.as_ptr() as *mut u8).expect("non-null"), src.len())
    }?;
    let reg_ms = ms(t);
    let pinned = g.h2d_gb_per_s(&src, 5)?;
    drop(reg);
    println!(
        "h2d {h2d_mib} MiB: pageable {pageable:.1} GB/s | pageable staged {staged:.1} GB/s ({:.1}x) | registered {pinned:.1} GB/s ({:.1}x) | cuMemHostRegister {reg_ms:.1} ms | host staging {} MiB",
        staged / pageable,
        pinned / pageable,
        g.host_staging_bytes() >> 20
    );
    let st = g.arena_stats().expect("reserved");
    println!(
        "arena: reserved {} MiB, persistent {} MiB, scratch high {} MiB, device allocs {}",
        st.reserved_bytes >> 20,
        st.persistent_bytes >> 20,
        st.scratch_high_bytes >> 20,
        st.device_allocs
    );
    Ok(())
}
