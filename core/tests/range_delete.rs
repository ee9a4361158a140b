//! Range deletes (`Db::delete_range`, `WriteBatch::delete_range`): every read
//! path honours them, at every stage of a key's life (memtable, L0, deeper
//! levels, after a reopen or a kill), compaction reclaims what they hide, and
//! transactions and backups see them.

mod common;

use common::{tiny_options, value_for};
use sett::{Db, Error, IterOptions, WriteBatch};
use std::path::Path;

const N: u32 = 400;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Values alternate between inline (short) and separated (long) ones.
fn val(i: u32, version: u64) -> Vec<u8> {
    let k = key(i);
    value_for(&k, version, if i.is_multiple_of(2) { 20 } else { 120 })
}

fn filled(dir: &Path) -> Db {
    let db = Db::open(tiny_options(dir)).unwrap();
    for i in 0..N {
        db.put(&key(i), &val(i, 1)).unwrap();
    }
    db
}

/// Keys [100, 200) are deleted.
fn in_range(i: u32) -> bool {
    (100..200).contains(&i)
}

fn delete_middle(db: &Db) {
    db.delete_range(&key(100), &key(200)).unwrap();
}

/// The files of `dir` as a killed process leaves them: copied again until no
/// background flush or compaction changed the directory during the copy.
fn copy_dir(dir: &Path) -> tempfile::TempDir {
    for _ in 0..200 {
        if let Some(to) = common::copy_if_still(dir, || ()) {
            return to;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the directory never stayed still for a copy");
}

fn keys_of(it: sett::DbIterator) -> Vec<Vec<u8>> {
    it.map(|r| r.unwrap().0).collect()
}

fn live_keys() -> Vec<Vec<u8>> {
    (0..N).filter(|&i| !in_range(i)).map(key).collect()
}

/// Checks every read path against the model "keys [100, 200) are gone".
fn check_every_read_path(db: &Db, stage: &str) {
    for i in 0..N {
        let want = (!in_range(i)).then(|| val(i, 1));
        assert_eq!(db.get(&key(i)).unwrap(), want, "{stage}: get key {i}");
    }
    let ks: Vec<Vec<u8>> = (90..210).map(key).collect();
    let refs: Vec<&[u8]> = ks.iter().map(|k| k.as_slice()).collect();
    let many = db.get_many(&refs).unwrap();
    for (j, got) in many.iter().enumerate() {
        let i = 90 + j as u32;
        assert_eq!(got.is_some(), !in_range(i), "{stage}: get_many key {i}");
    }
    let fwd = keys_of(db.iter(IterOptions::default()).unwrap());
    assert_eq!(fwd, live_keys(), "{stage}: forward scan");
    let mut rev = keys_of(
        db.iter(IterOptions {
            reverse: true,
            ..Default::default()
        })
        .unwrap(),
    );
    rev.reverse();
    assert_eq!(rev, live_keys(), "{stage}: reverse scan");
    // Seeks into the range land past it (before it, walking backwards).
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek(&key(150)).unwrap();
    assert_eq!(it.key(), key(200).as_slice(), "{stage}: seek forward");
    let mut it = db
        .iter(IterOptions {
            reverse: true,
            ..Default::default()
        })
        .unwrap();
    it.seek(&key(150)).unwrap();
    assert_eq!(it.key(), key(99).as_slice(), "{stage}: seek reverse");
    // Bounds and prefixes inside the range see nothing, around it the rest.
    let bounded = keys_of(
        db.iter(IterOptions {
            start: Some(key(95)),
            end: Some(key(205)),
            ..Default::default()
        })
        .unwrap(),
    );
    let want: Vec<Vec<u8>> = (95..100).chain(200..205).map(key).collect();
    assert_eq!(bounded, want, "{stage}: bounded scan");
    let prefix = keys_of(
        db.iter(IterOptions {
            prefix: Some(b"k0015".to_vec()),
            ..Default::default()
        })
        .unwrap(),
    );
    assert!(prefix.is_empty(), "{stage}: prefix scan inside the range");
    let values: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(IterOptions {
            start: Some(key(195)),
            end: Some(key(202)),
            ..Default::default()
        })
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        values,
        vec![(key(200), val(200, 1)), (key(201), val(201, 1))],
        "{stage}: values past the range"
    );
}

#[test]
fn every_read_path_misses_the_deleted_range_in_the_memtable_after_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    delete_middle(&db);
    check_every_read_path(&db, "memtable");
    db.flush().unwrap();
    check_every_read_path(&db, "flushed");
    db.flatten().unwrap();
    check_every_read_path(&db, "flattened");
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    check_every_read_path(&db, "reopened");
}

