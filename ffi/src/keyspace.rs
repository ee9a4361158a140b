//! `sett_keyspace_t`: keyspaces (column families), their point operations,
//! iterators, and their batch and transaction variants.

use crate::batch::{self, sett_batch_t};
use crate::buf::sett_buf_t;
use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError, SETT_OK};
use crate::feed::{sett_bytes_t, sett_subscription_t};
use crate::iter::{sett_iter_options_t, sett_iter_t};
use crate::options::{compression, compression_code, SETT_COMPRESSION_INHERIT};
use crate::store::{self, put_options, StoreHandle};
use crate::txn::{self, sett_txn_t};
use crate::util::{guard, guard_ok, live, live_mut, path as c_str, write_out, Handle, Raw};
use sett_core::{Keyspace, KeyspaceOptions, PutOptions, Store};
use std::ffi::{c_char, c_int};
use std::time::Duration;

/// A keyspace of an open database: an ordered map of its own (RocksDB's
/// column family). Safe to use from many threads at once. Release it with
/// sett_keyspace_close() (which does not drop the keyspace); calls on it
/// after its database is closed return SETT_CLOSED, and after
/// sett_drop_keyspace() SETT_INVALID_ARGUMENT.
pub struct sett_keyspace_t {
    ks: Keyspace,
}

impl Handle for sett_keyspace_t {
    const NAME: &'static str = "keyspace";
}

impl StoreHandle for sett_keyspace_t {
    fn store(&self) -> &dyn Store {
        &self.ks
    }
}

/// The keyspace a batch or transaction call acts on: `None` for the
/// default keyspace (the calls without `_in`), else the named one behind
/// the handle.
///
/// # Safety
/// A handle given is NULL (refused) or a live handle of this library, and the
/// reference does not outlive the exported call it is made in.
pub(crate) unsafe fn named<'a>(
    ks: Option<*const sett_keyspace_t>,
) -> Result<Option<&'a Keyspace>, FfiError> {
    match ks {
        None => Ok(None),
        // SAFETY: the caller's contract above.
        Some(p) => Ok(Some(&unsafe { live(p) }?.ks)),
    }
}

/// Options of a keyspace, given when it is created. One thread at a time.
pub struct sett_keyspace_options_t {
    opts: KeyspaceOptions,
}

impl Handle for sett_keyspace_options_t {
    const NAME: &'static str = "opts";
}

/// New keyspace options: the database's value threshold and compression,
/// no default TTL.
/// Free with sett_keyspace_options_free().
#[no_mangle]
pub extern "C" fn sett_keyspace_options_new() -> *mut sett_keyspace_options_t {
    Box::into_raw(Box::new(sett_keyspace_options_t {
        opts: KeyspaceOptions::default(),
    }))
}

/// Frees keyspace options. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_options_free(opts: *mut sett_keyspace_options_t) {
    if !opts.is_null() {
        // SAFETY: opts came from sett_keyspace_options_new and is freed once.
        drop(unsafe { Box::from_raw(opts) });
    }
}

/// Values of at least this many bytes written to the keyspace go to the value
/// log (1..=1048576, checked at sett_keyspace_open; 0: the database's).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_options_set_value_threshold(
    opts: *mut sett_keyspace_options_t,
    value: usize,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live_mut(opts) }?.opts.value_threshold = (value > 0).then_some(value);
        Ok(SETT_OK)
    })
}

/// The TTL of puts to the keyspace that give none, in milliseconds (rounded
/// up to whole seconds; 0: none).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_options_set_default_ttl(
    opts: *mut sett_keyspace_options_t,
    ttl_ms: u64,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        unsafe { live_mut(opts) }?.opts.default_ttl =
            (ttl_ms > 0).then(|| Duration::from_secs(ttl_ms.div_ceil(1000)));
        Ok(SETT_OK)
    })
}

/// The codec of every table block holding the keyspace's keys, on every
/// level: SETT_COMPRESSION_NONE, _LZ4 or _ZSTD (zstd at the database's
/// sett_options_set_zstd_level()), or SETT_COMPRESSION_INHERIT (the
/// default) for the database's per-level choice. Any other value is
/// SETT_INVALID_ARGUMENT and leaves the options as they were.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_options_set_compression(
    opts: *mut sett_keyspace_options_t,
    value: c_int,
) -> c_int {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let o = unsafe { live_mut(opts) }?;
        o.opts.compression = match value {
            SETT_COMPRESSION_INHERIT => None,
            v => Some(compression(v)?),
        };
        Ok(SETT_OK)
    })
}

/// The keyspace's codec in force: a SETT_COMPRESSION_* value, or
/// SETT_COMPRESSION_INHERIT when it uses the database's (also for NULL).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_compression(ks: *const sett_keyspace_t) -> c_int {
    // SAFETY: `ks` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    unsafe { live(ks) }
        .ok()
        .and_then(|k| k.ks.options().compression)
        .map_or(SETT_COMPRESSION_INHERIT, compression_code)
}

