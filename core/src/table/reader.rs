//! An open table: memory-mapped data, index and filter held in memory.
//!
//! Uncompressed data blocks are read in place from the mapping (no copy).
//! A compressed block (version 3) is decompressed into an owned buffer each
//! time it is read: a point lookup pays one decompression, an iterator one
//! per block it enters. No cache of decompressed blocks exists yet.

use super::block::DecodedBlock;
use super::codec::{self, Contents};
use super::footer::{self, Bad, Footer};
use super::{bloom, PAGE, VERSION, VERSION_COMPRESSED};
use crate::advice::{self, ReadAhead};
use crate::coding::Reader;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::key;
use crate::read_guard;
use memmap2::{Mmap, UncheckedAdvice};
use std::cmp::Ordering;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::OnceLock;

/// One data block in the index. The block's last key lies in the table's
/// `index_keys` arena: a binary search walks two contiguous arrays instead of
/// chasing one heap allocation per block.
pub(crate) struct IndexEntry {
    key_start: u32,
    key_len: u32,
    pub offset: u64,
    pub len: u32,
}

pub(crate) struct Table {
    id: u64,
    path: PathBuf,
    mmap: Mmap,
    index: Vec<IndexEntry>,
    index_keys: Vec<u8>,
    smallest: Box<[u8]>,
    filter: Vec<u8>,
    max_seq: u64,
    entries: u64,
    /// Format version (footer): 3 means data blocks end with a compression type.
    version: u32,
    /// Set when the table left the live set; the file is deleted when the last user drops it.
    /// Set when compaction replaced the table: the file is removed, through
    /// this file system, when the last reader lets go.
    obsolete: OnceLock<Fs>,
    /// Blocks whose checksum was checked once: the file never changes while open,
    /// so later reads skip the crc (a 4 KiB crc costs about as much as the lookup).
    verified: Vec<AtomicBool>,
    /// A read of the mapping failed (SIGBUS caught by `read_guard`): every
    /// later read of this table is an I/O error.
    read_failed: AtomicBool,
}