#[test]
fn a_range_delete_over_keys_already_in_tables_hides_them_before_any_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.flatten().unwrap();
    delete_middle(&db);
    check_every_read_path(&db, "tables below, tombstone in the memtable");
    db.flush().unwrap();
    check_every_read_path(&db, "tombstone flushed, tables not compacted");
}

#[test]
fn a_range_delete_replayed_from_the_wal_after_a_kill_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.flatten().unwrap();
    delete_middle(&db);
    // What a killed process leaves: the files as they are, no close.
    let copy = copy_dir(dir.path());
    drop(db);
    let db = Db::open(tiny_options(copy.path())).unwrap();
    check_every_read_path(&db, "replayed");
}

#[test]
fn a_snapshot_taken_before_the_range_delete_still_sees_the_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    let before = db.begin(false).unwrap();
    delete_middle(&db);
    db.flush().unwrap();
    db.flatten().unwrap();
    for i in 0..N {
        assert_eq!(before.get(&key(i)).unwrap(), Some(val(i, 1)), "key {i}");
    }
    let all = keys_of(before.iter(IterOptions::default()).unwrap());
    assert_eq!(all.len(), N as usize);
    drop(before);
    check_every_read_path(&db, "after the snapshot ended");
}

#[test]
fn keys_written_after_the_range_delete_are_visible_and_survive_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    delete_middle(&db);
    db.put(&key(150), b"after").unwrap();
    // In one batch: the range delete removes what came before it, not after.
    let mut b = WriteBatch::new();
    b.put(key(160), b"dropped by the later range delete");
    b.delete_range(key(160), key(170));
    b.put(key(165), b"after, same batch");
    db.write(b).unwrap();
    let check = |db: &Db, stage: &str| {
        assert_eq!(
            db.get(&key(150)).unwrap(),
            Some(b"after".to_vec()),
            "{stage}"
        );
        assert_eq!(db.get(&key(160)).unwrap(), None, "{stage}");
        assert_eq!(
            db.get(&key(165)).unwrap(),
            Some(b"after, same batch".to_vec()),
            "{stage}"
        );
        let mid = keys_of(
            db.iter(IterOptions {
                start: Some(key(100)),
                end: Some(key(200)),
                ..Default::default()
            })
            .unwrap(),
        );
        assert_eq!(mid, vec![key(150), key(165)], "{stage}");
    };
    check(&db, "memtable");
    db.flatten().unwrap();
    check(&db, "flattened");
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    check(&db, "reopened");
}

#[test]
fn a_batch_with_a_range_delete_is_atomic_and_a_bad_range_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    let mut b = WriteBatch::new();
    b.put(b"new", b"1");
    b.delete_range(key(200), key(100));
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert_eq!(
        db.get(b"new").unwrap(),
        None,
        "nothing of the batch applied"
    );
    assert!(matches!(
        db.delete_range(b"b", b"b"),
        Err(Error::InvalidArgument(_))
    ));
    let long = vec![b'x'; db.options().max_key_size + 1];
    assert!(matches!(
        db.delete_range(b"a", &long),
        Err(Error::TooBig { .. })
    ));
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), N as usize);
    // An empty end reaches past the last key.
    db.delete_range(&key(300), b"").unwrap();
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 300);
}

#[test]
fn compaction_drops_the_deleted_versions_counts_their_values_as_garbage_and_retires_the_tombstone()
{
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny_options(dir.path());
    opts.value_threshold = 64;
    let db = Db::open(opts).unwrap();
    for i in 0..1000u32 {
        db.put(&key(i), &value_for(&key(i), 1, 100)).unwrap();
    }
    db.flatten().unwrap();
    let before = db.stats();
    assert_eq!(before.table_entries, 1000);
    let garbage = |s: &sett::Stats| s.vlog_discard.iter().map(|(_, b)| b).sum::<u64>();
    // 10% of the keys.
    db.delete_range(&key(450), &key(550)).unwrap();
    assert_eq!(db.stats().range_tombstones, 1);
    db.flatten().unwrap();
    let after = db.stats();
    assert_eq!(after.table_entries, 900, "{after:?}");
    assert!(
        garbage(&after) >= garbage(&before) + 100 * 100,
        "discard grew from {} to {}",
        garbage(&before),
        garbage(&after)
    );
    assert_eq!(after.range_tombstones, 0, "the tombstone was retired");
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 900);
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(db.stats().range_tombstones, 0);
    assert_eq!(db.get(&key(500)).unwrap(), None);
    assert_eq!(db.get(&key(449)).unwrap().map(|v| v.len()), Some(100));
}

