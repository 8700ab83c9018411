//! Per-job timelines: nested timers recorded as tracing spans *and* as plain records, so a
//! job's report can line up kernel, backend call, pipeline stage, queue wait and handback
//! without three timers lined up by hand (the reference stack found a 10 s gap that way).
//!
//! Three levels nest: a pipeline stage (host clock) holds backend calls (host clock), and a
//! call that ran on a GPU holds its device time (GPU events), recorded as a `gpu_*` span
//! ending where the call ends (the call waits for its device work before returning).
//! [`Timeline::gaps`] is a stage's outer timer minus its calls.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How deep a timer sits: outer levels contain inner ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A pipeline stage (`synthesize`, `prove_start`, `finalize`, `handback`) or a queue wait.
    Stage,
    /// A backend call inside a stage (`ntt_h`, `msm_l`, ...).
    Call,
    /// Device time inside a call (`gpu_ntt_h`, `gpu_msm_l`, ...), from GPU events.
    Kernel,
}

/// The kernel-level span name of a backend call's device time.
pub fn device_span_name(call: &str) -> &'static str {
    match call {
        "ntt_h" => "gpu_ntt_h",
        "msm_h" => "gpu_msm_h",
        "msm_l" => "gpu_msm_l",
        "msm_a" => "gpu_msm_a",
        "msm_b_g1" => "gpu_msm_b_g1",
        "msm_b_g2" => "gpu_msm_b_g2",
        _ => "gpu",
    }
}

/// One timed interval of one partition.
#[derive(Clone, Debug)]
pub struct Span {
    pub name: &'static str,
    pub level: Level,
    pub job_id: u64,
    pub partition: u32,
    /// Small integer naming the engine thread that ran it (for the trace's `tid`).
    pub thread: u32,
    /// Nanoseconds since the engine's epoch.
    pub start_ns: u64,
    pub dur_ns: u64,
}

/// The process-wide time origin of all spans (so spans of different jobs line up).
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

pub fn ns_since_epoch(t: Instant) -> u64 {
    t.saturating_duration_since(epoch()).as_nanos() as u64
}

/// Which job, partition and engine thread a span belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Who {
    pub job_id: u64,
    pub partition: u32,
    pub thread: u32,
}

/// Collects spans of one job; cheap to clone and share between the pipeline's threads.
#[derive(Clone, Default, Debug)]
pub struct Timeline {
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Timeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records an interval that ran from `start` for `dur`.
    pub fn record(&self, span: Span) {
        self.spans.lock().unwrap_or_else(|p| p.into_inner()).push(span);
    }

    /// Records an interval of `who` that ran from `start` for `dur`.
    pub fn record_interval(&self, name: &'static str, level: Level, who: Who, start: Instant, dur: Duration) {
        self.record(Span {
            name,
            level,
            job_id: who.job_id,
            partition: who.partition,
            thread: who.thread,
            start_ns: ns_since_epoch(start),
            dur_ns: dur.as_nanos() as u64,
        });
    }

