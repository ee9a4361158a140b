//! `sett-bench crashloop`: kill a writer with SIGKILL at random moments and verify
//! what survives, for N cycles or T seconds.
//!
//! The child writes numbered batches — puts on both sides of the value
//! threshold, a moving marker key (put the new one, delete the old one), every
//! fifth batch as a transaction, each batch also putting `s/N` and every
//! seventh one deleting the `s/` keys before it with a range delete in the
//! same batch — and runs flushes and value-log GC as it goes,
//! printing "ack N" after each acknowledged batch. After each kill the parent
//! checks that the child was still running (one that died on its own is a
//! failure, shown with its stderr), reopens and checks: every batch is whole or
//! absent, the present ones are a prefix of the write order, the `s/` keys
//! are exactly those the last range delete present left (range deletes are
//! atomic with their batch), and every acknowledged one is there (a process kill keeps the page cache, so this
//! holds with and without --sync). Cycles in which the child acknowledged
//! nothing are counted and reported.
//!
//! Keyspaces: batch N also puts `kN` into keyspace `ksG` (G = N / 10, created
//! when its first batch comes), in the same batch or transaction, and after
//! acknowledging batch N with N + 1 = (G + 2) * 10 the child drops keyspace
//! `ksG` (a restarted child first drops those it still finds due). The
//! parent checks each keyspace entry with its batch (whole or absent), that
//! a keyspace is listed from its first present batch until a batch written
//! after its drop is present, and gone from then on; a keyspace still
//! listed holds every key of its present batches, so a drop is all or
//! nothing across the kill.
//!
//! Every 40 batches the child also takes a checkpoint into
//! `DIR-checkpoints/cNNNNNNNNN` (N: the batches acknowledged before the call),
//! so that kills land inside checkpoints too. After each kill the parent checks
//! each one: a directory holding `CHECKPOINT-INCOMPLETE` must be refused by
//! open, an empty one (killed between its creation and its marker's) counts as
//! absent, and any other must open and hold a prefix of at least N batches
//! and verify; then they are removed.

use sett::{Db, Keyspace, KeyspaceOptions, Options, WriteBatch};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct CrashloopArgs {
    /// Kill-and-verify cycles to run
    #[arg(long, default_value_t = 20)]
    cycles: u64,
    /// Run cycles for this many seconds instead of a count
    #[arg(long, conflicts_with = "cycles")]
    seconds: Option<f64>,
    /// fsync every write group in the child
    #[arg(long)]
    sync: bool,
    /// Database directory, emptied first and kept (default: a new temporary directory, removed unless a check failed)
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ChildArgs {
    /// The database directory
    dir: PathBuf,
    /// The number of the first batch to write
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// fsync every write group
    #[arg(long)]
    sync: bool,
}

fn options(dir: &Path, sync: bool) -> Options {
    let mut o = Options::new(dir);
    o.sync_writes = sync;
    o.value_threshold = 64;
    o.memtable_size = 64 << 10;
    o.table_size = 64 << 10;
    o.level_base_size = 256 << 10;
    o.vlog_file_size = 256 << 10;
    o
}

fn batch_entries(i: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..1 + i % 4)
        .map(|j| {
            let k = format!("b{i:09}:{j}").into_bytes();
            let len = if (i + j).is_multiple_of(2) { 16 } else { 200 };
            let mut v = format!("{i}:{j}:").into_bytes();
            v.resize(len, b'0' + (i % 10) as u8);
            (k, v)
        })
        .collect()
}

fn marker(i: u64) -> Vec<u8> {
    format!("m{i:09}").into_bytes()
}

/// The side key every batch puts; batches that are `RANGE_EVERY`-th delete
/// the side keys before theirs with a range delete first.
fn side(i: u64) -> Vec<u8> {
    format!("s/{i:09}").into_bytes()
}

const RANGE_EVERY: u64 = 7;

/// Batches per keyspace generation.
const GEN: u64 = 10;

fn ks_name(g: u64) -> String {
    format!("ks{g:06}")
}

/// The keyspace entry of batch `i` (in keyspace `ks_name(i / GEN)`): a value
/// past the threshold, so that drops leave value-log garbage.
fn ks_entry(i: u64) -> (Vec<u8>, Vec<u8>) {
    let mut v = format!("ks:{i}:").into_bytes();
    v.resize(100, b'k');
    (format!("k{i:09}").into_bytes(), v)
}

