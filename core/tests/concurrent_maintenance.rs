//! Maintenance operations beside writers, and a power cut in the middle of each.
//!
//! 1. Writer threads (batches and transactions of puts, overwrites and deletes,
//!    values on both sides of the 64-byte value threshold, tiny memtables,
//!    tables and value-log files) run while another thread loops through
//!    value-log GC, a backup (restored into a new Db and checked to be a
//!    snapshot), flatten and DropPrefix on a prefix the writers also write
//!    under, and a reader checks that no key ever goes back to an older value.
//!    At the end, and after a reopen, the Db must match the model of
//!    acknowledged writes, with what `Db::drop_prefix` promises for the prefix:
//!    it is one range delete, ordered like any write, so every write ordered
//!    before it is gone and every write after it stays.
//! 2. A bulk load races with writers on fresh Dbs: either the load is refused
//!    (the Db was no longer empty) or the writes are refused while it runs; the
//!    load is all there or not at all, and every acknowledged write is there.
//! 3. With `SimFs`, the power is cut at the Nth file-system operation of GC,
//!    backup (to a file on the simulated disk), flatten, DropPrefix and bulk
//!    load, with synced writers running beside it or right before it. After the
//!    cut the Db must open, hold every acknowledged write, no wrong value and no
//!    deleted key back; DropPrefix (one range delete) removed every key of
//!    the prefix written before it or none; a bulk load is all or nothing; a
//!    cut backup restores with a clear error or, if whole, to the right data.
//!
//! POWER_LOSS_SCALE (as for power_loss.rs; `scripts/stress.sh` sets 6) scales
//! the writes, the rounds and the number of cut points.

mod common;

use common::{copy_dir, tiny_options, value_for, Rng};
use sett::fs::{CutMode, Fault, FileSystem, Fs, SimFs};
use sett::{Db, Error, GcOutcome, IterOptions, WriteBatch};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The prefix DropPrefix removes; writers write under it too.
const PREFIX: &[u8] = b"p/";

