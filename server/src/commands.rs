//! The commands: parsing their arguments, running them on the Db, and the
//! error replies a client gets for bad input. Everything here blocks (the
//! engine is synchronous); the connection loop runs it on tokio's blocking pool.
//!
//! Keys are stored as the key's 2-byte big-endian hash slot followed by the
//! key, in standalone mode too: a slot is then a key prefix (moving a slot is a
//! prefix scan), empty keys are possible (sett refuses an empty key), and a
//! standalone directory can later serve a cluster node unchanged.
//!
//! TTLs are sett's: whole unix seconds, stored with each entry. `PEXPIRE` and
//! `SET ... PX` round up to the next second; `PTTL` is the time left to that
//! second. Commands that rewrite a value but keep its TTL (INCR, `SET
//! KEEPTTL`, EXPIRE's siblings) store the seconds left, so an expiry can move
//! later by under a second when a second boundary passes during the command.

use crate::cluster::{key_slot, Cluster, Topology};
use crate::resp::Reply;
use sett::{Db, IterOptions, PutOptions, Txn, WriteBatch};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Durability of acknowledged writes, as Redis's `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Fsync {
    /// Every write is fsynced (group-committed with concurrent ones) before its reply.
    Always,
    /// Writes are fsynced by a timer once a second.
    Everysec,
    /// The OS writes back when it likes; a process crash loses nothing, a machine crash may.
    No,
}

impl Fsync {
    fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::Everysec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// Settings the commands need to see.
#[derive(Debug, Clone)]
pub struct Settings {
    pub requirepass: Option<Vec<u8>>,
    pub fsync: Fsync,
    pub max_clients: usize,
    pub max_bulk: usize,
    pub max_args: usize,
    pub timeout_secs: u64,
    pub bind: String,
    pub port: u16,
    pub dir: String,
}

/// Counters for INFO.
#[derive(Debug, Default)]
pub struct Counters {
    pub clients: AtomicUsize,
    pub connections: AtomicU64,
    pub rejected: AtomicU64,
    pub commands: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub protocol_errors: AtomicU64,
    /// fsyncs made by the everysec timer.
    pub background_syncs: AtomicU64,
}

/// SCAN cursors: a number for each place a scan stopped, because clients
/// parse the cursor as an integer and a key does not fit one. The oldest are
/// forgotten past `MAX_CURSORS` (a scan resumed from one gets an error).
#[derive(Debug, Default)]
pub struct Cursors {
    next: u64,
    keys: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

const MAX_CURSORS: usize = 16384;

impl Cursors {
    fn put(&mut self, after: Vec<u8>) -> u64 {
        self.next = self.next.wrapping_add(1).max(1);
        let id = self.next;
        if self.order.len() >= MAX_CURSORS {
            if let Some(old) = self.order.pop_front() {
                self.keys.remove(&old);
            }
        }
        self.keys.insert(id, after);
        self.order.push_back(id);
        id
    }
}

/// State shared by every connection.
pub struct Shared {
    pub db: Db,
    pub settings: Settings,
    pub cluster: Option<Cluster>,
    pub counters: Counters,
    pub cursors: Mutex<Cursors>,
    pub started: Instant,
    /// Set by SHUTDOWN; the server loop watches it.
    pub shutdown: tokio::sync::watch::Sender<bool>,
}

/// What one connection carries between commands.
#[derive(Debug, Default)]
pub struct Conn {
    pub id: u64,
    pub name: Option<Vec<u8>>,
    pub authed: bool,
    pub resp3: bool,
    /// Close after the replies so far are written (QUIT, SHUTDOWN).
    pub close: bool,
}

/// A command's entry in COMMAND's table: what clients read to find its keys.
struct Spec {
    name: &'static str,
    /// Positive: exactly that many arguments (name included); negative: at least |n|.
    arity: i32,
    flags: &'static [&'static str],
    first_key: i32,
    last_key: i32,
    step: i32,
}

const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    first_key: i32,
    last_key: i32,
    step: i32,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        first_key,
        last_key,
        step,
    }
}

const W: &[&str] = &["write"];
const R: &[&str] = &["readonly", "fast"];
const A: &[&str] = &["fast", "stale", "loading"];
const NOAUTH: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];

static COMMANDS: &[Spec] = &[
    spec("get", 2, R, 1, 1, 1),
    spec("set", -3, W, 1, 1, 1),
    spec("mget", -2, R, 1, -1, 1),
    spec("mset", -3, W, 1, -1, 2),
    spec("del", -2, W, 1, -1, 1),
    spec("unlink", -2, W, 1, -1, 1),
    spec("exists", -2, R, 1, -1, 1),
    spec("type", 2, R, 1, 1, 1),
    spec("incr", 2, W, 1, 1, 1),
    spec("incrby", 3, W, 1, 1, 1),
    spec("decr", 2, W, 1, 1, 1),
    spec("decrby", 3, W, 1, 1, 1),
    spec("expire", -3, W, 1, 1, 1),
    spec("pexpire", -3, W, 1, 1, 1),
    spec("ttl", 2, R, 1, 1, 1),
    spec("pttl", 2, R, 1, 1, 1),
    spec("persist", 2, W, 1, 1, 1),
    spec("scan", -2, &["readonly"], 0, 0, 0),
    spec("dbsize", 1, &["readonly"], 0, 0, 0),
    spec("flushdb", -1, W, 0, 0, 0),
    spec("flushall", -1, W, 0, 0, 0),
    spec("select", 2, A, 0, 0, 0),
    spec("ping", -1, A, 0, 0, 0),
    spec("echo", 2, A, 0, 0, 0),
    spec("auth", -2, NOAUTH, 0, 0, 0),
    spec("hello", -1, NOAUTH, 0, 0, 0),
    spec("client", -2, A, 0, 0, 0),
    spec("command", -1, A, 0, 0, 0),
    spec("info", -1, A, 0, 0, 0),
    spec("config", -2, A, 0, 0, 0),
    spec("quit", -1, NOAUTH, 0, 0, 0),
    spec("shutdown", -1, &["noscript", "loading", "stale"], 0, 0, 0),
    spec("cluster", -2, A, 0, 0, 0),
    spec("readonly", 1, A, 0, 0, 0),
    spec("readwrite", 1, A, 0, 0, 0),
];

