//! The level structure: which tables are live at which level.
//!
//! L0 holds flushed memtables, possibly overlapping, newest first. L1 and below
//! hold tables sorted by key that do not overlap, each level about
//! `level_multiplier` times larger than the one above.

pub(crate) mod compaction;

use crate::error::Result;
use crate::iter::{LevelIter, Source};
use crate::key;
use crate::table::{Table, TableIter};
use std::collections::HashSet;
use std::sync::Arc;

#[derive(Clone, Default)]
pub(crate) struct Version {
    pub levels: Vec<Vec<Arc<Table>>>,
}

impl Version {
    pub(crate) fn new(num_levels: usize) -> Version {
        Version {
            levels: vec![Vec::new(); num_levels],
        }
    }

    /// A new version with `removed` table ids gone and `added` tables placed.
    pub(crate) fn apply(&self, removed: &HashSet<u64>, added: &[(usize, Arc<Table>)]) -> Version {
        let mut levels: Vec<Vec<Arc<Table>>> = self
            .levels
            .iter()
            .map(|l| {
                l.iter()
                    .filter(|t| !removed.contains(&t.id()))
                    .cloned()
                    .collect()
            })
            .collect();
        for (level, t) in added {
            levels[*level].push(t.clone());
        }
        levels[0].sort_by_key(|t| std::cmp::Reverse(t.id()));
        for l in levels.iter_mut().skip(1) {
            l.sort_by(|a, b| key::compare(a.smallest(), b.smallest()));
        }
        Version { levels }
    }

    /// The newest version of `user_key` at or below `read_seq` in any table.
    pub(crate) fn get(&self, user_key: &[u8], read_seq: u64) -> Result<Option<(u64, Vec<u8>)>> {
        let hash = crate::table::bloom::hash(user_key);
        for t in &self.levels[0] {
            if let Some(found) = t.get(user_key, hash, read_seq)? {
                return Ok(Some(found));
            }
        }
        for level in &self.levels[1..] {
            let i = level.partition_point(|t| key::user_key(t.largest()) < user_key);
            if let Some(t) = level.get(i) {
                if let Some(found) = t.get(user_key, hash, read_seq)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// Starts reading the data block of the newest table that may hold
    /// `user_key` ([`Table::will_need_block`]), the one [`Version::get`]
    /// reads first, without waiting for it.
    pub(crate) fn will_need(&self, user_key: &[u8], read_seq: u64) -> Result<()> {
        let hash = crate::table::bloom::hash(user_key);
        let deeper = self.levels[1..].iter().filter_map(|level| {
            level.get(level.partition_point(|t| key::user_key(t.largest()) < user_key))
        });
        for t in self.levels[0].iter().chain(deeper) {
            if t.will_need_block(user_key, hash, read_seq)? {
                break;
            }
        }
        Ok(())
    }

    /// Merge sources, newest first, for a walk over the user keys in
    /// `[lower, upper)` (`None`: unbounded): one per L0 table whose key range
    /// meets the bounds, and per deeper level one over the run of tables that
    /// meets them (found by binary search; a run of one table is walked
    /// directly). Tables outside the bounds are never opened.
    pub(crate) fn sources(
        self: &Arc<Self>,
        reverse: bool,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        out: &mut Vec<Box<dyn Source>>,
    ) {
        let meets = |t: &Table| {
            lower.is_none_or(|l| key::user_key(t.largest()) >= l)
                && upper.is_none_or(|u| key::user_key(t.smallest()) < u)
        };
        for t in &self.levels[0] {
            if meets(t) {
                out.push(Box::new(TableIter::new(t.clone(), reverse)));
            }
        }
        for (n, level) in self.levels.iter().enumerate().skip(1) {
            let (from, to) = self.run(n, lower, upper);
            match to.saturating_sub(from) {
                0 => {}
                1 => out.push(Box::new(TableIter::new(level[from].clone(), reverse))),
                _ => out.push(Box::new(LevelIter::new(self.clone(), n, from..to, reverse))),
            }
        }
    }

    /// The index range of the tables of sorted level `level` (1 or deeper)
    /// whose user-key range meets `[lower, upper)`.
    pub(crate) fn run(
        &self,
        level: usize,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> (usize, usize) {
        let tables = &self.levels[level];
        let from = lower.map_or(0, |l| {
            tables.partition_point(|t| key::user_key(t.largest()) < l)
        });
        let to = upper.map_or(tables.len(), |u| {
            tables.partition_point(|t| key::user_key(t.smallest()) < u)
        });
        (from, to.max(from))
    }

    /// Tables of `level` whose user-key range meets [lo, hi].
    pub(crate) fn overlapping(&self, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<Table>> {
        self.levels[level]
            .iter()
            .filter(|t| key::user_key(t.smallest()) <= hi && key::user_key(t.largest()) >= lo)
            .cloned()
            .collect()
    }

    /// Bytes of the tables of `level` (sorted, not L0) whose user-key range
    /// meets [lo, hi]; `None` if one of them is in `busy`.
    pub(crate) fn overlap_bytes(
        &self,
        level: usize,
        lo: &[u8],
        hi: &[u8],
        busy: &HashSet<u64>,
    ) -> Option<u64> {
        let tables = &self.levels[level];
        let from = tables.partition_point(|t| key::user_key(t.largest()) < lo);
        let to = tables.partition_point(|t| key::user_key(t.smallest()) <= hi);
        let run = tables.get(from..to.max(from)).unwrap_or(&[]);
        if run.iter().any(|t| busy.contains(&t.id())) {
            return None;
        }
        Some(run.iter().map(|t| t.size()).sum())
    }

    pub(crate) fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|t| t.size()).sum()
    }
}
