//! The `sett` command-line tool. Subcommands:
//!
//! - `sett bench` — the main job's benchmark: populate with random keys in the
//!   badger-bench format, random reads, iteration keys-only and with values;
//!   prints keys/s, ns/op and peak RSS.
//! - `sett bench-load` — bulk load against batched writes of the same sorted data.
//! - `sett info|verify|backup|restore|flatten|gc` — operate on a database directory.
//! - `sett bank` — Badger's bank test; exits 1 on a violation.
//! - `sett crashloop` — SIGKILL a writer at random moments and verify what survives.

mod args;
mod bank;
mod bench;
mod crashloop;
mod load;
mod opsbench;
mod tools;

use std::process::ExitCode;

const USAGE: &str = "usage:
  sett info DIR
  sett verify DIR
  sett backup DIR FILE [--since VERSION]
  sett restore DIR FILE
  sett flatten DIR
  sett gc DIR [--ratio 0.5]
  sett bank [--dir DIR] [--accounts 100] [--threads 4] [--seconds 5] [--sync]
  sett bench-load [--keys 1000000] [--valsz 128]
  sett bench-ops DIR N
  sett crashloop [--cycles 20 | --seconds T] [--sync] [--dir DIR]
  sett bench [--dir DIR] [--valsz N[,N...]] [--keys N[,N...]] \
[--writers N] [--batch N] [--reads N] [--readers N] [--sync] [--value-threshold N] [--keep]
  --valsz            value sizes in bytes (default 128,4096)
  --keys             keys to write per value size, one or one per size (default 1000000,100000)
  --dir              data directory (default: a new temporary directory, removed at the end)
  --writers          concurrent writer threads (default 32)
  --batch            entries per write batch (default 1000)
  --reads            random reads per reader thread (default 200000)
  --readers          reader threads (default 2)
  --sync             fsync every write group
  --value-threshold  values of at least this many bytes go to the value log (default: sett's)
  --keep             keep the data directory";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tool =
        |f: fn(&args::Args) -> Result<(), String>| match args::Args::parse(&args[1..], &["sync"])
            .and_then(|a| f(&a))
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sett {}: {e}", args[0]);
                ExitCode::FAILURE
            }
        };
    match args.first().map(String::as_str) {
        Some("info") => tool(tools::info),
        Some("verify") => tool(tools::verify),
        Some("backup") => tool(tools::backup),
        Some("restore") => tool(tools::restore),
        Some("flatten") => tool(tools::flatten),
        Some("gc") => tool(tools::gc),
        Some("bench-load") => tool(load::run),
        Some("bench-ops") => tool(opsbench::run),
        Some("crashloop") => {
            match args::Args::parse(&args[1..], &["sync"]).and_then(|a| crashloop::run(&a)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("sett crashloop: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("crashloop-child") => tool(crashloop::child),
        Some("bank") => {
            match args::Args::parse(&args[1..], &["sync"]).and_then(|a| bank::run(&a)) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("sett bank: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("bench") => match bench::Config::parse(&args[1..]).and_then(|c| bench::run(&c)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("sett bench: {e}");
                ExitCode::FAILURE
            }
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
