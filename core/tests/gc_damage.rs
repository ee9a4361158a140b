//! Value-log GC over damaged files: a damaged entry that is garbage costs
//! nothing, a damaged live entry is a corruption error naming its file and
//! offset (the file stays, the Db goes on), and no collection ever deletes a
//! file whose live entries it has not all moved.

mod common;

use common::{copy_dir, files_with_ext, flip_byte, value_for};
use sett::{Db, Error, GcOutcome, Options};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The scenario of a user who found the hole: 5000 keys of 1000 bytes, every
/// second one overwritten, flattened and closed.
fn user_options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.value_threshold = 64;
    o.vlog_file_size = 1 << 20;
    o.vlog_gc_ratio = 0.0;
    o
}

fn user_value(k: u64) -> Vec<u8> {
    let key = format!("key{k:05}");
    value_for(key.as_bytes(), 1 + u64::from(k.is_multiple_of(2)), 1000)
}

/// Every key reads its newest value; returns how many do not, and the first few.
fn wrong_keys(db: &Db, keys: u64, value: impl Fn(u64) -> Vec<u8>) -> (usize, Vec<(u64, String)>) {
    let mut wrong = Vec::new();
    for k in 0..keys {
        let key = format!("key{k:05}");
        match db.get(key.as_bytes()) {
            Ok(Some(v)) if v == value(k) => {}
            Ok(other) => wrong.push((k, format!("{:?} bytes", other.map(|v| v.len())))),
            Err(e) => wrong.push((k, e.to_string())),
        }
    }
    let n = wrong.len();
    wrong.truncate(3);
    (n, wrong)
}

/// Runs manual GC at `ratio` until it has nothing left to collect; returns
/// the corruption errors it met (each round that met one is retried: a
/// damaged file is left out of later rounds).
fn gc_to_the_end(db: &Db, ratio: f64) -> Vec<Error> {
    let mut errors = Vec::new();
    for _ in 0..1000 {
        match db.run_value_log_gc(ratio) {
            Ok(GcOutcome::NothingToCollect) => return errors,
            Ok(_) => {}
            Err(e) if e.is_corruption() => errors.push(e),
            Err(e) => panic!("GC failed: {e}"),
        }
    }
    panic!("GC did not settle in 1000 rounds");
}

fn oldest_sealed_vlog(dir: &Path) -> PathBuf {
    let vlogs = files_with_ext(dir, "vlog");
    assert!(vlogs.len() >= 2, "no sealed value-log file: {vlogs:?}");
    vlogs[0].clone()
}

#[test]
fn a_flipped_byte_in_a_dead_value_log_entry_costs_no_live_key_under_gc() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(user_options(dir.path())).unwrap();
        for k in 0..5000u64 {
            let key = format!("key{k:05}");
            db.put(key.as_bytes(), &value_for(key.as_bytes(), 1, 1000))
                .unwrap();
        }
        for k in (0..5000u64).step_by(2) {
            let key = format!("key{k:05}");
            db.put(key.as_bytes(), &user_value(k)).unwrap();
        }
        db.flatten().unwrap();
        db.close().unwrap();
    }
    let file = oldest_sealed_vlog(dir.path());
    // A byte in the middle of key00048's first version, which was overwritten.
    let (offset, len, _) = entries(&file)
        .into_iter()
        .find(|(_, _, key)| key == b"key00048")
        .expect("key00048's first version is in the oldest file");
    flip_byte(&file, offset + len / 2);
    let db = Db::open(user_options(dir.path())).unwrap();
    assert_eq!(wrong_keys(&db, 5000, user_value), (0, vec![]));
    let errors = gc_to_the_end(&db, 0.3);
    assert!(errors.is_empty(), "the damage was garbage: {errors:?}");
    assert!(!file.exists(), "the damaged file was collected");
    assert_eq!(wrong_keys(&db, 5000, user_value), (0, vec![]));
    db.verify().unwrap();
    db.close().unwrap();
    let db = Db::open(user_options(dir.path())).unwrap();
    assert_eq!(
        wrong_keys(&db, 5000, user_value),
        (0, vec![]),
        "after a reopen"
    );
}

/// A small database whose oldest sealed value-log file holds live and dead
/// entries interleaved: keys written twice, every third overwritten, one in
/// seven deleted.
const KEYS: u64 = 240;
const VALUE_LEN: usize = 300;

fn sweep_options(dir: &Path) -> Options {
    let mut o = common::tiny_options(dir);
    o.vlog_file_size = 16 << 10;
    o.vlog_gc_ratio = 0.0;
    o
}

