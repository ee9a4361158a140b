//! `sett_options_t`: the options of sett_open(). Values are checked at open,
//! where an out-of-range one fails with SETT_INVALID_OPTION naming it.

use crate::error::{FfiError, SETT_OK};
use crate::util::{bytes, flag, guard, live_mut, path, Handle};
use sett_core::merge::{self, builtin};
use sett_core::{Compression, Encryption, EncryptionKey, Options, DEFAULT_KEY_ROTATION};
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// Options for sett_open(); defaults as documented per setter.
pub struct sett_options_t {
    pub(crate) opts: Options,
    /// The data-key rotation period, kept here so that it may be set before
    /// the key: the key itself lives only in `opts.encryption`.
    key_rotation: Duration,
}

impl Handle for sett_options_t {
    const NAME: &'static str = "opts";
}

/// New options holding the defaults. Free with sett_options_free().
#[no_mangle]
pub extern "C" fn sett_options_new() -> *mut sett_options_t {
    Box::into_raw(Box::new(sett_options_t {
        opts: Options::new(""),
        key_rotation: DEFAULT_KEY_ROTATION,
    }))
}

/// Frees options. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_options_free(opts: *mut sett_options_t) {
    if !opts.is_null() {
        // SAFETY: opts came from sett_options_new and is freed once.
        drop(unsafe { Box::from_raw(opts) });
    }
}

fn set(opts: *mut sett_options_t, f: impl FnOnce(&mut Options) -> Result<(), FfiError>) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let o = unsafe { live_mut(opts) }?;
        f(&mut o.opts)?;
        Ok(SETT_OK)
    })
}

/// Chooses the built-in merge operator named `name` for sett_merge() and
/// the other merge calls: "sett.u64_add" (8-byte little-endian unsigned
/// counters, adding with wrap-around), "sett.append" (concatenation) or
/// "sett.max" (the bytewise largest). NULL clears it (default: none; merges
/// are then refused with SETT_MERGE_OPERATOR_MISSING). The database records
/// the name: sett_open() with another one fails with
/// SETT_MERGE_OPERATOR_MISMATCH. An unknown name, or NULL opts, is
/// SETT_INVALID_ARGUMENT, and the options are left unchanged.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_merge_operator(
    opts: *mut sett_options_t,
    name: *const c_char,
) -> c_int {
    set(opts, |o| {
        o.merge_operator = if name.is_null() {
            None
        } else {
            // SAFETY: `name` is not NULL here and NUL-terminated, as sett.h requires of the caller.
            let name = unsafe { path(name, "name") }?;
            Some(builtin(name).ok_or_else(|| {
                FfiError::invalid(format!(
                    "unknown merge operator {name:?}: the built-ins are {:?}, {:?} and {:?}",
                    merge::U64_ADD,
                    merge::APPEND,
                    merge::MAX
                ))
            })?)
        };
        Ok(())
    })
}

/// Values of at least this many bytes go to the value log (default 1024). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_value_threshold(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.value_threshold = value;
        Ok(())
    })
}

/// Memtable size in bytes (default 16 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_memtable_size(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.memtable_size = value;
        Ok(())
    })
}

/// Memtables held at most, active plus immutable (default 4). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_max_memtables(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.max_memtables = value;
        Ok(())
    })
}

/// SST block size in bytes (default 4096). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_block_size(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.block_size = value;
        Ok(())
    })
}

/// Compression type: data blocks stored as they are (the default).
pub const SETT_COMPRESSION_NONE: c_int = 0;
/// Compression type: LZ4 (block format).
pub const SETT_COMPRESSION_LZ4: c_int = 1;
/// Compression type: zstd, at the level of sett_options_set_zstd_level().
pub const SETT_COMPRESSION_ZSTD: c_int = 2;
/// Keyspace compression (sett_keyspace_options_set_compression()): the
/// database's per-level choice. Not a codec: database options refuse it.
pub const SETT_COMPRESSION_INHERIT: c_int = -1;

/// The SETT_COMPRESSION_* value of a codec.
pub(crate) fn compression_code(c: Compression) -> c_int {
    match c {
        Compression::Lz4 => SETT_COMPRESSION_LZ4,
        Compression::Zstd => SETT_COMPRESSION_ZSTD,
        _ => SETT_COMPRESSION_NONE,
    }
}

pub(crate) fn compression(value: c_int) -> Result<Compression, FfiError> {
    match value {
        SETT_COMPRESSION_NONE => Ok(Compression::None),
        SETT_COMPRESSION_LZ4 => Ok(Compression::Lz4),
        SETT_COMPRESSION_ZSTD => Ok(Compression::Zstd),
        _ => Err(FfiError::invalid(format!(
            "compression type {value} is not SETT_COMPRESSION_NONE, _LZ4 or _ZSTD"
        ))),
    }
}

