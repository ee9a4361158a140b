//! What the value-log GC needs from the Db, and nothing else: `GcEnv`.
//!
//! The GC (`GcState` and its rounds) reaches the Db only through these
//! verbs, so that it is tested against a fake environment over real
//! value-log files, without a whole Db (`gc::tests`), as pebble tests its
//! commit pipeline against a fake `commitEnv`. `DbInner` implements it
//! below.
//!
//! Lock contracts are given beside each verb (`Requires:`), against the
//! Db's lock order (db/mod.rs): the GC calls every verb holding at most its
//! own collection lock (`GcState::exclusive`), which comes before every
//! lock a verb takes; it never calls one while holding its `samples` or
//! `sealed_for` mutex (a rotation takes `sealed_for` under `log` and
//! `manifest`).

use super::trace::{Phase, Trace};
use super::*;
use crate::manifest::Edit;
use crate::vlog::VlogFile;
use std::path::Path;

/// Everything the value-log GC reads from or asks of the Db.
pub(crate) trait GcEnv {
    // What the GC reads.

    /// The options the Db was opened with (the GC's ratios, rate, file sizes).
    /// Requires: nothing.
    fn opts(&self) -> &Options;

    /// The Db's directory, named in corruption errors.
    /// Requires: nothing.
    fn dir(&self) -> &Path;

    /// The clock's now, in unix seconds (entries expire against it).
    /// Requires: nothing.
    fn now(&self) -> u64;

    /// What readers see now: memtables, tables, live value-log files. The
    /// GC's lookups and walks go through it; holding it keeps its files
    /// readable. Requires: no `state` guard held (takes it for reading).
    fn read_state(&self) -> Arc<ReadState>;

    /// The newest sequence visible to reads. Read after `read_state`, so
    /// that every table of that state was built before it (as iterators do).
    /// Requires: nothing (an atomic).
    fn visible_seq(&self) -> u64;

    /// The id of the head value-log file, read without the log lock (a
    /// writer taking that lock back to back kept the GC from it for
    /// seconds). A rotation stores the new head's id before it publishes the
    /// file, so a read state taken before this holds no newer head: no file
    /// of it at or past the returned id may be collected.
    /// Requires: nothing (an atomic).
    fn head_vlog(&self) -> u32;

    /// Garbage bytes per value-log file as compactions and flushes counted
    /// them (the manifest's record). Requires: `manifest` not held.
    fn discard(&self) -> BTreeMap<u32, u64>;

    /// Bytes appended to the value log since open by writes, not by the
    /// GC's own moves: the write rate the GC keeps pace with. Read without
    /// the log lock. Requires: nothing (atomics).
    fn vlog_appended(&self) -> u64;

    /// Batches written since open: a walk over the tree is stale once this
    /// moved. Requires: nothing (an atomic).
    fn batches(&self) -> u64;

    /// `Error::Closed` once the Db is closing: long rounds and sleeps look
    /// between steps. Requires: nothing.
    fn check_open(&self) -> Result<()>;

    /// An error unless the GC may write: open, not read-only, not poisoned.
    /// Requires: no `poison` guard held.
    fn check_writable(&self) -> Result<()>;

    // Idleness and wake-ups.

    /// Looks at the foreground work since the last look: marks the Db idle
    /// once no batch has been written for `IDLE_AFTER` (the compaction
    /// thread then merges L0 down, so that the garbage its shadowed versions
    /// hold is counted: `compaction::due`), or busy again, and returns
    /// whether it is idle. Reads do not count. A Db nobody has written since
    /// it opened is idle at once.
    /// Requires: `bg` not held (takes it).
    fn look_idle(&self) -> bool;

    /// Whether the Db is idle now (as last looked, and no batch since).
    /// Requires: `bg` not held (takes it).
    fn idle(&self) -> bool;

    /// Waits up to `timeout` for a wake-up (a compaction or flush done, a
    /// head sealed); false once the Db shuts down or is poisoned, when the
    /// GC thread ends. Requires: `bg` not held (waits on it).
    fn wait_for_work(&self, timeout: Duration) -> bool;

