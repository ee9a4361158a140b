//! `Db`: open and recovery, the write pipeline (group commit), reads, and the
//! background flush and compaction threads.
//!
//! Lock order, outermost first: `queue` → `log` → `manifest` → `state`; `bg`
//! is never held while taking `state` for writing, and `state` guards are never
//! held while taking another lock.

use crate::batch::{self, WriteBatch};
use crate::error::{Error, Result};
use crate::iter::{DbIterator, IterOptions, MemIter, MergeIter, Source};
use crate::levels::compaction::{self, Compaction};
use crate::levels::Version;
use crate::manifest::{self, sync_dir, Edit, Manifest, ManifestState, TableRecord};
use crate::memtable::Memtable;
use crate::options::Options;
use crate::table::{self, Table, TableBuilder};
use crate::value::{self, Stored, ValuePointer};
use crate::vlog::{self, VlogFile, VlogSet, VlogWriter};
use crate::wal::{self, LogWriter};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

const WAL_MAGIC: &[u8; 8] = b"SETTWAL\0";
const WAL_VERSION: u32 = 1;
const LOCK_FILE: &str = "LOCK";
/// A write group stops taking batches past this many bytes.
const MAX_GROUP_BYTES: usize = 4 << 20;
/// Per-op bytes added to a batch's size when checking it fits one WAL record.
const OP_OVERHEAD: usize = 64;

fn wal_name(id: u64) -> String {
    format!("{id:06}.wal")
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic on another thread must not make the Db unusable; the state it guards
    // is only changed in steps that leave it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What readers see: the memtables and the live tables, swapped as a whole.
struct ReadState {
    mem: Arc<Memtable>,
    /// Immutable memtables waiting for flush, newest first.
    imm: Vec<Arc<Memtable>>,
    version: Arc<Version>,
}

/// Owned by the write leader.
struct LogState {
    wal: LogWriter,
    vlog: VlogWriter,
    last_seq: u64,
}

#[derive(Default)]
struct BgState {
    shutdown: bool,
    /// Tables taken by a running compaction.
    busy: HashSet<u64>,
    cursors: Vec<Vec<u8>>,
}

/// A batch's (key, value record) pairs, ready for the memtable.
type EncodedBatch = Vec<(Vec<u8>, Vec<u8>)>;

/// A writer waiting in the group-commit queue.
struct Writer {
    batch: Mutex<Option<WriteBatch>>,
    bytes: usize,
    result: Mutex<Option<Result<()>>>,
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
    /// Bytes held in memory by table indexes and bloom filters.
    pub index_filter_bytes: usize,
    /// Sequence number of the last write.
    pub last_seq: u64,
    /// Entries (all versions, tombstones included) held in tables.
    pub table_entries: u64,
    /// Batches written since open.
    pub batches_written: u64,
    /// Write groups committed since open (each one WAL append).
    pub write_groups: u64,
    /// fsyncs of the WAL since open (at most one per group, only with `sync_writes`).
    pub wal_syncs: u64,
}

pub(crate) struct DbInner {
    opts: Options,
    dir: PathBuf,
    _lock: File,
    state: RwLock<Arc<ReadState>>,
    visible_seq: AtomicU64,
    vlogs: VlogSet,
    queue: Mutex<VecDeque<Arc<Writer>>>,
    queue_cv: Condvar,
    log: Mutex<Option<LogState>>,
    manifest: Mutex<Option<Manifest>>,
    bg: Mutex<BgState>,
    /// Wakes flush and compaction threads.
    bg_cv: Condvar,
    /// Wakes writers waiting for memtable or L0 room.
    room_cv: Condvar,
    poison: Mutex<Option<Error>>,
    closed: AtomicBool,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    groups: AtomicU64,
    wal_syncs: AtomicU64,
}

/// Keeps versions at `seq` from being dropped by compaction while it lives.
pub(crate) struct SnapshotGuard {
    db: Arc<DbInner>,
    seq: u64,
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

/// An open database. Cheap to share between threads (`&Db` is enough for every
/// operation). Dropping it closes it.
pub struct Db {
    inner: Arc<DbInner>,
}

/// The kinds of file sett keeps in its directory, by name.
enum FileKind {
    Table(u64),
    Wal(u64),
    Vlog(u32),
}

fn parse_name(name: &str) -> Option<FileKind> {
    let (stem, ext) = name.split_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match ext {
        "sst" => stem.parse().ok().map(FileKind::Table),
        "wal" => stem.parse().ok().map(FileKind::Wal),
        "vlog" => stem.parse().ok().map(FileKind::Vlog),
        _ => None,
    }
}

fn list_dir(dir: &Path) -> Result<Vec<FileKind>> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        if let Some(k) = entry.file_name().to_str().and_then(parse_name) {
            out.push(k);
        }
    }
    Ok(out)
}

