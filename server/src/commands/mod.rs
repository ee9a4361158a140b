//! The commands: one table (`COMMANDS`) that names each command, its arity,
//! flags, key positions, how it behaves inside MULTI, and its handler. The
//! handlers live by family: `strings`, `keys`, `expiry`, `connection`, `admin`,
//! `cluster_cmds` and `multi`. Everything here blocks (the engine is
//! synchronous); the connection loop runs it on tokio's blocking pool.
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
//!
//! A data command's handler reads and writes through [`Kv`]: the Db itself
//! (each command its own atomic write), or the one transaction an EXEC runs
//! its queued commands in.

mod admin;
mod cluster_cmds;
mod connection;
mod expiry;
mod glob;
mod keys;
mod kv;
mod multi;
mod pubsub;
mod replication_cmds;
mod string_merge;
mod strings;

pub(crate) use cluster_cmds::follow_topology;
use glob::glob;
pub(crate) use kv::Kv;

use crate::cluster::{key_slot, Cluster, Topology};
use crate::replication::{Psync, Replication};
use crate::resp::Reply;
use sett::Db;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
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
    /// Bytes of change history kept for replicas to resume from.
    pub repl_backlog: usize,
}

impl Settings {
    /// The engine options for a Db of this server in `dir` (its own, or a
    /// full sync's copy).
    pub fn engine_options(&self, dir: &Path) -> sett::Options {
        let mut opts = sett::Options::new(dir);
        opts.sync_writes = self.fsync == Fsync::Always;
        // SET NX/XX/GET/KEEPTTL, EXPIRE and PERSIST rewrite a value in a
        // transaction: let one hold the largest value a client may send.
        opts.max_txn_size = opts
            .max_txn_size
            .max(self.max_bulk.saturating_add(1 << 20))
            .min(2 << 30);
        opts.change_feed_history_bytes = self.repl_backlog;
        // INCR and APPEND are merges (see string_merge). A directory written
        // before records no operator: the open records this one.
        opts.merge_operator = Some(std::sync::Arc::new(string_merge::RedisString));
        opts
    }
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
    /// The Db; a full sync of a replica swaps it (see [`Shared::db`]).
    pub db: RwLock<Db>,
    pub repl: Replication,
    /// This value's own `Arc`, for the threads that replication starts.
    pub me: Weak<Shared>,
    pub settings: Settings,
    pub cluster: Option<Cluster>,
    pub counters: Counters,
    pub cursors: Mutex<Cursors>,
    pub started: Instant,
    /// Set by SHUTDOWN; the server loop watches it.
    pub shutdown: tokio::sync::watch::Sender<bool>,
    /// The connections, for CLIENT KILL and PUBLISH.
    pub clients: crate::clients::Clients,
    /// 40 hex digits naming this process (INFO's run_id; Sentinel tells nodes apart by it).
    pub run_id: String,
}

impl Shared {
    /// The Db, held for as long as the guard lives: a full sync's swap
    /// ([`crate::replication::install`]) waits for it. Take it once per
    /// command: taking it again in the same thread while a swap waits would
    /// deadlock.
    pub fn db(&self) -> RwLockReadGuard<'_, Db> {
        self.db.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The Db for a swap; no command runs while it is held.
    pub fn db_write(&self) -> RwLockWriteGuard<'_, Db> {
        self.db.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Engine options for a Db of this server in `dir`.
    pub fn engine_options(&self, dir: &Path) -> sett::Options {
        self.settings.engine_options(dir)
    }

    /// This server's `Arc`.
    pub fn arc(&self) -> Option<Arc<Shared>> {
        self.me.upgrade()
    }
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
    /// Between MULTI and EXEC: the queued commands.
    multi: Option<multi::Queued>,
    /// WATCHed keys (as stored) and the version each had then (`None`: absent).
    watched: Vec<(Vec<u8>, Option<u64>)>,
    /// `REPLCONF listening-port` of a replica connecting.
    repl_port: Option<u16>,
    /// `REPLCONF capa sett-v1`: a sett-server replica.
    repl_capa: bool,
    /// Set by PSYNC: the connection loop hands the socket to replication.
    pub takeover: Option<Psync>,
    /// Channels subscribed to (a RESP2 connection with any is in pubsub mode).
    pub subscriptions: usize,
    /// Cluster mode, after READONLY: reads of the slots of this replica's
    /// master are served here instead of redirected.
    readonly: bool,
}

