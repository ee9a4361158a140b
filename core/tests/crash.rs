//! Crash test: a child process writes numbered batches and reports each one the
//! Db acknowledged; the parent kills it with SIGKILL at a random moment, reopens
//! and checks what survived. A process crash keeps the page cache, so in both
//! modes every acknowledged batch must be there (what `sync_writes` adds, a
//! machine crash, is tests/power_loss.rs), the surviving batches form a prefix
//! of the write order and no batch is there in part. A child that dies on its
//! own (rather than by the kill) fails the test with its stderr.

mod common;

use common::{kill_running_child, tiny_options, value_for, Rng};
use sett::{Db, WriteBatch};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

const CHILD_ENV: &str = "SETT_CRASH_CHILD_DIR";

fn batch_keys(i: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..1 + i % 5)
        .map(|j| {
            let k = format!("b{i:08}:{j}").into_bytes();
            let len = if (i + j).is_multiple_of(2) { 10 } else { 200 };
            let v = value_for(&k, i, len);
            (k, v)
        })
        .collect()
}

/// Writes batches `start..` until killed, printing "ack N" after each.
fn child(dir: &Path, sync: bool, start: u64) {
    let mut o = tiny_options(dir);
    o.sync_writes = sync;
    let db = Db::open(o).expect("child open");
    let mut out = std::io::stdout().lock();
    for i in start.. {
        let mut b = WriteBatch::new();
        for (k, v) in batch_keys(i) {
            b.put(k, v);
        }
        b.put(format!("d{i:08}").into_bytes(), b"marker");
        if i > 0 {
            b.delete(format!("d{:08}", i - 1).into_bytes());
        }
        db.write(b).expect("child write");
        writeln!(out, "ack {i}")
            .and_then(|_| out.flush())
            .expect("child stdout");
    }
}

#[test]
fn crash_child_writer() {
    // Entry point of the child process; does nothing in a normal test run.
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let sync = std::env::var("SETT_CRASH_SYNC").as_deref() == Ok("1");
    let start = std::env::var("SETT_CRASH_START")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    child(Path::new(&dir), sync, start);
}

/// Checks the recovered Db; returns the number of batches present.
fn verify(dir: &Path, acked: &[u64], cycle: usize) -> u64 {
    let db =
        Db::open(tiny_options(dir)).unwrap_or_else(|e| panic!("cycle {cycle}: reopen failed: {e}"));
    let mut present = 0u64;
    let mut absent_seen = false;
    let max_ack = acked.iter().copied().max();
    let upper = max_ack.map_or(0, |m| m + 50);
    for i in 0..upper {
        let keys = batch_keys(i);
        let found: Vec<bool> = keys
            .iter()
            .map(|(k, v)| match db.get(k).unwrap() {
                Some(got) => {
                    assert_eq!(&got, v, "cycle {cycle}: batch {i} value differs");
                    true
                }
                None => false,
            })
            .collect();
        let all = found.iter().all(|&f| f);
        let none = found.iter().all(|&f| !f);
        assert!(all || none, "cycle {cycle}: batch {i} is torn: {found:?}");
        if all {
            assert!(
                !absent_seen,
                "cycle {cycle}: batch {i} survived after a missing batch"
            );
            present = i + 1;
        } else {
            absent_seen = true;
        }
    }
    if let Some(m) = max_ack {
        assert!(
            present > m,
            "cycle {cycle}: acknowledged batch {m} lost to a process kill (present {present})"
        );
    }
    if present > 0 {
        let last = format!("d{:08}", present - 1);
        assert!(
            db.get(last.as_bytes()).unwrap().is_some(),
            "cycle {cycle}: marker of last batch missing"
        );
        if present > 1 {
            let prev = format!("d{:08}", present - 2);
            assert!(
                db.get(prev.as_bytes()).unwrap().is_none(),
                "cycle {cycle}: delete lost"
            );
        }
    }
    db.close().unwrap();
    present
}

fn crash_loop(sync: bool, cycles: usize, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed);
    let mut start = 0u64;
    let mut total_acked = 0usize;
    for cycle in 0..cycles {
        let (mut child, stdout, stderr) = common::spawn_child_test(
            "crash_child_writer",
            &[
                (CHILD_ENV, dir.path().display().to_string()),
                ("SETT_CRASH_SYNC", if sync { "1" } else { "0" }.to_string()),
                ("SETT_CRASH_START", start.to_string()),
            ],
        );
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(n) = line
                    .strip_prefix("ack ")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    let _ = tx.send(n);
                }
            }
        });
        // Let it start and write for a random while, then kill it mid-flight.
        let mut acked = Vec::new();
        let first = rx.recv_timeout(Duration::from_secs(30));
        acked.extend(first.ok());
        std::thread::sleep(Duration::from_millis(20 + rng.below(300)));
        kill_running_child(&mut child, stderr, &format!("cycle {cycle}"));
        reader.join().unwrap();
        acked.extend(rx.try_iter());
        assert!(
            !acked.is_empty(),
            "cycle {cycle}: child acknowledged nothing"
        );
        total_acked += acked.len();
        start = verify(dir.path(), &acked, cycle);
    }
    eprintln!("crash loop (sync={sync}): {cycles} cycles, {total_acked} batches acknowledged, {start} present at the end");
}

#[test]
fn killed_writer_with_sync_keeps_every_acknowledged_batch_whole() {
    crash_loop(true, 25, 7);
}

#[test]
fn killed_writer_without_sync_keeps_every_acknowledged_batch_whole() {
    crash_loop(false, 25, 11);
}