fn lock_dir(dir: &Path, shared: bool) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = if shared {
        File::open(&path)
    } else {
        File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
    }
    .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let res = if shared {
        file.try_lock_shared()
    } else {
        file.try_lock()
    };
    match res {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {}", path.display()), e))
        }
    }
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
    }
}

fn missing_is_corruption(e: Error, what: &str) -> Error {
    match e {
        Error::Io { context, source } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::corruption(
                context.trim_start_matches("opening ").to_string(),
                0,
                what.to_string(),
            )
        }
        other => other,
    }
}

impl Db {
    /// Opens (or creates) the database described by `opts`, recovering from the
    /// manifest and the WALs. See the crate docs for what recovery guarantees.
    pub fn open(opts: Options) -> Result<Db> {
        opts.validate()?;
        let dir = opts.dir.clone();
        if opts.read_only {
            if !dir.join(manifest::FILE_NAME).exists() {
                return Err(Error::InvalidArgument(format!(
                    "no database in {} to open read-only",
                    dir.display()
                )));
            }
        } else {
            std::fs::create_dir_all(&dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        let dir_lock = lock_dir(&dir, opts.read_only)?;
        let files = list_dir(&dir)?;
        let mut mstate = match manifest::load(&dir, opts.num_levels)? {
            Some(s) => s,
            None => {
                if !files.is_empty() {
                    return Err(Error::corruption(
                        dir.join(manifest::FILE_NAME),
                        0,
                        "MANIFEST is missing but the directory holds data files",
                    ));
                }
                ManifestState::new(opts.num_levels)
            }
        };

        // Tables and value-log files named by the manifest must all be there.
        let mut version = Version::new(opts.num_levels);
        let mut added = Vec::new();
        for (level, tables) in mstate.levels.iter().enumerate() {
            for rec in tables.values() {
                let path = dir.join(table::file_name(rec.id));
                let t = Table::open(&path, rec.id)
                    .map_err(|e| missing_is_corruption(e, "table listed in MANIFEST is missing"))?;
                added.push((level, Arc::new(t)));
            }
        }
        version = version.apply(&HashSet::new(), &added);
        let vlogs = VlogSet::default();
        for &id in &mstate.vlogs {
            let path = dir.join(vlog::file_name(id));
            let f = VlogFile::open(&path, id).map_err(|e| {
                missing_is_corruption(e, "value-log file listed in MANIFEST is missing")
            })?;
            vlogs.insert(f);
        }

        // Replay the WALs not yet flushed, in order, into one memtable.
        let mut wal_ids: Vec<u64> = files
            .iter()
            .filter_map(|f| match f {
                FileKind::Wal(id) if *id >= mstate.log_number => Some(*id),
                _ => None,
            })
            .collect();
        wal_ids.sort_unstable();
        let mut last_seq = mstate.last_seq;
        for l in &version.levels {
            for t in l {
                last_seq = last_seq.max(t.max_seq());
            }
        }
        let mem = Arc::new(Memtable::new(wal_ids.last().copied().unwrap_or(0)));
        let mut replayed = Vec::new();
        for &id in &wal_ids {
            replayed.push(id);
            let complete = replay_wal(&dir.join(wal_name(id)), &mem, &vlogs, &mut last_seq)?;
            if !complete {
                // Everything after a cut is dropped too: what survives is a prefix.
                break;
            }
        }

        let max_file_id = files
            .iter()
            .map(|f| match f {
                FileKind::Table(id) | FileKind::Wal(id) => *id,
                FileKind::Vlog(id) => u64::from(*id),
            })
            .max()
            .unwrap_or(0);
        mstate.next_file_id = mstate.next_file_id.max(max_file_id + 1);

        let inner = Arc::new(DbInner {
            dir: dir.clone(),
            _lock: dir_lock,
            state: RwLock::new(Arc::new(ReadState {
                mem: mem.clone(),
                imm: Vec::new(),
                version: Arc::new(version),
            })),
            visible_seq: AtomicU64::new(last_seq),
            vlogs,
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            log: Mutex::new(None),
            manifest: Mutex::new(None),
            bg: Mutex::new(BgState {
                cursors: vec![Vec::new(); opts.num_levels],
                ..Default::default()
            }),
            bg_cv: Condvar::new(),
            room_cv: Condvar::new(),
            poison: Mutex::new(None),
            closed: AtomicBool::new(false),
            snapshots: Mutex::new(BTreeMap::new()),
            threads: Mutex::new(Vec::new()),
            counters: Counters::default(),
            opts,
        });
        if inner.opts.read_only {
            return Ok(Db { inner });
        }
        inner.finish_recovery(mstate, files, &replayed, mem, last_seq)?;
        inner.start_threads();
        Ok(Db { inner })
    }

    /// The value of `key`, or `None` if it has none.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }

    /// Stores `key` → `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
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
        self.inner.write(batch)
    }

    /// An iterator over a snapshot of the Db taken now.
    pub fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
        self.inner.iter(opts)
    }

