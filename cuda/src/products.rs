//! Proving from the witness alone (`kernels/products.cu`):
//!
//! * a = A·w, b = B·w, c = C·w from a precompiled recording's row stream, equal to the
//!   host's `Precompiled::products_into` bit for bit. [`Gpu::upload_rows`] makes a
//!   recording resident once (the stream, its block table, its coefficients, and one word
//!   offset per row computed on the device so the products run one thread per row);
//!   [`Gpu::h_quotient_rows`] then computes a, b, c straight into the h pipeline's buffers
//!   from the witness, so the host never holds them.
//! * The L, A and B MSMs' split vectors built on the device from the aux assignment and a
//!   density bitmap ([`Gpu::msm_witness_g1`], [`Gpu::msm_witness_g2`]): the aux goes up
//!   as the slab holds it (Montgomery form), and the selected variables are gathered, as
//!   canonical scalars, to where the MSM's layout keeps its scalars.
//!
//! [`Gpu::products`] is the same kernel with the stream uploaded per call and a, b, c read
//! back, for the equality test and `filecoin witness --device-products`.

use arenaprove_circuits::precompiled::format::ROWS_PER_BLOCK;
use arenaprove_circuits::precompiled::RowStream;
use arenaprove_circuits::{Density, Precompiled};
use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Projective, G2Projective, Scalar};

use crate::arena::{Bump, DevPtr, DevSpan, SPAN_ALIGN_BYTES};
use crate::aux_pack::{AuxPack, PACK_BLOCK};
use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::Dims;
use crate::msm::{
    combine_parts, msm_scratch_bytes, BaseSet, Curve, G1Bases, G2Bases, Scalars, MSM_POINTS_MAX, SCALAR_BYTES,
};
use crate::ntt::{h_spans, DeviceH};
use crate::ntt_tables::FR_BYTES;

/// Threads per CUDA block of the row-block walk (one thread per block of rows).
const WALK_THREADS: u32 = 64;
/// Threads per CUDA block of the per-row and per-variable kernels.
const THREADS: u32 = 256;
/// Density words per chunk of the split-vector prefix (as `CHUNK_WORDS` in products.cu).
const CHUNK_WORDS: usize = 64;

/// A recording's rows in device memory: the stream, the block table, the per-row offsets
/// and the coefficient table.
#[derive(Clone, Copy, Debug)]
struct RowSpans {
    stream: DevSpan,
    blocks: DevSpan,
    offsets: DevSpan,
    coeffs: DevSpan,
}

/// Lays out the spans of `m`'s rows with `take` (persistent or scratch).
fn row_spans(
    m: &RowStream<'_>,
    mut take: impl FnMut(&'static str, usize) -> Result<DevSpan>,
) -> Result<RowSpans> {
    Ok(RowSpans {
        stream: take("recording: row stream", m.words.len())?,
        blocks: take("recording: block table", std::mem::size_of_val(m.blocks))?,
        offsets: take("recording: row offsets", m.rows * 4)?,
        coeffs: take("recording: coefficients", m.coeffs.len() * FR_BYTES)?,
    })
}

/// Device bytes of a resident recording (its spans as [`Gpu::upload_rows`] carves them).
pub fn rows_resident_bytes(m: &RowStream<'_>) -> usize {
    let mut b = Bump::dry();
    row_spans(m, |what, len| b.take(what, len)).expect("a dry layout has room");
    b.used_bytes()
}

/// Scratch of [`Gpu::products`] for the recording `m`: the stream uploaded for the call,
/// the witness and a, b, c.
pub fn products_scratch_bytes(m: &RowStream<'_>) -> usize {
    let mut b = Bump::dry();
    products_spans(&mut b, m).expect("a dry layout has room");
    b.used_bytes()
}

/// The spans of one [`Gpu::products`] call: the rows, the witness, a, b, c.
fn products_spans(b: &mut Bump, m: &RowStream<'_>) -> Result<(RowSpans, [DevSpan; 2], [DevSpan; 3])> {
    let rows = row_spans(m, |what, len| b.take(what, len))?;
    let witness =
        [b.take("products: inputs", m.inputs * FR_BYTES)?, b.take("products: aux", m.aux * FR_BYTES)?];
    let out = [
        b.take("products: a", m.rows * FR_BYTES)?,
        b.take("products: b", m.rows * FR_BYTES)?,
        b.take("products: c", m.rows * FR_BYTES)?,
    ];
    Ok((rows, witness, out))
}

/// Scratch of [`Gpu::h_quotient_rows`] for a domain of `2^log_n` and a witness of
/// `inputs` + `aux` scalars: the h pipeline's three vectors, then the witness.
pub fn h_rows_scratch_bytes(log_n: u32, inputs: usize, aux: usize) -> usize {
    let mut b = Bump::dry();
    h_rows_spans(&mut b, 1usize << log_n, inputs, aux).expect("a dry layout has room");
    b.used_bytes()
}

/// The spans of one [`Gpu::h_quotient_rows`] call: a, b, c over a domain of `n`, then the
/// witness (inputs, aux).
fn h_rows_spans(b: &mut Bump, n: usize, inputs: usize, aux: usize) -> Result<([DevSpan; 3], [DevSpan; 2])> {
    let abc = h_spans(b, n * FR_BYTES)?;
    let witness =
        [b.take("h from rows: inputs", inputs * FR_BYTES)?, b.take("h from rows: aux", aux * FR_BYTES)?];
    Ok((abc, witness))
}

/// A witness as the h stage gets it from the host: the inputs (ONE first), the aux, and
/// the aux packed for the bus when it is.
#[derive(Clone, Copy)]
struct HostWitness<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
    pack: Option<&'a AuxPack>,
}

