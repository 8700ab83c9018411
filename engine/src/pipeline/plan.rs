//! [`MemoryPlan`]: everything the engine reserves, as a named sum of its consumers, and the
//! one place that reserves it ([`MemoryPlan::reserve`]): `Engine::new` builds its pools
//! from the plan, so the plan cannot drift from what is reserved.
//!
//! Per slot (one partition in flight), each slab sized for what it holds:
//!
//! | term | slabs per slot | slab size |
//! |---|---|---|
//! | `abc` | 3 | `max(domain, inputs + aux)` scalars: a, b, c; after h, the same slabs hold the L scalars and the A and B split vectors |
//! | `inputs` | 1 | `inputs` scalars |
//! | `aux` | 1 | `aux` scalars |
//! | `density` | 3 | one bit per variable |
//!
//! With a backend that proves from the witness (the GPU: a, b, c computed on the device
//! from each kind's recording, split vectors built there) and every kind precompiled, the
//! `abc` term is gone ([`MemoryPlan::without_host_abc`]): a slot is its witness alone.
//!
//! and once per engine: one twiddle table per distinct domain size (constant per domain),
//! plus what each backend holds beyond these pools ([`crate::backend::Backend::plan_terms`]).
//! h is computed and converted to bytes in place in `a`, so no proof needs a slab beyond
//! its slot's three `abc` slabs: `prove_start` hands a, b, c back, and `finalize` leases
//! three from the same pool. A slot's footprint is the maximum over its stages, and a slot
//! holds at most that at any moment, so `slots` x per-slot bytes is exact, not a bound.
//!
//! Pools are shared by every circuit kind the engine serves (sized for the covering shape).

use std::collections::BTreeMap;
use std::sync::Arc;

use arenaprove_arena::{
    ArenaError, Ledger, RegionConfig, SlabPool, SlabPoolConfig, VecPool, HUGE_PAGE_BYTES,
};
use arenaprove_circuits::{AssignmentPools, Shape};

use crate::groth16::{reserve_twiddles, twiddle_bytes, Groth16Error, ProofShape, ProverMemory, Twiddles};

/// Bytes of one scalar.
const SCALAR_BYTES: usize = 32;

/// Where a term's memory lives and how it scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Host slabs, `count` scales with the slots.
    PerSlot,
    /// Host slabs reserved once per engine.
    Shared,
    /// Host memory the engine does not reserve but holds (resident parameters).
    Resident,
    /// Transient heap of the CPU backend's MSMs (blst's bucket scratch).
    Heap,
    /// GPU memory (reported by a backend).
    Device,
}

/// One term of the plan: `count` slabs of `slab_bytes` for `what`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanTerm {
    pub pool: &'static str,
    pub what: String,
    pub slab_bytes: usize,
    pub count: usize,
    pub scope: Scope,
}

impl PlanTerm {
    pub fn bytes(&self) -> usize {
        self.slab_bytes * self.count
    }
    /// Bytes of the region that holds this term: slabs rounded to 2 MiB each way, as
    /// [`SlabPool`] carves them, plus the free bitmap (what the process really maps).
    pub fn region_bytes(&self) -> usize {
        match self.scope {
            Scope::PerSlot | Scope::Shared => {
                let cfg = SlabPoolConfig::new(self.pool, self.slab_bytes.max(1), self.count.max(1));
                cfg.region_bytes().map_or(usize::MAX, |b| b.next_multiple_of(HUGE_PAGE_BYTES))
            }
            Scope::Resident | Scope::Heap | Scope::Device => self.bytes(),
        }
    }
}

/// Everything the engine reserves, known before anything is reserved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    pub slots: usize,
    /// The shape the shared pools are sized for (the maximum of every kind's).
    pub covering: Shape,
    pub terms: Vec<PlanTerm>,
    /// Whether the reserved regions are `mlock`ed (then `locked_bytes` is all of them).
    pub mlock: bool,
    /// Distinct domain sizes, one twiddle table each.
    pub domains: Vec<usize>,
}

