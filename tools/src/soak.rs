//! `arenaprove soak`: N consecutive sectors through one long-lived engine; every proof
//! verified; memory, page faults, handback latency and throughput reported.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use arenaprove::arena::ledger::{page_faults, rss_bytes};
use arenaprove::arena::LedgerSnapshot;
use arenaprove::circuits::circuits::CircuitKind;
use arenaprove::engine::pipeline::{precompiled_native, AllocMode, Job, JobHandle, ShutdownMode, Span};
use serde::Serialize;

use crate::common;

#[derive(clap::Args)]
pub struct Args {
    /// Sectors to prove back to back.
    #[arg(long, default_value_t = 20)]
    pub sectors: usize,
    #[arg(long, default_value_t = 2)]
    pub partitions: usize,
    /// Target constraints per partition.
    #[arg(long, default_value_t = 4096)]
    pub constraints: usize,
    #[arg(long, default_value = "sector")]
    pub circuit: CircuitKind,
    /// slab: the arena (reserved once, handed back by reset); fresh: new mappings per
    /// partition, unmapped when done (the reference stack's way; the baseline).
    #[arg(long, default_value = "slab")]
    pub alloc: AllocMode,
    #[arg(long, default_value_t = 2)]
    pub slots: usize,
    /// Prover backend: cpu, or gpu (CUDA; falls back to cpu, saying so, without a GPU).
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: common::BackendChoice,
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Synthesize through the circuit's recording (made once, cached beside the
    /// parameters): each partition computes its witness alone, and the products a, b, c come
    /// from the recording (on the device with `--backend gpu`, where a slot holds only the
    /// witness on the host). Absent parameters are written from the recording section by
    /// section, their points made by the backend: what a full-size circuit (~130M
    /// constraints, ~47 GB of parameters) needs on a 128 GiB host.
    #[arg(long)]
    pub precompiled: bool,
    /// One final JSON object on stdout instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Draws RSS and per-sector time over the run (SVG).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Memory the run may use (engine slabs + params): bytes (or with KiB/MiB/GiB), or
    /// auto (MemAvailable). A plan above it is refused before anything is generated.
    #[arg(long, default_value = "auto")]
    pub memory_limit: common::MemoryLimit,
}

#[derive(Serialize)]
pub struct SoakReport {
    pub circuit: String,
    pub alloc: String,
    pub sectors: usize,
    pub partitions: usize,
    pub constraints: usize,
    pub proofs_ok: u64,
    pub proofs_failed: u64,
    pub rss_start_bytes: u64,
    pub rss_warm_bytes: u64,
    pub rss_end_bytes: u64,
    /// Peak RSS of the measured phase: from the recorder's start (engine started,
    /// parameters loaded) to the end. The kernel's high-water mark is reset there
    /// (`/proc/self/clear_refs`), so a parameter generation or load before it is not in it.
    pub rss_peak_bytes: u64,
    /// Peak RSS before the measured phase (parameter generation or loading, engine start),
    /// reported apart.
    pub setup_peak_rss_bytes: u64,
    /// Whether the high-water mark could be reset (else `rss_peak_bytes` includes setup).
    pub peak_reset: bool,
    pub rss_end_vs_warm: f64,
    pub warmup_sectors: usize,
    pub minflt_per_partition: f64,
    pub regions_after_freeze: usize,
    /// Handback: one slab going back to its pool (every lease of the run; the ledger's
    /// histogram, so p50/p99 are bucket upper bounds). `null` in fresh mode, which has no
    /// pool to hand back to: what it pays instead is in `partition_release_ns_*`.
    pub handback_ns_p50: Option<u64>,
    pub handback_ns_p99: Option<u64>,
    pub handback_ns_max: Option<u64>,
    /// Everything one partition held, released at once by the finalizer (timeline span
    /// `handback`, after warm-up): in slab mode its leases, in fresh mode its mappings.
    pub partition_release_ns_p50: u64,
    pub partition_release_ns_p99: u64,
    pub partition_release_ns_max: u64,
    /// Proofs per minute over the first and last tenth of the sectors.
    pub throughput_first_tenth: f64,
    pub throughput_last_tenth: f64,
    pub wall_s: f64,
    pub reserved_bytes: usize,
    /// Peak RSS the memory plan predicts (RSS before params were loaded + resident params
    /// + reserved regions + transient heap per slot); slab mode only.
    pub plan_peak_rss_bytes: Option<u64>,
    /// `(measured peak - predicted) / predicted`, in percent.
    pub plan_peak_rss_error_pct: Option<f64>,
    /// Median of each pipeline stage's spans after warm-up, in ms (wait_slot, synthesize,
    /// wait_prove, prove_start, finalize, handback, ...): where slab and fresh differ.
    pub stage_p50_ms: std::collections::BTreeMap<String, f64>,
    /// Seconds per sector after warm-up: from the last warm-up sector's completion to the
    /// last sector's, over the sectors between (`null` when every sector was warm-up).
    pub seconds_per_sector_steady: Option<f64>,
    /// `filecoin soak --timing-only`: random C1s of the real shape and shape-only parameters,
    /// so the proofs were made but cannot verify (and were not checked). False elsewhere.
    pub timing_only: bool,
    /// GPU backends: the fraction of the measured phase each GPU held an operation (summed
    /// over GPUs, divided by their count); `null` on the CPU.
    pub device_busy_fraction: Option<f64>,
    /// GPU backends: device memory in use at the end of the run (every GPU, total - free).
    pub device_memory_used_bytes: Option<u64>,
    /// GPU backends: seconds the GPUs were held per partition proven in the measured phase
    /// (summed over GPUs). Times partitions per sector, divided by the GPU count, it is the
    /// device-bound floor of seconds per sector, which a short run's `seconds_per_sector_steady`
    /// can undercut (the pipeline had a head start when the warm-up sector completed).
    pub device_seconds_per_partition: Option<f64>,
}

