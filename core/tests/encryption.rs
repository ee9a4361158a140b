//! Encryption at rest: what is written reads back through every path that
//! moves it (flush, compaction, value-log GC, reopen, checkpoint, key
//! rotation); no file of the directory holds it in plaintext; a wrong or
//! missing key is a clear error that loses nothing; damage is still found.

mod common;

use common::{files_with_ext, flip_byte, tiny_options, value_for};
use sett::{Db, Encryption, EncryptionKey, Error, GcOutcome, IterOptions, Options};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

const KEY: [u8; 32] = [0x5a; 32];
const OTHER_KEY: [u8; 32] = [0xa5; 32];
/// A value no file may hold in plaintext.
const MARKER: &[u8] = b"PLAINTEXT-MARKER-8d1f";

fn encrypted(dir: &Path, key: [u8; 32]) -> Options {
    let mut o = tiny_options(dir);
    o.memtable_size = 32 << 10;
    o.vlog_file_size = 64 << 10;
    o.vlog_gc_ratio = 0.0;
    o.encryption = Some(Encryption::new(EncryptionKey::new(key)));
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Values below and above the value threshold (inline and in the value log).
fn value(i: u64, round: u64) -> Vec<u8> {
    let k = key(i);
    value_for(&k, round, if i.is_multiple_of(3) { 20 } else { 700 })
}

fn write(db: &Db, n: u64, round: u64, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    for i in 0..n {
        let v = value(i, round);
        db.put(&key(i), &v).unwrap();
        model.insert(key(i), v);
    }
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, what: &str) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "{what}: {}",
            String::from_utf8_lossy(k)
        );
    }
    let scanned: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(&scanned, model, "{what}: scan");
}

/// The data-key ids named by the encryption prefixes of the files in `dir`.
fn key_ids(dir: &Path) -> BTreeSet<u32> {
    let mut ids = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        if data.len() >= 16 && &data[..8] == b"SETTENC\0" {
            ids.insert(u32::from_le_bytes(data[12..16].try_into().unwrap()));
        }
    }
    ids
}

/// Every file of `dir` but the key registry starts with an encryption prefix.
fn assert_all_encrypted(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.ends_with("KEYREGISTRY") {
            continue;
        }
        let d = std::fs::read(&path).unwrap();
        assert!(d.starts_with(b"SETTENC\0"), "{path:?} is not encrypted");
    }
}

/// The files of `dir` that hold `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if data.windows(needle.len()).any(|w| w == needle) {
            out.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn encrypted_data_reads_back_across_flush_compaction_value_log_gc_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        for round in 0..4 {
            write(&db, 300, round, &mut model);
        }
        check(&db, &model, "before flush");
        db.flush().unwrap();
        db.flatten().unwrap();
        check(&db, &model, "after compaction");
        let mut collected = 0;
        loop {
            match db.run_value_log_gc(0.5).unwrap() {
                GcOutcome::NothingToCollect => break,
                _ => collected += 1,
            }
        }
        assert!(
            collected > 0,
            "the overwrites left value-log garbage to collect"
        );
        check(&db, &model, "after value-log GC");
        db.verify().unwrap();
        // Unflushed writes too: they come back from the WAL.
        write(&db, 50, 9, &mut model);
        db.close().unwrap();
    }
    assert!(!files_with_ext(dir.path(), "sst").is_empty());
    assert!(!files_with_ext(dir.path(), "vlog").is_empty());
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "after reopen");
    db.verify().unwrap();
}

