//! Options of a Db, with their defaults and validation.

use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::table::{Codec, Compression};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where sett reads the time for TTLs: unix seconds. The system clock by
/// default; tests drive a manual one.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        }))
    }

    /// A clock that reads `now` (unix seconds), for tests that move time by hand.
    pub fn manual(now: Arc<AtomicU64>) -> Clock {
        Clock(Arc::new(move || now.load(Ordering::SeqCst)))
    }

    /// The current time in unix seconds.
    pub fn now(&self) -> u64 {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock(now={})", self.now())
    }
}

/// How a Db is opened and tuned. Every field has a documented default
/// (`Options::new(dir)`), and `validate` names the first field out of range.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory that holds the database's files. Created if missing (unless read-only).
    pub dir: PathBuf,
    /// Values of at least this many bytes are written once to the value log and the
    /// tree keeps a 16-byte pointer; smaller values are stored inline in the tree.
    /// Default 1024 bytes, chosen by measurement (docs/value-threshold.md).
    pub value_threshold: usize,
    /// Size at which the active memtable becomes immutable and is flushed. Default
    /// 16 MiB: smaller skiplists insert faster and hold less memory (see
    /// docs/write-path.md).
    pub memtable_size: usize,
    /// Memtables (active plus immutable) held at most; writers wait when all are full. Default 4.
    pub max_memtables: usize,
    /// Target size of an SST data block, before compression. Default 4 KiB.
    pub block_size: usize,
    /// Codec of table data blocks on every level that `compression_per_level`
    /// does not name. Default [`Compression::None`] (tables are then written in
    /// format version 2). Index and filter blocks, and the value log, are
    /// never compressed. A block that a codec does not shrink by an eighth is
    /// stored uncompressed.
    pub compression: Compression,
    /// Codec per level, RocksDB style: entry N is used for tables written to
    /// level N, the last entry for every deeper level; empty (the default)
    /// means `compression` everywhere. A common choice: `[None, None, Lz4,
    /// Lz4, Zstd]` (L0/L1 are rewritten soon, the bottom holds most data).
    /// At most `num_levels` entries.
    pub compression_per_level: Vec<Compression>,
    /// zstd level (1..=22) wherever zstd is used. Default 3 (zstd's default).
    pub zstd_level: i32,
    /// Bloom filter bits per key (0 disables the filter). Default 10 (about 1% false positives).
    pub bloom_bits_per_key: usize,
    /// The memory budget for reading, in bytes: one cache holds every table's
    /// index and bloom filter and the data blocks reads touch (decompressed),
    /// charged by their heap size (RocksDB's block cache with
    /// `cache_index_and_filter_blocks`). Indexes and filters that fit in half
    /// of it are pinned (read without a lock); the rest are loaded on demand.
    /// Data blocks that gets and iterators read are cached in it too (read
    /// with positional reads, as RocksDB's block cache). Default 256 MiB
    /// (RocksDB's and Badger's usual block cache size): the index and filter
    /// of about 100 million keys. At least 1 MiB.
    pub cache_size: usize,
    /// Target size of one SST produced by compaction. Default 64 MiB.
    pub table_size: u64,
    /// Target size of level 1; level N+1 targets `level_multiplier` times level N. Default 256 MiB.
    pub level_base_size: u64,
    /// Size ratio between adjacent levels. Default 10.
    pub level_multiplier: u64,
    /// Number of levels, L0 included. Default 7.
    pub num_levels: usize,
    /// L0 table count that starts an L0 → L1 compaction. Default 4.
    pub l0_compaction_trigger: usize,
    /// L0 table count at which writes are slowed down. Default 8.
    pub l0_slowdown_trigger: usize,
    /// L0 table count at which writes stop until compaction catches up. Default 12.
    pub l0_stop_trigger: usize,
    /// Background compaction threads. Default 2.
    pub compaction_threads: usize,
    /// fsync the WAL (and value log) once per write group before acknowledging. Default false.
    pub sync_writes: bool,
    /// A value-log file is closed and a new one started past this size. Default 1 GiB.
    /// While the background GC runs (`vlog_gc_ratio` above 0), the head file
    /// is closed earlier, at a 16th of the live value-log bytes (estimated)
    /// but at least 16 MiB: only closed files can be collected, so the head
    /// bounds the garbage that must wait (RocksDB BlobDB's blob files are
    /// 256 MiB). This size stays the ceiling.
    pub vlog_file_size: u64,
    /// Share of a sealed value-log file's bytes that must be garbage before a
    /// background job rewrites its live values and deletes it (Badger's
    /// `discardRatio`): as counted by compactions and flushes, or as
    /// estimated by looking up a sample of the file's entries (up to 256),
    /// which finds garbage that no compaction has seen yet. 0 turns the
    /// background job off; `Db::run_value_log_gc` works either way. Default 0.5.
    pub vlog_gc_ratio: f64,
    /// The share of garbage at which the background GC collects a sealed
    /// file once the Db has had no writes for a second, when below
    /// `vlog_gc_ratio`: a rewrite then delays no writer, and a value log
    /// with less garbage between its live values takes less disk and page
    /// cache for the same live data (point reads on data larger than memory
    /// miss the page cache less). Each byte reclaimed at 0.25 costs up to 3
    /// bytes rewritten (within `vlog_gc_rate`). This tier judges files by
    /// walks over the tree (one sequential read of the tables, when the
    /// value log grew by a 16th since the last, or before a file it has not
    /// measured is collected) rather than a lookup per entry, a device read
    /// each once the tables outgrow memory. 0, or at least `vlog_gc_ratio`:
    /// the same threshold while idle as while writing. Default 0.25.
    pub vlog_gc_idle_ratio: f64,
    /// Bytes per second the background value-log GC reads and rewrites at
    /// most while reads or slow writes run, so that it does not take the
    /// device from foreground work. While the Db is quiet (no write for a
    /// second, no read for 100 ms) the GC runs at device speed, and the first read or
    /// write puts this limit back within 256 KiB of GC work. 0: no limit.
    /// Default 64 MiB/s.
    pub vlog_gc_rate: u64,
    /// While writes run, the background GC's limit is raised to this many
    /// times the rate at which they append to the value log (the fastest
    /// over spans of at least 200 ms in the last 2 s), when that is above
    /// `vlog_gc_rate`, and lifted for a round that finds two or more head
    /// files' worth of files to collect (it is behind): each appended byte
    /// can make a byte of garbage, so a GC held below the write rate falls
    /// behind for as long as the writes last. 0: `vlog_gc_rate` alone is the
    /// limit. Default 4: a file is read whole to free its garbage, the GC
    /// also looks up, flushes and syncs, and at 2 it falls behind 200 MB/s
    /// of 1 KiB overwrites (see docs/gc-pacing.md).
    pub vlog_gc_write_factor: u32,
    /// Largest key accepted, in bytes. Default 65 000 (Badger's limit), at most 1 MiB.
    pub max_key_size: usize,
    /// Largest value accepted, in bytes. Default 1 GiB, at most 2 GiB.
    pub max_value_size: usize,
    /// Open without writing anything; several read-only opens may share a directory
    /// while no writer has it. Default false.
    pub read_only: bool,
    /// Largest transaction accepted, in bytes of keys and values written. Default
    /// about 9.6 MiB: 15% of a 64 MiB memtable, Badger's limit (kept when the
    /// memtable default went to 16 MiB). `WriteBatch` has no such limit.
    pub max_txn_size: usize,
    /// The clock TTLs are measured against. Default: the system clock.
    pub clock: Clock,
    /// The file system every file is created, written, synced, renamed and
    /// removed through. Default: the real one; power-loss tests use
    /// `sett::fs::SimFs` (feature `testing`).
    pub fs: Fs,
    /// Bytes of recent changes the change feed keeps in memory, so that a
    /// subscription can start from a past version (see [`crate::Db::subscribe`]).
    /// Kept from the first subscription on; 0 keeps none. Default 4 MiB.
    pub change_feed_history_bytes: usize,
}

