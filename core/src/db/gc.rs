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
//! (`gc_trace`).
//!
//! With `vlog_gc_idle_ratio` set, once the Db has had no writes for a second
//! the loop collects down to that share instead: the rewrites then delay no
//! writer, and live values packed closer take less disk and less page cache.
//! This tier judges files by walks over the tree (`gc_walk`: one sequential
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

use super::gc_trace::{Phase, Trace};
use super::gc_walk::Walked;
use super::*;
use crate::manifest::Edit;
use crate::value::ValuePointer;
use crate::vlog::{WalkEnd, ENTRY_HEADER_LEN};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// No write for this long makes the Db idle: L0 is merged down below its trigger.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// An idle Db with no read for this long is quiet: the background GC runs
/// unpaced. Short, because a read puts the limit back within one `PACE_STEP`
/// anyway; what it saves is the settle after a burst of reads.
const QUIET_AFTER_READ: Duration = Duration::from_millis(100);

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

/// The write rate is measured over this window (`write_rate`)...
const WRITE_RATE_WINDOW: Duration = Duration::from_secs(2);

/// ...as the fastest over spans of at least this long ending now.
const RATE_SPAN_MIN: Duration = Duration::from_millis(200);

/// The background GC switches the memtable once its WAL may point into this
/// many sealed value-log files (`DbInner::switch_ahead`).
const SWITCH_AHEAD_FILES: usize = 4;

/// While writes run, a round that finds at least this many head files' worth
/// of files to collect is behind them and goes without a rate limit: the
/// limit follows a measured write rate, and under load a round paced at it
/// slept 80-140 ms while the writer made a file of garbage every 50 ms.
/// (When writes stop, `vlog_gc_rate` holds again.)
const CATCH_UP_FILES: u64 = 2;

/// Entries looked up to estimate a file's garbage share by sampling: one
/// per `SAMPLE_EVERY` bytes of the file, at most `SAMPLE_ENTRIES`.
const SAMPLE_ENTRIES: u64 = 256;
const SAMPLE_EVERY: u64 = 8 << 10;

/// A file's sampled entries are kept (`Samples::entries`) if their keys
/// total at most this many bytes (with `SAMPLE_ENTRIES` entries, keys of up
/// to 256 bytes).
const SAMPLE_KEYS_KEPT: usize = 64 << 10;

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

/// A background round collects files of at most this many bytes together
/// (one file at least): the sample, flush and sync of a round are paid once
/// for all of them. At one file a round (about 50-80 ms for a 16 MiB file
/// under load), a GC that fell behind 300 MB/s of overwrites never caught up.
const ROUND_BYTES: u64 = 64 << 20;

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
    /// The entries each sealed file's samples look up, found by walking it
    /// once: a sealed file never changes, and walking it again for every
    /// sample read every entry header of each stale file (at 1 KiB values
    /// about 60 µs per 16 MiB file hot, a read of the file back when cold,
    /// 50-250 ms a round under load). Kept for files whose sampled keys
    /// total at most `SAMPLE_KEYS_KEPT` bytes.
    entries: HashMap<u32, SampledEntries>,
    /// Bytes of files that may still be sampled (`DbInner::resample`).
    credit: u64,
    /// `DbInner::vlog_appended` when `credit` was last topped up.
    credited_at: u64,
    /// The idle tier's last walk over the tree (`gc_walk`), while no write
    /// came after it.
    walked: Option<Walked>,
    /// Files found to hold a damaged live entry: they stay, and no round
    /// picks them again while the Db is open (each would meet the same
    /// damage and hold back the files behind it). `verify` reports them.
    damaged: HashSet<u32>,
}

/// The (pointer, key) of each entry a file's samples look up.
type SampledEntries = Arc<Vec<(ValuePointer, Vec<u8>)>>;

#[derive(Clone, Copy)]
struct Sample {
    share: f64,
    /// Value-log bytes appended when it was taken (`DbInner::vlog_appended`).
    at: u64,
}

