//! Replication: a master streams a checkpoint of its Db, then its change
//! feed, to each replica; a replica applies every change at the master's
//! version ([`sett::WriteBatch::set_version`]), so that a version (the
//! replication offset) names the same data on every node.
//!
//! - **Handshake** (replica to master, RESP): `PING`, `REPLCONF
//!   listening-port <port>`, `REPLCONF capa sett-v1`, then `PSYNC <replid>
//!   <version>`. The master answers `+CONTINUE <replid>` when its feed
//!   history still holds every change after `version` of that history, and
//!   `+FULLRESYNC <replid> <version>` otherwise. From there the connection
//!   carries [`wire`] frames one way and `REPLCONF ACK <version>` the other.
//! - **Full sync**: the master subscribes to its feed, takes a checkpoint
//!   (hard links, about as long as a flush), streams its files and removes
//!   it; then streams the feed from where the subscription began. The
//!   replica writes the files beside its directory, opens them once to check
//!   them, then swaps them in for its Db ([`install`]); changes at or below
//!   the checkpoint's version are already in it and are skipped.
//! - **History**: a node keeps its feed history (`--repl-backlog-size`) from
//!   its first replica on, and a replica from the start, so that after a
//!   failover its siblings resume from the new master without a full sync.
//!   The history is in memory: after a restart a replica that was fully
//!   caught up resumes, any other does a full sync.
//! - **Identity**: a master's replication ID (`replid`) names its write
//!   history; a replica takes its master's. A replica promoted by `REPLICAOF
//!   NO ONE` keeps the old ID as `replid2`, valid up to the version it had,
//!   and starts a new one. Both are kept in `<dir>.replication`, with the
//!   master a replica follows, so that a restarted replica follows again.
//! - **Back-pressure**: a writer never waits on a replica. A replica whose
//!   feed queue overflows falls behind; the master resumes it from the
//!   history, or closes the link and the replica reconnects (a full sync if
//!   the history no longer covers it).
//! - **Durable** for `WAIT`: a replica acknowledges a version once it has
//!   applied it and, unless it runs with `appendfsync no`, fsynced its log.

pub mod wire;

mod master;
mod replica;

use crate::commands::Shared;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub(crate) use master::{parse_psync, serve as serve_replica};

/// What `PSYNC` asked, kept until the connection is handed to [`serve_replica`].
#[derive(Debug, Clone)]
pub struct Psync {
    pub replid: String,
    pub version: u64,
    /// The port the replica listens on (`REPLCONF listening-port`).
    pub port: u16,
}

/// The capability a sett-server replica announces; a Redis replica, which
/// expects an RDB stream, does not, and its PSYNC is refused.
pub const CAPA: &str = "sett-v1";

const NO_ID: &str = "0000000000000000000000000000000000000000";

/// A replica's link to its master, as `INFO replication` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    Connect,
    Connecting,
    Sync,
    Connected,
}

impl LinkState {
    fn role_name(self) -> &'static str {
        match self {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Sync => "sync",
            LinkState::Connected => "connected",
        }
    }
}

#[derive(Debug, Clone)]
struct Link {
    host: String,
    port: u16,
    state: LinkState,
    last_io: Option<Instant>,
    down_since: Instant,
    /// The master's newest version, from its last heartbeat or change.
    master_version: u64,
    last_error: Option<String>,
    full_syncs: u64,
    partial_syncs: u64,
}

/// What a replica knows of its master (see [`Replication::following`]).
#[derive(Debug, Clone, Copy)]
pub struct Following {
    /// The link is up: synced and streaming.
    pub up: bool,
    /// The newest version the master announced.
    pub master_version: u64,
}

/// A replica as its master sees it.
#[derive(Debug, Clone)]
struct Follower {
    id: u64,
    ip: String,
    port: u16,
    state: &'static str,
    acked: u64,
    last_ack: Instant,
}

#[derive(Debug)]
struct State {
    replid: String,
    replid2: String,
    /// `replid2` is valid for versions up to this one; -1: no `replid2`.
    second_offset: i64,
    master: Option<Link>,
    followers: Vec<Follower>,
    full_syncs_served: u64,
    partial_syncs_served: u64,
}

/// A node's replication state; one per server, in [`Shared`].
#[derive(Debug)]
pub struct Replication {
    state: Mutex<State>,
    /// Notified when a follower acknowledges (WAIT waits on it).
    acked: Condvar,
    /// True while this node follows a master: writes from clients are refused.
    replica: AtomicBool,
    /// Moves on at every REPLICAOF; a replica thread of an older one stops.
    generation: AtomicU64,
    next_follower: AtomicU64,
    /// `<dir>.replication`: the replication ID and the master followed.
    state_file: PathBuf,
    backlog: usize,
}

