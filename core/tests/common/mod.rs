//! Helpers shared by the integration tests.
#![allow(dead_code)]

use sett::{Db, Options, WriteBatch};
use std::path::Path;

/// A small deterministic generator (SplitMix64), so that failures replay from a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Options with tiny memtables, blocks and tables, so that a few thousand writes
/// flush, compact through several levels and fill several value-log files.
pub fn tiny_options(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.value_threshold = 64;
    o.memtable_size = 4096;
    o.max_memtables = 3;
    o.block_size = 256;
    o.table_size = 4096;
    o.level_base_size = 16 << 10;
    o.level_multiplier = 4;
    o.num_levels = 5;
    o.l0_compaction_trigger = 2;
    o.l0_slowdown_trigger = 4;
    o.l0_stop_trigger = 8;
    o.vlog_file_size = 32 << 10;
    o
}

/// A deterministic value for (key, version): its length decides which side of the
/// threshold it lands on, and its bytes let a reader check it is not torn.
pub fn value_for(key: &[u8], version: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{}:{version}:", String::from_utf8_lossy(key)).into_bytes();
    while v.len() < len {
        v.push(b'a' + (v.len() % 26) as u8);
    }
    v.truncate(len.max(1));
    v
}

/// Paths in `dir` whose names end with `ext`, sorted.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Flips the bits of one byte of `path` at `offset`.
pub fn flip_byte(path: &Path, offset: u64) {
    let mut data = std::fs::read(path).unwrap();
    data[offset as usize] ^= 0xff;
    std::fs::write(path, data).unwrap();
}

/// Where the records of a WAL end: WAL format 3 may leave zeros after the last
/// record (space allocated ahead for mapped appends), up to the file's end.
/// A last record ending in zero bytes is seen a few bytes short: tests aim
/// inside records, not at their very last bytes.
pub fn wal_records_end(path: &Path) -> u64 {
    let data = std::fs::read(path).unwrap();
    data.iter()
        .rposition(|&b| b != 0)
        .map_or(0, |p| p as u64 + 1)
}

/// Copies every file of `from` into a new temporary directory.
pub fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.path().join(p.file_name().unwrap())).unwrap();
    }
    to
}

/// Runs the test `name` of this test binary as a child process with `env`
/// set: its stdout to read from, its stderr read in the background.
pub fn spawn_child_test(
    name: &str,
    env: &[(&str, String)],
) -> (
    std::process::Child,
    std::process::ChildStdout,
    std::thread::JoinHandle<String>,
) {
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = read_stderr(&mut child);
    let stdout = child.stdout.take().unwrap();
    (child, stdout, stderr)
}

/// Starts reading a child's piped stderr in the background.
pub fn read_stderr(child: &mut std::process::Child) -> std::thread::JoinHandle<String> {
    let mut stderr = child
        .stderr
        .take()
        .expect("the child's stderr must be piped");
    std::thread::spawn(move || {
        use std::io::Read;
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    })
}

/// Kills a child with SIGKILL and checks that it was still running: a child
/// that ended on its own (a panic, an error) fails the test with its stderr.
pub fn kill_running_child(
    child: &mut std::process::Child,
    stderr: std::thread::JoinHandle<String>,
    what: &str,
) {
    use std::os::unix::process::ExitStatusExt;
    let _ = child.kill();
    let status = child.wait().expect("waiting for the child");
    let err = stderr.join().unwrap_or_default();
    assert_eq!(
        status.signal(),
        Some(9),
        "{what}: the child ended on its own ({status}) before it was killed; its stderr:\n{err}"
    );
}

/// Whether a batch written whole is all in `db` (true) or all absent (false);
/// `None` when it is torn. A key that reads with another value panics.
pub fn batch_state(db: &Db, batch: &[(Vec<u8>, Vec<u8>)]) -> Option<bool> {
    let found: Vec<bool> = batch
        .iter()
        .map(|(k, v)| {
            db.get(k)
                .unwrap()
                .inspect(|got| assert_eq!(got, v, "key {}", String::from_utf8_lossy(k)))
                .is_some()
        })
        .collect();
    let all = found.iter().all(|&f| f);
    (all || found.iter().all(|&f| !f)).then_some(all)
}

/// A batch of puts (`Some`) and deletes (`None`).
pub fn batch_of(ops: &[(Vec<u8>, Option<Vec<u8>>)]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for (k, v) in ops {
        match v {
            Some(v) => b.put(k.clone(), v.clone()),
            None => b.delete(k.clone()),
        };
    }
    b
}

/// How many times larger the power-loss sweeps run (`POWER_LOSS_SCALE`,
/// default 1: `make test`; `make stress` sets more).
pub fn power_loss_scale() -> u64 {
    std::env::var("POWER_LOSS_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// One copy of every file of `dir` into a new temporary directory, kept only
/// if nothing changed while it was made: the same names with the same
/// lengths, and the same `also` (counters of work that may have run beside
/// it), before and after. Copying a directory is not atomic: a flush,
/// compaction or value-log GC beside it can delete or add files between the
/// listing and the copies (a MANIFEST newer than the WAL it was copied with),
/// and such a copy is no state a kill leaves.
pub fn copy_if_still<T: PartialEq>(dir: &Path, also: impl Fn() -> T) -> Option<tempfile::TempDir> {
    let listing = || {
        let mut files: Vec<(std::ffi::OsString, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                Some((e.file_name(), e.metadata().ok()?.len()))
            })
            .collect();
        files.sort();
        (files, also())
    };
    let before = listing();
    let to = tempfile::tempdir().unwrap();
    let copied = before
        .0
        .iter()
        .all(|(name, _)| std::fs::copy(dir.join(name), to.path().join(name)).is_ok());
    (copied && listing() == before).then_some(to)
}

/// The files of `db` copied as a kill would leave them (`copy_if_still`,
/// taken while no flush or compaction runs and no GC round ends), and the
/// copy opened.
pub fn killed_copy(db: &Db, opts: &sett::Options) -> (tempfile::TempDir, Db) {
    for _ in 0..200 {
        let s = db.stats();
        if s.compactions_running > 0 || s.immutable_memtables > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        let gc_rounds = || {
            let s = db.stats();
            (s.gc_files_rewritten, s.gc_files_deleted)
        };
        let Some(to) = copy_if_still(&opts.dir, gc_rounds) else {
            continue;
        };
        let mut o = opts.clone();
        o.dir = to.path().to_path_buf();
        return (to, Db::open(o).expect("opening a killed copy"));
    }
    panic!("background work never let a consistent copy be taken");
}
