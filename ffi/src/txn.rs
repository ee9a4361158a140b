//! `sett_txn_t`: transactions.

use crate::buf::sett_buf_t;
use crate::db::{put_options, sett_db_t};
use crate::error::{sett_error_t, FfiError, SETT_NOT_FOUND, SETT_OK};
use crate::util::{bytes, flag, guard, guard_ok, live, live_mut, write_out, Handle};
use sett_core::Txn;
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
    guard(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        match t.get(k)? {
            Some(v) => {
                // SAFETY: `value` was checked writable (not NULL) above, as sett.h requires of out-pointers.
                unsafe { value.write(sett_buf_t::from_vec(v)) };
                Ok(SETT_OK)
            }
            None => Ok(SETT_NOT_FOUND),
        }
    })
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
    guard(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        let Some(item) = t.get_entry(k)? else {
            return Ok(SETT_NOT_FOUND);
        };
        // SAFETY: each out-pointer is written only when not NULL, and sett.h requires it writable.
        unsafe {
            if !user_meta.is_null() {
                user_meta.write(item.user_meta);
            }
            if !expires_at.is_null() {
                expires_at.write(item.expires_at);
            }
            if !version.is_null() {
                version.write(item.version);
            }
            value.write(sett_buf_t::from_vec(item.value));
        }
        Ok(SETT_OK)
    })
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
    guard_ok(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `val` is NULL (refused) or points to `vallen` readable bytes, as sett.h requires of the caller.
        let v = unsafe { bytes(val, vallen, "value") }?;
        t.set_with(k, v, put_options(user_meta, ttl_ms))?;
        Ok(())
    })
}

/// Buffers a delete.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_delete(
    txn: *mut sett_txn_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        t.delete(unsafe { bytes(key, keylen, "key") }?)?;
        Ok(())
    })
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