    // What the GC asks the Db to do.

    /// Seals head value-log file `head` (a new head is started) if it is
    /// still the head, and returns the head then. With `wait` false, gives
    /// up (None) if a writer holds the log lock. A failed rotation poisons
    /// the Db. Requires: none of `queue`, `log`, `manifest`, `state`, `bg` held
    /// (takes `log`, then `manifest` and `state`).
    fn seal_head(&self, head: u32, wait: bool) -> Result<Option<u32>>;

    /// Switches the memtable (its flush follows in the background) unless
    /// it is empty, and returns the WAL id of the newest immutable memtable
    /// then: what `wait_flushed_through` waits for to flush the WALs written
    /// so far. Writers wait for the switch, as for any. Marks
    /// `Phase::FlushLock` once it holds the log lock.
    /// Requires: none of `queue`, `log`, `manifest`, `state`, `bg` held.
    fn switch_memtable(&self, trace: &mut Trace) -> Result<Option<u64>>;

    /// Waits until every immutable memtable whose WAL id is at most `wal_id`
    /// is flushed into a table (or the Db is poisoned).
    /// Requires: `bg` not held (waits on it), nor anything a flush takes
    /// (`log`, `manifest`, `state`).
    fn wait_flushed_through(&self, wal_id: u64) -> Result<()>;

    /// Hands `moves` to the write pipeline as one writer: the leader applies
    /// each that is still the newest version of its key, pointing where it
    /// did, at its own version with a pointer into the head; the others are
    /// dropped. Returns once they are in the logs and memtable (unsynced).
    /// Requires: no Db lock held but the GC's (queues as a writer: `queue`,
    /// `log`, `manifest`, `state`), and may wait for memtable room.
    fn write_moves(&self, moves: Vec<Move>) -> Result<()>;

    /// Makes durable what deleting collected files relies on: the moves,
    /// and the versions that made the files' other entries garbage. Those
    /// are in the head value-log file (a rotation syncs the file it ends)
    /// and the live WALs, which no memtable switch syncs.
    /// Synced through handles of its own, not under the log lock: writers
    /// go on meanwhile. (Every write group puts its bytes in the files
    /// before its entries are visible, so what the GC saw is in them.)
    /// Requires: no `state` guard held.
    fn sync_for_delete(&self) -> Result<()>;

    /// Records in the manifest that value-log files `ids` are deleted; from
    /// then on a reopen does not know them. A failure poisons the Db.
    /// Requires: `manifest` not held.
    fn log_vlogs_deleted(&self, ids: &[u32]) -> Result<()>;

    /// Takes `files` out of the read state (readers that hold an older one
    /// keep them open) and removes them from the directory, or defers a
    /// removal while a checkpoint links the file. Requires: their deletion
    /// is in the manifest (`log_vlogs_deleted`); no `state` guard nor
    /// `holds` held.
    fn delete_vlogs(&self, files: &[Arc<VlogFile>]) -> Result<()>;
}