fn find(name: &str) -> Option<&'static Spec> {
    COMMANDS.iter().find(|s| s.name == name)
}

/// The positions of `args`' keys per `spec` (first, last, step; last < 0 counts from the end).
fn key_positions(spec: &Spec, argc: usize) -> impl Iterator<Item = usize> {
    let (first, step) = (spec.first_key.max(0) as usize, spec.step.max(1) as usize);
    let last = if spec.last_key < 0 {
        argc as i64 + i64::from(spec.last_key)
    } else {
        i64::from(spec.last_key)
    };
    let last = if first == 0 { 0 } else { last.max(0) as usize };
    (first..=last)
        .step_by(step)
        .filter(move |&i| i > 0 && i < argc)
}

/// The key as stored: its slot, big-endian, then the key.
fn stored(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 2);
    k.extend_from_slice(&key_slot(key).to_be_bytes());
    k.extend_from_slice(key);
    k
}

type Res = std::result::Result<Reply, sett::Error>;

fn engine_error(cmd: &str, e: &sett::Error) -> Reply {
    match e {
        // The stored key carries 2 slot bytes the client did not send.
        sett::Error::TooBig {
            what: "key",
            len,
            max,
        } => Reply::err(format!(
            "key of {} bytes is over the limit of {}",
            len.saturating_sub(2),
            max.saturating_sub(2)
        )),
        sett::Error::TooBig { what, len, max } => {
            Reply::err(format!("{what} of {len} bytes is over the limit of {max}"))
        }
        sett::Error::Conflict => Reply::err(format!(
            "'{cmd}' conflicted with other writes too often; retry"
        )),
        other => Reply::err(format!("'{cmd}' failed in the storage engine: {other}")),
    }
}

fn syntax() -> Reply {
    Reply::err("syntax error")
}

fn not_int() -> Reply {
    Reply::err("value is not an integer or out of range")
}

/// Redis's strict integer syntax: optional '-', digits, no leading zero, no spaces.
fn parse_i64(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 1 && digits.starts_with('0') || digits.starts_with('+') {
        return None;
    }
    s.parse().ok()
}

fn upper(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_ascii_uppercase()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What is left of an expiry (unix seconds, 0 = none) as a TTL to store again.
fn keep_ttl(expires_at: u64, now: u64) -> Option<Duration> {
    (expires_at != 0).then(|| Duration::from_secs(expires_at.saturating_sub(now).max(1)))
}

/// Glob matching as Redis's MATCH and CONFIG GET use: `*`, `?`, `[...]` with
/// ranges and `^`, and `\` escapes.
pub fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' => {
                    if let Some((ok, next)) = class(pat, p, s[i]) {
                        if ok {
                            p = next;
                            i += 1;
                            continue;
                        }
                    }
                }
                b'\\' if p + 1 < pat.len() && pat[p + 1] == s[i] => {
                    p += 2;
                    i += 1;
                    continue;
                }
                b'\\' if p + 1 < pat.len() => {}
                c if c == s[i] => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
        }
        // Mismatch: let the last star take one more character.
        match star {
            Some((sp, si)) => {
                p = sp + 1;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            None => return false,
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

/// Whether `c` is in the class starting at `pat[p] == '['`, and the index after it.
fn class(pat: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pat.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let &x = pat.get(j)?;
        if x == b']' {
            return Some((hit != negate, j + 1));
        }
        let x = if x == b'\\' {
            j += 1;
            *pat.get(j)?
        } else {
            x
        };
        if pat.get(j + 1) == Some(&b'-') && pat.get(j + 2).is_some_and(|&e| e != b']') {
            let e = pat[j + 2];
            let (lo, hi) = if x <= e { (x, e) } else { (e, x) };
            hit |= (lo..=hi).contains(&c);
            j += 3;
        } else {
            hit |= x == c;
            j += 1;
        }
    }
}

/// Runs one command. Bad input gets an error reply; nothing here panics on it.
pub fn execute(sh: &Shared, conn: &mut Conn, args: Vec<Vec<u8>>) -> Reply {
    let Some(first) = args.first() else {
        return Reply::Silent;
    };
    sh.counters.commands.fetch_add(1, Ordering::Relaxed);
    let name = String::from_utf8_lossy(first).to_ascii_lowercase();
    let Some(spec) = find(&name) else {
        let mut shown = String::new();
        for a in args.iter().skip(1).take(8) {
            shown.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
        }
        return Reply::err(format!(
            "unknown command '{}', with args beginning with: {shown}",
            String::from_utf8_lossy(first)
        ));
    };
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        return Reply::err(format!("wrong number of arguments for '{name}' command"));
    }
    if sh.settings.requirepass.is_some() && !conn.authed && !spec.flags.contains(&"no_auth") {
        return Reply::Error("NOAUTH Authentication required.".into());
    }
    if let Some(cl) = &sh.cluster {
        if let Some(r) = route(&cl.topology(), spec, &args) {
            return r;
        }
    }
    match run(sh, conn, &name, &args) {
        Ok(r) => r,
        Err(e) => engine_error(&name, &e),
    }
}

