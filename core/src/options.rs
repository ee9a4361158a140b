//! Options of a Db, with their defaults and validation.
//!
//! [`OPTIONS`] is the one table of every option a binding sets: name, type,
//! default, bounds and a one-line doc. [`Options::new`] takes its defaults from
//! the same constants as the table, [`Options::validate`] checks the table's
//! bounds, and [`Options::set`] sets an option by name through it (Python's
//! keyword arguments and `sett-bench --opt` use it). The bindings are checked
//! against the table by `ffi/tests/options_table.rs`, and docs/options.md is
//! rendered from it.

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

const KIB: i128 = 1 << 10;
const MIB: i128 = 1 << 20;
const GIB: i128 = 1 << 30;
const TIB: i128 = 1 << 40;

const DEFAULT_VALUE_THRESHOLD: usize = 1024;
const DEFAULT_MEMTABLE_SIZE: usize = 16 << 20;
const DEFAULT_MAX_MEMTABLES: usize = 4;
const DEFAULT_BLOCK_SIZE: usize = 4096;
const DEFAULT_COMPRESSION: Compression = Compression::None;
const DEFAULT_ZSTD_LEVEL: i32 = 3;
const DEFAULT_BLOOM_BITS_PER_KEY: usize = 10;
const DEFAULT_CACHE_SIZE: usize = 256 << 20;
const DEFAULT_TABLE_SIZE: u64 = 64 << 20;
const DEFAULT_LEVEL_BASE_SIZE: u64 = 256 << 20;
const DEFAULT_LEVEL_MULTIPLIER: u64 = 10;
const DEFAULT_LEVEL_DYNAMIC: bool = false;
const DEFAULT_NUM_LEVELS: usize = 7;
/// The most levels `num_levels` allows: the per-level counters of `Stats`
/// and the C ABI's `SETT_MAX_LEVELS` hold this many.
pub(crate) const MAX_NUM_LEVELS: usize = 16;
// 64 flushed memtables make four level_base_sizes of input: each L0
// compaction rewrites the base level's overlap once for more new bytes, and
// with one compaction thread a level grows while L0's compactions into it
// run, so each byte is rewritten fewer times on its way down
// (docs/write-path.md). L0 tables' indexes and filters stay in `cache_size`.
const DEFAULT_L0_COMPACTION_TRIGGER: usize = 64;
const DEFAULT_L0_SLOWDOWN_TRIGGER: usize = 96;
const DEFAULT_L0_STOP_TRIGGER: usize = 128;
// RocksDB's default max_background_jobs of 2 gives one flush and one
// compaction; sett's flush thread is separate.
const DEFAULT_COMPACTION_THREADS: usize = 1;
const DEFAULT_SYNC_WRITES: bool = false;
const DEFAULT_VLOG_FILE_SIZE: u64 = 1 << 30;
const DEFAULT_VLOG_GC_RATIO: f64 = 0.5;
const DEFAULT_VLOG_GC_IDLE_RATIO: f64 = 0.25;
const DEFAULT_VLOG_GC_RATE: u64 = 64 << 20;
const DEFAULT_VLOG_GC_WRITE_FACTOR: u32 = 4;
const DEFAULT_MAX_KEY_SIZE: usize = 65_000;
const DEFAULT_MAX_VALUE_SIZE: usize = 1 << 30;
const DEFAULT_READ_ONLY: bool = false;
// 15% of a 64 MiB memtable: Badger's limit, kept when the memtable default went to 16 MiB.
const DEFAULT_MAX_TXN_SIZE: usize = (64 << 20) * 15 / 100;
const DEFAULT_CHANGE_FEED_HISTORY_BYTES: usize = 4 << 20;

/// The type of an option's value, as [`Options`] stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// `bool`.
    Bool,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `usize`.
    Usize,
    /// `u64`.
    U64,
    /// `f64`.
    F64,
    /// A [`Compression`] codec, named `none`, `lz4` or `zstd`.
    Codec,
    /// A list of [`Compression`] codecs.
    CodecList,
}

impl OptionKind {
    /// The integers a value of this kind can hold, or `None` for a kind that is not an integer.
    pub fn int_range(self) -> Option<(i128, i128)> {
        match self {
            OptionKind::U32 => Some((0, i128::from(u32::MAX))),
            OptionKind::I32 => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
            // usize is at most 64 bits on every target sett builds for.
            OptionKind::Usize => Some((0, usize::MAX as i128)),
            OptionKind::U64 => Some((0, i128::from(u64::MAX))),
            _ => None,
        }
    }

    /// The kind's name in messages and docs.
    pub fn name(self) -> &'static str {
        match self {
            OptionKind::Bool => "bool",
            OptionKind::U32 => "u32",
            OptionKind::I32 => "i32",
            OptionKind::Usize => "usize",
            OptionKind::U64 => "u64",
            OptionKind::F64 => "f64",
            OptionKind::Codec => "codec",
            OptionKind::CodecList => "codec list",
        }
    }
}

