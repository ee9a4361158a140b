//! Liveness of value-log entries by one walk over the tree.
//!
//! The GC's usual test of an entry is a lookup of its key: cheap for a few
//! young files whose keys sit in memtables and cached blocks, but one random
//! table read per entry once the tables no longer fit in memory. An idle Db
//! whose value log holds garbage spread thin over every file (a load that
//! overwrote random keys leaves about a third of each file dead) would make
//! an idle GC that looks entries up spend its time in those reads, one
//! device read per entry against tables evicted from memory (see
//! docs/gc-pacing.md).
//!
//! A walk reads the tree once, in key order, as a compaction reads its
//! inputs (sequential reads, no cache fill), and takes the newest visible
//! version of every key at one sequence: it counts the live bytes of every
//! value-log file (exact garbage shares, which replace the samples' guesses)
//! and records the live entries of the files asked for (40 bytes each,
//! outside `cache_size`: the GC asks for at most 1M of them, `gc::WALK_ENTRIES`). The GC then moves
//! what the walk recorded without a lookup per entry; the write leader still
//! checks each move, but against the memtables only while no table holds a
//! version newer than the walk (`Walked::seq`): every write after the walk is
//! then in a memtable (see `write::write_moves`).

use super::*;
use crate::iter::{MemIter, MergeIter, Source};
use crate::table::TableIter;
use crate::value::{self, Stored};
use std::collections::{HashMap, HashSet};

/// A live value-log entry found by a walk: what its move must carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveEntry {
    pub offset: u64,
    /// The entry's length: past damage, the GC reads it by its pointer.
    pub len: u32,
    pub version: u64,
    pub expires_at: u64,
    pub user_meta: u8,
    /// The entry is the base of merge operands: its move must be checked,
    /// and the operands re-inserted with it, by a lookup (see
    /// `write::apply_moves`).
    pub under_merge: bool,
    /// Where the entry's key falls among those the walk recorded: the GC
    /// moves a round's entries in this order, so that the values it rewrites
    /// lie in key order (`collect::move_in_key_order`).
    pub rank: u32,
}

/// What a walk found.
#[derive(Default)]
pub(crate) struct Walked {
    /// The sequence the walk read at.
    pub seq: u64,
    /// `Counters::batches` when it started: writes since make it stale.
    pub batches: u64,
    /// Value-log bytes appended when it started (`GcEnv::vlog_appended`).
    pub appended: u64,
    /// Live entries of the files asked for, by offset.
    pub live: HashMap<u32, Vec<LiveEntry>>,
    /// Live entry bytes of every file met.
    pub live_bytes: HashMap<u32, u64>,
    /// Files whose live entries lie out of key order: read in key order
    /// they form more than `SORTED_MIN_RUNS` forward streams (`Streams`),
    /// shorter than `SORTED_RUN_BYTES` on average (values written in the
    /// order their random keys came). A forward scan reads them a value at
    /// a time, so the idle tier rewrites them in key order
    /// (`GcState::collect`).
    pub scattered: HashSet<u32>,
}

impl Walked {
    /// The live entry at `offset` of `file`, if the walk recorded the file and
    /// found one there.
    pub(crate) fn entry(&self, file: u32, offset: u64) -> Option<LiveEntry> {
        let entries = self.live.get(&file)?;
        let i = entries.binary_search_by_key(&offset, |e| e.offset).ok()?;
        entries.get(i).copied()
    }

    /// Whether the walk recorded every one of `files`.
    pub(crate) fn covers(&self, files: &[u32]) -> bool {
        files.iter().all(|f| self.live.contains_key(f))
    }
}

