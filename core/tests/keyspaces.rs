//! Keyspaces: independent ordered maps in one Db, with their own options,
//! written atomically together, dropped in O(1) (core/src/keyspace.rs).

mod common;

use sett::{
    ChangeKind, Clock, Compression, Db, Error, IterOptions, Keyspace, KeyspaceOptions, Options,
    PutOptions, Store, SubscribeOptions, WriteBatch,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn collect(it: sett::Result<sett::DbIterator>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.and_then(|it| it.collect::<sett::Result<Vec<_>>>())
        .expect("iterate")
}

fn scan_ks(ks: &Keyspace, opts: IterOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    collect(ks.iter(opts))
}

fn scan_db(db: &Db, opts: IterOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    collect(db.iter(opts))
}

fn model_scan(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn is_invalid(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(_))
}

fn k(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn two_keyspaces_holding_the_same_user_keys_stay_independent() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(common::tiny_options(dir.path())).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    assert_ne!(a.id(), b.id());
    let (mut ma, mut mb, mut md) = (Model::new(), Model::new(), Model::new());
    for i in 0..300u32 {
        let (va, vb, vd) = (
            format!("a{i}").into_bytes(),
            common::value_for(&k(i), u64::from(i), 100),
            format!("d{i}").into_bytes(),
        );
        a.put(&k(i), &va).unwrap();
        ma.insert(k(i), va);
        if i % 2 == 0 {
            b.put(&k(i), &vb).unwrap();
            mb.insert(k(i), vb);
        }
        db.put(&k(i), &vd).unwrap();
        md.insert(k(i), vd);
    }
    // Part in tables, part in the memtable.
    db.flush().unwrap();
    for i in (0..300u32).step_by(3) {
        a.delete(&k(i)).unwrap();
        ma.remove(&k(i));
    }
    b.delete_range(&k(100), &k(200)).unwrap();
    mb.retain(|key, _| !(key >= &k(100) && key < &k(200)));

    for i in 0..300u32 {
        assert_eq!(a.get(&k(i)).unwrap().as_ref(), ma.get(&k(i)), "a {i}");
        assert_eq!(b.get(&k(i)).unwrap().as_ref(), mb.get(&k(i)), "b {i}");
        assert_eq!(
            db.get(&k(i)).unwrap().as_ref(),
            md.get(&k(i)),
            "default {i}"
        );
    }
    assert_eq!(scan_ks(&a, IterOptions::default()), model_scan(&ma));
    assert_eq!(scan_ks(&b, IterOptions::default()), model_scan(&mb));
    assert_eq!(scan_db(&db, IterOptions::default()), model_scan(&md));
    let mut rev = model_scan(&ma);
    rev.reverse();
    let reverse = IterOptions {
        reverse: true,
        ..IterOptions::default()
    };
    assert_eq!(scan_ks(&a, reverse.clone()), rev);
    // Bounds and prefixes are in the keyspace's own keys.
    let bounded = IterOptions {
        start: Some(k(50)),
        end: Some(k(60)),
        ..IterOptions::default()
    };
    let want: Vec<_> = ma
        .range(k(50)..k(60))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(scan_ks(&a, bounded.clone()), want);
    let mut want_rev = want.clone();
    want_rev.reverse();
    assert_eq!(
        scan_ks(
            &a,
            IterOptions {
                reverse: true,
                ..bounded
            }
        ),
        want_rev
    );
    let prefixed = IterOptions {
        prefix: Some(b"k02".to_vec()),
        ..IterOptions::default()
    };
    let want: Vec<_> = mb
        .iter()
        .filter(|(k, _)| k.starts_with(b"k02"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(scan_ks(&b, prefixed), want);
    // Seek lands on the keyspace's own keys, never past its end.
    let mut it = a.iter(IterOptions::default()).unwrap();
    it.seek(&k(151)).unwrap();
    let first = ma.range(k(151)..).next().map(|(k, _)| k.clone());
    assert_eq!(Some(it.key().to_vec()), first);
    it.seek(b"z").unwrap();
    assert!(!it.valid());
    let mut it = b.iter(reverse).unwrap();
    it.seek(b"\xff\xff\xff\xff\xff").unwrap();
    assert_eq!(Some(it.key().to_vec()), mb.keys().next_back().cloned());
}

#[test]
fn a_batch_and_a_transaction_across_keyspaces_commit_together_and_a_conflicting_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(Options::new(dir.path())).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    let mut batch = WriteBatch::new();
    batch
        .put_in(&a, b"x", b"1")
        .put_in(&b, b"x", b"2")
        .put(b"x", b"3")
        .delete_in(&a, b"gone");
    let before = db.last_version();
    db.write(batch).unwrap();
    let (ea, eb) = (
        a.get_entry(b"x").unwrap().unwrap(),
        b.get_entry(b"x").unwrap().unwrap(),
    );
    let ed = db.get_entry(b"x").unwrap().unwrap();
    // One batch, one version across the keyspaces.
    assert_eq!(
        (ea.version, eb.version, ed.version),
        (before + 1, before + 1, before + 1)
    );
    assert_eq!(
        (ea.value, eb.value, ed.value),
        (b"1".to_vec(), b"2".to_vec(), b"3".to_vec())
    );

    // A transaction across keyspaces sees its own writes and commits them at once.
    let mut txn = db.begin(true).unwrap();
    txn.set_in(&a, b"y", b"ay").unwrap();
    txn.set_in(&b, b"y", b"by").unwrap();
    txn.delete_in(&a, b"x").unwrap();
    txn.set(b"y", b"dy").unwrap();
    assert_eq!(txn.get_in(&a, b"y").unwrap(), Some(b"ay".to_vec()));
    assert_eq!(txn.get_in(&a, b"x").unwrap(), None);
    assert_eq!(txn.get_in(&b, b"x").unwrap(), Some(b"2".to_vec()));
    let seen = collect(txn.iter_in(&a, IterOptions::default()));
    assert_eq!(seen, vec![(b"y".to_vec(), b"ay".to_vec())]);
    assert_eq!(a.get(b"y").unwrap(), None, "not visible before commit");
    txn.commit().unwrap();
    assert_eq!(a.get(b"y").unwrap(), Some(b"ay".to_vec()));
    assert_eq!(b.get(b"y").unwrap(), Some(b"by".to_vec()));
    assert_eq!(a.get(b"x").unwrap(), None);
    assert_eq!(db.get(b"y").unwrap(), Some(b"dy".to_vec()));
    assert_eq!(
        a.get_entry(b"y").unwrap().unwrap().version,
        db.get_entry(b"y").unwrap().unwrap().version
    );

    // A read of a keyspace key conflicts with a later commit to it...
    let mut t1 = db.begin(true).unwrap();
    assert_eq!(t1.get_in(&b, b"y").unwrap(), Some(b"by".to_vec()));
    t1.set_in(&a, b"z", b"1").unwrap();
    b.put(b"y", b"changed").unwrap();
    assert!(matches!(t1.commit(), Err(Error::Conflict)));
    assert_eq!(a.get(b"z").unwrap(), None, "nothing of the failed txn");
    // ...and not with a write of the same user key in another keyspace.
    let mut t2 = db.begin(true).unwrap();
    assert_eq!(t2.get_in(&b, b"y").unwrap(), Some(b"changed".to_vec()));
    t2.set_in(&a, b"z", b"2").unwrap();
    a.put(b"y", b"other keyspace").unwrap();
    t2.commit().unwrap();
    assert_eq!(a.get(b"z").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn dropping_a_keyspace_under_writers_is_one_write_and_its_keys_are_gone_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = common::tiny_options(dir.path());
    o.memtable_size = 64 << 10;
    let db = Arc::new(Db::open(o.clone()).unwrap());
    let big = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    let other = db.keyspace("other", KeyspaceOptions::default()).unwrap();
    for chunk in 0..20u32 {
        let mut b = WriteBatch::new();
        for i in 0..200 {
            let key = k(chunk * 200 + i);
            b.put_in(&big, &key, common::value_for(&key, 1, 100));
        }
        db.write(b).unwrap();
    }
    db.flush().unwrap();
    let tables_before: usize = db.stats().levels.iter().map(|l| l.0).sum();
    assert!(tables_before > 4, "{tables_before} tables");

    // A writer of another keyspace runs through the drop.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (other, stop, written) = (other.clone(), stop.clone(), written.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                other.put(&k(i), &k(i)).unwrap();
                i += 1;
                written.store(u64::from(i), Ordering::Relaxed);
            }
        })
    };
    while written.load(Ordering::Relaxed) < 100 {
        std::thread::yield_now();
    }
    let versions = db.last_version();
    let t = Instant::now();
    db.drop_keyspace("big").unwrap();
    let took = t.elapsed();
    let after_drop = written.load(Ordering::Relaxed);
    while written.load(Ordering::Relaxed) < after_drop + 100 {
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let n_other = written.load(Ordering::Relaxed) as u32;

    // One range tombstone, no table rewritten: the drop did not scan.
    assert_eq!(db.stats().range_tombstones, 1);
    assert!(took < Duration::from_secs(2), "the drop took {took:?}");
    assert!(db.last_version() > versions);
    assert!(matches!(big.get(&k(1)), Err(e) if is_invalid(&e)));
    assert!(matches!(big.put(&k(1), b"v"), Err(e) if is_invalid(&e)));
    let mut late = WriteBatch::new();
    late.put_in(&other, b"late", b"1")
        .put_in(&big, b"late", b"1");
    assert!(matches!(db.write(late), Err(e) if is_invalid(&e)));
    assert_eq!(
        other.get(b"late").unwrap(),
        None,
        "a refused batch is refused whole"
    );
    assert!(matches!(db.drop_keyspace("big"), Err(Error::NotFound(_))));
    assert_eq!(db.keyspaces().unwrap(), vec!["other".to_string()]);
    let old_id = big.id();
    drop((big, other));
    db.close().unwrap();
    drop(db);

    let db = Db::open(o).unwrap();
    assert_eq!(db.keyspaces().unwrap(), vec!["other".to_string()]);
    let other = db.keyspace("other", KeyspaceOptions::default()).unwrap();
    assert_eq!(
        scan_ks(&other, IterOptions::default()).len(),
        n_other as usize
    );
    let again = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    assert!(again.id() > old_id, "ids are never given again");
    assert!(scan_ks(&again, IterOptions::default()).is_empty());
    db.flatten().unwrap();
    assert!(scan_ks(&again, IterOptions::default()).is_empty());
    let tables_after: usize = db.stats().levels.iter().map(|l| l.0).sum();
    assert!(
        tables_after < tables_before,
        "compaction reclaims the dropped keys: {tables_after} tables, {tables_before} before"
    );
}

