//! Metamorphic test, in the spirit of Pebble's: one random sequence of
//! operations (puts, deletes, range deletes, batches, transactions, keyspaces,
//! snapshots, checkpoints, GC, flatten, flushes, reopens and kills) is run
//! under several random option sets (value threshold, memtable, table, block
//! and value-log file sizes, compression, background GC ratios, cache size,
//! level shape, static or dynamic level sizes). Options change how data is laid out, never what a read
//! returns: every run must give the same transcript, read for read.
//!
//! `METAMORPHIC_OPS` (operations per sequence, default 500),
//! `METAMORPHIC_SEEDS` (sequences, default 2), `METAMORPHIC_SETS` (option
//! sets per sequence, default 3) and `METAMORPHIC_FIRST_SEED` (default 1)
//! make it longer or new: `make stress` runs it for minutes on fresh seeds.

mod common;

use common::{killed_copy, tiny_options, Rng};
use sett::{Compression, Db, IterOptions, Keyspace, KeyspaceOptions, Options, WriteBatch};
use std::path::Path;

type Key = Vec<u8>;
type Value = Vec<u8>;

/// One write inside a batch or a transaction.
#[derive(Debug, Clone)]
enum Write {
    Put(Key, Value),
    Delete(Key),
    DeleteRange(Key, Key),
    /// A put into keyspace `usize`.
    PutIn(usize, Key, Value),
}

#[derive(Debug, Clone)]
enum Op {
    Write(Write),
    Batch(Vec<Write>),
    /// Reads `reads` in a read-write transaction, then applies `writes`.
    Txn {
        reads: Vec<Key>,
        writes: Vec<Write>,
    },
    Get(Key),
    GetMany(Vec<Key>),
    Iter(IterOptions),
    GetIn(usize, Key),
    IterIn(usize, IterOptions),
    /// A read-only transaction kept open: later reads of it see this point.
    TakeSnapshot,
    SnapshotGet(Key),
    SnapshotIter(IterOptions),
    /// A checkpoint, opened and read whole.
    Checkpoint,
    Gc(f64),
    Flush,
    Flatten,
    Reopen,
    Kill,
}

/// Keyspaces every run opens: the default threshold, and one of its own.
const KEYSPACES: [&str; 2] = ["alpha", "beta"];

fn keyspace_options(i: usize) -> KeyspaceOptions {
    KeyspaceOptions {
        value_threshold: (i == 1).then_some(16),
        ..Default::default()
    }
}

fn key(rng: &mut Rng) -> Key {
    let mut k = format!("k{}", rng.below(200)).into_bytes();
    if rng.chance(10) {
        k.push(0xfe);
    }
    k
}

fn value(rng: &mut Rng) -> Value {
    let len = match rng.below(4) {
        0 => rng.below(10) as usize,
        1 => 10 + rng.below(100) as usize,
        2 => 200 + rng.below(800) as usize,
        _ => 2000 + rng.below(3000) as usize,
    };
    // Half compressible, so that the codecs carry data too.
    if rng.chance(50) {
        let period = 1 + rng.below(5) as usize;
        let seed = rng.bytes(period);
        return seed.iter().copied().cycle().take(len).collect();
    }
    rng.bytes(len)
}

fn range(rng: &mut Rng) -> (Key, Key) {
    let k = key(rng);
    let mut end = k.clone();
    end.push(if rng.chance(70) { b'5' } else { 0xff });
    (k, end)
}

fn iter_options(rng: &mut Rng) -> IterOptions {
    let mut o = IterOptions {
        reverse: rng.chance(30),
        keys_only: rng.chance(20),
        ..Default::default()
    };
    match rng.below(3) {
        0 => o.prefix = Some(format!("k{}", 1 + rng.below(19)).into_bytes()),
        1 => {
            let (a, b) = range(rng);
            o.start = Some(a);
            o.end = Some(b);
        }
        _ => {}
    }
    o
}