fn show(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

fn short(v: Option<&[u8]>) -> String {
    v.map_or("absent".into(), |v| show(&v[..v.len().min(28)]))
}

/// A value for `key` written by write number `id`: the id can be read back.
fn make_value(rng: &mut Rng, key: &[u8], id: u64) -> Vec<u8> {
    // Both sides of tiny_options' 64-byte value threshold.
    let len = [8usize, 24, 40, 100, 300, 2000][rng.below(6) as usize];
    let min = key.len() + 24;
    value_for(key, id, len.max(min))
}

/// The write id in a value made by `make_value` (`key:id:...`).
fn id_of(key: &[u8], v: &[u8]) -> Option<u64> {
    let rest = v.strip_prefix(key)?.strip_prefix(b":")?;
    let end = rest.iter().position(|&b| b == b':')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

fn scan(db: &Db, what: &str) -> Model {
    db.iter(IterOptions::default())
        .unwrap_or_else(|e| panic!("{what}: iterator: {e}"))
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: scan: {e}")))
        .collect()
}

// ---------------------------------------------------------------------------
// 1. Maintenance beside writers.
// ---------------------------------------------------------------------------

/// One acknowledged write step of a writer thread.
struct Acked {
    ops: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// DropPrefix calls finished when the write started.
    drops_done_at_start: u64,
    /// DropPrefix calls started when the write was acknowledged.
    drops_started_at_ack: u64,
}

/// Shared between the writers, the maintenance thread and the checks.
struct Shared {
    drops_started: AtomicU64,
    drops_done: AtomicU64,
    /// Maintenance operations done.
    operations: AtomicU64,
    /// Per writer: steps started and steps acknowledged.
    started: Vec<AtomicU64>,
    acked: Vec<AtomicU64>,
    stop: AtomicBool,
}

fn marker(t: usize) -> Vec<u8> {
    format!("m/w{t}").into_bytes()
}

fn writer_key(rng: &mut Rng, t: usize) -> Vec<u8> {
    if rng.chance(35) {
        format!("p/w{t}/{:02}", rng.below(40)).into_bytes()
    } else {
        format!("w{t}/{:03}", rng.below(80)).into_bytes()
    }
}

/// A writer takes at most this many steps per maintenance operation done, so
/// that the two interleave whatever the machine's speed.
const STEPS_PER_OPERATION: u64 = 20;

/// Writer `t`: `steps` batches or transactions on its own keys, each with its
/// step number under `marker(t)`, so that a snapshot says which prefix of the
/// writer's steps it holds.
fn writer(db: &Db, sh: &Shared, t: usize, steps: u64) -> Vec<Acked> {
    let mut rng = Rng::new(0xC0FFEE + t as u64);
    let mut log = Vec::new();
    for step in 1..=steps {
        while (sh.operations.load(SeqCst) + 1) * STEPS_PER_OPERATION < step {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let id = (t as u64) * 1_000_000 + step;
        let mut ops = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let key = writer_key(&mut rng, t);
            if ops.iter().any(|(k, _)| *k == key) {
                continue;
            }
            if rng.chance(15) {
                ops.push((key, None));
            } else {
                let v = make_value(&mut rng, &key, id);
                ops.push((key, Some(v)));
            }
        }
        ops.push((marker(t), Some(step.to_string().into_bytes())));
        let txn = rng.chance(25);
        let drops_done_at_start = sh.drops_done.load(SeqCst);
        sh.started[t].store(step, SeqCst);
        let res = if txn {
            db.update(|x| {
                for (k, v) in &ops {
                    match v {
                        Some(v) => x.set(k, v)?,
                        None => x.delete(k)?,
                    }
                }
                Ok(())
            })
        } else {
            let mut b = WriteBatch::new();
            for (k, v) in &ops {
                match v {
                    Some(v) => b.put(k.clone(), v.clone()),
                    None => b.delete(k.clone()),
                };
            }
            db.write(b)
        };
        res.unwrap_or_else(|e| panic!("writer {t} step {step}: {e}"));
        let drops_started_at_ack = sh.drops_started.load(SeqCst);
        sh.acked[t].store(step, SeqCst);
        log.push(Acked {
            ops,
            drops_done_at_start,
            drops_started_at_ack,
        });
    }
    log
}

/// Whether `got` is what a key may hold after `drops` DropPrefix calls when
/// its last write put `v` in step `a`.
fn allowed(key: &[u8], got: Option<&[u8]>, v: Option<&[u8]>, a: &Acked, drops: u64) -> bool {
    if key.starts_with(PREFIX) && drops > 0 {
        // Ordered after the last drop only if that drop started before the
        // write was acknowledged; before it only if it had not finished when
        // the write started.
        let after_ok = a.drops_started_at_ack >= drops && got == v;
        let before_ok = a.drops_done_at_start < drops && got.is_none();
        after_ok || before_ok
    } else {
        got == v
    }
}

/// The last write of each key in the first `k` steps of `log`.
fn last_writes(log: &[Acked], k: u64) -> BTreeMap<&[u8], (Option<&[u8]>, &Acked)> {
    let mut last = BTreeMap::new();
    for a in log.iter().take(k as usize) {
        for (key, v) in &a.ops {
            last.insert(key.as_slice(), (v.as_deref(), a));
        }
    }
    last
}

/// Checks `state` (a whole Db) against the writers' logs after every step
/// and `drops` DropPrefix calls.
fn check_final(state: &Model, logs: &[Vec<Acked>], drops: u64, what: &str) {
    let mut expected_keys = 0;
    for (t, log) in logs.iter().enumerate() {
        for (k, (v, a)) in last_writes(log, log.len() as u64) {
            let got = state.get(k).map(Vec::as_slice);
            let ok = allowed(k, got, v, a, drops);
            assert!(
                ok,
                "{what}: writer {t}: key {} holds {}, its last acknowledged write put {} (drops started {}..done {} around it, {drops} drops)",
                show(k),
                short(got),
                short(v),
                a.drops_done_at_start,
                a.drops_started_at_ack,
            );
            expected_keys += usize::from(got.is_some());
        }
    }
    assert_eq!(
        state.len(),
        expected_keys,
        "{what}: the Db holds keys no writer wrote or that should be gone"
    );
}

/// Restores `stream` into a new Db and checks it is a snapshot: for each
/// writer, the state after some prefix of its steps, at least every step
/// acknowledged before the backup started and at most those started before it
/// ended, with the `drops` DropPrefix calls made before it.
fn check_backup(
    stream: &[u8],
    logs: &[Vec<Acked>],
    acked_before: &[u64],
    started_after: &[u64],
    drops: u64,
    what: &str,
) -> u64 {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tiny_options(tmp.path())).expect("open the restore target");
    db.load(&mut &stream[..])
        .unwrap_or_else(|e| panic!("{what}: restoring the backup: {e}"));
    let state = scan(&db, what);
    let mut checked = 0;
    for (t, log) in logs.iter().enumerate() {
        let k = match state.get(&marker(t)) {
            Some(v) => show(v).parse::<u64>().expect("marker"),
            None => 0,
        };
        assert!(
            k >= acked_before[t] && k <= started_after[t],
            "{what}: writer {t}: the backup holds its steps up to {k}, but {} were acknowledged before it started and {} started before it ended",
            acked_before[t],
            started_after[t]
        );
        let want = last_writes(log, k);
        for (key, (v, a)) in &want {
            let got = state.get(*key).map(Vec::as_slice);
            assert!(
                allowed(key, got, *v, a, drops),
                "{what}: writer {t}: backup at step {k} after {drops} drops: key {} holds {}, its last write put {}",
                show(key),
                short(got),
                short(*v)
            );
            checked += 1;
        }
        let prefix = format!("w{t}/");
        let pprefix = format!("p/w{t}/");
        for key in state.keys() {
            if key.starts_with(prefix.as_bytes()) || key.starts_with(pprefix.as_bytes()) {
                assert!(
                    want.contains_key(key.as_slice()),
                    "{what}: writer {t}: backup at step {k} holds {} which was not written by then",
                    show(key)
                );
            }
        }
    }
    checked
}

/// A backup stream; per writer, steps acknowledged before it started and
/// started before it ended; DropPrefix calls done before it.
type TakenBackup = (Vec<u8>, Vec<u64>, Vec<u64>, u64);

#[derive(Default, Debug)]
struct MaintenanceCounts {
    gc_rounds: u64,
    gc_rewritten: u64,
    gc_deleted: u64,
    backups: u64,
    backup_keys_checked: u64,
    flattens: u64,
    drops: u64,
    reads: u64,
}

#[test]
fn gc_backup_flatten_and_drop_prefix_beside_writers_keep_every_acknowledged_write() {
    const WRITERS: usize = 3;
    let steps = 400 * common::power_loss_scale();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = tiny_options(tmp.path());
    let db = Db::open(opts.clone()).expect("open");
    let sh = Shared {
        drops_started: AtomicU64::new(0),
        drops_done: AtomicU64::new(0),
        operations: AtomicU64::new(0),
        started: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        acked: (0..WRITERS).map(|_| AtomicU64::new(0)).collect(),
        stop: AtomicBool::new(false),
    };
    // Backup streams with the writers' progress around them, checked once
    // the writers' logs are complete.
    let mut backups: Vec<TakenBackup> = Vec::new();
    let mut counts = MaintenanceCounts::default();
    let logs: Vec<Vec<Acked>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (db, sh) = (&db, &sh);
                s.spawn(move || writer(db, sh, t, steps))
            })
            .collect();
        // A reader: no key ever goes back to an older write's value.
        let reader = {
            let (db, sh) = (&db, &sh);
            s.spawn(move || {
                let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
                let mut reads = 0u64;
                while !sh.stop.load(SeqCst) {
                    for (k, v) in scan(db, "reader") {
                        reads += 1;
                        if k.starts_with(b"m/") {
                            continue;
                        }
                        let id = id_of(&k, &v).unwrap_or_else(|| {
                            panic!("reader: key {} holds a value not made for it", show(&k))
                        });
                        let before = seen.insert(k.clone(), id).unwrap_or(0);
                        assert!(
                            id >= before,
                            "reader: key {} went back from write {before} to older write {id}",
                            show(&k)
                        );
                    }
                }
                reads
            })
        };
        // Maintenance, in turn, while the writers write.
        let sh = &sh;
        let mut round = 0u64;
        while sh.acked.iter().any(|a| a.load(SeqCst) == 0) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        while sh.acked.iter().any(|a| a.load(SeqCst) < steps) {
            match round % 4 {
                0 => {
                    for _ in 0..4 {
                        counts.gc_rounds += 1;
                        match db.run_value_log_gc(0.2).expect("gc") {
                            GcOutcome::NothingToCollect => break,
                            GcOutcome::Deleted { .. } => counts.gc_deleted += 1,
                            GcOutcome::Rewritten { .. } => counts.gc_rewritten += 1,
                        }
                    }
                }
                1 => {
                    // No drop runs during the backup: this thread makes them.
                    let drops = sh.drops_done.load(SeqCst);
                    let acked_before: Vec<u64> = sh.acked.iter().map(|a| a.load(SeqCst)).collect();
                    let mut stream = Vec::new();
                    db.backup(&mut stream, 0).expect("backup");
                    let started_after: Vec<u64> =
                        sh.started.iter().map(|a| a.load(SeqCst)).collect();
                    counts.backups += 1;
                    backups.push((stream, acked_before, started_after, drops));
                }
                2 => {
                    db.flatten().expect("flatten");
                    counts.flattens += 1;
                }
                _ => {
                    sh.drops_started.fetch_add(1, SeqCst);
                    db.drop_prefix(PREFIX).expect("drop_prefix");
                    sh.drops_done.fetch_add(1, SeqCst);
                    counts.drops += 1;
                }
            }
            round += 1;
            sh.operations.fetch_add(1, SeqCst);
        }
        sh.stop.store(true, SeqCst);
        let logs: Vec<Vec<Acked>> = handles
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect();
        counts.reads = reader.join().expect("reader");
        logs
    });
    let drops = sh.drops_done.load(SeqCst);
    for (i, (stream, acked_before, started_after, drops)) in backups.iter().enumerate() {
        counts.backup_keys_checked += check_backup(
            stream,
            &logs,
            acked_before,
            started_after,
            *drops,
            &format!("backup {i}"),
        );
    }
    check_final(&scan(&db, "final"), &logs, drops, "at the end");
    let s = db.stats();
    assert!(s.levels.iter().skip(1).any(|(n, _)| *n > 0), "{s:?}");
    db.close().expect("close");
    drop(db);
    let db = Db::open(opts).expect("reopen");
    check_final(&scan(&db, "reopened"), &logs, drops, "after reopen");
    db.close().expect("close");
    println!(
        "MAINTENANCE_BESIDE_WRITERS: {} writers, {} steps acknowledged; {} GC rounds ({} files rewritten, {} deleted), {} backups restored and checked ({} keys), {} flattens, {} drop_prefix, {} values read by the reader; 0 lost",
        WRITERS,
        logs.iter().map(Vec::len).sum::<usize>(),
        counts.gc_rounds,
        counts.gc_rewritten,
        counts.gc_deleted,
        counts.backups,
        counts.backup_keys_checked,
        counts.flattens,
        counts.drops,
        counts.reads
    );
    assert!(counts.backups > 0 && counts.drops > 0 && counts.flattens > 0);
}

