//! The memtable: a concurrent skiplist of internal key → value record, behind a
//! narrow type so that the structure can be swapped if measurements ask for it.
//!
//! Key and value bytes live in an arena of large chunks owned by the memtable;
//! the skiplist holds only pointers into it. One small allocation per entry
//! (the skiplist node) instead of three, and the bytes go back to the system
//! in a few large unmaps when the memtable is dropped, rather than as millions
//! of small frees spread over the allocator's per-thread arenas, where they
//! stay resident (docs/memory-budget.md).

use crate::key::{self, KeyRef};
use crate::range_del::RangeTombstone;
use crossbeam_skiplist::SkipMap;
use memmap2::MmapMut;
use std::borrow::Borrow;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Bytes of skiplist node and tower per entry (the node is the only
/// per-entry allocation; keys and values are counted exactly).
const ENTRY_OVERHEAD: usize = 64;
/// Arena chunk size; a larger entry gets a chunk of its own.
const CHUNK: usize = 1 << 20;

/// A sorted in-memory table of recent writes: a lock-free skip list whose keys
/// and values live in an arena, so an insert makes no per-entry allocation.
pub struct Memtable {
    // Declared before `arena`, so it is dropped first: its entries point into the arena.
    map: SkipMap<Slot, ()>,
    arena: Arena,
    bytes: AtomicUsize,
    max_seq: AtomicU64,
    /// The id of the WAL file that holds this memtable's writes.
    wal_id: u64,
    /// Range deletes logged in this memtable's WAL: recorded in the manifest
    /// when it is flushed (readers find them in the read state's set).
    range_dels: Mutex<Vec<RangeTombstone>>,
}

/// An entry of a memtable, by reference: valid only while that memtable lives.
#[derive(Clone, Copy)]
pub(crate) struct EntryRef(Slot);

impl EntryRef {
    /// The entry's internal key.
    ///
    /// # Safety
    /// The memtable this entry came from must still be alive (hold its `Arc`).
    pub(crate) unsafe fn key(&self) -> &[u8] {
        self.0.key()
    }

    /// The entry's value record.
    ///
    /// # Safety
    /// As for [`EntryRef::key`].
    pub(crate) unsafe fn value(&self) -> &[u8] {
        self.0.value()
    }
}

/// An entry: internal key then value record, contiguous in the arena.
///
/// `prefix` holds the user key's first 8 bytes in the node itself, so that an
/// insert's search decides most comparisons without touching the arena: one
/// cache miss per step of the skiplist instead of two, and no `memcmp` call.
#[derive(Clone, Copy)]
struct Slot {
    ptr: NonNull<u8>,
    klen: u32,
    vlen: u32,
    prefix: u64,
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

// SAFETY: a Chunk's base pointer is into its own mapping, written only through
// ranges claimed atomically by one thread each (see Arena::push).
unsafe impl Send for Chunk {}
// SAFETY: as above.
unsafe impl Sync for Chunk {}

// SAFETY: a Slot points at bytes in its memtable's arena that are written once,
// before the Slot is published in the skiplist, and never changed or freed while
// the memtable (and so the skiplist holding the Slot) lives.
unsafe impl Send for Slot {}
// SAFETY: as above; shared access only reads immutable bytes.
unsafe impl Sync for Slot {}

impl Slot {
    fn key(&self) -> &[u8] {
        // SAFETY: ptr..ptr+klen was initialized by Arena::push and stays valid
        // while the memtable lives, which outlives every borrow of its skiplist.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.klen as usize) }
    }

    fn value(&self) -> &[u8] {
        // SAFETY: as in key(); the value follows the key in the same allocation.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().add(self.klen as usize),
                self.vlen as usize,
            )
        }
    }
}

impl Borrow<KeyRef> for Slot {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(self.key())
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Slot {}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| key::compare(self.key(), other.key()))
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

/// Append-only storage in chunks that never move until the arena is dropped.
/// Chunks are anonymous memory maps, not allocator memory: a dropped memtable
/// gives its pages straight back to the system, whichever thread allocated them.
/// Space is claimed with one atomic add, so concurrent writers do not serialize.
struct Arena {
    /// The chunk being filled; one of `chunks`, so never dangling.
    current: AtomicPtr<Chunk>,
    /// Every chunk, owned here; the lock is taken only to add one. Boxed so
    /// that `current` stays valid when the Vec grows.
    #[allow(clippy::vec_box)]
    chunks: Mutex<Vec<Box<Chunk>>>,
}

struct Chunk {
    map: MmapMut,
    base: *mut u8,
    /// Bytes claimed; may run past the end when claims race (the tail is wasted).
    used: AtomicUsize,
}

impl Chunk {
    fn new(len: usize) -> Box<Chunk> {
        let mut map = MmapMut::map_anon(len).unwrap_or_else(|e| {
            // As a failed allocation would: the process is out of memory.
            panic!("memtable arena: mapping {len} bytes: {e}")
        });
        let base = map.as_mut_ptr();
        Box::new(Chunk {
            map,
            base,
            used: AtomicUsize::new(0),
        })
    }
}

impl Default for Arena {
    fn default() -> Arena {
        let mut first = Chunk::new(CHUNK);
        let current = AtomicPtr::new(&mut *first as *mut Chunk);
        Arena {
            current,
            chunks: Mutex::new(vec![first]),
        }
    }
}

