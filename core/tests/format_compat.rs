//! Format compatibility: databases written by earlier builds, checked into
//! `core/tests/fixtures/`, must open and hold exactly what they were written
//! with. A change to any on-disk format that this build cannot read fails here.
//!
//! `wal1` was written by commit 1d2478b (WAL format 1, before the synced offset
//! of format 2), `wal2` by commit 85cb064 (WAL format 2, before format 3's
//! zero-filled tail), `wal3` by commit 6dea361 (WAL format 3, before format
//! 4's link to the previous WAL), `wal4` by commit ff28033 (WAL format 4,
//! before format 5's records with versions per entry). All hold the same content: tables on several levels, a
//! value log with separated values, overwritten and deleted keys, expired TTLs,
//! and a last part left only in its WAL (the process did not close the Db). To write a fixture with the build at
//! hand: `SETT_WRITE_FIXTURE=/path cargo test -p sett --test format_compat --
//! --ignored write_fixture`.

mod common;

use sett::{Clock, Db, IterOptions, Options, PutOptions, WriteBatch};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.value_threshold = 64;
    o.memtable_size = 8 << 10;
    o.block_size = 512;
    o.table_size = 8 << 10;
    o.level_base_size = 32 << 10;
    o.level_multiplier = 4;
    o.num_levels = 5;
    o.vlog_file_size = 32 << 10;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

fn value(i: u64, version: u64) -> Vec<u8> {
    // Both sides of the 64-byte threshold.
    let len = if i.is_multiple_of(3) { 150 } else { 20 };
    let mut v = format!("{i}:{version}:").into_bytes();
    while v.len() < len {
        v.push(b'a' + (v.len() % 26) as u8);
    }
    v
}

/// Writes the fixture's content into `dir`, returning what it must hold. The
/// last part stays in the WAL: the Db is leaked, not closed.
fn write_fixture(dir: &Path) -> Model {
    let mut model = Model::new();
    let mut o = options(dir);
    // TTLs against a clock long past: expired at any later open.
    o.clock = Clock::manual(Arc::new(AtomicU64::new(1_000_000)));
    o.sync_writes = true;
    let db = Db::open(o).expect("open the fixture directory");
    for i in 0..400 {
        db.put(&key(i), &value(i, 1)).unwrap();
        model.insert(key(i), value(i, 1));
    }
    db.flatten().unwrap();
    for i in (0..400).step_by(2) {
        db.put(&key(i), &value(i, 2)).unwrap();
        model.insert(key(i), value(i, 2));
    }
    for i in (0..400).step_by(7) {
        db.delete(&key(i)).unwrap();
        model.remove(&key(i));
    }
    let ttl = PutOptions {
        ttl: Some(Duration::from_secs(5)),
        ..PutOptions::default()
    };
    for i in (1..400).step_by(13) {
        db.put_with(&key(i), &value(i, 3), ttl).unwrap();
        model.remove(&key(i));
    }
    db.flush().unwrap();
    // No compaction under way when the process leaves: the fixture's files
    // are the same on every run of this function.
    loop {
        let s = db.stats();
        if s.compactions_pending == 0 && s.compactions_running == 0 && s.immutable_memtables == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // Left in the WAL and the value log only.
    let mut b = WriteBatch::new();
    for i in 400..440 {
        b.put(key(i), value(i, 4));
        model.insert(key(i), value(i, 4));
    }
    b.delete(key(3));
    model.remove(&key(3));
    db.write(b).unwrap();
    std::mem::forget(db);
    model
}

/// The model of `write_fixture` without writing anything.
fn fixture_model() -> Model {
    let tmp = tempfile::tempdir().unwrap();
    write_fixture(&tmp.path().join("model"))
}

fn scan(db: &Db) -> Model {
    db.iter(IterOptions::default())
        .and_then(|it| it.collect::<sett::Result<Model>>())
        .expect("scan the fixture")
}

fn check_fixture(name: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    assert!(src.is_dir(), "fixture {} is missing", src.display());
    let want = fixture_model();
    let tmp = common::copy_dir(&src);
    let dir = tmp.path();

    let mut ro = options(dir);
    ro.read_only = true;
    let db = Db::open(ro).unwrap_or_else(|e| panic!("{name}: read-only open: {e}"));
    assert!(scan(&db) == want, "{name}: read-only open holds other data");
    drop(db);

    let db = Db::open(options(dir)).unwrap_or_else(|e| panic!("{name}: open: {e}"));
    let got = scan(&db);
    assert_eq!(got.len(), want.len(), "{name}: key count");
    assert!(got == want, "{name}: the data differ from what was written");
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name}: get {k:?}");
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{name}: verify: {e}"));
    db.close().unwrap();
    // Rewritten by this build (the WAL replayed into a table): still the same.
    let db = Db::open(options(dir)).unwrap();
    assert!(scan(&db) == want, "{name}: data changed after a reopen");
    db.close().unwrap();
}

#[test]
fn a_database_written_with_wal_format_1_opens_with_its_data() {
    check_fixture("wal1");
}

#[test]
fn a_database_written_with_wal_format_2_opens_with_its_data() {
    check_fixture("wal2");
}

#[test]
fn a_database_written_with_wal_format_3_opens_with_its_data() {
    check_fixture("wal3");
}

#[test]
fn a_database_written_with_wal_format_4_opens_with_its_data() {
    check_fixture("wal4");
}

#[test]
#[ignore = "writes a fixture: run by hand with SETT_WRITE_FIXTURE"]
fn write_fixture_into_dir() {
    let dir = std::env::var("SETT_WRITE_FIXTURE").expect("SETT_WRITE_FIXTURE=dir");
    let dir = Path::new(&dir);
    assert!(!dir.exists(), "{} exists", dir.display());
    write_fixture(dir);
}
