//! The allocation-strategy benchmark: one partition-shaped working set acquired,
//! written once and released, by six strategies side by side.
//!
//! A working set is three vectors `a`, `b`, `c` of `n` 32-byte elements plus an `aux`
//! vector sized as in ANCHORS.md (aux 0.74 GiB next to 4.17 GiB for each of a/b/c), so
//! `size = 32 * (3 n + aux_n)`. One cycle: acquire the four vectors, write every element
//! exactly once (the same element function, in index order, for every strategy), read one
//! element of each so the writes stay, release.
//!
//! Strategies:
//! * `fresh_vec`: `Vec::with_capacity(n)` + fill, dropped on the caller's thread.
//! * `push_vec`: `Vec::new()` grown by `push`, dropped on the caller's thread.
//! * `async_drop`: as `fresh_vec`, but dropped on a detached thread (the reference
//!   stack's fix). Before the next strategy runs, the benchmark waits for those drops;
//!   that wait is reported as `drain_ms`, not as caller-thread release time.
//! * `bump`: one bumpalo arena, `reset()` after each cycle.
//! * `vec_pool`: an [`arena::VecPool`] keeping the four vectors between cycles.
//! * `slab_pool`: two [`arena::SlabPool`]s (`abc`: 3 slabs, `aux`: 1 slab), pre-faulted at
//!   creation, outside the timed cycles (reported as `setup_ms`); release is four
//!   handbacks.
//!
//! Figures per strategy: cycle time, time spent releasing on the caller's thread, minor
//! page faults per cycle (getrusage deltas; process-wide, so the detached drops of
//! `async_drop` count too), and the ratio of the `fresh_vec` median cycle to this one.
//! Warm-up cycles (default 1) run before the measured ones, for every strategy alike.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::arena::{
    self, ledger::page_faults, Ledger, SlabPool, SlabPoolConfig, SlabVec, VecPool, VecPoolConfig,
};

/// One element: 32 bytes, the size and alignment class of a BLS12-381 scalar.
pub type Elem = [u64; 4];
pub const ELEM_BYTES: usize = std::mem::size_of::<Elem>();
const _: () = assert!(ELEM_BYTES == 32);

/// aux / (one of a, b, c), from ANCHORS.md (per-partition working set: 4.17 GiB each for
/// a, b, c; aux 0.74 GiB).
pub const AUX_PER_ABC: f64 = 0.74 / 4.17;

/// Sizes the benchmark accepts per working set, MiB.
pub const SIZE_MIB_MIN: usize = 1;
pub const SIZE_MIB_MAX: usize = 16 << 10;
/// Limit on measured cycles per strategy.
pub const CYCLES_MAX: usize = 100_000;

const MIB: usize = 1 << 20;

/// The element written at index `i` of vector `k` in cycle `round`: cheap, distinct, and
/// the same for every strategy.
#[inline(always)]
pub fn elem(i: usize, k: u64, round: u64) -> Elem {
    let i = i as u64;
    [i, k, round, i ^ round]
}

/// How the working set is acquired and released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    FreshVec,
    PushVec,
    AsyncDrop,
    Bump,
    VecPool,
    SlabPool,
}

impl Strategy {
    /// All strategies, baseline first.
    pub const ALL: [Strategy; 6] = [
        Strategy::FreshVec,
        Strategy::PushVec,
        Strategy::AsyncDrop,
        Strategy::Bump,
        Strategy::VecPool,
        Strategy::SlabPool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::FreshVec => "fresh_vec",
            Strategy::PushVec => "push_vec",
            Strategy::AsyncDrop => "async_drop",
            Strategy::Bump => "bump",
            Strategy::VecPool => "vec_pool",
            Strategy::SlabPool => "slab_pool",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Strategy::ALL.into_iter().find(|x| x.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Strategy::ALL.iter().map(|x| x.name()).collect();
            format!("unknown strategy '{s}' (one of: {})", names.join(", "))
        })
    }
}

/// The working set's shape: element counts of a/b/c and of aux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Elements in each of a, b, c.
    pub n: usize,
    /// Elements in aux.
    pub aux_n: usize,
}

impl Shape {
    /// The shape whose four vectors add up to about `size_mib` MiB.
    pub fn for_size_mib(size_mib: usize) -> Result<Shape, String> {
        if !(SIZE_MIB_MIN..=SIZE_MIB_MAX).contains(&size_mib) {
            return Err(format!("--size-mib {size_mib} is outside {SIZE_MIB_MIN}..={SIZE_MIB_MAX}"));
        }
        let elems = (size_mib * MIB / ELEM_BYTES) as f64;
        let n = (elems / (3.0 + AUX_PER_ABC)).floor() as usize;
        let aux_n = ((n as f64) * AUX_PER_ABC).round() as usize;
        debug_assert!((3 * n + aux_n) * ELEM_BYTES <= size_mib * MIB + ELEM_BYTES);
        Ok(Shape { n, aux_n: aux_n.max(1) })
    }

