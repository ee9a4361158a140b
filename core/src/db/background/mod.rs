//! Background work: the flush thread, the compaction threads, and what
//! waits for them.
//!
//! [`Background`] owns the state they share (shutdown, the tables running
//! compactions hold, the compaction cursors, the manual-operation flag, the
//! Db's idleness), the two condvars that carry their wake-ups and the
//! threads' handles; the rest of the Db reaches them only through its verbs.
//! The loops ([`flush_loop`], [`compaction_loop`]) reach the Db only through
//! [`BackgroundEnv`], so that the unit tests (`tests.rs`) drive them against
//! a fake, as pebble tests its commit pipeline against a fake `commitEnv`.
//! `DbInner` implements it in `work.rs`, beside the work itself: writing a
//! memtable to a table, running a compaction, flatten and the drops.
//!
//! Lock contracts are given beside each verb (`Requires:`), against the
//! Db's lock order (db/mod.rs). The background lock (`bg`) comes after
//! `log` and before `state`'s read side, `poison` and `snapshots`: the
//! conditions its waits check read those while it is held. It is never held
//! while taking `state` for writing or `manifest`, so neither a flush nor a
//! compaction runs under it.
//!
//! Wake-ups are never lost: a waiter checks its condition under `bg`, and
//! whoever changes one (publishes a state, poisons, finishes a flush) takes
//! `bg` before notifying, so that the notification comes either before the
//! check or while the waiter waits. Only [`Background::nudge`] skips the lock.

mod work;

#[cfg(test)]
mod tests;

use super::lock;
use crate::cache::release_free_memory;
use crate::error::Result;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the background lock guards.
#[derive(Default)]
struct BgState {
    shutdown: bool,
    /// Tables taken by a running compaction.
    busy: HashSet<u64>,
    /// Per level, where the next compaction of it starts (`compaction::pick`).
    cursors: Vec<Vec<u8>>,
    /// A manual operation (flatten, drop) owns the levels: no automatic compaction starts.
    manual: bool,
    /// Writes stopped a while ago (set by the GC loop): L0 is merged down even
    /// below its trigger, so that its garbage is counted (`compaction::due`).
    /// Read it through [`Background::is_idle`], which also sees a write since.
    idle: bool,
    /// The batch count when `idle` was last set.
    idle_at_batches: u64,
    /// The batch count at the GC loop's last look (`Background::look_idle`).
    seen_batches: u64,
    /// When the GC loop last saw a batch written; `None`: not since open.
    last_write: Option<Instant>,
}

impl BgState {
    fn is_idle(&self, batches: u64) -> bool {
        self.idle && batches == self.idle_at_batches
    }
}

/// The state background threads share with the Db, their wake-ups and their
/// handles.
pub(crate) struct Background {
    state: Mutex<BgState>,
    /// Wakes flush and compaction threads, and the GC thread.
    work_cv: Condvar,
    /// Wakes writers waiting for memtable or L0 room, waiters for flushes,
    /// and manual operations waiting for compactions.
    room_cv: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// How a writer short of room waits (`Background::wait_for_room`).
pub(crate) enum RoomWait {
    /// Until a flush or compaction finishes, waking the background threads
    /// first (L0 is at its stop trigger: a compaction must run).
    Wake,
    /// Until a flush or compaction finishes.
    Quiet,
    /// At most this long (a slowdown).
    For(Duration),
}

impl Background {
    /// Background state for a Db of `num_levels` levels, before any thread runs.
    /// Requires: nothing.
    pub(crate) fn new(num_levels: usize) -> Background {
        Background {
            state: Mutex::new(BgState {
                cursors: vec![Vec::new(); num_levels],
                ..Default::default()
            }),
            work_cv: Condvar::new(),
            room_cv: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BgState> {
        lock(&self.state)
    }

    fn wait<'a>(&self, cv: &Condvar, g: MutexGuard<'a, BgState>) -> MutexGuard<'a, BgState> {
        cv.wait(g).unwrap_or_else(|p| p.into_inner())
    }

