//! Model-based test: long random sequences of operations against a `BTreeMap`,
//! with tiny memtables and tables so that flushes, compactions, trivial moves
//! and several value-log files all happen, and values on both sides of the
//! value threshold. Range deletes (alone, in batches and as `drop_prefix`)
//! are in the mix, and so are kills (the files copied as a killed process
//! leaves them, opened without a close). So are keyspaces: created (one with
//! its own value threshold), written alone and in batches with the default
//! keyspace, read, iterated, range-deleted and dropped, each checked against
//! a model of its own, and all of them after every reopen and kill. One run
//! adds merges (the append operator: alone, in batches, in transactions, over
//! puts, deletes and range deletes), which the model applies as appends.

mod common;

use common::{killed_copy, tiny_options, Rng};
use sett::{Compression, Db, IterOptions, KeyspaceOptions, WriteBatch};
use std::collections::BTreeMap;
use std::ops::Bound;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn random_key(rng: &mut Rng) -> Vec<u8> {
    // Keys of varied length, some prefixes of others ("k1" and "k12").
    let n = rng.below(300);
    let mut k = format!("k{n}").into_bytes();
    if rng.chance(10) {
        k.push(0xff);
    }
    k
}

fn random_value(rng: &mut Rng, compressible: bool) -> Vec<u8> {
    let len = match rng.below(3) {
        0 => rng.below(8) as usize,
        1 => 40 + rng.below(40) as usize, // around the threshold of 64
        _ => 100 + rng.below(400) as usize,
    };
    if compressible {
        // A few random bytes repeated: blocks of these shrink, so the codecs
        // (not only the stored-raw path) carry the data.
        let period = 1 + rng.below(6) as usize;
        let seed = rng.bytes(period);
        return seed.iter().copied().cycle().take(len).collect();
    }
    rng.bytes(len)
}

fn expected_range(model: &Model, o: &IterOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lo = o.start.clone().map_or(Bound::Unbounded, Bound::Included);
    let hi = o.end.clone().map_or(Bound::Unbounded, Bound::Excluded);
    if let (Bound::Included(l), Bound::Excluded(h)) = (&lo, &hi) {
        if l >= h {
            return Vec::new();
        }
    }
    let mut items: Vec<(Vec<u8>, Vec<u8>)> = model
        .range((lo, hi))
        .filter(|(k, _)| o.prefix.as_ref().is_none_or(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), if o.keys_only { Vec::new() } else { v.clone() }))
        .collect();
    if o.reverse {
        items.reverse();
    }
    items
}

/// Removes the model's keys in `[start, end)` (an empty end is unbounded).
fn model_delete_range(model: &mut Model, start: &[u8], end: &[u8]) {
    model.retain(|k, _| !(k.as_slice() >= start && (end.is_empty() || k.as_slice() < end)));
}

/// A random range of keys, `start < end`.
fn random_range(rng: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    loop {
        let (a, b) = (random_key(rng), random_key(rng));
        if a != b {
            return if a < b { (a, b) } else { (b, a) };
        }
    }
}

fn random_iter_options(rng: &mut Rng) -> IterOptions {
    let mut o = IterOptions {
        reverse: rng.chance(50),
        keys_only: rng.chance(30),
        prefetch: 1 + rng.below(100) as usize,
        ..Default::default()
    };
    match rng.below(4) {
        0 => o.prefix = Some(format!("k{}", rng.below(30)).into_bytes()),
        1 => {
            o.start = Some(random_key(rng));
            o.end = Some(random_key(rng));
        }
        2 => o.start = Some(random_key(rng)),
        _ => {}
    }
    o
}

fn check_iter(db: &Db, model: &Model, o: IterOptions, ctx: &str) {
    check_walk(db.iter(o.clone()), model, o, ctx);
}

fn check_walk(it: sett::Result<sett::DbIterator>, model: &Model, o: IterOptions, ctx: &str) {
    let want = expected_range(model, &o);
    let got: Vec<(Vec<u8>, Vec<u8>)> = it.unwrap().collect::<sett::Result<_>>().unwrap();
    assert_eq!(got.len(), want.len(), "{ctx}: iterator length with {o:?}");
    assert!(got == want, "{ctx}: iterator contents differ with {o:?}");
}

/// The keyspaces' models, by name.
type Spaces = BTreeMap<String, Model>;

/// The options a keyspace of the mix is created with: "ks1" sends values of
/// 16 bytes and more to the value log (the Db's threshold is 64); "ks2"'s
/// blocks are zstd whatever the level's codec (tables mix codecs).
fn keyspace_options(name: &str) -> KeyspaceOptions {
    KeyspaceOptions {
        value_threshold: (name == "ks1").then_some(16),
        default_ttl: None,
        compression: (name == "ks2").then_some(Compression::Zstd),
    }
}

