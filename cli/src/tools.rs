//! `info`, `backup`, `restore`, `flatten` and `gc`.

use crate::args::Args;
use sett::{Db, GcOutcome, Options};

fn open(dir: &str, read_only: bool) -> Result<Db, String> {
    let mut o = Options::new(dir);
    o.read_only = read_only;
    Db::open(o).map_err(|e| format!("opening {dir}: {e}"))
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

pub fn info(a: &Args) -> Result<(), String> {
    a.only(&[])?;
    let db = open(a.dir()?, true)?;
    let s = db.stats();
    println!("database {}", a.dir()?);
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
    println!("index+filter mem   {}", mib(s.index_filter_bytes as u64));
    Ok(())
}

pub fn verify(a: &Args) -> Result<(), String> {
    a.only(&[])?;
    let db = open(a.dir()?, true)?;
    let r = db.verify().map_err(|e| e.to_string())?;
    println!(
        "ok: {} tables ({} blocks), {} entries, {} value-log entries checked",
        r.tables, r.blocks, r.entries, r.values
    );
    Ok(())
}

pub fn backup(a: &Args) -> Result<(), String> {
    a.only(&["since"])?;
    let out = a.positional.get(1).ok_or("missing the backup file")?;
    let since: u64 = a.num("since", 0)?;
    let db = open(a.dir()?, true)?;
    let file = std::fs::File::create(out).map_err(|e| format!("creating {out}: {e}"))?;
    let mut w = std::io::BufWriter::new(file);
    let next = db.backup(&mut w, since).map_err(|e| e.to_string())?;
    let f = w.into_inner().map_err(|e| format!("writing {out}: {e}"))?;
    f.sync_all().map_err(|e| format!("syncing {out}: {e}"))?;
    println!("backup written to {out}; pass --since {next} for the next incremental backup");
    Ok(())
}

pub fn restore(a: &Args) -> Result<(), String> {
    a.only(&[])?;
    let input = a.positional.get(1).ok_or("missing the backup file")?;
    let db = open(a.dir()?, false)?;
    let file = std::fs::File::open(input).map_err(|e| format!("opening {input}: {e}"))?;
    let n = db
        .load(&mut std::io::BufReader::new(file))
        .map_err(|e| e.to_string())?;
    db.close().map_err(|e| e.to_string())?;
    println!("restored {n} entries from {input}");
    Ok(())
}

pub fn flatten(a: &Args) -> Result<(), String> {
    a.only(&[])?;
    let db = open(a.dir()?, false)?;
    db.flatten().map_err(|e| e.to_string())?;
    let s = db.stats();
    db.close().map_err(|e| e.to_string())?;
    println!("flattened: levels {:?}", s.levels);
    Ok(())
}

pub fn gc(a: &Args) -> Result<(), String> {
    a.only(&["ratio"])?;
    let ratio: f64 = a.num("ratio", 0.5)?;
    let db = open(a.dir()?, false)?;
    let before = db.stats().vlog_bytes;
    loop {
        match db.run_value_log_gc(ratio).map_err(|e| e.to_string())? {
            GcOutcome::NothingToCollect => break,
            o => println!("{o:?}"),
        }
    }
    let after = db.stats().vlog_bytes;
    db.close().map_err(|e| e.to_string())?;
    println!("value log: {} before, {} after", mib(before), mib(after));
    Ok(())
}
