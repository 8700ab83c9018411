//! Benchmark workloads shared by `benches/` and the `arenaprove bench-*` commands.
//! Each workload measures its baseline in the same run and reports the ratio.
pub mod alloc;
pub mod prove;
pub mod synth;