/// What an integer option counts, for rendering its default and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionUnit {
    /// A plain number (a count, a level, a ratio).
    None,
    /// Bytes: rendered with KiB, MiB, GiB or TiB when a whole multiple.
    Bytes,
    /// Bytes per second.
    BytesPerSecond,
}

/// The value of one option, as [`Options::get`] returns it and [`Options::set`]
/// takes it. Every integer kind is carried as an `i128`, so that a value out of
/// the kind's range (a negative size, say) is refused by its bounds rather than
/// lost in a conversion.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// A `bool` option.
    Bool(bool),
    /// An integer option of any width.
    Int(i128),
    /// An `f64` option.
    Float(f64),
    /// A codec.
    Codec(Compression),
    /// A list of codecs.
    Codecs(Vec<Compression>),
}

impl OptionValue {
    /// The value in the words of docs and messages, with the unit's binary
    /// prefix where it is a whole multiple (`16 MiB`).
    pub fn render(&self, unit: OptionUnit) -> String {
        match self {
            OptionValue::Bool(b) => b.to_string(),
            OptionValue::Int(v) => match unit {
                OptionUnit::None => v.to_string(),
                OptionUnit::Bytes => bytes(*v),
                OptionUnit::BytesPerSecond => format!("{}/s", bytes(*v)),
            },
            OptionValue::Float(f) => f.to_string(),
            OptionValue::Codec(c) => c.name().to_string(),
            OptionValue::Codecs(list) => {
                let names: Vec<&str> = list.iter().map(|c| c.name()).collect();
                format!("[{}]", names.join(", "))
            }
        }
    }

    fn kind_word(&self) -> &'static str {
        match self {
            OptionValue::Bool(_) => "a bool",
            OptionValue::Int(_) => "an integer",
            OptionValue::Float(_) => "a float",
            OptionValue::Codec(_) => "a codec",
            OptionValue::Codecs(_) => "a codec list",
        }
    }
}

/// `n` bytes with the largest binary prefix that divides it (`4 KiB`), or the plain number.
fn bytes(n: i128) -> String {
    for (unit, name) in [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if n != 0 && n % unit == 0 {
            return format!("{} {name}", n / unit);
        }
    }
    n.to_string()
}

/// The values an option accepts on its own; a rule between two options (the
/// L0 triggers' order, `compression_per_level` against `num_levels`) is
/// checked by [`Options::validate`] and named in the option's doc.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionBounds {
    /// Every value of the option's kind.
    Any,
    /// An integer in `min..=max`; `max: None` is the kind's largest.
    Int {
        /// The least value accepted.
        min: i128,
        /// The largest value accepted, if below the kind's largest.
        max: Option<i128>,
    },
    /// A float in `[min, below)` (NaN is refused).
    Float {
        /// The least value accepted.
        min: f64,
        /// The first value refused above.
        below: f64,
    },
}

/// One option of [`OPTIONS`].
#[derive(Debug, Clone, PartialEq)]
pub struct OptionSpec {
    /// The option's name: the field of [`Options`], the C setter's suffix
    /// (`sett_options_set_<name>`) and Python's keyword argument.
    pub name: &'static str,
    /// The type of its value.
    pub kind: OptionKind,
    /// What it counts, for rendering.
    pub unit: OptionUnit,
    /// Its default: what [`Options::new`] holds.
    pub default: OptionValue,
    /// The values it accepts on its own.
    pub bounds: OptionBounds,
    /// One line on what it does.
    pub doc: &'static str,
}

impl OptionSpec {
    /// The integers this option accepts: its bounds within its kind's range.
    /// `None` for an option that is not an integer.
    pub fn int_range(&self) -> Option<(i128, i128)> {
        let (lo, hi) = self.kind.int_range()?;
        Some(match self.bounds {
            OptionBounds::Int { min, max } => (min.max(lo), max.map_or(hi, |m| m.min(hi))),
            _ => (lo, hi),
        })
    }

    /// The bounds in words: `4 KiB..=4 GiB`, `at least 1 MiB`, `[0, 1)`, or
    /// `None` when every value of the kind is accepted.
    pub fn bounds_text(&self) -> Option<String> {
        match self.bounds {
            OptionBounds::Any => None,
            OptionBounds::Int { min, max } => {
                let r = |v: i128| OptionValue::Int(v).render(self.unit);
                let kind_max = self.kind.int_range().map(|(_, hi)| hi);
                Some(match max {
                    Some(max) if Some(max) != kind_max => format!("{}..={}", r(min), r(max)),
                    _ => format!("at least {}", r(min)),
                })
            }
            OptionBounds::Float { min, below } => Some(format!("[{min}, {below})")),
        }
    }

