//! Power cuts. Every file-system operation of a workload goes through
//! `sett::fs::SimFs`, which keeps what a real disk would hold durably. The power
//! is cut at every Nth operation (and at random ones), the cut is applied (data
//! not synced dropped, all of it or a random prefix with a torn last page;
//! directory entries back to their directory's last sync), and the Db is
//! reopened with the real file system and checked against a model of the
//! workload:
//! - with `sync_writes`, every acknowledged write is there;
//! - without it, what is there is the state after a prefix of the writes, at
//!   least up to the last acknowledged `flush`;
//! - never a failed open, an error from a read, or a wrong value.
//!
//! The workload mixes batches, transactions, flushes, compactions (tiny
//! memtables and tables, and `flatten`), value-log rotation (tiny value-log
//! files) and GC, range deletes (in batches with puts: atomic under the cut),
//! and starts with a bulk load or a backup restore for some seeds.
//!
//! `cargo test -p sett --features unsafe-skip-fsync --test power_loss` (every
//! fsync a no-op) must fail, and so must `--features unsafe-skip-dir-sync`:
//! `make test` checks both, the mutation check that proves this test bites.
//! POWER_LOSS_SCALE multiplies the number of cut points (make stress).

mod common;

use common::{tiny_options, value_for, Rng};
use sett::fs::{CutMode, CutReport, Fault, Fs, OpKind, SimFs};
use sett::{Db, IterOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every write step writes its number here, so that a reopened Db says which
/// prefix of the writes it holds.
const MARKER: &[u8] = b"~step";

enum Step {
    /// Puts (Some) and deletes (None), then the marker, as one batch.
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// The same through a transaction.
    Txn(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// A range delete of `[start, end)`, then the puts and deletes (and the
    /// marker), as one batch.
    Range(Vec<u8>, Vec<u8>, Vec<(Vec<u8>, Option<Vec<u8>>)>),
    /// Sorted entries through a bulk load (first step only: the Db must be empty).
    Bulk(Vec<(Vec<u8>, Vec<u8>)>),
    /// A full backup stream restored (first step only), and what it holds.
    Restore(Vec<u8>, Model),
    Flush,
    Gc,
    Flatten,
}

impl Step {
    fn writes(&self) -> bool {
        matches!(
            self,
            Step::Batch(_) | Step::Txn(_) | Step::Range(..) | Step::Bulk(_) | Step::Restore(..)
        )
    }

    fn is_load(&self) -> bool {
        matches!(self, Step::Bulk(_) | Step::Restore(..))
    }

    fn apply(&self, model: &mut Model) {
        if let Step::Range(start, end, _) = self {
            model.retain(|k, _| !(k >= start && k < end));
        }
        match self {
            Step::Batch(ops) | Step::Txn(ops) | Step::Range(_, _, ops) => {
                for (k, v) in ops {
                    match v {
                        Some(v) => model.insert(k.clone(), v.clone()),
                        None => model.remove(k),
                    };
                }
            }
            Step::Bulk(entries) => model.extend(entries.iter().cloned()),
            Step::Restore(_, content) => model.extend(content.clone()),
            Step::Flush | Step::Gc | Step::Flatten => {}
        }
    }
}

fn random_value(rng: &mut Rng, key: &[u8], version: u64) -> Vec<u8> {
    // Both sides of tiny_options' 64-byte value threshold.
    let len = [8usize, 40, 100, 300, 2000][rng.below(5) as usize];
    value_for(key, version, len)
}

/// A full backup of a small Db, and what it holds.
fn backup_stream(seed: u64) -> (Vec<u8>, Model) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tiny_options(tmp.path())).expect("open the backup source");
    let mut rng = Rng::new(seed);
    let mut model = Model::new();
    for i in 0..60u64 {
        let key = format!("k{:03}", rng.below(120)).into_bytes();
        let value = random_value(&mut rng, &key, 1000 + i);
        db.put(&key, &value).expect("put");
        model.insert(key, value);
    }
    let mut out = Vec::new();
    db.backup(&mut out, 0).expect("backup");
    (out, model)
}

