//! `info`, `verify`, `backup`, `restore`, `flatten`, `gc` and `checkpoint`.

use crate::progress::{CountingReader, CountingWriter, Phase, Progress, ProgressFlags};
use serde_json::{json, Value};
use sett::{Db, GcOutcome, Options, Stats};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct InfoArgs {
    /// The database directory (opened read-only)
    dir: PathBuf,
    /// Print one JSON object on stdout instead of text
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The database directory (opened read-only)
    dir: PathBuf,
    #[command(flatten)]
    progress: ProgressFlags,
}

#[derive(clap::Args)]
pub struct BackupArgs {
    /// The database directory (opened read-only)
    dir: PathBuf,
    /// The backup file to write (replaced if it exists)
    file: PathBuf,
    /// Back up only the versions written after VERSION (0: a full backup of live entries)
    #[arg(long, value_name = "VERSION", default_value_t = 0)]
    since: u64,
    #[command(flatten)]
    progress: ProgressFlags,
}

#[derive(clap::Args)]
pub struct RestoreArgs {
    /// The database directory to load into (created if missing; empty for a full backup)
    dir: PathBuf,
    /// The backup file to read
    file: PathBuf,
    #[command(flatten)]
    progress: ProgressFlags,
}

#[derive(clap::Args)]
pub struct FlattenArgs {
    /// The database directory
    dir: PathBuf,
    #[command(flatten)]
    progress: ProgressFlags,
}

#[derive(clap::Args)]
pub struct GcArgs {
    /// The database directory
    dir: PathBuf,
    /// Rewrite value-log files with at least this share of garbage, in (0, 1)
    #[arg(long, default_value_t = 0.5)]
    ratio: f64,
    #[command(flatten)]
    progress: ProgressFlags,
}

#[derive(clap::Args)]
pub struct CheckpointArgs {
    /// The database directory (not open in another process: a running program calls Db::checkpoint)
    dir: PathBuf,
    /// The checkpoint directory to create (must not exist; its parent must)
    target: PathBuf,
    /// Open the database read-only: nothing in it changes; its WALs are copied instead of flushed
    #[arg(long)]
    read_only: bool,
    /// Print one JSON object on stdout instead of text
    #[arg(long)]
    json: bool,
}

fn open(dir: &Path, read_only: bool) -> Result<Db, String> {
    let mut o = Options::new(dir);
    o.read_only = read_only;
    Db::open(o).map_err(|e| format!("opening {}: {e}", dir.display()))
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// Writes `v` as one line on stdout; a closed stdout is an error, not a panic.
pub fn print_json(v: &Value) -> Result<(), String> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{v}")
        .map_err(|e| format!("writing the JSON to stdout: {e}"))
}

/// Every figure of [`Stats`], for `info --json` and `bench --json`.
pub fn stats_json(s: &Stats) -> Value {
    json!({
        "levels": s.levels.iter().enumerate().map(|(i, (tables, bytes))| json!({
            "level": i, "tables": tables, "bytes": bytes,
        })).collect::<Vec<_>>(),
        "vlog_files": s.vlog_files,
        "vlog_bytes": s.vlog_bytes,
        "memtable_bytes": s.memtable_bytes,
        "immutable_memtables": s.immutable_memtables,
        "index_filter_bytes": s.index_filter_bytes,
        "last_seq": s.last_seq,
        "table_entries": s.table_entries,
        "batches_written": s.batches_written,
        "write_groups": s.write_groups,
        "wal_syncs": s.wal_syncs,
        "vlog_discard": s.vlog_discard.iter().map(|(file, bytes)| json!({
            "file": file, "bytes": bytes,
        })).collect::<Vec<_>>(),
        "compactions_pending": s.compactions_pending,
        "compactions_running": s.compactions_running,
        "gc_files_rewritten": s.gc_files_rewritten,
        "gc_files_deleted": s.gc_files_deleted,
        "gc_bytes_reclaimed": s.gc_bytes_reclaimed,
        "gc_seconds": s.gc_micros as f64 / 1e6,
        "gc_pending_files": s.gc_pending_files,
        "gc_pending_bytes": s.gc_pending_bytes,
        "cache_capacity": s.cache_capacity,
        "cache_usage": s.cache_usage,
        "cache_pinned_bytes": s.cache_pinned_bytes,
        "cache_index_filter_hits": s.cache_index_filter_hits,
        "cache_index_filter_misses": s.cache_index_filter_misses,
        "cache_data_hits": s.cache_data_hits,
        "cache_data_misses": s.cache_data_misses,
    })
}

pub fn info(a: &InfoArgs) -> Result<(), String> {
    let db = open(&a.dir, true)?;
    let s = db.stats();
    let keyspaces = db
        .keyspaces()
        .map_err(|e| format!("listing the keyspaces of {}: {e}", a.dir.display()))?;
    if a.json {
        let mut v = stats_json(&s);
        v["database"] = json!(a.dir.display().to_string());
        v["keyspaces"] = json!(keyspaces);
        return print_json(&v);
    }
    println!("database {}", a.dir.display());
    println!("keyspaces          {}", keyspaces.join(", "));
    println!("last sequence      {}", s.last_seq);
    for (i, (n, bytes)) in s.levels.iter().enumerate() {
        println!("L{i}                 {n:>4} tables  {}", mib(*bytes));
    }
    println!("table entries      {}", s.table_entries);
    println!(
        "value log          {} files  {}",
        s.vlog_files,
        mib(s.vlog_bytes)
    );
    println!(
        "memtables          {} (replayed WAL)",
        mib(s.memtable_bytes as u64)
    );
    println!(
        "table memory       {} (key ranges, pinned indexes and filters)",
        mib(s.index_filter_bytes as u64)
    );
    println!(
        "cache              {} used of {} ({} pinned)",
        mib(s.cache_usage),
        mib(s.cache_capacity),
        mib(s.cache_pinned_bytes)
    );
    Ok(())
}

