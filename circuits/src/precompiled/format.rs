//! The precompiled-constraints encoding and file format (version 1). All integers are
//! little-endian.
//!
//! ## Row stream
//! One stream of `u32` words holds A, B and C together, row by row, so that one pass over
//! it computes a, b and c of a row. A row is a header word, then the A terms, the B terms
//! and the C terms:
//! * header: `len_a | len_b << 10 | len_c << 20` when every length is below 1023;
//!   otherwise [`ROW_ESCAPE`] followed by three words `len_a`, `len_b`, `len_c`;
//! * term: `input << 31 | class << 29 | index` where `index < 2^29` counts inputs (ONE is
//!   input 0) or aux separately, so an input allocated between constraints never shifts an
//!   aux column (the bug of a single column space sized before the inputs are known);
//!   class 0 is a coefficient of +1, class 1 of -1 (neither multiplies), class 2 is
//!   followed by one word indexing the coefficient table. Zero coefficients are not
//!   stored; coefficients are merged per variable, as bellpepper-core 0.2 merges them.
//!
//! Rows are grouped in blocks of [`ROWS_PER_BLOCK`]; the block table holds the word offset
//! of each block's first row (and the stream's end), so blocks are computed in parallel.
//! The `input_i * 0 = 0` rows are not stored: the assignment appends them.
//!
//! ## File
//! A [`HEADER_BYTES`] header, then six sections, each starting on a 4096-byte boundary:
//! block table (`u64`), row stream (`u32`), coefficient table (32-byte canonical scalars),
//! and the a_aux, b_input and b_aux density bitmaps (`u64` words, LSB first). The header
//! holds magic, version, the circuit's identity (a caller-chosen string) and shape, term
//! counts per class, each section's offset, length and checksum, and its own checksum.

use super::PrecompiledError;
use crate::Shape;

pub const MAGIC: [u8; 8] = *b"ARPCE\0\r\n";
pub const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 4096;
/// Sections start on this boundary (a page: a map of the file hands out aligned sections).
pub const SECTION_ALIGN_BYTES: usize = 4096;
/// Rows per block of the block table: the unit of parallel work in the products (2.7M-row
/// 2 KiB PoRep: ~1300 blocks).
pub const ROWS_PER_BLOCK: usize = 2048;
pub const INDEX_BITS: u32 = 29;
/// Largest input or aux index a term can hold (536,870,911; a 32 GiB PoRep partition has
/// ~130M aux).
pub const INDEX_MAX: usize = (1 << INDEX_BITS) - 1;
pub const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
pub const INPUT_BIT: u32 = 1 << 31;
pub const CLASS_MASK: u32 = 3 << INDEX_BITS;
pub const CLASS_ONE: u32 = 0;
pub const CLASS_MINUS_ONE: u32 = 1 << INDEX_BITS;
pub const CLASS_GENERAL: u32 = 2 << INDEX_BITS;
/// A row header whose lengths follow in three words.
pub const ROW_ESCAPE: u32 = u32::MAX;
/// Lengths below this fit a packed row header.
pub const ROW_LEN_PACKED_MAX: u32 = 1023;
/// Longest identity string.
pub const IDENTITY_BYTES_MAX: usize = 1024;

pub const SECTIONS: usize = 6;
pub const SECTION_NAMES: [&str; SECTIONS] =
    ["block table", "row stream", "coefficients", "a_aux density", "b_input density", "b_aux density"];
pub const S_BLOCKS: usize = 0;
pub const S_STREAM: usize = 1;
pub const S_COEFFS: usize = 2;
pub const S_A_AUX: usize = 3;
pub const S_B_INPUT: usize = 4;
pub const S_B_AUX: usize = 5;

const _: () = assert!(ROWS_PER_BLOCK.is_power_of_two());
const _: () = assert!(HEADER_BYTES % SECTION_ALIGN_BYTES == 0);

/// Terms of one matrix by coefficient class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TermCounts {
    pub one: u64,
    pub minus_one: u64,
    pub general: u64,
}

impl TermCounts {
    pub fn total(&self) -> u64 {
        self.one + self.minus_one + self.general
    }
}

/// One section's place in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
    pub checksum: u64,
}

/// The decoded header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub identity: String,
    /// Rows stored (the circuit's own constraints, without the `input_i * 0 = 0` rows).
    pub rows: u64,
    pub inputs: u64,
    pub aux: u64,
    /// A, B, C.
    pub terms: [TermCounts; 3],
    pub sections: [Section; SECTIONS],
}

impl Header {
    /// The shape the assignment has after the input rows are appended.
    pub fn shape(&self) -> Shape {
        Shape::new((self.rows + self.inputs) as usize, self.inputs as usize, self.aux as usize)
    }

    /// Bytes of the whole file.
    pub fn file_bytes(&self) -> u64 {
        self.sections.iter().map(|s| s.offset + s.len).max().unwrap_or(HEADER_BYTES as u64)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(HEADER_BYTES);
        w.extend_from_slice(&MAGIC);
        w.extend_from_slice(&VERSION.to_le_bytes());
        w.extend_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
        for v in [self.rows, self.inputs, self.aux] {
            w.extend_from_slice(&v.to_le_bytes());
        }
        w.extend_from_slice(&(ROWS_PER_BLOCK as u32).to_le_bytes());
        w.extend_from_slice(&INDEX_BITS.to_le_bytes());
        for t in &self.terms {
            for v in [t.one, t.minus_one, t.general] {
                w.extend_from_slice(&v.to_le_bytes());
            }
        }
        w.extend_from_slice(&(SECTIONS as u32).to_le_bytes());
        for s in &self.sections {
            for v in [s.offset, s.len, s.checksum] {
                w.extend_from_slice(&v.to_le_bytes());
            }
        }
        w.extend_from_slice(&(self.identity.len() as u32).to_le_bytes());
        w.extend_from_slice(self.identity.as_bytes());
        let sum = checksum(&w);
        w.extend_from_slice(&sum.to_le_bytes());
        debug_assert!(w.len() <= HEADER_BYTES);
        w.resize(HEADER_BYTES, 0);
        w
    }