impl GcEnv for DbInner {
    fn opts(&self) -> &Options {
        &self.opts
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    fn now(&self) -> u64 {
        DbInner::now(self)
    }

    fn read_state(&self) -> Arc<ReadState> {
        DbInner::read_state(self)
    }

    fn visible_seq(&self) -> u64 {
        self.commit.visible()
    }

    fn head_vlog(&self) -> u32 {
        self.counters.vlog_head_id.load(Ordering::SeqCst) as u32
    }

    fn discard(&self) -> BTreeMap<u32, u64> {
        lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
            .unwrap_or_default()
    }

    fn vlog_appended(&self) -> u64 {
        (self.counters.vlog_sealed_bytes.load(Ordering::Relaxed)
            + self.counters.vlog_head_len.load(Ordering::Relaxed))
        .saturating_sub(self.counters.gc_moved_bytes.load(Ordering::Relaxed))
    }

    fn batches(&self) -> u64 {
        self.counters.batches.load(Ordering::Relaxed)
    }

    fn check_open(&self) -> Result<()> {
        DbInner::check_open(self)
    }

    fn check_writable(&self) -> Result<()> {
        DbInner::check_writable(self)
    }

    fn look_idle(&self) -> bool {
        let batches = self.counters.batches.load(Ordering::Relaxed);
        self.bg.look_idle(Instant::now(), batches, IDLE_AFTER)
    }

    fn idle(&self) -> bool {
        self.bg
            .is_idle(self.counters.batches.load(Ordering::Relaxed))
    }

    fn wait_for_work(&self, timeout: Duration) -> bool {
        self.bg.wait_for_work(timeout, || self.poisoned().is_some())
    }

    fn seal_head(&self, head: u32, wait: bool) -> Result<Option<u32>> {
        let mut guard = match self.log.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if wait => lock(&self.log),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        let log = guard.as_mut().ok_or(Error::Closed)?;
        if log.vlog.id() == head {
            self.rotate_vlog(log).inspect_err(|e| self.poison_with(e))?;
        }
        Ok(Some(log.vlog.id()))
    }

    fn switch_memtable(&self, trace: &mut Trace) -> Result<Option<u64>> {
        let mut guard = lock(&self.log);
        trace.mark(Phase::FlushLock);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        if !DbInner::read_state(self).mem.is_empty() {
            DbInner::switch_memtable(self, log)?;
        }
        Ok(DbInner::read_state(self)
            .imm
            .iter()
            .map(|m| m.wal_id())
            .max())
    }

    fn wait_flushed_through(&self, wal_id: u64) -> Result<()> {
        DbInner::wait_flushed_through(self, wal_id)
    }

    fn write_moves(&self, moves: Vec<Move>) -> Result<()> {
        self.write(WriterKind::Moves(moves), None)
    }

    fn sync_for_delete(&self) -> Result<()> {
        let st = DbInner::read_state(self);
        if let Some(head) = st.vlogs.get(GcEnv::head_vlog(self)) {
            head.sync(&self.opts.fs)?;
        }
        // Every live WAL, oldest first: a memtable switch syncs none.
        for m in st.imm.iter().rev().chain(std::iter::once(&st.mem)) {
            super::super::write::sync_wal_file(&self.opts.fs, &self.dir, m.wal_id())?;
        }
        Ok(())
    }

    fn log_vlogs_deleted(&self, ids: &[u32]) -> Result<()> {
        let edits: Vec<Edit> = ids.iter().map(|&id| Edit::DeleteVlog(id)).collect();
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&edits)
            .inspect_err(|e| self.poison_with(e))
    }

    fn delete_vlogs(&self, files: &[Arc<VlogFile>]) -> Result<()> {
        self.update_state(|s| {
            let mut vlogs = (*s.vlogs).clone();
            for f in files {
                vlogs = vlogs.without(f.id());
            }
            ReadState {
                mem: s.mem.clone(),
                imm: s.imm.clone(),
                version: s.version.clone(),
                vlogs: Arc::new(vlogs),
                range_dels: s.range_dels.clone(),
            }
        });
        for f in files {
            self.remove_vlog_file(f.id(), f.path())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::GcEnv;

    #[test]
    fn a_head_rotation_with_no_writes_is_not_read_as_appended_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = crate::options::Options::new(dir.path());
        o.value_threshold = 64;
        o.vlog_gc_ratio = 0.0;
        let db = crate::Db::open(o).unwrap();
        db.put(b"k", &[7u8; 300]).unwrap();
        let env = &*db.inner;
        let before = env.vlog_appended();
        assert!(before >= 300, "the put appended its value: {before}");
        for _ in 0..3 {
            let head = env.head_vlog();
            let now = env.seal_head(head, true).unwrap();
            assert_ne!(now, Some(head), "a new head was started");
        }
        assert_eq!(env.vlog_appended(), before, "three rotations, no writes");
        db.put(b"k2", &[8u8; 300]).unwrap();
        assert!(env.vlog_appended() >= before + 300, "a write still counts");
    }
}