    /// Records `calls` as intervals laid end to end from `start` (the inner timers a
    /// backend reports as durations only): `(name, wall, device)`. A nonzero device time
    /// is recorded too, as a kernel-level span ending where its call ends (capped at the
    /// call: device time measured by events never exceeds the wait for it).
    pub fn record_calls(&self, who: Who, start: Instant, calls: &[(&'static str, Duration, Duration)]) {
        let mut at = start;
        for &(name, d, device) in calls {
            self.record_interval(name, Level::Call, who, at, d);
            if !device.is_zero() {
                let device = device.min(d);
                self.record_interval(device_span_name(name), Level::Kernel, who, at + (d - device), device);
            }
            at += d;
        }
    }

    pub fn spans(&self) -> Vec<Span> {
        let mut v = self.spans.lock().unwrap_or_else(|p| p.into_inner()).clone();
        v.sort_by_key(|s| (s.start_ns, s.level));
        v
    }

    /// For each stage span, the part of its duration not covered by its inner call spans
    /// (same partition, starting inside it): the time nobody accounted for.
    pub fn gaps(&self) -> Vec<StageGap> {
        let spans = self.spans();
        let mut out = Vec::new();
        for s in spans.iter().filter(|s| s.level == Level::Stage) {
            let end = s.start_ns + s.dur_ns;
            let inner_ns: u64 = spans
                .iter()
                .filter(|c| {
                    c.level == Level::Call
                        && c.partition == s.partition
                        && c.job_id == s.job_id
                        && c.start_ns >= s.start_ns
                        && c.start_ns + c.dur_ns <= end
                })
                .map(|c| c.dur_ns)
                .sum();
            if inner_ns > 0 {
                out.push(StageGap {
                    stage: s.name,
                    partition: s.partition,
                    outer_ns: s.dur_ns,
                    inner_ns,
                    gap_ns: s.dur_ns.saturating_sub(inner_ns),
                });
            }
        }
        out
    }
}

/// A stage's outer timer against the sum of its inner timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageGap {
    pub stage: &'static str,
    pub partition: u32,
    pub outer_ns: u64,
    pub inner_ns: u64,
    pub gap_ns: u64,
}

impl StageGap {
    /// The gap as a percentage of the stage's outer timer.
    pub fn percent(&self) -> f64 {
        if self.outer_ns == 0 {
            0.0
        } else {
            100.0 * self.gap_ns as f64 / self.outer_ns as f64
        }
    }
}

/// Writes spans as Chrome trace-event JSON (the "X" complete-event form), which Perfetto
/// and chrome://tracing open. `pid` is the job, `tid` the engine thread.
pub fn chrome_trace_json(spans: &[Span]) -> String {
    let mut out = String::from("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    for (i, s) in spans.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&format!(
            "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3},\"dur\":{:.3},\"pid\":{},\"tid\":{},\"args\":{{\"partition\":{}}}}}",
            s.name,
            match s.level {
                Level::Stage => "stage",
                Level::Call => "call",
                Level::Kernel => "kernel",
            },
            s.start_ns as f64 / 1e3,
            s.dur_ns as f64 / 1e3,
            s.job_id,
            s.thread,
            s.partition
        ));
    }
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_subtract_inner_calls() {
        let t = Timeline::new();
        let base = epoch() + Duration::from_millis(1);
        let record = |name, level, partition, from_us, dur_us| {
            t.record_interval(
                name,
                level,
                Who { job_id: 1, partition, thread: 0 },
                base + Duration::from_micros(from_us),
                Duration::from_micros(dur_us),
            )
        };
        record("prove_start", Level::Stage, 0, 0, 100);
        record("ntt_h", Level::Call, 0, 5, 40);
        record("msm_h", Level::Call, 0, 50, 30);
        // Another partition's call must not count.
        record("msm_h", Level::Call, 1, 10, 30);
        let g = t.gaps();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].outer_ns, 100_000);
        assert_eq!(g[0].inner_ns, 70_000);
        assert_eq!(g[0].gap_ns, 30_000);
    }

    #[test]
    fn device_times_nest_at_the_end_of_their_calls_and_do_not_count_as_calls() {
        let t = Timeline::new();
        let who = Who { job_id: 2, partition: 0, thread: 1 };
        let t0 = epoch() + Duration::from_millis(3);
        t.record_interval("finalize", Level::Stage, who, t0, Duration::from_micros(100));
        let us = Duration::from_micros;
        t.record_calls(
            who,
            t0,
            &[("msm_l", us(40), us(30)), ("proof", us(50), Duration::ZERO), ("msm_a", us(5), us(9))],
        );
        let spans = t.spans();
        let kernels: Vec<&Span> = spans.iter().filter(|s| s.level == Level::Kernel).collect();
        assert_eq!(kernels.len(), 2, "one per call with device time");
        let call = |n: &str| spans.iter().find(|s| s.name == n && s.level == Level::Call).unwrap().clone();
        for (k, c) in kernels.iter().zip([call("msm_l"), call("msm_a")]) {
            assert_eq!(k.start_ns + k.dur_ns, c.start_ns + c.dur_ns, "{} ends with its call", k.name);
            assert!(k.dur_ns <= c.dur_ns);
        }
        assert_eq!(kernels[0].name, "gpu_msm_l");
        assert_eq!(kernels[0].dur_ns, 30_000);
        assert_eq!(kernels[1].dur_ns, 5_000, "capped at its call");
        // Gaps count calls only: 100 - (40 + 50 + 5).
        let g = t.gaps();
        assert_eq!((g.len(), g[0].gap_ns), (1, 5_000));
        assert!((g[0].percent() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn chrome_trace_is_valid_json_shape() {
        let t = Timeline::new();
        t.record_interval(
            "synthesize",
            Level::Stage,
            Who { job_id: 7, partition: 3, thread: 2 },
            epoch(),
            Duration::from_micros(12),
        );
        let json = chrome_trace_json(&t.spans());
        assert!(json.starts_with("{\"displayTimeUnit\""));
        assert!(json.contains("\"name\":\"synthesize\""));
        assert!(json.contains("\"pid\":7"));
        assert!(json.contains("\"tid\":2"));
        assert!(json.contains("\"partition\":3"));
        assert!(json.trim_end().ends_with("]}"));
    }
}
