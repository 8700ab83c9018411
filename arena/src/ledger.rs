//! [`Ledger`]: what the arena has reserved and lent, and what it cost.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::ArenaError;

/// Handback latency histogram: bucket `i` counts latencies in `[2^i, 2^(i+1))` ns.
pub const LATENCY_BUCKETS: usize = 40;

/// Accounting shared by every pool of one engine.
#[derive(Debug)]
pub struct Ledger {
    limit_bytes: usize,
    frozen: AtomicBool,
    reserved_bytes: AtomicUsize,
    regions: AtomicUsize,
    regions_after_freeze: AtomicUsize,
    refused_after_freeze: AtomicUsize,
    leased_bytes: AtomicUsize,
    leased_bytes_hwm: AtomicUsize,
    leases_total: AtomicU64,
    handbacks_total: AtomicU64,
    handback_ns_max: AtomicU64,
    handback_hist: [AtomicU64; LATENCY_BUCKETS],
    /// Minor page faults of the process when `freeze()` was first called (u64::MAX: never).
    minflt_at_freeze: AtomicU64,
}

/// A consistent-enough copy of the ledger's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerSnapshot {
    pub limit_bytes: usize,
    pub frozen: bool,
    pub reserved_bytes: usize,
    pub regions: usize,
    pub regions_after_freeze: usize,
    pub refused_after_freeze: usize,
    pub leased_bytes: usize,
    pub leased_bytes_hwm: usize,
    /// Leases not yet handed back (leases_total - handbacks_total).
    pub leases_out: usize,
    pub leases_total: u64,
    pub handbacks_total: u64,
    pub handback_ns_max: u64,
    pub handback_hist: Vec<u64>,
}

impl LedgerSnapshot {
    /// Every lease came back.
    pub fn balanced(&self) -> bool {
        self.leases_out == 0 && self.leased_bytes == 0
    }
    /// Median handback latency (upper bound of its histogram bucket), ns.
    pub fn handback_ns_p50(&self) -> u64 {
        self.handback_ns_quantile(0.50)
    }
    /// 99th percentile handback latency (upper bound of its histogram bucket), ns.
    pub fn handback_ns_p99(&self) -> u64 {
        self.handback_ns_quantile(0.99)
    }
    /// Upper bound of the bucket holding quantile `q` (0..=1) of handback latency, in ns.
    pub fn handback_ns_quantile(&self, q: f64) -> u64 {
        let total: u64 = self.handback_hist.iter().sum();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.handback_hist.iter().enumerate() {
            seen += n;
            if seen >= want {
                return (1u64 << (i + 1)).min(self.handback_ns_max.max(1));
            }
        }
        self.handback_ns_max
    }
}