/// Every file (WAL and value log while the data is unflushed, tables and
/// manifest after) is scanned for a value and a key written; the same writes
/// without encryption show the scan finds them.
#[test]
fn no_file_of_an_encrypted_directory_holds_a_written_key_or_value_in_plaintext() {
    for encrypt in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = encrypted(dir.path(), KEY);
        o.sync_writes = true;
        if !encrypt {
            o.encryption = None;
        }
        let db = Db::open(o).unwrap();
        let mut big = MARKER.to_vec();
        big.resize(600, b'.');
        for i in 0..40u64 {
            let k = [MARKER, format!("-{i}").as_bytes()].concat();
            db.put(&k, if i % 2 == 0 { MARKER } else { &big }).unwrap();
        }
        let unflushed = files_holding(dir.path(), MARKER);
        db.flush().unwrap();
        db.flatten().unwrap();
        db.close().unwrap();
        let flushed = files_holding(dir.path(), MARKER);
        if encrypt {
            assert!(unflushed.is_empty(), "plaintext in {unflushed:?}");
            assert!(flushed.is_empty(), "plaintext in {flushed:?}");
        } else {
            assert!(
                unflushed.iter().any(|f| f.ends_with(".wal")),
                "{unflushed:?}"
            );
            assert!(flushed.iter().any(|f| f.ends_with(".sst")), "{flushed:?}");
            assert!(flushed.iter().any(|f| f.ends_with(".vlog")), "{flushed:?}");
        }
    }
}

#[test]
fn a_wrong_master_key_is_refused_and_the_right_one_still_opens_every_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 200, 0, &mut model);
        db.flush().unwrap();
        write(&db, 20, 1, &mut model);
        db.close().unwrap();
    }
    for _ in 0..2 {
        match Db::open(encrypted(dir.path(), OTHER_KEY)) {
            Err(Error::WrongEncryptionKey(path)) => {
                assert!(path.ends_with("KEYREGISTRY"), "{path:?}")
            }
            Err(e) => panic!("wrong key: {e}"),
            Ok(_) => panic!("a wrong key opened the database"),
        }
    }
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "right key after wrong ones");
}

#[test]
fn an_encrypted_database_opened_without_a_key_is_refused_and_opens_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 100, 0, &mut model);
        db.close().unwrap();
    }
    let mut plain = encrypted(dir.path(), KEY);
    plain.encryption = None;
    let err = Db::open(plain.clone())
        .err()
        .expect("opened without its key");
    assert!(matches!(err, Error::EncryptionKeyRequired(_)), "{err}");
    plain.read_only = true;
    let err = Db::open(plain)
        .err()
        .expect("opened read-only without its key");
    assert!(matches!(err, Error::EncryptionKeyRequired(_)), "{err}");
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "with its key");
}

#[test]
fn an_unencrypted_database_opened_with_a_key_is_refused_and_opens_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let mut plain = encrypted(dir.path(), KEY);
    plain.encryption = None;
    {
        let db = Db::open(plain.clone()).unwrap();
        write(&db, 100, 0, &mut model);
        db.close().unwrap();
    }
    let err = Db::open(encrypted(dir.path(), KEY))
        .err()
        .expect("a plain database opened with a key");
    assert!(matches!(err, Error::NotEncrypted(_)), "{err}");
    assert!(!dir.path().join("KEYREGISTRY").exists());
    let db = Db::open(plain).unwrap();
    check(&db, &model, "without a key");
}

#[test]
fn rotation_on_demand_leaves_files_of_both_keys_readable_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 200, 0, &mut model);
        db.flush().unwrap();
        assert_eq!(key_ids(dir.path()), BTreeSet::from([1]));
        assert_eq!(db.rotate_encryption_key().unwrap(), 2);
        for i in 200..400 {
            let v = value(i, 1);
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
        check(&db, &model, "after rotation");
        db.close().unwrap();
    }
    assert_eq!(key_ids(dir.path()), BTreeSet::from([1, 2]));
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "reopened after rotation");
    // Compaction rewrites the old key's tables under the newest key.
    db.flatten().unwrap();
    check(&db, &model, "after compaction");
    let tables: BTreeSet<u32> = files_with_ext(dir.path(), "sst")
        .iter()
        .map(|p| {
            let d = std::fs::read(p).unwrap();
            u32::from_le_bytes(d[12..16].try_into().unwrap())
        })
        .collect();
    assert_eq!(
        tables,
        BTreeSet::from([2]),
        "compacted tables use the newest key"
    );
}

