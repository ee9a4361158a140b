//! Maintenance: value-log GC, backup and restore, flatten, drops, stats, sequences.

use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError};
use crate::store::put_options;
use crate::util::{bytes, guard_ok, live, live_mut, path as c_path, write_out, Handle, Raw};
use sett_core::{GcOutcome, Sequence};
use std::ffi::{c_char, c_int};

/// Most levels a sett_stats_t reports.
pub const SETT_MAX_LEVELS: usize = 16;

/// Counts and sizes of a database (sett_stats()).
#[repr(C)]
pub struct sett_stats_t {
    /// Levels in use (entries past it in the arrays are 0).
    pub num_levels: u32,
    /// Tables per level, L0 first.
    pub level_tables: [u64; SETT_MAX_LEVELS],
    /// Bytes per level.
    pub level_bytes: [u64; SETT_MAX_LEVELS],
    pub vlog_files: u64,
    pub vlog_bytes: u64,
    pub memtable_bytes: u64,
    pub immutable_memtables: u64,
    pub index_filter_bytes: u64,
    pub last_seq: u64,
    pub table_entries: u64,
    pub write_groups: u64,
    pub batches_written: u64,
    /// Levels due for compaction now (L0 at its table-count trigger, a deeper
    /// level over its target size), whether or not one is already running.
    pub compactions_pending: u64,
    /// Compactions in progress (automatic ones, flatten, drop prefix). A
    /// benchmark waits for the background work to settle by polling until
    /// this, compactions_pending and immutable_memtables are all 0.
    pub compactions_running: u64,
}

/// Fills *out with the database's counts and sizes.
#[no_mangle]
pub unsafe extern "C" fn sett_stats(
    db: *mut sett_db_t,
    out: *mut sett_stats_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        if h.db.is_closed() {
            return Err(sett_core::Error::Closed.into());
        }
        let s = h.db.stats();
        let mut st = sett_stats_t {
            num_levels: s.levels.len().min(SETT_MAX_LEVELS) as u32,
            level_tables: [0; SETT_MAX_LEVELS],
            level_bytes: [0; SETT_MAX_LEVELS],
            vlog_files: s.vlog_files as u64,
            vlog_bytes: s.vlog_bytes,
            memtable_bytes: s.memtable_bytes as u64,
            immutable_memtables: s.immutable_memtables as u64,
            index_filter_bytes: s.index_filter_bytes as u64,
            last_seq: s.last_seq,
            table_entries: s.table_entries,
            write_groups: s.write_groups,
            batches_written: s.batches_written,
            compactions_pending: s.compactions_pending,
            compactions_running: s.compactions_running,
        };
        for (i, (n, b)) in s.levels.iter().take(SETT_MAX_LEVELS).enumerate() {
            st.level_tables[i] = *n as u64;
            st.level_bytes[i] = *b;
        }
        // SAFETY: out is writable (checked by write_out).
        unsafe { write_out(out, st, "out") }
    })
}

/// One round of value-log GC with the given discard ratio in (0, 1). *collected
/// (may be NULL) receives 1 if a file was rewritten or deleted, 0 if nothing had
/// that much garbage. Call it in a loop until it reports 0.
#[no_mangle]
pub unsafe extern "C" fn sett_run_value_log_gc(
    db: *mut sett_db_t,
    discard_ratio: f64,
    collected: *mut c_int,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let outcome = h.db.run_value_log_gc(discard_ratio)?;
        if !collected.is_null() {
            // SAFETY: `collected` was checked writable (not NULL) above, as sett.h requires of out-pointers.
            unsafe { collected.write(c_int::from(outcome != GcOutcome::NothingToCollect)) };
        }
        Ok(())
    })
}

/// Writes a backup to the file at `path` (created or truncated, then synced):
/// live entries if `since` is 0, else every version after `since`. *next_since
/// (may be NULL) receives the `since` for the next incremental backup.
#[no_mangle]
pub unsafe extern "C" fn sett_backup(
    db: *mut sett_db_t,
    path: *const c_char,
    since: u64,
    next_since: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `path` is NULL (refused) or a NUL-terminated string, as sett.h requires.
        let p = unsafe { c_path(path, "path") }?;
        let io = |e: std::io::Error| {
            FfiError::from(sett_core::Error::Io {
                context: format!("writing backup {p}"),
                source: e.into(),
            })
        };
        let file = std::fs::File::create(p).map_err(io)?;
        let mut w = std::io::BufWriter::new(file);
        let next = h.db.backup(&mut w, since)?;
        let file = w.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        if !next_since.is_null() {
            // SAFETY: writable by the caller's contract.
            unsafe { next_since.write(next) };
        }
        Ok(())
    })
}