    /// Makes the active memtable immutable and waits until every memtable is
    /// flushed to a table.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Counts and sizes of levels, value log, memtables and in-memory indexes.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The directory of this Db.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Flushes memtables, waits for background work and releases the directory.
    /// Later calls on this Db return [`Error::Closed`]; closing twice is a no-op.
    /// Returns the error that poisoned the Db, if one did.
    pub fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner.close();
    }
}

/// Replays one WAL into `mem`. Returns false if the log was cut short (a torn
/// tail, or a batch pointing at value-log bytes that did not survive).
fn replay_wal(path: &Path, mem: &Memtable, vlogs: &VlogSet, last_seq: &mut u64) -> Result<bool> {
    let data =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    if data.len() < wal::HEADER_LEN {
        return Ok(false); // torn while being created: holds nothing acknowledged
    }
    wal::check_header(path, &data, WAL_MAGIC, WAL_VERSION)?;
    let scan = wal::scan(path, &data)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    for (offset, range) in scan.records {
        let rec = batch::decode_record(&data[range])
            .ok_or_else(|| Error::corruption(path, offset, "undecodable batch record"))?;
        for (_, v) in &rec.entries {
            let decoded = value::decode(v).ok_or_else(|| {
                Error::corruption(path, offset, "undecodable value record in batch")
            })?;
            if let Stored::Pointer(p) = decoded.stored {
                if vlogs.read(p, dir).is_err() {
                    // The WAL survived but the value it points to did not.
                    return Ok(false);
                }
            }
        }
        for (k, v) in &rec.entries {
            mem.insert(k, rec.seq, v);
        }
        *last_seq = (*last_seq).max(rec.seq);
    }
    Ok(scan.valid_len == data.len() as u64)
}

impl DbInner {
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn read_state(&self) -> Arc<ReadState> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn update_state(&self, f: impl FnOnce(&ReadState) -> ReadState) {
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        *st = Arc::new(f(&st));
    }

