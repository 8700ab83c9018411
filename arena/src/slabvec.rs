//! [`SlabVec<T>`]: a fixed-capacity typed vector over a [`Lease`].

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::{ArenaError, Lease, Plain};

/// A [`SlabVec::resize`] fill at least this large runs in parallel (one task per this many
/// bytes): the prover and the parameter loader size multi-GiB vectors this way.
pub const PAR_FILL_BYTES: usize = 1 << 20;
/// Elements per task of [`SlabVec::extend_par_map`] and [`map_in_place`] (4096 scalars =
/// 128 KiB: enough work per rayon task, small enough to balance).
const PAR_MAP_CHUNK: usize = 4096;

/// [`Plain`] types for which *every* bit pattern is a valid value (integers, byte arrays,
/// and field elements stored as plain limbs), so stale slab bytes may be handed out as
/// values to be overwritten ([`SlabVec::extend_stale`]).
///
/// # Safety
/// Every bit pattern of `size_of::<T>()` bytes must be a valid `T`.
pub unsafe trait AnyBits: Plain {}

macro_rules! any_bits {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: integers, arrays of them, and blst's limb structs accept any bits (a
        // non-reduced field element is a wrong value, not an invalid one).
        unsafe impl AnyBits for $t {}
    )*};
}
any_bits!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, [u8; 32], [u64; 4], blstrs::Scalar);
// Affine points are plain Fp limbs: any bits are a (possibly invalid) point, never UB;
// every stale one is overwritten by the decoder that asked for it.
any_bits!(blst::blst_p1_affine, blst::blst_p2_affine);