impl MemoryPlan {
    /// The plan for `slots` partitions in flight of circuits of `shapes` (one per kind).
    pub fn for_shapes(shapes: &[Shape], slots: usize) -> MemoryPlan {
        let covering = Shape::covering(shapes);
        let slots = slots.max(1);
        let [abc, inputs, aux, density] = AssignmentPools::plan(&covering);
        let mut terms = vec![
            PlanTerm {
                pool: abc.name,
                what: "a, b, c evaluations; after h: L scalars, A and B split vectors".into(),
                slab_bytes: abc_slab_bytes(&covering),
                count: abc.slabs_per_assignment * slots,
                scope: Scope::PerSlot,
            },
            PlanTerm {
                pool: inputs.name,
                what: inputs.what.into(),
                slab_bytes: inputs.slab_bytes,
                count: slots,
                scope: Scope::PerSlot,
            },
            PlanTerm {
                pool: aux.name,
                what: aux.what.into(),
                slab_bytes: aux.slab_bytes,
                count: slots,
                scope: Scope::PerSlot,
            },
            PlanTerm {
                pool: density.name,
                what: density.what.into(),
                slab_bytes: density.slab_bytes,
                count: density.slabs_per_assignment * slots,
                scope: Scope::PerSlot,
            },
        ];
        let domains = domains(shapes);
        for &domain in &domains {
            terms.push(PlanTerm {
                pool: "twiddles",
                what: format!("NTT twiddle table, domain 2^{}", domain.trailing_zeros()),
                slab_bytes: twiddle_bytes(domain),
                count: 1,
                scope: Scope::Shared,
            });
        }
        MemoryPlan { slots, covering, terms, mlock: false, domains }
    }

    /// Without the `abc` term: every kind's a, b, c are computed by the backend from its
    /// recording and its split vectors built there too
    /// ([`crate::BackendFactory::proves_from_witness`]), so a slot holds the witness alone
    /// on the host (inputs, aux, densities).
    pub fn without_host_abc(mut self) -> MemoryPlan {
        self.terms.retain(|t| t.pool != "abc");
        self
    }

    /// The `abc` term as `sets` sets shared by the slots: every kind either proves from the
    /// witness or leases a, b, c late ([`arenaprove_circuits::LateAbc`]: from its products
    /// to its h stage), so fewer sets than slots serve them.
    pub fn with_late_abc_sets(mut self, sets: usize) -> MemoryPlan {
        let slots = self.slots;
        for t in self.terms.iter_mut().filter(|t| t.pool == "abc") {
            let per_set = t.count / slots.max(1);
            t.count = per_set * sets.max(1);
            t.scope = Scope::Shared;
            t.what = format!(
                "a, b, c evaluations, leased at the products and handed back after h: {sets} set(s) for {slots} slot(s)"
            );
        }
        self
    }

    /// Whether the plan reserves a, b, c slabs on the host.
    pub fn host_abc(&self) -> bool {
        self.terms.iter().any(|t| t.pool == "abc")
    }

    /// Without host twiddle tables: for a backend whose NTTs do not read them (the GPU's
    /// tables live in its device arena). At a 2^27 domain a table is 2.25 GiB of host memory.
    pub fn without_host_twiddles(mut self) -> MemoryPlan {
        self.terms.retain(|t| t.pool != "twiddles");
        self.domains.clear();
        self
    }

    /// Adds the resident parameters (`bytes` per kind, as [`crate::ParamsMemory`] reports)
    /// and a backend's own terms.
    pub fn with_resident(mut self, what: &str, bytes: usize) -> MemoryPlan {
        self.terms.push(PlanTerm {
            pool: "params",
            what: what.into(),
            slab_bytes: bytes,
            count: 1,
            scope: Scope::Resident,
        });
        self
    }

    /// Adds a backend's terms. Heap terms are one shared thread pool's, so the largest
    /// one stands for all kinds (not their sum).
    pub fn with_terms(mut self, terms: impl IntoIterator<Item = PlanTerm>) -> MemoryPlan {
        for t in terms {
            match self.terms.iter_mut().find(|u| u.scope == Scope::Heap && t.scope == Scope::Heap) {
                Some(u) if u.bytes() < t.bytes() => *u = t,
                Some(_) => {}
                None => self.terms.push(t),
            }
        }
        self
    }

    fn sum(&self, keep: impl Fn(&PlanTerm) -> bool, f: impl Fn(&PlanTerm) -> usize) -> usize {
        self.terms.iter().filter(|t| keep(t)).map(f).sum()
    }

    /// Slab bytes the engine reserves on the host (per-slot and shared terms).
    pub fn total_bytes(&self) -> usize {
        self.sum(|t| matches!(t.scope, Scope::PerSlot | Scope::Shared), PlanTerm::bytes)
    }