fn workload(seed: u64, len: usize) -> Vec<Step> {
    let mut rng = Rng::new(seed);
    let mut steps = Vec::new();
    let mut n = 0u64;
    match seed % 3 {
        1 => {
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..80u64)
                .map(|i| {
                    let key = format!("k{:03}", i * 3 / 2).into_bytes();
                    let value = random_value(&mut rng, &key, 500 + i);
                    (key, value)
                })
                .collect();
            entries.dedup_by(|a, b| a.0 == b.0);
            steps.push(Step::Bulk(entries));
            n += 1;
        }
        2 => {
            let (stream, content) = backup_stream(seed);
            steps.push(Step::Restore(stream, content));
            n += 1;
        }
        _ => {}
    }
    while steps.len() < len {
        match rng.below(24) {
            0 => steps.push(Step::Flush),
            1 => steps.push(Step::Gc),
            2 => steps.push(Step::Flatten),
            r => {
                n += 1;
                let mut ops = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    let key = format!("k{:03}", rng.below(120)).into_bytes();
                    if rng.chance(15) {
                        ops.push((key, None));
                    } else {
                        let value = random_value(&mut rng, &key, n);
                        ops.push((key, Some(value)));
                    }
                }
                ops.push((MARKER.to_vec(), Some(n.to_string().into_bytes())));
                steps.push(if r % 4 == 0 {
                    Step::Txn(ops)
                } else if r == 5 {
                    let from = rng.below(120);
                    let to = from + 1 + rng.below(30);
                    let key = |i: u64| format!("k{i:03}").into_bytes();
                    Step::Range(key(from), key(to), ops)
                } else {
                    Step::Batch(ops)
                });
            }
        }
    }
    steps
}

/// What a run of the workload got acknowledged.
#[derive(Default, Debug)]
struct Outcome {
    /// Write steps that returned Ok.
    acked: u64,
    /// Write steps started (the last one may have failed).
    attempted: u64,
    /// Write steps acknowledged before the last acknowledged flush.
    flushed: u64,
    /// The error that stopped the run.
    error: Option<String>,
}

fn run(db: &Db, steps: &[Step]) -> Outcome {
    let mut o = Outcome::default();
    for step in steps {
        if step.writes() {
            o.attempted += 1;
        }
        let res = match step {
            Step::Batch(ops) => db.write(common::batch_of(ops)),
            Step::Range(start, end, ops) => {
                let mut b = sett::WriteBatch::new();
                b.delete_range(start.clone(), end.clone());
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k.clone(), v.clone()),
                        None => b.delete(k.clone()),
                    };
                }
                db.write(b)
            }
            Step::Txn(ops) => db.update(|t| {
                for (k, v) in ops {
                    match v {
                        Some(v) => t.set(k, v)?,
                        None => t.delete(k)?,
                    }
                }
                Ok(())
            }),
            Step::Bulk(entries) => db.bulk_load().and_then(|mut l| {
                for (k, v) in entries {
                    l.add(k, v)?;
                }
                l.finish().map(|_| ())
            }),
            Step::Restore(stream, _) => db.load(&mut &stream[..]).map(|_| ()),
            Step::Flush => db.flush(),
            Step::Gc => db.run_value_log_gc(0.3).map(|_| ()),
            Step::Flatten => db.flatten(),
        };
        match res {
            Ok(()) => {
                if step.writes() {
                    o.acked = o.attempted;
                }
                if matches!(step, Step::Flush) {
                    o.flushed = o.acked;
                }
            }
            Err(e) => {
                o.error = Some(e.to_string());
                break;
            }
        }
    }
    o
}

fn model_after(steps: &[Step], k: u64) -> Model {
    let mut m = Model::new();
    for step in steps.iter().filter(|s| s.writes()).take(k as usize) {
        step.apply(&mut m);
    }
    m
}

