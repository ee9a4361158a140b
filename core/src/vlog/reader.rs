//! Reads values back from value-log files.

use super::{check_entry, ENTRY_HEADER_LEN, MAGIC, VERSION};
use crate::advice::{self, ReadAhead};
use crate::crypt::ReadFile;
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::Fs;
use crate::value::ValuePointer;
use memmap2::Mmap;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A whole-file walk (`VlogFile::for_each_entry`) reads this many bytes a call.
const WALK_CHUNK: u64 = 1 << 20;

/// Entries at least this far apart are sampled by reading the page of each
/// header (`HEADER_PAGE`), not whole windows of the file.
const SPARSE_ENTRY: u64 = 8 << 10;
const HEADER_PAGE: u64 = 4 << 10;

/// Reads larger than this are not merged with their neighbours.
const COALESCE_MAX: u64 = 1 << 20;
/// Neighbouring entries closer than this are read with one call.
const COALESCE_GAP: u64 = 16 << 10;
/// A scan's read that starts at most this far past where its last read of the
/// same file ended continues a forward walk through that file.
const SEQUENTIAL_GAP: usize = 64 << 10;

/// One value-log file open for reading, shareable across threads. Point reads
/// and scans are positional reads. A sealed file (one that will never be
/// appended to again) is also mapped: scans take their read-ahead advice
/// through it (MADV_WILLNEED fills the page cache without mapping pages into
/// the process) and residency probes (mincore); nothing reads its bytes (the
/// GC's walks and samples are positional reads too). Values are not read
/// in place: on data larger than memory that would make every eviction an
/// unmap and count the pages in the process's RSS, outside the memory
/// budget (see docs/read-path.md). Point reads of a sealed file go through their
/// own descriptor advised POSIX_FADV_RANDOM: no read-ahead window around a miss.
pub(crate) struct VlogFile {
    id: u32,
    path: PathBuf,
    file: ReadFile,
    /// The sealed file's mapping, for advice and residency probes only
    /// (under encryption it shows ciphertext, which nothing reads).
    map: Option<Mmap>,
    /// Where engine byte 0 of the file lies in `map`: past the prefix of an
    /// encrypted file, else 0.
    map_at: u64,
    /// Descriptor for point reads of a sealed file (no read-ahead).
    point: Option<ReadFile>,
}

impl VlogFile {
    /// Opens file `id` and checks its header.
    pub(crate) fn open(fs: &Fs, path: &Path, id: u32) -> Result<VlogFile> {
        let file = ReadFile::open(fs, path)?;
        let mut header = [0u8; crate::wal::HEADER_LEN];
        let n = read_up_to(&file, &mut header, 0)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        crate::wal::check_header(path, &header[..n], MAGIC, VERSION)?;
        Ok(VlogFile {
            id,
            path: path.to_path_buf(),
            file,
            map: None,
            map_at: 0,
            point: None,
        })
    }

    /// Opens a file that is complete (no writer will append to it) and maps it.
    pub(crate) fn open_sealed(fs: &Fs, path: &Path, id: u32) -> Result<VlogFile> {
        let mut f = VlogFile::open(fs, path, id)?;
        let point = ReadFile::open(fs, path)?;
        advice::random_fd(point.file());
        f.point = Some(point);
        let Some(map_at) = f.file.data_offset() else {
            // Cut before its prefix was whole: it holds nothing to advise.
            return Ok(f);
        };
        // SAFETY: sealed value-log files are never written again; sett only
        // deletes them (a mapping outlives the unlink), and other processes are
        // kept out by the directory lock. Nothing dereferences the mapping
        // (it only takes advice and residency probes), so a file truncated
        // behind sett's back cannot fault.
        let map = unsafe { Mmap::map(f.file.file()) }
            .map_err(|e| Error::io(format!("mapping {}", path.display()), e))?;
        // Scans ask for their ranges (read_many); nothing else should be read.
        advice::random(&map);
        f.map = Some(map);
        f.map_at = map_at;
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
            .len()
            .map_err(|e| Error::io(format!("stat {}", self.path.display()), e))
    }

