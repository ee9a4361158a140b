//! Applying writes: the Db's side of the commit pipeline (db/commit.rs).
//!
//! A group's batches become one framed WAL record each and their separated
//! values value-log entries, written in one append and fsynced once if any
//! batch asks; then the group goes into the memtable (followers with large
//! batches insert their own, on their own threads) and is published.
//! Value-log GC's moves are applied alone, each only if still live. Also
//! here: write stalls (`room`), memtable switches, flush and close.

use super::background::RoomWait;
use super::commit::{self, CommitEnv, TxnCheck, Writer};
use super::*;
use crate::batch;
use crate::batch::{OpValue, Space};
use crate::fs::sync_dir;
use crate::keyspace;
use crate::manifest::Edit;
use crate::range_del::RangeTombstone;
use crate::value::ValuePointer;
use crate::vlog::VlogFile;
use crate::wal;
use crate::wal::{Link, WAL_MAGIC, WAL_VERSION};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::Duration;

/// The WAL buffer is kept for the next group up to this capacity.
const KEEP_FRAMED_BYTES: usize = 1 << 20;
/// Per-op bytes added to a batch's size when checking it fits one WAL record.
const OP_OVERHEAD: usize = 64;

/// A batch's entries ready for the memtable: the keys it owns, and every
/// value record in one buffer (one allocation per batch, not one per entry).
#[derive(Default)]
struct EncodedBatch {
    /// The keys, back to back.
    keys: Vec<u8>,
    recs: Vec<u8>,
    /// Where each key ends in `keys` and its record in `recs`.
    ends: Vec<(usize, usize)>,
}

impl EncodedBatch {
    fn with_capacity(entries: usize, key_bytes: usize, rec_bytes: usize) -> EncodedBatch {
        EncodedBatch {
            keys: Vec::with_capacity(key_bytes),
            recs: Vec::with_capacity(rec_bytes),
            ends: Vec::with_capacity(entries),
        }
    }

    /// Adds `key` with the record that `encode` appends to the buffer.
    fn push(&mut self, key: &[u8], encode: impl FnOnce(&mut Vec<u8>)) {
        encode(&mut self.recs);
        self.keys.extend_from_slice(key);
        self.ends.push((self.keys.len(), self.recs.len()));
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// (key, value record) pairs, in the batch's order.
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let starts = std::iter::once((0, 0)).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|((k0, r0), (k1, r1))| (&self.keys[k0..k1], &self.recs[r0..r1]))
    }
}

/// A live value moved by value-log GC: rewritten at its own version with a new
/// pointer, if it is still the newest version of its key when its turn comes.
pub(crate) struct Move {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub version: u64,
    pub user_meta: u8,
    pub expires_at: u64,
    pub old: ValuePointer,
    /// The sequence of the GC's walk that found it live (`gc::walk`), if one did.
    pub walked_at: Option<u64>,
}

pub(crate) enum WriterKind {
    Batch(WriteBatch),
    Moves(Vec<Move>),
}

/// The leader waits on this until every handed-out insert is done.
struct Countdown {
    left: Mutex<usize>,
    cv: Condvar,
}

impl Countdown {
    fn count_down(&self) {
        let mut left = lock(&self.left);
        *left -= 1;
        if *left == 0 {
            self.cv.notify_all();
        }
    }

