//! `sett-bench write`: the cost of small operations (issue 21) — single-key
//! puts or deletes, small batches, or 10-key prefix scans — from a few threads.
//!
//! Each thread runs `--ops` operations on its own keys and measures its own CPU
//! time (`CLOCK_THREAD_CPUTIME_ID`), which on a shared machine is steadier than
//! wall time. The run prints ops/s (wall) and CPU ns per op (summed over the
//! threads, engine background threads not included).
//!
//! - puts (default): `--batch` keys per write, values of `--value-size` bytes.
//! - `--delete`: the keys are first written (in 1000-entry batches, not timed),
//!   then deleted one write of `--batch` deletes at a time.
//! - `--scans`: `--ops` groups of 10 keys per thread are loaded (not timed),
//!   then each op is a prefix scan over one random group, which must return its 10 keys.
//!
//! After a load, the timed part waits until flushes and compactions are idle
//! (at most a minute), so that it meets the same tree whatever the load's pace.

use sett::{Db, IterOptions, Options, WriteBatch};
use std::path::PathBuf;
use std::time::Instant;

/// At least 1, as a usize.
fn positive() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
}

#[derive(clap::Args)]
pub struct WriteArgs {
    /// Database directory (default: a new temporary directory, removed at the end)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Threads, each on its own keys
    #[arg(long, default_value_t = 1, value_parser = positive())]
    threads: usize,
    /// Operations per thread
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// Value size in bytes
    #[arg(long, default_value_t = 256)]
    value_size: usize,
    /// Open with sync_writes (fsync every write group)
    #[arg(long)]
    sync: bool,
    /// Time deletes of written keys instead of puts
    #[arg(long, conflicts_with = "scans")]
    delete: bool,
    /// Keys per write
    #[arg(long, default_value_t = 1, value_parser = positive())]
    batch: usize,
    /// Time 10-key prefix scans instead of writes
    #[arg(long)]
    scans: bool,
}

/// Keys per prefix group in `--scans`.
const GROUP: u64 = 10;

/// This thread's CPU time in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Key `i` of thread `t`; in scan mode the last digit is the key's place in its group.
fn key(t: usize, i: u64) -> Vec<u8> {
    format!("t{t:03}k{i:012}").into_bytes()
}

/// The prefix of group `g` of thread `t` (keys `g*10 .. g*10+9`).
fn group_prefix(t: usize, g: u64) -> Vec<u8> {
    let mut k = key(t, g * GROUP);
    k.pop();
    k
}

/// A fixed-seed xorshift64 step.
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Writes keys `0..n` of thread `t` in 1000-entry batches (untimed set-up).
fn load(db: &Db, t: usize, n: u64, value: &[u8]) -> Result<(), String> {
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(key(t, i), value);
        if b.len() == 1000 || i + 1 == n {
            db.write(std::mem::take(&mut b))
                .map_err(|e| format!("load: {e}"))?;
        }
    }
    Ok(())
}

/// One thread's timed part: returns its CPU ns.
fn run_thread(db: &Db, a: &WriteArgs, t: usize, value: &[u8]) -> Result<u64, String> {
    let e = |e: sett::Error| e.to_string();
    let n = a.ops;
    // Keys made before the clock starts.
    let (keys, prefixes): (Vec<Vec<u8>>, Vec<Vec<u8>>) = if a.scans {
        let mut x = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1);
        let p = (0..n)
            .map(|_| group_prefix(t, xorshift(&mut x) % n))
            .collect();
        (Vec::new(), p)
    } else {
        ((0..n).map(|i| key(t, i)).collect(), Vec::new())
    };
    let cpu = thread_cpu_ns();
    if a.scans {
        for p in &prefixes {
            let opts = IterOptions {
                prefix: Some(p.clone()),
                ..IterOptions::default()
            };
            let mut it = db.iter(opts).map_err(e)?;
            let mut got = 0;
            while it.valid() {
                got += 1;
                it.advance().map_err(e)?;
            }
            if got != GROUP {
                return Err(format!("a prefix scan returned {got} keys, not {GROUP}"));
            }
        }
    } else {
        for chunk in keys.chunks(a.batch) {
            if chunk.len() == 1 && !a.delete {
                db.put(&chunk[0], value).map_err(e)?;
            } else if chunk.len() == 1 {
                db.delete(&chunk[0]).map_err(e)?;
            } else {
                let mut b = WriteBatch::new();
                for k in chunk {
                    if a.delete {
                        b.delete(k.as_slice());
                    } else {
                        b.put(k.as_slice(), value);
                    }
                }
                db.write(b).map_err(e)?;
            }
        }
    }
    Ok(thread_cpu_ns().saturating_sub(cpu))
}

/// Waits (up to a minute) until no flush or compaction is pending or running,
/// so that the timed part meets the same tree shape whatever the load's pace.
fn settle(db: &Db) {
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while Instant::now() < deadline {
        let s = db.stats();
        if s.immutable_memtables == 0 && s.compactions_pending == 0 && s.compactions_running == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

pub fn run(a: &WriteArgs) -> Result<(), String> {
    let (dir, remove) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("sett-bench-write-{}", std::process::id())),
            true,
        ),
    };
    let result = run_in(a, &dir);
    if remove {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run_in(a: &WriteArgs, dir: &std::path::Path) -> Result<(), String> {
    let mut opts = Options::new(dir);
    opts.sync_writes = a.sync;
    let db = Db::open(opts).map_err(|e| format!("{}: {e}", dir.display()))?;
    let value = vec![0x5a; a.value_size];
    if a.delete || a.scans {
        let per_thread = if a.scans { a.ops * GROUP } else { a.ops };
        for t in 0..a.threads {
            load(&db, t, per_thread, &value)?;
        }
        settle(&db);
    }
    let wall = Instant::now();
    let cpus: Vec<Result<u64, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let (db, value) = (&db, &value);
                s.spawn(move || run_thread(db, a, t, value))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a bench thread panicked".into()))
            })
            .collect()
    });
    let secs = wall.elapsed().as_secs_f64();
    let mut cpu = 0u64;
    for c in cpus {
        cpu += c?;
    }
    let ops = a.ops * a.threads as u64;
    let what = if a.scans {
        "prefix-scan(10)"
    } else if a.delete {
        "delete"
    } else {
        "put"
    };
    println!(
        "bench-write {what} threads={} ops={ops} batch={} value={}B sync={}: {:.0} ops/s, {:.0} ns/op wall per thread, {:.0} CPU ns/op",
        a.threads,
        if a.scans { 1 } else { a.batch },
        a.value_size,
        a.sync,
        ops as f64 / secs,
        secs * 1e9 * a.threads as f64 / ops as f64,
        cpu as f64 / ops as f64,
    );
    db.close().map_err(|e| format!("{}: {e}", dir.display()))
}