pub fn verify(a: &VerifyArgs) -> Result<(), String> {
    let p = Progress::start("sett verify", a.progress.enabled());
    p.phase(Phase::wait(format!("opening {}", a.dir.display())));
    let db = open(&a.dir, true)?;
    p.phase(Phase::wait("checking every table block and live value"));
    let r = db
        .verify()
        .map_err(|e| format!("verifying {}: {e}", a.dir.display()))?;
    drop(p);
    println!(
        "ok: {} tables ({} blocks), {} entries, {} value-log entries checked",
        r.tables, r.blocks, r.entries, r.values
    );
    Ok(())
}

pub fn backup(a: &BackupArgs) -> Result<(), String> {
    let out = a.file.display();
    let p = Progress::start("sett backup", a.progress.enabled());
    p.phase(Phase::wait(format!("opening {}", a.dir.display())));
    let db = open(&a.dir, true)?;
    let file = std::fs::File::create(&a.file).map_err(|e| format!("creating {out}: {e}"))?;
    // The size of a backup is not known ahead: a rate, no ETA.
    p.phase(Phase::bytes(format!("writing {out}")));
    let mut w = CountingWriter::new(std::io::BufWriter::new(file), &p);
    let next = db
        .backup(&mut w, a.since)
        .map_err(|e| format!("backing up {} to {out}: {e}", a.dir.display()))?;
    p.phase(Phase::wait(format!("syncing {out}")));
    let f = w
        .inner
        .into_inner()
        .map_err(|e| format!("writing {out}: {e}"))?;
    f.sync_all().map_err(|e| format!("syncing {out}: {e}"))?;
    drop(p);
    println!("backup written to {out}; pass --since {next} for the next incremental backup");
    Ok(())
}

pub fn restore(a: &RestoreArgs) -> Result<(), String> {
    let input = a.file.display();
    let p = Progress::start("sett restore", a.progress.enabled());
    p.phase(Phase::wait(format!("opening {}", a.dir.display())));
    let db = open(&a.dir, false)?;
    let file = std::fs::File::open(&a.file).map_err(|e| format!("opening {input}: {e}"))?;
    let size = file
        .metadata()
        .map_err(|e| format!("reading the size of {input}: {e}"))?
        .len();
    p.phase(Phase::bytes(format!("loading {input}")).total(size));
    let mut r = std::io::BufReader::new(CountingReader::new(file, &p));
    let n = db
        .load(&mut r)
        .map_err(|e| format!("restoring {input} into {}: {e}", a.dir.display()))?;
    p.phase(Phase::wait("closing (flushing memtables)"));
    db.close()
        .map_err(|e| format!("closing {}: {e}", a.dir.display()))?;
    drop(p);
    println!("restored {n} entries from {input}");
    Ok(())
}

pub fn flatten(a: &FlattenArgs) -> Result<(), String> {
    let p = Progress::start("sett flatten", a.progress.enabled());
    p.phase(Phase::wait(format!("opening {}", a.dir.display())));
    let db = open(&a.dir, false)?;
    p.phase(Phase::wait("compacting every level into the last"));
    db.flatten()
        .map_err(|e| format!("flattening {}: {e}", a.dir.display()))?;
    let s = db.stats();
    p.phase(Phase::wait("closing"));
    db.close()
        .map_err(|e| format!("closing {}: {e}", a.dir.display()))?;
    drop(p);
    println!("flattened: levels {:?}", s.levels);
    Ok(())
}

pub fn gc(a: &GcArgs) -> Result<(), String> {
    let p = Progress::start("sett gc", a.progress.enabled());
    p.phase(Phase::wait(format!("opening {}", a.dir.display())));
    let db = open(&a.dir, false)?;
    let before = db.stats().vlog_bytes;
    // How many files are left to collect is not known ahead: a count, no ETA.
    p.phase(Phase::items("value-log gc, files collected", "files"));
    loop {
        match db
            .run_value_log_gc(a.ratio)
            .map_err(|e| format!("value-log gc in {}: {e}", a.dir.display()))?
        {
            GcOutcome::NothingToCollect => break,
            o => {
                p.add(1);
                println!("{o:?}");
            }
        }
    }
    let after = db.stats().vlog_bytes;
    p.phase(Phase::wait("closing"));
    db.close()
        .map_err(|e| format!("closing {}: {e}", a.dir.display()))?;
    drop(p);
    println!("value log: {} before, {} after", mib(before), mib(after));
    Ok(())
}

pub fn checkpoint(a: &CheckpointArgs) -> Result<(), String> {
    let db = open(&a.dir, a.read_only)?;
    let r = db.checkpoint(&a.target).map_err(|e| {
        format!(
            "checkpoint of {} into {}: {e}",
            a.dir.display(),
            a.target.display()
        )
    })?;
    db.close()
        .map_err(|e| format!("closing {}: {e}", a.dir.display()))?;
    if a.json {
        return print_json(&json!({
            "database": a.dir.display().to_string(),
            "checkpoint": a.target.display().to_string(),
            "files_linked": r.files_linked,
            "files_copied": r.files_copied,
            "bytes_linked": r.bytes_linked,
            "bytes_copied": r.bytes_copied,
            "elapsed_seconds": r.elapsed.as_secs_f64(),
        }));
    }
    println!(
        "checkpoint {} made in {:.3} s: {} files linked ({}), {} copied ({})",
        a.target.display(),
        r.elapsed.as_secs_f64(),
        r.files_linked,
        mib(r.bytes_linked),
        r.files_copied,
        mib(r.bytes_copied)
    );
    Ok(())
}
