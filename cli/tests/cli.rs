//! The command lines of `sett` (operators) and `sett-bench` (benchmarks and
//! stress harnesses): help, usage errors, `--json` and `--progress`.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const SETT: &str = env!("CARGO_BIN_EXE_sett");
const SETT_BENCH: &str = env!("CARGO_BIN_EXE_sett-bench");

fn sett(args: &[&str]) -> Output {
    run_env(SETT, args, &[])
}

fn sett_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_env(SETT, args, env)
}

fn sett_bench(args: &[&str]) -> Output {
    run_env(SETT_BENCH, args, &[])
}

fn sett_bench_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    run_env(SETT_BENCH, args, env)
}

fn run_env(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    // The tests run in parallel threads and build databases in this process
    // while other threads spawn a tool: a child forked before a Db here closed
    // holds a copy of its LOCK descriptor, and so its flock, until it execs.
    // On a loaded machine that can outlast the close by a few milliseconds, so
    // a command refused for that lock is tried again for up to two seconds.
    for _ in 0..20 {
        let o = Command::new(exe)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap_or_else(|e| panic!("running {exe} {args:?}: {e}"));
        if !String::from_utf8_lossy(&o.stderr).contains("is locked by another process") {
            return o;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{exe} {args:?}: the database stayed locked for two seconds")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Fails with both streams when `sett` did not exit with `code`.
fn expect_code(o: &Output, code: i32, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

const PROGRESS: &[&str] = &["--progress", "--no-progress"];

/// Every visible command and the flags its help must mention.
fn commands() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let with_progress = |flags: &[&'static str]| [flags, PROGRESS].concat();
    vec![
        (SETT, "info", vec!["--json"]),
        (SETT, "verify", with_progress(&[])),
        (SETT, "backup", with_progress(&["--since"])),
        (SETT, "restore", with_progress(&[])),
        (SETT, "flatten", with_progress(&[])),
        (SETT, "gc", with_progress(&["--ratio"])),
        (SETT, "checkpoint", vec!["--read-only", "--json"]),
        (SETT_BENCH, "checkpoint", vec!["--size-mib", "--value-size"]),
        (
            SETT_BENCH,
            "range-delete",
            vec!["--keys", "--value-size", "--writers", "--window-ms"],
        ),
        (
            SETT_BENCH,
            "bank",
            vec!["--dir", "--accounts", "--threads", "--seconds", "--sync"],
        ),
        (SETT_BENCH, "load", with_progress(&["--keys", "--valsz"])),
        (SETT_BENCH, "ops", vec![]),
        (
            SETT_BENCH,
            "crashloop",
            vec!["--cycles", "--seconds", "--sync", "--dir"],
        ),
        (
            SETT_BENCH,
            "engine",
            with_progress(&[
                "--dir",
                "--valsz",
                "--keys",
                "--writers",
                "--batch",
                "--reads",
                "--readers",
                "--sync",
                "--value-threshold",
                "--values",
                "--compression",
                "--zstd-level",
                "--settle",
                "--keep",
                "--json",
            ]),
        ),
    ]
}

#[test]
fn help_names_every_command_and_flag() {
    let top = |exe: &str| {
        let o = run_env(exe, &["--help"], &[]);
        expect_code(&o, 0, &format!("{exe} --help"));
        text(&o.stdout)
    };
    let (sett_top, bench_top) = (top(SETT), top(SETT_BENCH));
    for (exe, cmd, flags) in commands() {
        let top = if exe == SETT { &sett_top } else { &bench_top };
        assert!(
            top.contains(cmd),
            "{exe} --help does not name {cmd}:\n{top}"
        );
        let o = run_env(exe, &[cmd, "--help"], &[]);
        expect_code(&o, 0, &format!("{exe} {cmd} --help"));
        let help = text(&o.stdout);
        for f in flags {
            assert!(
                help.contains(f),
                "{exe} {cmd} --help does not name {f}:\n{help}"
            );
        }
    }
    assert!(
        !bench_top.contains("crashloop-child"),
        "the internal crashloop-child shows in sett-bench --help:\n{bench_top}"
    );
    // The operator's tool carries no benchmark or harness.
    for harness in ["engine", "bank", "crashloop"] {
        assert!(
            !sett_top.contains(harness),
            "sett --help names the harness {harness}:\n{sett_top}"
        );
    }
}

#[test]
fn usage_errors_exit_2_and_name_the_problem() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let d = dir.path().to_str().expect("a UTF-8 temporary path");
    let cases: &[(&str, &[&str], &str)] = &[
        (SETT, &["info", d, "--bogus"], "--bogus"),
        (SETT_BENCH, &["engine", "--no-such-flag"], "--no-such-flag"),
        (SETT, &["gc", d, "--ratio"], "--ratio"),
        (SETT, &["gc", d, "--ratio", "half"], "half"),
        (SETT, &["backup", d], "FILE"),
        (SETT_BENCH, &["engine", "--writers", "0"], "--writers"),
        (
            SETT_BENCH,
            &["engine", "--valsz", "1,2,3", "--keys", "1,2"],
            "--keys",
        ),
        // The defaults: two value sizes, two key counts.
        (
            SETT_BENCH,
            &["engine", "--keys", "1,2,3"],
            "3 given for 2 sizes",
        ),
        (
            SETT_BENCH,
            &["engine", "--valsz", "1,2,3"],
            "2 given for 3 sizes",
        ),
        (SETT_BENCH, &["bank", "--accounts", "1"], "--accounts"),
        (
            SETT_BENCH,
            &["crashloop", "--cycles", "3", "--seconds", "2"],
            "--seconds",
        ),
        (SETT, &["no-such-command"], "no-such-command"),
        (SETT_BENCH, &["bench"], "bench"),
        (SETT, &[], "Usage"),
        (SETT_BENCH, &[], "Usage"),
    ];
    for (exe, args, named) in cases {
        let o = run_env(exe, args, &[]);
        expect_code(&o, 2, &format!("{exe} {args:?}"));
        let err = text(&o.stderr);
        assert!(
            err.contains(named),
            "{exe} {args:?}: the error does not name {named}:\n{err}"
        );
    }
}

/// A database of `n` keys written with the library, flushed to tables.
fn small_db(dir: &Path, n: u64) {
    let db = sett::Db::open(sett::Options::new(dir)).expect("open");
    for i in 0..n {
        db.put(format!("key{i:06}").as_bytes(), &[b'v'; 100])
            .expect("put");
    }
    db.flush().expect("flush");
    db.close().expect("close");
}

#[test]
fn info_json_reports_the_database() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("db");
    small_db(&dir, 300);
    let want = {
        let mut o = sett::Options::new(&dir);
        o.read_only = true;
        let db = sett::Db::open(o).expect("read-only open");
        db.stats()
    };
    let d = dir.to_str().expect("a UTF-8 path");
    let o = sett(&["info", d, "--json"]);
    expect_code(&o, 0, "sett info --json");
    let out = text(&o.stdout);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e} in:\n{out}"));
    assert_eq!(v["database"], d);
    assert_eq!(v["table_entries"], 300, "{v}");
    assert_eq!(v["table_entries"], want.table_entries);
    assert_eq!(v["last_seq"], want.last_seq);
    assert_eq!(v["vlog_files"], want.vlog_files);
    // The memory budget: the default, and what the tables pinned in it.
    assert_eq!(v["cache_capacity"], want.cache_capacity, "{v}");
    assert_eq!(v["cache_capacity"], 256 << 20);
    let pinned = v["cache_pinned_bytes"]
        .as_u64()
        .expect("cache_pinned_bytes");
    assert!(
        pinned > 0 && pinned <= v["cache_usage"].as_u64().unwrap_or(0),
        "{v}"
    );
    let levels = v["levels"].as_array().expect("levels is an array");
    assert_eq!(levels.len(), want.levels.len());
    let tables: u64 = levels.iter().filter_map(|l| l["tables"].as_u64()).sum();
    assert_eq!(
        tables,
        want.levels.iter().map(|(n, _)| *n as u64).sum::<u64>()
    );

    // The text form says the same.
    let o = sett(&["info", d]);
    expect_code(&o, 0, "sett info");
    assert!(text(&o.stdout).contains("table entries      300"));
    assert!(
        text(&o.stdout).contains("of 256.0 MiB"),
        "{}",
        text(&o.stdout)
    );
}

/// Tiny bench flags: a few thousand keys, done in a second or two.
const TINY: &[&str] = &[
    "--keys",
    "3000",
    "--reads",
    "3000",
    "--writers",
    "2",
    "--batch",
    "100",
];

#[test]
fn bench_progress_and_json() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let d = tmp.path().to_str().expect("a UTF-8 path");
    // A short interval, so that this tiny run lasts several of them.
    let fast = [("SETT_PROGRESS_MS", "20")];
    let mut args = vec![
        "engine",
        "--valsz",
        "128",
        "--dir",
        d,
        "--json",
        "--progress",
    ];
    args.extend(TINY);
    let o = sett_bench_env(&args, &fast);
    expect_code(&o, 0, "sett-bench engine --progress --json");
    let err = text(&o.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("[sett-bench engine "))
        .collect();
    assert!(!lines.is_empty(), "no progress line on stderr:\n{err}");
    assert!(lines.iter().all(|l| l.contains("RSS ")), "{err}");
    let out = text(&o.stdout);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e} in:\n{out}"));
    assert_eq!(v["writers"], 2);
    let runs = v["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["valsz"], 128);
    assert_eq!(runs[0]["keys_written"], 3000);
    assert!(runs[0]["populate_keys_per_s"]
        .as_f64()
        .is_some_and(|r| r > 0.0));
    assert!(runs[0]["iterate_keys"]
        .as_u64()
        .is_some_and(|n| n > 0 && n <= 3000));

    // Off: with --no-progress, and by default when stderr is not a terminal.
    for extra in [&["--no-progress"][..], &[]] {
        let mut args = vec!["engine", "--valsz", "128", "--dir", d];
        args.extend(extra);
        args.extend(TINY);
        let o = sett_bench_env(&args, &fast);
        expect_code(&o, 0, "sett-bench engine without progress");
        let err = text(&o.stderr);
        assert!(
            !err.contains("[sett-bench engine "),
            "{args:?} printed progress:\n{err}"
        );
        assert!(text(&o.stdout).contains("| 128 B | 3000 |"));
    }
}