/// 40 hex digits, as Redis's replication IDs.
pub(crate) fn new_replid() -> String {
    let mut out = String::with_capacity(40);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    for i in 0..3u64 {
        let mut h = RandomState::new().build_hasher();
        h.write_u64(t ^ i);
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(40);
    out
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What `<dir>.replication` says.
#[derive(Debug, Default, PartialEq, Eq)]
struct Saved {
    replid: Option<String>,
    master: Option<(String, u16)>,
}

fn parse_saved(text: &str) -> Saved {
    let mut s = Saved::default();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some("replid"), Some(id), None)
                if id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                s.replid = Some(id.to_string())
            }
            (Some("replicaof"), Some(host), Some(port)) => {
                if let Ok(p) = port.parse() {
                    s.master = Some((host.to_string(), p));
                }
            }
            _ => {}
        }
    }
    s
}

impl Replication {
    /// The state for the Db in `dir`: its saved replication ID, or a new one.
    /// Returns the master it followed before a restart, if any.
    pub fn load(dir: &Path, backlog: usize) -> (Replication, Option<(String, u16)>) {
        let state_file = PathBuf::from(format!("{}.replication", dir.display()));
        let saved = std::fs::read_to_string(&state_file)
            .map(|t| parse_saved(&t))
            .unwrap_or_default();
        let r = Replication {
            state: Mutex::new(State {
                replid: saved.replid.unwrap_or_else(new_replid),
                replid2: NO_ID.into(),
                second_offset: -1,
                master: None,
                followers: Vec::new(),
                full_syncs_served: 0,
                partial_syncs_served: 0,
            }),
            acked: Condvar::new(),
            replica: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            next_follower: AtomicU64::new(0),
            state_file,
            backlog,
        };
        (r, saved.master)
    }

