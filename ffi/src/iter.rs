//! `sett_iter_t`: iterators over a database or a transaction.

use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError, SETT_BUFFER_TOO_SMALL, SETT_OK};
use crate::store;
use crate::txn::{self, sett_txn_t};
use crate::util::{bytes, flag, guard, guard_ok, live, live_mut, write_out, Handle};
use sett_core::{DbIterator, IterOptions};
use std::ffi::c_int;

/// What an iterator walks. One thread at a time.
pub struct sett_iter_options_t {
    opts: IterOptions,
}

impl Handle for sett_iter_options_t {
    const NAME: &'static str = "opts";
}

/// An iterator over a snapshot. One thread at a time. It stays memory-safe
/// after its database is closed or freed: moving it then returns SETT_CLOSED.
pub struct sett_iter_t {
    pub(crate) it: DbIterator,
}

impl Handle for sett_iter_t {
    const NAME: &'static str = "iter";
}

/// New iterator options: whole key space, forward, with values, prefetch 256.
#[no_mangle]
pub extern "C" fn sett_iter_options_new() -> *mut sett_iter_options_t {
    Box::into_raw(Box::new(sett_iter_options_t {
        opts: IterOptions::default(),
    }))
}

/// Frees iterator options. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_free(opts: *mut sett_iter_options_t) {
    if !opts.is_null() {
        // SAFETY: opts came from sett_iter_options_new and is freed once.
        drop(unsafe { Box::from_raw(opts) });
    }
}

fn with_opts(
    opts: *mut sett_iter_options_t,
    f: impl FnOnce(&mut IterOptions) -> Result<(), FfiError>,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        f(&mut unsafe { live_mut(opts) }?.opts)?;
        Ok(SETT_OK)
    })
}

/// Only keys starting with `prefix` (copied; length 0 clears it).
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_set_prefix(
    opts: *mut sett_iter_options_t,
    prefix: *const u8,
    len: usize,
) -> c_int {
    with_opts(opts, |o| {
        // SAFETY: valid byte range (contract in sett.h).
        let p = unsafe { bytes(prefix, len, "prefix") }?;
        o.prefix = (!p.is_empty()).then(|| p.to_vec());
        Ok(())
    })
}

/// Only keys in [start, end); a length of 0 leaves that side open.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_set_bounds(
    opts: *mut sett_iter_options_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
) -> c_int {
    with_opts(opts, |o| {
        // SAFETY: valid byte ranges (contract in sett.h).
        let s = unsafe { bytes(start, start_len, "start") }?;
        // SAFETY: `end` is NULL (refused) or points to `end_len` readable bytes, as sett.h requires of the caller.
        let e = unsafe { bytes(end, end_len, "end") }?;
        o.start = (!s.is_empty()).then(|| s.to_vec());
        o.end = (!e.is_empty()).then(|| e.to_vec());
        Ok(())
    })
}

/// 1: walk from the largest key down; 0 (default): up.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_set_reverse(
    opts: *mut sett_iter_options_t,
    value: u32,
) -> c_int {
    with_opts(opts, |o| {
        o.reverse = flag(value, "reverse")?;
        Ok(())
    })
}

/// 1: keys only, the value log is never read; 0 (default): with values.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_set_keys_only(
    opts: *mut sett_iter_options_t,
    value: u32,
) -> c_int {
    with_opts(opts, |o| {
        o.keys_only = flag(value, "keys_only")?;
        Ok(())
    })
}

/// How many items ahead values are read (at least 1; default 256).
#[no_mangle]
pub unsafe extern "C" fn sett_iter_options_set_prefetch(
    opts: *mut sett_iter_options_t,
    value: u32,
) -> c_int {
    with_opts(opts, |o| {
        if value == 0 {
            return Err(FfiError::invalid("prefetch must be at least 1"));
        }
        o.prefetch = value as usize;
        Ok(())
    })
}