impl Conn {
    /// A new connection's state.
    pub fn new(id: u64) -> Conn {
        Conn {
            id,
            ..Conn::default()
        }
    }
}

/// What a command's handler sees.
pub(crate) struct Ctx<'a> {
    pub sh: &'a Shared,
    /// The Db, held for the whole command (see [`Shared::db`]).
    pub db: &'a Db,
    pub conn: &'a mut Conn,
    pub kv: Kv<'a>,
}

impl Ctx<'_> {
    /// The engine's clock, unix seconds (what TTLs are measured against).
    fn now(&self) -> u64 {
        self.db.options().clock.now()
    }
}

type Res = std::result::Result<Reply, sett::Error>;

/// A command's handler: `args[0]` is the command's name as sent.
type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> Res;

/// How a command behaves between MULTI and EXEC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tx {
    /// Queued; EXEC runs it inside its transaction.
    Queue,
    /// Refused when queued (it cannot be part of one sett transaction), which
    /// makes EXEC fail as any queueing error does.
    Refuse,
    /// Runs at once, also inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT).
    Now,
}

/// A command's entry in the table: what clients read (COMMAND) to find its
/// keys, and what runs it.
pub(crate) struct Spec {
    name: &'static str,
    /// Positive: exactly that many arguments (name included); negative: at least |n|.
    arity: i32,
    flags: &'static [&'static str],
    first_key: i32,
    last_key: i32,
    step: i32,
    tx: Tx,
    run: Handler,
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

#[allow(clippy::too_many_arguments)]
const fn spec(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    first_key: i32,
    last_key: i32,
    step: i32,
    tx: Tx,
    run: Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        first_key,
        last_key,
        step,
        tx,
        run,
    }
}

const W: &[&str] = &["write"];
const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const A: &[&str] = &["fast", "stale", "loading"];
const NOAUTH: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];
const TXF: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
const ADMIN: &[&str] = &["admin", "noscript", "stale"];
const PUBSUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];

use Tx::{Now, Queue, Refuse};