/// What a soak run records as sectors complete; `report` turns it into a [`SoakReport`].
/// Shared by `soak` and `filecoin soak`, so both report the same figures the same way.
pub struct SoakRecorder {
    sectors: usize,
    partitions: usize,
    warmup: usize,
    t0: Instant,
    rss_start: u64,
    setup_peak: u64,
    peak_reset: bool,
    /// Seconds since start at each sector's completion, and RSS then.
    done_at: Vec<f64>,
    rss_at: Vec<u64>,
    /// Every stage span's duration after warm-up, by name (`handback`: each partition's
    /// release).
    stage_ns: std::collections::BTreeMap<&'static str, Vec<u64>>,
    ok: u64,
    failed: u64,
    rss_warm: u64,
    flt_warm: u64,
    rss_end: u64,
    flt_end: u64,
}

impl SoakReport {
    /// Sets the plan's predicted peak RSS and the measured peak's error against it.
    pub fn set_plan_peak(&mut self, predicted: u64) {
        self.plan_peak_rss_bytes = Some(predicted);
        self.plan_peak_rss_error_pct =
            Some((self.rss_peak_bytes as f64 - predicted as f64) / predicted as f64 * 100.0);
    }
}

impl SoakRecorder {
    /// Starts the clock; warm-up is the first tenth of the sectors (at least one).
    /// Starts the measured phase: call it once the engine is up (parameters loaded). It
    /// notes the setup's peak RSS and resets the high-water mark.
    pub fn new(sectors: usize, partitions: usize, rss_start: u64) -> Self {
        let setup_peak = common::peak_rss_bytes();
        let peak_reset = common::reset_peak_rss();
        SoakRecorder {
            setup_peak,
            peak_reset,
            sectors,
            partitions,
            warmup: (sectors / 10).max(1).min(sectors),
            t0: Instant::now(),
            rss_start,
            done_at: Vec::with_capacity(sectors),
            rss_at: Vec::with_capacity(sectors),
            stage_ns: Default::default(),
            ok: 0,
            failed: 0,
            rss_warm: 0,
            flt_warm: 0,
            rss_end: 0,
            flt_end: 0,
        }
    }

    /// Seconds since the measured phase started.
    pub fn elapsed_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// Sectors completed so far.
    pub fn done(&self) -> usize {
        self.done_at.len()
    }

    /// One sector completed with `ok` / `failed` partition proofs and its timeline.
    pub fn sector_done(&mut self, ok: u64, failed: u64, spans: &[Span]) {
        self.ok += ok;
        self.failed += failed;
        if self.done_at.len() >= self.warmup {
            for (name, _, durs) in arenaprove::benchkit::spans_by_name(spans) {
                self.stage_ns.entry(name).or_default().extend(durs);
            }
        }
        self.done_at.push(self.t0.elapsed().as_secs_f64());
        self.rss_at.push(rss_bytes());
        if self.done_at.len() == self.warmup {
            self.rss_warm = *self.rss_at.last().expect("pushed above");
            self.flt_warm = page_faults().0;
        }
    }

