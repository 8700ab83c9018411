//! Groth16 parameters in bellperson 0.27's byte format, held in resident slabs.
//!
//! Layout (all points uncompressed, big-endian counts):
//!
//! ```text
//! verifying key: alpha_g1 (96) beta_g1 (96) beta_g2 (192) gamma_g2 (192) delta_g1 (96)
//!                delta_g2 (192) | u32 n | ic[n] (96 each)
//! parameters:    verifying key | u32 n | h[n] | u32 n | l[n] | u32 n | a[n] | u32 n | b_g1[n]
//!                | u32 n | b_g2[n] (192 each)
//! ```
//!
//! Loading memory-maps the file (memmap2, through the arena's [`MappedFile`]: the one
//! `unsafe` a map needs lives there, since this crate forbids it) and decodes every point
//! straight from the map, in parallel, into one resident slab per section. In
//! `checked` mode every point is validated in parallel: a valid encoding, on the curve, in
//! the prime-order subgroup and, where bellperson 0.27 rejects it, not the point at
//! infinity (every point except the six fixed verifying-key points).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arenaprove_arena::{Ledger, MappedFile, RegionConfig, SlabPool, SlabPoolConfig, SlabVec};
use arenaprove_circuits::Shape;
use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use super::error::{Groth16Error, PointFault, Result};

/// Bytes of an uncompressed G1 point.
pub const G1_BYTES: usize = 96;
/// Bytes of an uncompressed G2 point.
pub const G2_BYTES: usize = 192;
/// Bytes of the fixed part of a verifying key: three G1 and three G2 points.
pub const VK_FIXED_BYTES: usize = 3 * G1_BYTES + 3 * G2_BYTES;
/// Limit on points per section: a count is a u32, and 2^31 G1 points are 192 GiB, above
/// any Filecoin circuit (32 GiB PoRep: h has 2^27 - 1 points).
pub const SECTION_POINTS_MAX: usize = 1 << 31;
/// Points validated per parallel task (96 KiB-192 KiB of G1 bytes: enough work to amortize
/// the task, small enough that both cores finish together).
const POINTS_PER_TASK: usize = 1024;

/// Names of the sections, as errors print them.
pub const SECTIONS: [&str; 12] = [
    "vk.alpha_g1",
    "vk.beta_g1",
    "vk.beta_g2",
    "vk.gamma_g2",
    "vk.delta_g1",
    "vk.delta_g2",
    "vk.ic",
    "h",
    "l",
    "a",
    "b_g1",
    "b_g2",
];

/// Converts a blst affine point to blstrs (same layout, no check).
#[inline]
pub fn g1(p: &blst_p1_affine) -> G1Affine {
    let mut g = G1Affine::identity();
    *g.as_mut() = *p;
    g
}
/// Converts a blst affine point to blstrs (same layout, no check).
#[inline]
pub fn g2(p: &blst_p2_affine) -> G2Affine {
    let mut g = G2Affine::identity();
    *g.as_mut() = *p;
    g
}

/// The Groth16 verifying key (bellperson 0.27's `VerifyingKey<Bls12>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    /// One point per public input, ONE included (so `ic.len()` = public inputs + 1).
    pub ic: Vec<G1Affine>,
}

impl VerifyingKey {
    /// Bytes of this key in the file format.
    pub fn encoded_bytes(&self) -> usize {
        VK_FIXED_BYTES + 4 + self.ic.len() * G1_BYTES
    }

    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(&self.alpha_g1.to_uncompressed())?;
        w.write_all(&self.beta_g1.to_uncompressed())?;
        w.write_all(&self.beta_g2.to_uncompressed())?;
        w.write_all(&self.gamma_g2.to_uncompressed())?;
        w.write_all(&self.delta_g1.to_uncompressed())?;
        w.write_all(&self.delta_g2.to_uncompressed())?;
        w.write_all(&section_count(self.ic.len())?.to_be_bytes())?;
        for p in &self.ic {
            w.write_all(&p.to_uncompressed())?;
        }
        Ok(())
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_bytes());
        self.write(&mut v).expect("writing to a Vec cannot fail");
        v
    }

    /// Reads a verifying key file (bellperson's `VerifyingKey::write` output); every point is
    /// checked. `file` names the source in errors.
    pub fn from_bytes(bytes: &[u8], file: &str) -> Result<VerifyingKey> {
        let (vk, end) = read_vk(bytes, file)?;
        if end != bytes.len() {
            return Err(Groth16Error::TrailingBytes {
                file: file.into(),
                offset: end,
                extra_bytes: bytes.len() - end,
            });
        }
        Ok(vk)
    }

    pub fn read_file(path: impl AsRef<Path>) -> Result<VerifyingKey> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| Groth16Error::Io {
            file: name.clone(),
            op: "read",
            source: e,
        })?;
        VerifyingKey::from_bytes(&bytes, &name)
    }

    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        write_file_with(path.as_ref(), |w| self.write(w))
    }

    /// Public inputs this key verifies (ONE excluded).
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }
}

