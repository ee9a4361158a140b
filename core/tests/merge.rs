//! Merge operators: operands written without a read, folded on reads, in
//! iterators and in compaction, through transactions, keyspaces, the change
//! feed, backups, checkpoints and value-log GC.

mod common;

use common::tiny_options;
use sett::merge::{Append, MergeOperator, U64Add};
use sett::{
    ChangeKind, Clock, Db, Error, GcOutcome, IterOptions, KeyspaceOptions, Options, PutOptions,
    SubscribeOptions, WriteBatch,
};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

fn n(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn with(dir: &Path, op: Option<Arc<dyn MergeOperator>>) -> Options {
    let mut o = tiny_options(dir);
    o.merge_operator = op;
    // GC runs by hand here.
    o.vlog_gc_ratio = 0.0;
    o
}

fn counters(dir: &Path) -> Options {
    with(dir, Some(Arc::new(U64Add)))
}

fn appends(dir: &Path) -> Options {
    with(dir, Some(Arc::new(Append)))
}

fn scan(db: &Db, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter(IterOptions {
        reverse,
        ..IterOptions::default()
    })
    .unwrap()
    .collect::<sett::Result<_>>()
    .unwrap()
}

#[test]
fn counters_add_up_across_flushes_compactions_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 40u64;
    let rounds = 30u64;
    {
        let db = Db::open(counters(dir.path())).unwrap();
        for round in 0..rounds {
            for k in 0..keys {
                db.merge(format!("c{k:03}").as_bytes(), &n(k + 1)).unwrap();
            }
            if round % 7 == 3 {
                db.flush().unwrap();
            }
        }
        for k in 0..keys {
            let got = db.get(format!("c{k:03}").as_bytes()).unwrap();
            assert_eq!(got, Some(n((k + 1) * rounds)), "key {k} before flatten");
        }
        db.flatten().unwrap();
        for k in 0..keys {
            let got = db.get(format!("c{k:03}").as_bytes()).unwrap();
            assert_eq!(got, Some(n((k + 1) * rounds)), "key {k} after flatten");
        }
        db.close().unwrap();
    }
    let db = Db::open(counters(dir.path())).unwrap();
    db.merge(b"c000", &n(5)).unwrap();
    assert_eq!(db.get(b"c000").unwrap(), Some(n(rounds + 5)));
    let all = scan(&db, false);
    assert_eq!(all.len() as u64, keys);
    for (i, (k, v)) in all.iter().enumerate() {
        let want = (i as u64 + 1) * rounds + if i == 0 { 5 } else { 0 };
        assert_eq!(
            (k.clone(), v.clone()),
            (format!("c{i:03}").into_bytes(), n(want))
        );
    }
    let mut rev = scan(&db, true);
    rev.reverse();
    assert_eq!(rev, all, "a reverse walk folds as a forward one");
}

#[test]
fn a_snapshot_taken_between_operands_sees_its_value_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    db.put(b"k", &n(100)).unwrap();
    db.merge(b"k", &n(1)).unwrap();
    // In the last level, so that the flatten below compacts the later
    // operands into them (not a trivial move of their table).
    db.flatten().unwrap();
    let snap = db.begin(false).unwrap();
    db.merge(b"k", &n(10)).unwrap();
    db.merge(b"k", &n(1000)).unwrap();
    db.flatten().unwrap();
    assert_eq!(snap.get(b"k").unwrap(), Some(n(101)));
    assert_eq!(db.get(b"k").unwrap(), Some(n(1111)));
    let seen: Vec<_> = snap
        .iter(IterOptions::default())
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    assert_eq!(seen, vec![(b"k".to_vec(), n(101))]);
    drop(snap);
    db.flatten().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(n(1111)));
}