static COMMANDS: &[Spec] = &[
    // Strings.
    spec("get", 2, R, 1, 1, 1, Queue, strings::get),
    spec("set", -3, W, 1, 1, 1, Queue, strings::set),
    spec("setnx", 3, W, 1, 1, 1, Queue, strings::setnx),
    spec("setex", 4, W, 1, 1, 1, Queue, strings::setex),
    spec("psetex", 4, W, 1, 1, 1, Queue, strings::setex),
    spec("getset", 3, W, 1, 1, 1, Queue, strings::getset),
    spec("getex", -2, W, 1, 1, 1, Queue, strings::getex),
    spec("getdel", 2, W, 1, 1, 1, Queue, strings::getdel),
    spec("append", 3, W, 1, 1, 1, Queue, strings::append),
    spec("strlen", 2, R, 1, 1, 1, Queue, strings::strlen),
    spec("getrange", 4, RS, 1, 1, 1, Queue, strings::getrange),
    spec("substr", 4, RS, 1, 1, 1, Queue, strings::getrange),
    spec("setrange", 4, W, 1, 1, 1, Queue, strings::setrange),
    spec("mget", -2, R, 1, -1, 1, Queue, strings::mget),
    spec("mset", -3, W, 1, -1, 2, Queue, strings::mset),
    spec("msetnx", -3, W, 1, -1, 2, Queue, strings::msetnx),
    spec("incr", 2, W, 1, 1, 1, Queue, strings::incr),
    spec("incrby", 3, W, 1, 1, 1, Queue, strings::incr),
    spec("decr", 2, W, 1, 1, 1, Queue, strings::incr),
    spec("decrby", 3, W, 1, 1, 1, Queue, strings::incr),
    spec("incrbyfloat", 3, W, 1, 1, 1, Queue, strings::incrbyfloat),
    spec("lcs", -3, RS, 1, 2, 1, Queue, strings::lcs),
    spec("setbit", 4, W, 1, 1, 1, Queue, strings::setbit),
    spec("getbit", 3, R, 1, 1, 1, Queue, strings::getbit),
    spec("bitcount", -2, RS, 1, 1, 1, Queue, strings::bitcount),
    // Keys.
    spec("del", -2, W, 1, -1, 1, Queue, keys::del),
    spec("unlink", -2, W, 1, -1, 1, Queue, keys::del),
    spec("exists", -2, R, 1, -1, 1, Queue, keys::exists),
    spec("touch", -2, R, 1, -1, 1, Queue, keys::exists),
    spec("type", 2, R, 1, 1, 1, Queue, keys::type_),
    spec("keys", 2, RS, 0, 0, 0, Queue, keys::keys),
    spec("scan", -2, RS, 0, 0, 0, Queue, keys::scan),
    spec("randomkey", 1, RS, 0, 0, 0, Queue, keys::randomkey),
    spec("dbsize", 1, RS, 0, 0, 0, Queue, keys::dbsize),
    spec("rename", 3, W, 1, 2, 1, Queue, keys::rename),
    spec("renamenx", 3, W, 1, 2, 1, Queue, keys::rename),
    spec("copy", -3, W, 1, 2, 1, Queue, keys::copy),
    spec("object", -2, RS, 2, 2, 1, Queue, keys::object),
    spec("flushdb", -1, W, 0, 0, 0, Refuse, keys::flush),
    spec("flushall", -1, W, 0, 0, 0, Refuse, keys::flush),
    // Expiry.
    spec("expire", -3, W, 1, 1, 1, Queue, expiry::expire),
    spec("pexpire", -3, W, 1, 1, 1, Queue, expiry::expire),
    spec("expireat", -3, W, 1, 1, 1, Queue, expiry::expire),
    spec("pexpireat", -3, W, 1, 1, 1, Queue, expiry::expire),
    spec("ttl", 2, R, 1, 1, 1, Queue, expiry::ttl),
    spec("pttl", 2, R, 1, 1, 1, Queue, expiry::ttl),
    spec("expiretime", 2, R, 1, 1, 1, Queue, expiry::ttl),
    spec("pexpiretime", 2, R, 1, 1, 1, Queue, expiry::ttl),
    spec("persist", 2, W, 1, 1, 1, Queue, expiry::persist),
    // Transactions.
    spec("multi", 1, TXF, 0, 0, 0, Now, multi::multi),
    spec("exec", 1, TXF, 0, 0, 0, Now, multi::exec),
    spec("discard", 1, TXF, 0, 0, 0, Now, multi::discard),
    spec("watch", -2, TXF, 1, -1, 1, Now, multi::watch),
    spec("unwatch", 1, TXF, 0, 0, 0, Queue, multi::unwatch),
    // Connection.
    spec("select", 2, A, 0, 0, 0, Queue, connection::select),
    spec("ping", -1, A, 0, 0, 0, Queue, connection::ping),
    spec("echo", 2, A, 0, 0, 0, Queue, connection::echo),
    spec("auth", -2, NOAUTH, 0, 0, 0, Refuse, connection::auth),
    spec("hello", -1, NOAUTH, 0, 0, 0, Refuse, connection::hello),
    spec("client", -2, A, 0, 0, 0, Queue, connection::client),
    spec("quit", -1, NOAUTH, 0, 0, 0, Now, connection::quit),
    // Server.
    spec("command", -1, A, 0, 0, 0, Queue, admin::command),
    spec("info", -1, A, 0, 0, 0, Queue, admin::info),
    spec("config", -2, A, 0, 0, 0, Queue, admin::config),
    spec("time", 1, A, 0, 0, 0, Queue, admin::time),
    spec("role", 1, A, 0, 0, 0, Queue, admin::role),
    spec(
        "function",
        -2,
        &["noscript"],
        0,
        0,
        0,
        Refuse,
        admin::function,
    ),
    spec(
        "shutdown",
        -1,
        &["noscript", "loading", "stale"],
        0,
        0,
        0,
        Refuse,
        admin::shutdown,
    ),
    // Cluster.
    spec("cluster", -2, A, 0, 0, 0, Queue, cluster_cmds::cluster),
    spec("readonly", 1, A, 0, 0, 0, Queue, cluster_cmds::readonly),
    spec("readwrite", 1, A, 0, 0, 0, Queue, cluster_cmds::readonly),
    // Pub/sub.
    spec("subscribe", -2, PUBSUB, 0, 0, 0, Refuse, pubsub::subscribe),
    spec(
        "unsubscribe",
        -1,
        PUBSUB,
        0,
        0,
        0,
        Refuse,
        pubsub::unsubscribe,
    ),
    spec("publish", 3, PUBSUB, 0, 0, 0, Queue, pubsub::publish),
    // Replication. REPLICAOF queues in MULTI, as Sentinel sends it (with
    // CONFIG REWRITE and CLIENT KILL); it has no data to roll back, and a
    // conflict's re-run of EXEC repeats it harmlessly (same target: no change).
    spec(
        "replicaof",
        3,
        ADMIN,
        0,
        0,
        0,
        Queue,
        replication_cmds::replicaof,
    ),
    spec(
        "slaveof",
        3,
        ADMIN,
        0,
        0,
        0,
        Queue,
        replication_cmds::replicaof,
    ),
    spec(
        "replconf",
        -1,
        ADMIN,
        0,
        0,
        0,
        Refuse,
        replication_cmds::replconf,
    ),
    spec("psync", 3, ADMIN, 0, 0, 0, Refuse, replication_cmds::psync),
    spec("sync", 1, ADMIN, 0, 0, 0, Refuse, replication_cmds::sync),
    spec(
        "wait",
        3,
        &["noscript"],
        0,
        0,
        0,
        Refuse,
        replication_cmds::wait,
    ),
];

