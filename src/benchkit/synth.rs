//! Synthesis benchmark, shared by `benches/synth.rs` and `arenaprove bench-synth`.
//!
//! The same circuit is synthesized by every path in one run:
//! * `heap`: the baseline, [`HeapAssignment`], which mirrors bellperson 0.27's private
//!   `ProvingAssignment` (Vecs grown by push, three temporary `LinearCombination`s per
//!   constraint), fed by the circuit's `bellpepper_core::Circuit` impl;
//! * `arena_bellpepper`: [`ArenaAssignment`] through the bellpepper-core trait, same
//!   circuit code (for `sha`: bellpepper 0.2's own SHA-256 gadget, in both of these);
//! * `arena_native`: the native gadgets straight into [`ArenaAssignment`] (test circuits);
//! * `arena_precompiled`: the same bellpepper-core circuit through precompiled constraints:
//!   witness-only synthesis, then the sparse products a = A·w, b = B·w,
//!   c = C·w in parallel. Reported split into `witness` and `products`. The recording is
//!   made once before the runs (timed as `record_s`, not part of the path's time);
//! * `arena_precompiled_native` (test circuits): the native gadgets' witness through their
//!   own recording ([`record_native`]): `alloc` writes the values, `enforce` only counts
//!   (its closures never run), then the products. Split as above.
//!
//! Circuits: the test circuits (`chain`, `sha`, `sector`, nearest a target size) and, with
//! the `filecoin` feature, one real PoRep C2 partition (`filecoin-2KiB`, `filecoin-8MiB`)
//! of a freshly sealed sector, recorded from the blank circuit as production does.
//!
//! Reported per path: constraints, median synthesis seconds over `reps` runs (after one
//! unmeasured warm-up run per path), constraints per second, heap allocations per
//! constraint on the synthesizing thread (needs `arena::count_alloc::CountingAlloc` as the
//! global allocator: `allocs_counted` says whether it is; the products' rayon workers are
//! not counted, they allocate nothing per row), and the ratio of constraints/s to the heap
//! path's. Dropping the result is not timed for any path.

use std::time::Instant;

use arenaprove_arena::count_alloc::CountingAlloc;
use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::circuits::{build, AnyCircuit, CircuitKind};
use arenaprove_circuits::{
    record, record_native, shape_of, shape_of_native, synthesize_arena, synthesize_heap, synthesize_native,
    ArenaAssignment, AssignmentPools, Precompiled, ProverWitness, Shape,
};
use arenaprove_engine::deps::bellpepper_core::Circuit;
use arenaprove_engine::deps::blstrs::Scalar;

/// The synthesis paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Heap,
    ArenaBellpepper,
    ArenaNative,
    ArenaPrecompiled,
    ArenaPrecompiledNative,
}

impl Path {
    pub const ALL: [Path; 5] = [
        Path::Heap,
        Path::ArenaBellpepper,
        Path::ArenaNative,
        Path::ArenaPrecompiled,
        Path::ArenaPrecompiledNative,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Path::Heap => "heap",
            Path::ArenaBellpepper => "arena_bellpepper",
            Path::ArenaNative => "arena_native",
            Path::ArenaPrecompiled => "arena_precompiled",
            Path::ArenaPrecompiledNative => "arena_precompiled_native",
        }
    }
    /// Whether the path is split into witness and products.
    pub fn precompiled(self) -> bool {
        matches!(self, Path::ArenaPrecompiled | Path::ArenaPrecompiledNative)
    }
    /// Whether the path needs the circuit's native form.
    pub fn native(self) -> bool {
        matches!(self, Path::ArenaNative | Path::ArenaPrecompiledNative)
    }
}

/// Which circuit to synthesize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A test circuit, the instance nearest a target constraint count.
    Test(CircuitKind),
    /// One real PoRep C2 partition of this sector size (feature `filecoin`).
    Filecoin(&'static str),
}