    /// Checks that `value` is of this option's kind and within its bounds;
    /// the error names the option and its bounds.
    pub fn check(&self, value: &OptionValue) -> Result<()> {
        let bad = |reason: String| {
            Err(Error::InvalidOption {
                name: self.name,
                reason,
            })
        };
        match (self.kind, value) {
            (OptionKind::Bool, OptionValue::Bool(_))
            | (OptionKind::Codec, OptionValue::Codec(_))
            | (OptionKind::CodecList, OptionValue::Codecs(_)) => Ok(()),
            (OptionKind::F64, OptionValue::Float(v)) => match self.bounds {
                OptionBounds::Float { min, below } if !(*v >= min && *v < below) => bad(format!(
                    "{v} is outside {}",
                    self.bounds_text().unwrap_or_default()
                )),
                _ => Ok(()),
            },
            (_, OptionValue::Int(v)) => match self.int_range() {
                Some((lo, hi)) if *v < lo || *v > hi => {
                    let range = match self.bounds_text() {
                        Some(text) => text,
                        None => format!("{lo}..={hi}"),
                    };
                    bad(format!("{} is outside {range}", value.render(self.unit)))
                }
                Some(_) => Ok(()),
                None => bad(format!("takes {}, not an integer", self.kind.name())),
            },
            _ => bad(format!(
                "takes {}, not {}",
                self.kind.name(),
                value.kind_word()
            )),
        }
    }
}

