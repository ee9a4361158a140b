//! Compression of table data blocks, end to end: per-level codecs through
//! flushes and compactions, reopen, reads, scans and `verify`; the space it
//! saves on JSON-like data; and a database written without compression
//! (version-2 tables) reopened with it.

use sett::{Compression, Db, IterOptions, Keyspace, KeyspaceOptions, Options};
use std::path::Path;

/// A JSON-like record, deterministic from `i`, 300-600 bytes: field names and
/// most words repeat across records, as in real documents.
fn record(i: u64) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima",
    ];
    const CITIES: [&str; 6] = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent"];
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let words: Vec<&str> = (0..20 + (h % 40))
        .map(|w| WORDS[((h >> (w % 48)) as usize + w as usize) % WORDS.len()])
        .collect();
    format!(
        r#"{{"id":{i},"name":"user-{i}","email":"user{i}@example.com","city":"{}","balance":{},"active":{},"tags":["{}","{}"],"bio":"{}"}}"#,
        CITIES[(h % 6) as usize],
        h % 100_000,
        h.is_multiple_of(3),
        WORDS[(h % 12) as usize],
        WORDS[((h >> 8) % 12) as usize],
        words.join(" ")
    )
    .into_bytes()
}

fn key(i: u64) -> Vec<u8> {
    format!("user:{i:08}").into_bytes()
}

/// Small memtables and levels, so that a few MB reach L0, L1 and L2.
fn options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.memtable_size = 256 << 10;
    o.table_size = 256 << 10;
    o.level_base_size = 1 << 20;
    o.level_multiplier = 4;
    o.num_levels = 4;
    // About 36 flushes per populate: writes stop at 12 L0 tables until a
    // compaction has finished, so compactions have written tables by the
    // time the populate ends, whatever the defaults.
    o.l0_compaction_trigger = 4;
    o.l0_slowdown_trigger = 8;
    o.l0_stop_trigger = 12;
    o
}

/// Sum of the sizes of every file in `dir`.
fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// Format version of every finished table in `dir` (the footer's u32 at
/// offset 40). A table a background compaction is still writing (no footer
/// magic yet), or has just removed, is left out.
fn table_versions(dir: &Path) -> Vec<u32> {
    const MAGIC: u64 = 0x5345_5454_5353_5431;
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "sst") {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let n = bytes.len();
            if n < 56 || u64::from_le_bytes(bytes[n - 8..].try_into().unwrap()) != MAGIC {
                continue;
            }
            let at = n - 56 + 40;
            out.push(u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()));
        }
    }
    out
}

fn check_all(db: &Db, n: u64, ctx: &str) {
    for i in 0..n {
        assert_eq!(db.get(&key(i)).unwrap(), Some(record(i)), "{ctx}: key {i}");
    }
    let mut it = db.iter(IterOptions::default()).unwrap();
    let mut i = 0;
    while it.valid() {
        assert_eq!(
            (it.key(), it.value()),
            (&key(i)[..], &record(i)[..]),
            "{ctx}"
        );
        it.advance().unwrap();
        i += 1;
    }
    assert_eq!(i, n, "{ctx}: scan length");
    let report = db.verify().unwrap();
    assert!(
        report.tables > 0 && report.entries >= n,
        "{ctx}: {report:?}"
    );
}

