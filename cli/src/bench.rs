//! `sett-bench engine`: populate, random read and iterate, with figures.

use crate::progress::{rss, Phase, Progress, ProgressFlags};
use serde_json::{json, Value};
use sett::options::OptionValue;
use sett::{Compression, Db, IterOptions, Options, WriteBatch};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// At least 1, as a usize.
fn positive() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
}

/// What the values of a run hold.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Values {
    /// Random bytes: incompressible (badger-bench's values).
    Random,
    /// JSON-like records, deterministic from the key: field names, words and
    /// dates repeat, numbers vary, as in real documents (compressible).
    Json,
}

fn parse_compression(s: &str) -> Result<Compression, String> {
    Compression::from_name(s).ok_or_else(|| format!("{s:?} is not none, lz4 or zstd"))
}

#[derive(clap::Args)]
pub struct Config {
    /// Data directory, one subdirectory per value size (default: a new temporary directory, removed at the end)
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Value sizes in bytes, comma-separated; each runs in its own process
    #[arg(long, value_delimiter = ',', num_args = 1, default_value = "128,4096")]
    valsz: Vec<usize>,
    /// Keys to write per value size: one count, or one per value size
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 1,
        default_value = "2000000,250000"
    )]
    keys: Vec<u64>,
    /// Concurrent writer threads
    #[arg(long, default_value_t = 32, value_parser = positive())]
    writers: usize,
    /// Entries per write batch
    #[arg(long, default_value_t = 1000, value_parser = positive())]
    batch: usize,
    /// Random reads per reader thread
    #[arg(long, default_value_t = 200_000)]
    reads: u64,
    /// Reader threads
    #[arg(long, default_value_t = 2, value_parser = positive())]
    readers: usize,
    /// fsync every write group
    #[arg(long)]
    sync: bool,
    /// Values of at least this many bytes go to the value log (default: sett's)
    #[arg(long, value_name = "BYTES")]
    value_threshold: Option<usize>,
    /// Values: random bytes, or compressible JSON-like records
    #[arg(long, value_enum, default_value = "random")]
    values: Values,
    /// Codec of table data blocks on every level: none, lz4 or zstd (values in
    /// the value log, at least --value-threshold bytes, are not compressed)
    #[arg(long, default_value = "none", value_parser = parse_compression)]
    compression: Compression,
    /// zstd level where zstd is used (default: sett's, 3)
    #[arg(long, value_name = "LEVEL")]
    zstd_level: Option<i32>,
    /// A tuning option of the LSM tree, repeatable: memtable_size,
    /// max_memtables, table_size, level_base_size, level_multiplier,
    /// l0_compaction_trigger, l0_slowdown_trigger, l0_stop_trigger (bytes or
    /// counts), level_dynamic (0 off, 1 on)
    #[arg(long = "opt", value_name = "NAME=VALUE", value_parser = parse_tuning)]
    tuning: Vec<(String, u64)>,
    /// Before the read phases, flush the memtable and wait (up to 120 s) until
    /// no flush or compaction is pending or running, so that reads and scans
    /// measure tables, not background work beside them (the wait is reported)
    #[arg(long)]
    settle: bool,
    /// Keep the data directory
    #[arg(long)]
    keep: bool,
    /// Print one JSON object on stdout with every figure; the narrative goes to stderr
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    progress: ProgressFlags,
}

/// The narrative of a run: on stdout, or on stderr when stdout is for `--json`.
macro_rules! say {
    ($c:expr, $($t:tt)*) => {
        if $c.json { eprintln!($($t)*) } else { println!($($t)*) }
    };
}

impl Config {
    /// The check clap cannot make alone; its message goes through clap (exit 2).
    pub fn check(&self) -> Result<(), String> {
        if self.keys.len() != 1 && self.keys.len() != self.valsz.len() {
            return Err(format!(
                "--keys takes one count, or one per value size ({} given for {} sizes)",
                self.keys.len(),
                self.valsz.len()
            ));
        }
        Ok(())
    }

