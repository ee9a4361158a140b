//! Merges sources into one walk in internal-key order (descending when reverse).
//! Sources are given newest first; on equal keys the newer source wins.
//!
//! The valid sources sit in a binary heap ordered by (key, source index), so a
//! step costs a few comparisons however many sources there are, and while one
//! source leads (a scan over a large level with a few small L0 tables) a step
//! costs two.

use super::Source;
use crate::error::Result;
use crate::key;
use std::cmp::Ordering;

pub(crate) struct MergeIter {
    sources: Vec<Box<dyn Source>>,
    reverse: bool,
    /// Indices of the valid sources; `heap[0]` is the current one.
    heap: Vec<usize>,
    /// The key just stepped past, to step duplicates in other sources past it
    /// too (a reused buffer: no allocation per step).
    last: Vec<u8>,
}

impl MergeIter {
    pub(crate) fn new(sources: Vec<Box<dyn Source>>, reverse: bool) -> MergeIter {
        MergeIter {
            sources,
            reverse,
            heap: Vec::new(),
            last: Vec::new(),
        }
    }

    /// True if source `a` comes before source `b` in the walk.
    fn before(&self, a: usize, b: usize) -> bool {
        let ord = key::compare(self.sources[a].key(), self.sources[b].key());
        let ord = if self.reverse { ord.reverse() } else { ord };
        ord == Ordering::Less || (ord == Ordering::Equal && a < b)
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut first = i;
            if l < n && self.before(self.heap[l], self.heap[first]) {
                first = l;
            }
            if r < n && self.before(self.heap[r], self.heap[first]) {
                first = r;
            }
            if first == i {
                return;
            }
            self.heap.swap(i, first);
            i = first;
        }
    }

    /// Puts every valid source in the heap.
    fn rebuild(&mut self) {
        self.heap.clear();
        self.heap
            .extend((0..self.sources.len()).filter(|&i| self.sources[i].valid()));
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Steps the top source and restores the heap.
    fn step_top(&mut self) -> Result<()> {
        let top = self.heap[0];
        self.sources[top].next()?;
        if !self.sources[top].valid() {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        self.sift_down(0);
        Ok(())
    }
}

impl Source for MergeIter {
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for s in &mut self.sources {
            s.seek(target)?;
        }
        self.rebuild();
        Ok(())
    }

    fn rewind(&mut self) -> Result<()> {
        for s in &mut self.sources {
            s.rewind()?;
        }
        self.rebuild();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let Some(&c) = self.heap.first() else {
            return Ok(());
        };
        // Another source holding the top's key would come right after the
        // top (ties go by source), and the second in a heap is a child of the
        // first: with neither child equal there is nothing to step past, and
        // the key need not be kept. A walk led by one source (a settled
        // level) then costs no copy and no compare per step.
        let top = self.sources[c].key();
        let dup = self.heap[1..self.heap.len().min(3)]
            .iter()
            .any(|&t| key::compare(self.sources[t].key(), top) == Ordering::Equal);
        if !dup {
            return self.step_top();
        }
        self.last.clear();
        self.last.extend_from_slice(self.sources[c].key());
        self.step_top()?;
        // Older sources holding the same internal key (duplicates across
        // sources) are stepped past it as well.
        while let Some(&t) = self.heap.first() {
            if key::compare(self.sources[t].key(), &self.last) != Ordering::Equal {
                break;
            }
            self.step_top()?;
        }
        Ok(())
    }

    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn key(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&c| self.sources[c].key())
    }

    fn value(&self) -> &[u8] {
        self.heap.first().map_or(&[], |&c| self.sources[c].value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source over a fixed sorted list.
    struct List {
        items: Vec<(Vec<u8>, Vec<u8>)>,
        reverse: bool,
        pos: usize,
    }

    impl Source for List {
        fn seek(&mut self, target: &[u8]) -> Result<()> {
            self.pos = if self.reverse {
                self.items
                    .iter()
                    .rposition(|(k, _)| key::compare(k, target) != Ordering::Greater)
                    .map_or(self.items.len(), |p| self.items.len() - 1 - p)
            } else {
                self.items
                    .iter()
                    .position(|(k, _)| key::compare(k, target) != Ordering::Less)
                    .unwrap_or(self.items.len())
            };
            Ok(())
        }
        fn rewind(&mut self) -> Result<()> {
            self.pos = 0;
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.pos += 1;
            Ok(())
        }
        fn valid(&self) -> bool {
            self.pos < self.items.len()
        }
        fn key(&self) -> &[u8] {
            &self.at().0
        }
        fn value(&self) -> &[u8] {
            &self.at().1
        }
    }

    impl List {
        fn at(&self) -> &(Vec<u8>, Vec<u8>) {
            if self.reverse {
                &self.items[self.items.len() - 1 - self.pos]
            } else {
                &self.items[self.pos]
            }
        }
    }

    fn source(keys: &[(&str, u64, &str)], reverse: bool) -> Box<dyn Source> {
        let mut items: Vec<(Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|(k, seq, v)| (key::encode(k.as_bytes(), *seq), v.as_bytes().to_vec()))
            .collect();
        items.sort_by(|a, b| key::compare(&a.0, &b.0));
        Box::new(List {
            items,
            reverse,
            pos: 0,
        })
    }

    fn walk(m: &mut MergeIter) -> Vec<(String, u64, String)> {
        let mut out = Vec::new();
        while m.valid() {
            let (uk, seq) = key::split(m.key());
            out.push((
                String::from_utf8_lossy(uk).into_owned(),
                seq,
                String::from_utf8_lossy(m.value()).into_owned(),
            ));
            m.next().unwrap();
        }
        out
    }

    #[test]
    fn a_key_held_by_any_set_of_sources_is_walked_once_from_the_newest() {
        // Every subset of up to seven sources holds "k"@7, each source also
        // a key of its own before or after it, so that the copies sit at
        // every place in the heap, not only right below the top.
        for n in 1..=7usize {
            for holders in 1u32..(1 << n) {
                for reverse in [false, true] {
                    let mut want = Vec::new();
                    let sources = (0..n)
                        .map(|i| {
                            let own = format!("{}{i}", if i % 2 == 0 { "a" } else { "z" });
                            want.push((own.clone(), "x".to_string()));
                            let mut keys = vec![(own, 1, "x".to_string())];
                            if holders & (1 << i) != 0 {
                                keys.push(("k".to_string(), 7, format!("v{i}")));
                            }
                            let refs: Vec<(&str, u64, &str)> = keys
                                .iter()
                                .map(|(k, s, v)| (k.as_str(), *s, v.as_str()))
                                .collect();
                            source(&refs, reverse)
                        })
                        .collect();
                    let newest = holders.trailing_zeros();
                    want.push(("k".to_string(), format!("v{newest}")));
                    want.sort();
                    if reverse {
                        want.reverse();
                    }
                    let mut m = MergeIter::new(sources, reverse);
                    m.rewind().unwrap();
                    let got: Vec<(String, String)> =
                        walk(&mut m).into_iter().map(|(k, _, v)| (k, v)).collect();
                    assert_eq!(
                        got, want,
                        "{n} sources, holders {holders:b}, reverse {reverse}"
                    );
                }
            }
        }
    }

    #[test]
    fn merges_in_order_both_ways_and_the_newer_source_wins_a_duplicate() {
        for reverse in [false, true] {
            let sources = vec![
                source(&[("b", 5, "new"), ("d", 9, "d9")], reverse),
                source(&[("a", 1, "a1"), ("b", 5, "old"), ("c", 2, "c2")], reverse),
                source(&[("b", 3, "b3"), ("e", 4, "e4")], reverse),
                source(&[], reverse),
            ];
            let mut m = MergeIter::new(sources, reverse);
            m.rewind().unwrap();
            let mut want = vec![
                ("a".to_string(), 1, "a1".to_string()),
                ("b".into(), 5, "new".into()),
                ("b".into(), 3, "b3".into()),
                ("c".into(), 2, "c2".into()),
                ("d".into(), 9, "d9".into()),
                ("e".into(), 4, "e4".into()),
            ];
            if reverse {
                want.reverse();
            }
            assert_eq!(walk(&mut m), want, "reverse {reverse}");
        }
    }
}
