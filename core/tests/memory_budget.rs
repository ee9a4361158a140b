//! The memory budget (`Options::cache_size`, issue 16): a database whose
//! table indexes and filters are about four times the budget is read at
//! random and scanned; every read is right, the cache never holds more than
//! its capacity, and the process's anonymous memory grows by no more than the
//! budget, a memtable and a stated overhead. Damage to an index or filter
//! found when it is loaded is a corruption error naming the table and the
//! offset, and the other tables stay readable.

use sett::{Compression, Db, Error, IterOptions, Options};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Tests here measure the process's memory: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const BUDGET: usize = 1 << 20;
/// Keys loaded: with 256-byte blocks and 64 KiB tables their indexes and
/// filters come to 4.5 MiB or so (measured by `meta_bytes`, asserted below);
/// LZ4 blocks hold more entries, so its tables need more keys for as much.
fn keys(c: Compression) -> u32 {
    if c == Compression::None {
        150_000
    } else {
        270_000
    }
}

fn options(dir: &Path, cache_size: usize, c: Compression) -> Options {
    let mut o = Options::new(dir);
    o.cache_size = cache_size;
    // Small blocks and tables: a large index per key, many tables.
    o.block_size = 256;
    o.table_size = 64 << 10;
    o.memtable_size = 64 << 10;
    o.compression = c;
    o.vlog_gc_ratio = 0.0;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("memory-budget/key{i:09}").into_bytes()
}

/// JSON-like, so that LZ4 shrinks the blocks of the compressed run.
fn value(i: u32) -> Vec<u8> {
    format!(r#"{{"id":{i},"user":"user{i}","active":true}}"#).into_bytes()
}

/// Bulk-loads `keys(c)` entries into tables of the last level.
fn load(dir: &Path, c: Compression) {
    let db = Db::open(options(dir, 64 << 20, c)).unwrap();
    let mut l = db.bulk_load().unwrap();
    for i in 0..keys(c) {
        l.add(&key(i), &value(i)).unwrap();
    }
    l.finish().unwrap();
    db.close().unwrap();
}

/// Bytes of all the tables' indexes and filters: a budget large enough
/// pins every one of them at open.
fn meta_bytes(dir: &Path, c: Compression) -> u64 {
    let db = Db::open(options(dir, 256 << 20, c)).unwrap();
    let s = db.stats();
    assert_eq!(s.cache_usage, s.cache_pinned_bytes, "{s:?}");
    db.close().unwrap();
    s.cache_pinned_bytes
}

/// The process's resident anonymous memory (heap and stacks), in bytes.
fn rss_anon() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .expect("RssAnon in /proc/self/status");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Gives freed heap memory back to the system, so that a baseline taken
/// after it is not padded by memory earlier phases freed (which later
/// allocations would reuse without growing the resident set).
fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A small xorshift generator: the same reads every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % u64::from(n)) as u32
    }
}

/// What the run saw at its worst.
struct Run {
    peak_usage: u64,
    capacity: u64,
    peak_growth: u64,
    memtable_bytes: u64,
}

