//! Criterion bench of one Groth16 proof: ours (native synthesis + CPU prover) and,
//! with `--features peer`, bellperson 0.27's `create_random_proof` on the same parameters.
//! The workload is shared with `arenaprove bench-prove` (`arenaprove::benchkit::prove`).
//!
//! Size: `ARENAPROVE_BENCH_CONSTRAINTS` (default 2^12, to keep `cargo bench` short; the
//! recorded 2^16 figures come from `arenaprove bench-prove`).
//! Run: `cargo bench --features peer --bench prove`.
use std::time::Duration;

use arenaprove::benchkit::prove::{build, our_params, CircuitKind, Ours, Synthesis};
use arenaprove::engine::deps::rand_chacha::ChaCha8Rng;
use arenaprove::engine::deps::rand_core::SeedableRng;
use criterion::{criterion_group, criterion_main, Criterion};

fn constraints() -> usize {
    std::env::var("ARENAPROVE_BENCH_CONSTRAINTS").ok().and_then(|s| s.parse().ok()).unwrap_or(1 << 12)
}

fn prove(c: &mut Criterion) {
    let n = constraints();
    for kind in [CircuitKind::Chain, CircuitKind::Sector] {
        let circuit = match build(kind, n, 1) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("prove bench: {e}");
                return;
            }
        };
        let (params, _) = our_params(circuit.clone(), 42).expect("params");
        let ours = Ours::new(params.clone(), &circuit, Synthesis::Native).expect("prover");
        let mut group = c.benchmark_group(format!("prove_{}_{n}", kind.name()));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(5));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        group.bench_function("ours", |b| b.iter(|| ours.prove(&circuit, &mut rng).expect("prove")));
        #[cfg(feature = "peer")]
        {
            use arenaprove::benchkit::prove::peer;
            let bp = peer::to_bellperson(&params).expect("params");
            group.bench_function("bellperson", |b| {
                b.iter(|| peer::prove_bellperson(&bp, circuit.clone(), &mut rng).expect("prove"))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, prove);
criterion_main!(benches);