// ---------------------------------------------------------------------------
// 2. A bulk load racing writers.
// ---------------------------------------------------------------------------

fn bulk_entries(n: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = Rng::new(n);
    (0..n)
        .map(|i| {
            let key = format!("b/{i:05}").into_bytes();
            let v = make_value(&mut rng, &key, 500_000 + i);
            (key, v)
        })
        .collect()
}

/// Checks a Db after a bulk load raced writers: every acknowledged write is
/// there, no refused one, and the load all there or not at all.
fn check_bulk_race(
    state: &Model,
    acked: &Model,
    bulk: &[(Vec<u8>, Vec<u8>)],
    loaded: bool,
    what: &str,
) {
    let mut want = acked.clone();
    if loaded {
        want.extend(bulk.iter().cloned());
    }
    for (k, v) in &want {
        assert!(
            state.get(k) == Some(v),
            "{what}: key {} holds {}, expected {}",
            show(k),
            short(state.get(k).map(Vec::as_slice)),
            short(Some(v))
        );
    }
    for k in state.keys() {
        assert!(
            want.contains_key(k),
            "{what}: key {} is there but was refused, not loaded or never written",
            show(k)
        );
    }
}

#[test]
fn a_bulk_load_racing_writers_is_all_or_nothing_and_refused_writes_leave_no_trace() {
    let rounds = 6 * common::power_loss_scale();
    let bulk = bulk_entries(300);
    let (mut loaded_rounds, mut refused_loads, mut acked_total, mut refused_total) = (0, 0, 0, 0);
    for round in 0..rounds {
        let tmp = tempfile::tempdir().expect("tempdir");
        let opts = tiny_options(tmp.path());
        let db = Db::open(opts.clone()).expect("open");
        let barrier = std::sync::Barrier::new(3);
        let first_ack = AtomicBool::new(false);
        // Round 0 mod 3: the load starts before the writers; 1: after a write
        // was acknowledged; 2: at the same moment.
        let (loaded, writes) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..2)
                .map(|t| {
                    let (db, barrier, first_ack) = (&db, &barrier, &first_ack);
                    s.spawn(move || {
                        let mut rng = Rng::new(round * 10 + t);
                        barrier.wait();
                        let mut out = Vec::new();
                        let mut acked = 0;
                        // Until 40 writes went in (after the load, if it won).
                        for i in 0..100_000u64 {
                            if acked == 40 {
                                break;
                            }
                            let key = format!("w{t}/{i:04}").into_bytes();
                            let v = make_value(&mut rng, &key, i);
                            let res = db.put(&key, &v);
                            match &res {
                                Ok(()) => {
                                    acked += 1;
                                    first_ack.store(true, SeqCst);
                                }
                                Err(Error::InvalidArgument(_)) => {
                                    std::thread::sleep(std::time::Duration::from_micros(200))
                                }
                                Err(e) => panic!("round {round}: writer {t}: {e}"),
                            }
                            out.push((key, v, res.is_ok()));
                        }
                        out
                    })
                })
                .collect();
            let early = if round % 3 == 0 {
                Some(db.bulk_load().expect("bulk_load on an empty Db"))
            } else {
                None
            };
            barrier.wait();
            if round % 3 == 1 {
                while !first_ack.load(SeqCst) {
                    std::thread::yield_now();
                }
            }
            let loader = match early {
                Some(l) => Ok(l),
                None => db.bulk_load(),
            };
            let loaded = match loader {
                Ok(mut l) => {
                    for (k, v) in &bulk {
                        l.add(k, v).expect("bulk add");
                    }
                    assert_eq!(l.finish().expect("bulk finish"), bulk.len() as u64);
                    true
                }
                Err(Error::InvalidArgument(_)) => false,
                Err(e) => panic!("round {round}: bulk_load: {e}"),
            };
            let writes: Vec<_> = writers
                .into_iter()
                .flat_map(|h| h.join().expect("writer"))
                .collect();
            (loaded, writes)
        });
        let acked: Model = writes
            .iter()
            .filter(|w| w.2)
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect();
        acked_total += acked.len();
        refused_total += writes.len() - acked.len();
        if loaded {
            loaded_rounds += 1;
        } else {
            refused_loads += 1;
        }
        if round % 3 == 0 {
            assert!(loaded, "round {round}: the early load did not finish");
        }
        if round % 3 == 1 {
            assert!(
                !loaded,
                "round {round}: a load into a non-empty Db was accepted"
            );
        }
        let what = format!("round {round} (loaded: {loaded})");
        check_bulk_race(&scan(&db, &what), &acked, &bulk, loaded, &what);
        db.close().expect("close");
        drop(db);
        let db = Db::open(opts).expect("reopen");
        let what = format!("{what}, reopened");
        check_bulk_race(&scan(&db, &what), &acked, &bulk, loaded, &what);
    }
    println!(
        "BULK_BESIDE_WRITERS: {rounds} rounds, {loaded_rounds} loads done, {refused_loads} refused (Db not empty); {acked_total} writes acknowledged, {refused_total} refused during a load; 0 lost, 0 refused ones present"
    );
}