fn write_file_with(
    path: &Path,
    f: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let name = path.display().to_string();
    let io = |op: &'static str| {
        let file = name.clone();
        move |e| Groth16Error::Io { file, op, source: e }
    };
    let file = std::fs::File::create(path).map_err(io("create"))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    f(&mut w).map_err(io("write"))?;
    w.flush().map_err(io("flush"))?;
    Ok(())
}

/// Where one section lies in the file.
#[derive(Clone, Copy, Debug)]
struct Section {
    name: &'static str,
    offset: usize,
    count: usize,
}

fn need(
    src: &[u8],
    file: &str,
    section: &'static str,
    index: usize,
    offset: usize,
    bytes: usize,
) -> Result<()> {
    if offset.checked_add(bytes).map_or(true, |end| end > src.len()) {
        return Err(Groth16Error::Truncated {
            file: file.into(),
            section,
            index,
            offset,
            needed_bytes: bytes,
            file_bytes: src.len(),
        });
    }
    Ok(())
}

/// Reads the u32 count that opens `section` at `offset`, and checks the whole section fits.
fn read_section(
    src: &[u8],
    file: &str,
    section: &'static str,
    offset: usize,
    point_bytes: usize,
) -> Result<Section> {
    need(src, file, section, 0, offset, 4)?;
    let raw: [u8; 4] = src[offset..offset + 4].try_into().expect("4 bytes, checked by need");
    let count = u32::from_be_bytes(raw) as usize;
    if count > SECTION_POINTS_MAX {
        return Err(Groth16Error::SectionTooLong {
            file: file.into(),
            section,
            count,
            limit: SECTION_POINTS_MAX,
        });
    }
    let body = offset + 4;
    let have = (src.len().saturating_sub(body)) / point_bytes;
    if have < count {
        // Names the first point that is not (completely) in the file.
        return Err(Groth16Error::Truncated {
            file: file.into(),
            section,
            index: have,
            offset: body + have * point_bytes,
            needed_bytes: point_bytes,
            file_bytes: src.len(),
        });
    }
    Ok(Section { name: section, offset: body, count })
}

/// One point's uncompressed encoding, both ways.
trait Encoding: Sized + Copy + Send + Sync + Default {
    const BYTES: usize;
    /// Decodes one point; `Err` says why it is refused.
    fn decode(bytes: &[u8], checked: bool, allow_infinity: bool) -> std::result::Result<Self, PointFault>;
    /// Writes the point into `out` (`BYTES` long).
    fn encode(&self, out: &mut [u8]);
}

/// Classifies a failed decode: flag bits first, then "not on the curve" (blst's deserializer
/// refuses coordinates >= p and points off the curve alike).
fn decode_fault(first: u8, rest_zero: bool) -> PointFault {
    let compressed = first & 0x80 != 0;
    let infinity = first & 0x40 != 0;
    let sign = first & 0x20 != 0;
    if compressed || (infinity && (sign || !rest_zero || first & 0x1f != 0)) {
        PointFault::BadEncoding
    } else {
        PointFault::NotOnCurve
    }
}

/// `Encoding` for one uncompressed affine encoding (G1 and G2 differ only in types, size and
/// the blst-to-blstrs conversion).
macro_rules! uncompressed_encoding {
    ($raw:ty, $affine:ty, $bytes:expr, $to_affine:expr) => {
        impl Encoding for $raw {
            const BYTES: usize = $bytes;
            #[inline]
            fn decode(
                bytes: &[u8],
                checked: bool,
                allow_infinity: bool,
            ) -> std::result::Result<Self, PointFault> {
                let repr: &[u8; $bytes] = bytes.try_into().expect("caller slices BYTES");
                if repr[0] & 0x80 != 0 {
                    // blst would read a compressed encoding here; this format has none.
                    return Err(PointFault::BadEncoding);
                }
                let p: Option<$affine> = <$affine>::from_uncompressed_unchecked(repr).into();
                let p = p.ok_or_else(|| decode_fault(repr[0], repr[1..].iter().all(|&b| b == 0)))?;
                if bool::from(p.is_identity()) {
                    return if allow_infinity { Ok(*p.as_ref()) } else { Err(PointFault::Infinity) };
                }
                if checked && !bool::from(p.is_torsion_free()) {
                    return Err(PointFault::NotInSubgroup);
                }
                Ok(*p.as_ref())
            }
            #[inline]
            fn encode(&self, out: &mut [u8]) {
                out.copy_from_slice(&$to_affine(self).to_uncompressed());
            }
        }
    };
}