/// Writes `n` records, flushes, flattens and closes; returns the directory size.
fn populate(dir: &Path, opts: Options, n: u64) -> u64 {
    let db = Db::open(opts).unwrap();
    for i in 0..n {
        db.put(&key(i), &record(i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    dir_size(dir)
}

#[test]
fn per_level_lz4_and_zstd_round_trip_through_compaction_and_reopen_and_shrink_json_by_30_percent() {
    let n = 20_000;
    let plain = tempfile::tempdir().unwrap();
    let packed = tempfile::tempdir().unwrap();
    let mut opts = options(packed.path());
    opts.compression_per_level = vec![Compression::None, Compression::Lz4, Compression::Zstd];

    // Before flattening: flushes wrote L0 tables uncompressed (version 2),
    // compactions wrote L1/L2 tables compressed (version 3).
    let db = Db::open(opts.clone()).unwrap();
    for i in 0..n {
        db.put(&key(i), &record(i)).unwrap();
    }
    db.flush().unwrap();
    let versions = table_versions(packed.path());
    assert!(
        versions.contains(&3),
        "no compaction wrote a compressed table: {versions:?} {:?}",
        db.stats()
    );
    check_all(&db, n, "mixed levels");
    db.flatten().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(opts).unwrap();
    check_all(&db, n, "after flatten and reopen");
    assert!(table_versions(packed.path()).iter().all(|&v| v == 3));
    db.close().unwrap();
    drop(db);
    let packed_size = dir_size(packed.path());

    let plain_size = populate(plain.path(), options(plain.path()), n);
    assert!(table_versions(plain.path()).iter().all(|&v| v == 2));
    let ratio = packed_size as f64 / plain_size as f64;
    eprintln!("none {plain_size} B, L0 none/L1 lz4/L2+ zstd {packed_size} B: {ratio:.3}");
    assert!(
        ratio < 0.7,
        "{packed_size} against {plain_size}: {ratio:.3}"
    );
}

#[test]
fn lz4_alone_shrinks_json_and_reads_back_after_reopen() {
    let n = 10_000;
    let plain = tempfile::tempdir().unwrap();
    let packed = tempfile::tempdir().unwrap();
    let mut opts = options(packed.path());
    opts.compression = Compression::Lz4;
    let packed_size = populate(packed.path(), opts.clone(), n);
    let plain_size = populate(plain.path(), options(plain.path()), n);
    assert!(table_versions(packed.path()).iter().all(|&v| v == 3));
    let db = Db::open(opts).unwrap();
    check_all(&db, n, "lz4 reopened");
    let ratio = packed_size as f64 / plain_size as f64;
    eprintln!("none {plain_size} B, lz4 {packed_size} B: {ratio:.3}");
    assert!(
        ratio < 0.7,
        "{packed_size} against {plain_size}: {ratio:.3}"
    );
}

#[test]
fn a_database_written_without_compression_reopened_with_it_reads_old_tables_and_writes_new_ones_compressed(
) {
    let dir = tempfile::tempdir().unwrap();
    let half = 5_000;
    let mut first = options(dir.path());
    first.level_dynamic = false;
    // Few L0 tables, so that the first half ends up compacted into L1.
    first.l0_compaction_trigger = 4;
    first.l0_slowdown_trigger = 8;
    first.l0_stop_trigger = 12;
    populate(dir.path(), first, half);
    let old = table_versions(dir.path());
    assert!(!old.is_empty() && old.iter().all(|&v| v == 2), "{old:?}");

    let mut opts = options(dir.path());
    opts.compression = Compression::Zstd;
    // Static sizing puts the old tables in L1, so that flatten's merge down
    // rewrites every one of them (under dynamic sizing they sit in the last
    // level, which flatten leaves as it is where nothing overlaps it).
    opts.level_dynamic = false;
    // One more L0 table must not start a compaction that rewrites the old ones.
    opts.l0_compaction_trigger = 8;
    opts.l0_slowdown_trigger = 16;
    opts.l0_stop_trigger = 24;
    let db = Db::open(opts.clone()).unwrap();
    check_all(&db, half, "version-2 tables under a zstd Db");
    let more = 200;
    for i in half..half + more {
        db.put(&key(i), &record(i)).unwrap();
    }
    db.flush().unwrap();
    let mixed = table_versions(dir.path());
    assert!(
        mixed.contains(&2) && mixed.contains(&3),
        "old and new tables side by side: {mixed:?}"
    );
    check_all(&db, half + more, "old and new tables");
    db.flatten().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Db::open(opts).unwrap();
    assert!(table_versions(dir.path()).iter().all(|&v| v == 3));
    check_all(&db, half + more, "all rewritten compressed");
}

/// The storage-key prefix of keyspace `ks`'s keys.
fn region(ks: &Keyspace) -> Vec<u8> {
    [&[0xff; 4][..], &ks.id().to_be_bytes()].concat()
}

fn check_keyspace(ks: &Keyspace, n: u64, ctx: &str) {
    for i in 0..n {
        assert_eq!(ks.get(&key(i)).unwrap(), Some(record(i)), "{ctx}: key {i}");
    }
    let items = ks
        .iter(IterOptions::default())
        .and_then(|it| it.collect::<sett::Result<Vec<_>>>())
        .unwrap();
    assert_eq!(items.len() as u64, n, "{ctx}: scan length");
    for (i, (k, v)) in (0..).zip(&items) {
        assert_eq!((k, v), (&key(i), &record(i)), "{ctx}");
    }
}

#[test]
fn a_zstd_keyspace_in_a_database_without_compression_gets_compressed_blocks_its_neighbours_do_not()
{
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path());
    o.value_threshold = 4096; // the records stay in the tables
    let zstd = KeyspaceOptions {
        compression: Some(Compression::Zstd),
        ..KeyspaceOptions::default()
    };
    let n = 1500;
    let (ra, rb) = {
        let db = Db::open(o.clone()).unwrap();
        let a = db.keyspace("a", zstd).unwrap();
        let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
        for i in 0..n {
            db.put(&key(i), &record(i)).unwrap();
            a.put(&key(i), &record(i)).unwrap();
            b.put(&key(i), &record(i)).unwrap();
        }
        db.flush().unwrap();
        db.flatten().unwrap();
        let (ra, rb) = (region(&a), region(&b));
        let (a_blocks, a_zipped) = db.compressed_blocks(&ra).unwrap();
        let (b_blocks, b_zipped) = db.compressed_blocks(&rb).unwrap();
        let (d_blocks, d_zipped) = db.compressed_blocks(b"user:").unwrap();
        eprintln!(
            "blocks (compressed/all): keyspace a {a_zipped}/{a_blocks}, b {b_zipped}/{b_blocks}, \
             default {d_zipped}/{d_blocks}; directory {} bytes",
            dir_size(dir.path())
        );
        // A block the codec does not shrink by an eighth is stored raw: JSON
        // records always shrink, so every block of "a" is compressed.
        assert!(a_blocks > 10, "{a_blocks} blocks of a");
        assert_eq!(a_zipped, a_blocks, "blocks of keyspace a stored compressed");
        assert!(b_blocks > 10 && d_blocks > 10, "{b_blocks} {d_blocks}");
        assert_eq!((b_zipped, d_zipped), (0, 0), "blocks of b and default");
        // Every table that may hold a's blocks is format version 3.
        assert!(table_versions(dir.path()).iter().all(|&v| v == 3));
        check_all(&db, n, "after flatten");
        check_keyspace(&a, n, "a after flatten");
        check_keyspace(&b, n, "b after flatten");
        db.close().unwrap();
        (ra, rb)
    };
    // After a reopen, with no keyspace opened: dropping "b" rewrites the
    // tables it shares with "a", and a's blocks come out zstd again (the
    // codecs come from the catalog at open).
    let db = Db::open(o.clone()).unwrap();
    db.drop_keyspace("b").unwrap();
    db.flatten().unwrap();
    let (a_blocks, a_zipped) = db.compressed_blocks(&ra).unwrap();
    assert!(
        a_blocks > 10 && a_zipped == a_blocks,
        "{a_zipped}/{a_blocks}"
    );
    assert_eq!(
        db.compressed_blocks(&rb).unwrap(),
        (0, 0),
        "b's blocks gone"
    );
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    assert_eq!(a.options().compression, Some(Compression::Zstd));
    check_keyspace(&a, n, "a after reopen");
    check_all(&db, n, "after reopen");
}

#[test]
fn a_keyspace_that_asks_for_no_compression_keeps_raw_blocks_in_a_zstd_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path());
    o.value_threshold = 4096;
    o.compression = Compression::Zstd;
    let db = Db::open(o).unwrap();
    let raw = db
        .keyspace(
            "raw",
            KeyspaceOptions {
                compression: Some(Compression::None),
                ..KeyspaceOptions::default()
            },
        )
        .unwrap();
    let n = 600;
    for i in 0..n {
        db.put(&key(i), &record(i)).unwrap();
        raw.put(&key(i), &record(i)).unwrap();
    }
    db.flush().unwrap();
    db.flatten().unwrap();
    let (r_blocks, r_zipped) = db.compressed_blocks(&region(&raw)).unwrap();
    let (d_blocks, d_zipped) = db.compressed_blocks(b"user:").unwrap();
    assert!(r_blocks > 10 && r_zipped == 0, "{r_zipped}/{r_blocks}");
    assert!(
        d_blocks > 10 && d_zipped == d_blocks,
        "{d_zipped}/{d_blocks}"
    );
    check_keyspace(&raw, n, "raw");
    check_all(&db, n, "default");
}

