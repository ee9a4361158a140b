//! Range deletes: `sett_delete_range` and `sett_batch_delete_range`.

use crate::batch::{sett_batch_t, with_batch};
use crate::db::sett_db_t;
use crate::error::{sett_error_t, FfiError};
use crate::txn::sett_txn_t;
use crate::util::{bytes, guard_ok, live, live_mut};
use std::ffi::c_int;

/// Deletes every key in [start, end) with one record (a range tombstone,
/// RocksDB's DeleteRange), however many keys the range holds. Ordered,
/// atomic and durable like any write; writers do not wait for it, and
/// snapshots taken before it still see the keys. Compaction reclaims the
/// space later (sett_flatten() at once). An empty `end` (end_len 0) means
/// no upper bound; otherwise start < end is required (SETT_INVALID_ARGUMENT).
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn sett_delete_range(
    db: *mut sett_db_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `db` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let h = unsafe { live(db) }?;
        // SAFETY: the caller passes valid byte ranges (contract in sett.h).
        let (s, e) = unsafe { range(start, start_len, end, end_len) }?;
        h.db.delete_range(s, e)?;
        Ok(())
    })
}

/// Adds a delete of every key in [start, end) to the batch; operations added
/// before it on keys in the range are removed from the batch, later ones
/// are kept. The range is checked when the batch is written (as for
/// sett_delete_range()).
#[no_mangle]
pub unsafe extern "C" fn sett_batch_delete_range(
    batch: *mut sett_batch_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
) -> c_int {
    with_batch(batch, |b| {
        // SAFETY: the caller passes valid byte ranges (contract in sett.h).
        let (s, e) = unsafe { range(start, start_len, end, end_len) }?;
        b.delete_range(s, e);
        Ok(())
    })
}

/// Buffers a delete of every key in [start, end) in a read-write transaction:
/// its reads and iterators stop seeing the range (and its own earlier writes
/// there); its later writes are kept. Applied at commit, atomically with the
/// rest of the transaction. The range is checked here (SETT_INVALID_ARGUMENT
/// unless start < end or end is empty).
#[no_mangle]
pub unsafe extern "C" fn sett_txn_delete_range(
    txn: *mut sett_txn_t,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    err: *mut *mut sett_error_t,
) -> c_int {
    guard_ok(err, || {
        // SAFETY: `txn` is NULL (refused) or a live handle of this library, as sett.h requires of the caller.
        let t = unsafe { live_mut(txn) }?.live()?;
        // SAFETY: the caller passes valid byte ranges (contract in sett.h).
        let (s, e) = unsafe { range(start, start_len, end, end_len) }?;
        t.delete_range(s, e)?;
        Ok(())
    })
}

/// The `[start, end)` of a range-delete call as byte slices.
///
/// # Safety
/// Each pointer is NULL (refused unless its length is 0) or points to that
/// many readable bytes that outlive the returned slices.
unsafe fn range<'a>(
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
) -> Result<(&'a [u8], &'a [u8]), FfiError> {
    // SAFETY: forwarded from this function's contract.
    let s = unsafe { bytes(start, start_len, "start") }?;
    // SAFETY: as for `start`, with `end_len`.
    let e = unsafe { bytes(end, end_len, "end") }?;
    Ok((s, e))
}
