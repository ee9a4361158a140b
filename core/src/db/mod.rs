//! `Db`: the handle, what readers see, and point reads.
//!
//! The rest of the Db lives in submodules by concern: `recovery` (open),
//! `commit` (the commit pipeline: sequences, group commit, visibility),
//! `write` (applying writes, write stalls, memtable switches, close), `background` (flush and
//! compaction threads, flatten, drops), `gc` (value-log garbage collection),
//! `checkpoint` (hard-linked copies).
//!
//! Lock order, outermost first: the keyspace catalog's → the GC's lock
//! (`GcState::exclusive`) →
//! `log` → the commit pipeline's queue → `manifest` →
//! `state`; `bg` (the background lock, owned by `background::Background`)
//! comes after `log` and is never held while taking `manifest` or `state`
//! for writing (the conditions its waits check read `state`, `poison` and
//! `snapshots` under it), and `state` guards are never held while taking
//! another lock. `holds` (checkpoint's
//! value-log file holds) and the catalog's codecs are innermost: nothing is
//! taken while either is held.

mod background;
mod catalog;
mod checkpoint;
mod commit;
mod gc;
mod keyspaces;
mod oracle;
mod recovery;
mod verify;
mod write;

pub use checkpoint::{CheckpointReport, CHECKPOINT_MARKER};
pub use gc::GcOutcome;

use crate::error::{Error, Result};
use crate::feed::{Feed, SubscribeOptions, Subscription};
use crate::filename;
use crate::iter::{DbIterator, IterOptions, MemIter, MergeIter, PendingIter, Source};
use crate::key;
use crate::keyspace::Region;
use crate::levels::Version;
use crate::manifest::Manifest;
use crate::memtable::{ChunkPool, Memtable};
use crate::merge::MergeRead;
use crate::options::Options;
use crate::range_del::RangeDels;
use crate::value::{self, Stored};
use crate::vlog::{VlogSet, VlogWriter};
use crate::wal::LogWriter;
use crate::{PutOptions, WriteBatch};
use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

pub(crate) use crate::sync::lock;
pub(crate) use commit::TxnCheck;
pub use keyspaces::Keyspace;
pub(crate) use oracle::fingerprint;
pub use verify::VerifyReport;
pub(crate) use write::{Move, WriterKind};

/// What readers see: memtables, live tables and live value-log files, swapped
/// as a whole. A reader that holds one keeps every file in it readable.
pub(crate) struct ReadState {
    pub(crate) mem: Arc<Memtable>,
    /// Immutable memtables waiting for flush, newest first.
    pub(crate) imm: Vec<Arc<Memtable>>,
    pub(crate) version: Arc<Version>,
    pub(crate) vlogs: Arc<VlogSet>,
    /// Every live range tombstone: those of the memtables (added before
    /// their batch is published) and those the manifest records.
    pub(crate) range_dels: Arc<RangeDels>,
}

impl ReadState {
    /// The newest version of `key` at or below `read_seq`: (seq, value record);
    /// `None` also when a range tombstone the read sees hides that version.
    pub(crate) fn lookup(&self, key: &[u8], read_seq: u64) -> Result<Option<(u64, Vec<u8>)>> {
        let found = self.lookup_raw(key, read_seq)?;
        Ok(found.filter(|(seq, _)| !self.range_dels.hides(key, *seq, read_seq)))
    }

    /// Starts reading, without waiting, the table block a lookup of `key`
    /// at `read_seq` will read first, unless a memtable holds the key or the
    /// block cache the block ([`Version::will_need`]).
    pub(crate) fn will_need(&self, key: &[u8], read_seq: u64) -> Result<()> {
        let in_memory = std::iter::once(&self.mem)
            .chain(&self.imm)
            .any(|m| m.get(key, read_seq).is_some());
        if in_memory {
            return Ok(());
        }
        self.version.will_need(key, read_seq)
    }

    /// The newest version of `key` in the memtables, range deletes applied
    /// (the GC's check of a move after a walk, see `write::write_moves`).
    pub(crate) fn lookup_memtables(&self, key: &[u8]) -> Option<(u64, Vec<u8>)> {
        let found = std::iter::once(&self.mem)
            .chain(&self.imm)
            .find_map(|m| m.get(key, crate::key::MAX_SEQ))?;
        Some(found).filter(|(seq, _)| !self.range_dels.hides(key, *seq, crate::key::MAX_SEQ))
    }

