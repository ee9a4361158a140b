//! Open and recovery: the directory lock, the manifest, WAL replay, orphan cleanup.

use super::*;
use crate::batch;
use crate::filename::{self, FileKind};
use crate::fs::sync_dir;
use crate::fs::Fs;
use crate::levels::Version;
use crate::manifest::{self, Edit, ManifestState};
use crate::range_del::{RangeDels, RangeTombstone};
use crate::table::{Table, TableCache};
use crate::vlog::VlogFile;
use crate::wal::{self, WAL_MAGIC, WAL_VERSION};

fn list_dir(dir: &Path) -> Result<Vec<FileKind>> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        if let Some(k) = entry.file_name().to_str().and_then(filename::parse) {
            out.push(k);
        }
    }
    Ok(out)
}

fn lock_dir(dir: &Path, shared: bool) -> Result<File> {
    let path = dir.join(filename::LOCK);
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
    // A flock belongs to the open file description, which a child process
    // shares between its fork and its exec: a lock released by close can
    // look held for that moment when another thread is starting a process.
    // A lock still held after LOCK_PATIENCE is another Db's.
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        let res = if shared {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match res {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => {
                if std::time::Instant::now() >= deadline {
                    return Err(Error::Locked(dir.to_path_buf()));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }
}

/// How long an open waits for a directory lock that looks held.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// Removes a file; a file already gone is fine.
pub(crate) fn remove(fs: &Fs, path: &Path) -> Result<()> {
    match fs.remove(path) {
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

/// Opens the Db of `opts`: lock, manifest, tables, value-log files, WAL replay;
/// then, unless read-only, flushes what was replayed and starts the threads.
pub(super) fn open(mut opts: Options) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let dir = opts.dir.clone();
    let marker = dir.join(super::CHECKPOINT_MARKER);
    if marker.exists() {
        return Err(Error::corruption(
            marker,
            0,
            "an incomplete checkpoint: the checkpoint that made this directory was \
             interrupted; delete the directory and take the checkpoint again",
        ));
    }
    if opts.read_only {
        if !dir.join(filename::MANIFEST).exists() {
            return Err(Error::InvalidArgument(format!(
                "no database in {} to open read-only",
                dir.display()
            )));
        }
    } else if !dir.is_dir() {
        opts.fs
            .create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        // The new directory's own entry must be durable before anything in it is.
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        match opts.fs.sync_dir(parent) {
            Ok(()) => {}
            // A parent sett may search but not read cannot be opened to sync it.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {}
            Err(e) => {
                return Err(Error::io(
                    format!("syncing directory {}", parent.display()),
                    e,
                ))
            }
        }
    }
    let dir_lock = lock_dir(&dir, opts.read_only)?;
    let files = list_dir(&dir)?;
    let has_data = !files.is_empty() || dir.join(filename::MANIFEST).exists();
    if let Some(keys) = crate::crypt::KeyRing::open(
        &opts.fs,
        &dir,
        opts.encryption.as_ref(),
        has_data,
        opts.read_only,
    )? {
        // From here on every file is written and read encrypted.
        opts.fs = opts.fs.encrypted(keys);
    }
    let mut mstate = match manifest::load(&opts.fs, &dir, opts.num_levels)? {
        Some(s) => s,
        None => {
            if !files.is_empty() {
                return Err(Error::corruption(
                    dir.join(filename::MANIFEST),
                    0,
                    "MANIFEST is missing but the directory holds data files",
                ));
            }
            ManifestState::new(opts.num_levels)
        }
    };
    // The operator's name goes in the manifest written below (recovery
    // writes a fresh one from `mstate`), so that an open with another
    // operator is refused before anything folds operands with it.
    match (&mstate.merge_operator, &opts.merge_operator) {
        (Some(stored), Some(op)) if stored != op.name() => {
            return Err(Error::MergeOperatorMismatch {
                stored: stored.clone(),
                given: op.name().to_string(),
            })
        }
        (None, Some(op)) => mstate.merge_operator = Some(op.name().to_string()),
        _ => {}
    }

    // Tables and value-log files named by the manifest must all be there.
    let cache = Arc::new(TableCache::new(opts.cache_size));
    let mut added = Vec::new();
    for (level, tables) in mstate.levels.iter().enumerate() {
        for rec in tables.values() {
            let path = filename::table(&dir, rec.id);
            let t = Table::open(&opts.fs, &path, rec.id, &cache)
                .map_err(|e| missing_is_corruption(e, "table listed in MANIFEST is missing"))?;
            added.push((level, Arc::new(t)));
        }
    }
    let version = Version::new(opts.num_levels).apply(&HashSet::new(), &added);
    let mut vlogs = VlogSet::default();
    for &id in &mstate.vlogs {
        let path = filename::vlog(&dir, id);
        // Every file listed is sealed: each open starts a new head file.
        let f = VlogFile::open_sealed(&opts.fs, &path, id).map_err(|e| {
            missing_is_corruption(e, "value-log file listed in MANIFEST is missing")
        })?;
        vlogs = vlogs.with(Arc::new(f));
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
    for t in version.levels.iter().flatten() {
        last_seq = last_seq.max(t.max_seq());
    }
    let chunk_pool = ChunkPool::new(opts.memtable_size);
    let mem = Arc::new(Memtable::with_pool(
        wal_ids.last().copied().unwrap_or(0),
        Some(chunk_pool.clone()),
    ));
    let known_seq = last_seq;
    let mut replayed_seqs = (u64::MAX, 0);
    let replayed = replay_wals(
        &opts.fs,
        &dir,
        &wal_ids,
        mstate.log_number,
        &mem,
        &vlogs,
        &mut last_seq,
        &mut replayed_seqs,
    )?;
    check_orphan_tables(&opts.fs, &dir, &files, &mstate, known_seq, replayed_seqs)?;

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
        dir_lock: Mutex::new(Some(dir_lock)),
        state: RwLock::new(Arc::new(ReadState {
            mem: mem.clone(),
            imm: Vec::new(),
            version: Arc::new(version),
            vlogs: Arc::new(vlogs),
            range_dels: Arc::new(RangeDels::new(
                mstate.range_dels.iter().cloned().chain(mem.range_dels()),
            )),
        })),
        commit: super::commit::Pipeline::new(last_seq),
        log: Mutex::new(None),
        manifest: Mutex::new(None),
        bg: super::background::Background::new(opts.num_levels),
        poison: Mutex::new(None),
        closed: AtomicBool::new(false),
        snapshots: Mutex::new(BTreeMap::new()),
        counters: Counters::default(),
        chunk_pool,
        gc: gc::GcState::new(&opts),
        bulk_active: AtomicBool::new(false),
        holds: Mutex::new(Default::default()),
        cache,
        feed: Arc::new(crate::feed::Feed::new(opts.change_feed_history_bytes)),
        read_only_recovery: opts.read_only.then(|| (mstate.clone(), replayed.clone())),
        catalog: Default::default(),
        opts,
    });
    // Before recovery's flushes, so that they use the keyspaces' codecs.
    inner.catalog.load_codecs(&inner)?;
    if inner.opts.read_only {
        return Ok(inner);
    }
    inner.finish_recovery(mstate, files, &replayed, mem, last_seq)?;
    inner.start_threads();
    Ok(inner)
}

/// Tables on disk that the manifest does not list are normally leftovers of a
/// flush or compaction cut by a crash, and recovery deletes them: their writes
/// are also in a WAL still on disk (a flush's: the table's id is the one after
/// its WAL's, or, for recovery's own flush, the replayed WALs hold its
/// versions) or in live tables (a compaction's). A table holding writes newer
/// than anything the manifest records, whose WAL is gone and whose versions
/// no replayed WAL holds, means the manifest lost committed records (a
/// truncated MANIFEST): that is corruption, and nothing is deleted.
fn check_orphan_tables(
    fs: &crate::fs::Fs,
    dir: &Path,
    files: &[FileKind],
    mstate: &ManifestState,
    known_seq: u64,
    (replay_min, replay_max): (u64, u64),
) -> Result<()> {
    for f in files {
        let FileKind::Table(id) = f else { continue };
        if mstate.levels.iter().any(|l| l.contains_key(id)) {
            continue;
        }
        // An orphan that does not even open is a table cut by the crash.
        // Opened only to read its footer: no cache room is taken.
        let Ok(t) = Table::open(
            fs,
            &filename::table(dir, *id),
            *id,
            &Arc::new(TableCache::new(0)),
        ) else {
            continue;
        };
        let newest = t.max_seq();
        let in_wal = replay_min <= newest && newest <= replay_max;
        // A flush's table takes the id after its WAL's, and the WAL is
        // deleted only after the manifest records the table.
        let wal_kept = id
            .checked_sub(1)
            .is_some_and(|wal| wal >= mstate.log_number && files.contains(&FileKind::Wal(wal)));
        if newest > known_seq && !in_wal && !wal_kept {
            return Err(Error::corruption(
                dir.join(filename::MANIFEST),
                0,
                format!(
                    "table {} holds writes up to version {newest}, newer than the MANIFEST \
                     records ({known_seq}) and in no WAL: the MANIFEST lost records",
                    filename::FileKind::Table(*id).name()
                ),
            ));
        }
    }
    Ok(())
}

/// Replays the WALs `ids` (ascending, none below `log_number`) into `mem` up
/// to the first cut: what survives is a prefix of the writes. Returns the
/// WALs replayed, the cut one included. `seqs` widens to the (lowest,
/// highest) version replayed.
#[allow(clippy::too_many_arguments)]
fn replay_wals(
    fs: &crate::fs::Fs,
    dir: &Path,
    ids: &[u64],
    log_number: u64,
    mem: &Memtable,
    vlogs: &VlogSet,
    last_seq: &mut u64,
    seqs: &mut (u64, u64),
) -> Result<Vec<u64>> {
    let mut replayed = Vec::new();
    let mut prev = None;
    for &id in ids {
        let chain = WalChain {
            prev,
            log_number,
            newest: ids.last() == Some(&id),
        };
        let path = filename::wal(dir, id);
        match replay_wal(fs, &path, chain, mem, vlogs, last_seq, seqs)? {
            Replay::Whole(len) => {
                replayed.push(id);
                prev = Some((id, len));
            }
            Replay::Cut => {
                replayed.push(id);
                break;
            }
            Replay::AfterCut => break,
        }
    }
    Ok(replayed)
}

/// Where a WAL stands in the chain of WALs being replayed.
#[derive(Debug, Clone, Copy)]
struct WalChain {
    /// The WAL replayed whole just before: its id and its length as read.
    prev: Option<(u64, u64)>,
    /// The manifest's log number: older WALs are flushed.
    log_number: u64,
    /// This is the newest WAL on disk.
    newest: bool,
}

/// What replaying one WAL found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replay {
    /// Replayed to its end; its valid length.
    Whole(u64),
    /// Cut short (a torn tail, or a batch pointing at value-log bytes that did
    /// not survive): replayed up to the cut.
    Cut,
    /// Not replayed: its link says the WAL before it was longer than what
    /// survived of it, so its records are past a cut.
    AfterCut,
}

/// Replays one WAL into `mem`. `seqs` widens to the (lowest, highest)
/// version replayed.
#[allow(clippy::too_many_arguments)]
fn replay_wal(
    fs: &crate::fs::Fs,
    path: &Path,
    chain: WalChain,
    mem: &Memtable,
    vlogs: &VlogSet,
    last_seq: &mut u64,
    seqs: &mut (u64, u64),
) -> Result<Replay> {
    let data = crate::crypt::read_whole(fs, path)?;
    if data.len() < wal::HEADER_LEN {
        return Ok(Replay::Cut); // torn while being created: holds nothing acknowledged
    }
    let version = match wal::header_version(path, &data, WAL_MAGIC) {
        // The newest WAL's header and link are written and synced before
        // anything else goes in it, but another thread's directory sync may
        // make its name durable first: a crash then leaves a file no longer
        // than those bytes, torn. It holds nothing acknowledged.
        Err(e) if e.is_corruption() && chain.newest && wal::holds_no_record_past_link(&data) => {
            return Ok(Replay::Cut)
        }
        other => other?,
    };
    let version = match version {
        v @ (1..=WAL_VERSION) => v,
        found => {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found,
                supported: WAL_VERSION,
            })
        }
    };
    let scan = wal::scan_synced(path, &data, |p| batch::split_wal_payload(version, p).0)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut records = scan.records.as_slice();
    if version >= 4 {
        // The link, synced with the header when the file was made; without
        // it the file was torn while being created and holds nothing.
        let Some(((offset, range), rest)) = records.split_first() else {
            return Ok(Replay::Cut);
        };
        let link = wal::Link::decode(&data[range.clone()])
            .ok_or_else(|| Error::corruption(path, *offset, "bad WAL link record"))?;
        records = rest;
        if link.prev_id != 0 && link.prev_id >= chain.log_number {
            match chain.prev {
                Some((id, len)) if id == link.prev_id => {
                    // The feature is a mutation check (Cargo.toml): never for use.
                    let checked = !cfg!(feature = "unsafe-skip-wal-link");
                    if checked && len < link.prev_len {
                        return Ok(Replay::AfterCut);
                    }
                }
                _ => {
                    return Err(Error::corruption(
                        path,
                        *offset,
                        format!(
                            "the WAL follows {}, which is not on disk, and the MANIFEST \
                             does not record it flushed",
                            FileKind::Wal(link.prev_id).name()
                        ),
                    ))
                }
            }
        }
    }
    for (offset, range) in records.iter().cloned() {
        let (_, payload) = batch::split_wal_payload(version, &data[range]);
        let rec = batch::decode_record(payload, version >= 5)
            .ok_or_else(|| Error::corruption(path, offset, "undecodable batch record"))?;
        for (_, _, v) in &rec.entries {
            if value::decode_range_delete(v).is_some() {
                continue;
            }
            let decoded = value::decode(v).ok_or_else(|| {
                Error::corruption(path, offset, "undecodable value record in batch")
            })?;
            if let Stored::Pointer(p) = decoded.stored {
                if vlogs.read(p, dir).is_err() {
                    // The WAL survived but the value it points to did not.
                    return Ok(Replay::Cut);
                }
            }
        }
        for &(seq, k, v) in &rec.entries {
            match value::decode_range_delete(v) {
                Some(end) => mem.add_range_del(RangeTombstone {
                    start: k.to_vec(),
                    end: end.to_vec(),
                    seq,
                }),
                None => mem.insert(k, seq, v),
            }
        }
        // A batch's sequence counts even when it holds nothing; a versioned
        // record's versions are its entries'.
        let versions = rec.seq.into_iter().chain(rec.entries.iter().map(|e| e.0));
        for seq in versions {
            *last_seq = (*last_seq).max(seq);
            *seqs = (seqs.0.min(seq), seqs.1.max(seq));
        }
    }
    let valid = usize::try_from(scan.valid_len).unwrap_or(data.len());
    // Format 3 and later: zeros after the last record are allocated space,
    // not a cut (in format 4 the next WAL's link tells a cut there).
    let rest = data.get(valid..).unwrap_or(&[]);
    Ok(
        match rest.is_empty() || (version >= 3 && rest.iter().all(|&b| b == 0)) {
            true => Replay::Whole(scan.valid_len),
            false => Replay::Cut,
        },
    )
}

