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
use crate::db::{lock, Db, DbInner, Item};
use crate::error::{Error, Result};
use crate::feed::{SubscribeOptions, Subscription};
use crate::iter::{DbIterator, IterOptions, Walk};
use crate::key;
use crate::table::codec::KeyspaceCodecs;
use crate::table::Compression;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The first bytes of every key that belongs to keyspaces (and so not to the
/// default keyspace).
pub const RESERVED_PREFIX: [u8; 4] = [0xff; 4];
/// Bytes of a keyspace's key prefix: the marker and the id.
pub(crate) const PREFIX_LEN: usize = 8;
/// The catalog's prefix (id 0).
const CATALOG: [u8; PREFIX_LEN] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
/// Format of the id counter record and of keyspace records without a
/// codec; the first byte of each.
const RECORD_FORMAT: u8 = 1;
/// Format of keyspace records with a codec (format 1 and a codec byte).
const RECORD_FORMAT_CODEC: u8 = 2;
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

/// A keyspace record's codec byte: 0 for the Db's, else the block type byte
/// plus one.
fn codec_byte(c: Option<Compression>) -> u8 {
    c.map_or(0, |c| c.type_byte() + 1)
}

fn codec_of_byte(b: u8) -> Option<Option<Compression>> {
    match b {
        0 => Some(None),
        b => [Compression::None, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .find(|c| c.type_byte() + 1 == b)
            .map(Some),
    }
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

    /// The catalog record: `format u8 | id u32 LE | value_threshold u32
    /// LE (0: the Db's) | default_ttl seconds u32 LE (0: none)`, then in
    /// format 2 `codec u8` (0: the Db's, else the block type byte + 1).
    /// Format 1 (no codec byte) when the codec is the Db's, so that a
    /// database without keyspace codecs still opens in older builds.
    fn encode(&self, id: u32) -> Vec<u8> {
        let format = match self.compression {
            None => RECORD_FORMAT,
            Some(_) => RECORD_FORMAT_CODEC,
        };
        let mut rec = vec![format];
        rec.extend_from_slice(&id.to_le_bytes());
        let t = self.value_threshold.unwrap_or(0) as u32;
        rec.extend_from_slice(&t.to_le_bytes());
        let ttl = self.default_ttl.map_or(0, |d| d.as_secs() as u32);
        rec.extend_from_slice(&ttl.to_le_bytes());
        if self.compression.is_some() {
            rec.push(codec_byte(self.compression));
        }
        rec
    }

    fn decode(rec: &[u8], name: &str, db: &DbInner) -> Result<(u32, KeyspaceOptions)> {
        let bad = |what: String| {
            Error::corruption(
                db.dir(),
                0,
                format!("catalog record of keyspace {name:?}: {what}"),
            )
        };
        let want = match rec.first() {
            Some(&RECORD_FORMAT) => 13,
            Some(&RECORD_FORMAT_CODEC) => 14,
            Some(f) => return Err(bad(format!("unknown format {f}"))),
            None => return Err(bad("empty".into())),
        };
        if rec.len() != want {
            return Err(bad(format!("{} bytes, not {want}", rec.len())));
        }
        let compression = match rec.get(13) {
            None => None,
            Some(&b) => codec_of_byte(b).ok_or_else(|| bad(format!("unknown codec byte {b}")))?,
        };
        let u32_at = |i: usize| crate::coding::u32_at(rec, i).unwrap_or(0);
        let id = u32_at(1);
        if id == 0 {
            return Err(bad("id 0".into()));
        }
        let opts = KeyspaceOptions {
            value_threshold: Some(u32_at(5) as usize).filter(|&t| t != 0),
            default_ttl: Some(u64::from(u32_at(9)))
                .filter(|&s| s != 0)
                .map(Duration::from_secs),
            compression,
        };
        Ok((id, opts))
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

fn catalog_key(name: &str) -> Vec<u8> {
    [&CATALOG[..], name.as_bytes()].concat()
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(Error::InvalidArgument(format!(
            "keyspace name {name:?} must be 1..={MAX_NAME_LEN} bytes"
        )));
    }
    Ok(())
}

/// The Db's open keyspaces, and the lock that orders creates and drops.
#[derive(Default)]
pub(crate) struct Catalog {
    open: HashMap<String, Arc<Shared>>,
    /// No id below this is given again, whatever the stored counter says
    /// (after `drop_all` emptied it).
    next_floor: u32,
}

impl Catalog {
    /// Marks every open keyspace dropped: the Db was emptied.
    pub(crate) fn drop_every(&mut self) {
        for ks in self.open.values() {
            ks.mark_dropped();
        }
        self.open.clear();
    }
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

impl DbInner {
    /// A read of a storage key (no key checks) at the newest version.
    fn get_storage(&self, key: &[u8]) -> Result<Option<Item>> {
        self.check_open()?;
        let st = self.read_state();
        let seq = self.commit.visible();
        self.get_in(&st, key, seq)
    }

    /// Checks a user key of a keyspace: as a default key, without the marker rule.
    pub(crate) fn check_keyspace_key(&self, ks: &Shared, key: &[u8]) -> Result<()> {
        ks.check_live()?;
        self.check_key(key)
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
        let mut cat = lock(&inner.keyspaces);
        let ckey = catalog_key(name);
        let shared = match inner.get_storage(&ckey)? {
            Some(item) => {
                let (id, recorded) = KeyspaceOptions::decode(&item.value, name, inner)?;
                let effective = if opts == KeyspaceOptions::default() || opts == recorded {
                    recorded
                } else {
                    inner.check_writable()?;
                    let mut b = WriteBatch::new();
                    b.put_raw(&ckey, Some(&opts.encode(id)), 0, 0);
                    self.write(b)?;
                    opts
                };
                inner.set_keyspace_codec(id, effective.compression);
                match cat.open.get(name) {
                    Some(s) if s.id == id => {
                        *lock(&s.opts) = effective;
                        s.clone()
                    }
                    _ => {
                        let s = Arc::new(Shared::new(id, name, effective));
                        cat.open.insert(name.to_string(), s.clone());
                        s
                    }
                }
            }
            None => {
                inner.check_writable()?;
                let stored = match inner.get_storage(&CATALOG)? {
                    Some(item) => decode_counter(&item.value, inner)?,
                    None => 1,
                };
                let id = stored.max(cat.next_floor).max(1);
                let next = id.checked_add(1).ok_or_else(|| {
                    Error::InvalidArgument("keyspace ids are exhausted (2^32 - 1 created)".into())
                })?;
                let mut b = WriteBatch::new();
                b.put_raw(&ckey, Some(&opts.encode(id)), 0, 0);
                let mut counter = vec![RECORD_FORMAT];
                counter.extend_from_slice(&next.to_le_bytes());
                b.put_raw(&CATALOG, Some(&counter), 0, 0);
                self.write(b)?;
                inner.set_keyspace_codec(id, opts.compression);
                cat.next_floor = next;
                let s = Arc::new(Shared::new(id, name, opts));
                cat.open.insert(name.to_string(), s.clone());
                s
            }
        };
        Ok(Keyspace {
            db: inner.clone(),
            shared,
        })
    }

    /// The names of the keyspaces, in byte order (the default keyspace is not
    /// named).
    pub fn keyspaces(&self) -> Result<Vec<String>> {
        let it = self.inner.iter(
            IterOptions {
                prefix: Some(CATALOG.to_vec()),
                keys_only: true,
                ..IterOptions::default()
            },
            None,
            None,
            Region::All,
        )?;
        let mut names = Vec::new();
        for item in it {
            let (k, _) = item?;
            let name = &k[PREFIX_LEN..];
            if name.is_empty() {
                continue; // the id counter
            }
            let name = String::from_utf8(name.to_vec()).map_err(|_| {
                Error::corruption(
                    self.path(),
                    0,
                    format!("catalog key {k:?} holds a name that is not UTF-8"),
                )
            })?;
            names.push(name);
        }
        Ok(names)
    }

    /// Drops keyspace `name`: one batch that deletes its catalog record and
    /// range-deletes its keys, so it is O(1), atomic across a crash, and
    /// writers (of any keyspace) go on; compaction reclaims the space. Its
    /// handles fail from then on; its id is never given again.
    /// [`Error::NotFound`] when there is no such keyspace.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let inner = &self.inner;
        inner.check_writable()?;
        let mut cat = lock(&inner.keyspaces);
        let ckey = catalog_key(name);
        let Some(item) = inner.get_storage(&ckey)? else {
            return Err(Error::NotFound(format!("no keyspace named {name:?}")));
        };
        let (id, _) = KeyspaceOptions::decode(&item.value, name, inner)?;
        let mut b = WriteBatch::new();
        b.delete_raw(&ckey);
        b.delete_range_raw(&prefix(id), &region_end(id));
        if let Some(s) = cat.open.remove(name) {
            b.drops.push(s);
        }
        self.write(b)?;
        inner.set_keyspace_codec(id, None);
        Ok(())
    }
}

fn decode_counter(rec: &[u8], db: &DbInner) -> Result<u32> {
    match (rec.first(), crate::coding::u32_at(rec, 1)) {
        (Some(&RECORD_FORMAT), Some(n)) if rec.len() == 5 => Ok(n),
        _ => Err(Error::corruption(
            db.dir(),
            0,
            format!("the keyspace id counter record {rec:?} is not format 1"),
        )),
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
        self.db.write(crate::db::WriterKind::Batch(b), None)
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

impl DbInner {
    /// The keyspace codecs as they are now (table builds take it at start;
    /// a keyspace created during a build gets the level codec in it).
    pub(crate) fn keyspace_codecs(&self) -> KeyspaceCodecs {
        lock(&self.keyspace_codecs).clone()
    }

    pub(crate) fn set_keyspace_codecs(&self, codecs: KeyspaceCodecs) {
        *lock(&self.keyspace_codecs) = codecs;
    }

    /// Records keyspace `id`'s codec (`None`: the Db's) for later builds.
    fn set_keyspace_codec(&self, id: u32, codec: Option<Compression>) {
        let mut map = lock(&self.keyspace_codecs);
        if map.get(&id).copied() != codec {
            let m = Arc::make_mut(&mut map);
            match codec {
                Some(c) => m.insert(id, c),
                None => m.remove(&id),
            };
        }
    }

    /// Reads every catalog record's codec (at open, and after a restore).
    /// A record that does not decode is skipped (its keyspace's blocks get
    /// the level's codec): [`Db::keyspace`] reports it when it is opened,
    /// and the rest of the Db stays usable.
    pub(crate) fn load_keyspace_codecs(self: &Arc<Self>) -> Result<()> {
        let it = self.iter(
            IterOptions {
                prefix: Some(CATALOG.to_vec()),
                ..IterOptions::default()
            },
            None,
            None,
            Region::All,
        )?;
        let mut map = std::collections::HashMap::new();
        for item in it {
            let (k, v) = item?;
            let name = String::from_utf8_lossy(&k[PREFIX_LEN..]);
            if name.is_empty() {
                continue; // the id counter
            }
            if let Ok((id, opts)) = KeyspaceOptions::decode(&v, &name, self) {
                if let Some(c) = opts.compression {
                    map.insert(id, c);
                }
            }
        }
        self.set_keyspace_codecs(Arc::new(map));
        Ok(())
    }

    /// True when some key lies in the keyspaces' region (a keyspace, its
    /// catalog record, or data of a dropped one not compacted away yet).
    pub(crate) fn has_keyspace_keys(self: &Arc<Self>) -> Result<bool> {
        let mut it = self.iter(
            IterOptions {
                start: Some(RESERVED_PREFIX.to_vec()),
                keys_only: true,
                prefetch: 1,
                ..IterOptions::default()
            },
            None,
            None,
            Region::All,
        )?;
        Ok(it.next().transpose()?.is_some())
    }
}