    /// The versions of `key` under a merge operand at `version`, newest
    /// first, as a read at `read_seq` sees them: each operand, then the
    /// first version that is not one (the operands' base), if any is
    /// visible. Appended to `out`.
    pub(crate) fn lookup_below(
        &self,
        key: &[u8],
        top: (u64, &[u8]),
        read_seq: u64,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<()> {
        let mut version = value::next_below(top.0, top.1);
        let mut looked_up = 0;
        while version > 0 {
            if looked_up == WALK_OPERANDS_AFTER {
                return self.walk_below(key, version, read_seq, out);
            }
            looked_up += 1;
            let Some((seq, raw)) = self.lookup_raw(key, version - 1)? else {
                break;
            };
            // A range tombstone hides this version and every older one.
            if self.range_dels.hides(key, seq, read_seq) {
                break;
            }
            let operand = value::is_merge(&raw);
            if !operand {
                out.push((seq, raw));
                break;
            }
            version = value::next_below(seq, &raw);
            out.push((seq, raw));
        }
        Ok(())
    }

    /// [`ReadState::lookup_below`] for a key with many operands, from below
    /// `version`: one merge over the sources that hold the key, walked
    /// down its versions, instead of a lookup per version (each a descent
    /// of every memtable's skiplist and a search of the tables).
    fn walk_below(
        &self,
        key: &[u8],
        version: u64,
        read_seq: u64,
        out: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<()> {
        let mut upper = key.to_vec();
        upper.push(0);
        let mut merge = MergeIter::new(self.sources(false, Some(key), Some(&upper)), false);
        merge.seek(&key::encode(key, version - 1))?;
        // Versions at or above this are stood for by an operand met before.
        let mut bound = version;
        while merge.valid() {
            let (uk, seq) = key::split(merge.key());
            if uk != key {
                break;
            }
            if seq < bound {
                if self.range_dels.hides(key, seq, read_seq) {
                    break;
                }
                let raw = merge.value().to_vec();
                if !value::is_merge(&raw) {
                    out.push((seq, raw));
                    break;
                }
                bound = value::next_below(seq, &raw);
                out.push((seq, raw));
            }
            merge.next()?;
        }
        Ok(())
    }

    /// The newest version of `key` whose record is not a merge operand (a
    /// put, a pointer, a tombstone), with the operands above it, newest
    /// first: how the GC finds that a value-log entry under operands is
    /// still the base of a live value.
    pub(crate) fn lookup_base(&self, key: &[u8], read_seq: u64) -> Result<Option<BaseLookup>> {
        let Some((version, raw)) = self.lookup(key, read_seq)? else {
            return Ok(None);
        };
        if !value::is_merge(&raw) {
            return Ok(Some(BaseLookup {
                version,
                raw,
                above: Vec::new(),
            }));
        }
        let mut versions = Vec::new();
        self.lookup_below(key, (version, &raw), read_seq, &mut versions)?;
        versions.insert(0, (version, raw));
        match versions.pop() {
            Some((version, raw)) if !value::is_merge(&raw) => Ok(Some(BaseLookup {
                version,
                raw,
                above: versions,
            })),
            _ => Ok(None),
        }
    }

    fn lookup_raw(&self, key: &[u8], read_seq: u64) -> Result<Option<(u64, Vec<u8>)>> {
        if let Some(found) = self.mem.get(key, read_seq) {
            return Ok(Some(found));
        }
        for m in &self.imm {
            if let Some(found) = m.get(key, read_seq) {
                return Ok(Some(found));
            }
        }
        self.version.get(key, read_seq)
    }

    /// Merge sources, newest first, for a walk over user keys in `[lower,
    /// upper)` (`None`: unbounded): the memtables that hold anything and the
    /// tables whose key range meets the bounds (see `Version::sources`).
    pub(crate) fn sources(
        &self,
        reverse: bool,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Vec<Box<dyn Source>> {
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        for m in std::iter::once(&self.mem).chain(&self.imm) {
            // A snapshot never sees later inserts, so an empty memtable adds nothing.
            if !m.has_no_entries() {
                sources.push(Box::new(MemIter::new(m.clone(), reverse, lower, upper)));
            }
        }
        self.version.sources(reverse, lower, upper, &mut sources);
        sources
    }
}

/// Operands a point read looks up one by one before it walks the rest of a
/// key's versions in one merge over its sources (`ReadState::walk_below`):
/// a lookup costs well under a microsecond in memory, a merge's setup a few.
const WALK_OPERANDS_AFTER: usize = 8;

/// A key's newest version that is not a merge operand
/// (`ReadState::lookup_base`).
pub(crate) struct BaseLookup {
    pub(crate) version: u64,
    /// Its value record.
    pub(crate) raw: Vec<u8>,
    /// The merge operands above it, newest first: (version, value record).
    pub(crate) above: Vec<(u64, Vec<u8>)>,
}

/// Owned by the write leader.
pub(crate) struct LogState {
    pub(crate) wal: LogWriter,
    pub(crate) vlog: VlogWriter,
    /// The WAL bytes of the group being written: one buffer kept from group
    /// to group instead of an allocation per group.
    pub(crate) framed: Vec<u8>,
    /// Ids of the WALs closed by a memtable switch and not synced since,
    /// oldest first: the next sync syncs them before the current WAL.
    pub(crate) unsynced_wals: Vec<u64>,
}

/// Counts and sizes of what the Db holds.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Per level, L0 first: (tables, bytes).
    pub levels: Vec<(usize, u64)>,
    /// Live value-log files.
    pub vlog_files: usize,
    /// Bytes of all live value-log files.
    pub vlog_bytes: u64,
    /// Estimated bytes held by the active and immutable memtables.
    pub memtable_bytes: usize,
    /// Immutable memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// Bytes held in memory by the tables themselves: their key ranges and
    /// the indexes and bloom filters pinned in the cache (`cache_pinned_bytes`).
    /// Indexes and filters loaded through the cache's LRU are counted in
    /// `cache_usage` only.
    pub index_filter_bytes: usize,
    /// The memory budget, `Options::cache_size`, in bytes.
    pub cache_capacity: u64,
    /// Bytes the cache holds now (pinned indexes and filters, cached indexes,
    /// filters and decompressed data blocks); never above `cache_capacity`.
    pub cache_usage: u64,
    /// Of `cache_usage`, the indexes and filters pinned by their tables.
    pub cache_pinned_bytes: u64,
    /// Lookups of an index and filter not pinned, found in the cache.
    pub cache_index_filter_hits: u64,
    /// Lookups of an index and filter not pinned that had to load them.
    pub cache_index_filter_misses: u64,
    /// Reads of a compressed data block found decompressed in the cache.
    pub cache_data_hits: u64,
    /// Reads of a compressed data block that decompressed it.
    pub cache_data_misses: u64,
    /// Sequence number of the last write.
    pub last_seq: u64,
    /// Entries (all versions, tombstones included) held in tables.
    pub table_entries: u64,
    /// Batches written since open.
    pub batches_written: u64,
    /// Write groups committed since open (each one WAL append).
    pub write_groups: u64,
    /// fsyncs of the WAL since open (at most one per group, only for groups that
    /// sync: `sync_writes` or [`WriteBatch::set_sync`](crate::WriteBatch::set_sync)).
    pub wal_syncs: u64,
    /// Garbage bytes per value-log file, as counted by compactions: (file id, bytes).
    pub vlog_discard: Vec<(u32, u64)>,
    /// Levels due for compaction now (by the scoring that picks compactions),
    /// whether or not one of them is already being compacted.
    pub compactions_pending: u64,
    /// Compactions in progress (automatic ones, flatten, drop prefix).
    pub compactions_running: u64,
    /// Value-log GC since open, background and asked for: files whose live
    /// values were moved before they were deleted.
    pub gc_files_rewritten: u64,
    /// Files deleted without a rewrite (no live value left).
    pub gc_files_deleted: u64,
    /// Bytes returned to the file system (deleted files less what was moved).
    pub gc_bytes_reclaimed: u64,
    /// Time spent in value-log GC, in microseconds (waits for its rate included).
    pub gc_micros: u64,
    /// Walks over the tree by the idle GC (`vlog_gc_idle_ratio`), which
    /// judge files without a lookup per entry.
    pub gc_walks: u64,
    /// Value-log files the background GC will collect (their garbage share
    /// reached `vlog_gc_ratio`) and their bytes: its backlog. 0 when
    /// background GC is off or the Db is read-only.
    pub gc_pending_files: u64,
    /// Bytes of those files.
    pub gc_pending_bytes: u64,
    /// Value-log files in which GC (background or asked for) found a
    /// damaged live entry: each is kept, left out of later rounds while the
    /// Db is open, and reported by [`Db::verify`] with its file and offset.
    pub gc_damaged_files: u64,
    /// Live range tombstones ([`Db::delete_range`]): in memtables, or in the
    /// manifest until compaction has dropped every version they hide.
    pub range_tombstones: usize,
    /// Per level, L0 first: bytes of tables written into it since open, by
    /// flushes into L0 and by compactions (of every kind) into the others. A
    /// table moved down whole is not written again. With
    /// `level_bytes_read` and `wal_bytes_written` it tells where the device's
    /// writes go (RocksDB's compaction stats, Write per level).
    pub level_bytes_written: Vec<u64>,
    /// Per level: bytes of the tables that compactions into that level read
    /// since open (inputs from the level above and from the level itself).
    pub level_bytes_read: Vec<u64>,
    /// Bytes appended to the WAL since open.
    pub wal_bytes_written: u64,
    /// Bytes of live values the value-log GC moved (appended again) since open.
    pub gc_bytes_moved: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) batches: AtomicU64,
    pub(crate) groups: AtomicU64,
    pub(crate) wal_syncs: AtomicU64,
    pub(crate) compactions_running: AtomicU64,
    /// Value-log bytes the GC's moves appended: left out of the write rate
    /// and the appends the GC keeps pace with (`gc::GcEnv::vlog_appended`).
    pub(crate) gc_moved_bytes: AtomicU64,
    /// Bytes of value-log files sealed so far, less the header each new head
    /// starts with (with the head's length: bytes appended), from which the
    /// GC reads the write rate it keeps pace with.
    pub(crate) vlog_sealed_bytes: AtomicU64,
    /// The head value-log file's length and id, kept beside `log` so that
    /// the GC reads them without taking the lock a busy writer holds.
    pub(crate) vlog_head_len: AtomicU64,
    pub(crate) vlog_head_id: AtomicU64,
    /// `Stats::level_bytes_written` and `level_bytes_read`, per level (at
    /// most `MAX_NUM_LEVELS`, the bound of `num_levels`).
    pub(crate) level_written: [AtomicU64; crate::options::MAX_NUM_LEVELS],
    pub(crate) level_read: [AtomicU64; crate::options::MAX_NUM_LEVELS],
    /// `Stats::wal_bytes_written`.
    pub(crate) wal_bytes: AtomicU64,
    /// The last multi-get waited on the device (`DbInner::get_many_storage`):
    /// the next starts by asking for its reads instead of finding out with
    /// a read that waits.
    pub(crate) multi_get_on_device: AtomicBool,
}

impl Counters {
    /// Adds `bytes` to `level`'s entry of `per_level` (`level_written` or
    /// `level_read`).
    pub(crate) fn add_to_level(per_level: &[AtomicU64], level: usize, bytes: u64) {
        if let Some(c) = per_level.get(level) {
            c.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// The first `levels` entries of `per_level`.
    fn per_level(per_level: &[AtomicU64], levels: usize) -> Vec<u64> {
        per_level
            .iter()
            .take(levels)
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }
}

/// A value with what was stored beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The value.
    pub value: Vec<u8>,
    /// The user-meta byte given at put time.
    pub user_meta: u8,
    /// When the entry expires, in unix seconds; 0 = never.
    pub expires_at: u64,
    /// The version (sequence number of the write).
    pub version: u64,
}

pub(crate) struct DbInner {
    // The database and its lifetime.
    pub(crate) opts: Options,
    pub(crate) dir: PathBuf,
    /// The directory lock; released by close (dropping the File drops the flock).
    dir_lock: Mutex<Option<File>>,
    poison: Mutex<Option<Error>>,
    closed: AtomicBool,
    /// A read-only Db: the manifest it loaded and the WAL ids it replayed
    /// (what a checkpoint of it holds).
    pub(crate) read_only_recovery: Option<(crate::manifest::ManifestState, Vec<u64>)>,
    pub(crate) counters: Counters,