#[test]
fn background_compaction_reclaims_a_range_delete_without_a_flatten() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for i in 0..1000u32 {
        db.put(&key(i), &value_for(&key(i), 1, 100)).unwrap();
    }
    db.flatten().unwrap();
    db.delete_range(&key(0), &key(100)).unwrap();
    db.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let s = db.stats();
        if s.range_tombstones == 0 && s.table_entries == 900 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "background compaction never reclaimed the range: {s:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 900);
}

#[test]
fn a_snapshot_older_than_the_range_delete_keeps_compaction_from_dropping_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.flatten().unwrap();
    let before = db.begin(false).unwrap();
    delete_middle(&db);
    db.flatten().unwrap();
    assert_eq!(
        db.stats().table_entries,
        u64::from(N),
        "nothing dropped yet"
    );
    assert_eq!(before.get(&key(150)).unwrap(), Some(val(150, 1)));
    drop(before);
    db.flatten().unwrap();
    assert_eq!(db.stats().table_entries, u64::from(N) - 100);
    assert_eq!(db.stats().range_tombstones, 0);
}

#[test]
fn a_transaction_that_read_before_a_range_delete_committed_fails_with_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    let mut txn = db.begin(true).unwrap();
    assert_eq!(txn.get(&key(150)).unwrap(), Some(val(150, 1)));
    txn.set(b"elsewhere", b"1").unwrap();
    delete_middle(&db);
    assert!(matches!(txn.commit(), Err(Error::Conflict)));
    // A transaction that began after it sees the keys gone and commits.
    let mut txn = db.begin(true).unwrap();
    assert_eq!(txn.get(&key(150)).unwrap(), None);
    assert_eq!(txn.get(&key(250)).unwrap(), Some(val(250, 1)));
    txn.set(&key(150), b"back").unwrap();
    txn.commit().unwrap();
    assert_eq!(db.get(&key(150)).unwrap(), Some(b"back".to_vec()));
    // A blind write (nothing read) does not conflict.
    let mut blind = db.begin(true).unwrap();
    blind.set(b"blind", b"1").unwrap();
    db.delete_range(b"a", b"b").unwrap();
    blind.commit().unwrap();
}

#[test]
fn drop_prefix_is_a_range_delete_that_hides_the_whole_prefix_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for p in [&b"a/"[..], b"b/", b"b0", b"\xff\xff"] {
        for i in 0..50u32 {
            let mut k = p.to_vec();
            k.extend_from_slice(format!("{i:03}").as_bytes());
            db.put(&k, b"v").unwrap();
        }
    }
    db.flatten().unwrap();
    db.drop_prefix(b"b/").unwrap();
    db.drop_prefix(b"\xff").unwrap();
    assert_eq!(db.stats().range_tombstones, 2);
    let left = keys_of(db.iter(IterOptions::default()).unwrap());
    assert_eq!(left.len(), 100);
    assert!(left
        .iter()
        .all(|k| k.starts_with(b"a/") || k.starts_with(b"b0")));
    db.flatten().unwrap();
    assert_eq!(db.stats().table_entries, 100);
    assert_eq!(db.stats().range_tombstones, 0);
}

