//! Damaged files: a flipped byte in an SST block, a WAL record, a value-log entry
//! or the manifest gives an error naming the file (and offset), or a clean cut of
//! a torn tail; never a panic and never a wrong value. Truncated WAL and value-log
//! files reopen with a prefix of the batches.

mod common;

use common::{
    batch_state, copy_dir, files_with_ext, flip_byte, tiny_options, value_for, wal_records_end,
};
use sett::{Db, Error, IterOptions, Options, WriteBatch};
use std::path::Path;
use std::process::Command;

const CHILD_ENV: &str = "SETT_WAL_CHILD_DIR";
const CHILD_SYNC_ENV: &str = "SETT_WAL_CHILD_SYNC";
const BATCHES: u64 = 40;

fn batch(i: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..3u64)
        .map(|j| {
            let k = format!("w{i:04}:{j}").into_bytes();
            let v = value_for(&k, i, if j == 1 { 300 } else { 12 });
            (k, v)
        })
        .collect()
}

fn wal_options(dir: &Path) -> Options {
    let mut o = tiny_options(dir);
    o.memtable_size = 1 << 20; // everything stays in the WAL
    o
}

#[test]
fn wal_child_writer() {
    // Child entry: writes BATCHES batches, then exits without closing, so the
    // data lives only in the WAL and the value log.
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut opts = wal_options(Path::new(&dir));
    opts.sync_writes = std::env::var(CHILD_SYNC_ENV).is_ok();
    let db = Db::open(opts).unwrap();
    for i in 0..BATCHES {
        let mut b = WriteBatch::new();
        for (k, v) in batch(i) {
            b.put(k, v);
        }
        db.write(b).unwrap();
    }
    std::process::exit(0);
}

/// A directory whose data lives only in an unflushed WAL and value log.
fn dir_with_unflushed_wal() -> tempfile::TempDir {
    dir_with_wal(false)
}

/// The same, written with `sync_writes` when `sync`: every record of the WAL
/// then says that the ones before it were synced.
fn dir_with_wal(sync: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "wal_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path());
    if sync {
        child.env(CHILD_SYNC_ENV, "1");
    }
    let status = child.status().unwrap();
    assert!(status.success());
    assert_eq!(files_with_ext(dir.path(), "wal").len(), 1);
    dir
}

/// How many whole batches the Db holds; panics on a torn batch, a wrong value,
/// or a batch present after a missing one.
fn count_prefix(db: &Db) -> u64 {
    let mut present = 0;
    let mut gap = false;
    for i in 0..BATCHES {
        let found = batch_state(db, &batch(i)).unwrap_or_else(|| panic!("batch {i} torn"));
        if found {
            assert!(!gap, "batch {i} present after a missing one");
            present = i + 1;
        } else {
            gap = true;
        }
    }
    present
}

fn expect_corruption_in(err: Error, ext: &str) -> u64 {
    match err {
        Error::Corruption { file, offset, .. } => {
            assert!(
                file.extension().is_some_and(|e| e == ext) || file.ends_with(ext),
                "corruption names {} instead of a .{ext} file",
                file.display()
            );
            offset
        }
        other => panic!("expected corruption in a .{ext} file, got {other}"),
    }
}

#[test]
fn truncated_wal_at_any_length_reopens_with_a_prefix() {
    let src = dir_with_unflushed_wal();
    let wal = &files_with_ext(src.path(), "wal")[0];
    let len = wal_records_end(wal);
    let mut seen = std::collections::BTreeSet::new();
    for cut in (0..=len)
        .step_by((len / 97).max(1) as usize)
        .chain([len - 1, len])
    {
        let d = copy_dir(src.path());
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join(wal.file_name().unwrap()))
            .unwrap();
        f.set_len(cut).unwrap();
        let db = Db::open(wal_options(d.path())).unwrap();
        seen.insert(count_prefix(&db));
    }
    assert!(
        seen.contains(&0) && seen.contains(&BATCHES),
        "prefixes seen: {seen:?}"
    );
}

#[test]
fn truncated_value_log_at_any_length_reopens_with_a_prefix() {
    let src = dir_with_unflushed_wal();
    let vlog = files_with_ext(src.path(), "vlog").pop().unwrap();
    let len = std::fs::metadata(&vlog).unwrap().len();
    let mut seen = std::collections::BTreeSet::new();
    for cut in (16..=len)
        .step_by((len / 61).max(1) as usize)
        .chain([len - 1, len])
    {
        let d = copy_dir(src.path());
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join(vlog.file_name().unwrap()))
            .unwrap();
        f.set_len(cut).unwrap();
        let db = Db::open(wal_options(d.path())).unwrap();
        seen.insert(count_prefix(&db));
    }
    assert!(
        seen.len() > 5 && seen.contains(&BATCHES),
        "prefixes seen: {seen:?}"
    );
}