    /// Takes the end-of-run RSS and fault counts (before the engine shuts down).
    pub fn stop(&mut self) {
        self.flt_end = page_faults().0;
        self.rss_end = rss_bytes();
    }

    /// The report, with the engine's ledger taken before shutdown.
    pub fn report(
        &mut self,
        circuit: String,
        alloc: String,
        constraints: usize,
        ledger: &LedgerSnapshot,
    ) -> SoakReport {
        let (n, parts, done_at) = (self.sectors, self.partitions, &self.done_at);
        // Fresh mode's per-partition pools keep ledgers of their own: this one saw no handback.
        let slabs = ledger.handbacks_total > 0;
        let tenth = (n / 10).max(1);
        let per_min = |from: usize, to: usize| -> f64 {
            // Sectors from..to (exclusive), timed from the completion before `from`.
            let start = if from == 0 { 0.0 } else { done_at[from - 1] };
            let secs = (done_at[to - 1] - start).max(1e-9);
            ((to - from) * parts) as f64 * 60.0 / secs
        };
        let after_warm_partitions = ((n - self.warmup) * parts).max(1);
        let mut no_release = Vec::new();
        let release_ns = self.stage_ns.get_mut("handback").unwrap_or(&mut no_release);
        SoakReport {
            circuit,
            alloc,
            sectors: n,
            partitions: parts,
            constraints,
            proofs_ok: self.ok,
            proofs_failed: self.failed,
            rss_start_bytes: self.rss_start,
            rss_warm_bytes: self.rss_warm,
            rss_end_bytes: self.rss_end,
            // VmHWM, but never below an RSS this run sampled (the kernel syncs its per-CPU
            // RSS counters lazily, so the two reads can differ by a few pages).
            rss_peak_bytes: self
                .rss_at
                .iter()
                .copied()
                .chain([self.rss_end, common::peak_rss_bytes()])
                .max()
                .unwrap_or(0),
            setup_peak_rss_bytes: self.setup_peak,
            peak_reset: self.peak_reset,
            rss_end_vs_warm: self.rss_end as f64 / self.rss_warm.max(1) as f64,
            warmup_sectors: self.warmup,
            minflt_per_partition: if n > self.warmup {
                (self.flt_end - self.flt_warm) as f64 / after_warm_partitions as f64
            } else {
                f64::NAN
            },
            regions_after_freeze: ledger.regions_after_freeze,
            handback_ns_p50: slabs.then(|| ledger.handback_ns_p50()),
            handback_ns_p99: slabs.then(|| ledger.handback_ns_p99()),
            handback_ns_max: slabs.then_some(ledger.handback_ns_max),
            partition_release_ns_p50: common::quantile_u64(release_ns, 0.5),
            partition_release_ns_p99: common::quantile_u64(release_ns, 0.99),
            partition_release_ns_max: release_ns.iter().copied().max().unwrap_or(0),
            throughput_first_tenth: per_min(0, tenth),
            throughput_last_tenth: per_min(n - tenth, n),
            wall_s: self.t0.elapsed().as_secs_f64(),
            reserved_bytes: ledger.reserved_bytes,
            plan_peak_rss_bytes: None,
            plan_peak_rss_error_pct: None,
            seconds_per_sector_steady: (n > self.warmup)
                .then(|| (done_at[n - 1] - done_at[self.warmup - 1]) / (n - self.warmup) as f64),
            timing_only: false,
            device_busy_fraction: None,
            device_memory_used_bytes: None,
            device_seconds_per_partition: None,
            stage_p50_ms: self
                .stage_ns
                .iter()
                .map(|(n, d)| {
                    let ms: Vec<f64> = d.iter().map(|&ns| ns as f64 / 1e6).collect();
                    (n.to_string(), arenaprove::benchkit::median(&ms))
                })
                .collect(),
        }
    }
}

