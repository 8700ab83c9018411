//! The sparse products of precompiled constraints on the device (`kernels/products.cu`):
//! a = A·w, b = B·w, c = C·w from a recording's row stream and a witness, equal to the
//! host's `Precompiled::products_into` bit for bit.
//!
//! This is the kernel and its check only: [`Gpu::products`] uploads the stream and the
//! witness per call and reads a, b, c back. The proving path still computes the products
//! on the host; keeping the stream resident and feeding the h pipeline from the device is
//! the next step (README, "Precompiled constraints").

use arenaprove_circuits::precompiled::format::ROWS_PER_BLOCK;
use arenaprove_circuits::precompiled::RowStream;
use blstrs::Scalar;

use crate::error::{CudaError, Result};
use crate::gpu::Gpu;
use crate::kernels::Dims;
use crate::ntt_tables::FR_BYTES;

/// Threads per CUDA block of the products kernel (one thread per row block).
const THREADS: u32 = 64;

impl Gpu {
    /// a, b, c (each `m.rows` long) of the recording `m` for the witness `inputs` (ONE
    /// first) and `aux`, computed on the device. Lengths that do not match the recording are
    /// typed errors; the stream's indices were checked when it was opened. Afterwards
    /// [`Gpu::last_device_time`] is the kernel's time, without the copies.
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
            ("products: block table", m.blocks.len(), m.rows.div_ceil(ROWS_PER_BLOCK) + 1),
        ];
        for (what, got, want) in checks {
            if got != want {
                return Err(CudaError::Length { what, got, want });
            }
        }
        self.dev.bind()?;
        let arena = self.arena.as_ref().ok_or(CudaError::NoArena)?;
        let mut bump = arena.scratch();
        let d_stream = bump.take("products: row stream", m.words.len())?;
        let d_blocks = bump.take("products: block table", std::mem::size_of_val(m.blocks))?;
        let d_coeffs = bump.take("products: coefficients", m.coeffs.len() * FR_BYTES)?;
        let d_inputs = bump.take("products: inputs", inputs.len() * FR_BYTES)?;
        let d_aux = bump.take("products: aux", aux.len() * FR_BYTES)?;
        let d_out = [
            bump.take("products: a", m.rows * FR_BYTES)?,
            bump.take("products: b", m.rows * FR_BYTES)?,
            bump.take("products: c", m.rows * FR_BYTES)?,
        ];
        // SAFETY: each span was sized above for the slice copied into it.
        unsafe {
            self.dev.upload(d_stream.ptr, m.words)?;
            self.dev.upload(d_blocks.ptr, m.blocks)?;
            self.dev.upload(d_coeffs.ptr, m.coeffs)?;
            self.dev.upload(d_inputs.ptr, inputs)?;
            self.dev.upload(d_aux.ptr, aux)?;
        }
        let nblocks = m.blocks.len() - 1;
        self.dev.timer_start()?;
        self.dev.k.pce_products.launch(
            Dims::per_item(nblocks, THREADS),
            d_stream.dev_ptr(),
            d_blocks.dev_ptr(),
            nblocks,
            m.rows,
            d_coeffs.dev_ptr(),
            d_inputs.dev_ptr(),
            d_aux.dev_ptr(),
            d_out[0].dev_ptr(),
            d_out[1].dev_ptr(),
            d_out[2].dev_ptr(),
        )?;
        self.dev.timer_stop()?;
        // The kernel alone (copies excluded): [`Gpu::last_device_time`].
        self.last_device.set(self.dev.timer_elapsed()?);
        for (host, d) in out.into_iter().zip(&d_out) {
            // SAFETY: `d` holds `m.rows` scalars written by the kernel; the download is
            // ordered after it on the compute stream.
            unsafe { self.dev.download(host, d.ptr) }?;
        }
        self.arena_mut()?.note_scratch(&bump);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use arenaprove_circuits::precompiled::format::{
        CLASS_GENERAL, CLASS_MASK, CLASS_MINUS_ONE, CLASS_ONE, INDEX_BITS, INPUT_BIT, ROWS_PER_BLOCK,
        ROW_ESCAPE, ROW_LEN_PACKED_MAX,
    };

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
        ] {
            assert!(cu.contains(&needle), "kernels/products.cu lacks `{}`", needle.trim_end());
        }
    }
}
