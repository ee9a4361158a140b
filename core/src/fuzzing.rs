//! Drivers for the fuzz targets in `fuzz/` and their stable-Rust replay in
//! `tests/fuzz_replay.rs`: every decoder fed arbitrary bytes, and random
//! operation sequences checked against a model.

/// Feeds arbitrary bytes to every decoder that reads from disk: each must
/// return an error or a value, never panic or loop. `kind` picks the decoder.
pub fn fuzz_decode(kind: FuzzTarget, data: &[u8]) {
    use crate::table::block;
    match kind {
        FuzzTarget::Block => {
            if let Some(b) = block::DecodedBlock::decode(data) {
                for i in 0..b.len() {
                    let _ = (b.key(i), b.value_range(i));
                }
            }
            let _ = block::seek(data, &crate::key::encode(b"k", 1));
            // The same bytes as a stored version-3 block (type byte last).
            if let Ok(contents) = crate::table::codec::decode(data) {
                let _ = block::DecodedBlock::decode(&contents);
            }
        }
        FuzzTarget::Bloom => {
            let _ = crate::table::bloom::may_contain(data, crate::table::bloom::hash(data));
        }
        FuzzTarget::LogRecords => {
            let mut framed = crate::wal::file_header(b"FUZZLOG\0", 1).to_vec();
            framed.extend_from_slice(data);
            let _ = crate::wal::scan(std::path::Path::new("fuzz"), &framed);
        }
        FuzzTarget::Batch => {
            let _ = crate::batch::decode_record(data, true);
        }
        FuzzTarget::Value => {
            let _ = crate::value::decode(data);
        }
        FuzzTarget::VlogEntry => {
            let _ = crate::vlog::check_entry(data);
        }
        FuzzTarget::Manifest => {
            let _ = crate::manifest::decode_edits(data);
        }
        FuzzTarget::Table => fuzz_table(data),
    }
}

