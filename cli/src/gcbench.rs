//! `sett-bench gc DIR`: disk space under overwrites and deletes, with the
//! background value-log GC at its defaults and nothing called by hand.
//!
//! Writes a live set of `--live-mib` MiB, then rounds that overwrite every key
//! (a tenth of them deleted and put back first, so deletes leave garbage as
//! overwrites do) until `--rounds` times the live data went through. A sampler
//! records the directory's size every 200 ms; after the writes, one flush (as a
//! close would do) and a wait of up to `--settle-secs` for the directory to come
//! within 1.5x of the live data (`settle_seconds`), then on until the
//! background work is quiet and the size still for a second (`settled_*`). Prints `RESULT {json}`; `--csv` writes the
//! curve. `make bench-gc` runs it at 1 KiB and 16 KiB, with the GC on and off.

use sett::{Db, Options};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct GcBenchArgs {
    /// The database directory (created; use a new one)
    dir: PathBuf,
    /// Value size in bytes
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=(64 << 20)))]
    value_size: u64,
    /// Live data kept, MiB
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..))]
    live_mib: u64,
    /// Passes over the live set (the first writes it; each later one overwrites it)
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// vlog_gc_ratio for this run (0 turns the background GC off)
    #[arg(long, default_value_t = Options::new("").vlog_gc_ratio)]
    gc_ratio: f64,
    /// Longest wait after the writes for the directory to settle
    #[arg(long, default_value_t = 60)]
    settle_secs: u64,
    /// Write the curve (seconds, bytes written, directory bytes, live bytes) here
    #[arg(long)]
    csv: Option<PathBuf>,
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// A value that differs per key and round, so that a stale read is visible.
pub(crate) fn value(i: u64, round: u64, len: usize) -> Vec<u8> {
    let mut x = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:012}").into_bytes()
}

pub fn run(a: &GcBenchArgs) -> Result<(), String> {
    let e = |e: sett::Error| format!("{}: {e}", a.dir.display());
    let mut opts = Options::new(&a.dir);
    opts.vlog_gc_ratio = a.gc_ratio;
    let db = Db::open(opts).map_err(e)?;
    let len = a.value_size as usize;
    let keys = ((a.live_mib << 20) / a.value_size).max(1);
    let live = keys * (a.value_size + key(0).len() as u64);

    let written = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let curve = Arc::new(Mutex::new(Vec::<(f64, u64, u64)>::new()));
    let start = Instant::now();
    let sampler = {
        let (written, done, curve, dir) =
            (written.clone(), done.clone(), curve.clone(), a.dir.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                let point = (
                    start.elapsed().as_secs_f64(),
                    written.load(Ordering::Relaxed),
                    dir_bytes(&dir),
                );
                if let Ok(mut c) = curve.lock() {
                    c.push(point);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };

    let mut result = Ok(());
    'rounds: for round in 0..a.rounds {
        for i in 0..keys {
            let k = key(i);
            let step = (|| {
                if round > 0 && (i + round).is_multiple_of(10) {
                    db.delete(&k)?;
                }
                db.put(&k, &value(i, round, len))
            })();
            if let Err(err) = step {
                result = Err(e(err));
                break 'rounds;
            }
            written.fetch_add(k.len() as u64 + a.value_size, Ordering::Relaxed);
        }
    }
    let write_secs = start.elapsed().as_secs_f64();
    let peak_writing = curve
        .lock()
        .map(|c| c.iter().map(|p| p.2).max().unwrap_or(0))
        .unwrap_or(0);
    if result.is_ok() {
        result = db.flush().map_err(e);
    }
    let deadline = Instant::now() + Duration::from_secs(a.settle_secs);
    let mut size = dir_bytes(&a.dir);
    while result.is_ok() && size as f64 > 1.5 * live as f64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        size = dir_bytes(&a.dir);
    }
    let settle_secs = start.elapsed().as_secs_f64() - write_secs;
    // Then until the background work is quiet (no GC backlog, no compaction,
    // the size unchanged for a second): what the directory settles at.
    let mut still_since = Instant::now();
    while result.is_ok() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        let now = dir_bytes(&a.dir);
        let s = db.stats();
        let busy = s.gc_pending_files > 0 || s.compactions_pending > 0 || s.compactions_running > 0;
        if now != size || busy {
            size = now;
            still_since = Instant::now();
        } else if still_since.elapsed() >= Duration::from_secs(1) {
            break;
        }
    }
    done.store(true, Ordering::Release);
    let _ = sampler.join();
    result?;

    // Every key must read its last value.
    let last = a.rounds - 1;
    for i in (0..keys).step_by(((keys / 1000) as usize).max(1)) {
        let got = db.get(&key(i)).map_err(e)?;
        if got.as_deref() != Some(value(i, last, len).as_slice()) {
            return Err(format!("key {i} does not read its last value"));
        }
    }
    let stats = db.stats();
    if let Some(path) = &a.csv {
        let rows: String = curve
            .lock()
            .map_err(|_| "sampler panicked".to_string())?
            .iter()
            .map(|(t, w, d)| format!("{t:.1},{w},{d},{live}\n"))
            .collect();
        std::fs::write(
            path,
            format!("seconds,bytes_written,dir_bytes,live_bytes\n{rows}"),
        )
        .map_err(|err| format!("writing {}: {err}", path.display()))?;
    }
    let written = written.load(Ordering::Relaxed);
    println!(
        "RESULT {}",
        serde_json::json!({
            "value_size": a.value_size,
            "gc_ratio": a.gc_ratio,
            "live_bytes": live,
            "bytes_written": written,
            "write_seconds": write_secs,
            "write_mb_per_s": written as f64 / write_secs / 1e6,
            "peak_dir_bytes_writing": peak_writing,
            "peak_ratio_writing": peak_writing as f64 / live as f64,
            "settled_dir_bytes": size,
            "settled_ratio": size as f64 / live as f64,
            "settle_seconds": settle_secs,
            "gc_files_rewritten": stats.gc_files_rewritten,
            "gc_files_deleted": stats.gc_files_deleted,
            "gc_bytes_reclaimed": stats.gc_bytes_reclaimed,
            "gc_seconds": stats.gc_micros as f64 / 1e6,
        })
    );
    db.close().map_err(e)
}
