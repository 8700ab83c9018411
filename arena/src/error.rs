//! Errors of the arena: each names the pool or limit that refused.
use std::time::Duration;

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ArenaError {
    #[error(
        "pool '{pool}': a lease of {requested_bytes} bytes is larger than its slabs ({slab_bytes} bytes)"
    )]
    LeaseTooLarge { pool: String, requested_bytes: usize, slab_bytes: usize },
    #[error("pool '{pool}': no free slab (all {slab_count} leased)")]
    Exhausted { pool: String, slab_count: usize },
    #[error("pool '{pool}': no slab came back within {timeout:?} (all {slab_count} leased)")]
    LeaseTimeout { pool: String, slab_count: usize, timeout: Duration },
    #[error("reserving {requested_bytes} bytes for '{what}' would exceed the memory limit ({reserved_bytes} reserved of {limit_bytes})")]
    OverLimit { what: String, requested_bytes: usize, reserved_bytes: usize, limit_bytes: usize },
    #[error("the arena is frozen: reserving {requested_bytes} bytes for '{what}' after start-up is refused")]
    Frozen { what: String, requested_bytes: usize },
    #[error("SlabVec over pool '{pool}' is full: capacity {capacity} elements, {requested} requested")]
    Capacity { pool: String, capacity: usize, requested: usize },
    #[error("mapping {bytes} bytes for '{what}' failed: {reason}")]
    Map { what: String, bytes: usize, reason: String },
    #[error("region hook refused '{what}': {reason}")]
    Hook { what: String, reason: String },
    #[error("invalid configuration for '{what}': {reason}")]
    Config { what: String, reason: String },
}