    fn values_name(&self) -> &'static str {
        match self.values {
            Values::Random => "random",
            Values::Json => "json",
        }
    }

    /// Arguments for a child run of one value size.
    fn child_args(&self, valsz: usize, keys: u64) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "engine".into(),
            "--valsz".into(),
            valsz.to_string(),
            "--keys".into(),
            keys.to_string(),
            "--writers".into(),
            self.writers.to_string(),
            "--batch".into(),
            self.batch.to_string(),
            "--reads".into(),
            self.reads.to_string(),
            "--readers".into(),
            self.readers.to_string(),
            // The parent decides, so that a child whose stderr is a pipe agrees.
            self.progress.as_arg().into(),
        ];
        if let Some(d) = &self.dir {
            a.extend(["--dir".into(), d.display().to_string()]);
        }
        if let Some(t) = self.value_threshold {
            a.extend(["--value-threshold".into(), t.to_string()]);
        }
        if let Some(l) = self.zstd_level {
            a.extend(["--zstd-level".into(), l.to_string()]);
        }
        for (name, v) in &self.tuning {
            a.extend(["--opt".into(), format!("{name}={v}")]);
        }
        a.extend([
            "--compression".into(),
            self.compression.name().into(),
            "--values".into(),
            self.values_name().into(),
        ]);
        for (on, flag) in [
            (self.sync, "--sync"),
            (self.keep, "--keep"),
            (self.settle, "--settle"),
            (self.json, "--json"),
        ] {
            if on {
                a.push(flag.into());
            }
        }
        a
    }
}

/// Bytes this process caused to be written to storage (`write_bytes` of
/// /proc/self/io: page-cache pages it dirtied, counted when dirtied), or
/// `None` where the kernel does not say.
fn storage_write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The tuning options `--opt` takes.
const TUNING: [&str; 9] = [
    "memtable_size",
    "max_memtables",
    "table_size",
    "level_base_size",
    "level_multiplier",
    "level_dynamic",
    "l0_compaction_trigger",
    "l0_slowdown_trigger",
    "l0_stop_trigger",
];

fn parse_tuning(s: &str) -> Result<(String, u64), String> {
    let (name, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    if !TUNING.contains(&name) {
        return Err(format!("{name:?} is not one of {}", TUNING.join(", ")));
    }
    let v = v
        .parse::<u64>()
        .map_err(|e| format!("{name}: {v:?} is not a count of bytes or tables: {e}"))?;
    Ok((name.to_string(), v))
}

/// Sets one option `parse_tuning` accepted, through core's table of options:
/// a value outside the option's bounds is refused naming the option and its
/// bounds; rules between options are checked at open.
fn set_tuning(o: &mut Options, name: &str, v: u64) -> Result<(), sett::Error> {
    match name {
        // The one switch among them: 0 is off, anything else on.
        "level_dynamic" => o.set(name, OptionValue::Bool(v != 0)),
        _ => o.set(name, OptionValue::Int(i128::from(v))),
    }
}

/// SplitMix64: fast, seedable, good enough for benchmark keys and values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}

fn bench_key(valsz: usize, k: u64) -> String {
    format!("vsz={valsz:05}-k={k:010}")
}

/// A JSON-like record of exactly `valsz` bytes for key number `k` (cut at
/// `valsz`, so not always valid JSON): a user document with an event list.
/// Names, words, dates and paths come from small vocabularies; ids, scores and
/// durations vary. LZ4 shrinks a 1 KiB record about 2-3x.
fn json_value(k: u64, valsz: usize, out: &mut Vec<u8>) {
    use std::io::Write;
    const WORDS: [&str; 16] = [
        "checkout", "search", "login", "logout", "cart", "review", "wishlist", "profile", "orders",
        "settings", "help", "home", "product", "category", "payment", "shipping",
    ];
    const CITIES: [&str; 8] = [
        "Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent", "Basel", "Krakow",
    ];
    let mut r = Rng(k.wrapping_mul(0x2545_F491_4F6C_DD1D));
    out.clear();
    let _ = write!(
        out,
        r#"{{"id":{k},"user":"user{k:010}","email":"user{k}@example.com","city":"{}","created":"2024-{:02}-{:02}T{:02}:{:02}:{:02}Z","active":{},"score":{},"events":["#,
        CITIES[(r.next() % 8) as usize],
        1 + r.next() % 12,
        1 + r.next() % 28,
        r.next() % 24,
        r.next() % 60,
        r.next() % 60,
        r.next().is_multiple_of(3),
        r.next() % 100_000,
    );
    let mut i = 0;
    while out.len() < valsz {
        let _ = write!(
            out,
            r#"{}{{"type":"{}","page":"/{}/{}","ms":{},"ok":{}}}"#,
            if i == 0 { "" } else { "," },
            WORDS[(r.next() % 16) as usize],
            WORDS[(r.next() % 16) as usize],
            r.next() % 5000,
            r.next() % 2000,
            !r.next().is_multiple_of(10),
        );
        i += 1;
    }
    out.truncate(valsz);
}

/// (apparent bytes, allocated bytes) of the files in `dir`.
fn disk_usage(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut apparent = 0;
    let mut allocated = 0;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if let Ok(m) = e.metadata() {
                apparent += m.len();
                allocated += m.blocks() * 512;
            }
        }
    }
    (apparent, allocated)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Env var through which a child run hands its figures (JSON) back to the parent.
