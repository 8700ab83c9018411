//! Which partition a pipeline thread is working on: the prover and finalizer threads set a
//! [`WorkTag`] around each backend call, so that a backend driving several devices can say
//! what each device is doing (the GPU backend's per-GPU activity, the daemon's GetStatus)
//! without the backend seam carrying job ids.

use std::cell::RefCell;
use std::sync::Arc;

/// The partition a backend call works for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkTag {
    /// The engine's job id ([`super::JobHandle::id`]).
    pub job: u64,
    pub partition: u32,
    /// The job's circuit kind, as submitted.
    pub kind: Arc<str>,
    /// `"prove_start"` (h) or `"finalize"` (the other MSMs).
    pub stage: &'static str,
}

thread_local! {
    static CURRENT: RefCell<Option<WorkTag>> = const { RefCell::new(None) };
}

/// The partition this thread works for now, if it is one of the engine's prover or
/// finalizer threads inside a backend call.
pub fn current_work() -> Option<WorkTag> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Sets the thread's [`WorkTag`] until dropped (then the previous one is back).
pub(super) struct WorkScope {
    prev: Option<WorkTag>,
}

impl WorkScope {
    pub(super) fn enter(tag: WorkTag) -> WorkScope {
        WorkScope { prev: CURRENT.with(|c| c.borrow_mut().replace(tag)) }
    }
}

impl Drop for WorkScope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sets_the_tag_and_restores_the_previous_one() {
        assert_eq!(current_work(), None);
        let tag = |job| WorkTag { job, partition: 1, kind: Arc::from("k"), stage: "finalize" };
        {
            let _outer = WorkScope::enter(tag(7));
            assert_eq!(current_work().map(|t| t.job), Some(7));
            {
                let _inner = WorkScope::enter(tag(8));
                assert_eq!(current_work().map(|t| t.job), Some(8));
            }
            assert_eq!(current_work().map(|t| t.job), Some(7));
            // Another thread has its own.
            assert_eq!(std::thread::spawn(current_work).join().unwrap(), None);
        }
        assert_eq!(current_work(), None);
    }
}
