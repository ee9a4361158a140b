//! The commit pipeline: the order in which writes get their sequence numbers,
//! reach the logs and become visible.
//!
//! [`Pipeline`] owns the queue of waiting writers, the sequence numbers it
//! hands out, the transaction oracle that checks conflicts when a sequence is
//! handed out, and the visible sequence that readers start from. It sees the
//! rest of the Db only through [`CommitEnv`]: a lock around the logs and one
//! verb that applies a group under it. The Db's own environment is
//! `DbInner` (write.rs); the unit tests below drive the pipeline with a fake.
//!
//! Two paths. With `sync_writes`, writers queue up and the one at the front
//! leads: it takes the batches queued behind it (up to `MAX_GROUP_BYTES`) and
//! applies them as one group, so that the group shares one fsync
//! ([`Pipeline::commit`]). Without it there is no fsync to share: each
//! writer takes the log lock and applies its own batch
//! ([`Pipeline::commit_direct`]), which saves the hand-off to a leader and
//! the wake-ups of a group. Either way sequences are handed out under the
//! queue lock in the order batches reach the logs, and published in order.
//!
//! Lock order: the log lock (the environment's) before the queue lock.

use super::oracle::{self, Oracle};
use super::{lock, WriterKind};
use crate::batch::OpValue;
use crate::error::{Error, Result};
use crate::key;
use crate::WriteBatch;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// A write group stops taking batches past this many bytes.
pub(crate) const MAX_GROUP_BYTES: usize = 4 << 20;

/// What the pipeline needs from the Db: the state under its log lock, and
/// a verb that applies a group there (pebble's `commitEnv` has the same shape).
pub(crate) trait CommitEnv {
    /// What the log lock guards (the WAL and value-log writers).
    type Log;

    /// Runs `f` under the log lock; fails with [`Error::Closed`] if the
    /// logs are closed. Requires: the queue lock not held.
    fn with_log<R>(&self, f: impl FnOnce(&mut Self::Log) -> Result<R>) -> Result<R>;

    /// Applies `group` to the logs and the memtable, every writer's payload
    /// once (taken with [`Writer::take`]). The batches' sequences are
    /// reserved and ascending; a group of moves is one writer with sequence 0.
    /// It may publish the group itself ([`Pipeline::publish`]) before work it
    /// does after; the pipeline publishes the group's last sequence when it
    /// returns, failed or not. It may hand a follower's share of the work to
    /// that follower's thread ([`Pipeline::hand_off`]), and must wait for it
    /// before returning.
    /// Requires: the log lock (`log`); groups come one at a time, in sequence order.
    fn apply(&self, log: &mut Self::Log, group: &[Arc<Writer>]) -> Result<()>;
}

/// A piece of a group's work that the leader hands to a follower's thread.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// A writer waiting in the queue.
pub(crate) struct Writer {
    kind: Mutex<Option<WriterKind>>,
    is_moves: bool,
    /// Its group fsyncs the logs if any writer in it asks to.
    sync: bool,
    bytes: usize,
    seq: u64,
    /// Work handed to this writer's thread by the leader.
    job: Mutex<Option<Job>>,
    result: Mutex<Option<Result<()>>>,
}

impl Writer {
    fn new(kind: WriterKind, seq: u64, bytes: usize, sync: bool) -> Arc<Writer> {
        Arc::new(Writer {
            is_moves: matches!(kind, WriterKind::Moves(_)),
            kind: Mutex::new(Some(kind)),
            sync,
            bytes,
            seq,
            job: Mutex::new(None),
            result: Mutex::new(None),
        })
    }

    /// The payload, for the one apply that writes it.
    pub(crate) fn take(&self) -> Option<WriterKind> {
        lock(&self.kind).take()
    }

    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    pub(crate) fn is_moves(&self) -> bool {
        self.is_moves
    }

    pub(crate) fn wants_sync(&self) -> bool {
        self.sync
    }
}

/// What a committing transaction asks the oracle to check.
pub(crate) struct TxnCheck {
    pub read_ts: u64,
    pub reads: HashSet<u64>,
}

/// The group-commit queue and the sequence numbers it hands out.
struct Queue {
    writers: VecDeque<Arc<Writer>>,
    /// The sequence the next batch gets.
    next_seq: u64,
    oracle: Oracle,
    /// Threads blocked on the condvar: a leader that finds none does not pay
    /// for a wake-up (a futex call) when its group is done.
    waiting: usize,
}