    fn wait(&self) {
        let mut left = lock(&self.left);
        while *left > 0 {
            left = self.cv.wait(left).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// A follower's batch is inserted by its own thread when it has at least this
/// many entries; smaller ones are not worth the wake-up.
const PARALLEL_INSERT_MIN: usize = 64;

impl DbInner {
    fn validate(&self, batch: &WriteBatch) -> Result<usize> {
        for op in &batch.ops {
            let key = batch.key(op);
            if let Some(end) = batch.range_end(op) {
                if op.space == Space::User {
                    if keyspace::is_reserved(key) {
                        return Err(keyspace::reserved_error("range start", key));
                    }
                    self.check_range(key, end)?;
                } else {
                    self.check_range_in(key, end, keyspace::PREFIX_LEN)?;
                }
                continue;
            }
            if op.space == Space::User {
                self.check_key(key)?;
            }
            super::keyspaces::check_op_key(op.space, key, self.opts.max_key_size)?;
            if let Some(v) = batch.value(op).or_else(|| batch.operand(op)) {
                if v.len() > self.opts.max_value_size {
                    return Err(Error::TooBig {
                        what: "value",
                        len: v.len(),
                        max: self.opts.max_value_size,
                    });
                }
            }
        }
        let bytes = batch.size_bytes() + OP_OVERHEAD * batch.len();
        if bytes > wal::MAX_RECORD_LEN {
            return Err(Error::TooBig {
                what: "batch",
                len: bytes,
                max: wal::MAX_RECORD_LEN,
            });
        }
        Ok(bytes)
    }

    /// Commits a batch, or value-log moves, through the pipeline.
    pub(crate) fn write(&self, kind: WriterKind, txn: Option<TxnCheck>) -> Result<()> {
        self.write_seq(kind, txn).map(|_| ())
    }

    /// [`DbInner::write`], returning the sequence the batch committed at
    /// (0 for value-log moves and for an empty batch, which writes nothing).
    pub(crate) fn write_seq(&self, kind: WriterKind, txn: Option<TxnCheck>) -> Result<u64> {
        self.check_writable()?;
        let kind = match kind {
            WriterKind::Batch(b) if b.has_merge => WriterKind::Batch(self.prepare_merges(b)?),
            kind => kind,
        };
        let (bytes, sync) = match &kind {
            WriterKind::Batch(b) if b.is_empty() => return Ok(0),
            WriterKind::Batch(b) => (self.validate(b)?, b.sync.unwrap_or(self.opts.sync_writes)),
            WriterKind::Moves(m) if m.is_empty() => return Ok(0),
            WriterKind::Moves(m) => (
                m.iter()
                    .map(|m| m.key.len() + m.value.len() + OP_OVERHEAD)
                    .sum(),
                self.opts.sync_writes,
            ),
        };
        match kind {
            // The path follows the Db's setting, not the batch's: every batch
            // of one Db takes the same path, so sequences reach the WAL in order.
            WriterKind::Batch(b) if !self.opts.sync_writes => {
                self.commit.commit_direct(self, b, txn, bytes, sync)
            }
            kind => self.commit.commit(self, kind, txn, bytes, sync),
        }
    }

    /// Checks a batch holding merges against the Db's merge operator, and
    /// folds each merge into an earlier op of the batch on its key: a batch
    /// commits at one version, where a later op on a key replaces an
    /// earlier one, so `put; merge` becomes the put of the merged value and
    /// `merge; merge` one operand (the operator's associativity contract).
    fn prepare_merges(&self, mut batch: WriteBatch) -> Result<WriteBatch> {
        let Some(operator) = self.opts.merge_operator.clone() else {
            let key = batch
                .ops
                .iter()
                .find_map(|op| batch.operand(op).map(|_| batch.key(op).to_vec()))
                .unwrap_or_default();
            return Err(Error::MergeOperatorMissing { key });
        };
        if batch.ops.len() < 2 {
            return Ok(batch);
        }
        let mut last: HashMap<Vec<u8>, usize> = HashMap::new();
        // Ops folded into an earlier one, in order.
        let mut folded_away = Vec::new();
        for i in 0..batch.ops.len() {
            let op = &batch.ops[i];
            let key = batch.key(op).to_vec();
            if let Some(end) = batch.range_end(op) {
                // The range delete removed the batch's earlier ops in its range.
                let inside = |k: &[u8]| k >= key.as_slice() && (end.is_empty() || k < end);
                last.retain(|k, _| !inside(k));
                continue;
            }
            let Some(operand) = batch.operand(op).map(<[u8]>::to_vec) else {
                last.insert(key, i);
                continue;
            };
            let Some(&j) = last.get(&key) else {
                last.insert(key, i);
                continue;
            };
            let prior = &batch.ops[j];
            let folded = match (&prior.value, batch.value(prior)) {
                (OpValue::Merge(_), _) => {
                    let p = batch.operand(prior).unwrap_or_default();
                    let run = crate::merge::combine(&*operator, &key, &[p, &operand])?;
                    OpValue::Merge(batch.stash_bytes(&run))
                }
                (_, base) => {
                    let v = crate::merge::fold(&*operator, &key, base, &[&operand])?;
                    if base.is_none() {
                        batch.ops[j].user_meta = 0;
                        batch.ops[j].ttl = None;
                        batch.ops[j].expires_at = 0;
                    }
                    OpValue::Here(batch.stash_bytes(&v))
                }
            };
            batch.ops[j].value = folded;
            folded_away.push(i);
        }
        let mut i = 0;
        batch.ops.retain(|_| {
            i += 1;
            folded_away.binary_search(&(i - 1)).is_err()
        });
        Ok(batch)
    }

    /// Refuses writes while a bulk load owns the Db (called under the log lock).
    pub(crate) fn check_no_bulk_load(&self) -> Result<()> {
        if self.bulk_active.load(Ordering::Acquire) {
            return Err(Error::InvalidArgument(
                "a bulk load is in progress; write after it finishes".into(),
            ));
        }
        Ok(())
    }

    /// Writes a group of batches to the logs and the memtable and publishes it.
    /// Requires: the log lock (`log`).
    fn apply_batches(&self, log: &mut LogState, group: &[Arc<Writer>]) -> Result<()> {
        self.check_writable()?;
        self.check_no_bulk_load()?;
        self.make_room(log)?;
        let mem = self.read_state().mem.clone();
        let threshold = self.opts.value_threshold;
        // The clock is read only for a TTL, at most once per group.
        let mut now = None;
        let mut framed = std::mem::take(&mut log.framed);
        framed.clear();
        let mut applied: Vec<(Arc<Writer>, EncodedBatch)> = Vec::with_capacity(group.len());
        let mut tombs = Vec::new();
        let mut last = 0;
        // None (one atomic load) while no change-feed subscriber listens.
        let mut feed = self.feed.collector();
        for w in group {
            let Some(WriterKind::Batch(batch)) = w.take() else {
                continue;
            };
            // Sized for each record's header (at most 12 bytes) and its
            // inline values or pointers: no regrowth while encoding.
            // Records hold the values in the batch's buffer at most (a value
            // with its own buffer goes to the value log: a pointer here).
            let mut entries = EncodedBatch::with_capacity(
                batch.ops.len(),
                batch.data.len(),
                batch.data.len() + 32 * batch.len(),
            );
            // Range deletes go last in the WAL record and never into the memtable.
            let mut ranges = Vec::new();
            let WriteBatch { data, ops, .. } = batch;
            for op in ops {
                let key = &data[op.key.clone()];
                if let OpValue::RangeEnd(end) = &op.value {
                    if let Some(f) = feed.as_mut() {
                        f.add(w.seq(), (&op, &data), 0);
                    }
                    let end = &data[end.clone()];
                    let mut rec = Vec::with_capacity(4 + end.len());
                    value::encode_range_delete(&mut rec, end);
                    ranges.push((key.to_vec(), rec));
                    continue;
                }
                let expires = if op.expires_at != 0 {
                    op.expires_at
                } else {
                    op.ttl.map_or(0, |t| {
                        let now = *now.get_or_insert_with(|| self.now());
                        now + t.as_secs() + u64::from(t.subsec_nanos() > 0)
                    })
                };
                if let Some(f) = feed.as_mut() {
                    f.add(w.seq(), (&op, &data), expires);
                }
                // A keyspace's own threshold, else the Db's.
                let threshold = op.value_threshold.unwrap_or(threshold);
                let inline = |v: &[u8], rec: &mut Vec<u8>| {
                    value::encode(rec, &Stored::Inline(v), op.user_meta, expires);
                };
                match op.value {
                    OpValue::Delete | OpValue::RangeEnd(_) => entries.push(key, |rec| {
                        value::encode(rec, &Stored::Delete, 0, 0);
                    }),
                    OpValue::Own(v) if v.len() >= threshold => {
                        let p = log.vlog.append_owned(key, v);
                        entries.push(key, |rec| {
                            value::encode(rec, &Stored::Pointer(p), op.user_meta, expires);
                        });
                    }
                    OpValue::Here(ref v) if v.len() >= threshold => {
                        let p = log.vlog.append(key, &data[v.clone()]);
                        entries.push(key, |rec| {
                            value::encode(rec, &Stored::Pointer(p), op.user_meta, expires);
                        });
                    }
                    OpValue::Merge(ref v) => entries.push(key, |rec| {
                        value::encode(rec, &Stored::Merge(&data[v.clone()]), 0, 0);
                    }),
                    OpValue::Own(v) => entries.push(key, |rec| inline(&v, rec)),
                    OpValue::Here(ref v) => entries.push(key, |rec| inline(&data[v.clone()], rec)),
                }
            }
            let synced = log.wal.synced();
            wal::frame_with(&mut framed, |buf| {
                let ranges = ranges.iter().map(|(k, v)| (&k[..], &v[..]));
                batch::encode_wal_record_to(buf, synced, w.seq(), entries.iter().chain(ranges));
            });
            for (start, rec) in ranges {
                let end = value::decode_range_delete(&rec)
                    .unwrap_or_default()
                    .to_vec();
                tombs.push(RangeTombstone {
                    start,
                    end,
                    seq: w.seq(),
                });
            }
            applied.push((w.clone(), entries));
            last = w.seq();
        }
        let sync = group.iter().any(|w| w.wants_sync());
        let appended = self.append_logs(log, &framed, sync);
        // A huge group's buffer is not kept.
        if framed.capacity() <= KEEP_FRAMED_BYTES {
            log.framed = framed;
        }
        appended?;
        // Only batches count as writes (value-log moves, applied apart, must
        // not end the Db's idleness).
        let batches = applied.len() as u64;
        if !tombs.is_empty() {
            // Before the group is published: a read that sees its sequence sees them.
            for t in &tombs {
                mem.add_range_del(t.clone());
            }
            self.update_state(|st| ReadState {
                mem: st.mem.clone(),
                imm: st.imm.clone(),
                version: st.version.clone(),
                vlogs: st.vlogs.clone(),
                range_dels: Arc::new(st.range_dels.with(&tombs)),
            });
        }
        self.insert_group(&mem, applied);
        self.commit.publish(last);
        // Visible now; still under the log lock, so groups reach the feed in version order.
        if let Some(f) = feed {
            self.feed.publish(f);
        }
        self.counters.groups.fetch_add(1, Ordering::Relaxed);
        self.counters.batches.fetch_add(batches, Ordering::Relaxed);
        self.after_append(log);
        Ok(())
    }

    /// Inserts a logged group into the memtable. Followers with big enough
    /// batches insert their own, on their own threads, while the leader does the
    /// rest; returns when all are in. The caller still holds the log lock, so the
    /// memtable cannot be switched out meanwhile, and nothing is visible yet.
    fn insert_group(&self, mem: &Arc<Memtable>, applied: Vec<(Arc<Writer>, EncodedBatch)>) {
        let parallel = |(i, (_, e)): &(usize, &(Arc<Writer>, EncodedBatch))| {
            *i > 0 && e.len() >= PARALLEL_INSERT_MIN
        };
        if !applied.iter().enumerate().any(|x| parallel(&x)) {
            // Nothing worth handing out (a lone writer's case): no countdown, no wake-up.
            for (w, entries) in &applied {
                mem.insert_batch(w.seq(), entries.iter());
            }
            return;
        }
        let (handed, own): (Vec<_>, Vec<_>) = applied
            .into_iter()
            .enumerate()
            .partition(|(i, (_, e))| *i > 0 && e.len() >= PARALLEL_INSERT_MIN);
        let done = Arc::new(Countdown {
            left: Mutex::new(handed.len()),
            cv: Condvar::new(),
        });
        let jobs = handed
            .into_iter()
            .map(|(_, (w, entries))| {
                let (mem, done, seq) = (mem.clone(), done.clone(), w.seq());
                let job: commit::Job = Box::new(move || {
                    mem.insert_batch(seq, entries.iter());
                    done.count_down();
                });
                (w, job)
            })
            .collect();
        self.commit.hand_off(jobs);
        for (_, (w, entries)) in own {
            mem.insert_batch(w.seq(), entries.iter());
        }
        done.wait();
    }

    /// Writes the value log's buffered entries and then the WAL bytes; syncs both
    /// if asked. An error poisons the Db.
    fn append_logs(&self, log: &mut LogState, framed: &[u8], sync: bool) -> Result<()> {
        let io = (|| {
            log.vlog.flush()?;
            if sync {
                log.vlog.sync()?;
            }
            log.wal.append(framed)?;
            self.counters
                .wal_bytes
                .fetch_add(framed.len() as u64, Ordering::Relaxed);
            if sync {
                self.sync_closed_wals(log)?;
                log.wal.sync()?;
                self.counters.wal_syncs.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })();
        io.inspect_err(|e| self.poison_with(e))
    }

    fn after_append(&self, log: &mut LogState) {
        self.counters
            .vlog_head_len
            .store(log.vlog.len(), Ordering::Relaxed);
        if log.vlog.len() >= self.gc.head_target() {
            if let Err(e) = self.rotate_vlog(log) {
                self.poison_with(&e);
            }
        }
    }

    /// Applies value-log moves that are still live: each becomes a one-entry WAL
    /// record at the entry's own version, pointing at its new place.
    /// Requires: the log lock (`log`).
    fn apply_moves(&self, log: &mut LogState, w: &Writer) -> Result<()> {
        self.check_writable()?;
        self.check_no_bulk_load()?;
        self.make_room(log)?;
        let Some(WriterKind::Moves(moves)) = w.take() else {
            return Ok(());
        };
        let st = self.read_state();
        // While no table holds a version newer than a walk, every write after
        // it is in a memtable: a move the walk found live is checked there
        // (and against range deletes) instead of by a lookup through the tables.
        let newest_in_tables = st
            .version
            .levels
            .iter()
            .flatten()
            .map(|t| t.max_seq())
            .max()
            .unwrap_or(0);
        let mut applied = Vec::new();
        let mut moved_bytes = 0u64;
        for m in moves {
            // The newest version is still the one moved, pointing where it did.
            let unchanged = |found: Option<(u64, Vec<u8>)>| match found {
                Some((seq, raw)) if seq == m.version => {
                    value::decode(&raw).is_some_and(|r| r.stored == Stored::Pointer(m.old))
                }
                _ => false,
            };
            // Merge operands over the moved version, newest first: they go
            // into the memtable again with it, at their own versions, so
            // that a lookup that finds the memtable's versions first still
            // meets every version above the moved one.
            let mut above = Vec::new();
            let live = match m.walked_at {
                Some(seq) if newest_in_tables <= seq => match st.lookup_memtables(&m.key) {
                    Some((_, raw)) if value::is_merge(&raw) => {
                        self.base_unchanged(&st, &m, &mut above)?
                    }
                    found @ Some(_) => unchanged(found),
                    None => !st.range_dels.hides(&m.key, m.version, key_max()),
                },
                _ => self.base_unchanged(&st, &m, &mut above)?,
            };
            if !live {
                continue;
            }
            for (version, rec) in above {
                // Already in the active memtable at that version: nothing to
                // add. One in an immutable memtable is copied too: lookups
                // read the active one first, so it must hold every version
                // from the moved one up.
                let held = st
                    .mem
                    .get(&m.key, version)
                    .is_some_and(|(v, _)| v == version);
                if held {
                    continue;
                }
                applied.push((m.key.clone(), version, rec));
            }
            let p = log.vlog.append(&m.key, &m.value);
            moved_bytes += u64::from(p.len);
            let mut rec = Vec::new();
            value::encode(&mut rec, &Stored::Pointer(p), m.user_meta, m.expires_at);
            applied.push((m.key, m.version, rec));
        }
        // One record, replayed whole or not at all: a power cut that kept an
        // operand's copy without the older ones beside it would let the copy
        // shadow an operand that a compaction folded meanwhile at its version.
        let mut framed = Vec::new();
        if !applied.is_empty() {
            let synced = log.wal.synced();
            let entries = applied.iter().map(|(k, v, r)| (*v, &k[..], &r[..]));
            wal::frame_with(&mut framed, |buf| {
                batch::encode_versioned_wal_record_to(buf, synced, entries)
            });
        }
        self.append_logs(log, &framed, false)?;
        self.counters
            .gc_moved_bytes
            .fetch_add(moved_bytes, Ordering::Relaxed);
        for (k, version, rec) in &applied {
            st.mem.insert(k, *version, rec);
        }
        self.after_append(log);
        Ok(())
    }

    /// Whether the move `m` still moves the value of its key: the newest
    /// version that is not a merge operand is the moved one, pointing where
    /// it did. The operands over it go to `above`, newest first.
    fn base_unchanged(
        &self,
        st: &ReadState,
        m: &Move,
        above: &mut Vec<(u64, Vec<u8>)>,
    ) -> Result<bool> {
        let Some(base) = st.lookup_base(&m.key, key_max())? else {
            return Ok(false);
        };
        let same = base.version == m.version
            && value::decode(&base.raw).is_some_and(|r| r.stored == Stored::Pointer(m.old));
        if same {
            *above = base.above;
        }
        Ok(same)
    }

    /// fsyncs the head value-log file and the WAL.
    pub(crate) fn sync_logs(&self) -> Result<()> {
        let mut guard = lock(&self.log);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        log.vlog
            .sync()
            .and_then(|_| self.sync_closed_wals(log))
            .and_then(|_| log.wal.sync())
            .inspect_err(|e| self.poison_with(e))
    }

    /// Syncs the WALs closed since the last sync, oldest first, through
    /// handles of their own (their writers are gone). Every sync of the
    /// current WAL comes after it: a synced write is durable only with every
    /// write before it. A WAL flushed and deleted meanwhile needs nothing.
    /// Requires: the log lock (`log`).
    fn sync_closed_wals(&self, log: &mut LogState) -> Result<()> {
        for &id in &log.unsynced_wals {
            sync_wal_file(&self.opts.fs, &self.dir, id)?;
        }
        log.unsynced_wals.clear();
        Ok(())
    }

    /// The id of the value-log file being appended to.
    pub(crate) fn head_vlog_id(&self) -> Option<u32> {
        lock(&self.log).as_ref().map(|l| l.vlog.id())
    }

    /// Starts a new head value-log file.
    pub(crate) fn rotate_vlog(&self, log: &mut LogState) -> Result<()> {
        log.vlog.sync()?;
        let mut m = lock(&self.manifest);
        let m = m.as_mut().ok_or(Error::Closed)?;
        let id = u32::try_from(m.next_file_id()).map_err(|_| {
            Error::InvalidArgument("file ids exhausted the value-log id space".into())
        })?;
        let vlog = VlogWriter::create(&self.opts.fs, &self.dir, id)?;
        let file = Arc::new(VlogFile::open(
            &self.opts.fs,
            &filename::vlog(&self.dir, id),
            id,
        )?);
        // The old head is complete now: read it through a mapping from here on.
        let old_id = log.vlog.id();
        let sealed = Arc::new(VlogFile::open_sealed(
            &self.opts.fs,
            &filename::vlog(&self.dir, old_id),
            old_id,
        )?);
        sync_dir(&self.opts.fs, &self.dir)?;
        m.log(&[Edit::AddVlog(id)])?;
        self.gc.note_head_sealed(old_id, id);
        // Before the new file is published (`gc::GcEnv::head_vlog` says why).
        self.counters
            .vlog_head_id
            .store(u64::from(id), Ordering::SeqCst);
        self.update_state(|st| ReadState {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: st.version.clone(),
            vlogs: Arc::new(st.vlogs.with(sealed).with(file)),
            range_dels: st.range_dels.clone(),
        });
        // The sealed file's entries only, without its header: the new head
        // starts with a header of its own, and a rotation appends no entries,
        // so the GC must not read it as a write (`gc::GcEnv::vlog_appended`).
        self.counters
            .vlog_sealed_bytes
            .fetch_add(log.vlog.len().saturating_sub(vlog.len()), Ordering::Relaxed);
        log.vlog = vlog;
        self.counters
            .vlog_head_len
            .store(log.vlog.len(), Ordering::Relaxed);
        // A sealed file may be collectable: wake the GC (it also looks once a second).
        self.bg.nudge();
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
            let pressure = |st: &ReadState, manual, delayed| Pressure {
                l0: st.version.levels[0].len(),
                mem_size: st.mem.size(),
                imm: st.imm.len(),
                manual,
                delayed,
            };
            // Without the lock a manual operation is not known: only "go" is final.
            if room(&self.opts, &pressure(&st, false, delayed)) == Room::Go {
                return Ok(());
            }
            let step = self.bg.wait_for_room(|manual| {
                if let Some(e) = self.poisoned() {
                    return ControlFlow::Break(Err(Error::Poisoned(e.to_string())));
                }
                let st = self.read_state();
                match room(&self.opts, &pressure(&st, manual, delayed)) {
                    Room::Go => ControlFlow::Break(Ok(false)),
                    Room::Stop => ControlFlow::Continue(RoomWait::Wake),
                    Room::Delay(delay) => {
                        delayed = true;
                        ControlFlow::Continue(RoomWait::For(delay))
                    }
                    Room::WaitFlush => ControlFlow::Continue(RoomWait::Quiet),
                    Room::Switch => ControlFlow::Break(Ok(true)),
                }
            });
            match step {
                None => {}
                Some(Ok(false)) => return Ok(()),
                Some(Ok(true)) => return self.switch_memtable(log),
                Some(Err(e)) => return Err(e),
            }
        }
    }

    /// Turns the active memtable immutable and starts a new one with a new WAL.
    /// Nothing is synced: the outgoing WAL waits for the next sync (a synced
    /// write, `sync`, GC, close), or is deleted unsynced once its memtable is
    /// flushed, most often before the kernel wrote it. The new WAL's link
    /// record names the outgoing one and its length, so that recovery stops
    /// before the new WAL when a power cut left the old one short.
    /// Requires: the log lock (`log`).
    pub(crate) fn switch_memtable(&self, log: &mut LogState) -> Result<()> {
        let link = Link {
            prev_id: self.read_state().mem.wal_id(),
            prev_len: log.wal.len(),
        };
        let id = new_wal_id(lock(&self.manifest).as_mut().ok_or(Error::Closed)?);
        let fs = &self.opts.fs;
        let path = filename::wal(&self.dir, id);
        let reserve = wal_reserve(&self.opts);
        let wal =
            LogWriter::create_mapped(fs, &path, WAL_MAGIC, WAL_VERSION, &link.framed(), reserve)
                .and_then(|w| sync_dir(fs, &self.dir).map(|_| w))
                .inspect_err(|e| self.poison_with(e))?;
        log.unsynced_wals.push(link.prev_id);
        log.wal = wal;
        self.update_state(|st| {
            let mut imm = Vec::with_capacity(st.imm.len() + 1);
            imm.push(st.mem.clone());
            imm.extend(st.imm.iter().cloned());
            ReadState {
                mem: Arc::new(Memtable::with_pool(id, Some(self.chunk_pool.clone()))),
                imm,
                version: st.version.clone(),
                vlogs: st.vlogs.clone(),
                range_dels: st.range_dels.clone(),
            }
        });
        self.bg.wake();
        Ok(())
    }

    /// Flushes every write acknowledged before the call into tables. It waits
    /// for the memtables that held them, not for ones writers fill meanwhile:
    /// under steady writers "until no memtable is left" may never come.
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_writable()?;
        let through = {
            let mut guard = lock(&self.log);
            let log = guard.as_mut().ok_or(Error::Closed)?;
            if !self.read_state().mem.is_empty() {
                self.switch_memtable(log)?;
            }
            self.read_state().imm.iter().map(|m| m.wal_id()).max()
        };
        match through {
            Some(wal_id) => self.wait_flushed_through(wal_id),
            None => Ok(()),
        }
    }

    /// Waits until no immutable memtable is left (or the Db is poisoned). For
    /// callers that hold writers off (they wait on `log`).
    pub(crate) fn wait_flushed(&self) -> Result<()> {
        self.wait_flushed_through(u64::MAX)
    }

    /// Waits until every immutable memtable whose WAL id is at most `wal_id`
    /// is flushed (or the Db is poisoned).
    pub(super) fn wait_flushed_through(&self, wal_id: u64) -> Result<()> {
        self.bg.wait_until(|| {
            if let Some(e) = self.poisoned() {
                return Some(Err(e));
            }
            let flushed = self.read_state().imm.iter().all(|m| m.wal_id() > wal_id);
            flushed.then_some(Ok(()))
        })
    }

    pub(crate) fn close(&self) -> Result<()> {
        let mut guard = lock(&self.log);
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Every write group before this one was delivered; none comes after.
        self.feed.close();
        let Some(mut log) = guard.take() else {
            lock(&self.dir_lock).take(); // read-only: release the shared lock
            return Ok(());
        };
        let mut result = match self.poisoned() {
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
        if !self.bg.shutdown_and_join() && result.is_ok() {
            result = Err(Error::Poisoned("a background thread panicked".into()));
        }
        let synced = log
            .vlog
            .sync()
            .and_then(|_| self.sync_closed_wals(&mut log))
            .and_then(|_| log.wal.sync());
        if let Err(e) = synced {
            if result.is_ok() {
                result = Err(e);
            }
        }
        drop(log);
        // Another process (or a new Db in this one) may open the directory now.
        lock(&self.dir_lock).take();
        result
    }
}

/// The Db as the commit pipeline's environment.
impl CommitEnv for DbInner {
    type Log = LogState;

    fn with_log<R>(&self, f: impl FnOnce(&mut LogState) -> Result<R>) -> Result<R> {
        let mut guard = lock(&self.log);
        f(guard.as_mut().ok_or(Error::Closed)?)
    }

    fn apply(&self, log: &mut LogState, group: &[Arc<Writer>]) -> Result<()> {
        match group {
            [w] if w.is_moves() => self.apply_moves(log, w),
            _ => self.apply_batches(log, group),
        }
    }
}

/// Reads at this sequence see every applied write.
fn key_max() -> u64 {
    crate::key::MAX_SEQ
}

/// Takes the id of a new WAL and the one after it, which only the flush of
/// that WAL's memtable uses, for its table: a table on disk that the manifest
/// does not list then names the WAL it came from (recovery's orphan check).
/// Requires: the manifest lock (`m`).
pub(crate) fn new_wal_id(m: &mut crate::manifest::Manifest) -> u64 {
    let id = m.next_file_id();
    m.next_file_id();
    id
}

/// The id of the table that the flush of WAL `wal_id`'s memtable writes.
pub(crate) fn flushed_table_id(wal_id: u64) -> u64 {
    wal_id + 1
}

/// fsyncs WAL `id` through a handle of its own; a WAL already deleted (its
/// memtable flushed) needs nothing.
pub(crate) fn sync_wal_file(fs: &crate::fs::Fs, dir: &Path, id: u64) -> Result<()> {
    let path = filename::wal(dir, id);
    match std::fs::File::open(&path) {
        Ok(f) => fs
            .sync(&f, &path)
            .map_err(|e| Error::io(format!("syncing {}", path.display()), e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(format!("opening {}", path.display()), e)),
    }
}

/// Bytes of a new WAL mapped for appends (past them, appends are written by
/// calls): room for a full memtable's records and a large group.
pub(crate) fn wal_reserve(opts: &Options) -> usize {
    opts.memtable_size.saturating_mul(2).clamp(4 << 20, 1 << 30)
}

/// What a write group sees of the tree when it asks for room.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pressure {
    /// Tables in level 0.
    pub l0: usize,
    /// Bytes in the active memtable.
    pub mem_size: usize,
    /// Immutable memtables waiting for their flush.
    pub imm: usize,
    /// A manual operation (flatten, drop) holds compactions: stalling on L0
    /// would wait for it forever.
    pub manual: bool,
    /// This group was already delayed once.
    pub delayed: bool,
}

/// What a write group must do before it appends: the write-stall policy
/// (LevelDB's MakeRoomForWrite), as a pure function so it is tested alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// Append now.
    Go,
    /// L0 reached the stop trigger: wait for a compaction.
    Stop,
    /// L0 is past the slowdown trigger: sleep once, longer the closer L0 is
    /// to the stop trigger (quadratic), so writers slow down before they stop.
    Delay(Duration),
    /// The memtable is full and every slot for immutable ones is taken: wait
    /// for a flush.
    WaitFlush,
    /// The memtable is full: switch to a new one.
    Switch,
}

pub(crate) fn room(opts: &Options, p: &Pressure) -> Room {
    if p.l0 >= opts.l0_stop_trigger && !p.manual {
        return Room::Stop;
    }
    if p.l0 >= opts.l0_slowdown_trigger && !p.delayed && !p.manual {
        let over = (p.l0 + 1 - opts.l0_slowdown_trigger) as u64;
        let span = (opts.l0_stop_trigger - opts.l0_slowdown_trigger) as u64;
        return Room::Delay(Duration::from_micros(1000 * over * over / span.max(1)));
    }
    if p.mem_size < opts.memtable_size {
        return Room::Go;
    }
    if p.imm + 1 >= opts.max_memtables {
        return Room::WaitFlush;
    }
    Room::Switch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::gc::GcEnv;
    use crate::filename::FileKind;

    /// Copies every file of `from` into a new directory (the state a power
    /// cut would leave if the kernel had written back every page).
    fn copy_dir(from: &Path) -> tempfile::TempDir {
        let to = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
            }
        }
        to
    }

