//! [`Proof`]: three points, serialized as bellperson 0.27 does: compressed A (48 bytes),
//! B (96 bytes), C (48 bytes), 192 bytes in all.

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use super::error::{Groth16Error, Result};

/// Bytes of a serialized proof.
pub const PROOF_BYTES: usize = 48 + 96 + 48;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

impl Proof {
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Parses 192 bytes; each point must decode, lie in its subgroup and not be infinity
    /// (as bellperson's `Proof::read` demands).
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof> {
        let bad = |reason: String| Groth16Error::ProofBytes { reason };
        if bytes.len() != PROOF_BYTES {
            return Err(bad(format!("expected exactly {PROOF_BYTES} bytes, got {}", bytes.len())));
        }
        let g1 = |part: &str, b: &[u8]| -> Result<G1Affine> {
            let p: Option<G1Affine> = G1Affine::from_compressed(b.try_into().expect("48 bytes")).into();
            let p = p.ok_or_else(|| bad(format!("{part}: not a valid G1 point in the subgroup")))?;
            if bool::from(p.is_identity()) {
                return Err(bad(format!("{part}: the point at infinity")));
            }
            Ok(p)
        };
        let a = g1("A", &bytes[..48])?;
        let b: Option<G2Affine> =
            G2Affine::from_compressed(bytes[48..144].try_into().expect("96 bytes")).into();
        let b = b.ok_or_else(|| bad("B: not a valid G2 point in the subgroup".into()))?;
        if bool::from(b.is_identity()) {
            return Err(bad("B: the point at infinity".into()));
        }
        let c = g1("C", &bytes[144..])?;
        Ok(Proof { a, b, c })
    }
}