/// A witness's staging, above the layout of the largest MSM it feeds.
#[derive(Debug)]
struct WitnessSpans {
    /// Where the MSMs' layouts keep their scalars (the start of the scratch).
    scalars: DevSpan,
    aux: DevSpan,
    /// Density words, per-word prefix, per-chunk totals (`None` when no MSM is filtered).
    dense: Option<[DevSpan; 3]>,
}

/// `msm_bytes`: the largest of the MSMs' own layouts ([`msm_scratch_bytes`]: resident or
/// streamed bases), each starting with its scalars (`n` of them at most); the staging
/// goes above it.
fn witness_spans(b: &mut Bump, msm_bytes: usize, n: usize, naux: usize, dense: bool) -> Result<WitnessSpans> {
    let scalars = b.take("witness MSM: scalars", n * SCALAR_BYTES)?;
    let taken = (n * SCALAR_BYTES).max(1).next_multiple_of(crate::arena::SPAN_ALIGN_BYTES);
    if msm_bytes > taken {
        b.take("witness MSM: the MSM's layout", msm_bytes - taken)?;
    }
    let aux = b.take("witness MSM: aux", naux * FR_BYTES)?;
    let dense = if dense {
        let words = naux.div_ceil(64);
        Some([
            b.take("witness MSM: density words", words * 8)?,
            b.take("witness MSM: word prefix", words * 4)?,
            b.take("witness MSM: chunk prefix", words.div_ceil(CHUNK_WORDS) * 4)?,
        ])
    } else {
        None
    };
    Ok(WitnessSpans { scalars, aux, dense })
}

/// One MSM a staged witness feeds ([`Gpu::stage_witness`]): its curve, its points (head
/// plus selected aux), the points per chunk of its streamed bases (`None`: resident), and
/// whether a density filters its aux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WitnessMsm {
    pub curve: Curve,
    pub n: usize,
    pub chunk: Option<usize>,
    pub dense: bool,
}

/// Scratch of a witness of `naux` aux variables staged for `msms` (the plan's figure:
/// every MSM on the default layout, [`msm_scratch_bytes`]).
pub fn witness_scratch_bytes(msms: &[WitnessMsm], naux: usize) -> usize {
    let layout = msms.iter().map(|m| msm_scratch_bytes(m.curve, m.n, m.chunk)).max().unwrap_or(0);
    let n = msms.iter().map(|m| m.n).max().unwrap_or(0);
    let mut b = Bump::dry();
    witness_spans(&mut b, layout, n, naux, msms.iter().any(|m| m.dense)).expect("a dry layout has room");
    b.used_bytes()
}

/// A witness's aux on one GPU, as the slab holds it (Montgomery form), staged once for
/// the L, A and B MSMs built from it ([`Gpu::stage_witness`]): it lies above the largest
/// of their layouts, which each MSM then lays out afresh below it. Valid while no other
/// operation lays out the scratch (an error, never a wrong sum, after one has).
#[derive(Debug)]
pub struct DeviceWitness {
    spans: WitnessSpans,
    /// Scalars' bytes below the aux: each MSM's layout must end there.
    layout_bytes: usize,
    /// The host aux it came from (address, length): each MSM must be handed that one.
    host: (usize, usize),
    arena_id: u64,
    /// The arena's scratch epoch after the last operation on it.
    epoch: u64,
}

impl DeviceWitness {
    /// Aux variables staged.
    pub fn aux_len(&self) -> usize {
        self.host.1
    }
}

