//! GetStatus and GetMetrics: the daemon's state read under its lock; each GPU's activity
//! (what it works for, never waiting for a device) under it too, and each GPU's memory
//! after it, on a blocking thread (that query waits for the device operation in flight,
//! which must hold up neither submissions nor the async runtime).
use super::daemon::Daemon;
use super::metrics::{self, Gauges};
use super::pb;
use super::queue::JobQueue;
use crate::backend::{GpuActivity, GpusInfo};

/// A GPU's (ordinal, name, job id, proof kind of the operation it runs now).
type GpuRow = (u32, String, String, String);

impl Daemon {
    /// GetStatus: one entry per GPU of the engine, with the job and proof kind of the
    /// operation it runs now (empty when idle).
    pub async fn status(&self) -> pb::GetStatusResponse {
        let (mut response, gpus) = self.status_now();
        if let Some((info, rows)) = gpus {
            let query = info.mem.clone();
            let mem = tokio::task::spawn_blocking(move || query()).await.ok().flatten().unwrap_or_default();
            response.gpus = rows
                .into_iter()
                .enumerate()
                .map(|(i, (ordinal, name, job, kind))| {
                    let (free, total) = mem.get(i).copied().flatten().unwrap_or((0, 0));
                    pb::GpuStatus {
                        ordinal,
                        name,
                        vram_total_bytes: total,
                        vram_free_bytes: free,
                        current_job_id: job,
                        current_proof_kind: kind,
                    }
                })
                .collect();
        }
        response
    }

    /// GetStatus without the GPUs' memory, read under the lock; the GPUs and what each
    /// works for now.
    fn status_now(&self) -> (pb::GetStatusResponse, Option<(GpusInfo, Vec<GpuRow>)>) {
        let inner = self.inner();
        let g = inner.lock();
        let (completed, failed) = inner.metrics.totals();
        let ledger = g.engines.running.as_ref().map(|r| r.c2.engine().ledger());
        let loaded_srs = g
            .engines
            .loaded
            .iter()
            .map(|(id, l)| pb::SrsStatus {
                circuit_id: id.name().to_string(),
                tier: pb::srs_status::Tier::Hot as i32,
                size_bytes: l.size_bytes,
                ref_count: g.queue.running_for(*id) as u32,
            })
            .collect();
        let queues = g
            .queue
            .counts_by_kind()
            .into_iter()
            .map(|(proof_kind, pending, in_progress)| pb::QueueStatus { proof_kind, pending, in_progress })
            .collect();
        let response = pb::GetStatusResponse {
            gpus: Vec::new(),
            loaded_srs,
            queues,
            total_proofs_completed: completed,
            total_proofs_failed: failed,
            uptime_seconds: inner.started.elapsed().as_secs(),
            pinned_memory_bytes: ledger.as_ref().map_or(0, |l| l.reserved_bytes as u64),
            pinned_memory_limit_bytes: inner.config.memory_limit_bytes as u64,
        };
        let gpus = g.engines.running.as_ref().and_then(|r| r.gpus.clone()).map(|info| {
            let each = (info.activity)().unwrap_or_default();
            let rows = each.iter().map(|a| gpu_row(a, &g.queue)).collect();
            (info, rows)
        });
        (response, gpus)
    }

    /// GetMetrics.
    pub fn metrics_text(&self) -> String {
        let inner = self.inner();
        let g = inner.lock();
        let engine = g.engines.running.as_ref().map(|r| r.c2.engine());
        let ledger = engine.map(|e| e.ledger());
        let gpus = g.engines.running.as_ref().and_then(|r| r.gpus.as_ref()).and_then(|i| (i.activity)());
        let gauges = Gauges {
            gpus: gpus.unwrap_or_default(),
            uptime_s: inner.started.elapsed().as_secs(),
            queues: g.queue.counts(),
            plan_bytes: engine.map_or(0, |e| e.memory_plan().total_bytes() as u64),
            reserved_bytes: ledger.as_ref().map_or(0, |l| l.reserved_bytes as u64),
            leased_bytes: ledger.as_ref().map_or(0, |l| l.leased_bytes as u64),
            leased_bytes_hwm: ledger.as_ref().map_or(0, |l| l.leased_bytes_hwm as u64),
            limit_bytes: inner.config.memory_limit_bytes as u64,
            slabs_outstanding: engine.map_or(0, |e| e.slabs_outstanding() as u64),
            handback_ns_max: ledger.as_ref().map_or(0, |l| l.handback_ns_max),
            rss_bytes: metrics::rss_bytes(),
        };
        drop(g);
        inner.metrics.render(&gauges)
    }

    /// The memory plan of the running engine, and how each circuit is synthesized, as text.
    pub fn memory_plan_text(&self) -> String {
        let g = self.inner().lock();
        let Some(running) = g.engines.running.as_ref() else {
            return "no engine (no parameters loaded)\n".into();
        };
        let mut text = format!("engine sizes: {}\n", running.sizes.why);
        text.push_str(&running.c2.engine().memory_plan().to_string());
        for (id, l) in &g.engines.loaded {
            text.push_str(&format!("{id}: synthesis through {}\n", l.circuit.describe()));
        }
        text
    }
}

/// A GPU's (ordinal, name, job id, proof kind): the daemon's job whose partition the GPU
/// works for now, or empty strings when it is idle (or works outside the daemon's jobs).
fn gpu_row(a: &GpuActivity, queue: &JobQueue) -> GpuRow {
    let job = a.working_for.as_ref().and_then(|tag| queue.running_engine_job(tag.job));
    let (id, kind) = match job {
        Some(e) => (e.id.clone(), e.circuit.family.proof_kind_name().to_string()),
        None => (String::new(), String::new()),
    };
    (a.ordinal, a.name.clone(), id, kind)
}
