//! `sett-bench checkpoint DIR`: how long a checkpoint takes, how much disk it
//! adds, and what it costs a writer that keeps writing through it.
//!
//! Fills a database in `DIR/db` with `--size-mib` MiB of `--value-size` byte
//! values (one writer, 1000-entry batches), then starts a writer of single
//! puts over the same keys, measures its rate for a second, takes a
//! checkpoint into `DIR/checkpoint` while it writes, and measures it for a
//! second after. Extra disk is what the checkpoint's files hold on their own:
//! the allocated blocks (`st_blocks`) of the files in the target with one link
//! (copies, and links whose source name the writer's compactions or GC
//! removed meanwhile). The checkpoint is then opened and a sample of the fill's
//! keys read back. Prints a summary and `RESULT {json}`.

use crate::gcbench::value;
use sett::{Db, Options, WriteBatch};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct CkptBenchArgs {
    /// A directory that does not exist or is empty: the database goes in DIR/db, the checkpoint in DIR/checkpoint
    dir: PathBuf,
    /// Data written by the fill, MiB (keys x value size)
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    size_mib: u64,
    /// Value size in bytes
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=(64 << 20)))]
    value_size: u64,
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:012}").into_bytes()
}

/// (files, apparent bytes, allocated bytes of files with a single link) under `dir`.
fn unshared(dir: &Path) -> Result<(u64, u64, u64), String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("listing {}: {e}", dir.display()))?;
    let (mut files, mut bytes, mut own) = (0, 0, 0);
    for entry in rd {
        let m = entry
            .and_then(|e| e.metadata())
            .map_err(|e| format!("stat in {}: {e}", dir.display()))?;
        if !m.is_file() {
            continue;
        }
        files += 1;
        bytes += m.len();
        if m.nlink() == 1 {
            own += m.blocks() * 512;
        }
    }
    Ok((files, bytes, own))
}

/// Ops per second of `counter` over the next `d`.
fn rate_over(counter: &AtomicU64, d: Duration) -> f64 {
    let (n0, t0) = (counter.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(d);
    (counter.load(Ordering::Relaxed) - n0) as f64 / t0.elapsed().as_secs_f64()
}

pub fn run(a: &CkptBenchArgs) -> Result<(), String> {
    if std::fs::read_dir(&a.dir).is_ok_and(|mut rd| rd.next().is_some()) {
        return Err(format!(
            "{} is not empty: give a new directory",
            a.dir.display()
        ));
    }
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("creating {}: {e}", a.dir.display()))?;
    let (src, target) = (a.dir.join("db"), a.dir.join("checkpoint"));
    let e = |e: sett::Error| format!("{}: {e}", src.display());
    let db = Arc::new(Db::open(Options::new(&src)).map_err(e)?);
    let len = a.value_size as usize;
    let keys = ((a.size_mib << 20) / a.value_size).max(1);

    let start = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..keys {
        batch.put(key(i), value(i, 0, len));
        if batch.len() == 1000 || i + 1 == keys {
            db.write(std::mem::take(&mut batch)).map_err(e)?;
        }
    }
    let fill_secs = start.elapsed().as_secs_f64();
    eprintln!(
        "filled {keys} keys x {} B in {fill_secs:.1} s",
        a.value_size
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = {
        let (db, stop, writes) = (db.clone(), stop.clone(), writes.clone());
        std::thread::spawn(move || -> Result<(), String> {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let k = i % keys;
                db.put(&key(k), &value(k, 1 + i / keys, len))
                    .map_err(|e| format!("writer: {e}"))?;
                writes.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            Ok(())
        })
    };
    let before = rate_over(&writes, Duration::from_secs(1));
    let (n0, t0) = (writes.load(Ordering::Relaxed), Instant::now());
    let taken = db.checkpoint(&target);
    let during = (writes.load(Ordering::Relaxed) - n0) as f64 / t0.elapsed().as_secs_f64();
    let after = if taken.is_ok() {
        rate_over(&writes, Duration::from_secs(1))
    } else {
        0.0
    };
    stop.store(true, Ordering::Relaxed);
    let written = writer
        .join()
        .map_err(|_| "the writer panicked".to_string())?;
    let report = taken.map_err(|e| format!("checkpoint into {}: {e}", target.display()))?;
    written?;
    let (files, bytes, extra) = unshared(&target)?;

    // The checkpoint opens and holds the fill (every key was written before it).
    let ck = Db::open(Options::new(&target))
        .map_err(|e| format!("opening the checkpoint {}: {e}", target.display()))?;
    let step = (keys / 1000).max(1);
    for i in (0..keys).step_by(step as usize) {
        if ck
            .get(&key(i))
            .map_err(|e| format!("checkpoint read: {e}"))?
            .is_none()
        {
            return Err(format!("the checkpoint lacks key {i}"));
        }
    }
    ck.close()
        .map_err(|e| format!("closing the checkpoint: {e}"))?;
    db.close().map_err(e)?;

    let secs = report.elapsed.as_secs_f64();
    println!(
        "checkpoint of {} MiB ({keys} keys x {} B): {secs:.3} s; {} files linked ({:.1} MiB), {} copied ({:.1} MiB); extra disk {:.1} MiB of {:.1} MiB in {files} files",
        a.size_mib,
        a.value_size,
        report.files_linked,
        report.bytes_linked as f64 / 1048576.0,
        report.files_copied,
        report.bytes_copied as f64 / 1048576.0,
        extra as f64 / 1048576.0,
        bytes as f64 / 1048576.0,
    );
    println!(
        "writer puts/s: {before:.0} in the second before, {during:.0} during the checkpoint, {after:.0} in the second after"
    );
    println!(
        "RESULT {}",
        serde_json::json!({
            "size_mib": a.size_mib,
            "value_size": a.value_size,
            "keys": keys,
            "fill_seconds": fill_secs,
            "checkpoint_seconds": secs,
            "files_linked": report.files_linked,
            "bytes_linked": report.bytes_linked,
            "files_copied": report.files_copied,
            "bytes_copied": report.bytes_copied,
            "checkpoint_files": files,
            "checkpoint_bytes": bytes,
            "extra_disk_bytes": extra,
            "writer_puts_per_s_before": before,
            "writer_puts_per_s_during": during,
            "writer_puts_per_s_after": after,
        })
    );
    Ok(())
}
