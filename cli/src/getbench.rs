//! `sett bench-get DIR N M`: the Rust side of `make bench-ffi` — the same
//! lookups as ffi/bench/get_into.c, through `Db::get`, on the same directory.

use crate::args::Args;
use sett::{Db, Options};
use std::time::Instant;

pub fn run(a: &Args) -> Result<(), String> {
    a.only(&[])?;
    let dir = a.dir()?;
    let num = |i: usize, name: &str| -> Result<u64, String> {
        a.positional
            .get(i)
            .ok_or(format!("missing {name}"))?
            .parse()
            .map_err(|_| format!("{name} is not a number"))
    };
    let (n, m) = (num(1, "N")?, num(2, "M")?);
    let db = Db::open(Options::new(dir)).map_err(|e| e.to_string())?;
    let mut x: u64 = 88172645463325252;
    let mut found = 0u64;
    let t = Instant::now();
    for _ in 0..m {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("key{:012}", x % n);
        if db.get(key.as_bytes()).map_err(|e| e.to_string())?.is_some() {
            found += 1;
        }
    }
    let per = t.elapsed().as_nanos() as f64 / m as f64;
    println!("Rust Db::get:      {per:.0} ns/op over {m} lookups ({found} found)");
    db.close().map_err(|e| e.to_string())?;
    if found != m {
        return Err(format!("only {found} of {m} keys found"));
    }
    Ok(())
}
