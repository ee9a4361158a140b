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
//! With `vlog_gc_idle_ratio` set, once the Db has had no writes for a second
//! the loop collects down to that share instead: the rewrites then delay no
//! writer, and live values packed closer take less disk and less page cache.
//!
//! Garbage is only known once a compaction drops the versions that shadow it,
//! and a Db whose writes stopped with L0 under its trigger would never run
//! one: after a second without writes the loop marks the Db idle, and L0 is
//! merged down then (`compaction::due`).

use super::*;
use crate::manifest::Edit;
use crate::vlog::ENTRY_HEADER_LEN;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// No write for this long makes the Db idle: L0 is merged down below its trigger.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long the background GC waits after a failed round before it tries again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(30);

/// A head value-log file this large (or half of `vlog_file_size`, if less)
/// with enough garbage is sealed so that GC can collect it; also the least
/// size the head is sealed at while background GC runs (`head_target`).
const SEAL_HEAD_AT: u64 = 16 << 20;

/// While background GC runs, the head file is sealed once it holds this
/// fraction (1/N) of the live value-log bytes: garbage can only be collected
/// from sealed files, so the head bounds what waits uncollectable.
const HEAD_PER_LIVE: u64 = 16;

/// The write rate is measured over this window.
const WRITE_RATE_WINDOW: Duration = Duration::from_secs(2);

/// Entries looked up to estimate a file's garbage share by sampling: one
/// per `SAMPLE_EVERY` bytes of the file, at most `SAMPLE_ENTRIES`.
const SAMPLE_ENTRIES: u64 = 256;
const SAMPLE_EVERY: u64 = 8 << 10;

/// Sampling may take this many lookups per KiB appended to the value log
/// (`DbInner::resample`): with 1 KiB values, two per value written.
const SAMPLE_LOOKUPS_PER_KIB: u64 = 2;

/// A file's sample is taken again after this fraction (1/N) of a head
/// file's worth of appends: a file whose keys were just overwritten is found
/// soon, at the cost of `SAMPLE_ENTRIES` lookups per sealed file.
const RESAMPLE_PER_HEAD: u64 = 4;

/// Looks the GC loop takes per second while writes run (once a second when idle).
const BUSY_WAIT: Duration = Duration::from_millis(100);

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

/// Garbage shares of sealed value-log files estimated by sampling: what a
/// file holds that no compaction or flush has counted yet (versions shadowed
/// by newer ones still in memtables or in L0 above them).
#[derive(Default)]
pub(crate) struct Samples {
    files: HashMap<u32, Sample>,
    /// Bytes of files that may still be sampled (`DbInner::resample`).
    credit: u64,
    /// `DbInner::vlog_appended` when `credit` was last topped up.
    credited_at: u64,
}

#[derive(Clone, Copy)]
struct Sample {
    share: f64,
    /// Value-log bytes appended when it was taken (`DbInner::vlog_appended`).
    at: u64,
}

/// The head file's sealing size before the GC has measured the live data.
pub(crate) fn initial_head_target(opts: &Options) -> u64 {
    if opts.vlog_gc_ratio > 0.0 && !opts.read_only {
        opts.vlog_file_size.min(SEAL_HEAD_AT)
    } else {
        opts.vlog_file_size
    }
}

/// The head file's sealing size for `live` value-log bytes: a
/// `HEAD_PER_LIVE`th of them, at least `SEAL_HEAD_AT`, at most `vlog_file_size`.
fn head_target(opts: &Options, live: u64) -> u64 {
    let floor = opts.vlog_file_size.min(SEAL_HEAD_AT);
    (live / HEAD_PER_LIVE).clamp(floor, opts.vlog_file_size)
}

/// The GC's rate limit (`Options::vlog_gc_write_factor`): `configured`, or
/// `factor` times the rate (bytes a second) writes append at, if more.
/// 0: no limit.
fn gc_rate(configured: u64, factor: u32, write_rate: u64) -> u64 {
    if configured == 0 {
        0
    } else {
        configured.max(write_rate.saturating_mul(u64::from(factor)))
    }
}