#[test]
fn operands_over_a_separated_base_fold_onto_it_and_survive_value_log_gc() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = appends(dir.path());
    opts.vlog_file_size = 16 << 10;
    let base = vec![b'b'; 2000];
    let mut want = base.clone();
    {
        let db = Db::open(opts.clone()).unwrap();
        db.put(b"log", &base).unwrap();
        // Garbage beside the base in its value-log file.
        for round in 0..6 {
            for k in 0..8 {
                db.put(format!("junk{k}").as_bytes(), &vec![round as u8; 2000])
                    .unwrap();
            }
        }
        for i in 0..5u8 {
            db.merge(b"log", &[b'0' + i]).unwrap();
            want.push(b'0' + i);
        }
        assert_eq!(db.get(b"log").unwrap(), Some(want.clone()));
        db.flush().unwrap();
        let mut collected = 0;
        loop {
            match db.run_value_log_gc(0.3).unwrap() {
                GcOutcome::NothingToCollect => break,
                _ => collected += 1,
            }
        }
        assert!(
            collected > 0,
            "the test needs GC to collect the base's file"
        );
        assert_eq!(db.get(b"log").unwrap(), Some(want.clone()), "after GC");
        db.merge(b"log", b"!").unwrap();
        want.push(b'!');
        db.flatten().unwrap();
        assert_eq!(db.get(b"log").unwrap(), Some(want.clone()), "after flatten");
        db.close().unwrap();
    }
    let db = Db::open(opts).unwrap();
    assert_eq!(db.get(b"log").unwrap(), Some(want.clone()), "after reopen");
    let got: Vec<_> = scan(&db, false)
        .into_iter()
        .filter(|(k, _)| k == b"log")
        .collect();
    assert_eq!(got, vec![(b"log".to_vec(), want)]);
    db.verify().unwrap();
}

#[test]
fn a_merge_conflicts_like_a_write_and_a_transaction_sees_its_own_merges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    db.put(b"k", &n(1)).unwrap();

    let mut reader = db.begin(true).unwrap();
    assert_eq!(reader.get(b"k").unwrap(), Some(n(1)));
    let mut merger = db.begin(true).unwrap();
    merger.merge(b"k", &n(2)).unwrap();
    merger.merge(b"k", &n(3)).unwrap();
    assert_eq!(merger.get(b"k").unwrap(), Some(n(6)), "own merges folded");
    let seen: Vec<_> = merger
        .iter(IterOptions::default())
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    assert_eq!(seen, vec![(b"k".to_vec(), n(6))], "own merges in a scan");
    merger.commit().unwrap();
    reader.set(b"other", b"x").unwrap();
    assert!(matches!(reader.commit(), Err(Error::Conflict)));
    assert_eq!(db.get(b"k").unwrap(), Some(n(6)));
    assert_eq!(db.get(b"other").unwrap(), None);

    db.update(|t| {
        t.set(b"fresh", &n(40))?;
        t.merge(b"fresh", &n(2))?;
        t.delete(b"gone")?;
        t.merge(b"gone", &n(7))?;
        Ok(())
    })
    .unwrap();
    assert_eq!(db.get(b"fresh").unwrap(), Some(n(42)));
    assert_eq!(db.get(b"gone").unwrap(), Some(n(7)));
}

#[test]
fn ops_of_one_batch_on_one_key_combine_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(appends(dir.path())).unwrap();
    db.put(b"k", b"old").unwrap();
    let mut b = WriteBatch::new();
    b.merge(b"k", b"1").merge(b"k", b"2");
    b.put(b"p", b"a").merge(b"p", b"b").merge(b"p", b"c");
    b.delete(b"d").merge(b"d", b"x");
    db.write(b).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"old12".to_vec()));
    assert_eq!(db.get(b"p").unwrap(), Some(b"abc".to_vec()));
    assert_eq!(db.get(b"d").unwrap(), Some(b"x".to_vec()));
}

#[test]
fn a_delete_or_a_range_delete_under_operands_is_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(appends(dir.path())).unwrap();
    for k in [&b"a"[..], b"b", b"c"] {
        db.put(k, b"base").unwrap();
    }
    db.delete(b"a").unwrap();
    db.merge(b"a", b"+a").unwrap();
    db.delete_range(b"b", b"c").unwrap();
    db.merge(b"b", b"+b").unwrap();
    db.merge(b"c", b"+c").unwrap();
    let want = vec![
        (b"a".to_vec(), b"+a".to_vec()),
        (b"b".to_vec(), b"+b".to_vec()),
        (b"c".to_vec(), b"base+c".to_vec()),
    ];
    for stage in ["memtable", "flattened"] {
        for (k, v) in &want {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{stage} {k:?}");
        }
        assert_eq!(scan(&db, false), want, "{stage}");
        let mut rev = scan(&db, true);
        rev.reverse();
        assert_eq!(rev, want, "{stage} reverse");
        db.flatten().unwrap();
    }
}

#[test]
fn an_expiring_base_carries_its_meta_and_its_expiry_ends_only_the_base() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(1_000));
    let mut opts = appends(dir.path());
    opts.clock = Clock::manual(now.clone());
    let db = Db::open(opts).unwrap();
    let ttl = PutOptions {
        user_meta: 7,
        ttl: Some(Duration::from_secs(10)),
    };
    db.put_with(b"k", b"base", ttl).unwrap();
    db.merge(b"k", b"+1").unwrap();
    let item = db.get_entry(b"k").unwrap().unwrap();
    assert_eq!(
        (item.value, item.user_meta, item.expires_at),
        (b"base+1".to_vec(), 7, 1_010)
    );
    db.flatten().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"base+1".to_vec()));
    now.store(1_010, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(db.get(b"k").unwrap(), Some(b"+1".to_vec()));
    db.flatten().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"+1".to_vec()));
    assert_eq!(scan(&db, false), vec![(b"k".to_vec(), b"+1".to_vec())]);
}