/// A precompiled recording resident in one GPU's arena ([`Gpu::upload_rows`]).
#[derive(Debug)]
pub struct DeviceRows {
    spans: RowSpans,
    pub rows: usize,
    pub inputs: usize,
    pub aux: usize,
    identity: String,
    arena_id: u64,
}

impl DeviceRows {
    /// The recording's identity (for messages).
    pub fn identity(&self) -> &str {
        &self.identity
    }
}

fn check_stream(m: &RowStream<'_>) -> Result<()> {
    let want = m.rows.div_ceil(ROWS_PER_BLOCK) + 1;
    if m.blocks.len() != want {
        return Err(CudaError::Length { what: "products: block table", got: m.blocks.len(), want });
    }
    Ok(())
}

impl Gpu {
    /// Makes the recording `pc` resident in the arena's persistent part (once per kind and
    /// GPU) and computes its per-row offsets on the device.
    pub fn upload_rows(&mut self, pc: &Precompiled) -> Result<DeviceRows> {
        let m = pc.row_stream();
        check_stream(&m)?;
        self.dev.bind()?;
        let arena = self.arena_mut()?;
        let spans = row_spans(&m, |what, len| arena.carve_persistent(what, len))?;
        let arena_id = arena.id();
        // SAFETY: each span was carved for the slice copied into it.
        unsafe {
            self.dev.upload(spans.stream.ptr, m.words)?;
            self.dev.upload(spans.blocks.ptr, m.blocks)?;
            self.dev.upload(spans.coeffs.ptr, m.coeffs)?;
        }
        let nblocks = m.blocks.len() - 1;
        self.enqueue_row_offsets(&spans, nblocks, m.rows)?;
        self.dev.sync()?;
        Ok(DeviceRows {
            spans,
            rows: m.rows,
            inputs: m.inputs,
            aux: m.aux,
            identity: pc.identity().to_string(),
            arena_id,
        })
    }

    fn enqueue_row_offsets(&self, s: &RowSpans, nblocks: usize, rows: usize) -> Result<()> {
        self.dev.k.pce_row_offsets.launch(
            Dims::per_item(nblocks, WALK_THREADS),
            s.stream.dev_ptr(),
            s.blocks.dev_ptr(),
            nblocks,
            rows,
            s.offsets.dev_ptr(),
        )
    }

    /// Enqueues a, b, c (`rows` each, at `out`) from the rows `s` and the witness on the
    /// device.
    fn enqueue_products(
        &self,
        s: &RowSpans,
        rows: usize,
        inputs: DevPtr,
        aux: DevPtr,
        out: [DevPtr; 3],
    ) -> Result<()> {
        self.dev.k.pce_products.launch(
            Dims::per_item(rows, THREADS),
            s.stream.dev_ptr(),
            s.blocks.dev_ptr(),
            s.offsets.dev_ptr(),
            rows,
            s.coeffs.dev_ptr(),
            inputs,
            aux,
            out[0],
            out[1],
            out[2],
        )
    }

    /// The h pipeline ([`Gpu::h_quotient_resident`]) with a, b, c computed on the device
    /// from the resident recording `rows` and the witness (`inputs`, ONE first; `aux`):
    /// the recorded rows, then `input_i * 0 = 0` per input, then zeros to `domain_size`,
    /// exactly as the host's products, `finish` and padding lay them out. Waits for the
    /// device; [`Gpu::last_device_time`] covers the witness upload, the products and the
    /// pipeline.
    ///
    /// `pack`, when it holds this `aux` ([`AuxPack::pack`]), is what goes over the bus
    /// instead of the aux itself (unpacked on the device into the same bytes).
    pub fn h_quotient_rows(
        &mut self,
        rows: &DeviceRows,
        inputs: &[Scalar],
        aux: &[Scalar],
        pack: Option<&AuxPack>,
        domain_size: usize,
    ) -> Result<DeviceH> {
        let checks =
            [("h from rows: inputs", inputs.len(), rows.inputs), ("h from rows: aux", aux.len(), rows.aux)];
        for (what, got, want) in checks {
            if got != want {
                return Err(CudaError::Length { what, got, want });
            }
        }
        if rows.rows + inputs.len() > domain_size {
            return Err(CudaError::Length {
                what: "h from rows: rows + input rows (over the domain)",
                got: rows.rows + inputs.len(),
                want: domain_size,
            });
        }
        let n = domain_size;
        let log_n = self.domain_log("h from rows: domain", n)?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if rows.arena_id != arena.id() {
            return Err(CudaError::ForeignHandle("resident recording"));
        }
        self.dev.bind()?;
        self.dev.timer_start()?;
        let mut bump = arena.scratch();
        let (spans, witness) = h_rows_spans(&mut bump, n, inputs.len(), aux.len())?;
        // Once a copy is queued, every way out waits for the stream first: the host slices
        // (the witness's slabs) must not go back to their pool while a copy reads them.
        let enqueued = self.enqueue_h_rows(rows, HostWitness { inputs, aux, pack }, &spans, witness, log_n);
        let done = enqueued.and_then(|()| self.h_finish(&spans[0], n, bump));
        if done.is_err() {
            let _ = self.dev.sync_all();
        }
        done
    }

