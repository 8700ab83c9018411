//! [`MemoryPlan`]: what the engine reserves at start, as a named sum of its consumers.

use arenaprove_circuits::{AssignmentPools, Shape};

use crate::groth16::prover::{PoolPlan, ProofShape};

/// One term of the plan: `count` slabs of `slab_bytes` for `what`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanTerm {
    pub pool: &'static str,
    pub what: &'static str,
    pub slab_bytes: usize,
    pub count: usize,
}

impl PlanTerm {
    pub fn bytes(&self) -> usize {
        self.slab_bytes * self.count
    }
}

/// Everything the engine reserves, known before the first job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    pub slots: usize,
    pub terms: Vec<PlanTerm>,
}

impl MemoryPlan {
    /// The plan for `slots` partitions in flight: assignment pools sized for the largest of
    /// `shapes` (shared by every kind), and one prover pool per kind (`shapes` lists the
    /// kinds), as `Engine::new` reserves them.
    pub fn for_shapes(shapes: &[Shape], slots: usize) -> MemoryPlan {
        let assignment = AssignmentPools::plan(&Shape::covering(shapes)).map(|p| PlanTerm {
            pool: p.name,
            what: p.what,
            slab_bytes: p.slab_bytes,
            count: p.slabs_per_assignment * slots,
        });
        let provers = shapes.iter().map(|s| {
            let p = PoolPlan::for_shape(&ProofShape::of_circuit(s), slots);
            PlanTerm {
                pool: "prove.scalars",
                what: "NTT twiddles, h and split vectors (per circuit kind)",
                slab_bytes: p.slab_bytes,
                count: p.slab_count,
            }
        });
        MemoryPlan { slots, terms: assignment.into_iter().chain(provers).collect() }
    }

    /// Slab bytes over all terms (each pool's region is rounded up to 2 MiB on top).
    pub fn total_bytes(&self) -> usize {
        self.terms.iter().map(|t| t.bytes()).sum()
    }

    /// Bytes per slot (the total over slots).
    pub fn slot_bytes(&self) -> usize {
        self.total_bytes() / self.slots.max(1)
    }
}

impl std::fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "memory plan: {} slots, {:.1} MiB in all",
            self.slots,
            self.total_bytes() as f64 / (1 << 20) as f64
        )?;
        for t in &self.terms {
            writeln!(
                f,
                "  {:<14} {:>4} x {:>10} B = {:>9.1} MiB  ({})",
                t.pool,
                t.count,
                t.slab_bytes,
                t.bytes() as f64 / (1 << 20) as f64,
                t.what
            )?;
        }
        Ok(())
    }
}
