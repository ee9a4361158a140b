//! `sett`, the operator's tool: inspect, check, back up, restore, compact,
//! collect and checkpoint a database directory. The benchmarks and stress
//! harnesses are in `sett-bench` (src/bin/sett-bench.rs).
//!
//! `sett --help` and `sett COMMAND --help` list every flag. A bad command line
//! exits 2 (clap's error), a failed command 1.

use clap::{Parser, Subcommand};
use sett_cli::tools;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sett",
    version,
    about = "Inspect, check, back up, restore, compact and checkpoint sett databases (benchmarks: sett-bench)"
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
    /// Make an openable copy of a database in a new directory, by hard links
    Checkpoint(tools::CheckpointArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let finish = |name, r: Result<(), String>| sett_cli::finish("sett", name, r.map(|()| true));
    match &cli.command {
        Command::Info(a) => finish("info", tools::info(a)),
        Command::Verify(a) => finish("verify", tools::verify(a)),
        Command::Backup(a) => finish("backup", tools::backup(a)),
        Command::Restore(a) => finish("restore", tools::restore(a)),
        Command::Flatten(a) => finish("flatten", tools::flatten(a)),
        Command::Gc(a) => finish("gc", tools::gc(a)),
        Command::Checkpoint(a) => finish("checkpoint", tools::checkpoint(a)),
    }
}