/// The options a binding sets by name, in the order of [`Options`]' fields,
/// with their defaults and the bounds `validate` checks. `dir` (the path
/// argument of every open), `clock` and `fs` (Rust values for tests) and
/// `merge_operator` (code) are fields of [`Options`] but not in the table.
pub const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "value_threshold",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_VALUE_THRESHOLD as i128),
        bounds: OptionBounds::Int { min: 1, max: Some(MIB) },
        doc: "Values of at least this many bytes go to the value log; smaller ones stay in the tree.",
    },
    OptionSpec {
        name: "memtable_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_MEMTABLE_SIZE as i128),
        bounds: OptionBounds::Int { min: 4 * KIB, max: Some(4 * GIB) },
        doc: "Bytes of one memtable before it is frozen and flushed.",
    },
    OptionSpec {
        name: "max_memtables",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_MAX_MEMTABLES as i128),
        bounds: OptionBounds::Int { min: 2, max: Some(64) },
        doc: "Memtables held at most, the active one plus those waiting to be flushed.",
    },
    OptionSpec {
        name: "block_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_BLOCK_SIZE as i128),
        bounds: OptionBounds::Int { min: 256, max: Some(MIB) },
        doc: "Target size of an SST data block, before compression.",
    },
    OptionSpec {
        name: "compression",
        kind: OptionKind::Codec,
        unit: OptionUnit::None,
        default: OptionValue::Codec(DEFAULT_COMPRESSION),
        bounds: OptionBounds::Any,
        doc: "Codec of table data blocks on every level compression_per_level does not name.",
    },
    OptionSpec {
        name: "compression_per_level",
        kind: OptionKind::CodecList,
        unit: OptionUnit::None,
        default: OptionValue::Codecs(Vec::new()),
        bounds: OptionBounds::Any,
        doc: "Codec per level, the last entry for every deeper level; at most num_levels entries.",
    },
    OptionSpec {
        name: "zstd_level",
        kind: OptionKind::I32,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_ZSTD_LEVEL as i128),
        bounds: OptionBounds::Int { min: 1, max: Some(22) },
        doc: "zstd level wherever zstd is used.",
    },
    OptionSpec {
        name: "bloom_bits_per_key",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_BLOOM_BITS_PER_KEY as i128),
        bounds: OptionBounds::Int { min: 0, max: Some(64) },
        doc: "Bloom filter bits per key; 0 builds no filters.",
    },
    OptionSpec {
        name: "cache_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_CACHE_SIZE as i128),
        bounds: OptionBounds::Int { min: MIB, max: None },
        doc: "The memory budget for reading: table indexes, bloom filters and the data blocks reads bring in.",
    },
    OptionSpec {
        name: "table_size",
        kind: OptionKind::U64,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_TABLE_SIZE as i128),
        bounds: OptionBounds::Int { min: 4 * KIB, max: None },
        doc: "Target size of one SST written by compaction.",
    },
    OptionSpec {
        name: "level_base_size",
        kind: OptionKind::U64,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_LEVEL_BASE_SIZE as i128),
        bounds: OptionBounds::Int { min: 4 * KIB, max: None },
        doc: "Target size of level 1.",
    },
    OptionSpec {
        name: "level_multiplier",
        kind: OptionKind::U64,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_LEVEL_MULTIPLIER as i128),
        bounds: OptionBounds::Int { min: 2, max: Some(100) },
        doc: "Size ratio between adjacent levels.",
    },
    OptionSpec {
        name: "level_dynamic",
        kind: OptionKind::Bool,
        unit: OptionUnit::None,
        default: OptionValue::Bool(DEFAULT_LEVEL_DYNAMIC),
        bounds: OptionBounds::Any,
        doc: "Size levels from the last one up (RocksDB's level_compaction_dynamic_level_bytes): L0 compacts into the highest level in use whose target reaches level_base_size / level_multiplier, and the levels above it stay empty.",
    },
    OptionSpec {
        name: "num_levels",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_NUM_LEVELS as i128),
        bounds: OptionBounds::Int { min: 2, max: Some(MAX_NUM_LEVELS as i128) },
        doc: "Number of levels, L0 included.",
    },
    OptionSpec {
        name: "l0_compaction_trigger",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_L0_COMPACTION_TRIGGER as i128),
        bounds: OptionBounds::Int { min: 1, max: None },
        doc: "L0 tables that start a compaction into the base level (L1, or with level_dynamic the highest level in use).",
    },
    OptionSpec {
        name: "l0_slowdown_trigger",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_L0_SLOWDOWN_TRIGGER as i128),
        bounds: OptionBounds::Any,
        doc: "L0 tables at which writes slow down; at least l0_compaction_trigger.",
    },
    OptionSpec {
        name: "l0_stop_trigger",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_L0_STOP_TRIGGER as i128),
        bounds: OptionBounds::Any,
        doc: "L0 tables at which writes stop until compaction catches up; above l0_slowdown_trigger.",
    },
    OptionSpec {
        name: "compaction_threads",
        kind: OptionKind::Usize,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_COMPACTION_THREADS as i128),
        bounds: OptionBounds::Int { min: 1, max: Some(64) },
        doc: "Background compaction threads.",
    },
    OptionSpec {
        name: "sync_writes",
        kind: OptionKind::Bool,
        unit: OptionUnit::None,
        default: OptionValue::Bool(DEFAULT_SYNC_WRITES),
        bounds: OptionBounds::Any,
        doc: "fsync the WAL and value log once per write group before acknowledging.",
    },
    OptionSpec {
        name: "vlog_file_size",
        kind: OptionKind::U64,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_VLOG_FILE_SIZE as i128),
        bounds: OptionBounds::Int { min: 4 * KIB, max: Some(TIB) },
        doc: "Bytes of a value-log file before a new one starts.",
    },
    OptionSpec {
        name: "vlog_gc_ratio",
        kind: OptionKind::F64,
        unit: OptionUnit::None,
        default: OptionValue::Float(DEFAULT_VLOG_GC_RATIO),
        bounds: OptionBounds::Float { min: 0.0, below: 1.0 },
        doc: "Garbage share of a sealed value-log file at which the background GC collects it; 0 turns it off.",
    },
    OptionSpec {
        name: "vlog_gc_idle_ratio",
        kind: OptionKind::F64,
        unit: OptionUnit::None,
        default: OptionValue::Float(DEFAULT_VLOG_GC_IDLE_RATIO),
        bounds: OptionBounds::Float { min: 0.0, below: 1.0 },
        doc: "Garbage share at which the background GC collects a file once writes have paused; 0: vlog_gc_ratio.",
    },
    OptionSpec {
        name: "vlog_gc_rate",
        kind: OptionKind::U64,
        unit: OptionUnit::BytesPerSecond,
        default: OptionValue::Int(DEFAULT_VLOG_GC_RATE as i128),
        bounds: OptionBounds::Any,
        doc: "Bytes per second the background GC reads and rewrites at most while writes run (idle, it runs at device speed); 0: no limit.",
    },
    OptionSpec {
        name: "vlog_gc_write_factor",
        kind: OptionKind::U32,
        unit: OptionUnit::None,
        default: OptionValue::Int(DEFAULT_VLOG_GC_WRITE_FACTOR as i128),
        bounds: OptionBounds::Any,
        doc: "While writes run, the GC's limit is raised to this many times their value-log rate; 0: vlog_gc_rate alone.",
    },
    OptionSpec {
        name: "max_key_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_MAX_KEY_SIZE as i128),
        bounds: OptionBounds::Int { min: 1, max: Some(MIB) },
        doc: "Largest key accepted, in bytes.",
    },
    OptionSpec {
        name: "max_value_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_MAX_VALUE_SIZE as i128),
        bounds: OptionBounds::Int { min: 0, max: Some(2 * GIB) },
        doc: "Largest value accepted, in bytes.",
    },
    OptionSpec {
        name: "read_only",
        kind: OptionKind::Bool,
        unit: OptionUnit::None,
        default: OptionValue::Bool(DEFAULT_READ_ONLY),
        bounds: OptionBounds::Any,
        doc: "Open without writing anything; read-only opens may share a directory.",
    },
    OptionSpec {
        name: "max_txn_size",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_MAX_TXN_SIZE as i128),
        bounds: OptionBounds::Int { min: KIB, max: Some(2 * GIB) },
        doc: "Largest transaction accepted, in bytes of keys and values written.",
    },
    OptionSpec {
        name: "change_feed_history_bytes",
        kind: OptionKind::Usize,
        unit: OptionUnit::Bytes,
        default: OptionValue::Int(DEFAULT_CHANGE_FEED_HISTORY_BYTES as i128),
        bounds: OptionBounds::Any,
        doc: "Bytes of recent changes kept so that a subscription can start from a past version; 0 keeps none.",
    },
];

