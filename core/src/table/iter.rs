//! Walks one table forward or backward.

use super::block::DecodedBlock;
use super::Table;
use crate::error::Result;
use crate::iter::Source;
use crate::key;
use std::cmp::Ordering;
use std::sync::Arc;

pub(crate) struct TableIter {
    table: Arc<Table>,
    reverse: bool,
    block_idx: usize,
    block: DecodedBlock,
    base: usize,
    pos: usize,
    valid: bool,
    /// Compaction inputs: the table bytes before this offset were consumed and
    /// their pages are given back once a stretch of them is (see `load`).
    release_from: Option<usize>,
}

/// A compaction input gives back its consumed pages in steps of this many bytes.
const RELEASE_STEP: usize = 1 << 20;

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, reverse: bool) -> TableIter {
        TableIter {
            table,
            reverse,
            block_idx: 0,
            block: DecodedBlock::default(),
            base: 0,
            pos: 0,
            valid: false,
            release_from: None,
        }
    }

    /// A forward walk that reads the table once, start to end (a compaction
    /// input): pages it has passed leave the process's resident set.
    pub(crate) fn streaming(table: Arc<Table>) -> TableIter {
        let mut it = TableIter::new(table, false);
        it.release_from = Some(0);
        it
    }

    fn load(&mut self, i: usize) -> Result<()> {
        let (block, base) = self.table.block(i)?;
        if let Some(from) = self.release_from {
            if base >= from + RELEASE_STEP {
                self.table.release_pages(from, base);
                self.release_from = Some(base);
            }
        }
        self.block = block;
        self.base = base;
        self.block_idx = i;
        Ok(())
    }

    /// Positions at the first entry of block `i` or later (forward).
    fn first_from(&mut self, i: usize) -> Result<()> {
        self.valid = false;
        if i < self.table.index().len() {
            self.load(i)?;
            self.pos = 0;
            self.valid = true;
        }
        Ok(())
    }

    /// Positions at the last entry of block `i` (reverse); `None` means before the first block.
    fn last_of(&mut self, i: Option<usize>) -> Result<()> {
        self.valid = false;
        if let Some(i) = i {
            self.load(i)?;
            self.pos = self.block.len() - 1;
            self.valid = true;
        }
        Ok(())
    }
}

impl Source for TableIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let b = self.table.find_block(target);
        let nblocks = self.table.index().len();
        if !self.reverse {
            self.first_from(b)?;
            if self.valid {
                self.pos = self.block.lower_bound(target);
                if self.pos == self.block.len() {
                    self.first_from(b + 1)?;
                }
            }
            return Ok(());
        }
        if b == nblocks {
            return self.last_of(nblocks.checked_sub(1));
        }
        self.load(b)?;
        let i = self.block.lower_bound(target);
        // Last entry ≤ target: the entry at i if equal, else the one before it.
        if i < self.block.len() && key::compare(self.block.key(i), target) == Ordering::Equal {
            self.pos = i;
            self.valid = true;
        } else if i > 0 {
            self.pos = i - 1;
            self.valid = true;
        } else {
            self.last_of(b.checked_sub(1))?;
        }
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        if self.reverse {
            self.last_of(self.table.index().len().checked_sub(1))
        } else {
            self.first_from(0)
        }
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.reverse {
            if self.pos > 0 {
                self.pos -= 1;
                Ok(())
            } else {
                self.last_of(self.block_idx.checked_sub(1))
            }
        } else if self.pos + 1 < self.block.len() {
            self.pos += 1;
            Ok(())
        } else {
            self.first_from(self.block_idx + 1)
        }
    }

    fn valid(&self) -> bool {
        self.valid
    }

    fn key(&self) -> &[u8] {
        self.block.key(self.pos)
    }

    fn value(&self) -> &[u8] {
        let r = self.block.value_range(self.pos);
        &self.table.bytes()[self.base + r.start..self.base + r.end]
    }
}
