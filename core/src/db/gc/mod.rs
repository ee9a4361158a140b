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
//! A background thread (`GcState::run_loop`, unless `vlog_gc_ratio` is 0) does the same
//! without being asked: whenever compactions have run, and once a second, it
//! collects every sealed file whose garbage share reached `vlog_gc_ratio`,
//! reading and rewriting at most `vlog_gc_rate` bytes a second while writes
//! run, and at device speed while the Db is idle, reads or not (`Pacer`). Its rounds
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
//!
//! The GC owns its state (`GcState`) and reaches the Db only through
//! [`GcEnv`] (`env`), whose verbs state their lock contracts; `tests` runs
//! its rounds against a fake environment over real value-log files.

use super::*;
use crate::value::ValuePointer;
use crate::vlog::{VlogFile, WalkEnd, ENTRY_HEADER_LEN};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};
use trace::{Phase, Trace};
use walk::Walked;

mod collect;
mod env;
mod pace;
mod policy;
mod sample;
#[cfg(test)]
mod tests;
mod trace;
mod walk;

pub(crate) use env::GcEnv;
use pace::*;
use policy::*;
use sample::*;

/// What the value-log GC owns: the Db holds one and reaches it through the
/// verbs below (and `DbInner`'s GC entry points at the end of this file);
/// the GC reaches the Db only through [`GcEnv`]. Its mutexes are leaves of
/// the Db's lock order but for `lock`: no `GcEnv` verb is called while
/// `samples` or `sealed_for` is held.
pub(crate) struct GcState {
    /// One collection at a time.
    lock: Mutex<()>,
    /// Garbage shares of value-log files estimated by sampling.
    samples: Mutex<Samples>,
    /// The head value-log file is sealed at this length: set from the live
    /// value-log bytes (`head_target`), `vlog_file_size` without a GC.
    head_target: AtomicU64,
    /// Value-log files sealed as heads since open, with the id of the head
    /// that replaced each: a WAL with a smaller id may point into it; and
    /// the files sealed before open, with the id below the first WAL of
    /// the open (`note_opened`).
    sealed_for: Mutex<HashMap<u32, u64>>,
    /// What `Stats` reports of the GC.
    counts: Counts,
}

/// The GC's counters for `Stats` (see its fields of the same names).
#[derive(Default)]
struct Counts {
    files_rewritten: AtomicU64,
    files_deleted: AtomicU64,
    bytes_reclaimed: AtomicU64,
    micros: AtomicU64,
    walks: AtomicU64,
}

/// A reading of the GC's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GcCounts {
    pub(crate) files_rewritten: u64,
    pub(crate) files_deleted: u64,
    pub(crate) bytes_reclaimed: u64,
    pub(crate) micros: u64,
    pub(crate) walks: u64,
}

impl GcState {
    pub(crate) fn new(opts: &Options) -> GcState {
        GcState {
            lock: Mutex::new(()),
            samples: Mutex::new(Samples::default()),
            head_target: AtomicU64::new(initial_head_target(opts)),
            sealed_for: Mutex::new(HashMap::new()),
            counts: Counts::default(),
        }
    }

    /// The length at which the head value-log file is sealed.
    /// Requires: nothing (an atomic).
    pub(crate) fn head_target(&self) -> u64 {
        self.head_target.load(Ordering::Relaxed)
    }

    /// Records that head file `old` was sealed and `new` replaced it.
    /// Requires: the log lock (heads are sealed one at a time, in order).
    pub(crate) fn note_head_sealed(&self, old: u32, new: u32) {
        lock(&self.sealed_for).insert(old, u64::from(new));
    }

    /// Records that open sealed value-log files `before` (every file but the
    /// head it starts) and replayed and removed every older WAL, starting
    /// WAL `first_wal`: no WAL live from then on may point into them, so
    /// collecting one needs no flush, as a head sealed with every WAL since
    /// flushed. Requires: no round running (open calls it before the GC
    /// thread starts); takes only `sealed_for`.
    pub(crate) fn note_opened(&self, before: impl Iterator<Item = u32>, first_wal: u64) {
        let mut sealed_for = lock(&self.sealed_for);
        for id in before {
            sealed_for.insert(id, first_wal.saturating_sub(1));
        }
    }

