//! Walks one table forward or backward.

use super::block::DecodedBlock;
use super::{Meta, Table};
use crate::advice::{self, ReadAhead};
use crate::error::{Error, Result};
use crate::iter::Source;
use crate::key;
use std::cmp::Ordering;
use std::sync::Arc;

pub(crate) struct TableIter {
    table: Arc<Table>,
    /// The table's index and filter, loaded at the first seek or rewind and
    /// held (an `Arc`) while the iterator lives, evicted from the cache or not.
    meta: Option<Arc<Meta>>,
    /// Whether blocks decompressed by this walk enter the cache (not for
    /// compaction inputs: they would push hot blocks out).
    fill_cache: bool,
    reverse: bool,
    block_idx: usize,
    block: DecodedBlock,
    /// The decompressed bytes of the loaded block, if it was compressed
    /// (values are then ranges of this, not of the file).
    owned: Option<super::reader::SharedBlock>,
    base: usize,
    pos: usize,
    valid: bool,
    /// Compaction inputs: the table bytes before this offset were consumed and
    /// their pages are given back once a stretch of them is (see `load`).
    release_from: Option<usize>,
    /// The table is mapped for random reads; a walk from block to block asks
    /// for the bytes ahead of it (see `step_into`).
    ahead: ReadAhead,
    /// First read-ahead window after a seek or rewind.
    first_window: usize,
    /// Blocks the walk stepped into since its last seek or rewind.
    stepped: u32,
}

/// Read-ahead starts when a walk steps into its second block after a seek
/// (RocksDB's auto read-ahead waits for two reads in a row too): a short scan,
/// which crosses at most one block boundary, makes no call, where a
/// MADV_WILLNEED over resident pages costs about as much as the scan.
const STEPS_BEFORE_READ_AHEAD: u32 = 2;

/// A compaction input gives back its consumed pages in steps of this many bytes.
const RELEASE_STEP: usize = 1 << 20;

impl TableIter {
    pub(crate) fn new(table: Arc<Table>, reverse: bool) -> TableIter {
        TableIter {
            table,
            meta: None,
            fill_cache: true,
            reverse,
            block_idx: 0,
            block: DecodedBlock::default(),
            owned: None,
            base: 0,
            pos: 0,
            valid: false,
            release_from: None,
            ahead: ReadAhead::new(advice::FIRST_WINDOW),
            first_window: advice::FIRST_WINDOW,
            stepped: 0,
        }
    }

    /// A forward walk that reads the table once, start to end (a compaction
    /// input): pages it has passed leave the process's resident set, and the
    /// largest read-ahead window is asked for from the first block.
    pub(crate) fn streaming(table: Arc<Table>) -> TableIter {
        let mut it = TableIter::new(table, false);
        it.release_from = Some(0);
        it.fill_cache = false;
        it.first_window = advice::MAX_WINDOW;
        it
    }

    /// Forgets the read-ahead of an earlier position (after a seek or rewind)
    /// and loads the table's meta if not held yet. Returns the meta.
    fn restart(&mut self) -> Result<Arc<Meta>> {
        self.ahead = ReadAhead::new(self.first_window);
        self.stepped = 0;
        if let Some(m) = &self.meta {
            return Ok(m.clone());
        }
        let m = self.table.meta()?.to_arc();
        self.meta = Some(m.clone());
        Ok(m)
    }

    /// Number of blocks (0 before the first seek or rewind).
    fn blocks(&self) -> usize {
        self.meta.as_ref().map_or(0, |m| m.blocks())
    }

    /// Asks for read-ahead from the loaded block on, in the walk's direction:
    /// called when a walk steps into the next block, where a point lookup or a
    /// seek that reads a few entries never goes; from the
    /// [`STEPS_BEFORE_READ_AHEAD`]th such step after a seek, or at once for a
    /// compaction input.
    fn step_into(&mut self) {
        self.stepped = self.stepped.saturating_add(1);
        if !self.valid || (self.stepped < STEPS_BEFORE_READ_AHEAD && self.release_from.is_none()) {
            return;
        }
        let Some(meta) = &self.meta else { return };
        let range = if self.reverse {
            let len = meta.entry(self.block_idx).len as usize;
            self.ahead.backward(self.base + len)
        } else {
            self.ahead.forward(self.base, self.table.bytes().len())
        };
        if let Some(r) = range {
            self.table.will_need(r);
        }
    }