/// The entry of [`OPTIONS`] named `name`.
pub fn option_spec(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|s| s.name == name)
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
    /// Size levels from the last one up, as RocksDB's
    /// `level_compaction_dynamic_level_bytes`: the last level holds what it
    /// holds, each level above targets `level_multiplier` times less, and L0
    /// compacts into the highest level whose target is still at least about
    /// `level_base_size / level_multiplier` (levels above it stay empty), so
    /// the last level holds most of the data. Off: level 1 targets
    /// `level_base_size` and each level below `level_multiplier` times more.
    /// Default false: with random keys at 128 B, sett's populate wrote as
    /// many bytes either way (docs/write-path.md).
    pub level_dynamic: bool,
    /// Number of levels, L0 included. Default 7.
    pub num_levels: usize,
    /// L0 table count that starts a compaction of L0 into the base level. Default 32:
    /// 32 flushes of the default memtable are two `level_base_size`s of input, so
    /// an L0 compaction rewrites less than one byte of the base level per new
    /// byte (with 4, about five; docs/write-path.md).
    pub l0_compaction_trigger: usize,
    /// L0 table count at which writes are slowed down. Default 48 (768 MiB of
    /// default memtables; RocksDB's 20 x 64 MiB are 1.25 GiB).
    pub l0_slowdown_trigger: usize,
    /// L0 table count at which writes stop until compaction catches up. Default 64
    /// (1 GiB of default memtables; RocksDB's 36 x 64 MiB are 2.25 GiB).
    pub l0_stop_trigger: usize,
    /// Background compaction threads. Default 1, RocksDB's default (its
    /// max_background_jobs of 2 is one flush and one compaction; sett's flush
    /// has a thread of its own). One thread runs one compaction at a time, the
    /// most urgent first, so a level grows while L0's compactions into it run
    /// and each byte it later moves down meets fewer bytes below. A second
    /// thread compacts a level down while it is still small, where each byte
    /// meets up to `level_multiplier` bytes below (docs/write-path.md).
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
    /// most while slow writes run, so that it does not take the device from
    /// them. While the Db is idle (no write for a second) the GC runs at
    /// device speed, as a tree's compactions do, reads or not, and the first
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
    /// Encryption at rest: the master key and the data-key rotation period
    /// (see [`crate::Encryption`]). A database created with it must always
    /// be opened with the same master key; one created without it cannot be
    /// opened with one. Not in [`OPTIONS`]: it holds a secret, which the
    /// table's text forms (docs, `Debug`) must never show. Default: none.
    pub encryption: Option<crate::Encryption>,
    /// Bytes of recent changes the change feed keeps in memory, so that a
    /// subscription can start from a past version (see [`crate::Db::subscribe`]).
    /// Kept from the first subscription on; 0 keeps none. Default 4 MiB.
    pub change_feed_history_bytes: usize,
    /// How [`crate::Db::merge`] operands combine (see [`crate::merge`]).
    /// Its name is recorded in the manifest: a Db whose manifest names
    /// another operator refuses to open, and one opened without an operator
    /// fails reads of keys holding operands. Default: none (merges are
    /// refused). Not in [`OPTIONS`]: it is code, not a scalar.
    pub merge_operator: Option<std::sync::Arc<dyn crate::merge::MergeOperator>>,
}