fn first_difference(got: &Model, want: &Model) -> String {
    for (k, v) in want {
        match got.get(k) {
            None => return format!("key {:?} missing", String::from_utf8_lossy(k)),
            Some(g) if g != v => {
                return format!(
                    "key {:?} holds {:?}, expected {:?}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(&g[..g.len().min(24)]),
                    String::from_utf8_lossy(&v[..v.len().min(24)])
                )
            }
            _ => {}
        }
    }
    for k in got.keys() {
        if !want.contains_key(k) {
            return format!("key {:?} should not exist", String::from_utf8_lossy(k));
        }
    }
    "none".into()
}

fn scan(db: &Db, what: &str) -> Model {
    let mut state = Model::new();
    for item in db
        .iter(IterOptions::default())
        .unwrap_or_else(|e| panic!("{what}: iterator: {e}"))
    {
        let (k, v) = item.unwrap_or_else(|e| panic!("{what}: scan after the cut: {e}"));
        state.insert(k, v);
    }
    state
}

/// Every file under `dir` with its length and content hash.
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, u32)> {
    let mut out = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let data = std::fs::read(e.path()).unwrap_or_default();
            out.insert(
                e.file_name().to_string_lossy().into_owned(),
                (data.len() as u64, crc32(&data)),
            );
        }
    }
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// Reopens `dir` (read-only first, then with the real file system) and checks
/// it against the model.
fn check(dir: &Path, steps: &[Step], o: &Outcome, sync: bool, what: &str) {
    // A read-only open of the crashed directory writes nothing and sees what
    // the read-write open will.
    let before = snapshot(dir);
    let mut ro_opts = tiny_options(dir);
    ro_opts.read_only = true;
    let ro_state = match Db::open(ro_opts) {
        Ok(ro) => Some(scan(&ro, what)),
        Err(sett::Error::InvalidArgument(_)) => None, // no MANIFEST survived
        Err(e) => panic!("{what}: read-only open after the cut failed: {e}"),
    };
    assert_eq!(
        snapshot(dir),
        before,
        "{what}: a read-only open changed the directory"
    );
    let db = Db::open(tiny_options(dir))
        .unwrap_or_else(|e| panic!("{what}: reopen after the cut failed: {e} (run: {o:?})"));
    let state = scan(&db, what);
    match ro_state {
        Some(ro) => assert!(
            ro == state,
            "{what}: the read-only open saw {} keys, the read-write open {}: first difference: {}",
            ro.len(),
            state.len(),
            first_difference(&ro, &state)
        ),
        None => assert!(
            state.is_empty(),
            "{what}: no MANIFEST for a read-only open, yet the Db holds data"
        ),
    }
    let floor = if sync { o.acked } else { o.flushed };
    let k = match state.get(MARKER) {
        Some(v) => String::from_utf8_lossy(v)
            .parse::<u64>()
            .unwrap_or_else(|_| panic!("{what}: marker holds {v:?}")),
        None if !state.is_empty() && steps.first().is_some_and(Step::is_load) => {
            let full = model_after(steps, 1);
            if state == full {
                1
            } else {
                // A load cut before it was durable: part of it, nothing else.
                for (key, v) in &state {
                    assert_eq!(
                        full.get(key),
                        Some(v),
                        "{what}: after a cut load, key {:?} is not the loaded value",
                        String::from_utf8_lossy(key)
                    );
                }
                assert!(
                    floor == 0 && matches!(steps[0], Step::Restore(..)),
                    "{what}: a load was acknowledged as durable (or is a bulk load, which is atomic) but only part of it is there (run: {o:?})"
                );
                return;
            }
        }
        None => 0,
    };
    assert!(
        k >= floor,
        "{what}: acknowledged writes lost: the Db holds the writes up to {k}, but {floor} were acknowledged durable (run: {o:?})"
    );
    assert!(
        k <= o.attempted,
        "{what}: the Db holds write {k}, but only {} were made (run: {o:?})",
        o.attempted
    );
    let want = model_after(steps, k);
    assert!(
        state == want,
        "{what}: the Db holds {} keys, the model after write {k} {}: first difference: {}",
        state.len(),
        want.len(),
        first_difference(&state, &want)
    );
    db.close()
        .unwrap_or_else(|e| panic!("{what}: close after the check: {e}"));
}

