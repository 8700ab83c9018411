//! [`RecordingCs`]: a constraint system that records A, B, C and the density bitmaps and
//! never evaluates a witness closure, so it records a blank circuit (the one parameter
//! generation synthesizes) as well as a full one.

use std::collections::HashMap;

use arenaprove_arena::VecPool;
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::format::*;
use super::PrecompiledError;
use crate::density::DensityBits;
use crate::native::{Lc, LcScratch, NativeCs, Term};
use crate::CircuitError;

/// Records one circuit (see the module docs). Start with [`RecordingCs::new`], which
/// allocates ONE as input 0, run the circuit, then [`RecordingCs::into_bytes`].
pub struct RecordingCs {
    identity: String,
    words: Vec<u32>,
    /// Counting only ([`RecordingCs::counting`]): the row stream's words are counted here
    /// instead of kept in `words`.
    count_only: bool,
    counted_words: u64,
    /// Word offset of each block's first row.
    blocks: Vec<u64>,
    rows: usize,
    inputs: usize,
    aux: usize,
    coeffs: Vec<Scalar>,
    coeff_index: HashMap<[u8; 32], u32>,
    a_aux: DensityBits,
    b_input: DensityBits,
    b_aux: DensityBits,
    terms: [TermCounts; 3],
    /// The terms of the row being recorded, per side.
    side: [Vec<u32>; 3],
    side_len: [u32; 3],
    sticky: Option<PrecompiledError>,
    scratch: LcScratch,
    pool: VecPool<Term>,
}

/// Which side of a constraint a combination is.
#[derive(Clone, Copy)]
enum Side {
    A = 0,
    B = 1,
    C = 2,
}

impl RecordingCs {
    /// A recorder for the circuit named `identity`, with ONE allocated as input 0.
    pub fn new(identity: &str) -> Result<Self, PrecompiledError> {
        if identity.len() > IDENTITY_BYTES_MAX {
            return Err(PrecompiledError::Record {
                identity: identity.chars().take(64).collect(),
                reason: format!("identity of {} bytes (limit {IDENTITY_BYTES_MAX})", identity.len()),
            });
        }
        let mut cs = RecordingCs {
            identity: identity.to_string(),
            words: Vec::new(),
            count_only: false,
            counted_words: 0,
            blocks: Vec::new(),
            rows: 0,
            inputs: 0,
            aux: 0,
            coeffs: Vec::new(),
            coeff_index: HashMap::new(),
            a_aux: DensityBits::new(),
            b_input: DensityBits::new(),
            b_aux: DensityBits::new(),
            terms: [TermCounts::default(); 3],
            side: [Vec::new(), Vec::new(), Vec::new()],
            side_len: [0; 3],
            sticky: None,
            scratch: LcScratch::default(),
            pool: VecPool::new(),
        };
        cs.new_input().map_err(|e| cs.error(e.to_string()))?;
        Ok(cs)
    }

    /// A recorder that keeps no row stream, only its length (with everything else it
    /// keeps: counts, block table, coefficient table, densities): for
    /// [`RecordingCs::file_bytes`] of circuits whose matrices would not fit in memory (a
    /// 32 GiB PoRep partition's are ~20-25 GiB). [`RecordingCs::into_bytes`] refuses it.
    pub fn counting(identity: &str) -> Result<Self, PrecompiledError> {
        let mut cs = RecordingCs::new(identity)?;
        cs.count_only = true;
        Ok(cs)
    }

    /// Words in the row stream so far.
    fn stream_words(&self) -> u64 {
        if self.count_only {
            self.counted_words
        } else {
            self.words.len() as u64
        }
    }

    /// Rows recorded (the `input_i * 0 = 0` rows excluded), inputs (ONE included) and aux
    /// so far.
    pub fn counts(&self) -> (usize, usize, usize) {
        (self.rows, self.inputs, self.aux)
    }

