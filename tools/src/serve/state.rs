//! The daemon's shared state: everything the RPCs, the dispatcher and the job threads
//! change, under one lock.
use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::sync::oneshot;
use tonic::Status;

use super::circuits::CircuitId;
use super::config::ServeConfig;
use super::jobs::JobTable;
use super::lifecycle::Engines;
use super::metrics::Metrics;
use super::queue::JobQueue;

/// A change of the loaded circuits, applied by the dispatcher once no job runs.
pub enum Control {
    Load { id: CircuitId, reply: oneshot::Sender<Result<u64, Status>> },
    Evict { id: CircuitId, reply: oneshot::Sender<Result<(bool, u64), Status>> },
}

/// What the lock guards.
pub struct Sched {
    pub engines: Engines,
    pub jobs: JobTable,
    pub queue: JobQueue,
    pub draining: bool,
    pub stop: bool,
    pub controls: VecDeque<Control>,
}

/// Test builds' way in: called on a job's own thread, inside its guard, with the job's
/// request id, just before its circuits are built (where filecoin-proofs' circuit builder
/// runs). Production passes none.
#[doc(hidden)]
pub type BeforeCircuits = Arc<dyn Fn(&str) + Send + Sync>;

/// Hooks for tests; every field empty in production.
#[doc(hidden)]
#[derive(Clone, Default)]
pub struct TestHooks {
    pub before_circuits: Option<BeforeCircuits>,
}

pub struct Inner {
    pub config: ServeConfig,
    pub started: Instant,
    pub sched: Mutex<Sched>,
    /// Wakes the dispatcher: a job queued or ended, a control, a stop.
    pub wake: Condvar,
    pub metrics: Metrics,
    pub next_job: AtomicU64,
    pub dispatcher: Mutex<Option<JoinHandle<()>>>,
    pub hooks: TestHooks,
}

impl Inner {
    pub fn new(config: ServeConfig, engines: Engines, hooks: TestHooks) -> Inner {
        Inner {
            config,
            started: Instant::now(),
            sched: Mutex::new(Sched {
                engines,
                jobs: JobTable::default(),
                queue: JobQueue::default(),
                draining: false,
                stop: false,
                controls: VecDeque::new(),
            }),
            wake: Condvar::new(),
            metrics: Metrics::default(),
            next_job: AtomicU64::new(1),
            dispatcher: Mutex::new(None),
            hooks,
        }
    }

    /// The lock (a panic elsewhere never poisons the daemon: the state is kept consistent
    /// by each critical section, not by unwinding).
    pub fn lock(&self) -> MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(|p| p.into_inner())
    }
}