/// Runs `sectors` sectors, two in flight so the pipeline never drains between them:
/// `submit(k)` starts sector `k`; `finish` waits for the oldest and records it in `rec`.
/// Shared by `soak` and `filecoin soak`.
pub fn drive<P>(
    rec: &mut SoakRecorder,
    sectors: usize,
    quiet: bool,
    mut submit: impl FnMut(usize) -> Result<P>,
    mut finish: impl FnMut(P, &mut SoakRecorder) -> Result<()>,
) -> Result<()> {
    let bar = common::bar(quiet, sectors as u64, "sectors");
    let mut in_flight = VecDeque::new();
    let mut next = 0usize;
    while rec.done() < sectors {
        while next < sectors && in_flight.len() < 2 {
            in_flight.push_back(submit(next)?);
            next += 1;
        }
        finish(in_flight.pop_front().expect("a sector in flight"), rec)?;
        match &bar {
            Some(b) => b.inc(1),
            // No bar (--json): one line per sector on stderr, so a long run that is stopped
            // still says how far it got.
            None => eprintln!("sector {}/{sectors} done at {:.1} s", rec.done(), rec.elapsed_s()),
        }
    }
    rec.stop();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(())
}

pub fn run(a: Args) -> Result<()> {
    if a.sectors == 0 || a.partitions == 0 {
        bail!("--sectors and --partitions must be at least 1");
    }
    let quiet = a.json;
    let rss_start = rss_bytes();
    let (shape, _, limit) = common::guard_test_circuit_with(
        "soak",
        a.circuit,
        a.constraints,
        a.slots,
        a.params.as_deref(),
        a.memory_limit,
        a.precompiled.then_some(a.backend),
    )?;
    let recording = match a.precompiled {
        true => Some(common::recording_for(a.circuit, a.constraints, &shape)?),
        false => None,
    };
    let generation = match &recording {
        Some(pc) => common::Generation::FromRecording {
            recording: pc,
            products: arenaprove_tools::backend::fixed_base_source(a.backend),
        },
        None => common::Generation::InMemory,
    };
    let loaded = common::params_for_with(a.circuit, a.constraints, a.params.as_deref(), quiet, generation)?;
    let engine = common::engine_with(
        a.circuit,
        &loaded,
        a.slots,
        a.alloc,
        &limit,
        common::backend_factory(a.backend),
        recording.clone(),
    )?;

    let mut rec = SoakRecorder::new(a.sectors, a.partitions, rss_start);
    let submit = |k: usize| -> Result<JobHandle> {
        let parts = (0..a.partitions)
            .map(|p| {
                common::circuit(a.circuit, a.constraints, k as u64 + 1, p).map(|c| match &recording {
                    Some(pc) => precompiled_native(c, pc.clone()),
                    None => common::partition_circuit(c),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(engine.submit(Job::new(a.circuit.to_string(), parts))?)
    };
    drive(&mut rec, a.sectors, quiet, submit, |handle, rec| {
        let out = handle.wait()?;
        let (mut ok, mut failed) = (0u64, 0u64);
        for p in &out.partitions {
            match p {
                Ok(p) if p.verified => ok += 1,
                Ok(_) => failed += 1,
                Err(e) => {
                    failed += 1;
                    eprintln!("sector {}: {e}", rec.done() + 1);
                }
            }
        }
        rec.sector_done(ok, failed, &out.spans);
        Ok(())
    })?;
    let ledger = engine.ledger();
    // The recording's file pages count too (mapped; read by the host products or uploaded
    // once to the device), as in `filecoin soak`.
    let recording_bytes = recording.as_ref().map_or(0, |pc| pc.bytes());
    let predicted = (engine.memory_plan().predicted_peak_rss(rss_start as usize) + recording_bytes) as u64;
    let report_engine = engine.shutdown(ShutdownMode::Drain);
    let mut report = rec.report(
        a.circuit.to_string(),
        format!("{:?}", a.alloc).to_lowercase(),
        loaded.shape.constraints,
        &ledger,
    );
    if report_engine.slabs_outstanding != 0 || !report_engine.deinit.is_clean() {
        bail!("not every slab came back at shutdown: {}", report_engine.deinit);
    }
    if a.alloc == AllocMode::Slab {
        report.set_plan_peak(predicted);
    }
    if let Some(path) = &a.plot {
        plot(path, &rec.done_at, &rec.rss_at)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "soak: {} sectors x {} partitions of {} ({} constraints), alloc = {}",
            report.sectors, report.partitions, report.circuit, report.constraints, report.alloc
        );
        print_report(&report, "proofs verified");
    }
    if report.proofs_failed > 0 {
        bail!("{} proofs failed", report.proofs_failed);
    }
    Ok(())
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

/// The report's body (the caller prints its own header line); `proofs` labels the
/// verification line ("proofs verified", "verify_seal").
pub fn print_report(r: &SoakReport, proofs: &str) {
    println!("  {proofs:<20} {} ok, {} failed", r.proofs_ok, r.proofs_failed);
    println!(
        "  RSS                  start {:.1} MiB, warm {:.1} MiB (after {} sectors), end {:.1} MiB ({:+.2}%), peak {:.1} MiB",
        mib(r.rss_start_bytes),
        mib(r.rss_warm_bytes),
        r.warmup_sectors,
        mib(r.rss_end_bytes),
        (r.rss_end_vs_warm - 1.0) * 100.0,
        mib(r.rss_peak_bytes)
    );
    println!(
        "  setup                peak {:.1} MiB before the measured phase (params generated or loaded, engine start){}",
        mib(r.setup_peak_rss_bytes),
        if r.peak_reset { "; reported apart" } else { "; the high-water mark could not be reset: it is in the peak" }
    );
    if let (Some(p), Some(e)) = (r.plan_peak_rss_bytes, r.plan_peak_rss_error_pct) {
        println!("  plan                 predicted peak {:.1} MiB; measured {e:+.1}% off", mib(p));
    }
    println!("  page faults          {:.1} minor faults per partition after warm-up", r.minflt_per_partition);
    println!("  regions after freeze {}", r.regions_after_freeze);
    match (r.handback_ns_p50, r.handback_ns_p99, r.handback_ns_max) {
        (Some(p50), Some(p99), Some(max)) => println!(
            "  handback             per slab (ledger): p50 <= {p50} ns, p99 <= {p99} ns, max {max} ns"
        ),
        _ => println!("  handback             none (fresh: no pool; see release)"),
    }
    println!(
        "  partition release    all a partition held (finalizer thread): p50 {} ns, p99 {} ns, max {} ns",
        r.partition_release_ns_p50, r.partition_release_ns_p99, r.partition_release_ns_max
    );
    println!(
        "  throughput           {:.1} proofs/min (first tenth), {:.1} proofs/min (last tenth); {:.1} s wall",
        r.throughput_first_tenth, r.throughput_last_tenth, r.wall_s
    );
    if let Some(s) = r.seconds_per_sector_steady {
        println!("  per sector           {s:.2} s after the {} warm-up sector(s)", r.warmup_sectors);
    }
    if let Some(f) = r.device_busy_fraction {
        println!(
            "  device               busy {:.1}% of the measured phase (idle {:.1}%)",
            f * 100.0,
            (1.0 - f) * 100.0
        );
    }
    if let Some(d) = r.device_seconds_per_partition {
        println!(
            "  device floor         {d:.2} s held per partition: a sector of {} partitions needs {:.1} s of device time",
            r.partitions,
            d * r.partitions as f64
        );
    }
    if let Some(b) = r.device_memory_used_bytes {
        println!("  device memory        {:.1} MiB in use at the end", mib(b));
    }
}

fn plot(path: &std::path::Path, done_at: &[f64], rss_at: &[u64]) -> Result<()> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(300);
    let n = done_at.len();
    let rss: Vec<f64> = rss_at.iter().map(|b| mib(*b)).collect();
    let (rmin, rmax) = rss.iter().fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    let pad = ((rmax - rmin) * 0.1).max(1.0);
    let mut c = ChartBuilder::on(&upper)
        .caption("RSS after each sector (MiB)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(1usize..n.max(2), (rmin - pad)..(rmax + pad))?;
    c.configure_mesh().x_desc("sector").draw()?;
    c.draw_series(LineSeries::new(rss.iter().enumerate().map(|(i, v)| (i + 1, *v)), &BLUE))?;
    let per: Vec<f64> =
        done_at.iter().enumerate().map(|(i, t)| t - if i == 0 { 0.0 } else { done_at[i - 1] }).collect();
    let tmax = per.iter().cloned().fold(0.0, f64::max) * 1.1 + 1e-3;
    let mut c = ChartBuilder::on(&lower)
        .caption("time per sector (s)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(1usize..n.max(2), 0.0..tmax)?;
    c.configure_mesh().x_desc("sector").draw()?;
    c.draw_series(LineSeries::new(per.iter().enumerate().map(|(i, v)| (i + 1, *v)), &RED))?;
    root.present()?;
    Ok(())
}
