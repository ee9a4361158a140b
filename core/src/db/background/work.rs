//! The Db's side of background work: writing a memtable to a table,
//! running a compaction, flatten and the drops; and `DbInner` as the
//! loops' [`BackgroundEnv`].

use super::super::recovery::remove;
use super::super::*;
use super::{BackgroundEnv, CompactionJob};
use crate::fs::sync_dir;
use crate::levels::compaction::{self, Compaction};
use crate::manifest::{Edit, TableRecord};
use crate::range_del::{RangeDels, RangeTombstone};
use crate::table::{Table, TableBuilder};

impl DbInner {
    /// The flush thread ([`super::flush_loop`]).
    pub(crate) fn flush_loop(self: Arc<Self>) {
        super::flush_loop(&*self);
    }

    /// Writes `mem` to an L0 table, records it, and drops its WAL. The table
    /// takes the id reserved with the WAL (`write::flushed_table_id`), or a
    /// new one when `fresh_id` (recovery's memtable, replayed from WALs an
    /// older build may have written).
    pub(crate) fn flush_memtable(&self, mem: &Arc<Memtable>, fresh_id: bool) -> Result<()> {
        // Values the table will point to must be durable before the WAL goes.
        // The WAL itself is not synced: after a crash between the table's
        // write and its manifest record, recovery tells the leftover table
        // from a manifest that lost records by its id (the WAL it came from
        // is still on disk; recovery::check_orphan_tables).
        for f in self.read_state().vlogs.all() {
            f.sync(&self.opts.fs)?;
        }
        let mut edits = Vec::new();
        let mut added = Vec::new();
        let mut discard: std::collections::HashMap<u32, u64> = Default::default();
        if !mem.has_no_entries() {
            let id = match fresh_id {
                true => lock(&self.manifest)
                    .as_mut()
                    .ok_or(Error::Closed)?
                    .next_file_id(),
                false => super::super::write::flushed_table_id(mem.wal_id()),
            };
            let path = filename::table(&self.dir, id);
            let mut b = TableBuilder::create(
                &self.opts.fs,
                &path,
                self.opts.block_size,
                self.opts.bloom_bits_per_key,
                self.opts.codec(0),
            )?
            .with_keyspace_codecs(self.catalog.codecs());
            // Versions that no snapshot can see any more stay out of the table,
            // and their separated values are counted as value-log garbage now,
            // as a compaction would: with large values a memtable holds many
            // versions of few keys, and compactions would find them late.
            // The snapshot first, then the tombstones: every tombstone at or
            // below it was published, so it is in the set read after. Only
            // durable tombstones may drop data: those of this memtable (the
            // manifest records them with its table) and of older ones, which
            // are all at or below its last sequence; a newer memtable's may
            // still be lost to a power cut without `sync_writes`.
            let snapshot = self.smallest_snapshot();
            let range_seq = snapshot.min(mem.max_seq());
            let dels = self.read_state().range_dels.clone();
            let mut user_key: Option<Vec<u8>> = None;
            let mut shadowed = false;
            let built = mem
                .for_each(|k, v| {
                    let (uk, seq) = crate::key::split(k);
                    if user_key.as_deref() != Some(uk) {
                        user_key = Some(uk.to_vec());
                        shadowed = false;
                    }
                    if shadowed || dels.hides(uk, seq, range_seq) {
                        if let Some(Stored::Pointer(p)) = value::decode(v).map(|r| r.stored) {
                            *discard.entry(p.file).or_insert(0) += u64::from(p.len);
                        }
                        return Ok(());
                    }
                    // Operands are kept with every version down to their
                    // base: compaction folds them.
                    shadowed = seq <= snapshot && !value::is_merge(v);
                    b.add(k, v)
                })
                // Range deletes may have hidden every entry: then no table.
                .and_then(|_| match b.is_empty() {
                    true => Ok(None),
                    false => b.finish().map(Some),
                });
            let meta = built.inspect_err(|_| {
                let _ = self.opts.fs.remove(&path);
            })?;
            match meta {
                None => remove(&self.opts.fs, &path)?,
                Some(meta) => {
                    sync_dir(&self.opts.fs, &self.dir)?;
                    let t = Arc::new(Table::open(&self.opts.fs, &path, id, &self.cache)?);
                    t.set_range_clean(range_seq);
                    edits.push(Edit::AddTable {
                        level: 0,
                        table: TableRecord::built(id, &meta),
                    });
                    Counters::add_to_level(&self.counters.level_written, 0, t.size());
                    added.push((0, t));
                }
            }
        }
        for (&id, &bytes) in &discard {
            edits.push(Edit::VlogDiscard { id, bytes });
        }
        edits.extend(mem.range_dels().into_iter().map(Edit::AddRangeDel));
        edits.push(Edit::LogNumber(mem.wal_id() + 1));
        edits.push(Edit::LastSeq(mem.max_seq()));
        {
            let mut m = lock(&self.manifest);
            let man = m.as_mut().ok_or(Error::Closed)?;
            // What the new state's version will be (it changes only under
            // the manifest lock, or by a bulk load whose versions are newer
            // than every tombstone).
            let version = self.read_state().version.apply(&HashSet::new(), &added);
            let retired = retirable(
                man.state().range_dels.iter().chain(&mem.range_dels()),
                &version,
            );
            edits.extend(retired.iter().cloned().map(Edit::DeleteRangeDel));
            man.log(&edits)?;
            self.update_state(|st| ReadState {
                mem: st.mem.clone(),
                imm: st
                    .imm
                    .iter()
                    .filter(|m| !Arc::ptr_eq(m, mem))
                    .cloned()
                    .collect(),
                version: Arc::new(st.version.apply(&HashSet::new(), &added)),
                vlogs: st.vlogs.clone(),
                range_dels: retired_from(&st.range_dels, &retired),
            });
        }
        remove(&self.opts.fs, &filename::wal(&self.dir, mem.wal_id()))
    }