uncompressed_encoding!(blst_p1_affine, G1Affine, G1_BYTES, g1);
uncompressed_encoding!(blst_p2_affine, G2Affine, G2_BYTES, g2);

/// Decodes the points of `sec` into `out`, in parallel, straight from the file's bytes.
fn decode_into<T: Encoding>(
    src: &[u8],
    file: &str,
    sec: Section,
    checked: bool,
    out: &mut [T],
    release: &(dyn Fn(usize, usize) + Sync),
) -> Result<()> {
    debug_assert_eq!(out.len(), sec.count);
    out.par_chunks_mut(POINTS_PER_TASK).enumerate().try_for_each(|(task, dst)| {
        let first = task * POINTS_PER_TASK;
        let offset = sec.offset + first * T::BYTES;
        // read_section checked that the whole section lies in `src`.
        let bytes = &src[offset..offset + dst.len() * T::BYTES];
        for (i, (d, bytes)) in dst.iter_mut().zip(bytes.chunks_exact(T::BYTES)).enumerate() {
            *d = T::decode(bytes, checked, false).map_err(|fault| Groth16Error::BadPoint {
                file: file.into(),
                section: sec.name,
                index: first + i,
                offset: offset + i * T::BYTES,
                fault,
            })?;
        }
        // This task's file bytes are decoded: they leave RSS now, not at the end of the load.
        release(offset, bytes.len());
        Ok(())
    })
}

fn read_point<T: Encoding>(
    src: &[u8],
    file: &str,
    section: &'static str,
    offset: usize,
    index: usize,
    allow_infinity: bool,
) -> Result<T> {
    need(src, file, section, index, offset, T::BYTES)?;
    T::decode(&src[offset..offset + T::BYTES], true, allow_infinity).map_err(|fault| Groth16Error::BadPoint {
        file: file.into(),
        section,
        index,
        offset,
        fault,
    })
}

/// Reads and fully checks a verifying key at offset 0; returns it and the offset after it.
fn read_vk(src: &[u8], file: &str) -> Result<(VerifyingKey, usize)> {
    let mut off = 0;
    let mut next = |bytes: usize| {
        let o = off;
        off += bytes;
        o
    };
    // bellperson reads these six with `from_uncompressed`, which accepts infinity.
    let alpha_g1 = g1(&read_point(src, file, SECTIONS[0], next(G1_BYTES), 0, true)?);
    let beta_g1 = g1(&read_point(src, file, SECTIONS[1], next(G1_BYTES), 0, true)?);
    let beta_g2 = g2(&read_point(src, file, SECTIONS[2], next(G2_BYTES), 0, true)?);
    let gamma_g2 = g2(&read_point(src, file, SECTIONS[3], next(G2_BYTES), 0, true)?);
    let delta_g1 = g1(&read_point(src, file, SECTIONS[4], next(G1_BYTES), 0, true)?);
    let delta_g2 = g2(&read_point(src, file, SECTIONS[5], next(G2_BYTES), 0, true)?);
    let sec = read_section(src, file, SECTIONS[6], off, G1_BYTES)?;
    let mut ic = vec![blst_p1_affine::default(); sec.count];
    decode_into(src, file, sec, true, &mut ic, &|_, _| {})?;
    let vk = VerifyingKey {
        alpha_g1,
        beta_g1,
        beta_g2,
        gamma_g2,
        delta_g1,
        delta_g2,
        ic: ic.iter().map(g1).collect(),
    };
    Ok((vk, sec.offset + sec.count * G1_BYTES))
}

/// Where the resident parameter slabs come from.
#[derive(Clone)]
pub struct ParamsMemory {
    pub ledger: Arc<Ledger>,
    pub region: RegionConfig,
}

impl Default for ParamsMemory {
    /// An unlimited ledger and the default (mmap, huge pages, pre-faulted) regions.
    fn default() -> Self {
        ParamsMemory { ledger: Ledger::unlimited(), region: RegionConfig::default() }
    }
}

impl ParamsMemory {
    /// Heap-backed small regions (tests).
    pub fn heap() -> Self {
        ParamsMemory { ledger: Ledger::unlimited(), region: RegionConfig::heap() }
    }

    /// One resident slab for `count` elements of `T`, named `params.<section>`.
    pub(crate) fn slab<T: arenaprove_arena::Plain>(&self, section: &str, count: usize) -> Result<SlabVec<T>> {
        let bytes = (count * std::mem::size_of::<T>()).max(1);
        let pool = SlabPool::new(
            SlabPoolConfig::new(format!("params.{section}"), bytes, 1).with_region(self.region.clone()),
            &self.ledger,
            None,
        )?;
        Ok(SlabVec::new(pool.try_lease(bytes)?))
    }
}

