//! The Db's side of keyspaces: the catalog's environment, and reads of
//! storage keys for keyspace handles.

use super::*;
use crate::iter::IterOptions;
use crate::keyspace::{CatalogEnv, Shared, RESERVED_PREFIX};

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