#[test]
fn keyspaces_take_merges_apart_from_the_default_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    let ks = db.keyspace("hits", KeyspaceOptions::default()).unwrap();
    ks.merge(b"page", &n(1)).unwrap();
    let mut b = WriteBatch::new();
    b.merge_in(&ks, b"page", n(2)).merge(b"page", n(50));
    db.write(b).unwrap();
    db.update(|t| t.merge_in(&ks, b"page", &n(4))).unwrap();
    db.flatten().unwrap();
    assert_eq!(ks.get(b"page").unwrap(), Some(n(7)));
    assert_eq!(db.get(b"page").unwrap(), Some(n(50)));
    let in_ks: Vec<_> = ks
        .iter(IterOptions::default())
        .unwrap()
        .collect::<sett::Result<_>>()
        .unwrap();
    assert_eq!(in_ks, vec![(b"page".to_vec(), n(7))]);
}

#[test]
fn the_change_feed_delivers_operands_as_merge_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    let sub = db.subscribe(SubscribeOptions::default()).unwrap();
    db.merge(b"k", &n(3)).unwrap();
    db.put(b"p", b"v").unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        got.extend(
            sub.next(Some(Duration::from_secs(5)))
                .unwrap()
                .unwrap_or_default(),
        );
    }
    assert_eq!(got[0].kind, ChangeKind::Merge);
    assert_eq!(
        (got[0].key.clone(), got[0].value.clone()),
        (b"k".to_vec(), n(3))
    );
    assert_eq!(got[1].kind, ChangeKind::Put);

    // A replica applying the changes ends with the same value.
    let dir2 = tempfile::tempdir().unwrap();
    let replica = Db::open(counters(dir2.path())).unwrap();
    replica.put(b"k", &n(10)).unwrap();
    let mut b = WriteBatch::new();
    for c in &got {
        b.add_change(c);
    }
    replica.write(b).unwrap();
    assert_eq!(replica.get(b"k").unwrap(), Some(n(13)));
}

#[test]
fn backups_and_checkpoints_of_unfolded_operands_restore_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    db.put(b"a", &n(1)).unwrap();
    db.merge(b"a", &n(2)).unwrap();
    db.merge(b"b", &n(5)).unwrap();
    let mut full = Vec::new();
    let at = db.backup(&mut full, 0).unwrap();
    db.merge(b"a", &n(30)).unwrap();
    db.merge(b"c", &n(9)).unwrap();
    let mut incr = Vec::new();
    db.backup(&mut incr, at).unwrap();
    let ckpt = tempfile::tempdir().unwrap();
    let target = ckpt.path().join("c");
    db.checkpoint(&target).unwrap();

    let dir2 = tempfile::tempdir().unwrap();
    let restored = Db::open(counters(dir2.path())).unwrap();
    restored.load(&mut &full[..]).unwrap();
    assert_eq!(restored.get(b"a").unwrap(), Some(n(3)));
    assert_eq!(restored.get(b"b").unwrap(), Some(n(5)));
    restored.load(&mut &incr[..]).unwrap();
    let copy = Db::open(counters(&target)).unwrap();
    for db in [&restored, &copy] {
        assert_eq!(db.get(b"a").unwrap(), Some(n(33)));
        assert_eq!(db.get(b"b").unwrap(), Some(n(5)));
        assert_eq!(db.get(b"c").unwrap(), Some(n(9)));
    }
}

#[test]
fn an_open_with_another_operator_is_refused_and_the_right_one_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(counters(dir.path())).unwrap();
        db.merge(b"k", &n(2)).unwrap();
        db.merge(b"k", &n(3)).unwrap();
        db.close().unwrap();
    }
    let Err(err) = Db::open(appends(dir.path())) else {
        panic!("an open with another operator succeeded");
    };
    assert!(
        matches!(&err, Error::MergeOperatorMismatch { stored, given }
            if stored == "sett.u64_add" && given == "sett.append"),
        "{err}"
    );
    let db = Db::open(counters(dir.path())).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(n(5)));
}