#[derive(Default)]
struct Totals {
    cuts: u64,
    report: CutReport,
    failed_runs: u64,
}

/// A fault to plan and the cut that follows it.
struct Plan {
    /// The kind of operation the fault hits (None: any).
    kind: Option<OpKind>,
    /// Which one of them, from 1.
    nth: u64,
    fault: Fault,
    mode: CutMode,
    seed: u64,
}

/// Runs `steps` on a fresh Db over a SimFs with `plan`'s fault, then cuts the
/// power as it says and checks.
fn one_cut(steps: &[Step], sync: bool, plan: &Plan, what: &str) -> (Outcome, CutReport) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let sim = Arc::new(SimFs::new(tmp.path().join("simfs-trash"), plan.seed));
    sim.fail(plan.kind, plan.nth, plan.fault);
    let mut opts = tiny_options(&dir);
    opts.sync_writes = sync;
    opts.fs = Fs::new(sim.clone());
    let outcome = match Db::open(opts) {
        Ok(db) => {
            let o = run(&db, steps);
            if o.error.is_some() && plan.fault != Fault::PowerCut {
                // After any injected fault the Db must refuse writes, not go on
                // as if its files were what it thinks they are.
                let refused = db.put(b"k-after-fault", b"v");
                assert!(
                    refused.is_err(),
                    "{what}: the Db accepted a write after an I/O error ({:?})",
                    o.error
                );
            }
            drop(db);
            o
        }
        Err(e) => Outcome {
            error: Some(e.to_string()),
            ..Outcome::default()
        },
    };
    sim.power_off();
    let report = sim
        .power_cut(plan.mode)
        .unwrap_or_else(|e| panic!("{what}: applying the cut: {e}"));
    check(&dir, steps, &outcome, sync, what);
    (outcome, report)
}

/// Cuts the power through the workloads of `seeds` (and as many more as
/// POWER_LOSS_SCALE asks for).
fn sweep(sync: bool, first_seed: u64) -> Totals {
    let seeds: Vec<u64> = (first_seed..first_seed + 3 * common::power_loss_scale()).collect();
    let modes = [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
    ];
    let mut t = Totals::default();
    for &seed in &seeds {
        let steps = workload(seed, 60);
        // A run without a cut counts the operations.
        let tmp = tempfile::tempdir().expect("tempdir");
        let sim = Arc::new(SimFs::new(tmp.path().join("simfs-trash"), seed));
        let mut opts = tiny_options(&tmp.path().join("db"));
        opts.sync_writes = sync;
        opts.fs = Fs::new(sim.clone());
        let db = Db::open(opts).expect("open");
        let o = run(&db, &steps);
        assert!(o.error.is_none(), "seed {seed}: run without a cut: {o:?}");
        drop(db);
        let total = sim.ops();
        drop(tmp);

        let mut rng = Rng::new(seed ^ 0x5eed);
        // make test: every 6th operation; POWER_LOSS_SCALE 6 or more: every one.
        let stride = (6 / common::power_loss_scale()).max(1);
        let mut cuts: Vec<u64> = (1..=total).step_by(stride as usize).collect();
        cuts.extend((0..4 * common::power_loss_scale()).map(|_| 1 + rng.below(total)));
        for (i, &cut) in cuts.iter().enumerate() {
            let mode = modes[i % modes.len()];
            let what =
                format!("seed {seed}, sync {sync}, cut at operation {cut} of {total}, {mode:?}");
            let plan = Plan {
                kind: None,
                nth: cut,
                fault: Fault::PowerCut,
                mode,
                seed: seed ^ cut,
            };
            let (o, r) = one_cut(&steps, sync, &plan, &what);
            t.cuts += 1;
            t.failed_runs += u64::from(o.error.is_some());
            t.report.files_cut += r.files_cut;
            t.report.bytes_dropped += r.bytes_dropped;
            t.report.entries_reverted += r.entries_reverted;
            t.report.ranges_lost += r.ranges_lost;
        }
    }
    t
}