/// Opens keyspace `name` (NUL-terminated UTF-8, 1..=255 bytes), creating it
/// with `opts` if it does not exist. `opts` may be NULL: for an existing
/// keyspace that keeps its recorded options (other options replace them).
/// *ks receives a handle (NULL on failure). A read-only database opens
/// existing keyspaces only (SETT_READ_ONLY).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_open(
    db: *mut sett_db_t,
    name: *const c_char,
    opts: *const sett_keyspace_options_t,
    ks: *mut *mut sett_keyspace_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `ks` is NULL (refused) or writable for one pointer, as sett.h requires.
        unsafe { write_out(ks, std::ptr::null_mut(), "ks") }?;
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `name` is NULL (refused) or NUL-terminated, as sett.h requires.
        let name = unsafe { c_str(name, "name") }?;
        let o = if opts.is_null() {
            KeyspaceOptions::default()
        } else {
            // SAFETY: `opts` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
            unsafe { live(opts) }?.opts
        };
        let handle = Box::new(sett_keyspace_t {
            ks: h.db.keyspace(name, o)?,
        });
        // SAFETY: `ks` was checked writable above.
        unsafe { ks.write(Box::into_raw(handle)) };
        Ok(())
    })
}

/// Releases a keyspace handle (the keyspace and its data stay). Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_close(ks: *mut sett_keyspace_t) {
    if !ks.is_null() {
        // SAFETY: ks came from sett_keyspace_open and is released once.
        drop(unsafe { Box::from_raw(ks) });
    }
}

/// The keyspace's id (its keys are stored under FF FF FF FF | id as 4
/// big-endian bytes); 0 for NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_id(ks: *const sett_keyspace_t) -> u32 {
    // SAFETY: `ks` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    unsafe { live(ks) }.map_or(0, |k| k.ks.id())
}

/// Drops keyspace `name`: its catalog record and all its keys go in one
/// atomic write (a range tombstone: O(1), writers go on; compaction
/// reclaims the space). Its handles fail from then on. SETT_NOT_FOUND
/// (with *err set) when there is no such keyspace.
#[no_mangle]
pub unsafe extern "C" fn sett_drop_keyspace(
    db: *mut sett_db_t,
    name: *const c_char,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: `name` is NULL (refused) or NUL-terminated, as sett.h requires.
        let name = unsafe { c_str(name, "name") }?;
        h.db.drop_keyspace(name)?;
        Ok(())
    })
}

/// The names of the database's keyspaces in byte order: *names receives each
/// name followed by a NUL byte, back to back (free with sett_buf_free()),
/// *count how many there are.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_names(
    db: *mut sett_db_t,
    names: *mut sett_buf_t,
    count: *mut usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `names` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(names, sett_buf_t::empty(), "names") }?;
        // SAFETY: `count` is NULL (refused) or writable for one value, as sett.h requires.
        unsafe { write_out(count, 0, "count") }?;
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        let list = h.db.keyspaces()?;
        let mut out = Vec::new();
        for n in &list {
            out.extend_from_slice(n.as_bytes());
            out.push(0);
        }
        // SAFETY: both were checked writable above.
        unsafe {
            names.write(sett_buf_t::from_vec(out));
            count.write(list.len());
        }
        Ok(())
    })
}

/// Stores key → value in the keyspace (with its default TTL, if any).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_put(
    ks: *mut sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { sett_keyspace_put_with(ks, key, keylen, val, vallen, 0, 0, err) }
}

/// Stores key → value in the keyspace with a user-meta byte and a TTL in
/// milliseconds (0: the keyspace's default TTL, if any).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_put_with(
    ks: *mut sett_keyspace_t,
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
    unsafe { store::put_with(ks, Raw(key, keylen), Raw(val, vallen), opts, err) }
}

/// Merges `operand` into key of the keyspace. Same contract as sett_merge().
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_merge(
    ks: *mut sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::merge(ks, Raw(key, keylen), Raw(operand, operand_len), err) }
}

/// Reads key from the keyspace. Same contract as sett_get().
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_get(
    ks: *mut sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::get(ks, Raw(key, keylen), value, err) }
}

/// Reads `n` keys of the keyspace at one consistent point in one call. Same
/// contract as sett_multi_get().
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_multi_get(
    ks: *mut sett_keyspace_t,
    keys: *const *const u8,
    keylens: *const usize,
    n: usize,
    values: *mut sett_buf_t,
    statuses: *mut c_int,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::multi_get(ks, keys, keylens, n, values, statuses, err) }
}

/// Reads `n` keys of the keyspace at one consistent point into the caller's
/// buffer. Same contract as sett_multi_get_into().
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sett_keyspace_multi_get_into(
    ks: *mut sett_keyspace_t,
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
    unsafe { store::multi_get_into(ks, keys, keylens, n, dst, cap, lens, statuses, needed, err) }
}