    // Threads.

    /// Keeps `thread`'s handle, to be joined by [`Background::shutdown_and_join`].
    /// Requires: nothing (takes only the handles' own lock).
    pub(crate) fn adopt(&self, thread: JoinHandle<()>) {
        lock(&self.threads).push(thread);
    }

    /// Tells every background loop to end, wakes them and every waiter,
    /// and joins the threads adopted so far. False if one of them panicked.
    /// Requires: `bg` not held, nor anything a flush or compaction in
    /// progress takes (`log`, `manifest`, `state`): they finish first.
    pub(crate) fn shutdown_and_join(&self) -> bool {
        {
            let mut bg = self.lock();
            bg.shutdown = true;
            self.work_cv.notify_all();
            self.room_cv.notify_all();
        }
        let threads = std::mem::take(&mut *lock(&self.threads));
        let mut clean = true;
        for t in threads {
            clean &= t.join().is_ok();
        }
        clean
    }

    // Wake-ups.

    /// Wakes the background threads: there may be work (a memtable switched
    /// out, the Db idle). Requires: `bg` not held.
    pub(crate) fn wake(&self) {
        let _bg = self.lock();
        self.work_cv.notify_all();
    }

    /// Wakes the background threads without taking the lock, so that a
    /// thread waiting at that moment may miss it: for wake-ups that are a
    /// hint only (a value-log head sealed, which the GC also looks for once
    /// a second). Requires: nothing.
    pub(crate) fn nudge(&self) {
        self.work_cv.notify_all();
    }

    /// Wakes whoever waits for room, a flush or the end of compactions:
    /// something they wait for may have changed (the Db is poisoned).
    /// Requires: `bg` not held.
    pub(crate) fn wake_waiters(&self) {
        let _bg = self.lock();
        self.room_cv.notify_all();
    }

    /// A flush or compaction finished: wakes the background threads (more
    /// may be due) and every waiter. Requires: `bg` not held.
    fn finished(&self) {
        let _bg = self.lock();
        self.work_cv.notify_all();
        self.room_cv.notify_all();
    }

    // Waits.

    /// Waits until `done` returns a value (read under `bg`), waking the
    /// background threads before each wait, and each time a flush or
    /// compaction finishes looks again; for waits on flushes.
    /// Requires: `bg` not held, nor anything a flush takes (`log`,
    /// `manifest`, `state`); `done` takes nothing but what may be taken
    /// under `bg` (`state` for reading, `poison`).
    pub(crate) fn wait_until<T>(&self, mut done: impl FnMut() -> Option<T>) -> T {
        let mut bg = self.lock();
        loop {
            if let Some(t) = done() {
                return t;
            }
            self.work_cv.notify_all();
            bg = self.wait(&self.room_cv, bg);
        }
    }

    /// One look of a writer short of room: `decide`, given whether a manual
    /// operation holds compactions back, either ends the wait (`Break`) or
    /// says how to wait once, after which this returns `None` and the writer
    /// looks again. Requires: `bg` not held (the caller holds `log`: nothing
    /// a wait is for takes it); `decide` takes nothing but what may be taken
    /// under `bg` (`state` for reading, `poison`).
    pub(crate) fn wait_for_room<T>(
        &self,
        decide: impl FnOnce(bool) -> ControlFlow<T, RoomWait>,
    ) -> Option<T> {
        let bg = self.lock();
        match decide(bg.manual) {
            ControlFlow::Break(t) => Some(t),
            ControlFlow::Continue(RoomWait::Wake) => {
                self.work_cv.notify_all();
                drop(self.wait(&self.room_cv, bg));
                None
            }
            ControlFlow::Continue(RoomWait::Quiet) => {
                drop(self.wait(&self.room_cv, bg));
                None
            }
            ControlFlow::Continue(RoomWait::For(delay)) => {
                let _ = self.room_cv.wait_timeout(bg, delay);
                None
            }
        }
    }