    /// A compaction thread ([`super::compaction_loop`]).
    pub(crate) fn compaction_loop(self: Arc<Self>) {
        super::compaction_loop(&*self);
    }

    pub(crate) fn run_compaction(&self, c: &Compaction) -> Result<()> {
        let _running = Running::start(&self.counters.compactions_running);
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
        // The snapshot first, then the tombstones (as in a flush).
        let (snapshot, range_seq) = self.drop_seqs();
        let dels = self.read_state().range_dels.clone();
        let trivial =
            c.is_trivial_move() && !compaction::needs_cleaning(&c.inputs[0], &dels, range_seq);
        if trivial {
            let t = &c.inputs[0];
            edits.push(Edit::AddTable {
                level: out as u8,
                table: TableRecord::of(t),
            });
            added.push((out, t.clone()));
        } else {
            let at = compaction::At {
                smallest_snapshot: snapshot,
                range_seq,
                now: self.now(),
                range_dels: &dels,
            };
            let codecs = self.catalog.codecs();
            let result = compaction::run(c, &self.opts, &self.dir, at, &codecs, || {
                lock(&self.manifest)
                    .as_mut()
                    .map(|m| m.next_file_id())
                    .unwrap_or(u64::MAX)
            })?;
            sync_dir(&self.opts.fs, &self.dir)?;
            for (&id, &bytes) in &result.discard {
                edits.push(Edit::VlogDiscard { id, bytes });
            }
            for (id, meta) in result.tables {
                let t = Table::open(
                    &self.opts.fs,
                    &filename::table(&self.dir, id),
                    id,
                    &self.cache,
                )?;
                t.set_range_clean(range_seq);
                edits.push(Edit::AddTable {
                    level: out as u8,
                    table: TableRecord::built(id, &meta),
                });
                added.push((out, Arc::new(t)));
            }
        }
        let mut m = lock(&self.manifest);
        let man = m.as_mut().ok_or(Error::Closed)?;
        let version = self.read_state().version.apply(&removed, &added);
        let retired = retirable(man.state().range_dels.iter(), &version);
        edits.extend(retired.iter().cloned().map(Edit::DeleteRangeDel));
        man.log(&edits)?;
        self.update_state(|st| ReadState {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: Arc::new(st.version.apply(&removed, &added)),
            vlogs: st.vlogs.clone(),
            range_dels: retired_from(&st.range_dels, &retired),
        });
        drop(m);
        if !trivial {
            let read = c.all_tables().map(|t| t.size()).sum();
            let written = added.iter().map(|(_, t)| t.size()).sum();
            Counters::add_to_level(&self.counters.level_read, out, read);
            Counters::add_to_level(&self.counters.level_written, out, written);
            for t in c.all_tables() {
                t.mark_obsolete(&self.opts.fs);
            }
        }
        Ok(())
    }

