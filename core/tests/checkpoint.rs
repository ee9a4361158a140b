//! Checkpoints (`Db::checkpoint`): an openable copy made by hard links while
//! writes go on. Each test opens the checkpoint as a Db of its own, reads every
//! key it must hold and runs `verify`.

mod common;

use common::{tiny_options, value_for};
use sett::fs::{CutMode, Fault, Fs, SimFs};
use sett::{Db, Error, IterOptions, CHECKPOINT_MARKER};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Key `i` of writer `w`, and its value (both sides of tiny_options' 64-byte threshold).
fn entry(w: usize, i: u64) -> (Vec<u8>, Vec<u8>) {
    let key = format!("w{w}-{i:06}").into_bytes();
    let len = if i.is_multiple_of(3) { 20 } else { 200 };
    let value = value_for(&key, i, len);
    (key, value)
}

fn scan(db: &Db) -> Model {
    db.iter(IterOptions::default())
        .expect("iterator")
        .map(|r| r.expect("scan"))
        .collect()
}

/// Every file name in `dir` with its length.
fn listing(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .expect("listing")
        .map(|e| {
            let e = e.expect("entry");
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect()
}

/// Fails with the first difference, not two whole maps.
fn same(got: &Model, want: &Model, what: &str) {
    if got == want {
        return;
    }
    let missing = want.keys().find(|k| got.get(*k) != want.get(*k));
    let extra = got.keys().find(|k| !want.contains_key(*k));
    panic!(
        "{what}: {} keys, want {}; first missing or wrong: {:?}; first extra: {:?}",
        got.len(),
        want.len(),
        missing.map(|k| String::from_utf8_lossy(k).into_owned()),
        extra.map(|k| String::from_utf8_lossy(k).into_owned())
    );
}

fn is_marker_refusal(e: &Error) -> bool {
    matches!(e, Error::Corruption { file, .. } if file.ends_with(CHECKPOINT_MARKER))
}

#[test]
fn a_checkpoint_under_two_writers_with_compactions_and_gc_holds_every_acknowledged_write() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = tiny_options(&tmp.path().join("db"));
    opts.vlog_gc_ratio = 0.0; // the GC thread below runs it
    let db = Arc::new(Db::open(opts).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut threads = Vec::new();
    for w in 0..2 {
        let (db, stop, acked) = (db.clone(), stop.clone(), acked.clone());
        threads.push(std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let (k, v) = entry(w, i);
                db.put(&k, &v).expect("write");
                // Overwrites of a few keys make value-log garbage for GC.
                let hot = format!("hot{w}-{}", i % 16).into_bytes();
                db.put(&hot, &value_for(&hot, i, 300)).expect("overwrite");
                i += 1;
                acked[w].store(i, Ordering::Release);
            }
        }));
    }
    let gc_rounds = Arc::new(AtomicU64::new(0));
    {
        let (db, stop, gc_rounds) = (db.clone(), stop.clone(), gc_rounds.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(sett::GcOutcome::Rewritten { .. } | sett::GcOutcome::Deleted { .. }) =
                    db.run_value_log_gc(0.2)
                {
                    gc_rounds.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }));
    }
    let mut checkpoints = Vec::new();
    for round in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        let before = [
            acked[0].load(Ordering::Acquire),
            acked[1].load(Ordering::Acquire),
        ];
        let target = tmp.path().join(format!("ckpt{round}"));
        let report = db.checkpoint(&target).expect("checkpoint under writers");
        assert!(report.files_linked > 0, "{report:?}");
        assert!(!target.join(CHECKPOINT_MARKER).exists());
        checkpoints.push((target, before, report));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        gc_rounds.load(Ordering::Relaxed) > 0,
        "GC never collected a file"
    );
    assert!(
        db.stats().levels.iter().skip(1).any(|l| l.0 > 0),
        "no compaction ran"
    );
    for (target, before, report) in &checkpoints {
        let ck = Db::open(tiny_options(target)).expect("open the checkpoint");
        let v = ck.verify().expect("verify the checkpoint");
        assert!(v.values > 0, "{v:?}");
        let got = scan(&ck);
        for (w, &n) in before.iter().enumerate() {
            for i in 0..n {
                let (k, want) = entry(w, i);
                assert_eq!(
                    got.get(&k),
                    Some(&want),
                    "{}: writer {w}'s write {i} (of {n} acknowledged before) is missing or wrong; {report:?}",
                    target.display()
                );
            }
            // A prefix of each writer's writes: no gap after the acknowledged ones.
            let held = got
                .keys()
                .filter(|k| k.starts_with(format!("w{w}-").as_bytes()))
                .count() as u64;
            assert!(held >= n);
            for i in n..held {
                assert!(got.contains_key(&entry(w, i).0), "gap at {i} of writer {w}");
            }
        }
    }
}

