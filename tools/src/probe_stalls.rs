//! `arenaprove probe-stalls`: how often one plain memory write stalls on this machine,
//! with no engine code in the loop.
//!
//! Why it exists: on the 2-core development VM, about 1% of slab handbacks took 100-190 µs
//! while the handback itself is a few atomics. This probe writes one byte per page, page
//! after page, with a busy-wait between writes (the thread never sleeps), and counts the
//! writes that took longer than `--stall-ns`. The pages are touched before timing starts,
//! so a stall here is neither a page fault nor a context switch (both are counted and
//! printed): on a VM it is the hypervisor taking the write. It runs over three backings:
//! a heap buffer, an arena region on 4 KiB pages, and an arena region on huge pages.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use arenaprove::arena::{Ledger, RegionConfig, SlabPool, SlabPoolConfig};
use serde::Serialize;

const PAGE: usize = 4096;

#[derive(clap::Args)]
pub struct Args {
    /// Distinct pages written in turn.
    #[arg(long, default_value_t = 100)]
    pub pages: usize,
    /// Timed writes per backing.
    #[arg(long, default_value_t = 3000)]
    pub writes: usize,
    /// Busy-wait between writes, µs (each page is written every pages x gap µs).
    #[arg(long, default_value_t = 1000)]
    pub gap_us: u64,
    /// A write slower than this counts as a stall, ns.
    #[arg(long, default_value_t = 20_000)]
    pub stall_ns: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Backing {
    backing: &'static str,
    writes: usize,
    stalls: usize,
    stall_rate: f64,
    max_ns: u64,
    p50_ns: u64,
    minor_faults: u64,
    context_switches: u64,
}

#[derive(Serialize)]
struct Report {
    pages: usize,
    gap_us: u64,
    stall_ns: u64,
    backings: Vec<Backing>,
    /// Stall rate of the heap buffer over that of the huge-page region (the baseline is the
    /// heap, measured in the same run).
    heap_over_huge: f64,
}

fn switches() -> u64 {
    match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD) {
        Ok(u) => (u.voluntary_context_switches() + u.involuntary_context_switches()) as u64,
        Err(_) => 0,
    }
}

fn probe(backing: &'static str, buf: &mut [u8], a: &Args) -> Backing {
    for page in buf.chunks_mut(PAGE) {
        page[0] = 1;
    }
    let gap = Duration::from_micros(a.gap_us);
    let mut lat = Vec::with_capacity(a.writes);
    let (flt0, sw0) = (arenaprove::arena::ledger::page_faults().0, switches());
    for i in 0..a.writes {
        let at = (i % a.pages) * PAGE + 64;
        let t = Instant::now();
        let byte = black_box(&mut buf[at]);
        *byte = byte.wrapping_add(1);
        lat.push(t.elapsed().as_nanos() as u64);
        let until = Instant::now() + gap;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    let (flt1, sw1) = (arenaprove::arena::ledger::page_faults().0, switches());
    let stalls = lat.iter().filter(|&&ns| ns > a.stall_ns).count();
    let max_ns = lat.iter().copied().max().unwrap_or(0);
    Backing {
        backing,
        writes: a.writes,
        stalls,
        stall_rate: stalls as f64 / a.writes.max(1) as f64,
        max_ns,
        p50_ns: crate::common::quantile_u64(&mut lat, 0.5),
        minor_faults: flt1 - flt0,
        context_switches: sw1 - sw0,
    }
}

fn region_probe(backing: &'static str, huge_pages: bool, a: &Args) -> Result<Backing> {
    let ledger = Ledger::unlimited();
    let region = RegionConfig { huge_pages, ..RegionConfig::default() };
    let pool =
        SlabPool::new(SlabPoolConfig::new(backing, a.pages * PAGE, 1).with_region(region), &ledger, None)?;
    let mut lease = pool.try_lease(a.pages * PAGE)?;
    Ok(probe(backing, lease.bytes_mut(), a))
}

pub fn run(a: Args) -> Result<()> {
    if a.pages == 0 || a.writes == 0 {
        bail!("--pages and --writes must be at least 1");
    }
    let mut heap = vec![0u8; a.pages * PAGE];
    let backings = vec![
        probe("heap", &mut heap, &a),
        region_probe("region-4k", false, &a)?,
        region_probe("region-huge", true, &a)?,
    ];
    let heap_over_huge = backings[0].stall_rate / backings[2].stall_rate.max(1.0 / a.writes as f64);
    let report = Report { pages: a.pages, gap_us: a.gap_us, stall_ns: a.stall_ns, backings, heap_over_huge };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "probe-stalls: {} pages, one write every {} µs, stall = a write over {} ns",
        a.pages, a.gap_us, a.stall_ns
    );
    for b in &report.backings {
        println!(
            "  {:<12} {:>5} writes: {:>4} stalls ({:.2}%), p50 {} ns, max {} ns; {} minor faults, {} context switches",
            b.backing,
            b.writes,
            b.stalls,
            b.stall_rate * 100.0,
            b.p50_ns,
            b.max_ns,
            b.minor_faults,
            b.context_switches
        );
    }
    println!(
        "  heap stall rate / huge-page stall rate: {:.1}x (huge-page stalls floored at 1)",
        report.heap_over_huge
    );
    Ok(())
}
