//! Entries with a time to live and user meta, on a clock the test moves.

mod common;

use common::tiny_options;
use sett::{Clock, Db, IterOptions, Options, PutOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn opts(dir: &std::path::Path, now: &Arc<AtomicU64>) -> Options {
    let mut o = tiny_options(dir);
    o.clock = Clock::manual(now.clone());
    o
}

#[test]
fn entries_expire_on_time_survive_reopen_and_go_at_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let db = Db::open(opts(dir.path(), &now)).unwrap();
    let ttl = |secs| PutOptions {
        user_meta: 7,
        ttl: Some(Duration::from_secs(secs)),
    };
    for i in 0..300u32 {
        // Half short-lived, half long-lived; both sides of the value threshold.
        let secs = if i % 2 == 0 { 10 } else { 1000 };
        db.put_with(
            format!("k{i:03}").as_bytes(),
            &vec![b'v'; 20 + (i as usize % 100)],
            ttl(secs),
        )
        .unwrap();
    }
    db.put(b"forever", b"x").unwrap();
    let item = db.get_entry(b"k000").unwrap().unwrap();
    assert_eq!((item.user_meta, item.expires_at), (7, 1_000_010));

    now.store(1_000_009, Ordering::SeqCst);
    assert!(db.get(b"k000").unwrap().is_some(), "expired a second early");
    now.store(1_000_010, Ordering::SeqCst);
    assert_eq!(db.get(b"k000").unwrap(), None);
    assert!(db.get(b"k001").unwrap().is_some());
    let live = db.iter(IterOptions::default()).unwrap().count();
    assert_eq!(live, 151);

    db.close().unwrap();
    drop(db);
    let db = Db::open(opts(dir.path(), &now)).unwrap();
    assert_eq!(db.get(b"k000").unwrap(), None);
    assert_eq!(db.get_entry(b"k001").unwrap().unwrap().user_meta, 7);
    assert_eq!(
        db.iter(IterOptions {
            keys_only: true,
            ..Default::default()
        })
        .unwrap()
        .count(),
        151
    );

    let before = db.stats().table_entries;
    db.flatten().unwrap();
    let after = db.stats().table_entries;
    assert_eq!(
        after, 151,
        "expired entries must be gone after compaction (before: {before})"
    );
    now.store(1_002_000, Ordering::SeqCst);
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 1);
    assert_eq!(db.get(b"forever").unwrap().as_deref(), Some(&b"x"[..]));
}

#[test]
fn a_sub_second_ttl_rounds_up_not_down() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(500));
    let db = Db::open(opts(dir.path(), &now)).unwrap();
    db.put_with(
        b"k",
        b"v",
        PutOptions {
            user_meta: 0,
            ttl: Some(Duration::from_millis(300)),
        },
    )
    .unwrap();
    assert_eq!(db.get_entry(b"k").unwrap().unwrap().expires_at, 501);
}

#[test]
fn bulk_loaded_entries_keep_their_meta_and_expire_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(2_000_000));
    let db = Db::open(opts(dir.path(), &now)).unwrap();
    let mut l = db.bulk_load().unwrap();
    for i in 0..200u32 {
        // Short-lived and long-lived, inline and in the value log.
        let o = PutOptions {
            user_meta: (i % 5) as u8,
            ttl: Some(Duration::from_millis(if i % 2 == 0 {
                9_500
            } else {
                500_000
            })),
        };
        let v = vec![b'b'; if i % 3 == 0 { 4000 } else { 30 }];
        l.add_with(format!("b{i:03}").as_bytes(), &v, o).unwrap();
    }
    l.add(b"plain", b"p").unwrap();
    assert_eq!(l.finish().unwrap(), 201);

    let item = db.get_entry(b"b003").unwrap().unwrap();
    // 500 s after 2_000_000; 9.5 s rounds up to 10 s.
    assert_eq!((item.user_meta, item.expires_at), (3, 2_000_500));
    assert_eq!(
        db.get_entry(b"b000").unwrap().unwrap().expires_at,
        2_000_010
    );
    assert_eq!(db.get_entry(b"plain").unwrap().unwrap().expires_at, 0);
    now.store(2_000_010, Ordering::SeqCst);
    assert_eq!(db.get(b"b000").unwrap(), None);
    assert_eq!(db.get(b"b001").unwrap().unwrap().len(), 30);
    let live = db.iter(IterOptions::default()).unwrap().count();
    assert_eq!(live, 101);
}

#[test]
fn a_transaction_reads_back_the_expiry_its_commit_will_store() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(2_000_000));
    let db = Db::open(opts(dir.path(), &now)).unwrap();
    let pending = db
        .update(|txn| {
            txn.set_with(
                b"k",
                b"v",
                PutOptions {
                    user_meta: 3,
                    ttl: Some(Duration::from_millis(1500)),
                },
            )?;
            txn.set(b"plain", b"v")?;
            Ok((txn.get_entry(b"k")?, txn.get_entry(b"plain")?))
        })
        .unwrap();
    let (k, plain) = (pending.0.unwrap(), pending.1.unwrap());
    // 1.5 s rounds up to 2 s, as the write path stores it.
    assert_eq!((k.user_meta, k.expires_at), (3, 2_000_002));
    assert_eq!(plain.expires_at, 0);
    let stored = db.get_entry(b"k").unwrap().unwrap();
    assert_eq!(stored.expires_at, k.expires_at);
}