/// The iterator options behind `opts`; NULL means the defaults.
///
/// # Safety
/// `opts` is NULL or a live options handle (see [`live`]).
pub(crate) unsafe fn options(opts: *const sett_iter_options_t) -> IterOptions {
    // SAFETY: the caller's contract above.
    unsafe { live(opts) }.map_or_else(|_| IterOptions::default(), |o| o.opts.clone())
}

/// A new iterator over a snapshot of the database taken now, positioned on the
/// first entry. `opts` may be NULL. Free with sett_iter_free().
#[no_mangle]
pub unsafe extern "C" fn sett_iter_new(
    db: *mut sett_db_t,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::iter_new(db, opts, iter, err) }
}

/// A new iterator over a transaction's view (its snapshot plus its writes).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_iter_new(
    txn: *mut sett_txn_t,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { txn::iter_new(txn, None, opts, iter, err) }
}

/// 1 while the iterator is on an entry, 0 at the end (or for NULL).
#[no_mangle]
pub unsafe extern "C" fn sett_iter_valid(iter: *const sett_iter_t) -> c_int {
    // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    c_int::from(unsafe { live(iter) }.is_ok_and(|i| i.it.valid()))
}

/// The current key: *key points into the iterator (valid until it moves or is
/// freed), *len its length. {NULL, 0} when not valid.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_key(
    iter: *const sett_iter_t,
    key: *mut *const u8,
    len: *mut usize,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let i = unsafe { live(iter) }?;
        let k = i.it.key();
        // SAFETY: `key` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(key, view_ptr(k), "key") }?;
        // SAFETY: `len` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(len, k.len(), "len") }?;
        Ok(SETT_OK)
    })
}

/// The current value, as sett_iter_key() (empty in keys-only mode).
#[no_mangle]
pub unsafe extern "C" fn sett_iter_value(
    iter: *const sett_iter_t,
    value: *mut *const u8,
    len: *mut usize,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let i = unsafe { live(iter) }?;
        let v = i.it.value();
        // SAFETY: `value` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(value, view_ptr(v), "value") }?;
        // SAFETY: `len` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(len, v.len(), "len") }?;
        Ok(SETT_OK)
    })
}

/// Moves to the next entry.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_next(
    iter: *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live_mut(iter) }?.it.advance()?;
        Ok(())
    })
}

/// Moves to the first key >= key (reverse: the last key <= key) within bounds.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_seek(
    iter: *mut sett_iter_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let i = unsafe { live_mut(iter) }?;
        // SAFETY: `key` is NULL (refused) or points to `keylen` readable bytes, as sett.h requires of the caller.
        i.it.seek(unsafe { bytes(key, keylen, "key") }?)?;
        Ok(())
    })
}

/// Moves back to the first entry (reverse: the last).
#[no_mangle]
pub unsafe extern "C" fn sett_iter_rewind(
    iter: *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live_mut(iter) }?.it.rewind()?;
        Ok(())
    })
}