#[test]
fn rotation_by_age_gives_files_created_after_the_period_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let mut o = encrypted(dir.path(), KEY);
    o.encryption =
        Some(Encryption::new(EncryptionKey::new(KEY)).rotation(Duration::from_millis(300)));
    {
        let db = Db::open(o.clone()).unwrap();
        write(&db, 100, 0, &mut model);
        db.flush().unwrap();
        std::thread::sleep(Duration::from_millis(400));
        write(&db, 100, 1, &mut model);
        db.flush().unwrap();
        db.close().unwrap();
    }
    let ids = key_ids(dir.path());
    assert!(ids.len() >= 2, "one key for every file: {ids:?}");
    let db = Db::open(o).unwrap();
    check(&db, &model, "reopened after rotation by age");
}

#[test]
fn a_checkpoint_of_an_encrypted_database_opens_with_the_same_key_only() {
    let dir = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let cp = target.path().join("cp");
    let mut model = BTreeMap::new();
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    write(&db, 200, 0, &mut model);
    db.flush().unwrap();
    db.rotate_encryption_key().unwrap();
    write(&db, 30, 1, &mut model);
    db.checkpoint(&cp).unwrap();
    db.close().unwrap();
    assert!(cp.join("KEYREGISTRY").exists());
    assert!(!files_with_ext(&cp, "sst").is_empty());
    assert_all_encrypted(&cp);
    let err = Db::open(encrypted(&cp, OTHER_KEY))
        .err()
        .expect("opened with a wrong key");
    assert!(matches!(err, Error::WrongEncryptionKey(_)), "{err}");
    let copy = Db::open(encrypted(&cp, KEY)).unwrap();
    check(&copy, &model, "checkpoint");
}

#[test]
fn a_flipped_byte_in_an_encrypted_table_or_value_log_file_is_corruption_never_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 200, 0, &mut model);
        db.flush().unwrap();
        db.flatten().unwrap();
        db.close().unwrap();
    }
    let clean = common::copy_dir(dir.path());
    for ext in ["sst", "vlog"] {
        let damaged = common::copy_dir(clean.path());
        let files = files_with_ext(damaged.path(), ext);
        let victim = files.first().expect("a file to damage");
        // A byte of the first block or entry, past the 4 KiB prefix and the
        // value-log file's header.
        flip_byte(victim, 4096 + 40);
        // Open reads only the tables' ends and the files' headers.
        let db = Db::open(encrypted(damaged.path(), KEY)).unwrap();
        let mut errors = 0;
        for (k, v) in &model {
            match db.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), Some(v), "{ext}: a damaged value came back"),
                Err(e) => {
                    assert!(e.is_corruption(), "{ext}: {e}");
                    errors += 1;
                }
            }
        }
        assert!(errors > 0, "{ext}: the damage went unnoticed");
        let err = db.verify().expect_err("verify finds the damage");
        assert!(err.is_corruption(), "{ext}: {err}");
    }
}

#[test]
fn a_damaged_key_registry_is_corruption_not_a_wrong_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 50, 0, &mut model);
        db.close().unwrap();
    }
    let registry = dir.path().join("KEYREGISTRY");
    let good = std::fs::read(&registry).unwrap();
    flip_byte(&registry, 40);
    let err = Db::open(encrypted(dir.path(), KEY))
        .err()
        .expect("opened a damaged registry");
    assert!(err.is_corruption(), "{err}");
    std::fs::write(&registry, good).unwrap();
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "registry restored");
}