    /// Waits up to `timeout` for a wake-up of the background threads; false
    /// once they are to end (shutdown, or `poisoned` says so), before or
    /// after the wait. For the GC thread. Requires: `bg` not held;
    /// `poisoned` takes only `poison`.
    pub(crate) fn wait_for_work(&self, timeout: Duration, poisoned: impl Fn() -> bool) -> bool {
        let bg = self.lock();
        if bg.shutdown || poisoned() {
            return false;
        }
        let (bg, _) = self
            .work_cv
            .wait_timeout(bg, timeout)
            .unwrap_or_else(|p| p.into_inner());
        !(bg.shutdown || poisoned())
    }

    // Manual operations.

    /// Stops automatic compactions and waits for running ones to finish (and
    /// for another manual operation to end); they resume when the guard drops.
    /// Requires: `bg` not held, nor anything a compaction takes (`manifest`,
    /// `state`); the caller may hold `log`.
    pub(crate) fn pause_compactions(&self) -> ManualGuard<'_> {
        let mut bg = self.lock();
        while bg.manual {
            bg = self.wait(&self.room_cv, bg);
        }
        bg.manual = true;
        while !bg.busy.is_empty() {
            bg = self.wait(&self.room_cv, bg);
        }
        ManualGuard { bg: self }
    }

    /// Holds automatic compactions back (`true`) or lets them run, without
    /// waiting for running ones: for tests that build a tree by hand.
    #[cfg(test)]
    pub(crate) fn hold_compactions(&self, hold: bool) {
        let mut bg = self.lock();
        bg.manual = hold;
        self.work_cv.notify_all();
        self.room_cv.notify_all();
    }

    // Idleness.

    /// Whether the Db is idle: marked so by the last [`Background::look_idle`],
    /// and `batches` (the count of batches written) the same as then, so
    /// that a write ends idleness at once, not at the next look.
    /// Requires: `bg` not held.
    pub(crate) fn is_idle(&self, batches: u64) -> bool {
        self.lock().is_idle(batches)
    }

    /// Looks at the writes since the last look, at `now`: `batches` is the
    /// count of batches written. Marks the Db idle once no batch has been
    /// written for `idle_after`, or busy again, waking the background threads
    /// when it turns idle (the compaction thread then merges L0 down), and
    /// returns whether it is idle. Reads do not count: background work that
    /// waits for them only ends later, beside the same reads. A Db nobody has
    /// written since it opened is idle at once. Requires: `bg` not held.
    pub(crate) fn look_idle(&self, now: Instant, batches: u64, idle_after: Duration) -> bool {
        let mut bg = self.lock();
        if batches != bg.seen_batches {
            bg.seen_batches = batches;
            bg.last_write = Some(now);
        }
        let idle = bg
            .last_write
            .is_none_or(|t| now.duration_since(t) >= idle_after);
        if bg.idle != idle || (idle && bg.idle_at_batches != batches) {
            bg.idle = idle;
            bg.idle_at_batches = batches;
            if idle {
                self.work_cv.notify_all();
            }
        }
        idle
    }
}

/// Held by a manual operation; lets automatic compactions resume when dropped.
pub(crate) struct ManualGuard<'a> {
    bg: &'a Background,
}

impl Drop for ManualGuard<'_> {
    fn drop(&mut self) {
        let mut bg = self.bg.lock();
        bg.manual = false;
        self.bg.work_cv.notify_all();
        self.bg.room_cv.notify_all();
    }
}

/// A compaction as the loop sees it: the tables it takes.
pub(crate) trait CompactionJob {
    /// The ids of every table it reads (and replaces).
    fn tables(&self) -> Vec<u64>;
}