impl Table {
    /// Opens table `id` at `path`, checking footer, index and filter checksums.
    pub(crate) fn open(path: &Path, id: u64) -> Result<Table> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
            .len();
        if len < footer::LEN as u64 {
            return Err(Error::corruption(path, 0, "table shorter than its footer"));
        }
        // SAFETY: the file is opened read-only and sett never modifies a table
        // after it is written; other processes are kept out by the directory lock.
        let mmap = unsafe { Mmap::map(&file) }
            .map_err(|e| Error::io(format!("mapping {}", path.display()), e))?;
        // Point lookups touch one block; iterators ask for read-ahead themselves.
        advice::random(&mmap);
        let read_failed = AtomicBool::new(false);
        let mapped = read_guard::Mapped {
            path,
            failed: &read_failed,
        };
        let (smallest, index_keys, index, filter, max_seq, entries, version) =
            read_guard::read(mapped, || Self::parse(path, &mmap))?;
        let verified = index.iter().map(|_| AtomicBool::new(false)).collect();
        Ok(Table {
            id,
            path: path.to_path_buf(),
            mmap,
            verified,
            index,
            index_keys,
            smallest,
            filter,
            max_seq,
            entries,
            version,
            obsolete: OnceLock::new(),
            read_failed,
        })
    }

    /// Checks and parses the footer, index and filter of a mapped table.
    #[allow(clippy::type_complexity)]
    fn parse(
        path: &Path,
        mmap: &Mmap,
    ) -> Result<(Box<[u8]>, Vec<u8>, Vec<IndexEntry>, Vec<u8>, u64, u64, u32)> {
        let fpos = mmap.len() - footer::LEN;
        let footer = &mmap[fpos..];
        let corrupt =
            |off: usize, what: &str| Error::corruption(path, off as u64, what.to_string());
        let f = Footer::decode(footer).map_err(|bad| match bad {
            Bad::Unreadable => corrupt(fpos, "unreadable footer"),
            Bad::Magic { at } => corrupt(fpos + at, "bad table magic"),
            Bad::Checksum { at } => corrupt(fpos + at, "footer checksum mismatch"),
            Bad::Version(found) => Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found,
                supported: VERSION,
            },
        })?;
        let (index_off, index_len) = (f.index.offset, f.index.len);
        let (filter_off, filter_len) = (f.filter.offset, f.filter.len);
        // Filter, index and footer lie together at the end: one read, not a fault per page.
        advice::will_need(
            mmap,
            usize::try_from(filter_off).unwrap_or(usize::MAX),
            fpos,
        );
        let filter = checked_slice(path, mmap, filter_off, filter_len, fpos)?.to_vec();
        let index_bytes = checked_slice(path, mmap, index_off, index_len, fpos)?;
        let (smallest, index_keys, index) = parse_index(index_bytes, filter_off, f.version)
            .ok_or_else(|| corrupt(index_off as usize, "malformed index block"))?;
        Ok((
            smallest, index_keys, index, filter, f.max_seq, f.entries, f.version,
        ))
    }

    /// Runs `f`, a read of this table's mapping, with device errors under the
    /// mapping returned as I/O errors (see `read_guard`).
    fn guarded<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let mapped = read_guard::Mapped {
            path: &self.path,
            failed: &self.read_failed,
        };
        read_guard::read(mapped, f)
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn size(&self) -> u64 {
        self.mmap.len() as u64
    }

    pub(crate) fn max_seq(&self) -> u64 {
        self.max_seq
    }

    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    pub(crate) fn smallest(&self) -> &[u8] {
        &self.smallest
    }

    pub(crate) fn largest(&self) -> &[u8] {
        self.index
            .len()
            .checked_sub(1)
            .map_or(&[], |i| self.index_key(i))
    }

    pub(crate) fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// The last key of block `i`.
    pub(crate) fn index_key(&self, i: usize) -> &[u8] {
        let e = &self.index[i];
        let start = e.key_start as usize;
        &self.index_keys[start..start + e.key_len as usize]
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.mmap
    }

    /// Memory held by the index and the filter.
    pub(crate) fn memory(&self) -> usize {
        self.filter.len()
            + self.smallest.len()
            + self.index_keys.len()
            + self.index.len() * std::mem::size_of::<IndexEntry>()
    }

    /// True if `user_key` lies within this table's key range.
    pub(crate) fn covers(&self, user_key: &[u8]) -> bool {
        key::user_key(&self.smallest) <= user_key && user_key <= key::user_key(self.largest())
    }

    /// Index of the first block whose last key is ≥ `target` (may be `index.len()`).
    pub(crate) fn find_block(&self, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.index.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if key::compare(self.index_key(mid), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The bytes of block `i`, its crc checked the first time.
    fn block_bytes(&self, i: usize) -> Result<&[u8]> {
        let e = &self.index[i];
        if self.verified[i].load(AtomicOrdering::Acquire) {
            // Offsets were checked against the file size when the index was parsed.
            let start = e.offset as usize;
            return Ok(&self.mmap[start..start + e.len as usize]);
        }
        // First read of the block in this process, likely from the device: a
        // block over two pages comes in one read, not a fault each. (A block in
        // one page, as version 2 lays out most, needs no call.)
        let start = e.offset as usize;
        let end = start + e.len as usize + 4;
        if start / PAGE as usize != (end - 1) / PAGE as usize {
            advice::will_need(&self.mmap, start, end);
        }
        let data = checked_slice(&self.path, &self.mmap, e.offset, e.len, self.mmap.len())?;
        self.verified[i].store(true, AtomicOrdering::Release);
        Ok(data)
    }

    /// The format version the table was written in.
    #[cfg(test)]
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    /// The entries of block `i` from its stored bytes: the bytes themselves
    /// before version 3 or when stored raw, else decompressed (an owned copy).
    fn contents<'a>(&self, i: usize, stored: &'a [u8]) -> Result<Contents<'a>> {
        if self.version < VERSION_COMPRESSED {
            return Ok(Contents::Raw(stored));
        }
        codec::decode(stored)
            .map_err(|bad| Error::corruption(&self.path, self.index[i].offset, bad.to_string()))
    }

    /// Checks every block's crc and format; returns the number of blocks.
    pub(crate) fn verify(&self) -> Result<usize> {
        let mut ahead = ReadAhead::new(advice::MAX_WINDOW);
        let mut prev_end = 0u64;
        for (i, e) in self.index.iter().enumerate() {
            if let Some(r) = ahead.forward(e.offset as usize, self.mmap.len()) {
                self.will_need(r);
            }
            let gap = prev_end..e.offset;
            prev_end = e.offset + u64::from(e.len) + 4;
            self.guarded(|| {
                // Padding before a block is zeros: no reader looks at it, so
                // only this check can find damage there.
                let pad = self.mmap.get(gap.start as usize..gap.end as usize);
                if let Some(at) = pad.and_then(|p| p.iter().position(|&b| b != 0)) {
                    return Err(Error::corruption(
                        &self.path,
                        gap.start + at as u64,
                        "non-zero byte in the padding before a data block",
                    ));
                }
                let stored =
                    checked_slice(&self.path, &self.mmap, e.offset, e.len, self.mmap.len())?;
                let data = self.contents(i, stored)?;
                DecodedBlock::decode(&data)
                    .ok_or_else(|| Error::corruption(&self.path, e.offset, "malformed data block"))
            })?;
            self.verified[i].store(true, AtomicOrdering::Release);
        }
        Ok(self.index.len())
    }

    /// [`Table::load_block`] into a new block, returned first.
    #[cfg(test)]
    pub(crate) fn block(&self, i: usize) -> Result<(DecodedBlock, Option<Vec<u8>>, usize)> {
        let mut block = DecodedBlock::default();
        let (owned, base) = self.load_block(i, &mut block)?;
        Ok((block, owned, base))
    }

    /// Decodes block `i` into `block` (reusing its buffers), checking its crc
    /// the first time. Returns the buffer the block's value ranges point into
    /// when it was decompressed (else they are ranges of the file from the
    /// offset), and its file offset. On an error `block` is left empty.
    pub(crate) fn load_block(
        &self,
        i: usize,
        block: &mut DecodedBlock,
    ) -> Result<(Option<Vec<u8>>, usize)> {
        let e = &self.index[i];
        let owned = self.guarded(|| {
            let data = self.contents(i, self.block_bytes(i)?)?;
            if !block.decode_into(&data) {
                return Err(Error::corruption(
                    &self.path,
                    e.offset,
                    "malformed data block",
                ));
            }
            Ok(match data {
                Contents::Raw(_) => None,
                Contents::Owned(v) => Some(v),
            })
        });
        if owned.is_err() {
            block.decode_into(&[]);
        }
        Ok((owned?, e.offset as usize))
    }

    /// The newest version of `user_key` at or below `read_seq`: (seq, value record).
    /// `hash` is `bloom::hash(user_key)`, computed once per lookup by the caller.
    pub(crate) fn get(
        &self,
        user_key: &[u8],
        hash: u64,
        read_seq: u64,
    ) -> Result<Option<(u64, Vec<u8>)>> {
        if !self.covers(user_key) || !bloom::may_contain(&self.filter, hash) {
            return Ok(None);
        }
        let target = key::encode(user_key, read_seq);
        self.guarded(|| {
            let mut b = self.find_block(&target);
            while b < self.index.len() {
                let e = &self.index[b];
                let data = self.contents(b, self.block_bytes(b)?)?;
                let found = super::block::seek(&data, &target).ok_or_else(|| {
                    Error::corruption(&self.path, e.offset, "malformed data block")
                })?;
                if let Some((k, v)) = found {
                    let (uk, seq) = key::split(&k);
                    if uk != user_key {
                        return Ok(None);
                    }
                    return Ok(Some((seq, data[v].to_vec())));
                }
                b += 1;
            }
            Ok(None)
        })
    }

    /// Starts reading `range` of the file into the page cache (a walk in order
    /// is about to read it; the mapping is otherwise read a page per fault).
    pub(crate) fn will_need(&self, range: Range<usize>) {
        advice::will_need(&self.mmap, range.start, range.end);
    }

    /// Drops this process's mapping of `[start, end)` (page cache untouched), so
    /// that a compaction streaming through a table does not keep all of it in
    /// the process's resident memory. Later reads fault the pages back in.
    pub(crate) fn release_pages(&self, start: usize, end: usize) {
        const PAGE: usize = 4096;
        let start = start.next_multiple_of(PAGE);
        let end = end.min(self.mmap.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the mapping is a read-only shared mapping of a file that
            // never changes while open, so MADV_DONTNEED cannot change what any
            // live slice into it reads: touched pages fault back in with the same
            // bytes. The range is inside the mapping (checked above).
            let _ = unsafe {
                self.mmap
                    .unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }

    pub(crate) fn mark_obsolete(&self, fs: &Fs) {
        let _ = self.obsolete.set(fs.clone());
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(fs) = self.obsolete.get() {
            // Best effort: an orphaned table is also removed at the next open.
            let _ = fs.remove(&self.path);
        }
    }
}

/// The block at (offset, len) followed by its crc, checked, within `limit`.
fn checked_slice<'a>(
    path: &Path,
    data: &'a [u8],
    off: u64,
    len: u32,
    limit: usize,
) -> Result<&'a [u8]> {
    let start = usize::try_from(off).unwrap_or(usize::MAX);
    let end = start.saturating_add(len as usize);
    if end.saturating_add(4) > limit {
        return Err(Error::corruption(
            path,
            off,
            "block handle points past the end of the table",
        ));
    }
    let block = &data[start..end];
    let crc = u32::from_le_bytes([data[end], data[end + 1], data[end + 2], data[end + 3]]);
    if crc != crc32fast::hash(block) {
        return Err(Error::corruption(path, off, "block checksum mismatch"));
    }
    Ok(block)
}

