//! Precompiled constraints: record a circuit's R1CS once, then synthesize each proof as
//! witness generation plus sparse products.
//!
//! The constraint system of a circuit topology (a PoRep partition of one sector size, a
//! test circuit of one size) is the same for every witness. So:
//!
//! 1. **Record** ([`record`], [`record_native`]): [`RecordingCs`] runs the circuit (a blank
//!    one will do: it never evaluates a witness closure) and encodes A, B, C as one row
//!    stream with coefficient classes (+1 and -1 never multiply) and input/aux column tags
//!    that are fixed when a term is recorded, so `alloc_input` between constraints cannot
//!    shift aux columns; plus the three density bitmaps, which depend on the structure
//!    only. [`mod@format`] has the encoding and the file layout.
//! 2. **Save and map** ([`Precompiled::save`], [`Precompiled::open`]): the file is mapped
//!    read-only ([`arenaprove_arena::MappedFile`]); its header names the circuit and its
//!    shape. A file from another circuit, of another shape, truncated, or with a bad
//!    checksum is refused with an error naming the file; every term's column and
//!    coefficient index is checked once at open, so the products cannot index out of range.
//! 3. **Synthesize** ([`Precompiled::witness_into`] then [`Precompiled::products_into`], or
//!    [`synthesize_precompiled`]): the circuit runs under [`WitnessCs`], which writes inputs
//!    and aux into the [`ArenaAssignment`]'s slabs and skips `enforce`; then a = A·w,
//!    b = B·w, c = C·w are computed block by block in parallel (rayon) straight into the
//!    assignment's a, b, c slabs, and the recorded densities are copied in.
//!
//! The result is byte-identical to [`crate::synthesize_arena`]'s (and so to bellperson
//! 0.27's `ProvingAssignment`): same inputs, aux, a, b, c and densities
//! (`tests/precompiled.rs`). Field sums are exact, so term order does not matter; zero
//! coefficients are skipped and duplicates merged exactly as bellpepper-core merges them.
//!
//! A witness synthesis that allocates a different number of inputs or aux, or enforces a
//! different number of constraints, than recorded is refused
//! ([`PrecompiledError::Mismatch`]). A circuit with the same counts but other
//! coefficients is not detected here: its proof fails verification (the engine and the C2
//! paths verify every proof).

mod error;
pub mod format;
mod parts;
mod record;
mod witness;

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bellpepper_core::Circuit;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

pub use error::PrecompiledError;
use format::*;
pub use format::{Header, TermCounts};
pub use parts::{synthesize_precompiled_parts, PartCs, PartedCircuit};
pub use record::RecordingCs;
pub use witness::WitnessCs;

use crate::native::NativeCircuit;
use crate::{ArenaAssignment, AssignmentPools, CircuitError, Shape};

/// Where a [`Precompiled`]'s bytes live.
enum Storage {
    Mapped(arenaprove_arena::MappedFile),
    Owned(Vec<u8>),
}

/// A circuit's recorded constraints, over a read-only file map or the bytes just recorded
/// (see the module docs).
pub struct Precompiled {
    source: String,
    storage: Storage,
    header: Header,
    /// Byte range of the row stream in the storage.
    stream: Range<usize>,
    /// Word offset of each block's first row, and the stream's end.
    blocks: Vec<u64>,
    coeffs: Vec<Scalar>,
    a_aux: Vec<u64>,
    b_input: Vec<u64>,
    b_aux: Vec<u64>,
    /// The windows of a parted circuit's pieces, as last measured
    /// ([`Precompiled::witness_parts`]; kept for parts of the same share).
    pieces: std::sync::Mutex<Option<parts::PieceLayout>>,
}

impl std::fmt::Debug for Precompiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Precompiled")
            .field("source", &self.source)
            .field("identity", &self.header.identity)
            .field("shape", &self.shape())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// Records `circuit` (bellpepper-core) as circuit `identity`.
pub fn record<C: Circuit<Scalar>>(circuit: C, identity: &str) -> Result<Precompiled, PrecompiledError> {
    let mut cs = RecordingCs::new(identity)?;
    if let Err(e) = circuit.synthesize(&mut cs) {
        return Err(cs.take_error().unwrap_or_else(|| PrecompiledError::Record {
            identity: identity.to_string(),
            reason: format!("synthesis failed: {e}"),
        }));
    }
    Precompiled::from_bytes(cs.into_bytes()?, "<memory>")
}