impl Ledger {
    /// A ledger that refuses to reserve more than `limit_bytes` in all.
    pub fn new(limit_bytes: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            limit_bytes,
            frozen: AtomicBool::new(false),
            reserved_bytes: AtomicUsize::new(0),
            regions: AtomicUsize::new(0),
            regions_after_freeze: AtomicUsize::new(0),
            refused_after_freeze: AtomicUsize::new(0),
            leased_bytes: AtomicUsize::new(0),
            leased_bytes_hwm: AtomicUsize::new(0),
            leases_total: AtomicU64::new(0),
            handbacks_total: AtomicU64::new(0),
            handback_ns_max: AtomicU64::new(0),
            handback_hist: std::array::from_fn(|_| AtomicU64::new(0)),
            minflt_at_freeze: AtomicU64::new(u64::MAX),
        })
    }

    /// No limit beyond the machine's (for tests and benches).
    pub fn unlimited() -> Arc<Ledger> {
        Self::new(usize::MAX)
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    /// Charges a new region; refused when frozen or over the limit.
    pub fn try_reserve_region(&self, what: &str, bytes: usize) -> Result<(), ArenaError> {
        if self.frozen.load(Ordering::SeqCst) {
            self.refused_after_freeze.fetch_add(1, Ordering::SeqCst);
            return Err(ArenaError::Frozen { what: what.into(), requested_bytes: bytes });
        }
        let mut cur = self.reserved_bytes.load(Ordering::SeqCst);
        loop {
            let next = cur.checked_add(bytes).filter(|n| *n <= self.limit_bytes).ok_or_else(|| {
                ArenaError::OverLimit {
                    what: what.into(),
                    requested_bytes: bytes,
                    reserved_bytes: cur,
                    limit_bytes: self.limit_bytes,
                }
            })?;
            match self.reserved_bytes.compare_exchange(cur, next, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break,
                Err(actual) => cur = actual,
            }
        }
        self.regions.fetch_add(1, Ordering::SeqCst);
        if self.frozen.load(Ordering::SeqCst) {
            // Lost a race with freeze(): still counted, so a test sees it.
            self.regions_after_freeze.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Called when a region is unmapped (shutdown only).
    pub fn release_region(&self, bytes: usize) {
        let prev = self.reserved_bytes.fetch_sub(bytes, Ordering::SeqCst);
        debug_assert!(prev >= bytes, "ledger: released more than reserved");
        self.regions.fetch_sub(1, Ordering::SeqCst);
    }

    /// After this, reserving a region fails with [`ArenaError::Frozen`] (and is counted).
    /// The first call also records the process's minor page faults, for
    /// [`Ledger::minor_faults_since_freeze`].
    pub fn freeze(&self) {
        let _ = self.minflt_at_freeze.compare_exchange(
            u64::MAX,
            page_faults().0,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        self.frozen.store(true, Ordering::SeqCst);
    }

    /// Minor page faults of the whole process since the first `freeze()` (None before).
    /// Process-wide: faults of unrelated threads count too.
    pub fn minor_faults_since_freeze(&self) -> Option<u64> {
        let at = self.minflt_at_freeze.load(Ordering::SeqCst);
        (at != u64::MAX).then(|| page_faults().0.saturating_sub(at))
    }
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    pub(crate) fn on_lease(&self, bytes: usize) {
        let now = self.leased_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.leased_bytes_hwm.fetch_max(now, Ordering::Relaxed);
        self.leases_total.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn on_handback(&self, bytes: usize, latency_ns: u64) {
        self.leased_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.handbacks_total.fetch_add(1, Ordering::Relaxed);
        self.handback_ns_max.fetch_max(latency_ns, Ordering::Relaxed);
        let bucket = (63 - latency_ns.max(1).leading_zeros() as usize).min(LATENCY_BUCKETS - 1);
        self.handback_hist[bucket].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> LedgerSnapshot {
        // Handbacks first, so that the later read of leases has seen their leases too.
        let handbacks_total = self.handbacks_total.load(Ordering::SeqCst);
        let leases_total = self.leases_total.load(Ordering::SeqCst);
        LedgerSnapshot {
            limit_bytes: self.limit_bytes,
            frozen: self.is_frozen(),
            reserved_bytes: self.reserved_bytes.load(Ordering::SeqCst),
            regions: self.regions.load(Ordering::SeqCst),
            regions_after_freeze: self.regions_after_freeze.load(Ordering::SeqCst),
            refused_after_freeze: self.refused_after_freeze.load(Ordering::SeqCst),
            leased_bytes: self.leased_bytes.load(Ordering::SeqCst),
            leased_bytes_hwm: self.leased_bytes_hwm.load(Ordering::SeqCst),
            leases_out: leases_total.saturating_sub(handbacks_total) as usize,
            leases_total,
            handbacks_total,
            handback_ns_max: self.handback_ns_max.load(Ordering::SeqCst),
            handback_hist: self.handback_hist.iter().map(|a| a.load(Ordering::SeqCst)).collect(),
        }
    }
}

/// Minor and major page faults of this process so far (getrusage(RUSAGE_SELF)).
/// (0, 0) under Miri, which has no getrusage.
pub fn page_faults() -> (u64, u64) {
    if cfg!(miri) {
        return (0, 0);
    }
    match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
        Ok(u) => (u.minor_page_faults() as u64, u.major_page_faults() as u64),
        Err(_) => (0, 0),
    }
}

/// Resident set size of this process now, from /proc/self/statm (0 where unavailable).
pub fn rss_bytes() -> u64 {
    if cfg!(miri) {
        return 0;
    }
    let Ok(s) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let pages: u64 = s.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    pages * 4096
}