    /// Holds off every collection while the guard lives (a checkpoint
    /// linking value-log files). Requires: no lock after the GC's in the
    /// lock order (db/mod.rs) is held.
    pub(crate) fn exclusive(&self) -> MutexGuard<'_, ()> {
        lock(&self.lock)
    }

    /// The GC's counters now. Requires: nothing (atomics).
    pub(crate) fn counts(&self) -> GcCounts {
        let c = &self.counts;
        GcCounts {
            files_rewritten: c.files_rewritten.load(Ordering::Relaxed),
            files_deleted: c.files_deleted.load(Ordering::Relaxed),
            bytes_reclaimed: c.bytes_reclaimed.load(Ordering::Relaxed),
            micros: c.micros.load(Ordering::Relaxed),
            walks: c.walks.load(Ordering::Relaxed),
        }
    }

    /// Value-log files GC found a damaged live entry in (and left in place).
    /// Requires: `samples` not held.
    pub(crate) fn damaged_files(&self) -> u64 {
        lock(&self.samples).damaged.len() as u64
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

impl GcState {
    /// The GC's rate limit now (`gc_rate` over `write_rate` of `appends`,
    /// samples of the bytes appended within `WRITE_RATE_WINDOW`; the newest
    /// sample is kept however old, so that a long round does not read as no
    /// writes), and whether anything was appended since the last call.
    fn pace<E: GcEnv>(&self, env: &E, appends: &mut VecDeque<(Instant, u64)>) -> (u64, bool) {
        let appended = env.vlog_appended();
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
        let opts = env.opts();
        let rate = gc_rate(opts.vlog_gc_rate, opts.vlog_gc_write_factor, rate_now);
        (rate, writing)
    }

    /// Whether the idle tier should walk the tree before it picks: no walk
    /// since open, or the value log grew by a `HEAD_PER_LIVE`th since the
    /// last one, or writes came after it.
    fn walk_due<E: GcEnv>(&self, env: &E, sealed_bytes: u64) -> bool {
        let samples = lock(&self.samples);
        let Some(w) = &samples.walked else {
            return sealed_bytes > 0;
        };
        w.batches != env.batches()
            && env.vlog_appended().saturating_sub(w.appended) >= sealed_bytes / HEAD_PER_LIVE
    }

    /// Walks the tree (`walk`) recording the live entries of `record`, and
    /// takes its live bytes as the garbage share of every sealed file of
    /// `sealed`, replacing their samples. Kept for the rounds after.
    fn walk<E: GcEnv>(
        &self,
        env: &E,
        sealed: &[Arc<VlogFile>],
        record: &HashSet<u32>,
        trace: &mut Trace,
    ) -> Result<()> {
        let appended = env.vlog_appended();
        let mut walked = walk::walk_live(env, record)?;
        walked.appended = appended;
        self.counts.walks.fetch_add(1, Ordering::Relaxed);
        trace.walks += 1;
        let mut samples = lock(&self.samples);
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
    fn update_head_target<E: GcEnv>(&self, env: &E) {
        let discard = env.discard();
        let st = env.read_state();
        let mut live = 0u64;
        for f in st.vlogs.all() {
            let (Ok(share), Ok(len)) = (self.estimated_share(&discard, f), f.len()) else {
                continue;
            };
            live += (len as f64 * (1.0 - share.min(1.0))) as u64;
        }
        self.head_target
            .store(head_target(env.opts(), live), Ordering::Relaxed);
    }

    /// The background GC: see the module's documentation. Returns when the
    /// Db shuts down or is poisoned.
    pub(crate) fn run_loop<E: GcEnv>(&self, env: &E) {
        // A Db that nobody has written to since it opened is idle at once:
        // the first round runs now, and what waits for idleness (the L0
        // merge, the idle tier) does not wait out a timer first.
        let mut wait = Duration::ZERO;
        // (when, value-log bytes appended): the write rate over the window.
        let mut appends: VecDeque<(Instant, u64)> = VecDeque::new();
        self.defer_samples_of_files_from_before_open(env);
        self.update_head_target(env);
        loop {
            if !env.wait_for_work(wait) {
                return;
            }
            let (rate, mut writing) = self.pace(env, &mut appends);
            wait = if writing {
                BUSY_WAIT
            } else {
                Duration::from_secs(1)
            };
            self.update_head_target(env);
            let mut rate = rate;
            loop {
                let pace = Pace { rate, writing };
                match self.collect(env, self.background_ratio(env), pace, true, ROUND_BYTES) {
                    Ok(outcomes) if outcomes.is_empty() => break,
                    // Writes may have sped up or stopped meanwhile.
                    Ok(_) => {
                        (rate, writing) = self.pace(env, &mut appends);
                        env.look_idle();
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
            env.look_idle();
        }
    }

    /// The garbage share the background GC collects at: `vlog_gc_ratio`, or
    /// `vlog_gc_idle_ratio` if lower while the Db is idle (no writes for
    /// `IDLE_AFTER`; the GC's own moves do not count as writes).
    fn background_ratio<E: GcEnv>(&self, env: &E) -> f64 {
        let (busy, idle) = (env.opts().vlog_gc_ratio, env.opts().vlog_gc_idle_ratio);
        if idle > 0.0 && idle < busy && env.idle() {
            idle
        } else {
            busy
        }
    }

    /// Value-log files the background GC will collect (garbage share at
    /// `vlog_gc_ratio` or more, or while the Db is idle `vlog_gc_idle_ratio`
    /// or scattered; a head file only once it is large enough to be
    /// sealed) and their bytes: its backlog, as `compaction::due` is the
    /// tree's. None when background GC is off or the Db is read-only.
    /// `head`: the head value-log file, if the Db is open.
    pub(crate) fn due<E: GcEnv>(&self, env: &E, head: Option<u32>) -> (u64, u64) {
        let opts = env.opts();
        if opts.vlog_gc_ratio <= 0.0 || opts.read_only {
            return (0, 0);
        }
        let ratio = self.background_ratio(env);
        let discard = env.discard();
        let st = env.read_state();
        let damaged = lock(&self.samples).damaged.clone();
        let idle_tier = ratio < opts.vlog_gc_ratio;
        let scattered = if idle_tier {
            self.scattered()
        } else {
            HashSet::new()
        };
        let mut due = (0, 0);
        for f in st.vlogs.all().filter(|f| !damaged.contains(&f.id())) {
            let (Ok(share), Ok(len)) = (self.estimated_share(&discard, f), f.len()) else {
                continue;
            };
            let sealed = Some(f.id()) != head || len >= seal_head_at(opts);
            // (The head is sealed for garbage only, never to be put in order.)
            let scattered = Some(f.id()) != head && scattered.contains(&f.id());
            if sealed && (share >= ratio || scattered) {
                due.0 += 1;
                due.1 += len;
            }
        }
        // The idle tier's walk not taken yet: what is due is not known.
        if due.0 == 0 && idle_tier {
            let sealed_bytes = st
                .vlogs
                .all()
                .filter(|f| Some(f.id()) != head)
                .filter_map(|f| f.len().ok())
                .sum();
            if self.walk_due(env, sealed_bytes) {
                due.0 = 1;
            }
        }
        due
    }
}

/// The Db's entry points into its GC.
impl DbInner {
    /// The background GC thread (`GcState::run_loop`).
    pub(crate) fn gc_loop(self: Arc<Self>) {
        self.gc.run_loop(&*self);
    }

    /// `Db::run_value_log_gc`: one round of at most one file, unpaced.
    pub(crate) fn run_value_log_gc(&self, ratio: f64) -> Result<GcOutcome> {
        if !(ratio > 0.0 && ratio < 1.0) {
            return Err(Error::InvalidArgument(format!(
                "GC discard ratio {ratio} is outside (0, 1)"
            )));
        }
        self.gc.collect_one(self, ratio, 0)
    }

    /// `Db::run_idle_gc_round`: one round of the background GC's idle tier,
    /// unpaced, as its thread runs one once the Db is idle.
    pub(crate) fn run_idle_gc_round(&self) -> Result<Vec<GcOutcome>> {
        let (busy, idle) = (self.opts.vlog_gc_ratio, self.opts.vlog_gc_idle_ratio);
        if !(idle > 0.0 && idle < busy) {
            return Err(Error::InvalidArgument(format!(
                "no idle tier: vlog_gc_idle_ratio {idle} is not in (0, vlog_gc_ratio {busy})"
            )));
        }
        let pace = Pace {
            rate: 0,
            writing: false,
        };
        self.gc.collect(self, idle, pace, true, ROUND_BYTES)
    }

    /// The background GC's backlog (`GcState::due`): files and bytes.
    pub(crate) fn gc_due(&self) -> (u64, u64) {
        self.gc.due(self, self.head_vlog_id())
    }

    /// Value-log files GC found a damaged live entry in (and left in place).
    pub(crate) fn gc_damaged_files(&self) -> u64 {
        self.gc.damaged_files()
    }
}