/// The index block: (smallest key, last-key arena, entries).
type ParsedIndex = (Box<[u8]>, Vec<u8>, Vec<IndexEntry>);

fn parse_index(data: &[u8], data_end: u64, version: u32) -> Option<ParsedIndex> {
    // Version 2 may pad before a block to start it on a page: less than a page.
    let max_gap = if version >= 2 { PAGE - 1 } else { 0 };
    let mut r = Reader::new(data);
    let n = r.u32()? as usize;
    let smallest: Box<[u8]> = r.len_prefixed()?.into();
    let mut index = Vec::with_capacity(n.min(data.len()));
    let mut keys = Vec::with_capacity(data.len());
    let mut prev_end = 0u64;
    let mut prev_key = 0..0;
    for _ in 0..n {
        let last_key = r.len_prefixed()?;
        let offset = r.u64()?;
        let len = r.u32()?;
        let end = offset.checked_add(u64::from(len) + 4)?;
        if last_key.len() < key::SUFFIX_LEN
            || offset < prev_end
            || offset - prev_end > max_gap
            || end > data_end
        {
            return None;
        }
        // Keys must ascend.
        if !prev_key.is_empty() && key::compare(&keys[prev_key.clone()], last_key) != Ordering::Less
        {
            return None;
        }
        prev_end = end;
        let key_start = u32::try_from(keys.len()).ok()?;
        keys.extend_from_slice(last_key);
        prev_key = key_start as usize..keys.len();
        index.push(IndexEntry {
            key_start,
            key_len: u32::try_from(last_key.len()).ok()?,
            offset,
            len,
        });
    }
    (r.remaining() == 0 && n > 0 && smallest.len() >= key::SUFFIX_LEN)
        .then_some((smallest, keys, index))
}

