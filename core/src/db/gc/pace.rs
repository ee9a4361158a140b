//! Pacing: a round's bytes against `vlog_gc_rate`, unpaced while no writes
//! run.

use super::*;

/// How fast a round may go: `rate` bytes a second (0: no limit), and
/// whether writes ran since the last look (`GcState::pace`).
#[derive(Clone, Copy)]
pub(super) struct Pace {
    pub(super) rate: u64,
    pub(super) writing: bool,
}

/// A round's progress against its rate limit, looked at every `PACE_STEP`
/// bytes. A background round runs at device speed while the Db is idle
/// (`GcEnv::look_idle`: no write for `IDLE_AFTER`), as a tree's compactions
/// do: the settle after a load is as short as the device allows. Reads do
/// not slow it: the device work is the same either way, and done at the
/// rate limit it only lasts longer beside the same reads. The first write
/// puts the limit back within a step, counted from then on, so that bytes
/// done unpaced are not paid for with a sleep.
pub(super) struct Pacer {
    /// Bytes a second; 0: no limit.
    pub(super) rate: u64,
    /// A background round, which runs unpaced while the Db is idle.
    pub(super) background: bool,
    /// The limit holds for the bytes done past `paid` since `since`.
    pub(super) since: Instant,
    pub(super) paid: u64,
    /// Bytes done at which to look next.
    pub(super) next: u64,
}

/// Bytes a round does between two looks at its pace.
pub(super) const PACE_STEP: u64 = 256 << 10;

impl Pacer {
    pub(super) fn new(rate: u64, background: bool, started: Instant) -> Pacer {
        Pacer {
            rate,
            background,
            since: started,
            paid: 0,
            next: PACE_STEP,
        }
    }

    /// Whether `done` bytes call for a look (`step`).
    pub(super) fn due(&self, done: u64) -> bool {
        self.rate > 0 && done >= self.next
    }

    /// Sleeps as long as `done` bytes of the round ask, if the limit holds.
    /// Requires: `due(done)`; no lock of the Db held (a look takes `bg`).
    pub(super) fn step<E: GcEnv>(&mut self, env: &E, done: u64) -> Result<()> {
        self.next = done + PACE_STEP;
        if self.background && env.look_idle() {
            // Unpaced, the round never sleeps: it still ends at a close.
            env.check_open()?;
            self.since = Instant::now();
            self.paid = done;
            return Ok(());
        }
        throttle(env, self.since, done - self.paid, self.rate)
    }
}

/// Sleeps until `done` bytes since `started` keep within `rate` a second,
/// waking every 50 ms to see whether the Db is closing.
fn throttle<E: GcEnv>(env: &E, started: Instant, done: u64, rate: u64) -> Result<()> {
    let due = Duration::from_secs_f64(done as f64 / rate as f64);
    loop {
        // One reading of the clock per step: comparing one reading and
        // subtracting a later one can underflow, and a panic in the GC
        // thread would leave its backlog for ever.
        let left = due.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Ok(());
        }
        env.check_open()?;
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}
