//! Every kernel the backend launches, declared once, with its C parameter list.
//!
//! One line of `kernels!` per kernel (or per family of kernels sharing one signature,
//! the G1 and G2 instances of a point kernel) generates a handle type whose `launch`
//! method takes exactly that kernel's parameters, typed, and the [`Kernels`] table that
//! loads the embedded modules and resolves every handle by name. So a launch whose
//! arguments do not match the declaration does not compile, and the test at the bottom
//! checks each declaration against the `extern "C" __global__` signature in
//! `cuda/kernels`: [`DevPtr`] for any pointer, `usize` for `size_t`, `u32` for `uint32_t`.
//!
//! The one raw launch ([`launch`], `unsafe`) is private to this module: only the generated
//! wrappers call it. A handle cannot be cloned or moved out of its [`Kernels`] (which owns
//! the loaded modules and unloads them on drop), so no handle outlives its module.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::arena::DevPtr;
use crate::error::{CudaError, DriverContext, Result};

mod embedded {
    #[cfg(feature = "kernels")]
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
    #[cfg(not(feature = "kernels"))]
    pub const FATBINS: &[(&str, &[u8])] = &[];
}

/// Whether this build carries compiled kernels (feature `kernels`).
pub fn kernels_built() -> bool {
    !embedded::FATBINS.is_empty()
}

/// A launch's shape: a grid of `grid.0 x grid.1` blocks of `block` threads, with
/// `smem_bytes` of dynamic shared memory. An empty grid launches nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dims {
    pub grid: (u32, u32),
    pub block: u32,
    pub smem_bytes: u32,
}

impl Dims {
    /// `blocks` blocks of `block` threads.
    pub fn blocks(blocks: u32, block: u32) -> Dims {
        Dims { grid: (blocks, 1), block, smem_bytes: 0 }
    }

    /// A 2-D grid of `block`-thread blocks.
    pub fn blocks_2d(grid: (u32, u32), block: u32) -> Dims {
        Dims { grid, block, smem_bytes: 0 }
    }

    /// One thread per item: `ceil(items / block)` blocks of `block` threads.
    pub fn per_item(items: usize, block: u32) -> Dims {
        let blocks =
            u32::try_from(items.div_ceil(block as usize)).expect("a grid of at most 2^32 - 1 blocks");
        Dims::blocks(blocks, block)
    }

    /// The same shape with `bytes` of dynamic shared memory.
    pub fn smem(self, bytes: u32) -> Dims {
        Dims { smem_bytes: bytes, ..self }
    }
}

/// The Rust types a kernel parameter may be declared with, one per C type the kernels
/// use: a pointer ([`DevPtr`]), `size_t` (`usize`), `uint32_t` (`u32`).
trait KernelParam: Copy {}
impl KernelParam for DevPtr {}
impl KernelParam for usize {}
impl KernelParam for u32 {}

const _: () = assert!(std::mem::size_of::<usize>() == 8, "size_t parameters are 8 bytes");

/// The driver's view of one argument: a pointer to the value it copies at launch.
fn param<T: KernelParam>(value: &mut T) -> *mut c_void {
    std::ptr::from_mut(value).cast()
}

/// Launches `f` on `stream`.
///
/// # Safety
/// - `f` is a function of a module loaded in `stream`'s context and still loaded, and that
///   context is current on this thread.
/// - `params` has one entry per parameter of `f`'s C signature, in order, each pointing at
///   a live value of that parameter's size and layout (the driver copies them before
///   returning).
/// - The device pointers among them are device memory of the context that `f` may read and
///   write as the kernel does for the counts passed, and stays allocated until the stream's
///   work is done.
unsafe fn launch(
    f: sys::CUfunction,
    stream: sys::CUstream,
    dims: Dims,
    params: &mut [*mut c_void],
) -> Result<()> {
    if dims.grid.0 == 0 || dims.grid.1 == 0 {
        return Ok(());
    }
    // A launch armed to fail (crate::fault) asks the driver for more threads per block than
    // any device has: a real cuLaunchKernel refusal, which leaves the context usable.
    let block = if crate::fault::take_launch() { 1 << 16 } else { dims.block };
    // SAFETY: forwarded to the caller (see # Safety).
    unsafe {
        result::launch_kernel(
            f,
            (dims.grid.0, dims.grid.1, 1),
            (block, 1, 1),
            dims.smem_bytes,
            stream,
            params,
        )
    }
    .op("cuLaunchKernel")
}