impl Options {
    /// The defaults, for a database in `dir`: the defaults of [`OPTIONS`].
    pub fn new(dir: impl Into<PathBuf>) -> Options {
        Options {
            dir: dir.into(),
            value_threshold: DEFAULT_VALUE_THRESHOLD,
            memtable_size: DEFAULT_MEMTABLE_SIZE,
            max_memtables: DEFAULT_MAX_MEMTABLES,
            block_size: DEFAULT_BLOCK_SIZE,
            compression: DEFAULT_COMPRESSION,
            compression_per_level: Vec::new(),
            zstd_level: DEFAULT_ZSTD_LEVEL,
            bloom_bits_per_key: DEFAULT_BLOOM_BITS_PER_KEY,
            cache_size: DEFAULT_CACHE_SIZE,
            table_size: DEFAULT_TABLE_SIZE,
            level_base_size: DEFAULT_LEVEL_BASE_SIZE,
            level_multiplier: DEFAULT_LEVEL_MULTIPLIER,
            level_dynamic: DEFAULT_LEVEL_DYNAMIC,
            num_levels: DEFAULT_NUM_LEVELS,
            l0_compaction_trigger: DEFAULT_L0_COMPACTION_TRIGGER,
            l0_slowdown_trigger: DEFAULT_L0_SLOWDOWN_TRIGGER,
            l0_stop_trigger: DEFAULT_L0_STOP_TRIGGER,
            compaction_threads: DEFAULT_COMPACTION_THREADS,
            sync_writes: DEFAULT_SYNC_WRITES,
            vlog_file_size: DEFAULT_VLOG_FILE_SIZE,
            vlog_gc_ratio: DEFAULT_VLOG_GC_RATIO,
            vlog_gc_idle_ratio: DEFAULT_VLOG_GC_IDLE_RATIO,
            vlog_gc_rate: DEFAULT_VLOG_GC_RATE,
            vlog_gc_write_factor: DEFAULT_VLOG_GC_WRITE_FACTOR,
            max_key_size: DEFAULT_MAX_KEY_SIZE,
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            read_only: DEFAULT_READ_ONLY,
            max_txn_size: DEFAULT_MAX_TXN_SIZE,
            clock: Clock::system(),
            fs: Fs::real(),
            encryption: None,
            change_feed_history_bytes: DEFAULT_CHANGE_FEED_HISTORY_BYTES,
            merge_operator: None,
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

    /// Checks every option; the error names the first one out of range, and
    /// its bounds: those of [`OPTIONS`], then the rules between options.
    pub fn validate(&self) -> Result<()> {
        fn bad(name: &'static str, reason: String) -> Result<()> {
            Err(Error::InvalidOption { name, reason })
        }
        if self.dir.as_os_str().is_empty() {
            return bad("dir", "must not be empty".into());
        }
        for spec in OPTIONS {
            match self.get(spec.name) {
                Some(value) => spec.check(&value)?,
                None => return bad(spec.name, "is in OPTIONS but not a field of Options".into()),
            }
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
        Ok(())
    }

    /// The value of the option `name` of [`OPTIONS`], or `None` for a name
    /// the table lacks.
    pub fn get(&self, name: &str) -> Option<OptionValue> {
        // Destructured without `..`: a new field fails to compile here until
        // it is read below (and put in OPTIONS) or named as not an option.
        let Options {
            dir: _,
            clock: _,
            fs: _,
            encryption: _,
            merge_operator: _,
            value_threshold,
            memtable_size,
            max_memtables,
            block_size,
            compression,
            compression_per_level,
            zstd_level,
            bloom_bits_per_key,
            cache_size,
            table_size,
            level_base_size,
            level_multiplier,
            level_dynamic,
            num_levels,
            l0_compaction_trigger,
            l0_slowdown_trigger,
            l0_stop_trigger,
            compaction_threads,
            sync_writes,
            vlog_file_size,
            vlog_gc_ratio,
            vlog_gc_idle_ratio,
            vlog_gc_rate,
            vlog_gc_write_factor,
            max_key_size,
            max_value_size,
            read_only,
            max_txn_size,
            change_feed_history_bytes,
        } = self;
        // usize is at most 64 bits wide on every target sett builds for, so
        // `as i128` keeps every value.
        let u = |v: &usize| OptionValue::Int(*v as i128);
        Some(match name {
            "value_threshold" => u(value_threshold),
            "memtable_size" => u(memtable_size),
            "max_memtables" => u(max_memtables),
            "block_size" => u(block_size),
            "compression" => OptionValue::Codec(*compression),
            "compression_per_level" => OptionValue::Codecs(compression_per_level.clone()),
            "zstd_level" => OptionValue::Int(i128::from(*zstd_level)),
            "bloom_bits_per_key" => u(bloom_bits_per_key),
            "cache_size" => u(cache_size),
            "table_size" => OptionValue::Int(i128::from(*table_size)),
            "level_base_size" => OptionValue::Int(i128::from(*level_base_size)),
            "level_multiplier" => OptionValue::Int(i128::from(*level_multiplier)),
            "level_dynamic" => OptionValue::Bool(*level_dynamic),
            "num_levels" => u(num_levels),
            "l0_compaction_trigger" => u(l0_compaction_trigger),
            "l0_slowdown_trigger" => u(l0_slowdown_trigger),
            "l0_stop_trigger" => u(l0_stop_trigger),
            "compaction_threads" => u(compaction_threads),
            "sync_writes" => OptionValue::Bool(*sync_writes),
            "vlog_file_size" => OptionValue::Int(i128::from(*vlog_file_size)),
            "vlog_gc_ratio" => OptionValue::Float(*vlog_gc_ratio),
            "vlog_gc_idle_ratio" => OptionValue::Float(*vlog_gc_idle_ratio),
            "vlog_gc_rate" => OptionValue::Int(i128::from(*vlog_gc_rate)),
            "vlog_gc_write_factor" => OptionValue::Int(i128::from(*vlog_gc_write_factor)),
            "max_key_size" => u(max_key_size),
            "max_value_size" => u(max_value_size),
            "read_only" => OptionValue::Bool(*read_only),
            "max_txn_size" => u(max_txn_size),
            "change_feed_history_bytes" => u(change_feed_history_bytes),
            _ => return None,
        })
    }

    /// Sets the option `name` of [`OPTIONS`] to `value`, through the table: a
    /// name the table lacks is [`Error::InvalidArgument`]; a value of another
    /// kind or outside the option's bounds is [`Error::InvalidOption`] naming
    /// the option and its bounds, and leaves the options unchanged. Rules
    /// between options are checked by [`Options::validate`] at open.
    pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
        let spec = option_spec(name)
            .ok_or_else(|| Error::InvalidArgument(format!("unknown option {name:?}")))?;
        spec.check(&value)?;
        fn int<T: TryFrom<i128>>(spec: &OptionSpec, v: &OptionValue) -> Result<T> {
            let out_of_range = || Error::InvalidOption {
                name: spec.name,
                reason: format!("takes {}", spec.kind.name()),
            };
            match v {
                OptionValue::Int(i) => T::try_from(*i).map_err(|_| out_of_range()),
                _ => Err(out_of_range()),
            }
        }
        let v = &value;
        match (spec.name, value.clone()) {
            ("value_threshold", _) => self.value_threshold = int(spec, v)?,
            ("memtable_size", _) => self.memtable_size = int(spec, v)?,
            ("max_memtables", _) => self.max_memtables = int(spec, v)?,
            ("block_size", _) => self.block_size = int(spec, v)?,
            ("compression", OptionValue::Codec(c)) => self.compression = c,
            ("compression_per_level", OptionValue::Codecs(list)) => {
                self.compression_per_level = list
            }
            ("zstd_level", _) => self.zstd_level = int(spec, v)?,
            ("bloom_bits_per_key", _) => self.bloom_bits_per_key = int(spec, v)?,
            ("cache_size", _) => self.cache_size = int(spec, v)?,
            ("table_size", _) => self.table_size = int(spec, v)?,
            ("level_base_size", _) => self.level_base_size = int(spec, v)?,
            ("level_multiplier", _) => self.level_multiplier = int(spec, v)?,
            ("level_dynamic", OptionValue::Bool(b)) => self.level_dynamic = b,
            ("num_levels", _) => self.num_levels = int(spec, v)?,
            ("l0_compaction_trigger", _) => self.l0_compaction_trigger = int(spec, v)?,
            ("l0_slowdown_trigger", _) => self.l0_slowdown_trigger = int(spec, v)?,
            ("l0_stop_trigger", _) => self.l0_stop_trigger = int(spec, v)?,
            ("compaction_threads", _) => self.compaction_threads = int(spec, v)?,
            ("sync_writes", OptionValue::Bool(b)) => self.sync_writes = b,
            ("vlog_file_size", _) => self.vlog_file_size = int(spec, v)?,
            ("vlog_gc_ratio", OptionValue::Float(f)) => self.vlog_gc_ratio = f,
            ("vlog_gc_idle_ratio", OptionValue::Float(f)) => self.vlog_gc_idle_ratio = f,
            ("vlog_gc_rate", _) => self.vlog_gc_rate = int(spec, v)?,
            ("vlog_gc_write_factor", _) => self.vlog_gc_write_factor = int(spec, v)?,
            ("max_key_size", _) => self.max_key_size = int(spec, v)?,
            ("max_value_size", _) => self.max_value_size = int(spec, v)?,
            ("read_only", OptionValue::Bool(b)) => self.read_only = b,
            ("max_txn_size", _) => self.max_txn_size = int(spec, v)?,
            ("change_feed_history_bytes", _) => self.change_feed_history_bytes = int(spec, v)?,
            _ => {
                return Err(Error::InvalidOption {
                    name: spec.name,
                    reason: "is in OPTIONS but Options::set does not set it".into(),
                })
            }
        }
        Ok(())
    }
}

/// docs/options.md: the table rendered as Markdown, one row per option.
pub fn options_markdown() -> String {
    let mut out = String::from(
        "# Options\n\n\
         <!-- Rendered from `OPTIONS` in core/src/options.rs by \
         `SETT_BLESS=1 cargo test -p sett --lib options`; a test fails when it differs. -->\n\n\
         Every option a binding sets, with its type, default and the values it accepts \
         alone (rules between options are in the last column). The name is the Rust \
         field of `Options`, the C setter `sett_options_set_<name>` and Python's keyword \
         argument of `sett.open`; Go's `Options` uses Badger's names where Badger has the \
         setting (docs/bindings.md). A value outside its bounds is refused naming the \
         option and its bounds: by `Options::set` and Python at once, by C and Go at open.\n\n\
         | Option | Type | Default | Bounds | What it does |\n\
         |---|---|---|---|---|\n",
    );
    for spec in OPTIONS {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            spec.name,
            spec.kind.name(),
            spec.default.render(spec.unit),
            spec.bounds_text().unwrap_or_else(|| "any".into()),
            spec.doc
        ));
    }
    out
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