/// In cluster mode: `-CROSSSLOT` if the keys span slots, `-MOVED` if another
/// node serves their slot, `-CLUSTERDOWN` if none does; `None` to run here.
fn route(topo: &Topology, spec: &Spec, args: &[Vec<u8>]) -> Option<Reply> {
    let mut slot = None;
    for i in key_positions(spec, args.len()) {
        let s = key_slot(&args[i]);
        match slot {
            None => slot = Some(s),
            Some(prev) if prev != s => {
                return Some(Reply::Error(
                    "CROSSSLOT Keys in request don't hash to the same slot".into(),
                ))
            }
            Some(_) => {}
        }
    }
    let slot = slot?;
    if topo.is_mine(slot) {
        return None;
    }
    Some(match topo.owner(slot) {
        Some(n) => Reply::Error(format!("MOVED {slot} {}:{}", n.ip, n.port)),
        None => Reply::Error(format!("CLUSTERDOWN Hash slot {slot} not served")),
    })
}

fn run(sh: &Shared, conn: &mut Conn, name: &str, args: &[Vec<u8>]) -> Res {
    let db = &sh.db;
    Ok(match name {
        "get" => match db.get(&stored(&args[1]))? {
            Some(v) => {
                sh.counters.hits.fetch_add(1, Ordering::Relaxed);
                Reply::Bulk(v)
            }
            None => {
                sh.counters.misses.fetch_add(1, Ordering::Relaxed);
                Reply::Nil
            }
        },
        "set" => return set(db, args),
        "mget" => {
            let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            Reply::Array(
                db.get_many(&refs)?
                    .into_iter()
                    .map(|v| v.map_or(Reply::Nil, Reply::Bulk))
                    .collect(),
            )
        }
        "mset" => {
            if args.len() % 2 != 1 {
                return Ok(Reply::err("wrong number of arguments for 'mset' command"));
            }
            let mut batch = WriteBatch::new();
            for kv in args[1..].chunks_exact(2) {
                batch.put(stored(&kv[0]), kv[1].clone());
            }
            db.write(batch)?;
            Reply::Status("OK")
        }
        "del" | "unlink" => {
            let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
            let n = db.update(|txn| {
                let mut n = 0;
                for k in &keys {
                    if txn.get(k)?.is_some() {
                        txn.delete(k)?;
                        n += 1;
                    }
                }
                Ok(n)
            })?;
            Reply::Int(n)
        }
        "exists" => {
            let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            Reply::Int(db.get_many(&refs)?.iter().filter(|v| v.is_some()).count() as i64)
        }
        "type" => Reply::Status(if db.get(&stored(&args[1]))?.is_some() {
            "string"
        } else {
            "none"
        }),
        "incr" | "decr" | "incrby" | "decrby" => {
            let by = match args.get(2) {
                None => 1,
                Some(b) => match parse_i64(b) {
                    Some(n) => n,
                    None => return Ok(not_int()),
                },
            };
            let by = if name.starts_with("decr") {
                match by.checked_neg() {
                    Some(n) => n,
                    None => return Ok(Reply::err("decrement would overflow")),
                }
            } else {
                by
            };
            return incr(db, &stored(&args[1]), by);
        }
        "expire" | "pexpire" => return expire(db, args, name == "pexpire"),
        "ttl" | "pttl" => match db.get_entry(&stored(&args[1]))? {
            None => Reply::Int(-2),
            Some(item) if item.expires_at == 0 => Reply::Int(-1),
            Some(item) => {
                let ms = (item.expires_at * 1000).saturating_sub(now_ms());
                Reply::Int(if name == "pttl" {
                    ms as i64
                } else {
                    ms.div_ceil(1000) as i64
                })
            }
        },
        "persist" => {
            let key = stored(&args[1]);
            Reply::Int(db.update(|txn| match txn.get_entry(&key)? {
                Some(item) if item.expires_at != 0 => {
                    txn.set_with(
                        &key,
                        &item.value,
                        PutOptions {
                            user_meta: item.user_meta,
                            ttl: None,
                        },
                    )?;
                    Ok(1)
                }
                _ => Ok(0),
            })?)
        }
        "scan" => return scan(sh, args),
        "dbsize" => {
            let mut n = 0;
            for item in db.iter(IterOptions {
                keys_only: true,
                ..Default::default()
            })? {
                item?;
                n += 1;
            }
            Reply::Int(n)
        }
        "flushdb" | "flushall" => {
            match args.get(1).map(|a| upper(a)).as_deref() {
                None | Some("SYNC") | Some("ASYNC") if args.len() <= 2 => {}
                _ => return Ok(syntax()),
            }
            db.drop_all()?;
            Reply::Status("OK")
        }
        "select" => match parse_i64(&args[1]) {
            Some(0) => Reply::Status("OK"),
            Some(_) => Reply::err("DB index is out of range"),
            None => not_int(),
        },
        "ping" => match args.len() {
            1 => Reply::Status("PONG"),
            2 => Reply::Bulk(args[1].clone()),
            _ => Reply::err("wrong number of arguments for 'ping' command"),
        },
        "echo" => Reply::Bulk(args[1].clone()),
        "auth" => auth(sh, conn, &args[1..]),
        "hello" => return Ok(hello(sh, conn, args)),
        "client" => client(conn, args),
        "command" => command(args),
        "info" => info(sh, args),
        "config" => config(sh, args),
        "quit" => {
            conn.close = true;
            Reply::Status("OK")
        }
        "shutdown" => {
            conn.close = true;
            sh.shutdown.send_replace(true);
            Reply::Silent
        }
        "cluster" => return cluster(sh, args),
        "readonly" | "readwrite" => {
            if sh.cluster.is_none() {
                Reply::err("This instance has cluster support disabled")
            } else {
                Reply::Status("OK")
            }
        }
        _ => Reply::err(format!("command '{name}' is listed but not handled")),
    })
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL].
fn set(db: &Db, args: &[Vec<u8>]) -> Res {
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut ttl: Option<Duration> = None;
    let mut i = 3;
    while i < args.len() {
        let opt = upper(&args[i]);
        match opt.as_str() {
            "NX" if !xx => nx = true,
            "XX" if !nx => xx = true,
            "GET" => get = true,
            "KEEPTTL" if ttl.is_none() => keepttl = true,
            "EX" | "PX" | "EXAT" | "PXAT" if ttl.is_none() && !keepttl => {
                let Some(n) = args.get(i + 1).and_then(|b| parse_i64(b)) else {
                    return Ok(if args.get(i + 1).is_some() {
                        not_int()
                    } else {
                        syntax()
                    });
                };
                if n <= 0 {
                    return Ok(Reply::err("invalid expire time in 'set' command"));
                }
                let n = n as u64;
                let d = match opt.as_str() {
                    "EX" => Duration::from_secs(n),
                    "PX" => Duration::from_millis(n),
                    "EXAT" => {
                        Duration::from_millis((n.saturating_mul(1000)).saturating_sub(now_ms()))
                    }
                    _ => Duration::from_millis(n.saturating_sub(now_ms())),
                };
                // An absolute time already past (a zero TTL): the SET deletes the key, as in Redis.
                ttl = Some(d);
                i += 1;
            }
            _ => return Ok(syntax()),
        }
        i += 1;
    }
    let key = stored(&args[1]);
    let value = &args[2];
    let past = ttl.is_some_and(|d| d.is_zero());
    if !(nx || xx || get || keepttl) {
        if past {
            db.delete(&key)?;
        } else {
            db.put_with(&key, value, PutOptions { user_meta: 0, ttl })?;
        }
        return Ok(Reply::Status("OK"));
    }
    let now = db.options().clock.now();
    db.update(|txn: &mut Txn| {
        let old = txn.get_entry(&key)?;
        let write = !(nx && old.is_some() || xx && old.is_none());
        if write {
            let ttl = if keepttl {
                old.as_ref().and_then(|o| keep_ttl(o.expires_at, now))
            } else {
                ttl
            };
            if past {
                txn.delete(&key)?;
            } else {
                txn.set_with(&key, value, PutOptions { user_meta: 0, ttl })?;
            }
        }
        Ok(match (get, write) {
            (true, _) => old.map_or(Reply::Nil, |o| Reply::Bulk(o.value)),
            (false, true) => Reply::Status("OK"),
            (false, false) => Reply::Nil,
        })
    })
}

