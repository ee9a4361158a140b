//! Keyspace handles: `Keyspace`, `Db::keyspace` and `WriteBatch`'s `_in`
//! verbs, and the Db as the catalog's environment.

use super::catalog::CatalogEnv;
use super::*;
use crate::batch::Space;
use crate::iter::IterOptions;
use crate::keyspace::{
    check_name, is_reserved, reserved_error, KeyspaceOptions, Shared, PREFIX_LEN, RESERVED_PREFIX,
};

/// An `Arc` because the Db's iterators hold their Db.
impl CatalogEnv for Arc<DbInner> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_storage(key)?.map(|i| i.value))
    }

    fn scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let opts = IterOptions {
            prefix: Some(prefix.to_vec()),
            ..IterOptions::default()
        };
        self.iter(opts, None, None, Region::All)?.collect()
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        DbInner::write(self, WriterKind::Batch(batch), None)
    }

    fn check_writable(&self) -> Result<()> {
        DbInner::check_writable(self)
    }

    fn dir(&self) -> &Path {
        &self.dir
    }
}

impl DbInner {
    /// A read of a storage key (no key checks) at the newest version.
    pub(crate) fn get_storage(&self, key: &[u8]) -> Result<Option<Item>> {
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

    /// Merges `operand` into `key` with the Db's merge operator (see
    /// [`crate::Db::merge`]). The keyspace's default TTL does not apply.
    pub fn merge(&self, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge_in(self, key, operand);
        self.write(b)
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

impl WriteBatch {
    /// Adds a put of `key` → `value` in keyspace `ks` (its default TTL applies).
    pub fn put_in(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> &mut Self {
        self.put_with_in(ks, key, value, PutOptions::default())
    }

    /// Adds a put with user meta and/or a time to live in keyspace `ks`; without
    /// a TTL the keyspace's default TTL applies.
    pub fn put_with_in(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        mut opts: PutOptions,
    ) -> &mut Self {
        let o = ks.shared().options();
        if opts.ttl.is_none() {
            opts.ttl = o.default_ttl;
        }
        let key = ks.shared().storage_key(key.as_ref());
        self.push(
            &key,
            Some(value.as_ref()),
            opts,
            0,
            Space::Keyspace,
            o.value_threshold,
        );
        self.note_keyspace(ks.shared());
        self
    }

    /// Adds a merge of `operand` into `key` in keyspace `ks` (see
    /// [`WriteBatch::merge`]).
    pub fn merge_in(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> &mut Self {
        let key = ks.shared().storage_key(key.as_ref());
        self.push_merge(&key, operand.as_ref(), Space::Keyspace);
        self.note_keyspace(ks.shared());
        self
    }

    /// Adds a delete of `key` in keyspace `ks`.
    pub fn delete_in(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> &mut Self {
        let key = ks.shared().storage_key(key.as_ref());
        self.push(&key, None, PutOptions::default(), 0, Space::Keyspace, None);
        self.note_keyspace(ks.shared());
        self
    }

    /// Adds a delete of every key of keyspace `ks` in `[start, end)`; an empty
    /// `end` is the end of the keyspace. As [`WriteBatch::delete_range`].
    pub fn delete_range_in(
        &mut self,
        ks: &Keyspace,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> &mut Self {
        let (start, end) = ks.shared().storage_range(start.as_ref(), end.as_ref());
        self.push_range(&start, &end, Space::Keyspace);
        self.note_keyspace(ks.shared());
        self
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
