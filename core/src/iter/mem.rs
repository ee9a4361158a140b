//! Walks a memtable in chunks of owned entries, so that the iterator holds no
//! borrow of the skiplist and new inserts never invalidate it.

use super::Source;
use crate::error::Result;
use crate::memtable::{Memtable, OwnedEntry};
use std::ops::Bound;
use std::sync::Arc;

const CHUNK: usize = 256;

pub(crate) struct MemIter {
    mem: Arc<Memtable>,
    reverse: bool,
    buf: Vec<OwnedEntry>,
    pos: usize,
}

impl MemIter {
    pub(crate) fn new(mem: Arc<Memtable>, reverse: bool) -> MemIter {
        MemIter {
            mem,
            reverse,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn fill(&mut self, bound: Bound<&[u8]>) {
        self.buf = if self.reverse {
            self.mem.scan_backward(bound, CHUNK)
        } else {
            self.mem.scan_forward(bound, CHUNK)
        };
        self.pos = 0;
    }
}

impl Source for MemIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.fill(Bound::Included(target));
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        self.fill(Bound::Unbounded);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
        } else if self.buf.len() == CHUNK {
            let last = self.buf[self.pos].0.clone();
            self.fill(Bound::Excluded(&last));
        } else {
            self.pos = self.buf.len();
        }
        Ok(())
    }

    fn valid(&self) -> bool {
        self.pos < self.buf.len()
    }

    fn key(&self) -> &[u8] {
        &self.buf[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.buf[self.pos].1
    }
}
