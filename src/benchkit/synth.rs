//! Synthesis benchmark (issue 3), shared by `benches/synth.rs` and `arenaprove bench-synth`.
//!
//! The same circuit is synthesized three ways in one run:
//! * `heap`: the baseline, [`HeapAssignment`], which mirrors bellperson 0.27's private
//!   `ProvingAssignment` (Vecs grown by push, three temporary `LinearCombination`s per
//!   constraint), fed by the circuit's `bellpepper_core::Circuit` impl;
//! * `arena_bellpepper`: [`ArenaAssignment`] through the bellpepper-core trait, same
//!   circuit code (for `sha`: bellpepper 0.2's own SHA-256 gadget, in both of these);
//! * `arena_native`: the native gadgets straight into [`ArenaAssignment`].
//!
//! Reported per path: constraints, median synthesis seconds over `reps` runs (after one
//! unmeasured warm-up run per path), constraints per second, heap allocations per
//! constraint on the synthesizing thread (needs `arena::count_alloc::CountingAlloc` as the
//! global allocator: `allocs_counted` says whether it is), and the ratio of constraints/s
//! to the heap path's. Dropping the result is not timed for any path.

use std::time::Instant;

use arenaprove_arena::count_alloc::CountingAlloc;
use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{build, AnyCircuit, CircuitKind};
use arenaprove_circuits::{
    shape_of, shape_of_native, synthesize_arena, synthesize_heap, synthesize_native, AssignmentPools,
    ProverWitness, Shape,
};

/// The three synthesis paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Heap,
    ArenaBellpepper,
    ArenaNative,
}

impl Path {
    pub const ALL: [Path; 3] = [Path::Heap, Path::ArenaBellpepper, Path::ArenaNative];
    pub fn name(self) -> &'static str {
        match self {
            Path::Heap => "heap",
            Path::ArenaBellpepper => "arena_bellpepper",
            Path::ArenaNative => "arena_native",
        }
    }
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub kind: CircuitKind,
    pub target_constraints: usize,
    pub seed: u64,
    /// Measured runs per path (the median is reported).
    pub reps: usize,
}

/// One path's figures.
#[derive(Clone, Debug)]
pub struct PathReport {
    pub path: Path,
    pub circuit: CircuitKind,
    /// Rows synthesized (with the `input_i * 0 = 0` rows).
    pub constraints: usize,
    /// What builds the constraints on this path.
    pub gadgets: &'static str,
    pub secs_median: f64,
    pub secs_min: f64,
    pub constraints_per_s: f64,
    pub allocs_per_constraint: f64,
    pub allocs_counted: bool,
    pub ratio_to_heap: f64,
}

/// Whether `CountingAlloc` is the global allocator (a boxed value moves its counter).
pub fn allocs_are_counted() -> bool {
    let before = CountingAlloc::thread_snapshot();
    let b = std::hint::black_box(Box::new(7u64));
    drop(b);
    CountingAlloc::thread_snapshot().allocs > before.allocs
}

/// A circuit with its shapes and pools, ready to be synthesized by any path.
pub struct Workload {
    pub circuit: AnyCircuit,
    pub generic_shape: Shape,
    pub native_shape: Shape,
    pub pools: AssignmentPools,
}

impl Workload {
    /// The instance of `kind` nearest `target_constraints`, and pools for one assignment.
    pub fn new(kind: CircuitKind, target_constraints: usize, seed: u64) -> Result<Workload, String> {
        let circuit = build(kind, target_constraints, seed).map_err(|e| e.to_string())?;
        let generic_shape = shape_of(circuit.clone()).map_err(|e| e.to_string())?;
        let native_shape = shape_of_native(&circuit).map_err(|e| e.to_string())?;
        // One set of pools big enough for either path's shape.
        let pool_shape = Shape::new(
            generic_shape.constraints.max(native_shape.constraints),
            generic_shape.inputs.max(native_shape.inputs),
            generic_shape.aux.max(native_shape.aux),
        );
        let ledger = Ledger::unlimited();
        let pools = AssignmentPools::for_shape(&pool_shape, 1, &ledger, RegionConfig::default())
            .map_err(|e| e.to_string())?;
        Ok(Workload { circuit, generic_shape, native_shape, pools })
    }

    /// One timed synthesis: (seconds, heap allocations + reallocations on this thread,
    /// constraints). The result is dropped after the clock stops.
    pub fn run_once(&self, path: Path) -> Result<(f64, u64, usize), String> {
        let (circuit, pools) = (&self.circuit, &self.pools);
        let t0 = Instant::now();
        let (result, counted) = CountingAlloc::measure_thread(|| -> Result<(usize, Keep), String> {
            Ok(match path {
                Path::Heap => {
                    let h = synthesize_heap(circuit.clone()).map_err(|e| e.to_string())?;
                    (h.num_constraints(), Keep::Heap(h))
                }
                Path::ArenaBellpepper => {
                    let w = synthesize_arena(circuit.clone(), pools, &self.generic_shape)
                        .map_err(|e| e.to_string())?;
                    (w.num_constraints(), Keep::Arena(w))
                }
                Path::ArenaNative => {
                    let w =
                        synthesize_native(circuit, pools, &self.native_shape).map_err(|e| e.to_string())?;
                    (w.num_constraints(), Keep::Arena(w))
                }
            })
        });
        let secs = t0.elapsed().as_secs_f64();
        let (constraints, keep) = result?;
        drop(keep);
        Ok((secs, counted.allocs + counted.reallocs, constraints))
    }
}

/// Holds a result until the clock stops (boxed or not does not matter: it is dropped after).
#[allow(clippy::large_enum_variant)]
enum Keep {
    Heap(#[allow(dead_code)] arenaprove_circuits::HeapAssignment),
    Arena(#[allow(dead_code)] arenaprove_circuits::ArenaAssignment),
}

/// Runs the three paths on the instance of `cfg.kind` nearest `cfg.target_constraints`.
pub fn run(cfg: &Config) -> Result<Vec<PathReport>, String> {
    if cfg.reps == 0 {
        return Err("reps must be at least 1".into());
    }
    let w = Workload::new(cfg.kind, cfg.target_constraints, cfg.seed)?;
    let counted = allocs_are_counted();
    let mut out: Vec<PathReport> = Vec::new();
    for path in Path::ALL {
        w.run_once(path)?; // warm-up
        let mut secs = Vec::with_capacity(cfg.reps);
        let mut allocs = 0u64;
        let mut constraints = 0;
        for _ in 0..cfg.reps {
            let (s, a, n) = w.run_once(path)?;
            secs.push(s);
            allocs += a;
            constraints = n;
        }
        let secs_min = secs.iter().copied().fold(f64::INFINITY, f64::min);
        let secs_median = super::upper_median(&secs);
        let constraints_per_s = constraints as f64 / secs_median;
        let heap_rate = out.first().map(|h| h.constraints_per_s).unwrap_or(constraints_per_s);
        out.push(PathReport {
            path,
            circuit: cfg.kind,
            constraints,
            gadgets: match path {
                Path::ArenaNative => "native gadgets",
                _ => w.circuit.generic_gadgets(),
            },
            secs_median,
            secs_min,
            constraints_per_s,
            allocs_per_constraint: allocs as f64 / (cfg.reps * constraints) as f64,
            allocs_counted: counted,
            ratio_to_heap: constraints_per_s / heap_rate,
        });
    }
    assert_eq!(w.pools.outstanding(), 0, "every slab came back");
    Ok(out)
}
