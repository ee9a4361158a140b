//! Where a data command reads and writes: the Db, or the transaction an EXEC
//! runs its queued commands in. A handler written against [`Kv`] is the same
//! code in both, and a read-modify-write goes through [`Kv::atomic`]: its own
//! transaction on the Db, the surrounding one inside EXEC.

use sett::{Db, DbIterator, Item, IterOptions, PutOptions, Result, Txn, WriteBatch};
use std::time::Duration;

pub(crate) enum Kv<'a> {
    Db(&'a Db),
    Txn(&'a mut Txn),
}

impl Kv<'_> {
    pub fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
        match self {
            Kv::Db(db) => db.get_entry(key),
            Kv::Txn(t) => t.get_entry(key),
        }
    }

    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self {
            Kv::Db(db) => db.get(key),
            Kv::Txn(t) => t.get(key),
        }
    }

    /// The values of `keys`, at one point in time.
    pub fn get_many(&self, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        match self {
            Kv::Db(db) => {
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                db.get_many(&refs)
            }
            Kv::Txn(t) => keys.iter().map(|k| t.get(k)).collect(),
        }
    }

    /// Stores `value` under `key` with a TTL (`None`: no expiry) and no user meta.
    pub fn put(&mut self, key: &[u8], value: &[u8], ttl: Option<Duration>) -> Result<()> {
        self.put_with(key, value, PutOptions { user_meta: 0, ttl })
    }

    pub fn put_with(&mut self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        match self {
            Kv::Db(db) => db.put_with(key, value, opts),
            Kv::Txn(t) => t.set_with(key, value, opts),
        }
    }

    /// Stores every pair at once (no TTL).
    pub fn put_all(&mut self, pairs: &[(Vec<u8>, &[u8])]) -> Result<()> {
        match self {
            Kv::Db(db) => {
                let mut batch = WriteBatch::new();
                for (k, v) in pairs {
                    batch.put(k.clone(), v);
                }
                db.write(batch)
            }
            Kv::Txn(t) => {
                for (k, v) in pairs {
                    t.set(k, v)?;
                }
                Ok(())
            }
        }
    }

    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        match self {
            Kv::Db(db) => db.delete(key),
            Kv::Txn(t) => t.delete(key),
        }
    }

    pub fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
        match self {
            Kv::Db(db) => db.iter(opts),
            Kv::Txn(t) => t.iter(opts),
        }
    }

    /// Runs `f` atomically: in a transaction of its own (retried on conflict)
    /// on the Db, or as part of the surrounding transaction.
    pub fn atomic<T>(&mut self, mut f: impl FnMut(&mut Kv<'_>) -> Result<T>) -> Result<T> {
        match self {
            Kv::Db(db) => db.update(|txn| f(&mut Kv::Txn(txn))),
            Kv::Txn(t) => f(&mut Kv::Txn(t)),
        }
    }
}
