//! Short bounded scans read only the tables their range can meet: counted by
//! the cache's data-block lookups (every block a user read touches goes
//! through the cache), not by timing.

use sett::{Db, IterOptions, Options};

/// Data blocks user reads have looked up in the cache so far.
fn block_lookups(db: &Db) -> u64 {
    let s = db.stats();
    s.cache_data_hits + s.cache_data_misses
}

/// Block lookups made by a scan of `opts` that reads `take` items (all there
/// are), and the keys it read.
fn scan(db: &Db, opts: IterOptions, take: usize) -> (u64, Vec<Vec<u8>>) {
    let before = block_lookups(db);
    let keys = db
        .iter(opts)
        .unwrap()
        .take(take)
        .map(|r| r.unwrap().0)
        .collect();
    (block_lookups(db) - before, keys)
}

fn prefix(p: &str, reverse: bool) -> IterOptions {
    IterOptions {
        prefix: Some(p.as_bytes().to_vec()),
        reverse,
        ..IterOptions::default()
    }
}

#[test]
fn a_prefix_scan_reads_blocks_only_of_the_tables_its_prefix_can_meet() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    opts.table_size = 16 << 10;
    // Eight L0 tables stay in L0.
    opts.l0_compaction_trigger = 20;
    opts.l0_slowdown_trigger = 40;
    opts.l0_stop_trigger = 60;
    let db = Db::open(opts).unwrap();
    // "a/" keys in the last level, over many small tables: two overlapping
    // flushes, so that flatten merges and splits them instead of moving one
    // table down.
    for odd in [0, 1] {
        for i in (odd..2000).step_by(2) {
            db.put(format!("a/{i:05}").as_bytes(), &[1; 200]).unwrap();
        }
        db.flush().unwrap();
    }
    db.flatten().unwrap();
    // One L0 table per prefix p0/ .. p7/, ten keys each.
    for t in 0..8 {
        for i in 0..10 {
            db.put(format!("p{t}/{i:02}").as_bytes(), &[2; 200])
                .unwrap();
        }
        db.flush().unwrap();
    }
    let levels = db.stats().levels;
    assert_eq!(levels[0].0, 8, "{levels:?}");
    assert!(levels.last().unwrap().0 > 8, "{levels:?}");

    // Ten keys of one L0 table: its one block, and no other table's. A seek
    // into every table also reads a block of each table whose keys lie past
    // the prefix (5 lookups forward, with the range check turned off).
    for reverse in [false, true] {
        let (lookups, keys) = scan(&db, prefix("p3/", reverse), 10);
        assert_eq!(keys.len(), 10);
        assert!(keys.iter().all(|k| k.starts_with(b"p3/")));
        assert!(lookups <= 2, "reverse {reverse}: {lookups} block lookups");
    }
    // Ten keys of the last level: one table of it (a block or two), no L0 table.
    let (lookups, keys) = scan(&db, prefix("a/0100", false), 10);
    assert_eq!(keys.len(), 10);
    assert!(lookups <= 2, "{lookups} block lookups");
    // A prefix no table's range meets reads no block at all.
    let (lookups, keys) = scan(&db, prefix("m/", false), 10);
    assert!(keys.is_empty());
    assert_eq!(lookups, 0);
    // Bounds without a prefix prune the same way.
    let bounded = IterOptions {
        start: Some(b"p5/".to_vec()),
        end: Some(b"p5/\xff".to_vec()),
        ..IterOptions::default()
    };
    let (lookups, keys) = scan(&db, bounded, 100);
    assert_eq!(keys.len(), 10);
    assert!(lookups <= 2, "{lookups} block lookups");
}
