//! Short prefix scans (KVBench's Prefix: 10 keys under a prefix, 256 B
//! values) against a Db whose keys lie in L0, L1 and L2 tables and a
//! memtable, beside a full scan and point gets as guards.
//!
//! `cargo bench -p sett --bench prefix_scan -- fill DIR [KEYS]` builds the
//! Db once (random key order, small levels so that L0..L2 all hold tables);
//! `-- run DIR [ROUNDS] [prefix]` opens it and prints, per round, ns per prefix call
//! (iterator creation plus 10 items), ns per get (thread CPU time) and ns per item of a full
//! scan (only the first with `prefix`), then the medians. Two builds run against the same DIR in turns give
//! an interleaved A/B.

use sett::{Db, IterOptions, Options};

/// CPU time of this thread in ns: the machine is shared, and time spent
/// descheduled would count in wall time.
struct Instant(u64);

impl Instant {
    fn now() -> Instant {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Instant(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    fn elapsed_ns(&self) -> f64 {
        (Instant::now().0 - self.0) as f64
    }
}

fn rng_next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn key(i: u64) -> Vec<u8> {
    format!("kvbench-{i:012}").into_bytes()
}

fn options(dir: &str) -> Options {
    let mut o = Options::new(dir);
    o.memtable_size = 8 << 20;
    o.table_size = 4 << 20;
    o.level_base_size = 32 << 20;
    o
}

fn fill(dir: &str, keys: u64) {
    let db = Db::open(options(dir)).expect("open");
    let mut order: Vec<u64> = (0..keys).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..order.len()).rev() {
        order.swap(i, (rng_next(&mut x) % (i as u64 + 1)) as usize);
    }
    let val = vec![7u8; 256];
    for (n, i) in order.iter().enumerate() {
        db.put(&key(*i), &val).expect("put");
        if n % 200_000 == 0 {
            eprintln!("{n} {:?}", db.stats().levels);
        }
    }
    db.flush().expect("flush");
    // A last few thousand writes stay in the memtable (the WAL replays them).
    for i in (0..keys).step_by(97) {
        db.put(&key(i), &val).expect("put");
    }
    eprintln!("levels (tables, bytes): {:?}", db.stats().levels);
    db.close().expect("close");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(dir: &str, rounds: usize, prefix_only: bool) {
    let db = Db::open(options(dir)).expect("open");
    // Let compactions settle so that both builds see the same layout.
    std::thread::sleep(std::time::Duration::from_millis(500));
    eprintln!("levels (tables, bytes): {:?}", db.stats().levels);
    let keys = db.stats().table_entries.max(10);
    let groups = keys / 10;
    let mut x = 0x1234_5678_9ABC_DEF1u64;
    let (mut pre, mut get, mut scan) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let calls = 100_000;
        let lookups = |db: &Db| {
            let s = db.stats();
            s.cache_data_hits + s.cache_data_misses
        };
        let blocks_before = lookups(&db);
        let start = Instant::now();
        let mut got = 0usize;
        for _ in 0..calls {
            let g = rng_next(&mut x) % groups;
            let p = format!("kvbench-{g:011}").into_bytes();
            let it = db
                .iter(IterOptions {
                    prefix: Some(p),
                    ..Default::default()
                })
                .expect("iter");
            for item in it.take(10) {
                got += item.expect("item").1.len();
            }
        }
        let p_ns = start.elapsed_ns() / calls as f64;
        let blocks = (lookups(&db) - blocks_before) as f64 / calls as f64;
        println!("round {r}: {blocks:.2} data-block lookups per prefix call");
        std::hint::black_box(got);
        if prefix_only {
            println!("round {r}: prefix {p_ns:.0} ns/call");
            pre.push(p_ns);
            continue;
        }
        let start = Instant::now();
        for _ in 0..calls {
            let k = key(rng_next(&mut x) % keys);
            std::hint::black_box(db.get(&k).expect("get"));
        }
        let g_ns = start.elapsed_ns() / calls as f64;
        let start = Instant::now();
        let mut n = 0u64;
        let mut it = db.iter(IterOptions::default()).expect("iter");
        while it.valid() {
            n += 1;
            it.advance().expect("advance");
        }
        let s_ns = start.elapsed_ns() / n as f64;
        println!("round {r}: prefix {p_ns:.0} ns/call, get {g_ns:.0} ns, full scan {s_ns:.1} ns/item ({n} items)");
        pre.push(p_ns);
        get.push(g_ns);
        scan.push(s_ns);
    }
    if prefix_only {
        println!("MEDIAN prefix {:.0}", median(&mut pre));
        return;
    }
    println!(
        "MEDIAN prefix {:.0} get {:.0} scan {:.1}",
        median(&mut pre),
        median(&mut get),
        median(&mut scan)
    );
    db.close().expect("close");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("fill") => fill(
            &args[1],
            args.get(2).map_or(1_000_000, |n| n.parse().expect("KEYS")),
        ),
        Some("run") => run(
            &args[1],
            args.get(2).map_or(5, |n| n.parse().expect("ROUNDS")),
            args.get(3).is_some_and(|a| a == "prefix"),
        ),
        _ => eprintln!("usage: prefix_scan fill DIR [KEYS] | run DIR [ROUNDS]"),
    }
}
