//! Per-phase timings of value-log GC rounds, for finding what a stalled
//! collection waits on. Off unless the environment variable `SETT_GC_TRACE`
//! is set when the first round runs (then one line per round that collected,
//! or sampled, to stderr); when off, a round pays one relaxed load per phase.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Whether rounds are traced (read once per process).
fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        epoch();
        std::env::var_os("SETT_GC_TRACE").is_some()
    })
}

/// When tracing was first asked about: the lines' clock.
fn epoch() -> Instant {
    static AT: OnceLock<Instant> = OnceLock::new();
    *AT.get_or_init(Instant::now)
}

/// The phases of one GC round, in the order they run.
#[derive(Clone, Copy)]
pub(crate) enum Phase {
    /// Sealing the head early (log lock, rotation).
    Seal,
    /// Sampling sealed files' garbage shares.
    Sample,
    /// Choosing the file(s) to collect.
    Pick,
    /// Taking the log lock for the memtable switch of the GC's flush.
    FlushLock,
    /// The memtable switch itself (a new WAL; nothing synced).
    FlushSwitch,
    /// Waiting for the flush thread to write the memtables out.
    FlushWait,
    /// Walking the file (page faults and copies).
    Read,
    /// Looking each entry's key up.
    Lookup,
    /// Handing moves to the write pipeline.
    Move,
    /// Sleeping to keep within the rate.
    Throttle,
    /// The sync before deleting.
    Sync,
    /// The manifest record and the unlink.
    Delete,
}

const PHASES: usize = 12;
const NAMES: [&str; PHASES] = [
    "seal",
    "sample",
    "pick",
    "flush_lock",
    "flush_switch",
    "flush_wait",
    "read",
    "lookup",
    "move",
    "throttle",
    "sync",
    "delete",
];

/// Timings of one round; every method is a no-op when tracing is off.
pub(crate) struct Trace {
    on: bool,
    started: Instant,
    spent: [Duration; PHASES],
    /// Where the current phase started (`mark`).
    at: Instant,
    pub(crate) sampled_files: u64,
    pub(crate) sampled_entries: u64,
    pub(crate) collected: Vec<u32>,
    pub(crate) bytes: u64,
    pub(crate) moved: u64,
    pub(crate) rate: u64,
    pub(crate) walks: u64,
}

impl Trace {
    pub(crate) fn start(rate: u64) -> Trace {
        let now = Instant::now();
        Trace {
            on: enabled(),
            started: now,
            spent: [Duration::ZERO; PHASES],
            at: now,
            sampled_files: 0,
            sampled_entries: 0,
            collected: Vec::new(),
            bytes: 0,
            moved: 0,
            rate,
            walks: 0,
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.on
    }

    /// Charges the time since the last mark to `phase`.
    pub(crate) fn mark(&mut self, phase: Phase) {
        if self.on {
            let now = Instant::now();
            self.spent[phase as usize] += now - self.at;
            self.at = now;
        }
    }

    /// Adds `d` to `phase` (time measured inside a phase charged elsewhere;
    /// taken back from the phase `mark` charges next).
    pub(crate) fn add(&mut self, phase: Phase, d: Duration) {
        if self.on {
            self.spent[phase as usize] += d;
            self.at += d;
        }
    }

    /// Prints the round, if it did anything.
    pub(crate) fn finish(&self, outcome: &str) {
        if !self.on || (self.collected.is_empty() && self.sampled_files == 0 && self.walks == 0) {
            return;
        }
        let mut line = format!(
            "sett-gc-trace t={:.2} total_ms={:.1} outcome={outcome} files={:?} bytes={} moved={} rate_mb={} sampled_files={} sampled_entries={} walks={}",
            self.started.duration_since(epoch()).as_secs_f64(),
            self.started.elapsed().as_secs_f64() * 1e3,
            self.collected,
            self.bytes,
            self.moved,
            self.rate >> 20,
            self.sampled_files,
            self.sampled_entries,
            self.walks,
        );
        let total = self.started.elapsed();
        let other = total.saturating_sub(self.spent.iter().sum());
        line.push_str(&format!(" other_ms={:.1}", other.as_secs_f64() * 1e3));
        for (name, d) in NAMES.iter().zip(self.spent) {
            if !d.is_zero() {
                line.push_str(&format!(" {name}_ms={:.1}", d.as_secs_f64() * 1e3));
            }
        }
        eprintln!("{line}");
    }
}
