//! `arenaprove`: the command-line program.
//!
//! It installs no global allocator: every command here, `serve` included, allocates through
//! the system allocator untouched. The `bench-*` commands run in `arenaprove-bench`
//! (src/bench_main.rs), a binary of their own whose global allocator counts; the commands
//! below only hand their arguments over to it ([`run_bench`]).
use std::ffi::OsString;

use anyhow::Context;
use arenaprove_tools::common;
use clap::{Parser, Subcommand};

#[cfg(feature = "filecoin")]
mod filecoin;
#[cfg(feature = "filecoin")]
mod filecoin_post;
mod params;
mod plan;
mod probe_stalls;
mod prove;
mod soak;

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
    /// Device memory each GPU may use, e.g. `24GiB` (as on a consumer card): base sets that
    /// do not fit stream from page-locked host memory for each MSM, and a, b, c come from
    /// the host when the recording does not fit either. Applies to every command that
    /// proves with `--backend gpu`, and to `plan --backend gpu`; the daemon's key is
    /// `gpus.device_memory`.
    #[arg(long, global = true, value_parser = parse_device_memory)]
    device_memory: Option<u64>,
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
    /// Allocation strategies side by side on a partition-shaped working set (runs
    /// `arenaprove-bench bench-alloc`).
    BenchAlloc(BenchArgs),
    /// The h stage's NTTs: strided twiddles (baseline) against the compact copy, heap and
    /// slab (runs `arenaprove-bench bench-ntt`).
    BenchNtt(BenchArgs),
    /// Our CPU Groth16 prover against bellperson 0.27 on the same parameters (runs
    /// `arenaprove-bench bench-prove`).
    BenchProve(BenchArgs),
    /// Synthesis: heap baseline vs ArenaAssignment, with allocations counted (runs
    /// `arenaprove-bench bench-synth`).
    BenchSynth(BenchArgs),
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
    common::init_tracing();
    let cli = Cli::parse();
    common::MLOCK.store(cli.mlock, std::sync::atomic::Ordering::Relaxed);
    common::HUGE_PAGES.store(!cli.no_huge_pages, std::sync::atomic::Ordering::Relaxed);
    common::DEVICE_MEMORY.store(cli.device_memory.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
    let result = match cli.cmd {
        Cmd::Prove(a) => prove::run(a),
        Cmd::Soak(a) => soak::run(a),
        Cmd::Params(a) => params::run(a),
        Cmd::Plan(a) => plan::run(a),
        Cmd::BenchAlloc(_) | Cmd::BenchNtt(_) | Cmd::BenchProve(_) | Cmd::BenchSynth(_)
            if cli.mlock || cli.no_huge_pages =>
        {
            Err(anyhow::anyhow!(
                "--mlock and --no-huge-pages apply to prove, soak and filecoin soak; the bench commands do not take them"
            ))
        }
        Cmd::BenchAlloc(a) => run_bench("bench-alloc", a),
        Cmd::BenchNtt(a) => run_bench("bench-ntt", a),
        Cmd::BenchProve(a) => run_bench("bench-prove", a),
        Cmd::BenchSynth(a) => run_bench("bench-synth", a),
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

/// `--device-memory`: bytes with an optional binary suffix (`24GiB`).
fn parse_device_memory(s: &str) -> Result<u64, String> {
    match s.parse::<common::MemoryLimit>() {
        Ok(common::MemoryLimit::Bytes(b)) => Ok(b),
        Ok(common::MemoryLimit::Auto) => Err("--device-memory: a size such as 24GiB (not auto)".into()),
        Err(e) => Err(format!("--device-memory: {e}")),
    }
}

/// A bench command's arguments, handed to `arenaprove-bench` as they are (`--help`
/// included: `arenaprove bench-synth --help` prints the bench's own help).
#[derive(clap::Args)]
#[command(disable_help_flag = true)]
struct BenchArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

/// The file name of the bench binary, next to this one.
const BENCH_BIN: &str = "arenaprove-bench";

/// Runs `arenaprove-bench <command> <args>` in place of this process (exec: its output and
/// exit status are the command's). Cargo builds both binaries for `cargo build` and for the
/// tests; `cargo run --bin arenaprove` builds only this one, so a missing bench binary is
/// an error that says how to build it (and one left from an older build would run stale).
fn run_bench(command: &str, a: BenchArgs) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("locating the arenaprove binary")?;
    let bench = exe.with_file_name(BENCH_BIN);
    if !bench.is_file() {
        anyhow::bail!(
            "{command} runs in {}, which is not built: cargo build --release -p arenaprove-tools --bin {BENCH_BIN}",
            bench.display()
        );
    }
    let err = std::process::Command::new(&bench).arg(command).args(a.args).exec();
    Err(err).with_context(|| format!("running {}", bench.display()))
}

#[cfg(test)]
mod tests {
    use arenaprove::arena::CountingAlloc;

    /// This binary allocates through the system allocator: nothing counts its allocations.
    #[test]
    fn no_counting_allocator_here() {
        let (b, counted) = CountingAlloc::measure_thread(|| Box::new([7u8; 64]));
        assert_eq!(b[0], 7);
        assert_eq!(counted.allocs, 0, "a counting global allocator is installed");
    }
}
