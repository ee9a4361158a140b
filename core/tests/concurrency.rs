//! Many writers and readers on one Db: group commit, memtable switches and
//! write stalls under tiny limits, with every write found afterwards.

mod common;

use common::{tiny_options, value_for};
use sett::{Db, IterOptions, WriteBatch};
use std::sync::atomic::{AtomicBool, Ordering};

#[test]
fn concurrent_writers_and_readers_lose_nothing_through_stalls_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiny_options(dir.path());
    o.l0_slowdown_trigger = 3;
    o.l0_stop_trigger = 4;
    let db = Db::open(o.clone()).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let db = &db;
            s.spawn(move || {
                for i in 0..300u64 {
                    let mut b = WriteBatch::new();
                    for j in 0..4u64 {
                        let k = format!("t{t}-{i:04}-{j}").into_bytes();
                        let v = value_for(&k, i, if j.is_multiple_of(2) { 20 } else { 150 });
                        b.put(k, v);
                    }
                    db.write(b).unwrap();
                }
            });
        }
        let (db, stop) = (&db, &stop);
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Every batch a reader sees is whole: its 4 keys come together.
                let keys: Vec<Vec<u8>> = db
                    .iter(IterOptions {
                        keys_only: true,
                        ..Default::default()
                    })
                    .unwrap()
                    .map(|r| r.unwrap().0)
                    .collect();
                let mut per_batch = std::collections::HashMap::new();
                for k in &keys {
                    let s = String::from_utf8_lossy(k);
                    let batch = s.rsplit_once('-').unwrap().0.to_string();
                    *per_batch.entry(batch).or_insert(0) += 1;
                }
                assert!(
                    per_batch.values().all(|&n| n == 4),
                    "a reader saw a torn batch"
                );
            }
        });
        // Stop the reader once the writers are done.
        s.spawn(move || {
            while db.stats().last_seq < 8 * 300 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    let check = |db: &Db| {
        for t in 0..8u64 {
            for i in 0..300u64 {
                for j in 0..4u64 {
                    let k = format!("t{t}-{i:04}-{j}").into_bytes();
                    let v = value_for(&k, i, if j.is_multiple_of(2) { 20 } else { 150 });
                    assert_eq!(db.get(&k).unwrap(), Some(v));
                }
            }
        }
    };
    check(&db);
    let stats = db.stats();
    assert!(
        stats.levels.iter().skip(1).any(|(n, _)| *n > 0),
        "{stats:?}"
    );
    db.close().unwrap();
    drop(db);
    check(&Db::open(o).unwrap());
}

#[test]
fn concurrent_synced_writers_share_wal_appends_and_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = sett::Options::new(dir.path());
    o.sync_writes = true;
    let db = Db::open(o).unwrap();
    std::thread::scope(|s| {
        for t in 0..16u32 {
            let db = &db;
            s.spawn(move || {
                for i in 0..50u32 {
                    db.put(format!("t{t}-{i}").as_bytes(), b"value").unwrap();
                }
            });
        }
    });
    let s = db.stats();
    assert_eq!(s.batches_written, 800);
    assert_eq!(s.wal_syncs, s.write_groups, "one fsync per group");
    assert!(
        s.write_groups < 800,
        "no group held more than one batch: {s:?}"
    );
    eprintln!(
        "16 synced writers: {} batches in {} groups",
        s.batches_written, s.write_groups
    );
}

#[test]
fn compaction_drops_shadowed_versions_and_bottom_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for round in 0..50u64 {
        for k in 0..200u64 {
            db.put(format!("key{k:03}").as_bytes(), &value_for(b"v", round, 30))
                .unwrap();
        }
    }
    for k in 0..200u64 {
        db.delete(format!("key{k:03}").as_bytes()).unwrap();
    }
    db.flush().unwrap();
    let s = db.stats();
    // 10 200 entries were written; compaction keeps only a small part of them.
    eprintln!("after 10 200 writes: {} entries in tables", s.table_entries);
    assert!(s.table_entries < 5_000, "{s:?}");
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 0);
}