#[test]
fn the_master_key_is_not_printed_by_debug() {
    let o = encrypted(Path::new("/nonexistent"), KEY);
    let shown = format!("{o:?}");
    assert!(shown.contains("EncryptionKey(..)"), "{shown}");
    assert!(!shown.contains("90, 90"), "{shown}");
    assert!(!shown.to_lowercase().contains("5a5a"), "{shown}");
}

#[test]
fn rotating_a_database_without_encryption_is_an_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = encrypted(dir.path(), KEY);
    o.encryption = None;
    let db = Db::open(o).unwrap();
    db.put(b"k", b"v").unwrap();
    let err = db.rotate_encryption_key().expect_err("rotated nothing");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Compaction walks an encrypted table by positional reads: the blocks it
/// decrypts must not push the readers' blocks out of the cache, as a walk
/// of a mapped table does not.
#[test]
fn compaction_of_encrypted_tables_leaves_the_block_cache_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = encrypted(dir.path(), KEY);
    o.value_threshold = 4096; // every value in the tables
    o.memtable_size = 256 << 10;
    let db = Db::open(o).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3 {
        for i in 0..3000u64 {
            let v = value_for(&key(i), round, 300);
            db.put(&key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    let table_bytes: u64 = db.stats().levels.iter().map(|l| l.1).sum();
    let before = db.stats().cache_usage;
    db.flatten().unwrap();
    let grown = db.stats().cache_usage.saturating_sub(before);
    assert!(
        grown < table_bytes / 4,
        "compaction cached {grown} bytes of {table_bytes} bytes of tables"
    );
    check(&db, &model, "after compaction");
}

#[test]
fn a_read_only_open_and_its_checkpoint_read_an_encrypted_database_with_unflushed_writes() {
    let dir = tempfile::tempdir().unwrap();
    let target = tempfile::tempdir().unwrap();
    let cp = target.path().join("cp");
    let mut model = BTreeMap::new();
    let mut o = encrypted(dir.path(), KEY);
    o.memtable_size = 1 << 20; // the last writes stay in the WAL
    {
        let db = Db::open(o.clone()).unwrap();
        write(&db, 100, 0, &mut model);
        db.flush().unwrap();
        write(&db, 50, 1, &mut model);
        db.sync().unwrap();
        // Dropped without close: the WAL holds the last writes.
    }
    assert!(!files_with_ext(dir.path(), "wal").is_empty());
    let mut ro = o.clone();
    ro.read_only = true;
    let db = Db::open(ro).unwrap();
    check(&db, &model, "read-only");
    let err = db.rotate_encryption_key().expect_err("rotated read-only");
    assert!(matches!(err, Error::ReadOnly), "{err}");
    db.checkpoint(&cp).unwrap();
    drop(db);
    assert_all_encrypted(&cp);
    assert!(
        !files_with_ext(&cp, "wal").is_empty(),
        "the WALs were copied"
    );
    let copy = Db::open(encrypted(&cp, KEY)).unwrap();
    check(&copy, &model, "checkpoint of a read-only open");
}

#[test]
fn a_key_registry_of_a_newer_version_is_refused_as_unsupported_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    {
        let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
        write(&db, 50, 0, &mut model);
        db.close().unwrap();
    }
    let registry = dir.path().join("KEYREGISTRY");
    let good = std::fs::read(&registry).unwrap();
    let mut newer = good.clone();
    newer[8..12].copy_from_slice(&2u32.to_le_bytes());
    let body = newer.len() - 4;
    let crc = crc32_ieee(&newer[..body]);
    newer[body..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&registry, &newer).unwrap();
    match Db::open(encrypted(dir.path(), KEY)) {
        Err(Error::UnsupportedVersion { found: 2, .. }) => {}
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a registry of version 2 opened"),
    }
    std::fs::write(&registry, good).unwrap();
    let db = Db::open(encrypted(dir.path(), KEY)).unwrap();
    check(&db, &model, "registry restored");
}

/// CRC-32/IEEE, bit by bit (the tests do not depend on crc32fast).
fn crc32_ieee(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
