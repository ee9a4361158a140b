//! `sett-bench range-delete DIR`: what deleting a tenth of the keys costs the
//! writers that keep writing meanwhile, with a range delete (`delete_range`,
//! what `drop_prefix` is now) and with the drop that rewrites every table
//! holding the prefix while writes wait (`drop_prefix` before range deletes,
//! kept as `Db::drop_prefix_rewriting`).
//!
//! For each way, a fresh database in `DIR/<way>` is filled with `--keys` keys
//! of `--value-size` bytes spread over ten prefixes (`0/` .. `9/`, 1000-entry
//! batches) and flattened. `--writers` threads then put random keys of the
//! other nine prefixes. Their puts per second are measured for
//! `--window-ms` before the delete, during the call, while compaction
//! reclaims the range (range delete only: until its tombstone is retired),
//! and for `--window-ms` after, with the longest single put of each phase.
//! Checks that no key of `0/` is left and a sample of the others is. Prints a
//! table and `RESULT {json}` per way.

use crate::gcbench::value;
use sett::{Db, IterOptions, Options, WriteBatch};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct RangeBenchArgs {
    /// A directory that does not exist or is empty: each way gets `DIR/<way>`
    dir: PathBuf,
    /// Keys loaded (a tenth of them, prefix 0/, is deleted)
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(10..))]
    keys: u64,
    /// Value size in bytes
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=(1 << 20)))]
    value_size: u64,
    /// Writer threads putting keys outside the deleted range
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    writers: u64,
    /// Length of the before and after measurements, milliseconds
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(10..))]
    window_ms: u64,
    /// Longest wait for compaction to retire the range tombstone, seconds
    #[arg(long, default_value_t = 120)]
    reclaim_timeout_s: u64,
}

fn key(i: u64) -> Vec<u8> {
    format!("{}/{i:012}", i % 10).into_bytes()
}

/// Puts counted, and per phase the longest single put (µs) among those that
/// started in it (a put blocked by the call counts for the call's phase).
#[derive(Default)]
struct Counters {
    puts: AtomicU64,
    phase: AtomicUsize,
    max_us: [AtomicU64; 4],
}

/// One phase's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    seconds: f64,
    puts_per_s: f64,
    longest_put_ms: f64,
}

impl Phase {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "seconds": self.seconds,
            "puts_per_s": self.puts_per_s,
            "longest_put_ms": self.longest_put_ms,
        })
    }
}

/// Runs phase `n`; its longest put is read once every phase is over.
fn phase(c: &Counters, n: usize, f: impl FnOnce() -> Result<(), String>) -> Result<Phase, String> {
    c.phase.store(n, Ordering::Relaxed);
    let (n0, t0) = (c.puts.load(Ordering::Relaxed), Instant::now());
    f()?;
    let secs = t0.elapsed().as_secs_f64();
    Ok(Phase {
        seconds: secs,
        puts_per_s: (c.puts.load(Ordering::Relaxed) - n0) as f64 / secs.max(1e-9),
        longest_put_ms: 0.0,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    RangeDelete,
    RewritingDrop,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::RangeDelete => "delete_range",
            Way::RewritingDrop => "rewriting_drop_prefix",
        }
    }
}

