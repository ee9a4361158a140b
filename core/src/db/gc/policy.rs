//! The GC's policy: its tuning constants and the pure decisions made
//! from measurements (which files a round or a walk takes, where the head
//! file is sealed, the rate limit, how many entries a sample looks up).

use super::*;

/// No write for this long makes the Db idle: L0 is merged down below its trigger.
pub(super) const IDLE_AFTER: Duration = Duration::from_secs(1);

/// How long the background GC waits after a failed round before it tries again.
pub(super) const RETRY_AFTER_ERROR: Duration = Duration::from_secs(30);

/// A head value-log file this large (or half of `vlog_file_size`, if less)
/// with enough garbage is sealed so that GC can collect it; also the least
/// size the head is sealed at while background GC runs (`head_target`).
pub(super) const SEAL_HEAD_AT: u64 = 16 << 20;

/// While background GC runs, the head file is sealed once it holds this
/// fraction (1/N) of the live value-log bytes: garbage can only be collected
/// from sealed files, so the head bounds what waits uncollectable.
pub(super) const HEAD_PER_LIVE: u64 = 16;

/// The write rate is measured over this window (`write_rate`)...
pub(super) const WRITE_RATE_WINDOW: Duration = Duration::from_secs(2);

/// ...as the fastest over spans of at least this long ending now.
pub(super) const RATE_SPAN_MIN: Duration = Duration::from_millis(200);

/// The background GC switches the memtable once its WAL may point into this
/// many sealed value-log files (`DbInner::switch_ahead`).
pub(super) const SWITCH_AHEAD_FILES: usize = 4;

/// While writes run, a round that finds at least this many head files' worth
/// of files to collect is behind them and goes without a rate limit: the
/// limit follows a measured write rate, and under load a round paced at it
/// slept 80-140 ms while the writer made a file of garbage every 50 ms.
/// (When writes stop, `vlog_gc_rate` holds again.)
pub(super) const CATCH_UP_FILES: u64 = 2;

/// Entries looked up to estimate a file's garbage share by sampling: one
/// per `SAMPLE_EVERY` bytes of the file, at most `SAMPLE_ENTRIES`.
pub(super) const SAMPLE_ENTRIES: u64 = 256;
pub(super) const SAMPLE_EVERY: u64 = 8 << 10;

/// A file's sampled entries are kept (`Samples::entries`) if their keys
/// total at most this many bytes (with `SAMPLE_ENTRIES` entries, keys of up
/// to 256 bytes).
pub(super) const SAMPLE_KEYS_KEPT: usize = 64 << 10;

/// Sampling may take this many lookups per KiB appended to the value log
/// (`DbInner::resample`): with 1 KiB values, two per value written.
pub(super) const SAMPLE_LOOKUPS_PER_KIB: u64 = 2;

/// A file's sample is taken again after this fraction (1/N) of a head
/// file's worth of appends: a file whose keys were just overwritten is found
/// soon, at the cost of `SAMPLE_ENTRIES` lookups per sealed file.
pub(super) const RESAMPLE_PER_HEAD: u64 = 4;

/// Looks the GC loop takes per second while writes run (once a second when idle).
pub(super) const BUSY_WAIT: Duration = Duration::from_millis(100);

/// Moves are handed to the write pipeline in chunks of about this many bytes.
pub(super) const MOVE_CHUNK: usize = 4 << 20;

/// A background round collects files of at most this many bytes together
/// (one file at least): the sample, flush and sync of a round are paid once
/// for all of them. At one file a round (about 50-80 ms for a 16 MiB file
/// under load), a GC that fell behind 300 MB/s of overwrites never caught up.
pub(super) const ROUND_BYTES: u64 = 64 << 20;

/// A head file this large with enough garbage is sealed for collection:
/// `SEAL_HEAD_AT`, or half of `vlog_file_size` if less.
pub(super) fn seal_head_at(opts: &Options) -> u64 {
    (opts.vlog_file_size / 2).min(SEAL_HEAD_AT)
}

/// The share of a value-log file's entry bytes that compactions and flushes
/// found to be garbage (`discard`: bytes per file, from the manifest).
pub(super) fn garbage_share(
    discard: &BTreeMap<u32, u64>,
    f: &crate::vlog::VlogFile,
) -> Result<f64> {
    let size = f
        .len()?
        .saturating_sub(crate::wal::HEADER_LEN as u64)
        .max(1);
    Ok(discard.get(&f.id()).copied().unwrap_or(0) as f64 / size as f64)
}

