//! The flush and compaction loops, and the waits on them, against a fake
//! `BackgroundEnv`: memtables and tables are ids, a flush or compaction
//! records itself, and gates (channels) hold one inside its work for as long
//! as a test needs.

use super::*;
use crate::error::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;

/// How long a test waits for something that should happen: generous, so
/// that a loaded machine does not fail it, and finite, so that none hangs.
const LIMIT: Duration = Duration::from_secs(20);

/// How long a test waits to see that something does not happen.
const NOT_YET: Duration = Duration::from_millis(100);

struct FakeJob(Vec<u64>);

impl CompactionJob for FakeJob {
    fn tables(&self) -> Vec<u64> {
        self.0.clone()
    }
}

/// Holds a flush or compaction inside its work: it sends what it works on
/// to `entered`, then waits for a `()` on `go`.
struct Gate<T> {
    entered: Sender<T>,
    go: Mutex<Receiver<()>>,
}

impl<T> Gate<T> {
    fn pass(&self, what: T) {
        let _ = self.entered.send(what);
        let _ = lock(&self.go).recv_timeout(LIMIT);
    }
}

/// The test's ends of a gate.
struct GateEnds<T> {
    entered: Receiver<T>,
    go: Sender<()>,
}

impl<T: std::fmt::Debug> GateEnds<T> {
    fn entered(&self) -> T {
        self.entered
            .recv_timeout(LIMIT)
            .expect("work entered the gate")
    }

    fn release(&self) {
        self.go.send(()).expect("the gate is open");
    }
}

fn gate<T>() -> (Gate<T>, GateEnds<T>) {
    let (entered, entered_rx) = mpsc::channel();
    let (go_tx, go) = mpsc::channel();
    (
        Gate {
            entered,
            go: Mutex::new(go),
        },
        GateEnds {
            entered: entered_rx,
            go: go_tx,
        },
    )
}

#[derive(Default)]
struct Fake {
    bg: Option<Background>,
    /// Immutable memtables by id, newest first (as `ReadState::imm`).
    imm: Mutex<Vec<u64>>,
    flushed: Mutex<Vec<u64>>,
    /// The memtable whose flush fails.
    fail_flush: Option<u64>,
    flush_gate: Option<Gate<u64>>,
    poison: Mutex<Option<String>>,
    batches: AtomicU64,
    /// Compactions to pick, in order of urgency: their tables.
    jobs: Mutex<Vec<Vec<u64>>>,
    /// Pick a compaction only while the Db is idle.
    only_when_idle: bool,
    /// Tables of the compactions running now.
    running: Mutex<HashSet<u64>>,
    /// Set when a compaction started over a table a running one holds.
    overlapped: AtomicBool,
    compacted: Mutex<Vec<Vec<u64>>>,
    compaction_gate: Option<Gate<Vec<u64>>>,
}

impl Fake {
    fn new(f: Fake) -> Arc<Fake> {
        Arc::new(Fake {
            bg: Some(Background::new(3)),
            ..f
        })
    }

    fn bg(&self) -> &Background {
        self.bg.as_ref().expect("built by Fake::new")
    }

    /// Turns a new memtable immutable, as a switch does.
    fn switch(&self, id: u64) {
        lock(&self.imm).insert(0, id);
        self.bg().wake();
    }

    /// Adds a compaction to pick, as a flush that fills a level does.
    fn add_job(&self, tables: &[u64]) {
        lock(&self.jobs).push(tables.to_vec());
        self.bg().wake();
    }

    fn flushed(&self) -> Vec<u64> {
        lock(&self.flushed).clone()
    }

    fn is_poisoned(&self) -> bool {
        lock(&self.poison).is_some()
    }

    fn start_flush(self: &Arc<Self>) {
        let f = self.clone();
        self.bg().adopt(thread::spawn(move || flush_loop(&*f)));
    }

    fn start_compactions(self: &Arc<Self>, n: usize) {
        for _ in 0..n {
            let f = self.clone();
            self.bg().adopt(thread::spawn(move || compaction_loop(&*f)));
        }
    }

    /// Shuts the loops down; panics if they do not end within `LIMIT`.
    fn shut_down(self: &Arc<Self>) -> bool {
        let (tx, rx) = mpsc::channel();
        let f = self.clone();
        thread::spawn(move || {
            let _ = tx.send(f.bg().shutdown_and_join());
        });
        rx.recv_timeout(LIMIT)
            .expect("the background threads ended after shutdown")
    }

