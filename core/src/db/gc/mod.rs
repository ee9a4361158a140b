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
//! reading and rewriting at most `vlog_gc_rate` bytes a second while reads
//! or writes run, and at device speed while the Db is quiet (`Pacer`). Its rounds
//! take several files at once (one sample, flush and sync for all), never
//! wait for a flush (a file whose WAL is still live waits for a later round;
//! the memtable is switched ahead once its WAL spans a few sealed files), and
//! go unthrottled while writes run and a round finds itself behind. Writers
//! wait for it only as for any other write (its moves go through the write
//! pipeline in chunks) and for the memtable switches it asks for.
//! `SETT_GC_TRACE` in the environment prints each round's phases
//! (`trace`).
//!
//! With `vlog_gc_idle_ratio` set, once the Db has had no writes for a second
//! the loop collects down to that share instead: the rewrites then delay no
//! writer, and live values packed closer take less disk and less page cache.
//! This tier judges files by walks over the tree (`walk`: one sequential
//! read of the tables gives every file's exact garbage and the live entries
//! of up to a GiB of files) instead of a lookup per entry, which on tables
//! larger than memory is a device read each.
//!
//! A collection never deletes a file whose live entries it has not all
//! moved. It walks the file in order; where that walk stops short of the end
//! (a torn tail, or damage), a walk over the tree names the live entries past
//! the stop and each is read by its pointer. Damage in garbage therefore costs
//! nothing; a damaged live entry is a corruption error naming its file and
//! offset, the file stays (counted in `Stats::gc_damaged_files` and left out
//! of later rounds while the Db is open), and the other files are collected.
//!
//! Garbage is only known once a compaction drops the versions that shadow it,
//! and a Db whose writes stopped with L0 under its trigger would never run
//! one: after a second without writes the loop marks the Db idle, and L0 is
//! merged down then (`compaction::due`).

use super::*;
use crate::manifest::Edit;
use crate::value::ValuePointer;
use crate::vlog::{WalkEnd, ENTRY_HEADER_LEN};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};
use trace::{Phase, Trace};
use walk::Walked;

mod collect;
mod pace;
mod policy;
mod sample;
mod trace;
mod walk;

use pace::*;
use policy::*;
use sample::*;

/// What the value-log GC owns on the Db. Other parts of the Db reach it
/// through the verbs below; the rest is the GC's own.
pub(crate) struct GcState {
    /// One collection at a time.
    lock: Mutex<()>,
    /// Garbage shares of value-log files estimated by sampling.
    samples: Mutex<Samples>,
    /// The head value-log file is sealed at this length: set from the live
    /// value-log bytes (`head_target`), `vlog_file_size` without a GC.
    head_target: AtomicU64,
    /// Value-log files sealed as heads since open, with the id of the head
    /// that replaced each: a WAL with a smaller id may point into it.
    sealed_for: Mutex<HashMap<u32, u64>>,
}

impl GcState {
    pub(crate) fn new(opts: &Options) -> GcState {
        GcState {
            lock: Mutex::new(()),
            samples: Mutex::new(Samples::default()),
            head_target: AtomicU64::new(initial_head_target(opts)),
            sealed_for: Mutex::new(HashMap::new()),
        }
    }

    /// The length at which the head value-log file is sealed.
    pub(crate) fn head_target(&self) -> u64 {
        self.head_target.load(Ordering::Relaxed)
    }

    /// Records that head file `old` was sealed and `new` replaced it.
    /// Requires: the log lock (heads are sealed one at a time, in order).
    pub(crate) fn note_head_sealed(&self, old: u32, new: u32) {
        lock(&self.sealed_for).insert(old, u64::from(new));
    }

    /// Holds off every collection while the guard lives (a checkpoint
    /// linking value-log files). Requires: no lock after the GC's in the
    /// lock order (db/mod.rs) is held.
    pub(crate) fn exclusive(&self) -> MutexGuard<'_, ()> {
        lock(&self.lock)
    }
}

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

impl DbInner {
    /// Bytes appended to the value log since open by writes, not by the
    /// GC's own moves (read without the log lock: a writer that takes it
    /// back to back would starve the GC). The moves counted as writes let
    /// an idle GC raise its own rate limit (4x what it moved) and pay
    /// itself lookups for samples.
    fn vlog_appended(&self) -> u64 {
        (self.counters.vlog_sealed_bytes.load(Ordering::Relaxed)
            + self.counters.vlog_head_len.load(Ordering::Relaxed))
        .saturating_sub(self.counters.gc_moved_bytes.load(Ordering::Relaxed))
    }

    /// The head value-log file as of read state `st` (taken before): no file
    /// of `st` at or past the returned id may be collected. Read without the
    /// log lock, which a writer taking it back to back kept from the GC for
    /// seconds. A rotation stores the new head's id before it publishes the
    /// file, so a state that holds a file holds no newer head than this.
    fn gc_head(&self, _st: &ReadState) -> u32 {
        self.counters.vlog_head_id.load(Ordering::SeqCst) as u32
    }