    // What readers see (this file): the read state, the snapshots that keep
    // versions from compaction, and the memory budget tables read through.
    state: RwLock<Arc<ReadState>>,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    pub(crate) cache: Arc<crate::table::TableCache>,

    // The write path (write.rs): the WAL and head value-log writers under the
    // log lock, the memtables' arena chunks, and the bulk-load flag.
    pub(crate) log: Mutex<Option<LogState>>,
    /// Arena chunks of flushed memtables, for the next ones (`ChunkPool`).
    pub(crate) chunk_pool: Arc<ChunkPool>,
    /// A bulk load owns the Db: other writes are refused until it ends.
    pub(crate) bulk_active: AtomicBool,

    // The durable list of files (manifest.rs).
    pub(crate) manifest: Mutex<Option<Manifest>>,

    // Subsystems that own their state behind verbs.
    /// Sequence numbers, the writers' queue and what readers see (`commit::Pipeline`).
    pub(crate) commit: commit::Pipeline,
    /// The flush and compaction threads' shared state, their wake-ups and
    /// handles (`background::Background`).
    pub(crate) bg: background::Background,
    /// What the value-log GC owns: its lock, samples, head target and the
    /// record of sealed heads (`gc::GcState`).
    pub(crate) gc: gc::GcState,
    /// The keyspace catalog: open handles, ids, codecs for table builds. Its
    /// lock orders keyspace creates and drops (outermost); its codecs' lock is
    /// innermost.
    pub(crate) catalog: catalog::Catalog,
    /// Value-log files a checkpoint is linking, and removals deferred meanwhile.
    pub(crate) holds: Mutex<checkpoint::FileHolds>,
    /// The change feed's hub (see `crate::feed`).
    pub(crate) feed: Arc<Feed>,
}

/// Keeps versions at `seq` from being dropped by compaction while it lives.
pub(crate) struct SnapshotGuard {
    db: Arc<DbInner>,
    seq: u64,
}

impl SnapshotGuard {
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        let mut s = lock(&self.db.snapshots);
        if let Some(n) = s.get_mut(&self.seq) {
            *n -= 1;
            if *n == 0 {
                s.remove(&self.seq);
            }
        }
    }
}

/// A lookup this slow waited on the device (a page-cache hit of a table
/// block or a value is a few microseconds; a read from an SSD, tens). In the
/// crate's unit tests every lookup counts as slow, so that multi-gets take
/// the device's path (`DbInner::get_many_from_device`) and they cover it.
const DEVICE_READ: std::time::Duration = if cfg!(test) {
    std::time::Duration::ZERO
} else {
    std::time::Duration::from_micros(30)
};

/// An open database. Cheap to share between threads (`&Db` is enough for every
/// operation). Dropping it closes it.
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
}

impl Db {
    /// Opens (or creates) the database described by `opts`, recovering from the
    /// manifest and the WALs. See the crate docs for what recovery guarantees.
    pub fn open(opts: Options) -> Result<Db> {
        Ok(Db {
            inner: recovery::open(opts)?,
        })
    }

