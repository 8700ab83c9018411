//! Per-job timelines: nested timers recorded as tracing spans *and* as plain records, so a
//! job's report can line up kernel, backend call, pipeline stage, queue wait and handback
//! without three timers lined up by hand (the reference stack found a 10 s gap that way).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How deep a timer sits: outer levels contain inner ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A pipeline stage (`synthesize`, `prove_start`, `finalize`, `handback`) or a queue wait.
    Stage,
    /// A backend call inside a stage (`ntt_h`, `msm_l`, ...).
    Call,
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
    /// backend reports as durations only).
    pub fn record_calls(&self, who: Who, start: Instant, calls: &[(&'static str, Duration)]) {
        let mut at = start;
        for &(name, d) in calls {
            self.record_interval(name, Level::Call, who, at, d);
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