#[test]
fn bench_with_json_values_and_each_codec_reports_it_and_shrinks_the_disk() {
    let mut disk = Vec::new();
    for codec in ["none", "lz4", "zstd"] {
        let mut args = vec![
            "engine",
            "--valsz",
            "1024",
            "--value-threshold",
            "4096",
            "--values",
            "json",
            "--compression",
            codec,
            "--settle",
            "--json",
            "--no-progress",
        ];
        args.extend(TINY);
        let o = sett_bench(&args);
        expect_code(
            &o,
            0,
            &format!("sett-bench engine --values json --compression {codec}"),
        );
        let v: Value = serde_json::from_slice(&o.stdout).expect("bench --json parses");
        let run = &v["runs"][0];
        assert_eq!(
            (run["values"].as_str(), run["compression"].as_str()),
            (Some("json"), Some(codec))
        );
        disk.push(run["disk_apparent_bytes"].as_u64().expect("a disk size"));
    }
    assert!(
        disk[1] < disk[0] && disk[2] < disk[0],
        "none, lz4, zstd: {disk:?}"
    );
    let o = sett_bench(&["engine", "--compression", "snappy"]);
    expect_code(&o, 2, "an unknown codec");
    assert!(text(&o.stderr).contains("snappy"));
}

#[test]
fn bench_json_with_one_child_per_value_size() {
    let mut args = vec!["engine", "--valsz", "64,256", "--json", "--no-progress"];
    args.extend(TINY);
    let o = sett_bench(&args);
    expect_code(&o, 0, "sett-bench engine --valsz 64,256 --json");
    let out = text(&o.stdout);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e} in:\n{out}"));
    let sizes: Vec<u64> = v["runs"]
        .as_array()
        .expect("runs is an array")
        .iter()
        .filter_map(|r| r["valsz"].as_u64())
        .collect();
    assert_eq!(sizes, [64, 256], "{v}");
}