/// Groth16 proving parameters (bellperson 0.27's `Parameters<Bls12>`), resident in slabs.
pub struct Parameters {
    pub vk: VerifyingKey,
    h: SlabVec<blst_p1_affine>,
    l: SlabVec<blst_p1_affine>,
    a: SlabVec<blst_p1_affine>,
    b_g1: SlabVec<blst_p1_affine>,
    b_g2: SlabVec<blst_p2_affine>,
}

impl std::fmt::Debug for Parameters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parameters")
            .field("ic", &self.vk.ic.len())
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish()
    }
}

impl PartialEq for Parameters {
    fn eq(&self, o: &Self) -> bool {
        fn eq1(x: &[blst_p1_affine], y: &[blst_p1_affine]) -> bool {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| g1(p) == g1(q))
        }
        self.vk == o.vk
            && eq1(&self.h, &o.h)
            && eq1(&self.l, &o.l)
            && eq1(&self.a, &o.a)
            && eq1(&self.b_g1, &o.b_g1)
            && self.b_g2.len() == o.b_g2.len()
            && self.b_g2.iter().zip(o.b_g2.iter()).all(|(p, q)| g2(p) == g2(q))
    }
}

/// Bytes of resident parameters for a circuit of `shape` (an upper bound: every variable
/// dense in A and B), for plans made before any parameters exist.
pub fn params_bytes_for_shape(shape: &Shape) -> usize {
    let g1 = std::mem::size_of::<blst_p1_affine>();
    let g2 = std::mem::size_of::<blst::blst_p2_affine>();
    let vars = shape.inputs + shape.aux;
    (shape.domain_size.saturating_sub(1) + shape.aux + 2 * vars) * g1 + vars * g2
}

impl Parameters {
    /// Bytes of the resident point sections (h, l, a, b_g1, b_g2).
    pub fn resident_bytes(&self) -> usize {
        let g1 = std::mem::size_of::<blst_p1_affine>();
        (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) * g1
            + self.b_g2.len() * std::mem::size_of::<blst::blst_p2_affine>()
    }

    /// Builds parameters from sections (the generator's output), copying them into slabs.
    pub fn from_sections(
        vk: VerifyingKey,
        h: &[blst_p1_affine],
        l: &[blst_p1_affine],
        a: &[blst_p1_affine],
        b_g1: &[blst_p1_affine],
        b_g2: &[blst_p2_affine],
        mem: &ParamsMemory,
    ) -> Result<Parameters> {
        let put1 = |name: &str, src: &[blst_p1_affine]| -> Result<SlabVec<blst_p1_affine>> {
            let mut v = mem.slab(name, src.len())?;
            v.extend_from_slice(src)?;
            Ok(v)
        };
        let (h, l, a, b_g1) = (put1("h", h)?, put1("l", l)?, put1("a", a)?, put1("b_g1", b_g1)?);
        let mut g2v = mem.slab("b_g2", b_g2.len())?;
        g2v.extend_from_slice(b_g2)?;
        Ok(Parameters { vk, h, l, a, b_g1, b_g2: g2v })
    }

    /// Parameters from slabs already filled (the shape-only maker fills them in place).
    pub(crate) fn from_slabs(
        vk: VerifyingKey,
        h: SlabVec<blst_p1_affine>,
        l: SlabVec<blst_p1_affine>,
        a: SlabVec<blst_p1_affine>,
        b_g1: SlabVec<blst_p1_affine>,
        b_g2: SlabVec<blst_p2_affine>,
    ) -> Parameters {
        Parameters { vk, h, l, a, b_g1, b_g2 }
    }

    /// `(tau^i t(tau)) / delta`, i < domain - 1.
    pub fn h(&self) -> &[blst_p1_affine] {
        &self.h
    }
    /// One point per aux variable.
    pub fn l(&self) -> &[blst_p1_affine] {
        &self.l
    }
    /// A query without the points at infinity: all inputs, then dense aux.
    pub fn a(&self) -> &[blst_p1_affine] {
        &self.a
    }
    pub fn b_g1(&self) -> &[blst_p1_affine] {
        &self.b_g1
    }
    pub fn b_g2(&self) -> &[blst_p2_affine] {
        &self.b_g2
    }
    /// The evaluation domain these parameters were made for (`h.len() + 1`).
    pub fn domain_size(&self) -> usize {
        self.h.len() + 1
    }

