//! The operations that the default keyspace (`sett_db_t`) and a named
//! keyspace (`sett_keyspace_t`) share, written once over [`Store`]: each
//! `sett_xxx` and `sett_keyspace_xxx` export hands its handle to the function
//! of the same name here, which checks the arguments, makes the call and maps
//! its result to the status code and out-parameters.

use crate::buf::sett_buf_t;
use crate::error::{sett_error_t, FfiError, SETT_BUFFER_TOO_SMALL, SETT_NOT_FOUND, SETT_OK};
use crate::feed::{sett_bytes_t, sett_subscription_t, subscribe_with};
use crate::iter::{options as iter_options, sett_iter_options_t, sett_iter_t};
use crate::util::{bytes, guard, guard_ok, live, write_out, Handle, Raw};
use sett_core::{Item, PutOptions, Store};
use std::ffi::c_int;
use std::time::Duration;

/// A handle to an ordered map of a database: `sett_db_t` or `sett_keyspace_t`.
/// The handle type stays generic so that a NULL handle is refused under its
/// own name ("db is NULL", "keyspace is NULL").
pub(crate) trait StoreHandle: Handle {
    /// The map behind the handle.
    fn store(&self) -> &dyn Store;
}

/// Put options from the C arguments: a TTL of 0 means none.
pub(crate) fn put_options(user_meta: u8, ttl_ms: u64) -> PutOptions {
    PutOptions {
        user_meta,
        ttl: (ttl_ms > 0).then(|| Duration::from_millis(ttl_ms)),
    }
}

/// Writes a value read into an out-pointer checked writable before: SETT_OK,
/// or SETT_NOT_FOUND (the out-pointer keeps the empty buffer written then).
///
/// # Safety
/// `value` is not NULL and valid for a write (the caller's `write_out` checked it).
pub(crate) unsafe fn found(value: *mut sett_buf_t, v: Option<Vec<u8>>) -> Result<c_int, FfiError> {
    match v {
        Some(v) => {
            // SAFETY: the caller's contract above.
            unsafe { value.write(sett_buf_t::from_vec(v)) };
            Ok(SETT_OK)
        }
        None => Ok(SETT_NOT_FOUND),
    }
}

/// Runs `f` under [`guard`] on the map behind `h` and the checked key: the
/// start that every single-key operation shares.
///
/// # Safety
/// `h` is NULL or a live handle of this library, and `key` is NULL or valid
/// for its length, as sett.h requires of the exports that call it.
unsafe fn with_key<H: StoreHandle>(
    h: *const H,
    key: Raw,
    err: *mut *mut sett_error_t,
    f: impl FnOnce(&dyn Store, &[u8]) -> Result<c_int, FfiError>,
) -> c_int {
    guard(err, || {
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        // SAFETY: `key` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        let k = unsafe { key.get("key") }?;
        f(s, k)
    })
}

