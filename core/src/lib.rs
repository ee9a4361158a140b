//! # sett
//!
//! An embedded key-value store: an LSM tree with key-value separation (the
//! WiscKey design). Keys and small values live in the tree; values of at least
//! [`Options::value_threshold`] bytes are appended once to a value log and the
//! tree keeps a pointer to them.
//!
//! ```no_run
//! use sett::{Db, GcOutcome, IterOptions, Options, PutOptions, WriteBatch};
//! use std::time::Duration;
//! # fn main() -> sett::Result<()> {
//! let db = Db::open(Options::new("/tmp/sett-example"))?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?.as_deref(), Some(&b"world"[..]));
//! let mut batch = WriteBatch::new();
//! batch.put(b"a".to_vec(), b"1".to_vec()).delete(b"hello".to_vec());
//! db.write(batch)?;
//! for item in db.iter(IterOptions { prefix: Some(b"a".to_vec()), ..Default::default() })? {
//!     let (k, v) = item?;
//!     println!("{k:?} = {v:?}");
//! }
//! // Serializable transactions; `update` retries on conflict.
//! db.update(|txn| {
//!     let n = txn.get(b"counter")?.map_or(0, |v| v[0]);
//!     txn.set(b"counter", &[n + 1])
//! })?;
//! let seen = db.view(|txn| txn.get(b"counter"))?;
//! // Time to live and user meta.
//! db.put_with(b"session", b"t", PutOptions { user_meta: 1, ttl: Some(Duration::from_secs(60)) })?;
//! // Value-log GC, backup.
//! while db.run_value_log_gc(0.5)? != GcOutcome::NothingToCollect {}
//! db.backup(&mut std::fs::File::create("/tmp/sett.backup").map_err(|e| sett::Error::Io {
//!     context: "creating the backup".into(),
//!     source: e.into(),
//! })?, 0)?;
//! db.close()?;
//! # Ok(()) }
//! ```
//!
//! ## Guarantees
//! - A [`WriteBatch`] is atomic: after a crash recovery finds all of it or none.
//! - Transactions ([`Db::update`], [`Db::view`], [`Db::begin`]) read a stable
//!   snapshot and commit serializably (optimistic SSI: a read-write transaction
//!   whose reads were overwritten after it started fails with [`Error::Conflict`]).
//! - With [`Options::sync_writes`], a write acknowledged by `write`/`put`/`delete`
//!   survives a crash of the machine. Without it, it survives a crash of the
//!   process, and after a machine crash what survives is a prefix of the writes.
//! - Recovery never leaves a pointer to value-log bytes that did not survive.
//! - A checksum guards every record and block; damage is reported as
//!   [`Error::Corruption`] naming the file and offset, never returned as data.
//! - One writer process per directory (a `flock` on `LOCK`); read-only opens share.
//! - After an I/O error on the write path the Db refuses writes
//!   ([`Error::Poisoned`]); reads keep working.
//! - Keyspaces ([`Db::keyspace`], RocksDB's column families) are independent
//!   ordered maps in one Db: batches and transactions span them atomically,
//!   and [`Db::drop_keyspace`] is one write, all or nothing across a crash.
//!   Keys starting with [`RESERVED_PREFIX`] belong to them, never to the
//!   default keyspace (refused there with [`Error::InvalidArgument`]).
//! - The change feed ([`Db::subscribe`]) delivers committed writes in version
//!   order, each once and only after it is visible to reads; a write never
//!   waits on a subscriber (a slow one is told [`Error::FellBehind`] and where
//!   to resume).
//!
//! The on-disk format is described byte by byte in `core/FORMAT.md`.

#![deny(missing_docs)]
// Data from disk or from a caller is never unwrapped: errors say what and where.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod advice;
mod backup;
mod batch;
mod bulk;
mod cache;
mod coding;
mod crypt;
mod db;
mod error;
#[doc(hidden)]
pub mod fault;
mod feed;
mod filename;
pub mod fs;
// Fuzz targets panic on a difference from the model: that is how libFuzzer sees a bug.
#[allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
mod fuzzing;
mod iter;
mod key;
mod keyspace;
mod levels;
mod manifest;
mod memtable;
pub mod merge;
pub mod options;
mod page_pool;
mod range_del;
mod read_guard;
mod sequence;
mod store;
mod sync;
mod table;
mod txn;
mod value;
mod vlog;
mod wal;

/// Engine parts exposed for the microbenchmarks in `core/benches` and the fuzz
/// targets in `fuzz/`; not part of the API.
#[doc(hidden)]
pub mod internals {
    pub use crate::memtable::Memtable;

    pub use crate::fuzzing::{fuzz_decode, fuzz_ops, FuzzTarget};
}

pub use batch::{PutOptions, WriteBatch};
pub use bulk::BulkLoader;
pub use crypt::{Encryption, EncryptionKey, DEFAULT_KEY_ROTATION};
pub use db::Keyspace;
pub use db::{CheckpointReport, Db, GcOutcome, Item, Stats, VerifyReport, CHECKPOINT_MARKER};
pub use error::{Error, Result};
pub use feed::{Change, ChangeKind, SubscribeOptions, Subscription};
pub use iter::{DbIterator, IterOptions};
pub use keyspace::{KeyspaceOptions, MAX_NAME_LEN, RESERVED_PREFIX};
pub use merge::MergeOperator;
pub use options::{Clock, Options};
pub use sequence::Sequence;
pub use store::Store;
pub use table::Compression;
pub use txn::{Txn, UPDATE_RETRIES};
