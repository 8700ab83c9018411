//! Benchmark workloads shared by `benches/` and the `arenaprove bench-*` commands.
//! Each workload measures its baseline in the same run and reports the ratio.
pub mod alloc;
pub mod ntt;
pub mod prove;
pub mod sector;
pub mod synth;

use crate::engine::pipeline::{Level, Span};

/// A timeline's spans grouped by name, in order of first appearance: (name, level, each
/// span's duration in ns).
pub fn spans_by_name(spans: &[Span]) -> Vec<(&'static str, Level, Vec<u64>)> {
    let mut out: Vec<(&'static str, Level, Vec<u64>)> = Vec::new();
    for s in spans {
        match out.iter_mut().find(|(n, _, _)| *n == s.name) {
            Some((_, _, d)) => d.push(s.dur_ns),
            None => out.push((s.name, s.level, vec![s.dur_ns])),
        }
    }
    out
}

/// The median: the middle sample, or the mean of the two middle ones (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => s[n / 2],
        _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The upper median: the sample at index `len / 2` once sorted, always one that was
/// measured (the figure synth and the CLI's timelines report; NaN when empty).
pub fn upper_median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}