    /// Decodes and checks a header; `path` names the source in errors.
    pub fn decode(bytes: &[u8], path: &str) -> Result<Header, PrecompiledError> {
        let corrupt = |reason: String| PrecompiledError::Corrupt { path: path.to_string(), reason };
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            return Err(PrecompiledError::NotPrecompiled { path: path.to_string() });
        }
        let mut r = Reader { bytes, pos: MAGIC.len(), path };
        let version = r.u32()?;
        if version != VERSION {
            return Err(PrecompiledError::Version {
                path: path.to_string(),
                found: version,
                expected: VERSION,
            });
        }
        let header_bytes = r.u32()? as usize;
        if header_bytes != HEADER_BYTES {
            return Err(corrupt(format!("header of {header_bytes} bytes, expected {HEADER_BYTES}")));
        }
        if bytes.len() < HEADER_BYTES {
            return Err(PrecompiledError::Truncated {
                path: path.to_string(),
                expected_bytes: HEADER_BYTES as u64,
                found_bytes: bytes.len() as u64,
            });
        }
        let (rows, inputs, aux) = (r.u64()?, r.u64()?, r.u64()?);
        let (rows_per_block, index_bits) = (r.u32()?, r.u32()?);
        if rows_per_block as usize != ROWS_PER_BLOCK || index_bits != INDEX_BITS {
            return Err(corrupt(format!(
                "{rows_per_block} rows per block and {index_bits} index bits, expected {ROWS_PER_BLOCK} and \
                 {INDEX_BITS}"
            )));
        }
        let mut terms = [TermCounts::default(); 3];
        for t in &mut terms {
            *t = TermCounts { one: r.u64()?, minus_one: r.u64()?, general: r.u64()? };
        }
        let n_sections = r.u32()? as usize;
        if n_sections != SECTIONS {
            return Err(corrupt(format!("{n_sections} sections, expected {SECTIONS}")));
        }
        let mut sections = [Section::default(); SECTIONS];
        for s in &mut sections {
            *s = Section { offset: r.u64()?, len: r.u64()?, checksum: r.u64()? };
        }
        let identity_len = r.u32()? as usize;
        if identity_len > IDENTITY_BYTES_MAX {
            return Err(corrupt(format!("identity of {identity_len} bytes (limit {IDENTITY_BYTES_MAX})")));
        }
        let identity = String::from_utf8(r.take(identity_len)?.to_vec())
            .map_err(|_| corrupt("identity is not UTF-8".into()))?;
        let summed = r.pos;
        let sum = r.u64()?;
        if sum != checksum(&bytes[..summed]) {
            return Err(corrupt("header checksum mismatch".into()));
        }
        if inputs == 0 || inputs as usize > INDEX_MAX + 1 || aux as usize > INDEX_MAX + 1 {
            return Err(corrupt(format!("{inputs} inputs and {aux} aux (ONE must be an input)")));
        }
        for (i, s) in sections.iter().enumerate() {
            let aligned = s.offset as usize % SECTION_ALIGN_BYTES == 0 && s.offset as usize >= HEADER_BYTES;
            if !aligned || s.offset.checked_add(s.len).is_none() {
                return Err(corrupt(format!("{} section at {} (+{})", SECTION_NAMES[i], s.offset, s.len)));
            }
        }
        Ok(Header { identity, rows, inputs, aux, terms, sections })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a str,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PrecompiledError> {
        let end = self.pos + n;
        if end > HEADER_BYTES.min(self.bytes.len()) {
            return Err(PrecompiledError::Corrupt {
                path: self.path.to_string(),
                reason: "header fields run past the header".into(),
            });
        }
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, PrecompiledError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, PrecompiledError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}

/// Bytes hashed by one task of [`checksum_par`].
const CHECKSUM_CHUNK_BYTES: usize = 1 << 20;
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// A 64-bit checksum of `bytes` (not cryptographic: it catches truncation, bit rot and
/// files mixed up, not an adversary; the circuit's identity is in the header).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut h = (bytes.len() as u64).wrapping_mul(MIX) ^ 0x5043_455F_5631;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ v).wrapping_mul(MIX).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(MIX).rotate_left(29);
    h ^ (h >> 32)
}

/// [`checksum`] of each 1 MiB chunk in parallel, folded in order: what a section's
/// checksum is (hundreds of MB are checked at memory speed on open).
pub fn checksum_par(bytes: &[u8]) -> u64 {
    use rayon::prelude::*;
    let parts: Vec<u64> = bytes.par_chunks(CHECKSUM_CHUNK_BYTES).map(checksum).collect();
    let mut h = bytes.len() as u64;
    for p in parts {
        h = (h ^ p).wrapping_mul(MIX).rotate_left(31);
    }
    h
}

/// Encodes one term (see the module docs); `coeff_word` is the coefficient table index of
/// a general term.
#[inline]
pub fn term_word(is_input: bool, index: usize, class: u32) -> u32 {
    debug_assert!(index <= INDEX_MAX && class & !CLASS_MASK == 0);
    (if is_input { INPUT_BIT } else { 0 }) | class | index as u32
}

/// Rounds up to the section alignment.
pub fn align_up(n: usize) -> usize {
    n.div_ceil(SECTION_ALIGN_BYTES) * SECTION_ALIGN_BYTES
}
