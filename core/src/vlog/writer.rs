//! Appends entries to the head value-log file.

use super::{encode_entry, MAGIC, VERSION};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::Fs;
use crate::value::ValuePointer;
use crate::wal::{file_header, HEADER_LEN};
use std::fs::File;
use std::io::IoSlice;
use std::path::{Path, PathBuf};

/// The head value-log file. Entries are buffered in memory by the write leader
/// and handed to the OS once per write group by [`VlogWriter::flush`].
pub(crate) struct VlogWriter {
    id: u32,
    fs: Fs,
    file: File,
    path: PathBuf,
    /// Logical length: bytes in the file plus bytes buffered.
    len: u64,
    /// Entry bytes to write, except the large values in `owned`.
    buf: Vec<u8>,
    /// Large values taken over from their batch, each written from where it
    /// lies (no copy into `buf`): (offset in `buf` it goes before, value).
    owned: Vec<(usize, Vec<u8>)>,
    /// File offset up to which writeback has been started (see `flush`).
    writeback_from: u64,
    /// Logical length at the last successful sync: a sync with nothing
    /// appended since is skipped.
    synced: u64,
}

/// Writeback of appended bytes is started every this many bytes, so that the
/// fsync at a flush or close finds little left to write.
const WRITEBACK_STEP: u64 = 8 << 20;

/// Values at least this long are written from their own buffer by `writev`
/// instead of being copied into the write buffer.
const OWNED_MIN: usize = 4096;

impl VlogWriter {
    /// Creates value-log file `id` in `dir` with its header, synced.
    pub(crate) fn create(fs: &Fs, dir: &Path, id: u32) -> Result<VlogWriter> {
        let path = filename::vlog(dir, id);
        let ctx = || format!("creating {}", path.display());
        let mut file = fs.create_new(&path).map_err(|e| Error::io(ctx(), e))?;
        fs.append(&mut file, &path, &file_header(MAGIC, VERSION))
            .and_then(|_| fs.sync(&file, &path))
            .map_err(|e| Error::io(ctx(), e))?;
        Ok(VlogWriter {
            id,
            fs: fs.clone(),
            file,
            path,
            len: HEADER_LEN as u64,
            buf: Vec::with_capacity(1 << 20),
            owned: Vec::new(),
            writeback_from: HEADER_LEN as u64,
            synced: HEADER_LEN as u64,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Buffers an entry and returns the pointer to it.
    pub(crate) fn append(&mut self, key: &[u8], value: &[u8]) -> ValuePointer {
        let before = self.buf.len();
        encode_entry(&mut self.buf, key, value);
        let len = (self.buf.len() - before) as u32;
        let ptr = ValuePointer {
            file: self.id,
            offset: self.len,
            len,
        };
        self.len += u64::from(len);
        ptr
    }

    /// Buffers an entry whose value the caller hands over; a large value is
    /// written later from its own memory rather than copied.
    pub(crate) fn append_owned(&mut self, key: &[u8], value: Vec<u8>) -> ValuePointer {
        if value.len() < OWNED_MIN {
            return self.append(key, &value);
        }
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0; 4]);
        self.buf
            .extend_from_slice(&(key.len() as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(key);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&self.buf[start + 4..]);
        crc.update(&value);
        self.buf[start..start + 4].copy_from_slice(&crc.finalize().to_le_bytes());
        let len = (self.buf.len() - start + value.len()) as u32;
        let ptr = ValuePointer {
            file: self.id,
            offset: self.len,
            len,
        };
        self.len += u64::from(len);
        self.owned.push((self.buf.len(), value));
        ptr
    }

    /// Writes buffered entries to the file (not synced).
    pub(crate) fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() && self.owned.is_empty() {
            return Ok(());
        }
        let res = crate::fault::check(crate::fault::Op::Write).and_then(|_| {
            if self.owned.is_empty() {
                return self.fs.append(&mut self.file, &self.path, &self.buf);
            }
            // buf pieces and owned values, interleaved in file order.
            let mut slices = Vec::with_capacity(2 * self.owned.len() + 1);
            let mut at = 0;
            for (before, value) in &self.owned {
                slices.push(IoSlice::new(&self.buf[at..*before]));
                slices.push(IoSlice::new(value));
                at = *before;
            }
            slices.push(IoSlice::new(&self.buf[at..]));
            self.fs
                .append_vectored(&mut self.file, &self.path, &mut slices)
        });
        self.buf.clear();
        self.owned.clear();
        res.map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))?;
        if self.len - self.writeback_from >= WRITEBACK_STEP {
            self.start_writeback();
        }
        Ok(())
    }

    /// Asks the kernel to start writing out what was appended since the last
    /// call, without waiting for it (RocksDB's bytes_per_sync). A hint only:
    /// durability still comes from `sync`.
    fn start_writeback(&mut self) {
        crate::fs::start_writeback(&self.file, self.writeback_from, self.len);
        self.writeback_from = self.len;
    }

    /// Writes what is buffered and fsyncs the file, unless nothing was
    /// appended since the last sync (a group of small values only).
    pub(crate) fn sync(&mut self) -> Result<()> {
        if self.len == self.synced {
            return Ok(());
        }
        self.flush()?;
        crate::fault::check(crate::fault::Op::Sync)
            .and_then(|_| self.fs.sync(&self.file, &self.path))
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))?;
        self.synced = self.len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FileSystem, RealFs};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// The real file system, counting fsyncs.
    #[derive(Default)]
    struct CountingFs {
        syncs: AtomicUsize,
    }

    impl FileSystem for CountingFs {
        fn create_new(&self, path: &Path) -> std::io::Result<File> {
            RealFs.create_new(path)
        }
        fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> std::io::Result<()> {
            RealFs.append(file, path, data)
        }
        fn sync(&self, file: &File, path: &Path) -> std::io::Result<()> {
            self.syncs.fetch_add(1, Ordering::SeqCst);
            RealFs.sync(file, path)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            RealFs.rename(from, to)
        }
        fn remove(&self, path: &Path) -> std::io::Result<()> {
            RealFs.remove(path)
        }
        fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
            RealFs.sync_dir(dir)
        }
        fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            RealFs.create_dir_all(dir)
        }
        fn hard_link(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            RealFs.hard_link(from, to)
        }
    }

    #[test]
    fn a_sync_with_nothing_appended_since_the_last_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let counting = Arc::new(CountingFs::default());
        let fs = Fs::new(counting.clone());
        let mut w = VlogWriter::create(&fs, dir.path(), 1).unwrap();
        let syncs = || counting.syncs.load(Ordering::SeqCst);
        let created = syncs();
        // The header was synced by create: nothing to do.
        w.sync().unwrap();
        assert_eq!(syncs(), created);
        w.append(b"k", b"v");
        w.sync().unwrap();
        assert_eq!(syncs(), created + 1);
        w.sync().unwrap();
        w.sync().unwrap();
        assert_eq!(syncs(), created + 1);
        // Bytes flushed but not synced still get their sync.
        w.append(b"k2", b"v2");
        w.flush().unwrap();
        w.sync().unwrap();
        assert_eq!(syncs(), created + 2);
        assert_eq!(
            std::fs::metadata(crate::filename::vlog(dir.path(), 1))
                .unwrap()
                .len(),
            w.len()
        );
    }
}
