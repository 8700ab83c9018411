//! A witness's aux packed for the bus ([`AuxPack`]), unpacked on the device by
//! `fr_unpack_aux` (`kernels/products.cu`).
//!
//! Proving from the witness, the aux goes to the device twice per proof: once for the
//! products of the h stage, once for the four witness MSMs. At 2^27 that is 4 GiB and
//! ~78 ms over the bus each time, with the GPU held and idle. A PoRep's aux is ~99% zeros
//! and ones (bits of SHA-256), so it goes up as 2 bits per variable (0: zero, 1: one,
//! 2: the next of the others), one count per block of [`PACK_BLOCK`] variables (the others
//! before the block) and the other values themselves: ~40 times fewer bytes. The device
//! writes exactly the bytes the slab holds (Montgomery form, sppark's `fr_t::one()` being
//! blstrs' `Scalar::ONE`), so everything downstream is unchanged.
//!
//! The packing runs on the host before the GPU is taken (rayon), from buffers made once
//! per engine ([`AuxPack::new`], page-locked by [`AuxPack::register`]). A witness with
//! more other values than [`AuxPack::others_capacity`] does not pack ([`AuxPack::pack`]
//! returns false) and goes up whole, as before.

use std::ptr::NonNull;

use blst::blst_fr;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::error::Result;
use crate::gpu::Gpu;
use crate::pinned::HostRegistration;

/// Variables per block: one count of others before each, and `fr_unpack_aux`'s threads per
/// CUDA block (the kernel ranks a block's others with warp ballots).
pub(crate) const PACK_BLOCK: usize = 256;
/// 2-bit codes per word.
const CODES_PER_WORD: usize = 16;
const WORDS_PER_BLOCK: usize = PACK_BLOCK / CODES_PER_WORD;
/// Room for others: one in this many variables (PoRep: ~1 in 100 are neither 0 nor 1).
pub const PACK_OTHERS_ONE_IN: usize = 32;
/// Blocks per task of the others' copy.
const BLOCKS_PER_TASK: usize = 1024;

const CODE_ZERO: u32 = 0;
const CODE_ONE: u32 = 1;
const CODE_OTHER: u32 = 2;
/// The high bit of every code in a word: set exactly for the others.
const OTHER_BITS: u32 = 0xAAAA_AAAA;
const _: () = assert!(CODE_ZERO & 2 == 0 && CODE_ONE & 2 == 0 && CODE_OTHER & 2 != 0);

/// The packed form of one aux vector, in buffers sized once for `capacity` variables.
pub struct AuxPack {
    // Declared first: dropped (unregistered) before the buffers it pins are freed.
    pins: Vec<HostRegistration>,
    codes: Vec<u32>,
    block_others: Vec<u32>,
    others: Vec<Scalar>,
    capacity: usize,
    /// The aux last packed: (address, length), and its count of others.
    source: Option<(usize, usize)>,
    nothers: usize,
}

impl std::fmt::Debug for AuxPack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuxPack")
            .field("capacity", &self.capacity)
            .field("others_capacity", &self.others.len())
            .field("pinned", &!self.pins.is_empty())
            .field("source", &self.source)
            .field("nothers", &self.nothers)
            .finish()
    }
}

/// The host bytes of an [`AuxPack`] for `capacity` variables (the plan's term).
pub fn aux_pack_bytes(capacity: usize) -> usize {
    let blocks = capacity.div_ceil(PACK_BLOCK);
    blocks * WORDS_PER_BLOCK * 4 + blocks * 4 + others_capacity(capacity) * std::mem::size_of::<Scalar>()
}

fn others_capacity(capacity: usize) -> usize {
    capacity.div_ceil(PACK_OTHERS_ONE_IN) + PACK_BLOCK
}

/// Scalar's Montgomery limbs, as the slab (and the device) holds them.
fn limbs(s: &Scalar) -> [u64; 4] {
    blst_fr::from(*s).l
}