// ---------------------------------------------------------------------------
// 3. A power cut in the middle of each maintenance operation.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Maintenance {
    Gc,
    Backup,
    Flatten,
    DropPrefix,
    BulkLoad,
}

/// What a key may hold after the cut, as the acknowledged writes say.
#[derive(Clone, Debug)]
struct KeyState {
    value: Option<Vec<u8>>,
    /// Acknowledged before a DropPrefix started (or written before the run).
    before_drop: bool,
    /// Started after a DropPrefix returned.
    after_drop: bool,
}

type CutModel = BTreeMap<Vec<u8>, KeyState>;

fn crash_key(rng: &mut Rng) -> Vec<u8> {
    if rng.chance(30) {
        format!("p/{:03}", rng.below(60)).into_bytes()
    } else {
        format!("k{:03}", rng.below(150)).into_bytes()
    }
}

/// A Db with data in several levels, overwritten separated values (garbage
/// for GC, counted by the flattens) and keys under the prefix in more than
/// one level; and what it holds. Written with the real file system: the
/// simulation takes its files as durable.
fn template(dir: &Path) -> Model {
    let mut opts = tiny_options(dir);
    // The garbage stays for the GC under test (no background GC).
    opts.vlog_gc_ratio = 0.0;
    let db = Db::open(opts).expect("open the template");
    let mut rng = Rng::new(77);
    let mut model = Model::new();
    let mut keys: Vec<Vec<u8>> = (0..150u64)
        .map(|n| format!("k{n:03}").into_bytes())
        .collect();
    keys.extend((0..60u64).map(|n| format!("p/{n:03}").into_bytes()));
    for (round, share) in [(1u64, 100u64), (2, 70), (3, 30)] {
        for key in &keys {
            if !rng.chance(share) {
                continue;
            }
            if round == 3 && rng.chance(25) {
                db.delete(key).expect("delete");
                model.remove(key);
            } else {
                let v = make_value(&mut rng, key, round);
                db.put(key, &v).expect("put");
                model.insert(key.clone(), v);
            }
        }
        if round < 3 {
            db.flatten().expect("flatten");
        } else {
            db.flush().expect("flush");
        }
    }
    assert_eq!(scan(&db, "template"), model);
    db.close().expect("close the template");
    model
}