    /// Runs `wait` on a thread of its own (a writer), and returns what tells
    /// that it returned.
    fn waiter(self: &Arc<Self>, wait: impl FnOnce(&Fake) + Send + 'static) -> Receiver<()> {
        let (tx, rx) = mpsc::channel();
        let f = self.clone();
        thread::spawn(move || {
            wait(&f);
            let _ = tx.send(());
        });
        rx
    }
}

impl BackgroundEnv for Fake {
    type Mem = u64;
    type Job = FakeJob;

    fn background(&self) -> &Background {
        self.bg()
    }

    fn oldest_immutable(&self) -> Option<u64> {
        lock(&self.imm).last().copied()
    }

    fn flush(&self, mem: &u64) -> Result<()> {
        if let Some(g) = &self.flush_gate {
            g.pass(*mem);
        }
        if self.fail_flush == Some(*mem) {
            return Err(Error::Poisoned(format!("injected: flush of {mem}")));
        }
        lock(&self.flushed).push(*mem);
        lock(&self.imm).retain(|m| m != mem);
        Ok(())
    }

    fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    fn pick(&self, busy: &HashSet<u64>, _: &mut [Vec<u8>], idle: bool) -> Option<FakeJob> {
        if self.only_when_idle && !idle {
            return None;
        }
        let mut jobs = lock(&self.jobs);
        let i = jobs
            .iter()
            .position(|j| j.iter().all(|t| !busy.contains(t)))?;
        Some(FakeJob(jobs.remove(i)))
    }

    fn compact(&self, job: &FakeJob) -> Result<()> {
        {
            let mut running = lock(&self.running);
            for t in &job.0 {
                if !running.insert(*t) {
                    self.overlapped.store(true, Ordering::SeqCst);
                }
            }
        }
        if let Some(g) = &self.compaction_gate {
            g.pass(job.0.clone());
        }
        let mut running = lock(&self.running);
        for t in &job.0 {
            running.remove(t);
        }
        lock(&self.compacted).push(job.0.clone());
        Ok(())
    }

    fn poisoned(&self) -> bool {
        self.is_poisoned()
    }

    fn poison_with(&self, e: &Error) {
        lock(&self.poison).get_or_insert_with(|| e.to_string());
        self.bg().wake_waiters();
    }
}