    /// A value-log move of a base under two merge operands copies both
    /// into the WAL, unsynced. A compaction then folds the operands in the
    /// tables into one at the newer operand's version. A power cut that
    /// keeps only part of the move's WAL bytes must not leave the newer
    /// copy without the older one: reads take the copy at that version
    /// over the folded operand, and the older operand would be gone.
    #[test]
    fn a_power_cut_inside_a_gc_move_under_operands_folded_meanwhile_loses_no_operand() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.merge_operator = Some(Arc::new(crate::merge::Append));
        opts.value_threshold = 64;
        opts.vlog_file_size = 1 << 20;
        opts.vlog_gc_ratio = 0.0;
        opts.vlog_gc_idle_ratio = 0.0;
        opts.l0_compaction_trigger = 2;
        let db = Db::open(opts.clone()).unwrap();
        let base = vec![b'B'; 1000];
        db.put(b"k", &base).unwrap();
        db.flatten().unwrap();
        // Each operand in an L0 table of its own, not folded yet.
        db.inner.bg.hold_compactions(true);
        db.merge(b"k", b"op1").unwrap();
        db.flush().unwrap();
        db.merge(b"k", b"op2").unwrap();
        db.flush().unwrap();

        let st = db.inner.read_state();
        let found = st.lookup_base(b"k", key_max()).unwrap().unwrap();
        assert_eq!(found.above.len(), 2, "both operands are apart");
        let op2_version = found.above[0].0;
        let rec = value::decode(&found.raw).unwrap();
        let Stored::Pointer(old) = rec.stored else {
            panic!("the base is not in the value log");
        };
        drop(st);
        db.inner
            .write_moves(vec![Move {
                key: b"k".to_vec(),
                value: base.clone(),
                version: found.version,
                user_meta: rec.user_meta,
                expires_at: rec.expires_at,
                old,
                walked_at: None,
            }])
            .unwrap();

