//! Multi-scalar multiplication: blst's Pippenger (its safe `MultiPoint` API) over affine
//! bases, with scalars as canonical little-endian 32-byte strings ("split vectors" that
//! the prover fills, density-filtered, in slabs).

use blst::{blst_p1_affine, blst_p2_affine, MultiPoint};
use blstrs::{G1Projective, G2Projective};
use group::Group;

/// Scalar bits blst reads (r < 2^255).
pub const SCALAR_BITS: usize = 255;
/// Bytes of one scalar in a split vector.
pub const SCALAR_BYTES: usize = 32;

/// `sum_i scalars[i] * bases[i]` in G1. Lengths must match.
pub fn msm_g1(bases: &[blst_p1_affine], scalars: &[[u8; SCALAR_BYTES]]) -> G1Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g1: {} bases, {} scalars", bases.len(), scalars.len());
    let mut out = G1Projective::identity();
    if !bases.is_empty() {
        *out.as_mut() = bases.mult(scalars.as_flattened(), SCALAR_BITS);
    }
    out
}

/// `sum_i scalars[i] * bases[i]` in G2. Lengths must match.
pub fn msm_g2(bases: &[blst_p2_affine], scalars: &[[u8; SCALAR_BYTES]]) -> G2Projective {
    assert_eq!(bases.len(), scalars.len(), "msm_g2: {} bases, {} scalars", bases.len(), scalars.len());
    let mut out = G2Projective::identity();
    if !bases.is_empty() {
        *out.as_mut() = bases.mult(scalars.as_flattened(), SCALAR_BITS);
    }
    out
}