#[test]
fn a_reopened_db_lists_its_keyspaces_with_their_options() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options::new(dir.path());
    // With a codec of its own, "small"'s record is the newer format.
    let small = KeyspaceOptions {
        value_threshold: Some(32),
        default_ttl: None,
        compression: Some(Compression::Zstd),
    };
    let ttl = KeyspaceOptions {
        value_threshold: None,
        default_ttl: Some(Duration::from_secs(3600)),
        compression: None,
    };
    {
        let db = Db::open(o.clone()).unwrap();
        assert!(db.keyspaces().unwrap().is_empty());
        db.keyspace("small", small).unwrap();
        db.keyspace("ttl", ttl).unwrap();
        db.keyspace("plain", KeyspaceOptions::default()).unwrap();
        db.close().unwrap();
    }
    let db = Db::open(o.clone()).unwrap();
    assert_eq!(db.keyspaces().unwrap(), vec!["plain", "small", "ttl"]);
    let s = db.keyspace("small", KeyspaceOptions::default()).unwrap();
    assert_eq!(s.options(), small);
    let t = db.keyspace("ttl", KeyspaceOptions::default()).unwrap();
    assert_eq!(t.options(), ttl);
    // Other options given at open replace the recorded ones, for every handle.
    let bigger = KeyspaceOptions {
        value_threshold: Some(4096),
        default_ttl: None,
        compression: Some(Compression::None),
    };
    let s2 = db.keyspace("small", bigger).unwrap();
    assert_eq!((s.options(), s2.options()), (bigger, bigger));
    assert!(matches!(
        db.keyspace(
            "bad",
            KeyspaceOptions {
                value_threshold: Some(0),
                ..KeyspaceOptions::default()
            }
        ),
        Err(Error::InvalidOption { .. })
    ));
    assert!(matches!(db.keyspace("", KeyspaceOptions::default()), Err(e) if is_invalid(&e)));
    db.close().unwrap();
    let mut ro = o.clone();
    ro.read_only = true;
    let db = Db::open(ro).unwrap();
    assert_eq!(
        db.keyspace("small", KeyspaceOptions::default())
            .unwrap()
            .options(),
        bigger
    );
    assert!(matches!(
        db.keyspace("new", KeyspaceOptions::default()),
        Err(Error::ReadOnly)
    ));
}

