//! Reads values back from value-log files.

use super::{check_entry, ENTRY_HEADER_LEN, MAGIC, VERSION};
use crate::error::{Error, Result};
use crate::value::ValuePointer;
use memmap2::Mmap;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Reads larger than this are not merged with their neighbours.
const COALESCE_MAX: u64 = 1 << 20;
/// Neighbouring entries closer than this are read with one call.
const COALESCE_GAP: u64 = 16 << 10;

/// One value-log file open for reading, shareable across threads. A sealed file
/// (one that will never be appended to again) is memory-mapped, so a read is one
/// copy out of the page cache with no system call; the head file is read with
/// positional reads.
pub(crate) struct VlogFile {
    id: u32,
    path: PathBuf,
    file: File,
    map: Option<Mmap>,
}

impl VlogFile {
    /// Opens file `id` and checks its header.
    pub(crate) fn open(path: &Path, id: u32) -> Result<VlogFile> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let mut header = [0u8; crate::wal::HEADER_LEN];
        let n = read_up_to(&file, &mut header, 0)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        crate::wal::check_header(path, &header[..n], MAGIC, VERSION)?;
        Ok(VlogFile {
            id,
            path: path.to_path_buf(),
            file,
            map: None,
        })
    }

    /// Opens a file that is complete (no writer will append to it) and maps it.
    pub(crate) fn open_sealed(path: &Path, id: u32) -> Result<VlogFile> {
        let mut f = VlogFile::open(path, id)?;
        // SAFETY: sealed value-log files are never written again; sett only
        // deletes them (a mapping outlives the unlink), and other processes are
        // kept out by the directory lock. A file truncated behind sett's back
        // would fault on access, as a table would.
        let map = unsafe { Mmap::map(&f.file) }
            .map_err(|e| Error::io(format!("mapping {}", path.display()), e))?;
        f.map = Some(map);
        Ok(f)
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Current length of the file in bytes.
    pub(crate) fn len(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| Error::io(format!("stat {}", self.path.display()), e))
    }

    /// fsyncs the file (through this read handle: fsync acts on the file, not the handle).
    pub(crate) fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    /// Reads and checks the entry at `ptr`, returning its value.
    pub(crate) fn read(&self, ptr: ValuePointer) -> Result<Vec<u8>> {
        if let Some(found) = self.check_mapped(ptr) {
            let (start, len) = found?;
            return Ok(self.map.as_deref().unwrap_or_default()[start..start + len].to_vec());
        }
        let mut buf = vec![0u8; ptr.len as usize];
        let n = read_up_to(&self.file, &mut buf, ptr.offset)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        if n < buf.len() {
            return Err(Error::corruption(
                &self.path,
                ptr.offset,
                format!(
                    "value pointer runs past the end of the file ({n} of {} bytes)",
                    ptr.len
                ),
            ));
        }
        let (klen, _) =
            check_entry(&buf).map_err(|what| Error::corruption(&self.path, ptr.offset, what))?;
        buf.drain(..ENTRY_HEADER_LEN + klen);
        Ok(buf)
    }
}

impl VlogFile {
    /// Calls `f(pointer, key, value)` for each entry in file order, stopping at
    /// the end or at the first entry that does not check (a torn tail: bytes of a
    /// batch that never reached the WAL).
    pub(crate) fn for_each_entry(
        &self,
        mut f: impl FnMut(ValuePointer, &[u8], &[u8]) -> Result<()>,
    ) -> Result<()> {
        let len = self.len()?;
        let mut offset = crate::wal::HEADER_LEN as u64;
        let mut header = [0u8; ENTRY_HEADER_LEN];
        let mut buf = Vec::new();
        while offset + ENTRY_HEADER_LEN as u64 <= len {
            let n = read_up_to(&self.file, &mut header, offset)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            if n < ENTRY_HEADER_LEN {
                break;
            }
            let klen = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as u64;
            let vlen = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as u64;
            let total = ENTRY_HEADER_LEN as u64 + klen + vlen;
            if offset + total > len || total > u64::from(u32::MAX) {
                break;
            }
            buf.resize(total as usize, 0);
            let n = read_up_to(&self.file, &mut buf, offset)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            if n < buf.len() {
                break;
            }
            let Ok((klen, _)) = check_entry(&buf) else {
                break;
            };
            let ptr = ValuePointer {
                file: self.id,
                offset,
                len: total as u32,
            };
            f(
                ptr,
                &buf[ENTRY_HEADER_LEN..ENTRY_HEADER_LEN + klen],
                &buf[ENTRY_HEADER_LEN + klen..],
            )?;
            offset += total;
        }
        Ok(())
    }
}

/// Reads as many bytes as the file has at `offset`, up to `buf.len()`.
fn read_up_to(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    crate::fault::check(crate::fault::Op::Read)?;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// A value read from the value log: copied out by a positional read, or left
/// in place in a sealed file's mapping (checked, not copied).
pub(crate) enum ValueBytes {
    Owned(Vec<u8>),
    Mapped {
        file: Arc<VlogFile>,
        start: usize,
        len: usize,
    },
}

impl ValueBytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            ValueBytes::Owned(v) => v,
            ValueBytes::Mapped { file, start, len } => file
                .map
                .as_deref()
                .and_then(|m| m.get(*start..*start + *len))
                .unwrap_or_default(),
        }
    }
}

