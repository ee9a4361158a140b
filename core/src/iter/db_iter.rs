//! The Db iterator: a snapshot view over the merge of every source, with bounds,
//! direction, keys-only mode and value prefetch.

use super::{MergeIter, Source};
use crate::db::{DbInner, SnapshotGuard};
use crate::error::{Error, Result};
use crate::key;
use crate::range_del::{KeyRanges, RangeDels};
use crate::sync::lock;
use crate::value::{self, Stored, ValuePointer};
use crate::vlog::{ScanAhead, VlogSet};
use std::collections::HashSet;
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
    /// in one pass, neighbours in one call; the first chunks are smaller, so a
    /// short scan reads few). Default 256 (see docs/read-path.md); at least
    /// 1.
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
            prefetch: 256,
        }
    }
}

/// The user-key bounds `[lower, upper)` of a walk with `opts`: the tighter of
/// `start`/`end` and the prefix's range.
pub(crate) fn bounds(opts: &IterOptions) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut lower = opts.start.clone();
    let mut upper = opts.end.clone();
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
    (lower, upper)
}

/// What a walk covers, in storage keys (see `keyspace::Region`).
pub(crate) struct Walk {
    /// Inclusive lower bound.
    pub lower: Option<Vec<u8>>,
    /// Exclusive upper bound.
    pub upper: Option<Vec<u8>>,
    /// A keyspace's prefix: added to seek targets, taken off returned keys.
    pub strip: Vec<u8>,
}

/// Where a buffered item's value is.
enum Val {
    /// In `bytes` (inline values; empty in keys-only mode).
    Here(u32, u32),
    /// In the value log, not read yet.
    Pointer(ValuePointer),
    /// Read from the value log: its place in `values`.
    Read(usize, usize),
}

/// A buffered item: its user key's place in `bytes`, and its value.
struct Item {
    key: (u32, u32),
    val: Val,
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
    /// Range tombstones: a key's chosen version is dropped when one hides it.
    range_dels: Arc<RangeDels>,
    /// A transaction's pending range deletes: they hide every version but
    /// its own pending writes.
    pending_ranges: KeyRanges,
    _snapshot: SnapshotGuard,
    /// Bounds over storage keys.
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// A keyspace's prefix: added to seek targets, taken off returned keys.
    strip: Vec<u8>,
    reverse: bool,
    keys_only: bool,
    prefetch: usize,
    chunk: usize,
    /// Keys and inline values of the buffered items, back to back: one buffer
    /// reused from chunk to chunk instead of two allocations per item.
    bytes: Vec<u8>,
    /// Entries read from the value log for the buffered items, values
    /// handed out as slices of it: reused from chunk to chunk, so a value
    /// costs no allocation and its pages are not faulted in again.
    values: Vec<u8>,
    items: Vec<Item>,
    /// The current item in `items`.
    pos: usize,
    /// Inside `lend`: a chunk's buffers go to `lent` when the next chunk is read.
    lending: bool,
    /// The (`bytes`, `values`) of chunks whose entries the last `lend` handed
    /// out, kept in place until the iterator next lends.
    lent: Vec<(Vec<u8>, Vec<u8>)>,
    /// Buffers lent before, for the next chunks to reuse.
    spare: Vec<(Vec<u8>, Vec<u8>)>,
    /// The merge has nothing more within bounds.
    done: bool,
    /// An error met while reading ahead, returned after the buffered items.
    err: Option<Error>,
    /// Read-ahead of this scan's value-log reads.
    vlog_ahead: ScanAhead,
    /// The visible versions of the current key from a merge operand down
    /// (forward: newest first; reverse: oldest first, from the last one
    /// that is not an operand): (version, span of `chain_bytes`). Filled only
    /// where operands are met.
    chain: Vec<(u64, usize, usize)>,
    chain_bytes: Vec<u8>,
}

