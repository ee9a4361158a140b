//! The pieces of sett's two command-line programs, kept apart as LevelDB keeps
//! leveldbutil apart from db_bench:
//!
//! - `sett` (src/main.rs) is for operators: info, verify, backup, restore,
//!   flatten, gc, checkpoint.
//! - `sett-bench` (src/bin/sett-bench.rs) holds the benchmarks and the stress
//!   harnesses: engine, load, ops, write, merge, gc, checkpoint, range-delete,
//!   bank, crashloop.

pub mod bank;
pub mod bench;
pub mod ckptbench;
pub mod crashloop;
pub mod gcbench;
pub mod load;
pub mod mergebench;
pub mod opsbench;
pub mod progress;
pub mod rangebench;
pub mod tools;
pub mod writebench;

use std::process::ExitCode;

/// Prints a failed command's error and turns its outcome into the exit code:
/// 0 on success, 1 when the command failed or a check it makes did not hold.
pub fn finish(program: &str, name: &str, r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{program} {name}: {e}");
            ExitCode::FAILURE
        }
    }
}
