//! Corruption sweep: for every file type, flip a byte at many offsets (and cut
//! files at many lengths); open, a full scan, `verify` and point reads must each
//! either succeed with exactly the right data — every live key there with its
//! newest value, no deleted, expired or older version back — or fail with a
//! corruption error naming the damaged file; never panic, hang, or return a
//! wrong value. One build adds merge operands (the append operator) over live,
//! deleted and expired keys, left unfolded in the tables.

mod common;

use common::{copy_dir, files_with_ext, tiny_options, value_for, wal_records_end};
use sett::{Clock, Compression, Db, Error, IterOptions, KeyspaceOptions, PutOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

const KEYS: u64 = 300;

fn key(k: u64) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

fn value_len(k: u64) -> usize {
    if k.is_multiple_of(3) {
        200
    } else {
        20
    }
}

/// What key `k` holds after `build`: several versions were written, some keys
/// deleted, some given a TTL that has passed.
fn expected(k: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = key(k);
    let v = if k.is_multiple_of(11) || k.is_multiple_of(7) {
        None
    } else if k.is_multiple_of(2) {
        Some(value_for(&key, 2, value_len(k)))
    } else {
        Some(value_for(&key, 1, value_len(k)))
    };
    (key, v)
}

/// What key `k` holds after `build(mode)`: with `Mode::Merges`, every fifth
/// key also has two operands appended to its value (or to nothing).
fn expected_in(k: u64, mode: Mode) -> (Vec<u8>, Option<Vec<u8>>) {
    let (key, v) = expected(k);
    if mode == Mode::Merges && k.is_multiple_of(5) {
        let mut v = v.unwrap_or_default();
        v.extend_from_slice(b"+m+n");
        return (key, Some(v));
    }
    (key, v)
}

/// The first value written to key `k` (the WAL sweep writes only these).
fn first_version(k: u64) -> (Vec<u8>, Vec<u8>) {
    (key(k), value_for(&key(k), 1, value_len(k)))
}

/// How the swept database's tables are written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// No compression: version-2 tables.
    Plain,
    /// Flushed tables LZ4, deeper ones zstd (version 3), so damage lands in
    /// compressed blocks.
    Levels,
    /// No compression for the Db, and the same data again in keyspace
    /// `KS`, whose blocks are zstd: version-3 tables mixing raw and
    /// compressed blocks.
    Keyspace,
    /// No compression; operands over some keys (see `expected_in`).
    Merges,
}

/// The keyspace of `Mode::Keyspace`.
const KS: &str = "z";

fn options(dir: &Path, mode: Mode) -> sett::Options {
    let mut o = tiny_options(dir);
    if mode == Mode::Levels {
        o.compression_per_level = vec![Compression::Lz4, Compression::Zstd];
    }
    if mode == Mode::Merges {
        o.merge_operator = Some(Arc::new(sett::merge::Append));
    }
    o
}

fn build(mode: Mode) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(dir.path(), mode);
    // TTLs are measured against a clock far in the past: expired at any reopen.
    o.clock = Clock::manual(Arc::new(AtomicU64::new(1_000_000)));
    let db = Db::open(o).unwrap();
    let ks = (mode == Mode::Keyspace).then(|| {
        let zstd = KeyspaceOptions {
            compression: Some(Compression::Zstd),
            ..KeyspaceOptions::default()
        };
        db.keyspace(KS, zstd).unwrap()
    });
    let put = |key: &[u8], v: &[u8], opts: PutOptions| {
        db.put_with(key, v, opts).unwrap();
        if let Some(ks) = &ks {
            ks.put_with(key, v, opts).unwrap();
        }
    };
    for k in 0..KEYS {
        let (key, v) = first_version(k);
        put(&key, &v, PutOptions::default());
    }
    db.flush().unwrap();
    for k in 0..KEYS {
        if k.is_multiple_of(11) {
            let ttl = PutOptions {
                ttl: Some(Duration::from_secs(5)),
                ..PutOptions::default()
            };
            put(&key(k), &value_for(&key(k), 3, value_len(k)), ttl);
        } else if k.is_multiple_of(7) {
            db.delete(&key(k)).unwrap();
            if let Some(ks) = &ks {
                ks.delete(&key(k)).unwrap();
            }
        } else if k.is_multiple_of(2) {
            put(
                &key(k),
                &value_for(&key(k), 2, value_len(k)),
                PutOptions::default(),
            );
        }
    }
    if mode == Mode::Merges {
        for k in (0..KEYS).filter(|k| k.is_multiple_of(5)) {
            db.merge(&key(k), b"+m").unwrap();
            db.merge(&key(k), b"+n").unwrap();
        }
    }
    if let Some(ks) = &ks {
        // The zstd keyspace's blocks are compressed, the default keyspace's not.
        let region = [&[0xff; 4][..], &ks.id().to_be_bytes()].concat();
        let (blocks, zipped) = db.compressed_blocks(&region).unwrap();
        assert!(blocks > 0 && zipped * 2 > blocks, "{zipped}/{blocks}");
        assert_eq!(db.compressed_blocks(b"key").unwrap().1, 0);
    }
    db.close().unwrap();
    dir
}