#[test]
fn a_full_backup_leaves_out_deleted_keys_and_an_incremental_one_carries_the_range_delete() {
    let src = tempfile::tempdir().unwrap();
    let db = filled(src.path());
    let mut full = Vec::new();
    let since = db.backup(&mut full, 0).unwrap();
    delete_middle(&db);
    db.put(&key(150), b"after").unwrap();
    let mut inc = Vec::new();
    db.backup(&mut inc, since).unwrap();

    let dst = tempfile::tempdir().unwrap();
    let restored = Db::open(tiny_options(dst.path())).unwrap();
    restored.load(&mut full.as_slice()).unwrap();
    assert_eq!(restored.get(&key(120)).unwrap(), Some(val(120, 1)));
    restored.load(&mut inc.as_slice()).unwrap();
    let want: Vec<Vec<u8>> = db
        .iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap().0)
        .collect();
    assert_eq!(
        keys_of(restored.iter(IterOptions::default()).unwrap()),
        want
    );
    assert_eq!(restored.get(&key(150)).unwrap(), Some(b"after".to_vec()));

    // A full backup taken now holds only what reads see.
    let mut again = Vec::new();
    db.backup(&mut again, 0).unwrap();
    let dst2 = tempfile::tempdir().unwrap();
    let fresh = Db::open(tiny_options(dst2.path())).unwrap();
    assert_eq!(
        fresh.load(&mut again.as_slice()).unwrap(),
        want.len() as u64
    );
    assert_eq!(keys_of(fresh.iter(IterOptions::default()).unwrap()), want);
}

#[test]
fn an_incremental_backup_across_a_range_delete_compaction_already_retired_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    let mut full = Vec::new();
    let since = db.backup(&mut full, 0).unwrap();
    delete_middle(&db);
    db.flatten().unwrap();
    assert_eq!(db.stats().range_tombstones, 0);
    let mut inc = Vec::new();
    match db.backup(&mut inc, since) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("full backup"), "{m}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Also after a reopen (the mark is in the manifest).
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert!(matches!(
        db.backup(&mut Vec::new(), since),
        Err(Error::InvalidArgument(_))
    ));
    let now = db.backup(&mut Vec::new(), 0).unwrap();
    db.backup(&mut Vec::new(), now).unwrap();
}

#[test]
fn a_memtable_whose_every_entry_a_range_delete_hides_flushes_to_no_table_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    db.put(b"p/1", &[7; 100]).unwrap();
    db.put(b"p/2", b"small").unwrap();
    db.drop_prefix(b"p/").unwrap();
    // Killed before any flush: the reopen replays both and flushes them.
    let copy = copy_dir(dir.path());
    db.flush().unwrap();
    assert_eq!(db.stats().table_entries, 0);
    assert_eq!(db.stats().range_tombstones, 0, "nothing left to hide");
    drop(db);
    let db = Db::open(tiny_options(copy.path())).unwrap();
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 0);
    assert_eq!(db.stats().table_entries, 0);
}

#[test]
fn a_transaction_s_own_range_delete_hides_the_range_from_its_reads_and_applies_at_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.flatten().unwrap();
    let mut txn = db.begin(true).unwrap();
    txn.set(&key(150), b"early").unwrap();
    txn.delete_range(&key(100), &key(200)).unwrap();
    txn.set(&key(160), b"late").unwrap();
    assert_eq!(
        txn.get(&key(150)).unwrap(),
        None,
        "its earlier write is gone"
    );
    assert_eq!(txn.get(&key(120)).unwrap(), None);
    assert_eq!(txn.get(&key(160)).unwrap(), Some(b"late".to_vec()));
    assert_eq!(txn.get(&key(200)).unwrap(), Some(val(200, 1)));
    for reverse in [false, true] {
        let mut got = keys_of(
            txn.iter(IterOptions {
                start: Some(key(95)),
                end: Some(key(205)),
                reverse,
                ..Default::default()
            })
            .unwrap(),
        );
        if reverse {
            got.reverse();
        }
        let want: Vec<Vec<u8>> = (95..100).chain([160]).chain(200..205).map(key).collect();
        assert_eq!(got, want, "reverse {reverse}");
    }
    // Nothing is applied before the commit.
    assert_eq!(db.get(&key(120)).unwrap(), Some(val(120, 1)));
    assert!(matches!(
        txn.delete_range(b"b", b"a"),
        Err(Error::InvalidArgument(_))
    ));
    txn.commit().unwrap();
    assert_eq!(db.get(&key(120)).unwrap(), None);
    assert_eq!(db.get(&key(150)).unwrap(), None);
    assert_eq!(db.get(&key(160)).unwrap(), Some(b"late".to_vec()));
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 301);
    // A read-only transaction cannot.
    let mut ro = db.begin(false).unwrap();
    assert!(matches!(
        ro.delete_range(b"a", b"b"),
        Err(Error::InvalidArgument(_))
    ));
}
