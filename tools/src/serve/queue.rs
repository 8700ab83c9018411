//! The bounded priority queue and the jobs running: which job starts next (highest
//! priority, oldest first within one), and how many partitions are at the engine.
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::circuits::{CircuitId, Family};
use super::jobs::JobEntry;
use super::pb::Priority;
use super::request::JobRequest;

/// Priorities, highest first, as GetStatus and the metrics list them.
pub const PRIORITIES: [Priority; 4] = [Priority::Critical, Priority::High, Priority::Normal, Priority::Low];

/// Proof kinds, in the proto's order, as GetStatus lists them.
const FAMILIES: [Family; 4] = [Family::Porep, Family::Snap, Family::Window, Family::Winning];

/// A queued job: ordered by priority, then submission order.
pub struct Queued {
    pub seq: u64,
    pub entry: Arc<JobEntry>,
    pub request: JobRequest,
}

impl Queued {
    fn key(&self) -> (i32, std::cmp::Reverse<u64>) {
        (self.entry.priority as i32, std::cmp::Reverse(self.seq))
    }
}
impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// A job started, and when.
pub struct Running {
    pub entry: Arc<JobEntry>,
    pub started: Instant,
}

/// Queued and running jobs. A job starts while fewer partitions are at the engine than it
/// has slots (so the engine still gets the next job while the last partitions of the
/// current one prove), or at once when its priority is above every running job's (within
/// the engine's queue). The engine gives each free slot to the highest-priority waiting
/// partition, so a `CRITICAL` job waits for the next free slot, never behind queued or
/// running lower jobs' remaining partitions; past the slot the pipeline's stages are FIFO.
#[derive(Default)]
pub struct JobQueue {
    heap: BinaryHeap<Queued>,
    running: HashMap<String, Running>,
    partitions_running: usize,
}

impl JobQueue {
    /// Queues a job; its position (jobs ahead of it).
    pub fn push(&mut self, q: Queued) -> u32 {
        let position = self.ahead_of(&q);
        self.heap.push(q);
        position
    }

    fn ahead_of(&self, q: &Queued) -> u32 {
        self.heap.iter().filter(|o| o.key() > q.key()).count() as u32
    }

    /// Jobs ahead of a queued job (0 when it is not queued).
    pub fn position(&self, job_id: &str) -> u32 {
        self.heap.iter().find(|q| q.entry.id == job_id).map_or(0, |q| self.ahead_of(q))
    }

    /// The next job to start, if the engine has room: fewer partitions running than
    /// `slots`, or a job above every running one's priority that keeps the partitions at
    /// the engine within `slots + overtake_max`. It counts as running from now.
    pub fn start_next(&mut self, slots: usize, overtake_max: usize) -> Option<(Queued, Instant)> {
        let next = self.heap.peek()?;
        let running = self.running.values().map(|r| r.entry.priority as i32);
        let limits = (slots, overtake_max);
        if !may_start(
            self.partitions_running,
            limits,
            running,
            next.entry.priority as i32,
            next.entry.partitions,
        ) {
            return None;
        }
        let q = self.heap.pop()?;
        let started = Instant::now();
        self.partitions_running += q.entry.partitions;
        self.running.insert(q.entry.id.clone(), Running { entry: q.entry.clone(), started });
        Some((q, started))
    }

    /// A running job ended: its partitions leave the count.
    pub fn end(&mut self, entry: &JobEntry) {
        if self.running.remove(&entry.id).is_some() {
            self.partitions_running -= entry.partitions;
        }
    }

    /// Takes a queued job out (cancelled before it started).
    pub fn remove_queued(&mut self, job_id: &str) {
        self.heap.retain(|q| q.entry.id != job_id);
    }

    /// When a job started, if it is running.
    pub fn started(&self, job_id: &str) -> Option<Instant> {
        self.running.get(job_id).map(|r| r.started)
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.heap.len() + self.running.len()
    }

