//! Power cuts. Every file-system operation of a workload goes through
//! `sett::fs::SimFs`, which keeps what a real disk would hold durably. The power
//! is cut at every Nth operation (and at random ones), the cut is applied (data
//! not synced dropped, all of it, a random prefix with a torn last page, or
//! page by page out of order; directory entries back to their directory's
//! last sync), and the Db is reopened with the real file system and checked
//! against a model of the workload:
//! - with `sync_writes`, every acknowledged write is there;
//! - without it, what is there is the state after a prefix of the writes, at
//!   least up to the last acknowledged `flush`;
//! - never a failed open, an error from a read, or a wrong value.
//!
//! Each scenario runs on both WAL write paths: `write(2)` appends, and the
//! shared mapping Linux uses by default (`SimFs::with_mapped_appends`: the
//! records bypass the file-system layer, and what survives is the file's
//! snapshot at its last sync). Cuts also write back unsynced pages out of
//! order (`CutMode::ReorderedPages`), and two workloads aim that at the WAL
//! (values kept in the tree, larger memtables) and at the value log (every
//! value separated, larger value-log files).
//!
//! The workload mixes batches, transactions, flushes, compactions (tiny
//! memtables and tables, and `flatten`), value-log rotation (tiny value-log
//! files) and GC, range deletes (in batches with puts: atomic under the cut),
//! and reopens (after a close, or after the process was killed: the open
//! replays the WALs), and starts with a bulk load or a backup restore for
//! some seeds. Half the GCs come right after a reopen, so that cuts fall in
//! the collection of files sealed before the open, which goes without a
//! flush. One sweep turns a third of the batches into merges (the append
//! operator).
//!
//! `cargo test -p sett --features unsafe-skip-fsync --test power_loss` (every
//! fsync a no-op) must fail, and so must `--features unsafe-skip-dir-sync`:
//! `make test` checks both, the mutation check that proves this test bites.
//! POWER_LOSS_SCALE multiplies the number of cut points (make stress).

mod common;

use common::{tiny_options, value_for, Rng};
use sett::fs::{CutMode, CutReport, Fault, Fs, OpKind, SimFs};
use sett::Options;
use sett::{Db, IterOptions, WriteBatch};
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
    /// Merges of operands (appended) and the marker's put, as one batch.
    Merge(Vec<(Vec<u8>, Vec<u8>)>),
    Flush,
    Gc,
    /// One round of the background GC's idle tier (`Db::run_idle_gc_round`):
    /// a walk, then files moved in key order, scattered ones too.
    IdleGc,
    Flatten,
    /// The Db ended as `Exit` says and opened again on the same files: what
    /// was acknowledged before stays, and the workload goes on.
    Reopen(Exit),
}

/// How a `Step::Reopen` ends the Db it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// `close`: the memtables flushed, every file synced.
    Close,
    /// The process dies (`SimFs::pause`): nothing is flushed or synced, the
    /// files hold what the page cache held, and the open replays the WALs
    /// into the files sealed before it.
    Kill,
}

impl Step {
    fn writes(&self) -> bool {
        matches!(
            self,
            Step::Batch(_)
                | Step::Txn(_)
                | Step::Range(..)
                | Step::Bulk(_)
                | Step::Restore(..)
                | Step::Merge(_)
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
            Step::Merge(ops) => {
                for (k, op) in ops {
                    if k == MARKER {
                        model.insert(k.clone(), op.clone());
                    } else {
                        model.entry(k.clone()).or_default().extend_from_slice(op);
                    }
                }
            }
            Step::Flush | Step::Gc | Step::IdleGc | Step::Flatten | Step::Reopen(_) => {}
        }
    }
}

/// Which values a workload writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Values {
    /// Both sides of tiny_options' 64-byte value threshold.
    Mixed,
    /// Below it: kept in the tree, so the WAL holds them.
    Small,
    /// Above it: every value goes to the value log, some spanning pages.
    Large,
}

/// How a run is set up.
#[derive(Debug, Clone, Copy)]
struct Setup {
    /// The WAL written through a shared mapping (the default on Linux), not
    /// by `write(2)`.
    mapped: bool,
    values: Values,
    /// Every file encrypted (`Options::encryption`), data keys rotated every
    /// millisecond: the WAL is then written by appends whatever `mapped` says.
    encrypted: bool,
    /// The Db has the append operator and the workload merges.
    merges: bool,
    /// No GC in the background, and memtables that hold the whole workload:
    /// the Db does only what the steps ask, so that a test knows which files
    /// a step collects and which WALs point into them.
    still: bool,
}

const WRITE_PATH: Setup = Setup {
    mapped: false,
    values: Values::Mixed,
    encrypted: false,
    merges: false,
    still: false,
};
const MAPPED: Setup = Setup {
    mapped: true,
    values: Values::Mixed,
    encrypted: false,
    merges: false,
    still: false,
};
const ENCRYPTED: Setup = Setup {
    mapped: false,
    values: Values::Mixed,
    encrypted: true,
    merges: false,
    still: false,
};
const MERGES: Setup = Setup {
    mapped: false,
    values: Values::Mixed,
    encrypted: false,
    merges: true,
    still: false,
};