/// Damage must be reported against the damaged file. A damaged MANIFEST may
/// also show as a file it lists being missing (the error says so).
fn check_error(e: &Error, damaged: &Path, what: &str) {
    match e {
        Error::Corruption { what: says, .. }
            if damaged.ends_with("MANIFEST") && says.contains("MANIFEST") => {}
        Error::Corruption { file, .. } => {
            assert_eq!(
                file.file_name(),
                damaged.file_name(),
                "{what}: error names {}",
                file.display()
            )
        }
        Error::UnsupportedVersion { file, .. } => {
            assert_eq!(file.file_name(), damaged.file_name(), "{what}")
        }
        other => panic!("{what}: expected a corruption error, got {other}"),
    }
}

/// A copy of `src` in which `target`'s bytes went through `damage`; returns
/// the copy and the damaged file's path in it.
fn damaged_copy(
    src: &Path,
    target: &Path,
    damage: impl FnOnce(&mut Vec<u8>),
) -> (tempfile::TempDir, PathBuf) {
    let copy = copy_dir(src);
    let path = copy.path().join(target.file_name().unwrap());
    let mut data = std::fs::read(&path).unwrap();
    damage(&mut data);
    std::fs::write(&path, &data).unwrap();
    (copy, path)
}

/// Returns (clean, errors) counts for one damaged copy.
fn probe(dir: &Path, damaged: &Path, what: &str, mode: Mode) -> (u32, u32) {
    let db = match Db::open(options(dir, mode)) {
        Ok(db) => db,
        Err(e) => {
            check_error(&e, damaged, what);
            return (0, 1);
        }
    };
    let mut errors = check_reads(
        db.iter(IterOptions::default()),
        |k| db.get(k),
        (damaged, mode),
        what,
    );
    if let Err(e) = db.verify() {
        check_error(&e, damaged, what);
        errors += 1;
    }
    if mode == Mode::Keyspace {
        let what = &format!("{what}, keyspace {KS}");
        match db.keyspace(KS, KeyspaceOptions::default()) {
            Ok(ks) => {
                errors += check_reads(
                    ks.iter(IterOptions::default()),
                    |k| ks.get(k),
                    (damaged, mode),
                    what,
                )
            }
            Err(e) => {
                check_error(&e, damaged, what);
                errors += 1;
            }
        }
    }
    (u32::from(errors == 0), u32::from(errors > 0))
}

/// A full scan and a get of every key give the right data or a corruption
/// error naming the damaged file; returns the number of errors.
fn check_reads(
    scan: sett::Result<sett::DbIterator>,
    get: impl Fn(&[u8]) -> sett::Result<Option<Vec<u8>>>,
    (damaged, mode): (&Path, Mode),
    what: &str,
) -> u32 {
    let expected = |k| expected_in(k, mode);
    let mut errors = 0;
    match scan.and_then(|it| it.collect::<sett::Result<Vec<_>>>()) {
        Ok(items) => {
            let mut seen = 0;
            for (k, v) in &items {
                let n: u64 = String::from_utf8_lossy(&k[3..]).parse().unwrap();
                assert_eq!(
                    Some(v),
                    expected(n).1.as_ref(),
                    "{what}: scan returned a wrong, deleted or expired value for {n}"
                );
                seen += 1;
            }
            let live = (0..KEYS).filter(|&k| expected(k).1.is_some()).count();
            assert_eq!(
                seen, live,
                "{what}: a clean scan returned {seen} items of {live}: some silently missing"
            );
        }
        Err(e) => {
            check_error(&e, damaged, what);
            errors += 1;
        }
    }
    for k in 0..KEYS {
        let (key, v) = expected(k);
        match (get(&key), v) {
            (Ok(Some(got)), Some(v)) => {
                assert_eq!(got, v, "{what}: get returned a wrong value for {k}")
            }
            (Ok(None), None) => {}
            (Ok(None), Some(_)) => panic!("{what}: key {k} silently missing"),
            (Ok(Some(_)), None) => panic!("{what}: deleted or expired key {k} came back"),
            (Err(e), _) => {
                check_error(&e, damaged, what);
                errors += 1;
            }
        }
    }
    errors
}