impl Target {
    pub fn name(&self) -> String {
        match self {
            Target::Test(k) => k.name().to_string(),
            Target::Filecoin(size) => format!("filecoin-{size}"),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "filecoin-2KiB" => Ok(Target::Filecoin("2KiB")),
            "filecoin-8MiB" => Ok(Target::Filecoin("8MiB")),
            _ => s
                .parse::<CircuitKind>()
                .map(Target::Test)
                .map_err(|e| format!("{e} (or filecoin-2KiB, filecoin-8MiB with the filecoin feature)")),
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

/// The precompiled path's split.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrecompiledSplit {
    pub witness_s_median: f64,
    pub products_s_median: f64,
    /// Allocations per constraint of the witness-only synthesis alone.
    pub witness_allocs_per_constraint: f64,
    /// One-time recording of the constraints (not in the path's time).
    pub record_s: f64,
    /// Bytes of the recording's file.
    pub matrix_bytes: usize,
    /// Stored terms of A, B, C (all classes).
    pub terms: u64,
    /// Terms whose coefficient is neither +1 nor -1 (they multiply).
    pub terms_general: u64,
}

/// One path's figures.
#[derive(Clone, Debug)]
pub struct PathReport {
    pub path: Path,
    pub circuit: String,
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
    /// For `arena_precompiled` and `arena_precompiled_native`.
    pub split: Option<PrecompiledSplit>,
}

/// Whether `CountingAlloc` is the global allocator (a boxed value moves its counter).
pub fn allocs_are_counted() -> bool {
    let before = CountingAlloc::thread_snapshot();
    let b = std::hint::black_box(Box::new(7u64));
    drop(b);
    CountingAlloc::thread_snapshot().allocs > before.allocs
}

/// A circuit with its shapes, recording and pools, ready to be synthesized by any path.
pub struct Workload<C = AnyCircuit> {
    /// A fresh copy per run (bellpepper's `synthesize` consumes it; cloning is not timed).
    pub circuit: C,
    /// The native form, for test circuits.
    pub native: Option<AnyCircuit>,
    pub generic_shape: Shape,
    pub native_shape: Option<Shape>,
    pub precompiled: Precompiled,
    pub record_s: f64,
    /// The native form's own recording and its recording time (test circuits).
    pub native_precompiled: Option<(Precompiled, f64)>,
    pub pools: AssignmentPools,
    pub gadgets: &'static str,
}

/// One timed precompiled run: (witness s, products s, witness allocations, constraints).
pub type SplitRun = (f64, f64, u64, usize);

impl Workload<AnyCircuit> {
    /// The instance of `kind` nearest `target_constraints`, and pools for one assignment.
    pub fn new(kind: CircuitKind, target_constraints: usize, seed: u64) -> Result<Self, String> {
        let circuit = build(kind, target_constraints, seed).map_err(|e| e.to_string())?;
        let gadgets = circuit.generic_gadgets();
        let recorded_from = circuit.clone();
        Workload::with_circuit(circuit.clone(), recorded_from, Some(circuit), gadgets, &kind.to_string())
    }
}

impl<C: Circuit<Scalar> + Clone> Workload<C> {
    /// A workload for `circuit`, its constraints recorded from `recorded_from` (the same
    /// topology: a blank circuit will do).
    pub fn with_circuit(
        circuit: C,
        recorded_from: C,
        native: Option<AnyCircuit>,
        gadgets: &'static str,
        identity: &str,
    ) -> Result<Self, String> {
        let generic_shape = shape_of(circuit.clone()).map_err(|e| e.to_string())?;
        let native_shape = match &native {
            Some(n) => Some(shape_of_native(n).map_err(|e| e.to_string())?),
            None => None,
        };
        let t0 = Instant::now();
        let precompiled = record(recorded_from, identity).map_err(|e| e.to_string())?;
        let record_s = t0.elapsed().as_secs_f64();
        precompiled.check_shape(&generic_shape).map_err(|e| e.to_string())?;
        let native_precompiled = match (&native, &native_shape) {
            (Some(n), Some(shape)) => {
                let t0 = Instant::now();
                let pc = record_native(n, &format!("{identity} (native)")).map_err(|e| e.to_string())?;
                let secs = t0.elapsed().as_secs_f64();
                pc.check_shape(shape).map_err(|e| e.to_string())?;
                Some((pc, secs))
            }
            _ => None,
        };
        // One set of pools big enough for every path's shape.
        let pool_shape = Shape::covering(&[generic_shape, native_shape.unwrap_or(generic_shape)]);
        let ledger = Ledger::unlimited();
        let pools = AssignmentPools::for_shape(&pool_shape, 1, &ledger, RegionConfig::default())
            .map_err(|e| e.to_string())?;
        Ok(Workload {
            circuit,
            native,
            generic_shape,
            native_shape,
            precompiled,
            record_s,
            native_precompiled,
            pools,
            gadgets,
        })
    }

    /// One timed synthesis: (seconds, heap allocations + reallocations on this thread,
    /// constraints). The result is dropped after the clock stops.
    pub fn run_once(&self, path: Path) -> Result<(f64, u64, usize), String> {
        if path.precompiled() {
            let (w, p, allocs, n) = self.run_precompiled(path)?;
            return Ok((w + p, allocs, n));
        }
        let pools = &self.pools;
        let circuit = self.circuit.clone();
        let t0 = Instant::now();
        let (result, counted) = CountingAlloc::measure_thread(|| -> Result<(usize, Keep), String> {
            Ok(match path {
                Path::Heap => {
                    let h = synthesize_heap(circuit).map_err(|e| e.to_string())?;
                    (h.num_constraints(), Keep::Heap(h))
                }
                Path::ArenaBellpepper => {
                    let w =
                        synthesize_arena(circuit, pools, &self.generic_shape).map_err(|e| e.to_string())?;
                    (w.num_constraints(), Keep::Arena(w))
                }
                Path::ArenaNative => {
                    let (Some(native), Some(shape)) = (&self.native, &self.native_shape) else {
                        return Err("this circuit has no native path".into());
                    };
                    let w = synthesize_native(native, pools, shape).map_err(|e| e.to_string())?;
                    (w.num_constraints(), Keep::Arena(w))
                }
                Path::ArenaPrecompiled | Path::ArenaPrecompiledNative => unreachable!("handled above"),
            })
        });
        let secs = t0.elapsed().as_secs_f64();
        let (constraints, keep) = result?;
        drop(keep);
        Ok((secs, counted.allocs + counted.reallocs, constraints))
    }

    /// The recording a precompiled `path` synthesizes through, its shape, and the seconds
    /// its recording took.
    fn recording(&self, path: Path) -> Result<(&Precompiled, &Shape, f64), String> {
        match (path, &self.native_precompiled, &self.native_shape) {
            (Path::ArenaPrecompiled, _, _) => Ok((&self.precompiled, &self.generic_shape, self.record_s)),
            (Path::ArenaPrecompiledNative, Some((pc, secs)), Some(shape)) => Ok((pc, shape, *secs)),
            _ => Err(format!("{}: this circuit has no such path", path.name())),
        }
    }

    /// One timed synthesis on a precompiled `path`, split into witness and products (the
    /// `input_i * 0 = 0` rows are counted with the products).
    pub fn run_precompiled(&self, path: Path) -> Result<SplitRun, String> {
        let (pc, shape, _) = self.recording(path)?;
        let mut cs = ArenaAssignment::new(&self.pools, shape).map_err(|e| e.to_string())?;
        let circuit = self.circuit.clone();
        let native = self.native.as_ref();
        let t0 = Instant::now();
        let (witness, counted) = CountingAlloc::measure_thread(|| -> Result<(), String> {
            cs.alloc_one().map_err(|e| e.to_string())?;
            match (path, native) {
                (Path::ArenaPrecompiledNative, Some(n)) => pc.witness_into_native(n, &mut cs),
                _ => pc.witness_into(circuit, &mut cs),
            }
            .map_err(|e| e.to_string())
        });
        let witness_s = t0.elapsed().as_secs_f64();
        witness?;
        let t1 = Instant::now();
        pc.products_into(&mut cs).map_err(|e| e.to_string())?;
        cs.finish().map_err(|e| e.to_string())?;
        let products_s = t1.elapsed().as_secs_f64();
        let constraints = cs.num_constraints();
        drop(cs);
        Ok((witness_s, products_s, counted.allocs + counted.reallocs, constraints))
    }

    /// The paths this workload has.
    pub fn paths(&self) -> Vec<Path> {
        Path::ALL.into_iter().filter(|p| !p.native() || self.native.is_some()).collect()
    }

    /// Runs every path (warm-up, then `reps` measured runs each).
    pub fn report(&self, circuit_name: &str, reps: usize) -> Result<Vec<PathReport>, String> {
        if reps == 0 {
            return Err("reps must be at least 1".into());
        }
        let counted = allocs_are_counted();
        let mut out: Vec<PathReport> = Vec::new();
        for path in self.paths() {
            self.run_once(path)?; // warm-up
            let mut secs = Vec::with_capacity(reps);
            let (mut witness, mut products) = (Vec::new(), Vec::new());
            let mut allocs = 0u64;
            let mut constraints = 0;
            for _ in 0..reps {
                let (s, a, n) = if path.precompiled() {
                    let (w, p, a, n) = self.run_precompiled(path)?;
                    witness.push(w);
                    products.push(p);
                    (w + p, a, n)
                } else {
                    self.run_once(path)?
                };
                secs.push(s);
                allocs += a;
                constraints = n;
            }
            let secs_min = secs.iter().copied().fold(f64::INFINITY, f64::min);
            let secs_median = super::upper_median(&secs);
            let constraints_per_s = constraints as f64 / secs_median;
            let heap_rate = out.first().map(|h| h.constraints_per_s).unwrap_or(constraints_per_s);
            let allocs_per_constraint = allocs as f64 / (reps * constraints) as f64;
            let recording = if path.precompiled() { Some(self.recording(path)?) } else { None };
            let split = recording.map(|(pc, _, record_s)| {
                let terms = pc.terms();
                PrecompiledSplit {
                    witness_s_median: super::upper_median(&witness),
                    products_s_median: super::upper_median(&products),
                    witness_allocs_per_constraint: allocs_per_constraint,
                    record_s,
                    matrix_bytes: pc.bytes(),
                    terms: terms.iter().map(|t| t.total()).sum(),
                    terms_general: terms.iter().map(|t| t.general).sum(),
                }
            });
            out.push(PathReport {
                path,
                circuit: circuit_name.to_string(),
                constraints,
                gadgets: match path {
                    Path::ArenaNative | Path::ArenaPrecompiledNative => "native gadgets",
                    _ => self.gadgets,
                },
                secs_median,
                secs_min,
                constraints_per_s,
                allocs_per_constraint,
                allocs_counted: counted,
                ratio_to_heap: constraints_per_s / heap_rate,
                split,
            });
        }
        if self.pools.outstanding() != 0 {
            return Err(format!("{} slabs still leased after the runs", self.pools.outstanding()));
        }
        Ok(out)
    }
}

/// Holds a result until the clock stops (boxed or not does not matter: it is dropped after).
#[allow(clippy::large_enum_variant)]
enum Keep {
    Heap(#[allow(dead_code)] arenaprove_circuits::HeapAssignment),
    Arena(#[allow(dead_code)] arenaprove_circuits::ArenaAssignment),
}

/// Runs every path on the instance of `cfg.kind` nearest `cfg.target_constraints`.
pub fn run(cfg: &Config) -> Result<Vec<PathReport>, String> {
    let w = Workload::new(cfg.kind, cfg.target_constraints, cfg.seed)?;
    w.report(cfg.kind.name(), cfg.reps)
}

/// Runs every path on partition 0 of a freshly sealed PoRep sector of `size` (`2KiB` or
/// `8MiB`), its constraints recorded from the blank circuit. Sealing (to C1) needs no
/// Groth16 parameters.
#[cfg(feature = "filecoin")]
pub fn run_filecoin(size: &str, seed: u64, reps: usize) -> Result<Vec<PathReport>, String> {
    use arenaprove_filecoin as fc;
    let size: fc::SectorSize = size.parse().map_err(|e: fc::FilecoinError| e.to_string())?;
    let mut rng = fc::rng_from_seed(seed);
    let request = fc::SealRequest::random(size, &mut rng);
    let work = std::env::temp_dir().join(format!("arenaprove-bench-synth-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let sealed = fc::seal_sector(&request, &mut rng, &work).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&work);
    let sealed = sealed?;
    let job = fc::circuit::SectorJob::new(&sealed.c1).map_err(|e| e.to_string())?;
    let circuit = job.circuit(0).map_err(|e| e.to_string())?;
    let blank = fc::circuit::blank_circuit(request.registered_proof).map_err(|e| e.to_string())?;
    let name = format!("filecoin-{}", size.name());
    let w =
        Workload::with_circuit(circuit, blank, None, "storage-proofs 19.1.0 (bellperson gadgets)", &name)?;
    w.report(&name, reps)
}