    fn load(&mut self, i: usize) -> Result<()> {
        // The block's buffers are reused; until it is loaded nothing is valid.
        self.valid = false;
        let Some(meta) = &self.meta else {
            return Ok(());
        };
        // A forward user walk decodes a block's entries as it reaches them
        // (a short scan reads a few of a block's entries); a reverse walk
        // starts from the block's end and needs them all.
        let lazy = self.fill_cache && !self.reverse;
        let (owned, base) =
            self.table
                .load_block(meta, i, (self.fill_cache, lazy), &mut self.block)?;
        if let Some(from) = self.release_from {
            if base >= from + RELEASE_STEP {
                self.table.release_pages(from, base);
                self.release_from = Some(base);
            }
        }
        self.owned = owned;
        self.base = base;
        self.block_idx = i;
        Ok(())
    }

    /// Positions at the first entry of block `i` or later (forward).
    fn first_from(&mut self, i: usize) -> Result<()> {
        self.valid = false;
        if i < self.blocks() {
            self.load(i)?;
            self.pos = 0;
            self.valid = true;
        }
        Ok(())
    }

    /// Decodes the loaded block's next entry if it has one left: false when
    /// it has none.
    fn decode_next(&mut self) -> Result<bool> {
        if self.block.complete() {
            return Ok(false);
        }
        // Blocks decoded entry by entry are always held in a buffer (`load`).
        let Some(buf) = &self.owned else {
            return Ok(false);
        };
        match self.block.decode_next(buf) {
            Some(more) => Ok(more),
            None => {
                self.valid = false;
                Err(self.malformed())
            }
        }
    }

