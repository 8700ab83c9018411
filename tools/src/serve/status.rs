//! GetStatus and GetMetrics: the daemon's state read under its lock, and the GPU's memory
//! read after it, on a blocking thread (the query waits for the device operation in
//! flight, which must hold up neither submissions nor the async runtime).
use super::daemon::Daemon;
use super::metrics::{self, Gauges};
use super::pb;
use crate::backend::GpuInfo;

impl Daemon {
    /// GetStatus.
    pub async fn status(&self) -> pb::GetStatusResponse {
        let (mut response, gpu, running) = self.status_now();
        if let Some(gpu) = gpu {
            let query = gpu.mem.clone();
            let mem = tokio::task::spawn_blocking(move || query()).await.ok().flatten();
            let (free, total) = mem.unwrap_or((0, 0));
            response.gpus.push(pb::GpuStatus {
                ordinal: gpu.ordinal,
                name: gpu.name.clone(),
                vram_total_bytes: total,
                vram_free_bytes: free,
                // Every job the engine has in flight runs on this GPU.
                current_job_id: running.join(","),
                current_proof_kind: if running.is_empty() {
                    String::new()
                } else {
                    "POREP_SEAL_COMMIT".into()
                },
            });
        }
        response
    }

    /// GetStatus without the GPU, read under the lock; the GPU and the running jobs.
    fn status_now(&self) -> (pb::GetStatusResponse, Option<GpuInfo>, Vec<String>) {
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
            .counts()
            .into_iter()
            .map(|(p, pending, running)| pb::QueueStatus {
                proof_kind: format!("POREP_SEAL_COMMIT/{p}"),
                pending,
                in_progress: running,
            })
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
        (response, g.engines.running.as_ref().and_then(|r| r.gpu.clone()), g.queue.running_ids())
    }

    /// GetMetrics.
    pub fn metrics_text(&self) -> String {
        let inner = self.inner();
        let g = inner.lock();
        let engine = g.engines.running.as_ref().map(|r| r.c2.engine());
        let ledger = engine.map(|e| e.ledger());
        let gauges = Gauges {
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
