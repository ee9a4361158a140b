//! Keyspaces: independent ordered maps in one Db (RocksDB's column families,
//! LMDB's named databases), each with its own options.
//!
//! A keyspace is a region of the one ordered key space (LMDB's design: named
//! databases are records of the main one). Every key starting with the
//! reserved marker `FF FF FF FF` belongs to keyspaces; it is the tail of the
//! key order, so the default keyspace (what [`Db`] reads and writes) is every
//! key below it. Keyspace id `N` (u32, from 1, never reused) stores user key
//! `K` as `FF FF FF FF | N (u32 big-endian) | K`. Id 0 is the catalog:
//! `FF FF FF FF 00 00 00 00 | name` → the keyspace's record (id, options), and
//! the catalog key with an empty name holds the next id to give. The layout
//! is in core/FORMAT.md ("Keyspaces").
//!
//! Everything is an ordinary write of storage keys, so batches and
//! transactions across keyspaces are atomic and conflict like any other, and
//! backups, checkpoints and recovery carry keyspaces with no special case.
//! Dropping a keyspace is one batch: the catalog record's delete and a range
//! delete over the keyspace's region; O(1), atomic across a crash, and
//! writers go on; compaction reclaims the space.
//!
//! Choices where a user could expect otherwise:
//! - The catalog is the truth: [`Db::keyspace`] reads it (a point read) each
//!   time, so a restored or reopened Db finds its keyspaces.
//! - Opening an existing keyspace with [`KeyspaceOptions::default()`] uses the
//!   options recorded at create; other options replace the recorded ones
//!   (as RocksDB's column-family options given at open win) for the handles
//!   of this Db and after a reopen.
//! - A handle of a dropped keyspace fails every call with
//!   [`Error::InvalidArgument`]; a batch or transaction that writes into a
//!   keyspace dropped before its commit is refused whole.
//! - [`Db::drop_all`] deletes keyspaces too (it empties the Db);
//!   `drop_prefix(b"")` empties the default keyspace only.
//! - A keyspace's codec ([`KeyspaceOptions::compression`]) applies to the
//!   table blocks written after it is set: each flush or compaction takes
//!   the codecs when it starts (a keyspace created or changed meanwhile gets
//!   the level's codec in that build), and tables already written, or moved
//!   down a level without a rewrite, keep theirs until compaction rewrites
//!   them (as a change of `Options::compression` does).

use crate::error::{Error, Result};
use crate::iter::{IterOptions, Walk};
use crate::key;
use crate::sync::lock;
use crate::table::Compression;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The first bytes of every key that belongs to keyspaces (and so not to the
/// default keyspace).
pub const RESERVED_PREFIX: [u8; 4] = [0xff; 4];
/// Bytes of a keyspace's key prefix: the marker and the id.
pub(crate) const PREFIX_LEN: usize = 8;
/// Longest keyspace name, in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// True when `key` lies in the keyspaces' region (starts with the marker).
pub(crate) fn is_reserved(key: &[u8]) -> bool {
    key.starts_with(&RESERVED_PREFIX)
}

/// The keyspace prefix of storage key `key`: empty for the default
/// keyspace, else its first `PREFIX_LEN` bytes (fewer if it is shorter).
pub(crate) fn space_of(key: &[u8]) -> &[u8] {
    if is_reserved(key) {
        &key[..key.len().min(PREFIX_LEN)]
    } else {
        &[]
    }
}

/// The refusal of a default-keyspace key in the reserved region.
pub(crate) fn reserved_error(what: &str, key: &[u8]) -> Error {
    Error::InvalidArgument(format!(
        "{what} {key:?} starts with FF FF FF FF, the prefix reserved for keyspaces \
         (use Db::keyspace for a separate key space)"
    ))
}

/// A default-keyspace range end: an empty (unbounded) end, or one past the
/// marker, stops at the marker.
pub(crate) fn clamp_default_end(end: Vec<u8>) -> Vec<u8> {
    if end.is_empty() || end.as_slice() > RESERVED_PREFIX.as_slice() {
        RESERVED_PREFIX.to_vec()
    } else {
        end
    }
}

/// Which keys an iterator walks.
pub(crate) enum Region<'a> {
    /// The default keyspace: keys below the marker.
    Default,
    /// Every storage key (restore's emptiness check).
    All,
    /// One keyspace, by its 8-byte prefix: keys come back without it.
    Keyspace(&'a [u8]),
}

impl Region<'_> {
    /// The walk's bounds over storage keys, and the prefix to strip from
    /// the keys it returns.
    pub(crate) fn bounds(&self, opts: &IterOptions) -> Walk {
        let (lower, upper, strip) = match self {
            Region::All => {
                let (l, u) = crate::iter::bounds(opts);
                (l, u, Vec::new())
            }
            Region::Default => {
                let (l, u) = crate::iter::bounds(opts);
                let marker = RESERVED_PREFIX.to_vec();
                let u = Some(match u {
                    Some(u) if u < marker => u,
                    _ => marker,
                });
                (l, u, Vec::new())
            }
            Region::Keyspace(p) => {
                let cat = |k: &[u8]| [*p, k].concat();
                let mapped = IterOptions {
                    prefix: Some(cat(opts.prefix.as_deref().unwrap_or_default())),
                    start: opts.start.as_deref().map(cat),
                    end: opts.end.as_deref().map(cat),
                    ..opts.clone()
                };
                let (l, u) = crate::iter::bounds(&mapped);
                (l, u, p.to_vec())
            }
        };
        Walk {
            lower,
            upper,
            strip,
        }
    }
}

