//! Density bitmaps: one bit per variable, set when the variable appears with a non-zero
//! (merged) coefficient, exactly as bellperson 0.27's `DensityTracker` does. Bits are
//! LSB-first within little-endian `u64` words.

/// A borrowed density bitmap of `len_bits` bits.
#[derive(Clone, Copy, Debug)]
pub struct Density<'a> {
    words: &'a [u64],
    len_bits: usize,
}

impl<'a> Density<'a> {
    /// `words` must hold at least `len_bits` bits; bits past `len_bits` are ignored.
    pub fn new(words: &'a [u64], len_bits: usize) -> Self {
        assert!(words.len() * 64 >= len_bits, "density: {} words cannot hold {len_bits} bits", words.len());
        Density { words, len_bits }
    }
    pub fn len(&self) -> usize {
        self.len_bits
    }
    pub fn is_empty(&self) -> bool {
        self.len_bits == 0
    }
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len_bits, "density index {i} out of {}", self.len_bits);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }
    /// Number of set bits (bellperson's `get_total_density`).
    pub fn count_ones(&self) -> usize {
        let full = self.len_bits / 64;
        let mut n: usize = self.words[..full].iter().map(|w| w.count_ones() as usize).sum();
        let rem = self.len_bits % 64;
        if rem != 0 {
            n += (self.words[full] & ((1u64 << rem) - 1)).count_ones() as usize;
        }
        n
    }
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len_bits).map(move |i| self.get(i))
    }
    pub fn words(&self) -> &'a [u64] {
        self.words
    }
}

impl PartialEq for Density<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len_bits == other.len_bits && self.iter().eq(other.iter())
    }
}

/// An owned, growable density bitmap: the heap baseline's counterpart of bellperson's
/// `DensityTracker` (a `BitVec` grown by one bit per allocated variable).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DensityBits {
    words: Vec<u64>,
    len_bits: usize,
}

impl DensityBits {
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends one clear bit (bellperson's `add_element`).
    #[inline]
    pub fn add_element(&mut self) {
        if self.len_bits % 64 == 0 {
            self.words.push(0);
        }
        self.len_bits += 1;
    }
    /// Sets bit `i` (bellperson's `inc`). Panics past the end, like `BitVec::get(..).unwrap()`.
    #[inline]
    pub fn inc(&mut self, i: usize) {
        assert!(i < self.len_bits, "density index {i} out of {}", self.len_bits);
        self.words[i / 64] |= 1u64 << (i % 64);
    }
    pub fn len(&self) -> usize {
        self.len_bits
    }
    pub fn is_empty(&self) -> bool {
        self.len_bits == 0
    }
    pub fn as_density(&self) -> Density<'_> {
        Density::new(&self.words, self.len_bits)
    }
}

/// Number of `u64` words a bitmap of `len_bits` bits needs.
pub const fn words_for_bits(len_bits: usize) -> usize {
    len_bits.div_ceil(64)
}