/// Walks the tree at the current sequence: live bytes of every value-log
/// file, and the live entries of `record` (entries that have expired at
/// `now` are not live).
pub(crate) fn walk_live<E: GcEnv>(env: &E, record: &HashSet<u32>) -> Result<Walked> {
    let batches = env.batches();
    // The state first, then the sequence (as `iter`): every table of the
    // state was built before the sequence was read.
    let st = env.read_state();
    let seq = env.visible_seq();
    let now = env.now();
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    for m in std::iter::once(&st.mem).chain(&st.imm) {
        if !m.has_no_entries() {
            sources.push(Box::new(MemIter::new(m.clone(), false, None, None)));
        }
    }
    for level in &st.version.levels {
        for t in level {
            sources.push(Box::new(TableIter::streaming(t.clone())));
        }
    }
    let mut merge = MergeIter::new(sources, false);
    merge.rewind()?;
    let mut walked = Walked {
        seq,
        batches,
        appended: 0,
        live: record.iter().map(|&f| (f, Vec::new())).collect(),
        live_bytes: HashMap::new(),
        scattered: HashSet::new(),
    };
    // Per file met: the forward streams its live entries form so far.
    let mut streams: HashMap<u32, Streams> = HashMap::new();
    let mut user_key: Vec<u8> = Vec::new();
    let mut have_key = false;
    // The key's visible versions so far are merge operands: the next one
    // decides.
    let mut under_merge = false;
    let mut rank = 0u32;
    while merge.valid() {
        env.check_open()?;
        let (uk, s) = key::split(merge.key());
        // Versions of one key come newest first: the first visible one
        // that is not a merge operand decides; the rest of the key's
        // versions are passed over.
        let same_key = have_key && uk == user_key.as_slice();
        if (same_key && !under_merge) || s > seq {
            merge.next()?;
            continue;
        }
        if !same_key {
            user_key.clear();
            user_key.extend_from_slice(uk);
            have_key = true;
            under_merge = false;
        }
        let below_operands = under_merge;
        if value::is_merge(merge.value()) {
            // A range tombstone under the operands ends them (nothing below is live).
            under_merge = !st.range_dels.hides(uk, s, seq);
            merge.next()?;
            continue;
        }
        under_merge = false;
        let rec = value::decode(merge.value()).ok_or_else(|| {
            Error::corruption(
                env.dir(),
                0,
                "undecodable value record met by the GC's walk",
            )
        })?;
        if let Stored::Pointer(p) = rec.stored {
            let live = !rec.expired(now) && !st.range_dels.hides(uk, s, seq);
            if live {
                *walked.live_bytes.entry(p.file).or_insert(0) += u64::from(p.len);
                streams.entry(p.file).or_default().push(p.offset);
                if let Some(entries) = walked.live.get_mut(&p.file) {
                    entries.push(LiveEntry {
                        offset: p.offset,
                        len: p.len,
                        version: s,
                        expires_at: rec.expires_at,
                        user_meta: rec.user_meta,
                        under_merge: below_operands,
                        rank,
                    });
                    rank = rank.saturating_add(1);
                }
            }
        }
        merge.next()?;
    }
    for entries in walked.live.values_mut() {
        entries.sort_unstable_by_key(|e| e.offset);
    }
    for (file, s) in streams {
        let live = walked.live_bytes.get(&file).copied().unwrap_or(0);
        let scattered = match s.count() {
            None => true,
            Some(n) => n > SORTED_MIN_RUNS && live / n < SORTED_RUN_BYTES,
        };
        if scattered {
            walked.scattered.insert(file);
        }
    }
    Ok(walked)
}

/// The forward streams a scan in key order reads one file's live entries
/// in: each entry continues the stream whose last offset is the highest
/// below its own (read ahead, that stream reaches it), or starts a stream.
/// A file written in key order is one stream; a file holding the outputs of
/// k GC rounds, whose keys interleave, is k, though its offsets go back at
/// almost every entry; a file written in random key order needs about as
/// many as the square root of its entries. Best fit on the highest tail
/// below gives the fewest streams (as patience sorting does).
#[derive(Default)]
struct Streams {
    /// The last offset of each stream, while there are at most
    /// `MAX_STREAMS`; empty once there are more.
    tails: Vec<u64>,
    many: bool,
}

/// Streams counted per file before it is simply scattered.
const MAX_STREAMS: usize = 16;

