//! A Merkle path check with the Poseidon-style 2-to-1 hash: from a leaf, each level
//! allocates its direction bit (booleanity), conditionally swaps with the sibling (one
//! constraint: `(sib - cur) * bit = left - cur`, so `left = bit ? sib : cur` and
//! `right = cur + sib - left`) and hashes. `1 + 1 + 358` constraints per level.

use bellpepper_core::Variable;
use blstrs::Scalar;

use super::poseidon::{hash2, hash2_native, Affine};
use super::{Bit, NativeCs};
use crate::CircuitError;

/// Constraints per level of [`merkle_root`] (sibling allocation adds none).
pub const CONSTRAINTS_PER_LEVEL: usize = 2 + super::poseidon::CONSTRAINTS_PER_HASH;

/// One level of a path: the sibling's value and whether the current node is the right
/// child.
#[derive(Clone, Copy, Debug)]
pub struct PathStep {
    pub sibling: Scalar,
    pub is_right: bool,
}

/// The root out of circuit.
pub fn merkle_root_native(leaf: Scalar, path: impl IntoIterator<Item = PathStep>) -> Scalar {
    path.into_iter().fold(leaf, |cur, s| {
        if s.is_right {
            hash2_native(s.sibling, cur)
        } else {
            hash2_native(cur, s.sibling)
        }
    })
}

/// Walks a path from `leaf` (a variable with its value) and returns the root variable and
/// value. Steps are drawn from `path` in order, so callers can generate them on the fly.
pub fn merkle_root<CS: NativeCs>(
    cs: &mut CS,
    leaf: (Variable, Scalar),
    path: impl IntoIterator<Item = PathStep>,
) -> Result<(Variable, Scalar), CircuitError> {
    let mut cur = leaf;
    for step in path {
        let bit = Bit::alloc(cs, step.is_right)?;
        let sib_v = cs.alloc_aux(step.sibling)?;
        let (cur_v, cur_x) = cur;
        let left_x = if step.is_right { step.sibling } else { cur_x };
        let left = cs.alloc_aux(left_x)?;
        cs.enforce(
            |l| {
                l.add_var(sib_v).sub_var(cur_v);
            },
            |l| bit.add_to_lc(l, Scalar::from(1u64)),
            |l| {
                l.add_var(left).sub_var(cur_v);
            },
        );
        let right = right_of(cur_v, cur_x, sib_v, step.sibling, left, left_x);
        cur = hash2(cs, &Affine::var(left, left_x), &right)?;
    }
    Ok(cur)
}

fn right_of(
    cur: Variable,
    cur_x: Scalar,
    sib: Variable,
    sib_x: Scalar,
    left: Variable,
    left_x: Scalar,
) -> Affine {
    Affine::sum3(
        [(cur, Scalar::from(1u64)), (sib, Scalar::from(1u64)), (left, -Scalar::from(1u64))],
        cur_x + sib_x - left_x,
    )
}