#[test]
fn without_an_operator_merged_keys_fail_clearly_other_keys_read_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(counters(dir.path())).unwrap();
        db.put(b"plain", b"v").unwrap();
        db.put(b"k", &n(1)).unwrap();
        db.merge(b"k", &n(2)).unwrap();
        db.close().unwrap();
    }
    {
        let db = Db::open(with(dir.path(), None)).unwrap();
        assert_eq!(db.get(b"plain").unwrap(), Some(b"v".to_vec()));
        let err = db.get(b"k").unwrap_err();
        assert!(
            matches!(&err, Error::MergeOperatorMissing { key } if key == b"k"),
            "{err}"
        );
        let err = db.merge(b"k", &n(1)).unwrap_err();
        assert!(matches!(err, Error::MergeOperatorMissing { .. }), "{err}");
        let walked = db
            .iter(IterOptions::default())
            .and_then(|it| it.collect::<sett::Result<Vec<_>>>());
        assert!(
            matches!(walked, Err(Error::MergeOperatorMissing { .. })),
            "{walked:?}"
        );
        // Compaction without an operator keeps the operands as they are.
        db.flatten().unwrap();
        assert_eq!(db.get(b"plain").unwrap(), Some(b"v".to_vec()));
        db.close().unwrap();
    }
    let db = Db::open(counters(dir.path())).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(n(3)));
}

#[test]
fn a_malformed_u64_operand_is_a_clear_error_and_a_put_over_it_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(counters(dir.path())).unwrap();
    db.put(b"k", &n(1)).unwrap();
    db.merge(b"k", b"bad").unwrap();
    db.merge(b"ok", &n(4)).unwrap();
    for stage in ["memtable", "flattened"] {
        let err = db.get(b"k").unwrap_err();
        assert!(
            matches!(&err, Error::MergeFailed { key, reason } if key == b"k" && reason.contains("3 bytes")),
            "{stage}: {err}"
        );
        assert_eq!(db.get(b"ok").unwrap(), Some(n(4)), "{stage}");
        // Compaction keeps what it cannot fold.
        db.flatten().unwrap();
    }
    db.put(b"k", &n(9)).unwrap();
    db.merge(b"k", &n(1)).unwrap();
    db.flatten().unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(n(10)));
}

#[test]
fn an_oversized_operand_is_refused_like_an_oversized_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = appends(dir.path());
    opts.max_value_size = 100;
    let db = Db::open(opts).unwrap();
    db.merge(b"k", b"fits").unwrap();
    let err = db.merge(b"k", &[0u8; 101]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooBig {
                what: "value",
                len: 101,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(db.get(b"k").unwrap(), Some(b"fits".to_vec()));
}

/// A value-log move copies the operands over a separated base into the
/// memtable; once a compaction folds the copies, the originals left in a
/// deeper level must not count again. Without the folded operand's floor
/// (the versions it stands for), a scan applies "a" twice.
#[test]
fn operands_copied_by_a_value_log_move_and_folded_do_not_count_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = appends(dir.path());
    opts.vlog_file_size = 16 << 10;
    let db = Db::open(opts).unwrap();
    db.put(b"log", &vec![b'b'; 2000]).unwrap();
    for round in 0..6 {
        for k in 0..8 {
            db.put(format!("junk{k}").as_bytes(), &vec![round as u8; 2000])
                .unwrap();
        }
    }
    // Held while flatten runs: the operands stay apart in the last level.
    let snap = db.begin(false).unwrap();
    db.merge(b"log", b"a").unwrap();
    db.merge(b"log", b"b").unwrap();
    db.flatten().unwrap();
    let mut collected = 0;
    while db.run_value_log_gc(0.3).unwrap() != GcOutcome::NothingToCollect {
        collected += 1;
    }
    assert!(collected > 0, "the test needs GC to move the base");
    drop(snap);
    // Two flushes: L0 reaches its trigger and goes down into L1, folding the
    // copies, while the originals stay in the last level.
    db.put(b"other", b"1").unwrap();
    db.flush().unwrap();
    db.put(b"other", b"2").unwrap();
    db.flush().unwrap();
    for _ in 0..500 {
        if db.stats().levels[0].0 == 0 && db.stats().compactions_running == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut want = vec![b'b'; 2000];
    want.extend_from_slice(b"ab");
    assert_eq!(db.get(b"log").unwrap(), Some(want.clone()));
    let got: Vec<_> = scan(&db, false)
        .into_iter()
        .filter(|(k, _)| k == b"log")
        .collect();
    assert_eq!(got, vec![(b"log".to_vec(), want.clone())], "forward scan");
    let got: Vec<_> = scan(&db, true)
        .into_iter()
        .filter(|(k, _)| k == b"log")
        .collect();
    assert_eq!(got, vec![(b"log".to_vec(), want)], "reverse scan");
}

/// Compaction folded an operand from before an incremental backup's `since`
/// with one after it: the stream cannot carry the later one alone, so the
/// backup is refused (a full one works), and nothing is lost.
#[test]
fn an_incremental_backup_across_a_folded_run_is_refused_and_a_full_one_works() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(appends(dir.path())).unwrap();
    // Separated: compaction keeps it apart and folds the operands above it.
    db.put(b"k", &[b'v'; 100]).unwrap();
    db.merge(b"k", b"a").unwrap();
    // In the last level, so that the next flatten compacts b into them
    // (not a trivial move of its table).
    db.flatten().unwrap();
    let mut full = Vec::new();
    let since = db.backup(&mut full, 0).unwrap();
    db.merge(b"k", b"b").unwrap();
    db.flatten().unwrap();
    let mut incr = Vec::new();
    let err = db.backup(&mut incr, since).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("full backup")),
        "{err}"
    );
    let mut want = vec![b'v'; 100];
    want.extend_from_slice(b"ab");
    assert_eq!(db.get(b"k").unwrap(), Some(want.clone()));
    let mut again = Vec::new();
    db.backup(&mut again, 0).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let restored = Db::open(appends(dir2.path())).unwrap();
    restored.load(&mut &again[..]).unwrap();
    assert_eq!(restored.get(b"k").unwrap(), Some(want));
}