    /// Bytes one slot adds.
    pub fn slot_bytes(&self) -> usize {
        self.sum(|t| t.scope == Scope::PerSlot, PlanTerm::bytes) / self.slots
    }

    /// Resident parameter bytes.
    pub fn resident_bytes(&self) -> usize {
        self.sum(|t| t.scope == Scope::Resident, PlanTerm::bytes)
    }

    /// GPU bytes (reported by backends).
    pub fn device_bytes(&self) -> usize {
        self.sum(|t| t.scope == Scope::Device, PlanTerm::bytes)
    }

    /// Host bytes mapped for the reserved terms (slabs rounded as pools carve them).
    pub fn region_bytes(&self) -> usize {
        self.sum(|t| matches!(t.scope, Scope::PerSlot | Scope::Shared), PlanTerm::region_bytes)
    }

    /// Bytes `mlock`ed when the plan's regions are locked.
    pub fn locked_bytes(&self) -> usize {
        if self.mlock {
            self.region_bytes()
        } else {
            0
        }
    }

    /// Peak resident memory this plan predicts for a process whose RSS was `base_rss_bytes`
    /// before the engine reserved anything and before parameters were loaded: the base,
    /// the resident parameters, every reserved region (pre-faulted, so resident), and the
    /// transient heap of the CPU MSMs ([`Scope::Heap`] terms).
    pub fn predicted_peak_rss(&self, base_rss_bytes: usize) -> usize {
        base_rss_bytes
            + self.resident_bytes()
            + self.region_bytes()
            + self.sum(|t| t.scope == Scope::Heap, PlanTerm::bytes)
    }

    /// Refuses a plan over `limit_bytes` (host: reserved + resident), with the plan and the
    /// limit in the message.
    pub fn check_fits(&self, limit_bytes: usize) -> Result<(), PlanError> {
        let need = self.region_bytes() + self.resident_bytes();
        if need > limit_bytes {
            return Err(PlanError::TooLarge { need_bytes: need, limit_bytes, plan: self.to_string() });
        }
        Ok(())
    }

    /// Reserves every host term: the assignment pools (shared by every kind) and one
    /// twiddle table per domain, charged to `ledger`, with `region` (its hook and mlock).
    pub fn reserve(&self, ledger: &Arc<Ledger>, region: &RegionConfig) -> Result<EngineMemory, Groth16Error> {
        let pool = |t: &PlanTerm| -> Result<Arc<SlabPool>, ArenaError> {
            SlabPool::new(
                SlabPoolConfig::new(t.pool, t.slab_bytes, t.count).with_region(region.clone()),
                ledger,
                None,
            )
        };
        let find =
            |name: &str| self.terms.iter().find(|t| t.pool == name).expect("plan has every assignment term");
        let abc = self.terms.iter().find(|t| t.pool == "abc").map(pool).transpose()?;
        let assign = AssignmentPools {
            abc,
            inputs: pool(find("inputs"))?,
            aux: pool(find("aux"))?,
            density: pool(find("density"))?,
            lc_terms: Arc::new(VecPool::new()),
        };
        // Twiddle tables are leased for the engine's life, like parameters: they are charged
        // to a ledger of their own so that the slot ledger balances at shutdown.
        let resident = Ledger::unlimited();
        let mut twiddles = BTreeMap::new();
        for &domain in &self.domains {
            twiddles.insert(domain, Arc::new(reserve_twiddles(domain, &resident, region.clone())?));
        }
        Ok(EngineMemory { assign, twiddles })
    }
}

/// The CPU MSMs' transient heap: blst's Pippenger gives each of its `threads` workers a
/// bucket scratch sized by the MSM's length, for G1 (the longest G1 MSM: H over the
/// domain, or L, A, B_G1) and for G2 (B_G2, over the B query only: the dense B columns,
/// often far fewer than the G1 MSMs' points). Both can be in flight (`prove_start` of one
/// partition beside `finalize` of another), and glibc keeps chunks below its mmap
/// threshold in the threads' arenas once touched.
pub fn msm_heap_term(g1_points_max: usize, g2_points: usize, threads: usize) -> PlanTerm {
    let g1 = blst_msm_scratch_bytes(g1_points_max, threads, G1_XYZZ_BYTES);
    let g2 = blst_msm_scratch_bytes(g2_points, threads, G2_XYZZ_BYTES);
    PlanTerm {
        pool: "heap",
        what: format!(
            "blst MSM bucket scratch, {threads} threads: G1 {g1_points_max} points, G2 {g2_points} points"
        ),
        slab_bytes: g1 + g2,
        count: 1,
        scope: Scope::Heap,
    }
}

