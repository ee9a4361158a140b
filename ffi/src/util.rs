//! What every export shares: panic catching, pointer-to-slice conversion,
//! handle checks.

use crate::error::{set_error, sett_error_t, FfiError, SETT_OK, SETT_PANIC};
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning its error into a status (and `*err`) and a panic into SETT_PANIC.
pub(crate) fn guard(
    err: *mut *mut sett_error_t,
    f: impl FnOnce() -> Result<c_int, FfiError>,
) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => {
            let code = e.code;
            set_error(err, e);
            code
        }
        Err(_) => {
            set_error(
                err,
                FfiError::new(SETT_PANIC, "a panic happened inside sett"),
            );
            SETT_PANIC
        }
    }
}

/// Like `guard` for calls whose only outcomes are OK or an error.
pub(crate) fn guard_ok(
    err: *mut *mut sett_error_t,
    f: impl FnOnce() -> Result<(), FfiError>,
) -> c_int {
    guard(err, || f().map(|()| SETT_OK))
}

/// The bytes at (`p`, `len`); NULL is allowed with length 0.
///
/// # Safety
/// A non-NULL `p` must be valid for reads of `len` bytes for `'a`.
pub(crate) unsafe fn bytes<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8], FfiError> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(FfiError::invalid(format!(
            "{what} is NULL with length {len}"
        )));
    }
    // SAFETY: non-NULL and, by the caller's contract, valid for `len` bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Bytes as a C caller passes them, a pointer and a length, not yet checked:
/// how the shared helpers behind the exports take them.
#[derive(Clone, Copy)]
pub(crate) struct Raw(pub *const u8, pub usize);

impl Raw {
    /// The bytes, as [`bytes`] checks them, named `what` in its error.
    ///
    /// # Safety
    /// As [`bytes`].
    pub(crate) unsafe fn get<'a>(self, what: &str) -> Result<&'a [u8], FfiError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { bytes(self.0, self.1, what) }
    }
}

/// A NUL-terminated UTF-8 path.
///
/// # Safety
/// A non-NULL `p` must point to a NUL-terminated string.
pub(crate) unsafe fn path<'a>(p: *const c_char, what: &str) -> Result<&'a str, FfiError> {
    if p.is_null() {
        return Err(FfiError::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| FfiError::invalid(format!("{what} is not valid UTF-8")))
}

/// A handle type this library hands to C as an opaque pointer.
pub(crate) trait Handle {
    /// What the error for a NULL handle calls it ("db is NULL").
    const NAME: &'static str;
}

/// The handle behind `p`, or SETT_INVALID_ARGUMENT naming it when `p` is NULL.
///
/// Only ever called with the handle argument of an exported function, passed
/// on unchanged: this is where such a pointer becomes a reference.
///
/// # Safety
/// `p` must be NULL or a handle of type `T` that this library returned and
/// has not freed (the handle types are only ever created by Box::into_raw
/// here), and the reference must not outlive the exported call it is made in.
/// Every exported function's documentation in sett.h requires this of its
/// handle arguments, so an exported function passes its argument straight in.
pub(crate) unsafe fn live<'a, T: Handle>(p: *const T) -> Result<&'a T, FfiError> {
    // SAFETY: the caller's contract above; NULL is turned into an error below.
    unsafe { p.as_ref() }.ok_or_else(|| FfiError::invalid(format!("{} is NULL", T::NAME)))
}

/// Like [`live`], for handles that sett.h says one thread uses at a time
/// (transactions, iterators, batches, options, loaders).
///
/// # Safety
/// As for [`live`], and no other reference to the handle may exist during the
/// call (sett.h: one thread at a time).
pub(crate) unsafe fn live_mut<'a, T: Handle>(p: *mut T) -> Result<&'a mut T, FfiError> {
    // SAFETY: the caller's contract above; NULL is turned into an error below.
    unsafe { p.as_mut() }.ok_or_else(|| FfiError::invalid(format!("{} is NULL", T::NAME)))
}

/// Writes `v` through an out-pointer that must not be NULL.
///
/// # Safety
/// A non-NULL `out` must be valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, v: T, what: &str) -> Result<(), FfiError> {
    if out.is_null() {
        return Err(FfiError::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and valid for writes by the caller's contract.
    unsafe { out.write(v) };
    Ok(())
}

/// A C boolean taken as `uint32_t`: 0 or 1, anything else is an error naming it.
pub(crate) fn flag(v: u32, name: &str) -> Result<bool, FfiError> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(FfiError::invalid(format!("{name} must be 0 or 1, not {v}"))),
    }
}