#[test]
fn the_default_keyspace_never_shows_keyspace_data_and_refuses_marker_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(common::tiny_options(dir.path())).unwrap();
    let mut md = Model::new();
    for i in 0..100u32 {
        db.put(&k(i), b"d").unwrap();
        md.insert(k(i), b"d".to_vec());
    }
    // Keys just below the marker are ordinary keys.
    for key in [&b"\xff\xff\xff"[..], b"\xff\xff\xfe\xff\xff"] {
        db.put(key, b"edge").unwrap();
        md.insert(key.to_vec(), b"edge".to_vec());
    }
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    for i in 0..100u32 {
        ks.put(&k(i), b"ks").unwrap();
    }
    db.flush().unwrap();
    let all = scan_db(&db, IterOptions::default());
    assert_eq!(all, model_scan(&md));
    let rev = scan_db(
        &db,
        IterOptions {
            reverse: true,
            ..IterOptions::default()
        },
    );
    assert_eq!(rev.len(), md.len());
    assert_eq!(
        rev.first().map(|x| x.0.clone()),
        md.keys().next_back().cloned()
    );
    let past = scan_db(
        &db,
        IterOptions {
            start: Some(b"\xff".to_vec()),
            end: Some(vec![0xff; 20]),
            ..IterOptions::default()
        },
    );
    assert_eq!(past.len(), 2, "{past:?}");
    assert!(scan_db(
        &db,
        IterOptions {
            prefix: Some(vec![0xff; 4]),
            ..IterOptions::default()
        }
    )
    .is_empty());

    // Marker keys are refused everywhere, and nothing of a refused batch lands.
    let marker = b"\xff\xff\xff\xff\x00\x00\x00\x00ks".to_vec();
    for r in [
        db.put(&marker, b"x"),
        db.delete(&marker),
        db.get(&marker).map(|_| ()),
        db.drop_prefix(b"\xff\xff\xff\xff"),
        db.delete_range(&marker, &[0xff; 9]),
        db.get_many(&[&marker[..]]).map(|_| ()),
    ] {
        assert!(
            matches!(r, Err(ref e) if is_invalid(e) && e.to_string().contains("FF FF FF FF")),
            "{r:?}"
        );
    }
    let mut b = WriteBatch::new();
    b.put(b"ok", b"1").put(marker.clone(), b"x");
    assert!(matches!(db.write(b), Err(e) if is_invalid(&e)));
    assert_eq!(db.get(b"ok").unwrap(), None);
    let mut t = db.begin(true).unwrap();
    assert!(matches!(t.set(&marker, b"x"), Err(e) if is_invalid(&e)));
    assert!(matches!(t.get(&marker), Err(e) if is_invalid(&e)));
    assert!(matches!(t.delete_range(&marker, b""), Err(e) if is_invalid(&e)));
    drop(t);
    assert_eq!(db.keyspaces().unwrap(), vec!["ks".to_string()]);

    // Unbounded range deletes of the default keyspace stop at the marker.
    db.delete_range(&k(90), b"").unwrap();
    md.retain(|key, _| key < &k(90));
    assert_eq!(scan_db(&db, IterOptions::default()), model_scan(&md));
    let mut t = db.begin(true).unwrap();
    t.delete_range(&k(80), b"").unwrap();
    t.commit().unwrap();
    md.retain(|key, _| key < &k(80));
    assert_eq!(scan_db(&db, IterOptions::default()), model_scan(&md));
    assert_eq!(scan_ks(&ks, IterOptions::default()).len(), 100);
    db.drop_prefix(b"").unwrap();
    assert!(scan_db(&db, IterOptions::default()).is_empty());
    assert_eq!(scan_ks(&ks, IterOptions::default()).len(), 100);
    assert_eq!(db.keyspaces().unwrap(), vec!["ks".to_string()]);
    db.flatten().unwrap();
    assert_eq!(scan_ks(&ks, IterOptions::default()).len(), 100);
    assert_eq!(ks.get(&k(7)).unwrap(), Some(b"ks".to_vec()));
    // drop_all empties everything, keyspaces too.
    db.drop_all().unwrap();
    assert!(db.keyspaces().unwrap().is_empty());
    assert!(matches!(ks.get(&k(7)), Err(e) if is_invalid(&e)));
}