fn incr(db: &Db, key: &[u8], by: i64) -> Res {
    let now = db.options().clock.now();
    db.update(|txn| {
        let old = txn.get_entry(key)?;
        let (n, ttl) = match &old {
            None => (0, None),
            Some(item) => match parse_i64(&item.value) {
                Some(n) => (n, keep_ttl(item.expires_at, now)),
                None => return Ok(not_int()),
            },
        };
        let Some(n) = n.checked_add(by) else {
            return Ok(Reply::err("increment or decrement would overflow"));
        };
        txn.set_with(
            key,
            n.to_string().as_bytes(),
            PutOptions { user_meta: 0, ttl },
        )?;
        Ok(Reply::Int(n))
    })
}

/// EXPIRE/PEXPIRE key time [NX|XX|GT|LT].
fn expire(db: &Db, args: &[Vec<u8>], ms: bool) -> Res {
    let Some(t) = parse_i64(&args[2]) else {
        return Ok(not_int());
    };
    let cond = match args.get(3).map(|a| upper(a)) {
        None => None,
        Some(c) if args.len() == 4 && ["NX", "XX", "GT", "LT"].contains(&c.as_str()) => Some(c),
        Some(_) => return Ok(Reply::err("Unsupported option or too many arguments")),
    };
    let ttl_ms = if ms { t } else { t.saturating_mul(1000) };
    let key = stored(&args[1]);
    db.update(|txn| {
        let Some(item) = txn.get_entry(&key)? else {
            return Ok(Reply::Int(0));
        };
        // The new expiry in ms since the epoch, to compare with the current one (none = infinite).
        let new_at = now_ms() as i64 + ttl_ms;
        let cur_at = (item.expires_at != 0).then(|| item.expires_at as i64 * 1000);
        let allowed = match cond.as_deref() {
            Some("NX") => cur_at.is_none(),
            Some("XX") => cur_at.is_some(),
            Some("GT") => cur_at.is_some_and(|c| new_at > c),
            Some("LT") => cur_at.is_none_or(|c| new_at < c),
            _ => true,
        };
        if !allowed {
            return Ok(Reply::Int(0));
        }
        if ttl_ms <= 0 {
            txn.delete(&key)?;
        } else {
            let ttl = Some(Duration::from_millis(ttl_ms as u64));
            txn.set_with(
                &key,
                &item.value,
                PutOptions {
                    user_meta: item.user_meta,
                    ttl,
                },
            )?;
        }
        Ok(Reply::Int(1))
    })
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE t].
fn scan(sh: &Shared, args: &[Vec<u8>]) -> Res {
    let start = if args[1] == b"0" {
        None
    } else {
        let id = std::str::from_utf8(&args[1])
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        let cursors = sh.cursors.lock().unwrap_or_else(|p| p.into_inner());
        match id.and_then(|id| cursors.keys.get(&id).cloned()) {
            Some(k) => Some(k),
            None => return Ok(Reply::err("invalid cursor")),
        }
    };
    let (mut pattern, mut count, mut only_strings) = (None, 10usize, true);
    let mut i = 2;
    while i < args.len() {
        let Some(val) = args.get(i + 1) else {
            return Ok(syntax());
        };
        match upper(&args[i]).as_str() {
            "MATCH" => pattern = Some(val.clone()),
            "COUNT" => match parse_i64(val) {
                Some(n) if n >= 1 => count = n.min(100_000) as usize,
                Some(_) => return Ok(syntax()),
                None => return Ok(not_int()),
            },
            "TYPE" => only_strings = upper(val) == "STRING",
            _ => return Ok(syntax()),
        }
        i += 2;
    }
    let mut keys = Vec::new();
    let mut last = None;
    let mut more = false;
    if only_strings {
        let mut it = sh.db.iter(IterOptions {
            start: start.clone(),
            keys_only: true,
            prefetch: count.min(1024),
            ..Default::default()
        })?;
        let mut seen = 0;
        while it.valid() {
            if seen == count {
                more = true;
                break;
            }
            let k = it.key();
            seen += 1;
            let user = k.get(2..).unwrap_or_default();
            if pattern.as_deref().is_none_or(|p| glob(p, user)) {
                keys.push(Reply::Bulk(user.to_vec()));
            }
            last = Some(k.to_vec());
            it.advance()?;
        }
    }
    let cursor = match (more, last) {
        (true, Some(mut k)) => {
            // Resume just after the last key examined.
            k.push(0);
            let mut cursors = sh.cursors.lock().unwrap_or_else(|p| p.into_inner());
            cursors.put(k)
        }
        _ => 0,
    };
    Ok(Reply::Array(vec![
        Reply::text(cursor.to_string()),
        Reply::Array(keys),
    ]))
}