impl Queue {
    fn reserve(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Hands out `seq` itself (a batch with [`WriteBatch::set_version`]): it
    /// must be above every sequence handed out, and the next one follows it.
    fn reserve_at(&mut self, seq: u64) -> Result<u64> {
        if seq < self.next_seq || seq == key::MAX_SEQ {
            return Err(Error::InvalidArgument(format!(
                "cannot commit at version {seq}: it must be above {}, the newest this Db \
                 has handed out, and below {}",
                self.next_seq - 1,
                key::MAX_SEQ
            )));
        }
        self.next_seq = seq + 1;
        Ok(seq)
    }

    /// A batch's sequence, handed out once a transaction's reads are checked
    /// against the commits since it began; the oracle records the batch's
    /// keys for transactions still open.
    fn reserve_batch(&mut self, b: &WriteBatch, txn: Option<&TxnCheck>) -> Result<u64> {
        if let Some(t) = txn {
            if self.oracle.conflicts(t.read_ts, &t.reads) {
                return Err(Error::Conflict);
            }
        }
        // A drop marks its keyspaces here, under the same lock: a batch is
        // either ordered before the drop (and deleted by it) or refused.
        for ks in &b.keyspaces {
            ks.check_live()?;
        }
        for ks in &b.drops {
            ks.mark_dropped();
        }
        let seq = match b.version {
            Some(v) => self.reserve_at(v)?,
            None => self.reserve(),
        };
        if self.oracle.tracking() {
            self.oracle.record(
                seq,
                b.ops
                    .iter()
                    .filter(|op| !matches!(op.value, OpValue::RangeEnd(_)))
                    .map(|op| oracle::fingerprint(b.key(op)))
                    .collect(),
                b.has_range_delete(),
            );
        }
        Ok(seq)
    }
}

/// Sequence numbers, the writers' queue and the visible sequence.
pub(crate) struct Pipeline {
    queue: Mutex<Queue>,
    cv: Condvar,
    /// Every write up to this sequence is applied and visible to new reads.
    visible: AtomicU64,
}

impl Pipeline {
    /// A pipeline whose writes up to `last_seq` are applied (recovered).
    pub(crate) fn new(last_seq: u64) -> Pipeline {
        Pipeline {
            queue: Mutex::new(Queue {
                writers: VecDeque::new(),
                next_seq: last_seq + 1,
                oracle: Oracle::default(),
                waiting: 0,
            }),
            cv: Condvar::new(),
            visible: AtomicU64::new(last_seq),
        }
    }

