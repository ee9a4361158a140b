//! A real full disk: the Db lives on a small tmpfs that fills up while it
//! writes. The write that hits ENOSPC fails, the Db refuses further writes,
//! reads go on, and after space is freed a reopen finds every acknowledged
//! write and accepts new ones.
//!
//! Mounting needs root (as the test command's apt-get does). Run as another
//! user, the test says it was skipped; as root, a failed mount fails it.

mod common;

use common::{tiny_options, value_for};
use sett::{Db, Error, WriteBatch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the length of a test.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            other => {
                let uid = Command::new("id").arg("-u").output().ok();
                let root = uid.is_some_and(|o| o.stdout.starts_with(b"0\n"));
                assert!(
                    !root,
                    "running as root but could not mount a tmpfs: {other:?}"
                );
                sett_test_skip::skip(
                    "core-full_disk-not_root",
                    "not root: cannot mount a tmpfs for the full-disk test",
                );
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn batch_key(batch: u64, i: u64) -> Vec<u8> {
    format!("b{batch:06}-{i}").into_bytes()
}

/// Batch `n` puts 8 keys, half of them with values past the threshold (value log).
fn write_batch(db: &Db, n: u64) -> sett::Result<()> {
    let mut b = WriteBatch::new();
    for i in 0..8 {
        let k = batch_key(n, i);
        let len = if i % 2 == 0 { 40 } else { 900 };
        b.put(k.clone(), value_for(&k, n, len));
    }
    db.write(b)
}

fn check_batches(db: &Db, acked: u64, what: &str) {
    for n in 0..acked {
        for i in 0..8 {
            let k = batch_key(n, i);
            let len = if i % 2 == 0 { 40 } else { 900 };
            let got = db
                .get(&k)
                .unwrap_or_else(|e| panic!("{what}: reading batch {n}: {e}"));
            assert_eq!(
                got,
                Some(value_for(&k, n, len)),
                "{what}: batch {n} key {i}"
            );
        }
    }
}

fn is_no_space(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.raw_os_error() == Some(28),
        Error::Poisoned(cause) => cause.contains("No space left") || cause.contains("os error 28"),
        _ => false,
    }
}

#[test]
fn a_full_disk_fails_the_write_keeps_acked_data_and_recovers_after_space_is_freed() {
    let Some(fs) = Tmpfs::mount("6m") else { return };
    let db_dir: PathBuf = fs.path().join("db");
    // Leave the Db about 2 MiB: enough to flush and compact a few times first.
    let filler = fs.path().join("filler");
    std::fs::write(&filler, vec![0u8; 4 << 20]).unwrap();

    let mut opts = tiny_options(&db_dir);
    opts.memtable_size = 64 << 10;
    opts.vlog_file_size = 256 << 10;
    opts.sync_writes = true;
    let db = Db::open(opts.clone()).unwrap();
    let mut acked = 0u64;
    let err = loop {
        match write_batch(&db, acked) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 100_000, "the 6 MiB file system never filled up");
    };
    eprintln!("disk full after {acked} acknowledged batches: {err}");
    assert!(is_no_space(&err), "expected ENOSPC, got {err:?}");
    assert!(
        acked > 50,
        "only {acked} batches fit before the disk filled"
    );

    // Poisoned for writes, still readable.
    let again = write_batch(&db, acked).unwrap_err();
    assert!(
        matches!(again, Error::Poisoned(_)),
        "second write after ENOSPC: {again:?}"
    );
    check_batches(&db, acked, "poisoned Db");
    let _ = db.close();
    drop(db);

    // Free the space; a reopen finds every acknowledged batch and writes again.
    std::fs::remove_file(&filler).unwrap();
    let db = Db::open(opts.clone()).unwrap();
    check_batches(&db, acked, "reopened Db");
    for n in acked..acked + 20 {
        write_batch(&db, n).unwrap();
    }
    db.close().unwrap();
    let db = Db::open(opts).unwrap();
    check_batches(&db, acked + 20, "reopened twice");
    db.verify().unwrap();
    db.close().unwrap();
}