fn check_pass(sh: &Shared, given: &[u8]) -> bool {
    let Some(want) = &sh.settings.requirepass else {
        return false;
    };
    // Compare every byte whatever the first difference, so the time says nothing.
    let mut diff = want.len() ^ given.len();
    for (i, &w) in want.iter().enumerate() {
        diff |= usize::from(w ^ given.get(i).copied().unwrap_or(!w));
    }
    diff == 0
}

fn auth(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
    let pass = match args {
        [p] => p,
        [user, p] if user.as_slice() == b"default" => p,
        [_, _] => {
            return Reply::Error(
                "WRONGPASS invalid username-password pair or user is disabled.".into(),
            )
        }
        _ => return syntax(),
    };
    if sh.settings.requirepass.is_none() {
        return Reply::err(
            "AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        );
    }
    if check_pass(sh, pass) {
        conn.authed = true;
        Reply::Status("OK")
    } else {
        Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
    }
}

/// HELLO [protover [AUTH user pass] [SETNAME name]].
fn hello(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
    let mut resp3 = conn.resp3;
    if let Some(v) = args.get(1) {
        match parse_i64(v) {
            Some(2) => resp3 = false,
            Some(3) => resp3 = true,
            Some(_) => return Reply::Error("NOPROTO unsupported protocol version".into()),
            None => return Reply::err("Protocol version is not an integer or out of range"),
        }
    }
    let mut i = 2;
    let mut name = None;
    while i < args.len() {
        match upper(&args[i]).as_str() {
            "AUTH" if i + 2 < args.len() => {
                let r = auth(sh, conn, &args[i + 1..i + 3]);
                if r != Reply::Status("OK") {
                    return r;
                }
                i += 3;
            }
            "SETNAME" if i + 1 < args.len() => {
                name = Some(args[i + 1].clone());
                i += 2;
            }
            _ => return syntax(),
        }
    }
    if sh.settings.requirepass.is_some() && !conn.authed {
        return Reply::Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time".into());
    }
    conn.resp3 = resp3;
    if name.is_some() {
        conn.name = name;
    }
    Reply::Map(vec![
        (Reply::text("server"), Reply::text("redis")),
        (Reply::text("version"), Reply::text(REDIS_VERSION)),
        (Reply::text("proto"), Reply::Int(if resp3 { 3 } else { 2 })),
        (Reply::text("id"), Reply::Int(conn.id as i64)),
        (
            Reply::text("mode"),
            Reply::text(if sh.cluster.is_some() {
                "cluster"
            } else {
                "standalone"
            }),
        ),
        (Reply::text("role"), Reply::text("master")),
        (Reply::text("modules"), Reply::Array(Vec::new())),
    ])
}

/// The Redis version clients are told, for the features they may check for.
const REDIS_VERSION: &str = "7.2.0";

fn client(conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
    match (upper(&args[1]).as_str(), args.len()) {
        ("SETNAME", 3) => {
            if args[2].iter().any(|&c| c <= b' ' || c > b'~') {
                return Reply::err(
                    "Client names cannot contain spaces, newlines or special characters.",
                );
            }
            conn.name = (!args[2].is_empty()).then(|| args[2].clone());
            Reply::Status("OK")
        }
        ("GETNAME", 2) => conn.name.clone().map_or(Reply::Nil, Reply::Bulk),
        ("ID", 2) => Reply::Int(conn.id as i64),
        // Client libraries announce themselves; nothing to keep.
        ("SETINFO", 4) => Reply::Status("OK"),
        _ => Reply::err(format!(
            "unknown subcommand or wrong number of arguments for 'client|{}'",
            String::from_utf8_lossy(&args[1]).to_ascii_lowercase()
        )),
    }
}

fn command_info(s: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::text(s.name),
        Reply::Int(i64::from(s.arity)),
        Reply::Array(
            s.flags
                .iter()
                .map(|f| Reply::Bulk(f.as_bytes().to_vec()))
                .collect(),
        ),
        Reply::Int(i64::from(s.first_key)),
        Reply::Int(i64::from(s.last_key)),
        Reply::Int(i64::from(s.step)),
    ])
}

