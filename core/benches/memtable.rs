//! Memtable microbenchmark, as Badger's skl `BenchmarkReadWrite`: each op reads
//! a random key with probability frac/10, otherwise writes it, on every thread
//! of the machine. sett's memtable against `RwLock<BTreeMap>` in the same run.
//! `make bench-memtable` also runs Badger's own skl benchmark beside it.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sett::internals::Memtable;
use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

fn rng_next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

trait Table: Sync {
    fn put(&self, k: &[u8], v: &[u8], seq: u64);
    fn get(&self, k: &[u8]) -> bool;
}

impl Table for Memtable {
    fn put(&self, k: &[u8], v: &[u8], seq: u64) {
        self.insert(k, seq, v);
    }
    fn get(&self, k: &[u8]) -> bool {
        Memtable::get(self, k, u64::MAX - 1).is_some()
    }
}

struct Locked(RwLock<BTreeMap<Vec<u8>, Vec<u8>>>);

impl Table for Locked {
    fn put(&self, k: &[u8], v: &[u8], _seq: u64) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(k.to_vec(), v.to_vec());
    }
    fn get(&self, k: &[u8]) -> bool {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(k)
    }
}

/// Runs `iters` ops split over all threads and returns the wall time.
fn run(table: &dyn Table, frac: u64, iters: u64, threads: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ ((t + 1) * 0x1234_5678);
                for _ in 0..iters / threads {
                    let k = (rng_next(&mut x) % (1 << 20)).to_be_bytes();
                    if rng_next(&mut x) % 10 < frac {
                        std::hint::black_box(table.get(&k));
                    } else {
                        // One version per key, as Badger's skl overwrites in place.
                        table.put(&k, b"00123456", 1);
                    }
                }
            });
        }
    });
    start.elapsed()
}

fn read_write(c: &mut Criterion) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let mut g = c.benchmark_group("ReadWrite");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    g.warm_up_time(Duration::from_millis(500));
    g.sample_size(10);
    for frac in 0..=10u64 {
        g.bench_with_input(
            BenchmarkId::new("sett-memtable", format!("frac_{frac}")),
            &frac,
            |b, &frac| {
                let m = Memtable::new(0);
                b.iter_custom(|iters| run(&m, frac, iters, threads));
            },
        );
        g.bench_with_input(
            BenchmarkId::new("rwlock-btreemap", format!("frac_{frac}")),
            &frac,
            |b, &frac| {
                let m = Locked(RwLock::new(BTreeMap::new()));
                b.iter_custom(|iters| run(&m, frac, iters, threads));
            },
        );
    }
    g.finish();
}

/// Memory per entry: accounted size and RSS growth for 1M inserts.
fn memory_per_entry(_: &mut Criterion) {
    let rss = || {
        std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .map_or(0, |pages| pages * 4096)
    };
    let n = 1_000_000u64;
    let before = rss();
    let m = Memtable::new(0);
    let mut x = 7u64;
    for i in 0..n {
        m.insert(&rng_next(&mut x).to_be_bytes(), i + 1, b"00123456");
    }
    let after = rss();
    println!(
        "memtable memory per entry (8-byte key, 8-byte value): accounted {:.0} B, RSS growth {:.0} B",
        m.size() as f64 / n as f64,
        after.saturating_sub(before) as f64 / n as f64
    );
    // Keep the memtable alive: freed memory reused by the map would hide its growth.
    let before = rss();
    let mut b = BTreeMap::new();
    for _ in 0..n {
        b.insert(
            rng_next(&mut x).to_be_bytes().to_vec(),
            b"00123456".to_vec(),
        );
    }
    println!(
        "BTreeMap<Vec<u8>, Vec<u8>> memory per entry: RSS growth {:.0} B",
        rss().saturating_sub(before) as f64 / n as f64
    );
    drop((m, b));
}

criterion_group!(benches, read_write, memory_per_entry);
criterion_main!(benches);