        // The tables fold the two operands into one at op2's version.
        db.inner.bg.hold_compactions(false);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let s = db.stats();
            if s.levels[0].0 == 0 && s.compactions_pending == 0 && s.compactions_running == 0 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{s:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        let st = db.inner.read_state();
        let (v, raw) = st.version.get(b"k", key_max()).unwrap().unwrap();
        assert!(
            v == op2_version && value::is_merge(&raw),
            "the tables' newest version of k is one operand at op2's version"
        );
        drop(st);
        let mut want = base.clone();
        want.extend_from_slice(b"op1op2");
        assert_eq!(db.get(b"k").unwrap(), Some(want.clone()));

        // The move's records are the only ones after the link of the newest WAL.
        let snapshot = copy_dir(dir.path());
        let wal_id = std::fs::read_dir(snapshot.path())
            .unwrap()
            .filter_map(|e| filename::parse(e.unwrap().file_name().to_str()?))
            .filter_map(|f| match f {
                FileKind::Wal(id) => Some(id),
                _ => None,
            })
            .max()
            .unwrap();
        let wal_path = filename::wal(snapshot.path(), wal_id);
        let data = std::fs::read(&wal_path).unwrap();
        let scan = wal::scan(&wal_path, &data).unwrap();
        let ends: Vec<u64> = scan.records.iter().map(|(_, r)| r.end as u64).collect();
        assert!(ends.len() >= 2, "a link and the move: {ends:?}");
        let mut cuts = Vec::new();
        for pair in ends.windows(2) {
            cuts.push((pair[0] + pair[1]) / 2);
            cuts.push(pair[1]);
        }
        let mut lost = Vec::new();
        for cut in cuts {
            let copy = copy_dir(snapshot.path());
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(filename::wal(copy.path(), wal_id))
                .unwrap();
            f.set_len(cut).unwrap();
            drop(f);
            let mut o = opts.clone();
            o.dir = copy.path().to_path_buf();
            let reopened = Db::open(o).unwrap();
            let got = reopened.get(b"k").unwrap();
            if got.as_ref() != Some(&want) {
                let tail = got
                    .map(|g| String::from_utf8_lossy(&g[base.len().min(g.len())..]).into_owned());
                lost.push((cut, tail));
            }
        }
        assert!(
            lost.is_empty(),
            "WAL cut at (offset, operands read): {lost:?}"
        );
    }

