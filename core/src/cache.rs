//! The memory budget (`Options::cache_size`): one sharded LRU cache shared by
//! every table of a database.
//!
//! It holds what sett keeps for reading besides the memtables: each table's
//! parsed index and bloom filter ("meta"), and the decompressed data blocks of
//! compressed tables. Entries are charged by their heap size. Values are
//! cheap clones (an `Arc`), so an entry evicted while a reader holds it stays
//! valid for that reader and is freed when the reader lets go.
//!
//! Pinning: a table's meta may instead be pinned, charged to a shard but kept
//! by the table itself and never evicted, while the shard's pinned bytes stay
//! within half of its capacity. When all metas fit, every table is pinned and
//! a lookup costs what it did before the cache existed (no lock); the rest of
//! the budget serves the LRU. A shard's pinned plus LRU bytes never exceed its
//! capacity: pinning evicts LRU entries first, or fails.
//!
//! Data blocks that user reads (gets and iterators) touch are cached here too,
//! as in RocksDB's block cache: they are read with positional reads, checked
//! against their crc, decompressed if they were compressed, and charged by
//! what they hold in the allocator (capacity plus its chunk header, plus
//! `ENTRY_OVERHEAD`). A block that fits a page (every block of an
//! uncompressed table with the default block size) lives in a page of this
//! cache's `PagePool` and goes back to it when evicted and let go, so that
//! the next miss reuses it: as plain allocations, freed on other threads
//! than the ones that allocated them, they would leave up to a quarter of
//! the budget more resident in glibc's arenas (see docs/memory-budget.md).
//! What sett keeps for reading is then the cache's usage
//! plus the pool's free list (at most 1/64 of the capacity) plus the blocks
//! readers hold in flight. Uncompressed blocks are not read in place from
//! the table's mapping: on data larger than memory that would count every
//! touched page in the process's RSS, outside this budget, and make every
//! eviction of such a page an unmap (see docs/read-path.md).
//! Compaction inputs read around the cache (they would only push hot blocks
//! out).
//!
//! Shards are at least `MIN_SHARD` bytes, so that the meta of a default 64 MiB
//! table (a few MiB) fits in one; an entry larger than a shard's room is not
//! cached (the caller uses it once and drops it).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::page_pool::{PagePool, PAGE};

/// The smallest shard: a 256 MiB budget gets 8 shards.
const MIN_SHARD: usize = 32 << 20;
/// The most shards (lock contention is negligible beyond the core count).
const MAX_SHARDS: usize = 16;
/// What an entry costs beyond its own bytes: the node (48 bytes), its map
/// slot (24 bytes and a control byte, 57 bytes a key when the map is at its
/// emptiest, 7/16 full) and the value's `Arc` allocation (a 64-byte chunk
/// for a block).
pub(crate) const ENTRY_OVERHEAD: usize = 176;
const NIL: u32 = u32::MAX;

/// What an entry is, for the hit and miss counters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// A table's index and filter.
    Meta,
    /// A decompressed data block.
    Data,
}

/// A cache key: (table id, block offset); a table's meta uses `META`.
pub(crate) type Key = (u64, u64);
/// The offset part of a meta key (no block starts there).
pub(crate) const META: u64 = u64::MAX;

/// Counters and sizes of a cache, as `Stats` reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheStats {
    pub capacity: u64,
    pub usage: u64,
    pub pinned: u64,
    pub meta_hits: u64,
    pub meta_misses: u64,
    pub data_hits: u64,
    pub data_misses: u64,
}

struct Node<V> {
    key: Key,
    value: Option<V>,
    charge: usize,
    prev: u32,
    next: u32,
}

/// A multiplicative hash of the two words (keys are already well spread ids
/// and offsets; SipHash would cost more than the rest of a lookup).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

struct Shard<V> {
    map: HashMap<Key, u32, BuildHasherDefault<KeyHasher>>,
    nodes: Vec<Node<V>>,
    free: Vec<u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used: evicted first.
    tail: u32,
    capacity: usize,
    lru: usize,
    pinned: usize,
}

