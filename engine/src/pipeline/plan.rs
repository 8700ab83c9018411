//! [`MemoryPlan`]: what the engine reserves at start, as a named sum of its consumers.

use arenaprove_circuits::Shape;

use crate::groth16::prover::{PoolPlan, ProofShape};

const SCALAR_BYTES: usize = 32;

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
    /// The plan for `slots` partitions in flight of (the largest of) `shapes`.
    pub fn for_shapes(shapes: &[Shape], slots: usize) -> MemoryPlan {
        let max = |f: &dyn Fn(&Shape) -> usize| shapes.iter().map(f).max().unwrap_or(0);
        let domain = max(&|s| s.domain_size);
        let witness = max(&|s| s.inputs.max(s.aux).max(1));
        let density_words = max(&|s| s.aux_density_words().max(s.input_density_words()).max(1));
        let prover = shapes
            .iter()
            .map(|s| PoolPlan::for_shape(&ProofShape::of_circuit(s), slots))
            .max_by_key(|p| p.slab_bytes)
            .unwrap_or(PoolPlan { slab_bytes: SCALAR_BYTES, slab_count: PoolPlan::SLABS_PER_PROOF * slots });
        MemoryPlan {
            slots,
            terms: vec![
                // Each slot: a, b, c evaluations, padded to the NTT domain (NTTs run in place).
                PlanTerm {
                    pool: "abc",
                    what: "a, b, c evaluations (domain-sized)",
                    slab_bytes: domain * SCALAR_BYTES,
                    count: 3 * slots,
                },
                // Each slot: input and aux assignments.
                PlanTerm {
                    pool: "witness",
                    what: "input + aux assignments",
                    slab_bytes: witness * SCALAR_BYTES,
                    count: 2 * slots,
                },
                // Each slot: a_aux, b_input, b_aux density bitmaps.
                PlanTerm {
                    pool: "density",
                    what: "density bitmaps",
                    slab_bytes: density_words * 8,
                    count: 3 * slots,
                },
                // The prover: twiddles + h scalars (prove_start), L/A/B split vectors (finalize).
                PlanTerm {
                    pool: "prove.scalars",
                    what: "NTT twiddles, h and split vectors",
                    slab_bytes: prover.slab_bytes,
                    count: prover.slab_count,
                },
            ],
        }
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
