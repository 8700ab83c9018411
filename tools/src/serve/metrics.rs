//! Counters and histograms for `GetMetrics`, written in Prometheus' text exposition format.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::backend::GpuActivity;

/// Histogram bucket upper bounds, seconds: a 2 KiB proof is ~10 s on 2 cores, a 32 GiB one
/// minutes; queue waits range from 0 to hours.
const BUCKETS_S: [f64; 14] =
    [0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS_S.len()],
    count: u64,
    sum_s: f64,
}

impl Histogram {
    fn observe(&mut self, s: f64) {
        if let Some(i) = BUCKETS_S.iter().position(|&b| s <= b) {
            self.counts[i] += 1;
        }
        self.count += 1;
        self.sum_s += s;
    }
}

#[derive(Default)]
struct Data {
    /// (circuit, outcome) -> proofs.
    proofs: BTreeMap<(String, &'static str), u64>,
    /// gRPC code -> requests refused.
    refused: BTreeMap<&'static str, u64>,
    /// stage -> seconds.
    stages: BTreeMap<&'static str, Histogram>,
    /// (circuit, synthesis) -> proofs completed.
    synthesized: BTreeMap<(String, &'static str), u64>,
}

/// Everything `GetMetrics` reports besides the live gauges.
#[derive(Default)]
pub struct Metrics {
    data: Mutex<Data>,
}

/// Per-job durations, seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobSeconds {
    pub queue_wait: f64,
    pub synthesis: f64,
    pub prove: f64,
    pub total: f64,
}

/// Live figures read at scrape time.
pub struct Gauges {
    pub uptime_s: u64,
    /// Each GPU's activity (empty on the CPU backend).
    pub gpus: Vec<GpuActivity>,
    /// (priority name, pending, running).
    pub queues: Vec<(&'static str, u32, u32)>,
    pub plan_bytes: u64,
    pub reserved_bytes: u64,
    pub leased_bytes: u64,
    pub leased_bytes_hwm: u64,
    pub limit_bytes: u64,
    pub slabs_outstanding: u64,
    pub handback_ns_max: u64,
    pub rss_bytes: u64,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A job ended: `outcome` is completed, failed or cancelled; a completed one with its
    /// durations and which synthesis ran (`precompiled`, `generic`).
    pub fn job_done(
        &self,
        circuit: &str,
        outcome: &'static str,
        completed: Option<(JobSeconds, &'static str)>,
    ) {
        let mut d = self.lock();
        *d.proofs.entry((circuit.to_string(), outcome)).or_default() += 1;
        if let Some((s, synthesis)) = completed {
            *d.synthesized.entry((circuit.to_string(), synthesis)).or_default() += 1;
            d.stages.entry("queue_wait").or_default().observe(s.queue_wait);
            d.stages.entry("synthesis").or_default().observe(s.synthesis);
            d.stages.entry("prove").or_default().observe(s.prove);
            d.stages.entry("total").or_default().observe(s.total);
        }
    }

    /// A request was refused with this gRPC code.
    pub fn refused(&self, code: tonic::Code) {
        *self.lock().refused.entry(code_name(code)).or_default() += 1;
    }

    /// Totals (completed, failed).
    pub fn totals(&self) -> (u64, u64) {
        let d = self.lock();
        let sum = |o: &str| d.proofs.iter().filter(|((_, k), _)| *k == o).map(|(_, n)| n).sum::<u64>();
        (sum("completed"), sum("failed"))
    }

    /// The exposition text.
    pub fn render(&self, g: &Gauges) -> String {
        let d = self.lock();
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(w, "# HELP arenaprove_proofs_total Proof jobs ended, by circuit and outcome.");
        let _ = writeln!(w, "# TYPE arenaprove_proofs_total counter");
        for ((circuit, outcome), n) in &d.proofs {
            let _ = writeln!(w, "arenaprove_proofs_total{{circuit=\"{circuit}\",outcome=\"{outcome}\"}} {n}");
        }
        let _ = writeln!(
            w,
            "# HELP arenaprove_proofs_synthesized_total Proofs completed, by circuit and the synthesis that ran."
        );
        let _ = writeln!(w, "# TYPE arenaprove_proofs_synthesized_total counter");
        for ((circuit, synthesis), n) in &d.synthesized {
            let _ = writeln!(
                w,
                "arenaprove_proofs_synthesized_total{{circuit=\"{circuit}\",synthesis=\"{synthesis}\"}} {n}"
            );
        }
        let _ =
            writeln!(w, "# HELP arenaprove_requests_refused_total Requests refused, by gRPC status code.");
        let _ = writeln!(w, "# TYPE arenaprove_requests_refused_total counter");
        for (code, n) in &d.refused {
            let _ = writeln!(w, "arenaprove_requests_refused_total{{code=\"{code}\"}} {n}");
        }
        let _ = writeln!(
            w,
            "# HELP arenaprove_job_seconds Per-job durations: queue_wait, synthesis, prove, total."
        );
        let _ = writeln!(w, "# TYPE arenaprove_job_seconds histogram");
        for (stage, h) in &d.stages {
            let mut cumulative = 0;
            for (b, c) in BUCKETS_S.iter().zip(h.counts) {
                cumulative += c;
                let _ =
                    writeln!(w, "arenaprove_job_seconds_bucket{{stage=\"{stage}\",le=\"{b}\"}} {cumulative}");
            }
            let _ = writeln!(w, "arenaprove_job_seconds_bucket{{stage=\"{stage}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(w, "arenaprove_job_seconds_sum{{stage=\"{stage}\"}} {}", h.sum_s);
            let _ = writeln!(w, "arenaprove_job_seconds_count{{stage=\"{stage}\"}} {}", h.count);
        }
        let _ = writeln!(w, "# HELP arenaprove_queue_jobs Jobs by priority and state.");
        let _ = writeln!(w, "# TYPE arenaprove_queue_jobs gauge");
        for (priority, pending, running) in &g.queues {
            let _ =
                writeln!(w, "arenaprove_queue_jobs{{priority=\"{priority}\",state=\"pending\"}} {pending}");
            let _ =
                writeln!(w, "arenaprove_queue_jobs{{priority=\"{priority}\",state=\"running\"}} {running}");
        }
        let gauges = [
            ("arenaprove_uptime_seconds", "Seconds since the daemon started.", g.uptime_s),
            ("arenaprove_memory_plan_bytes", "Slab bytes the engine's memory plan reserves.", g.plan_bytes),
            ("arenaprove_ledger_reserved_bytes", "Bytes of regions reserved (ledger).", g.reserved_bytes),
            ("arenaprove_ledger_leased_bytes", "Slab bytes lent out now (ledger).", g.leased_bytes),
            (
                "arenaprove_ledger_leased_bytes_hwm",
                "High-water mark of lent bytes (ledger).",
                g.leased_bytes_hwm,
            ),
            ("arenaprove_ledger_limit_bytes", "What the engine may reserve.", g.limit_bytes),
            ("arenaprove_slabs_outstanding", "Slabs leased now (0 when idle).", g.slabs_outstanding),
            ("arenaprove_handback_ns_max", "Slowest slab handback (ledger), ns.", g.handback_ns_max),
            ("arenaprove_process_rss_bytes", "Resident set of the daemon.", g.rss_bytes),
        ];
        for (name, help, v) in gauges {
            let _ = writeln!(w, "# HELP {name} {help}");
            let _ = writeln!(w, "# TYPE {name} gauge");
            let _ = writeln!(w, "{name} {v}");
        }
        if !g.gpus.is_empty() {
            type Get = fn(&GpuActivity) -> String;
            let per_gpu: [(&str, &str, &str, Get); 3] = [
                ("arenaprove_gpu_busy", "gauge", "1 while a device operation holds the GPU.", |a| {
                    u8::from(a.busy).to_string()
                }),
                (
                    "arenaprove_gpu_operations_total",
                    "counter",
                    "Device operations finished on the GPU.",
                    |a| a.operations.to_string(),
                ),
                (
                    "arenaprove_gpu_busy_seconds_total",
                    "counter",
                    "Seconds the GPU was held by operations.",
                    |a| format!("{:.6}", a.busy_time.as_secs_f64()),
                ),
            ];
            for (name, kind, help, get) in per_gpu {
                let _ = writeln!(w, "# HELP {name} {help}");
                let _ = writeln!(w, "# TYPE {name} {kind}");
                for a in &g.gpus {
                    let label = a.name.replace('\\', "\\\\").replace('"', "\\\"");
                    let _ = writeln!(w, "{name}{{gpu=\"{}\",name=\"{label}\"}} {}", a.ordinal, get(a));
                }
            }
        }
        out
    }
}

/// The canonical name of a gRPC code.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

/// Resident set size of this process (Linux `/proc/self/statm`), 0 elsewhere.
pub fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    pages * 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        let s = JobSeconds { queue_wait: 0.02, synthesis: 3.0, prove: 7.0, total: 10.0 };
        m.job_done("porep-2k", "completed", Some((s, "precompiled")));
        m.job_done("porep-2k", "failed", None);
        m.refused(tonic::Code::InvalidArgument);
        let gpu = |ordinal, busy, operations| GpuActivity {
            ordinal,
            name: "NVIDIA H200".into(),
            busy,
            working_for: None,
            operations,
            busy_time: std::time::Duration::from_millis(1500),
        };
        let g = Gauges {
            gpus: vec![gpu(0, true, 7), gpu(1, false, 3)],
            uptime_s: 5,
            queues: vec![("critical", 1, 0)],
            plan_bytes: 1,
            reserved_bytes: 2,
            leased_bytes: 0,
            leased_bytes_hwm: 3,
            limit_bytes: 4,
            slabs_outstanding: 0,
            handback_ns_max: 9,
            rss_bytes: 10,
        };
        let text = m.render(&g);
        assert!(
            text.contains("arenaprove_proofs_total{circuit=\"porep-2k\",outcome=\"completed\"} 1"),
            "{text}"
        );
        assert!(text.contains("arenaprove_requests_refused_total{code=\"INVALID_ARGUMENT\"} 1"), "{text}");
        assert!(
            text.contains(
                "arenaprove_proofs_synthesized_total{circuit=\"porep-2k\",synthesis=\"precompiled\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("arenaprove_job_seconds_bucket{stage=\"prove\",le=\"5\"} 0"), "{text}");
        assert!(text.contains("arenaprove_job_seconds_bucket{stage=\"prove\",le=\"10\"} 1"), "{text}");
        assert!(text.contains("arenaprove_queue_jobs{priority=\"critical\",state=\"pending\"} 1"), "{text}");
        assert!(text.contains("arenaprove_gpu_busy{gpu=\"0\",name=\"NVIDIA H200\"} 1"), "{text}");
        assert!(text.contains("arenaprove_gpu_busy{gpu=\"1\",name=\"NVIDIA H200\"} 0"), "{text}");
        assert!(text.contains("arenaprove_gpu_operations_total{gpu=\"1\",name=\"NVIDIA H200\"} 3"), "{text}");
        assert!(
            text.contains("arenaprove_gpu_busy_seconds_total{gpu=\"0\",name=\"NVIDIA H200\"} 1.500000"),
            "{text}"
        );
        assert_eq!(m.totals(), (1, 1));
    }
}
