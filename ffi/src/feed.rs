//! The change feed: sett_subscribe(), sett_subscription_next(),
//! sett_changes_free(), sett_subscription_close(), sett_last_version().

use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError};
use crate::store;
use crate::util::{bytes, guard_ok, live, live_mut, write_out, Handle};
use sett_core::{ChangeKind, SubscribeOptions, Subscription};
use std::ffi::c_int;
use std::time::Duration;

/// A change that put a value (sett_change_t.kind).
pub const SETT_CHANGE_PUT: u32 = 0;
/// A change that deleted its key (sett_change_t.kind); its value is empty.
pub const SETT_CHANGE_DELETE: u32 = 1;
/// A range delete (sett_change_t.kind): every key in [key, value) was
/// deleted (an empty value: no upper bound). A subscriber to prefixes gets
/// it when the range meets one of them, with the whole range.
pub const SETT_CHANGE_DELETE_RANGE: u32 = 2;
/// A merge (sett_change_t.kind): the value is the operand written, not the
/// key's new value (sett_get() reads that).
pub const SETT_CHANGE_MERGE: u32 = 3;

/// A live subscription to the change feed, from sett_subscribe(). Use it from
/// one thread at a time; close it with sett_subscription_close() (not while
/// another thread is in sett_subscription_next() on it).
pub struct sett_subscription_t {
    sub: Subscription,
}

impl Handle for sett_subscription_t {
    const NAME: &'static str = "sub";
}

/// Bytes the caller passes: a pointer and a length (NULL allowed with length 0).
#[repr(C)]
pub struct sett_bytes_t {
    /// The first byte.
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
}

/// One committed write. `key` and `value` point into the sett_changes_t that
/// holds it and are valid until sett_changes_free().
#[repr(C)]
pub struct sett_change_t {
    /// SETT_CHANGE_PUT, SETT_CHANGE_DELETE, SETT_CHANGE_DELETE_RANGE or
    /// SETT_CHANGE_MERGE; later versions may add kinds: skip kinds you do not know.
    pub kind: u32,
    /// The user-meta byte of a put (0 for a delete).
    pub user_meta: u8,
    /// The key written.
    pub key: *const u8,
    /// Its length.
    pub key_len: usize,
    /// The value put (NULL with length 0 for a delete or an empty value);
    /// the end of a range delete (NULL with length 0: no upper bound).
    pub value: *const u8,
    /// Its length.
    pub value_len: usize,
    /// The write's version; every op of one batch or transaction shares it.
    pub version: u64,
    /// When the put expires, in unix seconds; 0 = never.
    pub expires_at: u64,
}

/// Changes returned by sett_subscription_next(), in version order, owned by
/// the caller: free them with sett_changes_free(). `len` is 0 (and `items`
/// NULL) when the wait timed out.
#[repr(C)]
pub struct sett_changes_t {
    /// The changes.
    pub items: *mut sett_change_t,
    /// How many.
    pub len: usize,
    /// Private: the bytes the keys and values point into.
    pub data_: *mut u8,
    /// Private: their length.
    pub data_len_: usize,
}

impl sett_changes_t {
    fn empty() -> sett_changes_t {
        sett_changes_t {
            items: std::ptr::null_mut(),
            len: 0,
            data_: std::ptr::null_mut(),
            data_len_: 0,
        }
    }

    /// Copies `changes` into one item array and one byte buffer.
    fn from_changes(changes: Vec<sett_core::Change>) -> sett_changes_t {
        if changes.is_empty() {
            return sett_changes_t::empty();
        }
        let total: usize = changes.iter().map(|c| c.key.len() + c.value.len()).sum();
        let mut data = Vec::with_capacity(total);
        for c in &changes {
            data.extend_from_slice(&c.key);
            data.extend_from_slice(&c.value);
        }
        let data = data.into_boxed_slice();
        let data_len = data.len();
        let base = Box::into_raw(data) as *mut u8;
        let mut at = 0usize;
        let items: Box<[sett_change_t]> = changes
            .iter()
            .map(|c| {
                // SAFETY: `at` + the lengths stay within the `data_len` bytes
                // just laid out in this order.
                let key = unsafe { base.add(at) };
                at += c.key.len();
                let value = if c.value.is_empty() {
                    std::ptr::null()
                } else {
                    // SAFETY: as above.
                    unsafe { base.add(at) }
                };
                at += c.value.len();
                sett_change_t {
                    kind: match c.kind {
                        ChangeKind::Delete => SETT_CHANGE_DELETE,
                        ChangeKind::DeleteRange => SETT_CHANGE_DELETE_RANGE,
                        ChangeKind::Merge => SETT_CHANGE_MERGE,
                        _ => SETT_CHANGE_PUT,
                    },
                    user_meta: c.user_meta,
                    key,
                    key_len: c.key.len(),
                    value,
                    value_len: c.value.len(),
                    version: c.version,
                    expires_at: c.expires_at,
                }
            })
            .collect();
        let len = items.len();
        sett_changes_t {
            items: Box::into_raw(items) as *mut sett_change_t,
            len,
            data_: base,
            data_len_: data_len,
        }
    }
}

