//! Progress lines on stderr for the commands that can run long.
//!
//! A command starts a [`Progress`], names each step with [`Progress::phase`]
//! and bumps a counter from its workers; a reporter thread wakes every second
//! and prints one line from those atomics: the step, the count and rate where
//! there is one, the ETA where the total is known, and the process's RSS.
//! Workers only touch an atomic, so a benchmark pays next to nothing for it.

use std::io::{IsTerminal, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `--progress` / `--no-progress`, shared by every long command.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct ProgressFlags {
    /// Print a progress line every second on stderr (default: only when stderr is a terminal)
    #[arg(long, overrides_with = "no_progress")]
    progress: bool,
    /// Print no progress lines, even on a terminal
    #[arg(long, overrides_with = "progress")]
    no_progress: bool,
}

impl ProgressFlags {
    pub fn enabled(&self) -> bool {
        if self.progress {
            true
        } else if self.no_progress {
            false
        } else {
            std::io::stderr().is_terminal()
        }
    }

    /// The flag that hands this choice on to a child process.
    pub fn as_arg(&self) -> &'static str {
        if self.enabled() {
            "--progress"
        } else {
            "--no-progress"
        }
    }
}

/// What a step counts.
#[derive(Clone, Copy)]
enum Unit {
    /// A single library call: only elapsed time and RSS can be shown.
    Wait,
    /// Items (keys, entries, files); `bytes_each` > 0 adds MB/s.
    Items { name: &'static str, bytes_each: u64 },
    /// Bytes: shown as MiB and MB/s.
    Bytes,
}

/// One step of a command, as the progress line names it.
#[derive(Clone)]
pub struct Phase {
    label: String,
    unit: Unit,
    total: Option<u64>,
}

impl Phase {
    /// A step done inside one library call, with nothing to count.
    pub fn wait(label: impl Into<String>) -> Phase {
        Phase {
            label: label.into(),
            unit: Unit::Wait,
            total: None,
        }
    }

    /// A step that counts items called `unit` ("keys", "files").
    pub fn items(label: impl Into<String>, unit: &'static str) -> Phase {
        Phase {
            label: label.into(),
            unit: Unit::Items {
                name: unit,
                bytes_each: 0,
            },
            total: None,
        }
    }

    /// A step that counts bytes.
    pub fn bytes(label: impl Into<String>) -> Phase {
        Phase {
            label: label.into(),
            unit: Unit::Bytes,
            total: None,
        }
    }

    /// How many items or bytes the step will reach, for the ETA.
    pub fn total(mut self, total: u64) -> Phase {
        self.total = Some(total);
        self
    }

