//! Reports that may grow: sett_verify() and sett_stats_ex(), with structs that
//! start with a `size` field the caller sets (the rule is in sett.h, under
//! "Extensible structs").

use crate::admin::SETT_MAX_LEVELS;
use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError};
use crate::util::{guard_ok, live};
use std::ffi::c_int;
use std::mem::size_of;

/// A `#[repr(C)]` struct whose first field is `size: usize`, filled by
/// [`fill_sized`].
///
/// # Safety
/// Implement only for `#[repr(C)]` structs whose first field is a `usize`
/// and whose other fields are plain integers (any bit pattern is valid).
pub(crate) unsafe trait Extensible: Sized {
    /// The size of the first version of the struct: the least a caller may set.
    const MIN_SIZE: usize;
    /// Its name in sett.h, for errors.
    const NAME: &'static str;
}

/// Checks the caller's `size` in `*out`, before any work is done: it must be at
/// least the struct's first version.
///
/// # Safety
/// A non-NULL `out` must be valid for reads of its first `usize`.
pub(crate) unsafe fn sized_len<T: Extensible>(out: *const T) -> Result<usize, FfiError> {
    if out.is_null() {
        return Err(FfiError::invalid(format!("{} pointer is NULL", T::NAME)));
    }
    // SAFETY: non-NULL and, by the caller's contract, its first field (a size_t)
    // is readable; read unaligned in case the caller's struct is packed oddly.
    let size = unsafe { out.cast::<usize>().read_unaligned() };
    if size < T::MIN_SIZE {
        return Err(FfiError::invalid(format!(
            "{}.size is {size}: set it to sizeof({}) ({} or more)",
            T::NAME,
            T::NAME,
            T::MIN_SIZE
        )));
    }
    Ok(size)
}

/// Copies `v` into the caller's struct of `size` bytes (checked by
/// [`sized_len`]): the fields this library knows that fit in `size`; bytes past
/// what it knows (fields of a newer sett.h) are zeroed. `size` is set to the
/// number of bytes filled.
///
/// # Safety
/// `out` must be valid for writes of `size` bytes.
pub(crate) unsafe fn fill_sized<T: Extensible>(out: *mut T, v: T, size: usize) {
    let ours = size_of::<T>();
    let filled = size.min(ours);
    let dst = out.cast::<u8>();
    // SAFETY: `dst` is valid for `size` >= `filled` bytes (caller's contract) and
    // `v` is a local of `ours` >= `filled` bytes; they do not overlap. The copy is
    // untyped, so padding bytes (on 32-bit targets) are fine to copy.
    unsafe {
        std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>(), dst, filled);
        if size > ours {
            std::ptr::write_bytes(dst.add(ours), 0, size - ours);
        }
        out.cast::<usize>().write_unaligned(filled);
    }
}

/// What sett_verify() checked. An extensible struct: set `size` to
/// sizeof(sett_verify_report_t) before the call.
#[repr(C)]
pub struct sett_verify_report_t {
    /// In: sizeof(sett_verify_report_t). Out: the bytes sett filled.
    pub size: usize,
    /// Tables whose every block checksum and format were checked.
    pub tables: u64,
    /// Table blocks checked.
    pub blocks: u64,
    /// Entries (all versions) walked in memtables and tables.
    pub entries: u64,
    /// Value-log entries read back and checked through their pointers.
    pub values: u64,
}

// SAFETY: #[repr(C)], first field usize, the rest u64.
unsafe impl Extensible for sett_verify_report_t {
    const MIN_SIZE: usize = size_of::<sett_verify_report_t>();
    const NAME: &'static str = "sett_verify_report_t";
}

/// Checks every checksum of the database: each table block, and each value-log
/// entry that a live version points to. SETT_OK: *report (may be NULL) receives
/// the counts. SETT_CORRUPTION: the first damage found; *err names the file and
/// offset, and *report is not written. The database stays open and usable
/// either way; verify never changes it.
#[no_mangle]
pub unsafe extern "C" fn sett_verify(
    db: *mut sett_db_t,
    report: *mut sett_verify_report_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let size = if report.is_null() {
            None
        } else {
            // SAFETY: a non-NULL report is a caller struct with its size set (sett.h).
            Some(unsafe { sized_len(report) }?)
        };
        let r = h.db.verify()?;
        if let Some(size) = size {
            let v = sett_verify_report_t {
                size: 0,
                tables: r.tables as u64,
                blocks: r.blocks as u64,
                entries: r.entries,
                values: r.values,
            };
            // SAFETY: report is valid for `size` bytes (checked and required by sett.h).
            unsafe { fill_sized(report, v, size) };
        }
        Ok(())
    })
}