#[test]
fn a_checkpoint_of_a_read_only_db_holds_what_it_sees_its_unflushed_writes_included() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let mut opts = tiny_options(&src);
    opts.memtable_size = 1 << 20; // the last writes stay in the WAL
    let mut model = Model::new();
    {
        let db = Db::open(opts.clone()).unwrap();
        for i in 0..200 {
            let (k, v) = entry(0, i);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
            if i == 120 {
                db.flush().unwrap();
            }
        }
        // A crash image: the directory as it is, with the WAL not flushed.
        let image = tmp.path().join("image");
        std::fs::create_dir(&image).unwrap();
        for (name, _) in listing(&src) {
            std::fs::copy(src.join(&name), image.join(&name)).unwrap();
        }
    }
    let image = tmp.path().join("image");
    let before = listing(&image);
    let mut ro = tiny_options(&image);
    ro.read_only = true;
    let db = Db::open(ro).unwrap();
    same(&scan(&db), &model, "the read-only source");
    let target = tmp.path().join("ckpt");
    let report = db
        .checkpoint(&target)
        .expect("checkpoint of a read-only Db");
    assert!(report.files_copied >= 1, "the WAL is copied: {report:?}");
    assert!(report.files_linked >= 2, "{report:?}");
    drop(db);
    assert_eq!(listing(&image), before, "the read-only source changed");
    let ck = Db::open(tiny_options(&target)).unwrap();
    ck.verify().unwrap();
    same(&scan(&ck), &model, "the checkpoint of a read-only Db");
}

#[test]
fn a_checkpoint_onto_an_existing_target_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let mut opts = tiny_options(&src);
    opts.vlog_gc_ratio = 0.0;
    // The last writes below must stay in the memtable, not switch it out
    // and start a background flush while the files are compared.
    opts.memtable_size = 1 << 20;
    let db = Db::open(opts).unwrap();
    for i in 0..50 {
        let (k, v) = entry(0, i);
        db.put(&k, &v).unwrap();
    }
    // Background work settles, then a few writes wait in the memtable: a
    // flush or a seal would change the files.
    db.flatten().unwrap();
    for i in 50..53 {
        let (k, v) = entry(0, i);
        db.put(&k, &v).unwrap();
    }
    let target = tmp.path().join("taken");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("mine"), b"user data").unwrap();
    let (files, stats) = (listing(&src), db.stats());
    for t in [target.clone(), target.join("mine")] {
        let e = db.checkpoint(&t).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("already exists")),
            "{e}"
        );
    }
    let e = db
        .checkpoint(tmp.path().join("no/such/parent"))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(listing(&src), files, "the source's files changed");
    let after = db.stats();
    assert_eq!(
        (after.levels, after.memtable_bytes, after.vlog_files),
        (stats.levels, stats.memtable_bytes, stats.vlog_files),
        "the source was flushed or sealed"
    );
    assert_eq!(listing(&target), BTreeMap::from([("mine".into(), 9)]));
    assert!(!tmp.path().join("no").exists());
}