#[test]
fn change_feed_subscribers_of_the_default_keyspace_never_see_keyspace_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(Options::new(dir.path())).unwrap();
    let ks = db.keyspace("ks", KeyspaceOptions::default()).unwrap();
    let all = db.subscribe(SubscribeOptions::default()).unwrap();
    let own = ks.subscribe(SubscribeOptions::default()).unwrap();
    let mut b = WriteBatch::new();
    b.put(b"d", b"1").put_in(&ks, b"k", b"2");
    db.write(b).unwrap();
    ks.delete_range(b"a", b"").unwrap();
    db.put(b"e", b"3").unwrap();
    db.drop_keyspace("ks").unwrap();
    let take = |s: &sett::Subscription| {
        let mut out = Vec::new();
        while let Ok(Some(c)) = s.next(Some(Duration::from_millis(50))) {
            out.extend(c.into_iter().map(|c| (c.kind, c.key, c.value)));
        }
        out
    };
    assert_eq!(
        take(&all),
        vec![
            (ChangeKind::Put, b"d".to_vec(), b"1".to_vec()),
            (ChangeKind::Put, b"e".to_vec(), b"3".to_vec()),
        ]
    );
    assert_eq!(
        take(&own),
        vec![
            (ChangeKind::Put, b"k".to_vec(), b"2".to_vec()),
            (ChangeKind::DeleteRange, b"a".to_vec(), Vec::new()),
            (ChangeKind::DeleteRange, Vec::new(), Vec::new()),
        ]
    );
}