    /// fsyncs the file (through this read handle: fsync acts on the file, not the handle).
    pub(crate) fn sync(&self, fs: &crate::fs::Fs) -> Result<()> {
        fs.sync(self.file.file(), &self.path)
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    /// Starts reading the entry at `ptr` into the page cache without
    /// waiting, through the descriptor [`VlogFile::read`] uses.
    pub(crate) fn will_need(&self, ptr: ValuePointer) {
        let file = self.point.as_ref().unwrap_or(&self.file);
        file.will_need(ptr.offset, u64::from(ptr.len));
    }

    /// Starts reading the whole file into the page cache without waiting
    /// (a GC round that reads its live entries in key order, see
    /// `gc::collect::move_in_key_order`).
    pub(crate) fn will_need_all(&self) -> Result<()> {
        self.file.will_need(0, self.len()?);
        Ok(())
    }

    /// Reads and checks the entry at `ptr`, returning its value: one
    /// positional read of the whole entry.
    pub(crate) fn read(&self, ptr: ValuePointer) -> Result<Vec<u8>> {
        let (mut buf, klen) = self.read_checked(ptr)?;
        buf.drain(..ENTRY_HEADER_LEN + klen);
        Ok(buf)
    }

    /// Reads and checks the entry at `ptr`, returning its key and value.
    pub(crate) fn read_entry(&self, ptr: ValuePointer) -> Result<(Vec<u8>, Vec<u8>)> {
        let (mut buf, klen) = self.read_checked(ptr)?;
        let value = buf.split_off(ENTRY_HEADER_LEN + klen);
        buf.drain(..ENTRY_HEADER_LEN);
        Ok((buf, value))
    }

    /// The whole entry at `ptr`, checked, and its key's length.
    fn read_checked(&self, ptr: ValuePointer) -> Result<(Vec<u8>, usize)> {
        let file = self.point.as_ref().unwrap_or(&self.file);
        let mut buf = vec![0u8; ptr.len as usize];
        let n = read_up_to(file, &mut buf, ptr.offset)
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
        Ok((buf, klen))
    }
}

/// Where a walk in file order (`VlogFile::for_each_entry`) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkEnd {
    /// Every byte of the file was an entry that checked.
    Complete,
    /// The bytes at `offset` are not an entry that checks: a torn tail, or
    /// damage. Nothing past it was walked; only the tree can say which
    /// entries past it are live.
    Stopped { offset: u64, what: &'static str },
}

impl VlogFile {
    /// Calls `f(pointer, key, value)` for each entry in file order, stopping at
    /// the end or at the first entry that does not check (a torn tail: bytes of a
    /// batch that never reached the WAL; or damage), and says which
    /// (`WalkEnd`): entries past a stop are never seen, so a caller that must
    /// meet every live entry asks the tree for those. Reads the file with positional reads
    /// of `WALK_CHUNK` bytes, not through its mapping: under load a GC walk
    /// that copied a 16 MiB file out of the mapping, a page fault per page,
    /// took 370-515 ms with the pages just written (the round's whole delay).
    pub(crate) fn for_each_entry(
        &self,
        mut f: impl FnMut(ValuePointer, &[u8], &[u8]) -> Result<()>,
    ) -> Result<WalkEnd> {
        let len = self.len()?;
        // The mapping is advised random (for point reads): ask for all of
        // the file now, or a file the page cache let go is read a page at a
        // time (seen as 0.5-1.5 s per 16 MiB file under memory pressure).
        if let Some(map) = &self.map {
            advice::will_need(map, 0, map.len());
        }
        let mut offset = crate::wal::HEADER_LEN as u64;
        // File bytes [at, at + window.len()).
        let mut window: Vec<u8> = Vec::new();
        let mut at = offset;
        let refill = |window: &mut Vec<u8>, at: &mut u64, from: u64, want: u64| {
            let n = want.max(WALK_CHUNK).min(len.saturating_sub(from));
            window.resize(to_usize(n), 0);
            let got = read_up_to(&self.file, window, from)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            window.truncate(got);
            *at = from;
            Ok::<(), Error>(())
        };
        let held = |window: &Vec<u8>, at: u64, from: u64, n: u64| {
            from >= at && from + n <= at + window.len() as u64
        };
        let stopped = |offset: u64, what: &'static str| Ok(WalkEnd::Stopped { offset, what });
        while offset < len {
            if offset + ENTRY_HEADER_LEN as u64 > len {
                return stopped(offset, "entry shorter than its header");
            }
            if !held(&window, at, offset, ENTRY_HEADER_LEN as u64) {
                refill(&mut window, &mut at, offset, ENTRY_HEADER_LEN as u64)?;
                if !held(&window, at, offset, ENTRY_HEADER_LEN as u64) {
                    return stopped(offset, "file shorter than its length");
                }
            }
            let header = &window[to_usize(offset - at)..];
            let klen = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as u64;
            let vlen = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as u64;
            let total = ENTRY_HEADER_LEN as u64 + klen + vlen;
            if offset + total > len || total > u64::from(u32::MAX) {
                return stopped(offset, "entry runs past the end of the file");
            }
            if !held(&window, at, offset, total) {
                refill(&mut window, &mut at, offset, total)?;
                if !held(&window, at, offset, total) {
                    return stopped(offset, "file shorter than its length");
                }
            }
            let start = to_usize(offset - at);
            let entry = &window[start..start + to_usize(total)];
            let klen = match check_entry(entry) {
                Ok((klen, _)) => klen,
                Err(what) => return stopped(offset, what),
            };
            let ptr = ValuePointer {
                file: self.id,
                offset,
                len: total as u32,
            };
            f(
                ptr,
                &entry[ENTRY_HEADER_LEN..ENTRY_HEADER_LEN + klen],
                &entry[ENTRY_HEADER_LEN + klen..],
            )?;
            offset += total;
        }
        Ok(WalkEnd::Complete)
    }