/// Entries sampled from a file of `len` bytes.
fn sample_count(len: u64) -> u64 {
    (len / SAMPLE_EVERY).clamp(1, SAMPLE_ENTRIES)
}

impl DbInner {
    /// Bytes appended to the value log since open (read without the log
    /// lock: a writer that takes it back to back would starve the GC).
    fn vlog_appended(&self) -> u64 {
        self.counters.vlog_sealed_bytes.load(Ordering::Relaxed)
            + self.counters.vlog_head_len.load(Ordering::Relaxed)
    }

    /// The head value-log file as of read state `st` (taken before): no file
    /// of `st` at or past the returned id may be collected. Read without the
    /// log lock, which a writer taking it back to back kept from the GC for
    /// seconds. A rotation stores the new head's id before it publishes the
    /// file, so a state that holds a file holds no newer head than this.
    fn gc_head(&self, _st: &ReadState) -> u32 {
        self.counters.vlog_head_id.load(Ordering::SeqCst) as u32
    }

    /// The GC's rate limit now (`gc_rate` over the append rate since the
    /// oldest sample of `appends` within `WRITE_RATE_WINDOW`; the newest
    /// sample is kept however old, so that a long round does not read as no
    /// writes), and whether anything was appended since the last call.
    fn gc_pace(&self, appends: &mut VecDeque<(Instant, u64)>) -> (u64, bool) {
        let appended = self.vlog_appended();
        let now = Instant::now();
        while appends.len() > 1
            && appends
                .front()
                .is_some_and(|(t, _)| now.duration_since(*t) > WRITE_RATE_WINDOW)
        {
            appends.pop_front();
        }
        let write_rate = appends.front().map_or(0, |&(t, bytes)| {
            let secs = now.duration_since(t).as_secs_f64().max(0.05);
            (appended.saturating_sub(bytes) as f64 / secs) as u64
        });
        let writing = appends.back().is_some_and(|&(_, b)| b != appended);
        appends.push_back((now, appended));
        let rate = gc_rate(
            self.opts.vlog_gc_rate,
            self.opts.vlog_gc_write_factor,
            write_rate,
        );
        (rate, writing)
    }

    /// The estimated garbage share of sealed file `f`: what compactions and
    /// flushes counted, or its last sample's estimate if higher.
    fn estimated_share(
        &self,
        discard: &BTreeMap<u32, u64>,
        f: &crate::vlog::VlogFile,
    ) -> Result<f64> {
        let counted = garbage_share(discard, f)?;
        let sampled = lock(&self.gc_samples)
            .files
            .get(&f.id())
            .map_or(0.0, |s| s.share);
        Ok(counted.max(sampled))
    }

    /// Samples again the sealed `files` whose counted garbage is below
    /// `ratio` and whose last sample is older than a `RESAMPLE_PER_HEAD`th of
    /// a head file's worth of appends, stalest first, within a budget of
    /// `SAMPLE_LOOKUPS_PER_KIB` lookups per KiB appended (so sampling costs a
    /// bounded share of the write work, however small and many the files; a
    /// file never sampled is sampled free). Samples of files gone are forgotten.
    fn resample(
        &self,
        files: &[Arc<crate::vlog::VlogFile>],
        discard: &BTreeMap<u32, u64>,
        ratio: f64,
        appended: u64,
    ) -> Result<()> {
        let period = self.vlog_head_target.load(Ordering::Relaxed) / RESAMPLE_PER_HEAD;
        let mut stale = Vec::new();
        let mut total = 0u64;
        {
            let mut samples = lock(&self.gc_samples);
            samples
                .files
                .retain(|id, _| files.iter().any(|f| f.id() == *id));
            for f in files {
                let count = sample_count(f.len()?);
                total += count;
                let age = samples
                    .files
                    .get(&f.id())
                    .map_or(u64::MAX, |s| appended.saturating_sub(s.at));
                if age >= period && garbage_share(discard, f)? < ratio {
                    stale.push((age, count, f.clone()));
                }
            }
            let new = appended.saturating_sub(samples.credited_at);
            samples.credited_at = appended;
            samples.credit = samples
                .credit
                .saturating_add(new.saturating_mul(SAMPLE_LOOKUPS_PER_KIB) >> 10)
                .min(total);
        }
        stale.sort_by_key(|s| std::cmp::Reverse(s.0));
        for (age, count, f) in stale {
            {
                let mut samples = lock(&self.gc_samples);
                if age != u64::MAX {
                    if samples.credit < count {
                        break;
                    }
                    samples.credit -= count;
                }
            }
            let share = self.sample_share(&f, count)?;
            lock(&self.gc_samples).files.insert(
                f.id(),
                Sample {
                    share,
                    at: appended,
                },
            );
        }
        Ok(())
    }