    /// The value of `key`, or `None` if it has none (or it expired).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.inner.get_entry(key)?.map(|i| i.value))
    }

    /// The value of `key` with its user meta, expiry and version.
    pub fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
        self.inner.get_entry(key)
    }

    /// Stores `key` → `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    /// Stores `key` → `value` with user meta and/or a time to live.
    pub fn put_with(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_with(key, value, opts);
        self.write(b)
    }

    /// Merges `operand` into `key`: the Db's merge operator
    /// ([`Options::merge_operator`]) folds it onto the key's value when the
    /// key is read (or compacted), so a counter increment or an append costs
    /// a write and no read. Operands are stored inline (never in the value
    /// log) and limited to `max_value_size`. A Db opened without an operator
    /// refuses it ([`Error::MergeOperatorMissing`]).
    ///
    /// ```
    /// # fn main() -> sett::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let mut opts = sett::Options::new(dir.path());
    /// opts.merge_operator = Some(std::sync::Arc::new(sett::merge::U64Add));
    /// let db = sett::Db::open(opts)?;
    /// db.merge(b"hits", &1u64.to_le_bytes())?;
    /// db.merge(b"hits", &2u64.to_le_bytes())?;
    /// assert_eq!(db.get(b"hits")?, Some(3u64.to_le_bytes().to_vec()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(b)
    }

    /// [`Db::merge`], then reads `key` just below and at the version the
    /// merge committed at: what it was merged onto, and what it made,
    /// whatever other writers do meanwhile. A caller that must answer with
    /// the value its own merge produced (a counter's `INCR`) gets it here
    /// without a transaction, so concurrent callers never wait on or retry
    /// against each other. A snapshot taken before the write keeps both
    /// versions from being folded together by compaction until they are read.
    pub fn merge_and_read(&self, key: &[u8], operand: &[u8]) -> Result<MergeRead> {
        let inner = &self.inner;
        inner.check_open()?;
        inner.check_user_key(key)?;
        // At or below the merge's version, taken before it is handed out.
        let _pin = inner.snapshot_at(inner.commit.visible());
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        let version = inner.write_seq(WriterKind::Batch(b), None)?;
        // The write is applied and visible: a state taken now holds it.
        let st = inner.read_state();
        let before = inner.get_in(&st, key, version.saturating_sub(1))?;
        let after = inner.get_in(&st, key, version)?;
        Ok(MergeRead {
            version,
            before,
            after,
        })
    }

    /// Removes `key` (a no-op if it is absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Applies a batch atomically. Concurrent callers are grouped into one WAL
    /// append and, with `sync_writes`, one fsync.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write(WriterKind::Batch(batch), None)
    }

    /// Reads the values of many keys at one consistent point.
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let inner = &self.inner;
        inner.get_many_storage(keys.iter().map(|k| inner.check_user_key(k).map(|()| k)))
    }

    /// An iterator over a snapshot of the Db taken now.
    /// It walks the default keyspace: keys below `FF FF FF FF` (the prefix
    /// reserved for [`Db::keyspace`]s), whatever its bounds say.
    pub fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
        self.inner.iter(opts, None, None, Region::Default)
    }

    /// Makes the active memtable immutable and waits until every memtable is
    /// flushed to a table.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// fsyncs the value log and the WAL now, so that every write acknowledged
    /// so far survives a machine crash. For a Db opened without
    /// [`Options::sync_writes`] that syncs on a timer (a server's `everysec`).
    pub fn sync(&self) -> Result<()> {
        self.inner.sync_logs()
    }

    /// Makes a new data key ([`Options::encryption`]) and returns its id:
    /// files created from now on are encrypted with it; files written
    /// before keep their keys, which stay in the key registry. The new key
    /// is durable before this returns. Data already on disk is not
    /// re-encrypted: it moves to the new key as compaction and value-log
    /// GC rewrite it. [`Error::InvalidArgument`] on a Db without
    /// encryption, [`Error::ReadOnly`] on a read-only one.
    pub fn rotate_encryption_key(&self) -> Result<u32> {
        self.inner.check_open()?;
        self.inner.check_writable()?;
        match self.inner.opts.fs.keys() {
            Some(keys) => keys.rotate(),
            None => Err(Error::InvalidArgument(
                "rotate_encryption_key on a database without encryption".into(),
            )),
        }
    }

    /// Rewrites the value-log file with the largest share of garbage if that
    /// share is at least `discard_ratio` (in (0, 1)), and deletes it. Run it in a
    /// loop until it returns [`GcOutcome::NothingToCollect`].
    pub fn run_value_log_gc(&self, discard_ratio: f64) -> Result<GcOutcome> {
        self.inner.run_value_log_gc(discard_ratio)
    }

    /// One round of the background GC's idle tier (a walk over the tree, then
    /// files at `vlog_gc_idle_ratio` or scattered, moved in key order), as its
    /// thread runs one once the Db is idle: for tests that must place a
    /// power cut or a fault inside one. Returns what happened to each file.
    #[doc(hidden)]
    pub fn run_idle_gc_round(&self) -> Result<Vec<GcOutcome>> {
        self.inner.check_writable()?;
        self.inner.run_idle_gc_round()
    }

    /// Flushes the memtables and compacts every level into the last one.
    pub fn flatten(&self) -> Result<()> {
        self.inner.flatten()
    }

    /// Deletes every key (tables and value-log files go, nothing is rewritten).
    /// Keyspaces go too: their handles fail from then on.
    pub fn drop_all(&self) -> Result<()> {
        self.inner.catalog.drop_all(|| self.inner.drop_all())
    }

    /// Deletes every key starting with `prefix`: one range delete over the
    /// prefix ([`Db::delete_range`]), so it is atomic (readers and a reopen
    /// after a crash see every key of the prefix or none), ordered like any
    /// write (it removes every write ordered before it and none ordered
    /// after it), and writers do not wait. Compaction reclaims the space
    /// later ([`Db::flatten`] at once). An empty prefix is [`Db::drop_all`].
    ///
    /// It stays in the default keyspace: an empty prefix with keyspaces in
    /// the Db is a range delete of every key below `FF FF FF FF`, and a
    /// prefix starting with those bytes is refused.
    pub fn drop_prefix(&self, prefix: &[u8]) -> Result<()> {
        if crate::keyspace::is_reserved(prefix) {
            return Err(crate::keyspace::reserved_error("prefix", prefix));
        }
        if prefix.is_empty() && !self.inner.has_keyspace_keys()? {
            return self.inner.drop_all();
        }
        self.inner.check_range(prefix, &[])?;
        let mut b = WriteBatch::new();
        // An all-0xff prefix has no successor: the range stops at the keyspaces.
        b.delete_range(prefix, key::prefix_successor(prefix).unwrap_or_default());
        self.write(b)
    }

    /// Table data blocks (of the live tables) whose last storage key starts
    /// with `prefix`, and how many of them are stored compressed:
    /// (blocks, compressed). For tests of per-keyspace codecs.
    #[doc(hidden)]
    pub fn compressed_blocks(&self, prefix: &[u8]) -> Result<(u64, u64)> {
        self.inner.check_open()?;
        let st = self.inner.read_state();
        let (mut blocks, mut compressed) = (0, 0);
        for t in st.version.levels.iter().flatten() {
            let (b, c) = t.compressed_blocks(prefix)?;
            blocks += b;
            compressed += c;
        }
        Ok((blocks, compressed))
    }

    /// The drop of [`Db::drop_prefix`] before range deletes: rewrites every
    /// table holding keys of the prefix while writes wait. Kept for the
    /// benchmark that compares the two (`sett-bench range-delete`).
    #[doc(hidden)]
    pub fn drop_prefix_rewriting(&self, prefix: &[u8]) -> Result<()> {
        self.inner.drop_prefix(prefix)
    }

    /// Deletes every key in `[start, end)` with one record (a range
    /// tombstone, RocksDB's DeleteRange), however many keys the range holds.
    /// It is a write like a put: ordered with other writes, atomic, as
    /// durable as `sync_writes` makes it, and writers do not wait for it.
    /// Reads, iterators and snapshots taken before it still see the keys.
    /// Compaction drops the deleted versions later (their value-log bytes
    /// count as garbage for GC); [`Db::flatten`] does it at once.
    /// An empty `end` means no upper bound; otherwise `start < end` is
    /// required ([`Error::InvalidArgument`]). A read-write transaction that
    /// read any key and commits after a range delete committed past its
    /// start fails with [`Error::Conflict`] (the oracle tracks keys by
    /// fingerprint, not by place; see core/FORMAT.md).
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(b)
    }

    /// Makes an openable copy of the Db in `target`, a directory that must not
    /// exist (its parent must), while writes go on: tables and sealed
    /// value-log files are hard-linked (copied where the file system cannot
    /// link), so it takes about as long as a flush. It holds every write
    /// acknowledged before the call, and is a prefix of the write order.
    /// A read-only Db links the files its MANIFEST lists and copies the WALs
    /// its open replayed. An interrupted checkpoint leaves a directory that
    /// [`Db::open`] refuses (it holds [`CHECKPOINT_MARKER`]); the format and
    /// protocol are in core/FORMAT.md ("Checkpoint directory").
    pub fn checkpoint(&self, target: impl AsRef<Path>) -> Result<CheckpointReport> {
        self.inner.checkpoint(target.as_ref())
    }

    /// Subscribes to the change feed: every write committed from now on (or
    /// after `opts.from`) under `opts.prefixes`, in version order, each
    /// delivered once, after it became visible to reads; the ops of a batch
    /// or transaction share its version. See [`Subscription::next`].
    ///
    /// A write never waits on a subscriber: it pushes to the subscriber's
    /// queue under a short lock that the subscriber holds only to take its
    /// queue. A subscriber whose undelivered changes would pass
    /// `max_pending_bytes` loses them and gets [`Error::FellBehind`] with the
    /// version to resubscribe `from`. Resuming works while that version is in
    /// the history ([`Options::change_feed_history_bytes`]); otherwise
    /// [`Error::FeedHistoryTooShort`] names the oldest version it holds. Then,
    /// as for a subscriber that starts from scratch, rescan:
    ///
    /// 1. `let sub = db.subscribe(SubscribeOptions::default())?` (from now);
    /// 2. `let snap = db.begin(false)?`, scan with `snap.iter(..)`, and note
    ///    `let at = snap.read_ts()`;
    /// 3. apply the changes `sub` delivers whose version is above `at`
    ///    (those at or below are already in the scan).
    ///
    /// A range delete ([`Db::delete_range`], [`Db::drop_prefix`]) is one
    /// [`ChangeKind::DeleteRange`](crate::ChangeKind::DeleteRange) change.
    /// A bulk load and [`Db::drop_all`] are not
    /// delivered as changes: they end every live subscription with
    /// [`Error::FellBehind`] and the history restarts after them, so
    /// resuming fails and the subscriber rescans. Value-log GC is not a
    /// change. Closing the Db ends subscriptions with [`Error::Closed`] once
    /// their queued changes are taken. Subscribing waits for a write group
    /// in progress (it takes the log lock so that no group is between its
    /// capture and the start of the subscription).
    ///
    /// ```no_run
    /// use sett::{Db, Error, Options, SubscribeOptions};
    /// # fn main() -> sett::Result<()> {
    /// let db = Db::open(Options::new("/tmp/sett-feed-example"))?;
    /// let mut from = None;
    /// loop {
    ///     let sub = db.subscribe(SubscribeOptions {
    ///         prefixes: vec![b"user/".to_vec()],
    ///         from,
    ///         ..SubscribeOptions::default()
    ///     })?;
    ///     loop {
    ///         match sub.next(None) {
    ///             Ok(Some(changes)) => {
    ///                 for c in changes {
    ///                     println!("{:?} {:?} at {}", c.kind, c.key, c.version);
    ///                 }
    ///             }
    ///             Ok(None) => {}
    ///             Err(Error::FellBehind { resume_from }) => {
    ///                 from = Some(resume_from);
    ///                 break;
    ///             }
    ///             Err(Error::Closed) => return Ok(()),
    ///             Err(e) => return Err(e),
    ///         }
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// Changes to keyspaces ([`Db::keyspace`]) are not delivered to it (nor
    /// to any subscription whose prefixes do not start with `FF FF FF FF`):
    /// subscribe to a keyspace with [`crate::Keyspace::subscribe`].
    pub fn subscribe(&self, opts: SubscribeOptions) -> Result<Subscription> {
        subscribe(&self.inner, opts, 0)
    }

    /// The newest version visible to reads: what a read or iterator begun now sees.
    pub fn last_version(&self) -> u64 {
        self.inner.commit.visible()
    }

    /// Counts and sizes of levels, value log, memtables and in-memory indexes.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// True once [`Db::close`] has run.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Checks every checksum of the Db: each table block, and each value-log
    /// entry that a live version points to. The first damage found is returned
    /// as [`Error::Corruption`] naming the file and offset.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.inner.verify()
    }

    /// The directory of this Db.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The options this Db was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Flushes memtables, waits for background work and releases the directory.
    /// Later calls on this Db return [`Error::Closed`]; closing twice is a no-op.
    /// Returns the error that poisoned the Db, if one did.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

