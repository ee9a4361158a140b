//! Range deletes: `sett_delete_range` and `sett_batch_delete_range`.

use crate::batch::{self, sett_batch_t};
use crate::db::sett_db_t;
use crate::error::sett_error_t;
use crate::store;
use crate::txn::sett_txn_t;
use crate::util::{guard_ok, live_mut, Raw};
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
    // SAFETY: forwarded contract.
    unsafe { store::delete_range(db, Raw(start, start_len), Raw(end, end_len), err) }
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
    // SAFETY: forwarded contract.
    unsafe { batch::delete_range(batch, None, Raw(start, start_len), Raw(end, end_len)) }
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
        let (s, e) = unsafe {
            (
                Raw(start, start_len).get("start")?,
                Raw(end, end_len).get("end")?,
            )
        };
        t.delete_range(s, e)?;
        Ok(())
    })
}