fn find_function(modules: &[sys::CUmodule], name: &'static str) -> Result<sys::CUfunction> {
    let c_name = CString::new(name).expect("kernel names have no NUL");
    for &m in modules {
        // SAFETY: `m` is a module loaded by `Kernels::load` and not unloaded while its
        // `Kernels` lives; `get_function` only looks a name up.
        if let Ok(f) = unsafe { result::module::get_function(m, c_name.clone()) } {
            return Ok(f);
        }
    }
    Err(CudaError::NotPrepared(name))
}

/// Declares the kernels: `Handle: name, .. (param: Type, ..);` per signature.
macro_rules! kernels {
    ($(
        $(#[doc = $doc:literal])*
        $handle:ident: $($name:ident),+ ($($arg:ident: $ty:ty),* $(,)?);
    )*) => {
        $(
            $(#[doc = $doc])*
            pub(crate) struct $handle {
                f: sys::CUfunction,
                stream: sys::CUstream,
            }

            impl $handle {
                /// The declared parameter types, for the test against the .cu sources.
                #[cfg(test)]
                const PARAMS: &'static [&'static str] = &[$(stringify!($ty)),*];

                /// Enqueues the kernel on the compute stream with these arguments.
                #[allow(clippy::too_many_arguments)]
                pub(crate) fn launch(&self, dims: Dims, $($arg: $ty),*) -> Result<()> {
                    $(let mut $arg: $ty = $arg;)*
                    let mut params = [$(param(&mut $arg)),*];
                    // SAFETY: `f` was resolved from a module the `Kernels` holding this
                    // handle keeps loaded (a handle cannot be cloned or moved out of it),
                    // and `stream` is that table's stream, in the same context, which
                    // every caller binds first. `params` point at locals of the declared
                    // types in the declared order, which the test below checks against
                    // the kernel's C signature. Device pointers are `DevPtr`s, made only
                    // from spans of the device arena; each caller sizes those spans for
                    // the counts it passes, and synchronizes before the arena can go.
                    unsafe { launch(self.f, self.stream, dims, &mut params) }
                }
            }
        )*

        /// Every kernel's handle, resolved once at open from the embedded modules, which
        /// this table owns.
        pub(crate) struct Kernels {
            $($(pub $name: $handle,)+)*
            /// Dynamic shared memory a block may opt in to on this device; the MSM's tile
            /// kernels are opted in to all of it at load.
            pub smem_optin_bytes: usize,
            modules: Vec<sys::CUmodule>,
            /// Keeps the context (for unloading) and the stream behind every handle alive.
            ctx: Arc<CudaContext>,
            _stream: Arc<CudaStream>,
        }

        impl Kernels {
            fn resolve(
                modules: Vec<sys::CUmodule>,
                ctx: &Arc<CudaContext>,
                stream: &Arc<CudaStream>,
            ) -> Result<Kernels> {
                let s = stream.cu_stream();
                // Built before the handles so that a missing kernel unloads the modules.
                let mut k = Kernels {
                    $($($name: $handle { f: std::ptr::null_mut(), stream: s },)+)*
                    smem_optin_bytes: 0,
                    modules,
                    ctx: ctx.clone(),
                    _stream: stream.clone(),
                };
                $($(k.$name.f = find_function(&k.modules, stringify!($name))?;)+)*
                Ok(k)
            }
        }

        /// `(kernel, declared parameter types)` of every declared kernel.
        #[cfg(test)]
        const DECLARED: &[(&str, &[&str])] = &[$($((stringify!($name), $handle::PARAMS),)+)*];
    };
}

kernels! {
    // ntt.cu
    /// `a[i] <-> a[bitrev(i)]`, in place.
    FrBitrev: fr_bitrev(a: DevPtr, log_n: u32);
    /// The first `stages` DIT stages in shared memory.
    FrNttShared: fr_ntt_shared(a: DevPtr, tw: DevPtr, stages: u32, tw_log: u32, inv: u32);
    /// Two DIT stages `s, s + 1` (radix 4), or one.
    FrNttStage: fr_ntt_stage2, fr_ntt_stage(a: DevPtr, tw: DevPtr, log_n: u32, s: u32, tw_log: u32, inv: u32);
    /// `k` stages from `s0` in shared memory (DIT upwards, DIF downwards), radix 2, two
    /// stages per barrier (radix 4) or three (radix 8; `_ahead`: a group's twiddles read
    /// before its products).
    FrNttPass: fr_ntt_pass, fr_ntt_pass4, fr_ntt_pass8, fr_ntt_pass8_ahead(
        a: DevPtr,
        tw: DevPtr,
        s0: u32,
        k: u32,
        block_log: u32,
        tw_log: u32,
        inv: u32,
        dif: u32,
    );
    /// `a[i] *= c[0] * g^bitrev(i)`.
    FrScalePowersBitrev: fr_scale_powers_bitrev(a: DevPtr, log_n: u32, c: DevPtr, lo: DevPtr, hi: DevPtr, split: u32);
    /// `out[i] = a[bitrev(i)] * c[0] * g^i` (canonical bytes when `canonical`), out of place.
    FrUnbitrevScaleCanonical: fr_unbitrev_scale_canonical(
        a: DevPtr,
        out: DevPtr,
        log_n: u32,
        c: DevPtr,
        lo: DevPtr,
        hi: DevPtr,
        split: u32,
        canonical: u32,
    );
    /// `out[i] = (a[i] * b[i] - c[i]) * zinv[0]`.
    FrAbMinusCDivZTo: fr_ab_minus_c_div_z_to(out: DevPtr, a: DevPtr, b: DevPtr, c: DevPtr, n: usize, zinv: DevPtr);
    /// `tw[k] = lo[k mod 2^split] * hi[k >> split]`.
    FrPowersFromSplit: fr_powers_from_split(tw: DevPtr, count: usize, lo: DevPtr, hi: DevPtr, split: u32);
    /// `a[i] *= c[0] * g^i` (`lo` null: `a[i] *= c[0]`).
    FrScalePowers: fr_scale_powers(a: DevPtr, n: usize, c: DevPtr, lo: DevPtr, hi: DevPtr, split: u32);
    /// `a[i] = (a[i] * b[i] - c[i]) * zinv[0]`.
    FrAbMinusCDivZ: fr_ab_minus_c_div_z(a: DevPtr, b: DevPtr, c: DevPtr, n: usize, zinv: DevPtr);
    /// `out[i]` = canonical little-endian bytes of `a[i]` (in place allowed).
    FrToCanonical: fr_to_canonical(a: DevPtr, out: DevPtr, n: usize);

    // products.cu
    /// Each row's word offset from its block's start, one thread per row block.
    PceRowOffsets: pce_row_offsets(stream: DevPtr, blocks: DevPtr, nblocks: usize, rows: usize, offsets: DevPtr);
    /// `a, b, c = A.w, B.w, C.w` from a precompiled row stream, one thread per row.
    PceProducts: pce_products(
        stream: DevPtr,
        blocks: DevPtr,
        offsets: DevPtr,
        rows: usize,
        coeffs: DevPtr,
        inputs: DevPtr,
        aux: DevPtr,
        a: DevPtr,
        b: DevPtr,
        c: DevPtr,
    );
    /// Per density word, the set bits before it in its chunk of 64 words; per chunk, its total.
    DensityWordPrefix: density_word_prefix(words: DevPtr, nwords: usize, word_prefix: DevPtr, chunk_totals: DevPtr);
    /// Exclusive prefix sum in place (one block).
    ScanExclusiveU32: scan_exclusive_u32(v: DevPtr, n: usize);
    /// The aux variables a density selects (all when `all`), as canonical scalars, in order.
    FrGatherCanonical: fr_gather_canonical(
        aux: DevPtr,
        naux: usize,
        all: u32,
        words: DevPtr,
        word_prefix: DevPtr,
        chunk_prefix: DevPtr,
        out: DevPtr,
    );

    /// A packed aux (`AuxPack`) written out as the slab holds it, one thread per variable,
    /// 256 per block.
    FrUnpackAux: fr_unpack_aux(codes: DevPtr, block_others: DevPtr, others: DevPtr, n: usize, out: DevPtr);

    // msm_sort.cu
    /// Per-tile bucket histograms summed into `counts[w][b]` (unsigned or signed digits).
    /// Sparse sort: only the entries of `rest` (point indices) while `*nrest <= cap`.
    MsmHist: msm_hist(
        scalars: DevPtr,
        n: u32,
        c: u32,
        tile: u32,
        skip_ones: u32,
        signed_digits: u32,
        rest: DevPtr,
        nrest: DevPtr,
        cap: u32,
        counts: DevPtr,
    );
    /// Bucket and piece offsets (one block).
    MsmScan: msm_scan(
        counts: DevPtr,
        m: u32,
        piece_len: u32,
        offsets: DevPtr,
        cursor: DevPtr,
        poffsets: DevPtr,
    );
    /// Point indices sorted into buckets.
    MsmScatter: msm_scatter(
        scalars: DevPtr,
        n: u32,
        c: u32,
        tile: u32,
        skip_ones: u32,
        signed_digits: u32,
        rest: DevPtr,
        nrest: DevPtr,
        cap: u32,
        cursor: DevPtr,
        idx: DevPtr,
    );
    /// The global-memory sort (`MsmKernels::Wide` and `SignedGlobal`): bucket counts in
    /// global memory, one atomic per entry (dense or sparse ranges as `msm_hist`).
    MsmHistGlobal: msm_hist_global(
        scalars: DevPtr,
        n: u32,
        c: u32,
        tile: u32,
        skip_ones: u32,
        rest: DevPtr,
        nrest: DevPtr,
        cap: u32,
        wins: u32,
        group: u32,
        stride: u32,
        counts: DevPtr,
    );
    /// The global-memory sort (`Wide`, `SignedGlobal`): point indices sorted into buckets
    /// by global cursors.
    MsmScatterGlobal: msm_scatter_global(
        scalars: DevPtr,
        n: u32,
        c: u32,
        tile: u32,
        skip_ones: u32,
        rest: DevPtr,
        nrest: DevPtr,
        cap: u32,
        wins: u32,
        group: u32,
        stride: u32,
        cursor: DevPtr,
        idx: DevPtr,
    );
    /// Multi-block scan, 1 of 3: each block's totals of counts and pieces.
    MsmScanSums: msm_scan_sums(counts: DevPtr, m: u32, piece_len: u32, sums: DevPtr);
    /// Multi-block scan, 2 of 3 (one block): the blocks' totals scanned, grand totals out.
    MsmScanTop: msm_scan_top(sums: DevPtr, nblocks: u32, total: DevPtr, ptotal: DevPtr);
    /// Multi-block scan, 3 of 3: offsets, cursors and piece offsets.
    MsmScanWrite: msm_scan_write(
        counts: DevPtr,
        m: u32,
        piece_len: u32,
        sums: DevPtr,
        offsets: DevPtr,
        cursor: DevPtr,
        poffsets: DevPtr,
    );
    /// Histogram of the pieces' length classes (decreasing length).
    MsmPieceHist: msm_piece_hist(pieces: DevPtr, npieces: DevPtr, hist: DevPtr);
    /// The pieces' indices in order of decreasing length, from the scanned classes.
    MsmPieceOrder: msm_piece_order(pieces: DevPtr, npieces: DevPtr, cursor: DevPtr, perm: DevPtr);
    /// Piece descriptors `(start, len)` per bucket.
    MsmPieces: msm_pieces(
        counts: DevPtr,
        offsets: DevPtr,
        poffsets: DevPtr,
        m: u32,
        piece_len: u32,
        pieces: DevPtr,
    );

    // fixed_base.cu
    /// `out[i] = scalars[i] * g` from `g`'s window table (`w`-bit digits, `windows` of them),
    /// back to affine by Fermat's inversion with the exponent `p_minus_2`.
    FixedBase: fixed_base_g1, fixed_base_g2(
        table: DevPtr,
        w: u32,
        windows: u32,
        scalars: DevPtr,
        n: usize,
        p_minus_2: DevPtr,
        out: DevPtr,
    );

    /// Fixed-base windows: `out[i] = 2^c * input[i]` (G1 affine, `n` points), back to affine
    /// by Fermat's inversion with the exponent `p_minus_2`.
    FixedShift: fixed_shift_g1(input: DevPtr, n: usize, c: u32, p_minus_2: DevPtr, out: DevPtr);

    // subgroup.cu
    /// Scott's subgroup test per point: `*bad = min(*bad, first + i)` for each point `i`
    /// outside the prime-order subgroup (`consts`: beta for G1; cx, cy for G2).
    Subgroup: subgroup_g1, subgroup_g2(pts: DevPtr, n: usize, first: usize, consts: DevPtr, z_abs: usize, bad: DevPtr);

    // msm_points.cuh, instantiated for G1 (msm_g1.cu) and G2 (msm_g2.cu)
    /// 0/1 fast path: per-thread sums of the bases whose scalar is one.
    MsmOnes: msm_ones_g1, msm_ones_g2, msm_ones_g1_inl, msm_ones_g2_inl(bases: DevPtr, scalars: DevPtr, n: u32, out: DevPtr);
    /// 0/1 fast path of the sparse sort: the same sums, and the indices of the scalars
    /// neither 0 nor 1 appended to `rest` (at most `cap` kept, all counted in `*nrest`).
    MsmOnesCompact: msm_ones_compact_g1, msm_ones_compact_g2, msm_ones_compact_g1_inl, msm_ones_compact_g2_inl(
        bases: DevPtr,
        scalars: DevPtr,
        n: u32,
        out: DevPtr,
        rest: DevPtr,
        nrest: DevPtr,
        cap: u32,
    );
    /// 0/1 fast path: one fan-in round over the partial sums.
    MsmReduce: msm_reduce_g1, msm_reduce_g2(src: DevPtr, n: u32, fan: u32, out: DevPtr);
    /// Each group of `fan` points summed by a tree in shared memory (blocks of
    /// [`crate::msm::FOLD_TREE_THREADS`]).
    MsmFoldTree: msm_fold_tree_g1, msm_fold_tree_g2(src: DevPtr, n: u32, fan: u32, out: DevPtr);
    /// The sum of each piece's points (signed: bit 31 of an index negates): one thread per
    /// piece, or (`_ba*`) batch-affine, K pieces per thread ([`crate::msm::BA_THREADS`]).
    MsmAccumulate: msm_accumulate_g1, msm_accumulate_g2, msm_accumulate_signed_g1, msm_accumulate_signed_g2,
        msm_accumulate_g1_inl, msm_accumulate_g2_inl, msm_accumulate_signed_g1_inl, msm_accumulate_signed_g2_inl,
        msm_accumulate_g1_ba4, msm_accumulate_signed_g1_ba4, msm_accumulate_g1_ba8, msm_accumulate_signed_g1_ba8,
        msm_accumulate_g1_ba16, msm_accumulate_signed_g1_ba16(
        bases: DevPtr,
        idx: DevPtr,
        pieces: DevPtr,
        npieces: DevPtr,
        perm: DevPtr,
        partial: DevPtr,
    );
    /// One thread per bucket: the sum of its pieces (`add`: added to the bucket's value).
    MsmBuckets: msm_buckets_g1, msm_buckets_g2(partial: DevPtr, poffsets: DevPtr, m: u32, add: u32, out: DevPtr);
    /// Signed reduction, first level: running sums over runs of each window's buckets; each
    /// run's share to `seg_out`, its sum over its first bucket.
    MsmWindowRuns: msm_window_runs_g1, msm_window_runs_g2(
        bkts: DevPtr,
        bits: u32,
        nwin: u32,
        run_log: u32,
        base: u32,
        seg_out: DevPtr,
    );
    /// Running sums over segments of each window's buckets (`stride_log` 0), or (the signed
    /// reduction's second level) of the runs' sums `2^stride_log` buckets apart, added into
    /// the first level's slots.
    MsmWindowSegments: msm_window_segments_g1, msm_window_segments_g2(
        bkts: DevPtr,
        bits: u32,
        nwin: u32,
        seg_log: u32,
        base: u32,
        stride_log: u32,
        seg_out: DevPtr,
    );
    /// Each window's total from its segments, as blst's Jacobian point.
    MsmWindowSums: msm_window_sums_g1, msm_window_sums_g2(seg_out: DevPtr, nseg: u32, nwin: u32, out: DevPtr);
}

/// Dynamic shared memory any launch may ask for without opting in.
const SMEM_DEFAULT_BYTES: usize = 48 << 10;

impl Kernels {
    /// Loads the embedded fatbins into `ctx` (current on this thread) and resolves every
    /// declared kernel; launches go to `stream`, which must belong to `ctx`.
    pub(crate) fn load(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Result<Kernels> {
        let mut modules = Vec::with_capacity(embedded::FATBINS.len());
        let unload_all = |modules: &[sys::CUmodule]| {
            for &m in modules {
                // SAFETY: loaded just above, no kernel of it launched yet.
                let _ = unsafe { result::module::unload(m) };
            }
        };
        for (_, image) in embedded::FATBINS {
            // The driver reads the fatbin header as 8-byte words: copy into aligned storage.
            let mut aligned = vec![0u64; image.len().div_ceil(8)];
            // SAFETY: `aligned` holds at least `image.len()` bytes; the ranges are disjoint.
            unsafe {
                std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len())
            };
            // SAFETY: the context is bound to this thread (the caller's contract) and
            // `aligned` is a complete fatbin produced by nvcc; the driver copies it.
            match unsafe { result::module::load_data(aligned.as_ptr().cast()) }.op("cuModuleLoadData") {
                Ok(m) => modules.push(m),
                Err(e) => {
                    unload_all(&modules);
                    return Err(e);
                }
            }
        }
        let mut k = Kernels::resolve(modules, ctx, stream)?;
        // Without the opt-in the tile kernels keep the 48 KiB every launch may ask for, and
        // signed windows plan with it (`msm::bucket_bits_max_for`): never a failed open.
        k.smem_optin_bytes = match k.opt_in_shared_memory(ctx) {
            Ok(bytes) => bytes,
            Err(_) => SMEM_DEFAULT_BYTES,
        };
        Ok(k)
    }

    /// Lets the MSM's hist and scatter kernels take the device's whole opt-in shared
    /// memory per block (their histogram of a signed 16-bit window is 128 KiB; without
    /// opting in a launch may ask for 48 KiB at most); returns that many bytes.
    fn opt_in_shared_memory(&mut self, ctx: &Arc<CudaContext>) -> Result<usize> {
        use sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as OPTIN;
        use sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYNAMIC;
        let optin = ctx.attribute(OPTIN).op("cuDeviceGetAttribute")?;
        for f in [self.msm_hist.f, self.msm_scatter.f] {
            // SAFETY: `f` was resolved from a module this table keeps loaded, in `ctx`,
            // which the caller made current; setting an attribute launches nothing.
            unsafe { result::function::set_function_attribute(f, MAX_DYNAMIC, optin) }
                .op("cuFuncSetAttribute")?;
        }
        Ok(usize::try_from(optin).unwrap_or(SMEM_DEFAULT_BYTES))
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        for &m in &self.modules {
            // SAFETY: each module was loaded once by `load`; no kernel of it is running
            // (all work is synchronized before returning to the caller) and the handles
            // that name its functions die with `self`.
            let _ = unsafe { result::module::unload(m) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(kernel, Rust types of its parameters)` of every `extern "C" __global__` in
    /// `cuda/kernels`, with `MSM_POINT_KERNELS(suffix, ..)` instances expanded.
    fn kernels_in_sources() -> Vec<(String, Vec<&'static str>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let mut sources: Vec<String> = std::fs::read_dir(&dir)
            .expect("cuda/kernels")
            .map(|e| e.expect("a dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "cu" || x == "cuh"))
            .map(|p| std::fs::read_to_string(p).expect("a readable kernel source").replace("\\\n", " "))
            .collect();
        sources.sort();
        let all = sources.concat();
        // The suffixes each kernel macro (`#define NAME(SUFFIX, ..)` declaring `..._##SUFFIX`
        // kernels, one logical line) is instantiated with: `NAME(g1, ..)` elsewhere.
        let suffixes_of = |line: &str| -> Vec<String> {
            let name = line["#define ".len()..].split('(').next().unwrap().trim();
            let call = format!("{name}(");
            all.match_indices(&call)
                .filter(|(at, _)| !all[..*at].ends_with("#define "))
                .map(|(at, m)| all[at + m.len()..].split(',').next().unwrap().trim().to_string())
                .collect()
        };
        let mut found = Vec::new();
        const DECL: &str = "extern \"C\" __global__ void";
        for (at, _) in all.match_indices(DECL) {
            let mut rest = all[at + DECL.len()..].trim_start();
            if let Some(r) = rest.strip_prefix("__launch_bounds__") {
                rest = r[matching_paren(r) + 1..].trim_start();
            }
            let open = rest.find('(').expect("a parameter list");
            let name = rest[..open].trim();
            let list = &rest[open + 1..open + matching_paren(&rest[open..])];
            let types = list.split(',').map(|p| rust_type(p.trim())).collect::<Vec<_>>();
            match name.strip_suffix("_##SUFFIX") {
                Some(stem) => {
                    let line_at = all[..at].rfind('\n').map_or(0, |i| i + 1);
                    let line = all[line_at..].lines().next().unwrap();
                    assert!(line.starts_with("#define "), "{name}: declared in a macro");
                    let suffixes = suffixes_of(line);
                    assert!(!suffixes.is_empty(), "{name}: its macro is instantiated");
                    found.extend(suffixes.iter().map(|s| (format!("{stem}_{s}"), types.clone())));
                }
                None => found.push((name.to_string(), types)),
            }
        }
        found
    }

    /// Index of the `)` closing the `(` that `s` starts with.
    fn matching_paren(s: &str) -> usize {
        let mut depth = 0;
        for (i, ch) in s.char_indices() {
            match ch {
                '(' => depth += 1,
                ')' if depth == 1 => return i,
                ')' => depth -= 1,
                _ => {}
            }
        }
        panic!("unbalanced parentheses in {s:.60}");
    }

    fn rust_type(c_param: &str) -> &'static str {
        if c_param.contains('*') {
            "DevPtr"
        } else if c_param.starts_with("uint32_t ") {
            "u32"
        } else if c_param.starts_with("size_t ") {
            "usize"
        } else {
            panic!("a kernel parameter of a type with no Rust mirror: {c_param}")
        }
    }

    #[test]
    fn every_declaration_matches_its_kernel_in_the_sources() {
        let sources = kernels_in_sources();
        assert!(sources.len() >= 20, "parsed the kernels: {sources:?}");
        for (name, types) in &sources {
            let declared = DECLARED.iter().find(|(n, _)| n == name);
            let (_, params) = declared.unwrap_or_else(|| panic!("kernel {name} is not declared in kernels!"));
            assert_eq!(*params, types.as_slice(), "{name}: declared parameters vs the .cu signature");
        }
        for (name, _) in DECLARED {
            assert!(sources.iter().any(|(n, _)| n == name), "declared kernel {name} is in no .cu source");
        }
        assert_eq!(DECLARED.len(), sources.len(), "each kernel once");
    }

    #[test]
    fn dims_round_up_and_an_empty_grid_is_allowed() {
        assert_eq!(Dims::per_item(257, 256), Dims { grid: (2, 1), block: 256, smem_bytes: 0 });
        assert_eq!(Dims::per_item(0, 256).grid, (0, 1));
        assert_eq!(Dims::blocks_2d((3, 4), 64).smem(128).smem_bytes, 128);
    }
}
