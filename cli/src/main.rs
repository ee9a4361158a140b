//! The `sett` command-line tool. Subcommands:
//!
//! - `sett bench` — the main job's benchmark: populate with random keys in the
//!   badger-bench format, random reads, iteration keys-only and with values;
//!   prints keys/s, ns/op and peak RSS.
//!
//! `info`, `backup`, `restore`, `flatten`, `gc` and `bank` are not built yet (issue 3).

mod bench;

use std::process::ExitCode;

const USAGE: &str = "usage: sett bench [--dir DIR] [--valsz N[,N...]] [--keys N[,N...]] \
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
    match args.first().map(String::as_str) {
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