    /// `Err(ShapeMismatch)` naming the first section that does not fit a circuit of
    /// `shape`: IC points against inputs, L against aux variables, H against the domain.
    pub fn check_fits(&self, shape: &Shape) -> Result<()> {
        let sections = [
            ("vk.ic", self.vk.ic.len(), shape.inputs),
            ("l", self.l.len(), shape.aux),
            ("h", self.h.len(), shape.domain_size - 1),
        ];
        match sections.into_iter().find(|&(_, params_len, circuit_len)| params_len != circuit_len) {
            Some((section, params_len, circuit_len)) => {
                Err(Groth16Error::ShapeMismatch { section, params_len, circuit_len })
            }
            None => Ok(()),
        }
    }

    /// Bytes of the encoded file.
    pub fn encoded_bytes(&self) -> usize {
        self.vk.encoded_bytes()
            + 5 * 4
            + (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) * G1_BYTES
            + self.b_g2.len() * G2_BYTES
    }

    /// Writes bellperson 0.27's `Parameters::write` format.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        self.vk.write(&mut w)?;
        write_section(&mut w, &self.h)?;
        write_section(&mut w, &self.l)?;
        write_section(&mut w, &self.a)?;
        write_section(&mut w, &self.b_g1)?;
        write_section(&mut w, &self.b_g2)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_bytes());
        self.write(&mut v).expect("writing to a Vec cannot fail");
        v
    }

    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        write_file_with(path.as_ref(), |w| self.write(w))
    }

    /// Loads a parameters file into resident slabs: the file is memory-mapped (see
    /// [`MappedFile`] for the one assumption that makes) and every point decoded from the
    /// map, in parallel, into the parameter region. `checked` validates every point (curve,
    /// subgroup, infinity); unchecked still refuses points off the curve and points at
    /// infinity, as bellperson's unchecked read does.
    pub fn read_file(path: impl AsRef<Path>, checked: bool, mem: &ParamsMemory) -> Result<Parameters> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let io = |op: &'static str| {
            let name = name.clone();
            move |e| Groth16Error::Io { file: name, op, source: e }
        };
        let file = std::fs::File::open(path).map_err(io("open"))?;
        let map = MappedFile::open(&file).map_err(io("map"))?;
        let _span = tracing::info_span!("params_load", file = %name, bytes = map.len(), checked).entered();
        // Each section's file pages leave RSS once decoded: the load never holds the file
        // and its decoded copy at once (peak RSS is the resident params, not twice them).
        Parameters::read_source(map.bytes(), &name, checked, mem, &|off, len| map.release(off, len))
    }

    /// Loads a parameters file as [`Parameters::read_file`] does unchecked (every point a
    /// valid encoding, on its curve, not at infinity), then has `check` test every point of
    /// the five sections for subgroup membership: a checked load whose subgroup half runs
    /// where `check` runs it (the CUDA backend's on the GPU). A point outside its subgroup is
    /// the same [`Groth16Error::BadPoint`] the checked load reports (section, index, file
    /// offset); the verifying key is checked on the CPU as always.
    pub fn read_file_checked_by(
        path: impl AsRef<Path>,
        check: &mut dyn SubgroupCheck,
        mem: &ParamsMemory,
    ) -> Result<Parameters> {
        let path = path.as_ref();
        let p = Parameters::read_file(path, false, mem)?;
        let _span = tracing::info_span!("params_subgroup_check", checker = %check.name()).entered();
        p.check_subgroups(&path.display().to_string(), check)?;
        Ok(p)
    }

    /// Runs `check` over the five point sections in file order; the first point outside its
    /// subgroup is an error naming it (`file` labels it).
    pub fn check_subgroups(&self, file: &str, check: &mut dyn SubgroupCheck) -> Result<()> {
        let mut offset = self.vk.encoded_bytes();
        let g1_sections: [(&'static str, &[blst_p1_affine]); 4] =
            [("h", &self.h), ("l", &self.l), ("a", &self.a), ("b_g1", &self.b_g1)];
        let bad = |section, start: usize, index: usize, bytes: usize| Groth16Error::BadPoint {
            file: file.into(),
            section,
            index,
            offset: start + index * bytes,
            fault: PointFault::NotInSubgroup,
        };
        for (section, points) in g1_sections {
            let start = offset + 4;
            if let Some(i) = check.first_outside_g1(points)? {
                return Err(bad(section, start, i, G1_BYTES));
            }
            offset = start + points.len() * G1_BYTES;
        }
        let start = offset + 4;
        if let Some(i) = check.first_outside_g2(&self.b_g2)? {
            return Err(bad("b_g2", start, i, G2_BYTES));
        }
        Ok(())
    }

    /// Loads parameters from bytes in memory; `name` labels errors.
    pub fn from_bytes(bytes: &[u8], name: &str, checked: bool, mem: &ParamsMemory) -> Result<Parameters> {
        Parameters::read_source(bytes, name, checked, mem, &|_, _| {})
    }

    fn read_source(
        src: &[u8],
        file: &str,
        checked: bool,
        mem: &ParamsMemory,
        release: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Parameters> {
        let (vk, mut off) = read_vk(src, file)?;
        let g1_section = |name: &'static str, off: &mut usize| -> Result<SlabVec<blst_p1_affine>> {
            let sec = read_section(src, file, name, *off, G1_BYTES)?;
            let mut v = mem.slab::<blst_p1_affine>(name, sec.count)?;
            decode_into(src, file, sec, checked, v.extend_stale(sec.count)?, release)?;
            *off = sec.offset + sec.count * G1_BYTES;
            Ok(v)
        };
        let h = g1_section("h", &mut off)?;
        let l = g1_section("l", &mut off)?;
        let a = g1_section("a", &mut off)?;
        let b_g1 = g1_section("b_g1", &mut off)?;
        let sec = read_section(src, file, "b_g2", off, G2_BYTES)?;
        let mut b_g2 = mem.slab::<blst_p2_affine>("b_g2", sec.count)?;
        decode_into(src, file, sec, checked, b_g2.extend_stale(sec.count)?, release)?;
        let end = sec.offset + sec.count * G2_BYTES;
        if end != src.len() {
            return Err(Groth16Error::TrailingBytes {
                file: file.into(),
                offset: end,
                extra_bytes: src.len() - end,
            });
        }
        Ok(Parameters { vk, h, l, a, b_g1, b_g2 })
    }
}

/// Tests points already known to lie on their curve for membership of the prime-order
/// subgroup, many at a time: the second half of a checked load
/// ([`Parameters::read_file_checked_by`]). [`CpuSubgroupCheck`] runs blst's test on every
/// core; the CUDA backend runs the same test on the GPU.
pub trait SubgroupCheck {
    /// Who checks, for logs ("cpu", "CUDA device 0").
    fn name(&self) -> String;
    /// The index of the first of `points` outside G1's prime-order subgroup, if any.
    fn first_outside_g1(&mut self, points: &[blst_p1_affine]) -> Result<Option<usize>>;
    /// The index of the first of `points` outside G2's prime-order subgroup, if any.
    fn first_outside_g2(&mut self, points: &[blst_p2_affine]) -> Result<Option<usize>>;
}

/// Makes the [`SubgroupCheck`] a checked load runs (a GPU's, opened for that load and closed
/// after it): what a loader that may run on either takes (the Filecoin driver's
/// `LoadOptions`).
pub type SubgroupCheckSource = Arc<dyn Fn() -> Box<dyn SubgroupCheck> + Send + Sync>;

/// blst's subgroup tests (Scott's endomorphism tests) on every core, as the checked load
/// runs them.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSubgroupCheck;

impl CpuSubgroupCheck {
    fn first_outside<T: Sync>(points: &[T], inside: impl Fn(&T) -> bool + Sync) -> Option<usize> {
        points
            .par_chunks(POINTS_PER_TASK)
            .enumerate()
            .find_first(|(_, chunk)| !chunk.iter().all(&inside))
            .and_then(|(task, chunk)| {
                chunk.iter().position(|p| !inside(p)).map(|i| task * POINTS_PER_TASK + i)
            })
    }
}

impl SubgroupCheck for CpuSubgroupCheck {
    fn name(&self) -> String {
        "cpu".into()
    }
    fn first_outside_g1(&mut self, points: &[blst_p1_affine]) -> Result<Option<usize>> {
        Ok(Self::first_outside(points, |p| bool::from(g1(p).is_torsion_free())))
    }
    fn first_outside_g2(&mut self, points: &[blst_p2_affine]) -> Result<Option<usize>> {
        Ok(Self::first_outside(points, |p| bool::from(g2(p).is_torsion_free())))
    }
}

/// Points on G1's curve, nearly all outside the prime-order subgroup: `x` from `seed`
/// upwards, the first `count` x whose `x^3 + 4` is a square. For tests of subgroup checks
/// (here, the CUDA crate, the Filecoin driver, the CLI).
#[doc(hidden)]
pub fn g1_points_on_curve(seed: u64, count: usize) -> Vec<blst_p1_affine> {
    use blstrs::Fp;
    use ff::Field;
    (seed..)
        .filter_map(|i| {
            let x = Fp::from(i);
            let y = Option::<Fp>::from((x.square() * x + Fp::from(4u64)).sqrt())?;
            Some(*G1Affine::from_raw_unchecked(x, y, false).as_ref())
        })
        .take(count)
        .collect()
}

/// As [`g1_points_on_curve`] on G2's curve (`y^2 = x^3 + 4 (1 + u)`), with x = i + u.
#[doc(hidden)]
pub fn g2_points_on_curve(seed: u64, count: usize) -> Vec<blst_p2_affine> {
    use blstrs::{Fp, Fp2};
    use ff::Field;
    let b = Fp2::new(Fp::from(4u64), Fp::from(4u64));
    (seed..)
        .filter_map(|i| {
            let x = Fp2::new(Fp::from(i), Fp::ONE);
            let y = Option::<Fp2>::from((x.square() * x + b).sqrt())?;
            Some(*G2Affine::from_raw_unchecked(x, y, false).as_ref())
        })
        .take(count)
        .collect()
}

/// The first of [`g1_points_on_curve`] outside the subgroup (blst says so), uncompressed as
/// a parameters file holds it: for tests that plant one in a file.
#[doc(hidden)]
pub fn g1_outside_subgroup_bytes() -> [u8; G1_BYTES] {
    g1_points_on_curve(1, 64)
        .iter()
        .map(g1)
        .find(|p| !bool::from(p.is_torsion_free()))
        .expect("nearly every curve point is outside the subgroup")
        .to_uncompressed()
}

/// A parameters file's point counts, read from its headers alone: the file is mapped and
/// walked section by section as the loader walks it ([`read_section`]: each u32 count
/// checked against the limit and the file's length), but no point is read, so a plan gets
/// them without loading a 47 GB file. The file's length must be exactly what the counts say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SectionCounts {
    pub ic: usize,
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl SectionCounts {
    /// Reads the counts of the file at `path`.
    pub fn read_file(path: &Path) -> Result<SectionCounts> {
        let file = path.display().to_string();
        let io = |op| {
            let file = file.clone();
            move |source| Groth16Error::Io { file, op, source }
        };
        let f = std::fs::File::open(path).map_err(io("open"))?;
        let map = MappedFile::open(&f).map_err(io("map"))?;
        let src = map.bytes();
        let mut at = VK_FIXED_BYTES;
        let mut count = |section: &'static str, point_bytes: usize| -> Result<usize> {
            let sec = read_section(src, &file, section, at, point_bytes)?;
            at = sec.offset + sec.count * point_bytes;
            Ok(sec.count)
        };
        let counts = SectionCounts {
            ic: count(SECTIONS[6], G1_BYTES)?,
            h: count("h", G1_BYTES)?,
            l: count("l", G1_BYTES)?,
            a: count("a", G1_BYTES)?,
            b_g1: count("b_g1", G1_BYTES)?,
            b_g2: count("b_g2", G2_BYTES)?,
        };
        if at != src.len() {
            return Err(Groth16Error::TrailingBytes { file, offset: at, extra_bytes: src.len() - at });
        }
        Ok(counts)
    }

    /// The shape a prover sizes its work by, as [`super::ProofShape::of_params`] gives it
    /// for the loaded file.
    pub fn proof_shape(&self) -> super::ProofShape {
        super::ProofShape {
            inputs: self.ic,
            aux: self.l,
            domain_size: self.h + 1,
            a_points: self.a,
            b_points: self.b_g1,
        }
    }
}