    /// Writes `<dir>.replication` (a new file renamed over the old one).
    fn save(&self, st: &State) {
        let mut text = format!("replid {}\n", st.replid);
        if let Some(m) = &st.master {
            text.push_str(&format!("replicaof {} {}\n", m.host, m.port));
        }
        let tmp = self.state_file.with_extension("replication.tmp");
        let r = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.state_file));
        if let Err(e) = r {
            eprintln!("sett-server: saving {}: {e}", self.state_file.display());
        }
    }

    /// True while this node follows a master.
    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Acquire)
    }

    /// The master this node follows, as its link last saw it.
    pub fn following(&self) -> Option<Following> {
        lock(&self.state).master.as_ref().map(|m| Following {
            up: m.state == LinkState::Connected,
            master_version: m.master_version,
        })
    }

    /// Bytes of feed history kept for partial resyncs.
    pub fn backlog(&self) -> usize {
        self.backlog
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// REPLICAOF host port: follow that master (a thread connects and
    /// syncs); `None` (REPLICAOF NO ONE): become a master, keeping the data.
    pub fn set_master(&self, sh: &Arc<Shared>, target: Option<(String, u16)>, version: u64) {
        let mut st = lock(&self.state);
        let gen = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        match target {
            None => {
                if st.master.take().is_some() {
                    // A new history starts here; the old one is valid up to now.
                    st.replid2 = std::mem::replace(&mut st.replid, new_replid());
                    st.second_offset = version as i64;
                }
                self.replica.store(false, Ordering::Release);
            }
            Some((host, port)) => {
                let same = st
                    .master
                    .as_ref()
                    .is_some_and(|m| m.host == host && m.port == port);
                if same {
                    // Redis: already following it, nothing changes.
                    self.generation.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
                st.master = Some(Link {
                    host: host.clone(),
                    port,
                    state: LinkState::Connect,
                    last_io: None,
                    down_since: Instant::now(),
                    master_version: 0,
                    last_error: None,
                    full_syncs: 0,
                    partial_syncs: 0,
                });
                self.replica.store(true, Ordering::Release);
                replica::spawn(sh.clone(), host, port, gen);
            }
        }
        self.save(&st);
    }

    /// The ID and version a replica asks to continue from.
    fn psync_args(&self) -> String {
        lock(&self.state).replid.clone()
    }

    /// After a sync from a master whose ID is `replid`: this node's history is its.
    fn adopt(&self, replid: &str) {
        let mut st = lock(&self.state);
        if st.replid != replid {
            st.replid = replid.to_string();
            st.replid2 = NO_ID.into();
            st.second_offset = -1;
            self.save(&st);
        }
    }

    fn update_link(&self, gen: u64, f: impl FnOnce(&mut Link)) {
        if self.generation() != gen {
            return;
        }
        let mut st = lock(&self.state);
        if let Some(l) = st.master.as_mut() {
            f(l);
        }
    }

    /// Whether a PSYNC for `replid` at `version` may continue this node's history.
    fn may_continue(&self, replid: &str, version: u64, newest: u64) -> bool {
        let st = lock(&self.state);
        version <= newest
            && (replid == st.replid
                || (replid == st.replid2 && (version as i64) <= st.second_offset))
    }

    fn replid(&self) -> String {
        lock(&self.state).replid.clone()
    }

    fn add_follower(&self, ip: String, port: u16) -> u64 {
        let id = self.next_follower.fetch_add(1, Ordering::Relaxed) + 1;
        lock(&self.state).followers.push(Follower {
            id,
            ip,
            port,
            state: "wait_bgsave",
            acked: 0,
            last_ack: Instant::now(),
        });
        id
    }

    fn set_follower_state(&self, id: u64, state: &'static str, full: Option<bool>) {
        let mut st = lock(&self.state);
        match full {
            Some(true) => st.full_syncs_served += 1,
            Some(false) => st.partial_syncs_served += 1,
            None => {}
        }
        if let Some(f) = st.followers.iter_mut().find(|f| f.id == id) {
            f.state = state;
        }
    }

    fn ack(&self, id: u64, version: u64) {
        let mut st = lock(&self.state);
        if let Some(f) = st.followers.iter_mut().find(|f| f.id == id) {
            f.acked = f.acked.max(version);
            f.last_ack = Instant::now();
        }
        drop(st);
        self.acked.notify_all();
    }

    fn remove_follower(&self, id: u64) {
        lock(&self.state).followers.retain(|f| f.id != id);
        self.acked.notify_all();
    }

    /// WAIT: blocks until `n` followers acknowledged `version` or `timeout`
    /// passed (`None`: no limit); returns how many have.
    pub fn wait(&self, n: usize, version: u64, timeout: Option<Duration>) -> usize {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = lock(&self.state);
        loop {
            let have = st.followers.iter().filter(|f| f.acked >= version).count();
            // A node turned replica has no followers to wait for.
            if have >= n || self.is_replica() {
                return have;
            }
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return have;
                    }
                    left
                }
                None => Duration::from_secs(1),
            };
            st = self
                .acked
                .wait_timeout(st, left.min(Duration::from_secs(1)))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// The `# Replication` section of INFO.
    pub fn info(&self, version: u64) -> String {
        let st = lock(&self.state);
        let mut out = String::from("# Replication\r\n");
        match &st.master {
            Some(m) => {
                let up = m.state == LinkState::Connected;
                out.push_str(&format!(
                    "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{version}\r\nslave_repl_offset:{version}\r\n",
                    m.host,
                    m.port,
                    if up { "up" } else { "down" },
                    m.last_io.map_or(-1, |t| t.elapsed().as_secs() as i64),
                    u8::from(m.state == LinkState::Sync),
                ));
                if !up {
                    out.push_str(&format!(
                        "master_link_down_since_seconds:{}\r\n",
                        m.down_since.elapsed().as_secs()
                    ));
                }
                out.push_str(&format!(
                    "slave_priority:100\r\nslave_read_only:1\r\nreplica_announced:1\r\nsett_master_version:{}\r\nsett_full_syncs:{}\r\nsett_partial_syncs:{}\r\nsett_last_link_error:{}\r\n",
                    m.master_version,
                    m.full_syncs,
                    m.partial_syncs,
                    m.last_error.as_deref().unwrap_or("")
                ));
            }
            None => out.push_str("role:master\r\n"),
        }
        out.push_str(&format!("connected_slaves:{}\r\n", st.followers.len()));
        for (i, f) in st.followers.iter().enumerate() {
            out.push_str(&format!(
                "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
                f.ip,
                f.port,
                f.state,
                f.acked,
                f.last_ack.elapsed().as_secs()
            ));
        }
        out.push_str(&format!(
            "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{version}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:1\r\nrepl_backlog_size:{}\r\nsett_full_syncs_served:{}\r\nsett_partial_syncs_served:{}\r\n\r\n",
            st.replid, st.replid2, st.second_offset, self.backlog, st.full_syncs_served, st.partial_syncs_served
        ));
        out
    }

    /// ROLE's reply, as redis-server shapes it.
    pub fn role(&self, version: u64) -> crate::resp::Reply {
        use crate::resp::Reply;
        let st = lock(&self.state);
        match &st.master {
            Some(m) => Reply::Array(vec![
                Reply::text("slave"),
                Reply::text(m.host.clone()),
                Reply::Int(i64::from(m.port)),
                Reply::text(m.state.role_name()),
                Reply::Int(version as i64),
            ]),
            None => Reply::Array(vec![
                Reply::text("master"),
                Reply::Int(version as i64),
                Reply::Array(
                    st.followers
                        .iter()
                        .map(|f| {
                            Reply::Array(vec![
                                Reply::text(f.ip.clone()),
                                Reply::text(f.port.to_string()),
                                Reply::text(f.acked.to_string()),
                            ])
                        })
                        .collect(),
                ),
            ]),
        }
    }
}