    /// Fields of `Options` that are not in the table: `encryption` holds a
    /// secret and `merge_operator` code (bindings take them their own way),
    /// the others are no scalar option.
    const NOT_IN_TABLE: [&str; 5] = ["dir", "clock", "fs", "encryption", "merge_operator"];

    #[test]
    fn an_l0_compaction_by_default_takes_four_base_levels_of_flushed_memtables_on_one_thread() {
        // Chosen by the large 128 B screens in the message of the commit
        // that set them (docs/write-path.md).
        let o = Options::new("/tmp/x");
        assert_eq!(o.memtable_size, 16 << 20);
        assert_eq!(o.l0_compaction_trigger, 64);
        assert_eq!(
            (o.l0_compaction_trigger * o.memtable_size) as u64,
            4 * o.level_base_size
        );
        assert_eq!((o.l0_slowdown_trigger, o.l0_stop_trigger), (96, 128));
        assert_eq!(o.compaction_threads, 1);
    }

    #[test]
    fn options_new_holds_the_default_of_every_table_entry() {
        let o = Options::new("/tmp/x");
        for spec in OPTIONS {
            assert_eq!(
                o.get(spec.name),
                Some(spec.default.clone()),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn every_default_is_within_its_own_bounds() {
        for spec in OPTIONS {
            spec.check(&spec.default).unwrap();
        }
    }

    #[test]
    fn every_field_of_options_is_in_the_table_or_named_as_not_an_option() {
        let src = include_str!("options.rs");
        let start = src.find("pub struct Options {").unwrap();
        let body = &src[start..start + src[start..].find("\n}").unwrap()];
        let fields: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("    pub "))
            .filter_map(|l| l.split_once(':').map(|(name, _)| name))
            .collect();
        assert!(fields.len() >= 20, "{fields:?}");
        let table: Vec<&str> = OPTIONS.iter().map(|s| s.name).collect();
        let missing: Vec<_> = fields
            .iter()
            .filter(|f| !table.contains(f) && !NOT_IN_TABLE.contains(f))
            .collect();
        assert!(
            missing.is_empty(),
            "fields of Options not in OPTIONS: {missing:?}"
        );
        let extra: Vec<_> = table.iter().filter(|n| !fields.contains(n)).collect();
        assert!(
            extra.is_empty(),
            "OPTIONS entries that are no field: {extra:?}"
        );
        let mut names = table.clone();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), table.len(), "a name twice in OPTIONS");
    }

