//! Walks a memtable in chunks of entry references, so that the iterator holds
//! no borrow of the skiplist and new inserts never invalidate it. The entries'
//! bytes live in the memtable's arena, which this iterator keeps alive.

use super::Source;
use crate::error::Result;
use crate::memtable::{EntryRef, Memtable};
use std::ops::Bound;
use std::sync::Arc;

/// Entries copied per refill: a seek starts small (a short prefix scan copies
/// little) and refills grow to the largest chunk.
const FIRST_CHUNK: usize = 16;
const MAX_CHUNK: usize = 256;

pub(crate) struct MemIter {
    mem: Arc<Memtable>,
    reverse: bool,
    buf: Vec<EntryRef>,
    pos: usize,
    chunk: usize,
}

impl MemIter {
    pub(crate) fn new(mem: Arc<Memtable>, reverse: bool) -> MemIter {
        MemIter {
            mem,
            reverse,
            buf: Vec::new(),
            pos: 0,
            chunk: FIRST_CHUNK,
        }
    }

    fn fill(&mut self, bound: Bound<&[u8]>) {
        if self.reverse {
            self.mem.scan_backward(bound, self.chunk, &mut self.buf);
        } else {
            self.mem.scan_forward(bound, self.chunk, &mut self.buf);
        }
        self.pos = 0;
    }
}

impl Source for MemIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.chunk = FIRST_CHUNK;
        self.fill(Bound::Included(target));
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        self.chunk = FIRST_CHUNK;
        self.fill(Bound::Unbounded);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if self.pos + 1 < self.buf.len() {
            self.pos += 1;
        } else if self.buf.len() == self.chunk {
            let last = self.buf[self.pos];
            self.chunk = (self.chunk * 4).min(MAX_CHUNK);
            let mem = self.mem.clone();
            // SAFETY: `last` came from `mem`, held alive here.
            let last_key = unsafe { last.key() };
            if self.reverse {
                mem.scan_backward(Bound::Excluded(last_key), self.chunk, &mut self.buf);
            } else {
                mem.scan_forward(Bound::Excluded(last_key), self.chunk, &mut self.buf);
            }
            self.pos = 0;
        } else {
            self.pos = self.buf.len();
        }
        Ok(())
    }

    fn valid(&self) -> bool {
        self.pos < self.buf.len()
    }

    fn key(&self) -> &[u8] {
        // SAFETY: every buffered entry came from `self.mem`, which lives as long as self.
        unsafe { self.buf[self.pos].key() }
    }

    fn value(&self) -> &[u8] {
        // SAFETY: as in key().
        unsafe { self.buf[self.pos].value() }
    }
}
