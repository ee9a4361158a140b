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
    /// The internal key where the walk ends (forward: excluded, reverse:
    /// included), from the iterator's bounds: a short prefix scan copies no
    /// entry past its prefix.
    stop: Option<Vec<u8>>,
    buf: Vec<EntryRef>,
    pos: usize,
    chunk: usize,
}

impl MemIter {
    /// A walk over the user keys in `[lower, upper)` (`None`: unbounded).
    pub(crate) fn new(
        mem: Arc<Memtable>,
        reverse: bool,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> MemIter {
        // Every version of a user key sorts after `key@MAX_SEQ`.
        let stop = if reverse { lower } else { upper };
        MemIter {
            mem,
            reverse,
            stop: stop.map(|k| crate::key::encode(k, crate::key::MAX_SEQ)),
            buf: Vec::new(),
            pos: 0,
            chunk: FIRST_CHUNK,
        }
    }

    fn fill(&mut self, bound: Bound<&[u8]>) {
        fill(
            &self.mem,
            self.reverse,
            &self.stop,
            bound,
            self.chunk,
            &mut self.buf,
        );
        self.pos = 0;
    }
}

/// Up to `chunk` entries of `mem` from `bound` on, in the walk's direction, short of `stop`.
fn fill(
    mem: &Memtable,
    reverse: bool,
    stop: &Option<Vec<u8>>,
    bound: Bound<&[u8]>,
    chunk: usize,
    buf: &mut Vec<EntryRef>,
) {
    if reverse {
        let until = stop.as_deref().map_or(Bound::Unbounded, Bound::Included);
        mem.scan_backward(bound, until, chunk, buf);
    } else {
        let until = stop.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        mem.scan_forward(bound, until, chunk, buf);
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
            fill(
                &mem,
                self.reverse,
                &self.stop,
                Bound::Excluded(last_key),
                self.chunk,
                &mut self.buf,
            );
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