impl Options {
    /// The defaults, for a database in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            value_threshold: 1024,
            memtable_size: 16 << 20,
            max_memtables: 4,
            block_size: 4096,
            compression: Compression::None,
            compression_per_level: Vec::new(),
            zstd_level: 3,
            bloom_bits_per_key: 10,
            cache_size: 256 << 20,
            table_size: 64 << 20,
            level_base_size: 256 << 20,
            level_multiplier: 10,
            num_levels: 7,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            compaction_threads: 2,
            sync_writes: false,
            vlog_file_size: 1 << 30,
            vlog_gc_ratio: 0.5,
            vlog_gc_idle_ratio: 0.25,
            vlog_gc_rate: 64 << 20,
            vlog_gc_write_factor: 4,
            max_key_size: 65_000,
            max_value_size: 1 << 30,
            read_only: false,
            max_txn_size: (64 << 20) * 15 / 100,
            clock: Clock::system(),
            fs: Fs::real(),
            change_feed_history_bytes: 4 << 20,
        }
    }

    /// The codec for tables written to `level`.
    pub fn compression_for_level(&self, level: usize) -> Compression {
        match self.compression_per_level.get(level) {
            Some(c) => *c,
            None => self
                .compression_per_level
                .last()
                .copied()
                .unwrap_or(self.compression),
        }
    }

    /// What a table builder for `level` compresses with.
    pub(crate) fn codec(&self, level: usize) -> Codec {
        Codec {
            compression: self.compression_for_level(level),
            zstd_level: self.zstd_level,
        }
    }

    /// Whether a value of `len` bytes goes to the value log (the tree keeps a
    /// pointer) rather than inline in the tree: the one rule the write path
    /// and bulk load share.
    pub(crate) fn in_value_log(&self, len: usize) -> bool {
        len >= self.value_threshold
    }

    /// Checks every option; the error names the first one out of range.
    pub fn validate(&self) -> Result<()> {
        fn bad(name: &'static str, reason: String) -> Result<()> {
            Err(Error::InvalidOption { name, reason })
        }
        if self.dir.as_os_str().is_empty() {
            return bad("dir", "must not be empty".into());
        }
        if self.value_threshold == 0 || self.value_threshold > (1 << 20) {
            return bad(
                "value_threshold",
                format!("{} is outside 1..=1048576", self.value_threshold),
            );
        }
        if self.memtable_size < 4096 || self.memtable_size > (4 << 30) {
            return bad(
                "memtable_size",
                format!("{} is outside 4 KiB..=4 GiB", self.memtable_size),
            );
        }
        if !(2..=64).contains(&self.max_memtables) {
            return bad(
                "max_memtables",
                format!("{} is outside 2..=64", self.max_memtables),
            );
        }
        if !(256..=(1 << 20)).contains(&self.block_size) {
            return bad(
                "block_size",
                format!("{} is outside 256..=1048576", self.block_size),
            );
        }
        if self.compression_per_level.len() > self.num_levels {
            return bad(
                "compression_per_level",
                format!(
                    "{} entries for {} levels (num_levels)",
                    self.compression_per_level.len(),
                    self.num_levels
                ),
            );
        }
        if !(1..=22).contains(&self.zstd_level) {
            return bad(
                "zstd_level",
                format!("{} is outside 1..=22", self.zstd_level),
            );
        }
        if self.bloom_bits_per_key > 64 {
            return bad(
                "bloom_bits_per_key",
                format!("{} is outside 0..=64", self.bloom_bits_per_key),
            );
        }
        if self.cache_size < (1 << 20) {
            return bad(
                "cache_size",
                format!(
                    "{} is below 1 MiB: a budget that cannot hold a table's index makes \
                     every read parse it again",
                    self.cache_size
                ),
            );
        }
        if self.table_size < 4096 {
            return bad("table_size", format!("{} is below 4096", self.table_size));
        }
        if self.level_base_size < 4096 {
            return bad(
                "level_base_size",
                format!("{} is below 4096", self.level_base_size),
            );
        }
        if !(2..=100).contains(&self.level_multiplier) {
            return bad(
                "level_multiplier",
                format!("{} is outside 2..=100", self.level_multiplier),
            );
        }
        if !(2..=16).contains(&self.num_levels) {
            return bad(
                "num_levels",
                format!("{} is outside 2..=16", self.num_levels),
            );
        }
        if self.l0_compaction_trigger < 1 {
            return bad("l0_compaction_trigger", "must be at least 1".into());
        }
        if self.l0_slowdown_trigger < self.l0_compaction_trigger {
            return bad(
                "l0_slowdown_trigger",
                format!(
                    "{} is below l0_compaction_trigger ({})",
                    self.l0_slowdown_trigger, self.l0_compaction_trigger
                ),
            );
        }
        if self.l0_stop_trigger <= self.l0_slowdown_trigger {
            return bad(
                "l0_stop_trigger",
                format!(
                    "{} must be above l0_slowdown_trigger ({})",
                    self.l0_stop_trigger, self.l0_slowdown_trigger
                ),
            );
        }
        if !(0.0..1.0).contains(&self.vlog_gc_ratio) {
            return bad(
                "vlog_gc_ratio",
                format!("{} is outside [0, 1)", self.vlog_gc_ratio),
            );
        }
        if !(0.0..1.0).contains(&self.vlog_gc_idle_ratio) {
            return bad(
                "vlog_gc_idle_ratio",
                format!("{} is outside [0, 1)", self.vlog_gc_idle_ratio),
            );
        }
        if !(1..=64).contains(&self.compaction_threads) {
            return bad(
                "compaction_threads",
                format!("{} is outside 1..=64", self.compaction_threads),
            );
        }
        if self.vlog_file_size < 4096 || self.vlog_file_size > (1 << 40) {
            return bad(
                "vlog_file_size",
                format!("{} is outside 4 KiB..=1 TiB", self.vlog_file_size),
            );
        }
        if self.max_key_size == 0 || self.max_key_size > (1 << 20) {
            return bad(
                "max_key_size",
                format!("{} is outside 1..=1048576", self.max_key_size),
            );
        }
        if self.max_txn_size < 1024 || self.max_txn_size > (2 << 30) {
            return bad(
                "max_txn_size",
                format!("{} is outside 1 KiB..=2 GiB", self.max_txn_size),
            );
        }
        if self.max_value_size > (2 << 30) {
            return bad(
                "max_value_size",
                format!("{} is above 2 GiB", self.max_value_size),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Options::new("/tmp/x").validate().unwrap();
    }

    #[test]
    fn a_gc_ratio_outside_zero_to_one_is_refused_by_name() {
        for bad in [1.0, 1.5, -0.1, f64::NAN] {
            let mut o = Options::new("/tmp/x");
            o.vlog_gc_ratio = bad;
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains("vlog_gc_ratio"), "{bad}: {err}");
        }
        let mut o = Options::new("/tmp/x");
        o.vlog_gc_ratio = 0.0; // off
        o.validate().unwrap();
        for bad in [1.0, -0.1, f64::NAN] {
            let mut o = Options::new("/tmp/x");
            o.vlog_gc_idle_ratio = bad;
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains("vlog_gc_idle_ratio"), "{bad}: {err}");
        }
    }

    #[test]
    fn per_level_compression_repeats_its_last_entry_and_falls_back_to_compression() {
        let mut o = Options::new("/tmp/x");
        o.compression = Compression::Lz4;
        assert_eq!(o.compression_for_level(0), Compression::Lz4);
        assert_eq!(o.compression_for_level(6), Compression::Lz4);
        o.compression_per_level = vec![Compression::None, Compression::Lz4, Compression::Zstd];
        let got: Vec<_> = (0..7).map(|l| o.compression_for_level(l)).collect();
        assert_eq!(
            got[..3],
            [Compression::None, Compression::Lz4, Compression::Zstd]
        );
        assert!(got[3..].iter().all(|&c| c == Compression::Zstd), "{got:?}");
        o.validate().unwrap();
    }

    #[test]
    fn a_per_level_list_longer_than_the_levels_or_a_bad_zstd_level_is_refused_by_name() {
        let mut o = Options::new("/tmp/x");
        o.compression_per_level = vec![Compression::Lz4; o.num_levels + 1];
        let err = o.validate().unwrap_err().to_string();
        assert!(err.contains("compression_per_level"), "{err}");
        for level in [0, 23, -1] {
            let mut o = Options::new("/tmp/x");
            o.zstd_level = level;
            let err = o.validate().unwrap_err().to_string();
            assert!(err.contains("zstd_level"), "{level}: {err}");
        }
    }

    #[test]
    fn bad_option_error_names_the_option() {
        let mut o = Options::new("/tmp/x");
        o.l0_stop_trigger = o.l0_slowdown_trigger;
        let err = o.validate().unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidOption {
                    name: "l0_stop_trigger",
                    ..
                }
            ),
            "{err}"
        );
        let mut o = Options::new("/tmp/x");
        o.block_size = 10;
        assert!(o.validate().unwrap_err().to_string().contains("block_size"));
    }
}