impl DbInner {
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
        *lock(&self.manifest) = Some(Manifest::create(&self.opts.fs, &self.dir, mstate)?);
        // Orphans: tables of a compaction or flush that never reached the manifest,
        // value-log files never recorded, WALs already flushed or past a cut.
        for f in &files {
            let path = match f {
                FileKind::Table(id) if !live_tables.contains(id) => filename::table(&self.dir, *id),
                FileKind::Vlog(id) if !live_vlogs.contains(id) => filename::vlog(&self.dir, *id),
                FileKind::Wal(id) if *id < log_number || !replayed.contains(id) => {
                    filename::wal(&self.dir, *id)
                }
                _ => continue,
            };
            remove(&self.opts.fs, &path)?;
        }
        if !mem.is_empty() {
            // Durable before the table exists, so that a crash in the flush
            // replays the same versions again (the orphan check counts on
            // it): after a killed process they may still be unsynced.
            for &id in replayed {
                super::write::sync_wal_file(&self.opts.fs, &self.dir, id)?;
            }
            self.flush_memtable(&mem, true)?;
        }
        let (wal_id, vlog_id) = {
            let mut m = lock(&self.manifest);
            let m = m.as_mut().ok_or(Error::Closed)?;
            (super::write::new_wal_id(m), m.next_file_id())
        };
        let vlog_id = u32::try_from(vlog_id).map_err(|_| {
            Error::InvalidArgument("file ids exhausted the value-log id space".into())
        })?;
        // Every WAL before this one is flushed: no link to check.
        let link = wal::Link::NONE;
        let wal = LogWriter::create_mapped(
            &self.opts.fs,
            &filename::wal(&self.dir, wal_id),
            WAL_MAGIC,
            WAL_VERSION,
            &link.framed(),
            super::write::wal_reserve(&self.opts),
        )?;
        let vlog = VlogWriter::create(&self.opts.fs, &self.dir, vlog_id)?;
        let head = Arc::new(VlogFile::open(
            &self.opts.fs,
            &filename::vlog(&self.dir, vlog_id),
            vlog_id,
        )?);
        sync_dir(&self.opts.fs, &self.dir)?;
        // Value-log files holding nothing but a header can go.
        let mut edits = vec![
            Edit::AddVlog(vlog_id),
            Edit::LogNumber(wal_id),
            Edit::LastSeq(last_seq),
        ];
        let st = self.read_state();
        let mut vlogs = (*st.vlogs).clone();
        let mut empty = Vec::new();
        for f in st.vlogs.all() {
            if f.len()? <= wal::HEADER_LEN as u64 {
                edits.push(Edit::DeleteVlog(f.id()));
                empty.push(f.path().to_path_buf());
                vlogs = vlogs.without(f.id());
            }
        }
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&edits)?;
        for path in empty {
            remove(&self.opts.fs, &path)?;
        }
        for id in replayed {
            remove(&self.opts.fs, &filename::wal(&self.dir, *id))?;
        }
        // Every WAL of before is flushed and gone: the GC collects the files
        // sealed until now without a flush.
        self.gc.note_opened(vlogs.all().map(|f| f.id()), wal_id);
        // Before the file is published (`gc::GcEnv::head_vlog` says why).
        self.counters
            .vlog_head_id
            .store(u64::from(vlog.id()), Ordering::SeqCst);
        self.counters
            .vlog_head_len
            .store(vlog.len(), Ordering::Relaxed);
        let vlogs = Arc::new(vlogs.with(head));
        self.update_state(|st| ReadState {
            mem: Arc::new(Memtable::with_pool(wal_id, Some(self.chunk_pool.clone()))),
            imm: Vec::new(),
            version: st.version.clone(),
            vlogs,
            range_dels: st.range_dels.clone(),
        });
        *lock(&self.log) = Some(LogState {
            wal,
            vlog,
            framed: Vec::new(),
            unsynced_wals: Vec::new(),
        });
        Ok(())
    }

    fn start_threads(self: &Arc<Self>) {
        self.bg
            .adopt(self.spawn_background("flush", DbInner::flush_loop));
        for _ in 0..self.opts.compaction_threads {
            self.bg
                .adopt(self.spawn_background("compaction", DbInner::compaction_loop));
        }
        if self.opts.vlog_gc_ratio > 0.0 {
            self.bg
                .adopt(self.spawn_background("value-log GC", DbInner::gc_loop));
        }
    }

    /// Runs a background loop; a panic in it poisons the Db with its message,
    /// so that callers get an error instead of waiting for work that no
    /// thread will do any more.
    fn spawn_background(
        self: &Arc<Self>,
        name: &'static str,
        run: fn(Arc<DbInner>),
    ) -> JoinHandle<()> {
        let me = self.clone();
        std::thread::spawn(move || {
            let watch = me.clone();
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || run(me)))
            {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                watch.poison_with(&Error::Poisoned(format!(
                    "the background {name} thread panicked: {why}"
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Stored;

    /// A WAL at `path` of `version` holding one batch (seq 7: "k" → "v"),
    /// appended through the mapping when the file system allows it.
    fn wal_with_one_batch(path: &Path, version: u32) -> LogWriter {
        wal_with(path, version, wal::Link::NONE, 7, b"k")
    }

    /// A WAL at `path` of `version` (starting with `link` from version 4 on)
    /// holding one batch: `key` → "v" at `seq`.
    fn wal_with(path: &Path, version: u32, link: wal::Link, seq: u64, key: &[u8]) -> LogWriter {
        let mut rec = Vec::new();
        value::encode(&mut rec, &Stored::Inline(b"v"), 0, 0);
        let mut framed = Vec::new();
        let synced = if version >= 4 {
            (wal::HEADER_LEN + wal::RECORD_HEADER_LEN + wal::LINK_LEN) as u64
        } else {
            wal::HEADER_LEN as u64
        };
        wal::frame_with(&mut framed, |buf| {
            batch::encode_wal_record_to(buf, synced, seq, [(key, &rec[..])].into_iter());
        });
        let first = if version >= 4 {
            link.framed()
        } else {
            Vec::new()
        };
        let mut w =
            LogWriter::create_mapped(&Fs::real(), path, WAL_MAGIC, version, &first, 8 << 20)
                .unwrap();
        w.append(&framed).unwrap();
        w
    }

    fn replay(path: &Path) -> (bool, Memtable) {
        let mem = Memtable::new(1);
        let (mut last, mut seqs) = (0, (u64::MAX, 0));
        let chain = WalChain {
            prev: None,
            log_number: 0,
            newest: true,
        };
        let replay = replay_wal(
            &crate::fs::Fs::real(),
            path,
            chain,
            &mem,
            &VlogSet::default(),
            &mut last,
            &mut seqs,
        )
        .unwrap();
        (matches!(replay, Replay::Whole(_)), mem)
    }

    /// Replays the WALs `ids` of `dir` as an open does.
    fn replay_chain(dir: &Path, ids: &[u64], log_number: u64) -> Result<(Vec<u64>, Memtable)> {
        let mem = Memtable::new(1);
        let (mut last, mut seqs) = (0, (u64::MAX, 0));
        let fs = Fs::real();
        let vlogs = VlogSet::default();
        replay_wals(
            &fs, dir, ids, log_number, &mem, &vlogs, &mut last, &mut seqs,
        )
        .map(|replayed| (replayed, mem))
    }

    #[test]
    fn a_wal_after_one_that_a_power_cut_left_short_is_not_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let first = wal_with(&filename::wal(dir.path(), 3), 4, wal::Link::NONE, 7, b"a");
        let link = wal::Link {
            prev_id: 3,
            prev_len: first.len(),
        };
        let second = wal_with(&filename::wal(dir.path(), 5), 4, link, 8, b"b");
        drop((first, second));
        let (replayed, mem) = replay_chain(dir.path(), &[3, 5], 3).unwrap();
        assert_eq!(replayed, vec![3, 5]);
        assert!(mem.get(b"a", 100).is_some() && mem.get(b"b", 100).is_some());

        // The first WAL was never synced, and the cut lost its batch: the
        // page came back as the zeros allocated ahead, which end a log
        // cleanly. Only the link tells that the second WAL's batch comes
        // after a write that is gone.
        let path = filename::wal(dir.path(), 3);
        let mut bytes = std::fs::read(&path).unwrap();
        let batch_at = wal::HEADER_LEN + wal::RECORD_HEADER_LEN + wal::LINK_LEN;
        bytes[batch_at..].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let (replayed, mem) = replay_chain(dir.path(), &[3, 5], 3).unwrap();
        assert_eq!(replayed, vec![3]);
        assert!(mem.get(b"a", 100).is_none());
        assert!(
            mem.get(b"b", 100).is_none(),
            "a write after a lost one was replayed"
        );

        // Once the manifest records the first WAL flushed, the second
        // replays whole.
        let (replayed, mem) = replay_chain(dir.path(), &[5], 4).unwrap();
        assert_eq!(replayed, vec![5]);
        assert!(mem.get(b"b", 100).is_some());
    }

    #[test]
    fn a_newest_wal_torn_while_being_created_holds_nothing_and_an_older_one_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let first = wal_with(&filename::wal(dir.path(), 3), 4, wal::Link::NONE, 7, b"a");
        let link = wal::Link {
            prev_id: 3,
            prev_len: first.len(),
        };
        drop(first);
        // WAL 5 as a crash in its creation leaves it: header and link, the
        // header's first sector zeroed.
        let mut torn = wal::file_header(WAL_MAGIC, WAL_VERSION).to_vec();
        torn.extend_from_slice(&link.framed());
        torn[..8].fill(0);
        std::fs::write(filename::wal(dir.path(), 5), &torn).unwrap();
        let (replayed, mem) = replay_chain(dir.path(), &[3, 5], 3).unwrap();
        assert_eq!(replayed, vec![3, 5]);
        assert!(mem.get(b"a", 100).is_some());
        // The same damage in a WAL that a newer one follows: corruption.
        drop(wal_with(
            &filename::wal(dir.path(), 7),
            4,
            wal::Link::NONE,
            9,
            b"c",
        ));
        let err = replay_chain(dir.path(), &[3, 5, 7], 3)
            .map(|_| ())
            .unwrap_err();
        assert!(err.is_corruption(), "{err}");
        // And in a newest WAL holding a record past its link: corruption.
        let mut rotted = std::fs::read(filename::wal(dir.path(), 7)).unwrap();
        rotted[..8].fill(0);
        std::fs::write(filename::wal(dir.path(), 7), &rotted).unwrap();
        std::fs::remove_file(filename::wal(dir.path(), 5)).unwrap();
        let err = replay_chain(dir.path(), &[3, 7], 3)
            .map(|_| ())
            .unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    #[test]
    fn a_wal_whose_unflushed_predecessor_is_missing_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let link = wal::Link {
            prev_id: 3,
            prev_len: 100,
        };
        drop(wal_with(&filename::wal(dir.path(), 5), 4, link, 8, b"b"));
        let err = replay_chain(dir.path(), &[5], 3).map(|_| ()).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(err.to_string().contains("000003.wal"), "{err}");
    }

    #[test]
    fn a_format_3_wal_ends_cleanly_at_its_zero_tail_and_a_format_2_one_is_cut_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.wal");
        let w = wal_with_one_batch(&path, 3);
        // Read while the writer still holds its mapping, as after a kill.
        let data = std::fs::read(&path).unwrap();
        assert!(
            data.len() as u64 > w.len(),
            "the mapped WAL allocated no space ahead"
        );
        assert!(data[w.len() as usize..].iter().all(|&b| b == 0));
        let (complete, mem) = replay(&path);
        assert!(
            complete,
            "format 3: zeros after the last record end the log"
        );
        assert_eq!(mem.get(b"k", 100).map(|(seq, _)| seq), Some(7));
        drop(w);

        // The same bytes under a format 2 header: the zeros are a cut.
        let path2 = dir.path().join("000002.wal");
        let mut bytes = data.clone();
        bytes[..wal::HEADER_LEN].copy_from_slice(&wal::file_header(WAL_MAGIC, 2));
        std::fs::write(&path2, &bytes).unwrap();
        let (complete, mem) = replay(&path2);
        assert!(!complete);
        assert_eq!(mem.get(b"k", 100).map(|(seq, _)| seq), Some(7));

        // A record torn in the allocated space is still a cut in format 3.
        let mut torn = data;
        let end = wal_with_one_batch(&dir.path().join("000003.wal"), 3).len() as usize;
        torn[end..end + 6].copy_from_slice(&[1, 2, 3, 4, 9, 0]);
        let path3 = dir.path().join("000004.wal");
        std::fs::write(&path3, &torn).unwrap();
        assert!(!replay(&path3).0);
    }
}
