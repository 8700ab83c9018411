//! # arenaprove-circuits
//! Owns the prover's assignment (`ArenaAssignment`, a bellpepper-core 0.2
//! `ConstraintSystem` whose a, b, c, assignments and density bitmaps live in slabs), the
//! shape counter ([`ShapeCs`]), the heap baseline that mirrors bellperson 0.27
//! ([`HeapAssignment`]), native gadgets and the test circuits (`chain`, `sha`, `sector`).
//!
//! Invariants every assignment here keeps (bellperson 0.27's conventions, so proofs can be
//! compared byte for byte): ONE is input 0; after the circuit comes one constraint
//! `input_i * 0 = 0` per input; density bits are set exactly when a variable appears with a
//! non-zero merged coefficient (A: aux only; B: inputs and aux; C: none).
#![forbid(unsafe_code)]

pub mod arena;
pub mod circuits;
pub mod density;
pub mod error;
pub mod heap;
pub mod native;
pub mod precompiled;
pub mod shape;
pub mod witness;

pub use arena::{
    synthesize_arena, synthesize_native, ArenaAssignment, AssignmentPoolPlan, AssignmentPools, LateAbc,
};
pub use density::{Density, DensityBits};
pub use error::CircuitError;
pub use heap::{synthesize_heap, HeapAssignment};
pub use native::{NativeCircuit, NativeCs};
pub use precompiled::{
    record, record_native, synthesize_precompiled, synthesize_precompiled_native, Precompiled,
    PrecompiledError,
};
pub use shape::{shape_of, shape_of_native, Shape, ShapeCs};
pub use witness::{AbcRef, ProverWitness};