#[test]
fn maintenance_commands_with_progress() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let db = tmp.path().join("db");
    small_db(&db, 2000);
    let p = |name: &str| tmp.path().join(name).to_string_lossy().into_owned();
    let (d, backup, restored) = (p("db"), p("full.backup"), p("restored"));
    let fast = [("SETT_PROGRESS_MS", "1")];
    let runs: &[&[&str]] = &[
        &["verify", &d, "--progress"],
        &["backup", &d, &backup, "--progress"],
        &["restore", &restored, &backup, "--progress"],
        &["flatten", &restored, "--progress"],
        &["gc", &d, "--ratio", "0.1", "--progress"],
        &["verify", &restored, "--no-progress"],
    ];
    for args in runs {
        let o = sett_env(args, &fast);
        expect_code(&o, 0, &format!("sett {args:?}"));
    }
    let o = sett(&["info", &restored, "--json"]);
    expect_code(&o, 0, "sett info --json on the restored copy");
    let v: Value = serde_json::from_slice(&o.stdout).expect("info --json parses");
    assert_eq!(v["table_entries"], 2000, "{v}");
}

#[test]
fn checkpoint_makes_an_openable_copy_and_refuses_an_existing_target() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("db");
    small_db(&dir, 300);
    let (d, t) = (dir.to_str().expect("utf-8"), tmp.path().join("ckpt"));
    let t = t.to_str().expect("utf-8");
    for read_only in [true, false] {
        let target = format!("{t}-{read_only}");
        let mut args = vec!["checkpoint", d, &target, "--json"];
        if read_only {
            args.push("--read-only");
        }
        let o = sett(&args);
        expect_code(&o, 0, "sett checkpoint");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
        assert!(v["files_linked"].as_u64().unwrap_or(0) >= 1, "{v}");
        let db = sett::Db::open(sett::Options::new(&target)).expect("open the checkpoint");
        assert_eq!(db.get(b"key000299").expect("get"), Some(vec![b'v'; 100]));
        db.verify().expect("verify the checkpoint");
        drop(db);
        let o = sett(&["checkpoint", d, &target]);
        expect_code(&o, 1, "a second checkpoint onto the same target");
        assert!(
            text(&o.stderr).contains("already exists"),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn bench_checkpoint_reports_time_disk_and_writer_throughput() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let d = tmp.path().join("bench");
    let o = sett_bench(&[
        "checkpoint",
        d.to_str().expect("utf-8"),
        "--size-mib",
        "2",
        "--value-size",
        "2048",
    ]);
    expect_code(&o, 0, "sett-bench checkpoint");
    let out = text(&o.stdout);
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .expect("a RESULT line");
    let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
    assert!(v["files_linked"].as_u64().unwrap_or(0) >= 1, "{v}");
    assert!(
        v["checkpoint_seconds"].as_f64().is_some_and(|s| s > 0.0),
        "{v}"
    );
    assert!(v["writer_puts_per_s_during"].as_f64().is_some(), "{v}");
    assert!(d.join("checkpoint").join("MANIFEST").exists());
}

#[test]
fn range_delete_bench_deletes_the_tenth_both_ways_and_reports_each() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let dir = tmp.path().join("rb");
    let d = dir.to_str().expect("utf-8");
    let o = sett_bench(&["range-delete", d, "--keys", "2000", "--window-ms", "20"]);
    expect_code(&o, 0, "sett-bench range-delete");
    let results: Vec<Value> = text(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("RESULT "))
        .map(|j| serde_json::from_str(j).expect("RESULT parses"))
        .collect();
    let ways: Vec<&str> = results.iter().filter_map(|r| r["way"].as_str()).collect();
    assert_eq!(ways, ["delete_range", "rewriting_drop_prefix"]);
    for r in &results {
        assert!(
            r["before"]["puts_per_s"].as_f64().unwrap_or(0.0) > 0.0,
            "{r}"
        );
    }
    // A directory that is not empty is refused.
    let o = sett_bench(&["range-delete", d, "--keys", "2000"]);
    expect_code(&o, 1, "sett-bench range-delete into a used directory");
}
