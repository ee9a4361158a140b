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
//!
//! The on-disk format is described byte by byte in `core/FORMAT.md`.

mod backup;
mod batch;
mod bulk;
mod coding;
mod db;
mod error;
#[doc(hidden)]
pub mod fault;
mod iter;
mod key;
mod levels;
mod manifest;
mod memtable;
mod options;
mod sequence;
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

    /// Feeds arbitrary bytes to every decoder that reads from disk: each must
    /// return an error or a value, never panic or loop. `kind` picks the decoder.
    pub fn fuzz_decode(kind: FuzzTarget, data: &[u8]) {
        use crate::table::block;
        match kind {
            FuzzTarget::Block => {
                if let Some(b) = block::DecodedBlock::decode(data) {
                    for i in 0..b.len() {
                        let _ = (b.key(i), b.value_range(i));
                    }
                }
                let _ = block::seek(data, &crate::key::encode(b"k", 1));
            }
            FuzzTarget::Bloom => {
                let _ = crate::table::bloom::may_contain(data, crate::table::bloom::hash(data));
            }
            FuzzTarget::LogRecords => {
                let mut framed = crate::wal::file_header(b"FUZZLOG\0", 1).to_vec();
                framed.extend_from_slice(data);
                let _ = crate::wal::scan(std::path::Path::new("fuzz"), &framed);
            }
            FuzzTarget::Batch => {
                let _ = crate::batch::decode_record(data);
            }
            FuzzTarget::Value => {
                let _ = crate::value::decode(data);
            }
            FuzzTarget::VlogEntry => {
                let _ = crate::vlog::check_entry(data);
            }
            FuzzTarget::Manifest => {
                let _ = crate::manifest::decode_edits(data);
            }
        }
    }

    /// The decoders `fuzz_decode` drives.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum FuzzTarget {
        Block,
        Bloom,
        LogRecords,
        Batch,
        Value,
        VlogEntry,
        Manifest,
    }

    impl FuzzTarget {
        pub const ALL: [FuzzTarget; 7] = [
            FuzzTarget::Block,
            FuzzTarget::Bloom,
            FuzzTarget::LogRecords,
            FuzzTarget::Batch,
            FuzzTarget::Value,
            FuzzTarget::VlogEntry,
            FuzzTarget::Manifest,
        ];

        /// The directory name of the target's corpus under fuzz/corpus.
        pub fn name(self) -> &'static str {
            match self {
                FuzzTarget::Block => "block",
                FuzzTarget::Bloom => "bloom",
                FuzzTarget::LogRecords => "log_records",
                FuzzTarget::Batch => "batch",
                FuzzTarget::Value => "value",
                FuzzTarget::VlogEntry => "vlog_entry",
                FuzzTarget::Manifest => "manifest",
            }
        }
    }
}

pub use batch::{PutOptions, WriteBatch};
pub use bulk::BulkLoader;
pub use db::{Db, GcOutcome, Item, Stats, VerifyReport};
pub use error::{Error, Result};
pub use iter::{DbIterator, IterOptions};
pub use options::{Clock, Options};
pub use sequence::Sequence;
pub use txn::{Txn, UPDATE_RETRIES};