/// Counts and sizes of a database, GC included (sett_stats_ex()). An extensible
/// struct: set `size` to sizeof(sett_stats_ex_t) before the call. It replaces
/// sett_stats_t, whose layout is fixed.
#[repr(C)]
pub struct sett_stats_ex_t {
    /// In: sizeof(sett_stats_ex_t). Out: the bytes sett filled.
    pub size: usize,
    /// Levels in use (entries past it in the arrays are 0).
    pub num_levels: u64,
    /// Tables per level, L0 first.
    pub level_tables: [u64; SETT_MAX_LEVELS],
    /// Bytes per level.
    pub level_bytes: [u64; SETT_MAX_LEVELS],
    /// Live value-log files and their bytes.
    pub vlog_files: u64,
    pub vlog_bytes: u64,
    /// Estimated bytes of the active and immutable memtables.
    pub memtable_bytes: u64,
    /// Immutable memtables waiting to be flushed.
    pub immutable_memtables: u64,
    /// Bytes held by the tables themselves: key ranges and pinned indexes
    /// and filters (those loaded through the cache are in cache_usage).
    pub index_filter_bytes: u64,
    /// Sequence number (version) of the last write.
    pub last_seq: u64,
    /// Entries (all versions, tombstones included) in tables.
    pub table_entries: u64,
    /// Write groups and batches written since open.
    pub write_groups: u64,
    pub batches_written: u64,
    /// fsyncs of the WAL since open (only with sync_writes).
    pub wal_syncs: u64,
    /// Levels due for compaction now; compactions in progress.
    pub compactions_pending: u64,
    pub compactions_running: u64,
    /// Value-log GC since open, background and sett_run_value_log_gc(): files
    /// whose live values were moved before they were deleted.
    pub gc_files_rewritten: u64,
    /// Value-log files deleted without a rewrite (no live value left).
    pub gc_files_deleted: u64,
    /// Bytes returned to the file system (deleted files less what was moved).
    pub gc_bytes_reclaimed: u64,
    /// Time spent in value-log GC, in microseconds (waits for its rate included).
    pub gc_micros: u64,
    /// Value-log files the background GC will collect (their garbage share
    /// reached vlog_gc_ratio) and their bytes: its backlog, 0 when background
    /// GC is off. A benchmark waits for it as for compactions_pending.
    pub gc_pending_files: u64,
    pub gc_pending_bytes: u64,
    /// The memory budget (sett_options_set_cache_size) and the bytes its
    /// cache holds now, never above it: pinned and cached table indexes and
    /// filters, and decompressed blocks of compressed tables.
    pub cache_capacity: u64,
    pub cache_usage: u64,
    /// Of cache_usage, the indexes and filters pinned by their tables.
    pub cache_pinned_bytes: u64,
    /// Lookups of indexes and filters not pinned: found in the cache, or loaded.
    pub cache_index_filter_hits: u64,
    pub cache_index_filter_misses: u64,
    /// Reads of compressed data blocks: found decompressed, or decompressed.
    pub cache_data_hits: u64,
    pub cache_data_misses: u64,
    /// Value-log files in which GC found a damaged live entry: each is kept,
    /// left out of later GC rounds while the database is open, and reported
    /// by sett_verify() with its file and offset.
    pub gc_damaged_files: u64,
    /// Per level, L0 first: bytes of tables written into it since open, by
    /// flushes into L0 and by compactions into the others (a table moved
    /// down whole is not written again).
    pub level_bytes_written: [u64; SETT_MAX_LEVELS],
    /// Per level: bytes of the tables that compactions into it read since
    /// open (inputs from the level above and from the level itself).
    pub level_bytes_read: [u64; SETT_MAX_LEVELS],
    /// Bytes appended to the WAL since open.
    pub wal_bytes_written: u64,
    /// Bytes of live values the value-log GC moved (appended again) since open.
    pub gc_bytes_moved: u64,
}

// SAFETY: #[repr(C)], first field usize, the rest u64 and arrays of u64.
unsafe impl Extensible for sett_stats_ex_t {
    // The first version ended at gc_micros: a caller built against it still works.
    const MIN_SIZE: usize = std::mem::offset_of!(sett_stats_ex_t, gc_pending_files);
    const NAME: &'static str = "sett_stats_ex_t";
}