/// Converts `src` in place, element by element, into a `U` of the same size: `h`'s scalars
/// become the MSM's byte strings in the slab that computed them, with no second buffer.
/// Runs in parallel.
pub fn map_in_place<T: Plain, U: AnyBits>(src: &mut [T], f: impl Fn(T) -> U + Sync) -> &mut [U] {
    const { assert!(std::mem::size_of::<T>() == std::mem::size_of::<U>(), "map_in_place: sizes differ") };
    const {
        assert!(
            std::mem::align_of::<U>() <= std::mem::align_of::<T>(),
            "map_in_place: U needs more alignment"
        )
    };
    src.par_chunks_mut(PAR_MAP_CHUNK).for_each(|ch| {
        let p = ch.as_mut_ptr();
        for i in 0..ch.len() {
            // SAFETY: i < ch.len(); element i is read as T before the same bytes are written
            // as U (same size, U's alignment divides T's), and nothing else views `ch`.
            unsafe {
                let v = p.add(i).read();
                p.add(i).cast::<U>().write(f(v));
            }
        }
    });
    let (ptr, len) = (src.as_mut_ptr().cast::<U>(), src.len());
    // SAFETY: every element was rewritten as a U above; size and alignment checked at
    // compile time; the borrow of `src` moves into the result, so no &mut [T] view remains.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// A vector of `T` living in one slab. Its capacity is fixed by the lease; going past it
/// is an [`ArenaError::Capacity`], never a reallocation. Dropping it hands the slab back.
pub struct SlabVec<T: Plain> {
    lease: Lease,
    len: usize,
    cap: usize,
    _t: PhantomData<T>,
}

impl<T: Plain> SlabVec<T> {
    /// Wraps a lease; capacity is `lease.len_bytes() / size_of::<T>()`.
    pub fn new(lease: Lease) -> Self {
        let cap = lease.len_bytes() / std::mem::size_of::<T>();
        // Pair assertion: slabs start SLAB_ALIGN_BYTES-aligned, which T's alignment divides.
        assert_eq!(lease.as_ptr().as_ptr() as usize % std::mem::align_of::<T>(), 0, "slab misaligned for T");
        SlabVec { lease, len: 0, cap, _t: PhantomData }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    pub fn lease(&self) -> &Lease {
        &self.lease
    }
    /// Gives the slab back to the caller as a lease (the elements are forgotten).
    pub fn into_lease(self) -> Lease {
        self.lease
    }

    fn full(&self, requested: usize) -> ArenaError {
        ArenaError::Capacity { pool: self.lease.pool().name().to_string(), capacity: self.cap, requested }
    }

    fn base(&self) -> *mut T {
        self.lease.as_ptr().as_ptr() as *mut T
    }

    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), ArenaError> {
        if self.len == self.cap {
            return Err(self.full(self.len + 1));
        }
        // SAFETY: len < cap, so the slot lies inside the slab, which this vector owns.
        unsafe { self.base().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    pub fn extend_from_slice(&mut self, values: &[T]) -> Result<(), ArenaError> {
        let new_len = self.len.checked_add(values.len()).ok_or_else(|| self.full(usize::MAX))?;
        if new_len > self.cap {
            return Err(self.full(new_len));
        }
        // SAFETY: new_len <= cap; source and destination cannot overlap (the slab is ours,
        // `values` is a shared borrow of something else).
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), self.base().add(self.len), values.len()) };
        self.len = new_len;
        Ok(())
    }

    pub fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) -> Result<(), ArenaError> {
        for v in iter {
            self.push(v)?;
        }
        Ok(())
    }

    /// Sets the length to `new_len`, writing `value` into new slots (like `Vec::resize`).
    /// Fills of [`PAR_FILL_BYTES`] or more are spread over rayon's threads.
    pub fn resize(&mut self, new_len: usize, value: T) -> Result<(), ArenaError> {
        if new_len > self.cap {
            return Err(self.full(new_len));
        }
        if new_len > self.len {
            let n = new_len - self.len;
            // SAFETY: len..new_len lies inside the slab this vector owns (new_len <= cap);
            // the slots are only written here.
            let slots = unsafe {
                std::slice::from_raw_parts_mut(self.base().add(self.len).cast::<MaybeUninit<T>>(), n)
            };
            let fill = |chunk: &mut [MaybeUninit<T>]| {
                for s in chunk {
                    s.write(value);
                }
            };
            let chunk = (PAR_FILL_BYTES / std::mem::size_of::<T>()).max(1);
            if n > chunk {
                slots.par_chunks_mut(chunk).for_each(fill);
            } else {
                fill(slots);
            }
        }
        self.len = new_len;
        Ok(())
    }

    /// Appends `n` elements, the `i`-th being `f(len + i)`, each written exactly once
    /// (checked against the capacity once, before any write). The length is stored once at
    /// the end (so the loop vectorizes like `Vec::extend`); a guard stores how far it got
    /// if `f` panics, so the vector stays consistent.
    pub fn extend_with(&mut self, n: usize, mut f: impl FnMut(usize) -> T) -> Result<(), ArenaError> {
        let start = self.len;
        let new_len = start.checked_add(n).ok_or_else(|| self.full(usize::MAX))?;
        if new_len > self.cap {
            return Err(self.full(new_len));
        }
        struct SetLenOnDrop<'a> {
            len: &'a mut usize,
            local: usize,
        }
        impl Drop for SetLenOnDrop<'_> {
            fn drop(&mut self) {
                *self.len = self.local;
            }
        }
        let base = self.base();
        let mut guard = SetLenOnDrop { len: &mut self.len, local: start };
        for i in start..new_len {
            // SAFETY: i < new_len <= cap, so the slot lies inside the slab this vector owns.
            unsafe { base.add(i).write(f(i)) };
            guard.local = i + 1;
        }
        Ok(())
    }

    /// Appends `n` elements *without writing them* and returns them: they hold whatever
    /// the slab held (a previous tenant's bytes, or zeros). For writers that overwrite
    /// every element anyway (NTT outputs, conversions), so multi-GiB slabs are not zeroed
    /// first. Sound because slab memory is always initialized (regions are zeroed when
    /// mapped) and [`AnyBits`] types are valid for every bit pattern; a caller that does
    /// not overwrite an element reads stale data, never undefined behaviour.
    pub fn extend_stale(&mut self, n: usize) -> Result<&mut [T], ArenaError>
    where
        T: AnyBits,
    {
        let start = self.len;
        let new_len = start.checked_add(n).ok_or_else(|| self.full(usize::MAX))?;
        if new_len > self.cap {
            return Err(self.full(new_len));
        }
        self.len = new_len;
        #[cfg(feature = "verify")]
        {
            // Poison, so a writer that misses an element is caught in tests.
            let s = &mut self.as_mut_slice()[start..];
            // SAFETY: s is a live &mut [T]; every bit pattern is a valid T (AnyBits).
            unsafe { std::ptr::write_bytes(s.as_mut_ptr(), 0xA5, s.len()) };
        }
        Ok(&mut self.as_mut_slice()[start..])
    }

    /// Appends `f(&src[i])` for every `i`, in parallel, without zeroing first.
    pub fn extend_par_map<S: Sync>(&mut self, src: &[S], f: impl Fn(&S) -> T + Sync) -> Result<(), ArenaError>
    where
        T: AnyBits,
    {
        let dst = self.extend_stale(src.len())?;
        dst.par_chunks_mut(PAR_MAP_CHUNK).zip(src.par_chunks(PAR_MAP_CHUNK)).for_each(|(d, s)| {
            for (d, s) in d.iter_mut().zip(s) {
                *d = f(s);
            }
        });
        Ok(())
    }

    /// Appends `n` copies of `value` and returns them as a mutable slice.
    pub fn extend_fill(&mut self, n: usize, value: T) -> Result<&mut [T], ArenaError> {
        let start = self.len;
        let new_len = start.checked_add(n).ok_or_else(|| self.full(usize::MAX))?;
        self.resize(new_len, value)?;
        Ok(&mut self.as_mut_slice()[start..])
    }

    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Forgets the elements (O(1): `T` has no `Drop`).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` slots were written as T; the slab is owned by the lease.
        unsafe { std::slice::from_raw_parts(self.base(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.base(), self.len) }
    }
}

impl<T: Plain> std::ops::Deref for SlabVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Plain> std::ops::DerefMut for SlabVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for SlabVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlabVec(len {}, cap {}, {:?})", self.len, self.cap, self.lease)
    }
}
