//! Merges sources into one walk in internal-key order (descending when reverse).
//! Sources are given newest first; on equal keys the newer source wins.

use super::Source;
use crate::error::Result;
use crate::key;
use std::cmp::Ordering;

pub(crate) struct MergeIter {
    sources: Vec<Box<dyn Source>>,
    reverse: bool,
    cur: Option<usize>,
    /// Reused by `next` to note sources sitting on the current key.
    same: Vec<usize>,
}

impl MergeIter {
    pub(crate) fn new(sources: Vec<Box<dyn Source>>, reverse: bool) -> MergeIter {
        MergeIter {
            sources,
            reverse,
            cur: None,
            same: Vec::new(),
        }
    }

    /// Picks the source with the smallest key (largest when reverse).
    fn pick(&mut self) {
        let mut best: Option<usize> = None;
        for (i, s) in self.sources.iter().enumerate() {
            if !s.valid() {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) => {
                    let ord = key::compare(s.key(), self.sources[b].key());
                    let better = if self.reverse {
                        ord == Ordering::Greater
                    } else {
                        ord == Ordering::Less
                    };
                    Some(if better { i } else { b })
                }
            };
        }
        self.cur = best;
    }
}

impl Source for MergeIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for s in &mut self.sources {
            s.seek(target)?;
        }
        self.pick();
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        for s in &mut self.sources {
            s.rewind()?;
        }
        self.pick();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(c) = self.cur else { return Ok(()) };
        // Step every other source sitting on the same key too (duplicates across
        // sources), then the current one; no copy of the key on this hot path.
        self.same.clear();
        let cur_key = self.sources[c].key();
        for (i, s) in self.sources.iter().enumerate() {
            if i != c && s.valid() && key::compare(s.key(), cur_key) == Ordering::Equal {
                self.same.push(i);
            }
        }
        for &i in &self.same {
            self.sources[i].next()?;
        }
        self.sources[c].next()?;
        self.pick();
        Ok(())
    }

    fn valid(&self) -> bool {
        self.cur.is_some()
    }

    fn key(&self) -> &[u8] {
        self.cur.map(|c| self.sources[c].key()).unwrap_or(&[])
    }

    fn value(&self) -> &[u8] {
        self.cur.map(|c| self.sources[c].value()).unwrap_or(&[])
    }
}