/// Keyspace `ks_name(g)` is dropped after batch `drop_after(g) - 1` is
/// acknowledged and before batch `drop_after(g)` is written.
fn drop_after(g: u64) -> u64 {
    (g + 2) * GEN
}

fn deletes_range(i: u64) -> bool {
    i % RANGE_EVERY == 3
}

/// The side keys present once batches `0..present` are: those from the last
/// range-deleting batch on.
fn side_keys(present: u64) -> Vec<Vec<u8>> {
    let from = (0..present).rev().find(|&i| deletes_range(i)).unwrap_or(0);
    (from..present).map(side).collect()
}

/// The child: writes batches from `start` until killed.
pub fn child(a: &ChildArgs) -> Result<(), String> {
    let (sync, start) = (a.sync, a.start);
    let db = Db::open(options(&a.dir, sync)).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let mut out = std::io::stdout().lock();
    // Drops a killed child owed.
    let names = db.keyspaces().map_err(|e| e.to_string())?;
    for g in (0..).take_while(|&g| drop_after(g) <= start) {
        if names.contains(&ks_name(g)) {
            db.drop_keyspace(&ks_name(g)).map_err(|e| e.to_string())?;
        }
    }
    let mut ks: Option<(u64, Keyspace)> = None;
    for i in start.. {
        let entries = batch_entries(i);
        let g = i / GEN;
        let space = match &ks {
            Some((have, space)) if *have == g => space.clone(),
            _ => {
                let space = db
                    .keyspace(&ks_name(g), KeyspaceOptions::default())
                    .map_err(|e| e.to_string())?;
                ks = Some((g, space.clone()));
                space
            }
        };
        let (ks_key, ks_value) = ks_entry(i);
        if i.is_multiple_of(5) {
            db.update(|t| {
                t.set_in(&space, &ks_key, &ks_value)?;
                if deletes_range(i) {
                    t.delete_range(b"s/", &side(i))?;
                }
                t.set(&side(i), b"s")?;
                for (k, v) in &entries {
                    t.set(k, v)?;
                }
                t.set(&marker(i), b"m")?;
                if i > 0 {
                    t.delete(&marker(i - 1))?;
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        } else {
            let mut b = WriteBatch::new();
            if deletes_range(i) {
                b.delete_range(b"s/", side(i));
            }
            b.put(side(i), b"s");
            b.put_in(&space, &ks_key, ks_value);
            for (k, v) in entries {
                b.put(k, v);
            }
            b.put(marker(i), b"m");
            if i > 0 {
                b.delete(marker(i - 1));
            }
            db.write(b).map_err(|e| e.to_string())?;
        }
        writeln!(out, "ack {i}")
            .and_then(|_| out.flush())
            .map_err(|e| e.to_string())?;
        if (i + 1).is_multiple_of(GEN) && (i + 1) / GEN >= 2 {
            db.drop_keyspace(&ks_name((i + 1) / GEN - 2))
                .map_err(|e| format!("drop after batch {i}: {e}"))?;
        }
        if i % 40 == 39 {
            db.flush().map_err(|e| e.to_string())?;
            let _ = db.run_value_log_gc(0.3).map_err(|e| e.to_string())?;
        }
        if i % 40 == 19 {
            let root = checkpoints_dir(&a.dir);
            std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
            db.checkpoint(root.join(format!("c{:09}", i + 1)))
                .map_err(|e| format!("checkpoint: {e}"))?;
        }
    }
    Ok(())
}

/// Where the child puts its checkpoints.
fn checkpoints_dir(dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!("{}-checkpoints", name.unwrap_or_default()))
}

/// Checkpoints found after a kill, by outcome.
#[derive(Default)]
struct CheckpointCounts {
    whole: u64,
    refused: u64,
    absent: u64,
}

/// Checks and removes every checkpoint the child left (see the module docs).
fn check_checkpoints(dir: &Path, counts: &mut CheckpointCounts) -> Result<(), String> {
    let root = checkpoints_dir(dir);
    let Ok(rd) = std::fs::read_dir(&root) else {
        return Ok(());
    };
    for entry in rd {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let before = name
            .as_deref()
            .and_then(|n| n.strip_prefix('c'))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| format!("unexpected entry {}", path.display()))?;
        let empty = std::fs::read_dir(&path)
            .map_err(|e| e.to_string())?
            .next()
            .is_none();
        if empty {
            counts.absent += 1;
        } else if path.join(sett::CHECKPOINT_MARKER).exists() {
            match Db::open(options(&path, false)) {
                Err(sett::Error::Corruption { file, .. })
                    if file.ends_with(sett::CHECKPOINT_MARKER) =>
                {
                    counts.refused += 1
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
                Ok(_) => return Err(format!("{}: opened despite its marker", path.display())),
            }
        } else {
            verify(&path, before, None)
                .map_err(|e| format!("checkpoint {}: {e}", path.display()))?;
            counts.whole += 1;
        }
        std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// What a verify found.
struct Verified {
    /// Batches present.
    present: u64,
    /// Keyspace drops found done.
    drops: u64,
}

/// Checks the database after a kill; returns the number of batches present.
/// `before` batches were verified present after the previous kill.
fn verify(dir: &Path, before: u64, acked: Option<u64>) -> Result<u64, String> {
    verify_all(dir, before, acked).map(|v| v.present)
}

fn verify_all(dir: &Path, before: u64, acked: Option<u64>) -> Result<Verified, String> {
    let db = Db::open(options(dir, false)).map_err(|e| format!("reopen failed: {e}"))?;
    let names = db
        .keyspaces()
        .map_err(|e| format!("listing keyspaces: {e}"))?;
    let mut spaces: HashMap<u64, Keyspace> = HashMap::new();
    let mut present = 0;
    let mut gap = None;
    // A child killed before its first ack still leaves `before` batches to check.
    let upper = acked.map_or(before, |a| a.max(before)) + 100;
    for i in 0..upper {
        let entries = batch_entries(i);
        let mut found = 0;
        for (k, v) in &entries {
            match db.get(k).map_err(|e| format!("batch {i}: {e}"))? {
                Some(got) if &got == v => found += 1,
                Some(_) => return Err(format!("batch {i}: a value is wrong")),
                None => {}
            }
        }
        let mut expected = entries.len();
        let mut ks_found = None;
        // A listed keyspace holds its batches' entries: with a drop applied
        // in part (the range delete without the catalog's delete) they
        // would be missing here.
        let g = i / GEN;
        if names.contains(&ks_name(g)) {
            if let std::collections::hash_map::Entry::Vacant(e) = spaces.entry(g) {
                let ks = db
                    .keyspace(&ks_name(g), KeyspaceOptions::default())
                    .map_err(|e| format!("opening {}: {e}", ks_name(g)))?;
                e.insert(ks);
            }
            let (k, v) = ks_entry(i);
            expected += 1;
            match spaces[&g].get(&k).map_err(|e| format!("batch {i}: {e}"))? {
                Some(got) if got == v => {
                    found += 1;
                    ks_found = Some(true);
                }
                Some(_) => return Err(format!("batch {i}: its keyspace value is wrong")),
                None => ks_found = Some(false),
            }
        }
        if found != 0 && found != expected {
            let ks = match ks_found {
                Some(f) => format!(
                    "keyspace {} (id {}) listed, its entry {}",
                    ks_name(g),
                    spaces[&g].id(),
                    if f { "present" } else { "missing" }
                ),
                None => format!("keyspace {} not listed", ks_name(g)),
            };
            return Err(format!(
                "batch {i} is torn ({found} of {expected} entries; {ks})"
            ));
        }
        if found == expected {
            if let Some(g) = gap {
                return Err(format!(
                    "batch {i} survived but batch {g} did not: not a prefix"
                ));
            }
            present = i + 1;
        } else if gap.is_none() {
            gap = Some(i);
        }
    }
    if present < before {
        return Err(format!(
            "{before} batches were present after the previous kill, {present} now"
        ));
    }
    if let Some(a) = acked {
        if present <= a {
            return Err(format!(
                "acknowledged batch {a} lost to a process kill ({present} present)"
            ));
        }
    }
    if present > 0 {
        if db
            .get(&marker(present - 1))
            .map_err(|e| e.to_string())?
            .is_none()
        {
            return Err("the marker of the last batch is missing".into());
        }
        if present > 1
            && db
                .get(&marker(present - 2))
                .map_err(|e| e.to_string())?
                .is_some()
        {
            return Err("a delete of the previous marker was lost".into());
        }
    }
    let sides: Vec<Vec<u8>> = db
        .iter(sett::IterOptions {
            prefix: Some(b"s/".to_vec()),
            keys_only: true,
            ..Default::default()
        })
        .map_err(|e| e.to_string())?
        .map(|r| r.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("scanning s/: {e}"))?;
    if sides != side_keys(present) {
        return Err(format!(
            "with {present} batches present, {} side keys from {:?} (expected {} from {:?}): not what the range deletes of the present batches leave",
            sides.len(),
            sides.first().map(|k| String::from_utf8_lossy(k).into_owned()),
            side_keys(present).len(),
            side_keys(present).first().map(|k| String::from_utf8_lossy(k).into_owned()),
        ));
    }
    let mut drops = 0;
    for g in 0..=upper / GEN {
        let listed = names.contains(&ks_name(g));
        if drop_after(g) < present && listed {
            return Err(format!(
                "keyspace {} is listed, but batch {} written after its drop is present",
                ks_name(g),
                drop_after(g)
            ));
        }
        if g * GEN < present && present < drop_after(g) && !listed {
            return Err(format!(
                "keyspace {} is gone with {present} batches present: created before batch {}, dropped after batch {}",
                ks_name(g),
                g * GEN,
                drop_after(g) - 1
            ));
        }
        drops += u64::from(drop_after(g) <= present && !listed);
    }
    db.verify().map_err(|e| format!("verify: {e}"))?;
    db.close().map_err(|e| e.to_string())?;
    Ok(Verified { present, drops })
}

/// The parent loop. Returns false when a check failed.
pub fn run(a: &CrashloopArgs) -> Result<bool, String> {
    let cycles = a.cycles;
    // 0 (or less) seconds means: count cycles, as before --seconds existed.
    let seconds = a.seconds.unwrap_or(0.0);
    let sync = a.sync;
    let (dir, temp) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("sett-crashloop-{}", std::process::id())),
            true,
        ),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(checkpoints_dir(&dir));
    let mut ckpts = CheckpointCounts::default();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ u64::from(std::process::id());
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut cycle, mut start, mut acked_total, mut failures) = (0u64, 0u64, 0u64, 0u64);
    let mut zero_ack_cycles = 0u64;
    let mut drops = 0u64;
    while (seconds > 0.0 && started.elapsed().as_secs_f64() < seconds)
        || (seconds <= 0.0 && cycle < cycles)
    {
        let mut args = vec![
            "crashloop-child".to_string(),
            dir.display().to_string(),
            "--start".into(),
            start.to_string(),
        ];
        if sync {
            args.push("--sync".into());
        }
        let mut child = Command::new(&exe)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        let mut stderr = child.stderr.take().ok_or("no child stderr")?;
        let stderr_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        });
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .filter_map(|l| l.strip_prefix("ack ").and_then(|n| n.parse::<u64>().ok()))
                .collect::<Vec<_>>()
        });
        std::thread::sleep(Duration::from_millis(50 + next() % 400));
        let _ = child.kill();
        let status = child.wait().map_err(|e| e.to_string())?;
        let acks = reader.join().map_err(|_| "reader thread panicked")?;
        let child_err = stderr_reader.join().unwrap_or_default();
        acked_total += acks.len() as u64;
        zero_ack_cycles += u64::from(acks.is_empty());
        {
            use std::os::unix::process::ExitStatusExt;
            // SIGKILL, the signal child.kill() sends.
            if status.signal() != Some(9) {
                failures += 1;
                println!(
                    "cycle {cycle}: FAILURE: the child ended on its own ({status}) before the kill; its stderr:\n{child_err}"
                );
                break;
            }
        }
        match verify_all(&dir, start, acks.iter().copied().max())
            .and_then(|v| check_checkpoints(&dir, &mut ckpts).map(|()| v))
        {
            Ok(v) => {
                start = v.present;
                drops = v.drops;
            }
            Err(e) => {
                failures += 1;
                println!("cycle {cycle}: FAILURE: {e}");
                break;
            }
        }
        cycle += 1;
    }
    println!(
        "crashloop: {cycle} cycles in {:.0} s, sync={sync}, {acked_total} batches acknowledged, {zero_ack_cycles} cycles with no acknowledgement, {start} batches verified present at the end, {failures} failures; {drops} keyspace drops verified; checkpoints: {} whole, {} refused by their marker, {} absent",
        started.elapsed().as_secs_f64(),
        ckpts.whole,
        ckpts.refused,
        ckpts.absent
    );
    if temp && failures == 0 {
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(checkpoints_dir(&dir));
    }
    Ok(failures == 0)
}