/// Opens `dir` under `BUDGET` and reads it at random and in scans, checking
/// every value and sampling the cache's usage and the process's memory.
fn read_under_budget(dir: &Path, c: Compression) -> Run {
    trim_heap();
    let base = rss_anon();
    let db = Db::open(options(dir, BUDGET, c)).unwrap();
    let mut run = Run {
        peak_usage: 0,
        capacity: 0,
        peak_growth: 0,
        memtable_bytes: 0,
    };
    let mut sample = |db: &Db| {
        let s = db.stats();
        run.capacity = s.cache_capacity;
        run.peak_usage = run.peak_usage.max(s.cache_usage);
        run.memtable_bytes = run.memtable_bytes.max(s.memtable_bytes as u64);
        run.peak_growth = run.peak_growth.max(rss_anon().saturating_sub(base));
        assert!(
            s.cache_usage <= s.cache_capacity,
            "cache holds {} bytes, over its capacity {}",
            s.cache_usage,
            s.cache_capacity
        );
    };
    let n = keys(c);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..40 {
        for _ in 0..500 {
            let i = rng.below(n + n / 10);
            let got = db.get(&key(i)).unwrap();
            let want = (i < n).then(|| value(i));
            assert_eq!(got, want, "key {i}");
        }
        // A scan of 300 entries from a random key, forward or backward.
        let start = rng.below(n);
        let reverse = round % 2 == 1;
        let mut it = db
            .iter(IterOptions {
                reverse,
                ..Default::default()
            })
            .unwrap();
        it.seek(&key(start)).unwrap();
        let mut want = start;
        for _ in 0..300 {
            if !it.valid() {
                break;
            }
            assert_eq!(it.key(), &key(want)[..], "scan from {start}");
            assert_eq!(it.value(), &value(want)[..], "scan from {start}");
            it.advance().unwrap();
            if reverse {
                match want.checked_sub(1) {
                    Some(w) => want = w,
                    None => break,
                }
            } else {
                want += 1;
            }
        }
        drop(it);
        sample(&db);
    }
    let s = db.stats();
    assert!(
        s.cache_index_filter_misses > 100,
        "indexes and filters were loaded again and again: {s:?}"
    );
    db.close().unwrap();
    run
}

/// What the process may grow by beyond the budget and the memtables: the
/// Db's background threads' stacks (a few pages each), the per-table structs
/// and key ranges (about 250 tables, well under 100 KiB), iterators holding
/// one table's index and filter and block while they live, the cache's free
/// list of block pages (1/64 of the budget, at least 64 KiB), and what the
/// allocator keeps of freed memory. Measured at about 0.45 MiB (see the
/// report); without the budget the growth is the full ~4 MiB of indexes and
/// filters.
const OVERHEAD: u64 = 1 << 20;

fn a_database_of_indexes_four_times_the_budget(c: Compression) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    load(dir.path(), c);
    let run = read_under_budget(dir.path(), c);
    let metas = meta_bytes(dir.path(), c);
    assert!(
        metas >= 4 * BUDGET as u64,
        "indexes and filters are {metas} bytes: not 4x the budget"
    );
    eprintln!(
        "{c:?}: indexes+filters {metas} B, budget {BUDGET} B, peak cache usage {} B, \
         peak RssAnon growth {} B, memtables {} B",
        run.peak_usage, run.peak_growth, run.memtable_bytes
    );
    assert_eq!(run.capacity, BUDGET as u64);
    assert!(run.peak_usage > BUDGET as u64 / 2, "the cache was used");
    let allowed = BUDGET as u64 + (64 << 10) + run.memtable_bytes + OVERHEAD;
    assert!(
        run.peak_growth <= allowed,
        "anonymous memory grew by {} bytes, more than the budget {BUDGET} + a memtable + \
         {} memtable bytes + overhead {OVERHEAD} = {allowed}",
        run.peak_growth,
        run.memtable_bytes
    );
}

#[test]
fn random_reads_and_scans_stay_within_the_budget_when_indexes_are_four_times_it() {
    a_database_of_indexes_four_times_the_budget(Compression::None);
}

#[test]
fn compressed_tables_keep_indexes_and_decompressed_blocks_within_the_budget() {
    a_database_of_indexes_four_times_the_budget(Compression::Lz4);
}

/// The tables of `dir`, by id.
fn tables(dir: &Path) -> Vec<PathBuf> {
    let mut t: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    t.sort();
    t
}

/// (offset, len) of the index (`which` 0) or filter (1) block, from the footer.
fn block_of(path: &Path, which: usize) -> (u64, u32) {
    let bytes = std::fs::read(path).unwrap();
    let f = &bytes[bytes.len() - 56..];
    let at = which * 12;
    let off = u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
    let len = u32::from_le_bytes(f[at + 8..at + 12].try_into().unwrap());
    (off, len)
}