impl AuxPack {
    /// Buffers for up to `capacity` variables, written once here so that no page of them
    /// is first touched while proving.
    pub fn new(capacity: usize) -> AuxPack {
        let blocks = capacity.div_ceil(PACK_BLOCK);
        AuxPack {
            pins: Vec::new(),
            codes: vec![0; blocks * WORDS_PER_BLOCK],
            block_others: vec![0; blocks],
            others: vec![Scalar::ZERO; others_capacity(capacity)],
            capacity,
            source: None,
            nothers: 0,
        }
    }

    /// Page-locks the buffers with `gpu`'s driver (registrations are portable: every GPU
    /// of the host copies from them at full speed). On an error the pack stays pageable
    /// (and still packs).
    pub fn register(&mut self, gpu: &Gpu) -> Result<()> {
        fn range<T>(v: &mut [T]) -> Option<(NonNull<u8>, usize)> {
            let bytes = std::mem::size_of_val(v);
            (bytes > 0).then(|| (NonNull::from(v).cast::<u8>(), bytes))
        }
        if !self.pins.is_empty() {
            return Ok(());
        }
        let ranges = [range(&mut self.codes), range(&mut self.block_others), range(&mut self.others)];
        let mut pins = Vec::with_capacity(3);
        for (base, len) in ranges.into_iter().flatten() {
            // SAFETY: the range is this pack's own buffer, never reallocated (its length is
            // fixed at `new`), and the registration is dropped before it (field order).
            pins.push(unsafe { gpu.register_host(base, len) }?);
        }
        self.pins = pins;
        Ok(())
    }

    /// Variables this pack can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Other values (neither 0 nor 1) this pack can hold.
    pub fn others_capacity(&self) -> usize {
        self.others.len()
    }

    /// Whether the buffers are page-locked.
    pub fn is_registered(&self) -> bool {
        !self.pins.is_empty()
    }

    /// Packs `aux`. False (and nothing packed) when it is longer than the capacity or has
    /// more other values than there is room for: it must then go up whole.
    pub fn pack(&mut self, aux: &[Scalar]) -> bool {
        self.source = None;
        if aux.len() > self.capacity {
            return false;
        }
        let blocks = aux.len().div_ceil(PACK_BLOCK);
        let (zero, one) = (limbs(&Scalar::ZERO), limbs(&Scalar::ONE));
        // Codes and each block's count of others.
        self.codes[..blocks * WORDS_PER_BLOCK]
            .par_chunks_mut(WORDS_PER_BLOCK)
            .zip(self.block_others[..blocks].par_iter_mut())
            .zip(aux.par_chunks(PACK_BLOCK))
            .for_each(|((words, count), block)| {
                words.fill(0);
                let mut others = 0;
                for (k, s) in block.iter().enumerate() {
                    let l = limbs(s);
                    let code = if l == zero {
                        CODE_ZERO
                    } else if l == one {
                        CODE_ONE
                    } else {
                        others += 1;
                        CODE_OTHER
                    };
                    words[k / CODES_PER_WORD] |= code << (2 * (k % CODES_PER_WORD));
                }
                *count = others;
            });
        // Counts to offsets: the others before each block.
        let mut total = 0usize;
        for c in &mut self.block_others[..blocks] {
            let n = *c as usize;
            *c = total as u32;
            total += n;
        }
        if total > self.others.len() {
            return false;
        }
        // The others, task by task (each a run of blocks and the slice of others they fill).
        let offsets = &self.block_others[..blocks];
        let mut rest = &mut self.others[..total];
        let mut tasks = Vec::with_capacity(blocks.div_ceil(BLOCKS_PER_TASK));
        for first in (0..blocks).step_by(BLOCKS_PER_TASK) {
            let end = offsets.get(first + BLOCKS_PER_TASK).map_or(total, |&o| o as usize);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(end - offsets[first] as usize);
            tasks.push((first, head));
            rest = tail;
        }
        // Each task walks its blocks' codes and reads only the variables coded other (the
        // high bit of a 2-bit code), so the zeros and ones are not read a second time.
        let codes = &self.codes[..blocks * WORDS_PER_BLOCK];
        tasks.into_par_iter().for_each(|(first, out)| {
            let words =
                first * WORDS_PER_BLOCK..((first + BLOCKS_PER_TASK) * WORDS_PER_BLOCK).min(codes.len());
            let mut next = out.iter_mut();
            for w in words {
                let mut bits = codes[w] & OTHER_BITS;
                while bits != 0 {
                    let i = w * CODES_PER_WORD + bits.trailing_zeros() as usize / 2;
                    *next.next().expect("a task's slice holds its blocks' others") = aux[i];
                    bits &= bits - 1;
                }
            }
        });
        self.source = Some((aux.as_ptr() as usize, aux.len()));
        self.nothers = total;
        true
    }

