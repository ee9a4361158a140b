//! `sett bench`: populate, random read and iterate, with figures.

use sett::{Db, IterOptions, Options, WriteBatch};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Config {
    dir: Option<PathBuf>,
    valsz: Vec<usize>,
    keys: Vec<u64>,
    writers: usize,
    batch: usize,
    reads: u64,
    readers: usize,
    sync: bool,
    value_threshold: Option<usize>,
    keep: bool,
}

fn list<T: std::str::FromStr>(flag: &str, s: &str) -> Result<Vec<T>, String> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse()
                .map_err(|_| format!("{flag}: `{x}` is not a number"))
        })
        .collect()
}

impl Config {
    /// Arguments for a child run of one value size.
    fn child_args(&self, valsz: usize, keys: u64) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "bench".into(),
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
        ];
        if let Some(d) = &self.dir {
            a.extend(["--dir".into(), d.display().to_string()]);
        }
        if let Some(t) = self.value_threshold {
            a.extend(["--value-threshold".into(), t.to_string()]);
        }
        if self.sync {
            a.push("--sync".into());
        }
        if self.keep {
            a.push("--keep".into());
        }
        a
    }

    pub fn parse(args: &[String]) -> Result<Config, String> {
        let mut c = Config {
            dir: None,
            valsz: vec![128, 4096],
            keys: vec![2_000_000, 250_000],
            writers: 32,
            batch: 1000,
            reads: 200_000,
            readers: 2,
            sync: false,
            value_threshold: None,
            keep: false,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut val = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            let one = |v: String| -> Result<u64, String> { Ok(list::<u64>(flag, &v)?[0]) };
            match flag.as_str() {
                "--dir" => c.dir = Some(PathBuf::from(val()?)),
                "--valsz" => c.valsz = list(flag, &val()?)?,
                "--keys" => c.keys = list(flag, &val()?)?,
                "--writers" => c.writers = one(val()?)? as usize,
                "--batch" => c.batch = one(val()?)? as usize,
                "--reads" => c.reads = one(val()?)?,
                "--readers" => c.readers = one(val()?)? as usize,
                "--value-threshold" => c.value_threshold = Some(one(val()?)? as usize),
                "--sync" => c.sync = true,
                "--keep" => c.keep = true,
                other => return Err(format!("unknown flag {other}\n{}", crate::USAGE)),
            }
        }
        if c.keys.len() != 1 && c.keys.len() != c.valsz.len() {
            return Err("--keys takes one count, or one per value size".into());
        }
        if c.writers == 0 || c.batch == 0 || c.readers == 0 {
            return Err("--writers, --batch and --readers must be at least 1".into());
        }
        Ok(c)
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

/// (current RSS, peak RSS) of this process in bytes, from /proc.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// (apparent bytes, allocated bytes) of the files in `dir`.
fn disk_usage(dir: &std::path::Path) -> (u64, u64) {
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

/// Env var through which a child run hands its table row back to the parent.
const ROW_FILE_ENV: &str = "SETT_BENCH_ROW_FILE";

const TABLE_HEADER: &str = "| value size | keys written | populate keys/s | populate MB/s | random get ns/op (hit rate) | iterate keys-only keys/s | iterate with values keys/s | disk after close (apparent / allocated MiB) | peak RSS MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

pub fn run(c: &Config) -> Result<(), String> {
    println!(
        "sett bench: {} writers x {}-entry batches, {} readers, sync={}",
        c.writers, c.batch, c.readers, c.sync
    );
    if c.valsz.len() == 1 {
        let row = run_size(c, c.valsz[0], c.keys[0])?;
        if let Ok(path) = std::env::var(ROW_FILE_ENV) {
            std::fs::write(&path, &row).map_err(|e| format!("writing {path}: {e}"))?;
        } else {
            println!("\n{TABLE_HEADER}\n{row}");
        }
        return Ok(());
    }
    // One process per value size, so that each peak RSS is its own.
    let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
    let mut rows = Vec::new();
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
        let row = std::fs::read_to_string(&row_file)
            .map_err(|e| format!("reading {}: {e}", row_file.display()))?;
        let _ = std::fs::remove_file(&row_file);
        rows.push(row);
    }
    println!("\n{TABLE_HEADER}");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

fn run_size(c: &Config, valsz: usize, keys: u64) -> Result<String, String> {
    let dir = match &c.dir {
        Some(d) => d.join(format!("vsz{valsz}")),
        None => std::env::temp_dir().join(format!("sett-bench-{}-{valsz}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let row = run_one(c, &dir, valsz, keys).map_err(|e| format!("value size {valsz}: {e}"));
    if !c.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    row
}

fn run_one(
    c: &Config,
    dir: &std::path::Path,
    valsz: usize,
    keys: u64,
) -> Result<String, sett::Error> {
    let mut opts = Options::new(dir);
    opts.sync_writes = c.sync;
    if let Some(t) = c.value_threshold {
        opts.value_threshold = t;
    }
    println!(
        "\n== value size {valsz} B, {keys} keys, value_threshold {} B, dir {}",
        opts.value_threshold,
        dir.display()
    );
    let db = Db::open(opts.clone())?;

    // Populate: keys drawn uniformly at random with replacement, as badger-bench does.
    let written = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let batches = keys.div_ceil(c.batch as u64);
    let next_batch = AtomicU64::new(0);
    let start = Instant::now();
    let result: Result<(), sett::Error> = std::thread::scope(|s| {
        s.spawn(|| {
            let mut last = 0;
            let mut t = Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::park_timeout(Duration::from_millis(100));
                if t.elapsed() >= Duration::from_secs(1) {
                    let n = written.load(Ordering::Relaxed);
                    let (cur, _) = rss();
                    println!(
                        "  [{:>5.1}s] written {n:>10}  {:>9.0} keys/s  RSS {:.0} MiB",
                        start.elapsed().as_secs_f64(),
                        (n - last) as f64 / t.elapsed().as_secs_f64(),
                        mib(cur)
                    );
                    last = n;
                    t = Instant::now();
                }
            }
        });
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
                            rng.fill(&mut value);
                            b.put(bench_key(valsz, k).into_bytes(), value.clone());
                        }
                        let n = b.len() as u64;
                        db.write(b)?;
                        written.fetch_add(n, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        let r = handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or(Err(sett::Error::Poisoned("writer thread panicked".into())))
        });
        done.store(true, Ordering::Relaxed);
        r
    });
    result?;
    let populate = start.elapsed();
    let n = written.load(Ordering::Relaxed);
    let keys_per_s = n as f64 / populate.as_secs_f64();
    let mb_per_s = n as f64 * (valsz + 22) as f64 / populate.as_secs_f64() / 1e6;
    println!(
        "  populate: {n} keys in {:.2}s = {keys_per_s:.0} keys/s ({mb_per_s:.1} MB/s)",
        populate.as_secs_f64()
    );
    println!("  stats after populate: {:?}", db.stats());

    // Random reads: parallel readers, random keys of the same format (about 63% exist).
    let found = AtomicU64::new(0);
    let start = Instant::now();
    let result: Result<(), sett::Error> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..c.readers)
            .map(|r| {
                let (db, found) = (&db, &found);
                s.spawn(move || -> Result<(), sett::Error> {
                    let mut rng = Rng(0xBEEF ^ (r as u64) << 40);
                    let mut hits = 0;
                    for _ in 0..c.reads {
                        let k = bench_key(valsz, rng.next() % keys);
                        if let Some(v) = db.get(k.as_bytes())? {
                            hits += 1;
                            std::hint::black_box(v);
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
    let total_reads = c.reads * c.readers as u64;
    let ns_per_op = start.elapsed().as_nanos() as f64 / total_reads as f64;
    let hit = found.load(Ordering::Relaxed) as f64 / total_reads as f64;
    println!(
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
        }
        std::hint::black_box(bytes);
        Ok((n, n as f64 / start.elapsed().as_secs_f64()))
    };
    let (n_keys, ko) = iterate(true)?;
    let (_, wv) = iterate(false)?;
    println!("  iterate: {n_keys} keys; keys-only {ko:.0} keys/s, with values {wv:.0} keys/s");
    db.close()?;
    drop(db);
    let (apparent, allocated) = disk_usage(dir);
    let (_, peak) = rss();
    println!(
        "  disk after close: {:.1} MiB apparent, {:.1} MiB allocated; peak RSS {:.0} MiB",
        mib(apparent),
        mib(allocated),
        mib(peak)
    );
    Ok(format!(
        "| {valsz} B | {n} | {keys_per_s:.0} | {mb_per_s:.1} | {ns_per_op:.0} ({:.0}%) | {ko:.0} | {wv:.0} | {:.1} / {:.1} | {:.0} |",
        hit * 100.0,
        mib(apparent),
        mib(allocated),
        mib(peak)
    ))
}