/// A keyspace's own options; `None` takes the Db's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyspaceOptions {
    /// Values of at least this many bytes go to the value log
    /// (as [`crate::Options::value_threshold`], in 1..=1048576).
    pub value_threshold: Option<usize>,
    /// The TTL of puts through this keyspace that give none (whole
    /// seconds are stored; at least one second).
    pub default_ttl: Option<Duration>,
    /// The codec of every table block holding this keyspace's keys, on
    /// every level (`None`: the Db's per-level choice). Zstd uses
    /// [`crate::Options::zstd_level`].
    pub compression: Option<Compression>,
}

impl KeyspaceOptions {
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(t) = self.value_threshold {
            if t == 0 || t > (1 << 20) {
                return Err(Error::InvalidOption {
                    name: "KeyspaceOptions::value_threshold",
                    reason: format!("{t} is outside 1..=1048576"),
                });
            }
        }
        if let Some(ttl) = self.default_ttl {
            if ttl.as_secs() == 0 || ttl.as_secs() > u64::from(u32::MAX) {
                return Err(Error::InvalidOption {
                    name: "KeyspaceOptions::default_ttl",
                    reason: format!("{ttl:?} is outside 1 s..=4294967295 s"),
                });
            }
        }
        Ok(())
    }
}

/// What every handle of one keyspace in one Db shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) prefix: [u8; PREFIX_LEN],
    dropped: AtomicBool,
    pub(crate) opts: Mutex<KeyspaceOptions>,
}

impl Shared {
    pub(crate) fn new(id: u32, name: &str, opts: KeyspaceOptions) -> Shared {
        Shared {
            id,
            name: name.to_string(),
            prefix: prefix(id),
            dropped: AtomicBool::new(false),
            opts: Mutex::new(opts),
        }
    }

    pub(crate) fn options(&self) -> KeyspaceOptions {
        *lock(&self.opts)
    }

    pub(crate) fn storage_key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(PREFIX_LEN + key.len());
        k.extend_from_slice(&self.prefix);
        k.extend_from_slice(key);
        k
    }

    /// `[start, end)` of this keyspace as storage keys; an empty end is the
    /// keyspace's end.
    pub(crate) fn storage_range(&self, start: &[u8], end: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let end = if end.is_empty() {
            region_end(self.id)
        } else {
            self.storage_key(end)
        };
        (self.storage_key(start), end)
    }

    /// Refuses a handle of a keyspace dropped since.
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::InvalidArgument(format!(
                "keyspace {:?} was dropped",
                self.name
            )));
        }
        Ok(())
    }

    /// Called where a dropping batch gets its version.
    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }
}

pub(crate) fn prefix(id: u32) -> [u8; PREFIX_LEN] {
    let mut p = [0xff; PREFIX_LEN];
    p[4..].copy_from_slice(&id.to_be_bytes());
    p
}

/// The first storage key past keyspace `id`'s region (empty: unbounded).
pub(crate) fn region_end(id: u32) -> Vec<u8> {
    key::prefix_successor(&prefix(id)).unwrap_or_default()
}

pub(crate) fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1..={MAX_NAME_LEN} bytes"
        )));
    }
    Ok(())
}
