//! Flatten, DropAll, DropPrefix, sequences and bulk load.

mod common;

use common::{tiny_options, value_for};
use sett::{Db, Error, IterOptions};

fn filled(dir: &std::path::Path) -> Db {
    let db = Db::open(tiny_options(dir)).unwrap();
    for p in ["a", "b", "c"] {
        for i in 0..300u32 {
            let k = format!("{p}/{i:04}");
            db.put(
                k.as_bytes(),
                &value_for(k.as_bytes(), 1, (i % 200) as usize),
            )
            .unwrap();
        }
    }
    db
}

#[test]
fn flatten_moves_everything_to_the_last_level() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.flatten().unwrap();
    let s = db.stats();
    let last = s.levels.len() - 1;
    assert!(
        s.levels[..last].iter().all(|(n, _)| *n == 0),
        "{:?}",
        s.levels
    );
    assert!(s.levels[last].0 > 0);
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 900);
}

#[test]
fn drop_prefix_removes_only_that_prefix_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.drop_prefix(b"b/").unwrap();
    let count = |db: &Db, p: &str| {
        db.iter(IterOptions {
            prefix: Some(p.as_bytes().to_vec()),
            ..Default::default()
        })
        .unwrap()
        .count()
    };
    assert_eq!(
        (count(&db, "a/"), count(&db, "b/"), count(&db, "c/")),
        (300, 0, 300)
    );
    db.put(b"b/new", b"after the drop").unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(
        (count(&db, "a/"), count(&db, "b/"), count(&db, "c/")),
        (300, 1, 300)
    );
    assert_eq!(
        db.get(b"c/0150").unwrap(),
        Some(value_for(b"c/0150", 1, 150))
    );
}

#[test]
fn drop_all_deletes_every_file_and_the_db_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = filled(dir.path());
    db.drop_all().unwrap();
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 0);
    let s = db.stats();
    assert!(s.levels.iter().all(|(n, _)| *n == 0));
    assert_eq!(s.vlog_files, 1, "only the new head value-log file is left");
    db.put(b"x", b"y").unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 1);
}

#[test]
fn sequences_are_monotonic_across_leases_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    {
        let db = Db::open(tiny_options(dir.path())).unwrap();
        let seq = db.sequence(b"ids", 10).unwrap();
        for _ in 0..25 {
            seen.push(seq.next().unwrap());
        }
        seq.release().unwrap();
        db.close().unwrap();
    }
    {
        let db = Db::open(tiny_options(dir.path())).unwrap();
        let seq = db.sequence(b"ids", 10).unwrap();
        seen.push(seq.next().unwrap());
        // Not released: the next Sequence skips the rest of this lease.
    }
    let db = Db::open(tiny_options(dir.path())).unwrap();
    let seq = db.sequence(b"ids", 10).unwrap();
    seen.push(seq.next().unwrap());
    assert_eq!(&seen[..26], &(0..26).collect::<Vec<u64>>()[..]);
    assert_eq!(seen[26], 35);
    assert!(matches!(
        db.sequence(b"ids", 0),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn bulk_load_writes_sorted_data_that_reads_back_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(tiny_options(dir.path())).unwrap();
    let mut loader = db.bulk_load().unwrap();
    assert!(
        matches!(db.put(b"during", b"load"), Err(Error::InvalidArgument(_))),
        "writes wait for the load"
    );
    assert!(
        matches!(db.bulk_load(), Err(Error::InvalidArgument(_))),
        "one load at a time"
    );
    for i in 0..5000u32 {
        let k = format!("bulk{i:06}");
        loader
            .add(
                k.as_bytes(),
                &value_for(k.as_bytes(), 0, (i % 150) as usize),
            )
            .unwrap();
    }
    assert!(
        matches!(
            loader.add(b"bulk000001", b"x"),
            Err(Error::InvalidArgument(_))
        ),
        "out of order"
    );
    assert_eq!(loader.finish().unwrap(), 5000);
    let s = db.stats();
    assert!(
        s.levels[s.levels.len() - 1].0 > 0 && s.levels[0].0 == 0,
        "{:?}",
        s.levels
    );
    assert_eq!(
        db.get(b"bulk004999").unwrap(),
        Some(value_for(b"bulk004999", 0, 4999 % 150))
    );
    db.put(b"bulk000010", b"overwritten").unwrap();
    assert!(
        matches!(db.bulk_load(), Err(Error::InvalidArgument(_))),
        "needs an empty db"
    );
    db.close().unwrap();
    drop(db);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    assert_eq!(db.iter(IterOptions::default()).unwrap().count(), 5000);
    assert_eq!(
        db.get(b"bulk000010").unwrap().as_deref(),
        Some(&b"overwritten"[..])
    );
    assert_eq!(
        db.get(b"bulk000100").unwrap(),
        Some(value_for(b"bulk000100", 0, 100))
    );
}

/// Waits (up to 30 s) until nothing is flushing or compacting.
fn settled(db: &Db) -> sett::Stats {
    let start = std::time::Instant::now();
    loop {
        let s = db.stats();
        let busy = s.immutable_memtables as u64 + s.compactions_pending + s.compactions_running;
        if busy == 0 || start.elapsed().as_secs() >= 30 {
            return s;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn dynamic_level_sizes_keep_a_small_tree_in_the_last_level_and_a_static_tree_reopened_dynamic_reads_the_same(
) {
    let keys = 3000u32;
    let write = |db: &Db, version: u64| {
        for i in 0..keys {
            let k = format!("k{:05}", (i * 7919) % keys);
            db.put(k.as_bytes(), &value_for(k.as_bytes(), version, 60))
                .unwrap();
        }
        db.flush().unwrap();
    };
    let check = |db: &Db, version: u64| {
        for i in 0..keys {
            let k = format!("k{i:05}");
            assert_eq!(
                db.get(k.as_bytes()).unwrap(),
                Some(value_for(k.as_bytes(), version, 60)),
                "{k}"
            );
        }
    };

    // Dynamic: L0 compacts into the last level of a tree smaller than
    // level_base_size, so no level between them holds a table.
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny_options(dir.path());
    opts.level_dynamic = true;
    opts.level_base_size = 16 << 20;
    opts.l0_compaction_trigger = 2;
    let db = Db::open(opts.clone()).unwrap();
    write(&db, 1);
    write(&db, 2);
    let s = settled(&db);
    let last = s.levels.len() - 1;
    assert!(s.levels[last].0 > 0, "{:?}", s.levels);
    assert!(
        s.levels[1..last].iter().all(|&(tables, _)| tables == 0),
        "levels above the last hold tables: {:?}",
        s.levels
    );
    check(&db, 2);
    db.close().unwrap();

    // Static, then reopened dynamic: the tables in L1 stay readable, L0
    // compacts no deeper than the first level in use, and every answer holds.
    let dir = tempfile::tempdir().unwrap();
    let mut opts = tiny_options(dir.path());
    opts.level_dynamic = false;
    opts.level_base_size = 16 << 20;
    opts.l0_compaction_trigger = 2;
    let db = Db::open(opts.clone()).unwrap();
    write(&db, 1);
    write(&db, 2);
    let s = settled(&db);
    assert!(s.levels[1].0 > 0, "static: L0 goes to L1: {:?}", s.levels);
    db.close().unwrap();
    drop(db);
    opts.level_dynamic = true;
    let db = Db::open(opts).unwrap();
    check(&db, 2);
    write(&db, 3);
    write(&db, 4);
    let s = settled(&db);
    assert!(
        s.levels[1].0 > 0,
        "the base stays at L1, in use: {:?}",
        s.levels
    );
    check(&db, 4);
}
