//! `sett bench-load`: bulk load against batched writes of the same sorted data.

use crate::args::Args;
use sett::{Db, Options, WriteBatch};
use std::time::Instant;

pub fn run(a: &Args) -> Result<(), String> {
    a.only(&["keys", "valsz"])?;
    let keys: u64 = a.num("keys", 1_000_000)?;
    let valsz: usize = a.num("valsz", 128)?;
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
    let db = Db::open(Options::new(&dir)).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut loader = db.bulk_load().map_err(|e| e.to_string())?;
    for i in 0..keys {
        loader.add(&key(i), &value(i)).map_err(|e| e.to_string())?;
    }
    loader.finish().map_err(|e| e.to_string())?;
    db.close().map_err(|e| e.to_string())?;
    let bulk = keys as f64 / t.elapsed().as_secs_f64();
    drop(db);

    let dir2 = base.join("batch");
    let db = Db::open(Options::new(&dir2)).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let mut b = WriteBatch::new();
    for i in 0..keys {
        b.put(key(i), value(i));
        if b.len() == 1000 {
            db.write(std::mem::take(&mut b))
                .map_err(|e| e.to_string())?;
        }
    }
    db.write(b).map_err(|e| e.to_string())?;
    db.close().map_err(|e| e.to_string())?;
    let batched = keys as f64 / t.elapsed().as_secs_f64();
    drop(db);
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "bulk load {bulk:.0} keys/s; 1000-entry batches {batched:.0} keys/s (both until durable and closed); bulk is {:.1}x",
        bulk / batched
    );
    Ok(())
}