/// `io::Write` onto a file of the simulated disk.
struct SimWriter<'a> {
    fs: &'a SimFs,
    file: std::fs::File,
    path: PathBuf,
}

impl std::io::Write for SimWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // At most 4 KiB an append, so that a cut can land inside the stream.
        let n = buf.len().min(4096);
        self.fs.append(&mut self.file, &self.path, &buf[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Backs the Db up into `dir/backup` on the simulated disk: the file's name
/// made durable first (so that a cut leaves a partial file to restore), then
/// the stream, then an fsync.
fn backup_to_file(db: &Db, sim: &SimFs, dir: &Path) -> Result<(), String> {
    let path = dir.join("backup");
    let file = sim.create_new(&path).map_err(|e| e.to_string())?;
    sim.sync_dir(dir).map_err(|e| e.to_string())?;
    let mut w = SimWriter {
        fs: sim,
        file,
        path: path.clone(),
    };
    db.backup(&mut w, 0).map_err(|e| e.to_string())?;
    sim.sync(&w.file, &path).map_err(|e| e.to_string())
}

/// Runs the operation; an error is what a cut leaves it with. `collected`
/// counts the GC rounds that deleted or rewrote a value-log file (one counter
/// per run: the tests of this binary run at the same time).
fn run_maintenance(
    op: Maintenance,
    db: &Db,
    sim: &SimFs,
    backup_dir: &Path,
    collected: &AtomicU64,
) -> Result<(), String> {
    match op {
        Maintenance::Gc => {
            for _ in 0..4 {
                if db.run_value_log_gc(0.1).map_err(|e| e.to_string())?
                    == GcOutcome::NothingToCollect
                {
                    break;
                }
                collected.fetch_add(1, SeqCst);
            }
            Ok(())
        }
        Maintenance::Backup => backup_to_file(db, sim, backup_dir),
        Maintenance::Flatten => db.flatten().map_err(|e| e.to_string()),
        Maintenance::DropPrefix => db.drop_prefix(PREFIX).map_err(|e| e.to_string()),
        Maintenance::BulkLoad => unreachable!("bulk loads run in cut_run"),
    }
}

/// What one run did, for the totals.
#[derive(Default)]
struct CutStats {
    /// File-system operations from the start of the maintenance to its end.
    ops: u64,
    op_failed: bool,
    writes_acked: u64,
    writes_refused: u64,
    keys_checked: u64,
    backup: BackupFate,
    gc_did_something: bool,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
enum BackupFate {
    #[default]
    None,
    NoFile,
    Restored,
    Refused,
}

/// One run over a copy of `template`: open with a SimFs and synced writes,
/// writers right before or beside the operation, the power cut at the `nth`
/// file-system operation from the start of it (or at its end if `nth` is
/// None or past it), then the checks.
#[allow(clippy::too_many_arguments)]
fn cut_run(
    template: &Path,
    base: &Model,
    op: Maintenance,
    beside: bool,
    nth: Option<u64>,
    mode: CutMode,
    seed: u64,
    what: &str,
) -> CutStats {
    let work = copy_dir(template);
    let dir = work.path().to_path_buf();
    let side = tempfile::tempdir().expect("tempdir");
    let backup_dir = side.path().join("backups");
    std::fs::create_dir(&backup_dir).expect("backup dir");
    // Writers beside the operation write the WAL through its mapping (the
    // Linux default), writers before it by write(2): both paths are cut.
    let sim = Arc::new(SimFs::new(side.path().join("trash"), seed).with_mapped_appends(beside));
    let mut opts = tiny_options(&dir);
    opts.sync_writes = true;
    opts.vlog_gc_ratio = 0.0;
    opts.fs = Fs::new(sim.clone());
    let db = Db::open(opts).unwrap_or_else(|e| panic!("{what}: open: {e}"));

    let mut model: CutModel = base
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                KeyState {
                    value: Some(v.clone()),
                    before_drop: true,
                    after_drop: false,
                },
            )
        })
        .collect();
    // Every value each key held, for the backup check.
    let mut history: HashMap<Vec<u8>, Vec<Option<Vec<u8>>>> = HashMap::new();
    for (k, v) in base {
        history.insert(k.clone(), vec![Some(v.clone())]);
    }
    let mut rng = Rng::new(seed);
    let mut stats = CutStats::default();
    let mut next_id = 1000u64;
    let mut make_batch = |rng: &mut Rng| {
        next_id += 1;
        let mut ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let key = if op == Maintenance::BulkLoad {
                format!("w/{:03}", rng.below(100)).into_bytes()
            } else {
                crash_key(rng)
            };
            if ops.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let v = (!rng.chance(15)).then(|| make_value(rng, &key, next_id));
            ops.push((key, v));
        }
        ops
    };
    let write = |db: &Db, ops: &[(Vec<u8>, Option<Vec<u8>>)]| db.write(common::batch_of(ops));
    let apply = |model: &mut CutModel,
                 history: &mut HashMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
                 ops: &[(Vec<u8>, Option<Vec<u8>>)],
                 before_drop: bool,
                 after_drop: bool| {
        for (k, v) in ops {
            history.entry(k.clone()).or_default().push(v.clone());
            model.insert(
                k.clone(),
                KeyState {
                    value: v.clone(),
                    before_drop,
                    after_drop,
                },
            );
        }
    };
    if !beside && op != Maintenance::BulkLoad {
        for _ in 0..20 {
            let ops = make_batch(&mut rng);
            write(&db, &ops).unwrap_or_else(|e| panic!("{what}: write before: {e}"));
            apply(&mut model, &mut history, &ops, true, false);
            stats.writes_acked += 1;
        }
    }

    let bulk = bulk_entries(200);
    let gc_collected = AtomicU64::new(0);
    let start_ops = sim.ops();
    if let Some(n) = nth {
        sim.fail(None, n, Fault::PowerCut);
    }
    // The writer beside the operation, and the failed write it may leave.
    let stop = AtomicBool::new(false);
    let acked_one = AtomicBool::new(false);
    let drop_started = AtomicBool::new(false);
    let drop_done = AtomicBool::new(false);
    let shared = Mutex::new((
        model,
        history,
        None::<Vec<(Vec<u8>, Option<Vec<u8>>)>>,
        0u64,
    ));
    let mut bulk_finished = false;
    // The load starts before the writer, which could otherwise make the Db non-empty.
    let loader = (op == Maintenance::BulkLoad).then(|| db.bulk_load());
    let res = std::thread::scope(|s| {
        let writer = beside.then(|| {
            let (db, stop, acked_one, shared) = (&db, &stop, &acked_one, &shared);
            let (drop_started, drop_done) = (&drop_started, &drop_done);
            let (mut make_batch, write, apply) = (make_batch, write, apply);
            let mut rng = Rng::new(seed ^ 0xbeef);
            s.spawn(move || {
                let mut acked = 0u64;
                for _ in 0..400 {
                    if stop.load(SeqCst) && acked >= 2 {
                        break;
                    }
                    let ops = make_batch(&mut rng);
                    let after = drop_done.load(SeqCst);
                    match write(db, &ops) {
                        Ok(()) => {
                            let before = !drop_started.load(SeqCst);
                            let mut g = shared.lock().unwrap();
                            let (m, h, ..) = &mut *g;
                            apply(m, h, &ops, before, after);
                            acked += 1;
                            acked_one.store(true, SeqCst);
                        }
                        Err(Error::InvalidArgument(_)) => {
                            // Refused during a bulk load: applied nowhere.
                            shared.lock().unwrap().3 += 1;
                            std::thread::sleep(std::time::Duration::from_micros(300));
                        }
                        Err(_) => {
                            let mut g = shared.lock().unwrap();
                            for (k, v) in &ops {
                                g.1.entry(k.clone()).or_default().push(v.clone());
                            }
                            g.2 = Some(ops);
                            break;
                        }
                    }
                }
                acked
            })
        });
        let res = if let Some(loader) = loader {
            match loader {
                Ok(mut l) => {
                    let r = (|| {
                        for (k, v) in &bulk {
                            l.add(k, v)?;
                        }
                        l.finish()
                    })();
                    bulk_finished = r.is_ok();
                    r.map(|_| ()).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            }
        } else {
            // Beside: the operation starts once the writer is writing.
            while beside && !acked_one.load(SeqCst) && !sim.is_off() {
                std::thread::yield_now();
            }
            drop_started.store(op == Maintenance::DropPrefix, SeqCst);
            let r = run_maintenance(op, &db, &sim, &backup_dir, &gc_collected);
            drop_done.store(op == Maintenance::DropPrefix && r.is_ok(), SeqCst);
            r
        };
        stats.ops = sim.ops() - start_ops;
        stop.store(true, SeqCst);
        if let Some(w) = writer {
            stats.writes_acked += w.join().expect("writer");
        }
        res
    });
    if nth.is_none() {
        assert!(res.is_ok(), "{what}: the run without a cut failed: {res:?}");
        stats.gc_did_something = gc_collected.load(SeqCst) > 0;
    }
    stats.op_failed = res.is_err();
    let backup_done = op == Maintenance::Backup && res.is_ok();
    drop(db);
    sim.power_off();
    sim.power_cut(mode)
        .unwrap_or_else(|e| panic!("{what}: applying the cut: {e}"));
    let (model, history, inflight, refused) = shared.into_inner().unwrap();
    stats.writes_refused = refused;

    // The Db opens and holds what was acknowledged.
    let db = Db::open(tiny_options(&dir)).unwrap_or_else(|e| {
        panic!("{what}: reopen after the cut failed: {e} (operation: {res:?})")
    });
    let state = scan(&db, what);
    let dropped = op == Maintenance::DropPrefix;
    let mut keys: std::collections::BTreeSet<&Vec<u8>> = model.keys().collect();
    keys.extend(state.keys());
    for k in keys {
        let got = state.get(k).map(Vec::as_slice);
        if k.starts_with(b"b/") && op == Maintenance::BulkLoad {
            continue; // checked as a whole below
        }
        let ks = model.get(k);
        let acked = ks.and_then(|s| s.value.as_deref());
        let mut ok = got == acked;
        if dropped && k.starts_with(PREFIX) {
            if let Some(s) = ks {
                let drop_ok = res.is_ok();
                // A drop that returned removed what was acknowledged before
                // it started; one cut short may have removed any part of it.
                ok = if drop_ok && s.before_drop {
                    got.is_none()
                } else if drop_ok && s.after_drop {
                    got == acked
                } else {
                    got == acked || got.is_none()
                };
            }
        }
        if let Some(ops) = &inflight {
            // The write the cut interrupted: all of it or none of it.
            if let Some((_, v)) = ops.iter().find(|(key, _)| key == k) {
                ok |= got == v.as_deref() || (dropped && k.starts_with(PREFIX) && got.is_none());
            }
        }
        assert!(
            ok,
            "{what}: key {} holds {}, the last acknowledged write put {} (operation: {res:?}, in flight: {})",
            show(k),
            short(got),
            short(acked),
            inflight.is_some()
        );
        stats.keys_checked += 1;
    }
    if dropped {
        // DropPrefix is one range delete: a cut leaves all the prefix's keys
        // written before it, or none.
        let in_flight = |k: &Vec<u8>| {
            inflight
                .as_ref()
                .is_some_and(|ops| ops.iter().any(|(key, _)| key == k))
        };
        let (mut kept, mut gone) = (0, 0);
        for (k, s) in &model {
            if !k.starts_with(PREFIX) || !s.before_drop || s.value.is_none() || in_flight(k) {
                continue;
            }
            match state.get(k) {
                Some(_) => kept += 1,
                None => gone += 1,
            }
        }
        assert!(
            kept == 0 || gone == 0,
            "{what}: the drop left {kept} keys of the prefix written before it and removed {gone}: not atomic (operation: {res:?})"
        );
    }
    if op == Maintenance::BulkLoad {
        let present = bulk.iter().filter(|(k, _)| state.contains_key(k)).count();
        assert!(
            present == 0 || present == bulk.len(),
            "{what}: {present} of {} bulk-loaded keys survived (operation: {res:?})",
            bulk.len()
        );
        assert!(
            !bulk_finished || present == bulk.len(),
            "{what}: the bulk load finished but its keys are gone"
        );
        for (k, v) in bulk.iter().filter(|(k, _)| state.contains_key(k)) {
            assert_eq!(state.get(k), Some(v), "{what}: bulk key {}", show(k));
        }
        stats.keys_checked += bulk.len() as u64;
    }
    db.close().expect("close after the check");

    if op == Maintenance::Backup {
        stats.backup = check_cut_backup(
            &backup_dir.join("backup"),
            base,
            &history,
            backup_done,
            what,
        );
    }
    stats
}