impl DbIterator {
    pub(crate) fn new(
        db: Arc<DbInner>,
        vlogs: Arc<VlogSet>,
        merge: MergeIter,
        (range_dels, pending_ranges): (Arc<RangeDels>, KeyRanges),
        snapshot: SnapshotGuard,
        reads: Option<Arc<Mutex<HashSet<u64>>>>,
        (opts, walk): (IterOptions, Walk),
    ) -> Result<DbIterator> {
        let Walk {
            lower,
            upper,
            strip,
        } = walk;
        let read_seq = snapshot.seq();
        let now = db.now();
        let mut it = DbIterator {
            db,
            vlogs,
            reads,
            now,
            merge,
            read_seq,
            range_dels,
            pending_ranges,
            _snapshot: snapshot,
            lower,
            upper,
            strip,
            reverse: opts.reverse,
            keys_only: opts.keys_only,
            prefetch: opts.prefetch.max(1),
            chunk: 1,
            // Room for the first chunks of a short scan (1, 4 then 16 items of
            // a few hundred bytes) in one allocation each, not a chain of
            // reallocations as they fill.
            bytes: Vec::with_capacity(4 << 10),
            values: Vec::new(),
            items: Vec::with_capacity(16),
            pos: 0,
            lending: false,
            lent: Vec::new(),
            spare: Vec::new(),
            done: false,
            err: None,
            vlog_ahead: ScanAhead::default(),
            chain: Vec::new(),
            chain_bytes: Vec::new(),
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
        let owned;
        let k = if self.strip.is_empty() {
            k
        } else {
            owned = [self.strip.as_slice(), k].concat();
            owned.as_slice()
        };
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
        self.items.clear();
        self.bytes.clear();
        self.pos = 0;
        self.done = false;
        self.chunk = 1;
        self.fill()
    }

    /// True while the cursor is on an entry.
    pub fn valid(&self) -> bool {
        self.pos < self.items.len()
    }

    fn span(&self, (start, len): (u32, u32)) -> &[u8] {
        &self.bytes[start as usize..(start + len) as usize]
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        self.items
            .get(self.pos)
            .map_or(&[], |it| &self.span(it.key)[self.strip.len()..])
    }

    /// The current value (empty when not valid or keys-only).
    pub fn value(&self) -> &[u8] {
        match self.items.get(self.pos).map(|it| &it.val) {
            Some(Val::Here(start, len)) => self.span((*start, *len)),
            Some(Val::Read(start, end)) => &self.values[*start..*end],
            Some(Val::Pointer(_)) | None => &[],
        }
    }

    /// Hands up to `max` entries, from the current one on, to `f` as (key,
    /// value) and moves past them; returns how many (0 at the end, or when
    /// `max` is 0). The bytes
    /// `f` gets stay in place until the iterator lends again, is dropped, or
    /// moves otherwise (`advance`, `seek`, `rewind`): the buffers of each
    /// chunk read during the call are kept aside instead of reused, so that
    /// a binding can pass the entries on without copying them
    /// (`sett_iter_next_view`). An error met after the first entry is
    /// returned by the next call, so that no entry handed out is lost.
    pub fn lend(&mut self, max: usize, mut f: impl FnMut(&[u8], &[u8])) -> Result<usize> {
        // What the previous call lent is given back.
        self.spare.append(&mut self.lent);
        if !self.valid() {
            return self.err.take().map_or(Ok(0), Err);
        }
        self.lending = true;
        let mut n = 0;
        while n < max && self.valid() {
            f(self.key(), self.value());
            n += 1;
            if self.pos + 1 >= self.items.len() {
                // The caller said how many it wants: the next chunk holds the
                // rest of them at once rather than ramping up to it.
                self.chunk = self.chunk.max((max - n).min(self.prefetch));
            }
            if let Err(e) = self.advance() {
                self.err = Some(e);
                break;
            }
        }
        self.lending = false;
        Ok(n)
    }

    /// Moves to the next entry.
    pub fn advance(&mut self) -> Result<()> {
        self.pos += 1;
        if self.pos >= self.items.len() {
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

    /// Appends the next user-visible entry from the merge to the buffer;
    /// false when there is none.
    fn pull(&mut self) -> Result<bool> {
        loop {
            if self.done || !self.merge.valid() {
                self.done = true;
                return Ok(false);
            }
            let (uk, _) = key::split(self.merge.key());
            if !self.in_bounds(uk) {
                self.done = true;
                return Ok(false);
            }
            let key_start = self.bytes.len();
            self.bytes.extend_from_slice(uk);
            let key_end = self.bytes.len();
            // The newest version at or below read_seq: forward walks meet it first
            // among the visible ones, reverse walks meet it last.
            let mut chosen: Option<Option<Val>> = None;
            let mut chosen_seq = 0;
            self.chain.clear();
            self.chain_bytes.clear();
            // Forward: the chain's base was met.
            let mut chain_done = false;
            while self.merge.valid() {
                let (k, seq) = key::split(self.merge.key());
                if k != &self.bytes[key_start..key_end] {
                    break;
                }
                // MAX_SEQ marks a transaction's own pending write: always visible.
                let visible = seq <= self.read_seq || seq == key::MAX_SEQ;
                if visible {
                    let raw = self.merge.value();
                    let operand = value::is_merge(raw);
                    let keep = if self.reverse {
                        if !operand {
                            self.chain.clear();
                            self.chain_bytes.clear();
                        }
                        // A base is copied only where operands can be
                        // folded onto it: without an operator a key with
                        // operands is an error whatever lies below them.
                        operand || self.db.opts.merge_operator.is_some()
                    } else if chosen.is_none() {
                        operand
                    } else {
                        let keep = !self.chain.is_empty() && !chain_done;
                        chain_done |= keep && !operand;
                        keep
                    };
                    if keep {
                        let start = self.chain_bytes.len();
                        self.chain_bytes.extend_from_slice(raw);
                        self.chain.push((seq, start, self.chain_bytes.len()));
                    }
                }
                if visible && (self.reverse || chosen.is_none()) {
                    // A later pick (reverse) replaces an inline value kept before.
                    self.bytes.truncate(key_end);
                    chosen = Some(self.decode_current()?);
                    chosen_seq = seq;
                }
                self.merge.next()?;
            }
            let uk = &self.bytes[key_start..key_end];
            let hidden = chosen.is_some()
                && (self.range_dels.hides(uk, chosen_seq, self.read_seq)
                    || (chosen_seq != key::MAX_SEQ
                        && self
                            .pending_ranges
                            .iter()
                            .any(|(s, e)| crate::txn::in_range(uk, s, e))));
            if !hidden && !self.keys_only && matches!(chosen, Some(Some(_))) {
                let top_is_operand = match self.chain.last() {
                    Some(&(seq, s, e)) if self.reverse => {
                        seq == chosen_seq && value::is_merge(&self.chain_bytes[s..e])
                    }
                    _ => !self.reverse && !self.chain.is_empty(),
                };
                if top_is_operand {
                    if self.reverse {
                        self.chain.reverse();
                    }
                    self.bytes.truncate(key_end);
                    let folded = self.fold_chain(key_start, key_end)?;
                    self.bytes.extend_from_slice(&folded);
                    chosen = Some(Some(Val::Here(key_end as u32, folded.len() as u32)));
                }
            }
            match chosen {
                Some(Some(val)) if !hidden => {
                    let key = (key_start as u32, (key_end - key_start) as u32);
                    self.items.push(Item { key, val });
                    return Ok(true);
                }
                // A tombstone, a range tombstone over it, or nothing
                // visible: drop the key and go on.
                _ => self.bytes.truncate(key_start),
            }
        }
    }

    /// Folds the chain (newest first, its first entry the chosen operand)
    /// of the user key at `bytes[key_start..key_end]`: operands down to the
    /// first version that is not one, or that a range delete hides.
    fn fold_chain(&mut self, key_start: usize, key_end: usize) -> Result<Vec<u8>> {
        let uk = &self.bytes[key_start..key_end];
        let undecodable = || {
            Error::corruption(
                self.db.dir(),
                0,
                "undecodable value record met while iterating",
            )
        };
        let mut operands = Vec::with_capacity(self.chain.len());
        let mut base = None;
        // Versions at or above this are stood for by a folded operand met
        // before (copies a value-log move left in another source).
        let mut bound = u64::MAX;
        for &(seq, s, e) in &self.chain {
            let hidden = self.range_dels.hides(uk, seq, self.read_seq)
                || (seq != key::MAX_SEQ
                    && self
                        .pending_ranges
                        .iter()
                        .any(|(s, e)| crate::txn::in_range(uk, s, e)));
            if hidden {
                break;
            }
            if seq >= bound && seq != key::MAX_SEQ {
                continue;
            }
            let raw = &self.chain_bytes[s..e];
            let rec = value::decode(raw).ok_or_else(undecodable)?;
            match rec.stored {
                Stored::Merge(op) => {
                    operands.push(op);
                    if seq != key::MAX_SEQ {
                        bound = value::next_below(seq, raw);
                    }
                }
                _ => {
                    base = Some(rec);
                    break;
                }
            }
        }
        let base_value = match base {
            Some(rec) if !rec.expired(self.now) => match rec.stored {
                Stored::Inline(v) => Some(v.to_vec()),
                Stored::Pointer(p) => {
                    if !self.vlogs.has_all(&[p]) {
                        self.vlogs = Arc::new(self.db.vlogs_for(&self.vlogs));
                    }
                    Some(self.vlogs.read(p, self.db.dir())?)
                }
                Stored::Delete | Stored::Merge(_) => None,
            },
            _ => None,
        };
        crate::merge::resolve(
            self.db.opts.merge_operator.as_deref(),
            uk,
            base_value.as_deref(),
            operands,
        )
    }

    /// The value of the merge's current entry, inline ones appended to
    /// `bytes`: `None` for a tombstone or an expired entry.
    fn decode_current(&mut self) -> Result<Option<Val>> {
        let raw = self.merge.value();
        let rec = value::decode(raw).ok_or_else(|| {
            Error::corruption(
                self.db.dir(),
                0,
                "undecodable value record met while iterating",
            )
        })?;
        if rec.expired(self.now) {
            return Ok(None);
        }
        let start = self.bytes.len() as u32;
        Ok(match rec.stored {
            Stored::Delete => None,
            _ if self.keys_only => Some(Val::Here(start, 0)),
            Stored::Inline(v) => {
                self.bytes.extend_from_slice(v);
                Some(Val::Here(start, v.len() as u32))
            }
            Stored::Pointer(p) => Some(Val::Pointer(p)),
            // Folded by `pull` once the key's versions are read.
            Stored::Merge(_) => Some(Val::Here(start, 0)),
        })
    }

    /// Buffers the next chunk of entries, reading their separated values in one pass.
    fn fill(&mut self) -> Result<()> {
        if self.db.is_closed() {
            return Err(Error::Closed);
        }
        self.items.clear();
        if self.lending {
            // The entries lent from this chunk keep pointing into its buffers.
            // New ones start as large as these, not empty: a chunk filled by
            // doubling reallocations costs more than the copy it saves.
            let (bytes, values) = self.spare.pop().unwrap_or_else(|| {
                (
                    Vec::with_capacity(self.bytes.capacity()),
                    Vec::with_capacity(self.values.capacity()),
                )
            });
            let bytes = std::mem::replace(&mut self.bytes, bytes);
            let values = std::mem::replace(&mut self.values, values);
            self.lent.push((bytes, values));
        }
        self.bytes.clear();
        self.pos = 0;
        let filled = self.fill_chunk();
        if filled.is_err() {
            // Nothing half-read may be served.
            self.items.clear();
        }
        filled
    }

    fn fill_chunk(&mut self) -> Result<()> {
        while self.items.len() < self.chunk && self.pull()? {}
        // Start small so that a seek followed by a few reads stays cheap.
        self.chunk = (self.chunk * 4).min(self.prefetch);
        let ptrs: Vec<ValuePointer> = self
            .items
            .iter()
            .filter_map(|it| match it.val {
                Val::Pointer(p) => Some(p),
                _ => None,
            })
            .collect();
        if !self.vlogs.has_all(&ptrs) {
            self.vlogs = Arc::new(self.db.vlogs_for(&self.vlogs));
        }
        if !ptrs.is_empty() {
            let mut places = self
                .vlogs
                .read_many(&ptrs, self.db.dir(), &mut self.vlog_ahead, &mut self.values)?
                .into_iter();
            for it in &mut self.items {
                if matches!(it.val, Val::Pointer(_)) {
                    let r = places.next().unwrap_or_default();
                    it.val = Val::Read(r.start, r.end);
                }
            }
        }
        if let Some(reads) = &self.reads {
            let mut reads = lock(reads);
            for it in &self.items {
                reads.insert(crate::db::fingerprint(self.span(it.key)));
            }
        }
        Ok(())
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.valid() {
            return self.err.take().map(Err);
        }
        let item = (self.key().to_vec(), self.value().to_vec());
        if self.err.is_none() {
            if let Err(e) = self.advance() {
                self.err = Some(e);
            }
        } else {
            self.pos += 1;
        }
        Some(Ok(item))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Db, IterOptions, Options};

    /// Values above the threshold (64 B) for every third key, below it otherwise.
    fn value(i: usize) -> Vec<u8> {
        format!("{i:05}")
            .repeat(if i.is_multiple_of(3) { 30 } else { 2 })
            .into_bytes()
    }

    /// A Db holding keys k00000..k00099 with `value(i)` (all inline).
    fn db_of_100() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Options::new(dir.path())).unwrap();
        for i in 0..100 {
            db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
        }
        (dir, db)
    }

    fn prefetching(prefetch: usize) -> IterOptions {
        IterOptions {
            prefetch,
            ..IterOptions::default()
        }
    }

    #[test]
    fn entries_lent_by_one_call_stay_in_place_across_the_chunks_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.value_threshold = 64;
        let db = Db::open(opts).unwrap();
        for i in 0..1000 {
            db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
            if i == 500 {
                db.flush().unwrap();
            }
        }
        let opts = IterOptions {
            prefetch: 16,
            ..IterOptions::default()
        };
        let mut it = db.iter(opts).unwrap();
        let (mut seen, mut calls) = (0, 0);
        loop {
            let mut lent = Vec::new();
            // 100 a call: each crosses several chunks (1, 4, then 16 items).
            let n = it
                .lend(100, |k, v| {
                    lent.push((k.as_ptr(), k.len(), v.as_ptr(), v.len()))
                })
                .unwrap();
            if n == 0 {
                break;
            }
            assert_eq!(n, lent.len());
            for (j, &(kp, kl, vp, vl)) in lent.iter().enumerate() {
                // SAFETY: `lend` keeps what it handed out in place until the
                // iterator lends again or moves; it has done neither.
                let (k, v) = unsafe {
                    (
                        std::slice::from_raw_parts(kp, kl),
                        std::slice::from_raw_parts(vp, vl),
                    )
                };
                let i = seen + j;
                assert_eq!(k, format!("k{i:05}").as_bytes(), "key of entry {i}");
                assert_eq!(v, value(i).as_slice(), "value of entry {i}");
            }
            seen += n;
            calls += 1;
        }
        assert_eq!((seen, calls), (1000, 10));
        assert_eq!(it.lend(100, |_, _| ()).unwrap(), 0);
    }