/// Flips a byte in the middle of `path`'s block at (off, len), in place (the
/// open Db's mapping sees it).
fn damage(path: &Path, (off, len): (u64, u32)) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .open(path)
        .unwrap();
    let at = off + u64::from(len) / 2;
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x5A], at).unwrap();
}

fn assert_corruption_at(e: Error, path: &Path, off: u64) {
    match &e {
        Error::Corruption { file, offset, .. } => {
            assert_eq!((file.as_path(), *offset), (path, off), "{e}")
        }
        other => panic!("not a corruption error: {other}"),
    }
}

#[test]
fn a_damaged_index_or_filter_found_at_load_is_corruption_and_other_tables_stay_readable() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    load(dir.path(), Compression::None);
    let n = keys(Compression::None);
    let t = tables(dir.path());
    assert!(t.len() > 50, "{} tables", t.len());
    // The last table holds the last keys; tables are opened in id order and
    // pin until half the budget is taken, so the last ones are not pinned:
    // their filter is first read, and checked, at their first lookup.
    let last = t.last().unwrap().clone();
    let filter = block_of(&last, 1);
    damage(&last, filter);
    let db = Db::open(options(dir.path(), BUDGET, Compression::None)).unwrap();
    assert_corruption_at(db.get(&key(n - 1)).unwrap_err(), &last, filter.0);

    // An index damaged after open (open checked it) is found when it is next
    // loaded: that table is never read before, so its first lookup loads it.
    let second = t[t.len() - 2].clone();
    let index = block_of(&second, 0);
    damage(&second, index);
    let in_second = (0..n)
        .rev()
        .find(|&i| {
            // The first key below the last table's range: a read of it that
            // is not a corruption of `last` comes from `second`.
            matches!(db.get(&key(i)), Err(Error::Corruption { ref file, .. }) if *file == second)
        })
        .expect("a key of the second-to-last table");
    assert_corruption_at(db.get(&key(in_second)).unwrap_err(), &second, index.0);

    // Every other table still answers, with the right values.
    for i in (0..in_second.saturating_sub(2000)).step_by(37) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    let mut it = db.iter(IterOptions::default()).unwrap();
    it.seek(&key(0)).unwrap();
    for i in 0..5000 {
        assert!(it.valid());
        assert_eq!(it.key(), &key(i)[..]);
        it.advance().unwrap();
    }
    assert!(db.stats().cache_usage <= BUDGET as u64);
    db.close().unwrap();
}

#[test]
fn readers_in_flight_keep_what_eviction_takes_from_the_cache() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let c = Compression::Lz4;
    load(dir.path(), c);
    let n = keys(c);
    let db = std::sync::Arc::new(Db::open(options(dir.path(), BUDGET, c)).unwrap());
    // Four threads read and scan at once: each one's index, filter and
    // blocks are evicted by the others' loads while it still uses them.
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ (t + 1));
                for _ in 0..30 {
                    let start = rng.below(n - 200);
                    let mut it = db.iter(IterOptions::default()).unwrap();
                    it.seek(&key(start)).unwrap();
                    for i in start..start + 200 {
                        assert_eq!(it.key(), &key(i)[..]);
                        assert_eq!(it.value(), &value(i)[..]);
                        // A get between the steps loads other tables' metas.
                        let j = rng.below(n);
                        assert_eq!(db.get(&key(j)).unwrap(), Some(value(j)));
                        it.advance().unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = db.stats();
    assert!(s.cache_usage <= s.cache_capacity, "{s:?}");
    assert!(
        s.cache_index_filter_misses > 1000,
        "evictions happened: {s:?}"
    );
    db.close().unwrap();
}

/// True if `dir` is on a tmpfs. Pages of a tmpfs file mapped into the process
/// count as RssShmem, not RssFile: the "maps none of their pages" tests below
/// cannot see a mapping there, and are skipped instead of passing.
fn on_tmpfs(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statfs only writes the struct, which is zeroed plain data owned
    // here; the path is a NUL-terminated string that outlives the call.
    let (rc, fs) = unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        (libc::statfs(path.as_ptr(), &mut fs), fs)
    };
    assert_eq!(rc, 0, "statfs {}", dir.display());
    #[allow(clippy::unnecessary_cast)]
    let kind = fs.f_type as i64;
    kind == TMPFS_MAGIC
}

