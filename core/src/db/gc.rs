//! Value-log garbage collection.
//!
//! Compactions count, per value-log file, the bytes of entries whose pointers
//! they dropped (recorded in the manifest). GC takes the file with the largest
//! share of garbage, if it is above the ratio asked for; flushes the memtables
//! so that no live WAL points into it; moves each entry that is still the newest
//! version of its key to the head of the log (same version, new pointer, applied
//! by the write leader only if still live then); syncs; and deletes the file.
//! A file with no live entry is deleted without a rewrite. Readers that started
//! before keep the file open through their read state.
//!
//! A background thread (`gc_loop`, unless `vlog_gc_ratio` is 0) does the same
//! without being asked: whenever compactions have run, and once a second, it
//! collects every sealed file whose garbage share reached `vlog_gc_ratio`,
//! reading and rewriting at most `vlog_gc_rate` bytes a second. Writers wait
//! for it only as for any other write (its moves go through the write
//! pipeline in chunks) and for the memtable switch of its flush.
//!
//! Garbage is only known once a compaction drops the versions that shadow it,
//! and a Db whose writes stopped with L0 under its trigger would never run
//! one: after a second without writes the loop marks the Db idle, and L0 is
//! merged down then (`compaction::due`).

use super::*;
use crate::manifest::Edit;
use crate::vlog::ENTRY_HEADER_LEN;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// No write for this long makes the Db idle: L0 is merged down below its trigger.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long the background GC waits after a failed round before it tries again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(30);

/// A head value-log file this large (or half of `vlog_file_size`, if less)
/// with enough garbage is sealed so that GC can collect it.
const SEAL_HEAD_AT: u64 = 16 << 20;

/// Moves are handed to the write pipeline in chunks of about this many bytes.
const MOVE_CHUNK: usize = 4 << 20;

/// What one round of value-log GC did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcOutcome {
    /// No file has at least the asked share of garbage.
    NothingToCollect,
    /// A file held no live value and was deleted without a rewrite.
    Deleted {
        /// The value-log file's id.
        file: u32,
        /// Its size, returned to the file system.
        freed_bytes: u64,
    },
    /// A file's live values were moved to the head of the log and the file deleted.
    Rewritten {
        /// The value-log file's id.
        file: u32,
        /// Live values copied to the head of the log.
        moved_values: u64,
        /// Their bytes.
        moved_bytes: u64,
        /// The file's size, returned to the file system.
        freed_bytes: u64,
    },
}

/// The share of a value-log file's entry bytes that compactions and flushes
/// found to be garbage (`discard`: bytes per file, from the manifest).
fn garbage_share(discard: &BTreeMap<u32, u64>, f: &crate::vlog::VlogFile) -> Result<f64> {
    let size = f
        .len()?
        .saturating_sub(crate::wal::HEADER_LEN as u64)
        .max(1);
    Ok(discard.get(&f.id()).copied().unwrap_or(0) as f64 / size as f64)
}

impl DbInner {
    /// The background GC: see the module's documentation.
    pub(crate) fn gc_loop(self: Arc<Self>) {
        let mut wait = Duration::from_secs(1);
        let mut batches = self.counters.batches.load(Ordering::Relaxed);
        let mut last_write = Instant::now();
        loop {
            {
                let bg = lock(&self.bg);
                if bg.shutdown || self.poisoned().is_some() {
                    return;
                }
                let (bg, _) = self
                    .bg_cv
                    .wait_timeout(bg, wait)
                    .unwrap_or_else(|p| p.into_inner());
                if bg.shutdown || self.poisoned().is_some() {
                    return;
                }
            }
            wait = Duration::from_secs(1);
            loop {
                match self.collect_one(self.opts.vlog_gc_ratio, self.opts.vlog_gc_rate) {
                    Ok(GcOutcome::NothingToCollect) => break,
                    Ok(_) => {}
                    // Closing, or poisoned by a write path error: the loop ends above.
                    Err(Error::Closed | Error::Poisoned(_)) => break,
                    Err(_) => {
                        // A read error or a full disk: the data is safe (the file
                        // stays until a round completes); try again later.
                        wait = RETRY_AFTER_ERROR;
                        break;
                    }
                }
            }
            // Writes stopped: let the compaction thread merge L0 down, so that
            // the garbage its shadowed versions hold is counted and collected
            // (compaction::due). Writes again: back to the triggers.
            let now = self.counters.batches.load(Ordering::Relaxed);
            if now != batches {
                batches = now;
                last_write = Instant::now();
            }
            let idle = last_write.elapsed() >= IDLE_AFTER;
            let mut bg = lock(&self.bg);
            if bg.idle != idle {
                bg.idle = idle;
                if idle {
                    self.bg_cv.notify_all();
                }
            }
        }
    }