/// Puts the Db a full sync wrote into `synced` in place of this node's Db:
/// opens it once to check it (the old Db serves until then), then, with
/// commands held off, closes the old Db, renames its directory to `<dir>.old`,
/// renames `synced` to `<dir>`, opens it and removes the old one. A crash in
/// between leaves `<dir>.old` and `<dir>` or `synced`, which
/// [`recover_dirs`] sorts out at the next start.
pub fn install(sh: &Shared, synced: &Path) -> Result<(), String> {
    let dir = PathBuf::from(&sh.settings.dir);
    let old = PathBuf::from(format!("{}.old", dir.display()));
    let probe = sett::Db::open(sh.engine_options(synced))
        .map_err(|e| format!("the synced copy in {} does not open: {e}", synced.display()))?;
    probe
        .close()
        .map_err(|e| format!("closing the synced copy: {e}"))?;
    drop(probe);
    let mut db = sh.db_write();
    if let Err(e) = db.close() {
        eprintln!("sett-server: closing the Db before a full sync's swap: {e}");
    }
    let _ = std::fs::remove_dir_all(&old);
    let swapped = std::fs::rename(&dir, &old)
        .and_then(|()| std::fs::rename(synced, &dir))
        .and_then(|()| sync_parent(&dir));
    let opened = match swapped {
        Ok(()) => sett::Db::open(sh.engine_options(&dir)).map_err(|e| e.to_string()),
        Err(e) => Err(format!("swapping directories: {e}")),
    };
    match opened {
        Ok(new) => {
            *db = new;
            drop(db);
            let _ = std::fs::remove_dir_all(&old);
            Ok(())
        }
        Err(why) => {
            // Back to what it had.
            if old.exists() {
                let _ = std::fs::remove_dir_all(&dir);
                let _ = std::fs::rename(&old, &dir);
            }
            match sett::Db::open(sh.engine_options(&dir)) {
                Ok(back) => *db = back,
                Err(e) => eprintln!(
                    "sett-server: reopening {} after a failed swap: {e}",
                    dir.display()
                ),
            }
            Err(why)
        }
    }
}

fn sync_parent(dir: &Path) -> std::io::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()
}

/// At start: finishes or undoes a swap a crash interrupted (see [`install`])
/// and removes a partial full sync.
pub fn recover_dirs(dir: &Path) -> std::io::Result<()> {
    let old = PathBuf::from(format!("{}.old", dir.display()));
    let synced = PathBuf::from(format!("{}.sync", dir.display()));
    if !dir.exists() && old.exists() {
        if synced.exists() {
            std::fs::rename(&synced, dir)?;
        } else {
            std::fs::rename(&old, dir)?;
        }
    }
    if old.exists() {
        std::fs::remove_dir_all(&old)?;
    }
    if synced.exists() {
        std::fs::remove_dir_all(&synced)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_saved_state_reads_back_and_ignores_what_it_does_not_know() {
        let id = "a".repeat(40);
        let s = parse_saved(&format!(
            "replid {id}\nreplicaof 127.0.0.1 7001\nfuture thing\n"
        ));
        assert_eq!(
            s,
            Saved {
                replid: Some(id),
                master: Some(("127.0.0.1".into(), 7001)),
            }
        );
        assert_eq!(
            parse_saved("replid short\nreplicaof h notaport\n"),
            Saved::default()
        );
    }

    #[test]
    fn replication_ids_are_40_hex_digits_and_differ() {
        let (a, b) = (new_replid(), new_replid());
        assert_eq!(a.len(), 40);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn an_interrupted_swap_is_finished_or_undone_at_start() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("db");
        let (old, synced) = (root.path().join("db.old"), root.path().join("db.sync"));
        // Crash after dir -> old, before synced -> dir: the synced copy wins.
        std::fs::create_dir(&old).unwrap();
        std::fs::create_dir(&synced).unwrap();
        std::fs::write(synced.join("mark"), b"new").unwrap();
        recover_dirs(&dir).unwrap();
        assert_eq!(std::fs::read(dir.join("mark")).unwrap(), b"new");
        assert!(!old.exists() && !synced.exists());
        // A partial full sync beside an intact Db is removed.
        std::fs::create_dir(&synced).unwrap();
        recover_dirs(&dir).unwrap();
        assert!(dir.join("mark").exists() && !synced.exists());
    }
}
