//! Status codes and `sett_error_t`.

use sett_core::Error;
use std::ffi::{c_char, c_int, CString};

/// Success.
pub const SETT_OK: c_int = 0;
/// The key has no value (not an error: *err is not set). Also a named
/// object that does not exist (sett_drop_keyspace), then with *err set.
pub const SETT_NOT_FOUND: c_int = 1;
/// A transaction conflicted with one that committed after it started; retry it.
pub const SETT_CONFLICT: c_int = 2;
/// A NULL pointer, an empty key, a bad enum value or another bad argument.
pub const SETT_INVALID_ARGUMENT: c_int = 3;
/// An operating-system I/O error.
pub const SETT_IO: c_int = 4;
/// Damaged data; the message names the file and offset.
pub const SETT_CORRUPTION: c_int = 5;
/// The database (or the transaction or iterator) is closed.
pub const SETT_CLOSED: c_int = 6;
/// A key, value, batch or transaction exceeds its limit.
pub const SETT_TOO_BIG: c_int = 7;
/// The caller's buffer is too small; the needed length is reported.
pub const SETT_BUFFER_TOO_SMALL: c_int = 8;
/// A panic inside sett was caught; the database may be unusable.
pub const SETT_PANIC: c_int = 9;
/// Another process holds the database directory.
pub const SETT_LOCKED: c_int = 10;
/// A write to a database opened read-only.
pub const SETT_READ_ONLY: c_int = 11;
/// An earlier write error left the database refusing writes.
pub const SETT_POISONED: c_int = 12;
/// A file has a format version this library cannot read.
pub const SETT_UNSUPPORTED_VERSION: c_int = 13;
/// An option is out of range; the message names it.
pub const SETT_INVALID_OPTION: c_int = 14;
/// A change-feed subscriber fell behind: its undelivered changes were
/// dropped. sett_error_version() is the version to resubscribe from.
pub const SETT_FELL_BEHIND: c_int = 15;
/// A subscription asked to start from a version older than the change feed's
/// history holds; sett_error_version() is the oldest version it can start from.
pub const SETT_FEED_HISTORY_TOO_SHORT: c_int = 16;
/// An engine error this version of the header has no code for (a newer
/// library's); the message says what failed.
pub const SETT_OTHER: c_int = 17;
/// A key holds merge operands but the database was opened without a merge
/// operator, or a merge was written to such a database: open it with the
/// operator it records (sett_options_set_merge_operator()).
pub const SETT_MERGE_OPERATOR_MISSING: c_int = 18;
/// sett_open() was given another merge operator than the one the database
/// records; the message names the recorded one. Nothing was changed.
pub const SETT_MERGE_OPERATOR_MISMATCH: c_int = 19;
/// The merge operator refused a key's operands (an operand of the wrong
/// size for sett.u64_add, say); the operands stay stored as they were.
pub const SETT_MERGE_FAILED: c_int = 20;
/// The encryption key given is not the one the database was encrypted with;
/// nothing was read or changed.
pub const SETT_WRONG_ENCRYPTION_KEY: c_int = 21;
/// The database is encrypted and no encryption key was given.
pub const SETT_ENCRYPTION_KEY_REQUIRED: c_int = 22;
/// An encryption key was given for a database that is not encrypted.
pub const SETT_NOT_ENCRYPTED: c_int = 23;

/// An error: a status code and a message. Owned by the caller; free with
/// sett_error_free().
pub struct sett_error_t {
    code: c_int,
    message: CString,
    version: u64,
}

/// An error as the exports build it before handing it to C.
pub(crate) struct FfiError {
    pub code: c_int,
    pub message: String,
    /// The version an error carries (see sett_error_version), else 0.
    pub version: u64,
}

