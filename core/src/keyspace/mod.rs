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

use crate::batch::{PutOptions, Space, WriteBatch};
use crate::db::{Db, DbInner, Item};
use crate::sync::lock;

mod catalog;
use crate::error::{Error, Result};
use crate::feed::{SubscribeOptions, Subscription};
use crate::iter::{DbIterator, IterOptions, Walk};
use crate::key;
use crate::table::Compression;
pub(crate) use catalog::{Catalog, CatalogEnv};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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
    fn validate(&self) -> Result<()> {
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
    id: u32,
    name: String,
    prefix: [u8; PREFIX_LEN],
    dropped: AtomicBool,
    opts: Mutex<KeyspaceOptions>,
}

impl Shared {
    fn new(id: u32, name: &str, opts: KeyspaceOptions) -> Shared {
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

fn prefix(id: u32) -> [u8; PREFIX_LEN] {
    let mut p = [0xff; PREFIX_LEN];
    p[4..].copy_from_slice(&id.to_be_bytes());
    p
}

/// The first storage key past keyspace `id`'s region (empty: unbounded).
fn region_end(id: u32) -> Vec<u8> {
    key::prefix_successor(&prefix(id)).unwrap_or_default()
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1..={MAX_NAME_LEN} bytes"
        )));
    }
    Ok(())
}

/// A keyspace of a [`Db`]: an ordered map of its own, with its own options.
/// Cheap to clone and to share between threads. Its keys are independent of
/// every other keyspace's and of the default keyspace's.
#[derive(Clone)]
pub struct Keyspace {
    db: Arc<DbInner>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("name", &self.shared.name)
            .field("id", &self.shared.id)
            .finish()
    }
}

impl Db {
    /// Opens keyspace `name`, creating it with `opts` if it does not exist
    /// (names are 1..=255 bytes). Options given for an existing keyspace
    /// replace its recorded ones unless they are `KeyspaceOptions::default()`,
    /// which keeps them. A read-only Db opens existing keyspaces only.
    pub fn keyspace(&self, name: &str, opts: KeyspaceOptions) -> Result<Keyspace> {
        check_name(name)?;
        opts.validate()?;
        let inner = &self.inner;
        inner.check_open()?;
        let shared = inner.catalog.open(inner, name, opts)?;
        Ok(Keyspace {
            db: inner.clone(),
            shared,
        })
    }

    /// The names of the keyspaces, in byte order (the default keyspace is not
    /// named).
    pub fn keyspaces(&self) -> Result<Vec<String>> {
        self.inner.catalog.names(&self.inner)
    }

    /// Drops keyspace `name`: one batch that deletes its catalog record and
    /// range-deletes its keys, so it is O(1), atomic across a crash, and
    /// writers (of any keyspace) go on; compaction reclaims the space. Its
    /// handles fail from then on; its id is never given again.
    /// [`Error::NotFound`] when there is no such keyspace.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        check_name(name)?;
        self.inner.check_writable()?;
        self.inner.catalog.drop(&self.inner, name)
    }
}

impl Keyspace {
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The keyspace's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The keyspace's id: its keys are stored under `FF FF FF FF | id (big-endian)`.
    pub fn id(&self) -> u32 {
        self.shared.id
    }

    /// The options in force for this keyspace.
    pub fn options(&self) -> KeyspaceOptions {
        self.shared.options()
    }

    /// The value of `key` in this keyspace, or `None`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_entry(key)?.map(|i| i.value))
    }

    /// The value of `key` with its user meta, expiry and version.
    pub fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
        self.db.check_keyspace_key(&self.shared, key)?;
        self.db.get_storage(&self.shared.storage_key(key))
    }

    /// The values of many keys of this keyspace at one consistent point, in
    /// the order asked (as [`Db::get_many`]).
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.shared.check_live()?;
        self.db.get_many_storage(keys.iter().map(|k| {
            self.db.check_keyspace_key(&self.shared, k)?;
            Ok(self.shared.storage_key(k))
        }))
    }

    /// Stores `key` → `value` (with the keyspace's default TTL, if it has one).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_with(key, value, PutOptions::default())
    }

    /// Stores `key` → `value` with user meta and/or a time to live (without
    /// one, the keyspace's default TTL).
    pub fn put_with(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_with_in(self, key, value, opts);
        self.write(b)
    }

    /// Removes `key` (a no-op if it is absent).
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_in(self, key);
        self.write(b)
    }

    /// Deletes every key of this keyspace in `[start, end)` with one range
    /// tombstone (as [`Db::delete_range`]); an empty `end` is the end of the
    /// keyspace.
    pub fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range_in(self, start, end);
        self.write(b)
    }

    fn write(&self, b: WriteBatch) -> Result<()> {
        self.shared.check_live()?;
        DbInner::write(&self.db, crate::db::WriterKind::Batch(b), None)
    }

    /// An iterator over a snapshot of this keyspace taken now; prefix and
    /// bounds are in its own keys, and keys come back without the keyspace's
    /// prefix.
    pub fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
        self.shared.check_live()?;
        self.db
            .iter(opts, None, None, Region::Keyspace(&self.shared.prefix))
    }

    /// Subscribes to this keyspace's changes (as [`Db::subscribe`]), with
    /// prefixes in its own keys and keys delivered without the keyspace's
    /// prefix. A range delete's end is empty when it is the keyspace's end
    /// (so a drop of the keyspace is `DeleteRange` from `""` to `""`).
    pub fn subscribe(&self, mut opts: SubscribeOptions) -> Result<Subscription> {
        self.shared.check_live()?;
        opts.prefixes = if opts.prefixes.is_empty() {
            vec![self.shared.prefix.to_vec()]
        } else {
            opts.prefixes
                .iter()
                .map(|p| self.shared.storage_key(p))
                .collect()
        };
        crate::db::subscribe(&self.db, opts, PREFIX_LEN)
    }
}

/// Whether a batch op's key is acceptable for its space; `max` is the Db's
/// `max_key_size`.
pub(crate) fn check_op_key(space: Space, key: &[u8], max: usize) -> Result<()> {
    match space {
        Space::User => {
            if is_reserved(key) {
                return Err(reserved_error("key", key));
            }
            Ok(())
        }
        Space::Keyspace | Space::Storage => {
            let user = key.len().saturating_sub(PREFIX_LEN);
            if space == Space::Keyspace && (user == 0 || !is_reserved(key)) {
                return Err(Error::InvalidArgument("empty key".into()));
            }
            if user > max {
                return Err(Error::TooBig {
                    what: "key",
                    len: user,
                    max,
                });
            }
            Ok(())
        }
    }
}