    /// A valid value other than the default, for every kind.
    fn another_value(spec: &OptionSpec) -> OptionValue {
        match (&spec.default, spec.bounds) {
            (OptionValue::Bool(b), _) => OptionValue::Bool(!b),
            (OptionValue::Int(v), _) => {
                let (lo, hi) = spec.int_range().unwrap();
                OptionValue::Int(if *v < hi { v + 1 } else { lo })
            }
            (OptionValue::Float(f), OptionBounds::Float { min, .. }) => {
                OptionValue::Float(if *f > min { min } else { f + 0.125 })
            }
            (OptionValue::Codec(_), _) => OptionValue::Codec(Compression::Lz4),
            (OptionValue::Codecs(_), _) => OptionValue::Codecs(vec![Compression::Zstd]),
            (d, b) => panic!("{}: default {d:?} with bounds {b:?}", spec.name),
        }
    }

    #[test]
    fn set_then_get_carries_every_option_to_its_own_field() {
        for spec in OPTIONS {
            let mut o = Options::new("/tmp/x");
            let v = another_value(spec);
            assert_ne!(v, spec.default, "{}", spec.name);
            o.set(spec.name, v.clone()).unwrap();
            assert_eq!(o.get(spec.name), Some(v), "{}", spec.name);
            // Every other option kept its default.
            for other in OPTIONS.iter().filter(|s| s.name != spec.name) {
                assert_eq!(
                    o.get(other.name),
                    Some(other.default.clone()),
                    "{} moved {}",
                    spec.name,
                    other.name
                );
            }
        }
    }

    #[test]
    fn set_out_of_bounds_names_the_option_and_its_bounds_and_changes_nothing() {
        let cases: [(&str, OptionValue, &str); 6] = [
            (
                "memtable_size",
                OptionValue::Int(100),
                "100 is outside 4 KiB..=4 GiB",
            ),
            (
                "memtable_size",
                OptionValue::Int(-1),
                "-1 is outside 4 KiB..=4 GiB",
            ),
            (
                "cache_size",
                OptionValue::Int(1000),
                "1000 is outside at least 1 MiB",
            ),
            (
                "vlog_gc_ratio",
                OptionValue::Float(f64::NAN),
                "NaN is outside [0, 1)",
            ),
            (
                "change_feed_history_bytes",
                OptionValue::Int(-1),
                "-1 is outside 0..=",
            ),
            (
                "sync_writes",
                OptionValue::Int(1),
                "takes bool, not an integer",
            ),
        ];
        for (name, value, want) in cases {
            let mut o = Options::new("/tmp/x");
            let err = o.set(name, value.clone()).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, Error::InvalidOption { name: n, .. } if n == name),
                "{name} = {value:?}: {msg}"
            );
            assert!(
                msg.contains(want),
                "{name} = {value:?}: {msg:?} lacks {want:?}"
            );
            assert_eq!(
                o.get(name),
                option_spec(name).map(|s| s.default.clone()),
                "{name}"
            );
        }
        let err = Options::new("/tmp/x")
            .set("no_such_option", OptionValue::Int(1))
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument(ref m) if m.contains("no_such_option")),
            "{err}"
        );
    }

    #[test]
    fn validate_names_the_table_bounds_of_a_field_set_directly() {
        let mut o = Options::new("/tmp/x");
        o.block_size = 10;
        let msg = o.validate().unwrap_err().to_string();
        assert!(
            msg.contains("block_size") && msg.contains("256..=1 MiB"),
            "{msg}"
        );
        let mut o = Options::new("/tmp/x");
        o.vlog_file_size = 2 << 40;
        let msg = o.validate().unwrap_err().to_string();
        assert!(
            msg.contains("vlog_file_size") && msg.contains("4 KiB..=1 TiB"),
            "{msg}"
        );
    }

    #[test]
    fn docs_options_md_is_the_table_rendered() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/options.md");
        let want = options_markdown();
        if std::env::var_os("SETT_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} differs from OPTIONS: run SETT_BLESS=1 cargo test -p sett --lib options",
            path.display()
        );
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
