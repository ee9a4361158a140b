//! `sett-bench load`: bulk load against batched writes of the same sorted data.

use crate::progress::{Phase, Progress, ProgressFlags};
use sett::{Db, Options, WriteBatch};
use std::time::Instant;

#[derive(clap::Args)]
pub struct LoadArgs {
    /// Sorted keys to write, each way
    #[arg(long, default_value_t = 1_000_000)]
    keys: u64,
    /// Value size in bytes
    #[arg(long, default_value_t = 128)]
    valsz: usize,
    #[command(flatten)]
    progress: ProgressFlags,
}

/// Keys are `key%012d`: 15 bytes.
const KEY_LEN: u64 = 15;

/// How often (in keys) the loops publish their count: often enough for a
/// line a second, rarely enough to cost nothing.
const PUBLISH_EVERY: u64 = 1024;

pub fn run(a: &LoadArgs) -> Result<(), String> {
    let (keys, valsz) = (a.keys, a.valsz);
    let p = Progress::start("sett-bench load", a.progress.enabled());
    let phase = |label: &str| {
        Phase::items(label, "keys")
            .total(keys)
            .bytes_each(KEY_LEN + valsz as u64)
    };
    let base = std::env::temp_dir().join(format!("sett-bench-load-{}", std::process::id()));
    let value = |i: u64| {
        let mut v = vec![0u8; valsz];
        let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for b in v.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        v
    };
    let key = |i: u64| format!("key{i:012}").into_bytes();
    println!("bench-load: {keys} sorted keys, {valsz}-byte values");

    let dir = base.join("bulk");
    let at = |e: sett::Error| format!("{}: {e}", dir.display());
    let db = Db::open(Options::new(&dir)).map_err(at)?;
    let t = Instant::now();
    p.phase(phase("bulk load"));
    let mut loader = db.bulk_load().map_err(at)?;
    for i in 0..keys {
        loader.add(&key(i), &value(i)).map_err(at)?;
        if i.is_multiple_of(PUBLISH_EVERY) {
            p.set(i);
        }
    }
    p.phase(Phase::wait("bulk load: finishing and closing"));
    loader.finish().map_err(at)?;
    db.close().map_err(at)?;
    let bulk = keys as f64 / t.elapsed().as_secs_f64();
    drop(db);

    let dir2 = base.join("batch");
    let at = |e: sett::Error| format!("{}: {e}", dir2.display());
    let db = Db::open(Options::new(&dir2)).map_err(at)?;
    let t = Instant::now();
    p.phase(phase("1000-entry batches"));
    let mut b = WriteBatch::new();
    for i in 0..keys {
        b.put(key(i), value(i));
        if b.len() == 1000 {
            db.write(std::mem::take(&mut b)).map_err(at)?;
            p.set(i + 1);
        }
    }
    db.write(b).map_err(at)?;
    p.phase(Phase::wait("1000-entry batches: closing"));
    db.close().map_err(at)?;
    let batched = keys as f64 / t.elapsed().as_secs_f64();
    drop(db);
    drop(p);
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "bulk load {bulk:.0} keys/s; 1000-entry batches {batched:.0} keys/s (both until durable and closed); bulk is {:.1}x",
        bulk / batched
    );
    Ok(())
}