    fn calm() -> Pressure {
        Pressure {
            l0: 0,
            mem_size: 0,
            imm: 0,
            manual: false,
            delayed: false,
        }
    }

    #[test]
    fn below_every_trigger_a_write_goes_and_a_full_memtable_switches() {
        let o = Options::new("unused");
        assert_eq!(room(&o, &calm()), Room::Go);
        let l0 = o.l0_slowdown_trigger - 1;
        assert_eq!(room(&o, &Pressure { l0, ..calm() }), Room::Go);
        let full = Pressure {
            mem_size: o.memtable_size,
            ..calm()
        };
        assert_eq!(room(&o, &full), Room::Switch);
    }

    #[test]
    fn past_the_slowdown_trigger_a_group_is_delayed_once_and_longer_near_the_stop() {
        let o = Options::new("unused");
        let at = |l0| room(&o, &Pressure { l0, ..calm() });
        let (Room::Delay(first), Room::Delay(last)) =
            (at(o.l0_slowdown_trigger), at(o.l0_stop_trigger - 1))
        else {
            panic!("expected delays past the slowdown trigger");
        };
        assert!(first < last, "{first:?} !< {last:?}");
        assert!(last <= Duration::from_millis(1000));
        let again = Pressure {
            l0: o.l0_slowdown_trigger,
            delayed: true,
            ..calm()
        };
        assert_eq!(room(&o, &again), Room::Go);
    }

    #[test]
    fn at_the_stop_trigger_writers_wait_unless_a_manual_operation_holds_compactions() {
        let o = Options::new("unused");
        let stop = Pressure {
            l0: o.l0_stop_trigger,
            ..calm()
        };
        assert_eq!(room(&o, &stop), Room::Stop);
        // Already delayed once does not let a writer past the stop.
        assert_eq!(
            room(
                &o,
                &Pressure {
                    delayed: true,
                    ..stop
                }
            ),
            Room::Stop
        );
        assert_eq!(
            room(
                &o,
                &Pressure {
                    manual: true,
                    ..stop
                }
            ),
            Room::Go
        );
    }

    #[test]
    fn a_full_memtable_waits_for_a_flush_when_every_slot_is_taken() {
        let o = Options::new("unused");
        let full = |imm| Pressure {
            mem_size: o.memtable_size,
            imm,
            ..calm()
        };
        assert_eq!(room(&o, &full(o.max_memtables - 2)), Room::Switch);
        assert_eq!(room(&o, &full(o.max_memtables - 1)), Room::WaitFlush);
    }
}
