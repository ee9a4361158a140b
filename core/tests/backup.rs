//! Backup and restore: round trips (full and incremental) with deletes, TTLs and
//! user meta; damaged or cut streams are rejected; a full restore needs an empty Db.

mod common;

use common::tiny_options;
use sett::{Clock, Db, Error, IterOptions, Options, PutOptions};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

fn opts(dir: &std::path::Path) -> Options {
    let mut o = tiny_options(dir);
    o.clock = Clock::manual(Arc::new(AtomicU64::new(10_000)));
    o
}

type Dump = Vec<(Vec<u8>, Vec<u8>, u8, u64)>;

fn dump(db: &Db) -> Dump {
    db.iter(IterOptions::default())
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            let item = db.get_entry(&k).unwrap().unwrap();
            (k, v, item.user_meta, item.expires_at)
        })
        .collect()
}

fn fill(db: &Db) {
    for i in 0..400u32 {
        let k = format!("key{i:04}");
        let v = vec![(i % 251) as u8; (i as usize * 7) % 300];
        let o = PutOptions {
            user_meta: (i % 5) as u8,
            ttl: (i % 3 == 0).then(|| Duration::from_secs(3600)),
        };
        db.put_with(k.as_bytes(), &v, o).unwrap();
    }
    for i in (0..400u32).step_by(7) {
        db.delete(format!("key{i:04}").as_bytes()).unwrap();
    }
}

/// A filled Db and a full backup of it.
fn filled_source() -> (tempfile::TempDir, Db, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let src = Db::open(opts(dir.path())).unwrap();
    fill(&src);
    let mut stream = Vec::new();
    src.backup(&mut stream, 0).unwrap();
    (dir, src, stream)
}

#[test]
fn full_backup_round_trips_values_meta_ttl_and_deletes() {
    let (_a, src, stream) = filled_source();
    let b = tempfile::tempdir().unwrap();
    let dst = Db::open(opts(b.path())).unwrap();
    let n = dst.load(&mut stream.as_slice()).unwrap();
    let want = dump(&src);
    assert_eq!(n as usize, want.len());
    assert_eq!(dump(&dst), want);
    assert!(
        dst.get(b"key0007").unwrap().is_none(),
        "a deleted key came back"
    );
}

#[test]
fn incremental_backups_layer_on_a_full_one() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = Db::open(opts(a.path())).unwrap();
    fill(&src);
    let mut full = Vec::new();
    let since = src.backup(&mut full, 0).unwrap();
    for i in 0..100u32 {
        src.put(format!("key{i:04}").as_bytes(), b"changed")
            .unwrap();
        src.put(format!("key{i:04}").as_bytes(), b"changed twice")
            .unwrap();
    }
    for i in 100..150u32 {
        src.delete(format!("key{i:04}").as_bytes()).unwrap();
    }
    let mut incr = Vec::new();
    src.backup(&mut incr, since).unwrap();
    assert!(
        incr.len() < full.len(),
        "an incremental backup holds only what changed"
    );
    let dst = Db::open(opts(b.path())).unwrap();
    dst.load(&mut full.as_slice()).unwrap();
    dst.load(&mut incr.as_slice()).unwrap();
    assert_eq!(dump(&dst), dump(&src));
}

#[test]
fn damaged_or_cut_backups_are_rejected_with_a_clear_error() {
    let (_a, _src, stream) = filled_source();
    for (what, bad) in [
        ("flipped byte", {
            let mut s = stream.clone();
            let mid = s.len() / 2;
            s[mid] ^= 0x20;
            s
        }),
        ("cut short", stream[..stream.len() - 20].to_vec()),
        ("no end record", stream[..stream.len() - 17].to_vec()),
        (
            "not a backup",
            b"hello, this is not a sett backup stream".to_vec(),
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let dst = Db::open(opts(d.path())).unwrap();
        match dst.load(&mut bad.as_slice()) {
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file.to_str(), Some("<backup stream>"), "{what}")
            }
            other => panic!("{what}: expected corruption, got {other:?}"),
        }
    }
}

#[test]
fn a_full_restore_into_a_non_empty_db_is_refused_and_keeps_its_data() {
    let (_a, _src, stream) = filled_source();
    let b = tempfile::tempdir().unwrap();
    let dst = Db::open(opts(b.path())).unwrap();
    dst.put(b"mine", b"keep me").unwrap();
    assert!(matches!(
        dst.load(&mut stream.as_slice()),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(dst.get(b"mine").unwrap().as_deref(), Some(&b"keep me"[..]));
    assert_eq!(dst.iter(IterOptions::default()).unwrap().count(), 1);
}

/// A stream is applied in chunks of about 1 MiB as it is read, so a large one
/// cut short (a backup interrupted by a crash) fails with a corruption error
/// after some chunks went in: what went in is a prefix of the backup with the
/// right values, never a wrong value, and `Db::load`'s docs say so.
#[test]
fn a_large_cut_backup_fails_with_a_clear_error_and_applies_only_right_values() {
    let a = tempfile::tempdir().unwrap();
    let src = Db::open(sett::Options::new(a.path())).unwrap();
    for i in 0..3000u32 {
        let k = format!("key{i:05}");
        src.put(k.as_bytes(), &common::value_for(k.as_bytes(), 1, 1000))
            .unwrap();
    }
    let mut stream = Vec::new();
    src.backup(&mut stream, 0).unwrap();
    assert!(stream.len() > 2 << 20, "{} bytes", stream.len());
    let want: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = src
        .iter(IterOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let mut partial = 0;
    for cut in [100, stream.len() / 3, stream.len() / 2, stream.len() - 20] {
        let d = tempfile::tempdir().unwrap();
        let dst = Db::open(sett::Options::new(d.path())).unwrap();
        match dst.load(&mut &stream[..cut]) {
            Err(Error::Corruption { file, .. }) => {
                assert_eq!(file.to_str(), Some("<backup stream>"), "cut at {cut}")
            }
            other => panic!("cut at {cut}: expected corruption, got {other:?}"),
        }
        let got: Vec<(Vec<u8>, Vec<u8>)> = dst
            .iter(IterOptions::default())
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        for (k, v) in &got {
            assert_eq!(want.get(k), Some(v), "cut at {cut}: a wrong value");
        }
        // A prefix of the backup's keys.
        let prefix: Vec<&Vec<u8>> = want.keys().take(got.len()).collect();
        assert!(
            got.iter().map(|(k, _)| k).eq(prefix),
            "cut at {cut}: not a prefix"
        );
        partial += usize::from(!got.is_empty());
    }
    assert!(
        partial > 0,
        "no cut stream applied a chunk: the docs would be wrong"
    );
}
