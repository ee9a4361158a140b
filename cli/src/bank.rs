//! `sett-bench bank`: Badger's bank test. Accounts start with equal balances;
//! threads move money between random accounts in read-write transactions while
//! a checker sums all balances in read-only transactions. Any total other than
//! the starting one means a transaction was applied in part or saw a torn
//! snapshot: the run fails.

use sett::{Db, Error, IterOptions, Options, WriteBatch};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BankArgs {
    /// Database directory, kept (default: a new temporary directory, removed at the end)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Accounts, at least 2
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(2..))]
    accounts: u64,
    /// Transfer threads, at least 1
    #[arg(long, default_value_t = 4,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    threads: usize,
    /// How long the transfers run, in seconds
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// fsync every write group
    #[arg(long)]
    sync: bool,
}

const START_BALANCE: u64 = 1000;

fn account(i: u64) -> Vec<u8> {
    format!("account{i:06}").into_bytes()
}

fn balance(v: &[u8]) -> Result<u64, Error> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| Error::InvalidArgument(format!("balance of {} bytes", v.len())))?;
    Ok(u64::from_be_bytes(b))
}

/// Sums every balance in one read-only transaction.
fn total(db: &Db) -> Result<(u64, u64), Error> {
    db.view(|t| {
        let mut sum = 0;
        let mut n = 0;
        for item in t.iter(IterOptions {
            prefix: Some(b"account".to_vec()),
            ..Default::default()
        })? {
            sum += balance(&item?.1)?;
            n += 1;
        }
        Ok((sum, n))
    })
}

pub fn run(a: &BankArgs) -> Result<bool, String> {
    let (accounts, threads, seconds) = (a.accounts, a.threads, a.seconds);
    if !(seconds >= 0.0 && seconds.is_finite()) {
        return Err(format!("--seconds {seconds}: not a duration"));
    }
    let (dir, temp) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("sett-bank-{}", std::process::id())),
            true,
        ),
    };
    let mut o = Options::new(&dir);
    o.sync_writes = a.sync;
    o.memtable_size = 1 << 20; // small, so flushes and compactions run during the test
    let db = Db::open(o).map_err(|e| format!("opening {}: {e}", dir.display()))?;
    if db.get(&account(0)).map_err(|e| e.to_string())?.is_none() {
        let mut b = WriteBatch::new();
        for i in 0..accounts {
            b.put(account(i), START_BALANCE.to_be_bytes());
        }
        db.write(b).map_err(|e| e.to_string())?;
    }
    let expected = accounts * START_BALANCE;
    let transfers = AtomicU64::new(0);
    let conflicts = AtomicU64::new(0);
    let checks = AtomicU64::new(0);
    let violation = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    println!(
        "bank: {accounts} accounts, {threads} threads, {seconds} s, sync={}",
        a.sync
    );
    let started = Instant::now();
    let errors: Vec<String> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (db, transfers, conflicts, stop) = (&db, &transfers, &conflicts, &stop);
            handles.push(s.spawn(move || -> Result<(), Error> {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut next = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    let from = next() % accounts;
                    let to = (from + 1 + next() % (accounts - 1)) % accounts;
                    let amount = 1 + next() % 100;
                    let mut txn = db.begin(true)?;
                    let fb = balance(&txn.get(&account(from))?.unwrap_or_default())?;
                    let tb = balance(&txn.get(&account(to))?.unwrap_or_default())?;
                    if fb < amount {
                        continue;
                    }
                    txn.set(&account(from), &(fb - amount).to_be_bytes())?;
                    txn.set(&account(to), &(tb + amount).to_be_bytes())?;
                    match txn.commit() {
                        Ok(()) => transfers.fetch_add(1, Ordering::Relaxed),
                        Err(Error::Conflict) => conflicts.fetch_add(1, Ordering::Relaxed),
                        Err(e) => return Err(e),
                    };
                }
                Ok(())
            }));
        }
        let (db, checks, violation, stop) = (&db, &checks, &violation, &stop);
        handles.push(s.spawn(move || -> Result<(), Error> {
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let (sum, n) = total(db)?;
                checks.fetch_add(1, Ordering::Relaxed);
                if sum != expected || n != accounts {
                    println!("VIOLATION: {n} accounts hold {sum}, expected {accounts} holding {expected}");
                    violation.store(true, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Ok(())
        }));
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("a bank thread panicked".into()),
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(e) = errors.first() {
        return Err(e.clone());
    }
    // The total must also hold after a reopen.
    db.close().map_err(|e| e.to_string())?;
    drop(db);
    let db =
        Db::open(Options::new(&dir)).map_err(|e| format!("reopening {}: {e}", dir.display()))?;
    let (sum, n) = total(&db).map_err(|e| e.to_string())?;
    db.close().map_err(|e| e.to_string())?;
    if temp {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let ok = !violation.load(Ordering::Relaxed) && sum == expected && n == accounts;
    let t = transfers.load(Ordering::Relaxed);
    println!(
        "bank: {t} transfers in {elapsed:.1} s ({:.0}/s), {} conflicts retried, {} balance checks, total after reopen {sum} (expected {expected}): {}",
        t as f64 / elapsed,
        conflicts.load(Ordering::Relaxed),
        checks.load(Ordering::Relaxed),
        if ok { "OK" } else { "VIOLATION" }
    );
    Ok(ok)
}
