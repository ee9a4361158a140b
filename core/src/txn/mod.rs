//! Transactions: MVCC snapshots and optimistic serializable snapshot isolation.
//!
//! A transaction reads at `read_ts`: every write committed at or before it, and
//! none after (it holds the read state of that moment, so nothing it may read
//! goes away under it). Its own writes are buffered and seen by its reads and
//! iterators. At commit, a read-write transaction fails with
//! [`Error::Conflict`](crate::Error::Conflict) if a write committed after
//! `read_ts` touched a key it read; otherwise its writes are applied atomically
//! as one batch.

pub(crate) use crate::db::fingerprint;

use crate::batch::Space;
use crate::db::Db;
use crate::db::Keyspace;
use crate::db::{DbInner, Item, ReadState, SnapshotGuard};
use crate::error::{Error, Result};
use crate::iter::TxnView;
use crate::iter::{DbIterator, IterOptions};
use crate::keyspace::{Region, Shared};
use crate::sync::lock;
use crate::value::{self, Stored};
use crate::{PutOptions, WriteBatch};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// How many times [`crate::Db::update`] runs its closure before giving up on conflicts.
pub const UPDATE_RETRIES: usize = 64;

/// Begins a read-write transaction with `begin`, runs `f` in it and commits,
/// again from the start (up to [`UPDATE_RETRIES`] times) when the commit
/// conflicts; an error from `f` discards the transaction and is returned
/// (Badger's `DB.Update` loop, with the retries RocksDB leaves to the caller).
pub(crate) fn update<T>(
    mut begin: impl FnMut() -> Result<Txn>,
    mut f: impl FnMut(&mut Txn) -> Result<T>,
) -> Result<T> {
    for _ in 0..UPDATE_RETRIES {
        let mut txn = begin()?;
        let out = f(&mut txn)?;
        match txn.commit() {
            Ok(()) => return Ok(out),
            Err(Error::Conflict) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict)
}

struct PendingWrite {
    value: Option<Vec<u8>>,
    /// `value` is a merge operand, folded onto the key's value at reads
    /// and at commit.
    operand: bool,
    opts: PutOptions,
    /// A keyspace's own value threshold.
    value_threshold: Option<usize>,
}

/// A transaction. Read-only ones come from [`crate::Db::view`] or
/// `begin(false)`; read-write ones from [`crate::Db::update`] or `begin(true)`.
/// Dropping it without `commit` discards it.
pub struct Txn {
    db: Arc<DbInner>,
    read_ts: u64,
    state: Arc<ReadState>,
    update: bool,
    writes: BTreeMap<Vec<u8>, PendingWrite>,
    /// Range deletes `[start, end)` (empty end: unbounded), applied at commit
    /// before `writes` (a later write in a range was kept in `writes`).
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    reads: Arc<Mutex<HashSet<u64>>>,
    size: usize,
    _snapshot: SnapshotGuard,
    ended: bool,
    /// Keyspaces written: the commit is refused if one was dropped.
    keyspaces: Vec<Arc<Shared>>,
}

impl Txn {
    /// Begins a transaction on `db` (an update one with `update`).
    pub(crate) fn begin(db: &Arc<DbInner>, update: bool) -> Result<Txn> {
        if update {
            db.check_writable()?;
        } else {
            db.check_open()?;
        }
        // The snapshot is registered under the queue lock: a flush or
        // compaction that starts from now on keeps the versions read_ts
        // needs, and one that started before saw a sequence at most read_ts.
        let (read_ts, snapshot) = db.commit.begin_txn(
            update,
            |read_ts| db.snapshot_at(read_ts),
            || {
                if db.is_closed() {
                    return Err(Error::Closed);
                }
                match db.poisoned() {
                    Some(e) => Err(Error::Poisoned(e.to_string())),
                    None => Ok(()),
                }
            },
        )?;
        Ok(Txn {
            db: db.clone(),
            read_ts,
            state: db.read_state(),
            update,
            writes: BTreeMap::new(),
            ranges: Vec::new(),
            reads: Arc::new(Mutex::new(HashSet::new())),
            size: 0,
            _snapshot: snapshot,
            ended: false,
            keyspaces: Vec::new(),
        })
    }
}

impl Txn {
    /// The snapshot this transaction reads at.
    pub fn read_ts(&self) -> u64 {
        self.read_ts
    }

    /// True for a read-write transaction.
    pub fn is_update(&self) -> bool {
        self.update
    }

    /// The value of `key` as this transaction sees it.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_entry(key)?.map(|i| i.value))
    }

    /// The value of `key` with its metadata (version 0 for this transaction's own
    /// pending write, whose expiry is the one its commit will store).
    pub fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
        self.check_usable()?;
        self.db.check_user_key(key)?;
        self.get_storage(key)
    }

    /// The value of `key` in keyspace `ks` as this transaction sees it.
    pub fn get_in(&self, ks: &Keyspace, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_entry_in(ks, key)?.map(|i| i.value))
    }

    /// [`Txn::get_entry`] in keyspace `ks`.
    pub fn get_entry_in(&self, ks: &Keyspace, key: &[u8]) -> Result<Option<Item>> {
        self.check_usable()?;
        self.db.check_keyspace_key(ks.shared(), key)?;
        self.get_storage(&ks.shared().storage_key(key))
    }

    fn get_storage(&self, key: &[u8]) -> Result<Option<Item>> {
        if let Some(w) = self.writes.get(key).filter(|w| w.operand) {
            let op = w.value.as_deref().unwrap_or_default();
            let base = if self.ranges.iter().any(|(s, e)| in_range(key, s, e)) {
                None
            } else {
                if self.update {
                    lock(&self.reads).insert(fingerprint(key));
                }
                self.db.get_in(&self.state, key, self.read_ts)?
            };
            let operator = self.db.opts.merge_operator.as_deref();
            let value = crate::merge::resolve(
                operator,
                key,
                base.as_ref().map(|i| &i.value[..]),
                vec![op],
            )?;
            let (user_meta, expires_at) = base.map_or((0, 0), |i| (i.user_meta, i.expires_at));
            return Ok(Some(Item {
                value,
                user_meta,
                expires_at,
                version: 0,
            }));
        }
        if let Some(w) = self.writes.get(key) {
            // The expiry the commit will give it, rounded up to whole seconds as the
            // write path rounds it, so that a TTL read back in the transaction is the
            // one stored.
            let expires_at = w.opts.ttl.map_or(0, |t| {
                self.db.now() + t.as_secs() + u64::from(t.subsec_nanos() > 0)
            });
            return Ok(w.value.as_ref().map(|v| Item {
                value: v.clone(),
                user_meta: w.opts.user_meta,
                expires_at,
                version: 0,
            }));
        }
        if self.ranges.iter().any(|(s, e)| in_range(key, s, e)) {
            return Ok(None);
        }
        if self.update {
            lock(&self.reads).insert(fingerprint(key));
        }
        self.db.get_in(&self.state, key, self.read_ts)
    }

    /// Buffers a put; applied at commit.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.set_with(key, value, PutOptions::default())
    }

    /// Buffers a put with user meta and/or a time to live.
    pub fn set_with(&mut self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        self.check_usable()?;
        self.db.check_user_key(key)?;
        self.write(key.to_vec(), Some(value), opts, None)
    }

    /// Buffers a merge of `operand` into `key` (see [`crate::Db::merge`]).
    /// Reads in this transaction see it folded onto the key's value; at
    /// commit it is one write of `key` (a transaction that read `key`
    /// and commits after it conflicts, as with a put). A merge over this
    /// transaction's own put or delete of `key` becomes a put of the merged
    /// value.
    pub fn merge(&mut self, key: &[u8], operand: &[u8]) -> Result<()> {
        self.check_usable()?;
        self.db.check_user_key(key)?;
        self.merge_storage(key.to_vec(), operand)
    }

    /// [`Txn::merge`] in keyspace `ks`.
    pub fn merge_in(&mut self, ks: &Keyspace, key: &[u8], operand: &[u8]) -> Result<()> {
        self.check_usable()?;
        self.db.check_keyspace_key(ks.shared(), key)?;
        self.merge_storage(ks.shared().storage_key(key), operand)
    }

    fn merge_storage(&mut self, key: Vec<u8>, operand: &[u8]) -> Result<()> {
        let Some(operator) = self.db.opts.merge_operator.clone() else {
            return Err(Error::MergeOperatorMissing { key });
        };
        let (value, operand_kept, opts, threshold) = match self.writes.get(&key) {
            None => (operand.to_vec(), true, PutOptions::default(), None),
            Some(w) if w.operand => {
                let prior = w.value.as_deref().unwrap_or_default();
                let run = crate::merge::combine(&*operator, &key, &[prior, operand])?;
                (run, true, PutOptions::default(), None)
            }
            Some(w) => {
                let v = crate::merge::fold(&*operator, &key, w.value.as_deref(), &[operand])?;
                let opts = if w.value.is_some() {
                    w.opts
                } else {
                    PutOptions::default()
                };
                (v, false, opts, w.value_threshold)
            }
        };
        self.write(key.clone(), Some(&value), opts, threshold)?;
        if let Some(w) = self.writes.get_mut(&key) {
            w.operand = operand_kept;
        }
        Ok(())
    }

    /// Buffers a delete.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.check_usable()?;
        self.db.check_user_key(key)?;
        self.write(key.to_vec(), None, PutOptions::default(), None)
    }

    /// Buffers a put in keyspace `ks` (with its default TTL, if it has one).
    pub fn set_in(&mut self, ks: &Keyspace, key: &[u8], value: &[u8]) -> Result<()> {
        self.set_with_in(ks, key, value, PutOptions::default())
    }

    /// Buffers a put in keyspace `ks` with user meta and/or a time to live
    /// (without one, the keyspace's default TTL).
    pub fn set_with_in(
        &mut self,
        ks: &Keyspace,
        key: &[u8],
        value: &[u8],
        mut opts: PutOptions,
    ) -> Result<()> {
        self.check_usable()?;
        self.db.check_keyspace_key(ks.shared(), key)?;
        let o = ks.options();
        if opts.ttl.is_none() {
            opts.ttl = o.default_ttl;
        }
        self.write(
            ks.shared().storage_key(key),
            Some(value),
            opts,
            o.value_threshold,
        )?;
        self.note_keyspace(ks);
        Ok(())
    }

    /// Buffers a delete in keyspace `ks`.
    pub fn delete_in(&mut self, ks: &Keyspace, key: &[u8]) -> Result<()> {
        self.check_usable()?;
        self.db.check_keyspace_key(ks.shared(), key)?;
        self.write(
            ks.shared().storage_key(key),
            None,
            PutOptions::default(),
            None,
        )?;
        self.note_keyspace(ks);
        Ok(())
    }

    /// Buffers a delete of every key of keyspace `ks` in `[start, end)` (an
    /// empty `end` is the keyspace's end), as [`Txn::delete_range`].
    pub fn delete_range_in(&mut self, ks: &Keyspace, start: &[u8], end: &[u8]) -> Result<()> {
        self.check_usable()?;
        ks.shared().check_live()?;
        let (start, end) = ks.shared().storage_range(start, end);
        self.db
            .check_range_in(&start, &end, crate::keyspace::PREFIX_LEN)?;
        self.range(start, end)?;
        self.note_keyspace(ks);
        Ok(())
    }

    fn note_keyspace(&mut self, ks: &Keyspace) {
        if !self.keyspaces.iter().any(|k| Arc::ptr_eq(k, ks.shared())) {
            self.keyspaces.push(ks.shared().clone());
        }
    }

    /// An iterator over keyspace `ks` as this transaction sees it (keys
    /// without the keyspace's prefix, as [`Keyspace::iter`]).
    pub fn iter_in(&self, ks: &Keyspace, opts: IterOptions) -> Result<DbIterator> {
        ks.shared().check_live()?;
        self.iter_region(opts, Region::Keyspace(&ks.shared().storage_key(b"")))
    }

    /// Buffers a delete of every key in `[start, end)` (as
    /// [`crate::Db::delete_range`]; an empty `end` is unbounded): this
    /// transaction's reads and iterators no longer see the snapshot's keys
    /// in the range, nor its own earlier writes there; later ones are kept.
    /// At commit it is applied before the other writes, in the same batch.
    /// It stays in the default keyspace (as [`WriteBatch::delete_range`]).
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        self.check_usable()?;
        if crate::keyspace::is_reserved(start) {
            return Err(crate::keyspace::reserved_error("range start", start));
        }
        self.db.check_range(start, end)?;
        let end = crate::keyspace::clamp_default_end(end.to_vec());
        self.range(start.to_vec(), end)
    }

    fn range(&mut self, start: Vec<u8>, end: Vec<u8>) -> Result<()> {
        if !self.update {
            return Err(Error::InvalidArgument(
                "write in a read-only transaction".into(),
            ));
        }
        self.charge(start.len() + end.len())?;
        self.writes.retain(|k, _| !in_range(k, &start, &end));
        self.ranges.push((start, end));
        Ok(())
    }

    /// Counts `bytes` more against `max_txn_size`; past it nothing is counted.
    fn charge(&mut self, bytes: usize) -> Result<()> {
        let size = self.size + bytes;
        if size > self.db.opts.max_txn_size {
            return Err(Error::TooBig {
                what: "transaction",
                len: size,
                max: self.db.opts.max_txn_size,
            });
        }
        self.size = size;
        Ok(())
    }

    /// Buffers a write of a checked storage key.
    fn write(
        &mut self,
        key: Vec<u8>,
        value: Option<&[u8]>,
        opts: PutOptions,
        value_threshold: Option<usize>,
    ) -> Result<()> {
        if !self.update {
            return Err(Error::InvalidArgument(
                "write in a read-only transaction".into(),
            ));
        }
        let vlen = value.map_or(0, <[u8]>::len);
        if vlen > self.db.opts.max_value_size {
            return Err(Error::TooBig {
                what: "value",
                len: vlen,
                max: self.db.opts.max_value_size,
            });
        }
        self.charge(key.len() + vlen)?;
        self.writes.insert(
            key,
            PendingWrite {
                value: value.map(<[u8]>::to_vec),
                operand: false,
                opts,
                value_threshold,
            },
        );
        Ok(())
    }

    /// An iterator over this transaction's view: the snapshot plus its own writes.
    /// It walks the default keyspace, as [`crate::Db::iter`].
    pub fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
        self.iter_region(opts, Region::Default)
    }

    fn iter_region(&self, opts: IterOptions, region: Region<'_>) -> Result<DbIterator> {
        self.check_usable()?;
        let mut pending = Vec::with_capacity(self.writes.len());
        for (k, w) in &self.writes {
            let mut rec = Vec::new();
            match &w.value {
                Some(v) if w.operand => value::encode(&mut rec, &Stored::Merge(v), 0, 0),
                Some(v) => value::encode(&mut rec, &Stored::Inline(v), w.opts.user_meta, 0),
                None => value::encode(&mut rec, &Stored::Delete, 0, 0),
            }
            pending.push((crate::key::encode(k, crate::key::MAX_SEQ), rec));
        }
        let view = TxnView {
            pending: Arc::new(pending),
            ranges: Arc::new(self.ranges.clone()),
            reads: self.update.then(|| self.reads.clone()),
        };
        self.db.iter(
            opts,
            Some((self.read_ts, self.state.clone())),
            Some(view),
            region,
        )
    }

    /// Applies the writes atomically, or fails with `Error::Conflict` if a write
    /// committed since `read_ts` touched a key this transaction read.
    pub fn commit(mut self) -> Result<()> {
        self.check_usable()?;
        let result = if self.writes.is_empty() && self.ranges.is_empty() {
            Ok(())
        } else {
            let mut batch = WriteBatch::new();
            // Keys and ranges were checked when buffered: default ones
            // never start with the marker, keyspace ones always do.
            let space = |k: &[u8]| {
                if crate::keyspace::is_reserved(k) {
                    Space::Keyspace
                } else {
                    Space::User
                }
            };
            for (start, end) in std::mem::take(&mut self.ranges) {
                let sp = space(&start);
                batch.push_range(&start, &end, sp);
            }
            for (k, w) in std::mem::take(&mut self.writes) {
                let sp = space(&k);
                match (&w.value, w.operand) {
                    (Some(op), true) => batch.push_merge(&k, op, sp),
                    _ => batch.push_op(&k, w.value.as_deref(), w.opts, sp, w.value_threshold),
                }
            }
            batch.keyspaces = std::mem::take(&mut self.keyspaces);
            let reads = std::mem::take(&mut *lock(&self.reads));
            self.db.write(
                crate::db::WriterKind::Batch(batch),
                Some(crate::db::TxnCheck {
                    read_ts: self.read_ts,
                    reads,
                }),
            )
        };
        self.end();
        result
    }

    /// Drops the buffered writes.
    pub fn discard(mut self) {
        self.end();
    }

    fn check_usable(&self) -> Result<()> {
        if self.ended {
            return Err(Error::InvalidArgument(
                "transaction already committed or discarded".into(),
            ));
        }
        self.db.check_open()
    }

    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            if self.update {
                self.db.commit.end_txn(self.read_ts);
            }
        }
    }
}

/// True when `key` lies in `[start, end)` (an empty end is unbounded).
pub(crate) fn in_range(key: &[u8], start: &[u8], end: &[u8]) -> bool {
    key >= start && (end.is_empty() || key < end)
}

impl Drop for Txn {
    fn drop(&mut self) {
        self.end();
    }
}

impl Db {
    /// Starts a transaction: read-write if `update`, else read-only.
    pub fn begin(&self, update: bool) -> Result<Txn> {
        Txn::begin(&self.inner, update)
    }

    /// Runs `f` in a read-write transaction and commits it, running `f` again
    /// (up to [`UPDATE_RETRIES`](crate::txn::UPDATE_RETRIES) times) when the commit
    /// conflicts. An error from `f` discards the transaction and is returned.
    pub fn update<T>(&self, f: impl FnMut(&mut Txn) -> Result<T>) -> Result<T> {
        crate::txn::update(|| self.begin(true), f)
    }

    /// Runs `f` in a read-only transaction: a stable snapshot while writes go on.
    pub fn view<T>(&self, f: impl FnOnce(&Txn) -> Result<T>) -> Result<T> {
        let txn = self.begin(false)?;
        f(&txn)
    }
}
