//! Criterion bench of the allocation strategies: one acquire / write / release
//! cycle of a partition-shaped working set per iteration; the workload is shared with
//! `arenaprove bench-alloc` (see `arenaprove::benchkit::alloc`).
//!
//! Size: `ARENAPROVE_BENCH_SIZE_MIB` (default 64, to keep `cargo bench` short).
//! Run: `cargo bench --bench alloc` (or `-- slab_pool` to pick one strategy).
use std::time::Duration;

use arenaprove::benchkit::alloc::{Shape, Strategy, Workload};
use criterion::{criterion_group, criterion_main, Criterion};

fn size_mib() -> usize {
    std::env::var("ARENAPROVE_BENCH_SIZE_MIB").ok().and_then(|s| s.parse().ok()).unwrap_or(64)
}

fn alloc_cycle(c: &mut Criterion) {
    let size_mib = size_mib();
    let shape = match Shape::for_size_mib(size_mib) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("alloc bench: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("alloc_cycle_{size_mib}MiB"));
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for strategy in Strategy::ALL {
        group.bench_function(strategy.name(), |b| {
            b.iter_custom(|iters| {
                let mut w = Workload::new(strategy, shape).expect("workload");
                w.cycle().expect("warm-up cycle");
                w.drain();
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += w.cycle().expect("cycle").cycle;
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, alloc_cycle);
criterion_main!(benches);
