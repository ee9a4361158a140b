//! The Db iterator: a snapshot view over the merge of every source, with bounds,
//! direction, keys-only mode and value prefetch.

use super::{MergeIter, Source};
use crate::db::{lock, DbInner, SnapshotGuard};
use crate::error::{Error, Result};
use crate::key;
use crate::table::bloom;
use crate::value::{self, Stored, ValuePointer};
use crate::vlog::{ValueBytes, VlogSet};
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

/// What to walk and how.
#[derive(Debug, Clone)]
pub struct IterOptions {
    /// Only keys starting with this prefix.
    pub prefix: Option<Vec<u8>>,
    /// Only keys ≥ this (inclusive lower bound).
    pub start: Option<Vec<u8>>,
    /// Only keys < this (exclusive upper bound).
    pub end: Option<Vec<u8>>,
    /// Walk from the largest key down.
    pub reverse: bool,
    /// Return keys only; the value log is never read.
    pub keys_only: bool,
    /// Items whose values are read ahead of the caller (separated values are read
    /// in one pass, neighbours in one call). Default 64; at least 1.
    pub prefetch: usize,
}

impl Default for IterOptions {
    fn default() -> Self {
        IterOptions {
            prefix: None,
            start: None,
            end: None,
            reverse: false,
            keys_only: false,
            prefetch: 64,
        }
    }
}

enum Pending {
    Ready(Vec<u8>),
    Pointer(ValuePointer),
}

/// A cursor over the Db at the moment it was created. Writes made after that
/// are not seen. Use `valid`/`key`/`value`/`advance`, or the `Iterator` impl.
pub struct DbIterator {
    db: Arc<DbInner>,
    vlogs: Arc<VlogSet>,
    /// A read-write transaction's read set: keys this iterator yields go in it.
    reads: Option<Arc<Mutex<HashSet<u64>>>>,
    /// Entries that expire at or before this (unix seconds) read as absent.
    now: u64,
    merge: MergeIter,
    read_seq: u64,
    _snapshot: SnapshotGuard,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    reverse: bool,
    keys_only: bool,
    prefetch: usize,
    chunk: usize,
    buf: VecDeque<(Vec<u8>, ValueBytes)>,
    /// The merge has nothing more within bounds.
    done: bool,
    /// An error met while reading ahead, returned after the buffered items.
    err: Option<Error>,
}

impl DbIterator {
    pub(crate) fn new(
        db: Arc<DbInner>,
        vlogs: Arc<VlogSet>,
        merge: MergeIter,
        snapshot: SnapshotGuard,
        reads: Option<Arc<Mutex<HashSet<u64>>>>,
        opts: IterOptions,
    ) -> Result<DbIterator> {
        let read_seq = snapshot.seq();
        let now = db.now();
        let mut lower = opts.start;
        let mut upper = opts.end;
        if let Some(p) = &opts.prefix {
            if lower.as_ref().is_none_or(|l| l < p) {
                lower = Some(p.clone());
            }
            if let Some(pend) = key::prefix_successor(p) {
                if upper.as_ref().is_none_or(|u| *u > pend) {
                    upper = Some(pend);
                }
            }
        }
        let mut it = DbIterator {
            db,
            vlogs,
            reads,
            now,
            merge,
            read_seq,
            _snapshot: snapshot,
            lower,
            upper,
            reverse: opts.reverse,
            keys_only: opts.keys_only,
            prefetch: opts.prefetch.max(1),
            chunk: 1,
            buf: VecDeque::new(),
            done: false,
            err: None,
        };
        it.rewind()?;
        Ok(it)
    }

    /// Goes back to the first key (the last when reverse) within bounds.
    pub fn rewind(&mut self) -> Result<()> {
        let target = if self.reverse {
            self.upper.as_ref().map(|u| key::encode(u, key::MAX_SEQ))
        } else {
            self.lower.as_ref().map(|l| key::encode(l, key::MAX_SEQ))
        };
        match target {
            Some(t) => self.merge.seek(&t)?,
            None => self.merge.rewind()?,
        }
        self.restart()
    }

    /// Moves to the first key ≥ `k` (reverse: the last key ≤ `k`), within bounds.
    pub fn seek(&mut self, k: &[u8]) -> Result<()> {
        if self.reverse {
            match &self.upper {
                Some(u) if k >= u.as_slice() => self.merge.seek(&key::encode(u, key::MAX_SEQ))?,
                _ => self.merge.seek(&key::encode(k, 0))?,
            }
        } else {
            match &self.lower {
                Some(l) if k < l.as_slice() => self.merge.seek(&key::encode(l, key::MAX_SEQ))?,
                _ => self.merge.seek(&key::encode(k, key::MAX_SEQ))?,
            }
        }
        self.restart()
    }