    /// What a compaction may drop below: (the oldest snapshot, for shadowed
    /// versions; the sequence at or below which range tombstones may drop
    /// data). The second also stays below every tombstone still in a
    /// memtable: without `sync_writes` one may be lost to a power cut, and
    /// the data it hid must survive it. (A tombstone published later is above
    /// the snapshot.) Read the tombstones after calling this.
    fn drop_seqs(&self) -> (u64, u64) {
        let snapshot = self.smallest_snapshot();
        let st = self.read_state();
        let unflushed = std::iter::once(&st.mem)
            .chain(&st.imm)
            .flat_map(|m| m.range_dels())
            .map(|t| t.seq)
            .min();
        let range_seq = match unflushed {
            Some(seq) => snapshot.min(seq.saturating_sub(1)),
            None => snapshot,
        };
        (snapshot, range_seq)
    }

    /// Flushes the memtables and compacts every level into the last one.
    pub(crate) fn flatten(&self) -> Result<()> {
        self.flush()?;
        let _manual = self.bg.pause_compactions();
        let last = self.opts.num_levels - 1;
        for level in 0..last {
            self.check_writable()?;
            let v = self.read_state().version.clone();
            if let Some(c) = compaction::whole_level(&v, level) {
                self.run_compaction(&c)
                    .inspect_err(|e| self.poison_with(e))?;
            }
        }
        // Tables of the last level that range tombstones hide versions in
        // are rewritten in place (the loop above only rewrote those that
        // met a table from above).
        let none = HashSet::new();
        loop {
            self.check_writable()?;
            let v = self.read_state().version.clone();
            let (_, range_seq) = self.drop_seqs();
            let dels = self.read_state().range_dels.clone();
            let Some(c) =
                compaction::pick_cleaning(&v, &none, &dels, range_seq).filter(|c| c.level == last)
            else {
                return Ok(());
            };
            self.run_compaction(&c)
                .inspect_err(|e| self.poison_with(e))?;
        }
    }