/// Every keyspace of the model exists with its data, and no other one.
fn check_spaces(db: &Db, spaces: &Spaces, ctx: &str) {
    let names: Vec<String> = spaces.keys().cloned().collect();
    assert_eq!(db.keyspaces().unwrap(), names, "{ctx}: keyspaces");
    for (name, m) in spaces {
        let ks = db.keyspace(name, KeyspaceOptions::default()).unwrap();
        assert_eq!(
            ks.options(),
            keyspace_options(name),
            "{ctx}: options of {name}"
        );
        check_walk(
            ks.iter(IterOptions::default()),
            m,
            IterOptions::default(),
            &format!("{ctx}: keyspace {name}"),
        );
    }
}

/// One keyspace operation of the mix.
fn keyspace_op(db: &Db, rng: &mut Rng, model: &mut Model, spaces: &mut Spaces, ctx: &str) {
    let name = format!("ks{}", rng.below(3));
    let ks = db.keyspace(&name, keyspace_options(&name)).unwrap();
    let m = spaces.entry(name.clone()).or_default();
    match rng.below(100) {
        0..=44 => {
            let (k, v) = (random_key(rng), random_value(rng, false));
            ks.put(&k, &v).unwrap();
            m.insert(k, v);
        }
        45..=59 => {
            let k = random_key(rng);
            ks.delete(&k).unwrap();
            m.remove(&k);
        }
        60..=74 => {
            let k = random_key(rng);
            assert_eq!(
                ks.get(&k).unwrap(),
                m.get(&k).cloned(),
                "{ctx}: {name} get {k:?}"
            );
        }
        75..=84 => {
            // One batch over this keyspace, another one and the default keyspace.
            let other_name = format!("ks{}", rng.below(3));
            let other = db
                .keyspace(&other_name, keyspace_options(&other_name))
                .unwrap();
            spaces.entry(other_name.clone()).or_default();
            let mut b = WriteBatch::new();
            for _ in 0..1 + rng.below(10) {
                let (k, v) = (random_key(rng), random_value(rng, false));
                match rng.below(3) {
                    0 => {
                        b.put_in(&ks, &k, v.clone());
                        spaces.entry(name.clone()).or_default().insert(k, v);
                    }
                    1 => {
                        b.put_in(&other, &k, v.clone());
                        spaces.entry(other_name.clone()).or_default().insert(k, v);
                    }
                    _ => {
                        b.put(k.clone(), v.clone());
                        model.insert(k, v);
                    }
                }
            }
            db.write(b).unwrap();
        }
        85..=93 => {
            let o = random_iter_options(rng);
            check_walk(ks.iter(o.clone()), m, o, &format!("{ctx}: {name} iter"));
        }
        94..=96 => {
            let (start, end) = random_range(rng);
            ks.delete_range(&start, &end).unwrap();
            model_delete_range(m, &start, &end);
        }
        _ => {
            db.drop_keyspace(&name).unwrap();
            spaces.remove(&name);
            assert!(
                ks.get(b"k1").is_err(),
                "{ctx}: a dropped handle still reads"
            );
        }
    }
}

fn run(seed: u64, ops: usize) {
    run_with(seed, ops, false)
}

fn run_with(seed: u64, ops: usize, compress: bool) {
    run_mix(seed, ops, compress, false)
}

/// A small operand for the append operator.
fn random_operand(rng: &mut Rng) -> Vec<u8> {
    let len = 1 + rng.below(6) as usize;
    rng.bytes(len)
}