/// blst's bucket point (xyzz coordinates) in G1 and G2.
const G1_XYZZ_BYTES: usize = 4 * 48;
const G2_XYZZ_BYTES: usize = 4 * 96;

/// Bytes of bucket scratch blst 0.3's threaded Pippenger (`MultiPoint::mult`) allocates
/// for an MSM of `npoints` over `threads` workers: each worker holds `xyzz << (window - 1)`
/// bytes, with the window chosen as blst's `pippenger_window_size` and `breakdown` choose
/// it for 255-bit scalars. (Mirrors blst's code; checked against measured peak RSS in
/// BENCHMARKS.md.)
pub fn blst_msm_scratch_bytes(npoints: usize, threads: usize, xyzz_bytes: usize) -> usize {
    const NBITS: usize = 255;
    let num_bits = |l: usize| (usize::BITS - l.leading_zeros()) as usize;
    if threads < 2 || npoints < 32 || npoints < threads {
        // Single-threaded or per-point paths: one scratch (or none) of the same order.
        return if threads < 2 { xyzz_bytes << (pippenger_window(npoints).max(1) - 1) } else { 0 };
    }
    let window = pippenger_window(npoints);
    let (mut nx, mut wnd) = (1usize, window);
    if NBITS > window * threads {
        wnd = num_bits(threads / 4);
        if window + wnd > 18 {
            wnd = window - wnd;
        } else {
            wnd = (NBITS / window).div_ceil(threads);
            wnd = if (NBITS / (window + 1)).div_ceil(threads) < wnd { window + 1 } else { window };
        }
    } else if window > 3 {
        nx = 2;
        wnd = window - 2;
        while wnd > 1 && (NBITS / wnd + 1) * nx < threads {
            nx += 1;
            wnd = window - num_bits(3 * nx / 2);
        }
        nx -= 1;
        wnd = window - num_bits(3 * nx / 2);
    }
    let ny = NBITS / wnd + 1;
    let wnd = NBITS / ny + 1;
    let workers = threads.min(nx * ny);
    workers * (xyzz_bytes << (wnd - 1))
}

/// blst 0.3's Rust `pippenger_window_size`.
fn pippenger_window(npoints: usize) -> usize {
    let wbits = (usize::BITS - npoints.leading_zeros()) as usize;
    if wbits > 13 {
        wbits - 4
    } else if wbits > 5 {
        wbits - 3
    } else {
        2
    }
}

/// The slab bytes of the `abc` pool: a, b, c are domain-sized; the split vectors that
/// reuse the slabs need up to `inputs + aux` scalars.
fn abc_slab_bytes(s: &Shape) -> usize {
    s.domain_size.max(s.inputs + s.aux).max(1) * SCALAR_BYTES
}

/// Distinct domain sizes of `shapes`, ascending.
fn domains(shapes: &[Shape]) -> Vec<usize> {
    let mut d: Vec<usize> = shapes.iter().map(|s| s.domain_size).collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// Why a plan was refused.
#[derive(Debug, Clone)]
pub enum PlanError {
    TooLarge { need_bytes: usize, limit_bytes: usize, plan: String },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::TooLarge { need_bytes, limit_bytes, plan } => write!(
                f,
                "the memory plan needs {need_bytes} bytes ({:.2} GiB), over the limit of {limit_bytes} bytes ({:.2} GiB):\n{plan}",
                *need_bytes as f64 / GIB,
                *limit_bytes as f64 / GIB
            ),
        }
    }
}

impl std::error::Error for PlanError {}

const GIB: f64 = (1u64 << 30) as f64;

/// What [`MemoryPlan::reserve`] made: the pools the engine's slots lease from.
pub struct EngineMemory {
    pub assign: AssignmentPools,
    /// One table per domain size, shared by every kind of that domain.
    pub twiddles: BTreeMap<usize, Arc<Twiddles>>,
}

impl EngineMemory {
    /// The memory a prover of `shape` proves from: split vectors in the `abc` pool, the
    /// domain's twiddle table where the plan has one (a backend with host twiddles).
    pub fn prover_memory(&self, shape: &ProofShape) -> ProverMemory {
        ProverMemory {
            scalars: self.assign.abc.clone(),
            twiddles: self.twiddles.get(&shape.domain_size).cloned(),
        }
    }

