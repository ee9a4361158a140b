//! A transaction's own pending writes as a merge source (sorted, owned).

use super::Source;
use crate::error::Result;
use crate::key;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// What a transaction's iterator needs: its pending writes (as internal key,
/// value record, sorted) and the read set to record keys in.
pub(crate) struct TxnView {
    pub pending: Arc<Vec<(Vec<u8>, Vec<u8>)>>,
    /// Its pending range deletes: they hide the snapshot's keys in them.
    pub ranges: crate::range_del::KeyRanges,
    pub reads: Option<Arc<Mutex<HashSet<u64>>>>,
}

pub(crate) struct PendingIter {
    entries: Arc<Vec<(Vec<u8>, Vec<u8>)>>,
    reverse: bool,
    /// Index of the current entry; `entries.len()` means exhausted.
    pos: usize,
}

impl PendingIter {
    /// `entries` must be sorted by internal key.
    pub(crate) fn new(entries: Arc<Vec<(Vec<u8>, Vec<u8>)>>, reverse: bool) -> PendingIter {
        let pos = entries.len();
        PendingIter {
            entries,
            reverse,
            pos,
        }
    }
}

impl Source for PendingIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let first_ge = self
            .entries
            .partition_point(|(k, _)| key::compare(k, target) == Ordering::Less);
        let exact = first_ge < self.entries.len()
            && key::compare(&self.entries[first_ge].0, target) == Ordering::Equal;
        self.pos = if !self.reverse || exact {
            first_ge
        } else {
            first_ge.checked_sub(1).unwrap_or(self.entries.len())
        };
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        self.pos = if self.reverse {
            self.entries.len().saturating_sub(1)
        } else {
            0
        };
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.pos < self.entries.len() {
            self.pos = if self.reverse {
                self.pos.checked_sub(1).unwrap_or(self.entries.len())
            } else {
                self.pos + 1
            };
        }
        Ok(())
    }

    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }

    fn key(&self) -> &[u8] {
        &self.entries[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.entries[self.pos].1
    }
}
