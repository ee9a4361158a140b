//! `sett_db_t`: open, close, and the point operations.

use crate::batch::sett_batch_t;
use crate::buf::sett_buf_t;
use crate::error::{sett_error_t, FfiError, SETT_BUFFER_TOO_SMALL, SETT_NOT_FOUND, SETT_OK};
use crate::options::sett_options_t;
use crate::util::{bytes, guard, guard_ok, live, path as c_path, write_out, Handle};
use sett_core::{Db, Options, PutOptions};
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// An open database. Safe to use from many threads at once. Close with
/// sett_close(), then release the handle with sett_db_free(); between the two,
/// every call on it returns SETT_CLOSED.
pub struct sett_db_t {
    pub(crate) db: Db,
}

impl Handle for sett_db_t {
    const NAME: &'static str = "db";
}

/// Put options from the C arguments: a TTL of 0 means none.
pub(crate) fn put_options(user_meta: u8, ttl_ms: u64) -> PutOptions {
    PutOptions {
        user_meta,
        ttl: (ttl_ms > 0).then(|| Duration::from_millis(ttl_ms)),
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
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `val` is NULL (refused) or points to `vallen` readable bytes, as sett.h requires of the caller.
        let v = unsafe { bytes(val, vallen, "value") }?;
        h.db.put_with(k, v, put_options(user_meta, ttl_ms))?;
        Ok(())
    })
}

/// Removes key (no error if absent).
#[no_mangle]
pub unsafe extern "C" fn sett_delete(
    db: *mut sett_db_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        h.db.delete(unsafe { bytes(key, keylen, "key") }?)?;
        Ok(())
    })
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
    guard(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        match h.db.get(k)? {
            Some(v) => {
                // SAFETY: `value` was checked writable (not NULL) above, as sett.h requires of out-pointers.
                unsafe { value.write(sett_buf_t::from_vec(v)) };
                Ok(SETT_OK)
            }
            None => Ok(SETT_NOT_FOUND),
        }
    })
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
    guard(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `len` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(len, 0, "len") }?;
        if dst.is_null() && cap > 0 {
            return Err(FfiError::invalid("dst is NULL with a non-zero capacity"));
        }
        let Some(v) = h.db.get(k)? else {
            return Ok(SETT_NOT_FOUND);
        };
        // SAFETY: len is writable (checked above).
        unsafe { len.write(v.len()) };
        if v.len() > cap {
            return Err(FfiError::new(
                SETT_BUFFER_TOO_SMALL,
                format!("value of {} bytes does not fit a buffer of {cap}", v.len()),
            ));
        }
        // SAFETY: dst is valid for cap >= v.len() bytes by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), dst, v.len()) };
        Ok(SETT_OK)
    })
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
    guard(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        let k = unsafe { bytes(key, keylen, "key") }?;
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        let Some(item) = h.db.get_entry(k)? else {
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
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        if n == 0 {
            return Ok(());
        }
        if keys.is_null() || keylens.is_null() || values.is_null() || statuses.is_null() {
            return Err(FfiError::invalid(
                "keys, keylens, values and statuses must not be NULL",
            ));
        }
        // SAFETY: each array is not NULL (checked above) and holds `n` elements, as sett.h requires.
        let (kp, kl) = unsafe {
            (
                std::slice::from_raw_parts(keys, n),
                std::slice::from_raw_parts(keylens, n),
            )
        };
        let mut ks = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `kp[i]` is NULL (refused) or points to `kl[i]` readable bytes, as sett.h requires of the caller.
            ks.push(unsafe { bytes(kp[i], kl[i], "key") }?);
        }
        let got = h.db.get_many(&ks)?;
        for (i, v) in got.into_iter().enumerate() {
            // SAFETY: values and statuses hold n elements.
            unsafe {
                let found = v.is_some();
                values
                    .add(i)
                    .write(v.map_or_else(sett_buf_t::empty, sett_buf_t::from_vec));
                statuses
                    .add(i)
                    .write(if found { SETT_OK } else { SETT_NOT_FOUND });
            }
        }
        Ok(())
    })
}
