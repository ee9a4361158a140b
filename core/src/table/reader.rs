//! An open table: index, filter and data blocks read through the cache.
//!
//! Open checks the footer and the index block (crc and structure: the key
//! range must be known to place the table in its level) and keeps only the
//! key range. Footer, index and filter are read by one positional read of
//! the table's tail (`Tail`), not through the mapping. The parsed index and the bloom filter ("meta") are then either
//! pinned, when the cache has room for them (see `cache`), or loaded on
//! demand, checked (crc of both blocks, structure of the index) and cached
//! once per load. Readers hold an `Arc` of the meta, so an eviction never
//! pulls it from under a read in flight.
//!
//! Gets and iterators read data blocks through the cache, keyed by (table id,
//! offset): a miss is one positional read on a descriptor advised random (no
//! read-ahead window), its crc checked and, if compressed, decompressed
//! (RocksDB's block cache). Iterators ask for read-ahead through the mapping's
//! advice, which fills the page cache without mapping pages into the process.
//! Compaction and verify read the mapping in place (they would only push hot
//! blocks out of the cache), under `read_guard`.

use super::block::DecodedBlock;
use super::codec::{self, Contents};
use super::footer::{self, Bad, Footer, Handle};
use super::{bloom, PAGE, VERSION, VERSION_COMPRESSED};
use crate::advice::{self, ReadAhead};
use crate::cache::{self, Cache, Kind, ENTRY_OVERHEAD, META};
use crate::coding::Reader;
use crate::crypt::ReadFile;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::key;
use crate::page_pool::Block;
use crate::read_guard;
use memmap2::{Mmap, UncheckedAdvice};
use std::cmp::Ordering;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

/// What the table cache holds.
#[derive(Clone)]
pub(crate) enum Cached {
    /// A table's parsed index and filter.
    Meta(Arc<Meta>),
    /// A data block (decompressed, if it was stored compressed).
    Block(SharedBlock),
}

/// A data block's bytes, shared with the cache.
pub(crate) type SharedBlock = Arc<Block>;

/// The cache every table of a database shares (`Options::cache_size`).
pub(crate) type TableCache = Cache<Cached>;

/// One data block in the index. The block's last key lies in the meta's
/// `keys` arena: a binary search walks two contiguous arrays instead of
/// chasing one heap allocation per block.
pub(crate) struct IndexEntry {
    key_start: u32,
    key_len: u32,
    pub offset: u64,
    pub len: u32,
}

/// Block states in `Meta::checked`.
const UNCHECKED: u8 = 0;
/// Crc checked; the block is read in place (version < 3, or stored raw).
const IN_PLACE: u8 = 1;
/// Crc checked; the block is compressed (read through the cache).
const COMPRESSED: u8 = 2;

/// A table's parsed index and bloom filter: what the cache charges per table.
pub(crate) struct Meta {
    index: Vec<IndexEntry>,
    keys: Vec<u8>,
    filter: Vec<u8>,
    /// Per block: whether its crc was checked in this load of the meta (the
    /// file never changes while open, so later reads skip the crc: a 4 KiB
    /// crc costs about as much as the lookup), and whether it is compressed.
    checked: Vec<AtomicU8>,
    /// Heap bytes held, as charged to the cache.
    charge: usize,
}

impl Meta {
    fn new(index: Vec<IndexEntry>, keys: Vec<u8>, filter: Vec<u8>) -> Meta {
        let charge = meta_charge(&index, &keys, filter.len());
        let checked = index.iter().map(|_| AtomicU8::new(UNCHECKED)).collect();
        Meta {
            index,
            keys,
            filter,
            checked,
            charge,
        }
    }

    /// Number of data blocks.
    pub(crate) fn blocks(&self) -> usize {
        self.index.len()
    }

    /// Where block `i` lies.
    pub(crate) fn entry(&self, i: usize) -> &IndexEntry {
        &self.index[i]
    }

    /// The last key of block `i`.
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let e = &self.index[i];
        let start = e.key_start as usize;
        &self.keys[start..start + e.key_len as usize]
    }

    /// Index of the first block whose last key is ≥ `target` (may be `blocks()`).
    pub(crate) fn find_block(&self, target: &[u8]) -> usize {
        key::lower_bound(self.index.len(), |i| self.key(i), target)
    }
}

/// The bytes a meta of this index and a filter of `filter_len` bytes holds.
fn meta_charge(index: &Vec<IndexEntry>, keys: &Vec<u8>, filter_len: usize) -> usize {
    std::mem::size_of::<Meta>()
        + ENTRY_OVERHEAD
        + index.capacity() * std::mem::size_of::<IndexEntry>()
        + keys.capacity()
        + filter_len
        + index.len() // checked
}