fn command(args: &[Vec<u8>]) -> Reply {
    let Some(sub) = args.get(1) else {
        return Reply::Array(COMMANDS.iter().map(command_info).collect());
    };
    match upper(sub).as_str() {
        "COUNT" => Reply::Int(COMMANDS.len() as i64),
        // Documentation is optional for clients (redis-cli asks for hints); we have none.
        "DOCS" => Reply::Map(Vec::new()),
        "INFO" => Reply::Array(
            args[2..]
                .iter()
                .map(|n| {
                    find(&String::from_utf8_lossy(n).to_ascii_lowercase())
                        .map_or(Reply::Nil, command_info)
                })
                .collect(),
        ),
        "LIST" => Reply::Array(COMMANDS.iter().map(|s| Reply::text(s.name)).collect()),
        "GETKEYS" if args.len() > 2 => {
            let rest = &args[2..];
            let name = String::from_utf8_lossy(&rest[0]).to_ascii_lowercase();
            match find(&name) {
                Some(s) => Reply::Array(
                    key_positions(s, rest.len())
                        .map(|i| Reply::Bulk(rest[i].clone()))
                        .collect(),
                ),
                None => Reply::err("Invalid command specified"),
            }
        }
        _ => Reply::err(format!(
            "unknown subcommand '{}'",
            String::from_utf8_lossy(sub)
        )),
    }
}

fn rss_bytes() -> u64 {
    // Second field of /proc/self/statm: resident pages (4 KiB here).
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |p| p * 4096)
}

fn info(sh: &Shared, args: &[Vec<u8>]) -> Reply {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let st = sh.db.stats();
    let c = &sh.counters;
    let s = &sh.settings;
    let mut out = String::new();
    if want("server") {
        out.push_str(&format!(
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nsett_version:{}\r\nredis_mode:{}\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            if sh.cluster.is_some() { "cluster" } else { "standalone" },
            std::env::consts::OS,
            std::process::id(),
            s.port,
            sh.started.elapsed().as_secs(),
        ));
    }
    if want("clients") {
        out.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            c.clients.load(Ordering::Relaxed),
            s.max_clients
        ));
    }
    if want("memory") {
        out.push_str(&format!(
            "# Memory\r\nused_memory:{rss}\r\nused_memory_rss:{rss}\r\nsett_memtable_bytes:{}\r\nsett_immutable_memtables:{}\r\nsett_index_filter_bytes:{}\r\n\r\n",
            st.memtable_bytes,
            st.immutable_memtables,
            st.index_filter_bytes,
            rss = rss_bytes(),
        ));
    }
    if want("persistence") {
        let levels: Vec<String> = st.levels.iter().map(|(n, b)| format!("{n}/{b}")).collect();
        out.push_str(&format!(
            "# Persistence\r\nloading:0\r\naof_enabled:1\r\nappendfsync:{}\r\nrdb_changes_since_last_save:0\r\nsett_background_syncs:{}\r\nsett_last_seq:{}\r\nsett_batches_written:{}\r\nsett_write_groups:{}\r\nsett_wal_syncs:{}\r\nsett_levels_tables_bytes:{}\r\nsett_table_entries:{}\r\nsett_vlog_files:{}\r\nsett_vlog_bytes:{}\r\nsett_compactions_pending:{}\r\nsett_compactions_running:{}\r\nsett_gc_files_rewritten:{}\r\nsett_gc_files_deleted:{}\r\nsett_gc_bytes_reclaimed:{}\r\n\r\n",
            s.fsync.name(),
            c.background_syncs.load(Ordering::Relaxed),
            st.last_seq,
            st.batches_written,
            st.write_groups,
            st.wal_syncs,
            levels.join(","),
            st.table_entries,
            st.vlog_files,
            st.vlog_bytes,
            st.compactions_pending,
            st.compactions_running,
            st.gc_files_rewritten,
            st.gc_files_deleted,
            st.gc_bytes_reclaimed,
        ));
    }
    if want("stats") {
        out.push_str(&format!(
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\ntotal_error_replies_protocol:{}\r\n\r\n",
            c.connections.load(Ordering::Relaxed),
            c.commands.load(Ordering::Relaxed),
            c.rejected.load(Ordering::Relaxed),
            c.hits.load(Ordering::Relaxed),
            c.misses.load(Ordering::Relaxed),
            c.protocol_errors.load(Ordering::Relaxed),
        ));
    }
    if want("cluster") {
        out.push_str(&format!(
            "# Cluster\r\ncluster_enabled:{}\r\n\r\n",
            u8::from(sh.cluster.is_some())
        ));
    }
    if want("keyspace") {
        // Counting walks the keys; only asked for explicitly or by a plain INFO.
        let mut n = 0u64;
        if let Ok(it) = sh.db.iter(IterOptions {
            keys_only: true,
            ..Default::default()
        }) {
            n = it.filter(Result::is_ok).count() as u64;
        }
        out.push_str("# Keyspace\r\n");
        if n > 0 {
            out.push_str(&format!("db0:keys={n},expires=0,avg_ttl=0\r\n"));
        }
    }
    Reply::Bulk(out.into_bytes())
}