/// Everything the flush and compaction loops need from the Db.
pub(crate) trait BackgroundEnv {
    /// A memtable waiting for its flush.
    type Mem;
    /// A compaction picked to run.
    type Job: CompactionJob;

    /// The Db's background state. Requires: nothing.
    fn background(&self) -> &Background;

    /// The oldest immutable memtable, if any: the next to flush.
    /// Requires: no `state` guard held (takes it for reading); called under `bg`.
    fn oldest_immutable(&self) -> Option<Self::Mem>;

    /// Writes `mem` to a table, records it and drops it from what readers
    /// see (and its WAL). Requires: `bg` not held (takes `manifest`, then
    /// `state` for writing).
    fn flush(&self, mem: &Self::Mem) -> Result<()>;

    /// The batch count, for idleness ([`Background::is_idle`]).
    /// Requires: nothing (an atomic).
    fn batches(&self) -> u64;

    /// The compaction due next over tables not in `busy` (taken by a running
    /// one), moving the level's cursor in `cursors` on; if none is due, one
    /// that drops what range tombstones hide. `idle`: the Db is idle (L0 is
    /// merged down below its trigger). Requires: called under `bg`; takes
    /// `state` for reading and `snapshots`.
    fn pick(&self, busy: &HashSet<u64>, cursors: &mut [Vec<u8>], idle: bool) -> Option<Self::Job>;

    /// Runs `job` and records its outcome. Requires: `bg` not held (takes
    /// `manifest`, then `state` for writing).
    fn compact(&self, job: &Self::Job) -> Result<()>;

    /// Whether the Db is poisoned: background work stops.
    /// Requires: no `poison` guard held (takes it).
    fn poisoned(&self) -> bool;

    /// Poisons the Db with `e` (the first error stays) and wakes its waiters.
    /// Requires: `bg` not held, nor `poison`.
    fn poison_with(&self, e: &crate::error::Error);
}

/// The flush thread: flushes immutable memtables, oldest first, until
/// shutdown; stops taking work once the Db is poisoned (a failed flush
/// poisons it). After each flush it wakes writers waiting for room.
pub(crate) fn flush_loop<E: BackgroundEnv>(env: &E) {
    let bg = env.background();
    loop {
        let mem = {
            let mut state = bg.lock();
            loop {
                if let Some(m) = env.oldest_immutable() {
                    if !env.poisoned() {
                        break Some(m);
                    }
                }
                if state.shutdown {
                    break None;
                }
                state = bg.wait(&bg.work_cv, state);
            }
        };
        let Some(mem) = mem else { return };
        if let Err(e) = env.flush(&mem) {
            env.poison_with(&e);
        }
        drop(mem);
        release_free_memory();
        bg.finished();
    }
}

/// A compaction thread: runs the compactions `env` picks, never two over
/// one table at once (the tables of a running one are `busy`), none while
/// a manual operation holds them back, until shutdown or poisoning.
pub(crate) fn compaction_loop<E: BackgroundEnv>(env: &E) {
    let bg = env.background();
    loop {
        let (job, tables) = {
            let mut state = bg.lock();
            loop {
                if state.shutdown || env.poisoned() {
                    return;
                }
                let idle = state.is_idle(env.batches());
                let BgState {
                    busy,
                    cursors,
                    manual,
                    ..
                } = &mut *state;
                let picked = if *manual {
                    None
                } else {
                    env.pick(busy, cursors, idle)
                };
                if let Some(job) = picked {
                    let tables = job.tables();
                    busy.extend(tables.iter().copied());
                    break (job, tables);
                }
                state = bg.wait(&bg.work_cv, state);
            }
        };
        let res = env.compact(&job);
        {
            let mut state = bg.lock();
            for t in &tables {
                state.busy.remove(t);
            }
        }
        if let Err(e) = res {
            env.poison_with(&e);
        }
        drop(job);
        release_free_memory();
        bg.finished();
    }
}