/// The moves of one file, handed to the write pipeline in chunks of
/// `MOVE_CHUNK` bytes; entries that have expired are left behind.
struct Mover<'a> {
    db: &'a DbInner,
    now: u64,
    chunk: Vec<Move>,
    chunk_bytes: usize,
    /// Values and entry bytes moved so far (queued in `chunk` included).
    values: u64,
    bytes: u64,
    /// Time spent handing chunks over, when traced.
    timed: bool,
    moves: Duration,
}

impl<'a> Mover<'a> {
    fn new(db: &'a DbInner, now: u64, timed: bool) -> Mover<'a> {
        Mover {
            db,
            now,
            chunk: Vec::new(),
            chunk_bytes: 0,
            values: 0,
            bytes: 0,
            timed,
            moves: Duration::ZERO,
        }
    }

    fn push(&mut self, m: Move) -> Result<()> {
        if m.expires_at != 0 && m.expires_at <= self.now {
            return Ok(());
        }
        self.values += 1;
        self.bytes += (ENTRY_HEADER_LEN + m.key.len() + m.value.len()) as u64;
        self.chunk_bytes += m.key.len() + m.value.len();
        self.chunk.push(m);
        if self.chunk_bytes >= MOVE_CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }

    fn hand_over(&mut self) -> Result<()> {
        self.chunk_bytes = 0;
        if self.chunk.is_empty() {
            return Ok(());
        }
        let t = self.timed.then(Instant::now);
        self.db
            .write(WriterKind::Moves(std::mem::take(&mut self.chunk)), None)?;
        self.moves += t.map_or(Duration::ZERO, |t| t.elapsed());
        Ok(())
    }

    /// Hands over the last chunk: (values, bytes, time handing over).
    fn finish(mut self) -> Result<(u64, u64, Duration)> {
        self.hand_over()?;
        Ok((self.values, self.bytes, self.moves))
    }
}

/// Entries a walk records at most (32 bytes each), counted as value-log bytes
/// at the smallest separated entry (`walk_record_bytes`).
const WALK_ENTRIES: u64 = 1 << 20;

/// Value-log bytes a walk records the live entries of: `WALK_ENTRIES` of the
/// smallest separated entries (a keyspace with a lower value threshold can
/// go past it), between a round's bytes and 1 GiB.
fn walk_record_bytes(opts: &Options) -> u64 {
    let smallest = (ENTRY_HEADER_LEN + opts.value_threshold) as u64;
    (WALK_ENTRIES * smallest).clamp(ROUND_BYTES, 1 << 30)
}

/// The files a walk records, from sealed files and their garbage shares:
/// `first` (whatever their size), then those at `ratio` or more, the largest
/// share first, within `budget` bytes.
fn walk_set(
    first: &[Arc<crate::vlog::VlogFile>],
    mut shares: Vec<(f64, Arc<crate::vlog::VlogFile>)>,
    ratio: f64,
    budget: u64,
) -> Result<HashSet<u32>> {
    let mut set = HashSet::new();
    let mut bytes = 0u64;
    for f in first {
        bytes = bytes.saturating_add(f.len()?);
        set.insert(f.id());
    }
    shares.retain(|(share, f)| *share >= ratio && !set.contains(&f.id()));
    shares.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, f) in shares {
        bytes = bytes.saturating_add(f.len()?);
        if bytes > budget {
            break;
        }
        set.insert(f.id());
    }
    Ok(set)
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

/// How fast a round may go: `rate` bytes a second (0: no limit), and
/// whether writes ran since the last look (`DbInner::gc_pace`).
#[derive(Clone, Copy)]
struct Pace {
    rate: u64,
    writing: bool,
}

/// A round's progress against its rate limit, looked at every `PACE_STEP`
/// bytes. A background round runs at device speed while the Db is quiet
/// (`DbInner::look_idle`: no write for `IDLE_AFTER`, no read for
/// `QUIET_AFTER_READ`): the
/// rewrites then delay nobody, and the settle after a load is as short as
/// the device allows. The first foreground read or write puts the limit
/// back within a step, counted from then on, so that bytes done unpaced are
/// not paid for with a sleep.
struct Pacer {
    /// Bytes a second; 0: no limit.
    rate: u64,
    /// A background round, which runs unpaced while the Db is quiet.
    background: bool,
    /// The limit holds for the bytes done past `paid` since `since`.
    since: Instant,
    paid: u64,
    /// Bytes done at which to look next.
    next: u64,
}

/// Bytes a round does between two looks at its pace.
const PACE_STEP: u64 = 256 << 10;

impl Pacer {
    fn new(rate: u64, background: bool, started: Instant) -> Pacer {
        Pacer {
            rate,
            background,
            since: started,
            paid: 0,
            next: PACE_STEP,
        }
    }