#[cfg(test)]
mod tests {
    use super::super::{Compression, TableBuilder};
    use super::*;

    fn write_table(dir: &Path, n: u32) -> PathBuf {
        let path = dir.join("000001.sst");
        let mut b = crate::table::test_builder(&path, 256);
        for i in 0..n {
            for seq in [3u64, 1] {
                b.add(
                    &key::encode(format!("k{i:05}").as_bytes(), seq),
                    format!("v{i}@{seq}").as_bytes(),
                )
                .unwrap();
            }
        }
        b.finish().unwrap();
        path
    }

    #[test]
    fn page_sized_blocks_each_sit_in_one_page_for_little_padding() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let mut b = crate::table::test_builder(&path, 4096);
        let n = 20_000u32;
        for i in 0..n {
            let value = vec![b'a' + (i % 26) as u8; 100 + (i % 57) as usize];
            b.add(&key::encode(format!("key{i:08}").as_bytes(), 1), &value)
                .unwrap();
        }
        b.finish().unwrap();
        let t = Table::open(&path, 1).unwrap();
        let mut padding = 0;
        let mut prev_end = 0;
        for e in t.index() {
            let end = e.offset + u64::from(e.len) + 4;
            assert_eq!(
                e.offset / PAGE,
                (end - 1) / PAGE,
                "block at {} straddles a page",
                e.offset
            );
            padding += e.offset - prev_end;
            prev_end = end;
        }
        assert!(t.index().len() > 100);
        assert!(
            padding * 100 < prev_end * 3,
            "{padding} bytes of padding in {prev_end}"
        );
        for i in (0..n).step_by(97) {
            let k = format!("key{i:08}");
            let (_, v) = t
                .get(k.as_bytes(), bloom::hash(k.as_bytes()), 5)
                .unwrap()
                .unwrap();
            assert_eq!(v.len(), 100 + (i % 57) as usize);
        }
        t.verify().unwrap();
        // A damaged padding byte is found by verify, the only reader of it.
        let gap_at = t
            .index()
            .windows(2)
            .find(|w| w[1].offset > w[0].offset + u64::from(w[0].len) + 4)
            .map(|w| w[0].offset + u64::from(w[0].len) + 4)
            .expect("some block was padded");
        drop(t);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[gap_at as usize] = 0x5A;
        std::fs::write(&path, &bytes).unwrap();
        let err = Table::open(&path, 1).unwrap().verify().unwrap_err();
        assert!(err.to_string().contains("padding"), "{err}");
    }

    #[test]
    fn get_finds_versions_across_many_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let t = Table::open(&write_table(dir.path(), 500), 1).unwrap();
        assert!(t.index().len() > 10);
        assert_eq!(t.entries(), 1000);
        assert_eq!(t.max_seq(), 3);
        for i in [0u32, 1, 250, 499] {
            let k = format!("k{i:05}");
            assert_eq!(
                t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 9)
                    .unwrap()
                    .unwrap(),
                (3, format!("v{i}@3").into_bytes())
            );
            assert_eq!(
                t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 2)
                    .unwrap()
                    .unwrap(),
                (1, format!("v{i}@1").into_bytes())
            );
            assert_eq!(
                t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 0).unwrap(),
                None
            );
        }
        assert_eq!(t.get(b"k00250x", bloom::hash(b"k00250x"), 9).unwrap(), None);
        assert_eq!(t.get(b"a", bloom::hash(b"a"), 9).unwrap(), None);
    }

    /// A table of JSON-like values (compressible) with codec `c`.
    fn write_json_table(path: &Path, c: Compression, n: u32) {
        let codec = super::super::Codec {
            compression: c,
            zstd_level: 3,
        };
        let mut b = TableBuilder::create(&crate::fs::Fs::real(), path, 4096, 10, codec).unwrap();
        for i in 0..n {
            b.add(&key::encode(format!("key{i:06}").as_bytes(), 2), &json(i))
                .unwrap();
        }
        b.finish().unwrap();
    }

    fn json(i: u32) -> Vec<u8> {
        format!(r#"{{"id":{i},"user":"user{i}","email":"user{i}@example.com","active":true}}"#)
            .into_bytes()
    }

    #[test]
    fn compressed_tables_read_back_every_entry_both_ways_and_are_smaller() {
        use crate::iter::Source;
        let dir = tempfile::tempdir().unwrap();
        let n = 5000;
        let size = |c: Compression| {
            let path = dir.path().join(format!("{}.sst", c.name()));
            write_json_table(&path, c, n);
            let t = std::sync::Arc::new(Table::open(&path, 1).unwrap());
            let want_version = if c == Compression::None { 2 } else { 3 };
            assert_eq!(t.version(), want_version, "{c:?}");
            for i in (0..n).step_by(13) {
                let k = format!("key{i:06}");
                let got = t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 9).unwrap();
                assert_eq!(got, Some((2, json(i))), "{c:?} {k}");
            }
            for reverse in [false, true] {
                let mut it = super::super::TableIter::new(t.clone(), reverse);
                it.rewind().unwrap();
                let mut seen = 0u32;
                while it.valid() {
                    let i = if reverse { n - 1 - seen } else { seen };
                    assert_eq!(it.value(), &json(i)[..], "{c:?} reverse={reverse}");
                    it.next().unwrap();
                    seen += 1;
                }
                assert_eq!(seen, n);
            }
            t.verify().unwrap();
            t.size()
        };
        let none = size(Compression::None);
        for c in [Compression::Lz4, Compression::Zstd] {
            let s = size(c);
            assert!(s * 10 < none * 7, "{c:?}: {s} bytes against {none}");
        }
    }

    #[test]
    fn a_compressed_block_damaged_under_a_good_crc_is_corruption_naming_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        for c in [Compression::Lz4, Compression::Zstd] {
            let path = dir.path().join(format!("{}.sst", c.name()));
            write_json_table(&path, c, 2000);
            let (off, len) = {
                let t = Table::open(&path, 1).unwrap();
                (t.index()[1].offset as usize, t.index()[1].len as usize)
            };
            let good = std::fs::read(&path).unwrap();
            assert_eq!(good[off + len - 1], c.type_byte(), "block 1 is compressed");
            // Garbage compressed bytes, or a stated length one short; the crc
            // is made to match so that the codec is what must refuse them.
            for damage in 0..2 {
                let mut bad = good.clone();
                if damage == 0 {
                    for b in &mut bad[off + 3..off + len - 1] {
                        *b = 0xFF;
                    }
                } else {
                    bad[off] = bad[off].wrapping_sub(1);
                }
                let crc = crc32fast::hash(&bad[off..off + len]).to_le_bytes();
                bad[off + len..off + len + 4].copy_from_slice(&crc);
                std::fs::write(&path, &bad).unwrap();
                let t = std::sync::Arc::new(Table::open(&path, 1).unwrap());
                let k = t.index_key(1).to_vec();
                let (uk, _) = key::split(&k);
                let errs = [
                    t.get(uk, bloom::hash(uk), 9).unwrap_err(),
                    t.verify().unwrap_err(),
                    t.block(1).map(|_| ()).unwrap_err(),
                ];
                for e in errs {
                    match &e {
                        Error::Corruption { file, offset, .. } => {
                            assert_eq!((file, *offset), (&path, off as u64), "{c:?}: {e}")
                        }
                        other => panic!("{c:?} damage {damage}: {other}"),
                    }
                }
            }
        }
    }

    #[test]
    fn flipped_byte_anywhere_in_a_compressed_table_is_an_error_or_absent_never_a_wrong_value() {
        let dir = tempfile::tempdir().unwrap();
        for c in [Compression::Lz4, Compression::Zstd] {
            let path = dir.path().join(format!("{}.sst", c.name()));
            write_json_table(&path, c, 300);
            let good = std::fs::read(&path).unwrap();
            for off in (0..good.len()).step_by(11) {
                let mut bad = good.clone();
                bad[off] ^= 0x5a;
                std::fs::write(&path, &bad).unwrap();
                let Ok(t) = Table::open(&path, 1) else {
                    continue;
                };
                let _ = t.verify();
                for i in (0..300u32).step_by(7) {
                    let k = format!("key{i:06}");
                    match t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 9) {
                        Ok(Some((_, v))) => assert_eq!(v, json(i), "{c:?} offset {off}"),
                        Ok(None) => panic!("{c:?} offset {off}: existing key reported missing"),
                        Err(e) => assert!(e.is_corruption(), "{c:?} offset {off}: {e}"),
                    }
                }
            }
        }
    }

    #[test]
    fn flipped_byte_anywhere_is_an_error_or_absent_never_a_wrong_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_table(dir.path(), 60);
        let good = std::fs::read(&path).unwrap();
        for off in (0..good.len()).step_by(7) {
            let mut bad = good.clone();
            bad[off] ^= 0x5a;
            std::fs::write(&path, &bad).unwrap();
            let Ok(t) = Table::open(&path, 1) else {
                continue;
            };
            for i in 0..60u32 {
                let k = format!("k{i:05}");
                match t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 9) {
                    Ok(Some((_, v))) => {
                        assert_eq!(v, format!("v{i}@3").into_bytes(), "offset {off}")
                    }
                    Ok(None) => panic!("offset {off}: existing key reported missing"),
                    Err(e) => assert!(e.is_corruption(), "offset {off}: {e}"),
                }
            }
        }
    }
}