impl Setup {
    fn options(&self, dir: &Path) -> Options {
        let mut o = tiny_options(dir);
        match self.values {
            Values::Mixed => {}
            // WALs of many pages, so that their unsynced pages can be
            // written back out of order.
            Values::Small => o.memtable_size = 64 << 10,
            // Value-log files of many pages, for the same reason.
            Values::Large => o.vlog_file_size = 256 << 10,
        }
        if self.encrypted {
            // A new data key for nearly every file: cuts land in the key
            // registry's rewrites too, and files of many keys are reopened.
            let key = sett::EncryptionKey::new([3; 32]);
            o.encryption =
                Some(sett::Encryption::new(key).rotation(std::time::Duration::from_millis(1)));
        }
        if self.merges {
            o.merge_operator = Some(Arc::new(sett::merge::Append));
        }
        if self.still {
            o.vlog_gc_ratio = 0.0;
            o.memtable_size = 64 << 10;
        }
        o
    }

    fn sim(&self, trash: &Path, seed: u64) -> Arc<SimFs> {
        Arc::new(SimFs::new(trash, seed).with_mapped_appends(self.mapped))
    }
}

fn random_value(rng: &mut Rng, key: &[u8], version: u64, values: Values) -> Vec<u8> {
    let len = match values {
        Values::Mixed => [8usize, 40, 100, 300, 2000][rng.below(5) as usize],
        Values::Small => [8usize, 20, 40, 60][rng.below(4) as usize],
        Values::Large => [100usize, 300, 2000, 5000, 9000][rng.below(5) as usize],
    };
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
        let value = random_value(&mut rng, &key, 1000 + i, Values::Mixed);
        db.put(&key, &value).expect("put");
        model.insert(key, value);
    }
    let mut out = Vec::new();
    db.backup(&mut out, 0).expect("backup");
    (out, model)
}

fn workload(seed: u64, len: usize) -> Vec<Step> {
    workload_of(seed, len, Values::Mixed)
}

