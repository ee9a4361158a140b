//! Appends entries to the head value-log file.

use super::{encode_entry, file_name, MAGIC, VERSION};
use crate::error::{Error, Result};
use crate::value::ValuePointer;
use crate::wal::{file_header, HEADER_LEN};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The head value-log file. Entries are buffered in memory by the write leader
/// and handed to the OS once per write group by [`VlogWriter::flush`].
pub(crate) struct VlogWriter {
    id: u32,
    file: File,
    path: PathBuf,
    /// Logical length: bytes in the file plus bytes buffered.
    len: u64,
    buf: Vec<u8>,
}

impl VlogWriter {
    /// Creates value-log file `id` in `dir` with its header, synced.
    pub(crate) fn create(dir: &Path, id: u32) -> Result<VlogWriter> {
        let path = dir.join(file_name(id));
        let ctx = || format!("creating {}", path.display());
        let mut file = File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(ctx(), e))?;
        file.write_all(&file_header(MAGIC, VERSION))
            .map_err(|e| Error::io(ctx(), e))?;
        file.sync_all().map_err(|e| Error::io(ctx(), e))?;
        Ok(VlogWriter {
            id,
            file,
            path,
            len: HEADER_LEN as u64,
            buf: Vec::with_capacity(1 << 20),
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

    /// Writes buffered entries to the file (not synced).
    pub(crate) fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let res = crate::fault::check(crate::fault::Op::Write)
            .and_then(|_| self.file.write_all(&self.buf));
        self.buf.clear();
        res.map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        self.flush()?;
        crate::fault::check(crate::fault::Op::Sync)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }
}