    /// The newest sequence readers see.
    pub(crate) fn visible(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// Queues a write (a batch of `bytes`, or value-log moves) and waits
    /// until a leader, maybe this caller, has applied it through `env`.
    /// Returns the batch's sequence (0 for moves). Value-log moves go alone, so that their liveness check sees every
    /// write ordered before them.
    /// Requires: no lock of the pipeline's or the environment's held.
    pub(crate) fn commit<E: CommitEnv>(
        &self,
        env: &E,
        kind: WriterKind,
        txn: Option<TxnCheck>,
        bytes: usize,
        sync: bool,
    ) -> Result<u64> {
        let mut q = lock(&self.queue);
        let seq = match &kind {
            WriterKind::Batch(b) => q.reserve_batch(b, txn.as_ref())?,
            WriterKind::Moves(_) => 0,
        };
        let me = Writer::new(kind, seq, bytes, sync);
        q.writers.push_back(me.clone());
        loop {
            if let Some(r) = lock(&me.result).take() {
                return r.map(|()| me.seq);
            }
            let job = lock(&me.job).take();
            if let Some(job) = job {
                drop(q);
                job();
                q = lock(&self.queue);
                continue;
            }
            if q.writers.front().is_some_and(|f| Arc::ptr_eq(f, &me)) {
                break;
            }
            q = self.wait(q);
        }
        // This writer leads: it applies itself and the batches queued behind it.
        let mut group = vec![me.clone()];
        let mut group_bytes = me.bytes;
        if !me.is_moves {
            for w in q.writers.iter().skip(1) {
                if w.is_moves || group_bytes + w.bytes > MAX_GROUP_BYTES {
                    break;
                }
                group_bytes += w.bytes;
                group.push(w.clone());
            }
        }
        drop(q);
        let res = env.with_log(|log| env.apply(log, &group));
        // Even a failed group's sequences are done with: nothing is left to wait for.
        if let Some(last) = group.last().filter(|w| !w.is_moves) {
            self.publish(last.seq);
        }
        let mut q = lock(&self.queue);
        for w in &group {
            q.writers.pop_front();
            if !Arc::ptr_eq(w, &me) {
                *lock(&w.result) = Some(res.clone());
            }
        }
        self.notify(&q);
        res.map(|()| me.seq)
    }

    /// Applies one batch on the caller's thread: takes the log lock, hands
    /// out the batch's sequence under it (so sequences reach the logs in
    /// order), applies and publishes it. Returns that sequence.
    /// Requires: no lock of the pipeline's or the environment's held.
    pub(crate) fn commit_direct<E: CommitEnv>(
        &self,
        env: &E,
        batch: WriteBatch,
        txn: Option<TxnCheck>,
        bytes: usize,
        sync: bool,
    ) -> Result<u64> {
        let res = env.with_log(|log| {
            let seq = lock(&self.queue).reserve_batch(&batch, txn.as_ref())?;
            let me = Writer::new(WriterKind::Batch(batch), seq, bytes, sync);
            let res = env.apply(log, std::slice::from_ref(&me));
            // Even a failed write's sequence is done with.
            self.publish(seq);
            res.map(|()| seq)
        });
        // Transactions beginning at this sequence may wait for it.
        self.notify(&lock(&self.queue));
        res
    }

    /// Hands out the next sequence for a write outside the queue (a bulk
    /// load), which [`Pipeline::publish_and_wake`] makes visible.
    pub(crate) fn reserve(&self) -> u64 {
        lock(&self.queue).reserve()
    }

    /// Makes every write up to sequence `seq` visible to new reads (groups
    /// publish in order: a later group publishes after an earlier one).
    /// Transactions waiting to begin at `seq` are woken when the group
    /// leaves the queue, or by [`Pipeline::publish_and_wake`].
    pub(crate) fn publish(&self, seq: u64) {
        self.visible.fetch_max(seq, Ordering::AcqRel);
    }

    /// [`Pipeline::publish`], then wakes every thread waiting on the queue
    /// (for a sequence published outside a write group: bulk load).
    pub(crate) fn publish_and_wake(&self, seq: u64) {
        self.publish(seq);
        let _q = lock(&self.queue);
        self.cv.notify_all();
    }

    /// Gives each writer its job and wakes them to run it. The caller waits
    /// for the jobs to finish by its own means.
    /// Requires: the writers are in the group being applied.
    pub(crate) fn hand_off(&self, jobs: Vec<(Arc<Writer>, Job)>) {
        if jobs.is_empty() {
            return;
        }
        for (w, job) in jobs {
            *lock(&w.job) = Some(job);
        }
        self.notify(&lock(&self.queue));
    }

    /// Starts a read at the newest sequence handed out, once every write up
    /// to it is visible. `pin` runs with that sequence under the queue lock,
    /// before any later write can be handed a sequence (a snapshot taken
    /// there keeps what the read needs from flushes that start after);
    /// `alive` is asked while waiting, and its error ends the wait. With
    /// `update`, the oracle tracks commits from then on for conflict checks
    /// until [`Pipeline::end_txn`].
    /// Requires: no lock of the pipeline's held.
    pub(crate) fn begin_txn<R>(
        &self,
        update: bool,
        pin: impl FnOnce(u64) -> R,
        alive: impl Fn() -> Result<()>,
    ) -> Result<(u64, R)> {
        let mut q = lock(&self.queue);
        let read_ts = q.next_seq - 1;
        let pinned = pin(read_ts);
        if update {
            q.oracle.begin(read_ts);
        }
        while self.visible() < read_ts {
            if let Err(e) = alive() {
                if update {
                    q.oracle.end(read_ts);
                }
                return Err(e);
            }
            q = self.wait(q);
        }
        Ok((read_ts, pinned))
    }

    /// Ends an update transaction begun at `read_ts`.
    pub(crate) fn end_txn(&self, read_ts: u64) {
        lock(&self.queue).oracle.end(read_ts);
    }

    /// Waits on the condvar, counted in `waiting` so that wakers know to notify.
    fn wait<'a>(&self, mut q: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        q.waiting += 1;
        let mut q = self.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        q.waiting -= 1;
        q
    }