fn sweep_value(k: u64) -> Option<Vec<u8>> {
    let key = format!("key{k:05}");
    if k % 7 == 3 {
        None
    } else if k.is_multiple_of(3) {
        Some(value_for(key.as_bytes(), 2, VALUE_LEN))
    } else {
        Some(value_for(key.as_bytes(), 1, VALUE_LEN))
    }
}

fn build_sweep_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(sweep_options(dir.path())).unwrap();
    for k in 0..KEYS {
        let key = format!("key{k:05}");
        db.put(key.as_bytes(), &value_for(key.as_bytes(), 1, VALUE_LEN))
            .unwrap();
    }
    for k in 0..KEYS {
        let key = format!("key{k:05}");
        if k % 7 == 3 {
            db.delete(key.as_bytes()).unwrap();
        } else if k.is_multiple_of(3) {
            db.put(key.as_bytes(), &value_for(key.as_bytes(), 2, VALUE_LEN))
                .unwrap();
        }
    }
    db.flatten().unwrap();
    db.close().unwrap();
    dir
}

/// The entries of a value-log file as (offset, length, key), read by its
/// format (core/FORMAT.md): a 16-byte header, then crc, klen, vlen, key, value.
fn entries(path: &Path) -> Vec<(u64, u64, Vec<u8>)> {
    let data = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 16usize;
    while at + 12 <= data.len() {
        let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize;
        let (klen, vlen) = (u32_at(at + 4), u32_at(at + 8));
        let len = 12 + klen + vlen;
        if at + len > data.len() {
            break;
        }
        out.push((
            at as u64,
            len as u64,
            data[at + 12..at + 12 + klen].to_vec(),
        ));
        at += len;
    }
    out
}

/// What the maintenance step after the damage is.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `run_value_log_gc` until nothing is left to collect.
    ManualGc,
    /// The background GC, on, until the damaged file is gone or given up.
    BackgroundGc,
    /// Flatten (a full compaction), then GC.
    FlattenThenGc,
    /// Rounds of the idle tier (`run_idle_gc_round`: a walk, then moves in
    /// key order) until one collects nothing.
    IdleGc,
    /// A backup of everything restored into a new Db, and a checkpoint opened.
    BackupAndCheckpoint,
}

