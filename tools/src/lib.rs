//! The library half of the tools crate: the `serve` daemon (feature `serve`), so that
//! tests can start it in-process and drive it with a gRPC client.
#![forbid(unsafe_code)]

pub mod backend;

#[cfg(feature = "serve")]
pub mod serve;
