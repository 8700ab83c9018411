//! `arenaprove`: the command-line program.
use clap::{Parser, Subcommand};

mod bench_alloc;
mod bench_ntt;
mod bench_prove;
mod bench_synth;
mod common;
#[cfg(feature = "filecoin")]
mod filecoin;
mod params;
mod plan;
mod probe_stalls;
mod prove;
mod soak;

/// Counts heap allocations, but only for the commands that report counts (`bench-synth`
/// arms it); every other command pays one relaxed load per allocation.
#[global_allocator]
static ALLOC: arenaprove::arena::count_alloc::CountingAlloc =
    arenaprove::arena::count_alloc::CountingAlloc::disarmed();

#[derive(Parser)]
#[command(name = "arenaprove", version, about = "Memory-arena-centric Groth16 proving engine")]
struct Cli {
    /// `mlock` every engine region (the memory plan says how much is locked; raise
    /// RLIMIT_MEMLOCK first, or the engine warns once and runs unlocked). Applies to the
    /// engines of `prove`, `soak` and `filecoin soak`.
    #[arg(long, global = true)]
    mlock: bool,
    /// Engine regions on 4 KiB pages: no `MADV_HUGEPAGE` (the default asks for transparent
    /// huge pages; parameters stay on them). For A/B runs of the arena's page size against
    /// the fresh baseline. Applies where `--mlock` does.
    #[arg(long, global = true)]
    no_huge_pages: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job: prove one sector (development params generated and cached on first use).
    Prove(prove::Args),
    /// Many consecutive sectors through one engine: memory, faults, handback, throughput.
    Soak(soak::Args),
    /// Parameter files: gen, inspect, verify.
    Params(params::Args),
    /// The memory plan for a circuit (or a Filecoin partition) and slot count; reserves nothing.
    Plan(plan::Args),
    /// Allocation strategies side by side on a partition-shaped working set.
    BenchAlloc(bench_alloc::Args),
    /// The h stage's NTTs: strided twiddles (baseline) against the compact copy, heap and slab.
    BenchNtt(bench_ntt::Args),
    /// Our CPU Groth16 prover against bellperson 0.27 on the same parameters (issue 4).
    BenchProve(bench_prove::Args),
    /// Synthesis: heap baseline vs ArenaAssignment (bellpepper-core and native gadgets).
    BenchSynth(bench_synth::Args),
    /// How often one plain memory write stalls on this machine (heap vs arena regions).
    ProbeStalls(probe_stalls::Args),
    /// Real Filecoin sectors: seal (to C1), c2, verify, bench.
    #[cfg(feature = "filecoin")]
    Filecoin(filecoin::Args),
    /// A proving daemon speaking Curio's cuzk gRPC API (PoRep C2 on the engine).
    #[cfg(feature = "serve")]
    Serve(arenaprove_tools::serve::Args),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ARENAPROVE_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    common::MLOCK.store(cli.mlock, std::sync::atomic::Ordering::Relaxed);
    common::HUGE_PAGES.store(!cli.no_huge_pages, std::sync::atomic::Ordering::Relaxed);
    let result = match cli.cmd {
        Cmd::Prove(a) => prove::run(a),
        Cmd::Soak(a) => soak::run(a),
        Cmd::Params(a) => params::run(a),
        Cmd::Plan(a) => plan::run(a),
        Cmd::BenchAlloc(a) => bench_alloc::run(a),
        Cmd::BenchNtt(a) => bench_ntt::run(a),
        Cmd::BenchProve(a) => bench_prove::run(a),
        Cmd::BenchSynth(a) => {
            ALLOC.arm();
            bench_synth::run(a)
        }
        Cmd::ProbeStalls(a) => probe_stalls::run(a),
        #[cfg(feature = "filecoin")]
        Cmd::Filecoin(a) => filecoin::run(a),
        #[cfg(feature = "serve")]
        Cmd::Serve(_) if cli.mlock || cli.no_huge_pages => Err(anyhow::anyhow!(
            "--mlock and --no-huge-pages apply to prove, soak and filecoin soak; serve does not take them"
        )),
        #[cfg(feature = "serve")]
        Cmd::Serve(a) => arenaprove_tools::serve::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