/// Restores what a cut left of the backup file into a new Db: a backup that
/// returned (and was synced) restores; a cut one restores to consistent data
/// or fails with a clear corruption error.
fn check_cut_backup(
    path: &Path,
    base: &Model,
    history: &HashMap<Vec<u8>, Vec<Option<Vec<u8>>>>,
    done: bool,
    what: &str,
) -> BackupFate {
    let Ok(stream) = std::fs::read(path) else {
        assert!(!done, "{what}: the backup returned but its file is gone");
        return BackupFate::NoFile;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tiny_options(tmp.path())).expect("open the restore target");
    let res = db.load(&mut &stream[..]);
    let fate = match &res {
        Ok(_) => BackupFate::Restored,
        Err(Error::Corruption { file, .. }) if file.to_str() == Some("<backup stream>") => {
            BackupFate::Refused
        }
        Err(e) => panic!("{what}: restoring a cut backup failed without a corruption error: {e}"),
    };
    assert!(
        !done || fate == BackupFate::Restored,
        "{what}: a backup that returned and was synced does not restore: {res:?}"
    );
    // Whatever it restored: each key holds a value it held at some point,
    // keys no writer touched exactly what the template holds.
    let state = scan(&db, what);
    for (k, v) in &state {
        let h = history.get(k);
        assert!(
            h.is_some_and(|h| h.iter().any(|x| x.as_deref() == Some(v.as_slice()))),
            "{what}: the restored backup holds {} = {}, a value that key never held",
            show(k),
            short(Some(v))
        );
    }
    if fate == BackupFate::Restored {
        for (k, v) in base {
            if history.get(k).is_some_and(|h| h.len() == 1) {
                assert_eq!(state.get(k), Some(v), "{what}: restored key {}", show(k));
            }
        }
    } else {
        assert!(
            state.is_empty(),
            "{what}: a refused restore applied {} keys",
            state.len()
        );
    }
    fate
}