impl Streams {
    fn push(&mut self, offset: u64) {
        if self.many {
            return;
        }
        let best = (0..self.tails.len())
            .filter(|&i| self.tails[i] < offset)
            .max_by_key(|&i| self.tails[i]);
        match best {
            Some(i) => self.tails[i] = offset,
            None if self.tails.len() < MAX_STREAMS => self.tails.push(offset),
            None => {
                self.many = true;
                self.tails = Vec::new();
            }
        }
    }

    /// The streams, or None past `MAX_STREAMS`.
    fn count(&self) -> Option<u64> {
        (!self.many).then_some(self.tails.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(offsets: impl IntoIterator<Item = u64>) -> Option<u64> {
        let mut s = Streams::default();
        for o in offsets {
            s.push(o);
        }
        s.count()
    }

    #[test]
    fn streams_count_interleaved_sorted_outputs_as_few_and_random_order_as_many() {
        assert_eq!(streams(0..1000), Some(1));
        // Three key-ordered outputs whose keys interleave: the offsets go
        // back at two entries of three, yet three streams read them.
        let three = (0..1000u64).flat_map(|i| [i, 1000 + i, 2000 + i]);
        assert_eq!(streams(three), Some(3));
        // Random key order (a fixed permutation): past the count kept.
        let random = (0..10_000u64).map(|i| (i * 7919) % 10_007);
        assert_eq!(streams(random), None);
    }
    use crate::options::Options;

    fn opts(dir: &std::path::Path) -> Options {
        let mut o = Options::new(dir);
        o.value_threshold = 64;
        o.vlog_gc_ratio = 0.0;
        o
    }

    #[test]
    fn a_walk_finds_the_newest_pointer_of_each_key_and_nothing_shadowed_deleted_or_expired() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1_000));
        let mut o = opts(dir.path());
        o.clock = crate::options::Clock::manual(now.clone());
        let db = crate::Db::open(o).unwrap();
        let big = |c: u8| vec![c; 200];
        let ttl = crate::PutOptions {
            ttl: Some(std::time::Duration::from_secs(10)),
            ..Default::default()
        };
        db.put_with(b"e", &big(5), ttl).unwrap();
        db.put(b"a", &big(1)).unwrap();
        db.put(b"b", &big(2)).unwrap();
        db.put(b"c", &big(3)).unwrap();
        db.flush().unwrap();
        db.put(b"a", &big(4)).unwrap(); // shadows the first a
        db.delete(b"b").unwrap();
        db.put(b"d", b"inline").unwrap();
        now.store(1_011, std::sync::atomic::Ordering::Relaxed); // e has expired
        let inner = &db.inner;
        let st = inner.read_state();
        let files: HashSet<u32> = st.vlogs.all().map(|f| f.id()).collect();
        drop(st);
        let walked = walk_live(&**inner, &files).unwrap();
        let live: Vec<LiveEntry> = walked.live.values().flatten().copied().collect();
        assert_eq!(live.len(), 2, "the second a and c: {live:?}");
        let total: u64 = walked.live_bytes.values().sum();
        let entry_len = |k: &[u8], v: usize| (crate::vlog::ENTRY_HEADER_LEN + k.len() + v) as u64;
        assert_eq!(total, entry_len(b"a", 200) + entry_len(b"c", 200));
        // Each recorded entry is where the key's current pointer points.
        for (file, entries) in &walked.live {
            for e in entries {
                assert_eq!(walked.entry(*file, e.offset), Some(*e));
            }
        }
        assert!(walked.covers(&files.iter().copied().collect::<Vec<_>>()));
    }

    /// A move of `key`'s current entry as a walk found it, checked by the
    /// write leader with `walked_at` (the fast check) as the GC does.
    fn move_as_walked(db: &crate::Db, key: &[u8], walked: &Walked) -> crate::db::Move {
        let st = db.inner.read_state();
        let (version, raw) = st.lookup(key, crate::key::MAX_SEQ).unwrap().unwrap();
        let Stored::Pointer(old) = value::decode(&raw).unwrap().stored else {
            panic!("not separated");
        };
        assert!(
            walked.entry(old.file, old.offset).is_some(),
            "the walk found it live"
        );
        let value = db.get(key).unwrap().unwrap();
        crate::db::Move {
            key: key.to_vec(),
            value,
            version,
            user_meta: 0,
            expires_at: 0,
            old,
            walked_at: Some(walked.seq),
        }
    }

    fn walk_all(db: &crate::Db) -> Walked {
        let files: HashSet<u32> = db.inner.read_state().vlogs.all().map(|f| f.id()).collect();
        walk_live(&*db.inner, &files).unwrap()
    }

    fn pointer_of(db: &crate::Db, key: &[u8]) -> crate::value::ValuePointer {
        let (_, raw) = db
            .inner
            .read_state()
            .lookup(key, crate::key::MAX_SEQ)
            .unwrap()
            .unwrap();
        match value::decode(&raw).unwrap().stored {
            Stored::Pointer(p) => p,
            other => panic!("not separated: {other:?}"),
        }
    }

    /// Writes `k`, walks, runs `between`, then applies the move of `k`'s
    /// entry as the walk found it. Returns the Db, the entry's old pointer
    /// and the value-log bytes the move appended.
    fn move_after(
        dir: &std::path::Path,
        between: impl FnOnce(&crate::Db),
    ) -> (crate::Db, crate::value::ValuePointer, u64) {
        let db = crate::Db::open(opts(dir)).unwrap();
        db.put(b"k", &[7u8; 300]).unwrap();
        db.flush().unwrap();
        let walked = walk_all(&db);
        let m = move_as_walked(&db, b"k", &walked);
        let old = m.old;
        between(&db);
        let moved = || db.inner.counters.gc_moved_bytes.load(Ordering::Relaxed);
        let before = moved();
        db.inner
            .write(crate::db::WriterKind::Moves(vec![m]), None)
            .unwrap();
        let appended = moved() - before;
        (db, old, appended)
    }

    #[test]
    fn a_move_found_live_by_a_walk_is_applied_when_nothing_was_written_since() {
        let dir = tempfile::tempdir().unwrap();
        let (db, old, appended) = move_after(dir.path(), |_| {});
        assert_ne!(pointer_of(&db, b"k"), old, "the move took effect");
        assert!(appended > 0);
        assert_eq!(db.get(b"k").unwrap().unwrap(), vec![7u8; 300]);
    }

    #[test]
    fn a_move_found_live_by_a_walk_is_refused_after_an_overwrite_still_in_the_memtable() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _, appended) = move_after(dir.path(), |db| db.put(b"k", &[8u8; 300]).unwrap());
        assert_eq!(appended, 0, "nothing moved");
        assert_eq!(db.get(b"k").unwrap().unwrap(), vec![8u8; 300]);
    }

    #[test]
    fn a_move_found_live_by_a_walk_is_refused_after_an_overwrite_that_was_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _, _) = move_after(dir.path(), |db| {
            db.put(b"k", &[8u8; 300]).unwrap();
            db.flush().unwrap(); // the overwrite is in a table, none in the memtables
        });
        assert_eq!(db.get(b"k").unwrap().unwrap(), vec![8u8; 300]);
    }

    #[test]
    fn a_move_found_live_by_a_walk_is_refused_after_a_range_delete_over_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _, appended) = move_after(dir.path(), |db| db.delete_range(b"a", b"z").unwrap());
        assert_eq!(appended, 0, "nothing moved");
        assert_eq!(db.get(b"k").unwrap(), None);
    }

    /// Keys 0..n in a random order (xorshift), each once.
    fn shuffled(n: u64) -> Vec<u64> {
        let mut keys: Vec<u64> = (0..n).collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in (1..keys.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            keys.swap(i, (x % (i as u64 + 1)) as usize);
        }
        keys
    }

    /// Value-log positional reads per value of a forward scan of `db`, which
    /// must hold `value(k)` under every key of `keys`.
    fn scan_reads_per_value(db: &crate::Db, n: u64, value: impl Fn(u64) -> Vec<u8>) -> f64 {
        let before = crate::vlog::SCAN_READS.with(|c| c.get());
        let mut seen = 0u64;
        for item in db.iter(crate::IterOptions::default()).unwrap() {
            let (k, v) = item.unwrap();
            assert_eq!(k, format!("key{seen:06}").into_bytes());
            assert_eq!(v, value(seen), "key {seen}");
            seen += 1;
        }
        assert_eq!(seen, n);
        let reads = crate::vlog::SCAN_READS.with(|c| c.get()) - before;
        reads as f64 / n as f64
    }

    #[test]
    fn values_written_in_random_key_order_are_put_in_key_order_once_the_db_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path());
        o.vlog_gc_ratio = 0.5;
        o.vlog_gc_rate = 0;
        o.vlog_file_size = 1 << 20;
        o.memtable_size = 256 << 10;
        let db = crate::Db::open(o).unwrap();
        // Ten MiB: a scan's batch of 256 values then lies further apart in
        // the files than `read_many` coalesces across.
        let n = 10_000u64;
        let value = |k: u64| vec![(k % 251) as u8; 1000];
        // Every key once, in random order: no garbage, so nothing but the
        // order of the values makes the GC rewrite them.
        for chunk in shuffled(n).chunks(100) {
            let mut b = crate::WriteBatch::new();
            for &k in chunk {
                b.put(format!("key{k:06}").as_bytes(), value(k));
            }
            db.write(b).unwrap();
        }
        db.flush().unwrap();
        let scattered = scan_reads_per_value(&db, n, value);
        assert!(scattered > 0.5, "{scattered} reads per value before");
        // Idle after a second without writes: the idle tier walks and finds
        // the files scattered.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let stats = loop {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let s = db.stats();
            if s.gc_files_rewritten > 0 && s.gc_pending_files == 0 {
                break s;
            }
            assert!(std::time::Instant::now() < deadline, "never settled: {s:?}");
        };
        assert_eq!(stats.gc_damaged_files, 0);
        let sorted = scan_reads_per_value(&db, n, value);
        assert!(
            sorted < 0.05,
            "{sorted} reads per value after the idle GC ({scattered} before): {stats:?}"
        );
        // Put in order once: the rewritten files are not scattered, so an
        // idle Db does not rewrite them again.
        let rewritten = db.stats().gc_files_rewritten;
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert_eq!(db.stats().gc_files_rewritten, rewritten);
        assert_eq!(db.stats().gc_pending_files, 0);
    }

    #[test]
    fn a_walk_counts_the_live_bytes_of_each_file_that_a_lookup_of_every_entry_finds() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path());
        o.vlog_file_size = 256 << 10;
        o.memtable_size = 128 << 10;
        let db = crate::Db::open(o).unwrap();
        // Random keys drawn with replacement, as badger-bench's populate.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = format!("key{:06}", x % 3000);
            db.put(k.as_bytes(), &vec![(i % 251) as u8; 300]).unwrap();
            if i % 700 == 0 {
                db.flush().unwrap();
            }
        }
        let walked = walk_all(&db);
        let st = db.inner.read_state();
        let mut files = 0;
        for f in st.vlogs.all() {
            let mut live = 0u64;
            f.for_each_entry(|ptr, key, _| {
                let found = st.lookup(key, crate::key::MAX_SEQ)?;
                let here = found.is_some_and(|(_, raw)| {
                    value::decode(&raw).is_some_and(|r| r.stored == Stored::Pointer(ptr))
                });
                if here {
                    live += u64::from(ptr.len);
                }
                Ok(())
            })
            .unwrap();
            let counted = walked.live_bytes.get(&f.id()).copied().unwrap_or(0);
            assert_eq!(counted, live, "file {}", f.id());
            files += 1;
        }
        assert!(files > 3, "{files} value-log files");
    }
}