impl FfiError {
    pub(crate) fn new(code: c_int, message: impl Into<String>) -> FfiError {
        FfiError {
            code,
            message: message.into(),
            version: 0,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> FfiError {
        FfiError::new(SETT_INVALID_ARGUMENT, message)
    }
}

impl From<Error> for FfiError {
    fn from(e: Error) -> FfiError {
        let code = match &e {
            Error::Io { .. } => SETT_IO,
            Error::Corruption { .. } => SETT_CORRUPTION,
            Error::UnsupportedVersion { .. } => SETT_UNSUPPORTED_VERSION,
            Error::InvalidOption { .. } => SETT_INVALID_OPTION,
            Error::InvalidArgument(_) => SETT_INVALID_ARGUMENT,
            Error::NotFound(_) => SETT_NOT_FOUND,
            Error::TooBig { .. } => SETT_TOO_BIG,
            Error::Locked(_) => SETT_LOCKED,
            Error::ReadOnly => SETT_READ_ONLY,
            Error::Closed => SETT_CLOSED,
            Error::Poisoned(_) => SETT_POISONED,
            Error::Conflict => SETT_CONFLICT,
            Error::FellBehind { .. } => SETT_FELL_BEHIND,
            Error::FeedHistoryTooShort { .. } => SETT_FEED_HISTORY_TOO_SHORT,
            Error::MergeOperatorMissing { .. } => SETT_MERGE_OPERATOR_MISSING,
            Error::MergeOperatorMismatch { .. } => SETT_MERGE_OPERATOR_MISMATCH,
            Error::MergeFailed { .. } => SETT_MERGE_FAILED,
            Error::WrongEncryptionKey(_) => SETT_WRONG_ENCRYPTION_KEY,
            Error::EncryptionKeyRequired(_) => SETT_ENCRYPTION_KEY_REQUIRED,
            Error::NotEncrypted(_) => SETT_NOT_ENCRYPTED,
            _ => SETT_OTHER,
        };
        let version = match &e {
            Error::FellBehind { resume_from } => *resume_from,
            Error::FeedHistoryTooShort { oldest, .. } => *oldest,
            _ => 0,
        };
        FfiError {
            version,
            ..FfiError::new(code, e.to_string())
        }
    }
}

/// Stores `e` in `*err` (if `err` is not NULL), freeing an error already there.
pub(crate) fn set_error(err: *mut *mut sett_error_t, e: FfiError) {
    if err.is_null() {
        return;
    }
    let message = CString::new(e.message.replace('\0', " ")).unwrap_or_default();
    let boxed = Box::into_raw(Box::new(sett_error_t {
        code: e.code,
        message,
        version: e.version,
    }));
    // SAFETY: the caller passes a valid `sett_error_t **`; *err is NULL or an
    // error this library allocated (documented in sett.h).
    unsafe {
        let old = *err;
        if !old.is_null() {
            drop(Box::from_raw(old));
        }
        *err = boxed;
    }
}

/// The message of `err` (UTF-8, NUL-terminated), valid until sett_error_free().
/// Returns "" for NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_error_message(err: *const sett_error_t) -> *const c_char {
    if err.is_null() {
        return c"".as_ptr();
    }
    // SAFETY: a non-NULL err points to a live error from this library.
    unsafe { (*err).message.as_ptr() }
}

/// The status code of `err`; SETT_INVALID_ARGUMENT for NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_error_code(err: *const sett_error_t) -> c_int {
    if err.is_null() {
        return SETT_INVALID_ARGUMENT;
    }
    // SAFETY: a non-NULL err points to a live error from this library.
    unsafe { (*err).code }
}

/// The version an error carries: for SETT_FELL_BEHIND the version to
/// resubscribe from, for SETT_FEED_HISTORY_TOO_SHORT the oldest version a
/// subscription can start from; 0 for other errors and NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_error_version(err: *const sett_error_t) -> u64 {
    if err.is_null() {
        return 0;
    }
    // SAFETY: a non-NULL err points to a live error from this library.
    unsafe { (*err).version }
}

/// Frees an error. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_error_free(err: *mut sett_error_t) {
    if !err.is_null() {
        // SAFETY: err came from Box::into_raw in set_error and is freed once.
        drop(unsafe { Box::from_raw(err) });
    }
}

/// A static description of a status code ("ok", "not found", ...); never freed.
#[no_mangle]
pub extern "C" fn sett_status_string(code: c_int) -> *const c_char {
    let s: &'static std::ffi::CStr = match code {
        SETT_OK => c"ok",
        SETT_NOT_FOUND => c"not found",
        SETT_CONFLICT => c"transaction conflict",
        SETT_INVALID_ARGUMENT => c"invalid argument",
        SETT_IO => c"I/O error",
        SETT_CORRUPTION => c"corruption",
        SETT_CLOSED => c"closed",
        SETT_TOO_BIG => c"too big",
        SETT_BUFFER_TOO_SMALL => c"buffer too small",
        SETT_PANIC => c"panic inside sett",
        SETT_LOCKED => c"database locked by another process",
        SETT_READ_ONLY => c"database is read-only",
        SETT_POISONED => c"database refuses writes after an earlier error",
        SETT_UNSUPPORTED_VERSION => c"unsupported format version",
        SETT_INVALID_OPTION => c"invalid option",
        SETT_FELL_BEHIND => c"change-feed subscriber fell behind",
        SETT_FEED_HISTORY_TOO_SHORT => c"change-feed history does not reach that version",
        SETT_OTHER => c"engine error",
        SETT_MERGE_OPERATOR_MISSING => c"no merge operator for a key holding merge operands",
        SETT_MERGE_OPERATOR_MISMATCH => c"merge operator differs from the one the database records",
        SETT_MERGE_FAILED => c"merge operator refused the operands",
        SETT_WRONG_ENCRYPTION_KEY => c"wrong encryption key",
        SETT_ENCRYPTION_KEY_REQUIRED => c"database is encrypted: encryption key required",
        SETT_NOT_ENCRYPTED => c"database is not encrypted",
        _ => c"unknown status code",
    };
    s.as_ptr()
}
