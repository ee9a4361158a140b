//! The oracle: which writes committed after a transaction started, so that a
//! read-write transaction whose reads they touched fails with a conflict (SSI,
//! as Badger does it: keys are tracked by 64-bit fingerprints).

use std::collections::{BTreeMap, HashSet, VecDeque};

#[derive(Default)]
pub(crate) struct Oracle {
    /// Read timestamps of the read-write transactions still open.
    active: BTreeMap<u64, usize>,
    /// (commit sequence, fingerprints of the keys written), in commit order.
    committed: VecDeque<(u64, HashSet<u64>)>,
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

    pub(crate) fn record(&mut self, seq: u64, writes: HashSet<u64>) {
        self.committed.push_back((seq, writes));
    }

    /// True if a write committed after `read_ts` touched a key of `reads`.
    pub(crate) fn conflicts(&self, read_ts: u64, reads: &HashSet<u64>) -> bool {
        self.committed
            .iter()
            .rev()
            .take_while(|(seq, _)| *seq > read_ts)
            .any(|(_, writes)| !writes.is_disjoint(reads))
    }

    /// Forgets commits no open transaction can conflict with.
    fn prune(&mut self) {
        match self.active.keys().next() {
            None => self.committed.clear(),
            Some(&oldest) => {
                while self
                    .committed
                    .front()
                    .is_some_and(|(seq, _)| *seq <= oldest)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_after_read_ts_to_a_read_key_conflicts() {
        let mut o = Oracle::default();
        o.begin(10);
        o.record(11, HashSet::from([1, 2]));
        assert!(o.conflicts(10, &HashSet::from([2])));
        assert!(!o.conflicts(10, &HashSet::from([3])));
        assert!(
            !o.conflicts(11, &HashSet::from([2])),
            "a commit at or before read_ts is seen, not a conflict"
        );
    }

    #[test]
    fn commits_older_than_every_open_transaction_are_forgotten() {
        let mut o = Oracle::default();
        o.begin(5);
        o.begin(8);
        o.record(6, HashSet::from([1]));
        o.record(9, HashSet::from([1]));
        o.end(5);
        assert_eq!(o.committed_len(), 1);
        o.end(8);
        assert_eq!(o.committed_len(), 0);
        assert!(!o.tracking());
    }
}