#[derive(Default)]
struct SweepTotals {
    cuts: u64,
    cut_in_middle: u64,
    writes_acked: u64,
    writes_refused: u64,
    keys_checked: u64,
    backups: [u64; 3],
}

fn sweep(template_dir: &Path, base: &Model, op: Maintenance, beside: bool) -> SweepTotals {
    let modes = [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
        CutMode::ReorderedPages,
    ];
    let seed = 17 + op as u64 * 100 + u64::from(beside);
    let what = format!(
        "{op:?}, writers {}",
        if beside { "beside" } else { "before" }
    );
    let count = cut_run(
        template_dir,
        base,
        op,
        beside,
        None,
        CutMode::DropUnsynced,
        seed,
        &format!("{what}, no cut"),
    );
    if op == Maintenance::Gc {
        assert!(
            count.gc_did_something,
            "{what}: GC found nothing to collect in the template"
        );
    }
    let total = count.ops.max(1);
    let mut t = SweepTotals::default();
    // Every operation of short runs, about 40 points (times the scale) of long ones.
    let stride = (total / (40 * common::power_loss_scale())).max(1);
    let mut cuts: Vec<u64> = (1..=total).step_by(stride as usize).collect();
    let mut rng = Rng::new(seed);
    cuts.extend((0..2 * common::power_loss_scale()).map(|_| 1 + rng.below(total)));
    for (i, &n) in cuts.iter().enumerate() {
        let mode = modes[i % modes.len()];
        let w = format!("{what}, cut at operation {n} of about {total}, {mode:?}");
        let s = cut_run(template_dir, base, op, beside, Some(n), mode, seed ^ n, &w);
        t.cuts += 1;
        t.cut_in_middle += u64::from(s.op_failed);
        t.writes_acked += s.writes_acked;
        t.writes_refused += s.writes_refused;
        t.keys_checked += s.keys_checked;
        match s.backup {
            BackupFate::NoFile => t.backups[0] += 1,
            BackupFate::Restored => t.backups[1] += 1,
            BackupFate::Refused => t.backups[2] += 1,
            BackupFate::None => {}
        }
    }
    println!(
        "MAINTENANCE_CUTS {what}: {} cuts over {} file-system operations ({} cut the operation short), {} writes acknowledged ({} refused during a bulk load), {} key checks{}; 0 acknowledged writes lost",
        t.cuts,
        total,
        t.cut_in_middle,
        t.writes_acked,
        t.writes_refused,
        t.keys_checked,
        if op == Maintenance::Backup {
            format!(
                ", backup file: {} gone, {} restored, {} refused as corrupt",
                t.backups[0], t.backups[1], t.backups[2]
            )
        } else {
            String::new()
        }
    );
    assert!(
        t.cut_in_middle > 0,
        "{what}: no cut landed inside the operation"
    );
    t
}

fn sweep_both(op: Maintenance) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = if op == Maintenance::BulkLoad {
        Db::open(tiny_options(tmp.path()))
            .expect("open")
            .close()
            .expect("close");
        Model::new()
    } else {
        template(tmp.path())
    };
    if op != Maintenance::BulkLoad {
        sweep(tmp.path(), &base, op, false);
    }
    sweep(tmp.path(), &base, op, true);
}

#[test]
fn power_cut_in_the_middle_of_gc() {
    sweep_both(Maintenance::Gc);
}

#[test]
fn power_cut_in_the_middle_of_a_backup() {
    sweep_both(Maintenance::Backup);
}

#[test]
fn power_cut_in_the_middle_of_flatten() {
    sweep_both(Maintenance::Flatten);
}

#[test]
fn power_cut_in_the_middle_of_drop_prefix() {
    sweep_both(Maintenance::DropPrefix);
}

#[test]
fn power_cut_in_the_middle_of_a_bulk_load() {
    sweep_both(Maintenance::BulkLoad);
}