    /// The size of one item, so that the line also shows MB/s.
    pub fn bytes_each(mut self, n: u64) -> Phase {
        if let Unit::Items { bytes_each, .. } = &mut self.unit {
            *bytes_each = n;
        }
        self
    }
}

struct Current {
    phase: Phase,
    started: Instant,
}

struct Shared {
    command: &'static str,
    started: Instant,
    done: AtomicU64,
    current: Mutex<Current>,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// A running reporter; dropping it stops the thread. With progress off there
/// is no thread and every call only touches the counter.
pub struct Progress {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Locks even when a panicking thread poisoned the mutex: progress is only a
/// display and must not turn a failure into a second panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The reporting interval: one second, shorter only for the tests
/// (SETT_PROGRESS_MS), so that a tiny run still prints a line.
fn interval() -> Duration {
    std::env::var("SETT_PROGRESS_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1), Duration::from_millis)
}

impl Progress {
    /// Starts reporting for `command` (the name on each line) if `on`.
    pub fn start(command: &'static str, on: bool) -> Progress {
        let now = Instant::now();
        let shared = Arc::new(Shared {
            command,
            started: now,
            done: AtomicU64::new(0),
            current: Mutex::new(Current {
                phase: Phase::wait("starting"),
                started: now,
            }),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread = on.then(|| {
            let s = shared.clone();
            std::thread::spawn(move || report(&s, interval()))
        });
        Progress { shared, thread }
    }

    /// Starts a new step; the counter goes back to 0.
    pub fn phase(&self, phase: Phase) {
        let mut c = lock(&self.shared.current);
        self.shared.done.store(0, Ordering::Relaxed);
        *c = Current {
            phase,
            started: Instant::now(),
        };
    }

    /// Adds `n` to the step's count (from any thread).
    pub fn add(&self, n: u64) {
        self.shared.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the step's count (for a single thread that keeps its own).
    pub fn set(&self, n: u64) {
        self.shared.done.store(n, Ordering::Relaxed);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reporter thread: one line per interval until stopped.
fn report(s: &Shared, every: Duration) {
    // The count and time of the previous line, for the rate over the last interval.
    let mut last: Option<(Instant, u64, Instant)> = None;
    loop {
        let deadline = Instant::now() + every;
        let mut stop = lock(&s.stop);
        while !*stop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            stop = s
                .wake
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if *stop {
            return;
        }
        drop(stop);
        let c = lock(&s.current);
        let now = Instant::now();
        let done = s.done.load(Ordering::Relaxed);
        // The rate over the last interval, unless the step changed since.
        let rate = match last {
            Some((phase_started, n, t)) if phase_started == c.started && done >= n => {
                (done - n) as f64 / now.duration_since(t).as_secs_f64()
            }
            _ => done as f64 / now.duration_since(c.started).as_secs_f64(),
        };
        last = Some((c.started, done, now));
        let line = format_line(s, &c, done, rate, now);
        drop(c);
        // A closed or full stderr is no reason to stop the command.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

fn format_line(s: &Shared, c: &Current, done: u64, rate: f64, now: Instant) -> String {
    let p = &c.phase;
    let in_phase = now.duration_since(c.started).as_secs_f64();
    let mut line = format!(
        "[{} {:.0}s] {}",
        s.command,
        now.duration_since(s.started).as_secs_f64(),
        p.label
    );
    match p.unit {
        Unit::Wait => line += &format!(": {in_phase:.0}s in this step"),
        Unit::Items { name, bytes_each } => {
            line += &format!(": {done}");
            if let Some(t) = p.total {
                line += &format!(" of {t}");
            }
            line += &format!(" {name}, {rate:.0} {name}/s");
            if bytes_each > 0 {
                line += &format!(", {:.1} MB/s", rate * bytes_each as f64 / 1e6);
            }
        }
        Unit::Bytes => {
            line += &format!(": {:.1}", mib(done));
            if let Some(t) = p.total {
                line += &format!(" of {:.1}", mib(t));
            }
            line += &format!(" MiB, {:.1} MB/s", rate / 1e6);
        }
    }
    // The ETA from the step's average rate, steadier than the last second's.
    if let Some(t) = p.total.filter(|_| !matches!(p.unit, Unit::Wait)) {
        let avg = done as f64 / in_phase;
        if done > 0 && t >= done && avg > 0.0 {
            line += &format!(", ETA {:.0}s", (t - done) as f64 / avg);
        }
    }
    line += &format!(", RSS {:.0} MiB", mib(rss().0));
    line
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// (current RSS, peak RSS) of this process in bytes, from /proc; 0 where it
/// cannot be read.
pub fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// A writer that counts what passes through it into the step's counter.
pub struct CountingWriter<'a, W> {
    pub inner: W,
    progress: &'a Progress,
}

impl<'a, W: Write> CountingWriter<'a, W> {
    pub fn new(inner: W, progress: &'a Progress) -> Self {
        CountingWriter { inner, progress }
    }
}

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.progress.add(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that counts what passes through it into the step's counter.
pub struct CountingReader<'a, R> {
    inner: R,
    progress: &'a Progress,
}

impl<'a, R: Read> CountingReader<'a, R> {
    pub fn new(inner: R, progress: &'a Progress) -> Self {
        CountingReader { inner, progress }
    }
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.add(n as u64);
        Ok(n)
    }
}