    /// Flushes the replayed memtable, starts a fresh WAL and value-log file, and
    /// removes files that no live state refers to.
    fn finish_recovery(
        &self,
        mstate: ManifestState,
        files: Vec<FileKind>,
        replayed: &[u64],
        mem: Arc<Memtable>,
        last_seq: u64,
    ) -> Result<()> {
        let live_tables: HashSet<u64> = mstate
            .levels
            .iter()
            .flat_map(|l| l.keys().copied())
            .collect();
        let live_vlogs = mstate.vlogs.clone();
        let log_number = mstate.log_number;
        *lock(&self.manifest) = Some(Manifest::create(&self.dir, mstate)?);
        // Orphans: tables of a compaction or flush that never reached the manifest,
        // value-log files never recorded, WALs already flushed or past a cut.
        for f in &files {
            let path = match f {
                FileKind::Table(id) if !live_tables.contains(id) => {
                    self.dir.join(table::file_name(*id))
                }
                FileKind::Vlog(id) if !live_vlogs.contains(id) => {
                    self.dir.join(vlog::file_name(*id))
                }
                FileKind::Wal(id) if *id < log_number || (!replayed.contains(id)) => {
                    self.dir.join(wal_name(*id))
                }
                _ => continue,
            };
            remove(&path)?;
        }
        if !mem.is_empty() {
            self.flush_memtable(&mem)?;
        }
        let (wal_id, vlog_id) = {
            let mut m = lock(&self.manifest);
            let m = m.as_mut().ok_or(Error::Closed)?;
            (m.next_file_id(), m.next_file_id())
        };
        let vlog_id = u32::try_from(vlog_id).map_err(|_| {
            Error::InvalidArgument("file ids exhausted the value-log id space".into())
        })?;
        let wal = LogWriter::create(&self.dir.join(wal_name(wal_id)), WAL_MAGIC, WAL_VERSION)?;
        let vlog = VlogWriter::create(&self.dir, vlog_id)?;
        self.vlogs.insert(VlogFile::open(
            &self.dir.join(vlog::file_name(vlog_id)),
            vlog_id,
        )?);
        sync_dir(&self.dir)?;
        // Value-log files holding nothing but a header can go.
        let mut edits = vec![
            Edit::AddVlog(vlog_id),
            Edit::LogNumber(wal_id),
            Edit::LastSeq(last_seq),
        ];
        let mut empty = Vec::new();
        for f in self.vlogs.all() {
            if f.id() != vlog_id && f.len()? <= wal::HEADER_LEN as u64 {
                edits.push(Edit::DeleteVlog(f.id()));
                empty.push(f);
            }
        }
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&edits)?;
        for f in empty {
            self.vlogs.remove(f.id());
            remove(f.path())?;
        }
        for id in replayed {
            remove(&self.dir.join(wal_name(*id)))?;
        }
        self.update_state(|st| ReadState {
            mem: Arc::new(Memtable::new(wal_id)),
            imm: Vec::new(),
            version: st.version.clone(),
        });
        *lock(&self.log) = Some(LogState {
            wal,
            vlog,
            last_seq,
        });
        Ok(())
    }

    fn start_threads(self: &Arc<Self>) {
        let mut threads = lock(&self.threads);
        let me = self.clone();
        threads.push(std::thread::spawn(move || me.flush_loop()));
        for _ in 0..self.opts.compaction_threads {
            let me = self.clone();
            threads.push(std::thread::spawn(move || me.compaction_loop()));
        }
    }

    // ---- reads ----

    fn check_key(&self, key: &[u8]) -> Result<()> {
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

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        self.check_key(key)?;
        let seq = self.visible_seq.load(Ordering::Acquire);
        let st = self.read_state();
        let mut found = st.mem.get(key, seq);
        for m in &st.imm {
            if found.is_some() {
                break;
            }
            found = m.get(key, seq);
        }
        if found.is_none() {
            found = st.version.get(key, seq)?;
        }
        let Some((_, raw)) = found else {
            return Ok(None);
        };
        let rec = value::decode(&raw).ok_or_else(|| {
            Error::corruption(
                &self.dir,
                0,
                format!("undecodable value record for key {key:?}"),
            )
        })?;
        match rec.stored {
            Stored::Delete => Ok(None),
            Stored::Inline(v) => Ok(Some(v.to_vec())),
            Stored::Pointer(p) => self.vlogs.read(p, &self.dir).map(Some),
        }
    }

    pub(crate) fn read_values(&self, ptrs: &[ValuePointer]) -> Result<Vec<Vec<u8>>> {
        if ptrs.is_empty() {
            return Ok(Vec::new());
        }
        self.vlogs.read_many(ptrs, &self.dir)
    }

    fn snapshot(self: &Arc<Self>) -> SnapshotGuard {
        let mut s = lock(&self.snapshots);
        let seq = self.visible_seq.load(Ordering::Acquire);
        *s.entry(seq).or_insert(0) += 1;
        SnapshotGuard {
            db: self.clone(),
            seq,
        }
    }

    /// The oldest sequence any reader may still read at.
    fn smallest_snapshot(&self) -> u64 {
        let s = lock(&self.snapshots);
        let now = self.visible_seq.load(Ordering::Acquire);
        s.keys().next().copied().unwrap_or(now).min(now)
    }

    fn iter(self: &Arc<Self>, opts: IterOptions) -> Result<DbIterator> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        let snap = self.snapshot();
        let st = self.read_state();
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        sources.push(Box::new(MemIter::new(st.mem.clone(), opts.reverse)));
        for m in &st.imm {
            sources.push(Box::new(MemIter::new(m.clone(), opts.reverse)));
        }
        st.version.sources(opts.reverse, &mut sources);
        let merge = MergeIter::new(sources, opts.reverse);
        let seq = snap.seq;
        DbIterator::new(self.clone(), merge, seq, snap, opts)
    }

    fn stats(&self) -> Stats {
        let st = self.read_state();
        Stats {
            levels: st
                .version
                .levels
                .iter()
                .map(|l| (l.len(), l.iter().map(|t| t.size()).sum()))
                .collect(),
            vlog_files: self.vlogs.all().len(),
            vlog_bytes: self.vlogs.total_bytes(),
            memtable_bytes: st.mem.size() + st.imm.iter().map(|m| m.size()).sum::<usize>(),
            immutable_memtables: st.imm.len(),
            index_filter_bytes: st.version.levels.iter().flatten().map(|t| t.memory()).sum(),
            last_seq: self.visible_seq.load(Ordering::Acquire),
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
        }
    }

    // ---- writes ----

    fn check_writable(&self) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly);
        }
        if self.is_closed() {
            return Err(Error::Closed);
        }
        if let Some(e) = lock(&self.poison).as_ref() {
            return Err(Error::Poisoned(e.to_string()));
        }
        Ok(())
    }

    fn poison_with(&self, e: &Error) {
        let mut p = lock(&self.poison);
        if p.is_none() {
            *p = Some(e.clone());
        }
        drop(p);
        let _bg = lock(&self.bg);
        self.room_cv.notify_all();
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.check_writable()?;
        for op in &batch.ops {
            self.check_key(&op.key)?;
            if let Some(v) = &op.value {
                if v.len() > self.opts.max_value_size {
                    return Err(Error::TooBig {
                        what: "value",
                        len: v.len(),
                        max: self.opts.max_value_size,
                    });
                }
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let bytes = batch.size_bytes() + OP_OVERHEAD * batch.len();
        if bytes > wal::MAX_RECORD_LEN {
            return Err(Error::TooBig {
                what: "batch",
                len: bytes,
                max: wal::MAX_RECORD_LEN,
            });
        }
        let me = Arc::new(Writer {
            batch: Mutex::new(Some(batch)),
            bytes,
            result: Mutex::new(None),
        });
        let mut q = lock(&self.queue);
        q.push_back(me.clone());
        loop {
            if let Some(r) = lock(&me.result).take() {
                return r;
            }
            if q.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            q = self.queue_cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        // This writer leads: it commits itself and whoever queued behind it.
        let mut group = Vec::new();
        let mut group_bytes = 0;
        for w in q.iter() {
            if !group.is_empty() && group_bytes + w.bytes > MAX_GROUP_BYTES {
                break;
            }
            group_bytes += w.bytes;
            group.push(w.clone());
        }
        drop(q);
        let res = self.write_group(&group);
        let mut q = lock(&self.queue);
        for w in &group {
            q.pop_front();
            if !Arc::ptr_eq(w, &me) {
                *lock(&w.result) = Some(res.clone());
            }
        }
        self.queue_cv.notify_all();
        res
    }

    fn write_group(&self, group: &[Arc<Writer>]) -> Result<()> {
        let mut guard = lock(&self.log);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        self.check_writable()?;
        self.make_room(log)?;
        let mem = self.read_state().mem.clone();
        let threshold = self.opts.value_threshold;
        let mut framed = Vec::with_capacity(group.iter().map(|w| w.bytes + 16).sum());
        let mut applied: Vec<(u64, EncodedBatch)> = Vec::with_capacity(group.len());
        let mut seq = log.last_seq;
        for w in group {
            let Some(batch) = lock(&w.batch).take() else {
                continue;
            };
            seq += 1;
            let mut entries = Vec::with_capacity(batch.ops.len());
            for op in batch.ops {
                let mut rec = Vec::new();
                match &op.value {
                    None => value::encode(&mut rec, &Stored::Delete, 0, 0),
                    Some(v) if v.len() >= threshold => {
                        let p = log.vlog.append(&op.key, v);
                        value::encode(&mut rec, &Stored::Pointer(p), 0, 0);
                    }
                    Some(v) => value::encode(&mut rec, &Stored::Inline(v), 0, 0),
                }
                entries.push((op.key, rec));
            }
            let refs: Vec<(&[u8], &[u8])> = entries.iter().map(|(k, v)| (&k[..], &v[..])).collect();
            wal::frame(&mut framed, &batch::encode_record(seq, &refs));
            applied.push((seq, entries));
        }
        let sync = self.opts.sync_writes;
        let io = (|| {
            log.vlog.flush()?;
            if sync {
                log.vlog.sync()?;
            }
            log.wal.append(&framed)?;
            if sync {
                log.wal.sync()?;
                self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })();
        if let Err(e) = io {
            self.poison_with(&e);
            return Err(e);
        }
        for (seq, entries) in &applied {
            for (k, v) in entries {
                mem.insert(k, *seq, v);
            }
        }
        log.last_seq = seq;
        self.visible_seq.store(seq, Ordering::Release);
        self.counters.groups.fetch_add(1, Ordering::Relaxed);
        self.counters
            .batches
            .fetch_add(applied.len() as u64, Ordering::Relaxed);
        if log.vlog.len() >= self.opts.vlog_file_size {
            if let Err(e) = self.rotate_vlog(log) {
                self.poison_with(&e);
            }
        }
        Ok(())
    }

    /// Starts a new head value-log file.
    fn rotate_vlog(&self, log: &mut LogState) -> Result<()> {
        log.vlog.sync()?;
        let mut m = lock(&self.manifest);
        let m = m.as_mut().ok_or(Error::Closed)?;
        let id = u32::try_from(m.next_file_id()).map_err(|_| {
            Error::InvalidArgument("file ids exhausted the value-log id space".into())
        })?;
        let vlog = VlogWriter::create(&self.dir, id)?;
        self.vlogs
            .insert(VlogFile::open(&self.dir.join(vlog::file_name(id)), id)?);
        sync_dir(&self.dir)?;
        m.log(&[Edit::AddVlog(id)])?;
        log.vlog = vlog;
        Ok(())
    }

    /// Waits, if needed, until the memtable has room and L0 is below its limits:
    /// a short delay past the slowdown trigger (longer the closer L0 is to the stop
    /// trigger), a full stop at the stop trigger. Waits end as soon as a flush or
    /// compaction finishes.
    fn make_room(&self, log: &mut LogState) -> Result<()> {
        let mut delayed = false;
        loop {
            let st = self.read_state();
            let l0 = st.version.levels[0].len();
            let full = st.mem.size() >= self.opts.memtable_size;
            if l0 < self.opts.l0_slowdown_trigger && !full {
                return Ok(());
            }
            let mut bg = lock(&self.bg);
            if let Some(e) = lock(&self.poison).as_ref() {
                return Err(Error::Poisoned(e.to_string()));
            }
            let st = self.read_state();
            let l0 = st.version.levels[0].len();
            if l0 >= self.opts.l0_stop_trigger {
                self.bg_cv.notify_all();
                bg = self.room_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
                drop(bg);
                continue;
            }
            if l0 >= self.opts.l0_slowdown_trigger && !delayed {
                delayed = true;
                let over = (l0 + 1 - self.opts.l0_slowdown_trigger) as u64;
                let span = (self.opts.l0_stop_trigger - self.opts.l0_slowdown_trigger) as u64;
                let delay = Duration::from_micros(1000 * over * over / span.max(1));
                let _ = self.room_cv.wait_timeout(bg, delay);
                continue;
            }
            if st.mem.size() < self.opts.memtable_size {
                return Ok(());
            }
            if st.imm.len() + 1 >= self.opts.max_memtables {
                bg = self.room_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
                drop(bg);
                continue;
            }
            drop(bg);
            return self.switch_memtable(log);
        }
    }

    /// Turns the active memtable immutable and starts a new one with a new WAL.
    fn switch_memtable(&self, log: &mut LogState) -> Result<()> {
        let id = lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .next_file_id();
        let wal = LogWriter::create(&self.dir.join(wal_name(id)), WAL_MAGIC, WAL_VERSION)
            .and_then(|w| sync_dir(&self.dir).map(|_| w))
            .inspect_err(|e| self.poison_with(e))?;
        log.wal = wal;
        self.update_state(|st| {
            let mut imm = Vec::with_capacity(st.imm.len() + 1);
            imm.push(st.mem.clone());
            imm.extend(st.imm.iter().cloned());
            ReadState {
                mem: Arc::new(Memtable::new(id)),
                imm,
                version: st.version.clone(),
            }
        });
        let _bg = lock(&self.bg);
        self.bg_cv.notify_all();
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.check_writable()?;
        {
            let mut guard = lock(&self.log);
            let log = guard.as_mut().ok_or(Error::Closed)?;
            if !self.read_state().mem.is_empty() {
                self.switch_memtable(log)?;
            }
        }
        self.wait_flushed()
    }

    /// Waits until no immutable memtable is left (or the Db is poisoned).
    fn wait_flushed(&self) -> Result<()> {
        let mut bg = lock(&self.bg);
        loop {
            if let Some(e) = lock(&self.poison).as_ref() {
                return Err(e.clone());
            }
            if self.read_state().imm.is_empty() {
                return Ok(());
            }
            self.bg_cv.notify_all();
            bg = self.room_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn close(&self) -> Result<()> {
        let mut guard = lock(&self.log);
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let Some(mut log) = guard.take() else {
            return Ok(()); // read-only
        };
        let poisoned = lock(&self.poison).clone();
        let mut result = match poisoned {
            Some(e) => Err(e),
            None => {
                let switched = if self.read_state().mem.is_empty() {
                    Ok(())
                } else {
                    self.switch_memtable(&mut log)
                };
                switched.and_then(|_| self.wait_flushed())
            }
        };
        drop(guard);
        {
            let mut bg = lock(&self.bg);
            bg.shutdown = true;
            self.bg_cv.notify_all();
            self.room_cv.notify_all();
        }
        let threads = std::mem::take(&mut *lock(&self.threads));
        for t in threads {
            if t.join().is_err() && result.is_ok() {
                result = Err(Error::Poisoned("a background thread panicked".into()));
            }
        }
        if let Err(e) = log.vlog.sync().and_then(|_| log.wal.sync()) {
            if result.is_ok() {
                result = Err(e);
            }
        }
        result
    }

    // ---- background work ----

    fn flush_loop(self: Arc<Self>) {
        loop {
            let mem = {
                let mut bg = lock(&self.bg);
                loop {
                    let oldest = self.read_state().imm.last().cloned();
                    if let Some(m) = oldest {
                        if lock(&self.poison).is_none() {
                            break Some(m);
                        }
                    }
                    if bg.shutdown {
                        break None;
                    }
                    bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
                }
            };
            let Some(mem) = mem else { return };
            if let Err(e) = self.flush_memtable(&mem) {
                self.poison_with(&e);
            }
            let _bg = lock(&self.bg);
            self.bg_cv.notify_all();
            self.room_cv.notify_all();
        }
    }

    /// Writes `mem` to an L0 table, records it, and drops its WAL.
    fn flush_memtable(&self, mem: &Arc<Memtable>) -> Result<()> {
        // Values the table will point to must be durable before the WAL goes.
        for f in self.vlogs.all() {
            f.sync()?;
        }
        let mut edits = Vec::new();
        let mut added = Vec::new();
        if !mem.is_empty() {
            let id = lock(&self.manifest)
                .as_mut()
                .ok_or(Error::Closed)?
                .next_file_id();
            let path = self.dir.join(table::file_name(id));
            let mut b =
                TableBuilder::create(&path, self.opts.block_size, self.opts.bloom_bits_per_key)?;
            let built = mem.for_each(|k, v| b.add(k, v)).and_then(|_| b.finish());
            let meta = built.inspect_err(|_| {
                let _ = std::fs::remove_file(&path);
            })?;
            sync_dir(&self.dir)?;
            let t = Arc::new(Table::open(&path, id)?);
            edits.push(Edit::AddTable {
                level: 0,
                table: TableRecord {
                    id,
                    size: meta.size,
                    max_seq: meta.max_seq,
                    smallest: meta.smallest,
                    largest: meta.largest,
                },
            });
            added.push((0, t));
        }
        edits.push(Edit::LogNumber(mem.wal_id() + 1));
        edits.push(Edit::LastSeq(mem.max_seq()));
        {
            let mut m = lock(&self.manifest);
            m.as_mut().ok_or(Error::Closed)?.log(&edits)?;
            self.update_state(|st| ReadState {
                mem: st.mem.clone(),
                imm: st
                    .imm
                    .iter()
                    .filter(|m| !Arc::ptr_eq(m, mem))
                    .cloned()
                    .collect(),
                version: Arc::new(st.version.apply(&HashSet::new(), &added)),
            });
        }
        remove(&self.dir.join(wal_name(mem.wal_id())))
    }

    fn compaction_loop(self: Arc<Self>) {
        loop {
            let c = {
                let mut bg = lock(&self.bg);
                loop {
                    if bg.shutdown || lock(&self.poison).is_some() {
                        return;
                    }
                    let version = self.read_state().version.clone();
                    let BgState { busy, cursors, .. } = &mut *bg;
                    if let Some(c) = compaction::pick(&version, &self.opts, busy, cursors) {
                        for t in c.all_tables() {
                            busy.insert(t.id());
                        }
                        break c;
                    }
                    bg = self.bg_cv.wait(bg).unwrap_or_else(|p| p.into_inner());
                }
            };
            let res = self.run_compaction(&c);
            let mut bg = lock(&self.bg);
            for t in c.all_tables() {
                bg.busy.remove(&t.id());
            }
            drop(bg);
            if let Err(e) = res {
                self.poison_with(&e);
            }
            let _bg = lock(&self.bg);
            self.bg_cv.notify_all();
            self.room_cv.notify_all();
        }
    }

    fn run_compaction(&self, c: &Compaction) -> Result<()> {
        let out = c.out_level();
        let mut edits = Vec::new();
        let mut removed = HashSet::new();
        for t in &c.inputs {
            edits.push(Edit::DeleteTable {
                level: c.level as u8,
                id: t.id(),
            });
            removed.insert(t.id());
        }
        for t in &c.next {
            edits.push(Edit::DeleteTable {
                level: out as u8,
                id: t.id(),
            });
            removed.insert(t.id());
        }
        let mut added = Vec::new();
        if c.is_trivial_move() {
            let t = &c.inputs[0];
            edits.push(Edit::AddTable {
                level: out as u8,
                table: TableRecord {
                    id: t.id(),
                    size: t.size(),
                    max_seq: t.max_seq(),
                    smallest: t.smallest().to_vec(),
                    largest: t.largest().to_vec(),
                },
            });
            added.push((out, t.clone()));
        } else {
            let snapshot = self.smallest_snapshot();
            let outputs = compaction::run(c, &self.opts, &self.dir, snapshot, || {
                lock(&self.manifest)
                    .as_mut()
                    .map(|m| m.next_file_id())
                    .unwrap_or(u64::MAX)
            })?;
            sync_dir(&self.dir)?;
            for (id, meta) in outputs {
                let t = Table::open(&self.dir.join(table::file_name(id)), id)?;
                edits.push(Edit::AddTable {
                    level: out as u8,
                    table: TableRecord {
                        id,
                        size: meta.size,
                        max_seq: meta.max_seq,
                        smallest: meta.smallest,
                        largest: meta.largest,
                    },
                });
                added.push((out, Arc::new(t)));
            }
        }
        let mut m = lock(&self.manifest);
        m.as_mut().ok_or(Error::Closed)?.log(&edits)?;
        self.update_state(|st| ReadState {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: Arc::new(st.version.apply(&removed, &added)),
        });
        drop(m);
        if !c.is_trivial_move() {
            for t in c.all_tables() {
                t.mark_obsolete();
            }
        }
        Ok(())
    }
}
