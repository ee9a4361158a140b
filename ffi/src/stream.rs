//! Backup and restore through the caller's callbacks: sett_backup_to() and
//! sett_restore_from(), the stream forms of sett_backup() and sett_restore().
//! The bytes are the same backup stream (core/FORMAT.md).

use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError};
use crate::util::{guard_ok, live, write_out};
use std::ffi::{c_int, c_void};
use std::io::{self, Read, Write};

/// Receives the next `len` bytes of a backup (`data` is valid only during the
/// call; `len` is never 0). Return 0 once all `len` bytes are taken; any other
/// value stops the backup, which then fails with SETT_IO naming that value.
pub type sett_write_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, data: *const u8, len: usize) -> c_int>;

/// Supplies the next bytes of a backup to restore: copy at most `cap` bytes to
/// `buf` and store their number in *len (0 = the stream has ended). Return 0 on
/// success; any other value stops the restore, which then fails with SETT_IO
/// naming that value.
pub type sett_read_fn = Option<
    unsafe extern "C" fn(ctx: *mut c_void, buf: *mut u8, cap: usize, len: *mut usize) -> c_int,
>;

/// The caller's write callback as an `io::Write`. No buffering of its own: the
/// backup writes whole records (chunks of about 1 MiB), and a buffer would call
/// the callback again when dropped after it had asked to stop.
struct CallbackWriter {
    f: unsafe extern "C" fn(*mut c_void, *const u8, usize) -> c_int,
    ctx: *mut c_void,
    written: u64,
}

impl Write for CallbackWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // SAFETY: the caller's callback, called as sett.h documents it: with its
        // own ctx and `buf.len()` readable bytes, valid for the call.
        let rc = unsafe { (self.f)(self.ctx, buf.as_ptr(), buf.len()) };
        if rc != 0 {
            return Err(io::Error::other(format!(
                "the write callback returned {rc} after {} bytes of the stream",
                self.written
            )));
        }
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The caller's read callback as an `io::Read`.
struct CallbackReader {
    f: unsafe extern "C" fn(*mut c_void, *mut u8, usize, *mut usize) -> c_int,
    ctx: *mut c_void,
    read: u64,
}

impl Read for CallbackReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut got = 0usize;
        // SAFETY: the caller's callback, called as sett.h documents it: with its
        // own ctx, `buf.len()` writable bytes and a writable length, valid for
        // the call.
        let rc = unsafe { (self.f)(self.ctx, buf.as_mut_ptr(), buf.len(), &mut got) };
        if rc != 0 {
            return Err(io::Error::other(format!(
                "the read callback returned {rc} after {} bytes of the stream",
                self.read
            )));
        }
        if got > buf.len() {
            return Err(io::Error::other(format!(
                "the read callback reported {got} bytes read into a buffer of {}",
                buf.len()
            )));
        }
        self.read += got as u64;
        Ok(got)
    }
}

/// Streams a backup to `write` (called with `ctx`): the live entries if `since`
/// is 0, else every version after `since`; the same bytes sett_backup() writes
/// to a file. *next_since (may be NULL) receives the `since` for the next
/// incremental backup. The database is only read: a callback that stops the
/// backup leaves it as it was. The callback runs on the calling thread and may
/// read the database, but must not close it.
#[no_mangle]
pub unsafe extern "C" fn sett_backup_to(
    db: *mut sett_db_t,
    since: u64,
    write: sett_write_fn,
    ctx: *mut c_void,
    next_since: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let f = write.ok_or_else(|| FfiError::invalid("write callback is NULL"))?;
        let mut w = CallbackWriter { f, ctx, written: 0 };
        let next = h.db.backup(&mut w, since)?;
        if !next_since.is_null() {
            // SAFETY: `next_since` is not NULL and, by the caller's contract, writable.
            unsafe { write_out(next_since, next, "next_since") }?;
        }
        Ok(())
    })
}

/// Restores a backup stream read through `read` (called with `ctx`); a full
/// backup needs an empty database. *entries (may be NULL) receives the number
/// of entries applied. As with sett_restore(), the stream is applied in chunks
/// of about 1 MiB as it is read: when the callback stops it, or the stream is
/// damaged or cut, the call fails (SETT_IO or SETT_CORRUPTION) and the entries
/// of the chunks before may be in the database (with their right values; a
/// stream under 1 MiB applies nothing). Empty the database with
/// sett_drop_all() before restoring a full backup again.
#[no_mangle]
pub unsafe extern "C" fn sett_restore_from(
    db: *mut sett_db_t,
    read: sett_read_fn,
    ctx: *mut c_void,
    entries: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let f = read.ok_or_else(|| FfiError::invalid("read callback is NULL"))?;
        let mut r = CallbackReader { f, ctx, read: 0 };
        let n = h.db.load(&mut r)?;
        if !entries.is_null() {
            // SAFETY: `entries` is not NULL and, by the caller's contract, writable.
            unsafe { write_out(entries, n, "entries") }?;
        }
        Ok(())
    })
}
