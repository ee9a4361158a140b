//! Range tombstones: `delete_range(start, end)` as one record that hides every
//! version of every key in `[start, end)` older than the tombstone.
//!
//! A tombstone of sequence `s` hides a version `k@v` from a read at `r` when
//! `start <= k < end`, `v < s` and `s <= r`. Writes of the same batch share its
//! sequence and are not hidden: `WriteBatch::delete_range` removes the batch's
//! earlier operations in the range instead, so a batch still reads in order.
//!
//! Every live tombstone of the Db is in one [`RangeDels`] held by the read
//! state (range deletes are rare, so the set is small): a point read checks
//! it once, an iterator once per key (a binary search over non-overlapping
//! fragments). Where a tombstone is stored durably (the WAL, then the
//! manifest) and when it is retired is in core/FORMAT.md ("Range tombstones").

use std::collections::BTreeSet;
use std::sync::Arc;

/// Key ranges `[start, end)` (an empty end is unbounded): a transaction's
/// pending range deletes.
pub(crate) type KeyRanges = Arc<Vec<(Vec<u8>, Vec<u8>)>>;

/// One range delete: keys in `[start, end)` (an empty `end` is unbounded)
/// written before `seq` are gone for reads at `seq` or later.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RangeTombstone {
    pub start: Vec<u8>,
    /// Exclusive; empty means "to the last key" (only `drop_prefix` of an
    /// all-0xff prefix makes one).
    pub end: Vec<u8>,
    pub seq: u64,
}

impl RangeTombstone {
    /// True when `key` lies in `[start, end)`.
    #[cfg(test)]
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && (self.end.is_empty() || key < self.end.as_slice())
    }

    /// True when the range meets the user keys `[lo, hi]` (both inclusive).
    pub(crate) fn meets(&self, lo: &[u8], hi: &[u8]) -> bool {
        hi >= self.start.as_slice() && (self.end.is_empty() || lo < self.end.as_slice())
    }
}

/// A piece of the key space over which the same tombstones apply.
#[derive(Debug, Clone)]
struct Fragment {
    start: Vec<u8>,
    /// Exclusive; empty is unbounded.
    end: Vec<u8>,
    /// Sequences of the tombstones covering it, newest first.
    seqs: Vec<u64>,
}

/// A set of tombstones, with the fragments that answer "which is the newest
/// tombstone over this key" in a binary search.
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeDels {
    tombs: BTreeSet<RangeTombstone>,
    frags: Vec<Fragment>,
}

impl RangeDels {
    /// The set of `tombs`.
    pub(crate) fn new(tombs: impl IntoIterator<Item = RangeTombstone>) -> RangeDels {
        let tombs: BTreeSet<RangeTombstone> = tombs.into_iter().collect();
        let frags = fragments(&tombs);
        RangeDels { tombs, frags }
    }

    /// True when there is no tombstone.
    pub(crate) fn is_empty(&self) -> bool {
        self.tombs.is_empty()
    }

    /// Every tombstone, ordered by start key.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &RangeTombstone> {
        self.tombs.iter()
    }

    /// This set with `added`.
    pub(crate) fn with(&self, added: &[RangeTombstone]) -> RangeDels {
        RangeDels::new(self.tombs.iter().chain(added).cloned())
    }

    /// This set without `removed`.
    pub(crate) fn without(&self, removed: &[RangeTombstone]) -> RangeDels {
        RangeDels::new(self.tombs.iter().filter(|t| !removed.contains(t)).cloned())
    }

    /// The sequence of the newest tombstone over `key` that a read at
    /// `read_seq` sees; 0 when there is none (no write has sequence 0).
    pub(crate) fn covering(&self, key: &[u8], read_seq: u64) -> u64 {
        if self.frags.is_empty() {
            return 0;
        }
        let i = self.frags.partition_point(|f| f.start.as_slice() <= key);
        let Some(f) = i.checked_sub(1).map(|i| &self.frags[i]) else {
            return 0;
        };
        if !f.end.is_empty() && key >= f.end.as_slice() {
            return 0;
        }
        f.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0)
    }

    /// True when the version `key@seq` is hidden from a read at `read_seq`.
    pub(crate) fn hides(&self, key: &[u8], seq: u64, read_seq: u64) -> bool {
        !self.frags.is_empty() && self.covering(key, read_seq) > seq
    }
}

