//! `Store`: the operations the default keyspace (through [`Db`]) and a named
//! [`Keyspace`] share, so that code over either one (a binding's `Db` and
//! `Keyspace` classes, a server's database) is written once.
//!
//! Each method is the type's own method of the same name; the trait adds no
//! behaviour.

use crate::batch::PutOptions;
use crate::db::Keyspace;
use crate::db::{Db, Item};
use crate::error::Result;
use crate::feed::{SubscribeOptions, Subscription};
use crate::iter::{DbIterator, IterOptions};

/// An ordered map of a database: its default keyspace ([`Db`]) or a named
/// [`Keyspace`]. Object safe: `&dyn Store` and `Arc<dyn Store>` work.
pub trait Store: Send + Sync {
    /// The value of `key`, or `None` if it has none (or it expired).
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// The value of `key` with its user meta, expiry and version.
    fn get_entry(&self, key: &[u8]) -> Result<Option<Item>>;
    /// The values of many keys at one consistent point, in the order asked.
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>>;
    /// Stores `key` → `value` (with a keyspace's default TTL, if it has one).
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Stores `key` → `value` with user meta and/or a time to live.
    fn put_with(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()>;
    /// Removes `key` (a no-op if it is absent).
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Merges `operand` into `key` with the Db's merge operator.
    fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()>;
    /// Deletes every key in `[start, end)` with one range tombstone; an
    /// empty `end` is the end of the map.
    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()>;
    /// An iterator over a snapshot of the map taken now.
    fn iter(&self, opts: IterOptions) -> Result<DbIterator>;
    /// The map's committed writes under `opts.prefixes`, in version order.
    fn subscribe(&self, opts: SubscribeOptions) -> Result<Subscription>;
}

/// Forwards every [`Store`] method to the type's own method of that name.
macro_rules! store_by_own_methods {
    ($t:ty) => {
        impl Store for $t {
            fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
                <$t>::get(self, key)
            }
            fn get_entry(&self, key: &[u8]) -> Result<Option<Item>> {
                <$t>::get_entry(self, key)
            }
            fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
                <$t>::get_many(self, keys)
            }
            fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
                <$t>::put(self, key, value)
            }
            fn put_with(&self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
                <$t>::put_with(self, key, value, opts)
            }
            fn delete(&self, key: &[u8]) -> Result<()> {
                <$t>::delete(self, key)
            }
            fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
                <$t>::merge(self, key, operand)
            }
            fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
                <$t>::delete_range(self, start, end)
            }
            fn iter(&self, opts: IterOptions) -> Result<DbIterator> {
                <$t>::iter(self, opts)
            }
            fn subscribe(&self, opts: SubscribeOptions) -> Result<Subscription> {
                <$t>::subscribe(self, opts)
            }
        }
    };
}

store_by_own_methods!(Db);
store_by_own_methods!(Keyspace);