/// Restores the backup in file `path` (a full backup needs an empty database).
/// *entries (may be NULL) receives the number of entries applied.
#[no_mangle]
pub unsafe extern "C" fn sett_restore(
    db: *mut sett_db_t,
    path: *const c_char,
    entries: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `path` is NULL (refused) or a NUL-terminated string, as sett.h requires.
        let p = unsafe { c_path(path, "path") }?;
        let file = std::fs::File::open(p).map_err(|e| {
            FfiError::from(sett_core::Error::Io {
                context: format!("opening backup {p}"),
                source: e.into(),
            })
        })?;
        let n = h.db.load(&mut std::io::BufReader::new(file))?;
        if !entries.is_null() {
            // SAFETY: writable by the caller's contract.
            unsafe { entries.write(n) };
        }
        Ok(())
    })
}

/// Makes every write durable: the memtables are flushed to tables.
#[no_mangle]
pub unsafe extern "C" fn sett_flush(db: *mut sett_db_t, err: *mut *mut sett_error_t) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live(db) }?.db.flush()?;
        Ok(())
    })
}

/// Flushes the memtables and compacts everything into the last level.
#[no_mangle]
pub unsafe extern "C" fn sett_flatten(db: *mut sett_db_t, err: *mut *mut sett_error_t) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live(db) }?.db.flatten()?;
        Ok(())
    })
}

/// Deletes every key (files are removed, not rewritten).
#[no_mangle]
pub unsafe extern "C" fn sett_drop_all(db: *mut sett_db_t, err: *mut *mut sett_error_t) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live(db) }?.db.drop_all()?;
        Ok(())
    })
}

/// Deletes every key starting with `prefix`: one range delete over the
/// prefix (see sett_delete_range()), atomic, and writers do not wait.
/// An empty prefix is sett_drop_all().
#[no_mangle]
pub unsafe extern "C" fn sett_drop_prefix(
    db: *mut sett_db_t,
    prefix: *const u8,
    len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `prefix` is NULL (refused) or points to `len` readable bytes, as sett.h requires of the caller.
        h.db.drop_prefix(unsafe { bytes(prefix, len, "prefix") }?)?;
        Ok(())
    })
}

/// A persisted sequence of increasing integers. Thread-safe.
pub struct sett_sequence_t {
    seq: Sequence,
}

impl Handle for sett_sequence_t {
    const NAME: &'static str = "seq";
}

/// A sequence stored under `key`, leasing `bandwidth` numbers at a time.
/// Release with sett_sequence_free().
#[no_mangle]
pub unsafe extern "C" fn sett_sequence_new(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    bandwidth: u64,
    seq: *mut *mut sett_sequence_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `seq` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(seq, std::ptr::null_mut(), "seq") }?;
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let s =
            // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
            h.db.sequence(unsafe { bytes(key, keylen, "key") }?, bandwidth)?;
        // SAFETY: `seq` was checked writable (not NULL) above, as sett.h requires of out-pointers.
        unsafe { seq.write(Box::into_raw(Box::new(sett_sequence_t { seq: s }))) };
        Ok(())
    })
}

/// The next number of the sequence, in *value.
#[no_mangle]
pub unsafe extern "C" fn sett_sequence_next(
    seq: *mut sett_sequence_t,
    value: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `seq` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(seq) }?;
        let v = s.seq.next()?;
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, v, "value") }
    })
}

/// Gives back the unused part of the current lease.
#[no_mangle]
pub unsafe extern "C" fn sett_sequence_release(
    seq: *mut sett_sequence_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `seq` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live(seq) }?.seq.release()?;
        Ok(())
    })
}

/// Frees a sequence (without releasing its lease). Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_sequence_free(seq: *mut sett_sequence_t) {
    if !seq.is_null() {
        // SAFETY: seq came from sett_sequence_new and is freed once.
        drop(unsafe { Box::from_raw(seq) });
    }
}

