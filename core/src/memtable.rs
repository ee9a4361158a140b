//! The memtable: a concurrent skiplist of internal key → value record, in the
//! manner of LevelDB's and RocksDB's inline skiplists.
//!
//! Nodes live in one arena of large chunks owned by the memtable, and keys
//! with their values in another, so that the nodes a search walks stay dense.
//! An insert makes no allocation of its own, and the bytes go back to
//! the system in a few large unmaps when the memtable is dropped, rather than
//! as millions of small frees spread over the allocator's per-thread arenas,
//! where they stay resident (docs/memory-budget.md). Nothing is ever unlinked,
//! so readers walk the links with acquire loads and no epoch or lock.
//!
//! Writers link a node level by level with compare-and-swap, so the leader of
//! a write group and the followers it hands batches to insert at once. A batch
//! carries a splice (the node before and after its last key at each level)
//! from one insert to the next: keys written in order, as a sequential load
//! writes them, then find their place without a search from the top.

use crate::key::{self, KeyRef};
use crate::range_del::RangeTombstone;
use memmap2::MmapMut;
use std::cell::Cell;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes of node and links counted per entry (keys and values are counted
/// exactly), as the budget's estimate of a memtable's memory.
const ENTRY_OVERHEAD: usize = 64;
/// Arena chunk size; a larger entry gets a chunk of its own. (Smaller under
/// miri, whose tests then cross chunks with a sixteenth of the bytes.)
const CHUNK: usize = if cfg!(miri) { 64 << 10 } else { 1 << 20 };
/// Levels of the skiplist: with a quarter of the nodes on each level above
/// the one below, 20 levels stay logarithmic far beyond a memtable's entries.
const MAX_HEIGHT: usize = 20;
/// Bytes of an entry's header: the key's and the value record's lengths.
const ENTRY_HEADER: usize = 8;

/// A sorted in-memory table of recent writes.
pub struct Memtable {
    /// Nodes and their links.
    nodes: Arena,
    /// Entries: each internal key with its value record.
    data: Arena,
    /// The head node: links only, with a tower of `MAX_HEIGHT`.
    head: NonNull<Node>,
    /// Levels in use (at least 1); only grows.
    height: AtomicUsize,
    bytes: AtomicUsize,
    max_seq: AtomicU64,
    /// The id of the WAL file that holds this memtable's writes.
    wal_id: u64,
    /// Range deletes logged in this memtable's WAL: recorded in the manifest
    /// when it is flushed (readers find them in the read state's set).
    range_dels: Mutex<Vec<RangeTombstone>>,
}

// SAFETY: `head` and every node point into the memtable's own arena, whose
// chunks live as long as the memtable; nodes are shared only through atomic
// links and values, written before they are published with release stores.
unsafe impl Send for Memtable {}
// SAFETY: as above; every write after publication is an atomic store.
unsafe impl Sync for Memtable {}

/// A skiplist node, at the start of its allocation in the node arena, its
/// tower of `height` links right after the struct.
#[repr(C)]
struct Node {
    /// The user key's first 8 bytes, so that a search decides most
    /// comparisons without reading the key: one cache miss per step of the
    /// skiplist instead of two, and no `memcmp` call.
    prefix: u64,
    /// The entry in the data arena (see [`Arena::entry`]). A second insert of
    /// the same internal key stores a new entry here, with the same key.
    entry: AtomicPtr<u8>,
    height: usize,
    /// The first of `height` links; the rest follow in the same allocation.
    tower: [AtomicPtr<Node>; 0],
}

/// The first 8 bytes of `user_key`, zero-padded, as a big-endian number: if
/// `prefix_of(a) < prefix_of(b)` then `a < b` (truncation and zero padding
/// keep the byte order), and equal prefixes say nothing.
fn prefix_of(user_key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = user_key.len().min(8);
    b[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(b)
}

/// Link `level` of node `n`.
///
/// # Safety
/// `n` must be a node of a live memtable and `level` below its height.
unsafe fn link<'a>(n: *const Node, level: usize) -> &'a AtomicPtr<Node> {
    // SAFETY: the tower lies inside the node's allocation (the caller's
    // contract), and `n` carries the arena chunk's provenance.
    unsafe { &*(ptr::addr_of!((*n).tower) as *const AtomicPtr<Node>).add(level) }
}

/// The internal key of the entry at `e`.
///
/// # Safety
/// `e` must be a published entry of a memtable that outlives `'a`.
unsafe fn entry_key<'a>(e: *const u8) -> &'a [u8] {
    // SAFETY: the header and bytes were written before the entry's pointer
    // was published (release store, read with an acquire load), and are never
    // changed; the arena keeps them while the memtable lives.
    unsafe {
        let klen = ptr::read_unaligned(e as *const u32) as usize;
        std::slice::from_raw_parts(e.add(ENTRY_HEADER), klen)
    }
}

/// The value record of the entry at `e`.
///
/// # Safety
/// As for [`entry_key`].
unsafe fn entry_value<'a>(e: *const u8) -> &'a [u8] {
    // SAFETY: as in entry_key; the value follows the key.
    unsafe {
        let klen = ptr::read_unaligned(e as *const u32) as usize;
        let vlen = ptr::read_unaligned(e.add(4) as *const u32) as usize;
        std::slice::from_raw_parts(e.add(ENTRY_HEADER + klen), vlen)
    }
}

/// The internal key of node `n`.
///
/// # Safety
/// `n` must be a published node (not the head) of a memtable that outlives `'a`.
unsafe fn key_of<'a>(n: *const Node) -> &'a [u8] {
    // SAFETY: a published node's entry is published (the caller's contract).
    unsafe { entry_key((*n).entry.load(Ordering::Acquire)) }
}

/// A search key: an internal key and its user key's prefix.
struct Probe<'a> {
    key: &'a [u8],
    prefix: u64,
}

impl<'a> Probe<'a> {
    fn new(key: &'a [u8]) -> Probe<'a> {
        Probe {
            key,
            prefix: prefix_of(key::user_key(key)),
        }
    }

    /// How node `n` compares with this key.
    ///
    /// # Safety
    /// As for [`key_of`].
    unsafe fn cmp_node(&self, n: *const Node) -> CmpOrdering {
        // SAFETY: the caller's contract.
        unsafe {
            (*n).prefix
                .cmp(&self.prefix)
                .then_with(|| key::compare(key_of(n), self.key))
        }
    }
}

/// Whether node `n` sorts before `probe`, or is equal to it and `equal`
/// counts as before.
///
/// # Safety
/// As for [`key_of`].
unsafe fn sorts_before(n: *const Node, probe: &Probe<'_>, equal: bool) -> bool {
    // SAFETY: the caller's contract.
    match unsafe { probe.cmp_node(n) } {
        CmpOrdering::Less => true,
        CmpOrdering::Equal => equal,
        CmpOrdering::Greater => false,
    }
}

/// Where a key goes at each level: the last node before it (possibly the
/// head) and the first node at or after it (possibly none).
struct Splice {
    prev: [*const Node; MAX_HEIGHT],
    next: [*const Node; MAX_HEIGHT],
    /// Levels for which `prev` and `next` were found; 0 for a fresh splice.
    height: usize,
}

impl Splice {
    fn new() -> Splice {
        Splice {
            prev: [ptr::null(); MAX_HEIGHT],
            next: [ptr::null(); MAX_HEIGHT],
            height: 0,
        }
    }
}

/// An entry of a memtable, by reference: valid only while that memtable lives.
/// It is the entry its node held when it was taken.
#[derive(Clone, Copy)]
pub(crate) struct EntryRef(NonNull<u8>);

// SAFETY: an EntryRef points at immutable bytes in its memtable's arena; its
// holders keep that memtable alive while they read them (see EntryRef::key).
unsafe impl Send for EntryRef {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for EntryRef {}

impl EntryRef {
    /// # Safety
    /// `n` must be a published node of a live memtable (not the head).
    unsafe fn of(n: *const Node) -> EntryRef {
        // SAFETY: a published node's entry is non-null and published (the
        // caller's contract).
        unsafe { EntryRef(NonNull::new_unchecked((*n).entry.load(Ordering::Acquire))) }
    }

    /// The entry's internal key.
    ///
    /// # Safety
    /// The memtable this entry came from must still be alive (hold its `Arc`).
    pub(crate) unsafe fn key(&self) -> &[u8] {
        // SAFETY: the caller's contract.
        unsafe { entry_key(self.0.as_ptr()) }
    }

    /// The entry's value record.
    ///
    /// # Safety
    /// As for [`EntryRef::key`].
    pub(crate) unsafe fn value(&self) -> &[u8] {
        // SAFETY: the caller's contract.
        unsafe { entry_value(self.0.as_ptr()) }
    }
}

// SAFETY: a Chunk's base pointer is into its own mapping, written only through
// ranges claimed atomically by one thread each (see Arena::alloc).
unsafe impl Send for Chunk {}
// SAFETY: as above.
unsafe impl Sync for Chunk {}

/// Append-only storage in chunks that never move until the arena is dropped.
/// Chunks are anonymous memory maps, not allocator memory: a dropped memtable
/// gives its pages straight back to the system, whichever thread allocated them.
/// Space is claimed with one atomic add, so concurrent writers do not serialize.
struct Arena {
    /// The chunk being filled; one of `chunks`, so never dangling.
    current: AtomicPtr<Chunk>,
    /// Every chunk, owned here as `Box::into_raw` pointers and freed in
    /// `drop`; the lock is taken only to add one. Raw, not `Box`, because a
    /// `Box` asserts unique access whenever it moves (as the Vec grows),
    /// which would invalidate the shared pointers `current` hands out.
    chunks: Mutex<Vec<NonNull<Chunk>>>,
    /// Where chunks come from and go back to when the arena is dropped.
    pool: Option<Arc<ChunkPool>>,
}

/// Arena chunks of dropped memtables, kept for the next ones. A fresh chunk
/// costs a page fault per 4 KiB page on first touch (the kernel zeroes each)
/// and a TLB flush when it is unmapped; a single-thread writer filling 16 MiB
/// memtables spent a tenth of its time there. A Db keeps up to one
/// memtable's worth (`Options::memtable_size`), so the memory it holds
/// between memtables is at most what the next memtable takes anyway.
pub(crate) struct ChunkPool {
    chunks: Mutex<Vec<MmapMut>>,
    max_chunks: usize,
}

impl ChunkPool {
    /// A pool that keeps at most `max_bytes` of chunks.
    pub(crate) fn new(max_bytes: usize) -> Arc<ChunkPool> {
        Arc::new(ChunkPool {
            chunks: Mutex::new(Vec::new()),
            max_chunks: max_bytes / CHUNK,
        })
    }

    /// Chunks held now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.chunks.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn take(&self) -> Option<MmapMut> {
        self.chunks.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    /// Keeps `map` for a later arena if it is a standard chunk and there is room.
    fn give(&self, map: MmapMut) {
        if map.len() == CHUNK {
            let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
            if chunks.len() < self.max_chunks {
                chunks.push(map);
            }
        }
    }
}

struct Chunk {
    /// Never dereferenced while the arena is shared: a `&[u8]` over the
    /// mapping would race with the writers of other claims. `base` and `len`
    /// stand in for it.
    map: MmapMut,
    base: *mut u8,
    len: usize,
    /// Bytes claimed; may run past the end when claims race (the tail is wasted).
    used: AtomicUsize,
}

impl Chunk {
    /// A chunk of `len` bytes: from `pool` if it has one of that size, else
    /// freshly mapped; the caller owns it (`Box::from_raw` frees it). Its
    /// bytes are not zeroed: every node and entry is
    /// written whole before it is published.
    fn new(len: usize, pool: Option<&ChunkPool>) -> NonNull<Chunk> {
        let recycled = pool.filter(|_| len == CHUNK).and_then(ChunkPool::take);
        let mut map = recycled
            .map_or_else(|| MmapMut::map_anon(len), Ok)
            .unwrap_or_else(|e| {
                // As a failed allocation would: the process is out of memory.
                panic!("memtable arena: mapping {len} bytes: {e}")
            });
        let base = map.as_mut_ptr();
        let chunk = Box::new(Chunk {
            len: map.len(),
            map,
            base,
            used: AtomicUsize::new(0),
        });
        NonNull::from(Box::leak(chunk))
    }
}

impl Arena {
    fn new(pool: Option<Arc<ChunkPool>>) -> Arena {
        let first = Chunk::new(CHUNK, pool.as_deref());
        Arena {
            current: AtomicPtr::new(first.as_ptr()),
            chunks: Mutex::new(vec![first]),
            pool,
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let chunks = self.chunks.get_mut().unwrap_or_else(|p| p.into_inner());
        for chunk in chunks.drain(..) {
            // SAFETY: every pointer in `chunks` came from `Box::into_raw` in
            // Chunk::new and is freed only here, once; `&mut self` means no
            // claim or read through `current` is in flight.
            let chunk = unsafe { Box::from_raw(chunk.as_ptr()) };
            if let Some(pool) = &self.pool {
                pool.give(chunk.map);
            }
        }
    }
}

impl Arena {
    /// Claims `len` bytes, 8-aligned (chunks are page-aligned and every claim
    /// is rounded up to 8), for the caller alone to write.
    fn alloc(&self, len: usize) -> NonNull<u8> {
        let len = len.next_multiple_of(8);
        loop {
            let cur = self.current.load(Ordering::Acquire);
            // SAFETY: `current` always points at a chunk owned by `chunks`, and
            // chunks are only freed when the arena is dropped.
            let chunk = unsafe { &*cur };
            let at = chunk.used.fetch_add(len, Ordering::Relaxed);
            if at.checked_add(len).is_some_and(|end| end <= chunk.len) {
                // SAFETY: [at, at + len) lies inside the mapping and was claimed
                // by this call alone (the atomic add hands out disjoint ranges);
                // the base of a mapping is never null.
                return unsafe { NonNull::new_unchecked(chunk.base.add(at)) };
            }
            // Full: one caller adds a chunk, the others retry on it.
            let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
            if self.current.load(Ordering::Acquire) == cur {
                let fresh = Chunk::new(len.max(CHUNK), self.pool.as_deref());
                self.current.store(fresh.as_ptr(), Ordering::Release);
                chunks.push(fresh);
            }
        }
    }

    /// Copies an entry into the arena: `[klen: u32][vlen: u32]`, then the
    /// internal key `user_key ++ suffix`, then the value record. Returns its start.
    fn entry(&self, user_key: &[u8], suffix: &[u8], value: &[u8]) -> *mut u8 {
        let klen = user_key.len() + suffix.len();
        let (Ok(k32), Ok(v32)) = (u32::try_from(klen), u32::try_from(value.len())) else {
            // Options::validate caps keys and inline values at 1 MiB each.
            unreachable!("memtable key or value record of 4 GiB or more")
        };
        let e = self.alloc(ENTRY_HEADER + klen + value.len()).as_ptr();
        // SAFETY: `e` has room for the header and the bytes, claimed for this
        // call alone.
        unsafe {
            ptr::write_unaligned(e as *mut u32, k32);
            ptr::write_unaligned(e.add(4) as *mut u32, v32);
            let mut at = e.add(ENTRY_HEADER);
            for part in [user_key, suffix, value] {
                ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        e
    }
}

thread_local! {
    /// Each thread's generator of node heights (xorshift64; never zero).
    static HEIGHT_RNG: Cell<u64> = Cell::new(height_seed());
}

fn height_seed() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// A node height: 1, then each level above with probability 1/4.
fn random_height() -> usize {
    HEIGHT_RNG.with(|r| {
        let mut x = r.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        (1 + x.trailing_zeros() as usize / 2).min(MAX_HEIGHT)
    })
}

impl Memtable {
    /// An empty memtable whose writes are logged in WAL `wal_id`.
    pub fn new(wal_id: u64) -> Memtable {
        Memtable::with_pool(wal_id, None)
    }

    /// An empty memtable whose arenas take their chunks from `pool` and give
    /// them back when it is dropped.
    pub(crate) fn with_pool(wal_id: u64, pool: Option<Arc<ChunkPool>>) -> Memtable {
        let nodes = Arena::new(pool.clone());
        let size =
            std::mem::size_of::<Node>() + MAX_HEIGHT * std::mem::size_of::<AtomicPtr<Node>>();
        let head = nodes.alloc(size).cast::<Node>();
        // SAFETY: the allocation is 8-aligned and large enough for a node with
        // a full tower; every link is set to null below, and the head's key
        // and value are never read.
        unsafe {
            ptr::write(
                head.as_ptr(),
                Node {
                    prefix: 0,
                    entry: AtomicPtr::new(ptr::null_mut()),
                    height: MAX_HEIGHT,
                    tower: [],
                },
            );
            for level in 0..MAX_HEIGHT {
                link(head.as_ptr(), level).store(ptr::null_mut(), Ordering::Relaxed);
            }
        }
        Memtable {
            nodes,
            data: Arena::new(pool),
            head,
            height: AtomicUsize::new(1),
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_id,
            range_dels: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn wal_id(&self) -> u64 {
        self.wal_id
    }

    fn head(&self) -> *const Node {
        self.head.as_ptr()
    }

    /// Inserts `user_key@seq`. A second insert of the same version replaces it
    /// (a batch that writes one key twice keeps its last write).
    pub fn insert(&self, user_key: &[u8], seq: u64, value: &[u8]) {
        self.insert_at(user_key, seq, value, &mut Splice::new());
    }

    /// Inserts every `(user_key, value)` of one batch at `seq`, as `insert`
    /// does, carrying the splice of each insert to the next.
    pub(crate) fn insert_batch<'a>(
        &self,
        seq: u64,
        entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) {
        let mut splice = Splice::new();
        for (k, v) in entries {
            self.insert_at(k, seq, v, &mut splice);
        }
    }

    fn insert_at(&self, user_key: &[u8], seq: u64, value: &[u8], splice: &mut Splice) {
        let suffix = key::suffix(seq);
        self.bytes.fetch_add(
            user_key.len() + suffix.len() + value.len() + ENTRY_OVERHEAD,
            Ordering::Relaxed,
        );
        self.max_seq.fetch_max(seq, Ordering::Relaxed);

        let entry = self.data.entry(user_key, &suffix, value);
        let height = random_height();
        let size = std::mem::size_of::<Node>() + height * std::mem::size_of::<AtomicPtr<Node>>();
        let node = self.nodes.alloc(size).cast::<Node>().as_ptr();
        // SAFETY: the allocation has room for the node and its `height` links,
        // is 8-aligned, and belongs to this call until the node is published
        // by a release store below; the entry was just written by this call.
        let probe_key = unsafe {
            ptr::write(
                node,
                Node {
                    prefix: prefix_of(user_key),
                    entry: AtomicPtr::new(entry),
                    height,
                    tower: [],
                },
            );
            entry_key(entry)
        };
        let probe = Probe::new(probe_key);

        let mut top = self.height.load(Ordering::Acquire);
        while height > top {
            match self.height.compare_exchange_weak(
                top,
                height,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => top = height,
                Err(now) => top = now,
            }
        }
        self.find_splice(&probe, splice, top);
        for level in 0..height {
            loop {
                let (prev, next) = (splice.prev[level], splice.next[level]);
                // SAFETY: `prev` and `next` are the head or published nodes of
                // this memtable, `level` is below both heights (a splice at a
                // level only holds nodes that reach it), and `node` is ours.
                unsafe {
                    if level == 0 && !next.is_null() && probe.cmp_node(next) == CmpOrdering::Equal {
                        // The same version again: it takes the new entry; the
                        // unpublished node is left unused in the arena.
                        (*next).entry.store(entry, Ordering::Release);
                        return;
                    }
                    link(node, level).store(next as *mut Node, Ordering::Relaxed);
                    if link(prev, level)
                        .compare_exchange(
                            next as *mut Node,
                            node,
                            Ordering::Release,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                    {
                        break;
                    }
                    // Another writer linked a node here first: search this
                    // level again from `prev`, which still sorts before us.
                    let (p, n) = self.find_splice_for_level(&probe, prev, level);
                    splice.prev[level] = p;
                    splice.next[level] = n;
                }
            }
        }
        // The next insert of a batch starts from here: at the levels this node
        // reaches, it is the node before whatever follows it.
        for level in 0..height {
            splice.prev[level] = node;
        }
    }

    /// Brings `splice` to the place of `probe` at every level below `top`:
    /// levels where the splice still brackets the key are kept, the rest are
    /// searched again from the lowest level that does.
    fn find_splice(&self, probe: &Probe<'_>, splice: &mut Splice, top: usize) {
        let mut keep = top;
        if splice.height == top {
            keep = 0;
            while keep < top {
                let (prev, next) = (splice.prev[keep], splice.next[keep]);
                // SAFETY: the splice holds the head or published nodes of this
                // memtable that reach level `keep`.
                let brackets = unsafe {
                    ptr::eq(link(prev, keep).load(Ordering::Acquire), next)
                        && (prev == self.head() || probe.cmp_node(prev) == CmpOrdering::Less)
                        && (next.is_null() || probe.cmp_node(next) != CmpOrdering::Less)
                };
                if brackets {
                    break;
                }
                keep += 1;
            }
        }
        for level in (0..keep).rev() {
            // From the head at the top; else from the node before the key one
            // level up (found just now, or kept because it brackets the key).
            let start = if level + 1 == top {
                self.head()
            } else {
                splice.prev[level + 1]
            };
            // SAFETY: `start` is the head or a node before the key that
            // reaches `level + 1`, hence `level`.
            let (p, n) = unsafe { self.find_splice_for_level(probe, start, level) };
            splice.prev[level] = p;
            splice.next[level] = n;
        }
        splice.height = top;
    }

    /// The last node before `probe` and the first at or after it on `level`,
    /// walking from `before`.
    ///
    /// # Safety
    /// `before` must be the head or a node of this memtable that sorts before
    /// `probe` and reaches `level`.
    unsafe fn find_splice_for_level(
        &self,
        probe: &Probe<'_>,
        before: *const Node,
        level: usize,
    ) -> (*const Node, *const Node) {
        let mut x = before;
        loop {
            // SAFETY: `x` reaches `level` (the contract, then by the link
            // followed), and the node it links to is published.
            let n = unsafe { link(x, level).load(Ordering::Acquire) } as *const Node;
            // SAFETY: as above.
            if n.is_null() || unsafe { probe.cmp_node(n) } != CmpOrdering::Less {
                return (x, n);
            }
            x = n;
        }
    }

    /// Walks down from the head along the nodes for which `before` holds
    /// (a prefix of the list); returns the last of them (null for none) and
    /// the node after it on level 0 (null at the end).
    fn descend(&self, before: impl Fn(*const Node) -> bool) -> (*const Node, *const Node) {
        let mut x = self.head();
        let mut level = self.height.load(Ordering::Acquire) - 1;
        loop {
            // SAFETY: `x` is the head or a node reaching `level`.
            let n = unsafe { link(x, level).load(Ordering::Acquire) } as *const Node;
            if !n.is_null() && before(n) {
                x = n;
            } else if level == 0 {
                return (if x == self.head() { ptr::null() } else { x }, n);
            } else {
                level -= 1;
            }
        }
    }

    /// The first node at or after `probe` (`or_equal`) or after it, or null.
    fn seek(&self, probe: &Probe<'_>, or_equal: bool) -> *const Node {
        // SAFETY: `descend` passes published nodes of this memtable.
        self.descend(|n| unsafe { sorts_before(n, probe, !or_equal) })
            .1
    }

    /// The last node before `probe` (or at it, `or_equal`), or null; with no
    /// probe, the last node.
    fn seek_back(&self, probe: Option<&Probe<'_>>, or_equal: bool) -> *const Node {
        // SAFETY: `descend` passes published nodes of this memtable.
        self.descend(|n| probe.is_none_or(|p| unsafe { sorts_before(n, p, or_equal) }))
            .0
    }

    /// The newest version of `user_key` at or below `read_seq`: (seq, value record).
    pub fn get(&self, user_key: &[u8], read_seq: u64) -> Option<(u64, Vec<u8>)> {
        let seek = key::encode(user_key, read_seq);
        let n = self.seek(&Probe::new(&seek), true);
        if n.is_null() {
            return None;
        }
        // SAFETY: `n` is a published node of this memtable, alive with `self`.
        let e = unsafe { EntryRef::of(n) };
        // SAFETY: as above.
        let (uk, seq) = key::split(unsafe { e.key() });
        // SAFETY: as above.
        (uk == user_key).then(|| (seq, unsafe { e.value() }.to_vec()))
    }

    /// Up to `limit` entries after `from` (or from the start) and before
    /// `until`, in order, by reference (no copies: they stay valid while the
    /// memtable lives).
    pub(crate) fn scan_forward(
        &self,
        from: Bound<&[u8]>,
        until: Bound<&[u8]>,
        limit: usize,
        out: &mut Vec<EntryRef>,
    ) {
        out.clear();
        let mut n = match from {
            Bound::Unbounded => {
                // SAFETY: the head reaches level 0.
                unsafe { link(self.head(), 0).load(Ordering::Acquire) as *const Node }
            }
            Bound::Included(k) => self.seek(&Probe::new(k), true),
            Bound::Excluded(k) => self.seek(&Probe::new(k), false),
        };
        let end = match until {
            Bound::Unbounded => None,
            Bound::Included(k) => Some((KeyRef::new(k), true)),
            Bound::Excluded(k) => Some((KeyRef::new(k), false)),
        };
        while !n.is_null() && out.len() < limit {
            // SAFETY: `n` is a published node of this memtable.
            let e = unsafe { EntryRef::of(n) };
            if let Some((end, inclusive)) = end {
                // SAFETY: as above.
                let k = KeyRef::new(unsafe { e.key() });
                if k > end || (!inclusive && k == end) {
                    break;
                }
            }
            out.push(e);
            // SAFETY: as above; every node reaches level 0.
            n = unsafe { link(n, 0).load(Ordering::Acquire) };
        }
    }

    /// Up to `limit` entries before `to` (or from the end) and after `until`,
    /// in reverse order. Each step back is a search from the top, as the
    /// links run forward only.
    pub(crate) fn scan_backward(
        &self,
        to: Bound<&[u8]>,
        until: Bound<&[u8]>,
        limit: usize,
        out: &mut Vec<EntryRef>,
    ) {
        out.clear();
        let mut n = match to {
            Bound::Unbounded => self.seek_back(None, false),
            Bound::Included(k) => self.seek_back(Some(&Probe::new(k)), true),
            Bound::Excluded(k) => self.seek_back(Some(&Probe::new(k)), false),
        };
        let end = match until {
            Bound::Unbounded => None,
            Bound::Included(k) => Some((KeyRef::new(k), true)),
            Bound::Excluded(k) => Some((KeyRef::new(k), false)),
        };
        while !n.is_null() && out.len() < limit {
            // SAFETY: `n` is a published node of this memtable.
            let e = unsafe { EntryRef::of(n) };
            // SAFETY: as above.
            let k = unsafe { e.key() };
            if let Some((end, inclusive)) = end {
                let k = KeyRef::new(k);
                if k < end || (!inclusive && k == end) {
                    break;
                }
            }
            out.push(e);
            n = self.seek_back(Some(&Probe::new(k)), false);
        }
    }

    /// Every entry in order, for a flush.
    pub(crate) fn for_each(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        // SAFETY: the head and every node reach level 0; nodes are published.
        let mut n = unsafe { link(self.head(), 0).load(Ordering::Acquire) } as *const Node;
        while !n.is_null() {
            // SAFETY: `n` is a published node of this memtable, alive with `self`.
            let e = unsafe { EntryRef::of(n) };
            // SAFETY: as above.
            unsafe { f(e.key(), e.value())? };
            // SAFETY: as above.
            n = unsafe { link(n, 0).load(Ordering::Acquire) };
        }
        Ok(())
    }

    /// Estimated memory held, in bytes.
    pub fn size(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// True when it holds neither an entry nor a range delete.
    pub(crate) fn is_empty(&self) -> bool {
        self.has_no_entries() && self.range_dels().is_empty()
    }

    /// True when it holds no entry (it may hold range deletes).
    pub(crate) fn has_no_entries(&self) -> bool {
        // SAFETY: the head reaches level 0.
        unsafe { link(self.head(), 0).load(Ordering::Acquire).is_null() }
    }

    /// Records a range delete logged in this memtable's WAL.
    pub(crate) fn add_range_del(&self, t: RangeTombstone) {
        self.max_seq.fetch_max(t.seq, Ordering::Relaxed);
        self.range_dels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(t);
    }

    /// The range deletes logged in this memtable's WAL.
    pub(crate) fn range_dels(&self) -> Vec<RangeTombstone> {
        self.range_dels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_sees_the_newest_version_at_or_below_read_seq() {
        let m = Memtable::new(1);
        m.insert(b"k", 1, b"v1");
        m.insert(b"k", 5, b"v5");
        m.insert(b"kk", 3, b"other");
        assert_eq!(m.get(b"k", 10), Some((5, b"v5".to_vec())));
        assert_eq!(m.get(b"k", 4), Some((1, b"v1".to_vec())));
        assert_eq!(m.get(b"k", 0), None);
        assert_eq!(m.get(b"j", 10), None);
        assert_eq!(m.max_seq(), 5);
    }

    #[test]
    fn inserts_in_any_order_iterate_in_internal_key_order_whatever_the_shared_prefix() {
        // Keys shorter than the 8-byte prefix, keys that differ only past it,
        // and keys that differ only by trailing zero bytes: the prefix decides
        // none of these alone.
        let mut keys: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"a\0\0\0\0\0\0\0".to_vec(),
            b"a\0\0\0\0\0\0\0\0".to_vec(),
            b"abcdefgh".to_vec(),
            b"abcdefgh\0".to_vec(),
            b"abcdefghA".to_vec(),
            b"abcdefghB".to_vec(),
            b"abcdefgi".to_vec(),
            vec![0xff; 9],
            vec![0xff; 8],
            vec![0x7f, 0xff],
            vec![0x80],
        ];
        for i in 0..200u32 {
            keys.push(format!("{:08}{i}", i % 7).into_bytes());
        }
        let m = Memtable::new(1);
        let mut x = 0x2545F4914F6CDD1Du64;
        let mut order: Vec<usize> = (0..keys.len()).collect();
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut want = Vec::new();
        for (n, &i) in order.iter().enumerate() {
            // Two versions of each key: the newer sorts first.
            for seq in [n as u64 + 1, n as u64 + 1000] {
                m.insert(&keys[i], seq, b"v");
                want.push(key::encode(&keys[i], seq));
            }
        }
        want.sort_by(|a, b| key::compare(a, b));
        let mut got = Vec::new();
        m.for_each(|k, _| {
            got.push(k.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want);
        for k in &keys {
            assert!(m.get(k, key::MAX_SEQ).is_some(), "{k:?} not found");
        }
    }

    #[test]
    fn scans_walk_both_directions_from_a_bound() {
        let m = Memtable::new(1);
        for (i, k) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            m.insert(*k, i as u64 + 1, b"v");
        }
        let from = key::encode(b"b", key::MAX_SEQ);
        let mut fwd = Vec::new();
        m.scan_forward(Bound::Included(&from), Bound::Unbounded, 2, &mut fwd);
        // SAFETY: `m` outlives these references.
        let keys: Vec<&[u8]> = fwd
            .iter()
            .map(|e| key::user_key(unsafe { e.key() }))
            .collect();
        assert_eq!(keys, vec![&b"b"[..], b"c"]);
        let mut back = Vec::new();
        m.scan_backward(Bound::Excluded(&from), Bound::Unbounded, 10, &mut back);
        assert_eq!(back.len(), 1);
        // SAFETY: as above.
        assert_eq!(key::user_key(unsafe { back[0].key() }), b"a");
        // A far bound stops either walk before it.
        let c = key::encode(b"c", key::MAX_SEQ);
        m.scan_forward(Bound::Included(&from), Bound::Excluded(&c), 10, &mut fwd);
        assert_eq!(fwd.len(), 1);
        let d = key::encode(b"d", key::MAX_SEQ);
        m.scan_backward(Bound::Unbounded, Bound::Included(&c), 10, &mut back);
        // SAFETY: as above.
        let keys: Vec<&[u8]> = back
            .iter()
            .map(|e| key::user_key(unsafe { e.key() }))
            .collect();
        assert_eq!(keys, vec![&b"d"[..], b"c"]);
        m.scan_backward(Bound::Unbounded, Bound::Included(&d), 10, &mut back);
        assert_eq!(back.len(), 1);
        // A start past the far bound (a seek beyond an iterator's end) finds nothing.
        m.scan_forward(Bound::Included(&d), Bound::Excluded(&c), 10, &mut fwd);
        assert!(fwd.is_empty());
        m.scan_backward(Bound::Excluded(&from), Bound::Included(&d), 10, &mut back);
        assert!(back.is_empty());
        assert!(m.size() > 0);
    }

    /// `full` outside miri, a tenth under it: miri interprets each step
    /// thousands of times slower, and a tenth still crosses arena chunks.
    fn scaled(full: u64) -> u64 {
        if cfg!(miri) {
            full / 10
        } else {
            full
        }
    }

    #[test]
    fn concurrent_inserts_and_reads_see_whole_entries_across_arena_chunks() {
        let per_thread = scaled(2000);
        let m = Memtable::new(1);
        let value = |t: u64, i: u64| vec![(t * 31 + i) as u8; 1 + (i as usize * 37) % 3000];
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..per_thread {
                        let k = format!("t{t}-{i:05}");
                        m.insert(k.as_bytes(), i + 1, &value(t, i));
                        // Read back an earlier entry while others write.
                        let j = i / 2;
                        let got = m.get(format!("t{t}-{j:05}").as_bytes(), u64::MAX >> 8);
                        assert_eq!(got, Some((j + 1, value(t, j))));
                    }
                });
            }
        });
        // One entry larger than a whole chunk gets a chunk of its own.
        let big = vec![7u8; CHUNK + 10];
        m.insert(b"big", 9, &big);
        assert_eq!(m.get(b"big", 10), Some((9, big)));
        let mut n = 0;
        m.for_each(|_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 4 * per_thread + 1);
    }

    /// The model's entries, in order, against a full walk, and each entry
    /// found by `get`, by a forward scan from it and by a backward one.
    fn assert_matches_model(m: &Memtable, model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
        let mut want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        want.sort_by(|a, b| key::compare(&a.0, &b.0));
        let mut got = Vec::new();
        m.for_each(|k, v| {
            got.push((k.to_vec(), v.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the walk differs from the model");
        let mut buf = Vec::new();
        for (i, (k, v)) in want.iter().enumerate().step_by(7) {
            let (uk, seq) = key::split(k);
            assert_eq!(m.get(uk, seq), Some((seq, v.clone())));
            m.scan_forward(Bound::Excluded(k), Bound::Unbounded, 3, &mut buf);
            // SAFETY: `m` outlives these references.
            let fwd: Vec<&[u8]> = buf.iter().map(|e| unsafe { e.key() }).collect();
            let next: Vec<&[u8]> = want[i + 1..].iter().take(3).map(|(k, _)| &k[..]).collect();
            assert_eq!(fwd, next);
            m.scan_backward(Bound::Included(k), Bound::Unbounded, 3, &mut buf);
            // SAFETY: as above.
            let back: Vec<&[u8]> = buf.iter().map(|e| unsafe { e.key() }).collect();
            let prev: Vec<&[u8]> = want[..=i]
                .iter()
                .rev()
                .take(3)
                .map(|(k, _)| &k[..])
                .collect();
            assert_eq!(back, prev);
        }
    }

    #[test]
    fn batches_in_order_reversed_and_shuffled_match_a_model_beside_a_concurrent_writer() {
        let (others, per_round) = (scaled(6000), scaled(1000));
        let m = Memtable::new(1);
        let mut model = std::collections::BTreeMap::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        std::thread::scope(|s| {
            // Single inserts from another thread land between the batch's keys
            // and break its splice at every level.
            let m2 = &m;
            let other = s.spawn(move || {
                let mut mine = Vec::new();
                for i in 0..others {
                    let k = format!("key{:08}x", (i * 7919) % others).into_bytes();
                    m2.insert(&k, 1, &i.to_le_bytes());
                    mine.push((key::encode(&k, 1), i.to_le_bytes().to_vec()));
                }
                mine
            });
            for (seq, round) in (10..).zip(0..6u64) {
                let mut keys: Vec<u64> = (0..per_round).map(|i| round * per_round + i).collect();
                match round % 3 {
                    0 => {}
                    1 => keys.reverse(),
                    _ => {
                        for i in (1..keys.len()).rev() {
                            keys.swap(i, (rnd() % (i as u64 + 1)) as usize);
                        }
                    }
                }
                let entries: Vec<(Vec<u8>, Vec<u8>)> = keys
                    .iter()
                    .map(|&k| {
                        let v = vec![k as u8; (k % 50) as usize];
                        (format!("key{k:08}").into_bytes(), v)
                    })
                    .collect();
                m.insert_batch(seq, entries.iter().map(|(k, v)| (&k[..], &v[..])));
                for (k, v) in entries {
                    model.insert(key::encode(&k, seq), v);
                }
            }
            for (k, v) in other.join().unwrap() {
                model.insert(k, v);
            }
        });
        assert_matches_model(&m, &model);
    }

    #[test]
    fn a_version_inserted_again_takes_the_last_value_within_a_batch_and_after_it() {
        let m = Memtable::new(1);
        let a = b"a".as_slice();
        let b = b"b".as_slice();
        m.insert_batch(3, [(a, b"1".as_slice()), (b, b"x"), (a, b"22")]);
        assert_eq!(m.get(b"a", 3), Some((3, b"22".to_vec())));
        // A GC move rewrites a version in place with a new record.
        m.insert(b"b", 3, b"moved");
        assert_eq!(m.get(b"b", 3), Some((3, b"moved".to_vec())));
        let mut n = 0;
        m.for_each(|_, _| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn a_memtable_from_recycled_chunks_holds_only_its_own_entries() {
        let pool = ChunkPool::new(3 * CHUNK);
        let value = vec![0xAB; CHUNK / 1024];
        {
            let old = Memtable::with_pool(1, Some(pool.clone()));
            for i in 0..5000u32 {
                old.insert(format!("old{i:06}").as_bytes(), 1, &value);
            }
            assert_eq!(
                pool.len(),
                0,
                "chunks go back only when the memtable is dropped"
            );
        }
        // Five chunks of entries and one of nodes went back; the pool keeps three.
        assert_eq!(pool.len(), 3);
        let new = Memtable::with_pool(2, Some(pool.clone()));
        assert_eq!(pool.len(), 1, "each arena's first chunk is recycled");
        for i in 0..2000u32 {
            new.insert(
                format!("new{i:06}").as_bytes(),
                7,
                format!("v{i}").as_bytes(),
            );
        }
        let mut seen = 0u32;
        new.for_each(|key, value| {
            let user = &key[..key.len() - 8];
            assert_eq!(user, format!("new{seen:06}").as_bytes());
            assert_eq!(value, format!("v{seen}").as_bytes());
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 2000);
        assert_eq!(new.get(b"old000001", u64::MAX >> 8), None);
        assert_eq!(
            new.get(b"new000001", u64::MAX >> 8).map(|(s, _)| s),
            Some(7)
        );
    }
}
