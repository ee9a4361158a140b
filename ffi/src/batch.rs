//! `sett_batch_t`: puts and deletes applied atomically by sett_write().

use crate::error::{FfiError, SETT_OK};
use crate::keyspace::{named, sett_keyspace_t};
use crate::store::put_options;
use crate::util::{guard, live, live_mut, Handle, Raw};
use sett_core::{Keyspace, PutOptions, WriteBatch};
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

fn with_batch(
    batch: *mut sett_batch_t,
    f: impl FnOnce(&mut WriteBatch) -> Result<(), FfiError>,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `batch` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        f(&mut unsafe { live_mut(batch) }?.batch)?;
        Ok(SETT_OK)
    })
}

/// Runs `f` on the batch and the keyspace `ks` (`None`: the default one),
/// both checked: the start that the batch calls with and without `_in` share.
///
/// # Safety
/// `batch` and a keyspace handle given are NULL or live handles of this
/// library, as sett.h requires of the exports that call it.
unsafe fn with_batch_in(
    batch: *mut sett_batch_t,
    ks: Option<*const sett_keyspace_t>,
    f: impl FnOnce(&mut WriteBatch, Option<&Keyspace>) -> Result<(), FfiError>,
) -> c_int {
    with_batch(batch, |b| {
        // SAFETY: a keyspace handle is NULL (refused) or live, as sett.h requires of the caller.
        f(b, unsafe { named(ks) }?)
    })
}

/// A put added to the batch, in keyspace `ks` (`None`: the default one):
/// sett_batch_put_with() and sett_batch_put_in().
///
/// # Safety
/// As [`with_batch_in`], and `key` and `val` are each NULL or valid for their
/// length.
pub(crate) unsafe fn put(
    batch: *mut sett_batch_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    val: Raw,
    opts: PutOptions,
) -> c_int {
    let op = |b: &mut WriteBatch, ks: Option<&Keyspace>| {
        // SAFETY: `key` and `val` are NULL (refused) or valid for their length, as sett.h requires.
        let (k, v) = unsafe { (key.get("key")?, val.get("value")?) };
        match ks {
            None => b.put_with(k, v, opts),
            Some(ks) => b.put_with_in(ks, k, v, opts),
        };
        Ok(())
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_batch_in(batch, ks, op) }
}

/// A merge added to the batch, in keyspace `ks` (`None`: the default one):
/// sett_batch_merge() and sett_batch_merge_in().
///
/// # Safety
/// As [`with_batch_in`], and `key` and `operand` are each NULL or valid for
/// their length.
pub(crate) unsafe fn merge(
    batch: *mut sett_batch_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    operand: Raw,
) -> c_int {
    let op = |b: &mut WriteBatch, ks: Option<&Keyspace>| {
        // SAFETY: `key` and `operand` are NULL (refused) or valid for their length, as sett.h requires.
        let (k, o) = unsafe { (key.get("key")?, operand.get("operand")?) };
        match ks {
            None => b.merge(k, o),
            Some(ks) => b.merge_in(ks, k, o),
        };
        Ok(())
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_batch_in(batch, ks, op) }
}

/// A delete added to the batch, in keyspace `ks` (`None`: the default one):
/// sett_batch_delete() and sett_batch_delete_in().
///
/// # Safety
/// As [`with_batch_in`], and `key` is NULL or valid for its length.
pub(crate) unsafe fn delete(
    batch: *mut sett_batch_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
) -> c_int {
    let op = |b: &mut WriteBatch, ks: Option<&Keyspace>| {
        // SAFETY: `key` is NULL (refused) or valid for its length, as sett.h requires.
        let k = unsafe { key.get("key") }?;
        match ks {
            None => b.delete(k),
            Some(ks) => b.delete_in(ks, k),
        };
        Ok(())
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_batch_in(batch, ks, op) }
}

/// A range delete added to the batch, in keyspace `ks` (`None`: the default
/// one): sett_batch_delete_range() and sett_batch_delete_range_in().
///
/// # Safety
/// As [`with_batch_in`], and `start` and `end` are each NULL or valid for
/// their length.
pub(crate) unsafe fn delete_range(
    batch: *mut sett_batch_t,
    ks: Option<*const sett_keyspace_t>,
    start: Raw,
    end: Raw,
) -> c_int {
    let op = |b: &mut WriteBatch, ks: Option<&Keyspace>| {
        // SAFETY: `start` and `end` are NULL (refused) or valid for their length, as sett.h requires.
        let (s, e) = unsafe { (start.get("start")?, end.get("end")?) };
        match ks {
            None => b.delete_range(s, e),
            Some(ks) => b.delete_range_in(ks, s, e),
        };
        Ok(())
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_batch_in(batch, ks, op) }
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
    let opts = put_options(user_meta, ttl_ms);
    // SAFETY: forwarded contract.
    unsafe { put(batch, None, Raw(key, keylen), Raw(val, vallen), opts) }
}

/// Adds a merge of `operand` into key (see sett_merge()). Merges of one
/// batch on one key combine in order, as separate writes would. sett_write()
/// refuses the whole batch with SETT_MERGE_OPERATOR_MISSING when the
/// database has no merge operator.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_merge(
    batch: *mut sett_batch_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { merge(batch, None, Raw(key, keylen), Raw(operand, operand_len)) }
}

/// Adds a delete.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_delete(
    batch: *mut sett_batch_t,
    key: *const u8,
    keylen: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { delete(batch, None, Raw(key, keylen)) }
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
