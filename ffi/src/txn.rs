//! `sett_txn_t`: transactions.

use crate::buf::sett_buf_t;
use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError, SETT_OK};
use crate::iter::{options as iter_options, sett_iter_options_t, sett_iter_t};
use crate::keyspace::{named, sett_keyspace_t};
use crate::store::{found, put_options, EntryOut};
use crate::util::{flag, guard, guard_ok, live, live_mut, write_out, Handle, Raw};
use sett_core::{Keyspace, PutOptions, Txn};
use std::ffi::c_int;

/// A transaction. One thread at a time. After sett_txn_commit() or
/// sett_txn_discard() every call on it returns SETT_CLOSED; release it with
/// sett_txn_free().
pub struct sett_txn_t {
    pub(crate) txn: Option<Txn>,
}

impl Handle for sett_txn_t {
    const NAME: &'static str = "txn";
}

impl sett_txn_t {
    pub(crate) fn live(&mut self) -> Result<&mut Txn, FfiError> {
        self.txn.as_mut().ok_or_else(|| {
            FfiError::new(
                crate::error::SETT_CLOSED,
                "transaction already committed or discarded",
            )
        })
    }
}

/// Runs `f` under [`guard`] on the live transaction, the keyspace `ks`
/// (`None`: the default one) and the checked key: the start that the
/// single-key calls with and without `_in` share.
///
/// # Safety
/// `txn` and a keyspace handle given are NULL or live handles of this library,
/// and `key` is NULL or valid for its length, as sett.h requires of the
/// exports that call it.
unsafe fn with_key(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    err: *mut *mut sett_error_t,
    f: impl FnOnce(&mut Txn, Option<&Keyspace>, &[u8]) -> Result<c_int, FfiError>,
) -> c_int {
    guard(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: a keyspace handle is NULL (refused) or live, as sett.h requires of the caller.
        let ks = unsafe { named(ks) }?;
        // SAFETY: `key` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        let k = unsafe { key.get("key") }?;
        f(t, ks, k)
    })
}

/// A read as the transaction sees it, in keyspace `ks` (`None`: the default
/// one): sett_txn_get() and sett_txn_get_in().
///
/// # Safety
/// As [`with_key`], and `value` is NULL (refused) or writable.
pub(crate) unsafe fn get(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |t: &mut Txn, ks: Option<&Keyspace>, k: &[u8]| {
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        let v = match ks {
            None => t.get(k)?,
            Some(ks) => t.get_in(ks, k)?,
        };
        // SAFETY: `value` was checked writable just above.
        unsafe { found(value, v) }
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(txn, ks, key, err, op) }
}

/// A put buffered in keyspace `ks` (`None`: the default one):
/// sett_txn_put_with() and sett_txn_put_in().
///
/// # Safety
/// As [`with_key`], and `val` is NULL or valid for its length.
pub(crate) unsafe fn put(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    val: Raw,
    opts: PutOptions,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |t: &mut Txn, ks: Option<&Keyspace>, k: &[u8]| {
        // SAFETY: `val` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        let v = unsafe { val.get("value") }?;
        match ks {
            None => t.set_with(k, v, opts)?,
            Some(ks) => t.set_with_in(ks, k, v, opts)?,
        }
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(txn, ks, key, err, op) }
}

/// A merge buffered in keyspace `ks` (`None`: the default one):
/// sett_txn_merge() and sett_txn_merge_in().
///
/// # Safety
/// As [`with_key`], and `operand` is NULL or valid for its length.
pub(crate) unsafe fn merge(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    operand: Raw,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |t: &mut Txn, ks: Option<&Keyspace>, k: &[u8]| {
        // SAFETY: `operand` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        let o = unsafe { operand.get("operand") }?;
        match ks {
            None => t.merge(k, o)?,
            Some(ks) => t.merge_in(ks, k, o)?,
        }
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(txn, ks, key, err, op) }
}

/// A delete buffered in keyspace `ks` (`None`: the default one):
/// sett_txn_delete() and sett_txn_delete_in().
///
/// # Safety
/// As [`with_key`].
pub(crate) unsafe fn delete(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    key: Raw,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |t: &mut Txn, ks: Option<&Keyspace>, k: &[u8]| {
        match ks {
            None => t.delete(k)?,
            Some(ks) => t.delete_in(ks, k)?,
        }
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(txn, ks, key, err, op) }
}

