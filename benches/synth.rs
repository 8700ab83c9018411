//! Criterion bench of synthesis: the heap baseline (bellperson 0.27's
//! ProvingAssignment, mirrored), ArenaAssignment through bellpepper-core, and the native
//! gadgets into ArenaAssignment; the workload is shared with `arenaprove bench-synth`
//! (see `arenaprove::benchkit::synth`), which also prints allocations and ratios.
//!
//! Size: `ARENAPROVE_BENCH_SYNTH_CONSTRAINTS` (default 2^16); circuit:
//! `ARENAPROVE_BENCH_SYNTH_CIRCUIT` (default sector).
//! Run: `cargo bench --bench synth`.
use std::time::Duration;

use arenaprove::benchkit::synth::{self, Config, Path, Workload};
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove_arena::count_alloc::CountingAlloc;
use criterion::{criterion_group, criterion_main, Criterion};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

fn synth_paths(c: &mut Criterion) {
    let constraints = std::env::var("ARENAPROVE_BENCH_SYNTH_CONSTRAINTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1 << 16);
    let kind: CircuitKind = std::env::var("ARENAPROVE_BENCH_SYNTH_CIRCUIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CircuitKind::Sector);
    let workload = match Workload::new(kind, constraints, 1) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("synth bench: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("synth_{kind}_{constraints}"));
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    for path in Path::ALL {
        group.bench_function(path.name(), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| Duration::from_secs_f64(workload.run_once(path).expect("synthesis").0))
                    .sum()
            })
        });
    }
    group.finish();
    // The same-run comparison, printed once.
    let cfg = Config { kind, target_constraints: constraints, seed: 1, reps: 3 };
    if let Ok(reports) = synth::run(&cfg) {
        for r in reports {
            eprintln!(
                "synth {kind} {}: {} constraints, {:.0} constraints/s, {:.3} allocs/constraint, {:.2}x heap",
                r.path.name(),
                r.constraints,
                r.constraints_per_s,
                r.allocs_per_constraint,
                r.ratio_to_heap
            );
        }
    }
}

criterion_group!(benches, synth_paths);
criterion_main!(benches);