#[test]
fn merge_and_read_gives_each_concurrent_merge_the_value_it_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(counters(dir.path())).unwrap());
    db.put(b"other", b"x").unwrap();
    let (threads, per) = (4u64, 150u64);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Flushes and compactions meanwhile, which fold operands they may.
    let churn = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.flush().unwrap();
                db.flatten().unwrap();
            }
        })
    };
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut made = Vec::new();
                for _ in 0..per {
                    let r = db.merge_and_read(b"n", &n(1)).unwrap();
                    let before = r
                        .before
                        .map_or(0, |i| u64::from_le_bytes(i.value.try_into().unwrap()));
                    let after = u64::from_le_bytes(r.after.unwrap().value.try_into().unwrap());
                    assert_eq!(after, before + 1, "at version {}", r.version);
                    made.push(after);
                }
                made
            })
        })
        .collect();
    let mut all: Vec<u64> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.join().unwrap();
    all.sort_unstable();
    let want: Vec<u64> = (1..=threads * per).collect();
    assert_eq!(all, want, "every merge made a value of its own");
    assert_eq!(db.get(b"n").unwrap(), Some(n(threads * per)));
}

#[test]
fn merge_and_read_refuses_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(with(dir.path(), None)).unwrap();
    db.put(b"k", b"v").unwrap();
    let e = db.merge_and_read(b"k", b"x").unwrap_err();
    assert!(matches!(e, Error::MergeOperatorMissing { .. }), "{e}");
    let e = db.merge_and_read(b"", b"x").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
}

/// Values are decimal strings, operands "+N": an operator whose operands
/// differ from its values, so that a run of operands combines by
/// `partial_merge` ("+N" again), not by `merge` over no base (a value).
struct Tagged;

impl Tagged {
    fn delta(op: &[u8]) -> Result<i64, String> {
        let s = std::str::from_utf8(op).map_err(|e| e.to_string())?;
        s.strip_prefix('+')
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| format!("operand {s:?} is not +N"))
    }
}

impl MergeOperator for Tagged {
    fn name(&self) -> &str {
        "test.tagged"
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut n: i64 = match existing {
            Some(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or("value is not a number")?,
            None => 0,
        };
        for op in operands {
            n += Self::delta(op)?;
        }
        Ok(n.to_string().into_bytes())
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut n = 0;
        for op in operands {
            n += Self::delta(op)?;
        }
        Ok(format!("+{n}").into_bytes())
    }
}

#[test]
fn a_batch_and_a_transaction_combine_two_merges_of_a_key_by_partial_merge() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(with(dir.path(), Some(Arc::new(Tagged)))).unwrap();
    db.put(b"n", b"5").unwrap();
    let mut b = WriteBatch::new();
    b.merge(b"n", b"+1").merge(b"n", b"+2");
    db.write(b).unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(b"8".to_vec()));
    db.update(|t| {
        t.merge(b"n", b"+10")?;
        t.merge(b"n", b"+20")
    })
    .unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(b"38".to_vec()));
    db.flatten().unwrap();
    assert_eq!(db.get(b"n").unwrap(), Some(b"38".to_vec()));
}