/// What a RESP2 connection with subscriptions may send.
const SUBSCRIBED_MODE: &[&str] = &["subscribe", "unsubscribe", "ping", "quit"];

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

/// The client's key from a stored one.
fn user_key(stored: &[u8]) -> &[u8] {
    stored.get(2..).unwrap_or_default()
}

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

fn wrong_args(name: &str) -> Reply {
    Reply::err(format!("wrong number of arguments for '{name}' command"))
}

/// The command's name, lower case, as error replies spell it.
fn lower(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_ascii_lowercase()
}

/// Redis's strict integer syntax: optional '-', digits, no leading zero, no spaces
/// ("-0" is not an integer either).
fn parse_i64(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty()
        || digits.len() > 1 && digits.starts_with('0')
        || digits.starts_with('+')
        || s == "-0"
    {
        return None;
    }
    s.parse().ok()
}

/// The user-meta byte of a value that an in-place edit (APPEND, SETRANGE,
/// SETBIT) wrote: OBJECT ENCODING calls it "raw" whatever its shape, as
/// redis-server does for a string it has edited.
const EDITED: u8 = 1;

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

/// Runs one command. Bad input gets an error reply; nothing here panics on it.
pub fn execute(sh: &Shared, conn: &mut Conn, args: Vec<Vec<u8>>) -> Reply {
    let Some(first) = args.first() else {
        return Reply::Silent;
    };
    sh.counters.commands.fetch_add(1, Ordering::Relaxed);
    let name = lower(first);
    let Some(spec) = find(&name) else {
        let mut shown = String::new();
        for a in args.iter().skip(1).take(8) {
            shown.push_str(&format!("'{}' ", String::from_utf8_lossy(a)));
        }
        multi::flag_error(conn);
        return Reply::err(format!(
            "unknown command '{}', with args beginning with: {shown}",
            String::from_utf8_lossy(first)
        ));
    };
    let argc = args.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        multi::flag_error(conn);
        return wrong_args(&name);
    }
    if sh.settings.requirepass.is_some() && !conn.authed && !spec.flags.contains(&"no_auth") {
        multi::flag_error(conn);
        return Reply::Error("NOAUTH Authentication required.".into());
    }
    if let Some(cl) = &sh.cluster {
        if let Some(r) = route(&cl.topology(), spec, &args, conn.readonly) {
            multi::flag_error(conn);
            return r;
        }
    }
    if sh.repl.is_replica() && spec.flags.contains(&"write") {
        multi::flag_error(conn);
        return Reply::Error("READONLY You can't write against a read only replica.".into());
    }
    if conn.subscriptions > 0 && !conn.resp3 && !SUBSCRIBED_MODE.contains(&spec.name) {
        multi::flag_error(conn);
        return Reply::err(format!(
            "Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
        ));
    }
    if conn.multi.is_some() && spec.tx != Tx::Now {
        return multi::queue(conn, spec, args);
    }
    let db = sh.db();
    run(sh, &db, conn, Kv::Db(&db), spec, &args)
}

/// Runs a command whose arity, authentication and slot were checked.
fn run(sh: &Shared, db: &Db, conn: &mut Conn, kv: Kv<'_>, spec: &Spec, args: &[Vec<u8>]) -> Reply {
    let mut cx = Ctx { sh, db, conn, kv };
    match (spec.run)(&mut cx, args) {
        Ok(r) => r,
        Err(e) => engine_error(spec.name, &e),
    }
}