/// With `compress`, tables are written with LZ4 or zstd on the deeper
/// levels (version 3) and values are compressible. With `merges`, the Db
/// has the append operator and some writes are merges.
fn run_mix(seed: u64, ops: usize, compress: bool, merges: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny_options(dir.path());
    if merges {
        opts.merge_operator = Some(std::sync::Arc::new(sett::merge::Append));
    }
    let mut merged = 0;
    if compress {
        opts.compression_per_level = vec![
            sett::Compression::None,
            sett::Compression::Lz4,
            sett::Compression::Zstd,
        ];
    }
    let mut db = Db::open(opts.clone()).unwrap();
    let ckpts = tempfile::tempdir().unwrap();
    let mut checkpoints = 0;
    let mut model = Model::new();
    let mut spaces = Spaces::new();
    let mut keyspace_ops = 0;
    let mut rng = Rng::new(seed);
    // Directories of the copies a kill left, opened in turn.
    let mut killed: Vec<tempfile::TempDir> = Vec::new();
    let mut range_deletes = 0;
    // Range deletes and GC may leave one value-log file at the end: the
    // most seen during the run tells whether it rotated.
    let mut max_vlog_files = 0;
    for step in 0..ops {
        let ctx = format!("seed {seed} step {step}");
        match rng.below(100) {
            0..=42 if merges && rng.chance(40) => {
                let (k, op) = (random_key(&mut rng), random_operand(&mut rng));
                if rng.chance(20) {
                    // Through a transaction that also reads the key.
                    let want: Vec<u8> = model
                        .get(&k)
                        .into_iter()
                        .flatten()
                        .chain(&op)
                        .copied()
                        .collect();
                    db.update(|t| {
                        t.merge(&k, &op)?;
                        assert_eq!(t.get(&k)?.as_ref(), Some(&want), "{ctx}: txn get {k:?}");
                        Ok(())
                    })
                    .unwrap();
                } else {
                    db.merge(&k, &op).unwrap();
                }
                model.entry(k).or_default().extend_from_slice(&op);
                merged += 1;
            }
            0..=42 => {
                let (k, v) = (random_key(&mut rng), random_value(&mut rng, compress));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            43..=52 => {
                let k = random_key(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            53..=54 => {
                // Mostly narrow ranges, so that the data does not empty out.
                let (start, end) = if rng.chance(70) {
                    let k = random_key(&mut rng);
                    let mut e = k.clone();
                    e.push(b'5');
                    (k, e)
                } else if rng.chance(50) {
                    let p = format!("k{}", 1 + rng.below(29)).into_bytes();
                    db.drop_prefix(&p).unwrap();
                    // "k<digits>": the prefix's successor bumps its last byte.
                    let mut end = p.clone();
                    let last = end.len() - 1;
                    end[last] += 1;
                    model_delete_range(&mut model, &p, &end);
                    range_deletes += 1;
                    continue;
                } else {
                    random_range(&mut rng)
                };
                if rng.chance(25) {
                    // Through a transaction, with a put into the range after it.
                    let (k, v) = (start.clone(), random_value(&mut rng, compress));
                    db.update(|t| {
                        t.delete_range(&start, &end)?;
                        t.set(&k, &v)
                    })
                    .unwrap();
                    model_delete_range(&mut model, &start, &end);
                    model.insert(k, v);
                } else {
                    db.delete_range(&start, &end).unwrap();
                    model_delete_range(&mut model, &start, &end);
                }
                range_deletes += 1;
            }
            55..=64 => {
                let mut b = WriteBatch::new();
                for _ in 0..1 + rng.below(20) {
                    let k = random_key(&mut rng);
                    if rng.chance(5) {
                        let (start, end) = random_range(&mut rng);
                        b.delete_range(start.clone(), end.clone());
                        model_delete_range(&mut model, &start, &end);
                        range_deletes += 1;
                    } else if merges && rng.chance(30) {
                        let op = random_operand(&mut rng);
                        b.merge(k.clone(), op.clone());
                        model.entry(k).or_default().extend_from_slice(&op);
                        merged += 1;
                    } else if rng.chance(80) {
                        let v = random_value(&mut rng, compress);
                        b.put(k.clone(), v.clone());
                        model.insert(k, v);
                    } else {
                        b.delete(k.clone());
                        model.remove(&k);
                    }
                }
                db.write(b).unwrap();
            }
            65..=72 => {
                keyspace_op(&db, &mut rng, &mut model, &mut spaces, &ctx);
                keyspace_ops += 1;
            }
            73..=89 => {
                let k = random_key(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap(),
                    model.get(&k).cloned(),
                    "{ctx}: get {k:?}"
                );
            }
            90..=97 => {
                check_iter(&db, &model, random_iter_options(&mut rng), &ctx);
                max_vlog_files = max_vlog_files.max(db.stats().vlog_files);
            }
            98 => {
                // A checkpoint opens as its own database holding exactly the
                // model's state at the call.
                let target = ckpts.path().join(format!("step{step}"));
                db.checkpoint(&target).unwrap();
                let mut copy_opts = opts.clone();
                copy_opts.dir = target.clone();
                let copy = Db::open(copy_opts).unwrap();
                check_iter(
                    &copy,
                    &model,
                    IterOptions::default(),
                    &format!("{ctx}: checkpoint"),
                );
                check_spaces(&copy, &spaces, &format!("{ctx}: checkpoint"));
                copy.verify().unwrap();
                copy.close().unwrap();
                drop(copy);
                std::fs::remove_dir_all(&target).unwrap();
                checkpoints += 1;
            }
            _ if rng.chance(50) => {
                db.close().unwrap();
                drop(db);
                db = Db::open(opts.clone()).unwrap();
                check_spaces(&db, &spaces, &format!("{ctx}: reopened"));
            }
            _ => {
                // A kill: the files as the process leaves them, no close.
                let (copy, opened) = killed_copy(&db, &opts);
                db.close().unwrap();
                drop(db);
                opts.dir = copy.path().to_path_buf();
                killed.push(copy);
                if killed.len() > 2 {
                    killed.remove(0);
                }
                db = opened;
                check_iter(
                    &db,
                    &model,
                    IterOptions::default(),
                    &format!("{ctx}: killed"),
                );
                check_spaces(&db, &spaces, &format!("{ctx}: killed"));
            }
        }
    }
    assert!(range_deletes > 0, "seed {seed}: no range delete");
    assert!(!merges || merged > 0, "seed {seed}: no merge");
    assert!(keyspace_ops > 0, "seed {seed}: no keyspace operation");
    check_spaces(&db, &spaces, "final");
    assert!(
        checkpoints > 0,
        "seed {seed}: no checkpoint in {ops} operations"
    );
    check_iter(&db, &model, IterOptions::default(), "final forward");
    check_iter(
        &db,
        &model,
        IterOptions {
            reverse: true,
            ..Default::default()
        },
        "final reverse",
    );
    let s = db.stats();
    assert!(
        s.levels.iter().skip(1).any(|(n, _)| *n > 0),
        "no compaction reached L1+: {s:?}"
    );
    assert!(
        max_vlog_files.max(s.vlog_files) > 1,
        "value log never rotated: {s:?}"
    );
    db.close().unwrap();
    drop(db);
    let db = Db::open(opts).unwrap();
    check_iter(&db, &model, IterOptions::default(), "after final reopen");
    check_spaces(&db, &spaces, "after final reopen");
}

#[test]
fn random_operations_match_a_btreemap_seed_1() {
    run(1, 20_000);
}

#[test]
fn random_operations_match_a_btreemap_seed_2() {
    run(2, 20_000);
}

#[test]
fn random_operations_match_a_btreemap_seed_3() {
    run(3, 20_000);
}

#[test]
fn random_operations_match_a_btreemap_with_lz4_and_zstd_levels() {
    run_with(4, 20_000, true);
}

#[test]
fn random_operations_with_merges_match_a_btreemap() {
    run_mix(5, 20_000, false, true);
}

#[test]
fn iterator_seek_moves_within_bounds_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for i in 0..500u32 {
        db.put(
            format!("key{i:04}").as_bytes(),
            &common::value_for(b"k", i.into(), (i % 150) as usize),
        )
        .unwrap();
    }
    let mut it = db
        .iter(IterOptions {
            start: Some(b"key0100".to_vec()),
            end: Some(b"key0200".to_vec()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(it.key(), b"key0100");
    it.seek(b"key0150x").unwrap();
    assert_eq!(it.key(), b"key0151");
    it.seek(b"key0000").unwrap();
    assert_eq!(it.key(), b"key0100");
    it.seek(b"key0300").unwrap();
    assert!(!it.valid());

    let mut rev = db
        .iter(IterOptions {
            start: Some(b"key0100".to_vec()),
            end: Some(b"key0200".to_vec()),
            reverse: true,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(rev.key(), b"key0199");
    rev.seek(b"key0150x").unwrap();
    assert_eq!(rev.key(), b"key0150");
    rev.advance().unwrap();
    assert_eq!(rev.key(), b"key0149");
    assert_eq!(rev.value(), common::value_for(b"k", 149, 149));
    rev.seek(b"key0050").unwrap();
    assert!(!rev.valid());
}

#[test]
fn iterator_sees_a_snapshot_while_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for i in 0..300u32 {
        db.put(
            format!("k{i:03}").as_bytes(),
            b"old-value-that-is-long-enough-to-be-separated-into-the-value-log",
        )
        .unwrap();
    }
    let it = db
        .iter(IterOptions {
            prefetch: 4,
            ..Default::default()
        })
        .unwrap();
    for i in 0..300u32 {
        db.put(format!("k{i:03}").as_bytes(), b"new").unwrap();
        db.delete(format!("k{:03}", (i * 7) % 300).as_bytes())
            .unwrap();
    }
    db.put(b"k999", b"added later").unwrap();
    let seen: Vec<(Vec<u8>, Vec<u8>)> = it.collect::<sett::Result<_>>().unwrap();
    assert_eq!(seen.len(), 300);
    assert!(seen.iter().all(|(_, v)| v.starts_with(b"old-value")));
}