const ROW_FILE_ENV: &str = "SETT_BENCH_ROW_FILE";

const TABLE_HEADER: &str = "| value size | keys written | populate keys/s | populate MB/s | random get ns/op (hit rate) | iterate keys-only keys/s | iterate with values keys/s | disk after close (apparent / allocated MiB) | peak RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

/// Reader and iterator threads publish their counts this often (in keys), so
/// that progress costs one shared atomic add per 4096 operations.
const PUBLISH_EVERY: u64 = 4096;

/// The table row of one run's figures, as `run_one` returns them.
fn table_row(run: &Value) -> Result<String, String> {
    // Runs of JSON values or with a codec say so beside the value size.
    let tag = match (run["values"].as_str(), run["compression"].as_str()) {
        (Some("random") | None, Some("none") | None) => String::new(),
        (values, codec) => format!(
            " ({}, {})",
            values.unwrap_or("random"),
            codec.unwrap_or("none")
        ),
    };
    let f = |name: &str| -> Result<f64, String> {
        match &run[name] {
            Value::Number(n) => n.as_f64().ok_or_else(|| format!("{name} is {n}")),
            // serde_json writes a NaN or an infinity as null.
            Value::Null if run.get(name).is_some() => Ok(f64::NAN),
            _ => Err(format!("the figures of a run have no {name}")),
        }
    };
    Ok(format!(
        "| {:.0} B{tag} | {:.0} | {:.0} | {:.1} | {:.0} ({:.0}%) | {:.0} | {:.0} | {:.1} / {:.1} | {:.0} |",
        f("valsz")?,
        f("keys_written")?,
        f("populate_keys_per_s")?,
        f("populate_mb_per_s")?,
        f("random_get_ns_per_op")?,
        f("random_get_hit_rate")? * 100.0,
        f("iterate_keys_only_keys_per_s")?,
        f("iterate_with_values_keys_per_s")?,
        mib(f("disk_apparent_bytes")? as u64),
        mib(f("disk_allocated_bytes")? as u64),
        mib(f("peak_rss_bytes")? as u64),
    ))
}

/// Prints the table, or with `--json` one object with the settings and every run.
fn print_runs(c: &Config, runs: Vec<Value>) -> Result<(), String> {
    if c.json {
        let v = json!({
            "writers": c.writers,
            "batch": c.batch,
            "reads_per_reader": c.reads,
            "readers": c.readers,
            "sync": c.sync,
            "runs": runs,
        });
        return crate::tools::print_json(&v);
    }
    println!("\n{TABLE_HEADER}");
    for r in &runs {
        println!("{}", table_row(r)?);
    }
    Ok(())
}