/// Flips a byte inside entry `victim` of the oldest sealed file of a copy of
/// `clean`, runs `step`, and checks: every key whose value was intact reads
/// right, the damaged value (if live) is a corruption error naming the file
/// and its offset, and nothing is missing, after a reopen too.
fn damage_and_check(clean: &Path, victim: usize, step: Step) {
    let dir = copy_dir(clean);
    let file = oldest_sealed_vlog(dir.path());
    let all = entries(&file);
    let (offset, len, key) = all[victim].clone();
    // A byte of the value, of the key, or of the header, by turns.
    let inside = match victim % 3 {
        0 => len - 1,
        1 => 12,
        _ => 5,
    };
    flip_byte(&file, offset + inside);
    let damaged_key = String::from_utf8(key).unwrap();
    let damaged_k: u64 = damaged_key[3..].parse().unwrap();
    let mut o = sweep_options(dir.path());
    match step {
        Step::BackgroundGc => {
            o.vlog_gc_ratio = 0.01;
            o.vlog_gc_idle_ratio = 0.01;
        }
        // (The background GC runs the idle tier too: both see the damage.)
        Step::IdleGc => {
            o.vlog_gc_ratio = 0.99;
            o.vlog_gc_idle_ratio = 0.01;
        }
        _ => {}
    }
    let db = Db::open(o).unwrap();
    // Whether the damaged entry is the key's live value.
    let live = match db.get(damaged_key.as_bytes()) {
        Err(e) => {
            let Error::Corruption {
                file: f, offset: o, ..
            } = &e
            else {
                panic!("reading the damaged value: {e}");
            };
            assert_eq!((f, *o), (&file, offset), "{e}");
            true
        }
        Ok(v) => {
            assert_eq!(v, sweep_value(damaged_k), "{damaged_key}");
            false
        }
    };
    let check = |db: &Db, when: &str| {
        for k in 0..KEYS {
            let key = format!("key{k:05}");
            let got = db.get(key.as_bytes());
            if live && k == damaged_k {
                match got {
                    Err(Error::Corruption {
                        file: f, offset: o, ..
                    }) => assert_eq!(
                        (f.file_name(), o),
                        (file.file_name(), offset),
                        "{when}: {key}"
                    ),
                    other => panic!("{when}: {key}, damaged and live, read {other:?}"),
                }
            } else {
                let got = got.unwrap_or_else(|e| panic!("{when}: {key}: {e}"));
                assert_eq!(got, sweep_value(k), "{when}: {key}");
            }
        }
    };
    match step {
        Step::ManualGc => {
            let errors = gc_to_the_end(&db, 0.01);
            assert_eq!(errors.len(), usize::from(live), "{errors:?}");
            for e in &errors {
                let Error::Corruption {
                    file: f, offset: o, ..
                } = e
                else {
                    unreachable!()
                };
                assert_eq!((f, *o), (&file, offset), "{e}");
            }
            assert_eq!(file.exists(), live, "only a damaged live file stays");
        }
        Step::BackgroundGc => {
            // Garbage-only damage: the file goes. Live damage: the GC
            // counts the file as damaged and leaves it.
            let deadline = Instant::now() + Duration::from_secs(20);
            while if live {
                db.stats().gc_damaged_files == 0
            } else {
                file.exists()
            } {
                assert!(
                    Instant::now() < deadline,
                    "the background GC did not reach the damaged file: {:?}",
                    db.stats()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(file.exists(), live);
        }
        Step::IdleGc => {
            // The idle tier counts damage (`gc_damaged_files`) and goes on
            // with the other files; it returns no error for it.
            let mut rounds = 0;
            while !db.run_idle_gc_round().unwrap().is_empty() {
                rounds += 1;
                assert!(rounds < 1000, "the idle tier did not settle");
            }
            assert_eq!(file.exists(), live, "only a damaged live file stays");
            assert_eq!(db.stats().gc_damaged_files, u64::from(live));
        }
        Step::FlattenThenGc => {
            db.flatten().unwrap();
            let errors = gc_to_the_end(&db, 0.01);
            assert_eq!(errors.len(), usize::from(live), "{errors:?}");
        }
        Step::BackupAndCheckpoint => {
            let mut backup = Vec::new();
            match db.backup(&mut backup, 0) {
                Ok(_) => {
                    assert!(!live, "a backup read the damaged live value");
                    let restored = tempfile::tempdir().unwrap();
                    let r = Db::open(sweep_options(restored.path())).unwrap();
                    r.load(&mut backup.as_slice()).unwrap();
                    check(&r, "restored");
                }
                Err(e) => {
                    assert!(live, "backup failed on garbage: {e}");
                    let Error::Corruption {
                        file: f, offset: o, ..
                    } = &e
                    else {
                        panic!("backup: {e}");
                    };
                    assert_eq!((f, *o), (&file, offset), "{e}");
                }
            }
            let cp = tempfile::tempdir().unwrap();
            let target = cp.path().join("cp");
            db.checkpoint(&target).unwrap();
            let c = Db::open(sweep_options(&target)).unwrap();
            check(&c, "checkpoint");
        }
    }
    check(&db, "after the step");
    match db.verify() {
        Ok(_) => assert!(!live, "verify missed the damaged live value"),
        Err(e) => assert!(live && e.is_corruption(), "verify: {e}"),
    }
    db.close().unwrap();
    let db = Db::open(sweep_options(dir.path())).unwrap();
    check(&db, "after a reopen");
}

fn sweep(step: Step) {
    let clean = build_sweep_db();
    let n = entries(&oldest_sealed_vlog(clean.path())).len();
    assert!(n >= 20, "{n} entries in the oldest file");
    for victim in 0..n {
        damage_and_check(clean.path(), victim, step);
    }
}

#[test]
fn damage_at_every_entry_of_a_sealed_file_then_manual_gc_loses_nothing() {
    sweep(Step::ManualGc);
}

#[test]
fn damage_at_every_entry_of_a_sealed_file_then_background_gc_loses_nothing() {
    sweep(Step::BackgroundGc);
}

#[test]
fn damage_at_every_entry_of_a_sealed_file_then_idle_gc_in_key_order_loses_nothing() {
    sweep(Step::IdleGc);
}

#[test]
fn damage_at_every_entry_of_a_sealed_file_then_flatten_and_gc_loses_nothing() {
    sweep(Step::FlattenThenGc);
}

#[test]
fn damage_at_every_entry_of_a_sealed_file_then_backup_and_checkpoint_lose_nothing() {
    sweep(Step::BackupAndCheckpoint);
}
