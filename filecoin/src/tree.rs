//! The Merkle tree shape of a sector's replica, which types the whole C2 stack of
//! filecoin-proofs (C1 output, vanilla proofs, circuit, parameter cache id, verifier):
//! 2 KiB, 8 MiB and 512 MiB sectors are `SectorShapeBase`, 32 GiB `SectorShapeSub8` and
//! 64 GiB `SectorShapeTop2` (filecoin-proofs' `constants`).
//!
//! This crate keeps one generic implementation per operation and dispatches on
//! [`TreeShape`] once, at the edge, with [`with_tree!`]; values typed by the tree live in
//! three-variant enums ([`crate::api::ShapedC1`], [`crate::circuit::SealCircuit`]) that
//! [`SealTree`] builds from the generic code. Every shape costs a monomorphisation of the
//! StackedDrg circuit at build time, which is the price of proving every size Curio sends.
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_proofs::constants::{DefaultPieceHasher, SectorShapeBase, SectorShapeSub8, SectorShapeTop2};
use filecoin_proofs::types::{FallbackPoStSectorProof, SealCommitPhase1Output, VanillaSealProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::StackedCircuit;
use storage_proofs_post::fallback::FallbackPoStCircuit;
use storage_proofs_update::{EmptySectorUpdateCircuit, PartitionProof};

use crate::api::ShapedC1;
use crate::circuit::{Challenges, SealCircuit};
use crate::post::{FallbackCircuit, PostVanilla};
use crate::snap::{SnapVanilla, UpdateCircuit};

/// Which of filecoin-proofs' tree shapes a sector size uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeShape {
    /// `SectorShapeBase` (2 KiB, 8 MiB, 512 MiB).
    Base,
    /// `SectorShapeSub8` (32 GiB).
    Sub8,
    /// `SectorShapeTop2` (64 GiB).
    Top2,
}

/// Runs `$body` with `$Tree` the tree type of `$shape` (a [`TreeShape`]).
macro_rules! with_tree {
    ($shape:expr, $Tree:ident => $body:expr) => {
        match $shape {
            $crate::tree::TreeShape::Base => {
                type $Tree = ::filecoin_proofs::constants::SectorShapeBase;
                $body
            }
            $crate::tree::TreeShape::Sub8 => {
                type $Tree = ::filecoin_proofs::constants::SectorShapeSub8;
                $body
            }
            $crate::tree::TreeShape::Top2 => {
                type $Tree = ::filecoin_proofs::constants::SectorShapeTop2;
                $body
            }
        }
    };
}
pub(crate) use with_tree;

/// Runs `$body` on the value inside a tree-shaped enum (variants `Base`, `Sub8`, `Top2`).
macro_rules! each_shape {
    ($value:expr, $Enum:ident, $v:ident => $body:expr) => {
        match $value {
            $Enum::Base($v) => $body,
            $Enum::Sub8($v) => $body,
            $Enum::Top2($v) => $body,
        }
    };
}
pub(crate) use each_shape;

/// A tree shape this crate proves: how its generic values enter the shaped enums.
pub trait SealTree: 'static + Sized + MerkleTreeTrait<Hasher = PoseidonHasher> {
    const SHAPE: TreeShape;
    fn c1(c1: SealCommitPhase1Output<Self>) -> ShapedC1;
    fn circuit(circuit: StackedCircuit<Self, DefaultPieceHasher>) -> SealCircuit;
    fn challenges(proofs: Vec<VanillaSealProof<Self>>) -> Challenges;
    fn post_circuit(circuit: FallbackPoStCircuit<Self>) -> FallbackCircuit;
    fn post_vanilla(proofs: Vec<FallbackPoStSectorProof<Self>>) -> PostVanilla;
    fn update_circuit(circuit: EmptySectorUpdateCircuit<Self>) -> UpdateCircuit;
    fn snap_vanilla(proofs: Vec<PartitionProof<Self>>) -> SnapVanilla;
}

macro_rules! seal_tree {
    ($Tree:ty, $Variant:ident) => {
        impl SealTree for $Tree {
            const SHAPE: TreeShape = TreeShape::$Variant;
            fn c1(c1: SealCommitPhase1Output<Self>) -> ShapedC1 {
                ShapedC1::$Variant(c1)
            }
            fn circuit(circuit: StackedCircuit<Self, DefaultPieceHasher>) -> SealCircuit {
                SealCircuit::$Variant(circuit)
            }
            fn challenges(proofs: Vec<VanillaSealProof<Self>>) -> Challenges {
                Challenges::$Variant(proofs)
            }
            fn post_circuit(circuit: FallbackPoStCircuit<Self>) -> FallbackCircuit {
                FallbackCircuit::$Variant(circuit)
            }
            fn post_vanilla(proofs: Vec<FallbackPoStSectorProof<Self>>) -> PostVanilla {
                PostVanilla::$Variant(proofs)
            }
            fn update_circuit(circuit: EmptySectorUpdateCircuit<Self>) -> UpdateCircuit {
                UpdateCircuit::$Variant(circuit)
            }
            fn snap_vanilla(proofs: Vec<PartitionProof<Self>>) -> SnapVanilla {
                SnapVanilla::$Variant(proofs)
            }
        }
    };
}
seal_tree!(SectorShapeBase, Base);
seal_tree!(SectorShapeSub8, Sub8);
seal_tree!(SectorShapeTop2, Top2);