    #[test]
    fn a_lend_reads_what_it_was_asked_for_in_one_chunk_into_buffers_as_large_as_the_last() {
        let (_dir, db) = db_of_100();
        let mut it = db.iter(prefetching(64)).unwrap();
        let mut keys = Vec::new();
        assert_eq!(it.lend(21, |k, _| keys.push(k.to_vec())).unwrap(), 21);
        let want: Vec<Vec<u8>> = (0..21).map(|i| format!("k{i:05}").into_bytes()).collect();
        assert_eq!(keys, want);
        // The first chunk (one entry, read when the iterator opened), then the
        // other 20 at once: ramping up (4, then 16) would have lent three.
        assert_eq!(it.lent.len(), 2);
        // Every chunk's buffer starts as large as the iterator's first one
        // (4 KiB), not empty and grown by doubling as the chunk fills.
        for (bytes, _) in &it.lent {
            assert!(bytes.capacity() >= 4 << 10, "capacity {}", bytes.capacity());
        }
        assert!(it.bytes.capacity() >= 4 << 10);
    }

    #[test]
    fn an_error_met_while_lending_comes_back_on_the_next_call_after_the_entries_before_it() {
        let (dir, db) = db_of_100();
        let mut it = db.iter(prefetching(16)).unwrap();
        // The first chunk holds one entry; lending it reads the next one.
        let mut keys = Vec::new();
        assert_eq!(it.lend(1, |k, _| keys.push(k.to_vec())).unwrap(), 1);
        db.close().unwrap();
        // The four buffered entries are lent; reading the chunk after them
        // fails, and that error waits for the next call.
        let n = it.lend(100, |k, _| keys.push(k.to_vec())).unwrap();
        assert_eq!(n, 4);
        let want: Vec<Vec<u8>> = (0..5).map(|i| format!("k{i:05}").into_bytes()).collect();
        assert_eq!(keys, want);
        assert!(matches!(it.lend(100, |_, _| ()), Err(crate::Error::Closed)));
        // The store itself is untouched: reopened, every entry reads back.
        let db = Db::open(Options::new(dir.path())).unwrap();
        for i in 0..100 {
            let got = db.get(format!("k{i:05}").as_bytes()).unwrap();
            assert_eq!(got.as_deref(), Some(value(i).as_slice()), "entry {i}");
        }
    }
}
