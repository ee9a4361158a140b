//! A read that the device cannot serve from a table or a sealed value-log file
//! is an error of that read, never a SIGBUS that kills the process, and never
//! a wrong value; the rest of the data stays readable and writes go on. The
//! fault is made the way the kernel makes it for a failing device: the file is
//! cut short under its open descriptors and mapping, so its pages can no
//! longer be filled. Point reads and user scans read by positional reads (a
//! short read is a corruption error naming the file); verify and compaction
//! read the mapping (SIGBUS on access, as for EIO): without `read_guard` the
//! verify below dies with SIGBUS instead of failing.

mod common;

use common::{files_with_ext, tiny_options, value_for};
use sett::{Db, IterOptions};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

const KEYS: u64 = 1500;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// A database of KEYS keys, reopened so that every table and every value-log
/// file but the head is read through a mapping. `len` picks inline (below the
/// value threshold of 64) or separated values.
fn populated(dir: &Path, len: usize) -> Db {
    let db = Db::open(tiny_options(dir)).unwrap();
    for i in 0..KEYS {
        let k = key(i);
        db.put(&k, &value_for(&k, 1, len)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    Db::open(tiny_options(dir)).unwrap()
}

fn cut_to_nothing(path: &PathBuf) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(0)
        .unwrap();
}

/// Reads every key: each is its value or an I/O error, never another value.
/// Returns (found, I/O errors).
fn read_all(db: &Db, len: usize) -> (u64, u64) {
    let (mut found, mut failed) = (0, 0);
    for i in 0..KEYS {
        let k = key(i);
        match db.get(&k) {
            Ok(Some(v)) => {
                assert_eq!(v, value_for(&k, 1, len), "wrong value for key {i}");
                found += 1;
            }
            Ok(None) => panic!("key {i} silently missing"),
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("mapping")
                        || e.contains("earlier read")
                        || e.contains("past the end"),
                    "key {i}: not the cut-file error: {e}"
                );
                failed += 1;
            }
        }
    }
    (found, failed)
}

/// A full scan ends in an error (when the iterator is made, if its first
/// values are the ones that fail, or on the way).
fn scan_fails(db: &Db) -> bool {
    match db.iter(IterOptions::default()) {
        Err(_) => true,
        Ok(it) => it.collect::<Result<Vec<_>, _>>().is_err(),
    }
}

fn writes_still_work(db: &Db) {
    db.put(b"after", b"the fault").unwrap();
    assert_eq!(
        db.get(b"after").unwrap().as_deref(),
        Some(&b"the fault"[..])
    );
}

#[test]
fn a_table_cut_short_under_its_mapping_fails_its_reads_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = populated(dir.path(), 20);
    let tables = files_with_ext(dir.path(), "sst");
    assert!(
        tables.len() >= 3,
        "want several tables, got {}",
        tables.len()
    );
    let victim = tables
        .iter()
        .max_by_key(|p| p.metadata().unwrap().len())
        .unwrap();
    cut_to_nothing(victim);

    let (found, failed) = read_all(&db, 20);
    assert!(failed > 0, "no read met the cut table");
    assert!(found > 0, "the other tables' keys are gone too");
    assert_eq!(found + failed, KEYS);
    // The same keys fail again (the file is marked), the others still read.
    assert_eq!(read_all(&db, 20), (found, failed));
    // A scan stops with an error where it reaches the table.
    assert!(scan_fails(&db), "a scan through the cut table succeeded");
    assert!(db.verify().is_err(), "verify passed over the cut table");
    writes_still_work(&db);
}

#[test]
fn a_value_log_file_cut_short_under_its_mapping_fails_its_reads_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = populated(dir.path(), 300);
    let mut vlogs = files_with_ext(dir.path(), "vlog");
    vlogs.sort();
    assert!(
        vlogs.len() >= 3,
        "want sealed value-log files, got {}",
        vlogs.len()
    );
    // The oldest file is sealed (mapped); the newest is the head.
    cut_to_nothing(&vlogs[0]);

    let (found, failed) = read_all(&db, 300);
    assert!(failed > 0, "no read met the cut value-log file");
    assert!(found > 0, "values in the other files are gone too");
    assert!(
        scan_fails(&db),
        "a scan through the cut value-log file succeeded"
    );
    writes_still_work(&db);
}