impl VlogFile {
    /// Checks the entry at `ptr` in a mapped file and returns where its value
    /// lies in the mapping; `None` if the file is not mapped.
    fn check_mapped(&self, ptr: ValuePointer) -> Option<Result<(usize, usize)>> {
        let map = self.map.as_ref()?;
        Some((|| {
            crate::fault::check(crate::fault::Op::Read)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            let start = ptr.offset as usize;
            let entry = start
                .checked_add(ptr.len as usize)
                .and_then(|end| map.get(start..end))
                .ok_or_else(|| {
                    Error::corruption(
                        &self.path,
                        ptr.offset,
                        format!(
                            "value pointer runs past the end of the file ({} bytes)",
                            map.len()
                        ),
                    )
                })?;
            let (klen, vlen) = check_entry(entry)
                .map_err(|what| Error::corruption(&self.path, ptr.offset, what))?;
            Ok((start + ENTRY_HEADER_LEN + klen, vlen))
        })())
    }
}

/// The live value-log files, by id. Immutable: a change makes a new set, and
/// readers keep the set they started with, so a file removed by garbage
/// collection stays readable (its descriptor open) until the last of them is done.
#[derive(Default, Clone)]
pub(crate) struct VlogSet {
    files: BTreeMap<u32, Arc<VlogFile>>,
}

impl VlogSet {
    /// This set plus `f`.
    pub(crate) fn with(&self, f: Arc<VlogFile>) -> VlogSet {
        let mut files = self.files.clone();
        files.insert(f.id(), f);
        VlogSet { files }
    }

    /// This set without file `id`.
    pub(crate) fn without(&self, id: u32) -> VlogSet {
        let mut files = self.files.clone();
        files.remove(&id);
        VlogSet { files }
    }

    pub(crate) fn get(&self, id: u32) -> Option<Arc<VlogFile>> {
        self.files.get(&id).cloned()
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<VlogFile>> {
        self.files.values()
    }

    fn file(&self, ptr: ValuePointer, dir_hint: &Path) -> Result<Arc<VlogFile>> {
        self.get(ptr.file).ok_or_else(|| {
            Error::corruption(
                dir_hint.join(super::file_name(ptr.file)),
                ptr.offset,
                "value pointer names a value-log file that is not live",
            )
        })
    }

    /// Reads the value behind one pointer.
    pub(crate) fn read(&self, ptr: ValuePointer, dir: &Path) -> Result<Vec<u8>> {
        self.file(ptr, dir)?.read(ptr)
    }

    /// Reads the values behind many pointers, merging reads of entries that lie
    /// close together in one file (a scan of values written in order costs a few
    /// large reads instead of one read per value).
    pub(crate) fn read_many(&self, ptrs: &[ValuePointer], dir: &Path) -> Result<Vec<ValueBytes>> {
        let mut order: Vec<usize> = (0..ptrs.len()).collect();
        order.sort_by_key(|&i| (ptrs[i].file, ptrs[i].offset));
        let mut out: Vec<ValueBytes> = (0..ptrs.len())
            .map(|_| ValueBytes::Owned(Vec::new()))
            .collect();
        let mut i = 0;
        while i < order.len() {
            let first = ptrs[order[i]];
            let start = first.offset;
            let mut end = start + u64::from(first.len);
            let mut j = i + 1;
            while j < order.len() {
                let p = ptrs[order[j]];
                let p_end = p.offset + u64::from(p.len);
                if p.file != first.file
                    || p.offset > end + COALESCE_GAP
                    || p_end - start > COALESCE_MAX
                {
                    break;
                }
                end = end.max(p_end);
                j += 1;
            }
            let file = self.file(first, dir)?;
            if file.map.is_some() {
                // Mapped: each value is checked where it lies, and not copied.
                for &k in &order[i..j] {
                    if let Some(found) = file.check_mapped(ptrs[k]) {
                        let (start, len) = found?;
                        out[k] = ValueBytes::Mapped {
                            file: file.clone(),
                            start,
                            len,
                        };
                    }
                }
            } else if j == i + 1 {
                out[order[i]] = ValueBytes::Owned(file.read(first)?);
            } else {
                let mut buf = vec![0u8; (end - start) as usize];
                let n = read_up_to(&file.file, &mut buf, start)
                    .map_err(|e| Error::io(format!("reading {}", file.path.display()), e))?;
                for &k in &order[i..j] {
                    let p = ptrs[k];
                    let lo = (p.offset - start) as usize;
                    let hi = lo + p.len as usize;
                    if hi > n {
                        return Err(Error::corruption(
                            &file.path,
                            p.offset,
                            "value pointer runs past the end of the file",
                        ));
                    }
                    let entry = &buf[lo..hi];
                    let (klen, _) = check_entry(entry)
                        .map_err(|what| Error::corruption(&file.path, p.offset, what))?;
                    out[k] = ValueBytes::Owned(entry[ENTRY_HEADER_LEN + klen..].to_vec());
                }
            }
            i = j;
        }
        Ok(out)
    }

    /// Total bytes of all live value-log files.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.all().filter_map(|f| f.len().ok()).sum()
    }

    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }
}
