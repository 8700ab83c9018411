//! The library half of the tools crate: what both binaries share, and what tests drive
//! in-process.
//!
//! * [`common`]: the CLI's shared pieces (circuits, params cache, engine config, memory
//!   limits and the guard), used by `arenaprove` and by `arenaprove-bench`;
//! * [`backend`]: the GPU backend's factory for the CLI and the daemon;
//! * `serve` (feature `serve`): the gRPC daemon, so that tests can start it in-process and
//!   drive it with a gRPC client.
//!
//! Neither this library nor the `arenaprove` binary installs a global allocator; only
//! `arenaprove-bench` does (src/bench_main.rs).
#![forbid(unsafe_code)]

pub mod backend;
pub mod common;

#[cfg(feature = "serve")]
pub mod serve;
