//! The memtable: a concurrent skiplist of internal key → value record, behind a
//! narrow type so that the structure can be swapped if measurements ask for it.

use crate::key::{self, IKey, KeyRef};
use crossbeam_skiplist::SkipMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Estimated bytes of skiplist node, tower and allocation headers per entry.
const ENTRY_OVERHEAD: usize = 80;

pub struct Memtable {
    map: SkipMap<IKey, Box<[u8]>>,
    bytes: AtomicUsize,
    max_seq: AtomicU64,
    /// The id of the WAL file that holds this memtable's writes.
    wal_id: u64,
}

/// An owned (internal key, value record) pair.
pub(crate) type OwnedEntry = (Box<[u8]>, Box<[u8]>);

impl Memtable {
    pub fn new(wal_id: u64) -> Memtable {
        Memtable {
            map: SkipMap::new(),
            bytes: AtomicUsize::new(0),
            max_seq: AtomicU64::new(0),
            wal_id,
        }
    }

    pub(crate) fn wal_id(&self) -> u64 {
        self.wal_id
    }

    /// Inserts `user_key@seq`. A second insert of the same version replaces it
    /// (a batch that writes one key twice keeps its last write).
    pub fn insert(&self, user_key: &[u8], seq: u64, value: &[u8]) {
        let k = key::encode(user_key, seq);
        self.bytes
            .fetch_add(k.len() + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.max_seq.fetch_max(seq, Ordering::Relaxed);
        self.map.insert(IKey(k.into_boxed_slice()), value.into());
    }

    /// The newest version of `user_key` at or below `read_seq`: (seq, value record).
    pub fn get(&self, user_key: &[u8], read_seq: u64) -> Option<(u64, Vec<u8>)> {
        let seek = key::encode(user_key, read_seq);
        let e = self.map.lower_bound(Bound::Included(KeyRef::new(&seek)))?;
        let (uk, seq) = key::split(&e.key().0);
        (uk == user_key).then(|| (seq, e.value().to_vec()))
    }

    /// Up to `limit` entries after `from` (or from the start), in order.
    pub(crate) fn scan_forward(&self, from: Bound<&[u8]>, limit: usize) -> Vec<OwnedEntry> {
        let from = map_bound(from);
        self.map
            .range::<KeyRef, _>((from, Bound::Unbounded))
            .take(limit)
            .map(|e| (e.key().0.clone(), e.value().clone()))
            .collect()
    }

    /// Up to `limit` entries before `to` (or from the end), in reverse order.
    pub(crate) fn scan_backward(&self, to: Bound<&[u8]>, limit: usize) -> Vec<OwnedEntry> {
        let to = map_bound(to);
        self.map
            .range::<KeyRef, _>((Bound::Unbounded, to))
            .rev()
            .take(limit)
            .map(|e| (e.key().0.clone(), e.value().clone()))
            .collect()
    }

    /// Every entry in order, for a flush.
    pub(crate) fn for_each(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for e in self.map.iter() {
            f(&e.key().0, e.value())?;
        }
        Ok(())
    }

    /// Estimated memory held, in bytes.
    pub fn size(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn max_seq(&self) -> u64 {
        self.max_seq.load(Ordering::Relaxed)
    }
}

fn map_bound(b: Bound<&[u8]>) -> Bound<&KeyRef> {
    match b {
        Bound::Included(k) => Bound::Included(KeyRef::new(k)),
        Bound::Excluded(k) => Bound::Excluded(KeyRef::new(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_sees_the_newest_version_at_or_below_read_seq() {
        let m = Memtable::new(1);
        m.insert(b"k", 1, b"v1");
        m.insert(b"k", 5, b"v5");
        m.insert(b"kk", 3, b"other");
        assert_eq!(m.get(b"k", 10), Some((5, b"v5".to_vec())));
        assert_eq!(m.get(b"k", 4), Some((1, b"v1".to_vec())));
        assert_eq!(m.get(b"k", 0), None);
        assert_eq!(m.get(b"j", 10), None);
        assert_eq!(m.max_seq(), 5);
    }

    #[test]
    fn scans_walk_both_directions_from_a_bound() {
        let m = Memtable::new(1);
        for (i, k) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            m.insert(*k, i as u64 + 1, b"v");
        }
        let from = key::encode(b"b", key::MAX_SEQ);
        let fwd = m.scan_forward(Bound::Included(&from), 2);
        let keys: Vec<&[u8]> = fwd.iter().map(|(k, _)| key::user_key(k)).collect();
        assert_eq!(keys, vec![&b"b"[..], b"c"]);
        let back = m.scan_backward(Bound::Excluded(&from), 10);
        assert_eq!(back.len(), 1);
        assert_eq!(key::user_key(&back[0].0), b"a");
        assert!(m.size() > 0);
    }
}