    /// The pools slots lease from (for the shutdown check).
    pub fn slot_pools(&self) -> Vec<&SlabPool> {
        self.assign.pools()
    }
}

impl std::fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: usize| b as f64 / (1 << 20) as f64;
        writeln!(
            f,
            "memory plan: {} slots; reserved {:.1} MiB ({:.1} MiB per slot + {:.1} MiB shared), resident params {:.1} MiB{}{}",
            self.slots,
            mib(self.region_bytes()),
            mib(self.slot_bytes()),
            mib(self.sum(|t| t.scope == Scope::Shared, PlanTerm::bytes)),
            mib(self.resident_bytes()),
            if self.device_bytes() > 0 { format!(", device {:.1} MiB", mib(self.device_bytes())) } else { String::new() },
            if self.mlock { format!(", locked {:.1} MiB", mib(self.locked_bytes())) } else { String::new() },
        )?;
        for t in &self.terms {
            let scope = match t.scope {
                Scope::PerSlot => "per-slot",
                Scope::Shared => "shared",
                Scope::Resident => "resident",
                Scope::Heap => "heap",
                Scope::Device => "device",
            };
            writeln!(
                f,
                "  {:<10} {:<8} {:>4} x {:>12} B = {:>10.1} MiB  ({})",
                t.pool,
                scope,
                t.count,
                t.slab_bytes,
                mib(t.bytes()),
                t.what
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// blst's choice for 2^21 points on 16 threads: window 16 for all 16 workers (worked
    /// by hand from blst 0.3.17's `breakdown`), so 16 x 192 B x 2^15 in G1.
    #[test]
    fn msm_scratch_follows_blsts_window_choice() {
        assert_eq!(blst_msm_scratch_bytes(1 << 21, 16, G1_XYZZ_BYTES), 16 * 192 * (1 << 15));
        assert_eq!(blst_msm_scratch_bytes(1 << 21, 16, G2_XYZZ_BYTES), 16 * 384 * (1 << 15));
        assert_eq!(blst_msm_scratch_bytes(10, 16, G1_XYZZ_BYTES), 0, "per-point path: no buckets");
        let t = msm_heap_term(1 << 21, 1 << 21, 16);
        assert_eq!(t.bytes(), 16 * (192 + 384) * (1 << 15));
    }

    /// The sector circuit at 2^22 constraints (domain 2^23; B query ~41% of aux, ~1.7M
    /// points): the G2 scratch follows the B query's length (window 16 on 16 workers),
    /// not H's (window 18 on 15 workers, 755 MB). Charging G2 at H's length over-predicted
    /// the measured peak RSS by 13.6% (BENCHMARKS.md, "The heap term, corrected").
    #[test]
    fn g2_scratch_follows_the_b_query_not_the_domain() {
        assert_eq!(blst_msm_scratch_bytes((1 << 23) - 1, 16, G1_XYZZ_BYTES), 15 * 192 * (1 << 17));
        assert_eq!(blst_msm_scratch_bytes(1_720_000, 16, G2_XYZZ_BYTES), 16 * 384 * (1 << 15));
        let t = msm_heap_term((1 << 23) - 1, 1_720_000, 16);
        assert_eq!(t.bytes(), 15 * 192 * (1 << 17) + 16 * 384 * (1 << 15));
        assert!(t.bytes() < msm_heap_term((1 << 23) - 1, (1 << 23) - 1, 16).bytes());
    }

    #[test]
    fn heap_terms_of_several_kinds_keep_the_largest() {
        let s = Shape { constraints: 100, inputs: 2, aux: 100, domain_size: 128 };
        let plan = MemoryPlan::for_shapes(&[s], 1)
            .with_terms([msm_heap_term(1 << 10, 1 << 10, 4)])
            .with_terms([msm_heap_term(1 << 14, 1 << 14, 4)])
            .with_terms([msm_heap_term(1 << 12, 1 << 12, 4)]);
        let heap: Vec<_> = plan.terms.iter().filter(|t| t.scope == Scope::Heap).collect();
        assert_eq!(heap.len(), 1);
        assert_eq!(heap[0].bytes(), msm_heap_term(1 << 14, 1 << 14, 4).bytes());
    }
}