/// A whole table file: open (footer, index, filter), verify, walk both ways,
/// seek and point-read the keys the index names.
fn fuzz_table(data: &[u8]) {
    use crate::iter::Source;
    use crate::table::{Table, TableIter};
    use std::sync::Arc;
    let Ok(dir) = tempfile_dir() else { return };
    let path = dir.join("fuzz.sst");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    // A small cache: the meta is pinned, or loaded per read, by the input's size.
    let cache = Arc::new(crate::table::TableCache::new(1 << 20));
    if let Ok(table) = Table::open(&crate::fs::Fs::real(), &path, 1, &cache) {
        let table = Arc::new(table);
        let _ = table.verify();
        let index_keys: Vec<Vec<u8>> = match table.meta() {
            Ok(m) => (0..m.blocks()).map(|i| m.key(i).to_vec()).collect(),
            Err(_) => Vec::new(),
        };
        let probes: Vec<Vec<u8>> = index_keys
            .into_iter()
            .chain([table.smallest().to_vec(), b"k".to_vec()])
            .collect();
        for k in &probes {
            let (uk, _) = crate::key::split(k);
            let _ = table.get(uk, crate::table::bloom::hash(uk), u64::MAX >> 8);
        }
        for reverse in [false, true] {
            let mut it = TableIter::new(table.clone(), reverse);
            let mut steps = 0;
            let mut ok = it.rewind().is_ok();
            while ok && it.valid() && steps < 100_000 {
                let _ = (it.key(), it.value());
                ok = it.next().is_ok();
                steps += 1;
            }
            for k in &probes {
                let _ = it.seek(k).map(|_| it.valid() && !it.key().is_empty());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A private directory under the system temp dir (no tempfile dependency in core).
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sett-fuzz-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The decoders `fuzz_decode` drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuzzTarget {
    Block,
    Bloom,
    LogRecords,
    Batch,
    Value,
    VlogEntry,
    Manifest,
    Table,
}

impl FuzzTarget {
    pub const ALL: [FuzzTarget; 8] = [
        FuzzTarget::Block,
        FuzzTarget::Bloom,
        FuzzTarget::LogRecords,
        FuzzTarget::Batch,
        FuzzTarget::Value,
        FuzzTarget::VlogEntry,
        FuzzTarget::Manifest,
        FuzzTarget::Table,
    ];

    /// The directory name of the target's corpus under fuzz/corpus.
    pub fn name(self) -> &'static str {
        match self {
            FuzzTarget::Block => "block",
            FuzzTarget::Bloom => "bloom",
            FuzzTarget::LogRecords => "log_records",
            FuzzTarget::Batch => "batch",
            FuzzTarget::Value => "value",
            FuzzTarget::VlogEntry => "vlog_entry",
            FuzzTarget::Manifest => "manifest",
            FuzzTarget::Table => "table",
        }
    }
}

/// Runs the operations `data` encodes against a Db with tiny memtables, tables
/// and value-log files (so flushes, compactions, GC and reopens all happen) and
/// against a `BTreeMap`, panicking on the first difference. Each operation is a
/// tag byte followed by its arguments; a short input ends the run.
pub fn fuzz_ops(data: &[u8]) -> u64 {
    use crate::{Db, IterOptions, Options, WriteBatch};
    use std::collections::BTreeMap;

    let Ok(dir) = tempfile_dir() else { return 0 };
    let opts = |dir: &std::path::Path| {
        let mut o = Options::new(dir);
        o.value_threshold = 32;
        o.memtable_size = 4096;
        o.max_memtables = 2;
        o.block_size = 256;
        o.table_size = 4096;
        o.level_base_size = 8 << 10;
        o.level_multiplier = 4;
        o.num_levels = 4;
        o.l0_compaction_trigger = 2;
        o.vlog_file_size = 8 << 10;
        // Every codec on some level, so that flushes and compactions write
        // version-2 and version-3 tables side by side.
        o.compression_per_level = vec![
            crate::Compression::None,
            crate::Compression::Lz4,
            crate::Compression::Zstd,
        ];
        o
    };
    let mut db = Db::open(opts(&dir)).expect("open an empty directory");
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Keys from a small space so that overwrites and deletes hit; values either
    // side of the threshold.
    let key = |b: u8| format!("k{:02}", b % 48).into_bytes();
    let value = |b: u8, n: u8| {
        let len = if b & 1 == 0 {
            (b % 24) as usize
        } else {
            40 + b as usize
        };
        vec![n; len]
    };
    let mut input = data;
    let mut take = |n: usize| -> Option<&[u8]> {
        if input.len() < n {
            return None;
        }
        let (head, rest) = input.split_at(n);
        input = rest;
        Some(head)
    };
    let mut step = 0u8;
    // Reads and scans compared with the model, so that a caller can tell a
    // replay that checked something from one that did not.
    let mut checked = 0u64;
    while let Some(op) = take(1) {
        step = step.wrapping_add(1);
        match op[0] % 10 {
            0..=2 => {
                let Some(a) = take(2) else { break };
                let (k, v) = (key(a[0]), value(a[1], step));
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            3 => {
                let Some(a) = take(1) else { break };
                let k = key(a[0]);
                db.delete(&k).expect("delete");
                model.remove(&k);
            }
            4 => {
                let Some(a) = take(4) else { break };
                let mut batch = WriteBatch::new();
                let mut after = model.clone();
                for pair in a.chunks(2) {
                    let k = key(pair[0]);
                    if pair[1] % 4 == 0 {
                        batch.delete(k.clone());
                        after.remove(&k);
                    } else {
                        let v = value(pair[1], step);
                        batch.put(k.clone(), v.clone());
                        after.insert(k, v);
                    }
                }
                db.write(batch).expect("batch");
                model = after;
            }
            5 => {
                let Some(a) = take(1) else { break };
                let k = key(a[0]);
                assert_eq!(
                    db.get(&k).expect("get"),
                    model.get(&k).cloned(),
                    "get {k:?}"
                );
                checked += 1;
            }
            6 => {
                let Some(a) = take(2) else { break };
                let prefix = if a[1] & 1 == 1 {
                    Some(format!("k{}", a[1] % 5).into_bytes())
                } else {
                    None
                };
                let io = IterOptions {
                    reverse: a[0] & 1 == 1,
                    keys_only: a[0] & 2 == 2,
                    prefix: prefix.clone(),
                    ..IterOptions::default()
                };
                let got: Vec<(Vec<u8>, Vec<u8>)> =
                    db.iter(io).and_then(|it| it.collect()).expect("iterate");
                let mut want: Vec<(Vec<u8>, Vec<u8>)> = model
                    .iter()
                    .filter(|(k, _)| prefix.as_ref().is_none_or(|p| k.starts_with(p)))
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            if a[0] & 2 == 2 { Vec::new() } else { v.clone() },
                        )
                    })
                    .collect();
                if a[0] & 1 == 1 {
                    want.reverse();
                }
                checked += want.len() as u64 + 1;
                if a[0] & 2 == 2 {
                    let keys =
                        |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().map(|p| p.0).collect::<Vec<_>>();
                    assert_eq!(keys(got), keys(want), "keys-only iteration");
                } else {
                    assert_eq!(got, want, "iteration");
                }
            }
            7 => {
                let Some(a) = take(1) else { break };
                let k = key(a[0]);
                let v = value(a[0], step);
                let old = model.get(&k).cloned();
                db.update(|txn| {
                    assert_eq!(txn.get(&k)?, old, "txn read {k:?}");
                    checked += 1;
                    txn.set(&k, &v)
                })
                .expect("update");
                model.insert(k, v);
            }
            8 => {
                let Some(a) = take(1) else { break };
                match a[0] % 3 {
                    0 => db.flush().expect("flush"),
                    1 => db.flatten().expect("flatten"),
                    _ => {
                        db.run_value_log_gc(0.01).expect("value-log gc");
                    }
                }
            }
            _ => {
                db.close().expect("close");
                db = Db::open(opts(&dir)).expect("reopen");
            }
        }
    }
    for (k, v) in &model {
        assert_eq!(
            db.get(k).expect("final get").as_ref(),
            Some(v),
            "final {k:?}"
        );
    }
    let n = db.iter(IterOptions::default()).expect("iter").count();
    assert_eq!(n, model.len(), "final count");
    db.verify().expect("verify");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    checked + model.len() as u64 + 1
}