/// Cuts the key space at every tombstone bound; each piece lists the
/// tombstones over it. A sweep over the bounds in key order with the set of
/// tombstones open at each: O(n log n) for disjoint ranges (many dropped
/// prefixes), more only where ranges nest.
fn fragments(tombs: &BTreeSet<RangeTombstone>) -> Vec<Fragment> {
    use std::collections::BTreeMap;
    // Bounds in key order; an unbounded end sorts last (as `None`).
    let cmp = |a: &Option<&[u8]>, b: &Option<&[u8]>| match (a, b) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(a), Some(b)) => a.cmp(b),
    };
    let mut bounds: Vec<Option<&[u8]>> = Vec::with_capacity(tombs.len() * 2);
    for t in tombs {
        bounds.push(Some(&t.start));
        bounds.push((!t.end.is_empty()).then_some(t.end.as_slice()));
    }
    bounds.sort_by(cmp);
    bounds.dedup();
    // `tombs` is ordered by start: they open in that order.
    let mut opening = tombs.iter().peekable();
    // Open tombstones: sequence -> how many, and their ends to close them.
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ends: Vec<(Option<&[u8]>, u64)> = Vec::new();
    let mut frags = Vec::new();
    for pair in bounds.windows(2) {
        let Some(start) = pair[0] else { break };
        // Close what ends at or before this bound, open what starts here.
        ends.retain(|&(end, seq)| {
            let closes = end.is_some_and(|e| e <= start);
            if closes {
                if let Some(n) = open.get_mut(&seq) {
                    *n -= 1;
                    if *n == 0 {
                        open.remove(&seq);
                    }
                }
            }
            !closes
        });
        while let Some(t) = opening.next_if(|t| t.start.as_slice() <= start) {
            *open.entry(t.seq).or_insert(0) += 1;
            ends.push(((!t.end.is_empty()).then_some(t.end.as_slice()), t.seq));
        }
        if open.is_empty() {
            continue;
        }
        frags.push(Fragment {
            start: start.to_vec(),
            end: pair[1].map_or(Vec::new(), <[u8]>::to_vec),
            seqs: open.keys().rev().copied().collect(),
        });
    }
    frags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &[u8], end: &[u8], seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        }
    }

    #[test]
    fn a_tombstone_hides_older_versions_inside_its_range_from_reads_that_see_it() {
        let d = RangeDels::new([t(b"b", b"d", 10)]);
        assert!(d.hides(b"b", 9, 10));
        assert!(d.hides(b"c\xff", 1, u64::MAX));
        assert!(!d.hides(b"d", 9, 10), "end is exclusive");
        assert!(!d.hides(b"a", 9, 10));
        assert!(!d.hides(b"b", 10, 10), "same sequence: same batch, kept");
        assert!(!d.hides(b"b", 11, 20), "newer write");
        assert!(!d.hides(b"b", 5, 9), "a read before the tombstone");
    }

    #[test]
    fn overlapping_tombstones_answer_with_the_newest_one_a_read_sees() {
        let d = RangeDels::new([t(b"a", b"m", 5), t(b"f", b"z", 20), t(b"g", b"h", 8)]);
        assert_eq!(d.covering(b"b", 100), 5);
        assert_eq!(d.covering(b"g", 100), 20);
        assert_eq!(d.covering(b"g", 19), 8);
        assert_eq!(d.covering(b"g", 7), 5);
        assert_eq!(d.covering(b"n", 19), 0);
        assert_eq!(d.covering(b"z", 100), 0);
        let d = d.without(&[t(b"f", b"z", 20)]);
        assert_eq!(d.covering(b"g", 100), 8);
        assert_eq!(d.covering(b"n", 100), 0);
    }

    #[test]
    fn fragments_answer_as_a_scan_of_every_tombstone_would() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..200 {
            let tombs: Vec<RangeTombstone> = (0..1 + next(12))
                .map(|i| {
                    let a = next(40) as u8;
                    let b = a + 1 + next(10) as u8;
                    let end = if next(8) == 0 { Vec::new() } else { vec![b] };
                    RangeTombstone {
                        start: vec![a],
                        end,
                        seq: 1 + (i + next(5)) * 3,
                    }
                })
                .collect();
            let d = RangeDels::new(tombs.clone());
            for k in 0..60u8 {
                for read in [0, 5, 10, 20, u64::MAX] {
                    let want = tombs
                        .iter()
                        .filter(|t| t.contains(&[k]) && t.seq <= read)
                        .map(|t| t.seq)
                        .max()
                        .unwrap_or(0);
                    assert_eq!(
                        d.covering(&[k], read),
                        want,
                        "round {round} key {k} read {read}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_end_reaches_past_every_key() {
        let d = RangeDels::new([t(b"\xff", b"", 3)]);
        assert!(d.hides(b"\xff\xff\xff", 1, 3));
        assert!(!d.hides(b"\xfe", 1, 3));
        assert!(t(b"\xff", b"", 3).meets(b"\xff\xff", b"\xff\xff"));
        assert!(!t(b"b", b"c", 3).meets(b"c", b"d"));
        assert!(t(b"b", b"c", 3).meets(b"a", b"b"));
    }
}