    /// Whether this pack holds `aux` (the same slice, packed by the last [`AuxPack::pack`]).
    pub(crate) fn holds(&self, aux: &[Scalar]) -> bool {
        self.source == Some((aux.as_ptr() as usize, aux.len()))
    }

    /// The packed parts to copy: codes, per-block offsets, others.
    pub(crate) fn parts(&self) -> (&[u32], &[u32], &[Scalar]) {
        let len = self.source.map_or(0, |(_, len)| len);
        let blocks = len.div_ceil(PACK_BLOCK);
        (&self.codes[..blocks * WORDS_PER_BLOCK], &self.block_others[..blocks], &self.others[..self.nothers])
    }

    /// Bytes that go over the bus for the packed aux.
    pub fn packed_bytes(&self) -> usize {
        let (c, b, o) = self.parts();
        std::mem::size_of_val(c) + std::mem::size_of_val(b) + std::mem::size_of_val(o)
    }

    /// What the device unpacks, computed here (tests).
    pub fn unpack_host(&self) -> Vec<Scalar> {
        let (codes, offsets, others) = self.parts();
        let len = self.source.map_or(0, |(_, len)| len);
        let mut next = 0usize;
        (0..len)
            .map(|i| {
                if i % PACK_BLOCK == 0 {
                    assert_eq!(next, offsets[i / PACK_BLOCK] as usize, "block {}'s offset", i / PACK_BLOCK);
                }
                match (codes[i / CODES_PER_WORD] >> (2 * (i % CODES_PER_WORD))) & 3 {
                    CODE_ZERO => Scalar::ZERO,
                    CODE_ONE => Scalar::ONE,
                    _ => {
                        next += 1;
                        others[next - 1]
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn mix(n: usize, one_in: u64, seed: u64) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n as u64)
            .map(|i| match i % one_in {
                0 => Scalar::random(&mut rng),
                k if k % 2 == 0 => Scalar::ONE,
                _ => Scalar::ZERO,
            })
            .collect()
    }

    #[test]
    fn a_pack_unpacks_to_the_same_aux() {
        // Lengths off the block and task grid, and a run of others across a task's edge.
        for (n, one_in) in
            [(0, 7), (1, 1), (255, 5), (256, 3), (257, 100), (300_001, 40), (BLOCKS_PER_TASK * 256 + 3, 64)]
        {
            let aux = mix(n, one_in, n as u64);
            let mut p = AuxPack::new(n + 10);
            assert!(p.pack(&aux) || n / one_in as usize + 1 > p.others_capacity(), "n {n}");
            if p.holds(&aux) {
                assert_eq!(p.unpack_host(), aux, "n {n}, one in {one_in}");
                assert!(n < 1000 || p.packed_bytes() * 20 < n * 32, "n {n}: {} bytes", p.packed_bytes());
            }
        }
    }

    #[test]
    fn too_many_others_or_too_long_do_not_pack() {
        let aux = mix(10_000, 2, 1);
        let mut p = AuxPack::new(10_000);
        assert!(!p.pack(&aux), "half of them others");
        assert!(!p.holds(&aux));
        let mut small = AuxPack::new(100);
        assert!(!small.pack(&mix(101, 50, 2)), "longer than the capacity");
        // A pack that failed leaves nothing that looks packed, and packs again fine.
        let ok = mix(10_000, 100, 3);
        assert!(p.pack(&ok));
        assert!(p.holds(&ok) && !p.holds(&aux));
        assert_eq!(p.unpack_host(), ok);
    }

    #[test]
    fn the_term_counts_every_buffer() {
        let p = AuxPack::new(1 << 16);
        let bytes = p.codes.len() * 4 + p.block_others.len() * 4 + p.others.len() * 32;
        assert_eq!(aux_pack_bytes(1 << 16), bytes);
    }
}
