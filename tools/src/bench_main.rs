//! `arenaprove-bench`: the bench commands (`bench-alloc`, `bench-ntt`, `bench-prove`,
//! `bench-synth`) in a process of their own. `arenaprove bench-*` runs this binary.
//!
//! Its global allocator is [`CountingAlloc`], counting from the first allocation; that is
//! how `bench-synth` reports allocations per constraint. This is decided per binary, at
//! build time: the `#[global_allocator]` below is the only one in the tools crate, so the
//! `arenaprove` binary (`prove`, `soak`, `serve`, ...) and any embedder of the `arenaprove`
//! library allocate through the system allocator untouched.
use arenaprove::arena::CountingAlloc;
use arenaprove_tools::common;
use clap::{Parser, Subcommand};

mod bench_alloc;
mod bench_ntt;
mod bench_prove;
mod bench_synth;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

#[derive(Parser)]
#[command(
    name = "arenaprove-bench",
    version,
    about = "arenaprove's bench commands, in a process whose allocations are counted"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The commands keep their names from `arenaprove` (`bench-alloc`, ...).
#[derive(Subcommand)]
enum Cmd {
    /// Allocation strategies side by side on a partition-shaped working set.
    #[command(name = "bench-alloc")]
    Alloc(bench_alloc::Args),
    /// The h stage's NTTs: strided twiddles (baseline) against the compact copy, heap and slab.
    #[command(name = "bench-ntt")]
    Ntt(bench_ntt::Args),
    /// Our CPU Groth16 prover against bellperson 0.27 on the same parameters.
    #[command(name = "bench-prove")]
    Prove(bench_prove::Args),
    /// Synthesis: heap baseline vs ArenaAssignment (bellpepper-core and native gadgets),
    /// with allocations per constraint.
    #[command(name = "bench-synth")]
    Synth(bench_synth::Args),
}

fn main() {
    common::init_tracing();
    let result = match Cli::parse().cmd {
        Cmd::Alloc(a) => bench_alloc::run(a),
        Cmd::Ntt(a) => bench_ntt::run(a),
        Cmd::Prove(a) => bench_prove::run(a),
        Cmd::Synth(a) => bench_synth::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting allocator is this binary's: a box on this thread is counted.
    #[test]
    fn allocations_are_counted_here() {
        let before = ALLOC.snapshot();
        let (b, counted) = CountingAlloc::measure_thread(|| Box::new([7u8; 64]));
        assert_eq!(b[0], 7);
        assert_eq!(counted.allocs, 1);
        assert_eq!(counted.bytes_allocated, 64);
        assert!(ALLOC.snapshot().since(&before).allocs >= 1);
    }
}