/// A section's point count as the format's u32: an error (never a truncated count) beyond
/// [`SECTION_POINTS_MAX`], which the reader would refuse.
fn section_count(points: usize) -> std::io::Result<u32> {
    u32::try_from(points).ok().filter(|_| points <= SECTION_POINTS_MAX).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("a section of {points} points: the format's limit is {SECTION_POINTS_MAX}"),
        )
    })
}

/// Writes a parameter file without holding its sections: the verifying key at creation,
/// then each section's count and its points as the caller makes them, one chunk at a time
/// (the streamed generator's output: the same bytes [`Parameters::write`] writes for the
/// same points). Sections go in the file's order: h, l, a, b_g1, b_g2.
pub struct ParamsFileWriter {
    w: std::io::BufWriter<std::fs::File>,
    name: String,
    bytes: u64,
}

impl ParamsFileWriter {
    /// Creates `path` and writes `vk` (`ic` included).
    pub fn create(path: &Path, vk: &VerifyingKey) -> Result<Self> {
        let name = path.display().to_string();
        let file = std::fs::File::create(path).map_err(|e| Groth16Error::Io {
            file: name.clone(),
            op: "create",
            source: e,
        })?;
        let mut w = ParamsFileWriter { w: std::io::BufWriter::with_capacity(4 << 20, file), name, bytes: 0 };
        let mut head = Vec::with_capacity(vk.encoded_bytes());
        vk.write(&mut head).map_err(|e| w.io(e))?;
        w.put(&head)?;
        Ok(w)
    }