/// Records a native circuit as circuit `identity`.
pub fn record_native<C: NativeCircuit + ?Sized>(
    circuit: &C,
    identity: &str,
) -> Result<Precompiled, PrecompiledError> {
    let mut cs = RecordingCs::new(identity)?;
    if let Err(e) = circuit.synthesize_native(&mut cs) {
        return Err(cs.take_error().unwrap_or_else(|| PrecompiledError::Record {
            identity: identity.to_string(),
            reason: format!("synthesis failed: {e}"),
        }));
    }
    Precompiled::from_bytes(cs.into_bytes()?, "<memory>")
}

fn le_u64s(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect()
}

/// A cursor over the row stream's little-endian words.
struct Words<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Words<'_> {
    #[inline(always)]
    fn next(&mut self) -> u32 {
        let b = &self.bytes[self.pos..self.pos + 4];
        self.pos += 4;
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
    #[inline(always)]
    fn row_lengths(&mut self) -> [u32; 3] {
        let h = self.next();
        if h == ROW_ESCAPE {
            [self.next(), self.next(), self.next()]
        } else {
            [h & 1023, (h >> 10) & 1023, (h >> 20) & 1023]
        }
    }
    fn remaining(&self) -> usize {
        (self.bytes.len() - self.pos) / 4
    }
}

/// One side of one row: `sum coeff * w` over its `n` terms.
#[inline(always)]
fn eval(words: &mut Words<'_>, n: u32, inputs: &[Scalar], aux: &[Scalar], coeffs: &[Scalar]) -> Scalar {
    let mut acc = Scalar::ZERO;
    for _ in 0..n {
        let w = words.next();
        let i = (w & INDEX_MASK) as usize;
        let v = if w & INPUT_BIT != 0 { inputs[i] } else { aux[i] };
        match w & CLASS_MASK {
            CLASS_ONE => acc += v,
            CLASS_MINUS_ONE => acc -= v,
            _ => acc += v * coeffs[words.next() as usize],
        }
    }
    acc
}

impl Precompiled {
    /// Parses and checks an encoded file held in memory (what [`record`] produces).
    pub fn from_bytes(bytes: Vec<u8>, source: &str) -> Result<Self, PrecompiledError> {
        Self::parse(Storage::Owned(bytes), source.to_string())
    }

    /// Maps `path` read-only and checks it is a complete, intact recording of the circuit
    /// named `identity` (and of `shape`, when given).
    pub fn open(path: &Path, identity: &str, shape: Option<&Shape>) -> Result<Self, PrecompiledError> {
        let source = path.display().to_string();
        let io = |op, source_err| PrecompiledError::Io { path: source.clone(), op, source: source_err };
        let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
        let map = arenaprove_arena::MappedFile::open(&file).map_err(|e| io("map", e))?;
        // Identity before the (parallel, whole-file) checks: a file from another circuit is
        // refused at once and by name.
        let header = Header::decode(map.bytes(), &source)?;
        if header.identity != identity {
            return Err(PrecompiledError::WrongCircuit {
                path: source,
                expected: identity.to_string(),
                found: header.identity,
            });
        }
        let pc = Self::parse(Storage::Mapped(map), source)?;
        if let Some(shape) = shape {
            pc.check_shape(shape)?;
        }
        Ok(pc)
    }

    /// Refuses unless this recording has `shape`'s constraints, inputs and aux.
    pub fn check_shape(&self, shape: &Shape) -> Result<(), PrecompiledError> {
        let found = self.shape();
        if (found.constraints, found.inputs, found.aux) != (shape.constraints, shape.inputs, shape.aux) {
            return Err(PrecompiledError::WrongShape { path: self.source.clone(), expected: *shape, found });
        }
        Ok(())
    }

