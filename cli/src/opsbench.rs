//! `sett-bench ops DIR N`: the Rust row of `make bench-bindings`. The C, Go and
//! Python programs beside it (ffi/bench/ops.c, bench-go/cmd/opsbench,
//! bindings-python/bench/ops.py) run the same four phases on the same data, so
//! the difference between rows is the cost of each binding layer:
//!
//! - batch: N keys `key%012d` with 100-byte values, in 1000-entry batches
//! - put: the same N keys overwritten with one put each
//! - get: N lookups of existing keys in a fixed xorshift64 order
//! - iterate: one forward scan with values over all N keys
//!
//! Keys and the 256 possible values are made before the clock starts, in
//! every binding. Each phase prints `RESULT rust PHASE NS` (ns per key), and fails if a lookup
//! or the scan does not return what was written.

use sett::{Db, IterOptions, Options, WriteBatch};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct OpsArgs {
    /// The database directory (created; use a new one)
    dir: PathBuf,
    /// Keys per phase, at least 1
    #[arg(value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,
}

const VALUE_LEN: usize = 100;

fn key(i: u64) -> Vec<u8> {
    format!("key{i:012}").into_bytes()
}

fn report(phase: &str, t: Instant, n: u64) {
    let ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!("RESULT rust {phase} {ns:.0}");
}

pub fn run(a: &OpsArgs) -> Result<(), String> {
    let n = a.n;
    let e = |e: sett::Error| format!("{}: {e}", a.dir.display());
    let db = Db::open(Options::new(&a.dir)).map_err(e)?;
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    let values: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b; VALUE_LEN]).collect();
    let value = |i: u64| values[(i & 0xff) as usize].as_slice();

    let t = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(keys[i as usize].as_slice(), value(i));
        if batch.len() == 1000 || i + 1 == n {
            db.write(std::mem::take(&mut batch)).map_err(e)?;
        }
    }
    report("batch", t, n);

    let t = Instant::now();
    for i in 0..n {
        db.put(&keys[i as usize], value(i + 1)).map_err(e)?;
    }
    report("put", t, n);

    let mut x: u64 = 88172645463325252;
    let t = Instant::now();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = x % n;
        match db.get(&keys[i as usize]).map_err(e)? {
            Some(v) if v.len() == VALUE_LEN && v[0] == (i + 1) as u8 => {}
            other => return Err(format!("key {i}: read back {other:?}")),
        }
    }
    report("get", t, n);

    let t = Instant::now();
    let mut count = 0u64;
    for item in db.iter(IterOptions::default()).map_err(e)? {
        let (k, v) = item.map_err(e)?;
        if k.len() != 15 || v.len() != VALUE_LEN {
            return Err(format!("scan returned {} / {} bytes", k.len(), v.len()));
        }
        count += 1;
    }
    report("iterate", t, n);
    if count != n {
        return Err(format!("scan saw {count} of {n} keys"));
    }
    db.close().map_err(e)
}
