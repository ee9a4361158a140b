//! Failover of sett-server by Redis Sentinel (Debian's redis-sentinel), on
//! loopback: the recipe of server/examples/sentinel (3 sentinels, quorum 2, a
//! master and 2 replicas). Writers whose writes WAIT 1 acknowledged go on
//! through three kill -9s of the master, and the killed nodes come back as
//! replicas; redis-py's `Sentinel` and go-redis's `FailoverClient` write
//! through a failover.
//!
//! The sett-server nodes bind ports of their own choosing. A sentinel cannot:
//! it tells its peers its port in hello messages, and `port 0` turns its TCP
//! listener off (redis-server's meaning), so each sentinel gets a port the
//! kernel handed to a probe socket a moment before, and another if it turns
//! out taken. Every sentinel is stopped by pid, and by a watchdog if the test
//! process dies.

mod common;

use common::{ensure_tool, go_or_skip, python_or_skip, sentinel_or_skip, skip, Helper, Server};
use redis::{cmd, Connection, Value};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The name the sentinels monitor the group under.
const NAME: &str = "m";

/// One group at a time: three groups at once on 2 cores (with `go run`
/// building beside them) can miss a sentinel's 1.5 s down-after and fail
/// over a node that is only slow.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn connect(port: u16, timeout: Duration) -> redis::RedisResult<Connection> {
    let c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?
        .get_connection_with_timeout(timeout)?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    c.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(c)
}

/// `SENTINEL GET-MASTER-ADDR-BY-NAME`'s port from the first sentinel that answers.
fn master_port(sentinels: &[u16]) -> Option<u16> {
    sentinels.iter().find_map(|&p| {
        let mut c = connect(p, Duration::from_secs(1)).ok()?;
        let addr: Vec<String> = cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(NAME)
            .query(&mut c)
            .ok()?;
        addr.get(1)?.parse().ok()
    })
}