/// A table's meta as a reader holds it: borrowed from the table when pinned,
/// else a clone of the cache's `Arc`.
pub(crate) enum MetaRef<'a> {
    Pinned(&'a Arc<Meta>),
    Loaded(Arc<Meta>),
}

impl MetaRef<'_> {
    /// An owned handle, for a reader that outlives the borrow (an iterator).
    pub(crate) fn to_arc(&self) -> Arc<Meta> {
        match self {
            MetaRef::Pinned(m) => Arc::clone(m),
            MetaRef::Loaded(m) => Arc::clone(m),
        }
    }
}

impl Deref for MetaRef<'_> {
    type Target = Meta;
    fn deref(&self) -> &Meta {
        match self {
            MetaRef::Pinned(m) => m,
            MetaRef::Loaded(m) => m,
        }
    }
}

pub(crate) struct Table {
    id: u64,
    path: PathBuf,
    /// The file mapped (for iterators' reads in place and read-ahead
    /// advice); none when it is encrypted: every read is then a positional
    /// read of `file`, decrypted, into a cached block.
    mmap: Option<Mmap>,
    /// The table's length in bytes (without an encryption prefix).
    len: u64,
    /// Descriptor for user reads of data blocks (advised random: no read-ahead
    /// window around a miss).
    file: ReadFile,
    smallest: Box<[u8]>,
    largest: Box<[u8]>,
    index_at: Handle,
    filter_at: Handle,
    max_seq: u64,
    entries: u64,
    /// Format version (footer): 3 means data blocks end with a compression type.
    version: u32,
    /// The meta, when the cache had room to pin it (charged there until drop).
    pinned: OnceLock<Arc<Meta>>,
    cache: Arc<TableCache>,
    /// Set when compaction replaced the table: the file is removed, through
    /// this file system, when the last reader lets go.
    obsolete: OnceLock<Fs>,
    /// A read of the mapping failed (SIGBUS caught by `read_guard`): every
    /// later read of this table is an I/O error.
    read_failed: AtomicBool,
    /// No range tombstone of sequence at most this hides any entry of the
    /// table: set on a table this process built, by the flush or compaction
    /// that dropped what such tombstones hid (0: unknown, a table opened
    /// from disk). Decides when a tombstone may be retired.
    range_clean: AtomicU64,
}

/// What `Table::open` reads from the end of a table.
struct Opened {
    footer: Footer,
    smallest: Box<[u8]>,
    index: Vec<IndexEntry>,
    keys: Vec<u8>,
}

impl Table {
    /// Opens table `id` at `path`, checking the footer and the index block
    /// (its crc and structure). Its filter is checked when it is first
    /// loaded: here if the cache can pin the meta, else on the first read.
    pub(crate) fn open(fs: &Fs, path: &Path, id: u64, cache: &Arc<TableCache>) -> Result<Table> {
        let file = ReadFile::open(fs, path)?;
        let len = file
            .len()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
        if len < footer::LEN as u64 {
            return Err(Error::corruption(path, 0, "table shorter than its footer"));
        }
        let mmap = if file.encrypted() {
            None
        } else {
            // SAFETY: the file is opened read-only and sett never modifies a table
            // after it is written; other processes are kept out by the directory lock.
            let mmap = unsafe { Mmap::map(file.file()) }
                .map_err(|e| Error::io(format!("mapping {}", path.display()), e))?;
            // Point lookups touch one block; iterators ask for read-ahead themselves.
            advice::random(&mmap);
            Some(mmap)
        };
        let read_failed = AtomicBool::new(false);
        let (o, tail) = Self::parse(path, &file, len)?;
        let largest = o
            .index
            .len()
            .checked_sub(1)
            .map(|i| {
                let e = &o.index[i];
                o.keys[e.key_start as usize..][..e.key_len as usize].into()
            })
            .unwrap_or_default();
        advice::random_fd(file.file());
        let t = Table {
            id,
            path: path.to_path_buf(),
            mmap,
            len,
            file,
            smallest: o.smallest,
            largest,
            index_at: o.footer.index,
            filter_at: o.footer.filter,
            max_seq: o.footer.max_seq,
            entries: o.footer.entries,
            version: o.footer.version,
            pinned: OnceLock::new(),
            cache: cache.clone(),
            obsolete: OnceLock::new(),
            read_failed,
            range_clean: AtomicU64::new(0),
        };
        // The index is parsed already: keep it if the cache can pin it (with
        // the filter, whose size the footer gives), as before the cache.
        let charge = meta_charge(&o.index, &o.keys, o.footer.filter.len as usize);
        if t.cache.try_pin(&t.meta_key(), charge) {
            match tail.filter(path, &o.footer) {
                Ok(filter) => {
                    let m = Meta::new(o.index, o.keys, filter);
                    debug_assert_eq!(m.charge, charge);
                    let _ = t.pinned.set(Arc::new(m));
                }
                Err(e) => {
                    t.cache.unpin(&t.meta_key(), charge);
                    return Err(e);
                }
            }
        }
        Ok(t)
    }