    /// A head file this large with enough garbage is sealed for collection.
    fn seal_head_at(&self) -> u64 {
        (self.opts.vlog_file_size / 2).min(SEAL_HEAD_AT)
    }

    /// Value-log files the background GC will collect (garbage share at
    /// `vlog_gc_ratio` or more; a head file only once it is large enough to be
    /// sealed) and their bytes: its backlog, as `compaction::due` is the
    /// tree's. None when background GC is off or the Db is read-only.
    pub(crate) fn gc_due(&self) -> (u64, u64) {
        let ratio = self.opts.vlog_gc_ratio;
        if ratio <= 0.0 || self.opts.read_only {
            return (0, 0);
        }
        let head = self.head_vlog_id();
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
            .unwrap_or_default();
        let st = self.read_state();
        let mut due = (0, 0);
        for f in st.vlogs.all() {
            let (Ok(share), Ok(len)) = (garbage_share(&discard, f), f.len()) else {
                continue;
            };
            let sealed = Some(f.id()) != head || len >= self.seal_head_at();
            if sealed && share >= ratio {
                due.0 += 1;
                due.1 += len;
            }
        }
        due
    }

    pub(crate) fn run_value_log_gc(self: &Arc<Self>, ratio: f64) -> Result<GcOutcome> {
        if !(ratio > 0.0 && ratio < 1.0) {
            return Err(Error::InvalidArgument(format!(
                "GC discard ratio {ratio} is outside (0, 1)"
            )));
        }
        self.collect_one(ratio, 0)
    }

    /// One round: collects the file with the largest garbage share if it is
    /// at least `ratio`, reading and rewriting at most `rate` bytes a second
    /// (0: no limit).
    fn collect_one(self: &Arc<Self>, ratio: f64, rate: u64) -> Result<GcOutcome> {
        let _one_at_a_time = lock(&self.gc_lock);
        let started = Instant::now();
        let outcome = self.collect_one_locked(ratio, rate, started);
        self.counters
            .gc_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        match &outcome {
            Ok(GcOutcome::Deleted { freed_bytes, .. }) => {
                self.counters
                    .gc_files_deleted
                    .fetch_add(1, Ordering::Relaxed);
                self.counters
                    .gc_bytes_reclaimed
                    .fetch_add(*freed_bytes, Ordering::Relaxed);
            }
            Ok(GcOutcome::Rewritten { freed_bytes, .. }) => {
                self.counters
                    .gc_files_rewritten
                    .fetch_add(1, Ordering::Relaxed);
                self.counters
                    .gc_bytes_reclaimed
                    .fetch_add(*freed_bytes, Ordering::Relaxed);
            }
            _ => {}
        }
        outcome
    }

