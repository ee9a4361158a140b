//! `sett_batch_t`: puts and deletes applied atomically by sett_write().

use crate::db::put_options;
use crate::error::{FfiError, SETT_OK};
use crate::util::{bytes, guard, live, live_mut, Handle};
use sett_core::WriteBatch;
use std::ffi::c_int;

/// A write batch. One thread at a time.
pub struct sett_batch_t {
    pub(crate) batch: WriteBatch,
}

impl Handle for sett_batch_t {
    const NAME: &'static str = "batch";
}

/// A new empty batch. Free with sett_batch_free().
#[no_mangle]
pub extern "C" fn sett_batch_new() -> *mut sett_batch_t {
    Box::into_raw(Box::new(sett_batch_t {
        batch: WriteBatch::new(),
    }))
}

/// Frees a batch. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_free(batch: *mut sett_batch_t) {
    if !batch.is_null() {
        // SAFETY: batch came from sett_batch_new and is freed once.
        drop(unsafe { Box::from_raw(batch) });
    }
}

pub(crate) fn with_batch(
    batch: *mut sett_batch_t,
    f: impl FnOnce(&mut WriteBatch) -> Result<(), FfiError>,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `batch` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        f(&mut unsafe { live_mut(batch) }?.batch)?;
        Ok(SETT_OK)
    })
}

/// Adds a put. Keys and values are checked when the batch is written.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_put(
    batch: *mut sett_batch_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { sett_batch_put_with(batch, key, keylen, val, vallen, 0, 0) }
}

/// Adds a put with a user-meta byte and a TTL in milliseconds (0 = none).
#[no_mangle]
pub unsafe extern "C" fn sett_batch_put_with(
    batch: *mut sett_batch_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    user_meta: u8,
    ttl_ms: u64,
) -> c_int {
    with_batch(batch, |b| {
        // SAFETY: valid byte ranges (contract in sett.h).
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `val` is NULL (refused) or points to `vallen` readable bytes, as sett.h requires of the caller.
        let v = unsafe { bytes(val, vallen, "value") }?;
        b.put_with(k, v, put_options(user_meta, ttl_ms));
        Ok(())
    })
}

/// Adds a delete.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_delete(
    batch: *mut sett_batch_t,
    key: *const u8,
    keylen: usize,
) -> c_int {
    with_batch(batch, |b| {
        // SAFETY: valid byte range (contract in sett.h).
        b.delete(unsafe { bytes(key, keylen, "key") }?);
        Ok(())
    })
}

/// Removes every operation from the batch.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_clear(batch: *mut sett_batch_t) -> c_int {
    with_batch(batch, |b| {
        b.clear();
        Ok(())
    })
}

/// Number of operations in the batch (0 for NULL).
#[no_mangle]
pub unsafe extern "C" fn sett_batch_count(batch: *const sett_batch_t) -> usize {
    // SAFETY: `batch` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    unsafe { live(batch) }.map_or(0, |b| b.batch.len())
}
