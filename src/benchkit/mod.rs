//! Benchmark workloads shared by `benches/` and the `arenaprove bench-*` commands.
//! Each workload measures its baseline in the same run and reports the ratio.
pub mod alloc;
pub mod prove;
pub mod sector;
pub mod synth;

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