/// The process's resident pages of mapped files (RssFile), in bytes.
fn rss_file() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("RssFile:"))
        .expect("RssFile in /proc/self/status");
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn point_reads_and_scans_map_no_table_or_value_log_pages_into_the_process() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    if on_tmpfs(dir.path()) {
        sett_test_skip::skip(
            "core-memory_budget-reads_map_no_pages-tmpfs",
            "the temp dir is a tmpfs: RssFile cannot show mapped pages",
        );
        return;
    }
    let n = 6000u32;
    let big = |i: u32| -> Vec<u8> { (0..4096u32).map(|j| (i ^ j) as u8).collect() };
    let mut o = Options::new(dir.path());
    o.vlog_gc_ratio = 0.0;
    o.memtable_size = 1 << 20;
    o.vlog_file_size = 4 << 20;
    {
        let db = Db::open(o.clone()).unwrap();
        for i in 0..n {
            db.put(&key(i), &big(i)).unwrap();
            db.put(&key(i + n), &value(i)).unwrap();
        }
        db.flatten().unwrap();
        db.close().unwrap();
    }
    let db = Db::open(o).unwrap();
    // Wait out what the open may have started (it would read its inputs
    // through the mapping, which this test is not about).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while {
        let s = db.stats();
        s.compactions_pending + s.compactions_running > 0 || s.immutable_memtables > 0
    } {
        assert!(
            std::time::Instant::now() < deadline,
            "compactions never settled"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let base = rss_file();
    let mut rng = Rng(7);
    for _ in 0..2 * n {
        let i = rng.below(n);
        assert_eq!(db.get(&key(i)).unwrap(), Some(big(i)), "key {i}");
        assert_eq!(
            db.get(&key(i + n)).unwrap(),
            Some(value(i)),
            "key {}",
            i + n
        );
    }
    for reverse in [false, true] {
        let it = db
            .iter(IterOptions {
                reverse,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(it.count(), 2 * n as usize);
    }
    let grown = rss_file().saturating_sub(base);
    let data: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    eprintln!("data {data} B, RssFile grew by {grown} B");
    assert!(data > 16 << 20, "only {data} bytes of data");
    // Code pages of the test binary and libraries first run here may come in;
    // the data read is sixteen times that.
    assert!(
        grown < 1 << 20,
        "reads mapped {grown} bytes of the database's files into the process"
    );
    db.close().unwrap();
}

/// Tables' indexes and filters (4.5 MiB here) are read by positional reads,
/// at open when the cache can pin them and on a read when it cannot: none of
/// their pages are mapped into the process (through the mapping, the 128 B
/// large run's read phase held 88 MiB of them beside the budget; 13 MB here).
#[test]
fn loading_indexes_and_filters_maps_none_of_their_pages_into_the_process() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    if on_tmpfs(dir.path()) {
        sett_test_skip::skip(
            "core-memory_budget-index_loads_map_no_pages-tmpfs",
            "the temp dir is a tmpfs: RssFile cannot show mapped pages",
        );
        return;
    }
    load(dir.path(), Compression::None);
    // Pinned at open.
    let base = rss_file();
    let db = Db::open(options(dir.path(), 64 << 20, Compression::None)).unwrap();
    let pinned = db.stats().cache_pinned_bytes;
    let at_open = rss_file().saturating_sub(base);
    db.close().unwrap();
    assert!(pinned > 4 << 20, "only {pinned} bytes pinned");
    // Loaded on demand under a budget a quarter of them (open parses each
    // index too, for the table's key range).
    let base = rss_file();
    let db = Db::open(options(dir.path(), BUDGET, Compression::None)).unwrap();
    let mut rng = Rng(11);
    for _ in 0..20_000 {
        let i = rng.below(keys(Compression::None));
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    let on_reads = rss_file().saturating_sub(base);
    let loads = db.stats().cache_index_filter_misses;
    db.close().unwrap();
    eprintln!("RssFile grew by {at_open} B at open, {on_reads} B over open and reads");
    assert!(
        loads > 1000,
        "only {loads} indexes and filters loaded by reads"
    );
    assert!(at_open < 1 << 20, "open mapped {at_open} bytes of tables");
    assert!(
        on_reads < 1 << 20,
        "open and reads mapped {on_reads} bytes of tables"
    );
}

/// Page-sized data blocks under a budget a quarter of the tables, read at
/// random by two threads at a time, new threads every round (as a Go host's
/// calls move between OS threads, each with its own allocator arena). Blocks
/// are allocated by the thread that misses and freed by the one that evicts;
/// as plain allocations the arenas kept the freed blocks, and the process's
/// anonymous memory grew by 1.7-2x the budget (7.3-8.3 MB for 4 MiB;
/// docs/memory-budget.md). From the cache's page
/// pool, a miss reuses the page an eviction gave back (4.35 MB).
#[test]
fn random_reads_from_changing_threads_keep_data_blocks_within_the_budget() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    const BLOCK_BUDGET: usize = 4 << 20;
    const N: u32 = 140_000;
    let dir = tempfile::tempdir().unwrap();
    let opts = |cache_size| {
        let mut o = Options::new(dir.path());
        o.cache_size = cache_size;
        o.table_size = 1 << 20;
        o.memtable_size = 1 << 20;
        o.vlog_gc_ratio = 0.0;
        o
    };
    let long = |i: u32| -> Vec<u8> {
        let mut v = value(i);
        v.resize(100, b'.');
        v
    };
    {
        let db = Db::open(opts(64 << 20)).unwrap();
        let mut l = db.bulk_load().unwrap();
        for i in 0..N {
            l.add(&key(i), &long(i)).unwrap();
        }
        l.finish().unwrap();
        db.close().unwrap();
    }
    let data: u64 = tables(dir.path())
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        data > 4 * BLOCK_BUDGET as u64,
        "tables are {data} bytes: not 4x the budget"
    );
    trim_heap();
    let base = rss_anon();
    let db = std::sync::Arc::new(Db::open(opts(BLOCK_BUDGET)).unwrap());
    let (mut peak_growth, mut memtables) = (0u64, 0u64);
    for round in 0..24u64 {
        let readers: Vec<_> = (0..2u64)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (round * 2 + t + 1));
                    for _ in 0..4000 {
                        let i = rng.below(N);
                        assert_eq!(db.get(&key(i)).unwrap(), Some(long(i)), "key {i}");
                    }
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        let s = db.stats();
        assert!(s.cache_usage <= s.cache_capacity, "{s:?}");
        memtables = memtables.max(s.memtable_bytes as u64);
        peak_growth = peak_growth.max(rss_anon().saturating_sub(base));
    }
    let s = db.stats();
    eprintln!(
        "tables {data} B, budget {BLOCK_BUDGET} B, cache usage {} B, data misses {}, \
         peak RssAnon growth {peak_growth} B",
        s.cache_usage, s.cache_data_misses
    );
    assert!(
        s.cache_data_misses > 4 * (BLOCK_BUDGET as u64 / 4096),
        "the cache turned over several times: {s:?}"
    );
    let allowed = BLOCK_BUDGET as u64 + memtables + OVERHEAD;
    assert!(
        peak_growth <= allowed,
        "anonymous memory grew by {peak_growth} bytes, more than the budget {BLOCK_BUDGET} + \
         {memtables} memtable bytes + overhead {OVERHEAD} = {allowed}"
    );
    db.close().unwrap();
}
