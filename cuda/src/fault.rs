//! Fault injection for tests of what a GPU error does to a job and to the jobs after it.
//!
//! [`fail_next_launches`] arms the next `n` kernel launches of this process to fail in the
//! driver: each asks `cuLaunchKernel` for more threads per block than any device has, so
//! the driver refuses it (`CUDA_ERROR_INVALID_VALUE`), as it refuses a launch whose
//! configuration is wrong; the context stays usable, as after any such refusal. Nothing
//! arms it in normal operation: one relaxed atomic load per launch is its whole cost.
use std::sync::atomic::{AtomicU64, Ordering};

static LAUNCHES_TO_FAIL: AtomicU64 = AtomicU64::new(0);

/// Arms the next `n` kernel launches (of any GPU of this process) to fail.
pub fn fail_next_launches(n: u64) {
    LAUNCHES_TO_FAIL.store(n, Ordering::SeqCst);
}

/// Launches still armed to fail.
pub fn launches_armed() -> u64 {
    LAUNCHES_TO_FAIL.load(Ordering::SeqCst)
}

/// Whether this launch is one armed to fail (and disarms it).
pub(crate) fn take_launch() -> bool {
    if LAUNCHES_TO_FAIL.load(Ordering::Relaxed) == 0 {
        return false;
    }
    LAUNCHES_TO_FAIL.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
}
