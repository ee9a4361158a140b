//! The change feed: order, versions, prefixes, back-pressure, history.

use sett::{
    Change, ChangeKind, Db, Error, Options, PutOptions, SubscribeOptions, Subscription, WriteBatch,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(dir: &std::path::Path) -> Db {
    Db::open(Options::new(dir)).unwrap()
}

fn subscribe(db: &Db, prefixes: &[&[u8]], from: Option<u64>) -> Subscription {
    db.subscribe(SubscribeOptions {
        prefixes: prefixes.iter().map(|p| p.to_vec()).collect(),
        from,
        ..SubscribeOptions::default()
    })
    .unwrap()
}

/// Takes changes until `n` arrived (or panics after a while).
fn take(sub: &Subscription, n: usize) -> Vec<Change> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} changes",
            out.len()
        );
        if let Some(c) = sub.next(Some(Duration::from_millis(200))).unwrap() {
            out.extend(c);
        }
    }
    assert_eq!(out.len(), n, "more changes than written");
    out
}

fn version_of(db: &Db, key: &[u8]) -> u64 {
    db.get_entry(key).unwrap().unwrap().version
}

#[test]
fn changes_arrive_in_commit_order_with_their_versions_under_the_prefixes_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    db.put(b"a-before", b"x").unwrap();
    let sub = subscribe(&db, &[b"a", b"c"], None);
    assert_eq!(sub.start_version(), db.last_version());

    db.put(b"a1", b"v1").unwrap();
    db.put(b"b1", b"not mine").unwrap();
    db.delete(b"a1").unwrap();
    let opts = PutOptions {
        user_meta: 7,
        ttl: Some(Duration::from_secs(100)),
    };
    db.put_with(b"c1", b"v2", opts).unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"a2", b"v3");
    batch.put(b"b2", b"not mine");
    batch.delete(b"a3");
    db.write(batch).unwrap();
    db.update(|t| {
        t.set(b"a4", b"v4")?;
        t.set(b"c2", b"v5")
    })
    .unwrap();

    let got = take(&sub, 7);
    let keys: Vec<(&[u8], ChangeKind, &[u8])> = got
        .iter()
        .map(|c| (&c.key[..], c.kind, &c.value[..]))
        .collect();
    let want: Vec<(&[u8], ChangeKind, &[u8])> = vec![
        (b"a1", ChangeKind::Put, b"v1"),
        (b"a1", ChangeKind::Delete, b""),
        (b"c1", ChangeKind::Put, b"v2"),
        (b"a2", ChangeKind::Put, b"v3"),
        (b"a3", ChangeKind::Delete, b""),
        (b"a4", ChangeKind::Put, b"v4"),
        (b"c2", ChangeKind::Put, b"v5"),
    ];
    assert_eq!(keys, want);
    // Versions are the ones reads see; a batch's and a transaction's ops share one.
    let item = db.get_entry(b"c1").unwrap().unwrap();
    assert_eq!(
        (got[2].version, got[2].user_meta, got[2].expires_at),
        (item.version, 7, item.expires_at)
    );
    assert!(item.expires_at > 0);
    assert_eq!(got[3].version, version_of(&db, b"a2"));
    assert_eq!(got[4].version, got[3].version);
    assert_eq!(got[5].version, version_of(&db, b"a4"));
    assert_eq!(got[6].version, got[5].version);
    assert!(got[0].version > sub.start_version());
    assert!(got[0].version < got[1].version && got[1].version < got[2].version);
    assert!(got[2].version < got[3].version && got[4].version < got[5].version);
    assert_eq!(sub.next(Some(Duration::from_millis(20))).unwrap(), None);
}

#[test]
fn concurrent_writers_are_seen_once_each_in_increasing_version_order_after_they_are_visible() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    let sub = subscribe(&db, &[], None);
    let (threads, per) = (4, 500);
    let writers: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    db.put(format!("t{t}-{i:04}").as_bytes(), &[t as u8; 40])
                        .unwrap();
                }
            })
        })
        .collect();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < threads * per {
        assert!(Instant::now() < deadline);
        if let Some(batch) = sub.next(Some(Duration::from_millis(200))).unwrap() {
            // Delivered only once visible: a read now sees each of them.
            for c in &batch {
                assert!(db.get(&c.key).unwrap().is_some(), "{:?} not visible", c.key);
            }
            got.extend(batch);
        }
    }
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(sub.next(Some(Duration::from_millis(50))).unwrap(), None);
    assert!(got.windows(2).all(|w| w[0].version < w[1].version));
    let mut seen = HashMap::new();
    for c in &got {
        assert!(seen.insert(c.key.clone(), c.version).is_none(), "twice");
    }
    for (k, v) in seen {
        assert_eq!(version_of(&db, &k), v);
    }
}