    /// The share of `count` entries of `f` (spread over its bytes)
    /// that a lookup finds shadowed, deleted or expired.
    fn sample_share(&self, f: &crate::vlog::VlogFile, count: u64) -> Result<f64> {
        let sampled = f.sample_entries(count)?;
        if sampled.is_empty() {
            return Ok(0.0);
        }
        let st = self.read_state();
        let now = self.now();
        let mut dead = 0usize;
        for (ptr, key) in &sampled {
            let live = st
                .lookup(key, crate::key::MAX_SEQ)?
                .is_some_and(|(_, raw)| {
                    value::decode(&raw)
                        .is_some_and(|rec| rec.stored == Stored::Pointer(*ptr) && !rec.expired(now))
                });
            dead += usize::from(!live);
        }
        Ok(dead as f64 / sampled.len() as f64)
    }

    /// Re-sizes the head file from the live value-log bytes (total less the
    /// estimated garbage of each file).
    fn update_head_target(&self) {
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
            .unwrap_or_default();
        let st = self.read_state();
        let mut live = 0u64;
        for f in st.vlogs.all() {
            let (Ok(share), Ok(len)) = (self.estimated_share(&discard, f), f.len()) else {
                continue;
            };
            live += (len as f64 * (1.0 - share.min(1.0))) as u64;
        }
        self.vlog_head_target
            .store(head_target(&self.opts, live), Ordering::Relaxed);
    }