    /// About `count` entries spread evenly over the file's bytes (the first
    /// entry at or past each step) as (pointer, key), reading entry headers
    /// and the chosen keys only, by positional reads of `WALK_CHUNK` bytes:
    /// through the mapping, the walk (which touches every entry's header,
    /// so every page at 1 KiB values) would leave the whole file in the
    /// process's resident set (see docs/gc-pacing.md). Entries are not checked: this feeds an estimate, and a torn
    /// or damaged tail just ends the walk.
    pub(crate) fn sample_entries(&self, count: u64) -> Result<Vec<(ValuePointer, Vec<u8>)>> {
        let len = self.len()?;
        // File bytes [at, at + window.len()).
        let mut window: Vec<u8> = Vec::new();
        let mut at = 0u64;
        // Where the walk's last read started: the gap to the next is about
        // an entry's size. Entries of a page or more are walked a header
        // page at a time: a 1 MiB window would read the whole file to reach
        // its headers (16 KiB values: 4x the bytes; sampling is a large part
        // of the GC's time during an ingest, see docs/gc-pacing.md).
        let mut last = 0u64;
        sample_walk(self.id, len, count, |buf, from| {
            let want = buf.len() as u64;
            let held = from >= at && from + want <= at + window.len() as u64;
            let gap = from.saturating_sub(last);
            last = from;
            if !held {
                // Header pages through the descriptor without read-ahead.
                let (chunk, file) = if gap >= SPARSE_ENTRY {
                    (HEADER_PAGE, self.point.as_ref().unwrap_or(&self.file))
                } else {
                    (WALK_CHUNK, &self.file)
                };
                let n = want.max(chunk).min(len.saturating_sub(from));
                window.resize(to_usize(n), 0);
                let got = read_up_to(file, &mut window, from)
                    .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
                window.truncate(got);
                at = from;
            }
            let start = to_usize(from - at).min(window.len());
            let src = &window[start..];
            let n = buf.len().min(src.len());
            buf[..n].copy_from_slice(&src[..n]);
            Ok(n)
        })
    }
}

/// `VlogFile::sample_entries` over a file of `len` bytes read by `read`.
fn sample_walk(
    id: u32,
    len: u64,
    count: u64,
    mut read: impl FnMut(&mut [u8], u64) -> Result<usize>,
) -> Result<Vec<(ValuePointer, Vec<u8>)>> {
    let start = crate::wal::HEADER_LEN as u64;
    let step = (len.saturating_sub(start) / count.max(1)).max(1);
    let mut out = Vec::new();
    let mut offset = start;
    let mut next = start;
    let mut header = [0u8; ENTRY_HEADER_LEN];
    while offset + ENTRY_HEADER_LEN as u64 <= len {
        if read(&mut header, offset)? < ENTRY_HEADER_LEN {
            break;
        }
        let klen = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as u64;
        let vlen = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as u64;
        let total = ENTRY_HEADER_LEN as u64 + klen + vlen;
        if offset + total > len || total > u64::from(u32::MAX) {
            break;
        }
        if offset >= next {
            let mut key = vec![0u8; klen as usize];
            if read(&mut key, offset + ENTRY_HEADER_LEN as u64)? < key.len() {
                break;
            }
            let ptr = ValuePointer {
                file: id,
                offset,
                len: total as u32,
            };
            out.push((ptr, key));
            next = offset + step;
        }
        offset += total;
    }
    Ok(out)
}

/// Read-ahead of one scan through the value log: per mapped file, where the
/// scan's last read ended and how far past it the kernel was asked to read.
#[derive(Default)]
pub(crate) struct ScanAhead {
    files: HashMap<u32, Stream>,
    /// The chunk being read has its pages in memory: scattered reads are not
    /// advised (a call per value costs more than the page-cache hit it asks
    /// for). RocksDB's iterators stop their read-ahead on block-cache hits for
    /// the same reason.
    resident: bool,
}

/// Runs of a chunk whose pages are checked for residency (mincore) before
/// the chunk's reads are advised. Timing a chunk cannot tell: a chunk whose
/// reads were advised comes back as fast as one found in memory, and judging it
/// resident left the next chunk to fault a page at a time (16 KiB values
/// scanned cold: 85 MB/s instead of 700).
const RESIDENCY_SAMPLES: usize = 4;

struct Stream {
    last_end: usize,
    ahead: ReadAhead,
}

impl Stream {
    /// True if a read from `start` continues this stream's last one.
    fn continued_by(&self, start: usize) -> bool {
        (self.last_end..=self.last_end.saturating_add(SEQUENTIAL_GAP)).contains(&start)
    }
}

impl ScanAhead {
    /// Asks for `[start, end)` of file `id`, about to be read (see `plan`);
    /// `lone` when the range is one entry. While the scan runs from memory a
    /// range that only covers itself is skipped, and so is a lone entry's
    /// window: values written in random key order put a chunk's lone entries
    /// close enough to the last read of their file to look like a walk in
    /// file order, and asking for a window of resident pages costs a walk of
    /// the page cache over it (1 KiB values in memory: 14% of a scan, one
    /// call per 16 values). A walk in file order reads runs of several
    /// entries and keeps its window.
    fn advise(&mut self, id: u32, map: &Mmap, start: usize, end: usize, lone: bool) {
        if let Some(r) = self.request(id, start, end, map.len(), lone) {
            advice::will_need(map, r.start, r.end);
        }
    }