#[test]
fn a_slow_subscriber_never_slows_a_writer_and_resumes_from_where_it_fell_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    opts.change_feed_history_bytes = 64 << 20;
    let db = Arc::new(Db::open(opts).unwrap());
    let key = |i: usize| format!("k{i:06}").into_bytes();
    let n = 10_000;
    let write = |db: &Db, from: usize, to: usize| -> Duration {
        let mut worst = Duration::ZERO;
        for i in from..to {
            let t = Instant::now();
            db.put(&key(i), &[1; 100]).unwrap();
            worst = worst.max(t.elapsed());
        }
        worst
    };
    // The writer alone, as a reference.
    let alone = write(&db, 0, n);

    let sleep = Duration::from_millis(2000);
    let sub = db
        .subscribe(SubscribeOptions {
            max_pending_bytes: 64 << 10,
            ..SubscribeOptions::default()
        })
        .unwrap();
    let (asleep_tx, asleep) = std::sync::mpsc::channel();
    let slow = std::thread::spawn(move || {
        // The first change, then a long sleep while the writer goes on.
        let mut got = sub.next(Some(Duration::from_secs(10))).unwrap().unwrap();
        asleep_tx.send(()).unwrap();
        std::thread::sleep(sleep);
        let woke = Instant::now();
        let resume_from = loop {
            match sub.next(Some(Duration::from_secs(10))) {
                Ok(Some(c)) => got.extend(c),
                Ok(None) => panic!("the writer stopped without the subscriber falling behind"),
                Err(Error::FellBehind { resume_from }) => break resume_from,
                Err(e) => panic!("{e}"),
            }
        };
        // Every later call says so too.
        assert!(matches!(
            sub.next(Some(Duration::ZERO)),
            Err(Error::FellBehind { .. })
        ));
        (got, resume_from, woke)
    });
    db.put(b"first", b"v").unwrap();
    let first = db.last_version();
    asleep.recv().unwrap();
    let with_slow = write(&db, n, 2 * n);
    let writes_done = Instant::now();
    let (mut got, resume_from, woke) = slow.join().unwrap();
    eprintln!("worst put: alone {alone:?}, with a slow subscriber {with_slow:?}");
    // The bound: a write never waits on the subscriber. All of them were
    // done while it slept, and none took long.
    assert!(
        writes_done < woke,
        "the writer finished after the subscriber woke"
    );
    assert!(
        with_slow < sleep / 4,
        "a put took {with_slow:?} with a subscriber sleeping {sleep:?}"
    );
    assert_eq!(got.len(), 1);
    assert_eq!(resume_from, first);

    // Resubscribing from there gets exactly the rest, out of the history.
    let sub = subscribe(&db, &[], Some(resume_from));
    got.extend(take(&sub, n));
    let want: Vec<Vec<u8>> = std::iter::once(b"first".to_vec())
        .chain((n..2 * n).map(key))
        .collect();
    let keys: Vec<Vec<u8>> = got.iter().map(|c| c.key.clone()).collect();
    assert!(keys == want, "resumed changes differ from the writes");
    assert!(got.windows(2).all(|w| w[0].version + 1 == w[1].version));
}

#[test]
fn subscribing_from_a_version_in_the_history_while_writes_go_on_has_no_gap_and_no_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(open(dir.path()));
    // Capture starts with the first subscription.
    drop(subscribe(&db, &[], None));
    let base = db.last_version();
    let n = 3000u64;
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..n {
                db.put(format!("k{i:05}").as_bytes(), b"v").unwrap();
            }
        })
    };
    while db.last_version() < base + n / 3 {
        std::thread::yield_now();
    }
    let from = base + n / 4;
    let sub = subscribe(&db, &[], Some(from));
    let got = take(&sub, (base + n - from) as usize);
    writer.join().unwrap();
    let versions: Vec<u64> = got.iter().map(|c| c.version).collect();
    let want: Vec<u64> = (from + 1..=base + n).collect();
    assert!(
        versions == want,
        "from {from}: got {} versions, {:?}..{:?}; want {}..={}",
        versions.len(),
        versions.first(),
        versions.last(),
        from + 1,
        base + n
    );
    assert_eq!(sub.next(Some(Duration::from_millis(50))).unwrap(), None);
}