    /// Writes the encoded file to `path` (through a temporary file renamed into place, so
    /// a reader never sees a partial file under that name).
    pub fn save(&self, path: &Path) -> Result<(), PrecompiledError> {
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let err = |op, e| PrecompiledError::Io { path: path.display().to_string(), op, source: e };
        // The directory may not exist yet (a parameter cache nothing else has written to).
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| err("create directory", e))?;
        }
        std::fs::write(&tmp, self.bytes_all()).map_err(|e| err("write", e))?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            err("rename", e)
        })
    }

    fn bytes_all(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped(m) => m.bytes(),
            Storage::Owned(v) => v,
        }
    }

    fn parse(storage: Storage, source: String) -> Result<Self, PrecompiledError> {
        let bytes = match &storage {
            Storage::Mapped(m) => m.bytes(),
            Storage::Owned(v) => &v[..],
        };
        let header = Header::decode(bytes, &source)?;
        let expected = header.file_bytes();
        if (bytes.len() as u64) < expected {
            return Err(PrecompiledError::Truncated {
                path: source,
                expected_bytes: expected,
                found_bytes: bytes.len() as u64,
            });
        }
        let corrupt = |reason: String| PrecompiledError::Corrupt { path: source.clone(), reason };
        let range = |i: usize| {
            let s = header.sections[i];
            s.offset as usize..(s.offset + s.len) as usize
        };
        for i in 0..SECTIONS {
            if checksum_par(&bytes[range(i)]) != header.sections[i].checksum {
                return Err(corrupt(format!("{} checksum mismatch", SECTION_NAMES[i])));
            }
        }
        let rows = header.rows as usize;
        let (inputs, aux) = (header.inputs as usize, header.aux as usize);
        let blocks = le_u64s(&bytes[range(S_BLOCKS)]);
        let stream = range(S_STREAM);
        let stream_words = stream.len() as u64 / 4;
        let n_blocks = rows.div_ceil(ROWS_PER_BLOCK);
        let blocks_ok = blocks.len() == n_blocks + 1
            && blocks.first() == Some(&0)
            && blocks.last() == Some(&stream_words)
            && blocks.windows(2).all(|w| w[0] <= w[1])
            && stream.len() % 4 == 0;
        if !blocks_ok {
            return Err(corrupt(format!("block table does not cover {rows} rows of {stream_words} words")));
        }
        let coeff_bytes = &bytes[range(S_COEFFS)];
        if coeff_bytes.len() % 32 != 0 {
            return Err(corrupt(format!("coefficient table of {} bytes", coeff_bytes.len())));
        }
        let mut coeffs = Vec::with_capacity(coeff_bytes.len() / 32);
        for (k, c) in coeff_bytes.chunks_exact(32).enumerate() {
            let mut repr = [0u8; 32];
            repr.copy_from_slice(c);
            let c = Option::<Scalar>::from(Scalar::from_bytes_le(&repr))
                .ok_or_else(|| corrupt(format!("coefficient {k} is not a canonical scalar")))?;
            coeffs.push(c);
        }
        let density = |i: usize, bits: usize| -> Result<Vec<u64>, PrecompiledError> {
            let words = le_u64s(&bytes[range(i)]);
            if words.len() != crate::density::words_for_bits(bits) {
                return Err(corrupt(format!(
                    "{} of {} words for {bits} variables",
                    SECTION_NAMES[i],
                    words.len()
                )));
            }
            Ok(words)
        };
        let (a_aux, b_input, b_aux) =
            (density(S_A_AUX, aux)?, density(S_B_INPUT, inputs)?, density(S_B_AUX, aux)?);
        let pc = Precompiled {
            source,
            header,
            stream,
            blocks,
            coeffs,
            a_aux,
            b_input,
            b_aux,
            storage,
            pieces: Default::default(),
        };
        pc.validate()?;
        Ok(pc)
    }

    /// Walks every row once (blocks in parallel): lengths stay inside their block, every
    /// column is below the input / aux count, every coefficient index in the table.
    fn validate(&self) -> Result<(), PrecompiledError> {
        let stream = self.stream_bytes();
        let (inputs, aux, n_coeffs) = (self.header.inputs, self.header.aux, self.coeffs.len());
        let rows = self.rows();
        let bad = (0..self.blocks.len() - 1).into_par_iter().find_map_any(|k| {
            let bytes = &stream[self.blocks[k] as usize * 4..self.blocks[k + 1] as usize * 4];
            let mut words = Words { bytes, pos: 0 };
            let rows_here = ROWS_PER_BLOCK.min(rows - k * ROWS_PER_BLOCK);
            for r in 0..rows_here {
                let row = k * ROWS_PER_BLOCK + r;
                if words.remaining() < 1 {
                    return Some(format!("row {row} runs past its block"));
                }
                let h = words.next();
                let lens = if h == ROW_ESCAPE {
                    if words.remaining() < 3 {
                        return Some(format!("row {row} runs past its block"));
                    }
                    [words.next(), words.next(), words.next()]
                } else if h >> 30 != 0 {
                    return Some(format!("row {row}: bad header word {h:#x}"));
                } else {
                    [h & 1023, (h >> 10) & 1023, (h >> 20) & 1023]
                };
                for n in lens {
                    for _ in 0..n {
                        if words.remaining() < 1 {
                            return Some(format!("row {row} runs past its block"));
                        }
                        let w = words.next();
                        let i = u64::from(w & INDEX_MASK);
                        let (limit, what) = if w & INPUT_BIT != 0 { (inputs, "input") } else { (aux, "aux") };
                        if i >= limit {
                            return Some(format!("row {row}: {what} column {i} of {limit}"));
                        }
                        match w & CLASS_MASK {
                            CLASS_ONE | CLASS_MINUS_ONE => {}
                            CLASS_GENERAL => {
                                if words.remaining() < 1 || words.next() as usize >= n_coeffs {
                                    return Some(format!("row {row}: coefficient index out of the table"));
                                }
                            }
                            _ => return Some(format!("row {row}: unknown coefficient class")),
                        }
                    }
                }
            }
            (words.remaining() != 0)
                .then(|| format!("block {k} has {} words past its last row", words.remaining()))
        });
        match bad {
            Some(reason) => Err(PrecompiledError::Corrupt { path: self.source.clone(), reason }),
            None => Ok(()),
        }
    }

    fn stream_bytes(&self) -> &[u8] {
        &self.bytes_all()[self.stream.clone()]
    }

    /// The recorded matrices as the products read them, for a device that computes
    /// them ([`RowStream`]).
    pub fn row_stream(&self) -> RowStream<'_> {
        RowStream {
            words: self.stream_bytes(),
            blocks: &self.blocks,
            coeffs: &self.coeffs,
            rows: self.rows(),
            inputs: self.header.inputs as usize,
            aux: self.header.aux as usize,
        }
    }

    /// The circuit's identity as recorded.
    pub fn identity(&self) -> &str {
        &self.header.identity
    }

    /// Where the bytes came from (a path, or `<memory>`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the bytes are a read-only map of a file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(_))
    }

    /// The shape of the assignment this synthesizes (input rows included).
    pub fn shape(&self) -> Shape {
        self.header.shape()
    }

    /// Rows stored: the circuit's own constraints, without the `input_i * 0 = 0` rows.
    pub fn rows(&self) -> usize {
        self.header.rows as usize
    }

    /// Bytes of the encoded file (what a map of it holds resident once read).
    pub fn bytes(&self) -> usize {
        self.header.file_bytes() as usize
    }

    /// Stored terms of A, B and C by coefficient class.
    pub fn terms(&self) -> [TermCounts; 3] {
        self.header.terms
    }

    /// Entries of the deduplicated coefficient table.
    pub fn coefficients(&self) -> usize {
        self.coeffs.len()
    }

    /// `A^T w`, `B^T w` and `C^T w`: for each variable (inputs first, then aux), the sum
    /// over the rows of its coefficient times that row's weight `weights[row]`, the
    /// `input_i * 0 = 0` rows included (row `rows + i`, input i in A). With the Lagrange
    /// coefficients at tau as weights these are the circuit's QAP polynomials at tau, what a
    /// parameter generator needs: so parameters can be made from a recording without
    /// synthesizing the circuit. Parallel over variable ranges (each range scans the whole
    /// stream and keeps its own terms: no shared writes).
    pub fn column_sums(&self, weights: &[Scalar]) -> Result<[Vec<Scalar>; 3], CircuitError> {
        let (rows, inputs, aux) = (self.rows(), self.header.inputs as usize, self.header.aux as usize);
        if weights.len() < rows + inputs {
            return Err(CircuitError::Invalid {
                what: "weights",
                reason: format!("{} weights for {rows} rows and {inputs} input rows", weights.len()),
            });
        }
        let vars = inputs + aux;
        let mut out = [vec![Scalar::ZERO; vars], vec![Scalar::ZERO; vars], vec![Scalar::ZERO; vars]];
        let stream = self.stream_bytes();
        let (blocks, coeffs) = (&self.blocks, &self.coeffs);
        let span = vars.div_ceil(rayon::current_num_threads() * 4).max(1 << 12);
        let [oa, ob, oc] = &mut out;
        oa.par_chunks_mut(span)
            .zip(ob.par_chunks_mut(span))
            .zip(oc.par_chunks_mut(span))
            .enumerate()
            .for_each(|(k, ((a, b), c))| {
                let lo = k * span;
                let hi = lo + a.len();
                let mut sides = [a, b, c];
                for blk in 0..blocks.len() - 1 {
                    let bytes = &stream[blocks[blk] as usize * 4..blocks[blk + 1] as usize * 4];
                    let mut words = Words { bytes, pos: 0 };
                    let first = blk * ROWS_PER_BLOCK;
                    for &weight in &weights[first..(first + ROWS_PER_BLOCK).min(rows)] {
                        let lens = words.row_lengths();
                        for (side, n) in sides.iter_mut().zip(lens) {
                            for _ in 0..n {
                                let w = words.next();
                                let i = (w & INDEX_MASK) as usize;
                                let var = if w & INPUT_BIT != 0 { i } else { inputs + i };
                                let class = w & CLASS_MASK;
                                // A general term's coefficient index follows it (read it
                                // even when the term is another range's).
                                let g = if class == CLASS_GENERAL { words.next() as usize } else { 0 };
                                if var < lo || var >= hi {
                                    continue;
                                }
                                side[var - lo] += match class {
                                    CLASS_ONE => weight,
                                    CLASS_MINUS_ONE => -weight,
                                    _ => weight * coeffs[g],
                                };
                            }
                        }
                    }
                }
                // The input rows: input i alone in A, at row rows + i.
                for var in lo..hi.min(inputs) {
                    sides[0][var - lo] += weights[rows + var];
                }
            });
        Ok(out)
    }

    /// The A and B query lengths the circuit's parameters have (what the prover checks them
    /// against): every input plus the aux variables in A; the inputs and aux variables in B.
    pub fn query_points(&self) -> (usize, usize) {
        let ones = |w: &[u64]| w.iter().map(|x| x.count_ones() as usize).sum::<usize>();
        (self.header.inputs as usize + ones(&self.a_aux), ones(&self.b_input) + ones(&self.b_aux))
    }

    fn mismatch(&self, what: &'static str, synthesized: usize, recorded: usize) -> CircuitError {
        CircuitError::Precompiled(PrecompiledError::Mismatch {
            identity: self.header.identity.clone(),
            what,
            synthesized,
            recorded,
        })
    }

    /// Witness-only synthesis of `circuit` into `cs`, which holds ONE only (as the
    /// engine hands it over). Checks the counts against the recording.
    pub fn witness_into<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        cs: &mut ArenaAssignment,
    ) -> Result<(), CircuitError> {
        self.witness_with(cs, true, |w| circuit.synthesize(w).map_err(CircuitError::Synthesis))
    }

    /// [`Precompiled::witness_into`] for a native circuit.
    pub fn witness_into_native<C: NativeCircuit + ?Sized>(
        &self,
        circuit: &C,
        cs: &mut ArenaAssignment,
    ) -> Result<(), CircuitError> {
        self.witness_with(cs, true, |w| circuit.synthesize_native(w))
    }

    /// Witness-only synthesis with `is_witness_generator` as given (tests check both).
    pub fn witness_with(
        &self,
        cs: &mut ArenaAssignment,
        generator: bool,
        run: impl FnOnce(&mut WitnessCs<'_>) -> Result<(), CircuitError>,
    ) -> Result<(), CircuitError> {
        let constraints = self.witness_run(cs, generator, run)?;
        self.check_witness_counts(cs)?;
        if constraints != self.rows() {
            return Err(self.mismatch("constraints", constraints, self.rows()));
        }
        Ok(())
    }

    /// An error unless `cs` holds exactly the recorded number of inputs and aux.
    fn check_witness_counts(&self, cs: &ArenaAssignment) -> Result<(), CircuitError> {
        let (inputs, aux) = cs.witness_values();
        let h = &self.header;
        if inputs.len() as u64 != h.inputs {
            return Err(self.mismatch("inputs", inputs.len(), h.inputs as usize));
        }
        if aux.len() as u64 != h.aux {
            return Err(self.mismatch("aux", aux.len(), h.aux as usize));
        }
        Ok(())
    }

    /// Runs `run` under a [`WitnessCs`] over `cs`, which must hold ONE only; returns the
    /// constraints it enforced (the caller checks the counts).
    fn witness_run(
        &self,
        cs: &mut ArenaAssignment,
        generator: bool,
        run: impl FnOnce(&mut WitnessCs<'_>) -> Result<(), CircuitError>,
    ) -> Result<usize, CircuitError> {
        let (inputs, aux) = cs.witness_values();
        if (inputs.len(), aux.len()) != (1, 0) {
            return Err(CircuitError::Invalid {
                what: "assignment",
                reason: format!(
                    "witness synthesis needs ONE only, found {} inputs, {} aux",
                    inputs.len(),
                    aux.len()
                ),
            });
        }
        let mut w = WitnessCs::new(cs, generator);
        let result = run(&mut w);
        let constraints = w.constraints;
        if let Some(e) = w.sticky.take() {
            return Err(e);
        }
        result?;
        Ok(constraints)
    }

    /// a = A·w, b = B·w, c = C·w for the recorded rows, in parallel, into `cs`'s a, b, c
    /// slabs, and the recorded densities into its bitmaps. `cs` holds the witness
    /// ([`Precompiled::witness_into`]) and no rows yet; the `input_i * 0 = 0` rows come
    /// with [`ArenaAssignment::finish`].
    pub fn products_into(&self, cs: &mut ArenaAssignment) -> Result<(), CircuitError> {
        self.check_witness_counts(cs)?;
        cs.set_densities(&self.a_aux, &self.b_input, &self.b_aux)?;
        let fill = cs.abc_fill(self.rows())?;
        let (inputs, aux, coeffs) = (fill.inputs, fill.aux, &self.coeffs[..]);
        let stream = self.stream_bytes();
        let blocks = &self.blocks;
        fill.a
            .par_chunks_mut(ROWS_PER_BLOCK)
            .zip(fill.b.par_chunks_mut(ROWS_PER_BLOCK))
            .zip(fill.c.par_chunks_mut(ROWS_PER_BLOCK))
            .enumerate()
            .for_each(|(k, ((a, b), c))| {
                let bytes = &stream[blocks[k] as usize * 4..blocks[k + 1] as usize * 4];
                let mut words = Words { bytes, pos: 0 };
                for r in 0..a.len() {
                    let [la, lb, lc] = words.row_lengths();
                    a[r] = eval(&mut words, la, inputs, aux, coeffs);
                    b[r] = eval(&mut words, lb, inputs, aux, coeffs);
                    c[r] = eval(&mut words, lc, inputs, aux, coeffs);
                }
            });
        Ok(())
    }

    /// Leaves a, b, c to the backend: sets the recorded densities and the row count on the
    /// witness-only assignment `cs` (which holds the witness, [`Precompiled::witness_into`]
    /// or [`Precompiled::witness_parts`], and no rows yet) and records this recording as
    /// the source of its products ([`crate::ProverWitness::deferred_products`]). The
    /// backend then computes exactly what [`Precompiled::products_into`] would have.
    pub fn defer_products(self: &Arc<Self>, cs: &mut ArenaAssignment) -> Result<(), CircuitError> {
        self.check_witness_counts(cs)?;
        cs.set_densities(&self.a_aux, &self.b_input, &self.b_aux)?;
        cs.defer_abc(self.rows(), self.clone())
    }

    /// [`Precompiled::products_into`] where `cs` holds a, b, c slabs (leased now, waiting
    /// for a set, when it takes them late: [`ArenaAssignment::witness_then_abc`]), else
    /// [`Precompiled::defer_products`]: the products go where the assignment has room.
    pub fn products_or_defer(self: &Arc<Self>, cs: &mut ArenaAssignment) -> Result<(), CircuitError> {
        if cs.takes_abc_late() {
            cs.lease_abc_late()?;
        }
        if cs.holds_abc_slabs() {
            self.products_into(cs)
        } else {
            self.defer_products(cs)
        }
    }

    /// Maps `path` if it holds this circuit's recording, else records it with `record`,
    /// saves it there and maps it (a save that fails is reported in
    /// [`Origin::RecordedUnsaved`] and the recording is used from memory). A file of
    /// another circuit or a damaged one is replaced.
    pub fn open_or_record(
        path: &Path,
        identity: &str,
        shape: Option<&Shape>,
        record: impl FnOnce() -> Result<Precompiled, PrecompiledError>,
    ) -> Result<(Precompiled, Origin), PrecompiledError> {
        let reason = match Self::open(path, identity, shape) {
            Ok(pc) => return Ok((pc, Origin::Mapped)),
            Err(PrecompiledError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(e.to_string()),
        };
        let pc = record()?;
        if let Some(shape) = shape {
            pc.check_shape(shape)?;
        }
        if pc.identity() != identity {
            return Err(PrecompiledError::Record {
                identity: identity.to_string(),
                reason: format!("the recorder named it '{}'", pc.identity()),
            });
        }
        // Saved, the recording is used through a map of the file, like in later runs (the
        // recorded bytes are freed, and the file is proven to read back).
        match pc.save(path).and_then(|()| Self::open(path, identity, shape)) {
            Ok(mapped) => Ok((mapped, Origin::Recorded { replaced: reason })),
            Err(e) => Ok((pc, Origin::RecordedUnsaved { why: e.to_string() })),
        }
    }
}

/// A recording's matrices as [`Precompiled::products_into`] reads them: the row stream
/// (little-endian `u32` words, [`format`]), the word offset of each block of
/// [`format::ROWS_PER_BLOCK`] rows followed by the stream's end, and the coefficient table
/// (scalars as in memory: Montgomery form). Every column index is below `inputs` or `aux`
/// and every coefficient index below `coeffs.len()` (checked at open).
#[derive(Clone, Copy, Debug)]
pub struct RowStream<'a> {
    pub words: &'a [u8],
    pub blocks: &'a [u64],
    pub coeffs: &'a [Scalar],
    pub rows: usize,
    pub inputs: usize,
    pub aux: usize,
}

/// How [`Precompiled::open_or_record`] got its recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Mapped from the file.
    Mapped,
    /// Recorded now and saved; `replaced` says why an existing file was not used.
    Recorded { replaced: Option<String> },
    /// Recorded now; saving failed (a read-only cache), so the next process records again.
    RecordedUnsaved { why: String },
}