#[test]
fn flipped_byte_in_a_middle_wal_record_is_corruption_naming_the_wal() {
    // Synced records: damage there is not what a power cut does.
    let src = dir_with_wal(true);
    let wal = files_with_ext(src.path(), "wal").pop().unwrap();
    let len = wal_records_end(&wal);
    flip_byte(&wal, len / 2);
    let err = Db::open(wal_options(src.path()))
        .err()
        .expect("open must fail");
    let offset = expect_corruption_in(err, "wal");
    assert!(offset > 0 && offset <= len / 2, "offset {offset}");
}

#[test]
fn flipped_byte_in_a_middle_record_of_a_never_synced_wal_cuts_there() {
    // Without sync_writes nothing of this WAL was synced: a power cut may have
    // written its pages back in any order, so damage followed by whole records
    // is a torn tail (a prefix survives), not corruption.
    let src = dir_with_wal(false);
    let wal = files_with_ext(src.path(), "wal").pop().unwrap();
    let len = wal_records_end(&wal);
    flip_byte(&wal, len / 2);
    let db = Db::open(wal_options(src.path())).unwrap();
    let n = count_prefix(&db);
    assert!(n > 0 && n < BATCHES, "prefix of {n} batches");
}

#[test]
fn flipped_byte_in_the_last_wal_record_cuts_the_torn_tail() {
    let src = dir_with_unflushed_wal();
    let wal = files_with_ext(src.path(), "wal").pop().unwrap();
    let len = wal_records_end(&wal);
    flip_byte(&wal, len - 3);
    let db = Db::open(wal_options(src.path())).unwrap();
    assert_eq!(count_prefix(&db), BATCHES - 1);
}

/// A closed Db whose data is all in tables and the value log.
fn flushed_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for i in 0..BATCHES {
        let mut b = WriteBatch::new();
        for (k, v) in batch(i) {
            b.put(k, v);
        }
        db.write(b).unwrap();
    }
    db.close().unwrap();
    dir
}

#[test]
fn flipped_byte_in_an_sst_block_is_corruption_never_a_wrong_value() {
    let dir = flushed_db();
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    flip_byte(&sst, 20); // inside the first data block
    let db = Db::open(tiny_options(dir.path())).unwrap();
    let mut errors = 0;
    for i in 0..BATCHES {
        for (k, v) in batch(i) {
            match db.get(&k) {
                Ok(Some(got)) => assert_eq!(got, v),
                Ok(None) => panic!("key {k:?} reported missing"),
                Err(e) => {
                    assert_eq!(expect_corruption_in(e, "sst"), 0);
                    errors += 1;
                }
            }
        }
    }
    assert!(errors > 0, "the damaged block was never reported");
    let scan: sett::Result<Vec<_>> = db.iter(IterOptions::default()).and_then(|it| it.collect());
    expect_corruption_in(scan.unwrap_err(), "sst");
}

#[test]
fn flipped_byte_in_a_value_log_entry_is_corruption_naming_file_and_offset() {
    let dir = flushed_db();
    let vlog = files_with_ext(dir.path(), "vlog")
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    flip_byte(&vlog, 16 + 40);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    let mut errors = 0;
    for i in 0..BATCHES {
        for (k, v) in batch(i) {
            match db.get(&k) {
                Ok(got) => assert_eq!(got, Some(v)),
                Err(e) => {
                    assert_eq!(expect_corruption_in(e, "vlog"), 16);
                    errors += 1;
                }
            }
        }
    }
    assert_eq!(errors, 1, "exactly the damaged value fails");
}

#[test]
fn flipped_byte_in_the_manifest_is_corruption_and_deletes_nothing() {
    let dir = flushed_db();
    let manifest = dir.path().join("MANIFEST");
    let before = std::fs::read_dir(dir.path()).unwrap().count();
    flip_byte(&manifest, 30);
    let err = Db::open(tiny_options(dir.path()))
        .err()
        .expect("open must fail");
    expect_corruption_in(err, "MANIFEST");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        before,
        "files were removed"
    );
    flip_byte(&manifest, 30); // repair: the data is all still there
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(count_prefix(&db), BATCHES);
}

#[test]
fn unknown_format_version_is_refused_and_the_data_survives() {
    let dir = flushed_db();
    let manifest = dir.path().join("MANIFEST");
    let good = std::fs::read(&manifest).unwrap();
    let mut bad = good.clone();
    bad[8..12].copy_from_slice(&99u32.to_le_bytes());
    let crc = crc32(&bad[..12]);
    bad[12..16].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&manifest, &bad).unwrap();
    match Db::open(tiny_options(dir.path())) {
        Err(Error::UnsupportedVersion {
            found: 99,
            supported: 1,
            ..
        }) => {}
        other => panic!(
            "expected an unsupported version error, got {:?}",
            other.err()
        ),
    }
    std::fs::write(&manifest, &good).unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(count_prefix(&db), BATCHES);
}

#[test]
fn missing_table_file_is_corruption_naming_it() {
    let dir = flushed_db();
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    std::fs::remove_file(&sst).unwrap();
    let err = Db::open(tiny_options(dir.path()))
        .err()
        .expect("open must fail");
    match err {
        Error::Corruption { file, .. } => assert_eq!(file, sst),
        other => panic!("expected corruption, got {other}"),
    }
}

/// CRC-32 (IEEE), bitwise, to forge a header without reaching into the crate.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