    /// The copies and kernels of [`Gpu::h_quotient_rows`], enqueued.
    fn enqueue_h_rows(
        &self,
        rows: &DeviceRows,
        HostWitness { inputs, aux, pack }: HostWitness<'_>,
        spans: &[DevSpan; 3],
        [d_inputs, d_aux]: [DevSpan; 2],
        log_n: u32,
    ) -> Result<()> {
        let n = 1usize << log_n;
        let (r, k) = (rows.rows, inputs.len());
        // SAFETY: every range lies in a span of this layout sized for it; the host slices
        // stay borrowed until the caller waits for the stream (`h_finish`, or a sync on
        // an error), after these copies on the same stream.
        unsafe {
            self.dev.upload_async(d_inputs.ptr, inputs)?;
            // A packed aux goes through c's span, which the products write only later.
            self.enqueue_aux(d_aux, spans[2], aux, pack)?;
            // Past the recorded rows: a holds the inputs (their rows), everything else 0.
            if n > r + k {
                self.dev.zero(spans[0].ptr + ((r + k) * FR_BYTES) as u64, (n - r - k) * FR_BYTES)?;
            }
            if n > r {
                for s in &spans[1..] {
                    self.dev.zero(s.ptr + (r * FR_BYTES) as u64, (n - r) * FR_BYTES)?;
                }
            }
        }
        self.enqueue_products(
            &rows.spans,
            r,
            d_inputs.dev_ptr(),
            d_aux.dev_ptr(),
            spans.map(|s| s.dev_ptr()),
        )?;
        if k > 0 {
            // SAFETY: `k` scalars from the inputs' span into a's rows r .. r + k, inside a's span.
            unsafe { self.dev.copy_d2d(spans[0].ptr + (r * FR_BYTES) as u64, d_inputs.ptr, k * FR_BYTES) }?;
        }
        self.h_transforms(spans, log_n, false, true)
    }

    /// a, b, c (each `m.rows` long) of the recording `m` for the witness `inputs` (ONE
    /// first) and `aux`, computed on the device with the stream uploaded for this call
    /// (not resident). Lengths that do not match the recording are typed errors.
    /// Afterwards [`Gpu::last_device_time`] is the offsets and products kernels' time,
    /// without the copies.
    pub fn products(
        &mut self,
        m: &RowStream<'_>,
        inputs: &[Scalar],
        aux: &[Scalar],
        out: [&mut [Scalar]; 3],
    ) -> Result<()> {
        let checks = [
            ("products: inputs", inputs.len(), m.inputs),
            ("products: aux", aux.len(), m.aux),
            ("products: a", out[0].len(), m.rows),
            ("products: b", out[1].len(), m.rows),
            ("products: c", out[2].len(), m.rows),
        ];
        for (what, got, want) in checks {
            if got != want {
                return Err(CudaError::Length { what, got, want });
            }
        }
        check_stream(m)?;
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut bump = arena.scratch();
        let (spans, [d_inputs, d_aux], d_out) = products_spans(&mut bump, m)?;
        // SAFETY: each span was sized above for the slice copied into it.
        unsafe {
            self.dev.upload(spans.stream.ptr, m.words)?;
            self.dev.upload(spans.blocks.ptr, m.blocks)?;
            self.dev.upload(spans.coeffs.ptr, m.coeffs)?;
            self.dev.upload(d_inputs.ptr, inputs)?;
            self.dev.upload(d_aux.ptr, aux)?;
        }
        self.dev.timer_start()?;
        self.enqueue_row_offsets(&spans, m.blocks.len() - 1, m.rows)?;
        self.enqueue_products(
            &spans,
            m.rows,
            d_inputs.dev_ptr(),
            d_aux.dev_ptr(),
            d_out.map(|s| s.dev_ptr()),
        )?;
        self.dev.timer_stop()?;
        // The kernels alone (copies excluded): [`Gpu::last_device_time`].
        self.last_device.set(self.dev.timer_elapsed()?);
        for (host, d) in out.into_iter().zip(&d_out) {
            // SAFETY: `d` holds `m.rows` scalars written by the kernel; the download is
            // ordered after it on the compute stream.
            unsafe { self.dev.download(host, d.ptr) }?;
        }
        self.arena_mut()?.note_scratch(&bump);
        Ok(())
    }