    /// The background GC: see the module's documentation.
    pub(crate) fn gc_loop(self: Arc<Self>) {
        let mut wait = Duration::from_secs(1);
        let mut batches = self.counters.batches.load(Ordering::Relaxed);
        let mut last_write = Instant::now();
        // (when, value-log bytes appended): the write rate over the window.
        let mut appends: VecDeque<(Instant, u64)> = VecDeque::new();
        self.update_head_target();
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
            let (rate, writing) = self.gc_pace(&mut appends);
            wait = if writing {
                BUSY_WAIT
            } else {
                Duration::from_secs(1)
            };
            self.update_head_target();
            let mut rate = rate;
            loop {
                match self.collect_one(self.background_ratio(), rate, true) {
                    Ok(GcOutcome::NothingToCollect) => break,
                    // Writes may have sped up or stopped meanwhile.
                    Ok(_) => rate = self.gc_pace(&mut appends).0,
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

    /// The garbage share the background GC collects at: `vlog_gc_ratio`, or
    /// `vlog_gc_idle_ratio` if lower while the Db is idle (no writes for
    /// `IDLE_AFTER`; the GC's own moves do not count as writes).
    fn background_ratio(&self) -> f64 {
        let (busy, idle) = (self.opts.vlog_gc_ratio, self.opts.vlog_gc_idle_ratio);
        if idle > 0.0 && idle < busy && lock(&self.bg).idle {
            idle
        } else {
            busy
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
        if self.opts.vlog_gc_ratio <= 0.0 || self.opts.read_only {
            return (0, 0);
        }
        let ratio = self.background_ratio();
        let head = self.head_vlog_id();
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
            .unwrap_or_default();
        let st = self.read_state();
        let mut due = (0, 0);
        for f in st.vlogs.all() {
            let (Ok(share), Ok(len)) = (self.estimated_share(&discard, f), f.len()) else {
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
        self.collect_one(ratio, 0, false)
    }

    /// One round: collects the file with the largest garbage share if it is
    /// at least `ratio`, reading and rewriting at most `rate` bytes a second
    /// (0: no limit); `background`: the GC thread, which does not wait to seal the head.
    fn collect_one(self: &Arc<Self>, ratio: f64, rate: u64, background: bool) -> Result<GcOutcome> {
        let _one_at_a_time = lock(&self.gc_lock);
        let started = Instant::now();
        let outcome = self.collect_one_locked(ratio, rate, background, started);
        self.counters
            .gc_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        outcome
    }

    fn collect_one_locked(
        self: &Arc<Self>,
        ratio: f64,
        rate: u64,
        background: bool,
        started: Instant,
    ) -> Result<GcOutcome> {
        self.check_writable()?;
        let mut head = self.gc_head(&self.read_state());
        let (discard, log_number) = lock(&self.manifest)
            .as_ref()
            .map(|m| (m.state().discard.clone(), m.state().log_number))
            .unwrap_or_default();
        let share = |f: &crate::vlog::VlogFile| garbage_share(&discard, f);
        let appended = self.vlog_appended();
        // The head is only ever appended to, so it cannot be collected; but a
        // head that compactions found mostly garbage is sealed (a new head is
        // started) once it is large enough, so that it can be: otherwise a
        // database smaller than one value-log file never gets space back.
        // The background GC does not wait for the log lock here: a writer
        // that takes it back to back kept it out for seconds, and a busy
        // writer seals the head itself at `vlog_head_target`.
        if let Some(h) = self.read_state().vlogs.get(head) {
            if h.len()? >= self.seal_head_at() && share(&h)? >= ratio {
                let mut guard = match self.log.try_lock() {
                    Ok(g) => Some(g),
                    Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) if !background => {
                        Some(lock(&self.log))
                    }
                    Err(std::sync::TryLockError::WouldBlock) => None,
                };
                if let Some(log) = guard.as_mut() {
                    let log = log.as_mut().ok_or(Error::Closed)?;
                    if log.vlog.id() == head {
                        self.rotate_vlog(log).inspect_err(|e| self.poison_with(e))?;
                    }
                    head = log.vlog.id();
                }
            }
        }
        let st = self.read_state();
        let head = head.min(self.gc_head(&st));
        let mut best: Option<(f64, Arc<crate::vlog::VlogFile>)> = None;
        let sealed: Vec<_> = st.vlogs.all().filter(|f| f.id() < head).cloned().collect();
        self.resample(&sealed, &discard, ratio, appended)?;
        for f in &sealed {
            let share = self.estimated_share(&discard, f)?;
            if best.as_ref().is_none_or(|(b, _)| share > *b) {
                best = Some((share, f.clone()));
            }
        }
        let Some((_, file)) = best.filter(|(share, _)| *share >= ratio) else {
            return Ok(GcOutcome::NothingToCollect);
        };
        // WALs written while this file was the head may point into it: flush
        // them away (a replay after a crash would otherwise stop at a pointer
        // into a deleted file, and lose every later record). WALs and
        // value-log files share one id counter, so a WAL started after the
        // file was sealed has an id above the head that replaced it; if every
        // live WAL has, no flush is needed. That head is recorded at the
        // rotation: the next larger value-log id is not it when a bulk load
        // made files meanwhile (power_loss.rs found that once sampling
        // collected a head soon after it was sealed). A file sealed before
        // this open, or not a head, is collected after a flush.
        let replaced_by = lock(&self.vlog_sealed_for).get(&file.id()).copied();
        drop(st);
        if replaced_by.is_none_or(|next| log_number <= next) {
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
        if !chunk.is_empty() {
            self.write(WriterKind::Moves(chunk), None)?;
        }
        self.sync_before_delete()?;
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&[Edit::DeleteVlog(file.id())])
            .inspect_err(|e| self.poison_with(e))?;
        let outcome = if moved_values == 0 {
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
        };
        // Counted before the file leaves the read state: stats never show
        // the backlog gone (`gc_due`) without the collection that did it.
        self.count(&outcome);
        self.update_state(|s| ReadState {
            mem: s.mem.clone(),
            imm: s.imm.clone(),
            version: s.version.clone(),
            vlogs: Arc::new(s.vlogs.without(file.id())),
            range_dels: s.range_dels.clone(),
        });
        lock(&self.vlog_sealed_for).remove(&file.id());
        self.remove_vlog_file(file.id(), file.path())?;
        Ok(outcome)
    }

    /// Makes durable what a deletion relies on: the moves, and the versions
    /// that made the file's other entries garbage (a power cut that lost them
    /// would bring back older versions pointing into the deleted file). Those
    /// are in the head value-log file and the memtable's WAL (a memtable
    /// switch and a rotation sync the WAL and file they end). Synced through
    /// handles of its own, not under the log lock: writers go on meanwhile.
    /// (Every write group puts its bytes in the files before its entries are
    /// visible, so what the scan saw is in them.)
    fn sync_before_delete(&self) -> Result<()> {
        let st = self.read_state();
        if let Some(head) = st.vlogs.get(self.gc_head(&st)) {
            head.sync(&self.opts.fs)?;
        }
        {
            let path = filename::wal(&self.dir, st.mem.wal_id());
            match std::fs::File::open(&path) {
                Ok(f) => self
                    .opts
                    .fs
                    .sync(&f, &path)
                    .map_err(|e| Error::io(format!("syncing {}", path.display()), e))?,
                // Flushed meanwhile: its versions are in a table.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(format!("opening {}", path.display()), e)),
            }
        }
        Ok(())
    }

    /// Adds a collection to the GC counters of `Stats`.
    fn count(&self, outcome: &GcOutcome) {
        let (files, freed) = match outcome {
            GcOutcome::NothingToCollect => return,
            GcOutcome::Deleted { freed_bytes, .. } => {
                (&self.counters.gc_files_deleted, freed_bytes)
            }
            GcOutcome::Rewritten { freed_bytes, .. } => {
                (&self.counters.gc_files_rewritten, freed_bytes)
            }
        };
        files.fetch_add(1, Ordering::Relaxed);
        self.counters
            .gc_bytes_reclaimed
            .fetch_add(*freed, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_sealed_at_a_sixteenth_of_the_live_data_between_16_mib_and_the_file_size() {
        let o = Options::new("unused");
        assert_eq!(head_target(&o, 0), 16 << 20, "the floor");
        assert_eq!(head_target(&o, 1 << 30), 64 << 20, "a 16th of 1 GiB live");
        assert_eq!(head_target(&o, 1 << 40), o.vlog_file_size, "the ceiling");
        let mut small = Options::new("unused");
        small.vlog_file_size = 1 << 20;
        assert_eq!(head_target(&small, 0), 1 << 20, "never past vlog_file_size");
        assert_eq!(initial_head_target(&o), 16 << 20);
        let mut off = Options::new("unused");
        off.vlog_gc_ratio = 0.0;
        assert_eq!(
            initial_head_target(&off),
            off.vlog_file_size,
            "no GC, no early seal"
        );
    }

    #[test]
    fn the_gc_rate_is_the_write_rate_times_the_factor_never_below_the_option() {
        let mib = 1u64 << 20;
        assert_eq!(gc_rate(64 * mib, 2, 0), 64 * mib, "no writes: the option");
        assert_eq!(gc_rate(64 * mib, 2, 10 * mib), 64 * mib, "slow writes");
        assert_eq!(gc_rate(64 * mib, 2, 300 * mib), 600 * mib, "fast writes");
        assert_eq!(gc_rate(64 * mib, 0, 300 * mib), 64 * mib, "factor 0");
        assert_eq!(gc_rate(0, 2, 300 * mib), 0, "0 is no limit");
    }
}