/// An iterator over keyspace `ks` (`None`: the default one) as the
/// transaction sees it: sett_txn_iter_new() and sett_txn_iter_new_in().
///
/// # Safety
/// `txn`, a keyspace handle given and `opts` are NULL or live handles of this
/// library, and `iter` is NULL (refused) or writable, as sett.h requires.
pub(crate) unsafe fn iter_new(
    txn: *mut sett_txn_t,
    ks: Option<*const sett_keyspace_t>,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `iter` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(iter, std::ptr::null_mut(), "iter") }?;
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: a keyspace handle is NULL (refused) or live, as sett.h requires of the caller.
        let ks = unsafe { named(ks) }?;
        // SAFETY: `opts` is NULL (the defaults) or a live handle of this library, as sett.h requires of the caller.
        let o = unsafe { iter_options(opts) };
        let it = match ks {
            None => t.iter(o)?,
            Some(ks) => t.iter_in(ks, o)?,
        };
        // SAFETY: `iter` was checked writable (not NULL) above, as sett.h requires of out-pointers.
        unsafe { iter.write(Box::into_raw(Box::new(sett_iter_t { it }))) };
        Ok(())
    })
}

/// Begins a transaction: `update` 1 for read-write, 0 for read-only (other
/// values are SETT_INVALID_ARGUMENT). *txn receives the handle (NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_begin(
    db: *mut sett_db_t,
    update: u32,
    txn: *mut *mut sett_txn_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `txn` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(txn, std::ptr::null_mut(), "txn") }?;
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let update = flag(update, "update")?;
        let t = h.db.begin(update)?;
        // SAFETY: `txn` was checked writable (not NULL) above, as sett.h requires of out-pointers.
        unsafe { txn.write(Box::into_raw(Box::new(sett_txn_t { txn: Some(t) }))) };
        Ok(())
    })
}

/// Reads key as the transaction sees it (its snapshot plus its own writes).
/// Same contract as sett_get().
#[no_mangle]
pub unsafe extern "C" fn sett_txn_get(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { get(txn, None, Raw(key, keylen), value, err) }
}

/// Reads key with its metadata as the transaction sees it: the same contract as
/// sett_get_entry(). Any of user_meta, expires_at, version may be NULL. For a
/// key this transaction wrote itself (not yet committed), *user_meta is the
/// meta it wrote, and *version and *expires_at are 0 (both are fixed at commit).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_get_entry(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    value: *mut sett_buf_t,
    user_meta: *mut u8,
    expires_at: *mut u64,
    version: *mut u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    let out = EntryOut {
        value,
        user_meta,
        expires_at,
        version,
    };
    // SAFETY: `out` holds NULL or writable pointers, as sett.h requires.
    let op = |t: &mut Txn, _: Option<&Keyspace>, k: &[u8]| unsafe { out.fill(|| t.get_entry(k)) };
    // SAFETY: forwarded contract.
    unsafe { with_key(txn, None, Raw(key, keylen), err, op) }
}

/// Buffers a put (applied at commit).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_put(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { sett_txn_put_with(txn, key, keylen, val, vallen, 0, 0, err) }
}

/// Buffers a put with a user-meta byte and a TTL in milliseconds (0 = none).
/// SETT_TOO_BIG when the transaction would exceed its size limit (the put is not
/// taken; the transaction stays usable).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_put_with(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    user_meta: u8,
    ttl_ms: u64,
    err: *mut *mut sett_error_t,
) -> c_int {
    let opts = put_options(user_meta, ttl_ms);
    // SAFETY: forwarded contract.
    unsafe { put(txn, None, Raw(key, keylen), Raw(val, vallen), opts, err) }
}

/// Buffers a merge of `operand` into key (see sett_merge()); reads in the
/// transaction see it folded. SETT_MERGE_OPERATOR_MISSING when the database
/// has no merge operator; SETT_TOO_BIG as sett_txn_put_with() (the merge is
/// not taken either way; the transaction stays usable).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_merge(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { merge(txn, None, Raw(key, keylen), Raw(operand, operand_len), err) }
}

/// Buffers a delete.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_delete(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { delete(txn, None, Raw(key, keylen), err) }
}

/// Commits. SETT_CONFLICT when a key it read was written by a transaction that
/// committed after it began: begin a new one and retry. The transaction is
/// finished either way.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_commit(
    txn: *mut sett_txn_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live_mut(txn) }?;
        h.live()?;
        if let Some(t) = h.txn.take() {
            t.commit()?;
        }
        Ok(())
    })
}

/// Drops the buffered writes; the transaction is finished. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_discard(txn: *mut sett_txn_t) {
    // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    if let Ok(h) = unsafe { live_mut(txn) } {
        if let Some(t) = h.txn.take() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.discard()));
        }
    }
}

/// Releases a transaction handle (discarding it if still open). Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_free(txn: *mut sett_txn_t) {
    if !txn.is_null() {
        // SAFETY: txn came from sett_txn_begin and is freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `txn` is not NULL (checked above) and came from Box::into_raw here; sett.h lets a handle be freed once.
            drop(unsafe { Box::from_raw(txn) })
        }));
    }
}
