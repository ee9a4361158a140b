//! Walks one sorted level (L1 and below): its tables in key order, one open at a time.

use super::Source;
use crate::error::Result;
use crate::key;
use crate::levels::Version;
use crate::table::{Table, TableIter};
use std::cmp::Ordering;
use std::ops::Range;
use std::sync::Arc;

pub(crate) struct LevelIter {
    /// Holds the level's tables; walking them needs no copy of its list.
    version: Arc<Version>,
    level: usize,
    /// The run of the level's tables this walk covers.
    run: Range<usize>,
    reverse: bool,
    cur: Option<(usize, TableIter)>,
}

impl LevelIter {
    /// Walks tables `run` of `level` (1 or deeper: sorted by key, not overlapping).
    pub(crate) fn new(
        version: Arc<Version>,
        level: usize,
        run: Range<usize>,
        reverse: bool,
    ) -> LevelIter {
        LevelIter {
            version,
            level,
            run,
            reverse,
            cur: None,
        }
    }

    /// The tables walked, indexed from 0.
    fn tables(&self) -> &[Arc<Table>] {
        self.version.levels[self.level]
            .get(self.run.clone())
            .unwrap_or(&[])
    }

    /// Opens table `i` rewound; moves on while tables turn out empty.
    fn open_at(&mut self, mut i: Option<usize>) -> Result<()> {
        self.cur = None;
        while let Some(t) = i.filter(|&t| t < self.tables().len()) {
            let mut it = TableIter::new(self.tables()[t].clone(), self.reverse);
            it.rewind()?;
            if it.valid() {
                self.cur = Some((t, it));
                return Ok(());
            }
            i = if self.reverse {
                t.checked_sub(1)
            } else {
                Some(t + 1)
            };
        }
        Ok(())
    }
}

impl Source for LevelIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let tables = self.tables();
        let t = if self.reverse {
            // Last table whose smallest key is ≤ target.
            tables
                .partition_point(|t| key::compare(t.smallest(), target) != Ordering::Greater)
                .checked_sub(1)
        } else {
            Some(tables.partition_point(|t| key::compare(t.largest(), target) == Ordering::Less))
        };
        let Some(t) = t.filter(|&t| t < tables.len()) else {
            self.cur = None;
            return Ok(());
        };
        let mut it = TableIter::new(tables[t].clone(), self.reverse);
        it.seek(target)?;
        if it.valid() {
            self.cur = Some((t, it));
            Ok(())
        } else {
            self.open_at(if self.reverse {
                t.checked_sub(1)
            } else {
                Some(t + 1)
            })
        }
    }

    fn rewind(&mut self) -> Result<()> {
        let first = if self.reverse {
            self.tables().len().checked_sub(1)
        } else {
            Some(0)
        };
        self.open_at(first)
    }

    fn next(&mut self) -> Result<()> {
        let Some((t, it)) = self.cur.as_mut() else {
            return Ok(());
        };
        it.next()?;
        if !it.valid() {
            let t = *t;
            self.open_at(if self.reverse {
                t.checked_sub(1)
            } else {
                Some(t + 1)
            })?;
        }
        Ok(())
    }

    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|(_, it)| it.key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|(_, it)| it.value()).unwrap_or(&[])
    }
}