#[test]
fn a_database_restored_from_a_backup_compresses_a_zstd_keyspace_s_new_tables() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut o = options(src.path());
    o.value_threshold = 4096;
    let db = Db::open(o).unwrap();
    let zstd = KeyspaceOptions {
        compression: Some(Compression::Zstd),
        ..KeyspaceOptions::default()
    };
    let ks = db.keyspace("z", zstd).unwrap();
    let n = 600;
    for i in 0..n {
        ks.put(&key(i), &record(i)).unwrap();
    }
    let mut stream = Vec::new();
    db.backup(&mut stream, 0).unwrap();
    let mut o = options(dst.path());
    o.value_threshold = 4096;
    let restored = Db::open(o).unwrap();
    restored.load(&mut stream.as_slice()).unwrap();
    // No keyspace handle opened: the codec comes from the restored catalog.
    restored.flush().unwrap();
    restored.flatten().unwrap();
    let (blocks, zipped) = restored.compressed_blocks(&region(&ks)).unwrap();
    assert!(blocks > 10 && zipped == blocks, "{zipped}/{blocks}");
    let ks = restored.keyspace("z", KeyspaceOptions::default()).unwrap();
    assert_eq!(ks.options().compression, Some(Compression::Zstd));
    check_keyspace(&ks, n, "restored");
}