fn sweep(ext: &str, samples: usize, mode: Mode) {
    let src = build(mode);
    let targets: Vec<PathBuf> = if ext == "MANIFEST" {
        vec![src.path().join("MANIFEST")]
    } else {
        files_with_ext(src.path(), ext)
            .into_iter()
            .filter(|p| std::fs::metadata(p).unwrap().len() > 16)
            .collect()
    };
    assert!(!targets.is_empty(), "no .{ext} file to damage");
    if !matches!(mode, Mode::Plain | Mode::Merges) {
        // The footer's format version (u32 at 40 of the last 56 bytes) is 3.
        let version = |p: &PathBuf| {
            let b = std::fs::read(p).unwrap();
            u32::from_le_bytes(b[b.len() - 16..b.len() - 12].try_into().unwrap())
        };
        assert!(
            targets.iter().all(|t| version(t) == 3),
            "uncompressed tables"
        );
    }
    let (mut clean, mut detected) = (0, 0);
    for target in &targets {
        let len = std::fs::metadata(target).unwrap().len() as usize;
        let step = (len / samples).max(1);
        for off in (0..len).step_by(step) {
            let (copy, path) = damaged_copy(src.path(), target, |d| d[off] ^= 0x5A);
            let what = format!("{} offset {off}", path.display());
            let (c, d) = probe(copy.path(), &path, &what, mode);
            clean += c;
            detected += d;
        }
    }
    eprintln!(
        "{ext} ({mode:?}): {} files, {clean} flips harmless, {detected} reported as corruption",
        targets.len()
    );
    assert!(detected > 0, "no flip in a .{ext} file was detected");
}

#[test]
fn flipped_bytes_in_tables_are_detected_or_harmless() {
    sweep("sst", 40, Mode::Plain);
}

#[test]
fn flipped_bytes_in_compressed_tables_are_detected_or_harmless() {
    sweep("sst", 40, Mode::Levels);
}

#[test]
fn flipped_bytes_in_tables_mixing_a_zstd_keyspace_with_raw_blocks_are_detected_or_harmless() {
    sweep("sst", 40, Mode::Keyspace);
}

#[test]
fn flipped_bytes_in_tables_holding_merge_operands_are_detected_or_harmless() {
    sweep("sst", 40, Mode::Merges);
}

#[test]
fn flipped_bytes_in_value_logs_are_detected_or_harmless() {
    sweep("vlog", 40, Mode::Plain);
}

#[test]
fn flipped_bytes_in_the_manifest_are_detected_or_harmless() {
    sweep("MANIFEST", 60, Mode::Plain);
}

#[test]
fn flipped_bytes_in_a_manifest_naming_a_merge_operator_are_detected_or_harmless() {
    sweep("MANIFEST", 60, Mode::Merges);
}

/// Cuts every table and the manifest at many lengths: open, scan, verify and
/// point reads give the right data or a corruption error naming the cut file.
fn truncation_sweep(ext: &str, samples: usize, mode: Mode) -> (u32, u32) {
    let src = build(mode);
    let targets: Vec<PathBuf> = if ext == "MANIFEST" {
        vec![src.path().join("MANIFEST")]
    } else {
        files_with_ext(src.path(), ext)
    };
    assert!(!targets.is_empty(), "no .{ext} file to cut");
    let (mut clean, mut detected) = (0, 0);
    for target in &targets {
        let len = std::fs::metadata(target).unwrap().len() as usize;
        for cut in (0..len).step_by((len / samples).max(1)) {
            let (copy, path) = damaged_copy(src.path(), target, |d| d.truncate(cut));
            let what = format!("{} cut to {cut} of {len} bytes", path.display());
            let (c, d) = probe(copy.path(), &path, &what, mode);
            clean += c;
            detected += d;
        }
    }
    eprintln!("{ext} truncation: {clean} cuts harmless, {detected} reported as corruption");
    (clean, detected)
}

#[test]
fn truncated_tables_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("sst", 30, Mode::Plain);
    assert!(detected > 0);
}

#[test]
fn truncated_compressed_tables_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("sst", 30, Mode::Levels);
    assert!(detected > 0);
}

