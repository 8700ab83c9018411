//! [`Plain`]: element types a [`crate::SlabVec`] may hold.

/// A type that can live in slab memory: `Copy`, no `Drop`, no interior pointers, and an
/// alignment no larger than a slab's.
///
/// # Safety
/// Implementors must be `Copy` plain data with no `Drop` glue, with `align_of::<T>()`
/// dividing [`crate::SLAB_ALIGN_BYTES`] and `size_of::<T>() > 0`. A value is only ever
/// read after it was written as a `T`, so not every bit pattern need be valid.
pub unsafe trait Plain: Copy + Send + Sync + 'static {}

macro_rules! plain {
    ($($t:ty),* $(,)?) => {$(
        const _: () = assert!(std::mem::size_of::<$t>() > 0);
        const _: () = assert!(crate::SLAB_ALIGN_BYTES % std::mem::align_of::<$t>() == 0);
        // SAFETY: Copy plain data without Drop; size/alignment asserted just above.
        unsafe impl Plain for $t {}
    )*};
}

plain!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, [u8; 32], [u64; 4]);
plain!(blstrs::Scalar, blst::blst_p1_affine, blst::blst_p2_affine, blst::blst_p1, blst::blst_p2);
plain!(blstrs::G1Affine, blstrs::G2Affine, blstrs::G1Projective, blstrs::G2Projective);

// Layouts the engine relies on: a scalar is four little-endian u64 limbs (Montgomery form).
static_assertions::assert_eq_size!(blstrs::Scalar, [u64; 4]);
static_assertions::assert_eq_size!(blst::blst_p1_affine, [u8; 96]);
static_assertions::assert_eq_size!(blst::blst_p2_affine, [u8; 192]);
static_assertions::assert_eq_size!(blstrs::G1Affine, blst::blst_p1_affine);
static_assertions::assert_eq_size!(blstrs::G2Affine, blst::blst_p2_affine);