/// sett_put_with() and sett_keyspace_put_with().
///
/// # Safety
/// As [`with_key`], and `val` is NULL or valid for its length.
pub(crate) unsafe fn put_with<H: StoreHandle>(
    h: *const H,
    key: Raw,
    val: Raw,
    opts: PutOptions,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |s: &dyn Store, k: &[u8]| {
        // SAFETY: `val` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        s.put_with(k, unsafe { val.get("value") }?, opts)?;
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// sett_merge() and sett_keyspace_merge().
///
/// # Safety
/// As [`with_key`], and `operand` is NULL or valid for its length.
pub(crate) unsafe fn merge<H: StoreHandle>(
    h: *const H,
    key: Raw,
    operand: Raw,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |s: &dyn Store, k: &[u8]| {
        // SAFETY: `operand` is NULL (refused) or valid for its length, as sett.h requires of the caller.
        s.merge(k, unsafe { operand.get("operand") }?)?;
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// sett_delete() and sett_keyspace_delete().
///
/// # Safety
/// As [`with_key`].
pub(crate) unsafe fn delete<H: StoreHandle>(
    h: *const H,
    key: Raw,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |s: &dyn Store, k: &[u8]| {
        s.delete(k)?;
        Ok(SETT_OK)
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// sett_delete_range() and sett_keyspace_delete_range().
///
/// # Safety
/// `h` is NULL or a live handle of this library, and `start` and `end` are
/// each NULL or valid for their length, as sett.h requires.
pub(crate) unsafe fn delete_range<H: StoreHandle>(
    h: *const H,
    start: Raw,
    end: Raw,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        // SAFETY: each range end is NULL (refused) or valid for its length, as sett.h requires.
        let (start, end) = unsafe { (start.get("start")?, end.get("end")?) };
        s.delete_range(start, end)?;
        Ok(())
    })
}

/// sett_get() and sett_keyspace_get().
///
/// # Safety
/// As [`with_key`], and `value` is NULL (refused) or writable.
pub(crate) unsafe fn get<H: StoreHandle>(
    h: *const H,
    key: Raw,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |s: &dyn Store, k: &[u8]| {
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, sett_buf_t::empty(), "value") }?;
        // SAFETY: `value` was checked writable just above.
        unsafe { found(value, s.get(k)?) }
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// sett_get_into(): the value copied into the caller's buffer.
///
/// # Safety
/// As [`with_key`]; `len` is NULL (refused) or writable, and `dst` is valid
/// for writes of `cap` bytes (NULL only with `cap` 0).
pub(crate) unsafe fn get_into<H: StoreHandle>(
    h: *const H,
    key: Raw,
    dst: *mut u8,
    cap: usize,
    len: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    let op = |s: &dyn Store, k: &[u8]| {
        // SAFETY: `len` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(len, 0, "len") }?;
        if dst.is_null() && cap > 0 {
            return Err(FfiError::invalid("dst is NULL with a non-zero capacity"));
        }
        let Some(v) = s.get(k)? else {
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
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// The out-parameters of sett_get_entry() and sett_txn_get_entry(), each
/// NULL or writable (`value`: NULL is refused).
pub(crate) struct EntryOut {
    pub value: *mut sett_buf_t,
    pub user_meta: *mut u8,
    pub expires_at: *mut u64,
    pub version: *mut u64,
}

impl EntryOut {
    /// Writes the item read (SETT_OK), or SETT_NOT_FOUND for none. `read` is
    /// called once `value` is checked and set to empty.
    ///
    /// # Safety
    /// Each pointer is NULL or valid for a write, as sett.h requires.
    pub(crate) unsafe fn fill(
        self,
        read: impl FnOnce() -> sett_core::Result<Option<Item>>,
    ) -> Result<c_int, FfiError> {
        // SAFETY: `value` is NULL (refused) or writable for one value, by the contract above.
        unsafe { write_out(self.value, sett_buf_t::empty(), "value") }?;
        let Some(item) = read()? else {
            return Ok(SETT_NOT_FOUND);
        };
        // SAFETY: each out-pointer is written only when not NULL, and is writable by the contract above.
        unsafe {
            if !self.user_meta.is_null() {
                self.user_meta.write(item.user_meta);
            }
            if !self.expires_at.is_null() {
                self.expires_at.write(item.expires_at);
            }
            if !self.version.is_null() {
                self.version.write(item.version);
            }
            self.value.write(sett_buf_t::from_vec(item.value));
        }
        Ok(SETT_OK)
    }
}

/// sett_get_entry(): the value with its metadata.
///
/// # Safety
/// As [`with_key`] and [`EntryOut::fill`].
pub(crate) unsafe fn get_entry<H: StoreHandle>(
    h: *const H,
    key: Raw,
    out: EntryOut,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: `out` holds NULL or writable pointers, by this function's contract.
    let op = |s: &dyn Store, k: &[u8]| unsafe { out.fill(|| s.get_entry(k)) };
    // SAFETY: forwarded from this function's contract.
    unsafe { with_key(h, key, err, op) }
}

/// sett_multi_get(): `n` keys read at one consistent point.
///
/// # Safety
/// `h` is NULL or a live handle of this library; unless `n` is 0, each array is NULL (refused) or holds
/// `n` elements, and each key pointer is NULL or valid for its length.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn multi_get<H: StoreHandle>(
    h: *const H,
    keys: *const *const u8,
    keylens: *const usize,
    n: usize,
    values: *mut sett_buf_t,
    statuses: *mut c_int,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        if n == 0 {
            return Ok(());
        }
        if values.is_null() || statuses.is_null() {
            return Err(FfiError::invalid("values and statuses must not be NULL"));
        }
        // SAFETY: forwarded from this function's contract.
        let ks = unsafe { multi_get_keys(keys, keylens, n) }?;
        let got = s.get_many(&ks)?;
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

/// The keys of a multi-get as slices, from C's pointer and length arrays.
///
/// # Safety
/// Unless `n` is 0, `keys` and `keylens` are NULL (refused) or hold `n`
/// elements, and each key pointer is NULL or valid for its length.
unsafe fn multi_get_keys<'a>(
    keys: *const *const u8,
    keylens: *const usize,
    n: usize,
) -> Result<Vec<&'a [u8]>, FfiError> {
    if keys.is_null() || keylens.is_null() {
        return Err(FfiError::invalid("keys and keylens must not be NULL"));
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
    Ok(ks)
}

/// sett_multi_get_into(): `n` keys read at one consistent point, the values
/// found copied back to back into the caller's buffer.
///
/// # Safety
/// As [`multi_get`] for `h`, `keys` and `keylens`; unless `n` is 0, `lens`
/// and `statuses` are NULL (refused) or hold `n` elements, `needed` is NULL
/// (refused) or writable, and `dst` is valid for writes of `cap` bytes (NULL
/// only with `cap` 0).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn multi_get_into<H: StoreHandle>(
    h: *const H,
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
    guard(err, || {
        // SAFETY: `needed` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(needed, 0, "needed") }?;
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        if n == 0 {
            return Ok(SETT_OK);
        }
        if lens.is_null() || statuses.is_null() {
            return Err(FfiError::invalid("lens and statuses must not be NULL"));
        }
        if dst.is_null() && cap > 0 {
            return Err(FfiError::invalid("dst is NULL with a non-zero capacity"));
        }
        // SAFETY: forwarded from this function's contract.
        let ks = unsafe { multi_get_keys(keys, keylens, n) }?;
        let got = s.get_many(&ks)?;
        let total: usize = got.iter().flatten().map(Vec::len).sum();
        // SAFETY: `needed` was checked writable (not NULL) above.
        unsafe { needed.write(total) };
        if total > cap {
            return Err(FfiError::new(
                SETT_BUFFER_TOO_SMALL,
                format!("{n} values of {total} bytes do not fit a buffer of {cap}"),
            ));
        }
        let mut at = 0;
        for (i, v) in got.iter().enumerate() {
            let len = v.as_ref().map_or(0, Vec::len);
            // SAFETY: lens and statuses hold n elements; dst is valid for cap >= total
            // bytes and at + len <= total. An empty value copies nothing: dst
            // may be NULL (cap 0), which even a copy of no bytes must not get.
            unsafe {
                if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
                    std::ptr::copy_nonoverlapping(v.as_ptr(), dst.add(at), len);
                }
                lens.add(i).write(len);
                statuses
                    .add(i)
                    .write(if v.is_some() { SETT_OK } else { SETT_NOT_FOUND });
            }
            at += len;
        }
        Ok(SETT_OK)
    })
}

/// sett_iter_new() and sett_keyspace_iter_new().
///
/// # Safety
/// `h` and `opts` are NULL or live handles of this library, and `iter` is
/// NULL (refused) or writable, as sett.h requires.
pub(crate) unsafe fn iter_new<H: StoreHandle>(
    h: *const H,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `iter` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(iter, std::ptr::null_mut(), "iter") }?;
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        // SAFETY: `opts` is NULL (the defaults) or a live handle of this library, as sett.h requires of the caller.
        let it = s.iter(unsafe { iter_options(opts) })?;
        // SAFETY: `iter` was checked writable (not NULL) above, as sett.h requires of out-pointers.
        unsafe { iter.write(Box::into_raw(Box::new(sett_iter_t { it }))) };
        Ok(())
    })
}

/// sett_subscribe() and sett_keyspace_subscribe().
///
/// # Safety
/// `h` is NULL or a live handle of this library, and the other arguments are
/// as [`subscribe_with`] requires.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn subscribe<H: StoreHandle>(
    h: *const H,
    prefixes: *const sett_bytes_t,
    n: usize,
    from_version: u64,
    has_from: u32,
    max_pending_bytes: usize,
    sub: *mut *mut sett_subscription_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `h` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live(h) }?.store();
        // SAFETY: forwarded from this function's contract (sett.h).
        unsafe {
            subscribe_with(
                prefixes,
                n,
                from_version,
                has_from,
                max_pending_bytes,
                sub,
                |o| s.subscribe(o),
            )
        }
    })
}