#[test]
fn a_version_older_than_the_history_is_refused_naming_the_oldest_one_held() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    opts.change_feed_history_bytes = 4096;
    let db = Db::open(opts).unwrap();
    drop(subscribe(&db, &[], None));
    let base = db.last_version();
    for i in 0..1000 {
        db.put(format!("k{i:05}").as_bytes(), &[0; 20]).unwrap();
    }
    let err = db
        .subscribe(SubscribeOptions {
            from: Some(base),
            ..SubscribeOptions::default()
        })
        .unwrap_err();
    let Error::FeedHistoryTooShort { from, oldest } = err.clone() else {
        panic!("{err}");
    };
    assert_eq!(from, base);
    assert!(oldest > base && oldest < db.last_version(), "{oldest}");
    assert!(err.to_string().contains(&format!("start from is {oldest}")));
    // From the oldest held: exactly what followed it.
    let sub = subscribe(&db, &[], Some(oldest));
    let got = take(&sub, (db.last_version() - oldest) as usize);
    assert_eq!(got[0].version, oldest + 1);
    // A version not committed yet is refused too.
    let future = db.subscribe(SubscribeOptions {
        from: Some(db.last_version() + 1),
        ..SubscribeOptions::default()
    });
    assert!(matches!(future, Err(Error::InvalidArgument(_))));
}

#[test]
fn without_a_history_writes_made_while_nobody_listened_cannot_be_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    opts.change_feed_history_bytes = 0;
    let db = Db::open(opts).unwrap();
    let sub = subscribe(&db, &[], None);
    let at = sub.start_version();
    drop(sub);
    db.put(b"k", b"v").unwrap();
    let err = db
        .subscribe(SubscribeOptions {
            from: Some(at),
            ..SubscribeOptions::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, Error::FeedHistoryTooShort { from, oldest } if from == at && oldest == at + 1)
    );
}

#[test]
fn a_drop_prefix_and_a_range_delete_are_delivered_as_one_change_to_subscribers_whose_prefixes_they_meet(
) {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let sub_a = subscribe(&db, &[b"a"], None);
    let sub_z = subscribe(&db, &[b"z"], None);
    let all = subscribe(&db, &[], None);
    db.put(b"a1", b"v").unwrap();
    db.drop_prefix(b"a").unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"m1", b"gone");
    batch.delete_range(b"b", b"n");
    batch.put(b"m2", b"kept");
    db.write(batch).unwrap();
    db.delete_range(b"y", b"").unwrap();
    let kinds = |got: &[Change]| -> Vec<(ChangeKind, Vec<u8>, Vec<u8>)> {
        got.iter()
            .map(|c| (c.kind, c.key.clone(), c.value.clone()))
            .collect()
    };
    // The prefix "a" meets [a, b) only; "z" meets [y, end); all see each, in order.
    assert_eq!(
        kinds(&take(&sub_a, 2)),
        vec![
            (ChangeKind::Put, b"a1".to_vec(), b"v".to_vec()),
            (ChangeKind::DeleteRange, b"a".to_vec(), b"b".to_vec()),
        ]
    );
    assert_eq!(
        kinds(&take(&sub_z, 1)),
        vec![(ChangeKind::DeleteRange, b"y".to_vec(), Vec::new())]
    );
    let got = take(&all, 5);
    assert_eq!(
        kinds(&got)[1..],
        vec![
            (ChangeKind::DeleteRange, b"a".to_vec(), b"b".to_vec()),
            (ChangeKind::DeleteRange, b"b".to_vec(), b"n".to_vec()),
            (ChangeKind::Put, b"m2".to_vec(), b"kept".to_vec()),
            (ChangeKind::DeleteRange, b"y".to_vec(), Vec::new()),
        ][..]
    );
    // A batch's range delete and its later put share the batch's version.
    assert_eq!(got[2].version, got[3].version);
    assert_eq!(got[3].version, version_of(&db, b"m2"));
    // Nothing else reached "a" or "z".
    assert!(sub_a
        .next(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
    assert!(sub_z
        .next(Some(Duration::from_millis(50)))
        .unwrap()
        .is_none());
}

#[test]
fn closing_the_db_delivers_what_was_committed_and_then_ends_the_subscription() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let sub = subscribe(&db, &[], None);
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert_eq!(take(&sub, 1)[0].key, b"k");
    assert!(matches!(sub.next(None), Err(Error::Closed)));
    assert!(matches!(
        db.subscribe(SubscribeOptions::default()),
        Err(Error::Closed)
    ));
}

#[test]
fn a_waiting_subscriber_wakes_when_the_db_closes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let sub = subscribe(&db, &[], None);
    let waiter = std::thread::spawn(move || sub.next(None));
    std::thread::sleep(Duration::from_millis(50));
    db.close().unwrap();
    assert!(matches!(waiter.join().unwrap(), Err(Error::Closed)));
}

#[test]
fn a_restore_is_delivered_like_any_write() {
    let dir = tempfile::tempdir().unwrap();
    let src = open(&dir.path().join("src"));
    src.put(b"r1", b"v1").unwrap();
    src.put(b"r2", b"v2").unwrap();
    let mut stream = Vec::new();
    src.backup(&mut stream, 0).unwrap();
    let dst = open(&dir.path().join("dst"));
    let sub = subscribe(&dst, &[], None);
    dst.load(&mut stream.as_slice()).unwrap();
    let got = take(&sub, 2);
    let keys: Vec<&[u8]> = got.iter().map(|c| &c.key[..]).collect();
    assert_eq!(keys, vec![&b"r1"[..], b"r2"]);
}