    /// A G1 section of `count` points: `fill(out)` makes the next `out.len()` points (at
    /// most `chunk` at a time).
    pub fn g1_section(
        &mut self,
        count: usize,
        chunk: usize,
        fill: impl FnMut(&mut [blst_p1_affine]) -> Result<()>,
    ) -> Result<()> {
        self.section(count, chunk, fill)
    }

    /// A G2 section, as [`ParamsFileWriter::g1_section`].
    pub fn g2_section(
        &mut self,
        count: usize,
        chunk: usize,
        fill: impl FnMut(&mut [blst_p2_affine]) -> Result<()>,
    ) -> Result<()> {
        self.section(count, chunk, fill)
    }

    /// Flushes the file; returns the bytes written.
    pub fn finish(mut self) -> Result<u64> {
        self.w.flush().map_err(|e| self.io(e))?;
        Ok(self.bytes)
    }

    fn section<T: Encoding>(
        &mut self,
        count: usize,
        chunk: usize,
        mut fill: impl FnMut(&mut [T]) -> Result<()>,
    ) -> Result<()> {
        let n = section_count(count).map_err(|e| self.io(e))?;
        self.put(&n.to_be_bytes())?;
        let chunk = chunk.max(1);
        let mut points = vec![T::default(); chunk.min(count)];
        let mut buf = Vec::new();
        let mut done = 0;
        while done < count {
            let out = &mut points[..chunk.min(count - done)];
            fill(out)?;
            buf.resize(out.len() * T::BYTES, 0);
            buf.par_chunks_mut(T::BYTES).zip(out.par_iter()).for_each(|(d, p)| p.encode(d));
            self.put(&buf)?;
            done += out.len();
        }
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.w.write_all(bytes).map_err(|e| self.io(e))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn io(&self, e: std::io::Error) -> Groth16Error {
        Groth16Error::Io { file: self.name.clone(), op: "write", source: e }
    }
}

/// Writes a u32 big-endian count, then the points, encoded in parallel 768 KiB at a time.
fn write_section<W: Write, T: Encoding>(w: &mut W, points: &[T]) -> std::io::Result<()> {
    w.write_all(&section_count(points.len())?.to_be_bytes())?;
    let mut buf = Vec::new();
    for chunk in points.chunks((768 << 10) / T::BYTES) {
        buf.clear();
        buf.resize(chunk.len() * T::BYTES, 0);
        buf.par_chunks_mut(T::BYTES).zip(chunk.par_iter()).for_each(|(d, p)| p.encode(d));
        w.write_all(&buf)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts read from the headers are the loaded file's; a cut or padded file is an
    /// error naming it.
    #[test]
    fn section_counts_from_the_headers_match_the_loaded_file() {
        use arenaprove_circuits::circuits::SectorPartitionCircuit;
        use rand_core::SeedableRng;
        let p = crate::groth16::generate_random_parameters(
            SectorPartitionCircuit::for_constraints(3, 1, 2000),
            &mut rand_chacha::ChaCha8Rng::seed_from_u64(9),
            &ParamsMemory::heap(),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.params");
        p.write_file(&path).unwrap();
        let c = SectionCounts::read_file(&path).unwrap();
        assert_eq!(
            [c.ic, c.h, c.l, c.a, c.b_g1, c.b_g2],
            [p.vk.ic.len(), p.h().len(), p.l().len(), p.a().len(), p.b_g1().len(), p.b_g2().len()]
        );
        assert_eq!(c.proof_shape(), crate::groth16::ProofShape::of_params(&p));
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let e = SectionCounts::read_file(&path).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains("p.params"), "{e}");
        let mut padded = bytes.clone();
        padded.push(0);
        std::fs::write(&path, &padded).unwrap();
        assert!(SectionCounts::read_file(&path).unwrap_err().to_string().contains("unexpected bytes"));
        std::fs::write(&path, &bytes[..100]).unwrap();
        assert!(SectionCounts::read_file(&path).is_err(), "cut inside the verifying key");
    }

    #[test]
    fn section_counts_are_u32_within_the_limit_never_truncated() {
        assert_eq!(section_count(0).unwrap(), 0);
        assert_eq!(section_count((1 << 27) - 1).unwrap(), (1 << 27) - 1, "a 32 GiB PoRep's h");
        assert_eq!(section_count(SECTION_POINTS_MAX).unwrap(), 1 << 31);
        assert!(section_count(SECTION_POINTS_MAX + 1).is_err());
        assert!(section_count(usize::MAX).is_err(), "2^64 - 1 would have been written as 2^32 - 1");
    }
}