impl<V: Clone> Shard<V> {
    fn new(capacity: usize) -> Shard<V> {
        Shard {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity,
            lru: 0,
            pinned: 0,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, i: u32) {
        let old = self.head;
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = old;
        match old {
            NIL => self.tail = i,
            o => self.nodes[o as usize].prev = i,
        }
        self.head = i;
    }

    fn get(&mut self, key: &Key) -> Option<V> {
        let i = *self.map.get(key)?;
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        self.nodes[i as usize].value.clone()
    }

    /// Removes node `i`; returns its charge.
    fn remove(&mut self, i: u32) -> usize {
        self.unlink(i);
        let node = &mut self.nodes[i as usize];
        node.value = None;
        self.map.remove(&node.key);
        self.free.push(i);
        self.lru -= node.charge;
        node.charge
    }

    /// Evicts from the cold end until `room` more bytes fit; returns the bytes freed.
    fn make_room(&mut self, room: usize) -> usize {
        let mut freed = 0;
        while self.tail != NIL && self.lru + self.pinned + room > self.capacity {
            freed += self.remove(self.tail);
        }
        freed
    }
}

/// Hands memory the allocator holds free back to the system. Entries not
/// in the page pool (indexes and filters loaded on demand, blocks larger than
/// a page, decompressed blocks) are allocated by whichever thread read them (a
/// host's reader threads, each with its own glibc arena) and freed by
/// whichever thread evicts them, so freed space stays resident in arenas that
/// the next allocations may not use: on data larger than memory a keys-only
/// scan through the cache would hold several times its capacity in
/// anonymous memory (see docs/memory-budget.md). The memtable flush trims
/// for the same reason.
pub(crate) fn release_free_memory() {
    // (Miri runs the cache's tests and has no malloc_trim.)
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it is
    // thread-safe and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A sharded LRU cache of `V` (cheap to clone), bounded in bytes.
pub(crate) struct Cache<V> {
    shards: Box<[Mutex<Shard<V>>]>,
    capacity: usize,
    /// Pinned plus LRU bytes of all shards.
    usage: AtomicUsize,
    pinned: AtomicUsize,
    hits: [AtomicU64; 2],
    misses: [AtomicU64; 2],
    /// Bytes evicted since the allocator was last asked to give free memory
    /// back (see [`Cache::insert`]).
    evicted: AtomicUsize,
    /// Where data blocks of a page or less are allocated (see `page_pool`).
    pages: Arc<PagePool>,
}

/// The page pool's free list keeps at most this fraction of the capacity...
const POOL_KEEP_DIVISOR: usize = 64;
/// ...and at least this many pages.
const MIN_POOL_KEEP: usize = 16;

/// Evicted bytes after which an insert hands the allocator's free memory back
/// to the system: a quarter of the capacity, at least this.
const MIN_TRIM_EVERY: usize = 16 << 20;

impl<V: Clone> Cache<V> {
    /// A cache of at most `capacity` bytes (0: nothing is cached or pinned).
    pub(crate) fn new(capacity: usize) -> Cache<V> {
        let n = (capacity / MIN_SHARD).clamp(1, MAX_SHARDS);
        // A power of two, so that a shard is picked with a mask.
        let n = 1usize << n.ilog2();
        let shards = (0..n).map(|_| Mutex::new(Shard::new(capacity / n)));
        Cache {
            shards: shards.collect(),
            capacity,
            usage: AtomicUsize::new(0),
            pinned: AtomicUsize::new(0),
            hits: Default::default(),
            misses: Default::default(),
            evicted: AtomicUsize::new(0),
            pages: PagePool::new((capacity / POOL_KEEP_DIVISOR / PAGE).max(MIN_POOL_KEEP)),
        }
    }

    /// The pool data blocks of this cache are allocated from.
    pub(crate) fn pages(&self) -> &Arc<PagePool> {
        &self.pages
    }

    /// Counts `freed` evicted bytes; past a quarter of the capacity (at least
    /// [`MIN_TRIM_EVERY`]) since the last time, gives free memory back to the
    /// system (called with no shard held).
    fn trim_after(&self, freed: usize) {
        if freed == 0 {
            return;
        }
        let every = (self.capacity / 4).max(MIN_TRIM_EVERY);
        if self.evicted.fetch_add(freed, Ordering::Relaxed) + freed >= every
            && self.evicted.swap(0, Ordering::Relaxed) >= every
        {
            release_free_memory();
        }
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard<V>> {
        let mut h = KeyHasher::default();
        h.write_u64(key.0);
        h.write_u64(key.1);
        let i = (h.finish() >> 32) as usize & (self.shards.len() - 1);
        // A panic while a shard is held leaves it consistent (no step of an
        // update can panic midway), so a poisoned lock is still usable.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `key` is cached, without touching its recency or the counts
    /// (a multi-get planning which reads to issue).
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.shard(key).map.contains_key(key)
    }

    /// The entry at `key`, now the most recently used; counts a hit or a miss.
    pub(crate) fn get(&self, key: &Key, kind: Kind) -> Option<V> {
        let found = self.shard(key).get(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter[kind as usize].fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `value` at `key`, charged `charge` bytes, evicting the least
    /// recently used entries of its shard to make room. An entry larger than
    /// its shard's unpinned room is not cached.
    pub(crate) fn insert(&self, key: Key, value: V, charge: usize) {
        let mut s = self.shard(&key);
        if s.pinned + charge > s.capacity {
            return;
        }
        let mut freed = match s.map.get(&key) {
            Some(&i) => s.remove(i),
            None => 0,
        };
        freed += s.make_room(charge);
        // Freed bytes leave the count before the new ones enter it: a reader
        // of `usage` never sees more than the capacity.
        self.usage.fetch_sub(freed, Ordering::Relaxed);
        let node = Node {
            key,
            value: Some(value),
            charge,
            prev: NIL,
            next: NIL,
        };
        let i = match s.free.pop() {
            Some(i) => {
                s.nodes[i as usize] = node;
                i
            }
            None => {
                s.nodes.push(node);
                (s.nodes.len() - 1) as u32
            }
        };
        s.map.insert(key, i);
        s.push_front(i);
        s.lru += charge;
        drop(s);
        self.trim_after(freed);
        self.usage.fetch_add(charge, Ordering::Relaxed);
    }

    /// Drops the entry at `key`, if cached.
    pub(crate) fn erase(&self, key: &Key) {
        let mut s = self.shard(key);
        if let Some(&i) = s.map.get(key) {
            let freed = s.remove(i);
            self.usage.fetch_sub(freed, Ordering::Relaxed);
        }
    }

    /// Reserves `charge` pinned bytes in `key`'s shard if its pinned bytes
    /// stay within half its capacity, evicting LRU entries to make room.
    /// The caller keeps the pinned value and calls `unpin` when it drops it.
    pub(crate) fn try_pin(&self, key: &Key, charge: usize) -> bool {
        let mut s = self.shard(key);
        if s.pinned + charge > s.capacity / 2 {
            return false;
        }
        let freed = s.make_room(charge);
        self.usage.fetch_sub(freed, Ordering::Relaxed);
        s.pinned += charge;
        self.pinned.fetch_add(charge, Ordering::Relaxed);
        self.usage.fetch_add(charge, Ordering::Relaxed);
        true
    }

    /// Gives back bytes reserved by `try_pin` with the same key.
    pub(crate) fn unpin(&self, key: &Key, charge: usize) {
        let mut s = self.shard(key);
        s.pinned -= charge;
        self.pinned.fetch_sub(charge, Ordering::Relaxed);
        self.usage.fetch_sub(charge, Ordering::Relaxed);
    }

    /// Capacity, usage and counters.
    pub(crate) fn stats(&self) -> CacheStats {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            capacity: self.capacity as u64,
            usage: self.usage.load(Ordering::Relaxed) as u64,
            pinned: self.pinned.load(Ordering::Relaxed) as u64,
            meta_hits: n(&self.hits[Kind::Meta as usize]),
            meta_misses: n(&self.misses[Kind::Meta as usize]),
            data_hits: n(&self.hits[Kind::Data as usize]),
            data_misses: n(&self.misses[Kind::Data as usize]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_entries_go_first_and_usage_stays_within_capacity() {
        let c: Cache<u32> = Cache::new(1000);
        for i in 0..10u32 {
            c.insert((1, u64::from(i)), i, 100);
        }
        assert_eq!(c.stats().usage, 1000);
        // Touch 0, then insert one more: 1 (now the coldest) goes, 0 stays.
        assert_eq!(c.get(&(1, 0), Kind::Data), Some(0));
        c.insert((1, 10), 10, 100);
        assert_eq!(c.get(&(1, 1), Kind::Data), None);
        assert_eq!(c.get(&(1, 0), Kind::Data), Some(0));
        assert_eq!(c.stats().usage, 1000);
        // A big entry evicts several; one larger than the cache is refused.
        c.insert((2, 0), 99, 450);
        assert!(c.stats().usage <= 1000);
        assert_eq!(c.get(&(2, 0), Kind::Meta), Some(99));
        c.insert((3, 0), 7, 1001);
        assert_eq!(c.get(&(3, 0), Kind::Meta), None);
        let s = c.stats();
        assert_eq!(
            (s.data_hits, s.data_misses, s.meta_hits, s.meta_misses),
            (2, 1, 1, 1)
        );
        // Replacing an entry charges only the new one.
        c.insert((2, 0), 100, 400);
        c.erase(&(1, 0));
        assert!(c.stats().usage <= 1000);
        assert_eq!(c.get(&(2, 0), Kind::Meta), Some(100));
    }

    #[test]
    fn pinning_evicts_to_make_room_and_is_refused_past_half_the_capacity() {
        let c: Cache<u32> = Cache::new(1000);
        for i in 0..10u32 {
            c.insert((1, u64::from(i)), i, 100);
        }
        assert!(c.try_pin(&(9, META), 300));
        assert_eq!(c.stats().usage, 1000);
        assert_eq!(c.stats().pinned, 300);
        assert!(!c.try_pin(&(8, META), 201), "more than half pinned");
        assert!(c.try_pin(&(8, META), 200));
        // The LRU now has 500 bytes: five entries, the newest.
        assert_eq!(
            (0..10)
                .filter(|&i| c.get(&(1, i), Kind::Data).is_some())
                .count(),
            5
        );
        // An LRU entry larger than the unpinned room is not cached.
        c.insert((2, 0), 0, 501);
        assert_eq!(c.get(&(2, 0), Kind::Data), None);
        c.unpin(&(9, META), 300);
        c.unpin(&(8, META), 200);
        assert_eq!(c.stats().pinned, 0);
        c.insert((2, 0), 0, 1000);
        assert_eq!(c.stats().usage, 1000);
    }

    #[test]
    fn entry_overhead_covers_a_blocks_node_map_slot_and_arc() {
        fn node_size<V>(_: &Cache<V>) -> usize {
            std::mem::size_of::<Node<V>>()
        }
        let node = node_size(&crate::table::TableCache::new(0));
        // A map slot at 7/16 full (just after growing), its control byte.
        let slot = (std::mem::size_of::<(Key, u32)>() + 1) * 16 / 7;
        // The Arc's counts and the block, in a 16-byte-aligned chunk.
        let arc = (16 + std::mem::size_of::<crate::page_pool::Block>() + 8).next_multiple_of(16);
        assert!(
            node + slot + arc <= ENTRY_OVERHEAD,
            "{node} + {slot} + {arc}"
        );
    }

    #[test]
    fn a_cache_of_zero_bytes_holds_nothing() {
        let c: Cache<u32> = Cache::new(0);
        c.insert((1, 1), 1, 1);
        assert!(!c.try_pin(&(1, META), 1));
        assert_eq!(c.get(&(1, 1), Kind::Data), None);
        assert_eq!(c.stats().usage, 0);
    }

    #[test]
    fn a_large_cache_is_sharded_and_each_shard_holds_its_share() {
        let c: Cache<u64> = Cache::new(256 << 20);
        assert_eq!(c.shards.len(), 8);
        // Under miri, 16x larger entries keep the run short with the same shape.
        let charge: usize = if cfg!(miri) { 64 << 10 } else { 4096 };
        let fit = (256 << 20) / charge as u64;
        let inserted = fit * 100_000 / 65_536;
        for i in 0..inserted {
            c.insert((i, 0), i, charge);
            assert!(c.stats().usage <= 256 << 20);
        }
        let held = (0..inserted)
            .filter(|&i| c.get(&(i, 0), Kind::Data).is_some())
            .count() as u64;
        // Each shard fills to its share; hashing leaves a little room in some.
        assert!(
            held > fit * 60_000 / 65_536 && held <= fit,
            "{held} of {fit}"
        );
    }
}