    /// Checks and parses the footer and the index of a table of `len`
    /// bytes; returns them with the tail they were read from.
    fn parse(path: &Path, file: &ReadFile, len: u64) -> Result<(Opened, Tail)> {
        let fpos = len - footer::LEN as u64;
        let mut footer = [0u8; footer::LEN];
        read_at(path, file, &mut footer, fpos)?;
        let corrupt = |off: u64, what: &str| Error::corruption(path, off, what.to_string());
        let f = Footer::decode(&footer).map_err(|bad| match bad {
            Bad::Unreadable => corrupt(fpos, "unreadable footer"),
            Bad::Magic { at } => corrupt(fpos + at as u64, "bad table magic"),
            Bad::Checksum { at } => corrupt(fpos + at as u64, "footer checksum mismatch"),
            Bad::Version(found) => Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found,
                supported: VERSION,
            },
        })?;
        let tail = Tail::read(path, file, &f, len)?;
        let (smallest, keys, index) = tail.index(path, &f)?;
        let opened = Opened {
            footer: f,
            smallest,
            index,
            keys,
        };
        Ok((opened, tail))
    }

    /// The cache key of this table's meta.
    fn meta_key(&self) -> cache::Key {
        (self.id, META)
    }

    /// The filter block, crc checked.
    /// Reads the index and the filter (one read of the tail), checking both.
    fn load_meta(&self) -> Result<Meta> {
        let footer = Footer {
            index: self.index_at,
            filter: self.filter_at,
            entries: self.entries,
            max_seq: self.max_seq,
            version: self.version,
        };
        let tail = Tail::read(&self.path, &self.file, &footer, self.len)?;
        let (_, keys, index) = tail.index(&self.path, &footer)?;
        Ok(Meta::new(index, keys, tail.filter(&self.path, &footer)?))
    }

    /// This table's index and filter: the pinned ones (no lock), else from
    /// the cache, else loaded, checked, and pinned or cached.
    pub(crate) fn meta(&self) -> Result<MetaRef<'_>> {
        match self.pinned.get() {
            Some(m) => Ok(MetaRef::Pinned(m)),
            None => self.meta_slow().map(MetaRef::Loaded),
        }
    }

    #[cold]
    fn meta_slow(&self) -> Result<Arc<Meta>> {
        let key = self.meta_key();
        if let Some(Cached::Meta(m)) = self.cache.get(&key, Kind::Meta) {
            return Ok(m);
        }
        let meta = Arc::new(self.load_meta()?);
        if self.cache.try_pin(&key, meta.charge) {
            if self.pinned.set(meta.clone()).is_err() {
                // Another reader pinned it first.
                self.cache.unpin(&key, meta.charge);
            }
        } else {
            self.cache
                .insert(key, Cached::Meta(meta.clone()), meta.charge);
        }
        Ok(meta)
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
        self.len
    }

    pub(crate) fn max_seq(&self) -> u64 {
        self.max_seq
    }

    /// See the field: tombstones of sequence at most this hide nothing here.
    pub(crate) fn range_clean(&self) -> u64 {
        self.range_clean.load(AtomicOrdering::Acquire)
    }

    /// Records that tombstones of sequence at most `seq` hide nothing here.
    pub(crate) fn set_range_clean(&self, seq: u64) {
        self.range_clean.fetch_max(seq, AtomicOrdering::AcqRel);
    }

    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    pub(crate) fn smallest(&self) -> &[u8] {
        &self.smallest
    }

    pub(crate) fn largest(&self) -> &[u8] {
        &self.largest
    }

    /// The mapped bytes of the table: empty when it is encrypted (no
    /// block then comes back as a range of them: see `contents`).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.mmap.as_deref().unwrap_or(&[])
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Memory this table holds itself: its key range and, when pinned, its
    /// index and filter (also counted in the cache's usage). A meta loaded
    /// through the cache's LRU is counted there only.
    pub(crate) fn memory(&self) -> usize {
        std::mem::size_of::<Table>()
            + self.smallest.len()
            + self.largest.len()
            + self.pinned.get().map_or(0, |m| m.charge)
    }

    /// Whether the index and filter are pinned (held by the table).
    #[cfg(test)]
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned.get().is_some()
    }

    /// True if `user_key` lies within this table's key range.
    pub(crate) fn covers(&self, user_key: &[u8]) -> bool {
        key::user_key(&self.smallest) <= user_key && user_key <= key::user_key(&self.largest)
    }

    /// The stored bytes of block `i`, its crc checked the first time.
    /// Requires: the table is mapped (not encrypted).
    fn block_bytes(&self, meta: &Meta, i: usize) -> Result<&[u8]> {
        let e = &meta.index[i];
        let Some(mmap) = &self.mmap else {
            return Err(Error::corruption(
                &self.path,
                e.offset,
                "an encrypted table read in place",
            ));
        };
        if meta.checked[i].load(AtomicOrdering::Acquire) != UNCHECKED {
            // Offsets were checked against the file size when the index was parsed.
            let start = e.offset as usize;
            return Ok(&mmap[start..start + e.len as usize]);
        }
        // First read of the block in this process, likely from the device: a
        // block over two pages comes in one read, not a fault each. (A block in
        // one page, as version 2 lays out most, needs no call.)
        let start = e.offset as usize;
        let end = start + e.len as usize + 4;
        if start / PAGE as usize != (end - 1) / PAGE as usize {
            advice::will_need(mmap, start, end);
        }
        let data = checked_slice(&self.path, mmap, e.offset, e.len, mmap.len())?;
        let state = match data.last() {
            Some(&t) if self.version >= VERSION_COMPRESSED && t != 0 => COMPRESSED,
            _ => IN_PLACE,
        };
        meta.checked[i].store(state, AtomicOrdering::Release);
        Ok(data)
    }

    /// The format version the table was written in.
    #[cfg(test)]
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    /// The entries of block `i`: the stored bytes themselves before version 3
    /// or when stored raw, else its decompressed bytes, from the cache or
    /// decompressed now (and cached if `fill`).
    fn contents<'a>(&'a self, meta: &Meta, i: usize, fill: bool) -> Result<Contents<'a>> {
        if fill {
            return self.cached_block(meta, i).map(Contents::Shared);
        }
        // An encrypted table has no plaintext to read in place: its blocks
        // are read and decrypted (from the cache if there, not put in it).
        if self.mmap.is_none() {
            return self.read_block(meta, i, false).map(Contents::Shared);
        }
        if self.version < VERSION_COMPRESSED {
            return Ok(Contents::Raw(self.block_bytes(meta, i)?));
        }
        let off = meta.index[i].offset;
        let key = (self.id, off);
        if meta.checked[i].load(AtomicOrdering::Relaxed) != IN_PLACE {
            if let Some(Cached::Block(b)) = self.cache.get(&key, Kind::Data) {
                return Ok(Contents::Shared(b));
            }
        }
        let stored = self.block_bytes(meta, i)?;
        match codec::decode(stored) {
            Ok(Contents::Owned(v)) => {
                let v = Arc::new(Block::from_vec(v));
                if fill {
                    let charge = v.footprint() + ENTRY_OVERHEAD;
                    self.cache.insert(key, Cached::Block(v.clone()), charge);
                }
                Ok(Contents::Shared(v))
            }
            Ok(c) => Ok(c),
            Err(bad) => Err(Error::corruption(&self.path, off, bad.to_string())),
        }
    }

    /// Block `i` for a user read: from the cache, else read with one
    /// positional read, its crc checked, decompressed if it was compressed,
    /// and cached. User reads do not touch the mapping: on data larger than
    /// memory, mapped pages would make every eviction an unmap and count in
    /// the process's RSS, outside the memory budget (see docs/read-path.md).
    fn cached_block(&self, meta: &Meta, i: usize) -> Result<SharedBlock> {
        self.read_block(meta, i, true)
    }

    /// [`Table::cached_block`], caching the block read only if `fill`: a
    /// walk of an encrypted table that must not fill the cache (compaction)
    /// reads this way, as a mapped table's is read in place.
    fn read_block(&self, meta: &Meta, i: usize, fill: bool) -> Result<SharedBlock> {
        let e = &meta.index[i];
        let key = (self.id, e.offset);
        if let Some(Cached::Block(b)) = self.cache.get(&key, Kind::Data) {
            return Ok(b);
        }
        // A page from the cache's pool when the block and its crc fit one
        // (every block of an uncompressed table but one holding a larger
        // entry): see `page_pool` for why blocks are not plain allocations.
        let mut buf = self.cache.pages().take(e.len as usize + 4);
        // ReadFile's reads pass the injected-fault check themselves.
        self.file
            .read_exact_at(&mut buf, e.offset)
            .map_err(|err| match err.kind() {
                std::io::ErrorKind::UnexpectedEof => Error::corruption(
                    &self.path,
                    e.offset,
                    "block handle points past the end of the table",
                ),
                _ => Error::io(format!("reading {}", self.path.display()), err),
            })?;
        let checked = checked_slice(&self.path, &buf, 0, e.len, buf.len())
            .map_err(|_| Error::corruption(&self.path, e.offset, "block checksum mismatch"))?;
        let block = if self.version < VERSION_COMPRESSED {
            buf.truncate(e.len as usize);
            buf
        } else {
            match codec::decode(checked) {
                // Stored raw: the payload is the buffer's start (no copy).
                Ok(Contents::Raw(payload)) => {
                    let n = payload.len();
                    buf.truncate(n);
                    buf
                }
                Ok(Contents::Owned(v)) => Block::from_vec(v),
                Ok(Contents::Shared(v)) => Block::from_vec(v.to_vec()),
                Err(bad) => return Err(Error::corruption(&self.path, e.offset, bad.to_string())),
            }
        };
        let block = Arc::new(block);
        if fill {
            let charge = block.footprint() + ENTRY_OVERHEAD;
            self.cache.insert(key, Cached::Block(block.clone()), charge);
        }
        Ok(block)
    }

    /// Counts the data blocks whose last user key starts with `prefix`, and
    /// those of them stored compressed: (blocks, compressed).
    pub(crate) fn compressed_blocks(&self, prefix: &[u8]) -> Result<(u64, u64)> {
        let meta = self.meta()?;
        let (mut blocks, mut compressed) = (0, 0);
        for i in 0..meta.blocks() {
            if !key::split(meta.key(i)).0.starts_with(prefix) {
                continue;
            }
            blocks += 1;
            if self.version >= VERSION_COMPRESSED {
                let e = meta.entry(i);
                let stored = self.stored(e)?;
                if stored.last().is_some_and(|&t| t != 0) {
                    compressed += 1;
                }
            }
        }
        Ok((blocks, compressed))
    }

    /// Checks every block's crc and format; returns the number of blocks.
    pub(crate) fn verify(&self) -> Result<usize> {
        let meta = self.meta()?;
        let mut ahead = ReadAhead::new(advice::MAX_WINDOW);
        let mut prev_end = 0u64;
        for e in &meta.index {
            if let Some(r) = ahead.forward(e.offset as usize, self.len as usize) {
                self.will_need(r);
            }
            let gap = prev_end..e.offset;
            prev_end = e.offset + u64::from(e.len) + 4;
            self.guarded(|| {
                // Padding before a block is zeros: no reader looks at it, so
                // only this check can find damage there.
                let pad = self.padding(gap.clone())?;
                if let Some(at) = pad.iter().position(|&b| b != 0) {
                    return Err(Error::corruption(
                        &self.path,
                        gap.start + at as u64,
                        "non-zero byte in the padding before a data block",
                    ));
                }
                // The stored bytes, checked again even if a read did already.
                let stored = self.stored(e)?;
                let data = if self.version < VERSION_COMPRESSED {
                    Contents::Raw(&stored)
                } else {
                    codec::decode(&stored)
                        .map_err(|bad| Error::corruption(&self.path, e.offset, bad.to_string()))?
                };
                DecodedBlock::decode(&data)
                    .ok_or_else(|| Error::corruption(&self.path, e.offset, "malformed data block"))
            })?;
        }
        Ok(meta.index.len())
    }

    /// [`Table::load_block`] into a new block, returned first.
    #[cfg(test)]
    pub(crate) fn block(
        &self,
        meta: &Meta,
        i: usize,
        fill: bool,
    ) -> Result<(DecodedBlock, Option<SharedBlock>, usize)> {
        let mut block = DecodedBlock::default();
        let (owned, base) = self.load_block(meta, i, (fill, false), &mut block)?;
        Ok((block, owned, base))
    }

    /// Decodes block `i` of `meta` (this table's) into `block`, reusing its
    /// buffers, and checks its crc the first time. Returns the buffer the
    /// block's value ranges point into when it was decompressed (else they
    /// are ranges of the file from the offset), and its file offset. `fill`:
    /// cache a block decompressed now. `lazy`: decode only the first entry
    /// when the block comes back in a buffer (the caller decodes the rest
    /// from it with `DecodedBlock::decode_next` as it walks); a block read in
    /// place in the mapping is decoded whole, under the read guard. On an
    /// error `block` is left empty.
    pub(crate) fn load_block(
        &self,
        meta: &Meta,
        i: usize,
        (fill, lazy): (bool, bool),
        block: &mut DecodedBlock,
    ) -> Result<(Option<SharedBlock>, usize)> {
        let e = &meta.index[i];
        let owned = self.guarded(|| {
            let data = self.contents(meta, i, fill)?;
            let decoded = if lazy && !matches!(data, Contents::Raw(_)) {
                block.start(&data)
            } else {
                block.decode_into(&data)
            };
            if !decoded {
                return Err(Error::corruption(
                    &self.path,
                    e.offset,
                    "malformed data block",
                ));
            }
            Ok(match data {
                Contents::Raw(_) => None,
                Contents::Owned(v) => Some(Arc::new(Block::from_vec(v))),
                Contents::Shared(v) => Some(v),
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
        if !self.covers(user_key) {
            return Ok(None);
        }
        let meta = self.meta()?;
        if !bloom::may_contain(&meta.filter, hash) {
            return Ok(None);
        }
        let target = key::encode(user_key, read_seq);
        self.guarded(|| {
            let mut b = meta.find_block(&target);
            while b < meta.index.len() {
                let e = &meta.index[b];
                let data = self.contents(&meta, b, true)?;
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

    /// Whether this table may hold a version of `user_key` (its key range
    /// covers it and its filter does not rule it out); if so, starts
    /// reading the data block [`Table::get`] would search first into the
    /// page cache without waiting, unless that block is cached. A
    /// multi-get asks this of every key before it looks any up, so that
    /// the device serves the batch's reads together.
    pub(crate) fn will_need_block(
        &self,
        user_key: &[u8],
        hash: u64,
        read_seq: u64,
    ) -> Result<bool> {
        if !self.covers(user_key) {
            return Ok(false);
        }
        let meta = self.meta()?;
        if !bloom::may_contain(&meta.filter, hash) {
            return Ok(false);
        }
        let b = meta.find_block(&key::encode(user_key, read_seq));
        if let Some(e) = meta.index.get(b) {
            if !self.cache.contains(&(self.id, e.offset)) {
                // The block and its crc, as `read_block` reads them.
                self.file.will_need(e.offset, u64::from(e.len) + 4);
            }
        }
        Ok(true)
    }

    /// Starts reading `range` of the file into the page cache (a walk in order
    /// is about to read it; the mapping is otherwise read a page per fault).
    pub(crate) fn will_need(&self, range: Range<usize>) {
        if let Some(mmap) = &self.mmap {
            advice::will_need(mmap, range.start, range.end);
        }
    }

    /// The stored bytes of the block at `e`, crc checked: in place in the
    /// mapping, or read (and decrypted) when the table is encrypted.
    fn stored(&self, e: &IndexEntry) -> Result<std::borrow::Cow<'_, [u8]>> {
        if let Some(mmap) = &self.mmap {
            return checked_slice(&self.path, mmap, e.offset, e.len, mmap.len())
                .map(std::borrow::Cow::Borrowed);
        }
        let mut buf = vec![0u8; e.len as usize + 4];
        read_at(&self.path, &self.file, &mut buf, e.offset)?;
        checked_slice(&self.path, &buf, 0, e.len, buf.len())
            .map_err(|_| Error::corruption(&self.path, e.offset, "block checksum mismatch"))?;
        buf.truncate(e.len as usize);
        Ok(std::borrow::Cow::Owned(buf))
    }

    /// The bytes of `range` of the table (padding between blocks).
    fn padding(&self, range: Range<u64>) -> Result<std::borrow::Cow<'_, [u8]>> {
        if let Some(mmap) = &self.mmap {
            let r = mmap.get(range.start as usize..range.end as usize);
            return Ok(std::borrow::Cow::Borrowed(r.unwrap_or(&[])));
        }
        let mut buf = vec![0u8; range.end.saturating_sub(range.start) as usize];
        read_at(&self.path, &self.file, &mut buf, range.start)?;
        Ok(std::borrow::Cow::Owned(buf))
    }

    /// Drops this process's mapping of `[start, end)` (page cache untouched), so
    /// that a compaction streaming through a table does not keep all of it in
    /// the process's resident memory. Later reads fault the pages back in.
    pub(crate) fn release_pages(&self, start: usize, end: usize) {
        const PAGE: usize = 4096;
        let start = start.next_multiple_of(PAGE);
        let Some(mmap) = &self.mmap else { return };
        let end = end.min(mmap.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the mapping is a read-only shared mapping of a file that
            // never changes while open, so MADV_DONTNEED cannot change what any
            // live slice into it reads: touched pages fault back in with the same
            // bytes. The range is inside the mapping (checked above).
            let _ = unsafe {
                mmap.unchecked_advise_range(UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }

    pub(crate) fn mark_obsolete(&self, fs: &Fs) {
        let _ = self.obsolete.set(fs.clone());
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let key = self.meta_key();
        if let Some(m) = self.pinned.get() {
            self.cache.unpin(&key, m.charge);
        }
        // Its data blocks, if cached, age out (no key is reused: ids are not).
        self.cache.erase(&key);
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

/// The index block named by `f`, crc and structure checked.
/// Reads `buf.len()` bytes at `off`; a short read is a table cut short.
fn read_at(path: &Path, file: &ReadFile, buf: &mut [u8], off: u64) -> Result<()> {
    file.read_exact_at(buf, off)
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::corruption(path, off, "table shorter than its footer says")
            }
            _ => Error::io(format!("reading {}", path.display()), err),
        })
}

/// The end of a table, from its filter (or index) to its footer, where both
/// lie together: read by one positional read. Through the mapping, loading
/// every table's index and filter would leave their pages in the process's
/// RSS, outside the memory budget (see docs/read-path.md).
struct Tail {
    /// File offset of `bytes[0]`.
    base: u64,
    bytes: Vec<u8>,
}

impl Tail {
    fn read(path: &Path, file: &ReadFile, f: &Footer, len: u64) -> Result<Tail> {
        let fpos = len - footer::LEN as u64;
        let base = f.filter.offset.min(f.index.offset).min(fpos);
        let size = usize::try_from(fpos - base)
            .map_err(|_| Error::corruption(path, base, "table meta larger than memory"))?;
        let mut bytes = vec![0u8; size];
        read_at(path, file, &mut bytes, base)?;
        Ok(Tail { base, bytes })
    }

    /// The block at `handle`, its crc checked.
    fn block(&self, path: &Path, handle: Handle) -> Result<&[u8]> {
        let past_end = || {
            Error::corruption(
                path,
                handle.offset,
                "block handle points past the end of the table",
            )
        };
        let start = handle
            .offset
            .checked_sub(self.base)
            .and_then(|s| usize::try_from(s).ok())
            .ok_or_else(past_end)?;
        let end = start.saturating_add(handle.len as usize);
        let (Some(block), Some(crc)) = (
            self.bytes.get(start..end),
            self.bytes.get(end..end.saturating_add(4)),
        ) else {
            return Err(past_end());
        };
        if u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) != crc32fast::hash(block) {
            return Err(Error::corruption(
                path,
                handle.offset,
                "block checksum mismatch",
            ));
        }
        Ok(block)
    }

    fn index(&self, path: &Path, f: &Footer) -> Result<ParsedIndex> {
        let bytes = self.block(path, f.index)?;
        parse_index(bytes, f.filter.offset, f.version)
            .ok_or_else(|| Error::corruption(path, f.index.offset, "malformed index block"))
    }

    fn filter(&self, path: &Path, f: &Footer) -> Result<Vec<u8>> {
        Ok(self.block(path, f.filter)?.to_vec())
    }
}

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
    keys.shrink_to_fit();
    (r.remaining() == 0 && n > 0 && smallest.len() >= key::SUFFIX_LEN)
        .then_some((smallest, keys, index))
}

#[cfg(test)]
mod tests {
    use super::super::{Compression, TableBuilder};
    use super::*;
    use std::sync::Arc;

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
        let t = Table::open(
            &crate::fs::Fs::real(),
            &path,
            1,
            &crate::table::test_cache(),
        )
        .unwrap();
        let mut padding = 0;
        let mut prev_end = 0;
        let meta = t.meta().unwrap();
        for e in &meta.index {
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
        assert!(meta.blocks() > 100);
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
        let gap_at = meta
            .index
            .windows(2)
            .find(|w| w[1].offset > w[0].offset + u64::from(w[0].len) + 4)
            .map(|w| w[0].offset + u64::from(w[0].len) + 4)
            .expect("some block was padded");
        drop(meta);
        drop(t);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[gap_at as usize] = 0x5A;
        std::fs::write(&path, &bytes).unwrap();
        let err = Table::open(
            &crate::fs::Fs::real(),
            &path,
            1,
            &crate::table::test_cache(),
        )
        .unwrap()
        .verify()
        .unwrap_err();
        assert!(err.to_string().contains("padding"), "{err}");
    }

    #[test]
    fn get_finds_versions_across_many_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_table(dir.path(), 500);
        // Pinned at open, and through a cache that holds nothing (every read
        // loads the index and filter again).
        for cache in [crate::table::test_cache(), Arc::new(TableCache::new(0))] {
            let t = Table::open(&crate::fs::Fs::real(), &path, 1, &cache).unwrap();
            assert_eq!(t.is_pinned(), cache.stats().capacity > 0);
            versions_across_many_blocks(&t);
        }
    }

    fn versions_across_many_blocks(t: &Table) {
        assert!(t.meta().unwrap().blocks() > 10);
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

    #[test]
    fn a_hot_compressed_block_is_decompressed_once_and_a_meta_not_pinned_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.sst");
        write_json_table(&path, Compression::Zstd, 3000);
        let cache = Arc::new(TableCache::new(1 << 20));
        // Another table's meta takes the pinning room (half the budget)...
        assert!(cache.try_pin(&(2, META), 512 << 10));
        // ...so this one's meta goes through the LRU.
        let t = Table::open(&crate::fs::Fs::real(), &path, 1, &cache).unwrap();
        assert!(!t.is_pinned(), "{:?}", cache.stats());
        let k = b"key001234";
        for _ in 0..5 {
            let got = t.get(k, bloom::hash(k), 9).unwrap();
            assert_eq!(got, Some((2, json(1234))));
        }
        let s = cache.stats();
        assert_eq!((s.meta_misses, s.meta_hits), (1, 4), "{s:?}");
        assert_eq!((s.data_misses, s.data_hits), (1, 4), "{s:?}");
        assert!(s.usage <= s.capacity && s.pinned > 0, "{s:?}");
        // Dropping the table gives back its meta.
        drop(t);
        cache.unpin(&(2, META), 512 << 10);
        let s = cache.stats();
        assert_eq!(s.pinned, 0);
        assert!(s.usage < 64 << 10, "only the data block may be left: {s:?}");
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
            let t = std::sync::Arc::new(
                Table::open(
                    &crate::fs::Fs::real(),
                    &path,
                    1,
                    &crate::table::test_cache(),
                )
                .unwrap(),
            );
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
                let t = Table::open(
                    &crate::fs::Fs::real(),
                    &path,
                    1,
                    &crate::table::test_cache(),
                )
                .unwrap();
                let m = t.meta().unwrap();
                (m.entry(1).offset as usize, m.entry(1).len as usize)
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
                let t = std::sync::Arc::new(
                    Table::open(
                        &crate::fs::Fs::real(),
                        &path,
                        1,
                        &crate::table::test_cache(),
                    )
                    .unwrap(),
                );
                let m = t.meta().unwrap().to_arc();
                let k = m.key(1).to_vec();
                let (uk, _) = key::split(&k);
                let errs = [
                    t.get(uk, bloom::hash(uk), 9).unwrap_err(),
                    t.verify().unwrap_err(),
                    t.block(&m, 1, true).map(|_| ()).unwrap_err(),
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
                // Pinned at open, and loaded at each read (a cache of nothing).
                for cache in [crate::table::test_cache(), Arc::new(TableCache::new(0))] {
                    let Ok(t) = Table::open(&crate::fs::Fs::real(), &path, 1, &cache) else {
                        continue;
                    };
                    let _ = t.verify();
                    for i in (0..300u32).step_by(7) {
                        let k = format!("key{i:06}");
                        match t.get(k.as_bytes(), bloom::hash(k.as_bytes()), 9) {
                            Ok(Some((_, v))) => assert_eq!(v, json(i), "{c:?} offset {off}"),
                            Ok(None) => {
                                panic!("{c:?} offset {off}: existing key reported missing")
                            }
                            Err(e) => assert!(e.is_corruption(), "{c:?} offset {off}: {e}"),
                        }
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
            // Pinned at open, and loaded at each read (a cache of nothing).
            for cache in [crate::table::test_cache(), Arc::new(TableCache::new(0))] {
                let Ok(t) = Table::open(&crate::fs::Fs::real(), &path, 1, &cache) else {
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
}