/// Compression of table data blocks on every level that
/// sett_options_set_compression_per_level() does not name: one of
/// SETT_COMPRESSION_* (default SETT_COMPRESSION_NONE). Any other value, or NULL
/// opts, is SETT_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_compression(
    opts: *mut sett_options_t,
    value: c_int,
) -> c_int {
    set(opts, |o| {
        o.compression = compression(value)?;
        Ok(())
    })
}

/// Compression per level: `types[i]` (a SETT_COMPRESSION_* value) for tables
/// written to level i, the last one for every deeper level; n = 0 (types may
/// then be NULL) clears the list, so sett_options_set_compression() applies
/// everywhere. More entries than levels is refused at open
/// (SETT_INVALID_OPTION). An unknown type, NULL types with n > 0 or NULL opts
/// is SETT_INVALID_ARGUMENT, and the options are left unchanged.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_compression_per_level(
    opts: *mut sett_options_t,
    types: *const c_int,
    n: usize,
) -> c_int {
    set(opts, |o| {
        let list = if n == 0 {
            Vec::new()
        } else if types.is_null() {
            return Err(FfiError::invalid(format!("types is NULL with n = {n}")));
        } else {
            // SAFETY: non-NULL and, by the caller's contract, valid for n ints.
            let raw = unsafe { std::slice::from_raw_parts(types, n) };
            raw.iter()
                .map(|&t| compression(t))
                .collect::<Result<Vec<_>, _>>()?
        };
        o.compression_per_level = list;
        Ok(())
    })
}

/// zstd level, 1..=22 (default 3), wherever zstd is used; checked at open.
/// Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_zstd_level(
    opts: *mut sett_options_t,
    value: c_int,
) -> c_int {
    set(opts, |o| {
        o.zstd_level = value;
        Ok(())
    })
}

/// Bloom filter bits per key, 0 for none (default 10). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_bloom_bits_per_key(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.bloom_bits_per_key = value;
        Ok(())
    })
}

/// Target SST size in bytes (default 64 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_table_size(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.table_size = value;
        Ok(())
    })
}

/// Target size of level 1 in bytes (default 256 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_level_base_size(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.level_base_size = value;
        Ok(())
    })
}

/// Size ratio between levels (default 10). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_level_multiplier(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.level_multiplier = value;
        Ok(())
    })
}

/// Number of levels, L0 included (default 7). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_num_levels(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.num_levels = value;
        Ok(())
    })
}

/// L0 tables that start a compaction (default 64). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_l0_compaction_trigger(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.l0_compaction_trigger = value;
        Ok(())
    })
}

/// L0 tables at which writes slow down (default 96). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_l0_slowdown_trigger(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.l0_slowdown_trigger = value;
        Ok(())
    })
}

/// L0 tables at which writes stop (default 128). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_l0_stop_trigger(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.l0_stop_trigger = value;
        Ok(())
    })
}

/// Background compaction threads (default 1). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_compaction_threads(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.compaction_threads = value;
        Ok(())
    })
}

/// Value-log file size in bytes before a new one starts (default 1 GiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_vlog_file_size(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.vlog_file_size = value;
        Ok(())
    })
}

/// Garbage share of a sealed value-log file at which the background GC
/// rewrites and deletes it (default 0.5; 0 turns the background GC off; must be
/// in [0, 1), checked at open). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_vlog_gc_ratio(
    opts: *mut sett_options_t,
    value: f64,
) -> c_int {
    set(opts, |o| {
        o.vlog_gc_ratio = value;
        Ok(())
    })
}

/// Garbage share at which the background GC collects a sealed value-log file
/// once the database has had no writes for a second, when below the
/// vlog_gc_ratio (default 0.25; 0: the vlog_gc_ratio while idle too; files are
/// judged by walks over the tables, not a lookup per entry; must be in [0, 1),
/// checked at open). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_vlog_gc_idle_ratio(
    opts: *mut sett_options_t,
    value: f64,
) -> c_int {
    set(opts, |o| {
        o.vlog_gc_idle_ratio = value;
        Ok(())
    })
}

/// The memory budget for reading, in bytes (default 256 MiB, at least 1 MiB,
/// checked at open): one cache for table indexes and bloom filters and the
/// table data blocks that reads bring in. Returns SETT_INVALID_ARGUMENT for
/// NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_cache_size(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.cache_size = usize::try_from(value).unwrap_or(usize::MAX);
        Ok(())
    })
}

/// Bytes per second the background value-log GC reads and rewrites at most
/// while writes run; with no write for a second it runs at device speed,
/// reads or not (default 64 MiB/s; 0: no limit; see
/// sett_options_set_vlog_gc_write_factor). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_vlog_gc_rate(
    opts: *mut sett_options_t,
    value: u64,
) -> c_int {
    set(opts, |o| {
        o.vlog_gc_rate = value;
        Ok(())
    })
}