    fn restart(&mut self) -> Result<()> {
        self.buf.clear();
        self.done = false;
        self.chunk = 1;
        self.fill()
    }

    /// True while the cursor is on an entry.
    pub fn valid(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        self.buf.front().map(|(k, _)| &k[..]).unwrap_or(&[])
    }

    /// The current value (empty when not valid or keys-only).
    pub fn value(&self) -> &[u8] {
        self.buf.front().map(|(_, v)| v.as_slice()).unwrap_or(&[])
    }

    /// Moves to the next entry.
    pub fn advance(&mut self) -> Result<()> {
        self.buf.pop_front();
        if self.buf.is_empty() {
            self.fill()?;
        }
        Ok(())
    }

    fn in_bounds(&self, uk: &[u8]) -> bool {
        if self.reverse {
            self.lower.as_ref().is_none_or(|l| uk >= l.as_slice())
        } else {
            self.upper.as_ref().is_none_or(|u| uk < u.as_slice())
        }
    }

    /// Reads the next user-visible entry from the merge, if any.
    fn pull(&mut self) -> Result<Option<(Vec<u8>, Option<Pending>)>> {
        loop {
            if self.done || !self.merge.valid() {
                self.done = true;
                return Ok(None);
            }
            let (uk, _) = key::split(self.merge.key());
            if !self.in_bounds(uk) {
                self.done = true;
                return Ok(None);
            }
            let uk = uk.to_vec();
            // The newest version at or below read_seq: forward walks meet it first
            // among the visible ones, reverse walks meet it last.
            let mut chosen: Option<Option<Pending>> = None;
            while self.merge.valid() {
                let (k, seq) = key::split(self.merge.key());
                if k != uk.as_slice() {
                    break;
                }
                // MAX_SEQ marks a transaction's own pending write: always visible.
                let visible = seq <= self.read_seq || seq == key::MAX_SEQ;
                if visible && (self.reverse || chosen.is_none()) {
                    chosen = Some(self.decode_current()?);
                }
                self.merge.next()?;
            }
            if let Some(Some(p)) = chosen {
                return Ok(Some((uk, Some(p))));
            }
            if let Some(None) = chosen {
                continue; // tombstone
            }
        }
    }

    /// The value of the merge's current entry: `None` for a tombstone.
    fn decode_current(&self) -> Result<Option<Pending>> {
        let raw = self.merge.value();
        let rec = value::decode(raw).ok_or_else(|| {
            Error::corruption(
                self.db.dir(),
                0,
                "undecodable value record met while iterating",
            )
        })?;
        if rec.expires_at != 0 && rec.expires_at <= self.now {
            return Ok(None);
        }
        Ok(match rec.stored {
            Stored::Delete => None,
            _ if self.keys_only => Some(Pending::Ready(Vec::new())),
            Stored::Inline(v) => Some(Pending::Ready(v.to_vec())),
            Stored::Pointer(p) => Some(Pending::Pointer(p)),
        })
    }

    /// Buffers the next chunk of entries, reading their separated values in one pass.
    fn fill(&mut self) -> Result<()> {
        if self.db.is_closed() {
            return Err(Error::Closed);
        }
        let mut pending = Vec::new();
        while pending.len() < self.chunk {
            match self.pull()? {
                Some((k, Some(p))) => pending.push((k, p)),
                Some((_, None)) => {}
                None => break,
            }
        }
        // Start small so that a seek followed by a few reads stays cheap.
        self.chunk = (self.chunk * 4).min(self.prefetch);
        let ptrs: Vec<ValuePointer> = pending
            .iter()
            .filter_map(|(_, p)| match p {
                Pending::Pointer(p) => Some(*p),
                Pending::Ready(_) => None,
            })
            .collect();
        let mut values = if ptrs.is_empty() {
            Vec::new()
        } else {
            self.vlogs.read_many(&ptrs, self.db.dir())?
        }
        .into_iter();
        if let Some(reads) = &self.reads {
            let mut reads = lock(reads);
            for (k, _) in &pending {
                reads.insert(bloom::hash(k));
            }
        }
        for (k, p) in pending {
            let v = match p {
                Pending::Ready(v) => ValueBytes::Owned(v),
                Pending::Pointer(_) => values.next().unwrap_or(ValueBytes::Owned(Vec::new())),
            };
            self.buf.push_back((k, v));
        }
        Ok(())
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return self.err.take().map(Err);
        }
        let (k, v) = self.buf.pop_front()?;
        if self.buf.is_empty() && self.err.is_none() {
            if let Err(e) = self.fill() {
                self.err = Some(e);
            }
        }
        Some(Ok((k, v.into_vec())))
    }
}