    pub fn nothing_running(&self) -> bool {
        self.running.is_empty()
    }

    /// Every job queued or running, queued first.
    pub fn ids(&self) -> Vec<String> {
        self.heap.iter().map(|q| q.entry.id.clone()).chain(self.running.keys().cloned()).collect()
    }

    /// The running job the engine knows as `engine_job`.
    pub fn running_engine_job(&self, engine_job: u64) -> Option<&JobEntry> {
        self.running.values().map(|r| &*r.entry).find(|e| e.engine_job() == Some(engine_job))
    }

    /// Jobs of `circuit` running now.
    pub fn running_for(&self, circuit: CircuitId) -> usize {
        self.running.values().filter(|r| r.entry.circuit == circuit).count()
    }

    /// Whether any job of `circuit` is queued or running.
    pub fn has_circuit(&self, circuit: CircuitId) -> bool {
        self.heap.iter().any(|q| q.entry.circuit == circuit) || self.running_for(circuit) > 0
    }

    /// (`KIND/PRIORITY`, pending, running) per proof kind and priority (the proto's
    /// names, e.g. `WINNING_POST/CRITICAL`), kinds in the proto's order, priorities highest
    /// first: GetStatus's queues.
    pub fn counts_by_kind(&self) -> Vec<(String, u32, u32)> {
        let mut out = Vec::with_capacity(FAMILIES.len() * PRIORITIES.len());
        for family in FAMILIES {
            for p in PRIORITIES {
                let (pending, running) = self.count(|e| e.priority == p && e.circuit.family == family);
                out.push((format!("{}/{}", family.proof_kind_name(), p.as_str_name()), pending, running));
            }
        }
        out
    }

    /// (priority name, pending, running) per priority, highest first.
    pub fn counts(&self) -> Vec<(&'static str, u32, u32)> {
        PRIORITIES
            .iter()
            .map(|&p| {
                let (pending, running) = self.count(|e| e.priority == p);
                (p.as_str_name(), pending, running)
            })
            .collect()
    }

    /// (queued, running) jobs that `here` selects.
    fn count(&self, here: impl Fn(&JobEntry) -> bool) -> (u32, u32) {
        let pending = self.heap.iter().filter(|q| here(&q.entry)).count() as u32;
        let running = self.running.values().filter(|r| here(&r.entry)).count() as u32;
        (pending, running)
    }
}

/// Whether a job of `priority` and `partitions` may start with `running` partitions at the
/// engine: while fewer than `slots`; or, above every running job's priority, while the
/// engine holds at most `slots + overtake_max` ([`JobQueue::start_next`]).
fn may_start(
    running: usize,
    (slots, overtake_max): (usize, usize),
    mut running_priorities: impl Iterator<Item = i32>,
    priority: i32,
    partitions: usize,
) -> bool {
    running < slots
        || (running_priorities.all(|p| p < priority) && running + partitions <= slots + overtake_max)
}

#[cfg(test)]
mod tests {
    use super::may_start;

    #[test]
    fn a_higher_job_overtakes_within_the_engine_queue_and_an_equal_one_waits() {
        let (normal, high, critical) = (2, 3, 4);
        // Room in the slots: anyone starts.
        assert!(may_start(1, (2, 16), [normal].into_iter(), normal, 1));
        // A 10-partition PoRep fills 4 slots: another NORMAL waits, a CRITICAL starts.
        assert!(!may_start(10, (4, 16), [normal].into_iter(), normal, 1));
        assert!(may_start(10, (4, 16), [normal].into_iter(), critical, 1));
        // Not above every running job: it waits.
        assert!(!may_start(11, (4, 16), [normal, critical].into_iter(), high, 1));
        // Never beyond the engine's queue.
        assert!(!may_start(20, (4, 16), [normal].into_iter(), critical, 1));
        assert!(may_start(19, (4, 16), [normal].into_iter(), critical, 1));
    }
}
