//! `sett_db_t`: open, close, and the point operations.

use crate::batch::sett_batch_t;
use crate::buf::sett_buf_t;
use crate::error::{sett_error_t, FfiError};
use crate::options::sett_options_t;
use crate::store::{self, put_options, EntryOut, StoreHandle};
use crate::util::{guard_ok, live, path as c_path, Handle, Raw};
use sett_core::{Db, Options, Store};
use std::ffi::{c_char, c_int};

/// An open database. Safe to use from many threads at once. Close with
/// sett_close(), then release the handle with sett_db_free(); between the two,
/// every call on it returns SETT_CLOSED.
pub struct sett_db_t {
    pub(crate) db: Db,
}

impl Handle for sett_db_t {
    const NAME: &'static str = "db";
}

impl StoreHandle for sett_db_t {
    fn store(&self) -> &dyn Store {
        &self.db
    }
}

/// Opens (or creates) the database in directory `path`. `opts` may be NULL for
/// the defaults (it is not taken: free it after). On success *db receives a
/// handle; on failure *db is set to NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_open(
    path: *const c_char,
    opts: *const sett_options_t,
    db: *mut *mut sett_db_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        if db.is_null() {
            return Err(FfiError::invalid("db out-pointer is NULL"));
        }
        // SAFETY: db is non-NULL and valid for writes (contract in sett.h).
        unsafe { db.write(std::ptr::null_mut()) };
        // SAFETY: `path` is NULL (refused) or NUL-terminated, as sett.h requires.
        let dir = unsafe { c_path(path, "path") }?;
        // NULL options mean the defaults.
        let mut o = if opts.is_null() {
            Options::new("")
        } else {
            // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
            unsafe { live(opts) }?.opts.clone()
        };
        o.dir = dir.into();
        let handle = Box::new(sett_db_t { db: Db::open(o)? });
        // SAFETY: as above.
        unsafe { db.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Flushes and closes the database and releases its directory. The handle stays
/// valid (calls return SETT_CLOSED) until sett_db_free(). Closing twice is OK.
#[no_mangle]
pub unsafe extern "C" fn sett_close(db: *mut sett_db_t, err: *mut *mut sett_error_t) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        h.db.close()?;
        Ok(())
    })
}

/// Releases a handle, closing the database first if needed. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_db_free(db: *mut sett_db_t) {
    if !db.is_null() {
        // SAFETY: db came from sett_open and is freed once; a panic while
        // closing must not cross into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `db` is not NULL (checked above) and came from Box::into_raw here; sett.h lets a handle be freed once.
            drop(unsafe { Box::from_raw(db) })
        }));
    }
}

/// Stores key → value.
#[no_mangle]
pub unsafe extern "C" fn sett_put(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { sett_put_with(db, key, keylen, val, vallen, 0, 0, err) }
}

/// Stores key → value with a user-meta byte and a time to live in milliseconds
/// (0 = none; rounded up to whole seconds).
#[no_mangle]
pub unsafe extern "C" fn sett_put_with(
    db: *mut sett_db_t,
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
    unsafe { store::put_with(db, Raw(key, keylen), Raw(val, vallen), opts, err) }
}

/// Merges `operand` into key with the database's merge operator (see
/// sett_options_set_merge_operator()): one write, without reading the key;
/// reads fold the operands onto the key's value. SETT_MERGE_OPERATOR_MISSING
/// when the database has no merge operator (nothing is written).
#[no_mangle]
pub unsafe extern "C" fn sett_merge(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::merge(db, Raw(key, keylen), Raw(operand, operand_len), err) }
}

/// Removes key (no error if absent).
#[no_mangle]
pub unsafe extern "C" fn sett_delete(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::delete(db, Raw(key, keylen), err) }
}

/// Reads key. SETT_OK: *value holds a copy (free with sett_buf_free()).
/// SETT_NOT_FOUND: *value is {NULL, 0}. `value` must not be NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_get(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::get(db, Raw(key, keylen), value, err) }
}

/// Reads key into the caller's buffer `dst` of `cap` bytes (no allocation).
/// *len receives the value's length. SETT_BUFFER_TOO_SMALL when it exceeds
/// `cap` (nothing is copied; call again with *len bytes). `dst` may be NULL when
/// `cap` is 0.
#[no_mangle]
pub unsafe extern "C" fn sett_get_into(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    dst: *mut u8,
    cap: usize,
    len: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::get_into(db, Raw(key, keylen), dst, cap, len, err) }
}

/// Reads key with its metadata: user meta, expiry (unix seconds, 0 = never) and
/// version. Any of user_meta, expires_at, version may be NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_get_entry(
    db: *mut sett_db_t,
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
    // SAFETY: forwarded contract.
    unsafe { store::get_entry(db, Raw(key, keylen), out, err) }
}

/// Applies a batch atomically. The batch is not consumed (clear or free it after).
#[no_mangle]
pub unsafe extern "C" fn sett_write(
    db: *mut sett_db_t,
    batch: *const sett_batch_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `batch` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let b = unsafe { live(batch) }?;
        h.db.write(b.batch.clone())?;
        Ok(())
    })
}

/// Reads `n` keys at one consistent point in one call. `values[i]` receives a
/// copy (free each with sett_buf_free()) and `statuses[i]` SETT_OK or
/// SETT_NOT_FOUND. The return value is SETT_OK unless the whole call failed.
#[no_mangle]
pub unsafe extern "C" fn sett_multi_get(
    db: *mut sett_db_t,
    keys: *const *const u8,
    keylens: *const usize,
    n: usize,
    values: *mut sett_buf_t,
    statuses: *mut c_int,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::multi_get(db, keys, keylens, n, values, statuses, err) }
}

/// Reads `n` keys at one consistent point in one call, copying the values
/// found back to back into the caller's buffer `dst` of `cap` bytes (no
/// allocation per value). `lens[i]` receives the length of key i's value (0
/// when absent) and `statuses[i]` SETT_OK or SETT_NOT_FOUND; value i starts
/// where value i-1 ends. *needed receives the bytes all the values take:
/// SETT_BUFFER_TOO_SMALL when that exceeds `cap` (nothing is copied; call
/// again with a buffer of *needed bytes, which reads the keys anew). `dst`
/// may be NULL when `cap` is 0.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sett_multi_get_into(
    db: *mut sett_db_t,
    keys: *const *const u8,
    keylens: *const usize,
    n: usize,
    dst: *mut u8,
    cap: usize,
    lens: *mut usize,
    statuses: *mut c_int,
    needed: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::multi_get_into(db, keys, keylens, n, dst, cap, lens, statuses, needed, err) }
}