/// INFO replication of the node on `port` as fields, empty if it does not answer.
fn replication(port: u16) -> BTreeMap<String, String> {
    let Ok(mut c) = connect(port, Duration::from_secs(1)) else {
        return BTreeMap::new();
    };
    let text: String = cmd("INFO")
        .arg("replication")
        .query(&mut c)
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// Polls `what` every 100 ms until it holds or `limit` passes; the panic
/// message comes from `explain`.
fn wait_for(limit: Duration, mut what: impl FnMut() -> bool, explain: impl Fn() -> String) {
    let deadline = Instant::now() + limit;
    while !what() {
        assert!(Instant::now() < deadline, "{}", explain());
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct Sentinel {
    _process: Helper,
    port: u16,
    log: PathBuf,
}

/// One sett-server of the group, on the port it bound when it first started.
struct Node {
    port: u16,
    dir: PathBuf,
    /// `None` while it is killed.
    server: Option<Server>,
}

/// A master, two replicas and three sentinels watching them.
struct Group {
    root: tempfile::TempDir,
    nodes: Vec<Node>,
    sentinels: Vec<Sentinel>,
}

impl Group {
    fn start() -> Group {
        let root = tempfile::tempdir().expect("a temporary folder");
        let mut nodes = Vec::new();
        for i in 0..3 {
            let dir = root.path().join(format!("n{i}"));
            let server = match nodes.first() {
                None => Server::start(&dir, &[]),
                Some(Node { port, .. }) => {
                    Server::start(&dir, &["--replicaof", &format!("127.0.0.1 {port}")])
                }
            };
            nodes.push(Node {
                port: server.port,
                dir,
                server: Some(server),
            });
        }
        let master = nodes[0].port;
        let mut group = Group {
            root,
            nodes,
            sentinels: Vec::new(),
        };
        wait_for(
            Duration::from_secs(30),
            || {
                replication(master)
                    .get("connected_slaves")
                    .map(String::as_str)
                    == Some("2")
            },
            || format!("the replicas did not connect: {:?}", replication(master)),
        );
        for i in 0..3 {
            let s = group.start_sentinel(i, master);
            group.sentinels.push(s);
        }
        // Sentinel learns the replicas from the master's INFO and the other
        // sentinels from hello messages on __sentinel__:hello.
        let ports = group.sentinel_ports();
        wait_for(
            Duration::from_secs(30),
            || {
                ports.iter().all(|&p| {
                    let seen = sentinel_master(p);
                    seen.get("num-slaves").map(String::as_str) == Some("2")
                        && seen.get("num-other-sentinels").map(String::as_str) == Some("2")
                })
            },
            || format!("the sentinels did not find the group:\n{}", group.logs()),
        );
        group
    }

    fn start_sentinel(&self, i: usize, master: u16) -> Sentinel {
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a probe socket")
                .port();
            let conf = self.root.path().join(format!("sentinel{i}-{attempt}.conf"));
            let log = self.root.path().join(format!("sentinel{i}-{attempt}.log"));
            // down-after 1.5 s and failover-timeout 4 s: a sentinel starts a
            // failover of the same master 8 s after the last one at the earliest.
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\npidfile \"\"\nlogfile \"{}\"\ndir \"{}\"\n\
                 sentinel monitor {NAME} 127.0.0.1 {master} 2\n\
                 sentinel down-after-milliseconds {NAME} 1500\n\
                 sentinel failover-timeout {NAME} 4000\n\
                 sentinel parallel-syncs {NAME} 2\n",
                log.display(),
                self.root.path().display()
            );
            std::fs::write(&conf, text).expect("writing a sentinel's configuration");
            let process = Helper::spawn(Command::new("redis-sentinel").arg(&conf));
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                let pong = connect(port, Duration::from_millis(200))
                    .and_then(|mut c| cmd("PING").query::<String>(&mut c));
                if pong.is_ok_and(|p| p == "PONG") {
                    return Sentinel {
                        _process: process,
                        port,
                        log,
                    };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!(
                "sentinel {i} did not answer on port {port} (attempt {attempt}): {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("sentinel {i} did not start");
    }

    fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// The last lines of every sentinel's log, for a failure's message.
    fn logs(&self) -> String {
        let mut out = String::new();
        for s in &self.sentinels {
            let text = std::fs::read_to_string(&s.log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- sentinel :{}\n", s.port));
            for l in &lines[lines.len().saturating_sub(25)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    fn node(&mut self, port: u16) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on {port}"))
    }

    fn kill(&mut self, port: u16) {
        let server = self.node(port).server.take();
        server.expect("a running node on that port").kill9();
    }

    /// Starts a killed node again on its port, as it was: its saved state
    /// makes it a master again until Sentinel tells it otherwise.
    fn restart(&mut self, port: u16) {
        let node = self.node(port);
        node.server = Some(Server::start_on(&node.dir, port, &[]));
    }

    fn pid(&mut self, port: u16) -> u32 {
        let server = self.node(port).server.as_ref();
        server.expect("a running node on that port").child.id()
    }
}

/// `SENTINEL MASTER`'s fields, as one sentinel sees the group.
fn sentinel_master(port: u16) -> BTreeMap<String, String> {
    let Ok(mut c) = connect(port, Duration::from_secs(1)) else {
        return BTreeMap::new();
    };
    let flat: Vec<String> = cmd("SENTINEL")
        .arg("MASTER")
        .arg(NAME)
        .query(&mut c)
        .unwrap_or_default();
    flat.chunks(2)
        .filter(|kv| kv.len() == 2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

/// What a writer did: the writes WAIT 1 acknowledged, and how many it tried.
struct Written {
    acked: Vec<u64>,
    tries: u64,
    failed: u64,
}

fn key(writer: usize, i: u64) -> String {
    format!("w{writer}:{i}")
}

fn value(writer: usize, i: u64) -> String {
    format!("v{i}-{writer}-{}", "x".repeat((i % 200) as usize))
}

/// Writes `key(id, i)` for i = 0, 1, ... to whichever node the sentinels call
/// the master, each followed by WAIT 1 1000, until `stop`. A write that fails
/// (the master is gone, or is a replica now) is tried again after asking the
/// sentinels anew; `acked` counts the acknowledged ones for the test's pace.
fn writer(id: usize, sentinels: Vec<u16>, stop: Arc<AtomicBool>, acked: Arc<AtomicU64>) -> Written {
    let mut out = Written {
        acked: Vec::new(),
        tries: 0,
        failed: 0,
    };
    let mut link: Option<Connection> = None;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if link.is_none() {
            link =
                master_port(&sentinels).and_then(|p| connect(p, Duration::from_millis(500)).ok());
            if link.is_none() {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        }
        let Some(c) = link.as_mut() else { continue };
        out.tries += 1;
        let written = cmd("SET")
            .arg(key(id, i))
            .arg(value(id, i))
            .query::<Value>(c)
            .and_then(|_| cmd("WAIT").arg(1).arg(1000).query::<i64>(c));
        match written {
            Ok(n) => {
                if n >= 1 {
                    out.acked.push(i);
                    acked.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
            Err(_) => {
                out.failed += 1;
                link = None;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    out
}

#[test]
fn sentinel_fails_over_three_kill_9s_and_every_write_wait_acknowledged_survives() {
    if !sentinel_or_skip("sentinel-kill_loop") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut group = Group::start();
    let ports = group.sentinel_ports();
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|id| {
            let (ports, stop, acked) = (ports.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || writer(id, ports, stop, acked))
        })
        .collect();

    let mut failovers = Vec::new();
    let mut victim = None;
    for round in 0..3 {
        let master = master_port(&ports).expect("the sentinels name a master");
        // The node killed last round is back as a replica of the new master:
        // both replicas follow it again before it is killed in turn.
        if let Some(old) = victim {
            wait_for(
                Duration::from_secs(60),
                || {
                    let r = replication(old);
                    r.get("role").map(String::as_str) == Some("slave")
                        && r.get("master_port") == Some(&master.to_string())
                        && r.get("master_link_status").map(String::as_str) == Some("up")
                },
                || {
                    format!(
                        "round {round}: the old master :{old} did not rejoin :{master}: {:?}\n{}",
                        replication(old),
                        group.logs()
                    )
                },
            );
        }
        wait_for(
            Duration::from_secs(30),
            || {
                replication(master)
                    .get("connected_slaves")
                    .map(String::as_str)
                    == Some("2")
            },
            || {
                format!(
                    "round {round}: :{master} has not two replicas: {:?}",
                    replication(master)
                )
            },
        );
        let before = acked.load(Ordering::Relaxed);
        wait_for(
            Duration::from_secs(60),
            || acked.load(Ordering::Relaxed) >= before + 200,
            || format!("round {round}: the writers made no progress on :{master}"),
        );
        group.kill(master);
        let killed = Instant::now();
        wait_for(
            Duration::from_secs(60),
            || master_port(&ports).is_some_and(|p| p != master),
            || {
                format!(
                    "round {round}: no new master after :{master} was killed\n{}",
                    group.logs()
                )
            },
        );
        let new = master_port(&ports).expect("a new master");
        wait_for(
            Duration::from_secs(30),
            || replication(new).get("role").map(String::as_str) == Some("master"),
            || {
                format!(
                    "round {round}: :{new} was named master but is not one: {:?}",
                    replication(new)
                )
            },
        );
        failovers.push(killed.elapsed());
        // Writes go on on the new master before the old one comes back.
        let after = acked.load(Ordering::Relaxed);
        wait_for(
            Duration::from_secs(60),
            || acked.load(Ordering::Relaxed) >= after + 50,
            || {
                format!(
                    "round {round}: no acknowledged write on the new master :{new}\n{}",
                    group.logs()
                )
            },
        );
        group.restart(master);
        victim = Some(master);
    }
    stop.store(true, Ordering::Relaxed);
    let written: Vec<Written> = writers
        .into_iter()
        .map(|w| w.join().expect("a writer thread"))
        .collect();

    // Every acknowledged write is on the last master, and the last node
    // killed converges with it once Sentinel makes it a replica.
    // A read that fails (a node under load can be failed over once more, and
    // Sentinel then closes its clients) is tried again on the master named now.
    let mut link: Option<(u16, Connection)> = None;
    let mut get = |k: &str| -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if link.is_none() {
                link = master_port(&ports)
                    .and_then(|p| Some((p, connect(p, Duration::from_secs(5)).ok()?)));
            }
            if let Some((_, c)) = link.as_mut() {
                match cmd("GET").arg(k).query::<Option<String>>(c) {
                    Ok(v) => return v,
                    Err(e) => eprintln!("GET {k}: {e}; asking the sentinels again"),
                }
            }
            link = None;
            assert!(Instant::now() < deadline, "no master answered GET {k}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let (mut total, mut missing) = (0, Vec::new());
    for (id, w) in written.iter().enumerate() {
        for &i in &w.acked {
            total += 1;
            if get(&key(id, i)).as_deref() != Some(value(id, i).as_str()) {
                missing.push(key(id, i));
            }
        }
    }
    let master = master_port(&ports).expect("the sentinels name a master");
    let tries: u64 = written.iter().map(|w| w.tries).sum();
    let failed: u64 = written.iter().map(|w| w.failed).sum();
    eprintln!(
        "kill loop: {total} writes acknowledged by WAIT 1 of {tries} tried ({failed} failed), \
         {} missing on the last master :{master}; new master after {failovers:?}",
        missing.len()
    );
    assert!(total >= 3 * 250, "only {total} writes were acknowledged");
    assert!(
        missing.is_empty(),
        "acknowledged writes lost: {:?}",
        &missing[..missing.len().min(20)]
    );
    let old = victim.expect("a node was killed");
    wait_for(
        Duration::from_secs(60),
        || {
            let (r, m) = (replication(old), replication(master));
            r.get("master_port") == Some(&master.to_string())
                && r.get("master_link_status").map(String::as_str) == Some("up")
                && r.contains_key("slave_repl_offset")
                && r.get("slave_repl_offset") == m.get("master_repl_offset")
        },
        || {
            format!(
                "the last node killed did not catch up: {:?}",
                replication(old)
            )
        },
    );
    // Sentinel may still reconfigure a node (SLAVEOF then CLIENT KILL TYPE
    // normal), which closes our links: a digest cut short is taken again,
    // and the two must agree within the deadline.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let master = master_port(&ports).unwrap_or(master);
        let taken = (|| -> redis::RedisResult<_> {
            let mut r = connect(old, Duration::from_secs(5))?;
            let mut m = connect(master, Duration::from_secs(5))?;
            Ok((digest(&mut r)?, digest(&mut m)?))
        })();
        match taken {
            Ok((r, m)) if r == m => break,
            Ok((r, m)) if Instant::now() >= deadline => {
                assert_eq!(
                    r, m,
                    "the rejoined node :{old} differs from the master :{master}"
                )
            }
            Err(e) if Instant::now() >= deadline => {
                panic!(
                    "no digest of :{old} and :{master} within 60 s: {e}\n{}",
                    group.logs()
                )
            }
            Ok(_) => eprintln!("the rejoined node :{old} differs from :{master}; looking again"),
            Err(e) => eprintln!(
                "digest of :{old} and :{master}: {e}; taking it again\n{}",
                group.logs()
            ),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Every key with its value.
fn digest(c: &mut Connection) -> redis::RedisResult<BTreeMap<Vec<u8>, Vec<u8>>> {
    let keys: Vec<Vec<u8>> = cmd("KEYS").arg("*").query(c)?;
    let mut all = BTreeMap::new();
    for k in keys {
        let v: Option<Vec<u8>> = cmd("GET").arg(&k).query(c)?;
        if let Some(v) = v {
            all.insert(k, v);
        }
    }
    Ok(all)
}

#[test]
fn redis_py_sentinel_client_writes_through_a_failover() {
    if !sentinel_or_skip("sentinel-redis_py") {
        return;
    }
    let Some(python) = python_or_skip("sentinel-redis_py") else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut group = Group::start();
    let master = group.nodes[0].port;
    let out = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/sentinel_client.py"
        ))
        .arg(ports_arg(&group.sentinel_ports()))
        .arg(group.pid(master).to_string())
        .output()
        .expect("running the redis-py script");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("redis-py Sentinel: ok"),
        "redis-py Sentinel script failed:\n{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        group.logs()
    );
    eprintln!("{}", text.trim());
}

#[test]
fn go_redis_failover_client_writes_through_a_failover() {
    if !sentinel_or_skip("sentinel-go_redis") {
        return;
    }
    let Some(mut go) = go_or_skip("sentinel-go_redis") else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut group = Group::start();
    let master = group.nodes[0].port;
    let out = go
        .arg("failover")
        .arg(ports_arg(&group.sentinel_ports()))
        .arg(group.pid(master).to_string())
        .output()
        .expect("running go run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("go-redis FailoverClient: ok"),
        "go-redis failover program failed:\n{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        group.logs()
    );
    eprintln!("{}", text.trim());
}

fn ports_arg(ports: &[u16]) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn the_sentinel_recipe_script_fails_over_and_loses_no_wait_acknowledged_write() {
    if !sentinel_or_skip("sentinel-recipe") {
        return;
    }
    if !ensure_tool("redis-cli", "redis-tools") {
        skip(
            "sentinel-recipe-no_redis_cli",
            "redis-cli is not installed and apt-get could not install it",
        );
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let out = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/sentinel/failover.sh"
        ))
        .arg(common::BIN)
        .output()
        .expect("running server/examples/sentinel/failover.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.ends_with("PASS\n"),
        "the recipe failed:\n{stdout}\n{stderr}"
    );
    // It printed what it checked: how many writes WAIT acknowledged, and none missing.
    let acked: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("writes acknowledged by WAIT 1: "))
        .and_then(|l| l.strip_suffix(" of 300"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of acknowledged writes in:\n{stdout}"));
    assert!(
        acked >= 290,
        "only {acked} of 300 writes acknowledged:\n{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "acknowledged writes missing on the new master: 0 of {acked}\n"
        )),
        "{stdout}"
    );
}