    /// What `advise` asks the kernel for.
    fn request(
        &mut self,
        id: u32,
        start: usize,
        end: usize,
        len: usize,
        lone: bool,
    ) -> Option<Range<usize>> {
        if self.resident && lone {
            // Nothing is asked for: the stream only learns where this read
            // ended, and its window stays what was asked for.
            let s = self.stream(id);
            if !s.continued_by(start) {
                s.ahead = ReadAhead::new(advice::FIRST_WINDOW);
            }
            s.last_end = end;
            return None;
        }
        self.plan(id, start, end, len)
            .filter(|r| !(self.resident && *r == (start..end)))
    }

    fn stream(&mut self, id: u32) -> &mut Stream {
        self.files.entry(id).or_insert_with(|| Stream {
            last_end: usize::MAX,
            ahead: ReadAhead::new(advice::FIRST_WINDOW),
        })
    }

    /// Judges a chunk about to be read: resident only if every page of each of
    /// up to [`RESIDENCY_SAMPLES`] of its mapped runs, spread over the chunk,
    /// is in memory. (Not only the first page: values next to each other in
    /// the file share pages, so a run's first page is often in memory when the
    /// rest of it is not.)
    fn sample<'a>(&mut self, runs: impl ExactSizeIterator<Item = (&'a Mmap, Range<usize>)>) {
        let n = runs.len();
        let step = n.div_ceil(RESIDENCY_SAMPLES).max(1);
        let mut sampled = 0;
        self.resident = true;
        for (map, range) in runs.step_by(step) {
            sampled += 1;
            if !advice::range_resident(map, range.start, range.end) {
                self.resident = false;
                return;
            }
        }
        self.resident = sampled > 0;
    }

    /// What to ask for before reading `[start, end)` of file `id` (`len`
    /// bytes). When the read continues the scan's last one in that file (values
    /// written in the order they are scanned), a growing window past it is
    /// asked for too, so the next reads find their pages read or in flight;
    /// otherwise only the range. `None` when all of it was asked for already.
    fn plan(&mut self, id: u32, start: usize, end: usize, len: usize) -> Option<Range<usize>> {
        let s = self.stream(id);
        let sequential = s.continued_by(start);
        s.last_end = end;
        if !sequential {
            s.ahead = ReadAhead::new(advice::FIRST_WINDOW);
            return Some(start..end);
        }
        let reach = s.ahead.reach();
        let past = s.ahead.forward(end, len);
        // Whatever of the range was not asked for yet, joined with the window.
        let from = match reach {
            Some(r) if r >= end => past.as_ref().map(|p| p.start),
            Some(r) => Some(start.max(r)),
            None => Some(start),
        };
        from.map(|from| from..past.map_or(end, |p| p.end))
    }
}