#[test]
fn the_flush_loop_flushes_immutable_memtables_oldest_first_each_once() {
    let f = Fake::new(Fake::default());
    for id in 1..=3 {
        f.switch(id);
    }
    f.start_flush();
    let all = f.waiter(|f| f.bg().wait_until(|| lock(&f.imm).is_empty().then_some(())));
    all.recv_timeout(LIMIT).expect("every memtable flushed");
    f.switch(4);
    f.switch(5);
    let all = f.waiter(|f| f.bg().wait_until(|| lock(&f.imm).is_empty().then_some(())));
    all.recv_timeout(LIMIT).expect("the new memtables flushed");
    assert!(f.shut_down());
    assert_eq!(f.flushed(), vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_writer_waiting_for_a_flush_wakes_when_that_flush_ends_not_the_next() {
    let (g, ends) = gate();
    let f = Fake::new(Fake {
        flush_gate: Some(g),
        ..Fake::default()
    });
    f.switch(1);
    f.switch(2);
    f.start_flush();
    assert_eq!(ends.entered(), 1);
    let waited = f.waiter(|f| {
        f.bg()
            .wait_until(|| (!f.flushed().is_empty()).then_some(()))
    });
    assert!(
        waited.recv_timeout(NOT_YET).is_err(),
        "woke before the flush"
    );
    ends.release();
    // The flush of 2 is held at the gate: only the end of 1's wakes the writer.
    assert_eq!(ends.entered(), 2);
    waited
        .recv_timeout(LIMIT)
        .expect("the writer woke after the flush");
    ends.release();
    assert!(f.shut_down());
    assert_eq!(f.flushed(), vec![1, 2]);
}

#[test]
fn shutdown_ends_both_loops_while_they_wait_for_work() {
    let f = Fake::new(Fake::default());
    f.start_flush();
    f.start_compactions(2);
    assert!(f.shut_down());
    assert!(f.flushed().is_empty());
}

#[test]
fn shutdown_ends_the_loops_with_work_left_once_poisoned() {
    let f = Fake::new(Fake::default());
    *lock(&f.poison) = Some("earlier".into());
    f.switch(1);
    f.add_job(&[1]);
    f.start_flush();
    f.start_compactions(1);
    assert!(f.shut_down());
    assert!(f.flushed().is_empty());
    assert!(lock(&f.compacted).is_empty());
    assert_eq!(*lock(&f.imm), vec![1]);
}

#[test]
fn a_failed_flush_poisons_and_the_flush_loop_takes_no_more_work() {
    let f = Fake::new(Fake {
        fail_flush: Some(2),
        ..Fake::default()
    });
    for id in 1..=3 {
        f.switch(id);
    }
    f.start_flush();
    let poisoned = f.waiter(|f| f.bg().wait_until(|| f.is_poisoned().then_some(())));
    poisoned
        .recv_timeout(LIMIT)
        .expect("the waiter saw the poison");
    assert!(f.shut_down());
    assert_eq!(f.flushed(), vec![1]);
    assert_eq!(*lock(&f.imm), vec![3, 2]);
}

#[test]
fn two_compactions_never_run_over_one_table_at_once_and_free_their_tables_after() {
    let (g, ends) = gate();
    let f = Fake::new(Fake {
        compaction_gate: Some(g),
        ..Fake::default()
    });
    for job in [&[1, 2][..], &[2, 3], &[4]] {
        f.add_job(job);
    }
    f.start_compactions(2);
    // [2, 3] shares table 2 with [1, 2]: the second thread takes [4].
    let mut first = vec![ends.entered(), ends.entered()];
    first.sort();
    assert_eq!(first, vec![vec![1, 2], vec![4]]);
    assert!(
        ends.entered.recv_timeout(NOT_YET).is_err(),
        "a third compaction started"
    );
    ends.release();
    ends.release();
    // Table 2 is free again once [1, 2] ended.
    assert_eq!(ends.entered(), vec![2, 3]);
    ends.release();
    assert!(f.shut_down());
    assert!(!f.overlapped.load(Ordering::SeqCst));
    assert_eq!(lock(&f.compacted).len(), 3);
    assert!(f.bg().lock().busy.is_empty());
}

#[test]
fn pausing_compactions_waits_for_running_ones_and_holds_new_ones_until_the_guard_drops() {
    let (g, ends) = gate();
    let f = Fake::new(Fake {
        compaction_gate: Some(g),
        ..Fake::default()
    });
    f.add_job(&[1]);
    f.start_compactions(1);
    assert_eq!(ends.entered(), vec![1]);
    let (paused_tx, paused) = mpsc::channel();
    let (resume, resume_rx) = mpsc::channel::<()>();
    let pauser = f.clone();
    let held = thread::spawn(move || {
        let guard = pauser.bg().pause_compactions();
        let _ = paused_tx.send(lock(&pauser.running).clone());
        let _ = resume_rx.recv_timeout(LIMIT);
        drop(guard);
    });
    assert!(
        paused.recv_timeout(NOT_YET).is_err(),
        "paused while [1] runs"
    );
    f.add_job(&[2]);
    ends.release();
    let running = paused.recv_timeout(LIMIT).expect("paused after [1] ended");
    assert!(running.is_empty(), "paused while {running:?} ran");
    assert!(
        ends.entered.recv_timeout(NOT_YET).is_err(),
        "a compaction started while paused"
    );
    resume.send(()).expect("the pauser waits");
    assert_eq!(ends.entered(), vec![2]);
    ends.release();
    held.join().expect("the pausing thread");
    assert!(f.shut_down());
}

#[test]
fn the_db_turns_idle_after_no_writes_and_busy_again_at_once_on_a_write() {
    let bg = Background::new(3);
    let idle_after = Duration::from_secs(1);
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    // Unwritten since open: idle at once.
    assert!(bg.look_idle(at(0), 0, idle_after));
    assert!(bg.is_idle(0));
    // A write ends idleness before the next look.
    assert!(!bg.is_idle(1));
    assert!(!bg.look_idle(at(10), 1, idle_after));
    assert!(!bg.look_idle(at(900), 1, idle_after));
    assert!(!bg.is_idle(1));
    // No write for `idle_after`: idle.
    assert!(bg.look_idle(at(1010), 1, idle_after));
    assert!(bg.is_idle(1));
    assert!(!bg.is_idle(2));
}

#[test]
fn turning_idle_wakes_a_waiting_compaction_loop_which_picks_as_idle() {
    let (g, ends) = gate();
    let f = Fake::new(Fake {
        compaction_gate: Some(g),
        only_when_idle: true,
        ..Fake::default()
    });
    f.add_job(&[1]);
    f.start_compactions(1);
    assert!(
        ends.entered.recv_timeout(NOT_YET).is_err(),
        "compacted while busy"
    );
    let t = Instant::now();
    let d = Duration::from_secs(1);
    f.bg().look_idle(t, 0, d);
    assert_eq!(ends.entered(), vec![1]);
    ends.release();
    assert!(f.shut_down());
}