impl Arena {
    /// Copies `parts` into the arena, contiguously; returns where they start.
    fn push(&self, parts: [&[u8]; 3]) -> NonNull<u8> {
        let len = parts.iter().map(|p| p.len()).sum::<usize>();
        loop {
            let cur = self.current.load(Ordering::Acquire);
            // SAFETY: `current` always points at a chunk owned by `chunks`, and
            // chunks are only freed when the arena is dropped.
            let chunk = unsafe { &*cur };
            let at = chunk.used.fetch_add(len, Ordering::Relaxed);
            if at
                .checked_add(len)
                .is_some_and(|end| end <= chunk.map.len())
            {
                // SAFETY: [at, at + len) lies inside the mapping and was claimed
                // by this call alone (the atomic add hands out disjoint ranges).
                unsafe {
                    let dst = chunk.base.add(at);
                    let mut off = 0;
                    for p in parts {
                        std::ptr::copy_nonoverlapping(p.as_ptr(), dst.add(off), p.len());
                        off += p.len();
                    }
                    return NonNull::new_unchecked(dst);
                }
            }
            // Full: one caller adds a chunk, the others retry on it.
            let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
            if self.current.load(Ordering::Acquire) == cur {
                let mut fresh = Chunk::new(len.max(CHUNK));
                self.current
                    .store(&mut *fresh as *mut Chunk, Ordering::Release);
                chunks.push(fresh);
            }
        }
    }
}

impl Memtable {
    /// An empty memtable whose writes are logged in WAL `wal_id`.
    pub fn new(wal_id: u64) -> Memtable {
        Memtable {
            map: SkipMap::new(),
            arena: Arena::default(),
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_id,
            range_dels: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn wal_id(&self) -> u64 {
        self.wal_id
    }

    /// Inserts `user_key@seq`. A second insert of the same version replaces it
    /// (a batch that writes one key twice keeps its last write).
    pub fn insert(&self, user_key: &[u8], seq: u64, value: &[u8]) {
        // The internal key is written straight into the arena: no key buffer.
        let suffix = key::suffix(seq);
        let klen = user_key.len() + suffix.len();
        let (Ok(klen), Ok(vlen)) = (u32::try_from(klen), u32::try_from(value.len())) else {
            // Options::validate caps keys and inline values at 1 MiB each.
            unreachable!("memtable key or value record of 4 GiB or more");
        };
        self.bytes.fetch_add(
            klen as usize + value.len() + ENTRY_OVERHEAD,
            Ordering::Relaxed,
        );
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        let ptr = self.arena.push([user_key, &suffix, value]);
        let prefix = prefix_of(user_key);
        self.map.insert(
            Slot {
                ptr,
                klen,
                vlen,
                prefix,
            },
            (),
        );
    }

    /// Inserts every `(user_key, value)` of one batch at `seq`, as `insert`
    /// does, inside one epoch pin: the skiplist's own pins per insert are
    /// then nested ones, without the memory fence an outermost pin issues.
    pub(crate) fn insert_batch<'a>(
        &self,
        seq: u64,
        entries: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) {
        let _pin = crossbeam_epoch::pin();
        for (k, v) in entries {
            self.insert(k, seq, v);
        }
    }

    /// The newest version of `user_key` at or below `read_seq`: (seq, value record).
    pub fn get(&self, user_key: &[u8], read_seq: u64) -> Option<(u64, Vec<u8>)> {
        let seek = key::encode(user_key, read_seq);
        let e = self.map.lower_bound(Bound::Included(KeyRef::new(&seek)))?;
        let (uk, seq) = key::split(e.key().key());
        (uk == user_key).then(|| (seq, e.key().value().to_vec()))
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
        let (from, until) = (map_bound(from), map_bound(until));
        out.clear();
        out.extend(
            self.map
                .range::<KeyRef, _>((from, until))
                .take(limit)
                .map(|e| EntryRef(*e.key())),
        );
    }

    /// Up to `limit` entries before `to` (or from the end) and after `until`,
    /// in reverse order.
    pub(crate) fn scan_backward(
        &self,
        to: Bound<&[u8]>,
        until: Bound<&[u8]>,
        limit: usize,
        out: &mut Vec<EntryRef>,
    ) {
        let (to, until) = (map_bound(to), map_bound(until));
        out.clear();
        out.extend(
            self.map
                .range::<KeyRef, _>((until, to))
                .rev()
                .take(limit)
                .map(|e| EntryRef(*e.key())),
        );
    }

    /// Every entry in order, for a flush.
    pub(crate) fn for_each(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for e in self.map.iter() {
            f(e.key().key(), e.key().value())?;
        }
        Ok(())
    }

    /// Estimated memory held, in bytes.
    pub fn size(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// True when it holds neither an entry nor a range delete.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty() && self.range_dels().is_empty()
    }

    /// True when it holds no entry (it may hold range deletes).
    pub(crate) fn has_no_entries(&self) -> bool {
        self.map.is_empty()
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

fn map_bound(b: Bound<&[u8]>) -> Bound<&KeyRef> {
    match b {
        Bound::Included(k) => Bound::Included(KeyRef::new(k)),
        Bound::Excluded(k) => Bound::Excluded(KeyRef::new(k)),
        Bound::Unbounded => Bound::Unbounded,
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

    #[test]
    fn concurrent_inserts_and_reads_see_whole_entries_across_arena_chunks() {
        let m = Memtable::new(1);
        let value = |t: u64, i: u64| vec![(t * 31 + i) as u8; 1 + (i as usize * 37) % 3000];
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..2000u64 {
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
        assert_eq!(n, 8001);
    }
}
