//! Fault injection sweep (needs `--features fault-injection`): the Nth write or
//! fsync of a workload fails with EIO or ENOSPC, for N across the whole
//! workload. The failing call returns an error, the Db then refuses writes, and
//! a reopen finds every write acknowledged before the fault, whole.
#![cfg(feature = "fault-injection")]

mod common;

use common::{batch_state, tiny_options, value_for};
use sett::{fault, Db, Options, WriteBatch};
use std::path::Path;

const BATCHES: u64 = 120;

/// The injector is process-wide: the tests of this file take turns.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn opts(dir: &Path) -> Options {
    let mut o = tiny_options(dir);
    o.sync_writes = true;
    o
}

fn batch(i: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..3u64)
        .map(|j| {
            let k = format!("f{i:04}:{j}").into_bytes();
            let v = value_for(&k, i, if j == 1 { 150 } else { 10 });
            (k, v)
        })
        .collect()
}

/// Writes until the first error; returns how many batches were acknowledged.
fn workload(db: &Db) -> (u64, Option<sett::Error>) {
    for i in 0..BATCHES {
        let mut b = WriteBatch::new();
        for (k, v) in batch(i) {
            b.put(k, v);
        }
        if let Err(e) = db.write(b) {
            return (i, Some(e));
        }
        if i % 40 == 39 {
            if let Err(e) = db.flush() {
                return (i + 1, Some(e));
            }
        }
    }
    (BATCHES, None)
}

#[test]
fn a_failed_write_or_fsync_poisons_the_db_and_loses_no_acknowledged_write() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // How many write-path calls a clean run makes.
    let probe = tempfile::tempdir().unwrap();
    fault::arm(0, 0);
    let db = Db::open(opts(probe.path())).unwrap();
    let (n, err) = workload(&db);
    assert_eq!((n, err.is_none()), (BATCHES, true));
    let total = fault::calls();
    drop(db);
    assert!(total > 200, "only {total} write-path calls");

    let (mut injected, mut poisoned) = (0, 0);
    for errno in [libc::EIO, libc::ENOSPC] {
        for at in (1..=total).step_by((total / 50).max(1) as usize) {
            let dir = tempfile::tempdir().unwrap();
            fault::arm(at, errno);
            let acked = match Db::open(opts(dir.path())) {
                Err(_) => 0, // the fault hit open itself
                Ok(db) => {
                    let (acked, err) = workload(&db);
                    if let Some(e) = err {
                        injected += 1;
                        let msg = e.to_string();
                        assert!(
                            msg.contains("Input/output error")
                                || msg.contains("No space left")
                                || msg.contains("refuses writes"),
                            "fault at call {at}: unexpected error {msg}"
                        );
                        // Nothing is written on top of an unknown state.
                        let again = db.put(b"after", b"fault");
                        assert!(
                            again.is_err(),
                            "fault at call {at}: the Db accepted a write after a failed one"
                        );
                        poisoned += 1;
                    }
                    fault::arm(0, 0);
                    drop(db);
                    acked
                }
            };
            fault::arm(0, 0);
            let db = Db::open(opts(dir.path()))
                .unwrap_or_else(|e| panic!("fault at call {at}: reopen: {e}"));
            for i in 0..BATCHES {
                let found = batch_state(&db, &batch(i))
                    .unwrap_or_else(|| panic!("fault at call {at}: batch {i} torn"));
                if i < acked {
                    assert!(
                        found,
                        "fault at call {at} (errno {errno}): acknowledged batch {i} lost"
                    );
                }
            }
            assert_eq!(db.get(b"after").unwrap(), None);
        }
    }
    eprintln!("fault sweep: {total} write-path calls, {injected} faults injected mid-workload, {poisoned} Dbs refused the next write");
    assert!(injected > 50);
}

#[test]
fn a_failed_value_log_read_is_an_error_for_that_read_only() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    fault::arm(0, 0);
    let db = Db::open(opts(dir.path())).unwrap();
    let (acked, err) = workload(&db);
    assert!(err.is_none() && acked == BATCHES);
    db.flatten().unwrap();
    // Only reads from here: every get of a separated value is one value-log read.
    let mut failed = 0;
    for at in [1u64, 7, 30] {
        fault::arm(at, libc::EIO);
        for i in 0..40 {
            let (k, v) = batch(i)[1].clone();
            match db.get(&k) {
                Ok(got) => assert_eq!(got, Some(v)),
                Err(e) => {
                    assert!(e.to_string().contains("Input/output error"), "{e}");
                    failed += 1;
                }
            }
        }
        fault::arm(0, 0);
    }
    assert_eq!(failed, 3, "exactly the armed reads fail");
    // Reads do not poison: writes and reads go on.
    db.put(b"after-read-fault", b"ok").unwrap();
    assert_eq!(
        db.get(b"after-read-fault").unwrap().as_deref(),
        Some(&b"ok"[..])
    );
}