#[cfg(test)]
thread_local! {
    /// Positional reads of value-log files made by scans (`read_many`) on
    /// this thread: a test counts a scan's reads per value.
    pub(crate) static SCAN_READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A file offset as an index into a mapping (past any mapping if it does not fit).
fn to_usize(offset: u64) -> usize {
    usize::try_from(offset).unwrap_or(usize::MAX)
}

/// Reads as many bytes as the file has at `offset`, up to `buf.len()`.
fn read_up_to(file: &ReadFile, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    file.read_at(buf, offset)
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

    /// This set with the files of `newer` it lacks (files it holds stay: its
    /// readers may still need them).
    pub(crate) fn union(&self, newer: &VlogSet) -> VlogSet {
        let mut files = self.files.clone();
        for (id, f) in &newer.files {
            files.entry(*id).or_insert_with(|| f.clone());
        }
        VlogSet { files }
    }

    /// True if every pointer's file is in this set.
    pub(crate) fn has_all(&self, ptrs: &[ValuePointer]) -> bool {
        ptrs.iter().all(|p| self.files.contains_key(&p.file))
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
                filename::vlog(dir_hint, ptr.file),
                ptr.offset,
                "value pointer names a value-log file that is not live",
            )
        })
    }

    /// Starts reading the entry behind `ptr` without waiting
    /// ([`VlogFile::will_need`]); nothing if its file is not in the set.
    pub(crate) fn will_need(&self, ptr: ValuePointer) {
        if let Some(f) = self.get(ptr.file) {
            f.will_need(ptr);
        }
    }

    /// Reads the value behind one pointer.
    pub(crate) fn read(&self, ptr: ValuePointer, dir: &Path) -> Result<Vec<u8>> {
        self.file(ptr, dir)?.read(ptr)
    }

    /// Reads the values behind many pointers into `buf`, merging reads of
    /// entries that lie close together in one file (a scan of values written
    /// in order costs a few large reads instead of one read per value), and
    /// returns where each pointer's value lies in `buf`, in the order of
    /// `ptrs`. Every entry's crc is checked. `buf` is the caller's and is
    /// reused from call to call: it only grows, so its pages are faulted in
    /// and zeroed once, not once per value (a fresh `Vec` per 16 KiB value
    /// costs half of an in-memory scan in page faults and `memset`, see
    /// docs/read-path.md). `scan` is the read-ahead state of the scan making
    /// the call.
    pub(crate) fn read_many(
        &self,
        ptrs: &[ValuePointer],
        dir: &Path,
        scan: &mut ScanAhead,
        buf: &mut Vec<u8>,
    ) -> Result<Vec<Range<usize>>> {
        let mut order: Vec<usize> = (0..ptrs.len()).collect();
        order.sort_by_key(|&i| (ptrs[i].file, ptrs[i].offset));
        let mut out: Vec<Range<usize>> = vec![0..0; ptrs.len()];
        // Runs of `order` read together: (first, past the last, file, start, end).
        let mut runs = Vec::new();
        let mut need = 0usize;
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
            need = need.saturating_add(to_usize(end - start));
            runs.push((i, j, self.file(first, dir)?, start, end));
            i = j;
        }
        // Ask for every run first (through the mapping's advice, which fills
        // the page cache without mapping pages into the process), so that the
        // reads go to the device together and in large pieces; then read each
        // run with one positional read.
        let in_map = |file: &VlogFile, off: u64| to_usize(off.saturating_add(file.map_at));
        let mapped: Vec<(&Mmap, Range<usize>)> = runs
            .iter()
            .filter_map(|(_, _, file, start, end)| {
                file.map
                    .as_ref()
                    .map(|m| (m, in_map(file, *start)..in_map(file, *end)))
            })
            .collect();
        scan.sample(mapped.into_iter());
        for (i, j, file, start, end) in &runs {
            if let Some(map) = &file.map {
                let (from, to) = (in_map(file, *start), in_map(file, *end));
                scan.advise(file.id, map, from, to, *j == *i + 1);
            }
        }
        if buf.len() < need {
            buf.resize(need, 0);
        }
        let mut at = 0usize;
        for (i, j, file, start, end) in runs {
            let len = to_usize(end - start);
            let dst = &mut buf[at..at + len];
            // A lone entry goes through the descriptor without read-ahead,
            // as a point read does.
            let fd = match &file.point {
                Some(point) if j == i + 1 => point,
                _ => &file.file,
            };
            #[cfg(test)]
            SCAN_READS.with(|n| n.set(n.get() + 1));
            let n = read_up_to(fd, dst, start)
                .map_err(|e| Error::io(format!("reading {}", file.path.display()), e))?;
            for &k in &order[i..j] {
                let p = ptrs[k];
                let lo = to_usize(p.offset - start);
                let hi = lo + p.len as usize;
                if hi > n {
                    return Err(Error::corruption(
                        &file.path,
                        p.offset,
                        format!(
                            "value pointer runs past the end of the file ({} of {} bytes)",
                            n.saturating_sub(lo),
                            p.len
                        ),
                    ));
                }
                let (klen, _) = check_entry(&dst[lo..hi])
                    .map_err(|what| Error::corruption(&file.path, p.offset, what))?;
                out[k] = at + lo + ENTRY_HEADER_LEN + klen..at + hi;
            }
            at += len;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_reads_are_advised_unless_a_sample_of_the_chunk_is_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.vlog");
        std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a test file that nothing writes while it is mapped.
        let map = unsafe { Mmap::map(&file) }.unwrap();
        advice::random(&map);
        let len = map.len();
        let runs = |starts: &[usize]| {
            starts
                .iter()
                .map(|&s| (&map, s..s + 5000))
                .collect::<Vec<_>>()
        };
        let mut scan = ScanAhead::default();
        // Just written, so in the page cache: no call per scattered read...
        scan.sample(runs(&[8192, 1 << 20, 3 << 20]).into_iter());
        assert_eq!(scan.request(1, 8 << 10, (8 << 10) + 1100, len, true), None);
        // ...nor for a lone entry that lands just past the last read...
        assert_eq!(
            scan.request(1, (8 << 10) + 1100, (8 << 10) + 2200, len, true),
            None
        );
        // ...but a walk in file order (a run of entries) still asks for its
        // window past the read.
        let r = scan
            .request(1, (8 << 10) + 2200, (8 << 10) + 4400, len, false)
            .unwrap();
        assert!(r.end > (8 << 10) + 4400, "{r:?}");
        // Evicted (as the large benchmark does): every scattered read is asked for.
        assert!(advice::test_pages::evict(&path));
        assert!(
            !advice::range_resident(&map, 3 << 20, (3 << 20) + 1),
            "eviction did not happen"
        );
        scan.sample(runs(&[8192, 1 << 20, 3 << 20]).into_iter());
        assert_eq!(
            scan.request(1, 2 << 20, (2 << 20) + 1100, len, true),
            Some((2 << 20)..(2 << 20) + 1100)
        );
        // One cold page among the samples is enough to advise the chunk: here
        // the second page of a run whose first page is in memory.
        std::hint::black_box(map[1 << 20]);
        assert!(advice::range_resident(&map, 1 << 20, (1 << 20) + 1));
        assert!(!advice::range_resident(
            &map,
            (1 << 20) + 4096,
            (1 << 20) + 4097
        ));
        scan.sample(runs(&[1 << 20]).into_iter());
        assert_eq!(
            scan.request(1, 3 << 20, (3 << 20) + 1100, len, true),
            Some((3 << 20)..(3 << 20) + 1100)
        );
    }

    #[test]
    fn an_encrypted_sealed_file_is_mapped_past_its_prefix_so_scans_can_read_ahead() {
        let dir = tempfile::tempdir().unwrap();
        for (fs, at) in [
            (crate::crypt::test_fs(dir.path()), crate::crypt::PREFIX_LEN),
            (Fs::real(), 0),
        ] {
            let id = 1 + at as u32;
            drop(super::super::writer::VlogWriter::create(&fs, dir.path(), id).unwrap());
            let f = VlogFile::open_sealed(&fs, &filename::vlog(dir.path(), id), id).unwrap();
            let map = f.map.as_ref().expect("a sealed file is mapped for advice");
            assert_eq!(f.map_at, at);
            assert_eq!(map.len() as u64, f.len().unwrap() + at);
        }
    }

    #[test]
    fn a_scan_continuing_through_a_file_reads_ahead_and_a_jump_reads_only_its_range() {
        let len = 64 << 20;
        let mut scan = ScanAhead::default();
        // First read of a file: only its range.
        assert_eq!(scan.plan(1, 1000, 70_000, len), Some(1000..70_000));
        // The next chunk continues it: its range and a window past it.
        let r = scan.plan(1, 70_000, 140_000, len).unwrap();
        assert_eq!(r.start, 70_000);
        assert!(r.end >= 140_000 + advice::FIRST_WINDOW, "{r:?}");
        // Reads inside what was asked for ask for nothing more...
        assert_eq!(scan.plan(1, 140_000, 150_000, len), None);
        // ...until the walk is half way through the window.
        let mut pos = 150_000;
        let mut next_start = r.end;
        let mut requests = 0;
        while pos < 8 << 20 {
            if let Some(r) = scan.plan(1, pos, pos + 66_000, len) {
                assert_eq!(r.start, next_start, "a byte asked for twice, or a gap");
                assert!(r.len() <= advice::MAX_WINDOW);
                next_start = r.end;
                requests += 1;
            }
            pos += 66_000;
        }
        assert!(
            (8..=24).contains(&requests),
            "{requests} requests over 8 MiB"
        );
        // Another file keeps its own stream; a jump back reads just the range.
        assert_eq!(scan.plan(2, 0, 1000, len), Some(0..1000));
        assert_eq!(scan.plan(1, 10, 2000, len), Some(10..2000));
        // A gap larger than SEQUENTIAL_GAP is a jump too.
        let far = 2000 + SEQUENTIAL_GAP + 1;
        assert_eq!(scan.plan(1, far, far + 10, len), Some(far..far + 10));
        // Windows stop at the end of the file.
        let r = scan.plan(1, far + 10, len - 5, len).unwrap();
        assert_eq!(r.end, len);
    }
}