    /// For an operation that rewrites the tree while writes wait on `log`
    /// (held by the caller): switches out the memtable, waits for every flush
    /// and holds automatic compactions until the guard drops.
    fn settle(&self, log: &mut LogState) -> Result<super::ManualGuard<'_>> {
        self.check_no_bulk_load()?;
        if !self.read_state().mem.is_empty() {
            self.switch_memtable(log)?;
        }
        self.wait_flushed()?;
        Ok(self.bg.pause_compactions())
    }

    /// Removes every key: tables and value-log files are deleted, not rewritten.
    /// Writes wait while it runs.
    pub(crate) fn drop_all(&self) -> Result<()> {
        self.check_writable()?;
        let mut guard = lock(&self.log);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        let _manual = self.settle(log)?;
        // Not a versioned write: change-feed subscribers are told to rescan.
        self.feed.interrupt(self.commit.visible());
        self.rotate_vlog(log).inspect_err(|e| self.poison_with(e))?;
        let head = log.vlog.id();
        let st = self.read_state();
        let mut edits = Vec::new();
        for (level, tables) in st.version.levels.iter().enumerate() {
            for t in tables {
                edits.push(Edit::DeleteTable {
                    level: level as u8,
                    id: t.id(),
                });
            }
        }
        let old_vlogs: Vec<_> = st.vlogs.all().filter(|f| f.id() != head).cloned().collect();
        edits.extend(old_vlogs.iter().map(|f| Edit::DeleteVlog(f.id())));
        // No table is left, and every memtable is flushed: no tombstone hides anything.
        let logged = {
            let mut m = lock(&self.manifest);
            let m = m.as_mut().ok_or(Error::Closed)?;
            let retired: Vec<RangeTombstone> = m.state().range_dels.iter().cloned().collect();
            edits.extend(retired.iter().cloned().map(Edit::DeleteRangeDel));
            m.log(&edits).map(|_| retired)
        };
        // Poisoning takes `bg`: not under the manifest lock.
        let retired = logged.inspect_err(|e| self.poison_with(e))?;
        let mut vlogs = (*st.vlogs).clone();
        for f in &old_vlogs {
            vlogs = vlogs.without(f.id());
        }
        self.update_state(|s| ReadState {
            mem: s.mem.clone(),
            imm: s.imm.clone(),
            version: Arc::new(Version::new(self.opts.num_levels)),
            vlogs: Arc::new(vlogs),
            range_dels: retired_from(&s.range_dels, &retired),
        });
        for t in st.version.levels.iter().flatten() {
            t.mark_obsolete(&self.opts.fs);
        }
        for f in old_vlogs {
            self.remove_vlog_file(f.id(), f.path())?;
        }
        Ok(())
    }

    /// Removes every key that starts with `prefix`, rewriting the tables that
    /// hold such keys (the drop before range deletes, kept for comparison:
    /// `Db::drop_prefix_rewriting`). Writes wait while it runs. Levels are rewritten one
    /// table at a time, deepest first: readers during the drop, and a reopen
    /// after a crash in its middle, see each key of the prefix with its value
    /// from before the drop or not at all.
    pub(crate) fn drop_prefix(&self, prefix: &[u8]) -> Result<()> {
        if prefix.is_empty() {
            return self.drop_all();
        }
        self.check_writable()?;
        let mut guard = lock(&self.log);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        let _manual = self.settle(log)?;
        // Not a versioned write: change-feed subscribers are told to rescan.
        self.feed.interrupt(self.commit.visible());
        // compaction::drop_prefix says why the deepest level goes first.
        for level in (0..self.opts.num_levels).rev() {
            let v = self.read_state().version.clone();
            for c in compaction::drop_prefix(&v, level, prefix) {
                self.run_compaction(&c)
                    .inspect_err(|e| self.poison_with(e))?;
            }
        }
        Ok(())
    }
}

/// The tombstones of `durable` (recorded in the manifest, or being recorded
/// with the flush of their memtable) that may be retired once `version` is
/// live: every table of it whose key range meets the tombstone's was built
/// after dropping what the tombstone hides (`Table::range_clean`). Their
/// memtable and every older one are flushed, and newer memtables only hold
/// newer versions (value-log GC's moves keep old versions, but only of keys
/// a lookup finds live, which a tombstone's keys are not); so no version the
/// tombstone hides is left anywhere, and dropping it changes no read.
fn retirable<'a>(
    durable: impl Iterator<Item = &'a RangeTombstone>,
    version: &Version,
) -> Vec<RangeTombstone> {
    durable
        .filter(|d| {
            version.levels.iter().flatten().all(|t| {
                let (lo, hi) = (key::user_key(t.smallest()), key::user_key(t.largest()));
                !d.meets(lo, hi) || t.range_clean() >= d.seq
            })
        })
        .cloned()
        .collect()
}

/// `dels` without `retired` (the same set when there is none).
fn retired_from(dels: &Arc<RangeDels>, retired: &[RangeTombstone]) -> Arc<RangeDels> {
    if retired.is_empty() {
        dels.clone()
    } else {
        Arc::new(dels.without(retired))
    }
}

/// Counts one compaction in progress for as long as it lives, however the
/// compaction ends.
struct Running<'a>(&'a AtomicU64);

impl<'a> Running<'a> {
    fn start(counter: &'a AtomicU64) -> Running<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        Running(counter)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CompactionJob for Compaction {
    fn tables(&self) -> Vec<u64> {
        self.all_tables().map(|t| t.id()).collect()
    }
}

/// The Db as its flush and compaction threads see it.
impl BackgroundEnv for DbInner {
    type Mem = Arc<Memtable>;
    type Job = Compaction;

    fn background(&self) -> &super::Background {
        &self.bg
    }

    fn oldest_immutable(&self) -> Option<Arc<Memtable>> {
        self.read_state().imm.last().cloned()
    }