/// Subscribes to the change feed: every write committed after now (or, with
/// `has_from` = 1, after version `from_version`, served from the in-memory
/// history, see sett_options_set_change_feed_history_bytes()) whose key starts
/// with one of the `n` `prefixes` (n = 0: every key), in version order, each
/// once, after it became visible to reads. `max_pending_bytes` (0: 8 MiB)
/// bounds the changes queued for this subscriber: past it, they are dropped
/// and sett_subscription_next() fails with SETT_FELL_BEHIND, whose
/// sett_error_version() is the version to resubscribe from. A write never
/// waits on a subscriber. A version older than the history fails with
/// SETT_FEED_HISTORY_TOO_SHORT (sett_error_version(): the oldest one held):
/// subscribe from now, scan a read-only transaction, and apply only changes
/// with a version above its sett_txn_read_ts(). A range delete (also
/// sett_drop_prefix()) is one SETT_CHANGE_DELETE_RANGE change. A bulk load
/// and sett_drop_all() end live subscriptions with SETT_FELL_BEHIND and
/// cannot be resumed across. Writes to keyspaces are not delivered (use
/// sett_keyspace_subscribe()). *sub receives a handle to close with
/// sett_subscription_close().
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn sett_subscribe(
    db: *mut sett_db_t,
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
            db,
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

/// The checks and options of sett_subscribe() and sett_keyspace_subscribe():
/// subscribes with `open` and stores the handle in `*sub`.
///
/// # Safety
/// As sett_subscribe(): `prefixes` is NULL or valid for `n` entries, each
/// pointing to its `len` readable bytes; `sub` is NULL or writable.
pub(crate) unsafe fn subscribe_with(
    prefixes: *const sett_bytes_t,
    n: usize,
    from_version: u64,
    has_from: u32,
    max_pending_bytes: usize,
    sub: *mut *mut sett_subscription_t,
    open: impl FnOnce(SubscribeOptions) -> sett_core::Result<sett_core::Subscription>,
) -> Result<(), FfiError> {
    if sub.is_null() {
        return Err(FfiError::invalid("sub is NULL"));
    }
    if n > 0 && prefixes.is_null() {
        return Err(FfiError::invalid(format!("prefixes is NULL with n = {n}")));
    }
    let has_from = crate::util::flag(has_from, "has_from")?;
    let mut list = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: non-NULL (checked) and, as sett.h requires, valid for `n` entries.
        let p = unsafe { &*prefixes.add(i) };
        // SAFETY: each entry points to `len` readable bytes, as sett.h requires.
        let b = unsafe { bytes(p.data, p.len, "prefix") }?;
        list.push(b.to_vec());
    }
    let mut opts = SubscribeOptions {
        prefixes: list,
        from: has_from.then_some(from_version),
        ..SubscribeOptions::default()
    };
    if max_pending_bytes > 0 {
        opts.max_pending_bytes = max_pending_bytes;
    }
    let s = open(opts)?;
    let boxed = Box::into_raw(Box::new(sett_subscription_t { sub: s }));
    // SAFETY: `sub` is non-NULL (checked above) and writable, as sett.h requires.
    unsafe { sub.write(boxed) };
    Ok(())
}

/// Waits up to `timeout_ms` (negative: until changes come) for changes and
/// stores every change queued so far in *changes (len 0 when the wait timed
/// out; a version's changes are never split between calls). Free them with
/// sett_changes_free(). SETT_FELL_BEHIND once the subscriber fell behind
/// (every later call too); SETT_CLOSED once the database is closed and every
/// change committed before was delivered. *changes is set to empty on error.
#[no_mangle]
pub unsafe extern "C" fn sett_subscription_next(
    sub: *mut sett_subscription_t,
    timeout_ms: i64,
    changes: *mut sett_changes_t,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `sub` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let s = unsafe { live_mut(sub) }?;
        // SAFETY: `changes` is NULL (refused) or writable, as sett.h requires.
        unsafe { write_out(changes, sett_changes_t::empty(), "changes") }?;
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let got = s.sub.next(timeout)?.unwrap_or_default();
        // SAFETY: as above; the empty value written first owns nothing.
        unsafe { write_out(changes, sett_changes_t::from_changes(got), "changes") }
    })
}

/// Frees the changes in *changes and sets it to empty. Accepts NULL and an
/// empty (or already freed) set.
#[no_mangle]
pub unsafe extern "C" fn sett_changes_free(changes: *mut sett_changes_t) {
    if changes.is_null() {
        return;
    }
    // SAFETY: a non-NULL `changes` points to a sett_changes_t the caller owns,
    // filled by sett_subscription_next() or empty.
    let c = unsafe { &mut *changes };
    if !c.items.is_null() {
        // SAFETY: items came from Box::into_raw of a boxed slice of `len` items.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(c.items, c.len)) });
    }
    if !c.data_.is_null() {
        // SAFETY: data_ came from Box::into_raw of a boxed slice of `data_len_` bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(c.data_, c.data_len_)) });
    }
    *c = sett_changes_t::empty();
}

/// Unsubscribes and frees the handle. Accepts NULL.
#[no_mangle]
pub unsafe extern "C" fn sett_subscription_close(sub: *mut sett_subscription_t) {
    if !sub.is_null() {
        // SAFETY: sub came from Box::into_raw in sett_subscribe and is freed
        // once; a panic must not cross into C.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: not NULL (checked above), from Box::into_raw here.
            drop(unsafe { Box::from_raw(sub) })
        }));
    }
}

/// The newest version visible to reads (0 for NULL db): what a read begun now sees.
#[no_mangle]
pub unsafe extern "C" fn sett_last_version(db: *mut sett_db_t) -> u64 {
    // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    unsafe { live(db) }.map_or(0, |h| h.db.last_version())
}

/// The version a transaction reads at: it sees every write with a version at
/// or below it and none above (0 for NULL or a committed or discarded
/// transaction). The rescan recipe of sett_subscribe() skips changes at or
/// below it.
#[no_mangle]
pub unsafe extern "C" fn sett_txn_read_ts(txn: *mut crate::txn::sett_txn_t) -> u64 {
    // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
    unsafe { live_mut(txn) }
        .ok()
        .and_then(|t| t.txn.as_ref().map(|t| t.read_ts()))
        .unwrap_or(0)
}