fn run_way(a: &RangeBenchArgs, way: Way, dir: &Path) -> Result<serde_json::Value, String> {
    let e = |e: sett::Error| format!("{}: {e}", dir.display());
    let db = Arc::new(Db::open(Options::new(dir)).map_err(e)?);
    let len = a.value_size as usize;
    let start = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..a.keys {
        batch.put(key(i), value(i, 0, len));
        if batch.len() == 1000 || i + 1 == a.keys {
            db.write(std::mem::take(&mut batch)).map_err(e)?;
        }
    }
    db.flatten().map_err(e)?;
    let fill_secs = start.elapsed().as_secs_f64();
    let before_stats = db.stats();

    let stop = Arc::new(AtomicBool::new(false));
    let counters = Arc::new(Counters::default());
    let writers: Vec<_> = (0..a.writers)
        .map(|t| {
            let (db, stop, c, keys) = (db.clone(), stop.clone(), counters.clone(), a.keys);
            std::thread::spawn(move || -> Result<(), String> {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let mut i = x % keys;
                    if i.is_multiple_of(10) {
                        i += 1; // never the deleted prefix
                    }
                    let (n, t0) = (c.phase.load(Ordering::Relaxed), Instant::now());
                    db.put(&key(i), &value(i, 1, len))
                        .map_err(|e| format!("writer: {e}"))?;
                    c.max_us[n.min(3)]
                        .fetch_max(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
                    c.puts.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    let window = Duration::from_millis(a.window_ms);
    let result = (|| -> Result<[Phase; 4], String> {
        let before = phase(&counters, 0, || {
            std::thread::sleep(window);
            Ok(())
        })?;
        let during = phase(&counters, 1, || match way {
            Way::RangeDelete => db.delete_range(b"0/", b"1/").map_err(e),
            Way::RewritingDrop => db.drop_prefix_rewriting(b"0/").map_err(e),
        })?;
        let reclaim = phase(&counters, 2, || {
            if way == Way::RewritingDrop {
                return Ok(());
            }
            db.flush().map_err(e)?;
            let deadline = Instant::now() + Duration::from_secs(a.reclaim_timeout_s);
            while db.stats().range_tombstones > 0 {
                if Instant::now() > deadline {
                    return Err("compaction did not retire the range tombstone in time".into());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(())
        })?;
        let after = phase(&counters, 3, || {
            std::thread::sleep(window);
            Ok(())
        })?;
        Ok([before, during, reclaim, after])
    })();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().map_err(|_| "a writer panicked".to_string())??;
    }
    let mut phases = result?;
    for (p, m) in phases.iter_mut().zip(&counters.max_us) {
        p.longest_put_ms = m.load(Ordering::Relaxed) as f64 / 1000.0;
    }
    let [before, during, reclaim, after] = phases;
    let after_stats = db.stats();

    // Nothing of 0/ is left; a sample of the rest is.
    let left = db
        .iter(IterOptions {
            prefix: Some(b"0/".to_vec()),
            keys_only: true,
            ..Default::default()
        })
        .map_err(e)?
        .count();
    if left > 0 {
        return Err(format!("{}: {left} keys of 0/ left", way.name()));
    }
    let step = (a.keys / 1000).max(1);
    for i in (1..a.keys).step_by(step as usize).filter(|i| i % 10 != 0) {
        if db.get(&key(i)).map_err(e)?.is_none() {
            return Err(format!("{}: key {i} is gone", way.name()));
        }
    }
    db.close().map_err(e)?;
    let discard = |s: &sett::Stats| s.vlog_discard.iter().map(|(_, b)| b).sum::<u64>();
    println!(
        "{:<22} {:>10.0} {:>10.0} {:>9.3} {:>10.1} {:>10.0} {:>9.3} {:>10.1} {:>10.0} {:>12} {:>12}",
        way.name(),
        before.puts_per_s,
        during.puts_per_s,
        during.seconds,
        during.longest_put_ms,
        reclaim.puts_per_s,
        reclaim.seconds,
        reclaim.longest_put_ms,
        after.puts_per_s,
        before_stats.table_entries,
        after_stats.table_entries,
    );
    Ok(serde_json::json!({
        "way": way.name(),
        "keys": a.keys,
        "value_size": a.value_size,
        "writers": a.writers,
        "fill_seconds": fill_secs,
        "before": before.json(),
        "during_call": during.json(),
        "reclaim": reclaim.json(),
        "after": after.json(),
        "table_entries_before": before_stats.table_entries,
        "table_entries_after": after_stats.table_entries,
        "vlog_discard_bytes_before": discard(&before_stats),
        "vlog_discard_bytes_after": discard(&after_stats),
    }))
}

pub fn run(a: &RangeBenchArgs) -> Result<(), String> {
    if std::fs::read_dir(&a.dir).is_ok_and(|mut rd| rd.next().is_some()) {
        return Err(format!(
            "{} is not empty: give a new directory",
            a.dir.display()
        ));
    }
    println!(
        "{} keys x {} B over 10 prefixes, {} writers outside prefix 0/; puts/s (longest put, ms)",
        a.keys, a.value_size, a.writers
    );
    println!(
        "{:<22} {:>10} {:>10} {:>9} {:>10} {:>10} {:>9} {:>10} {:>10} {:>12} {:>12}",
        "way",
        "before",
        "during",
        "call s",
        "longest",
        "reclaim",
        "reclaim s",
        "longest",
        "after",
        "entries",
        "entries after"
    );
    let mut results = Vec::new();
    for way in [Way::RangeDelete, Way::RewritingDrop] {
        let dir = a.dir.join(way.name());
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        results.push(run_way(a, way, &dir)?);
    }
    for r in results {
        println!("RESULT {r}");
    }
    Ok(())
}