    /// `sum s[i] * bases[i]` in G1 with resident bases, over the scalars `head` (canonical
    /// bytes) followed by the aux variables `density` selects (all of them when `None`),
    /// built on the device from `aux` as the assignment holds it.
    pub fn msm_witness_g1(
        &mut self,
        bases: &G1Bases,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G1Projective> {
        self.msm_witness_g1_over(BaseSet::Resident(bases), head, aux, density)
    }

    /// [`Gpu::msm_witness_g1`] over resident or streamed bases (the aux staged for this
    /// one MSM).
    pub fn msm_witness_g1_over(
        &mut self,
        bases: BaseSet<'_, blst_p1_affine>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G1Projective> {
        let mut w = self.stage_one(Curve::G1, &bases, head, aux, density)?;
        self.msm_witness_g1_staged(&mut w, bases, head, aux, density)
    }

    /// [`Gpu::msm_witness_g1`] in G2.
    pub fn msm_witness_g2(
        &mut self,
        bases: &G2Bases,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G2Projective> {
        self.msm_witness_g2_over(BaseSet::Resident(bases), head, aux, density)
    }

    /// [`Gpu::msm_witness_g2`] over resident or streamed bases.
    pub fn msm_witness_g2_over(
        &mut self,
        bases: BaseSet<'_, blst_p2_affine>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G2Projective> {
        let mut w = self.stage_one(Curve::G2, &bases, head, aux, density)?;
        self.msm_witness_g2_staged(&mut w, bases, head, aux, density)
    }

    /// Enqueues the aux into `dst`, as the slab holds it. With `pack` holding this `aux`
    /// (and room for its parts in `borrowed`), the packed parts go up into `borrowed` and
    /// `fr_unpack_aux` writes `dst` from them; otherwise the aux goes up whole (each way
    /// counted in [`Gpu::aux_uploads`]).
    ///
    /// # Safety
    /// `dst` holds `aux.len()` scalars; no work enqueued before this reads `borrowed`
    /// afterwards, and `borrowed` does not overlap `dst`; `aux` and `pack` stay borrowed
    /// and unchanged until the stream is waited for.
    unsafe fn enqueue_aux(
        &self,
        dst: DevSpan,
        borrowed: DevSpan,
        aux: &[Scalar],
        pack: Option<&AuxPack>,
    ) -> Result<()> {
        if aux.is_empty() {
            return Ok(());
        }
        let packed = pack.filter(|p| p.holds(aux)).map(AuxPack::parts);
        let align = |b: usize| b.next_multiple_of(SPAN_ALIGN_BYTES);
        let went_packed = match packed {
            Some((codes, offsets, others))
                if align(std::mem::size_of_val(codes))
                    + align(std::mem::size_of_val(offsets))
                    + std::mem::size_of_val(others)
                    <= borrowed.len_bytes =>
            {
                let part = |offset: usize, bytes: usize| DevSpan {
                    ptr: borrowed.ptr + offset as u64,
                    len_bytes: bytes,
                };
                let d_codes = part(0, std::mem::size_of_val(codes));
                let d_offsets = part(align(d_codes.len_bytes), std::mem::size_of_val(offsets));
                let d_others = part(
                    align(d_codes.len_bytes) + align(d_offsets.len_bytes),
                    std::mem::size_of_val(others),
                );
                // SAFETY: each part lies in `borrowed` (checked above) and is sized for its
                // slice; the caller keeps the slices alive until the stream is waited for.
                unsafe {
                    self.dev.upload_async(d_codes.ptr, codes)?;
                    self.dev.upload_async(d_offsets.ptr, offsets)?;
                    if !others.is_empty() {
                        self.dev.upload_async(d_others.ptr, others)?;
                    }
                }
                self.dev.k.fr_unpack_aux.launch(
                    Dims::per_item(aux.len(), PACK_BLOCK as u32),
                    d_codes.dev_ptr(),
                    d_offsets.dev_ptr(),
                    if others.is_empty() { DevPtr::NULL } else { d_others.dev_ptr() },
                    aux.len(),
                    dst.dev_ptr(),
                )?;
                true
            }
            _ => {
                // SAFETY: forwarded to the caller.
                unsafe { self.dev.upload_async(dst.ptr, aux) }?;
                false
            }
        };
        let (packed_uploads, whole) = self.aux_uploads.get();
        self.aux_uploads.set(if went_packed {
            (packed_uploads + 1, whole)
        } else {
            (packed_uploads, whole + 1)
        });
        Ok(())
    }

    /// `aux` staged for one MSM over `bases`.
    fn stage_one<A>(
        &mut self,
        curve: Curve,
        bases: &BaseSet<'_, A>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<DeviceWitness> {
        let n = head.len() + check_density(aux, density)?;
        let msm = WitnessMsm { curve, n, chunk: bases.streamed_chunk(), dense: density.is_some() };
        self.stage_witness(aux, &[msm])
    }

    /// Uploads `aux` (as the slab holds it) once for the witness MSMs `msms`, which then
    /// run with [`Gpu::msm_witness_g1_staged`] and [`Gpu::msm_witness_g2_staged`] while
    /// no other operation lays out this GPU's scratch. A proof's L, A, B_G1 and B_G2 MSMs
    /// read one aux: staged once, it goes over the bus once, not four times (at 2^27,
    /// ~78 ms each). `last_device_time` is then the copy's.
    pub fn stage_witness(&mut self, aux: &[Scalar], msms: &[WitnessMsm]) -> Result<DeviceWitness> {
        self.stage_witness_packed(aux, None, msms)
    }

    /// [`Gpu::stage_witness`] with `pack`, when it holds this `aux`, going over the bus
    /// instead of the aux (unpacked on the device into the same bytes).
    pub fn stage_witness_packed(
        &mut self,
        aux: &[Scalar],
        pack: Option<&AuxPack>,
        msms: &[WitnessMsm],
    ) -> Result<DeviceWitness> {
        let n = msms.iter().map(|m| m.n).max().unwrap_or(0);
        if n > MSM_POINTS_MAX {
            return Err(CudaError::Limit { what: "MSM points", value: n, limit: MSM_POINTS_MAX });
        }
        let layout = msms.iter().map(|m| self.msm_layout_bytes(m.curve, m.n, m.chunk)).max().unwrap_or(0);
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        self.dev.bind()?;
        let mut b = arena.scratch();
        let spans = witness_spans(&mut b, layout, n, aux.len(), msms.iter().any(|m| m.dense))?;
        self.dev.timer_start()?;
        let layout_bytes = (spans.aux.ptr - spans.scalars.ptr) as usize;
        // A packed aux goes through the MSMs' layout below the staged aux: nothing of it is
        // laid out before the first MSM.
        let below = DevSpan { ptr: spans.scalars.ptr, len_bytes: layout_bytes };
        // SAFETY: the aux span holds `aux.len()` scalars and `below` is this layout's own;
        // the stream is waited for before the host slices are released.
        let copied = unsafe { self.enqueue_aux(spans.aux, below, aux, pack) };
        let synced = self.dev.sync();
        copied?;
        synced?;
        self.dev.timer_stop()?;
        self.last_device.set(self.dev.timer_elapsed()?);
        let arena = self.arena_mut()?;
        arena.note_scratch(&b);
        Ok(DeviceWitness {
            spans,
            layout_bytes,
            host: (aux.as_ptr() as usize, aux.len()),
            arena_id: arena.id(),
            epoch: arena.scratch_epoch(),
        })
    }

    /// `sum s[i] * bases[i]` in G1 over `head` then the aux variables `density` selects,
    /// gathered from the staged `w` (`aux` must be the slice it was staged from).
    pub fn msm_witness_g1_staged(
        &mut self,
        w: &mut DeviceWitness,
        bases: BaseSet<'_, blst_p1_affine>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G1Projective> {
        let parts = self.msm_witness::<_, blst_p1>(w, Curve::G1, bases, head, aux, density)?;
        Ok(combine_parts(&parts))
    }

    /// [`Gpu::msm_witness_g1_staged`] in G2.
    pub fn msm_witness_g2_staged(
        &mut self,
        w: &mut DeviceWitness,
        bases: BaseSet<'_, blst_p2_affine>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<G2Projective> {
        let parts = self.msm_witness::<_, blst_p2>(w, Curve::G2, bases, head, aux, density)?;
        Ok(combine_parts(&parts))
    }

    fn msm_witness<A, J: Copy + Default>(
        &mut self,
        w: &mut DeviceWitness,
        curve: Curve,
        bases: BaseSet<'_, A>,
        head: &[[u8; SCALAR_BYTES]],
        aux: &[Scalar],
        density: Option<Density<'_>>,
    ) -> Result<Vec<(Vec<J>, u32)>> {
        let selected = check_density(aux, density)?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        if w.arena_id != arena.id() {
            return Err(CudaError::ForeignHandle("witness on the device"));
        }
        if w.epoch != arena.scratch_epoch() {
            return Err(CudaError::StaleScratch("witness on the device"));
        }
        if w.host != (aux.as_ptr() as usize, aux.len()) {
            return Err(CudaError::Devices(
                "witness MSM: the aux is not the one staged on the device".to_string(),
            ));
        }
        let n = head.len() + selected;
        if n == 0 {
            let parts = self.msm_over(curve, bases, Scalars::Host(&[]))?;
            w.epoch = self.arena_mut()?.scratch_epoch();
            return Ok(parts);
        }
        self.check_bases(&bases, n, "witness MSM: scalars")?;
        if n > MSM_POINTS_MAX {
            return Err(CudaError::Limit { what: "MSM points", value: n, limit: MSM_POINTS_MAX });
        }
        let layout = self.msm_layout_bytes(curve, n, bases.streamed_chunk()).max(n * SCALAR_BYTES);
        if layout > w.layout_bytes {
            return Err(CudaError::Limit {
                what: "witness MSM: layout bytes below the staged aux",
                value: layout,
                limit: w.layout_bytes,
            });
        }
        if density.is_some() && w.spans.dense.is_none() {
            return Err(CudaError::Devices(
                "witness MSM: a density, but the witness was staged for unfiltered MSMs only".to_string(),
            ));
        }
        self.dev.bind()?;
        self.dev.timer_start()?;
        // Once a copy is queued, every way out waits for the stream first: the density
        // slab must not go back to its pool while a copy reads it.
        let r = self.enqueue_gather(&w.spans, head, aux.len(), density, selected).and_then(|()| {
            // The MSM lays its spans out afresh from the scratch's start, ending below the
            // staged aux: its scalars span is `w.spans.scalars`, already filled.
            let b = arena.scratch();
            let mut b = b.ending_at(w.spans.aux.ptr);
            let pk = self.point_kernels(curve);
            let r =
                self.msm_placed(&mut b, &pk, bases, Scalars::Device { ptr: w.spans.scalars.dev_ptr(), n });
            r.map(|parts| (parts, b))
        });
        match r {
            Ok((parts, b)) => {
                let arena = self.arena_mut()?;
                arena.note_scratch(&b);
                w.epoch = arena.scratch_epoch();
                Ok(parts)
            }
            Err(e) => {
                let _ = self.dev.sync_all();
                Err(e)
            }
        }
    }

    /// The copies and kernels that put a witness MSM's scalars in place: `head`, then the
    /// aux variables `density` selects (`selected` of them) as canonical scalars, from the
    /// `naux` staged.
    fn enqueue_gather(
        &self,
        s: &WitnessSpans,
        head: &[[u8; SCALAR_BYTES]],
        naux: usize,
        density: Option<Density<'_>>,
        selected: usize,
    ) -> Result<()> {
        // SAFETY: each range lies in a span of this layout sized for it; the host slices
        // stay borrowed until the caller waits for the stream (the MSM's download, or a
        // sync on an error).
        unsafe {
            if !head.is_empty() {
                self.dev.upload_async(s.scalars.ptr, head)?;
            }
        }
        if selected == 0 {
            return Ok(());
        }
        let out = s.scalars.at(head.len() * SCALAR_BYTES);
        let k = &self.dev.k;
        match (density, s.dense) {
            (Some(d), Some([words, word_prefix, chunks])) => {
                let nwords = naux.div_ceil(64);
                let nchunks = nwords.div_ceil(CHUNK_WORDS);
                // SAFETY: the words span holds `nwords` words; the slice stays borrowed
                // until the caller waits for the stream.
                unsafe { self.dev.upload_async(words.ptr, &d.words()[..nwords]) }?;
                k.density_word_prefix.launch(
                    Dims::per_item(nchunks, THREADS),
                    words.dev_ptr(),
                    nwords,
                    word_prefix.dev_ptr(),
                    chunks.dev_ptr(),
                )?;
                k.scan_exclusive_u32.launch(Dims::blocks(1, 1024), chunks.dev_ptr(), nchunks)?;
                k.fr_gather_canonical.launch(
                    Dims::per_item(naux, THREADS),
                    s.aux.dev_ptr(),
                    naux,
                    0,
                    words.dev_ptr(),
                    word_prefix.dev_ptr(),
                    chunks.dev_ptr(),
                    out,
                )
            }
            _ => k.fr_gather_canonical.launch(
                Dims::per_item(naux, THREADS),
                s.aux.dev_ptr(),
                naux,
                1,
                DevPtr::NULL,
                DevPtr::NULL,
                DevPtr::NULL,
                out,
            ),
        }
    }
}

/// The aux variables `density` selects (all when `None`), once its length is checked.
fn check_density(aux: &[Scalar], density: Option<Density<'_>>) -> Result<usize> {
    let Some(d) = density else { return Ok(aux.len()) };
    if d.len() != aux.len() {
        return Err(CudaError::Length { what: "witness MSM: density bits", got: d.len(), want: aux.len() });
    }
    if d.words().len() < aux.len().div_ceil(64) {
        return Err(CudaError::Length {
            what: "witness MSM: density words",
            got: d.words().len(),
            want: aux.len().div_ceil(64),
        });
    }
    Ok(d.count_ones())
}

#[cfg(test)]
mod tests {
    use arenaprove_circuits::precompiled::format::{
        CLASS_GENERAL, CLASS_MASK, CLASS_MINUS_ONE, CLASS_ONE, INDEX_BITS, INPUT_BIT, ROWS_PER_BLOCK,
        ROW_ESCAPE, ROW_LEN_PACKED_MAX,
    };

    use super::*;

    /// The kernel restates the row format's constants (circuits/src/precompiled/format.rs):
    /// they must be the recorder's.
    #[test]
    fn the_kernel_reads_the_format_the_recorder_writes() {
        let cu = include_str!("../kernels/products.cu");
        assert_eq!((ROW_ESCAPE, INPUT_BIT, ROW_LEN_PACKED_MAX), (u32::MAX, 1 << 31, 1023));
        assert_eq!(
            (CLASS_ONE, CLASS_MINUS_ONE, CLASS_GENERAL, CLASS_MASK),
            (0, 1 << INDEX_BITS, 2 << INDEX_BITS, 3 << INDEX_BITS)
        );
        for needle in [
            format!("#define ROWS_PER_BLOCK {ROWS_PER_BLOCK}\n"),
            "#define ROW_ESCAPE 0xffffffffu\n".to_string(),
            format!("#define INDEX_MASK ((1u << {INDEX_BITS}) - 1)\n"),
            "#define INPUT_BIT (1u << 31)\n".to_string(),
            "len[0] = h & 1023u;".to_string(),
            "len[1] = (h >> 10) & 1023u;".to_string(),
            "len[2] = (h >> 20) & 1023u;".to_string(),
            format!("switch ((w >> {INDEX_BITS}) & 3u)"),
            format!("if (((w >> {INDEX_BITS}) & 3u) >= 2u)"),
            format!("#define CHUNK_WORDS {CHUNK_WORDS}\n"),
        ] {
            assert!(cu.contains(&needle), "kernels/products.cu lacks `{}`", needle.trim_end());
        }
    }

    /// The witness's staging lies above the largest of its MSMs' layouts (resident bases,
    /// or streamed: the chunk buffers and the chunk's layout), so each MSM (laid out
    /// afresh from the scratch's start) never overwrites the aux it is gathered from, and
    /// the scalars span is the staging's first span.
    #[test]
    fn witness_staging_sits_above_every_msm_layout() {
        for (msms, naux) in [
            (vec![(Curve::G1, 1000, false)], 1000),
            (vec![(Curve::G1, 300, true)], 5000),
            (
                vec![(Curve::G1, 1 << 17, false), (Curve::G1, 1 << 16, true), (Curve::G2, 1 << 16, true)],
                1 << 17,
            ),
        ] {
            let n_max = msms.iter().map(|m| m.1).max().unwrap();
            for chunk in [None, Some(64), Some(1 << 12), Some(n_max)] {
                let msms: Vec<_> =
                    msms.iter().map(|&(curve, n, dense)| WitnessMsm { curve, n, chunk, dense }).collect();
                let layout = msms.iter().map(|m| msm_scratch_bytes(m.curve, m.n, chunk)).max().unwrap();
                let dense = msms.iter().any(|m| m.dense);
                let mut b = Bump::dry();
                let s = witness_spans(&mut b, layout, n_max, naux, dense).unwrap();
                assert_eq!(s.scalars.ptr, 0);
                for m in &msms {
                    let own = msm_scratch_bytes(m.curve, m.n, chunk).max(m.n * SCALAR_BYTES);
                    assert!(s.aux.ptr as usize >= own, "{m:?}: aux at {} inside the MSM's {own}", s.aux.ptr);
                }
                assert_eq!(s.dense.is_some(), dense);
                assert_eq!(witness_scratch_bytes(&msms, naux), b.used_bytes());
                // The set stages the aux once: less than the MSMs staged one by one.
                if msms.len() > 1 {
                    let each: usize = msms.iter().map(|m| witness_scratch_bytes(&[*m], naux)).sum();
                    assert!(b.used_bytes() < each);
                }
            }
        }
    }
}