fn write(rng: &mut Rng) -> Write {
    match rng.below(20) {
        0..=11 => Write::Put(key(rng), value(rng)),
        12..=15 => Write::Delete(key(rng)),
        16 => {
            let (a, b) = range(rng);
            Write::DeleteRange(a, b)
        }
        _ => Write::PutIn(rng.below(2) as usize, key(rng), value(rng)),
    }
}

fn ops(seed: u64, n: usize) -> Vec<Op> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| match rng.below(100) {
            0..=34 => Op::Write(write(&mut rng)),
            35..=41 => Op::Batch((0..1 + rng.below(20)).map(|_| write(&mut rng)).collect()),
            42..=46 => Op::Txn {
                reads: (0..rng.below(4)).map(|_| key(&mut rng)).collect(),
                writes: (0..1 + rng.below(5)).map(|_| write(&mut rng)).collect(),
            },
            47..=58 => Op::Get(key(&mut rng)),
            59..=62 => Op::GetMany((0..1 + rng.below(10)).map(|_| key(&mut rng)).collect()),
            63..=68 => Op::Iter(iter_options(&mut rng)),
            69..=71 => Op::GetIn(rng.below(2) as usize, key(&mut rng)),
            72..=73 => Op::IterIn(rng.below(2) as usize, iter_options(&mut rng)),
            74..=75 => Op::TakeSnapshot,
            76..=78 => Op::SnapshotGet(key(&mut rng)),
            79 => Op::SnapshotIter(iter_options(&mut rng)),
            80 => Op::Checkpoint,
            81..=84 => Op::Gc([0.01, 0.2, 0.5][rng.below(3) as usize]),
            85..=88 => Op::Flush,
            89..=90 => Op::Flatten,
            91..=95 => Op::Reopen,
            _ => Op::Kill,
        })
        .collect()
}

/// A random option set from `seed`; seed 0 is the base (tiny_options).
fn options(dir: &Path, seed: u64) -> (Options, String) {
    let mut o = tiny_options(dir);
    o.vlog_gc_ratio = 0.0;
    if seed == 0 {
        return (o, "base".into());
    }
    let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut pick = |choices: &[u64]| choices[rng.below(choices.len() as u64) as usize];
    o.value_threshold = pick(&[1, 16, 64, 512, 1 << 20]) as usize;
    o.memtable_size = pick(&[4096, 16 << 10, 1 << 20]) as usize;
    o.max_memtables = pick(&[2, 3, 6]) as usize;
    o.block_size = pick(&[256, 1024, 4096]) as usize;
    o.table_size = pick(&[4096, 32 << 10, 2 << 20]);
    o.level_base_size = pick(&[16 << 10, 256 << 10]);
    o.level_multiplier = pick(&[2, 4, 10]);
    o.l0_compaction_trigger = pick(&[1, 2, 4]) as usize;
    o.vlog_file_size = pick(&[8 << 10, 64 << 10, 4 << 20]);
    o.cache_size = pick(&[1 << 20, 64 << 20]) as usize;
    o.vlog_gc_ratio = [0.0, 0.1, 0.5][pick(&[0, 1, 2]) as usize];
    o.vlog_gc_idle_ratio = [0.0, 0.05][pick(&[0, 1]) as usize];
    o.compression =
        [Compression::None, Compression::Lz4, Compression::Zstd][pick(&[0, 1, 2]) as usize];
    if pick(&[0, 1]) == 1 {
        o.compression_per_level = vec![Compression::None, Compression::Lz4, Compression::Zstd];
    }
    o.level_dynamic = pick(&[0, 1]) == 1;
    let label = format!(
        "seed {seed}: value_threshold {} memtable {} x{} block {} table {} level base {} x{} \
         dynamic {} l0 trigger {} vlog file {} cache {} gc {}/{} compression {:?} per level {:?}",
        o.value_threshold,
        o.memtable_size,
        o.max_memtables,
        o.block_size,
        o.table_size,
        o.level_base_size,
        o.level_multiplier,
        o.level_dynamic,
        o.l0_compaction_trigger,
        o.vlog_file_size,
        o.cache_size,
        o.vlog_gc_ratio,
        o.vlog_gc_idle_ratio,
        o.compression,
        o.compression_per_level,
    );
    (o, label)
}

