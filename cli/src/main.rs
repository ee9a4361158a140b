//! The `sett` command-line tool. Subcommands:
//!
//! - `sett bench` — the main job's benchmark: populate with random keys in the
//!   badger-bench format, random reads, iteration keys-only and with values;
//!   prints keys/s, ns/op and peak RSS.
//! - `sett bench-load` — bulk load against batched writes of the same sorted data.
//! - `sett bench-ops` — the Rust row of `make bench-bindings`.
//! - `sett bench-write` — single-key puts/deletes, small batches or 10-key prefix scans (issue 21).
//! - `sett bench-gc` — disk space under overwrites and deletes (`make bench-gc`).
//! - `sett info|verify|backup|restore|flatten|gc` — operate on a database directory.
//! - `sett bank` — Badger's bank test; exits 1 on a violation.
//! - `sett crashloop` — SIGKILL a writer at random moments and verify what survives.
//!
//! `sett --help` and `sett COMMAND --help` list every flag. A bad command line
//! exits 2 (clap's error), a failed command 1.

mod bank;
mod bench;
mod crashloop;
mod gcbench;
mod load;
mod opsbench;
mod progress;
mod tools;
mod writebench;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sett",
    version,
    about = "Inspect, repair, back up, benchmark and stress-test sett databases"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print levels, tables, value-log files, sizes and memory of a database
    Info(tools::InfoArgs),
    /// Check every table block and every live value-log entry of a database
    Verify(tools::VerifyArgs),
    /// Write a full backup, or an incremental one since a version, to a file
    Backup(tools::BackupArgs),
    /// Load a backup file into a database
    Restore(tools::RestoreArgs),
    /// Compact every level of a database into the last one
    Flatten(tools::FlattenArgs),
    /// Run value-log GC until nothing is left to collect
    Gc(tools::GcArgs),
    /// Badger's bank test: concurrent transfers must keep the total; exits 1 on a violation
    Bank(bank::BankArgs),
    /// Bulk load against 1000-entry batches of the same sorted keys
    BenchLoad(load::LoadArgs),
    /// Batch, put, get and iterate N keys: the Rust row of make bench-bindings
    BenchOps(opsbench::OpsArgs),
    /// Small operations: single-key puts or deletes, small batches, 10-key prefix scans; ops/s and CPU ns/op
    BenchWrite(writebench::WriteArgs),
    /// Disk space under 10x overwrites and deletes with the background value-log GC (make bench-gc)
    BenchGc(gcbench::GcBenchArgs),
    /// SIGKILL a writer at random moments and verify what survives; exits 1 on a failure
    Crashloop(crashloop::CrashloopArgs),
    /// The writer that crashloop kills (not for use by hand)
    #[command(hide = true)]
    CrashloopChild(crashloop::ChildArgs),
    /// The engine benchmark: random populate, random reads, iteration; one table row per value size
    Bench(bench::Config),
}

/// Prints a failed command's error and turns its outcome into the exit code:
/// 0 on success, 1 when the command failed or a check it makes did not hold.
fn finish(name: &str, r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sett {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ok = |r: Result<(), String>| r.map(|()| true);
    match &cli.command {
        Command::Info(a) => finish("info", ok(tools::info(a))),
        Command::Verify(a) => finish("verify", ok(tools::verify(a))),
        Command::Backup(a) => finish("backup", ok(tools::backup(a))),
        Command::Restore(a) => finish("restore", ok(tools::restore(a))),
        Command::Flatten(a) => finish("flatten", ok(tools::flatten(a))),
        Command::Gc(a) => finish("gc", ok(tools::gc(a))),
        Command::Bank(a) => finish("bank", bank::run(a)),
        Command::BenchLoad(a) => finish("bench-load", ok(load::run(a))),
        Command::BenchOps(a) => finish("bench-ops", ok(opsbench::run(a))),
        Command::BenchWrite(a) => finish("bench-write", ok(writebench::run(a))),
        Command::BenchGc(a) => finish("bench-gc", ok(gcbench::run(a))),
        Command::Crashloop(a) => finish("crashloop", crashloop::run(a)),
        Command::CrashloopChild(a) => finish("crashloop-child", ok(crashloop::child(a))),
        Command::Bench(c) => {
            // A bad combination of flags is a usage error like any other: exit 2.
            if let Err(e) = c.check() {
                // Built, so that the usage line it prints says `sett bench`.
                let mut cmd = Cli::command();
                cmd.build();
                let kind = clap::error::ErrorKind::ArgumentConflict;
                match cmd.find_subcommand_mut("bench") {
                    Some(bench) => bench.error(kind, e).exit(),
                    None => cmd.error(kind, e).exit(),
                }
            }
            finish("bench", ok(bench::run(c)))
        }
    }
}