    /// Whether `done` bytes call for a look (`step`).
    fn due(&self, done: u64) -> bool {
        self.rate > 0 && done >= self.next
    }

    /// Sleeps as long as `done` bytes of the round ask, if the limit holds.
    /// Requires: `due(done)`; no lock of `db` held (a look takes `bg`).
    fn step(&mut self, db: &DbInner, done: u64) -> Result<()> {
        self.next = done + PACE_STEP;
        if self.background && db.look_idle() {
            // Unpaced, the round never sleeps: it still ends at a close.
            db.check_open()?;
            self.since = Instant::now();
            self.paid = done;
            return Ok(());
        }
        db.throttle(self.since, done - self.paid, self.rate)
    }
}

/// The files a round collects, from sealed files and their estimated
/// garbage shares: those at `ratio` or more, the largest share first, as
/// many as fit in `max_bytes` (the first whatever its size).
fn pick(
    mut shares: Vec<(f64, Arc<crate::vlog::VlogFile>)>,
    ratio: f64,
    max_bytes: u64,
) -> Result<Vec<Arc<crate::vlog::VlogFile>>> {
    shares.retain(|(share, _)| *share >= ratio);
    shares.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut files = Vec::new();
    let mut bytes = 0u64;
    for (_, f) in shares {
        bytes = bytes.saturating_add(f.len()?);
        if !files.is_empty() && bytes > max_bytes {
            break;
        }
        files.push(f);
    }
    Ok(files)
}

/// The rate (bytes a second) writes append at, from `samples` of (when,
/// bytes appended since open) oldest first and `appended` `now`: the fastest
/// over any span from a sample to now of at least `RATE_SPAN_MIN`, or over
/// the whole window if none is that long. Not the window's average: writers
/// slowed by a loaded machine append in bursts, and a GC paced at 4x a 2 s
/// average of 80 MB/s spent 80-140 ms of each round asleep while bursts of
/// 300 MB/s made garbage faster than it freed it.
fn write_rate(samples: &VecDeque<(Instant, u64)>, now: Instant, appended: u64) -> u64 {
    let rate = |&(t, bytes): &(Instant, u64)| {
        let secs = now.duration_since(t).as_secs_f64().max(0.05);
        (appended.saturating_sub(bytes) as f64 / secs) as u64
    };
    samples
        .iter()
        .filter(|(t, _)| now.duration_since(*t) >= RATE_SPAN_MIN)
        .map(rate)
        .max()
        .or_else(|| samples.front().map(rate))
        .unwrap_or(0)
}

/// Entries sampled from a file of `len` bytes.
fn sample_count(len: u64) -> u64 {
    (len / SAMPLE_EVERY).clamp(1, SAMPLE_ENTRIES)
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

    /// Whether the idle tier should walk the tree before it picks: no walk
    /// since open, or the value log grew by a `HEAD_PER_LIVE`th since the
    /// last one, or writes came after it.
    fn walk_due(&self, sealed_bytes: u64) -> bool {
        let samples = lock(&self.gc_samples);
        let Some(w) = &samples.walked else {
            return sealed_bytes > 0;
        };
        w.batches != self.counters.batches.load(Ordering::Relaxed)
            && self.vlog_appended().saturating_sub(w.appended) >= sealed_bytes / HEAD_PER_LIVE
    }

    /// Walks the tree (`gc_walk`) recording the live entries of `record`, and
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
        let mut samples = lock(&self.gc_samples);
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
        trace: &mut Trace,
    ) -> Result<()> {
        let period = self.vlog_head_target.load(Ordering::Relaxed) / RESAMPLE_PER_HEAD;
        let mut stale = Vec::new();
        let mut total = 0u64;
        {
            let mut samples = lock(&self.gc_samples);
            samples
                .files
                .retain(|id, _| files.iter().any(|f| f.id() == *id));
            samples
                .entries
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
            trace.sampled_files += 1;
            trace.sampled_entries += count;
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

    /// Marks the sealed files that were there at open as sampled (at their
    /// counted garbage), so that they are sampled again only as writes pay
    /// for it (`resample`'s credit), not all at once for free: otherwise a
    /// reopened Db that only reads would walk its whole value log beside its
    /// readers and slow them (see docs/gc-pacing.md).
    fn defer_samples_of_files_from_before_open(&self) {
        let st = self.read_state();
        let head = self.gc_head(&st);
        let appended = self.vlog_appended();
        let mut samples = lock(&self.gc_samples);
        for f in st.vlogs.all().filter(|f| f.id() < head) {
            samples.files.entry(f.id()).or_insert(Sample {
                share: 0.0,
                at: appended,
            });
        }
    }

    /// The share of `count` entries of `f` (spread over its bytes)
    /// that a lookup finds shadowed, deleted or expired.
    fn sample_share(&self, f: &crate::vlog::VlogFile, count: u64) -> Result<f64> {
        let kept = lock(&self.gc_samples).entries.get(&f.id()).cloned();
        let sampled = match kept {
            Some(entries) => entries,
            None => {
                let entries = Arc::new(f.sample_entries(count)?);
                let key_bytes: usize = entries.iter().map(|(_, k)| k.len()).sum();
                if key_bytes <= SAMPLE_KEYS_KEPT {
                    lock(&self.gc_samples)
                        .entries
                        .insert(f.id(), entries.clone());
                }
                entries
            }
        };
        if sampled.is_empty() {
            return Ok(0.0);
        }
        let st = self.read_state();
        let now = self.now();
        let mut dead = 0usize;
        for (ptr, key) in sampled.iter() {
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
        lock(&self.gc_samples).damaged.len() as u64
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
        let damaged = lock(&self.gc_samples).damaged.clone();
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

    pub(crate) fn run_value_log_gc(self: &Arc<Self>, ratio: f64) -> Result<GcOutcome> {
        if !(ratio > 0.0 && ratio < 1.0) {
            return Err(Error::InvalidArgument(format!(
                "GC discard ratio {ratio} is outside (0, 1)"
            )));
        }
        self.collect_one(ratio, 0)
    }

    /// One round of at most one file (`Db::run_value_log_gc`): the file with
    /// the largest garbage share if it is at least `ratio`, reading and
    /// rewriting at most `rate` bytes a second (0: no limit).
    fn collect_one(self: &Arc<Self>, ratio: f64, rate: u64) -> Result<GcOutcome> {
        let pace = Pace {
            rate,
            writing: false,
        };
        let outcomes = self.collect(ratio, pace, false, 1)?;
        Ok(outcomes
            .first()
            .copied()
            .unwrap_or(GcOutcome::NothingToCollect))
    }

    /// One round: collects the files whose garbage share is at least
    /// `ratio`, largest share first, as many as fit in `max_bytes` (one at
    /// least), reading and rewriting at most `pace.rate` bytes a second (0:
    /// no limit; none either while writes run and the round is behind, see
    /// `CATCH_UP_FILES`); `background`: the GC thread, which does not wait
    /// to seal the head or for a flush. The round's fixed costs (sampling, the flush, the sync before
    /// deleting, the manifest record) are paid once for all its files, so a
    /// GC that fell behind catches up faster than writes make garbage.
    /// Returns what happened to each file collected (none: nothing to collect).
    fn collect(
        self: &Arc<Self>,
        ratio: f64,
        pace: Pace,
        background: bool,
        max_bytes: u64,
    ) -> Result<Vec<GcOutcome>> {
        let _one_at_a_time = lock(&self.gc_lock);
        let started = Instant::now();
        let mut trace = Trace::start(pace.rate);
        let outcomes = self.collect_locked(ratio, pace, background, max_bytes, started, &mut trace);
        self.counters
            .gc_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        if trace.on() {
            trace.finish(&match &outcomes {
                Ok(o) => format!("{}", o.len()),
                Err(e) => format!("error({e})"),
            });
        }
        outcomes
    }

    fn collect_locked(
        self: &Arc<Self>,
        ratio: f64,
        pace: Pace,
        background: bool,
        max_bytes: u64,
        started: Instant,
        trace: &mut Trace,
    ) -> Result<Vec<GcOutcome>> {
        self.check_writable()?;
        let mut head = self.gc_head(&self.read_state());
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
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
        trace.mark(Phase::Seal);
        let st = self.read_state();
        let head = head.min(self.gc_head(&st));
        let damaged = lock(&self.gc_samples).damaged.clone();
        let sealed: Vec<_> = st
            .vlogs
            .all()
            .filter(|f| f.id() < head && !damaged.contains(&f.id()))
            .cloned()
            .collect();
        drop(st);
        // The idle tier judges files by walks over the tree, not lookups.
        let walking = background && ratio < self.opts.vlog_gc_ratio;
        if !walking {
            // Its entries go stale with writes: keep only when it was taken.
            if let Some(w) = lock(&self.gc_samples).walked.as_mut() {
                w.live = HashMap::new();
            }
        }
        if !walking {
            // (A walk measures every file: no lookups beside it.)
            self.resample(&sealed, &discard, ratio, appended, trace)?;
        }
        let shares_now = |sealed: &[Arc<crate::vlog::VlogFile>]| -> Result<Vec<_>> {
            let mut shares = Vec::with_capacity(sealed.len());
            for f in sealed {
                shares.push((self.estimated_share(&discard, f)?, f.clone()));
            }
            Ok(shares)
        };
        if walking {
            let mut sealed_bytes = 0u64;
            for f in &sealed {
                sealed_bytes += f.len()?;
            }
            if self.walk_due(sealed_bytes) {
                let record = walk_set(
                    &[],
                    shares_now(&sealed)?,
                    ratio,
                    walk_record_bytes(&self.opts),
                )?;
                self.walk(&sealed, &record, trace)?;
            }
        }
        trace.mark(Phase::Sample);
        if background {
            self.switch_ahead(&sealed, trace)?;
        }
        let shares = shares_now(&sealed)?;
        let mut files = pick(shares.clone(), ratio, max_bytes)?;
        if files.is_empty() {
            return Ok(Vec::new());
        }
        // WALs written while a file was the head may point into it: flush
        // them away (a replay after a crash would otherwise stop at a pointer
        // into a deleted file, and lose every later record). WALs and
        // value-log files share one id counter, so a WAL started after the
        // file was sealed has an id above the head that replaced it; if every
        // live WAL has, no flush is needed. That head is recorded at the
        // rotation: the next larger value-log id is not it when a bulk load
        // made files meanwhile (power_loss.rs covers a head collected soon
        // after it was sealed). A file sealed before
        // this open, or not a head, is collected after a flush.
        //
        // The background GC does not wait for the flush: it switches the
        // memtable (if the current one's WAL may point into a file picked)
        // and leaves those files to a round after the flush (the flush
        // thread wakes it); the others are collected now. A flush took up to
        // 330 ms under load, and a round that waited for it left every other
        // file waiting too. A caller of `run_value_log_gc` waits: one flush
        // covers every file of its round, all sealed before it.
        let replaced_by: Vec<Option<u64>> = {
            let sealed_for = lock(&self.vlog_sealed_for);
            files
                .iter()
                .map(|f| sealed_for.get(&f.id()).copied())
                .collect()
        };
        // The oldest WAL still live: every older one is flushed, recorded
        // (the manifest's log number is past it) and removed. (The log
        // number itself is only the flushed WAL's id + 1, at or below the
        // head that replaced a file sealed while that WAL was current: a
        // test of it asked for a flush on nearly every round.)
        let oldest_wal = {
            let st = self.read_state();
            st.imm
                .iter()
                .map(|m| m.wal_id())
                .fold(st.mem.wal_id(), u64::min)
        };
        let flushed = |next: Option<u64>| next.is_some_and(|next| oldest_wal > next);
        trace.mark(Phase::Pick);
        let mem = self.read_state().mem.clone();
        if background && replaced_by.iter().all(|&r| r.is_some()) && !mem.is_empty() {
            // An empty memtable's WAL points nowhere: then the flush below
            // waits only for older memtables, as `flush` does.
            let switch = replaced_by
                .iter()
                .any(|&r| r.is_some_and(|next| mem.wal_id() <= next));
            if switch {
                self.gc_switch(trace)?;
            }
            let mut kept = Vec::with_capacity(files.len());
            for (f, r) in files.into_iter().zip(replaced_by) {
                if flushed(r) {
                    kept.push(f);
                }
            }
            files = kept;
            if files.is_empty() {
                return Ok(Vec::new());
            }
        } else if !replaced_by.into_iter().all(flushed) {
            self.gc_flush(trace)?;
        }
        drop(mem);
        trace.collected = files.iter().map(|f| f.id()).collect();
        if walking {
            let covered = lock(&self.gc_samples)
                .walked
                .as_ref()
                .is_some_and(|w| w.covers(&trace.collected));
            if !covered {
                let record = walk_set(&files, shares, ratio, walk_record_bytes(&self.opts))?;
                self.walk(&sealed, &record, trace)?;
                // The walk measured them: only those still due are collected.
                let mut due = Vec::with_capacity(files.len());
                for f in files {
                    if self.estimated_share(&discard, &f)? >= ratio {
                        due.push(f);
                    }
                }
                files = due;
                trace.collected = files.iter().map(|f| f.id()).collect();
                if files.is_empty() {
                    return Ok(Vec::new());
                }
            }
            trace.mark(Phase::Sample);
        }
        // Taken out for the moves (stats read the samples meanwhile), put back after.
        let walked = if walking {
            lock(&self.gc_samples).walked.take()
        } else {
            None
        };
        let mut round_bytes = 0u64;
        for f in &files {
            round_bytes += f.len()?;
        }
        let rate = if pace.writing
            && round_bytes >= CATCH_UP_FILES * self.vlog_head_target.load(Ordering::Relaxed)
        {
            0
        } else {
            pace.rate
        };
        trace.rate = rate;

        // What the rate limits: bytes read, plus what was moved, over the round.
        let mut done = 0u64;
        let mut pacer = Pacer::new(rate, background, started);
        let mut outcomes = Vec::with_capacity(files.len());
        // A file with a damaged live entry stays (what was moved of it is
        // garbage now); the round goes on with the others.
        let mut damage: Option<Error> = None;
        let mut kept = Vec::with_capacity(files.len());
        for file in files {
            let file_bytes = file.len()?;
            let (moved_values, moved_bytes) =
                match self.move_live(&file, walked.as_ref(), &mut pacer, done, trace) {
                    Ok(moved) => moved,
                    Err(e) if e.is_corruption() => {
                        lock(&self.gc_samples).damaged.insert(file.id());
                        damage.get_or_insert(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
            kept.push(file.clone());
            done += file_bytes + moved_bytes;
            trace.bytes += file_bytes;
            trace.moved += moved_bytes;
            outcomes.push(if moved_values == 0 {
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
            });
        }
        let files = kept;
        if let Some(w) = walked {
            lock(&self.gc_samples).walked = Some(w);
        }
        // A caller of `run_value_log_gc` learns of the damage; the
        // background GC counts it (`Stats::gc_damaged_files`) and goes on.
        let finish = |outcomes: Vec<GcOutcome>| match damage {
            Some(e) if !background => Err(e),
            _ => Ok(outcomes),
        };
        if files.is_empty() {
            return finish(outcomes);
        }
        self.sync_before_delete()?;
        trace.mark(Phase::Sync);
        let edits: Vec<Edit> = files.iter().map(|f| Edit::DeleteVlog(f.id())).collect();
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&edits)
            .inspect_err(|e| self.poison_with(e))?;
        // Counted before the files leave the read state: stats never show
        // the backlog gone (`gc_due`) without the collection that did it.
        for outcome in &outcomes {
            self.count(outcome);
        }
        self.update_state(|s| {
            let mut vlogs = (*s.vlogs).clone();
            for f in &files {
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
        {
            let mut sealed_for = lock(&self.vlog_sealed_for);
            for f in &files {
                sealed_for.remove(&f.id());
            }
        }
        for f in &files {
            self.remove_vlog_file(f.id(), f.path())?;
        }
        // The last handles: unmapping and closing an unlinked file frees its
        // pages and blocks (30-85 ms a round under load), part of the deletion.
        drop(files);
        trace.mark(Phase::Delete);
        finish(outcomes)
    }

    /// Moves each entry of `file` that is still the newest version of its
    /// key to the head of the log (through the write pipeline, in chunks),
    /// keeping `done_before` bytes of the round plus this file's within
    /// `pacer`'s limit. Returns the values and bytes moved.
    /// With `walked` (which recorded `file`), the walk's live entries are
    /// moved without a lookup each.
    ///
    /// Every live entry is moved, or the result is an error and the caller
    /// keeps the file: where the walk in file order stops short of the end
    /// (a torn tail, or damage), the tree names the live entries past the
    /// stop and each is read by its pointer. A damaged live entry is
    /// [`Error::Corruption`] naming the file and its offset; damage in
    /// garbage costs nothing.
    fn move_live(
        self: &Arc<Self>,
        file: &crate::vlog::VlogFile,
        walked: Option<&Walked>,
        pacer: &mut Pacer,
        done_before: u64,
        trace: &mut Trace,
    ) -> Result<(u64, u64)> {
        let timed = trace.on();
        let (mut lookups, mut sleeps) = (Duration::ZERO, Duration::ZERO);
        let clock = || timed.then(Instant::now);
        let since = |t: Option<Instant>| t.map_or(Duration::ZERO, |t| t.elapsed());
        let mut mover = Mover::new(self, self.now(), timed);
        let end = file.for_each_entry(|ptr, key, value| {
            // Bytes read so far, plus what was moved: what the rate limits.
            let done = done_before + ptr.offset + u64::from(ptr.len) + mover.bytes;
            if pacer.due(done) {
                let t = clock();
                pacer.step(self, done)?;
                sleeps += since(t);
            }
            let live = match walked {
                Some(w) => w
                    .entry(ptr.file, ptr.offset)
                    .map(|e| (e.version, e.user_meta, e.expires_at)),
                None => {
                    let t = clock();
                    let st = self.read_state();
                    let found = st.lookup(key, crate::key::MAX_SEQ)?;
                    lookups += since(t);
                    found.and_then(|(version, raw)| {
                        let rec = value::decode(&raw)?;
                        (rec.stored == Stored::Pointer(ptr)).then_some((
                            version,
                            rec.user_meta,
                            rec.expires_at,
                        ))
                    })
                }
            };
            let Some((version, user_meta, expires_at)) = live else {
                return Ok(());
            };
            mover.push(Move {
                key: key.to_vec(),
                value: value.to_vec(),
                version,
                user_meta,
                expires_at,
                old: ptr,
                walked_at: walked.map(|w| w.seq),
            })
        })?;
        if let WalkEnd::Stopped { offset: stop, .. } = end {
            let t = clock();
            let fresh;
            let w = match walked.filter(|w| w.covers(&[file.id()])) {
                Some(w) => w,
                None => {
                    fresh = self.walk_live(&HashSet::from([file.id()]))?;
                    &fresh
                }
            };
            lookups += since(t);
            let past = w.live.get(&file.id()).map_or(&[][..], |e| &e[..]);
            for e in past.iter().filter(|e| e.offset >= stop) {
                let ptr = ValuePointer {
                    file: file.id(),
                    offset: e.offset,
                    len: e.len,
                };
                let (key, value) = file.read_entry(ptr)?;
                mover.push(Move {
                    key,
                    value,
                    version: e.version,
                    user_meta: e.user_meta,
                    expires_at: e.expires_at,
                    old: ptr,
                    walked_at: Some(w.seq),
                })?;
            }
        }
        let (values, bytes, moves) = mover.finish()?;
        trace.add(Phase::Lookup, lookups);
        trace.add(Phase::Move, moves);
        trace.add(Phase::Throttle, sleeps);
        trace.mark(Phase::Read);
        Ok((values, bytes))
    }

    /// Switches the memtable when its WAL may point into `SWITCH_AHEAD_FILES`
    /// or more of the `sealed` files (they were heads while it was current):
    /// with large values a memtable of pointers outlives many value-log
    /// files, and every file that became garbage would wait for a flush
    /// (tens to hundreds of ms under load) before it could be deleted
    /// (see docs/gc-pacing.md). Switched ahead, the
    /// WAL is flushed by the time the files' keys are overwritten.
    fn switch_ahead(&self, sealed: &[Arc<crate::vlog::VlogFile>], trace: &mut Trace) -> Result<()> {
        let mem_wal = self.read_state().mem.wal_id();
        let spanned = {
            let sealed_for = lock(&self.vlog_sealed_for);
            sealed
                .iter()
                .filter(|f| sealed_for.get(&f.id()).is_some_and(|&next| next > mem_wal))
                .count()
        };
        if spanned >= SWITCH_AHEAD_FILES {
            self.gc_switch(trace)?;
        }
        Ok(())
    }

    /// Switches the memtable (its flush follows in the background) unless
    /// it is empty: the background GC's request for a flush it does not wait
    /// for. Writers wait for the switch, as for any memtable switch.
    fn gc_switch(&self, trace: &mut Trace) -> Result<()> {
        let mut guard = lock(&self.log);
        trace.mark(Phase::FlushLock);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        if !self.read_state().mem.is_empty() {
            self.switch_memtable(log)?;
        }
        trace.mark(Phase::FlushSwitch);
        Ok(())
    }

    /// `flush`, with its phases traced: the GC's flush of the WALs that may
    /// point into the files it collects.
    fn gc_flush(&self, trace: &mut Trace) -> Result<()> {
        let through = {
            let mut guard = lock(&self.log);
            trace.mark(Phase::FlushLock);
            let log = guard.as_mut().ok_or(Error::Closed)?;
            if !self.read_state().mem.is_empty() {
                self.switch_memtable(log)?;
            }
            self.read_state().imm.iter().map(|m| m.wal_id()).max()
        };
        trace.mark(Phase::FlushSwitch);
        if let Some(wal_id) = through {
            self.wait_flushed_through(wal_id)?;
        }
        trace.mark(Phase::FlushWait);
        Ok(())
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
            // subtracting a later one can underflow, and a panic in the GC
            // thread would leave its backlog for ever.
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
    fn a_burst_of_writes_after_a_pause_is_measured_at_its_own_rate_not_the_windows_average() {
        let mib = 1u64 << 20;
        let now = Instant::now();
        let at = |ms: u64| now - Duration::from_millis(ms);
        // Nothing appended for 1.5 s, then 150 MiB in the last 500 ms
        // (300 MiB/s); over the whole 2 s window that averages 75 MiB/s.
        let samples: VecDeque<(Instant, u64)> = [
            (at(2000), 0),
            (at(1000), 0),
            (at(500), 0),
            (at(100), 120 * mib),
        ]
        .into();
        let rate = write_rate(&samples, now, 150 * mib);
        assert!(rate >= 290 * mib, "measured {} MiB/s", rate / mib);
        // Steady writes: the same either way.
        let steady: VecDeque<(Instant, u64)> = [(at(2000), 0), (at(1000), 100 * mib)].into();
        let rate = write_rate(&steady, now, 200 * mib);
        assert!((99 * mib..=101 * mib).contains(&rate), "{}", rate / mib);
        // A span shorter than RATE_SPAN_MIN alone is not trusted: the oldest sample is.
        let short: VecDeque<(Instant, u64)> = [(at(100), 0)].into();
        assert_eq!(write_rate(&short, now, 10 * mib), 100 * mib);
        assert_eq!(write_rate(&VecDeque::new(), now, 10 * mib), 0, "no samples");
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