/// Copies as many entries as fit into `buf` (`cap` bytes), starting at the
/// current one, and moves past them: one call for many items. Each entry is
/// `u32 key length (little-endian) | u32 value length | key | value`.
/// *count receives the number of entries, *used the bytes written. At the end
/// of the iteration: SETT_OK with *count 0. SETT_BUFFER_TOO_SMALL when not even
/// the current entry fits: *used then holds the size it needs.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_next_batch(
    iter: *mut sett_iter_t,
    buf: *mut u8,
    cap: usize,
    count: *mut usize,
    used: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard(err, || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let i = unsafe { live_mut(iter) }?;
        // SAFETY: `count` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(count, 0, "count") }?;
        // SAFETY: `used` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(used, 0, "used") }?;
        if buf.is_null() && cap > 0 {
            return Err(FfiError::invalid("buf is NULL with a non-zero capacity"));
        }
        let mut n = 0usize;
        let mut at = 0usize;
        while i.it.valid() {
            let (k, v) = (i.it.key(), i.it.value());
            let need = 8 + k.len() + v.len();
            if at + need > cap {
                if n == 0 {
                    // SAFETY: `used` was checked writable (not NULL) above, as sett.h requires of out-pointers.
                    unsafe { used.write(need) };
                    return Err(FfiError::new(
                        SETT_BUFFER_TOO_SMALL,
                        format!("the next entry needs {need} bytes, the buffer holds {cap}"),
                    ));
                }
                break;
            }
            // SAFETY: buf is valid for cap bytes and at + need <= cap.
            unsafe {
                let dst = buf.add(at);
                std::ptr::copy_nonoverlapping((k.len() as u32).to_le_bytes().as_ptr(), dst, 4);
                std::ptr::copy_nonoverlapping(
                    (v.len() as u32).to_le_bytes().as_ptr(),
                    dst.add(4),
                    4,
                );
                std::ptr::copy_nonoverlapping(k.as_ptr(), dst.add(8), k.len());
                std::ptr::copy_nonoverlapping(v.as_ptr(), dst.add(8 + k.len()), v.len());
            }
            at += need;
            n += 1;
            i.it.advance()?;
        }
        // SAFETY: out-pointers checked above.
        unsafe {
            count.write(n);
            used.write(at);
        }
        Ok(SETT_OK)
    })
}

/// One entry lent by `sett_iter_next_view`: its key and value where the
/// iterator holds them. An empty key or value is NULL with length 0.
#[repr(C)]
pub struct sett_entry_view_t {
    pub key: *const u8,
    pub key_len: usize,
    pub value: *const u8,
    pub value_len: usize,
}

/// `bytes` as a pointer for C: NULL when empty (a Rust empty slice points
/// nowhere in particular).
fn view_ptr(bytes: &[u8]) -> *const u8 {
    if bytes.is_empty() {
        std::ptr::null()
    } else {
        bytes.as_ptr()
    }
}

/// Lends up to `cap` entries, starting at the current one, into `views`
/// without copying them, and moves past them: one call for many items, as
/// sett_iter_next_batch, without its copy. *count receives the number of
/// entries; at the end of the iteration: SETT_OK with *count 0. The bytes the
/// views point to stay valid until the next call that moves the iterator
/// (sett_iter_next, sett_iter_next_batch, sett_iter_next_view,
/// sett_iter_seek, sett_iter_rewind) or frees it. An error met after the
/// first entry is returned by the next call: no entry is lost.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_next_view(
    iter: *mut sett_iter_t,
    views: *mut sett_entry_view_t,
    cap: usize,
    count: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard(err, || {
        // SAFETY: `iter` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let i = unsafe { live_mut(iter) }?;
        // SAFETY: `count` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(count, 0, "count") }?;
        if views.is_null() || cap == 0 {
            return Err(FfiError::invalid("views is NULL or cap is 0"));
        }
        let mut n = 0usize;
        i.it.lend(cap, |k, v| {
            let view = sett_entry_view_t {
                key: view_ptr(k),
                key_len: k.len(),
                value: view_ptr(v),
                value_len: v.len(),
            };
            // SAFETY: `views` is valid for `cap` entries (sett.h) and `lend`
            // hands out at most `cap`, so `n < cap` here.
            unsafe { views.add(n).write(view) };
            n += 1;
        })?;
        // SAFETY: `count` was checked writable above.
        unsafe { count.write(n) };
        Ok(SETT_OK)
    })
}

/// Frees an iterator. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_iter_free(iter: *mut sett_iter_t) {
    if !iter.is_null() {
        // SAFETY: iter came from sett_iter_new/sett_txn_iter_new and is freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: `iter` is not NULL (checked above) and came from Box::into_raw here; sett.h lets a handle be freed once.
            drop(unsafe { Box::from_raw(iter) })
        }));
    }
}