/// Removes key from the keyspace (no error if absent).
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_delete(
    ks: *mut sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::delete(ks, Raw(key, keylen), err) }
}

/// Deletes every key of the keyspace in [start, end) with one range
/// tombstone, as sett_delete_range(); an empty `end` is the keyspace's end.
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_delete_range(
    ks: *mut sett_keyspace_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::delete_range(ks, Raw(start, start_len), Raw(end, end_len), err) }
}

/// A new iterator over a snapshot of the keyspace taken now; prefix and
/// bounds of `opts` (may be NULL) are in the keyspace's keys, and keys come
/// back as they were put. Free with sett_iter_free().
#[no_mangle]
pub unsafe extern "C" fn sett_keyspace_iter_new(
    ks: *mut sett_keyspace_t,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { store::iter_new(ks, opts, iter, err) }
}

/// Adds a put in keyspace `ks` to the batch (with its default TTL, if any);
/// one batch may write several keyspaces and the default one atomically.
/// The batch refers to the keyspace by id: writing it after the keyspace is
/// dropped fails whole.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_put_in(
    batch: *mut sett_batch_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
) -> c_int {
    let opts = PutOptions::default();
    // SAFETY: forwarded contract.
    unsafe { batch::put(batch, Some(ks), Raw(key, keylen), Raw(val, vallen), opts) }
}

/// Adds a merge in keyspace `ks` to the batch (see sett_batch_merge()).
#[no_mangle]
pub unsafe extern "C" fn sett_batch_merge_in(
    batch: *mut sett_batch_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { batch::merge(batch, Some(ks), Raw(key, keylen), Raw(operand, operand_len)) }
}

/// Adds a delete in keyspace `ks` to the batch.
#[no_mangle]
pub unsafe extern "C" fn sett_batch_delete_in(
    batch: *mut sett_batch_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { batch::delete(batch, Some(ks), Raw(key, keylen)) }
}

/// Adds a delete of every key of keyspace `ks` in [start, end) to the batch
/// (an empty `end` is the keyspace's end).
#[no_mangle]
pub unsafe extern "C" fn sett_batch_delete_range_in(
    batch: *mut sett_batch_t,
    ks: *const sett_keyspace_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { batch::delete_range(batch, Some(ks), Raw(start, start_len), Raw(end, end_len)) }
}

/// Reads key of keyspace `ks` as the transaction sees it. Same contract as
/// sett_get().
#[no_mangle]
pub unsafe extern "C" fn sett_txn_get_in(
    txn: *mut sett_txn_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    value: *mut sett_buf_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { txn::get(txn, Some(ks), Raw(key, keylen), value, err) }
}

/// Buffers a put in keyspace `ks` (applied at commit, atomically with the
/// transaction's other writes in any keyspace).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_put_in(
    txn: *mut sett_txn_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    val: *const u8,
    vallen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    let opts = PutOptions::default();
    // SAFETY: forwarded contract.
    unsafe { txn::put(txn, Some(ks), Raw(key, keylen), Raw(val, vallen), opts, err) }
}

/// Buffers a merge in keyspace `ks` (see sett_txn_merge()).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_merge_in(
    txn: *mut sett_txn_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    operand: *const u8,
    operand_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        txn::merge(
            txn,
            Some(ks),
            Raw(key, keylen),
            Raw(operand, operand_len),
            err,
        )
    }
}

/// Buffers a delete in keyspace `ks`.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_delete_in(
    txn: *mut sett_txn_t,
    ks: *const sett_keyspace_t,
    key: *const u8,
    keylen: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { txn::delete(txn, Some(ks), Raw(key, keylen), err) }
}

/// A new iterator over keyspace `ks` as the transaction sees it (keys as
/// sett_keyspace_iter_new() returns them). Free with sett_iter_free().
#[no_mangle]
pub unsafe extern "C" fn sett_txn_iter_new_in(
    txn: *mut sett_txn_t,
    ks: *const sett_keyspace_t,
    opts: *const sett_iter_options_t,
    iter: *mut *mut sett_iter_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { txn::iter_new(txn, Some(ks), opts, iter, err) }
}

/// Subscribes to the changes of keyspace `ks`, as sett_subscribe(): the
/// prefixes are in the keyspace's keys, and delivered keys come without the
/// keyspace's prefix. A range delete's end is empty when it is the
/// keyspace's end (a drop of the keyspace is one range delete from "" to "").
/// Database subscriptions never see keyspace changes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sett_keyspace_subscribe(
    ks: *mut sett_keyspace_t,
    prefixes: *const sett_bytes_t,
    n: usize,
    from_version: u64,
    has_from: u32,
    max_pending_bytes: usize,
    sub: *mut *mut sett_subscription_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    // SAFETY: forwarded contract.
    unsafe {
        store::subscribe(
            ks,
            prefixes,
            n,
            from_version,
            has_from,
            max_pending_bytes,
            sub,
            err,
        )
    }
}