#[test]
fn a_checkpoint_and_its_source_are_independent_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("db");
    let mut opts = tiny_options(&src);
    opts.vlog_gc_ratio = 0.0;
    let db = Db::open(opts).unwrap();
    let mut model = Model::new();
    for i in 0..400 {
        let (k, v) = entry(0, i);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    let target = tmp.path().join("ckpt");
    db.checkpoint(&target).unwrap();
    let ck = Db::open(tiny_options(&target)).unwrap();

    // The source overwrites and deletes everything, collects its value log and
    // drops what is left: the checkpoint's linked files must not care.
    for i in 0..400 {
        let (k, _) = entry(0, i);
        if i % 2 == 0 {
            db.delete(&k).unwrap();
        } else {
            db.put(&k, &value_for(&k, 9000 + i, 300)).unwrap();
        }
    }
    db.put(b"source-only", b"s").unwrap();
    db.flatten().unwrap();
    let mut collected = 0;
    while db.run_value_log_gc(0.01).unwrap() != sett::GcOutcome::NothingToCollect {
        collected += 1;
    }
    assert!(collected > 0, "the source's GC collected nothing");
    assert_eq!(ck.get(b"source-only").unwrap(), None);
    same(
        &scan(&ck),
        &model,
        "the source's writes and GC reached the checkpoint",
    );
    ck.verify().unwrap();
    db.drop_all().unwrap();
    same(
        &scan(&ck),
        &model,
        "the source's drop_all reached the checkpoint",
    );

    // The other way: the checkpoint writes, collects and flattens.
    db.put(b"after-drop", b"a").unwrap();
    let source_now = scan(&db);
    for i in 0..400 {
        let (k, _) = entry(0, i);
        ck.put(&k, &value_for(&k, 7000 + i, 300)).unwrap();
    }
    ck.put(b"checkpoint-only", b"c").unwrap();
    ck.flatten().unwrap();
    while ck.run_value_log_gc(0.01).unwrap() != sett::GcOutcome::NothingToCollect {}
    assert_eq!(db.get(b"checkpoint-only").unwrap(), None);
    same(
        &scan(&db),
        &source_now,
        "the checkpoint's writes reached the source",
    );
    db.verify().unwrap();
    ck.verify().unwrap();
    drop(ck);
    drop(db);
    let ck = Db::open(tiny_options(&target)).unwrap();
    ck.verify().unwrap();
    assert_eq!(
        ck.get(&entry(0, 5).0).unwrap(),
        Some(value_for(&entry(0, 5).0, 7005, 300))
    );
}

#[test]
fn a_directory_holding_the_checkpoint_marker_is_refused_by_open() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(&tmp.path().join("db"))).unwrap();
    db.put(b"k", b"v").unwrap();
    let target = tmp.path().join("ckpt");
    db.checkpoint(&target).unwrap();
    std::fs::write(target.join(CHECKPOINT_MARKER), b"").unwrap();
    let before = listing(&target);
    for read_only in [false, true] {
        let mut o = tiny_options(&target);
        o.read_only = read_only;
        let e = Db::open(o).err().expect("a marked directory opened");
        assert!(is_marker_refusal(&e), "read_only {read_only}: {e}");
    }
    assert_eq!(
        listing(&target),
        before,
        "a refused open changed the directory"
    );
    std::fs::remove_file(target.join(CHECKPOINT_MARKER)).unwrap();
    assert_eq!(
        Db::open(tiny_options(&target)).unwrap().get(b"k").unwrap(),
        Some(b"v".to_vec())
    );
}

