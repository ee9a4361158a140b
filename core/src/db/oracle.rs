//! The oracle: which writes committed after a transaction started, so that a
//! read-write transaction whose reads they touched fails with a conflict (SSI,
//! as Badger does it: keys are tracked by 64-bit fingerprints).

use std::collections::{BTreeMap, HashSet, VecDeque};

#[derive(Default)]
pub(crate) struct Oracle {
    /// Read timestamps of the read-write transactions still open.
    active: BTreeMap<u64, usize>,
    /// (commit sequence, fingerprints of the keys written, whether it held a
    /// range delete), in commit order.
    committed: VecDeque<(u64, HashSet<u64>, bool)>,
}

impl Oracle {
    pub(crate) fn begin(&mut self, read_ts: u64) {
        *self.active.entry(read_ts).or_insert(0) += 1;
    }

    pub(crate) fn end(&mut self, read_ts: u64) {
        if let Some(n) = self.active.get_mut(&read_ts) {
            *n -= 1;
            if *n == 0 {
                self.active.remove(&read_ts);
            }
        }
        self.prune();
    }

    /// Writes need recording only while some read-write transaction is open.
    pub(crate) fn tracking(&self) -> bool {
        !self.active.is_empty()
    }

    /// Records a commit; `ranged` when it held a range delete.
    pub(crate) fn record(&mut self, seq: u64, writes: HashSet<u64>, ranged: bool) {
        self.committed.push_back((seq, writes, ranged));
    }

    /// True if a write committed after `read_ts` touched a key of `reads`.
    /// Reads are fingerprints, which say nothing of where a key lies, so a
    /// range delete committed after `read_ts` conflicts with every
    /// transaction that read anything (sound; it may retry some that did
    /// not read inside the range).
    pub(crate) fn conflicts(&self, read_ts: u64, reads: &HashSet<u64>) -> bool {
        self.committed
            .iter()
            .rev()
            .take_while(|(seq, _, _)| *seq > read_ts)
            .any(|(_, writes, ranged)| (*ranged && !reads.is_empty()) || !writes.is_disjoint(reads))
    }

    /// Forgets commits no open transaction can conflict with.
    fn prune(&mut self) {
        match self.active.keys().next() {
            None => self.committed.clear(),
            Some(&oldest) => {
                while self
                    .committed
                    .front()
                    .is_some_and(|(seq, _, _)| *seq <= oldest)
                {
                    self.committed.pop_front();
                }
            }
        }
    }

    #[cfg(test)]
    fn committed_len(&self) -> usize {
        self.committed.len()
    }
}

/// The conflict fingerprint of a key: what the oracle compares between a
/// transaction's reads and later commits' writes. Its own hash, not the bloom
/// filter's: that one is part of the table format, and a change to filters
/// must not silently change which transactions conflict. A collision only
/// makes a transaction retry.
pub(crate) fn fingerprint(key: &[u8]) -> u64 {
    // FNV-1a over the bytes, then the murmur3 finalizer for avalanche.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_of_distinct_keys_do_not_collide_in_a_large_sample() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..200_000u32 {
            assert!(
                seen.insert(fingerprint(format!("key{i}").as_bytes())),
                "collision at {i}"
            );
            assert!(
                seen.insert(fingerprint(&i.to_le_bytes())),
                "collision at {i} (binary)"
            );
        }
    }

    #[test]
    fn a_write_after_read_ts_to_a_read_key_conflicts() {
        let mut o = Oracle::default();
        o.begin(10);
        o.record(11, HashSet::from([1, 2]), false);
        assert!(o.conflicts(10, &HashSet::from([2])));
        assert!(!o.conflicts(10, &HashSet::from([3])));
        assert!(
            !o.conflicts(11, &HashSet::from([2])),
            "a commit at or before read_ts is seen, not a conflict"
        );
    }

    #[test]
    fn a_range_delete_after_read_ts_conflicts_with_any_transaction_that_read() {
        let mut o = Oracle::default();
        o.begin(10);
        o.record(11, HashSet::new(), true);
        assert!(o.conflicts(10, &HashSet::from([7])));
        assert!(
            !o.conflicts(10, &HashSet::new()),
            "a blind write reads nothing"
        );
        assert!(!o.conflicts(11, &HashSet::from([7])));
    }

    #[test]
    fn commits_older_than_every_open_transaction_are_forgotten() {
        let mut o = Oracle::default();
        o.begin(5);
        o.begin(8);
        o.record(6, HashSet::from([1]), false);
        o.record(9, HashSet::from([1]), false);
        o.end(5);
        assert_eq!(o.committed_len(), 1);
        o.end(8);
        assert_eq!(o.committed_len(), 0);
        assert!(!o.tracking());
    }
}