    fn flush(&self, mem: &Arc<Memtable>) -> Result<()> {
        self.flush_memtable(mem, false)
    }

    fn batches(&self) -> u64 {
        self.counters.batches.load(Ordering::Relaxed)
    }

    fn pick(&self, busy: &HashSet<u64>, cursors: &mut [Vec<u8>], idle: bool) -> Option<Compaction> {
        let version = self.read_state().version.clone();
        compaction::pick(&version, &self.opts, busy, cursors, idle).or_else(|| {
            // Nothing due: drop what range tombstones hide.
            let (_, range_seq) = self.drop_seqs();
            let dels = self.read_state().range_dels.clone();
            compaction::pick_cleaning(&version, busy, &dels, range_seq)
        })
    }

    fn compact(&self, job: &Compaction) -> Result<()> {
        self.run_compaction(job)
    }

    fn poisoned(&self) -> bool {
        DbInner::poisoned(self).is_some()
    }

    fn poison_with(&self, e: &Error) {
        DbInner::poison_with(self, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Writes one key and flushes it to its own L0 table.
    /// A Db with `tables` L0 tables of one key each (trigger 2) and automatic
    /// compactions held back, as a manual operation holds them.
    fn held_back_l0(tables: u32) -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.l0_compaction_trigger = 2;
        let db = Db::open(opts).unwrap();
        db.inner.bg.hold_compactions(true);
        for i in 0..tables {
            db.put(format!("k{i:04}").as_bytes(), &[i as u8; 100])
                .unwrap();
            db.flush().unwrap();
        }
        (dir, db)
    }

    #[test]
    fn stats_report_a_held_back_l0_compaction_then_zero_once_it_ran() {
        let (_dir, db) = held_back_l0(3);
        let s = db.stats();
        assert_eq!(s.levels[0].0, 3);
        assert_eq!(s.compactions_pending, 1, "{s:?}");
        assert_eq!(s.compactions_running, 0, "{s:?}");

        db.inner.bg.hold_compactions(false);
        let deadline = Instant::now() + Duration::from_secs(20);
        let s = loop {
            let s = db.stats();
            if s.compactions_pending == 0 && s.compactions_running == 0 {
                break s;
            }
            assert!(
                Instant::now() < deadline,
                "compaction never finished: {s:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(s.levels[0].0 < 2, "{s:?}");
        assert_eq!(s.table_entries, 3);
    }

    #[test]
    fn stats_count_the_bytes_flushes_write_into_l0_and_compactions_into_each_level() {
        let (_dir, db) = held_back_l0(3);
        let s = db.stats();
        let l0 = s.levels[0].1;
        assert!(l0 > 0);
        assert_eq!(s.level_bytes_written[0], l0, "{s:?}");
        assert!(s.level_bytes_written[1..].iter().all(|&b| b == 0), "{s:?}");
        assert!(s.level_bytes_read.iter().all(|&b| b == 0), "{s:?}");
        assert!(s.wal_bytes_written >= 3 * 100, "{s:?}");
        assert_eq!(s.level_bytes_written.len(), s.levels.len());

        // L0 merges into one L1 table (read: L0's bytes); flatten then moves
        // it down to the last level whole, which writes nothing.
        db.inner.bg.hold_compactions(false);
        db.flatten().unwrap();
        let s = db.stats();
        let last = s.levels.len() - 1;
        assert_eq!(s.level_bytes_read[1], l0, "{s:?}");
        assert_eq!(s.level_bytes_written[1], s.levels[last].1, "{s:?}");
        assert!(
            s.level_bytes_written[2..].iter().all(|&b| b == 0),
            "a table moved down whole is not counted as written: {s:?}"
        );
    }

    #[test]
    fn stats_report_no_compaction_after_flatten() {
        let (_dir, db) = held_back_l0(4);
        assert_eq!(db.stats().compactions_pending, 1);
        db.inner.bg.hold_compactions(false);
        db.flatten().unwrap();
        let s = db.stats();
        assert_eq!(
            (s.compactions_pending, s.compactions_running),
            (0, 0),
            "{s:?}"
        );
        assert_eq!(
            s.levels.iter().map(|l| l.0).sum::<usize>(),
            s.levels.last().unwrap().0
        );
    }
}
