//! A transaction history checker in the manner of Jepsen's Elle (list-append):
//! clients on several threads run transactions that read lists and append
//! unique elements to them, on a few keys; every committed transaction's
//! observations are recorded, and the history is checked:
//!
//! - every committed append is in its key's final list exactly once, in one
//!   place; no aborted append is anywhere;
//! - every list a transaction read is a prefix of the final list;
//! - the graph of write-write, write-read and read-write (anti-)dependencies
//!   between committed transactions has no cycle: the history is serializable.
//!
//! HISTORY_TXNS sets the transactions per client (make stress runs more).

use sett::{Db, Error, Options};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

const KEYS: u64 = 5;
const CLIENTS: u64 = 4;

#[derive(Debug, Clone)]
enum Op {
    /// Read key, observed this list.
    Read(u64, Vec<u64>),
    /// Appended element to key, after observing this list (its own read).
    Append(u64, u64, Vec<u64>),
}

#[derive(Debug)]
struct Txn {
    id: usize,
    ops: Vec<Op>,
}

fn key(k: u64) -> Vec<u8> {
    format!("list{k}").into_bytes()
}

fn decode(v: Option<Vec<u8>>) -> Vec<u64> {
    v.map(|v| {
        v.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect()
    })
    .unwrap_or_default()
}

fn encode(list: &[u64]) -> Vec<u8> {
    list.iter().flat_map(|e| e.to_le_bytes()).collect()
}

/// Runs one client: returns its committed transactions and aborted elements.
fn client(db: &Db, c: u64, txns: u64) -> (Vec<Vec<Op>>, Vec<u64>) {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (c + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut committed, mut aborted) = (Vec::new(), Vec::new());
    for t in 0..txns {
        let mut txn = db.begin(true).expect("begin");
        let mut ops = Vec::new();
        let mut appended = Vec::new();
        for i in 0..1 + next() % 4 {
            let k = next() % KEYS;
            let seen = decode(txn.get(&key(k)).expect("txn get"));
            if next() % 2 == 0 {
                ops.push(Op::Read(k, seen));
            } else {
                // Unique element: client, transaction, position.
                let e = (c << 40) | (t << 8) | i;
                let mut list = seen.clone();
                list.push(e);
                txn.set(&key(k), &encode(&list)).expect("txn set");
                ops.push(Op::Append(k, e, seen));
                appended.push(e);
            }
        }
        match txn.commit() {
            Ok(()) => committed.push(ops),
            Err(Error::Conflict) => aborted.extend(appended),
            Err(e) => panic!("client {c}: commit failed: {e}"),
        }
    }
    (committed, aborted)
}