    fn collect_one_locked(
        self: &Arc<Self>,
        ratio: f64,
        rate: u64,
        started: Instant,
    ) -> Result<GcOutcome> {
        self.check_writable()?;
        let mut head = self.head_vlog_id().ok_or(Error::Closed)?;
        let (discard, log_number) = lock(&self.manifest)
            .as_ref()
            .map(|m| (m.state().discard.clone(), m.state().log_number))
            .unwrap_or_default();
        let share = |f: &crate::vlog::VlogFile| garbage_share(&discard, f);
        // The head is only ever appended to, so it cannot be collected; but a
        // head that compactions found mostly garbage is sealed (a new head is
        // started) once it is large enough, so that it can be: otherwise a
        // database smaller than one value-log file never gets space back.
        if let Some(h) = self.read_state().vlogs.get(head) {
            if h.len()? >= self.seal_head_at() && share(&h)? >= ratio {
                let mut log = lock(&self.log);
                let log = log.as_mut().ok_or(Error::Closed)?;
                if log.vlog.id() == head {
                    self.rotate_vlog(log).inspect_err(|e| self.poison_with(e))?;
                }
                head = log.vlog.id();
            }
        }
        let st = self.read_state();
        let mut best: Option<(f64, Arc<crate::vlog::VlogFile>)> = None;
        for f in st.vlogs.all().filter(|f| f.id() != head) {
            let share = share(f)?;
            if best.as_ref().is_none_or(|(b, _)| share > *b) {
                best = Some((share, f.clone()));
            }
        }
        let Some((_, file)) = best.filter(|(share, _)| *share >= ratio) else {
            return Ok(GcOutcome::NothingToCollect);
        };
        // WALs written while this file was the head may point into it: flush
        // them away (a replay after a crash would otherwise meet pointers into
        // a deleted file). WALs and value-log files share one id counter, so a
        // WAL is younger than the file's successor only if it was started after
        // the file was sealed; if every live WAL is, no flush is needed.
        let successor = st
            .vlogs
            .all()
            .map(|f| f.id())
            .filter(|&id| id > file.id())
            .min();
        drop(st);
        if successor.is_none_or(|s| log_number <= u64::from(s)) {
            self.flush()?;
        }

        let file_bytes = file.len()?;
        let mut moved_values = 0u64;
        let mut moved_bytes = 0u64;
        let mut chunk: Vec<Move> = Vec::new();
        let mut chunk_bytes = 0usize;
        let mut throttled = 0u64;
        file.for_each_entry(|ptr, key, value| {
            // Bytes read so far, plus what was moved: what the rate limits.
            let done = ptr.offset + u64::from(ptr.len) + moved_bytes;
            if rate > 0 && done >= throttled + (256 << 10) {
                throttled = done;
                self.throttle(started, done, rate)?;
            }
            let st = self.read_state();
            let Some((version, raw)) = st.lookup(key, crate::key::MAX_SEQ)? else {
                return Ok(());
            };
            let Some(rec) = value::decode(&raw) else {
                return Ok(());
            };
            let expired = rec.expired(self.now());
            if rec.stored != Stored::Pointer(ptr) || expired {
                return Ok(());
            }
            moved_values += 1;
            moved_bytes += (ENTRY_HEADER_LEN + key.len() + value.len()) as u64;
            chunk_bytes += key.len() + value.len();
            chunk.push(Move {
                key: key.to_vec(),
                value: value.to_vec(),
                version,
                user_meta: rec.user_meta,
                expires_at: rec.expires_at,
                old: ptr,
            });
            if chunk_bytes >= MOVE_CHUNK {
                chunk_bytes = 0;
                self.write(WriterKind::Moves(std::mem::take(&mut chunk)), None)?;
            }
            Ok(())
        })?;
        self.write(WriterKind::Moves(chunk), None)?;
        self.sync_logs()?;
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&[Edit::DeleteVlog(file.id())])
            .inspect_err(|e| self.poison_with(e))?;
        self.update_state(|s| ReadState {
            mem: s.mem.clone(),
            imm: s.imm.clone(),
            version: s.version.clone(),
            vlogs: Arc::new(s.vlogs.without(file.id())),
            range_dels: s.range_dels.clone(),
        });
        self.remove_vlog_file(file.id(), file.path())?;
        Ok(if moved_values == 0 {
            GcOutcome::Deleted {
                file: file.id(),
                freed_bytes: file_bytes,
            }
        } else {
            GcOutcome::Rewritten {
                file: file.id(),
                moved_values,
                moved_bytes,
                freed_bytes: file_bytes.saturating_sub(moved_bytes),
            }
        })
    }

    /// Sleeps until `done` bytes since `started` keep within `rate` a second,
    /// waking every 50 ms to see whether the Db is closing.
    fn throttle(&self, started: Instant, done: u64, rate: u64) -> Result<()> {
        let due = Duration::from_secs_f64(done as f64 / rate as f64);
        loop {
            // One reading of the clock per step: comparing one reading and
            // subtracting a later one underflowed (a panic in the GC thread,
            // seen in the large-regime benchmark, left its backlog for ever).
            let left = due.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            self.check_open()?;
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
}