    /// Bytes of the file [`RecordingCs::into_bytes`] would write now (header and the six
    /// page-aligned sections): what a mapped recording of this circuit occupies.
    pub fn file_bytes(&self) -> u64 {
        let sections = [
            (self.blocks.len() as u64 + 1) * 8,
            self.stream_words() * 4,
            self.coeffs.len() as u64 * 32,
            self.a_aux.as_density().words().len() as u64 * 8,
            self.b_input.as_density().words().len() as u64 * 8,
            self.b_aux.as_density().words().len() as u64 * 8,
        ];
        // Each section starts on a page boundary; the file ends with the last one.
        let mut offset = HEADER_BYTES as u64;
        for len in &sections[..SECTIONS - 1] {
            offset = align_up((offset + len) as usize) as u64;
        }
        offset + sections[SECTIONS - 1]
    }

    fn error(&self, reason: String) -> PrecompiledError {
        PrecompiledError::Record { identity: self.identity.clone(), reason }
    }

    fn record_error(&mut self, reason: String) {
        if self.sticky.is_none() {
            self.sticky = Some(self.error(reason));
        }
    }

    /// The first error recorded (an unknown variable, a limit), if any.
    pub fn take_error(&mut self) -> Option<PrecompiledError> {
        self.sticky.take()
    }

    fn new_aux(&mut self) -> Result<Variable, CircuitError> {
        if self.aux > INDEX_MAX {
            return Err(CircuitError::Invalid {
                what: "precompiled aux",
                reason: format!("more than {} aux variables", INDEX_MAX + 1),
            });
        }
        self.aux += 1;
        self.a_aux.add_element();
        self.b_aux.add_element();
        Ok(Variable(Index::Aux(self.aux - 1)))
    }

    fn new_input(&mut self) -> Result<Variable, CircuitError> {
        if self.inputs > INDEX_MAX {
            return Err(CircuitError::Invalid {
                what: "precompiled inputs",
                reason: format!("more than {} inputs", INDEX_MAX + 1),
            });
        }
        self.inputs += 1;
        self.b_input.add_element();
        Ok(Variable(Index::Input(self.inputs - 1)))
    }

    /// Adds one merged term to the current row's `side`: skipped when the coefficient is
    /// zero; density marked as bellperson marks it (A: aux; B: inputs and aux).
    #[inline]
    fn term(&mut self, side: Side, is_input: bool, index: usize, coeff: &Scalar) {
        if bool::from(coeff.is_zero()) {
            return;
        }
        let allocated = if is_input { self.inputs } else { self.aux };
        if index >= allocated {
            let what = if is_input { "input" } else { "aux" };
            self.record_error(format!("{what} {index} used in a constraint but only {allocated} allocated"));
            return;
        }
        match (side, is_input) {
            (Side::A, false) => self.a_aux.inc(index),
            (Side::B, true) => self.b_input.inc(index),
            (Side::B, false) => self.b_aux.inc(index),
            _ => {}
        }
        let s = side as usize;
        let counts = &mut self.terms[s];
        let class = if *coeff == Scalar::ONE {
            counts.one += 1;
            CLASS_ONE
        } else if *coeff == -Scalar::ONE {
            counts.minus_one += 1;
            CLASS_MINUS_ONE
        } else {
            counts.general += 1;
            CLASS_GENERAL
        };
        self.side[s].push(term_word(is_input, index, class));
        if class == CLASS_GENERAL {
            let next = self.coeffs.len() as u32;
            let k = *self.coeff_index.entry(coeff.to_bytes_le()).or_insert(next);
            if k == next {
                self.coeffs.push(*coeff);
            }
            self.side[s].push(k);
        }
        self.side_len[s] += 1;
    }

