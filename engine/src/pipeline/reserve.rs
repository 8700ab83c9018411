//! Where a partition's memory comes from: the engine's reserved pools (slab mode), or
//! fresh mappings per partition (the baseline), and the circuit kinds' backends over them.

use std::sync::Arc;

use arenaprove_arena::{Ledger, RegionConfig};
use arenaprove_circuits::{ArenaAssignment, AssignmentPools};

use super::config::{CircuitSpec, EngineConfig};
use super::plan::EngineMemory;
use crate::backend::Backend;
use crate::groth16::{Groth16Error, PreparedVerifyingKey, ProofShape, ProverMemory};

/// A circuit kind the engine serves, with its prepared verifying key.
pub(super) struct Kind {
    pub spec: CircuitSpec,
    pub pvk: PreparedVerifyingKey,
    /// Slab mode: the backend over the engine's pools. Fresh mode: `None` (each partition
    /// builds its own).
    pub backend: Option<Arc<dyn Backend>>,
    /// Slab mode with a backend that computes a, b, c from the kind's recording: its
    /// partitions lease the witness only.
    pub witness_only: bool,
    /// Slab mode, a precompiled kind whose backend reads a, b, c only in the h stage: its
    /// partitions lease them when they compute their products.
    pub late_abc: Option<arenaprove_circuits::LateAbc>,
}

/// The engine's memory, by mode.
pub(super) enum SlotMemory {
    /// Everything reserved at start, lent per partition (the design).
    Slab(EngineMemory),
    /// The baseline: fresh, un-faulted mappings per partition, unmapped at its end.
    Fresh,
}

/// Storage of one in-flight partition: the assignment, plus (fresh mode) the pools and
/// prover it was made from, which are dropped, i.e. unmapped, with it.
pub(super) struct Held {
    pub witness: ArenaAssignment,
    pub fresh: Option<(AssignmentPools, Arc<dyn Backend>)>,
}

impl Held {
    /// The backend that proves this partition.
    pub fn backend(&self, kind: &Kind) -> Arc<dyn Backend> {
        match &self.fresh {
            Some((_, b)) => b.clone(),
            None => kind.backend.clone().expect("slab mode has a backend per kind"),
        }
    }
}

impl SlotMemory {
    /// The memory of one partition of `kind`.
    pub fn held(&self, config: &EngineConfig, kind: &Kind) -> Result<Held, Groth16Error> {
        let shape = &kind.spec.shape;
        match self {
            SlotMemory::Slab(mem) => {
                let witness = if kind.witness_only {
                    ArenaAssignment::witness_only(&mem.assign, shape)?
                } else if let Some(late) = &kind.late_abc {
                    ArenaAssignment::witness_then_abc(&mem.assign, shape, late.clone())?
                } else {
                    ArenaAssignment::new(&mem.assign, shape)?
                };
                Ok(Held { witness, fresh: None })
            }
            SlotMemory::Fresh => {
                // The reference stack's way: fresh mappings for this partition alone, its
                // twiddles computed for it.
                let ledger = Ledger::unlimited();
                let region = RegionConfig { prefault: false, huge_pages: false, ..config.region.clone() };
                let pools = AssignmentPools::for_shape(shape, 1, &ledger, region.clone())?;
                let params = kind.spec.params.clone();
                let memory = ProverMemory::reserve(&ProofShape::of_params(&params), 1, &ledger, region)?;
                let prover = config.backend.build(params, None, memory)?;
                Ok(Held { witness: ArenaAssignment::new(&pools, shape)?, fresh: Some((pools, prover)) })
            }
        }
    }
}
