//! Bad input and misuse: each gets a clear error, and what was stored before it
//! is still there afterwards.

mod common;

use common::tiny_options;
use sett::{Db, Error, IterOptions, Options, WriteBatch};
use std::path::Path;
use std::process::Command;

fn db_with_data(dir: &Path) -> Db {
    let db = Db::open(tiny_options(dir)).unwrap();
    for i in 0..100u32 {
        db.put(
            format!("key{i}").as_bytes(),
            &vec![i as u8; (i * 3) as usize],
        )
        .unwrap();
    }
    db
}

fn assert_data_intact(db: &Db) {
    for i in 0..100u32 {
        assert_eq!(
            db.get(format!("key{i}").as_bytes()).unwrap(),
            Some(vec![i as u8; (i * 3) as usize])
        );
    }
}

#[test]
fn oversized_key_is_refused_and_stored_data_survives() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    let big = vec![b'k'; 65_001];
    match db.put(&big, b"v") {
        Err(Error::TooBig {
            what: "key",
            len: 65_001,
            max: 65_000,
        }) => {}
        other => panic!("expected TooBig key, got {other:?}"),
    }
    let mut b = WriteBatch::new();
    b.put(b"fine", b"v").put(big.clone(), b"v");
    assert!(matches!(
        db.write(b),
        Err(Error::TooBig { what: "key", .. })
    ));
    assert_eq!(
        db.get(b"fine").unwrap(),
        None,
        "a refused batch must apply nothing"
    );
    assert!(matches!(db.get(&big), Err(Error::TooBig { .. })));
    assert_data_intact(&db);
}

#[test]
fn oversized_value_is_refused_and_stored_data_survives() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiny_options(dir.path());
    o.max_value_size = 1000;
    let db = Db::open(o).unwrap();
    db.put(b"a", &[1; 1000]).unwrap();
    let err = db.put(b"b", &[1; 1001]).unwrap_err();
    assert!(
        err.to_string()
            .contains("value of 1001 bytes exceeds the limit of 1000"),
        "{err}"
    );
    assert_eq!(db.get(b"a").unwrap(), Some(vec![1; 1000]));
    assert_eq!(db.get(b"b").unwrap(), None);
}

#[test]
fn empty_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    assert!(matches!(db.put(b"", b"v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.get(b""), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete(b""), Err(Error::InvalidArgument(_))));
    assert_data_intact(&db);
}

#[test]
fn rocksdb_l0_counts_below_the_default_trigger_are_refused_by_name_and_the_data_stays() {
    // RocksDB's slowdown and stop counts (20, 36) set without the trigger sit
    // below sett's default trigger of 64 tables.
    let dir = tempfile::tempdir().unwrap();
    drop(db_with_data(dir.path()));
    let mut o = Options::new(dir.path());
    o.l0_slowdown_trigger = 20;
    o.l0_stop_trigger = 36;
    match Db::open(o) {
        Err(
            e @ Error::InvalidOption {
                name: "l0_slowdown_trigger",
                ..
            },
        ) => assert!(
            e.to_string().contains("below l0_compaction_trigger (64)"),
            "{e}"
        ),
        other => panic!("expected an invalid option, got {:?}", other.err()),
    }
    assert_data_intact(&Db::open(tiny_options(dir.path())).unwrap());
}

#[test]
fn bad_option_is_reported_by_name_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path());
    o.bloom_bits_per_key = 1000;
    match Db::open(o) {
        Err(Error::InvalidOption {
            name: "bloom_bits_per_key",
            ..
        }) => {}
        other => panic!("expected an invalid option, got {:?}", other.err()),
    }
}

#[test]
fn second_writer_in_the_same_process_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    assert!(matches!(
        Db::open(tiny_options(dir.path())),
        Err(Error::Locked(_))
    ));
    let mut ro = tiny_options(dir.path());
    ro.read_only = true;
    assert!(
        matches!(Db::open(ro), Err(Error::Locked(_))),
        "read-only must wait for the writer"
    );
    assert_data_intact(&db);
}

const LOCK_CHILD_ENV: &str = "SETT_LOCK_CHILD_DIR";

#[test]
fn lock_child_opener() {
    // Child entry: tries to open the directory and prints the outcome.
    let Ok(dir) = std::env::var(LOCK_CHILD_ENV) else {
        return;
    };
    match Db::open(tiny_options(Path::new(&dir))) {
        Ok(_) => println!("CHILD: opened"),
        Err(e) => println!("CHILD: {e}"),
    }
}