    /// Element counts of the four vectors, in order a, b, c, aux.
    pub fn lens(&self) -> [usize; 4] {
        [self.n, self.n, self.n, self.aux_n]
    }

    pub fn bytes(&self) -> usize {
        (3 * self.n + self.aux_n) * ELEM_BYTES
    }
}

/// What one cycle cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct CycleCost {
    pub cycle: Duration,
    /// The part of `cycle` spent releasing, on the caller's thread.
    pub release: Duration,
    pub minflt: u64,
    pub majflt: u64,
    /// Sum of one element of each vector (keeps the writes observable).
    pub check: u64,
}

/// A strategy's state across cycles (pools, arenas, pending async drops).
pub struct Workload {
    strategy: Strategy,
    shape: Shape,
    bump: Option<arena::bumpalo::Bump>,
    vec_pool: Option<VecPool<Elem>>,
    slabs: Option<(Arc<SlabPool>, Arc<SlabPool>)>,
    pending: Vec<std::thread::JoinHandle<()>>,
    /// Time spent building the workload (pool creation and pre-faulting).
    pub setup: Duration,
    round: u64,
}

fn fill_vec(len: usize, k: u64, round: u64) -> Vec<Elem> {
    let mut v = Vec::with_capacity(len);
    v.extend((0..len).map(|i| elem(i, k, round)));
    v
}

fn check_of(v: &[Elem]) -> u64 {
    v.last().map_or(0, |e| e[0] ^ e[3])
}