fn open_keyspaces(db: &Db) -> Vec<Keyspace> {
    (0..KEYSPACES.len())
        .map(|i| db.keyspace(KEYSPACES[i], keyspace_options(i)).unwrap())
        .collect()
}

/// A whole walk, or the error that ended it: an error is a read's result
/// too, and differs from the base run's.
fn scan(it: sett::Result<sett::DbIterator>) -> String {
    let items: sett::Result<Vec<(Key, Value)>> = it.and_then(|it| it.collect());
    format!("{items:?}")
}

fn add_to_batch(b: &mut WriteBatch, w: &Write, spaces: &[Keyspace]) {
    match w {
        Write::Put(k, v) => b.put(k.clone(), v.clone()),
        Write::Delete(k) => b.delete(k.clone()),
        Write::DeleteRange(a, e) => b.delete_range(a.clone(), e.clone()),
        Write::PutIn(i, k, v) => b.put_in(&spaces[*i], k.clone(), v.clone()),
    };
}

/// Runs `ops` under `opts`; the transcript has a line per read.
fn run(ops: &[Op], mut opts: Options) -> Vec<String> {
    let mut db = Db::open(opts.clone()).unwrap();
    let mut spaces = open_keyspaces(&db);
    let mut snapshot: Option<sett::Txn> = None;
    // The directories a kill left behind: each copy is the Db from then on.
    let mut killed: Vec<tempfile::TempDir> = Vec::new();
    let mut out = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        let line = |what: String| format!("{step} {what}");
        match op {
            Op::Write(w) => {
                let mut b = WriteBatch::new();
                add_to_batch(&mut b, w, &spaces);
                db.write(b).unwrap();
            }
            Op::Batch(ws) => {
                let mut b = WriteBatch::new();
                for w in ws {
                    add_to_batch(&mut b, w, &spaces);
                }
                db.write(b).unwrap();
            }
            Op::Txn { reads, writes } => {
                let mut t = db.begin(true).unwrap();
                for k in reads {
                    out.push(line(format!("txn get {k:?} = {:?}", t.get(k))));
                }
                for w in writes {
                    match w {
                        Write::Put(k, v) => t.set(k, v),
                        Write::Delete(k) => t.delete(k),
                        Write::DeleteRange(a, e) => t.delete_range(a, e),
                        Write::PutIn(i, k, v) => t.set_in(&spaces[*i], k, v),
                    }
                    .unwrap();
                }
                // One writer: a transaction never conflicts.
                t.commit().unwrap();
            }
            Op::Get(k) => out.push(line(format!("get {k:?} = {:?}", db.get(k)))),
            Op::GetMany(ks) => {
                let refs: Vec<&[u8]> = ks.iter().map(|k| k.as_slice()).collect();
                out.push(line(format!(
                    "get_many = {:?}",
                    db.get_many(&refs).unwrap()
                )));
            }
            Op::Iter(o) => out.push(line(format!("iter {o:?} = {}", scan(db.iter(o.clone()))))),
            Op::GetIn(i, k) => {
                out.push(line(format!("get in {i} {k:?} = {:?}", spaces[*i].get(k))))
            }
            Op::IterIn(i, o) => out.push(line(format!(
                "iter in {i} {o:?} = {}",
                scan(spaces[*i].iter(o.clone()))
            ))),
            Op::TakeSnapshot => snapshot = Some(db.begin(false).unwrap()),
            Op::SnapshotGet(k) => {
                let got = snapshot.as_ref().map(|s| s.get(k));
                out.push(line(format!("snapshot get {k:?} = {got:?}")));
            }
            Op::SnapshotIter(o) => {
                let got = snapshot.as_ref().map(|s| scan(s.iter(o.clone())));
                out.push(line(format!("snapshot iter {o:?} = {got:?}")));
            }
            Op::Checkpoint => {
                let cp = tempfile::tempdir().unwrap();
                let target = cp.path().join("cp");
                db.checkpoint(&target).unwrap();
                let mut o = opts.clone();
                o.dir = target;
                let c = Db::open(o).unwrap();
                let cs = open_keyspaces(&c);
                out.push(line(format!(
                    "checkpoint = {} | {} | {}",
                    scan(c.iter(IterOptions::default())),
                    scan(cs[0].iter(IterOptions::default())),
                    scan(cs[1].iter(IterOptions::default())),
                )));
                drop(cs);
                c.close().unwrap();
            }
            Op::Gc(ratio) => {
                db.run_value_log_gc(*ratio).unwrap();
            }
            Op::Flush => db.flush().unwrap(),
            Op::Flatten => db.flatten().unwrap(),
            Op::Reopen | Op::Kill => {
                snapshot = None;
                spaces.clear();
                let next = if matches!(op, Op::Kill) {
                    let (copy, opened) = killed_copy(&db, &opts);
                    opts.dir = copy.path().to_path_buf();
                    killed.push(copy);
                    if killed.len() > 2 {
                        killed.remove(0);
                    }
                    Some(opened)
                } else {
                    None
                };
                db.close().unwrap();
                drop(db);
                db = match next {
                    Some(d) => d,
                    None => Db::open(opts.clone()).unwrap(),
                };
                spaces = open_keyspaces(&db);
            }
        }
    }
    out.push(format!(
        "end = {} | {} | {}",
        scan(db.iter(IterOptions::default())),
        scan(spaces[0].iter(IterOptions::default())),
        scan(spaces[1].iter(IterOptions::default())),
    ));
    db.verify().unwrap();
    drop(snapshot);
    drop(spaces);
    db.close().unwrap();
    out
}