/// Subscribes to the change feed; delivered keys lose their first `strip`
/// bytes (a keyspace's prefix).
pub(crate) fn subscribe(
    inner: &DbInner,
    opts: SubscribeOptions,
    strip: usize,
) -> Result<Subscription> {
    inner.check_open()?;
    let _log = lock(&inner.log);
    inner.check_open()?;
    let now = inner.commit.visible();
    inner.feed.subscribe(opts, now, strip)
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner.close();
    }
}

impl DbInner {
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        Ok(())
    }

    /// `held` with the value-log files started since it was taken. A read
    /// state's memtable is shared and keeps taking writes; the ones it can see
    /// are those at or below its sequence, which value-log GC's moves are
    /// (a move keeps its key's version), and a move may point into a head
    /// file started after the state was taken (by a rotation, or by GC
    /// sealing the head).
    pub(crate) fn vlogs_for(&self, held: &VlogSet) -> VlogSet {
        held.union(&self.read_state().vlogs)
    }

    pub(crate) fn read_state(&self) -> Arc<ReadState> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn update_state(&self, f: impl FnOnce(&ReadState) -> ReadState) {
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        *st = Arc::new(f(&st));
    }

    pub(crate) fn now(&self) -> u64 {
        self.opts.clock.now()
    }

    /// Checks a key of the default keyspace from a caller: as `check_key`,
    /// and not in the keyspaces' reserved region.
    pub(crate) fn check_user_key(&self, key: &[u8]) -> Result<()> {
        self.check_key(key)?;
        if crate::keyspace::is_reserved(key) {
            return Err(crate::keyspace::reserved_error("key", key));
        }
        Ok(())
    }

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Err(Error::InvalidArgument("empty key".into()));
        }
        if key.len() > self.opts.max_key_size {
            return Err(Error::TooBig {
                what: "key",
                len: key.len(),
                max: self.opts.max_key_size,
            });
        }
        Ok(())
    }

    /// Checks the bounds of a range delete: each at most `max_key_size`,
    /// `start < end`; an empty `end` (unbounded) only from inside the crate.
    pub(crate) fn check_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        self.check_range_in(start, end, 0)
    }

    /// [`DbInner::check_range`] for bounds that carry a `prefix`-byte
    /// keyspace prefix beyond the key limit.
    pub(crate) fn check_range_in(&self, start: &[u8], end: &[u8], prefix: usize) -> Result<()> {
        for (what, k) in [("range start", start), ("range end", end)] {
            let len = k.len().saturating_sub(prefix);
            if len > self.opts.max_key_size {
                return Err(Error::TooBig {
                    what,
                    len,
                    max: self.opts.max_key_size,
                });
            }
        }
        if !end.is_empty() && start >= end {
            return Err(Error::InvalidArgument(format!(
                "range delete needs start < end, got start {start:?} and end {end:?}"
            )));
        }
        Ok(())
    }

    fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
        self.check_open()?;
        self.check_user_key(key)?;
        // State first, then the sequence: see DbInner::iter.
        let st = self.read_state();
        let seq = self.commit.visible();
        self.get_in(&st, key, seq)
    }

    /// Reads `key` at `read_seq` from `st`; tombstones and expired entries
    /// read as absent. The caller has checked the key.
    pub(crate) fn get_in(&self, st: &ReadState, key: &[u8], read_seq: u64) -> Result<Option<Item>> {
        match st.lookup(key, read_seq)? {
            Some(found) => self.item_of(st, key, found, read_seq),
            None => Ok(None),
        }
    }

    /// What a read at `read_seq` of `key` returns, given the newest version
    /// it sees, `(version, value record)`: the value (read from the value
    /// log if it is there, folded if it is a merge operand), or none.
    fn item_of(
        &self,
        st: &ReadState,
        key: &[u8],
        (version, raw): (u64, Vec<u8>),
        read_seq: u64,
    ) -> Result<Option<Item>> {
        let rec = value::decode(&raw).ok_or_else(|| {
            Error::corruption(
                &self.dir,
                0,
                format!("undecodable value record for key {key:?}"),
            )
        })?;
        if rec.stored.is_merge() {
            return self.fold_at(st, key, (version, &raw), read_seq);
        }
        if rec.expired(self.now()) {
            return Ok(None);
        }
        let value = match rec.stored {
            Stored::Merge(_) | Stored::Delete => return Ok(None),
            Stored::Inline(v) => v.to_vec(),
            Stored::Pointer(p) if st.vlogs.get(p.file).is_none() => {
                self.vlogs_for(&st.vlogs).read(p, &self.dir)?
            }
            Stored::Pointer(p) => st.vlogs.read(p, &self.dir)?,
        };
        Ok(Some(Item {
            value,
            user_meta: rec.user_meta,
            expires_at: rec.expires_at,
            version,
        }))
    }

    /// Folds the merge operand `top` of `key` and the operands under it
    /// onto their base, as a read at `read_seq` sees them. The result
    /// carries the base's user meta and expiry (none without a put under
    /// the operands) and the top's version.
    fn fold_at(
        &self,
        st: &ReadState,
        key: &[u8],
        top: (u64, &[u8]),
        read_seq: u64,
    ) -> Result<Option<Item>> {
        let mut below = Vec::new();
        st.lookup_below(key, top, read_seq, &mut below)?;
        let undecodable = || {
            Error::corruption(
                &self.dir,
                0,
                format!("undecodable value record for key {key:?}"),
            )
        };
        let mut operands = Vec::with_capacity(below.len() + 1);
        let mut base = None;
        for raw in std::iter::once(top.1).chain(below.iter().map(|(_, r)| &r[..])) {
            let rec = value::decode(raw).ok_or_else(undecodable)?;
            match rec.stored {
                Stored::Merge(op) => operands.push(op),
                _ => base = Some(rec),
            }
        }
        let (mut user_meta, mut expires_at) = (0, 0);
        let base_value = match base {
            Some(rec) if !rec.expired(self.now()) => {
                (user_meta, expires_at) = (rec.user_meta, rec.expires_at);
                match rec.stored {
                    Stored::Inline(v) => Some(v.to_vec()),
                    Stored::Pointer(p) if st.vlogs.get(p.file).is_none() => {
                        Some(self.vlogs_for(&st.vlogs).read(p, &self.dir)?)
                    }
                    Stored::Pointer(p) => Some(st.vlogs.read(p, &self.dir)?),
                    Stored::Delete | Stored::Merge(_) => {
                        (user_meta, expires_at) = (0, 0);
                        None
                    }
                }
            }
            _ => None,
        };
        let value = crate::merge::resolve(
            self.opts.merge_operator.as_deref(),
            key,
            base_value.as_deref(),
            operands,
        )?;
        Ok(Some(Item {
            value,
            user_meta,
            expires_at,
            version: top.0,
        }))
    }

    /// Reads storage keys at one consistent point, answers in the order
    /// asked; a key `keys` refuses fails the whole read with its error.
    ///
    /// Keys are read one after another while each read is quick (in memory,
    /// about a microsecond). Once one takes as long as a device read
    /// (`DEVICE_READ`), or from the first key when the last multi-get
    /// waited on the device, the rest of the batch is read in rounds that
    /// keep the device busy with all of it (`get_many_from_device`).
    pub(crate) fn get_many_storage<K: AsRef<[u8]>>(
        &self,
        keys: impl Iterator<Item = Result<K>>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let keys: Vec<K> = keys.collect::<Result<_>>()?;
        // State first, then the sequence: see DbInner::iter.
        let st = self.read_state();
        let seq = self.commit.visible();
        if keys.len() >= 3 && self.counters.multi_get_on_device.load(Ordering::Relaxed) {
            return self.get_many_from_device(&st, &keys, seq);
        }
        let mut out = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            let started = Instant::now();
            out.push(self.get_in(&st, k.as_ref(), seq)?.map(|i| i.value));
            let rest = &keys[i + 1..];
            if rest.len() >= 2 && started.elapsed() >= DEVICE_READ {
                out.extend(self.get_many_from_device(&st, rest, seq)?);
                break;
            }
        }
        Ok(out)
    }

    /// [`DbInner::get_many_storage`] in two rounds of reads that the device
    /// serves together instead of one after another (as RocksDB's MultiGet
    /// reads a batch's blocks, then its blobs). First every key's filters
    /// are checked and the data block its lookup will search is asked for
    /// (POSIX_FADV_WILLNEED: the kernel submits the read and returns); then
    /// the keys are looked up, each finding its block in the page cache or
    /// in flight, and the value-log entry each points to is asked for the
    /// same way; then the values are read. One thread: the batch's reads are
    /// in flight together without a thread per read (a thread would cost
    /// more than a lookup in memory, and two cores run only two at once).
    ///
    /// Records whether the batch waited on the device (a quarter of
    /// `DEVICE_READ` a key or more: in memory a key costs a few microseconds
    /// even at 16 KiB), for the next multi-get to start here or not.
    fn get_many_from_device<K: AsRef<[u8]>>(
        &self,
        st: &ReadState,
        keys: &[K],
        seq: u64,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let started = Instant::now();
        for k in keys {
            st.will_need(k.as_ref(), seq)?;
        }
        let mut found = Vec::with_capacity(keys.len());
        for k in keys {
            let f = st.lookup(k.as_ref(), seq)?;
            let stored = f
                .as_ref()
                .and_then(|(_, raw)| value::decode(raw))
                .map(|r| r.stored);
            if let Some(Stored::Pointer(p)) = stored {
                st.vlogs.will_need(p);
            }
            found.push(f);
        }
        let out = keys
            .iter()
            .zip(found)
            .map(|(k, f)| match f {
                Some(f) => Ok(self.item_of(st, k.as_ref(), f, seq)?.map(|i| i.value)),
                None => Ok(None),
            })
            .collect();
        let waited = started.elapsed() >= DEVICE_READ / 4 * keys.len() as u32;
        self.counters
            .multi_get_on_device
            .store(waited, Ordering::Relaxed);
        out
    }

    /// Registers a reader at `seq` so that compaction keeps what it may read.
    pub(crate) fn snapshot_at(self: &Arc<Self>, seq: u64) -> SnapshotGuard {
        let mut s = lock(&self.snapshots);
        *s.entry(seq).or_insert(0) += 1;
        SnapshotGuard {
            db: self.clone(),
            seq,
        }
    }

    /// The oldest sequence any reader may still read at.
    pub(crate) fn smallest_snapshot(&self) -> u64 {
        let s = lock(&self.snapshots);
        let now = self.commit.visible();
        s.keys().next().copied().unwrap_or(now).min(now)
    }

    /// An iterator at `read_seq` (default: now) over `state` (default: the
    /// current one), with a transaction's pending writes merged in.
    pub(crate) fn iter(
        self: &Arc<Self>,
        opts: IterOptions,
        at: Option<(u64, Arc<ReadState>)>,
        txn: Option<crate::iter::TxnView>,
        region: Region<'_>,
    ) -> Result<DbIterator> {
        self.check_open()?;
        let (seq, st) = match at {
            Some(x) => x,
            // The state first, then the sequence. Flushes and compactions drop
            // versions older than the newest one at or below the oldest
            // snapshot, taken when they start; a state taken first holds only
            // tables built before the sequence is read, so that sequence is at
            // or above every snapshot they used. The other order lets a reader
            // that stalls between the two read a table built past its sequence,
            // without the versions it needs (the bank test saw a scan with a
            // wrong total).
            None => {
                let st = self.read_state();
                (self.commit.visible(), st)
            }
        };
        let snap = self.snapshot_at(seq);
        let mut sources = Vec::new();
        let mut reads = None;
        let mut ranges = Arc::new(Vec::new());
        if let Some(view) = txn {
            sources.push(Box::new(PendingIter::new(view.pending, opts.reverse)) as Box<dyn Source>);
            reads = view.reads;
            ranges = view.ranges;
        }
        let walk = region.bounds(&opts);
        sources.extend(st.sources(opts.reverse, walk.lower.as_deref(), walk.upper.as_deref()));
        let merge = MergeIter::new(sources, opts.reverse);
        DbIterator::new(
            self.clone(),
            st.vlogs.clone(),
            merge,
            (st.range_dels.clone(), ranges),
            snap,
            reads,
            (opts, walk),
        )
    }

    fn stats(&self) -> Stats {
        let (gc_pending_files, gc_pending_bytes) = self.gc_due();
        let gc = self.gc.counts();
        let st = self.read_state();
        let cache = self.cache.stats();
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.iter().map(|(&id, &b)| (id, b)).collect())
            .unwrap_or_default();
        let levels = st.version.levels.len();
        Stats {
            levels: st
                .version
                .levels
                .iter()
                .map(|l| (l.len(), l.iter().map(|t| t.size()).sum()))
                .collect(),
            vlog_files: st.vlogs.len(),
            vlog_bytes: st.vlogs.total_bytes(),
            memtable_bytes: st.mem.size() + st.imm.iter().map(|m| m.size()).sum::<usize>(),
            immutable_memtables: st.imm.len(),
            index_filter_bytes: st.version.levels.iter().flatten().map(|t| t.memory()).sum(),
            cache_capacity: cache.capacity,
            cache_usage: cache.usage,
            cache_pinned_bytes: cache.pinned,
            cache_index_filter_hits: cache.meta_hits,
            cache_index_filter_misses: cache.meta_misses,
            cache_data_hits: cache.data_hits,
            cache_data_misses: cache.data_misses,
            last_seq: self.commit.visible(),
            table_entries: st
                .version
                .levels
                .iter()
                .flatten()
                .map(|t| t.entries())
                .sum(),
            batches_written: self.counters.batches.load(Ordering::Relaxed),
            write_groups: self.counters.groups.load(Ordering::Relaxed),
            wal_syncs: self.counters.wal_syncs.load(Ordering::Relaxed),
            vlog_discard: discard,
            compactions_pending: crate::levels::compaction::due(
                &st.version,
                &self.opts,
                self.bg
                    .is_idle(self.counters.batches.load(Ordering::Relaxed)),
            )
            .len() as u64,
            compactions_running: self.counters.compactions_running.load(Ordering::Relaxed),
            gc_files_rewritten: gc.files_rewritten,
            gc_files_deleted: gc.files_deleted,
            gc_bytes_reclaimed: gc.bytes_reclaimed,
            gc_micros: gc.micros,
            gc_walks: gc.walks,
            gc_pending_files,
            gc_pending_bytes,
            gc_damaged_files: self.gc_damaged_files(),
            range_tombstones: st.range_dels.iter().count(),
            level_bytes_written: Counters::per_level(&self.counters.level_written, levels),
            level_bytes_read: Counters::per_level(&self.counters.level_read, levels),
            wal_bytes_written: self.counters.wal_bytes.load(Ordering::Relaxed),
            gc_bytes_moved: self.counters.gc_moved_bytes.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly);
        }
        self.check_open()?;
        if let Some(e) = lock(&self.poison).as_ref() {
            return Err(Error::Poisoned(e.to_string()));
        }
        Ok(())
    }

    pub(crate) fn poisoned(&self) -> Option<Error> {
        lock(&self.poison).clone()
    }

    pub(crate) fn poison_with(&self, e: &Error) {
        let mut p = lock(&self.poison);
        if p.is_none() {
            *p = Some(e.clone());
        }
        drop(p);
        self.bg.wake_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_keys(db: &Db, prefix: &[u8]) -> usize {
        let opts = IterOptions {
            prefix: Some(prefix.to_vec()),
            ..IterOptions::default()
        };
        let mut n = 0;
        for item in db.iter(opts).unwrap() {
            item.unwrap();
            n += 1;
        }
        n
    }

    #[test]
    fn a_bounded_scan_gets_sources_only_for_tables_that_meet_its_range() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.table_size = 4096;
        let db = Db::open(opts).unwrap();
        // "a" keys in the last level, over many small tables.
        // Two overlapping flushes, so that flatten merges (and splits) them
        // instead of moving one table down.
        for odd in [0, 1] {
            for i in (odd..400).step_by(2) {
                db.put(format!("a{i:04}").as_bytes(), &[1; 100]).unwrap();
            }
            db.flush().unwrap();
        }
        db.flatten().unwrap();
        // One L0 table of "b" keys and one of "c" keys; no compaction moves them.
        db.inner.bg.hold_compactions(true);
        for p in ["b", "c"] {
            for i in 0..10 {
                db.put(format!("{p}{i:04}").as_bytes(), &[2; 100]).unwrap();
            }
            db.flush().unwrap();
        }
        let st = db.inner.read_state();
        let last = st.version.levels.len() - 1;
        let level = &st.version.levels[last];
        assert!(level.len() > 4, "{} tables in the last level", level.len());
        assert_eq!(st.version.levels[0].len(), 2);

        // Unbounded: both L0 tables and the level; the empty memtable adds nothing.
        assert_eq!(st.sources(false, None, None).len(), 3);
        // Only the "b" table meets [b, c).
        assert_eq!(st.sources(false, Some(b"b"), Some(b"c")).len(), 1);
        assert_eq!(st.sources(true, Some(b"c"), None).len(), 1);
        // Only the level meets [a0100, a0110), and only a short run of it.
        assert_eq!(st.sources(false, Some(b"a0100"), Some(b"a0110")).len(), 1);
        let (from, to) = st.version.run(last, Some(b"a0100"), Some(b"a0110"));
        let meets: Vec<usize> = (0..level.len())
            .filter(|&i| {
                key::user_key(level[i].largest()) >= b"a0100".as_slice()
                    && key::user_key(level[i].smallest()) < b"a0110".as_slice()
            })
            .collect();
        assert_eq!((from..to).collect::<Vec<_>>(), meets);
        assert!(to - from <= 2 && to > from);
        // Nothing meets a range between the tables.
        assert!(st.sources(false, Some(b"a9"), Some(b"b")).is_empty());

        // A memtable with data is a source again.
        db.put(b"z", b"1").unwrap();
        let st = db.inner.read_state();
        assert_eq!(st.sources(false, Some(b"b"), Some(b"c")).len(), 2);

        // And the bounded scans still see what they must.
        assert_eq!(count_keys(&db, b"a010"), 10);
        assert_eq!(count_keys(&db, b"b"), 10);
        assert_eq!(count_keys(&db, b"a"), 400);
        let mut it = db
            .iter(IterOptions {
                prefix: Some(b"b".to_vec()),
                reverse: true,
                ..IterOptions::default()
            })
            .unwrap();
        assert_eq!(it.key(), b"b0009");
        it.seek(b"b0004").unwrap();
        assert_eq!(it.key(), b"b0004");
    }

    /// Copies every file of `from` into a new directory, as a process kill
    /// would leave them: what the kernel holds, mapped writes included.
    fn copy_files(from: &Path) -> tempfile::TempDir {
        let to = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
        }
        to
    }

    #[test]
    fn writes_through_the_mapped_wal_survive_the_process_without_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Options::new(dir.path())).unwrap();
        let key = |i: u32| format!("k{i:06}").into_bytes();
        for i in 0..2000 {
            db.put(&key(i), &[i as u8; 100]).unwrap();
        }
        // A batch past the copy limit goes by pwrite between mapped appends.
        let mut b = WriteBatch::new();
        for i in 2000..2500 {
            b.put(key(i), vec![i as u8; 100]);
        }
        db.write(b).unwrap();
        for i in 2500..3000 {
            db.put(&key(i), &[i as u8; 100]).unwrap();
        }
        db.delete(&key(5)).unwrap();
        let copy = copy_files(dir.path());
        let wal_len = std::fs::read_dir(copy.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "wal"))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .max()
            .unwrap();
        assert!(
            wal_len.is_multiple_of(1 << 20),
            "the WAL ({wal_len} bytes) was not allocated ahead for mapped appends"
        );
        let reopened = Db::open(Options::new(copy.path())).unwrap();
        for i in 0..3000 {
            let want = (i != 5).then(|| vec![i as u8; 100]);
            assert_eq!(reopened.get(&key(i)).unwrap(), want, "key {i}");
        }
        reopened.close().unwrap();
        db.close().unwrap();
    }

    #[test]
    fn a_multi_get_from_the_device_asks_for_each_block_and_value_before_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.value_threshold = 64;
        let key = |i: u32| format!("k{i:05}").into_bytes();
        let db = Db::open(opts.clone()).unwrap();
        for i in 0..3000u32 {
            db.put(&key(i), &[i as u8; 200]).unwrap();
        }
        db.close().unwrap();
        // Reopened: nothing of the tables is in the block cache.
        let db = Db::open(opts).unwrap();
        // 32 keys a table block apart (about 100 entries a block), and 4
        // never written.
        let keys: Vec<Vec<u8>> = (0..32u32)
            .map(|i| key(i * 93))
            .chain((0..4).map(|i| format!("k{i:05}x").into_bytes()))
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        crate::advice::FD_HINTS.with(|n| n.set(0));
        let got = db.get_many(&refs).unwrap();
        let hints = crate::advice::FD_HINTS.with(|n| n.get());
        for (i, v) in got.iter().enumerate() {
            let want = (i < 32).then(|| vec![(i as u32 * 93) as u8; 200]);
            assert_eq!(v, &want, "key {i}");
        }
        // The first key is read plainly (it finds the device slow; in tests
        // any lookup counts as slow). Each later key that exists asks for
        // its value and, unless a key before it read the same block, for
        // its block.
        assert!(
            hints >= 31 + 24,
            "{hints} reads asked for ahead, for 31 values and about 31 blocks"
        );
        db.close().unwrap();
    }

    #[test]
    fn a_multi_get_that_fans_out_answers_each_key_in_the_order_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.value_threshold = 64;
        let db = Db::open(opts).unwrap();
        // Inline values, value-log values, and keys never written.
        for i in 0..300u32 {
            if i % 5 != 0 {
                let v = vec![i as u8; if i % 2 == 0 { 16 } else { 200 }];
                db.put(format!("k{i:04}").as_bytes(), &v).unwrap();
            }
        }
        db.flush().unwrap();
        // Newer versions in the memtable: overwrites, deletes and a range
        // delete over flushed keys.
        for i in (0..300u32).step_by(7) {
            db.put(format!("k{i:04}").as_bytes(), &[0xee; 100]).unwrap();
        }
        for i in (0..300u32).step_by(11) {
            db.delete(format!("k{i:04}").as_bytes()).unwrap();
        }
        db.delete_range(b"k0100", b"k0120").unwrap();
        let keys: Vec<Vec<u8>> = (0..400u32)
            .map(|i| format!("k{:04}", (i * 7919) % 320).into_bytes())
            .collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let want: Vec<Option<Vec<u8>>> = refs.iter().map(|k| db.get(k).unwrap()).collect();
        assert!(want.iter().any(Option::is_none) && want.iter().any(Option::is_some));
        assert_eq!(db.get_many(&refs).unwrap(), want);
        db.close().unwrap();
    }
}