/// Synthesizes `circuit` into a new assignment through precompiled constraints: ONE,
/// witness-only synthesis, the products, then the `input_i * 0 = 0` rows. The result
/// equals [`crate::synthesize_arena`]'s.
pub fn synthesize_precompiled<C: Circuit<Scalar>>(
    circuit: C,
    pc: &Precompiled,
    pools: &AssignmentPools,
    shape: &Shape,
) -> Result<ArenaAssignment, CircuitError> {
    let mut cs = ArenaAssignment::new(pools, shape)?;
    cs.alloc_one()?;
    pc.witness_into(circuit, &mut cs)?;
    pc.products_into(&mut cs)?;
    cs.finish()?;
    Ok(cs)
}

/// [`synthesize_precompiled`] for a native circuit (recorded with [`record_native`]).
pub fn synthesize_precompiled_native<C: NativeCircuit + ?Sized>(
    circuit: &C,
    pc: &Precompiled,
    pools: &AssignmentPools,
    shape: &Shape,
) -> Result<ArenaAssignment, CircuitError> {
    let mut cs = ArenaAssignment::new(pools, shape)?;
    cs.alloc_one()?;
    pc.witness_into_native(circuit, &mut cs)?;
    pc.products_into(&mut cs)?;
    cs.finish()?;
    Ok(cs)
}