#[test]
fn truncated_tables_holding_merge_operands_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("sst", 30, Mode::Merges);
    assert!(detected > 0);
}

#[test]
fn truncated_tables_mixing_a_zstd_keyspace_with_raw_blocks_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("sst", 30, Mode::Keyspace);
    assert!(detected > 0);
}

#[test]
fn truncated_value_logs_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("vlog", 30, Mode::Plain);
    assert!(detected > 0);
}

#[test]
fn truncated_manifests_are_detected_never_read_wrong() {
    let (_, detected) = truncation_sweep("MANIFEST", 40, Mode::Plain);
    assert!(detected > 0);
}

/// A Db whose writes are all still in its WAL (memtable never flushed), left
/// as a crash would leave it. Written with `sync_writes`, so that every record
/// is known synced by the next: damage to it is corruption, not a torn tail
/// (damage to records never synced may be the out-of-order writeback of a
/// power cut, and recovers a prefix: tests/power_loss.rs).
fn build_unflushed() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiny_options(dir.path());
    o.memtable_size = 1 << 20;
    o.sync_writes = true;
    let db = Db::open(o).unwrap();
    for k in 0..KEYS {
        let (key, v) = first_version(k);
        db.put(&key, &v).unwrap();
    }
    // No close: closing would flush the memtable into a table.
    std::mem::forget(db);
    dir
}

/// After damage to the WAL, open either fails naming the WAL, or recovers a
/// prefix of the writes (a damaged last record is a torn tail) with every value
/// right.
fn probe_wal(dir: &Path, damaged: &Path, what: &str) -> (u32, u32) {
    let db = match Db::open(tiny_options(dir)) {
        Ok(db) => db,
        Err(e) => {
            check_error(&e, damaged, what);
            return (0, 1);
        }
    };
    let items: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(IterOptions::default())
        .and_then(|it| it.collect())
        .unwrap_or_else(|e| panic!("{what}: scan after a clean open failed: {e}"));
    for (i, (k, v)) in items.iter().enumerate() {
        let (key, value) = first_version(i as u64);
        assert_eq!(
            k, &key,
            "{what}: recovered keys are not a prefix of the writes"
        );
        assert_eq!(v, &value, "{what}: wrong value for {i}");
    }
    db.verify()
        .unwrap_or_else(|e| panic!("{what}: verify after a clean open failed: {e}"));
    let lost = KEYS - items.len() as u64;
    assert!(lost <= 1, "{what}: {lost} writes lost to one flipped byte");
    (1, 0)
}

#[test]
fn flipped_bytes_in_the_wal_are_detected_or_cut_as_a_torn_tail() {
    let src = build_unflushed();
    let wals = files_with_ext(src.path(), "wal");
    let wal = wals.last().expect("a WAL file").clone();
    let len = wal_records_end(&wal) as usize;
    let (mut clean, mut detected) = (0, 0);
    // ~150 offsets over the records, and every byte of the last 40 (the last record).
    let offsets = (0..len)
        .step_by((len / 150).max(1))
        .chain(len.saturating_sub(40)..len);
    for off in offsets {
        let (copy, path) = damaged_copy(src.path(), &wal, |d| d[off] ^= 0x5A);
        let what = format!("{} offset {off}", path.display());
        let (c, d) = probe_wal(copy.path(), &path, &what);
        clean += c;
        detected += d;
    }
    eprintln!(
        "wal: {len} bytes, {clean} flips recovered a prefix, {detected} reported as corruption"
    );
    assert!(detected > 100, "only {detected} WAL flips were detected");
    assert!(
        clean > 0,
        "no flip in the last record was cut as a torn tail"
    );
}

#[test]
fn verify_checks_every_block_and_value_of_a_healthy_db() {
    let dir = build(Mode::Plain);
    let db = Db::open(tiny_options(dir.path())).unwrap();
    let r = db.verify().unwrap();
    assert!(r.tables > 0 && r.blocks >= r.tables, "{r:?}");
    // Every live separated value, and older versions still held in tables.
    let live_separated = (0..KEYS)
        .filter(|&k| value_len(k) >= 64 && expected(k).1.is_some())
        .count() as u64;
    assert!(
        r.values >= live_separated,
        "{r:?}: {live_separated} live separated values"
    );
    let live = (0..KEYS).filter(|&k| expected(k).1.is_some()).count() as u64;
    assert!(r.entries >= live, "{r:?}: {live} live keys");
}
