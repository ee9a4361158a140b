//! `sett-bench merge`: a counter incremented from one thread three ways, the
//! comparison behind merge operators (issue 35):
//!
//! - put: the counter's new value written blind (an 8-byte put, what an
//!   increment would cost if it needed no read);
//! - merge: `Db::merge` of a little-endian 1 under the built-in `U64Add`
//!   (a write, no read: reads and compactions fold the operands);
//! - txn: a read-write transaction that reads the counter and writes it back
//!   plus one (what a counter cost before merges).
//!
//! Each round runs the three modes, in a rotating order, each on a fresh
//! database, `--ops` increments spread over `--keys` counters; the clock
//! covers the increments only. After each mode every counter is read back and
//! must hold its number of increments (put: its last value). The report gives
//! ns per increment as median [min-max] over the rounds (after an uncounted
//! warm-up round), and merge's and txn's
//! ratio to put with a verdict: ahead or behind only where the ranges do not
//! overlap.

use sett::{merge, Db, Options};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct MergeBenchArgs {
    /// Increments per mode and round
    #[arg(long, default_value_t = 500_000, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// Counters the increments are spread over (in a fixed xorshift order)
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Rounds; each runs every mode once
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Rounds run first and not counted: the process's first databases pay
    /// for the allocator's and the page cache's first growth
    #[arg(long, default_value_t = 1)]
    warmup: u64,
    /// Base directory for the databases, each removed after its mode (default: one under the temporary directory)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also write the report (markdown) to this file
    #[arg(long)]
    report: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Put,
    Merge,
    Txn,
}

const MODES: [Mode; 3] = [Mode::Put, Mode::Merge, Mode::Txn];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Put => "put",
            Mode::Merge => "merge",
            Mode::Txn => "txn",
        }
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("counter{i:08}").into_bytes()
}

/// The counters' increment order: the same for every mode and round.
fn order(ops: u64, keys: u64) -> Vec<u32> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..ops)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // keys fits in u32: it indexes a Vec of keys held in memory.
            (x % keys) as u32
        })
        .collect()
}

fn u64_of(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.try_into().ok()?))
}

/// One mode on a fresh database in `dir`: ns per increment, after checking
/// every counter.
fn run_mode(mode: Mode, dir: &Path, keys: &[Vec<u8>], order: &[u32]) -> Result<f64, String> {
    let e = |e: sett::Error| format!("{mode:?} in {}: {e}", dir.display());
    let mut opts = Options::new(dir);
    opts.merge_operator = merge::builtin(merge::U64_ADD);
    let db = Db::open(opts).map_err(e)?;
    let one = 1u64.to_le_bytes();
    let mut want = vec![0u64; keys.len()];
    let t = Instant::now();
    for &k in order {
        let k = k as usize;
        want[k] += 1;
        match mode {
            Mode::Put => db.put(&keys[k], &want[k].to_le_bytes()).map_err(e)?,
            Mode::Merge => db.merge(&keys[k], &one).map_err(e)?,
            Mode::Txn => db
                .update(|txn| {
                    let n = txn.get(&keys[k])?.as_deref().and_then(u64_of).unwrap_or(0);
                    txn.set(&keys[k], &(n + 1).to_le_bytes())
                })
                .map_err(e)?,
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / order.len() as f64;
    for (k, w) in keys.iter().zip(&want) {
        let got = db.get(k).map_err(e)?;
        let got = got.as_deref().and_then(u64_of).unwrap_or(0);
        if got != *w {
            return Err(format!(
                "{}: counter {} holds {got}, not {w}",
                mode.name(),
                String::from_utf8_lossy(k)
            ));
        }
    }
    db.close().map_err(e)?;
    Ok(ns)
}

fn spread(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let med = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (med, v[0], v[v.len() - 1])
}

/// A mode's cost against put's: its ratio of medians, and "behind" (costs
/// more) or "ahead" only where the ranges do not overlap.
fn verdict(of: (f64, f64, f64), put: (f64, f64, f64)) -> (f64, &'static str) {
    let ratio = of.0 / put.0;
    let word = if of.1 > put.2 {
        "costs more"
    } else if of.2 < put.1 {
        "costs less"
    } else {
        "tie"
    };
    (ratio, word)
}

pub fn run(a: &MergeBenchArgs) -> Result<(), String> {
    let base = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("sett-bench-merge-{}", std::process::id()))
    });
    let keys: Vec<Vec<u8>> = (0..a.keys).map(key).collect();
    let order = order(a.ops, a.keys);
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
    for round in 0..a.warmup + a.rounds {
        let counted = round >= a.warmup;
        for step in 0..MODES.len() {
            let m = (step + round as usize) % MODES.len();
            let dir = base.join(format!("r{round}-{}", MODES[m].name()));
            let _ = std::fs::remove_dir_all(&dir);
            let v = run_mode(MODES[m], &dir, &keys, &order)?;
            println!(
                "round {}{} {}: {v:.0} ns per increment",
                round + 1,
                if counted { "" } else { " (warm-up)" },
                MODES[m].name()
            );
            if counted {
                ns[m].push(v);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    if a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&base);
    }
    let s: Vec<(f64, f64, f64)> = ns.iter_mut().map(|v| spread(v)).collect();
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Counter increments: merge against put and a transaction\n"
    );
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or("unknown".to_string(), |s| s.trim().to_string());
    let _ = writeln!(
        r,
        "`sett-bench merge --ops {} --keys {} --rounds {} --warmup {}` at commit {commit} on {} cores: one \
         thread increments {} counters {} times in a fixed random order, each mode on a fresh \
         database with default options (sync off) and the built-in `sett.u64_add`, the modes \
         rotating in each round. put: the new value written blind (8 bytes); merge: \
         `Db::merge` of a little-endian 1; txn: `Db::update` reading the counter and writing \
         it back plus one. Every counter is read back after each mode and must hold its count. \
         ns per increment, wall time, median [min–max] of the counted rounds (the warm-up \
         rounds run first and are not counted).\n",
        a.ops,
        a.keys,
        a.rounds,
        a.warmup,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        a.keys,
        a.ops,
    );
    let _ = writeln!(r, "| mode | ns per increment | ÷ put | |");
    let _ = writeln!(r, "|---|---:|---:|---|");
    for (m, mode) in MODES.iter().enumerate() {
        let (med, lo, hi) = s[m];
        let (ratio, word) = if m == 0 {
            (1.0, "")
        } else {
            verdict(s[m], s[0])
        };
        let _ = writeln!(
            r,
            "| {} | {med:.0} [{lo:.0}–{hi:.0}] | {ratio:.2}x | {word} |",
            mode.name()
        );
    }
    print!("\n{r}");
    if let Some(p) = &a.report {
        std::fs::write(p, &r).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_counts_each_increment_once() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Vec<u8>> = (0..7).map(key).collect();
        let order = order(500, 7);
        for mode in MODES {
            let d = dir.path().join(mode.name());
            // run_mode reads every counter back and fails on a wrong count.
            let ns = run_mode(mode, &d, &keys, &order).unwrap();
            assert!(ns > 0.0, "{mode:?}");
        }
    }

    #[test]
    fn overlapping_ranges_are_a_tie_and_apart_ones_a_verdict() {
        assert_eq!(verdict((10.0, 9.0, 11.0), (10.5, 10.0, 12.0)).1, "tie");
        assert_eq!(
            verdict((20.0, 19.0, 21.0), (10.0, 9.0, 11.0)).1,
            "costs more"
        );
        assert_eq!(verdict((5.0, 4.0, 6.0), (10.0, 9.0, 11.0)).1, "costs less");
    }
}