    /// Wakes the threads waiting on the queue, if there are any: a lone
    /// writer skips the futex call.
    fn notify(&self, q: &Queue) {
        if q.waiting > 0 {
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    //! The pipeline driven by a fake environment: its log is a list of
    //! applied groups, and a gate can hold a leader inside `apply` so that
    //! writers queue up behind it.
    use super::*;
    use crate::db::Move;
    use crate::value::ValuePointer;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    #[derive(Default)]
    struct FakeLog {
        /// The applied groups: each writer's sequence, or 0 for moves.
        groups: Vec<Vec<u64>>,
        /// Each applied batch's first key, with its sequence.
        keys: Vec<(Vec<u8>, u64)>,
    }

    struct Fake {
        pipeline: Pipeline,
        /// None: the logs are closed.
        log: Mutex<Option<FakeLog>>,
        /// While set, `apply` tells the test it is in, then waits to be let go.
        gate: Mutex<Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>>,
        /// `apply` fails a group holding this sequence.
        fail_seq: AtomicU64,
        /// Followers' batches are applied on their own threads (`hand_off`).
        hand_off: bool,
        /// The thread each sequence was applied on.
        applied_on: Arc<Mutex<Vec<(u64, thread::ThreadId)>>>,
    }

    impl Fake {
        fn new() -> Arc<Fake> {
            Arc::new(Fake {
                pipeline: Pipeline::new(0),
                log: Mutex::new(Some(FakeLog::default())),
                gate: Mutex::new(None),
                fail_seq: AtomicU64::new(u64::MAX),
                hand_off: false,
                applied_on: Arc::default(),
            })
        }

        fn handing_off() -> Arc<Fake> {
            let mut f = Fake::new();
            if let Some(f) = Arc::get_mut(&mut f) {
                f.hand_off = true;
            }
            f
        }

        /// Holds the next leader inside `apply` until the returned sender
        /// lets it go; the receiver hears when it is there.
        fn close_gate(&self) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
            let (inside_tx, inside_rx) = mpsc::channel();
            let (go_tx, go_rx) = mpsc::channel();
            *lock(&self.gate) = Some((inside_tx, go_rx));
            (inside_rx, go_tx)
        }

        fn groups(&self) -> Vec<Vec<u64>> {
            lock(&self.log)
                .as_ref()
                .map(|l| l.groups.clone())
                .unwrap_or_default()
        }

        fn seq_of(&self, key: &[u8]) -> Option<u64> {
            let log = lock(&self.log);
            let found = log.as_ref()?.keys.iter().find(|(k, _)| k == key);
            found.map(|(_, s)| *s)
        }

        fn queued(&self) -> usize {
            lock(&self.pipeline.queue).writers.len()
        }

        fn put(&self, key: &str) -> Result<u64> {
            let mut b = WriteBatch::new();
            b.put(key, "v");
            self.pipeline
                .commit(self, WriterKind::Batch(b), None, 10, false)
        }
    }

    impl CommitEnv for Fake {
        type Log = FakeLog;

        fn with_log<R>(&self, f: impl FnOnce(&mut FakeLog) -> Result<R>) -> Result<R> {
            let mut guard = lock(&self.log);
            f(guard.as_mut().ok_or(Error::Closed)?)
        }

        fn apply(&self, log: &mut FakeLog, group: &[Arc<Writer>]) -> Result<()> {
            let gate = lock(&self.gate).take();
            if let Some((inside, go)) = gate {
                let _ = inside.send(());
                let _ = go.recv();
            }
            let fail = self.fail_seq.load(Ordering::Acquire);
            if group.iter().any(|w| w.seq() == fail) {
                return Err(Error::Poisoned("injected: the group's WAL append".into()));
            }
            let (done_tx, done_rx) = mpsc::channel::<()>();
            let mut jobs: Vec<(Arc<Writer>, Job)> = Vec::new();
            for (i, w) in group.iter().enumerate() {
                let Some(kind) = w.take() else {
                    panic!("writer {} applied twice", w.seq());
                };
                if let WriterKind::Batch(b) = &kind {
                    let first = b.ops.first().map(|op| b.key(op).to_vec());
                    log.keys.push((first.unwrap_or_default(), w.seq()));
                }
                let (seq, on) = (w.seq(), self.applied_on.clone());
                let record = move || lock(&on).push((seq, thread::current().id()));
                if self.hand_off && i > 0 {
                    let done = done_tx.clone();
                    let job: Job = Box::new(move || {
                        record();
                        let _ = done.send(());
                    });
                    jobs.push((w.clone(), job));
                } else {
                    record();
                }
            }
            let handed = jobs.len();
            self.pipeline.hand_off(jobs);
            for _ in 0..handed {
                let _ = done_rx.recv();
            }
            log.groups.push(group.iter().map(|w| w.seq()).collect());
            Ok(())
        }
    }

    /// Waits until `n` writers are in the queue.
    fn until_queued(f: &Fake, n: usize) {
        for _ in 0..10_000 {
            if f.queued() >= n {
                return;
            }
            thread::sleep(Duration::from_millis(1));
        }
        panic!("{n} writers never queued up (queued: {})", f.queued());
    }

    /// Starts a writer of "a" (sequence 1) and holds it inside `apply`,
    /// so that writers queue behind it; the sender lets it go.
    fn hold_leader(f: &Arc<Fake>) -> (thread::JoinHandle<Result<u64>>, mpsc::Sender<()>) {
        let (inside, go) = f.close_gate();
        let first = spawn_put(f, "a");
        inside.recv().expect("leader inside apply");
        (first, go)
    }

    fn spawn_put(f: &Arc<Fake>, key: &str) -> thread::JoinHandle<Result<u64>> {
        let (f, key) = (f.clone(), key.to_string());
        thread::spawn(move || f.put(&key))
    }

    fn moves() -> WriterKind {
        WriterKind::Moves(vec![Move {
            key: b"moved".to_vec(),
            value: b"v".to_vec(),
            version: 1,
            user_meta: 0,
            expires_at: 0,
            old: ValuePointer {
                file: 1,
                offset: 0,
                len: 1,
            },
            walked_at: None,
        }])
    }

    #[test]
    fn concurrent_writers_reach_the_log_in_sequence_order_each_once_and_see_their_write_visible() {
        let f = Fake::new();
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let f = f.clone();
                thread::spawn(move || {
                    for i in 0..200 {
                        let key = format!("t{t}-{i}");
                        f.put(&key).expect("commit");
                        let seq = f.seq_of(key.as_bytes()).expect("applied");
                        assert!(
                            f.pipeline.visible() >= seq,
                            "{key} returned before its sequence {seq} was visible"
                        );
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("writer thread");
        }
        let order: Vec<u64> = f.groups().concat();
        assert_eq!(order, (1..=1600).collect::<Vec<u64>>());
        assert_eq!(f.pipeline.visible(), 1600);
    }

    #[test]
    fn writers_queued_behind_a_leader_are_applied_as_one_group_by_the_next_leader() {
        let f = Fake::new();
        let (first, go) = hold_leader(&f);
        let rest: Vec<_> = ["b", "c", "d"].iter().map(|k| spawn_put(&f, k)).collect();
        // The leader stays in the queue while it applies: 1 + 3.
        until_queued(&f, 4);
        go.send(()).expect("let the leader go");
        for t in rest.into_iter().chain([first]) {
            t.join().expect("writer").expect("commit");
        }
        assert_eq!(f.groups(), vec![vec![1], vec![2, 3, 4]]);
        assert_eq!(f.pipeline.visible(), 4);
    }

    #[test]
    fn a_group_stops_taking_batches_at_max_group_bytes() {
        let f = Fake::new();
        let (first, go) = hold_leader(&f);
        let big: Vec<_> = (0..3)
            .map(|i| {
                let g = f.clone();
                let h = thread::spawn(move || {
                    let mut b = WriteBatch::new();
                    b.put(format!("big{i}"), "v");
                    g.pipeline
                        .commit(&*g, WriterKind::Batch(b), None, MAX_GROUP_BYTES / 2, false)
                });
                until_queued(&f, 2 + i);
                h
            })
            .collect();
        go.send(()).expect("let the leader go");
        let seqs: Vec<u64> = big
            .into_iter()
            .chain([first])
            .map(|t| t.join().expect("writer").expect("commit"))
            .collect();
        // A follower gets its own sequence back, not its leader's.
        assert_eq!(seqs, vec![2, 3, 4, 1]);
        assert_eq!(f.groups(), vec![vec![1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn value_log_moves_are_applied_alone_between_the_batches_around_them() {
        let f = Fake::new();
        let (first, go) = hold_leader(&f);
        let b = spawn_put(&f, "b");
        until_queued(&f, 2);
        let m = {
            let f = f.clone();
            thread::spawn(move || f.pipeline.commit(&*f, moves(), None, 10, false))
        };
        until_queued(&f, 3);
        let c = spawn_put(&f, "c");
        until_queued(&f, 4);
        go.send(()).expect("let the leader go");
        for t in [first, b, m, c] {
            t.join().expect("writer").expect("commit");
        }
        // Moves carry no sequence of their own (0) and share no group.
        assert_eq!(f.groups(), vec![vec![1], vec![2], vec![0], vec![3]]);
        assert_eq!(f.pipeline.visible(), 3);
    }

    #[test]
    fn a_failed_group_fails_every_writer_in_it_and_writers_after_it_go_on() {
        let f = Fake::new();
        f.fail_seq.store(3, Ordering::Release);
        let (first, go) = hold_leader(&f);
        let grouped: Vec<_> = ["b", "c"].iter().map(|k| spawn_put(&f, k)).collect();
        until_queued(&f, 3);
        go.send(()).expect("let the leader go");
        first.join().expect("writer").expect("first group commits");
        for t in grouped {
            let err = t.join().expect("writer").expect_err("its group failed");
            assert!(err.to_string().contains("injected"), "{err}");
        }
        // The failed group's sequences are published: nothing waits on them.
        assert_eq!(f.pipeline.visible(), 3);
        f.put("d").expect("a later write commits");
        assert_eq!(f.groups(), vec![vec![1], vec![4]]);
        assert_eq!(f.seq_of(b"d"), Some(4));
    }

    #[test]
    fn a_leader_hands_followers_their_share_to_run_on_their_own_threads() {
        let f = Fake::handing_off();
        let (first, go) = hold_leader(&f);
        let followers: Vec<_> = ["b", "c", "d"]
            .iter()
            .map(|k| {
                let (f, k) = (f.clone(), k.to_string());
                thread::spawn(move || f.put(&k).map(|_| thread::current().id()))
            })
            .collect();
        until_queued(&f, 4);
        go.send(()).expect("let the leader go");
        first.join().expect("writer").expect("commit");
        let ids: Vec<thread::ThreadId> = followers
            .into_iter()
            .map(|t| t.join().expect("writer").expect("commit"))
            .collect();
        let on = lock(&f.applied_on).clone();
        let on = |seq: u64| on.iter().find(|(s, _)| *s == seq).map(|(_, id)| *id);
        // One group of the three; its leader applies its own batch and each
        // follower's share runs on the follower's thread, not the leader's.
        assert_eq!(f.groups(), vec![vec![1], vec![2, 3, 4]]);
        for (key, id) in ["b", "c", "d"].iter().zip(&ids) {
            let seq = f.seq_of(key.as_bytes()).expect("applied");
            assert_eq!(on(seq), Some(*id), "{key} (sequence {seq}) ran elsewhere");
        }
    }

    #[test]
    fn a_transaction_that_conflicts_gets_no_sequence_and_writes_nothing() {
        let f = Fake::new();
        let (read_ts, ()) = f
            .pipeline
            .begin_txn(true, |_| (), || Ok(()))
            .expect("begin");
        assert_eq!(read_ts, 0);
        f.put("k").expect("a write after the transaction began");
        let mut b = WriteBatch::new();
        b.put("k", "mine");
        let check = TxnCheck {
            read_ts,
            reads: HashSet::from([oracle::fingerprint(b"k")]),
        };
        let err = f
            .pipeline
            .commit(&*f, WriterKind::Batch(b), Some(check), 10, false)
            .expect_err("k changed after the read");
        assert!(matches!(err, Error::Conflict), "{err}");
        f.pipeline.end_txn(read_ts);
        f.put("after").expect("commit");
        // The refused batch took no sequence: the next write gets 2.
        assert_eq!(f.seq_of(b"after"), Some(2));
        assert_eq!(f.groups(), vec![vec![1], vec![2]]);
    }

    #[test]
    fn a_transaction_begins_only_once_every_handed_out_sequence_is_visible() {
        let f = Fake::new();
        let (first, go) = hold_leader(&f);
        let (began_tx, began_rx) = mpsc::channel();
        let begin = {
            let f = f.clone();
            thread::spawn(move || {
                let r = f.pipeline.begin_txn(false, |ts| ts, || Ok(()));
                let _ = began_tx.send(());
                r
            })
        };
        assert!(
            began_rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "began while sequence 1 was handed out but not applied"
        );
        go.send(()).expect("let the leader go");
        first.join().expect("writer").expect("commit");
        let (read_ts, pinned) = begin.join().expect("begin thread").expect("begin");
        assert_eq!((read_ts, pinned), (1, 1));
    }

    #[test]
    fn a_waiting_transaction_begin_ends_with_the_error_alive_reports() {
        let f = Fake::new();
        let (first, go) = hold_leader(&f);
        let begin = {
            let f = f.clone();
            thread::spawn(move || f.pipeline.begin_txn(true, |_| (), || Err(Error::Closed)))
        };
        go.send(()).expect("let the leader go");
        first.join().expect("writer").expect("commit");
        // Either it saw sequence 1 applied, or it waited and was told the Db closed.
        match begin.join().expect("begin thread") {
            Ok((read_ts, ())) => assert_eq!(read_ts, 1),
            Err(e) => assert!(matches!(e, Error::Closed), "{e}"),
        }
    }

    #[test]
    fn direct_commits_from_many_threads_reach_the_log_in_sequence_order() {
        let f = Fake::new();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let f = f.clone();
                thread::spawn(move || {
                    for i in 0..250 {
                        let mut b = WriteBatch::new();
                        b.put(format!("t{t}-{i}"), "v");
                        f.pipeline
                            .commit_direct(&*f, b, None, 10, false)
                            .expect("commit");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("writer thread");
        }
        let order: Vec<u64> = f.groups().concat();
        assert_eq!(order, (1..=1000).collect::<Vec<u64>>());
        assert!(
            f.groups().iter().all(|g| g.len() == 1),
            "direct writes are not grouped"
        );
        assert_eq!(f.pipeline.visible(), 1000);
    }

    #[test]
    fn closed_logs_refuse_writes_and_a_direct_write_spends_no_sequence() {
        let f = Fake::new();
        let closed = lock(&f.log).take();
        let mut b = WriteBatch::new();
        b.put("k", "v");
        let err = f
            .pipeline
            .commit_direct(&*f, b, None, 10, false)
            .expect_err("closed");
        assert!(matches!(err, Error::Closed), "{err}");
        assert_eq!(
            f.pipeline.reserve(),
            1,
            "the refused direct write took a sequence"
        );
        let err = f.put("k").expect_err("closed");
        assert!(matches!(err, Error::Closed), "{err}");
        // A queued write's sequence is handed out before the logs are seen,
        // and published anyway: a transaction does not wait for it forever.
        f.pipeline.publish(1);
        let (read_ts, ()) = f
            .pipeline
            .begin_txn(false, |_| (), || Ok(()))
            .expect("begin");
        assert_eq!(read_ts, 2);
        *lock(&f.log) = closed;
        f.put("later").expect("reopened logs take writes");
        assert_eq!(f.seq_of(b"later"), Some(3));
    }

    #[test]
    fn a_batch_at_its_own_version_must_be_above_every_sequence_handed_out() {
        let f = Fake::new();
        f.put("a").expect("commit");
        let mut b = WriteBatch::new();
        b.put("old", "v").set_version(1);
        let err = f
            .pipeline
            .commit(&*f, WriterKind::Batch(b), None, 10, false)
            .expect_err("version 1 is handed out");
        assert!(err.to_string().contains("must be above 1"), "{err}");
        let mut b = WriteBatch::new();
        b.put("new", "v").set_version(10);
        let at = f
            .pipeline
            .commit(&*f, WriterKind::Batch(b), None, 10, false)
            .expect("commit at 10");
        assert_eq!(at, 10, "commit returns the sequence it committed at");
        assert_eq!(f.put("next").expect("commit"), 11);
        assert_eq!(f.seq_of(b"new"), Some(10));
        assert_eq!(f.seq_of(b"next"), Some(11));
        assert_eq!(f.pipeline.visible(), 11);
    }
}