    /// The GC's rate limit now (`gc_rate` over `write_rate` of `appends`,
    /// samples of the bytes appended within `WRITE_RATE_WINDOW`; the newest
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
        let rate_now = write_rate(appends, now, appended);
        let writing = appends.back().is_some_and(|&(_, b)| b != appended);
        appends.push_back((now, appended));
        let rate = gc_rate(
            self.opts.vlog_gc_rate,
            self.opts.vlog_gc_write_factor,
            rate_now,
        );
        (rate, writing)
    }

    /// Whether the idle tier should walk the tree before it picks: no walk
    /// since open, or the value log grew by a `HEAD_PER_LIVE`th since the
    /// last one, or writes came after it.
    fn walk_due(&self, sealed_bytes: u64) -> bool {
        let samples = lock(&self.gc.samples);
        let Some(w) = &samples.walked else {
            return sealed_bytes > 0;
        };
        w.batches != self.counters.batches.load(Ordering::Relaxed)
            && self.vlog_appended().saturating_sub(w.appended) >= sealed_bytes / HEAD_PER_LIVE
    }

    /// Walks the tree (`walk`) recording the live entries of `record`, and
    /// takes its live bytes as the garbage share of every sealed file of
    /// `sealed`, replacing their samples. Kept for the rounds after.
    fn walk(
        &self,
        sealed: &[Arc<crate::vlog::VlogFile>],
        record: &HashSet<u32>,
        trace: &mut Trace,
    ) -> Result<()> {
        let appended = self.vlog_appended();
        let mut walked = self.walk_live(record)?;
        walked.appended = appended;
        self.counters.gc_walks.fetch_add(1, Ordering::Relaxed);
        trace.walks += 1;
        let mut samples = lock(&self.gc.samples);
        for f in sealed {
            let size = f
                .len()?
                .saturating_sub(crate::wal::HEADER_LEN as u64)
                .max(1);
            let live = walked.live_bytes.get(&f.id()).copied().unwrap_or(0);
            let share = 1.0 - (live as f64 / size as f64).min(1.0);
            samples.files.insert(
                f.id(),
                Sample {
                    share,
                    at: appended,
                },
            );
        }
        samples.walked = Some(walked);
        Ok(())
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
        self.gc
            .head_target
            .store(head_target(&self.opts, live), Ordering::Relaxed);
    }

    /// The background GC: see the module's documentation.
    pub(crate) fn gc_loop(self: Arc<Self>) {
        // A Db that nobody has written to since it opened is idle at once:
        // the first round runs now, and what waits for idleness (the L0
        // merge, the idle tier) does not wait out a timer first.
        let mut wait = Duration::ZERO;
        // (when, value-log bytes appended): the write rate over the window.
        let mut appends: VecDeque<(Instant, u64)> = VecDeque::new();
        self.defer_samples_of_files_from_before_open();
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
            let (rate, mut writing) = self.gc_pace(&mut appends);
            wait = if writing {
                BUSY_WAIT
            } else {
                Duration::from_secs(1)
            };
            self.update_head_target();
            let mut rate = rate;
            loop {
                let pace = Pace { rate, writing };
                match self.collect(self.background_ratio(), pace, true, ROUND_BYTES) {
                    Ok(outcomes) if outcomes.is_empty() => break,
                    // Writes may have sped up or stopped meanwhile.
                    Ok(_) => {
                        (rate, writing) = self.gc_pace(&mut appends);
                        self.look_idle();
                    }
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
            self.look_idle();
        }
    }

    /// Looks at the foreground work since the last look: marks the Db idle
    /// once no batch has been written for `IDLE_AFTER` (the compaction
    /// thread then merges L0 down, so that the garbage its shadowed versions
    /// hold is counted and collected: `compaction::due`), or busy again, and
    /// returns whether it is also quiet: idle, and no read for `QUIET_AFTER_READ`.
    /// A Db nobody has used since it opened is both at once.
    /// Requires: `bg` is not held by the caller.
    fn look_idle(&self) -> bool {
        let batches = self.counters.batches.load(Ordering::Relaxed);
        let read = self.counters.read_seen.swap(false, Ordering::Relaxed);
        let now = Instant::now();
        let mut bg = lock(&self.bg);
        if batches != bg.seen_batches {
            bg.seen_batches = batches;
            bg.last_write = Some(now);
        }
        if read {
            bg.last_read = Some(now);
        }
        let long_ago = |t: Option<Instant>, after| t.is_none_or(|t| now.duration_since(t) >= after);
        let idle = long_ago(bg.last_write, IDLE_AFTER);
        if bg.idle != idle || (idle && bg.idle_at_batches != batches) {
            bg.idle = idle;
            bg.idle_at_batches = batches;
            if idle {
                self.bg_cv.notify_all();
            }
        }
        idle && long_ago(bg.last_read, QUIET_AFTER_READ)
    }

    /// The garbage share the background GC collects at: `vlog_gc_ratio`, or
    /// `vlog_gc_idle_ratio` if lower while the Db is idle (no writes for
    /// `IDLE_AFTER`; the GC's own moves do not count as writes).
    fn background_ratio(&self) -> f64 {
        let (busy, idle) = (self.opts.vlog_gc_ratio, self.opts.vlog_gc_idle_ratio);
        if idle > 0.0 && idle < busy && self.is_idle(&lock(&self.bg)) {
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
    /// Value-log files GC found a damaged live entry in (and left in place).
    pub(crate) fn gc_damaged_files(&self) -> u64 {
        lock(&self.gc.samples).damaged.len() as u64
    }

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
        let damaged = lock(&self.gc.samples).damaged.clone();
        let mut due = (0, 0);
        for f in st.vlogs.all().filter(|f| !damaged.contains(&f.id())) {
            let (Ok(share), Ok(len)) = (self.estimated_share(&discard, f), f.len()) else {
                continue;
            };
            let sealed = Some(f.id()) != head || len >= self.seal_head_at();
            if sealed && share >= ratio {
                due.0 += 1;
                due.1 += len;
            }
        }
        // The idle tier's walk not taken yet: what is due is not known.
        if due.0 == 0 && ratio < self.opts.vlog_gc_ratio {
            let sealed_bytes = st
                .vlogs
                .all()
                .filter(|f| Some(f.id()) != head)
                .filter_map(|f| f.len().ok())
                .sum();
            if self.walk_due(sealed_bytes) {
                due.0 = 1;
            }
        }
        due
    }
}