fn config(sh: &Shared, args: &[Vec<u8>]) -> Reply {
    let s = &sh.settings;
    match upper(&args[1]).as_str() {
        "GET" if args.len() >= 3 => {
            let params: Vec<(&str, String)> = vec![
                ("maxclients", s.max_clients.to_string()),
                ("timeout", s.timeout_secs.to_string()),
                ("appendonly", "yes".into()),
                ("appendfsync", s.fsync.name().into()),
                ("save", String::new()),
                ("databases", "1".into()),
                ("proto-max-bulk-len", s.max_bulk.to_string()),
                ("port", s.port.to_string()),
                ("bind", s.bind.clone()),
                ("dir", s.dir.clone()),
                (
                    "cluster-enabled",
                    if sh.cluster.is_some() { "yes" } else { "no" }.into(),
                ),
                ("maxmemory", "0".into()),
            ];
            let mut out = Vec::new();
            for (k, v) in params {
                if args[2..]
                    .iter()
                    .any(|p| glob(&p.to_ascii_lowercase(), k.as_bytes()))
                {
                    out.push((Reply::text(k), Reply::text(v)));
                }
            }
            Reply::Map(out)
        }
        "SET" => Reply::err(
            "CONFIG SET is not supported: settings are command-line options of sett-server",
        ),
        "RESETSTAT" if args.len() == 2 => {
            let c = &sh.counters;
            for x in [
                &c.commands,
                &c.connections,
                &c.rejected,
                &c.hits,
                &c.misses,
                &c.protocol_errors,
            ] {
                x.store(0, Ordering::Relaxed);
            }
            Reply::Status("OK")
        }
        _ => Reply::err(format!(
            "unknown subcommand or wrong number of arguments for 'config|{}'",
            String::from_utf8_lossy(&args[1]).to_ascii_lowercase()
        )),
    }
}

fn node_reply(n: &crate::cluster::Node) -> Reply {
    Reply::Array(vec![
        Reply::text(n.ip.clone()),
        Reply::Int(i64::from(n.port)),
        Reply::text(n.id.clone()),
    ])
}

