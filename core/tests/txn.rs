//! Transactions: snapshot isolation and serializability (no write skew, no lost
//! update), stable snapshots under concurrent commits, own writes, size limits.

mod common;

use common::tiny_options;
use sett::{Db, Error, IterOptions, Options};

fn open(dir: &std::path::Path) -> Db {
    Db::open(tiny_options(dir)).unwrap()
}

#[test]
fn write_skew_is_prevented() {
    // Invariant a + b >= 1. Each transaction reads both and zeroes one: run
    // serially one of them would see the other's write and refuse.
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"1").unwrap();
    let mut t1 = db.begin(true).unwrap();
    let mut t2 = db.begin(true).unwrap();
    for t in [&t1, &t2] {
        assert_eq!(t.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(t.get(b"b").unwrap().as_deref(), Some(&b"1"[..]));
    }
    t1.set(b"a", b"0").unwrap();
    t2.set(b"b", b"0").unwrap();
    t1.commit().unwrap();
    assert!(matches!(t2.commit(), Err(Error::Conflict)));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"0"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn lost_update_is_prevented_and_update_retries() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"counter", &0u64.to_be_bytes()).unwrap();
    let read =
        |t: &sett::Txn| u64::from_be_bytes(t.get(b"counter").unwrap().unwrap().try_into().unwrap());
    let mut t1 = db.begin(true).unwrap();
    let mut t2 = db.begin(true).unwrap();
    let (c1, c2) = (read(&t1), read(&t2));
    t1.set(b"counter", &(c1 + 1).to_be_bytes()).unwrap();
    t2.set(b"counter", &(c2 + 1).to_be_bytes()).unwrap();
    t2.commit().unwrap();
    assert!(matches!(t1.commit(), Err(Error::Conflict)));

    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    db.update(|t| {
                        let c = read(t);
                        t.set(b"counter", &(c + 1).to_be_bytes())
                    })
                    .unwrap();
                }
            });
        }
    });
    let v = db.get(b"counter").unwrap().unwrap();
    assert_eq!(u64::from_be_bytes(v.try_into().unwrap()), 401);
}

#[test]
fn blind_writes_do_not_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut t1 = db.begin(true).unwrap();
    let mut t2 = db.begin(true).unwrap();
    t1.set(b"k", b"1").unwrap();
    t2.set(b"k", b"2").unwrap();
    t1.commit().unwrap();
    t2.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_snapshot_stays_stable_across_concurrent_commits_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    for i in 0..200u32 {
        db.put(
            format!("k{i:03}").as_bytes(),
            format!("old{i}-{}", "x".repeat(i as usize)).as_bytes(),
        )
        .unwrap();
    }
    let view = db.begin(false).unwrap();
    for round in 0..20u32 {
        for i in 0..200u32 {
            db.put(
                format!("k{i:03}").as_bytes(),
                format!("new{round}-{}", "y".repeat(i as usize)).as_bytes(),
            )
            .unwrap();
        }
        db.delete(b"k000").unwrap();
    }
    db.flatten().unwrap();
    for i in 0..200u32 {
        let v = view.get(format!("k{i:03}").as_bytes()).unwrap().unwrap();
        assert!(
            v.starts_with(format!("old{i}-").as_bytes()),
            "key {i} changed under the snapshot"
        );
    }
    let seen: Vec<_> = view
        .iter(IterOptions::default())
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    assert_eq!(seen.len(), 200);
    assert!(seen.iter().all(|(_, v)| v.starts_with(b"old")));
    assert_eq!(db.get(b"k000").unwrap(), None);
}

#[test]
fn a_transaction_reads_and_iterates_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.put(b"c", b"3").unwrap();
    let mut t = db.begin(true).unwrap();
    t.set(b"b", b"20").unwrap();
    t.delete(b"c").unwrap();
    t.set(b"d", b"4").unwrap();
    assert_eq!(t.get(b"b").unwrap().as_deref(), Some(&b"20"[..]));
    assert_eq!(t.get(b"c").unwrap(), None);
    let fwd: Vec<_> = t
        .iter(IterOptions::default())
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    let want = vec![
        (b"a".to_vec(), b"1".to_vec()),
        (b"b".to_vec(), b"20".to_vec()),
        (b"d".to_vec(), b"4".to_vec()),
    ];
    assert_eq!(fwd, want);
    let rev: Vec<_> = t
        .iter(IterOptions {
            reverse: true,
            ..Default::default()
        })
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    assert_eq!(rev, want.into_iter().rev().collect::<Vec<_>>());
    assert_eq!(
        db.get(b"b").unwrap().as_deref(),
        Some(&b"2"[..]),
        "not visible before commit"
    );
    t.commit().unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"20"[..]));
    assert_eq!(db.get(b"c").unwrap(), None);
}

#[test]
fn keys_seen_by_a_transaction_iterator_count_as_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"p1", b"x").unwrap();
    let mut t = db.begin(true).unwrap();
    let n = t
        .iter(IterOptions {
            prefix: Some(b"p".to_vec()),
            ..Default::default()
        })
        .unwrap()
        .count();
    assert_eq!(n, 1);
    t.set(b"summary", b"1").unwrap();
    db.put(b"p1", b"changed").unwrap();
    assert!(matches!(t.commit(), Err(Error::Conflict)));
}

#[test]
fn a_transaction_over_the_size_limit_fails_clearly_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut o: Options = tiny_options(dir.path());
    o.max_txn_size = 4096;
    let db = Db::open(o).unwrap();
    db.put(b"kept", b"yes").unwrap();
    let mut t = db.begin(true).unwrap();
    t.set(b"k1", &[0; 3000]).unwrap();
    match t.set(b"k2", &[0; 3000]) {
        Err(Error::TooBig {
            what: "transaction",
            max: 4096,
            ..
        }) => {}
        other => panic!("expected a transaction size error, got {other:?}"),
    }
    t.commit().unwrap();
    assert!(db.get(b"k1").unwrap().is_some());
    assert!(db.get(b"k2").unwrap().is_none());
    assert_eq!(db.get(b"kept").unwrap().as_deref(), Some(&b"yes"[..]));
    // A WriteBatch has no such limit.
    let mut b = sett::WriteBatch::new();
    for i in 0..20u32 {
        b.put(format!("big{i}").into_bytes(), vec![1u8; 3000]);
    }
    db.write(b).unwrap();
    assert!(db.get(b"big19").unwrap().is_some());
}

#[test]
fn read_only_transactions_refuse_writes_and_closed_dbs_refuse_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut t = db.begin(false).unwrap();
    assert!(matches!(t.set(b"k", b"v"), Err(Error::InvalidArgument(_))));
    db.view(|t| {
        assert_eq!(t.get(b"k")?, None);
        Ok(())
    })
    .unwrap();
    drop(t);
    db.close().unwrap();
    assert!(matches!(db.begin(true), Err(Error::Closed)));
}