/// In cluster mode: `-CROSSSLOT` if the keys span slots, `-MOVED` if another
/// node serves their slot, `-CLUSTERDOWN` if none does; `None` to run here.
/// A replica runs reads of its master's slots on a `readonly` connection.
fn route(topo: &Topology, spec: &Spec, args: &[Vec<u8>], readonly: bool) -> Option<Reply> {
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
    if topo.is_mine(slot) || (readonly && !spec.flags.contains(&"write") && topo.replicates(slot)) {
        return None;
    }
    Some(match topo.owner(slot) {
        Some(n) => Reply::Error(format!("MOVED {slot} {}:{}", n.ip, n.port)),
        None => Reply::Error(format!("CLUSTERDOWN Hash slot {slot} not served")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "-0",
        ] {
            assert_eq!(parse_i64(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn every_command_is_listed_once_and_data_commands_queue() {
        let mut names: Vec<&str> = COMMANDS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "a command is listed twice");
        for name in ["get", "set", "incr", "del", "expire", "rename", "lcs"] {
            assert_eq!(find(name).map(|s| s.tx), Some(Tx::Queue), "{name}");
        }
        for name in ["exec", "discard", "multi", "watch"] {
            assert_eq!(find(name).map(|s| s.tx), Some(Tx::Now), "{name}");
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
        let get = find("get").map(|s| route(&topo, s, &args(&["GET", "bar"]), false));
        assert_eq!(get, Some(None));
        let moved = find("get").map(|s| route(&topo, s, &args(&["GET", "foo"]), false));
        assert_eq!(
            moved,
            Some(Some(Reply::Error("MOVED 12182 10.0.0.2:7002".into())))
        );
        let cross = find("mset")
            .and_then(|s| route(&topo, s, &args(&["MSET", "bar", "1", "foo", "2"]), false));
        assert!(matches!(cross, Some(Reply::Error(e)) if e.starts_with("CROSSSLOT")));
        let tagged = find("mset").map(|s| {
            route(
                &topo,
                s,
                &args(&["MSET", "{bar}1", "1", "{bar}2", "2"]),
                false,
            )
        });
        assert_eq!(tagged, Some(None));
        let renamed =
            find("rename").and_then(|s| route(&topo, s, &args(&["RENAME", "bar", "foo"]), false));
        assert!(matches!(renamed, Some(Reply::Error(e)) if e.starts_with("CROSSSLOT")));
        let object =
            find("object").map(|s| route(&topo, s, &args(&["OBJECT", "ENCODING", "foo"]), false));
        assert!(matches!(object, Some(Some(Reply::Error(e))) if e.starts_with("MOVED")));
        let unserved = (0..u32::MAX)
            .map(|i| format!("k{i}"))
            .find(|k| key_slot(k.as_bytes()) >= 16000)
            .unwrap_or_default();
        let down = find("get").and_then(|s| route(&topo, s, &args(&["GET", &unserved]), false));
        assert!(matches!(down, Some(Reply::Error(e)) if e.starts_with("CLUSTERDOWN")));
        let ping = find("ping").map(|s| route(&topo, s, &args(&["PING"]), false));
        assert_eq!(ping, Some(None));
    }

    #[test]
    fn a_replica_serves_reads_of_its_masters_slots_only_after_readonly() {
        let (a, b, c) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        // bar is slot 5061 (a's, which c replicates), foo 12182 (b's).
        let text = format!(
            "{a} 127.0.0.1:7001 0-8191\n{b} 127.0.0.1:7002 8192-16383\n{c} 127.0.0.1:7003 replica {a}\n"
        );
        let Ok(topo) = Topology::parse(&text, "t", &c) else {
            panic!("topology refused");
        };
        let args = |v: &[&str]| v.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        let on = |name: &str, v: &[&str], readonly: bool| {
            find(name).and_then(|s| route(&topo, s, &args(v), readonly))
        };
        assert_eq!(
            on("get", &["GET", "bar"], true),
            None,
            "a READONLY read runs here"
        );
        let moved = Some(Reply::Error("MOVED 5061 127.0.0.1:7001".into()));
        assert_eq!(on("get", &["GET", "bar"], false), moved, "without READONLY");
        assert_eq!(
            on("set", &["SET", "bar", "1"], true),
            moved,
            "a write goes to the master"
        );
        assert_eq!(
            on("get", &["GET", "foo"], true),
            Some(Reply::Error("MOVED 12182 127.0.0.1:7002".into())),
            "another master's slot"
        );
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