pub fn run(c: &Config) -> Result<(), String> {
    say!(
        c,
        "sett-bench engine: {} writers x {}-entry batches, {} readers, sync={}",
        c.writers,
        c.batch,
        c.readers,
        c.sync
    );
    if c.valsz.len() == 1 {
        let run = run_size(c, c.valsz[0], c.keys[0])?;
        if let Ok(path) = std::env::var(ROW_FILE_ENV) {
            std::fs::write(&path, run.to_string()).map_err(|e| format!("writing {path}: {e}"))?;
            return Ok(());
        }
        return print_runs(c, vec![run]);
    }
    // One process per value size, so that each peak RSS is its own.
    let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
    let mut runs = Vec::new();
    for (i, &valsz) in c.valsz.iter().enumerate() {
        let keys = if c.keys.len() == 1 {
            c.keys[0]
        } else {
            c.keys[i]
        };
        let row_file =
            std::env::temp_dir().join(format!("sett-bench-row-{}-{valsz}", std::process::id()));
        let status = std::process::Command::new(&exe)
            .args(c.child_args(valsz, keys))
            .env(ROW_FILE_ENV, &row_file)
            .status()
            .map_err(|e| format!("starting the run for value size {valsz}: {e}"))?;
        if !status.success() {
            return Err(format!("the run for value size {valsz} failed ({status})"));
        }
        let text = std::fs::read_to_string(&row_file)
            .map_err(|e| format!("reading {}: {e}", row_file.display()))?;
        let _ = std::fs::remove_file(&row_file);
        let run: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the figures in {}: {e}", row_file.display()))?;
        runs.push(run);
    }
    print_runs(c, runs)
}