/// Runs one sequence under the base options and `sets` random option sets;
/// panics at the first read whose result differs from the base run's.
fn check(seed: u64, n: usize, sets: u64) {
    let ops = ops(seed, n);
    let base_dir = tempfile::tempdir().unwrap();
    let (base_opts, _) = options(base_dir.path(), 0);
    let base = run(&ops, base_opts);
    assert!(base.len() > n / 3, "{} reads in {n} operations", base.len());
    for set in 1..=sets {
        let dir = tempfile::tempdir().unwrap();
        let (o, label) = options(dir.path(), seed * 1000 + set);
        let got = run(&ops, o);
        if let Some(i) = (0..base.len().max(got.len())).find(|&i| base.get(i) != got.get(i)) {
            let step: usize = base
                .get(i)
                .and_then(|l| l.split(' ').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            panic!(
                "sequence {seed}, options {label}: read {i} differs\n  base: {:.400}\n  this: {:.400}\n  \
                 operations before it: {:?}",
                base.get(i).map_or("(none)", |s| s.as_str()),
                got.get(i).map_or("(none)", |s| s.as_str()),
                &ops[step.saturating_sub(5)..(step + 1).min(ops.len())],
            );
        }
    }
    println!(
        "METAMORPHIC: sequence {seed}: {n} operations, {} reads, {sets} option sets agree",
        base.len()
    );
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn one_operation_sequence_reads_the_same_under_random_option_sets() {
    let n = env("METAMORPHIC_OPS", 500) as usize;
    let seeds = env("METAMORPHIC_SEEDS", 2);
    let sets = env("METAMORPHIC_SETS", 3);
    let first = env("METAMORPHIC_FIRST_SEED", 1).max(1);
    for seed in first..first + seeds {
        check(seed, n, sets);
    }
}