impl Workload {
    /// Builds the strategy's state (not timed as a cycle; see `setup`).
    pub fn new(strategy: Strategy, shape: Shape) -> Result<Workload, String> {
        let t0 = Instant::now();
        let mut w = Workload {
            strategy,
            shape,
            bump: None,
            vec_pool: None,
            slabs: None,
            pending: Vec::new(),
            setup: Duration::ZERO,
            round: 0,
        };
        match strategy {
            Strategy::Bump => w.bump = Some(arena::bumpalo::Bump::new()),
            Strategy::VecPool => {
                // Keep the four vectors whatever their size: this pool exists for them.
                w.vec_pool = Some(VecPool::with_config(VecPoolConfig {
                    keep_max: 4,
                    capacity_bytes_max: usize::MAX,
                    shards: 1,
                }))
            }
            Strategy::SlabPool => {
                let ledger = Ledger::unlimited();
                let abc = SlabPool::new(SlabPoolConfig::new("abc", shape.n * ELEM_BYTES, 3), &ledger, None)
                    .map_err(|e| e.to_string())?;
                let aux =
                    SlabPool::new(SlabPoolConfig::new("aux", shape.aux_n * ELEM_BYTES, 1), &ledger, None)
                        .map_err(|e| e.to_string())?;
                ledger.freeze();
                w.slabs = Some((abc, aux));
            }
            Strategy::FreshVec | Strategy::PushVec | Strategy::AsyncDrop => {}
        }
        w.setup = t0.elapsed();
        Ok(w)
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// One acquire / write / release cycle.
    pub fn cycle(&mut self) -> Result<CycleCost, String> {
        self.round += 1;
        let round = self.round;
        let lens = self.shape.lens();
        let (minflt0, majflt0) = page_faults();
        let t0 = Instant::now();
        let mut check = 0u64;
        let release: Duration;
        match self.strategy {
            Strategy::FreshVec => {
                let ws: Vec<Vec<Elem>> = (0..4).map(|k| fill_vec(lens[k], k as u64, round)).collect();
                check = ws.iter().fold(check, |c, v| c.wrapping_add(check_of(v)));
                let tr = Instant::now();
                drop(ws);
                release = tr.elapsed();
            }
            Strategy::PushVec => {
                let mut ws: Vec<Vec<Elem>> = Vec::with_capacity(4);
                for (k, &len) in lens.iter().enumerate() {
                    let mut v = Vec::new();
                    for i in 0..len {
                        v.push(elem(i, k as u64, round));
                    }
                    ws.push(v);
                }
                check = ws.iter().fold(check, |c, v| c.wrapping_add(check_of(v)));
                let tr = Instant::now();
                drop(ws);
                release = tr.elapsed();
            }
            Strategy::AsyncDrop => {
                let ws: Vec<Vec<Elem>> = (0..4).map(|k| fill_vec(lens[k], k as u64, round)).collect();
                check = ws.iter().fold(check, |c, v| c.wrapping_add(check_of(v)));
                let tr = Instant::now();
                let h = std::thread::Builder::new()
                    .name("async-drop".into())
                    .spawn(move || drop(ws))
                    .map_err(|e| format!("spawning the drop thread: {e}"))?;
                release = tr.elapsed();
                self.pending.push(h);
                self.pending.retain(|h| !h.is_finished());
            }
            Strategy::Bump => {
                let bump = self.bump.as_mut().expect("bump strategy has an arena");
                {
                    let ws: Vec<&mut [Elem]> = (0..4)
                        .map(|k| bump.alloc_slice_fill_with(lens[k], |i| elem(i, k as u64, round)))
                        .collect();
                    check = ws.iter().fold(check, |c, v| c.wrapping_add(check_of(v)));
                }
                let tr = Instant::now();
                bump.reset();
                release = tr.elapsed();
            }
            Strategy::VecPool => {
                let pool = self.vec_pool.as_ref().expect("vec_pool strategy has a pool");
                let mut ws: [Vec<Elem>; 4] = std::array::from_fn(|_| pool.take());
                for (k, v) in ws.iter_mut().enumerate() {
                    v.reserve_exact(lens[k]);
                    v.extend((0..lens[k]).map(|i| elem(i, k as u64, round)));
                }
                check = ws.iter().fold(check, |c, v| c.wrapping_add(check_of(v)));
                let tr = Instant::now();
                for v in ws {
                    pool.give(v);
                }
                release = tr.elapsed();
            }
            Strategy::SlabPool => {
                let (abc, aux) = self.slabs.as_ref().expect("slab_pool strategy has pools");
                let mut ws: [Option<SlabVec<Elem>>; 4] = [None, None, None, None];
                for (k, slot) in ws.iter_mut().enumerate() {
                    let pool = if k < 3 { abc } else { aux };
                    let lease = pool.try_lease(lens[k] * ELEM_BYTES).map_err(|e| e.to_string())?;
                    let mut v = SlabVec::new(lease);
                    v.extend_with(lens[k], |i| elem(i, k as u64, round)).map_err(|e| e.to_string())?;
                    *slot = Some(v);
                }
                check = ws.iter().flatten().fold(check, |c, v| c.wrapping_add(check_of(v)));
                let tr = Instant::now();
                drop(ws);
                release = tr.elapsed();
            }
        }
        let cycle = t0.elapsed();
        let (minflt1, majflt1) = page_faults();
        Ok(CycleCost {
            cycle,
            release,
            minflt: minflt1.saturating_sub(minflt0),
            majflt: majflt1.saturating_sub(majflt0),
            check: std::hint::black_box(check),
        })
    }

    /// Waits for pending detached drops (async_drop); returns how long that took.
    pub fn drain(&mut self) -> Duration {
        let t0 = Instant::now();
        for h in self.pending.drain(..) {
            let _ = h.join();
        }
        t0.elapsed()
    }

    /// The ledger of the slab pools (slab_pool only): balanced after every cycle.
    pub fn slab_ledger(&self) -> Option<arena::LedgerSnapshot> {
        self.slabs.as_ref().map(|(abc, _)| abc.ledger().snapshot())
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.drain();
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub size_mib: usize,
    /// Measured cycles per strategy.
    pub cycles: usize,
    /// Unmeasured cycles per strategy before the measured ones.
    pub warmup: usize,
    pub strategies: Vec<Strategy>,
}

impl Default for Config {
    fn default() -> Self {
        Config { size_mib: 1024, cycles: 10, warmup: 1, strategies: Strategy::ALL.to_vec() }
    }
}

/// One strategy's figures.
#[derive(Clone, Debug)]
pub struct StrategyReport {
    pub strategy: Strategy,
    pub size_mib: usize,
    pub bytes: usize,
    pub cycles: usize,
    pub cycle_ms_median: f64,
    pub cycle_ms_min: f64,
    pub cycle_ms_max: f64,
    pub release_us_median: f64,
    pub release_us_max: f64,
    pub minflt_per_cycle: f64,
    pub majflt_per_cycle: f64,
    /// Building the strategy's state before the cycles (slab pre-faulting), ms.
    pub setup_ms: f64,
    /// Waiting for detached drops after the cycles (async_drop), ms.
    pub drain_ms: f64,
    /// fresh_vec's median cycle / this strategy's (filled when fresh_vec ran too).
    pub ratio_to_fresh_vec: Option<f64>,
}

/// Runs one strategy: setup, warm-up, measured cycles, drain; frees its memory on return.
pub fn run_strategy(strategy: Strategy, cfg: &Config) -> Result<StrategyReport, String> {
    if cfg.cycles == 0 || cfg.cycles > CYCLES_MAX {
        return Err(format!("--cycles {} is outside 1..={CYCLES_MAX}", cfg.cycles));
    }
    let shape = Shape::for_size_mib(cfg.size_mib)?;
    let mut w = Workload::new(strategy, shape)?;
    for _ in 0..cfg.warmup {
        w.cycle()?;
    }
    // Warm-up drops must not spill into the measured cycles.
    w.drain();
    let mut costs = Vec::with_capacity(cfg.cycles);
    for _ in 0..cfg.cycles {
        costs.push(w.cycle()?);
    }
    let drain = w.drain();
    if let Some(l) = w.slab_ledger() {
        if !l.balanced() || l.regions_after_freeze != 0 {
            return Err(format!("slab_pool ledger not balanced after the run: {l:?}"));
        }
    }
    let setup = w.setup;
    drop(w);
    let cycle_ms: Vec<f64> = costs.iter().map(|c| c.cycle.as_secs_f64() * 1e3).collect();
    let release_us: Vec<f64> = costs.iter().map(|c| c.release.as_secs_f64() * 1e6).collect();
    let n = costs.len() as f64;
    Ok(StrategyReport {
        strategy,
        size_mib: cfg.size_mib,
        bytes: shape.bytes(),
        cycles: costs.len(),
        cycle_ms_min: cycle_ms.iter().copied().fold(f64::INFINITY, f64::min),
        cycle_ms_max: cycle_ms.iter().copied().fold(0.0, f64::max),
        cycle_ms_median: super::median(&cycle_ms),
        release_us_max: release_us.iter().copied().fold(0.0, f64::max),
        release_us_median: super::median(&release_us),
        minflt_per_cycle: costs.iter().map(|c| c.minflt as f64).sum::<f64>() / n,
        majflt_per_cycle: costs.iter().map(|c| c.majflt as f64).sum::<f64>() / n,
        setup_ms: setup.as_secs_f64() * 1e3,
        drain_ms: drain.as_secs_f64() * 1e3,
        ratio_to_fresh_vec: None,
    })
}

/// Runs every strategy of `cfg` in turn (each one's memory freed before the next) and
/// fills in the ratio to fresh_vec. `on_done` sees each report as it completes.
pub fn run(cfg: &Config, mut on_done: impl FnMut(&StrategyReport)) -> Result<Vec<StrategyReport>, String> {
    if cfg.strategies.is_empty() {
        return Err("no strategy to run".into());
    }
    let mut reports = Vec::with_capacity(cfg.strategies.len());
    // The baseline runs first, so every later report can carry its ratio at once.
    let mut order = cfg.strategies.clone();
    order.sort_by_key(|s| *s != Strategy::FreshVec);
    order.dedup();
    let mut fresh_median = None;
    for s in order {
        let mut r = run_strategy(s, cfg)?;
        if s == Strategy::FreshVec {
            fresh_median = Some(r.cycle_ms_median);
        }
        r.ratio_to_fresh_vec = fresh_median.map(|f| f / r.cycle_ms_median);
        on_done(&r);
        reports.push(r);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_matches_the_anchor_ratio() {
        let s = Shape::for_size_mib(1024).unwrap();
        assert!(s.bytes() <= 1024 * MIB && s.bytes() > 1023 * MIB, "{s:?}");
        let ratio = s.aux_n as f64 / s.n as f64;
        assert!((ratio - AUX_PER_ABC).abs() < 1e-6);
        assert!(Shape::for_size_mib(0).is_err());
        assert!(Shape::for_size_mib(SIZE_MIB_MAX + 1).is_err());
    }

    #[test]
    fn every_strategy_writes_the_same_working_set() {
        let cfg = Config { size_mib: 2, cycles: 3, warmup: 1, ..Config::default() };
        let shape = Shape::for_size_mib(cfg.size_mib).unwrap();
        let mut checks = Vec::new();
        for s in Strategy::ALL {
            let mut w = Workload::new(s, shape).unwrap();
            let c1 = w.cycle().unwrap().check;
            let c2 = w.cycle().unwrap().check;
            checks.push((s, c1, c2));
        }
        assert!(checks.iter().all(|c| (c.1, c.2) == (checks[0].1, checks[0].2)), "{checks:?}");
        let reports = run(&cfg, |_| {}).unwrap();
        assert_eq!(reports.len(), 6);
        assert_eq!(reports[0].strategy, Strategy::FreshVec);
        assert!(reports.iter().all(|r| r.ratio_to_fresh_vec.is_some() && r.cycles == 3));
        assert!("nope".parse::<Strategy>().unwrap_err().contains("slab_pool"));
        assert!(run_strategy(Strategy::Bump, &Config { cycles: 0, ..cfg }).is_err());
    }
}