    fn malformed(&self) -> Error {
        Error::corruption(self.table.path(), self.base as u64, "malformed data block")
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
        let meta = self.restart()?;
        let b = meta.find_block(target);
        let nblocks = meta.blocks();
        if !self.reverse {
            self.first_from(b)?;
            if self.valid {
                let found = match &self.owned {
                    Some(buf) => self.block.seek_decoding(buf, target),
                    None => Some(self.block.lower_bound(target)),
                };
                let Some(pos) = found else {
                    self.valid = false;
                    return Err(self.malformed());
                };
                self.pos = pos;
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
        self.restart()?;
        if self.reverse {
            self.last_of(self.blocks().checked_sub(1))?;
        } else {
            self.first_from(0)?;
        }
        if self.release_from.is_some() {
            // A compaction input reads all of it: no need to wait for a step.
            self.step_into();
        }
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        if self.reverse {
            if self.pos > 0 {
                self.pos -= 1;
                return Ok(());
            }
            self.last_of(self.block_idx.checked_sub(1))?;
        } else if self.pos + 1 < self.block.len() || self.decode_next()? {
            self.pos += 1;
            return Ok(());
        } else {
            self.first_from(self.block_idx + 1)?;
        }
        self.step_into();
        Ok(())
    }

    fn valid(&self) -> bool {
        self.valid
    }

    fn key(&self) -> &[u8] {
        self.block.key(self.pos)
    }

    fn value(&self) -> &[u8] {
        let r = self.block.value_range(self.pos);
        match &self.owned {
            Some(buf) => &buf[r],
            None => &self.table.bytes()[self.base + r.start..self.base + r.end],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::test_pages::{eventually, evict, resident, PAGE};

    /// A table of `n` keys `key00000000`.. with 40-byte values, in 4 KiB blocks.
    fn table_of(dir: &std::path::Path, n: u32) -> Arc<Table> {
        let path = dir.join("000001.sst");
        let mut b = crate::table::test_builder(&path, 4096);
        for i in 0..n {
            b.add(
                &key::encode(format!("key{i:08}").as_bytes(), 1),
                format!("{i:040}").as_bytes(),
            )
            .unwrap();
        }
        b.finish().unwrap();
        Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &path,
                1,
                &crate::table::test_cache(),
            )
            .unwrap(),
        )
    }

    #[test]
    fn a_forward_seek_decodes_its_block_only_up_to_the_target_and_steps_decode_one_more() {
        let dir = tempfile::tempdir().unwrap();
        let table = table_of(dir.path(), 2000);
        let mut it = TableIter::new(table.clone(), false);
        // The second key of the table: its block holds some 70 entries.
        it.seek(&key::encode(b"key00000001", key::MAX_SEQ)).unwrap();
        assert!(it.valid());
        assert_eq!(key::user_key(it.key()), b"key00000001");
        assert_eq!(it.value(), format!("{:040}", 1).as_bytes());
        // Decoding the whole block (as before) leaves 76 here.
        assert_eq!(it.block.len(), 2, "entries decoded by a seek");
        it.next().unwrap();
        it.next().unwrap();
        assert_eq!(it.block.len(), 4, "entries decoded after two steps");
        assert_eq!(key::user_key(it.key()), b"key00000003");

        // Walked to its end, a lazily decoded table yields what whole blocks
        // decoded do, in both directions.
        let walk = |reverse: bool| {
            let mut it = TableIter::new(table.clone(), reverse);
            it.rewind().unwrap();
            let mut out = Vec::new();
            while it.valid() {
                out.push((it.key().to_vec(), it.value().to_vec()));
                it.next().unwrap();
            }
            out
        };
        let forward = walk(false);
        let mut backward = walk(true);
        backward.reverse();
        assert_eq!(forward.len(), 2000);
        assert_eq!(forward, backward);
        let meta = table.meta().unwrap();
        let mut whole = Vec::new();
        for b in 0..meta.blocks() {
            let (block, owned, base) = table.block(&meta, b, true).unwrap();
            for i in 0..block.len() {
                let r = block.value_range(i);
                let v = match &owned {
                    Some(buf) => buf[r].to_vec(),
                    None => table.bytes()[base + r.start..base + r.end].to_vec(),
                };
                whole.push((block.key(i).to_vec(), v));
            }
        }
        assert_eq!(forward, whole);
        // Seeks to every key, and between keys, land where a search of the
        // whole block does.
        for (i, (k, _)) in forward.iter().enumerate().step_by(7) {
            let mut it = TableIter::new(table.clone(), false);
            it.seek(k).unwrap();
            assert_eq!(it.key(), k.as_slice());
            let between = key::encode(format!("key{i:08}a").as_bytes(), key::MAX_SEQ);
            it.seek(&between).unwrap();
            assert_eq!(it.valid(), i + 1 < forward.len());
            if it.valid() {
                assert_eq!(it.key(), forward[i + 1].0.as_slice());
            }
        }
    }

    #[test]
    fn a_walk_reads_ahead_from_its_second_block_and_a_seek_or_one_step_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let mut b = crate::table::test_builder(&path, 4096);
        for i in 0..60_000u32 {
            b.add(&key::encode(format!("key{i:08}").as_bytes(), 1), &[7; 40])
                .unwrap();
        }
        b.finish().unwrap();
        let evicted = evict(&path);
        let table = Arc::new(
            Table::open(
                &crate::fs::Fs::real(),
                &path,
                1,
                &crate::table::test_cache(),
            )
            .unwrap(),
        );
        assert!(table.size() > 3 << 20);
        let pages = |r: std::ops::Range<usize>| resident(table.bytes())[r].to_vec();
        // The open reads the tail only; where the file system keeps its pages
        // anyway (tmpfs: fadvise succeeds and drops nothing) the head is resident.
        if !evicted || pages(0..advice::FIRST_WINDOW / PAGE).contains(&true) {
            sett_test_skip::skip(
                "core-table_iter-read_ahead-page_cache_kept",
                "the page cache of the temp dir cannot be dropped (tmpfs?)",
            );
            return;
        }

        // A seek reads its block and no more.
        let mut it = TableIter::new(table.clone(), false);
        it.seek(&key::encode(b"key00000000", 1)).unwrap();
        assert!(it.valid());
        let meta = table.meta().unwrap();
        let first_block = meta.entry(0).len as usize + 4; // and its crc
        let ahead = first_block.div_ceil(PAGE)..advice::FIRST_WINDOW / PAGE;
        assert!(
            pages(ahead.clone()).iter().all(|&r| !r),
            "read ahead on a seek"
        );

        // Stepping into block 1 does not ask either (a short scan)...
        while it.block_idx == 0 {
            it.next().unwrap();
        }
        let block2 = meta.entry(2).offset as usize;
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(
            pages(block2 / PAGE + 1..advice::FIRST_WINDOW / PAGE)
                .iter()
                .all(|&r| !r),
            "read ahead on the first step into the next block"
        );
        // ...stepping into block 2 asks for the first window from there.
        while it.block_idx == 1 {
            it.next().unwrap();
        }
        let from = block2;
        let window = from / PAGE + 1..(from + advice::FIRST_WINDOW) / PAGE;
        eventually("first window resident", || {
            pages(window.clone()).iter().all(|&r| r)
        });
        // Nothing far ahead yet (1 MiB in is well before the index at the end).
        assert!(!pages(256..257)[0], "read more than the first window");
    }
}