/// The source's writes for the power-cut test, all acknowledged with sync_writes.
fn power_cut_source(dir: &Path, sim: &Arc<SimFs>) -> (Db, Model) {
    let mut opts = tiny_options(dir);
    opts.sync_writes = true;
    opts.vlog_gc_ratio = 0.0;
    // No compaction may start from the checkpoint's own flush: its operations
    // would interleave with the checkpoint's and move the counted cut points.
    opts.l0_compaction_trigger = 100;
    opts.l0_slowdown_trigger = 100;
    opts.l0_stop_trigger = 101;
    opts.fs = Fs::new(sim.clone());
    let db = Db::open(opts).expect("open the source");
    let mut model = Model::new();
    for i in 0..150 {
        let (k, v) = entry(0, i);
        db.put(&k, &v).expect("write");
        model.insert(k, v);
    }
    // Background flushes and compactions settled: the checkpoint's file-system
    // operations are then the same in every run, so a cut lands where counted.
    db.flush().expect("flush");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let s = db.stats();
        if s.compactions_pending == 0 && s.compactions_running == 0 && s.immutable_memtables == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never settled: {s:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    (db, model)
}

#[test]
fn a_power_cut_at_every_operation_of_a_checkpoint_leaves_the_source_intact_and_the_target_whole_refused_or_absent(
) {
    // A run without a cut counts the checkpoint's operations.
    let ops = {
        let tmp = tempfile::tempdir().unwrap();
        let sim = Arc::new(SimFs::new(tmp.path().join("trash"), 1));
        let (db, _) = power_cut_source(&tmp.path().join("db"), &sim);
        let start = sim.ops();
        db.checkpoint(tmp.path().join("ckpt")).expect("checkpoint");
        sim.ops() - start
    };
    assert!(ops > 10, "a checkpoint of {ops} operations");
    let modes = [
        CutMode::DropUnsynced,
        CutMode::KeepRandomPrefix,
        CutMode::TornLastPage,
        CutMode::ReorderedPages,
    ];
    let (mut whole, mut refused, mut absent) = (0, 0, 0);
    for n in 1..=ops + 1 {
        let what = format!("cut at operation {n} of {ops}");
        let tmp = tempfile::tempdir().unwrap();
        let (src, target) = (tmp.path().join("db"), tmp.path().join("ckpt"));
        // Every other round of the four cut modes on the mapped WAL (the
        // Linux default), the others on write(2).
        let mapped = (n / 4) % 2 == 1;
        let sim = Arc::new(SimFs::new(tmp.path().join("trash"), n).with_mapped_appends(mapped));
        let (db, model) = power_cut_source(&src, &sim);
        sim.fail(None, n, Fault::PowerCut);
        let result = db.checkpoint(&target);
        drop(db);
        sim.power_off();
        sim.power_cut(modes[n as usize % 4])
            .unwrap_or_else(|e| panic!("{what}: applying the cut: {e}"));

        let db = Db::open(tiny_options(&src))
            .unwrap_or_else(|e| panic!("{what}: the source does not open: {e}"));
        same(&scan(&db), &model, &format!("{what}: the source"));
        db.verify()
            .unwrap_or_else(|e| panic!("{what}: source verify: {e}"));
        drop(db);

        if !target.exists() {
            absent += 1;
            continue;
        }
        match Db::open(tiny_options(&target)) {
            Ok(ck) => {
                whole += 1;
                same(&scan(&ck), &model, &format!("{what}: an open checkpoint"));
                ck.verify()
                    .unwrap_or_else(|e| panic!("{what}: checkpoint verify: {e}"));
            }
            Err(e) if is_marker_refusal(&e) => {
                refused += 1;
                assert!(
                    result.is_err(),
                    "{what}: a checkpoint that returned Ok is refused"
                );
            }
            Err(e) => panic!("{what}: the target neither opens nor is refused by its marker: {e}"),
        }
    }
    println!("CHECKPOINT_POWER_CUTS: {ops} operations: {whole} whole, {refused} refused, {absent} absent");
    assert!(
        whole > 0 && refused > 0 && absent > 0,
        "{whole} whole, {refused} refused, {absent} absent"
    );
}

#[test]
fn a_checkpoint_onto_another_file_system_copies_what_it_cannot_link() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let other = Path::new("/dev/shm");
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if dev(other).is_none() || dev(other) == dev(tmp.path()) {
        sett_test_skip::skip(
            "core-checkpoint-other_fs-no_second_fs",
            &format!(
                "/dev/shm is missing or on the same file system as {}",
                tmp.path().display()
            ),
        );
        return;
    }
    let db = Db::open(tiny_options(&tmp.path().join("db"))).unwrap();
    let mut model = Model::new();
    for i in 0..200 {
        let (k, v) = entry(0, i);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    let shm = tempfile::tempdir_in(other).unwrap();
    let target = shm.path().join("ckpt");
    let r = db.checkpoint(&target).unwrap();
    assert_eq!(r.files_linked, 0, "{r:?}");
    assert!(r.files_copied >= 2 && r.bytes_copied > 0, "{r:?}");
    let ck = Db::open(tiny_options(&target)).unwrap();
    ck.verify().unwrap();
    same(&scan(&ck), &model, "a copied checkpoint");
}
