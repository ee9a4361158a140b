//! `sett-bench`: sett's benchmarks and stress harnesses, apart from the
//! operator's tool `sett`. Subcommands:
//!
//! - `engine` — the main job's engine benchmark: populate with random keys in
//!   the badger-bench format, random reads, iteration keys-only and with
//!   values; prints keys/s, ns/op and peak RSS (`make bench-rust`).
//! - `load` — bulk load against batched writes of the same sorted data.
//! - `ops` — the Rust row of `make bench-bindings`.
//! - `write` — small operations: single-key puts or deletes, small batches,
//!   10-key prefix scans; ops/s and CPU ns per op (issue 21).
//! - `merge` — a counter incremented by put, merge and transaction
//!   (`make bench-merge`).
//! - `gc` — disk space under overwrites and deletes (`make bench-gc`).
//! - `checkpoint` — checkpoint time, extra disk and writer throughput.
//! - `range-delete` — writer throughput before, during and after deleting a
//!   tenth of the keys with a range delete and with the rewriting drop.
//! - `bank` — Badger's bank test; exits 1 on a violation.
//! - `crashloop` — SIGKILL a writer at random moments and verify what survives.
//!
//! `sett-bench --help` and `sett-bench COMMAND --help` list every flag. A bad
//! command line exits 2 (clap's error), a failed command or check 1.

use clap::{CommandFactory, Parser, Subcommand};
use sett_cli::{
    bank, bench, ckptbench, crashloop, gcbench, load, mergebench, opsbench, rangebench, writebench,
};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sett-bench",
    version,
    about = "Benchmark and stress-test the sett engine"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The engine benchmark: random populate, random reads, iteration; one table row per value size
    Engine(bench::Config),
    /// Bulk load against 1000-entry batches of the same sorted keys
    Load(load::LoadArgs),
    /// Batch, put, get and iterate N keys: the Rust row of make bench-bindings
    Ops(opsbench::OpsArgs),
    /// Small operations: single-key puts or deletes, small batches, 10-key prefix scans; ops/s and CPU ns/op
    Write(writebench::WriteArgs),
    /// A counter incremented from one thread by put, merge and transaction (make bench-merge)
    Merge(mergebench::MergeBenchArgs),
    /// Disk space under 10x overwrites and deletes with the background value-log GC (make bench-gc)
    Gc(gcbench::GcBenchArgs),
    /// Checkpoint time, extra disk and a writer's throughput while a checkpoint is taken
    Checkpoint(ckptbench::CkptBenchArgs),
    /// Writer throughput while a tenth of the keys is deleted: range delete against the rewriting drop_prefix
    RangeDelete(rangebench::RangeBenchArgs),
    /// Badger's bank test: concurrent transfers must keep the total; exits 1 on a violation
    Bank(bank::BankArgs),
    /// SIGKILL a writer at random moments and verify what survives; exits 1 on a failure
    Crashloop(crashloop::CrashloopArgs),
    /// The writer that crashloop kills (not for use by hand)
    #[command(hide = true)]
    CrashloopChild(crashloop::ChildArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let finish = |name, r| sett_cli::finish("sett-bench", name, r);
    let ok = |r: Result<(), String>| r.map(|()| true);
    match &cli.command {
        Command::Engine(c) => {
            // A bad combination of flags is a usage error like any other: exit 2.
            if let Err(e) = c.check() {
                // Built, so that the usage line it prints names the subcommand.
                let mut cmd = Cli::command();
                cmd.build();
                let kind = clap::error::ErrorKind::ArgumentConflict;
                match cmd.find_subcommand_mut("engine") {
                    Some(sub) => sub.error(kind, e).exit(),
                    None => cmd.error(kind, e).exit(),
                }
            }
            finish("engine", ok(bench::run(c)))
        }
        Command::Load(a) => finish("load", ok(load::run(a))),
        Command::Ops(a) => finish("ops", ok(opsbench::run(a))),
        Command::Write(a) => finish("write", ok(writebench::run(a))),
        Command::Merge(a) => finish("merge", ok(mergebench::run(a))),
        Command::Gc(a) => finish("gc", ok(gcbench::run(a))),
        Command::Checkpoint(a) => finish("checkpoint", ok(ckptbench::run(a))),
        Command::RangeDelete(a) => finish("range-delete", ok(rangebench::run(a))),
        Command::Bank(a) => finish("bank", bank::run(a)),
        Command::Crashloop(a) => finish("crashloop", crashloop::run(a)),
        Command::CrashloopChild(a) => finish("crashloop-child", ok(crashloop::child(a))),
    }
}