/// A value-log file whose live entries, taken in key order, form forward
/// streams (`walk::Streams`) of fewer bytes than this on average is
/// scattered (`walk::Walked::scattered`): a forward scan reads it with a
/// read per value or few, where a file written in key order is read ahead
/// in long streams. Values written in random key order form streams of a
/// few entries; each GC round's key-ordered output is one stream of tens of
/// MiB.
pub(super) const SORTED_RUN_BYTES: u64 = 256 << 10;
/// A file of this many streams or fewer is read in that many however short
/// they are (a small file, or one holding the outputs of a few GC rounds):
/// never scattered.
pub(super) const SORTED_MIN_RUNS: u64 = 4;

/// A key-order round that moved at least this many bytes seals the head
/// after its moves (`GcState::collect`): its output keeps a file of its own.
pub(super) const OWN_FILE_BYTES: u64 = 4 << 20;

/// Entries a walk records at most (40 bytes each), counted as value-log bytes
/// at the smallest separated entry (`walk_record_bytes`).
pub(super) const WALK_ENTRIES: u64 = 1 << 20;

/// Value-log bytes a walk records the live entries of: `WALK_ENTRIES` of the
/// smallest separated entries (a keyspace with a lower value threshold can
/// go past it), between a round's bytes and 1 GiB.
pub(super) fn walk_record_bytes(opts: &Options) -> u64 {
    let smallest = (ENTRY_HEADER_LEN + opts.value_threshold) as u64;
    (WALK_ENTRIES * smallest).clamp(ROUND_BYTES, 1 << 30)
}

/// The files a walk records, from sealed files and their garbage shares:
/// `first` (whatever their size), then those at `ratio` or more, the largest
/// share first, then the `scattered` ones, oldest first (the order the idle
/// tier puts them in key order), within `budget` bytes. Recording the files
/// later rounds will take spares each of those rounds a walk of its own.
pub(super) fn walk_set(
    first: &[Arc<crate::vlog::VlogFile>],
    mut shares: Vec<(f64, Arc<crate::vlog::VlogFile>)>,
    ratio: f64,
    scattered: &HashSet<u32>,
    budget: u64,
) -> Result<HashSet<u32>> {
    let mut set = HashSet::new();
    let mut bytes = 0u64;
    for f in first {
        bytes = bytes.saturating_add(f.len()?);
        set.insert(f.id());
    }
    let garbage = |share: f64| share >= ratio;
    shares.retain(|(share, f)| {
        (garbage(*share) || scattered.contains(&f.id())) && !set.contains(&f.id())
    });
    shares.sort_by(|a, b| match (garbage(a.0), garbage(b.0)) {
        (true, true) => b.0.total_cmp(&a.0),
        (false, false) => a.1.id().cmp(&b.1.id()),
        (ga, gb) => gb.cmp(&ga),
    });
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
pub(super) fn head_target(opts: &Options, live: u64) -> u64 {
    let floor = opts.vlog_file_size.min(SEAL_HEAD_AT);
    (live / HEAD_PER_LIVE).clamp(floor, opts.vlog_file_size)
}

/// The GC's rate limit (`Options::vlog_gc_write_factor`): `configured`, or
/// `factor` times the rate (bytes a second) writes append at, if more.
/// 0: no limit.
pub(super) fn gc_rate(configured: u64, factor: u32, write_rate: u64) -> u64 {
    if configured == 0 {
        0
    } else {
        configured.max(write_rate.saturating_mul(u64::from(factor)))
    }
}

/// The files a round collects, from sealed files and their estimated
/// garbage shares: those at `ratio` or more, the largest share first, as
/// many as fit in `max_bytes` (the first whatever its size).
pub(super) fn pick(
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
pub(super) fn write_rate(samples: &VecDeque<(Instant, u64)>, now: Instant, appended: u64) -> u64 {
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
pub(super) fn sample_count(len: u64) -> u64 {
    (len / SAMPLE_EVERY).clamp(1, SAMPLE_ENTRIES)
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