fn cluster(sh: &Shared, args: &[Vec<u8>]) -> Res {
    let sub = upper(&args[1]);
    if sub == "KEYSLOT" && args.len() == 3 {
        return Ok(Reply::Int(i64::from(key_slot(&args[2]))));
    }
    let Some(cl) = &sh.cluster else {
        return Ok(Reply::err("This instance has cluster support disabled"));
    };
    let topo = cl.topology();
    let me = topo.myself();
    Ok(match (sub.as_str(), args.len()) {
        ("MYID", 2) => Reply::text(me.id.clone()),
        // sett's own: puts the topology file's current text in force (how nodes
        // started on --port 0 learn each other's ports); an error keeps the old one.
        ("RELOAD", 2) => match cl.reload() {
            Ok(n) => {
                eprintln!("sett-server: cluster topology reloaded: {n} nodes");
                Reply::Status("OK")
            }
            Err(e) => Reply::err(format!("CLUSTER RELOAD: {e}")),
        },
        ("INFO", 2) => {
            let assigned = topo.assigned();
            let serving = topo.nodes.iter().filter(|n| !n.ranges.is_empty()).count();
            Reply::Bulk(
                format!(
                    "cluster_enabled:1\r\ncluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{}\r\ncluster_size:{serving}\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n",
                    if assigned == crate::cluster::SLOTS { "ok" } else { "fail" },
                    topo.nodes.len(),
                )
                .into_bytes(),
            )
        }
        ("SLOTS", 2) => {
            let mut out = Vec::new();
            for n in &topo.nodes {
                for &(lo, hi) in &n.ranges {
                    out.push(Reply::Array(vec![
                        Reply::Int(i64::from(lo)),
                        Reply::Int(i64::from(hi)),
                        node_reply(n),
                    ]));
                }
            }
            Reply::Array(out)
        }
        ("SHARDS", 2) => Reply::Array(
            topo.nodes
                .iter()
                .map(|n| {
                    let slots = n
                        .ranges
                        .iter()
                        .flat_map(|&(lo, hi)| {
                            [Reply::Int(i64::from(lo)), Reply::Int(i64::from(hi))]
                        })
                        .collect();
                    let node = Reply::Map(vec![
                        (Reply::text("id"), Reply::text(n.id.clone())),
                        (Reply::text("port"), Reply::Int(i64::from(n.port))),
                        (Reply::text("ip"), Reply::text(n.ip.clone())),
                        (Reply::text("endpoint"), Reply::text(n.ip.clone())),
                        (Reply::text("role"), Reply::text("master")),
                        (Reply::text("replication-offset"), Reply::Int(0)),
                        (Reply::text("health"), Reply::text("online")),
                    ]);
                    Reply::Map(vec![
                        (Reply::text("slots"), Reply::Array(slots)),
                        (Reply::text("nodes"), Reply::Array(vec![node])),
                    ])
                })
                .collect(),
        ),
        ("NODES", 2) => {
            let mut out = String::new();
            for (i, n) in topo.nodes.iter().enumerate() {
                let flags = if i == topo.me {
                    "myself,master"
                } else {
                    "master"
                };
                out.push_str(&format!(
                    "{} {}:{}@{} {flags} - 0 0 1 connected",
                    n.id,
                    n.ip,
                    n.port,
                    u32::from(n.port) + 10000
                ));
                for &(lo, hi) in &n.ranges {
                    if lo == hi {
                        out.push_str(&format!(" {lo}"));
                    } else {
                        out.push_str(&format!(" {lo}-{hi}"));
                    }
                }
                out.push('\n');
            }
            Reply::Bulk(out.into_bytes())
        }
        ("COUNTKEYSINSLOT", 3) => {
            match parse_i64(&args[2]).filter(|s| (0..crate::cluster::SLOTS as i64).contains(s)) {
                Some(slot) => {
                    let prefix = (slot as u16).to_be_bytes().to_vec();
                    let it = sh.db.iter(IterOptions {
                        prefix: Some(prefix),
                        keys_only: true,
                        ..Default::default()
                    })?;
                    let mut n = 0;
                    for item in it {
                        item?;
                        n += 1;
                    }
                    Reply::Int(n)
                }
                None => Reply::err("Invalid slot"),
            }
        }
        _ => Reply::err(format!(
            "unknown subcommand or wrong number of arguments for 'cluster|{}'",
            sub.to_ascii_lowercase()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_handles_stars_classes_and_escapes() {
        let m = |p: &str, s: &str| glob(p.as_bytes(), s.as_bytes());
        assert!(m("*", ""));
        assert!(m("user:*", "user:42"));
        assert!(!m("user:*", "users:42"));
        assert!(m("h?llo", "hello") && !m("h?llo", "hllo"));
        assert!(m("h[ae]llo", "hallo") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-c]llo", "hbllo") && !m("h[a-c]llo", "hdllo"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb"));
        assert!(m("*a*b*", "xxaxxbxx") && !m("*a*b*", "xxbxxaxx"));
    }

    #[test]
    fn integers_follow_redis_syntax() {
        assert_eq!(parse_i64(b"-12"), Some(-12));
        for bad in [
            "",
            "+1",
            "01",
            " 1",
            "1 ",
            "1.0",
            "99999999999999999999",
            "-",
        ] {
            assert_eq!(parse_i64(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn routing_says_moved_crossslot_or_clusterdown_and_lets_own_keys_through() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        // bar is slot 5061 (mine), foo 12182 (b's); 16000-16383 belong to nobody.
        let text = format!("{a} 127.0.0.1:7001 0-8191\n{b} 10.0.0.2:7002 8192-15999\n");
        let Ok(topo) = Topology::parse(&text, "t", &a) else {
            panic!("topology refused");
        };
        let args = |v: &[&str]| v.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        let get = find("get").map(|s| route(&topo, s, &args(&["GET", "bar"])));
        assert_eq!(get, Some(None));
        let moved = find("get").map(|s| route(&topo, s, &args(&["GET", "foo"])));
        assert_eq!(
            moved,
            Some(Some(Reply::Error("MOVED 12182 10.0.0.2:7002".into())))
        );
        let cross =
            find("mset").and_then(|s| route(&topo, s, &args(&["MSET", "bar", "1", "foo", "2"])));
        assert!(matches!(cross, Some(Reply::Error(e)) if e.starts_with("CROSSSLOT")));
        let tagged =
            find("mset").map(|s| route(&topo, s, &args(&["MSET", "{bar}1", "1", "{bar}2", "2"])));
        assert_eq!(tagged, Some(None));
        let unserved = (0..u32::MAX)
            .map(|i| format!("k{i}"))
            .find(|k| key_slot(k.as_bytes()) >= 16000)
            .unwrap_or_default();
        let down = find("get").and_then(|s| route(&topo, s, &args(&["GET", &unserved])));
        assert!(matches!(down, Some(Reply::Error(e)) if e.starts_with("CLUSTERDOWN")));
        let ping = find("ping").map(|s| route(&topo, s, &args(&["PING"])));
        assert_eq!(ping, Some(None));
    }

    #[test]
    fn key_positions_follow_first_last_step() {
        let mset = find("mset").map(|s| key_positions(s, 5).collect::<Vec<_>>());
        assert_eq!(mset, Some(vec![1, 3]));
        let del = find("del").map(|s| key_positions(s, 4).collect::<Vec<_>>());
        assert_eq!(del, Some(vec![1, 2, 3]));
        let ping = find("ping").map(|s| key_positions(s, 2).count());
        assert_eq!(ping, Some(0));
    }
}