#[test]
fn a_keyspace_s_value_threshold_decides_where_its_values_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path());
    o.value_threshold = 1024;
    let db = Db::open(o).unwrap();
    let small = db
        .keyspace(
            "small",
            KeyspaceOptions {
                value_threshold: Some(64),
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    let plain = db.keyspace("plain", KeyspaceOptions::default()).unwrap();
    let vlog = |db: &Db| db.stats().vlog_bytes;
    let v = vec![7u8; 200];
    let start = vlog(&db);
    for i in 0..50u32 {
        plain.put(&k(i), &v).unwrap();
        db.put(&k(i), &v).unwrap();
    }
    assert_eq!(vlog(&db), start, "200-byte values stay inline under 1024");
    for i in 0..50u32 {
        small.put(&k(i), &v).unwrap();
    }
    let grew = vlog(&db) - start;
    assert!(grew >= 50 * 200, "the value log grew by {grew} bytes");
    // Through a batch and a transaction too.
    let mut b = WriteBatch::new();
    b.put_in(&small, b"b", v.clone());
    db.write(b).unwrap();
    let mut t = db.begin(true).unwrap();
    t.set_in(&small, b"t", &v).unwrap();
    t.commit().unwrap();
    assert!(vlog(&db) - start >= 52 * 200);
    assert_eq!(small.get(b"t").unwrap(), Some(v.clone()));
    assert_eq!(small.get(&k(3)).unwrap(), Some(v));
}

#[test]
fn a_keyspace_s_default_ttl_expires_its_puts() {
    let dir = tempfile::tempdir().unwrap();
    let now = Arc::new(AtomicU64::new(1_000_000));
    let mut o = Options::new(dir.path());
    o.clock = Clock::manual(now.clone());
    let db = Db::open(o).unwrap();
    let ks = db
        .keyspace(
            "sessions",
            KeyspaceOptions {
                value_threshold: None,
                default_ttl: Some(Duration::from_secs(10)),
                compression: None,
            },
        )
        .unwrap();
    ks.put(b"a", b"1").unwrap();
    let mut b = WriteBatch::new();
    b.put_in(&ks, b"b", b"2");
    db.write(b).unwrap();
    let mut t = db.begin(true).unwrap();
    t.set_in(&ks, b"c", b"3").unwrap();
    t.commit().unwrap();
    ks.put_with(
        b"long",
        b"4",
        PutOptions {
            ttl: Some(Duration::from_secs(100)),
            ..PutOptions::default()
        },
    )
    .unwrap();
    db.put(b"a", b"default").unwrap();
    assert_eq!(ks.get_entry(b"a").unwrap().unwrap().expires_at, 1_000_010);
    now.store(1_000_011, Ordering::SeqCst);
    for key in [&b"a"[..], b"b", b"c"] {
        assert_eq!(ks.get(key).unwrap(), None, "{key:?} expired");
    }
    assert_eq!(ks.get(b"long").unwrap(), Some(b"4".to_vec()));
    assert_eq!(db.get(b"a").unwrap(), Some(b"default".to_vec()));
    assert_eq!(scan_ks(&ks, IterOptions::default()).len(), 1);
}

fn fill_two(db: &Db) -> (Model, Model) {
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db
        .keyspace(
            "b",
            KeyspaceOptions {
                value_threshold: Some(32),
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    let (mut ma, mut mb) = (Model::new(), Model::new());
    for i in 0..200u32 {
        let v = common::value_for(&k(i), 1, 20 + (i as usize % 100));
        a.put(&k(i), &v).unwrap();
        ma.insert(k(i), v.clone());
        b.put(&k(i), &v[..10]).unwrap();
        mb.insert(k(i), v[..10].to_vec());
        db.put(&k(i), b"d").unwrap();
    }
    db.keyspace("dropped", KeyspaceOptions::default())
        .unwrap()
        .put(b"x", b"y")
        .unwrap();
    db.drop_keyspace("dropped").unwrap();
    (ma, mb)
}

fn check_two(db: &Db, (ma, mb): &(Model, Model), what: &str) {
    assert_eq!(db.keyspaces().unwrap(), vec!["a", "b"], "{what}");
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    assert_eq!(b.options().value_threshold, Some(32), "{what}");
    assert!(
        scan_ks(&a, IterOptions::default()) == model_scan(ma),
        "{what}: a"
    );
    assert!(
        scan_ks(&b, IterOptions::default()) == model_scan(mb),
        "{what}: b"
    );
    assert_eq!(
        scan_db(db, IterOptions::default()).len(),
        200,
        "{what}: default"
    );
    // Ids go on after the highest one given, the dropped one included.
    let c = db.keyspace("c", KeyspaceOptions::default()).unwrap();
    assert!(
        c.id() > b.id() + 1,
        "{what}: id {} after {}",
        c.id(),
        b.id()
    );
}

#[test]
fn backup_restore_and_checkpoint_carry_keyspaces_and_their_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(common::tiny_options(&dir.path().join("src"))).unwrap();
    let models = fill_two(&db);
    let mut stream = Vec::new();
    db.backup(&mut stream, 0).unwrap();
    db.checkpoint(dir.path().join("ckpt")).unwrap();

    let restored = Db::open(common::tiny_options(&dir.path().join("restored"))).unwrap();
    restored.load(&mut stream.as_slice()).unwrap();
    check_two(&restored, &models, "restored");
    restored.close().unwrap();
    let ckpt = Db::open(common::tiny_options(&dir.path().join("ckpt"))).unwrap();
    check_two(&ckpt, &models, "checkpoint");
}

fn fixture_copy() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wal3");
    assert!(src.is_dir(), "fixture {} is missing", src.display());
    common::copy_dir(&src)
}

#[test]
fn a_database_from_before_keyspaces_opens_as_the_default_keyspace_and_takes_keyspaces() {
    let tmp = fixture_copy();
    let mut o = Options::new(tmp.path());
    // The fixture's options (core/tests/format_compat.rs).
    o.value_threshold = 64;
    o.memtable_size = 8 << 10;
    o.table_size = 8 << 10;
    o.level_base_size = 32 << 10;
    o.level_multiplier = 4;
    o.num_levels = 5;
    o.vlog_file_size = 32 << 10;
    let db = Db::open(o.clone()).unwrap();
    let before = scan_db(&db, IterOptions::default());
    assert!(before.len() > 300, "{} keys", before.len());
    assert!(db.keyspaces().unwrap().is_empty());
    let ks = db.keyspace("new", KeyspaceOptions::default()).unwrap();
    assert_eq!(ks.id(), 1);
    for (key, _) in &before {
        ks.put(key, b"in the keyspace").unwrap();
    }
    assert!(scan_db(&db, IterOptions::default()) == before);
    db.close().unwrap();
    let db = Db::open(o).unwrap();
    assert!(scan_db(&db, IterOptions::default()) == before);
    let ks = db.keyspace("new", KeyspaceOptions::default()).unwrap();
    assert_eq!(scan_ks(&ks, IterOptions::default()).len(), before.len());
    db.verify().unwrap();
}

/// Writes, reads and scans one map through `&dyn Store`, as a binding does.
fn exercise(s: &dyn Store, tag: &str) -> Model {
    let mut m = Model::new();
    for i in 0..50u32 {
        let v = format!("{tag}{i}").into_bytes();
        s.put(&k(i), &v).unwrap();
        m.insert(k(i), v);
    }
    s.delete(&k(3)).unwrap();
    m.remove(&k(3));
    s.delete_range(&k(10), &k(20)).unwrap();
    m.retain(|key, _| !(key >= &k(10) && key < &k(20)));
    s.put_with(
        &k(60),
        b"meta",
        PutOptions {
            user_meta: 7,
            ttl: None,
        },
    )
    .unwrap();
    m.insert(k(60), b"meta".to_vec());
    assert_eq!(s.get_entry(&k(60)).unwrap().map(|i| i.user_meta), Some(7));
    m
}

#[test]
fn the_default_keyspace_and_a_named_one_serve_the_same_store_calls_independently() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(common::tiny_options(dir.path())).unwrap();
    let ks = db.keyspace("named", KeyspaceOptions::default()).unwrap();
    let md = exercise(&db, "d");
    let mk = exercise(&ks, "k");
    for (s, m) in [(&db as &dyn Store, &md), (&ks as &dyn Store, &mk)] {
        assert_eq!(collect(s.iter(IterOptions::default())), model_scan(m));
        let keys: Vec<Vec<u8>> = (0..70u32).map(k).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let got = s.get_many(&refs).unwrap();
        let want: Vec<Option<Vec<u8>>> = keys.iter().map(|key| m.get(key).cloned()).collect();
        assert_eq!(got, want, "get_many answers in the order asked");
        assert_eq!(s.get(&k(3)).unwrap(), None);
    }
    // A keyspace's get_many refuses an empty key as its get does, and a
    // dropped keyspace refuses it too.
    assert!(ks
        .get_many(&[k(1).as_slice(), b"".as_slice()])
        .is_err_and(|e| is_invalid(&e)));
    // The refusal lost nothing: both stores still read as their models.
    for (s, m) in [(&db as &dyn Store, &md), (&ks as &dyn Store, &mk)] {
        assert_eq!(collect(s.iter(IterOptions::default())), model_scan(m));
    }
    db.drop_keyspace("named").unwrap();
    assert!(ks
        .get_many(&[k(1).as_slice()])
        .is_err_and(|e| is_invalid(&e)));
}