/// Fills *out (its `size` set by the caller) with the database's counts and
/// sizes, value-log GC included. SETT_CLOSED after sett_close().
#[no_mangle]
pub unsafe extern "C" fn sett_stats_ex(
    db: *mut sett_db_t,
    out: *mut sett_stats_ex_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `out` is NULL (refused) or a caller struct with its size set (sett.h).
        let size = unsafe { sized_len(out) }?;
        if h.db.is_closed() {
            return Err(sett_core::Error::Closed.into());
        }
        let s = h.db.stats();
        let mut st = sett_stats_ex_t {
            size: 0,
            num_levels: s.levels.len().min(SETT_MAX_LEVELS) as u64,
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
            wal_syncs: s.wal_syncs,
            compactions_pending: s.compactions_pending,
            compactions_running: s.compactions_running,
            gc_files_rewritten: s.gc_files_rewritten,
            gc_files_deleted: s.gc_files_deleted,
            gc_bytes_reclaimed: s.gc_bytes_reclaimed,
            gc_micros: s.gc_micros,
            gc_pending_files: s.gc_pending_files,
            gc_pending_bytes: s.gc_pending_bytes,
            cache_capacity: s.cache_capacity,
            cache_usage: s.cache_usage,
            cache_pinned_bytes: s.cache_pinned_bytes,
            cache_index_filter_hits: s.cache_index_filter_hits,
            cache_index_filter_misses: s.cache_index_filter_misses,
            cache_data_hits: s.cache_data_hits,
            cache_data_misses: s.cache_data_misses,
            gc_damaged_files: s.gc_damaged_files,
            level_bytes_written: [0; SETT_MAX_LEVELS],
            level_bytes_read: [0; SETT_MAX_LEVELS],
            wal_bytes_written: s.wal_bytes_written,
            gc_bytes_moved: s.gc_bytes_moved,
        };
        for (i, (n, b)) in s.levels.iter().take(SETT_MAX_LEVELS).enumerate() {
            st.level_tables[i] = *n as u64;
            st.level_bytes[i] = *b;
        }
        for (i, b) in s
            .level_bytes_written
            .iter()
            .take(SETT_MAX_LEVELS)
            .enumerate()
        {
            st.level_bytes_written[i] = *b;
        }
        for (i, b) in s.level_bytes_read.iter().take(SETT_MAX_LEVELS).enumerate() {
            st.level_bytes_read[i] = *b;
        }
        // SAFETY: out is valid for `size` bytes (checked and required by sett.h).
        unsafe { fill_sized(out, st, size) };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_struct_larger_than_ours_gets_our_fields_and_zeros_after() {
        // A newer header's struct: ours plus two fields, set to junk.
        let ours = size_of::<sett_verify_report_t>();
        let mut buf = vec![0xAAu8; ours + 16];
        buf[..size_of::<usize>()].copy_from_slice(&(ours + 16).to_ne_bytes());
        let out = buf.as_mut_ptr().cast::<sett_verify_report_t>();
        // SAFETY: buf is ours + 16 bytes; its size field says so.
        let size = unsafe { sized_len(out as *const _) }
            .map_err(|e| e.message)
            .unwrap();
        let v = sett_verify_report_t {
            size: 0,
            tables: 1,
            blocks: 2,
            entries: 3,
            values: 4,
        };
        // SAFETY: as above.
        unsafe { fill_sized(out, v, size) };
        let filled = usize::from_ne_bytes(buf[..size_of::<usize>()].try_into().unwrap());
        assert_eq!(filled, ours);
        let entries_at = std::mem::offset_of!(sett_verify_report_t, entries);
        let entries = u64::from_ne_bytes(buf[entries_at..entries_at + 8].try_into().unwrap());
        assert_eq!(entries, 3);
        assert!(buf[ours..].iter().all(|&b| b == 0), "{:?}", &buf[ours..]);
    }

    #[test]
    fn a_size_below_the_first_version_is_refused_by_name() {
        let mut r = sett_verify_report_t {
            size: 8,
            tables: 0,
            blocks: 0,
            entries: 0,
            values: 0,
        };
        // SAFETY: r is a whole struct.
        let e = unsafe { sized_len(&mut r as *const _) }.err().unwrap();
        assert!(
            e.message.contains("sett_verify_report_t.size is 8"),
            "{}",
            e.message
        );
    }
}