fn txns_per_client() -> u64 {
    std::env::var("HISTORY_TXNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
}

/// The checks of the module docs; returns the number of dependency edges.
fn check(txns: &[Txn], aborted: &HashSet<u64>, fin: &HashMap<u64, Vec<u64>>) -> usize {
    // Where each element sits in its key's final list, and who appended it.
    let mut pos: HashMap<(u64, u64), usize> = HashMap::new();
    for (&k, list) in fin {
        for (i, &e) in list.iter().enumerate() {
            assert!(
                pos.insert((k, e), i).is_none(),
                "element {e} is twice in list {k}: {list:?}"
            );
            assert!(!aborted.contains(&e), "aborted append {e} is in list {k}");
        }
    }
    let mut writer: HashMap<(u64, u64), usize> = HashMap::new();
    for t in txns {
        for op in &t.ops {
            if let Op::Append(k, e, _) = op {
                assert!(
                    pos.contains_key(&(*k, *e)),
                    "committed append {e} to {k} (txn {}) is not in the final list",
                    t.id
                );
                writer.insert((*k, *e), t.id);
            }
        }
    }
    let is_prefix = |k: u64, seen: &[u64]| fin.get(&k).is_some_and(|f| f.starts_with(seen));
    let mut edges: Vec<HashSet<usize>> = vec![HashSet::new(); txns.len()];
    // Appends of one key in final-list order: each writer before the next.
    for (&k, list) in fin {
        for w in list.windows(2) {
            let (a, b) = (writer[&(k, w[0])], writer[&(k, w[1])]);
            if a != b {
                edges[a].insert(b);
            }
        }
    }
    for t in txns {
        // What a transaction saw of each key before its own appends to it.
        let mut own: HashSet<u64> = HashSet::new();
        for op in &t.ops {
            let (k, seen, appended) = match op {
                Op::Read(k, seen) => (*k, seen, None),
                Op::Append(k, e, seen) => (*k, seen, Some(*e)),
            };
            let external: Vec<u64> = seen
                .iter()
                .copied()
                .filter(|e| writer.get(&(k, *e)) != Some(&t.id))
                .collect();
            assert!(
                is_prefix(k, seen),
                "txn {} read {seen:?} of list {k}, not a prefix of its final {:?}",
                t.id,
                fin.get(&k)
            );
            if !own.contains(&k) {
                // wr: the writer of the last element seen comes before.
                if let Some(last) = external.last() {
                    let w = writer[&(k, *last)];
                    if w != t.id {
                        edges[w].insert(t.id);
                    }
                }
                // rw: the writer of the next element did not see this one's read.
                if let Some(next) = fin[&k].get(external.len()) {
                    let w = writer[&(k, *next)];
                    if w != t.id {
                        edges[t.id].insert(w);
                    }
                }
            }
            if let Some(e) = appended {
                assert_eq!(
                    pos[&(k, e)],
                    seen.len(),
                    "txn {} appended {e} after seeing {} elements of list {k}, but it sits elsewhere",
                    t.id,
                    seen.len()
                );
                own.insert(k);
            }
        }
    }
    // Kahn: a cycle leaves transactions with incoming edges.
    let mut indeg = vec![0usize; txns.len()];
    for out in &edges {
        for &b in out {
            indeg[b] += 1;
        }
    }
    let mut queue: VecDeque<usize> = (0..txns.len()).filter(|&i| indeg[i] == 0).collect();
    let mut done = 0;
    while let Some(a) = queue.pop_front() {
        done += 1;
        for &b in &edges[a] {
            indeg[b] -= 1;
            if indeg[b] == 0 {
                queue.push_back(b);
            }
        }
    }
    let cyclic: Vec<usize> = (0..txns.len()).filter(|&i| indeg[i] > 0).take(6).collect();
    assert_eq!(
        done,
        txns.len(),
        "the history is not serializable: a dependency cycle among transactions {cyclic:?}: {:?}",
        cyclic.iter().map(|&i| &txns[i].ops).collect::<Vec<_>>()
    );
    edges.iter().map(HashSet::len).sum()
}

#[test]
fn concurrent_list_append_transactions_form_a_serializable_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = Options::new(dir.path());
    // Small memtables: transactions span flushes and compactions.
    o.memtable_size = 16 << 10;
    o.value_threshold = 64;
    let db = Arc::new(Db::open(o).expect("open"));
    let per = txns_per_client();
    let results: Vec<(Vec<Vec<Op>>, Vec<u64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let db = db.clone();
                s.spawn(move || client(&db, c, per))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    let mut txns = Vec::new();
    let mut aborted = HashSet::new();
    for (committed, ab) in results {
        for ops in committed {
            txns.push(Txn {
                id: txns.len(),
                ops,
            });
        }
        aborted.extend(ab);
    }
    let fin: HashMap<u64, Vec<u64>> = (0..KEYS)
        .map(|k| (k, decode(db.get(&key(k)).expect("final read"))))
        .collect();
    let edges = check(&txns, &aborted, &fin);
    let appended: usize = fin.values().map(Vec::len).sum();
    println!(
        "HISTORY: {} transactions committed, {} aborted appends, {appended} elements appended, {edges} dependency edges, 0 cycles",
        txns.len(),
        aborted.len()
    );
    assert!(
        txns.len() as u64 > per && appended > 0 && edges > 0,
        "too little happened to check"
    );
}

#[test]
fn the_checker_finds_a_lost_update() {
    // Two transactions both saw [] and appended: the final list keeps one.
    let txns = vec![
        Txn {
            id: 0,
            ops: vec![Op::Append(0, 1, vec![])],
        },
        Txn {
            id: 1,
            ops: vec![Op::Append(0, 2, vec![])],
        },
    ];
    let fin = HashMap::from([(0, vec![2])]);
    let caught = std::panic::catch_unwind(|| check(&txns, &HashSet::new(), &fin));
    assert!(caught.is_err(), "a lost append passed the checker");
}

#[test]
fn the_checker_finds_a_write_skew_cycle() {
    // T0 read list 1 empty and appended to 0; T1 read list 0 empty and
    // appended to 1: each must precede the other.
    let txns = vec![
        Txn {
            id: 0,
            ops: vec![Op::Read(1, vec![]), Op::Append(0, 10, vec![])],
        },
        Txn {
            id: 1,
            ops: vec![Op::Read(0, vec![]), Op::Append(1, 20, vec![])],
        },
    ];
    let fin = HashMap::from([(0, vec![10]), (1, vec![20])]);
    let caught = std::panic::catch_unwind(|| check(&txns, &HashSet::new(), &fin));
    assert!(caught.is_err(), "a write-skew cycle passed the checker");
}