fn workload_of(seed: u64, len: usize, values: Values) -> Vec<Step> {
    let mut rng = Rng::new(seed);
    // Reopens come from their own generator, on top of `len` steps: the
    // other steps of a seed stay what they were.
    let mut reopens = Rng::new(seed ^ 0x0e0e_0e0e);
    let mut reopen = |percent: u64| {
        reopens.chance(percent).then(|| {
            // Mostly after a kill: then the open has WALs to replay.
            Step::Reopen(if reopens.chance(70) {
                Exit::Kill
            } else {
                Exit::Close
            })
        })
    };
    // Which GCs are the idle tier's, from a generator of its own too.
    let mut idle = Rng::new(seed ^ 0x1d1e_1d1e);
    let mut reopened = 0;
    let mut steps = Vec::new();
    let mut n = 0u64;
    match seed % 3 {
        1 => {
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..80u64)
                .map(|i| {
                    let key = format!("k{:03}", i * 3 / 2).into_bytes();
                    let value = random_value(&mut rng, &key, 500 + i, values);
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
    while steps.len() - reopened < len {
        match rng.below(24) {
            0 => steps.push(Step::Flush),
            1 => {
                // Half the GCs right after an open: the files sealed before
                // it are collected without a flush (`GcState::note_opened`),
                // and the cuts fall in that collection.
                if let Some(step) = reopen(50) {
                    steps.push(step);
                    reopened += 1;
                }
                steps.push(if idle.chance(50) {
                    Step::IdleGc
                } else {
                    Step::Gc
                });
            }
            2 => steps.push(Step::Flatten),
            r => {
                if let Some(step) = reopen(1) {
                    steps.push(step);
                    reopened += 1;
                }
                n += 1;
                let mut ops = Vec::new();
                // Small values come in larger batches, so that the WAL
                // grows by many pages between syncs, and now and then in a
                // batch past the mapped WAL's 32 KiB copy limit (written by
                // `pwrite` between copies into the mapping).
                let most = match values {
                    Values::Small if rng.chance(12) => 700,
                    Values::Small => 24,
                    _ => 6,
                };
                for _ in 0..1 + rng.below(most) {
                    let key = format!("k{:03}", rng.below(120)).into_bytes();
                    if rng.chance(15) {
                        ops.push((key, None));
                    } else {
                        let value = random_value(&mut rng, &key, n, values);
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

/// `steps` with every third batch turned into merges of a few bytes of its
/// values (its deletes left out), the marker still put.
fn with_merges(steps: Vec<Step>) -> Vec<Step> {
    steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Batch(ops) if i % 3 == 0 => Step::Merge(
                ops.into_iter()
                    .filter_map(|(k, v)| {
                        let v = v?;
                        let op = if k == MARKER {
                            v
                        } else {
                            v[..v.len().min(3 + i % 4)].to_vec()
                        };
                        Some((k, op))
                    })
                    .collect(),
            ),
            step => step,
        })
        .collect()
}

/// What a run of the workload got acknowledged.
#[derive(Default, Debug)]
struct Outcome {
    /// Write steps that returned Ok.
    acked: u64,
    /// Write steps started (the last one may have failed).
    attempted: u64,
    /// Write steps acknowledged before the last acknowledged flush or
    /// reopen.
    flushed: u64,
    /// The error that stopped the run.
    error: Option<String>,
}

/// What a run opens its Db with, again at each `Step::Reopen`.
struct Session {
    sim: Arc<SimFs>,
    opts: Options,
}

impl Session {
    fn open(&self) -> sett::Result<Db> {
        Db::open(self.opts.clone())
    }

    /// Ends `db` as `exit` says and opens the Db again.
    fn reopen(&self, db: Db, exit: Exit) -> sett::Result<Db> {
        match exit {
            Exit::Close => db.close()?,
            Exit::Kill => {
                // Nothing of the close that the drop attempts reaches the
                // files. A cut that came first stays: the open then fails.
                let up = self.sim.pause();
                drop(db);
                if up {
                    self.sim.resume();
                }
            }
        }
        self.open()
    }
}

/// Runs `steps` on `db`; returns the Db open at the end (none if a reopen
/// failed).
fn run(mut db: Db, session: &Session, steps: &[Step]) -> (Option<Db>, Outcome) {
    let mut o = Outcome::default();
    for step in steps {
        if step.writes() {
            o.attempted += 1;
        }
        if let Step::Reopen(exit) = step {
            match session.reopen(db, *exit) {
                Ok(reopened) => {
                    db = reopened;
                    // The open flushed every WAL it replayed (after a
                    // close, the close flushed every memtable): whatever
                    // `sync_writes` says, all acknowledged writes are durable.
                    o.flushed = o.acked;
                    continue;
                }
                Err(e) => {
                    o.error = Some(e.to_string());
                    return (None, o);
                }
            }
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
            Step::Merge(ops) => {
                let mut b = WriteBatch::new();
                for (k, op) in ops {
                    if k == MARKER {
                        b.put(k, op);
                    } else {
                        b.merge(k, op);
                    }
                }
                db.write(b)
            }
            Step::Flush => db.flush(),
            Step::Gc => db.run_value_log_gc(0.3).map(|_| ()),
            Step::IdleGc => db.run_idle_gc_round().map(|_| ()),
            Step::Flatten => db.flatten(),
            Step::Reopen(_) => unreachable!("reopened above"),
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
    (Some(db), o)
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
                // Merges append: the head and the tail of each tell which
                // operands are there.
                let show = |b: &[u8]| match b.len() {
                    0..=80 => format!("{:?}", String::from_utf8_lossy(b)),
                    n => format!(
                        "{:?}..{:?} ({n} bytes)",
                        String::from_utf8_lossy(&b[..40]),
                        String::from_utf8_lossy(&b[n - 40..])
                    ),
                };
                return format!(
                    "key {:?} holds {}, expected {}",
                    String::from_utf8_lossy(k),
                    show(g),
                    show(v)
                );
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

/// Every file under `dir` with its content (compared whole: the WALs of the
/// mapped path are 1 MiB or more, and a checksum computed in a debug build
/// cost more than the rest of the test).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let data = std::fs::read(e.path()).unwrap_or_default();
            out.insert(e.file_name().to_string_lossy().into_owned(), data);
        }
    }
    out
}

/// Reopens `dir` (read-only first, then with the real file system) and checks
/// it against the model.
fn check(dir: &Path, steps: &[Step], o: &Outcome, sync: bool, setup: Setup, what: &str) {
    // A read-only open of the crashed directory writes nothing and sees what
    // the read-write open will.
    let before = snapshot(dir);
    let mut ro_opts = setup.options(dir);
    ro_opts.read_only = true;
    let ro_state = match Db::open(ro_opts) {
        Ok(ro) => Some(scan(&ro, what)),
        Err(sett::Error::InvalidArgument(_)) => None, // no MANIFEST survived
        Err(e) => panic!("{what}: read-only open after the cut failed: {e}"),
    };
    let after = snapshot(dir);
    assert!(
        after == before,
        "{what}: a read-only open changed the directory: before {:?}, after {:?}",
        before.iter().map(|(n, d)| (n, d.len())).collect::<Vec<_>>(),
        after.iter().map(|(n, d)| (n, d.len())).collect::<Vec<_>>()
    );
    let db = Db::open(setup.options(dir))
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
    if setup.values == Values::Large {
        // The recovered value log (holes where pages vanished, entries past
        // them that no version points to) checks, and GC moves what is live.
        db.verify()
            .unwrap_or_else(|e| panic!("{what}: verify after the cut: {e}"));
        for _ in 0..8 {
            match db.run_value_log_gc(0.01) {
                Ok(sett::GcOutcome::NothingToCollect) => break,
                Ok(_) => {}
                Err(e) => panic!("{what}: GC after the cut: {e}"),
            }
        }
        let after_gc = scan(&db, what);
        assert!(
            after_gc == state,
            "{what}: GC after the cut changed the data: first difference: {}",
            first_difference(&after_gc, &state)
        );
    }
    db.close()
        .unwrap_or_else(|e| panic!("{what}: close after the check: {e}"));
}

#[derive(Default)]
struct Totals {
    cuts: u64,
    report: CutReport,
    failed_runs: u64,
}

impl Totals {
    fn add(&mut self, o: &Outcome, r: &CutReport) {
        self.cuts += 1;
        self.failed_runs += u64::from(o.error.is_some());
        self.report.files_cut += r.files_cut;
        self.report.bytes_dropped += r.bytes_dropped;
        self.report.entries_reverted += r.entries_reverted;
        self.report.ranges_lost += r.ranges_lost;
        self.report.files_reordered += r.files_reordered;
    }
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
    setup: Setup,
    /// Instead of the fault: the power goes off once this many steps ran,
    /// with the Db still open (unsynced data in the page cache, which a
    /// cut at a file-system operation seldom finds on the mapped WAL: its
    /// appends are no operations of the file system).
    stop_after: Option<usize>,
}

/// Runs `steps` on a fresh Db over a SimFs with `plan`'s fault, then cuts the
/// power as it says and checks.
fn one_cut(steps: &[Step], sync: bool, plan: &Plan, what: &str) -> (Outcome, CutReport) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let sim = plan.setup.sim(&tmp.path().join("simfs-trash"), plan.seed);
    if plan.stop_after.is_none() {
        sim.fail(plan.kind, plan.nth, plan.fault);
    }
    let mut opts = plan.setup.options(&dir);
    opts.sync_writes = sync;
    opts.fs = Fs::new(sim.clone());
    let session = Session {
        sim: sim.clone(),
        opts,
    };
    let outcome = match session.open() {
        Ok(db) => {
            let (db, o) = run(
                db,
                &session,
                &steps[..plan.stop_after.unwrap_or(steps.len())],
            );
            if plan.stop_after.is_some() {
                // Before the Db closes (a close syncs).
                sim.power_off();
            }
            if let Some(db) = db.as_ref().filter(|_| o.error.is_some()) {
                if plan.fault != Fault::PowerCut {
                    // After any injected fault the Db must refuse writes, not
                    // go on as if its files were what it thinks they are.
                    let refused = db.put(b"k-after-fault", b"v");
                    assert!(
                        refused.is_err(),
                        "{what}: the Db accepted a write after an I/O error ({:?})",
                        o.error
                    );
                }
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
    check(&dir, steps, &outcome, sync, plan.setup, what);
    (outcome, report)
}

/// The operations a run of `steps` without a cut makes.
fn count_ops(steps: &[Step], sync: bool, setup: Setup, seed: u64) -> u64 {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sim = setup.sim(&tmp.path().join("simfs-trash"), seed);
    let mut opts = setup.options(&tmp.path().join("db"));
    opts.sync_writes = sync;
    opts.fs = Fs::new(sim.clone());
    let session = Session {
        sim: sim.clone(),
        opts,
    };
    let (db, o) = run(session.open().expect("open"), &session, steps);
    assert!(o.error.is_none(), "seed {seed}: run without a cut: {o:?}");
    drop(db);
    sim.ops()
}

/// Cuts the power at each of `cuts` (operation numbers) of a run of `steps`,
/// rotating through `modes`, and adds up what the cuts did.
fn cut_at(
    t: &mut Totals,
    steps: &[Step],
    sync: bool,
    setup: Setup,
    seed: u64,
    cuts: &[u64],
    modes: &[CutMode],
) {
    for (i, &cut) in cuts.iter().enumerate() {
        let mode = modes[i % modes.len()];
        let what = format!("seed {seed}, sync {sync}, {setup:?}, cut at operation {cut}, {mode:?}");
        let plan = Plan {
            kind: None,
            nth: cut,
            fault: Fault::PowerCut,
            mode,
            seed: seed ^ cut,
            setup,
            stop_after: None,
        };
        let (o, r) = one_cut(steps, sync, &plan, &what);
        t.add(&o, &r);
    }
}

/// Cuts the power through the workloads of `seeds` seeds from `first_seed`
/// (times POWER_LOSS_SCALE).
fn sweep(sync: bool, first_seed: u64, seeds: u64, setup: Setup) -> Totals {
    let seeds: Vec<u64> = (first_seed..first_seed + seeds * common::power_loss_scale()).collect();
    let modes = [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
        CutMode::ReorderedPages,
    ];
    let mut t = Totals::default();
    for &seed in &seeds {
        let mut steps = workload(seed, 60);
        if setup.merges {
            steps = with_merges(steps);
        }
        let total = count_ops(&steps, sync, setup, seed);
        let mut rng = Rng::new(seed ^ 0x5eed);
        // make test: every 6th operation; POWER_LOSS_SCALE 6 or more: every one.
        let stride = (6 / common::power_loss_scale()).max(1);
        let mut cuts: Vec<u64> = (1..=total).step_by(stride as usize).collect();
        cuts.extend((0..4 * common::power_loss_scale()).map(|_| 1 + rng.below(total)));
        cut_at(&mut t, &steps, sync, setup, seed, &cuts, &modes);
        for (i, mode) in modes.iter().enumerate() {
            let k = 1 + rng.below(steps.len() as u64) as usize;
            off_after(&mut t, &steps, sync, setup, seed + i as u64, k, *mode);
        }
    }
    t
}

/// Turns the power off after `k` steps of `steps`, the Db open, and cuts it
/// as `mode` says.
fn off_after(
    t: &mut Totals,
    steps: &[Step],
    sync: bool,
    setup: Setup,
    seed: u64,
    k: usize,
    mode: CutMode,
) {
    let what = format!("seed {seed}, sync {sync}, {setup:?}, power off after step {k}, {mode:?}");
    let plan = Plan {
        kind: None,
        nth: 0,
        fault: Fault::PowerCut,
        mode,
        seed: seed ^ ((k as u64) << 32),
        setup,
        stop_after: Some(k),
    };
    let (o, r) = one_cut(steps, sync, &plan, &what);
    t.add(&o, &r);
}

/// Cuts the power at random operations of workloads of `values`, and after
/// random steps, on both WAL paths and in both sync modes, every cut writing
/// back unsynced pages out of order.
fn reordered_sweep(values: Values, first_seed: u64) -> Totals {
    let mut t = Totals::default();
    for seed in first_seed..first_seed + 2 * common::power_loss_scale() {
        let steps = workload_of(seed, 50, values);
        for mapped in [false, true] {
            for sync in [false, true] {
                let setup = Setup {
                    mapped,
                    values,
                    encrypted: false,
                    merges: false,
                    still: false,
                };
                let total = count_ops(&steps, sync, setup, seed);
                let mut rng = Rng::new(seed ^ 0x0dd ^ u64::from(mapped) ^ (u64::from(sync) << 1));
                let cuts: Vec<u64> = (0..4).map(|_| 1 + rng.below(total)).collect();
                cut_at(
                    &mut t,
                    &steps,
                    sync,
                    setup,
                    seed,
                    &cuts,
                    &[CutMode::ReorderedPages],
                );
                for _ in 0..4 {
                    let k = 1 + rng.below(steps.len() as u64) as usize;
                    off_after(
                        &mut t,
                        &steps,
                        sync,
                        setup,
                        seed,
                        k,
                        CutMode::ReorderedPages,
                    );
                }
            }
        }
    }
    t
}

fn print_totals(name: &str, t: &Totals) {
    println!(
        "POWER_CUTS {name}: {} cuts ({} stopped a run), {} files cut ({} written back out of order), {} bytes dropped, {} directory entries reverted, 0 acknowledged writes lost",
        t.cuts, t.failed_runs, t.report.files_cut, t.report.files_reordered, t.report.bytes_dropped, t.report.entries_reverted
    );
}

#[test]
fn power_cut_at_every_nth_operation_keeps_every_acknowledged_synced_write() {
    let t = sweep(true, 1, 3, WRITE_PATH);
    print_totals("sync_writes", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

#[test]
fn power_cut_without_sync_writes_keeps_a_prefix_of_the_writes() {
    let t = sweep(false, 1000, 3, WRITE_PATH);
    print_totals("no sync", &t);
    assert!(t.report.bytes_dropped > 0);
}

#[test]
fn power_cut_with_the_mapped_wal_keeps_every_acknowledged_synced_write() {
    // Two seeds, not three: a mapped WAL is 1 MiB allocated ahead, which
    // each sync snapshots and each reopen reads (3x the cost of a cut).
    let t = sweep(true, 1, 2, MAPPED);
    print_totals("mapped WAL, sync_writes", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

#[test]
fn power_cut_with_the_mapped_wal_without_sync_writes_keeps_a_prefix_of_the_writes() {
    let t = sweep(false, 1000, 2, MAPPED);
    print_totals("mapped WAL, no sync", &t);
    assert!(t.report.bytes_dropped > 0);
}

#[test]
fn power_cut_of_an_encrypted_db_keeps_every_acknowledged_synced_write() {
    let t = sweep(true, 1, 2, ENCRYPTED);
    print_totals("encrypted, sync_writes", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

#[test]
fn power_cut_with_merges_keeps_every_acknowledged_synced_write() {
    let t = sweep(true, 7, 1, MERGES);
    print_totals("merges, sync_writes", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

#[test]
fn power_cut_of_an_encrypted_db_without_sync_writes_keeps_a_prefix_of_the_writes() {
    let t = sweep(false, 1000, 2, ENCRYPTED);
    print_totals("encrypted, no sync", &t);
    assert!(t.report.bytes_dropped > 0);
}

#[test]
fn power_cut_with_merges_without_sync_writes_keeps_a_prefix_of_the_writes() {
    let t = sweep(false, 1007, 1, MERGES);
    print_totals("merges, no sync", &t);
    assert!(t.report.bytes_dropped > 0);
}

#[test]
fn wal_pages_written_back_out_of_order_lose_no_acknowledged_write() {
    let t = reordered_sweep(Values::Small, 40);
    print_totals("WAL pages out of order", &t);
    assert!(
        t.report.files_reordered > 0,
        "no cut wrote pages back out of order"
    );
}

#[test]
fn value_log_pages_written_back_out_of_order_lose_no_acknowledged_write() {
    let t = reordered_sweep(Values::Large, 60);
    print_totals("value-log pages out of order", &t);
    assert!(
        t.report.files_reordered > 0,
        "no cut wrote pages back out of order"
    );
}

/// Batches of large values overwriting 6 keys (each value-log file is
/// mostly garbage by the end, and the WAL points into every one), the
/// process killed and the Db opened again, then GCs with small batches after
/// each: those batches are what a replay stopping at a pointer into a
/// collected file would lose.
fn gc_after_a_reopen() -> Vec<Step> {
    let mut steps = Vec::new();
    let marked = |n: u64, mut ops: Vec<(Vec<u8>, Option<Vec<u8>>)>| {
        ops.push((MARKER.to_vec(), Some(n.to_string().into_bytes())));
        Step::Batch(ops)
    };
    for n in 1..=10u64 {
        let ops = (0..4)
            .map(|j| {
                let key = format!("k{:03}", (n * 4 + j) % 6).into_bytes();
                let value = value_for(&key, n, 2000);
                (key, Some(value))
            })
            .collect();
        steps.push(marked(n, ops));
    }
    steps.push(Step::Reopen(Exit::Kill));
    for n in 11..=12u64 {
        steps.push(Step::Gc);
        let key = format!("s{n:03}").into_bytes();
        let value = value_for(&key, n, 20);
        steps.push(marked(n, vec![(key, Some(value))]));
    }
    steps
}

/// The operations of a run of `steps` without a cut, before its first reopen
/// and up to its end; checks on the way that the GC right after the reopen
/// collects files and flushes nothing.
fn reopen_then_gc_ops(steps: &[Step], sync: bool, setup: Setup) -> (u64, u64) {
    let at = steps
        .iter()
        .position(|s| matches!(s, Step::Reopen(_)))
        .expect("a reopen");
    let Step::Reopen(exit) = steps[at] else {
        unreachable!()
    };
    assert!(matches!(steps[at + 1], Step::Gc), "a GC after the reopen");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let sim = setup.sim(&tmp.path().join("simfs-trash"), 90);
    let mut opts = setup.options(&dir);
    opts.sync_writes = sync;
    opts.fs = Fs::new(sim.clone());
    let session = Session {
        sim: sim.clone(),
        opts,
    };
    let (db, o) = run(session.open().expect("open"), &session, &steps[..at]);
    assert!(o.error.is_none(), "run before the reopen: {o:?}");
    let db = db.expect("open");
    assert!(
        db.stats().levels.iter().all(|&(tables, _)| tables == 0),
        "{setup:?}: a flush before the reopen (the WALs are to point into every sealed file)"
    );
    let before = sim.ops();
    let db = session.reopen(db, exit).expect("reopen without a cut");
    let wals = common::files_with_ext(&dir, "wal");
    let gc = db.run_value_log_gc(0.3).expect("GC");
    assert!(
        gc != sett::GcOutcome::NothingToCollect,
        "{setup:?}: the GC after the open collected nothing"
    );
    assert_eq!(
        common::files_with_ext(&dir, "wal"),
        wals,
        "{setup:?}: the GC of files sealed before the open flushed"
    );
    let (db, o) = run(db, &session, &steps[at + 2..]);
    assert!(o.error.is_none(), "run after the GC: {o:?}");
    let after = sim.ops();
    drop(db);
    (before, after)
}

/// The GC collects value-log files sealed before the open without a flush
/// (`GcState::note_opened`). That is safe only because the open flushed and
/// removed every WAL it replayed: a WAL left to a replay after a cut would
/// point into the collected file, and the replay would stop there, losing
/// every write after (as it does with the open keeping the replayed WALs
/// live). The power is cut at every operation from the reopen after a
/// killed process to the end of the writes after its GC, on both WAL paths.
#[test]
fn a_cut_in_a_gc_of_files_sealed_before_the_open_loses_no_acknowledged_write() {
    let steps = gc_after_a_reopen();
    let modes = [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
        CutMode::ReorderedPages,
    ];
    let mut t = Totals::default();
    for (setup, sync) in [(WRITE_PATH, true), (WRITE_PATH, false), (MAPPED, true)] {
        let setup = Setup {
            still: true,
            ..setup
        };
        let (before, after) = reopen_then_gc_ops(&steps, sync, setup);
        let cuts: Vec<u64> = (before + 1..=after).collect();
        cut_at(&mut t, &steps, sync, setup, 90, &cuts, &modes);
    }
    print_totals("GC after a reopen", &t);
    assert!(t.report.bytes_dropped > 0 && t.report.entries_reverted > 0);
}

/// A batch's own choice (`WriteBatch::set_sync`) overrides the Db's
/// `sync_writes`, and a cut shows it: an unsynced batch is lost whatever the
/// Db's setting, and a synced batch after it keeps both, on either WAL path.
#[test]
fn a_batch_that_chooses_its_own_sync_is_kept_or_lost_by_a_power_cut_as_it_chose() {
    // Separated, so that the value log's sync is part of what is checked.
    let big = vec![7u8; 64 << 10];
    for mapped in [false, true] {
        for db_sync in [false, true] {
            for then_sync in [false, true] {
                let what = format!(
                    "mapped WAL {mapped}, sync_writes {db_sync}, a synced batch after {then_sync}"
                );
                let tmp = tempfile::tempdir().expect("tempdir");
                let dir = tmp.path().join("db");
                let sim = Arc::new(
                    SimFs::new(tmp.path().join("simfs-trash"), 7).with_mapped_appends(mapped),
                );
                let mut opts = Options::new(&dir);
                opts.sync_writes = db_sync;
                opts.fs = Fs::new(sim.clone());
                let db = Db::open(opts).expect("open");
                let before = db.stats().wal_syncs;
                let mut first = WriteBatch::new();
                first.put(b"a", b"small").put(b"b", big.clone());
                first.set_sync(false);
                db.write(first).expect("the unsynced batch");
                assert_eq!(
                    db.stats().wal_syncs,
                    before,
                    "{what}: the unsynced batch fsynced the WAL"
                );
                if then_sync {
                    let mut second = WriteBatch::new();
                    second.put(b"c", b"last").set_sync(true);
                    db.write(second).expect("the synced batch");
                    assert_eq!(
                        db.stats().wal_syncs,
                        before + 1,
                        "{what}: the synced batch did not fsync"
                    );
                }
                // Before the Db closes (a close syncs).
                sim.power_off();
                drop(db);
                sim.power_cut(CutMode::DropUnsynced)
                    .unwrap_or_else(|e| panic!("{what}: applying the cut: {e}"));
                let db =
                    Db::open(Options::new(&dir)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
                let got = |k: &[u8]| db.get(k).unwrap_or_else(|e| panic!("{what}: get: {e}"));
                if then_sync {
                    assert_eq!(got(b"a").as_deref(), Some(&b"small"[..]), "{what}");
                    assert_eq!(got(b"b").as_deref(), Some(&big[..]), "{what}");
                    assert_eq!(got(b"c").as_deref(), Some(&b"last"[..]), "{what}");
                } else {
                    assert_eq!(
                        got(b"a"),
                        None,
                        "{what}: an unsynced write outlived the cut"
                    );
                    assert_eq!(
                        got(b"b"),
                        None,
                        "{what}: an unsynced write outlived the cut"
                    );
                }
            }
        }
    }
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
    for (seed, setup) in [(21u64, WRITE_PATH), (22, MAPPED)] {
        let steps = workload(seed, 60);
        for (kind, fault) in cases {
            for nth in [1u64, 2, 3, 5, 8, 13, 21, 34, 55] {
                let what = format!("seed {seed}, {setup:?}, {fault:?} at {kind:?} number {nth}");
                let plan = Plan {
                    kind: Some(kind),
                    nth,
                    fault,
                    mode: CutMode::DropUnsynced,
                    seed: seed ^ nth,
                    setup,
                    stop_after: None,
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

/// A killed process (`SimFs::pause`) leaves the files as the page cache
/// holds them, makes nothing more durable, and hides no planned cut.
#[test]
fn simfs_a_killed_process_leaves_the_page_cache_and_makes_nothing_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let sim = SimFs::new(tmp.path().join("trash"), 7);
    let fs: &dyn sett::fs::FileSystem = &sim;
    let path = dir.join("f");
    let mut f = fs.create_new(&path).unwrap();
    fs.append(&mut f, &path, b"synced").unwrap();
    fs.sync(&f, &path).unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.append(&mut f, &path, b" cached").unwrap();
    sim.fail(Some(OpKind::Sync), 1, Fault::PowerCut);
    assert!(sim.pause());
    let ops = sim.ops();
    assert!(fs.append(&mut f, &path, b" late").is_err());
    assert!(fs.sync(&f, &path).is_err());
    assert_eq!(sim.ops(), ops, "operations of the killed process counted");
    sim.resume();
    assert_eq!(std::fs::read(&path).unwrap(), b"synced cached");
    // The next process's first sync is the one the cut was planned at.
    assert!(fs.sync(&f, &path).is_err());
    assert!(sim.is_off());
    drop(f);
    sim.power_cut(CutMode::DropUnsynced).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"synced");

    // A kill after the power went leaves it off.
    sim.power_off();
    assert!(!sim.pause());
    sim.resume();
    assert!(fs.create_new(&dir.join("late")).is_err());
}

#[test]
fn simfs_restores_a_mapped_file_to_its_snapshot_at_the_last_sync() {
    use std::os::unix::fs::FileExt;
    const PAGE: u64 = 4096;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let sim = SimFs::new(tmp.path().join("trash"), 11).with_mapped_appends(true);
    let fs: &dyn sett::fs::FileSystem = &sim;
    assert!(fs.maps_appends());
    let path = dir.join("000001.wal");
    let mut f = fs.create_new(&path).unwrap();
    fs.append(&mut f, &path, b"header..........").unwrap();
    fs.sync(&f, &path).unwrap();
    fs.sync_dir(&dir).unwrap();
    // As the WAL does: zeros written ahead, records copied into a mapping
    // (which this layer never sees), then a sync.
    let rw = std::fs::File::options()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    rw.write_all_at(&vec![0; 3 * PAGE as usize - 16], 16)
        .unwrap();
    // SAFETY: the file is this test's own and stays 3 pages long while mapped.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&rw) }.unwrap();
    map[16..21].copy_from_slice(b"first");
    fs.sync(&f, &path).unwrap();
    map[PAGE as usize..PAGE as usize + 6].copy_from_slice(b"second");
    map[2 * PAGE as usize..2 * PAGE as usize + 5].copy_from_slice(b"third");
    drop(map);
    // Allocated further, never synced.
    rw.write_all_at(&vec![0; 2 * PAGE as usize], 3 * PAGE)
        .unwrap();
    drop((f, rw));
    let report = sim.power_cut(CutMode::DropUnsynced).unwrap();
    let got = std::fs::read(&path).unwrap();
    let mut want = vec![0u8; 3 * PAGE as usize];
    want[..16].copy_from_slice(b"header..........");
    want[16..21].copy_from_slice(b"first");
    assert!(
        got == want,
        "the cut did not restore the snapshot of the last sync (len {}, page 1 starts {:?})",
        got.len(),
        &got[PAGE as usize..PAGE as usize + 6.min(got.len() - PAGE as usize)]
    );
    assert_eq!(report.files_cut, 1);
}

#[test]
fn simfs_reordered_pages_keep_unsynced_pages_past_vanished_ones() {
    const PAGE: usize = 4096;
    let mut reordered = 0;
    for seed in 0..16 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let sim = SimFs::new(tmp.path().join("trash"), seed);
        let fs: &dyn sett::fs::FileSystem = &sim;
        let path = dir.join("000002.vlog");
        let mut f = fs.create_new(&path).unwrap();
        fs.append(&mut f, &path, &[b's'; PAGE + 100]).unwrap();
        fs.sync(&f, &path).unwrap();
        fs.sync_dir(&dir).unwrap();
        // Pages 1 (its unsynced part) to 6, each filled with its number.
        let mut tail = Vec::new();
        for p in 1..=6u8 {
            let from = if p == 1 {
                PAGE + 100
            } else {
                p as usize * PAGE
            };
            tail.extend(std::iter::repeat_n(
                b'0' + p,
                (p as usize + 1) * PAGE - from,
            ));
        }
        fs.append(&mut f, &path, &tail).unwrap();
        drop(f);
        let report = sim.power_cut(CutMode::ReorderedPages).unwrap();
        reordered += report.files_reordered;
        let got = std::fs::read(&path).unwrap();
        // Synced length, or the end of the last page that survived.
        assert!(got.len() == PAGE + 100 || got.len().is_multiple_of(PAGE));
        assert!(
            got[..PAGE + 100].iter().all(|&b| b == b's'),
            "synced data lost"
        );
        for p in 1..got.len().div_ceil(PAGE) {
            let from = if p == 1 { PAGE + 100 } else { p * PAGE };
            let page = &got[from..((p + 1) * PAGE).min(got.len())];
            let whole = |b: u8| page.iter().all(|&x| x == b);
            assert!(
                whole(b'0' + p as u8) || whole(0),
                "seed {seed}: page {p} is neither what was written nor zeros"
            );
        }
    }
    assert!(reordered > 0, "no seed kept a page past a vanished one");
}

#[test]
fn simfs_failed_sync_of_a_mapped_file_loses_the_dirty_bytes_and_keeps_the_synced_ones() {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    for mode in [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
        CutMode::ReorderedPages,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let sim = SimFs::new(tmp.path().join("trash"), 5).with_mapped_appends(true);
        let fs: &dyn sett::fs::FileSystem = &sim;
        let path = dir.join("000001.wal");
        let mut f = fs.create_new(&path).unwrap();
        fs.append(&mut f, &path, b"header..........").unwrap();
        fs.sync(&f, &path).unwrap();
        fs.sync_dir(&dir).unwrap();
        let rw = std::fs::File::options().write(true).open(&path).unwrap();
        rw.write_all_at(&[0; 2 * PAGE - 16], 16).unwrap();
        fs.sync(&f, &path).unwrap();
        // A record in the header's page, whose write-back fails.
        rw.write_all_at(b"record", 16).unwrap();
        sim.fail(Some(OpKind::Sync), 1, Fault::SyncFails);
        assert!(fs.sync(&f, &path).is_err());
        fs.sync(&f, &path).unwrap();
        drop((f, rw));
        sim.power_cut(mode).unwrap();
        let got = std::fs::read(&path).unwrap();
        let mut want = vec![0u8; 2 * PAGE];
        want[..16].copy_from_slice(b"header..........");
        assert!(
            got == want,
            "{mode:?}: after a failed sync the page holds {:?}",
            String::from_utf8_lossy(&got[..22.min(got.len())])
        );
    }
}