#[test]
fn second_writer_process_gets_a_clear_lock_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lock_child_opener",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LOCK_CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("CHILD: database directory")
            && stdout.contains("is locked by another process"),
        "{stdout}"
    );
    assert_data_intact(&db);
}

#[test]
fn read_only_opens_share_the_directory_and_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    db_with_data(dir.path()).close().unwrap();
    let mut ro = tiny_options(dir.path());
    ro.read_only = true;
    let a = Db::open(ro.clone()).unwrap();
    let b = Db::open(ro).unwrap();
    assert_data_intact(&a);
    assert_data_intact(&b);
    assert!(matches!(a.put(b"x", b"y"), Err(Error::ReadOnly)));
    assert!(matches!(
        Db::open(tiny_options(dir.path())),
        Err(Error::Locked(_))
    ));
}

#[test]
fn read_only_open_of_an_empty_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut ro = tiny_options(dir.path());
    ro.read_only = true;
    assert!(matches!(Db::open(ro), Err(Error::InvalidArgument(_))));
}

#[test]
fn use_after_close_returns_closed_and_reopen_finds_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    let it = db.iter(IterOptions::default()).unwrap();
    db.close().unwrap();
    db.close().unwrap(); // closing twice is a no-op
    assert!(matches!(db.put(b"k", b"v"), Err(Error::Closed)));
    assert!(matches!(db.get(b"key1"), Err(Error::Closed)));
    assert!(matches!(
        db.iter(IterOptions::default()),
        Err(Error::Closed)
    ));
    let rest: sett::Result<Vec<_>> = it.collect();
    assert!(
        matches!(rest, Err(Error::Closed)),
        "an iterator outliving its Db reports Closed"
    );
    drop(db);
    assert_data_intact(&Db::open(tiny_options(dir.path())).unwrap());
}

const FULL_CHILD_ENV: &str = "SETT_FULL_CHILD_DIR";

#[test]
fn full_disk_child_writer() {
    // Child entry: writes under a file-size limit until the value log hits it
    // (a real EFBIG from write(2)), then checks the Db is poisoned for writes
    // and still serves reads.
    let Ok(dir) = std::env::var(FULL_CHILD_ENV) else {
        return;
    };
    // SAFETY: plain libc calls on this single-threaded child before the Db starts
    // threads; ignoring SIGXFSZ turns the limit into an EFBIG error from write(2).
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: 300 << 10,
            rlim_max: 300 << 10,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let mut o = tiny_options(Path::new(&dir));
    o.memtable_size = 8 << 20;
    o.vlog_file_size = 1 << 30;
    let db = Db::open(o).unwrap();
    let mut acked = 0;
    let err = loop {
        match db.put(format!("key{acked:06}").as_bytes(), &[acked as u8; 1000]) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
    };
    println!("CHILD acked {acked}");
    println!("CHILD first error: {err}");
    match db.put(b"after", b"small") {
        Err(Error::Poisoned(msg)) => println!("CHILD poisoned: {msg}"),
        other => println!("CHILD not poisoned: {other:?}"),
    }
    let reads_ok = (0..acked).all(|i| {
        db.get(format!("key{i:06}").as_bytes()).ok().flatten() == Some(vec![i as u8; 1000])
    });
    println!("CHILD reads ok: {reads_ok}");
    std::process::exit(0);
}

#[test]
fn io_error_on_the_write_path_poisons_writes_keeps_reads_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "full_disk_child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FULL_CHILD_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let acked: u32 = stdout
        .lines()
        .find_map(|l| l.split("CHILD acked ").nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("child output: {stdout}"));
    assert!(acked > 10, "{stdout}");
    assert!(
        stdout.contains("CHILD first error: I/O error while appending to"),
        "{stdout}"
    );
    assert!(stdout.contains("CHILD poisoned:"), "{stdout}");
    assert!(stdout.contains("CHILD reads ok: true"), "{stdout}");
    // Space is back (no limit here): every acknowledged write is there.
    let db = Db::open(tiny_options(dir.path())).unwrap();
    for i in 0..acked {
        assert_eq!(
            db.get(format!("key{i:06}").as_bytes()).unwrap(),
            Some(vec![i as u8; 1000]),
            "key {i}"
        );
    }
    assert_eq!(db.get(format!("key{acked:06}").as_bytes()).unwrap(), None);
    db.put(b"after-reopen", b"works").unwrap();
}

#[test]
fn close_releases_the_directory_even_while_the_handle_lives() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_with_data(dir.path());
    db.close().unwrap();
    let again = Db::open(tiny_options(dir.path())).unwrap();
    assert_data_intact(&again);
    drop(db);
    assert_data_intact(&again);
}