fn run_size(c: &Config, valsz: usize, keys: u64) -> Result<Value, String> {
    let dir = match &c.dir {
        Some(d) => d.join(format!("vsz{valsz}")),
        None => std::env::temp_dir().join(format!("sett-bench-{}-{valsz}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let progress = Progress::start("sett-bench engine", c.progress.enabled());
    let run = run_one(c, &progress, &dir, valsz, keys)
        .map_err(|e| format!("value size {valsz} in {}: {e}", dir.display()));
    drop(progress);
    if !c.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    run
}

fn run_one(
    c: &Config,
    p: &Progress,
    dir: &Path,
    valsz: usize,
    keys: u64,
) -> Result<Value, sett::Error> {
    let mut opts = Options::new(dir);
    opts.sync_writes = c.sync;
    if let Some(t) = c.value_threshold {
        opts.value_threshold = t;
    }
    opts.compression = c.compression;
    if let Some(l) = c.zstd_level {
        opts.zstd_level = l;
    }
    for (name, v) in &c.tuning {
        set_tuning(&mut opts, name, *v)?;
    }
    say!(
        c,
        "\n== value size {valsz} B ({} values), {keys} keys, value_threshold {} B, compression {} (zstd level {}), dir {}",
        c.values_name(),
        opts.value_threshold,
        opts.compression.name(),
        opts.zstd_level,
        dir.display()
    );
    if c.compression != Compression::None && valsz >= opts.value_threshold {
        say!(
            c,
            "  note: values of {valsz} B go to the value log, which is not compressed; \
             pass --value-threshold above {valsz} to keep them in the tables"
        );
    }
    p.phase(Phase::wait("opening"));
    let db = Db::open(opts.clone())?;

    // Populate: keys drawn uniformly at random with replacement, as badger-bench does.
    let written = AtomicU64::new(0);
    let batches = keys.div_ceil(c.batch as u64);
    let next_batch = AtomicU64::new(0);
    // Keys are 22 bytes (`bench_key`).
    p.phase(
        Phase::items(format!("populate {valsz} B"), "keys")
            .total(batches * c.batch as u64)
            .bytes_each(valsz as u64 + 22),
    );
    let start = Instant::now();
    let result: Result<(), sett::Error> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..c.writers)
            .map(|w| {
                let (db, written, next_batch) = (&db, &written, &next_batch);
                s.spawn(move || -> Result<(), sett::Error> {
                    let mut rng = Rng(0x5EED ^ (w as u64) << 32);
                    let mut value = vec![0u8; valsz];
                    while next_batch.fetch_add(1, Ordering::Relaxed) < batches {
                        let mut b = WriteBatch::new();
                        for _ in 0..c.batch {
                            let k = rng.next() % keys;
                            match c.values {
                                Values::Random => rng.fill(&mut value),
                                Values::Json => json_value(k, valsz, &mut value),
                            }
                            b.put(bench_key(valsz, k).into_bytes(), value.clone());
                        }
                        let n = b.len() as u64;
                        db.write(b)?;
                        written.fetch_add(n, Ordering::Relaxed);
                        p.add(n);
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or(Err(sett::Error::Poisoned("writer thread panicked".into())))
        })
    });
    result?;
    let populate = start.elapsed();
    let n = written.load(Ordering::Relaxed);
    let keys_per_s = n as f64 / populate.as_secs_f64();
    let mb_per_s = n as f64 * (valsz + 22) as f64 / populate.as_secs_f64() / 1e6;
    say!(
        c,
        "  populate: {n} keys in {:.2}s = {keys_per_s:.0} keys/s ({mb_per_s:.1} MB/s)",
        populate.as_secs_f64()
    );
    let user_bytes = n * (valsz as u64 + 22);
    let amplification = |written: Option<u64>| {
        written.map_or("unknown".to_string(), |w| {
            format!(
                "{} MiB, {:.2}x the user bytes",
                w >> 20,
                w as f64 / user_bytes as f64
            )
        })
    };
    let populate_written = storage_write_bytes();
    say!(
        c,
        "  written to storage during populate: {}",
        amplification(populate_written)
    );
    let mut settle_seconds = 0.0;
    if c.settle {
        p.phase(Phase::wait("settling"));
        let start = Instant::now();
        db.flush()?;
        loop {
            let s = db.stats();
            let busy =
                s.immutable_memtables + (s.compactions_pending + s.compactions_running) as usize;
            if busy == 0 || start.elapsed().as_secs() >= 120 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        settle_seconds = start.elapsed().as_secs_f64();
        say!(
            c,
            "  settle: flushed and waited {settle_seconds:.2}s for background work; \
             written to storage by then: {}",
            amplification(storage_write_bytes())
        );
    }
    let stats = db.stats();
    say!(c, "  stats after populate: {stats:?}");

    // Random reads: parallel readers, random keys of the same format (about 63% exist).
    let total_reads = c.reads * c.readers as u64;
    p.phase(Phase::items(format!("random get {valsz} B"), "reads").total(total_reads));
    let found = AtomicU64::new(0);
    let start = Instant::now();
    let result: Result<(), sett::Error> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..c.readers)
            .map(|r| {
                let (db, found) = (&db, &found);
                s.spawn(move || -> Result<(), sett::Error> {
                    let mut rng = Rng(0xBEEF ^ (r as u64) << 40);
                    let mut hits = 0;
                    for i in 1..=c.reads {
                        let k = bench_key(valsz, rng.next() % keys);
                        if let Some(v) = db.get(k.as_bytes())? {
                            hits += 1;
                            std::hint::black_box(v);
                        }
                        if i.is_multiple_of(PUBLISH_EVERY) {
                            p.add(PUBLISH_EVERY);
                        }
                    }
                    found.fetch_add(hits, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or(Err(sett::Error::Poisoned("reader thread panicked".into())))
        })
    });
    result?;
    let ns_per_op = start.elapsed().as_nanos() as f64 / total_reads as f64;
    let hit = found.load(Ordering::Relaxed) as f64 / total_reads as f64;
    say!(
        c,
        "  random get: {ns_per_op:.0} ns/op across {} readers (wall time / ops), hit rate {:.1}%",
        c.readers,
        hit * 100.0
    );

    let iterate = |keys_only: bool| -> Result<(u64, f64), sett::Error> {
        let start = Instant::now();
        let mut n = 0u64;
        let mut bytes = 0usize;
        for item in db.iter(IterOptions {
            keys_only,
            ..Default::default()
        })? {
            let (k, v) = item?;
            n += 1;
            bytes += k.len() + v.len();
            if n.is_multiple_of(PUBLISH_EVERY) {
                p.set(n);
            }
        }
        std::hint::black_box(bytes);
        Ok((n, n as f64 / start.elapsed().as_secs_f64()))
    };
    // How many distinct keys there are is known only after the first scan.
    p.phase(Phase::items(format!("iterate keys-only {valsz} B"), "keys"));
    let (n_keys, ko) = iterate(true)?;
    p.phase(
        Phase::items(format!("iterate with values {valsz} B"), "keys")
            .total(n_keys)
            .bytes_each(valsz as u64 + 22),
    );
    let (_, wv) = iterate(false)?;
    say!(
        c,
        "  iterate: {n_keys} keys; keys-only {ko:.0} keys/s, with values {wv:.0} keys/s"
    );
    p.phase(Phase::wait("closing"));
    db.close()?;
    drop(db);
    let (apparent, allocated) = disk_usage(dir);
    let (_, peak) = rss();
    say!(
        c,
        "  disk after close: {:.1} MiB apparent, {:.1} MiB allocated; peak RSS {:.0} MiB",
        mib(apparent),
        mib(allocated),
        mib(peak)
    );
    Ok(json!({
        "valsz": valsz,
        "keys": keys,
        "value_threshold": opts.value_threshold,
        "values": c.values_name(),
        "compression": opts.compression.name(),
        "zstd_level": opts.zstd_level,
        "dir": dir.display().to_string(),
        "keys_written": n,
        "populate_seconds": populate.as_secs_f64(),
        "populate_keys_per_s": keys_per_s,
        "populate_mb_per_s": mb_per_s,
        "settle_seconds": settle_seconds,
        "populate_storage_write_bytes": populate_written,
        "tuning": c.tuning.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "stats_after_populate": crate::tools::stats_json(&stats),
        "random_get_ns_per_op": ns_per_op,
        "random_get_hit_rate": hit,
        "iterate_keys": n_keys,
        "iterate_keys_only_keys_per_s": ko,
        "iterate_with_values_keys_per_s": wv,
        "disk_apparent_bytes": apparent,
        "disk_allocated_bytes": allocated,
        "peak_rss_bytes": peak,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tuning_option_named_reaches_the_options_and_unknown_ones_are_refused() {
        let mut o = Options::new("/unused");
        let mut want = Vec::new();
        for (i, name) in TUNING.iter().enumerate() {
            if *name == "level_dynamic" {
                continue; // the one switch, checked below
            }
            // The least value the table accepts, plus a little: in bounds, and
            // different for every option.
            let (lo, _) = sett::options::option_spec(name)
                .and_then(|s| s.int_range())
                .expect(name);
            let v = u64::try_from(lo).expect(name) + 1 + i as u64;
            let (n, v) = parse_tuning(&format!("{name}={v}")).expect(name);
            set_tuning(&mut o, &n, v).expect(name);
            want.push(v);
        }
        let set = [
            o.memtable_size as u64,
            o.max_memtables as u64,
            o.table_size,
            o.level_base_size,
            o.level_multiplier,
            o.l0_compaction_trigger as u64,
            o.l0_slowdown_trigger as u64,
            o.l0_stop_trigger as u64,
        ];
        assert_eq!(set.to_vec(), want);
        for (v, on) in [(1, true), (0, false)] {
            let (n, v) = parse_tuning(&format!("level_dynamic={v}")).unwrap();
            set_tuning(&mut o, &n, v).unwrap();
            assert_eq!(o.level_dynamic, on);
        }
        assert!(parse_tuning("block_size=4096")
            .unwrap_err()
            .contains("not one of"));
        assert!(parse_tuning("memtable_size").is_err());
        assert!(parse_tuning("memtable_size=64M").is_err());
    }

    #[test]
    fn a_tuning_value_out_of_bounds_is_refused_naming_the_option_and_its_bounds() {
        let mut o = Options::new("/unused");
        let (n, v) = parse_tuning("max_memtables=1000").unwrap();
        let err = set_tuning(&mut o, &n, v).unwrap_err().to_string();
        assert!(
            err.contains("max_memtables") && err.contains("2..=64"),
            "{err}"
        );
        assert_eq!(o.max_memtables, Options::new("/unused").max_memtables);
    }
}