/// While writes run, the background value-log GC's rate limit is raised to
/// this many times the rate at which they append to the value log, when that
/// is above the vlog_gc_rate (default 4; 0: vlog_gc_rate alone is the limit).
/// Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_vlog_gc_write_factor(
    opts: *mut sett_options_t,
    value: u32,
) -> c_int {
    set(opts, |o| {
        o.vlog_gc_write_factor = value;
        Ok(())
    })
}

/// Largest key in bytes (default 65000). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_max_key_size(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.max_key_size = value;
        Ok(())
    })
}

/// Largest value in bytes (default 1 GiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_max_value_size(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.max_value_size = value;
        Ok(())
    })
}

/// Largest transaction in bytes written (default about 9.6 MiB). Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_max_txn_size(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.max_txn_size = value;
        Ok(())
    })
}

/// Bytes of recent changes the change feed keeps so that a subscription can
/// start from a past version (default 4 MiB; 0 keeps none). See sett_subscribe().
/// Returns SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_change_feed_history_bytes(
    opts: *mut sett_options_t,
    value: usize,
) -> c_int {
    set(opts, |o| {
        o.change_feed_history_bytes = value;
        Ok(())
    })
}

/// 1: size levels from the last one up (RocksDB's
/// level_compaction_dynamic_level_bytes): L0 compacts into the highest level
/// in use, and the levels above it stay empty; 0 (default): level 1 targets
/// level_base_size and each level below level_multiplier times more. Any
/// other value is SETT_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_level_dynamic(
    opts: *mut sett_options_t,
    value: u32,
) -> c_int {
    set(opts, |o| {
        o.level_dynamic = flag(value, "level_dynamic")?;
        Ok(())
    })
}

/// 1: fsync the WAL and value log once per write group; 0 (default): do not.
/// Any other value is SETT_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_sync_writes(
    opts: *mut sett_options_t,
    value: u32,
) -> c_int {
    set(opts, |o| {
        o.sync_writes = flag(value, "sync_writes")?;
        Ok(())
    })
}

/// 1: open read-only (shared with other read-only opens); 0 (default): read-write.
/// Any other value is SETT_INVALID_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_read_only(
    opts: *mut sett_options_t,
    value: u32,
) -> c_int {
    set(opts, |o| {
        o.read_only = flag(value, "read_only")?;
        Ok(())
    })
}

/// Length in bytes of an encryption master key (AES-256).
pub const SETT_ENCRYPTION_KEY_LEN: usize = 32;

/// Encryption at rest: every file of the database is encrypted with data keys
/// sealed under this 32-byte master key (default: none, not encrypted). The
/// bytes are copied; the caller may wipe its buffer after the call. A
/// database created with a key must always be opened with it: a wrong key
/// fails sett_open() with SETT_WRONG_ENCRYPTION_KEY, none with
/// SETT_ENCRYPTION_KEY_REQUIRED, and a key for a database created without one
/// with SETT_NOT_ENCRYPTED. key = NULL with len = 0 clears the key. Any other
/// length than 32, NULL key with len > 0, or NULL opts is
/// SETT_INVALID_ARGUMENT, and the options are left unchanged.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_encryption_key(
    opts: *mut sett_options_t,
    key: *const u8,
    len: usize,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let o = unsafe { live_mut(opts) }?;
        if key.is_null() && len == 0 {
            o.opts.encryption = None;
            return Ok(SETT_OK);
        }
        if len != SETT_ENCRYPTION_KEY_LEN {
            return Err(FfiError::invalid(format!(
                "the encryption key is {len} bytes, not {SETT_ENCRYPTION_KEY_LEN}"
            )));
        }
        // SAFETY: `key` is NULL (refused) or points to `len` readable bytes, as sett.h requires of the caller.
        let raw = unsafe { bytes(key, len, "key") }?;
        let master = EncryptionKey::from_slice(raw)?;
        o.opts.encryption = Some(Encryption::new(master).rotation(o.key_rotation));
        Ok(SETT_OK)
    })
}

/// How old the newest data key may get, in milliseconds, before a new one is
/// made for the files created from then on (default 10 days; 0: never by
/// age, only by sett_rotate_encryption_key()). Applies when a key is set
/// (sett_options_set_encryption_key(), before or after this call). Returns
/// SETT_INVALID_ARGUMENT for NULL opts.
#[no_mangle]
pub unsafe extern "C" fn sett_options_set_encryption_key_rotation_ms(
    opts: *mut sett_options_t,
    ms: u64,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let o = unsafe { live_mut(opts) }?;
        o.key_rotation = Duration::from_millis(ms);
        if let Some(enc) = o.opts.encryption.as_mut() {
            enc.rotation = o.key_rotation;
        }
        Ok(SETT_OK)
    })
}
