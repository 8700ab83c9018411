//! [`MappedFile`]: a read-only memory map of a file (memmap2), for inputs that are read
//! once at start-up and copied into the arena, such as Groth16 parameter files.
//!
//! The engine decodes every point of a parameters file straight out of the map, in
//! parallel, into its resident parameter region: no read buffer, no second copy.
//!
//! # Caveat
//! A map shows the file as it is on disk while mapped. If another process truncates the
//! file during the load, reading past the new end raises SIGBUS; if it rewrites the file,
//! the load may see a mix of old and new bytes (and then fail validation, or load the mix
//! in unchecked mode). Parameter files are written once and never changed in place, which
//! is what this type assumes; the map lives only for the duration of one load.

use std::fs::File;
use std::io;

pub struct MappedFile {
    /// `None` for an empty file (a zero-length map is refused by the kernel).
    map: Option<memmap2::Mmap>,
}

impl MappedFile {
    /// Maps `file` read-only and asks the kernel to start reading it in.
    pub fn open(file: &File) -> io::Result<MappedFile> {
        if file.metadata()?.len() == 0 {
            return Ok(MappedFile { map: None });
        }
        // SAFETY: a read-only private map; see the module's caveat on concurrent changes to
        // the file, which is the one condition this relies on.
        let map = unsafe { memmap2::MmapOptions::new().map(file)? };
        #[cfg(unix)]
        if let Err(e) = map.advise(memmap2::Advice::WillNeed) {
            tracing::debug!(error = %e, "madvise(WILLNEED) refused on a file map");
        }
        Ok(MappedFile { map: Some(map) })
    }

    /// Drops this process's resident pages of `offset..offset + len` (whole pages inside
    /// it) once the caller is done with them: a loader that decodes a multi-GiB file into
    /// the arena section by section then never holds the file *and* its decoded copy in
    /// RSS at once. The bytes stay readable (a later read faults them in again from the
    /// page cache or the file).
    pub fn release(&self, offset: usize, len: usize) {
        let Some(map) = &self.map else { return };
        let page = 4096;
        let start = offset.next_multiple_of(page);
        let end = (offset + len).min(map.len()) / page * page;
        if end <= start {
            return;
        }
        // SAFETY: MADV_DONTNEED on a read-only file-backed map only drops page-table
        // entries: the next access reads the same bytes from the file (see the module's
        // caveat: the file is not changed while mapped), so no `&[u8]` handed out changes.
        #[cfg(unix)]
        if let Err(e) =
            unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) }
        {
            tracing::debug!(error = %e, "madvise(DONTNEED) refused on a file map");
        }
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({} bytes)", self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn maps_what_was_written_and_empty_files() {
        let dir = std::env::temp_dir().join(format!("arenaprove-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        File::create(&path).unwrap().write_all(&data).unwrap();
        let m = MappedFile::open(&File::open(&path).unwrap()).unwrap();
        assert_eq!(m.bytes(), &data[..]);
        File::create(&path).unwrap();
        let empty = MappedFile::open(&File::open(&path).unwrap()).unwrap();
        assert!(empty.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