fn print_totals(name: &str, t: &Totals) {
    println!(
        "POWER_CUTS {name}: {} cuts ({} stopped a run), {} files cut, {} bytes dropped, {} directory entries reverted, 0 acknowledged writes lost",
        t.cuts, t.failed_runs, t.report.files_cut, t.report.bytes_dropped, t.report.entries_reverted
    );
}

#[test]
fn power_cut_at_every_nth_operation_keeps_every_acknowledged_synced_write() {
    let t = sweep(true, 1);
    print_totals("sync_writes", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

#[test]
fn power_cut_without_sync_writes_keeps_a_prefix_of_the_writes() {
    let t = sweep(false, 1000);
    print_totals("no sync", &t);
    assert!(t.report.bytes_dropped > 0);
}

#[test]
fn faults_after_the_fact_stop_writes_and_lose_no_acknowledged_write() {
    let cases = [
        (OpKind::Append, Fault::ShortWrite),
        (OpKind::Sync, Fault::SyncFails),
        (OpKind::Create, Fault::Fails),
        (OpKind::Rename, Fault::Fails),
        (OpKind::SyncDir, Fault::Fails),
        (OpKind::Append, Fault::Fails),
        (OpKind::Sync, Fault::Fails),
    ];
    let mut runs = 0;
    for (seed, steps) in [(21u64, workload(21, 60)), (22, workload(22, 60))] {
        for (kind, fault) in cases {
            for nth in [1u64, 2, 3, 5, 8, 13, 21, 34, 55] {
                let what = format!("seed {seed}, {fault:?} at {kind:?} number {nth}");
                let plan = Plan {
                    kind: Some(kind),
                    nth,
                    fault,
                    mode: CutMode::DropUnsynced,
                    seed: seed ^ nth,
                };
                one_cut(&steps, true, &plan, &what);
                runs += 1;
            }
        }
    }
    println!("FAULTS: {runs} runs with a fault after the fact, 0 acknowledged writes lost");
}

#[test]
fn simfs_keeps_only_what_was_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let sim = SimFs::new(tmp.path().join("trash"), 7);
    let fs: &dyn sett::fs::FileSystem = &sim;
    let durable = dir.join("durable");
    let mut f = fs.create_new(&durable).unwrap();
    fs.append(&mut f, &durable, b"synced").unwrap();
    fs.sync(&f, &durable).unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.append(&mut f, &durable, b" and not").unwrap();
    let unsynced_name = dir.join("new");
    let g = fs.create_new(&unsynced_name).unwrap();
    fs.sync(&g, &unsynced_name).unwrap();
    fs.rename(&durable, &dir.join("renamed")).unwrap();
    drop((f, g));
    let report = sim.power_cut(CutMode::DropUnsynced).unwrap();
    assert_eq!(std::fs::read(&durable).unwrap(), b"synced");
    assert!(
        !unsynced_name.exists(),
        "a file whose directory was never synced survived"
    );
    assert!(!dir.join("renamed").exists(), "an unsynced rename survived");
    assert_eq!(report.bytes_dropped, 8);

    // A failed fsync loses the data even if a later one succeeds.
    let mut f = std::fs::File::options()
        .append(true)
        .open(&durable)
        .unwrap();
    fs.append(&mut f, &durable, b"+lost").unwrap();
    sim.fail(Some(OpKind::Sync), 1, Fault::SyncFails);
    assert!(fs.sync(&f, &durable).is_err());
    fs.sync(&f, &durable).unwrap();
    sim.power_cut(CutMode::DropUnsynced).unwrap();
    assert_eq!(std::fs::read(&durable).unwrap(), b"synced\0\0\0\0\0");

    // After the power goes, nothing changes.
    sim.power_off();
    assert!(fs.create_new(&dir.join("late")).is_err());
    assert!(!dir.join("late").exists());
}