#[test]
fn a_bulk_load_ends_live_subscriptions_and_later_writes_are_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let sub = subscribe(&db, &[], None);
    let mut loader = db.bulk_load().unwrap();
    loader.add(b"b1", b"v").unwrap();
    loader.finish().unwrap();
    let Err(Error::FellBehind { resume_from }) = sub.next(Some(Duration::from_secs(5))) else {
        panic!("a bulk load was not reported");
    };
    assert!(matches!(
        db.subscribe(SubscribeOptions {
            from: Some(resume_from),
            ..SubscribeOptions::default()
        }),
        Err(Error::FeedHistoryTooShort { .. })
    ));
    let sub = subscribe(&db, &[], None);
    db.put(b"after", b"v").unwrap();
    assert_eq!(take(&sub, 1)[0].key, b"after");
}

#[test]
fn a_subscription_started_under_writers_misses_no_write_after_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    // No history: capture stops between subscriptions, so each one turns it on
    // while a write group may be in flight.
    opts.change_feed_history_bytes = 0;
    let db = Arc::new(Db::open(opts).unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.put(format!("k{i}").as_bytes(), b"v").unwrap();
                i += 1;
            }
        })
    };
    for _ in 0..1000 {
        let sub = subscribe(&db, &[], None);
        let mut versions = Vec::new();
        while versions.len() < 5 {
            let got = sub.next(Some(Duration::from_secs(10))).unwrap().unwrap();
            versions.extend(got.iter().map(|c| c.version));
        }
        let start = sub.start_version();
        versions.truncate(5);
        assert_eq!(versions, (start + 1..=start + 5).collect::<Vec<_>>());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

/// Key, value, version, user meta and expiry of each entry.
type Dump = Vec<(Vec<u8>, Vec<u8>, u64, u8, u64)>;

/// Applies `changes` to `replica` as a follower does: one batch per version,
/// committed at that version.
fn apply_at_versions(replica: &Db, changes: &[Change]) {
    let mut i = 0;
    while i < changes.len() {
        let v = changes[i].version;
        let mut b = WriteBatch::new();
        while i < changes.len() && changes[i].version == v {
            b.add_change(&changes[i]);
            i += 1;
        }
        b.set_version(v);
        replica.write(b).unwrap();
    }
}

#[test]
fn a_replica_applying_the_feed_at_its_versions_holds_the_same_entries_and_version() {
    let (md, rd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = open(md.path());
    let replica = open(rd.path());
    let sub = subscribe(&master, &[], None);
    let ttl = PutOptions {
        user_meta: 9,
        ttl: Some(Duration::from_secs(3600)),
    };
    for i in 0..50u32 {
        master
            .put(format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    master.put_with(b"k010", b"with ttl", ttl).unwrap();
    master.delete(b"k020").unwrap();
    master.delete_range(b"k030", b"k040").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"k001", b"batched")
        .put(b"k002", b"batched")
        .delete(b"k003");
    master.write(b).unwrap();
    let changes = take(&sub, 50 + 3 + 3);
    apply_at_versions(&replica, &changes);
    assert_eq!(replica.last_version(), master.last_version());

    let dump = |db: &Db| -> Dump {
        (0..50u32)
            .filter_map(|i| {
                let k = format!("k{i:03}").into_bytes();
                db.get_entry(&k)
                    .unwrap()
                    .map(|e| (k, e.value, e.version, e.user_meta, e.expires_at))
            })
            .collect()
    };
    let want = dump(&master);
    assert_eq!(
        want.len(),
        50 - 12,
        "two deletes and a range delete of 10 keys"
    );
    assert_eq!(dump(&replica), want);

    // The replica's versions go on from the master's, also after a reopen.
    replica.close().unwrap();
    drop(replica);
    let replica = open(rd.path());
    assert_eq!(replica.last_version(), master.last_version());
    assert_eq!(dump(&replica), want);
    let mut stale = WriteBatch::new();
    stale
        .put(b"k001", b"old")
        .set_version(master.last_version());
    match replica.write(stale) {
        Err(Error::InvalidArgument(msg)) => {
            assert!(msg.contains("cannot commit at version"), "{msg}")
        }
        other => panic!("a version already handed out was taken: {other:?}"),
    }
    assert_eq!(
        replica.get(b"k001").unwrap().as_deref(),
        Some(&b"batched"[..])
    );
    let mut ahead = WriteBatch::new();
    ahead
        .put(b"k900", b"x")
        .set_version(master.last_version() + 100);
    replica.write(ahead).unwrap();
    replica.put(b"k901", b"y").unwrap();
    assert_eq!(version_of(&replica, b"k901"), master.last_version() + 101);
}