    /// Closes the current row: header, then the A, B and C terms.
    fn end_row(&mut self) {
        if self.rows % ROWS_PER_BLOCK == 0 {
            self.blocks.push(self.stream_words());
        }
        let [la, lb, lc] = self.side_len;
        let packed = la < ROW_LEN_PACKED_MAX && lb < ROW_LEN_PACKED_MAX && lc < ROW_LEN_PACKED_MAX;
        if self.count_only {
            let terms: usize = self.side.iter().map(Vec::len).sum();
            self.counted_words += (if packed { 1 } else { 4 }) + terms as u64;
        } else {
            if packed {
                self.words.push(la | lb << 10 | lc << 20);
            } else {
                self.words.extend_from_slice(&[ROW_ESCAPE, la, lb, lc]);
            }
            for side in &self.side {
                self.words.extend_from_slice(side);
            }
        }
        for side in &mut self.side {
            side.clear();
        }
        self.side_len = [0; 3];
        self.rows += 1;
    }

    fn bp_side(&mut self, side: Side, lc: &LinearCombination<Scalar>) {
        for (&i, c) in lc.iter_inputs() {
            self.term(side, true, i, c);
        }
        for (&i, c) in lc.iter_aux() {
            self.term(side, false, i, c);
        }
    }

    fn native_side(&mut self, side: Side, lc: &mut Lc) {
        lc.normalize();
        for t in lc.terms() {
            self.term(side, t.var.is_input(), t.var.index(), &t.coeff);
        }
    }

    /// The encoded file (header and sections), or the first error recorded.
    pub fn into_bytes(mut self) -> Result<Vec<u8>, PrecompiledError> {
        if let Some(e) = self.sticky.take() {
            return Err(e);
        }
        if self.count_only {
            return Err(self.error("a counting recorder keeps no row stream to encode".into()));
        }
        self.blocks.push(self.words.len() as u64);
        let le_u64 = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let sections: [Vec<u8>; SECTIONS] = [
            le_u64(&self.blocks),
            self.words.iter().flat_map(|w| w.to_le_bytes()).collect(),
            self.coeffs.iter().flat_map(|c| c.to_bytes_le()).collect(),
            le_u64(self.a_aux.as_density().words()),
            le_u64(self.b_input.as_density().words()),
            le_u64(self.b_aux.as_density().words()),
        ];
        drop(std::mem::take(&mut self.words));
        let mut header = Header {
            identity: self.identity.clone(),
            rows: self.rows as u64,
            inputs: self.inputs as u64,
            aux: self.aux as u64,
            terms: self.terms,
            sections: [Section::default(); SECTIONS],
        };
        let mut offset = HEADER_BYTES;
        for (s, bytes) in header.sections.iter_mut().zip(&sections) {
            *s = Section { offset: offset as u64, len: bytes.len() as u64, checksum: checksum_par(bytes) };
            offset = align_up(offset + bytes.len());
        }
        let mut out = header.encode();
        out.reserve(offset - HEADER_BYTES);
        for (s, bytes) in header.sections.iter().zip(&sections) {
            out.resize(s.offset as usize, 0);
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }
}

impl NativeCs for RecordingCs {
    fn alloc_aux(&mut self, _value: Scalar) -> Result<Variable, CircuitError> {
        self.new_aux()
    }
    fn alloc_input(&mut self, _value: Scalar) -> Result<Variable, CircuitError> {
        self.new_input()
    }
    fn enforce_lc(&mut self, a: &mut Lc, b: &mut Lc, c: &mut Lc) {
        self.native_side(Side::A, a);
        self.native_side(Side::B, b);
        self.native_side(Side::C, c);
        self.end_row();
    }
    fn lc_scratch(&mut self) -> &mut LcScratch {
        &mut self.scratch
    }
    fn lc_pool(&self) -> &VecPool<Term> {
        &self.pool
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.new_aux().map_err(CircuitError::into_synthesis)
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.new_input().map_err(CircuitError::into_synthesis)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let a = a(LinearCombination::zero());
        self.bp_side(Side::A, &a);
        let b = b(LinearCombination::zero());
        self.bp_side(Side::B, &b);
        let c = c(LinearCombination::zero());
        self.bp_side(Side::C, &c);
        self.end_row();
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