/// A bulk load in progress: sorted keys straight into bottom-level tables.
/// One thread at a time.
pub struct sett_bulk_loader_t {
    loader: Option<sett_core::BulkLoader>,
}

impl Handle for sett_bulk_loader_t {
    const NAME: &'static str = "loader";
}

/// Starts a bulk load into an empty database (SETT_INVALID_ARGUMENT otherwise).
/// Other writes fail until sett_bulk_loader_finish() or sett_bulk_loader_free().
#[no_mangle]
pub unsafe extern "C" fn sett_bulk_loader_new(
    db: *mut sett_db_t,
    loader: *mut *mut sett_bulk_loader_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `loader` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(loader, std::ptr::null_mut(), "loader") }?;
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let l = h.db.bulk_load()?;
        // SAFETY: `loader` was checked writable (not NULL) above, as sett.h requires of out-pointers.
        unsafe {
            loader.write(Box::into_raw(Box::new(sett_bulk_loader_t {
                loader: Some(l),
            })))
        };
        Ok(())
    })
}

/// Adds the next entry; keys must be strictly increasing.
#[no_mangle]
pub unsafe extern "C" fn sett_bulk_loader_add(
    loader: *mut sett_bulk_loader_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { sett_bulk_loader_add_with(loader, key, keylen, val, vallen, 0, 0, err) }
}

/// Adds the next entry with a user-meta byte and a time to live in
/// milliseconds (0 = none; rounded up to whole seconds, counted from this
/// call), as sett_put_with(); keys must be strictly increasing.
#[no_mangle]
pub unsafe extern "C" fn sett_bulk_loader_add_with(
    loader: *mut sett_bulk_loader_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    user_meta: u8,
    ttl_ms: u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `loader` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let l = unsafe { live_mut(loader) }?;
        let l = l.loader.as_mut().ok_or_else(|| {
            FfiError::new(crate::error::SETT_CLOSED, "bulk load already finished")
        })?;
        // SAFETY: each byte pointer is NULL (refused) or valid for its length, as sett.h requires.
        let (k, v) = unsafe { (Raw(key, keylen).get("key")?, Raw(val, vallen).get("value")?) };
        l.add_with(k, v, put_options(user_meta, ttl_ms))?;
        Ok(())
    })
}

/// Makes the loaded data durable and visible; *count (may be NULL) receives the
/// number of entries. The loader is finished either way; free it after.
#[no_mangle]
pub unsafe extern "C" fn sett_bulk_loader_finish(
    loader: *mut sett_bulk_loader_t,
    count: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `loader` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let l = unsafe { live_mut(loader) }?;
        let l = l.loader.take().ok_or_else(|| {
            FfiError::new(crate::error::SETT_CLOSED, "bulk load already finished")
        })?;
        let n = l.finish()?;
        if !count.is_null() {
            // SAFETY: writable by the caller's contract.
            unsafe { count.write(n) };
        }
        Ok(())
    })
}

/// Frees a loader; an unfinished load is abandoned (its files removed). Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_bulk_loader_free(loader: *mut sett_bulk_loader_t) {
    if !loader.is_null() {
        // SAFETY: loader came from sett_bulk_loader_new and is freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `loader` is not NULL (checked above) and came from Box::into_raw here; sett.h lets a handle be freed once.
            drop(unsafe { Box::from_raw(loader) })
        }));
    }
}

/// Makes a new data key for an encrypted database and stores its id in
/// *key_id (if not NULL): files created from now on are encrypted with it,
/// older files keep their keys. The key is durable when this returns.
/// SETT_INVALID_ARGUMENT for a database opened without an encryption key or
/// a NULL db, SETT_READ_ONLY for a read-only one.
#[no_mangle]
pub unsafe extern "C" fn sett_rotate_encryption_key(
    db: *mut sett_db_t,
    key_id: *mut u32,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let id = h.db.rotate_encryption_key()?;
        if !key_id.is_null() {
            // SAFETY: a non-NULL `key_id` is writable for one value, as sett.h requires of out-pointers.
            unsafe { key_id.write(id) };
        }
        Ok(())
    })
}
