//! sett_checkpoint(): an openable copy of a database made by hard links.

use crate::db::sett_db_t;
use crate::error::sett_error_t;
use crate::inspect::{fill_sized, sized_len, Extensible};
use crate::util::{guard_ok, live, path as c_path};
use std::ffi::{c_char, c_int};
use std::mem::size_of;

/// What sett_checkpoint() did. An extensible struct: set `size` to
/// sizeof(sett_checkpoint_report_t) before the call.
#[repr(C)]
pub struct sett_checkpoint_report_t {
    /// In: sizeof(sett_checkpoint_report_t). Out: the bytes sett filled.
    pub size: usize,
    /// Files hard-linked (tables and sealed value-log files).
    pub files_linked: u64,
    /// Files copied: WAL files of a read-only database, and files that could
    /// not be linked (the target is on another file system).
    pub files_copied: u64,
    /// Bytes of the linked files (shared with the source, not written again).
    pub bytes_linked: u64,
    /// Bytes written by copies.
    pub bytes_copied: u64,
    /// Wall time of the call, in microseconds.
    pub elapsed_micros: u64,
}

// SAFETY: #[repr(C)], first field usize, the rest u64.
unsafe impl Extensible for sett_checkpoint_report_t {
    const MIN_SIZE: usize = size_of::<sett_checkpoint_report_t>();
    const NAME: &'static str = "sett_checkpoint_report_t";
}

/// Makes an openable copy of the database in directory `path`, which must not
/// exist (its parent must), while other threads keep writing: tables and sealed
/// value-log files are hard-linked (copied where the file system cannot link).
/// The copy holds every write acknowledged before the call; open it with
/// sett_open() as a database of its own. A read-only database links what its
/// MANIFEST lists and copies the WALs its open replayed.
/// SETT_INVALID_ARGUMENT: `path` exists (nothing is changed) or its parent is
/// not a directory. An interrupted checkpoint (a crash, an I/O error that could
/// not be cleaned up) leaves a directory holding CHECKPOINT-INCOMPLETE, which
/// sett_open() refuses with SETT_CORRUPTION. `report` may be NULL; otherwise
/// its `size` must be set, and it is written only on SETT_OK.
#[no_mangle]
pub unsafe extern "C" fn sett_checkpoint(
    db: *mut sett_db_t,
    path: *const c_char,
    report: *mut sett_checkpoint_report_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `path` is NULL (refused) or a NUL-terminated string, as sett.h requires.
        let target = unsafe { c_path(path, "path") }?;
        let size = if report.is_null() {
            None
        } else {
            // SAFETY: a non-NULL report is a caller struct with its size set (sett.h).
            Some(unsafe { sized_len(report) }?)
        };
        let r = h.db.checkpoint(target)?;
        if let Some(size) = size {
            let v = sett_checkpoint_report_t {
                size: 0,
                files_linked: r.files_linked,
                files_copied: r.files_copied,
                bytes_linked: r.bytes_linked,
                bytes_copied: r.bytes_copied,
                elapsed_micros: u64::try_from(r.elapsed.as_micros()).unwrap_or(u64::MAX),
            };
            // SAFETY: report is valid for `size` bytes (checked and required by sett.h).
            unsafe { fill_sized(report, v, size) };
        }
        Ok(())
    })
}
