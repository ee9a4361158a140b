//! Cluster mode: three sett-server nodes with one topology file, on loopback,
//! checked through raw RESP and with real cluster clients (`redis-cli -c`,
//! `redis-benchmark --cluster`, redis-py's RedisCluster, go-redis's ClusterClient).
//!
//! Each node binds a port of its own choosing (`--port 0`) with no topology file
//! yet; once all listen, the test writes the file with their ports and sends each
//! `CLUSTER RELOAD`.

mod common;

use common::{ensure_tool, go_or_skip, python_or_skip, read_for, skip, Server};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const RANGES: [&str; 3] = ["0-5460", "5461-10922", "10923-16383"];

struct Cluster {
    nodes: Vec<Server>,
    ids: Vec<String>,
    topology: PathBuf,
    _tmp: tempfile::TempDir,
}

fn start_cluster() -> Cluster {
    start_nodes(3)
}

/// Three masters, each with a replica: node `3 + i` replicates node `i`.
fn start_cluster_with_replicas() -> Cluster {
    start_nodes(6)
}

fn start_nodes(n: usize) -> Cluster {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ids: Vec<String> = (1..=n as u8).map(|i| format!("{i}").repeat(40)).collect();
    let topology = tmp.path().join("topology");
    let nodes = (0..n)
        .map(|i| start_node(&tmp.path().join(format!("node{i}")), &topology, &ids[i]))
        .collect();
    let cl = Cluster {
        nodes,
        ids,
        topology,
        _tmp: tmp,
    };
    for node in &cl.nodes {
        // No file yet: the node serves no slot.
        assert_eq!(
            raw(node, "GET foo\r\n"),
            "-CLUSTERDOWN Hash slot 12182 not served\r\n"
        );
    }
    cl.publish();
    cl
}

impl Cluster {
    /// Writes the topology with the nodes' current ports and has every node
    /// reload it: nodes 0-2 serve RANGES, and node `3 + i` replicates node `i`.
    fn publish(&self) {
        let roles: Vec<String> = (0..self.nodes.len())
            .map(|i| match RANGES.get(i) {
                Some(r) => r.to_string(),
                None => format!("replica {}", self.ids[i - RANGES.len()]),
            })
            .collect();
        let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
        publish_topology(&self.topology, &self.ids, &self.nodes, &roles);
    }
}

/// Writes a topology file, one line per node (its id, its port and
/// `roles[i]`: slot ranges or `replica <id>`), and has every node reload it.
fn publish_topology(topology: &Path, ids: &[String], nodes: &[Server], roles: &[&str]) {
    let mut text = String::from("# id address slots\n");
    for (i, node) in nodes.iter().enumerate() {
        text.push_str(&format!(
            "{} 127.0.0.1:{} {}\n",
            ids[i], node.port, roles[i]
        ));
    }
    std::fs::write(topology, text).expect("writing the topology");
    for node in nodes {
        assert_eq!(
            raw(node, "CLUSTER RELOAD\r\n"),
            "+OK\r\n",
            "node on {}",
            node.port
        );
    }
}

fn start_node(dir: &Path, topology: &Path, id: &str) -> Server {
    let topo = topology.display().to_string();
    Server::start(
        dir,
        &[
            "--cluster-config",
            &topo,
            "--cluster-myid",
            id,
            "--appendfsync",
            "always",
        ],
    )
}

/// Sends inline commands on a fresh connection and returns what came back.
fn raw(node: &Server, commands: &str) -> String {
    let mut s = node.raw();
    s.write_all(commands.as_bytes()).expect("write");
    String::from_utf8_lossy(&read_for(&mut s, Duration::from_millis(400))).into_owned()
}

#[test]
fn cluster_commands_describe_the_topology_and_keys_of_other_nodes_are_moved() {
    let mut cl = start_cluster();
    let ports: Vec<u16> = cl.nodes.iter().map(|n| n.port).collect();
    let n0 = &cl.nodes[0];
    // foo is in slot 12182 (node 3), bar in 5061 (node 1).
    assert_eq!(raw(n0, "CLUSTER KEYSLOT foo\r\n"), ":12182\r\n");
    assert_eq!(
        raw(n0, "GET foo\r\n"),
        format!("-MOVED 12182 127.0.0.1:{}\r\n", ports[2])
    );
    assert_eq!(raw(n0, "SET bar 1\r\nGET bar\r\n"), "+OK\r\n$1\r\n1\r\n");
    assert_eq!(
        raw(n0, "MSET bar 1 foo 2\r\nDEL bar foo\r\n"),
        "-CROSSSLOT Keys in request don't hash to the same slot\r\n".repeat(2)
    );
    // Hash tags put several keys in one slot: {bar} is node 1's.
    assert_eq!(
        raw(n0, "MSET {bar}a 1 {bar}b 2\r\nMGET {bar}a {bar}b\r\n"),
        "+OK\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        raw(n0, "CLUSTER MYID\r\n"),
        format!("$40\r\n{}\r\n", cl.ids[0])
    );
    assert_eq!(raw(n0, "READONLY\r\nREADWRITE\r\n"), "+OK\r\n+OK\r\n");
    let info = raw(&cl.nodes[1], "CLUSTER INFO\r\n");
    assert!(
        info.contains("cluster_state:ok")
            && info.contains("cluster_slots_assigned:16384")
            && info.contains("cluster_known_nodes:3"),
        "{info}"
    );
    let nodes = raw(&cl.nodes[1], "CLUSTER NODES\r\n");
    assert!(
        nodes.contains(&format!(
            "{} 127.0.0.1:{}@{} myself,master - 0 0 1 connected 5461-10922",
            cl.ids[1],
            ports[1],
            u32::from(ports[1]) + 10000
        )),
        "{nodes}"
    );
    assert_eq!(
        nodes.matches(" master ").count() + nodes.matches("myself,master").count(),
        3,
        "{nodes}"
    );
    let slots = raw(n0, "CLUSTER SLOTS\r\n");
    assert!(
        slots.starts_with(&format!(
            "*3\r\n*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:{}\r\n$40\r\n{}",
            ports[0], cl.ids[0]
        )),
        "{slots}"
    );
    let shards = raw(n0, "HELLO 3\r\nCLUSTER SHARDS\r\n");
    assert!(
        shards.contains(
            "*3\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*1\r\n%7\r\n"
        ),
        "{shards}"
    );
    let info = raw(n0, "INFO cluster\r\n");
    assert!(info.contains("cluster_enabled:1"), "{info}");
    // bar, {bar}a and {bar}b: all hash "bar".
    assert_eq!(raw(n0, "CLUSTER COUNTKEYSINSLOT 5061\r\n"), ":3\r\n");

    // Keys are stored behind their 2-byte slot: a slot is a key prefix on disk.
    assert!(cl.nodes[0].terminate(), "node 1 did not shut down cleanly");
    let mut opts = sett::Options::new(&cl.nodes[0].dir);
    opts.read_only = true;
    let db = sett::Db::open(opts).expect("opening node 1's directory");
    let mut keys = Vec::new();
    for item in db.iter(sett::IterOptions::default()).expect("iter") {
        keys.push(item.expect("item").0);
    }
    let mut want = vec![[&5061u16.to_be_bytes()[..], b"bar"].concat()];
    let tag = 5061u16.to_be_bytes();
    want.push([&tag[..], b"{bar}a"].concat());
    want.push([&tag[..], b"{bar}b"].concat());
    assert_eq!(keys, want);
    drop(db);
    // Restarted, node 1 listens on another port: it reads the file (its old port)
    // at start, and the others learn the new port from the rewritten file.
    let dir = cl.nodes[0].dir.clone();
    cl.nodes[0] = start_node(&dir, &cl.topology, &cl.ids[0]);
    assert_eq!(raw(&cl.nodes[0], "GET bar\r\n"), "$1\r\n1\r\n");
    cl.publish();
    assert_eq!(
        raw(&cl.nodes[2], "GET bar\r\n"),
        format!("-MOVED 5061 127.0.0.1:{}\r\n", cl.nodes[0].port)
    );
    // A file the node cannot use leaves the topology in force.
    std::fs::write(&cl.topology, "not a topology\n").expect("writing the topology");
    let reply = raw(&cl.nodes[2], "CLUSTER RELOAD\r\nGET bar\r\n");
    assert!(
        reply.starts_with("-ERR CLUSTER RELOAD: configuration: ")
            && reply.ends_with(&format!("-MOVED 5061 127.0.0.1:{}\r\n", cl.nodes[0].port)),
        "{reply}"
    );
}

#[test]
fn redis_cli_follows_moved_and_redis_benchmark_runs_in_cluster_mode() {
    if !ensure_tool("redis-cli", "redis-tools") || !ensure_tool("redis-benchmark", "redis-tools") {
        skip(
            "cluster-redis_cli-no_redis_tools",
            "redis-tools is not installed and apt-get could not install it",
        );
        return;
    }
    let cl = start_cluster();
    let port = |i: usize| cl.nodes[i].port.to_string();
    let cli = |p: &str, args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-c", "-h", "127.0.0.1", "-p", p])
            .args(args)
            .output()
            .expect("running redis-cli");
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // Written through node 1, read through node 2: both follow -MOVED to node 3.
    assert_eq!(cli(&port(0), &["SET", "foo", "bar"]), "OK");
    assert_eq!(cli(&port(1), &["GET", "foo"]), "bar");
    assert_eq!(
        raw(&cl.nodes[2], "GET foo\r\n"),
        "$3\r\nbar\r\n",
        "foo lives on node 3"
    );
    let out = Command::new("redis-benchmark")
        .args([
            "--cluster",
            "-h",
            "127.0.0.1",
            "-p",
            &port(0),
            "-t",
            "set,get",
            "-n",
            "3000",
            "-c",
            "10",
            "-r",
            "1000",
            "-q",
        ])
        .output()
        .expect("running redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "redis-benchmark: {out:?}");
    for test in ["SET:", "GET:"] {
        assert!(
            text.contains(test) && text.contains("requests per second"),
            "{text}"
        );
    }
    assert!(!text.contains("Error") && !text.contains("MOVED"), "{text}");
    // Its keys went to every node.
    for node in &cl.nodes {
        let size = raw(node, "DBSIZE\r\n");
        let n: i64 = size.trim_start_matches(':').trim().parse().unwrap_or(0);
        assert!(
            n >= 1,
            "node on {} got no benchmark keys: {size:?}",
            node.port
        );
    }
}

/// Runs a client program and checks that it exited well and printed `ok`.
fn run_client(cmd: &mut Command, what: &str, ok: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(ok),
        "{what} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const CLUSTER_PY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster_client.py");

#[test]
fn redis_py_cluster_client_reads_and_writes_across_the_nodes() {
    let Some(python) = python_or_skip("cluster-redis_py") else {
        return;
    };
    let cl = start_cluster();
    run_client(
        Command::new(python)
            .arg(CLUSTER_PY)
            .arg(cl.nodes[1].port.to_string()),
        "the redis-py cluster script",
        "redis-py RedisCluster: ok",
    );
}

#[test]
fn go_redis_cluster_client_routes_pipelines_across_the_nodes() {
    let Some(mut go) = go_or_skip("cluster-go_redis") else {
        return;
    };
    let cl = start_cluster();
    run_client(
        go.arg(format!("127.0.0.1:{}", cl.nodes[2].port)),
        "the go-redis cluster program",
        "go-redis ClusterClient: ok",
    );
}

#[test]
fn redis_py_cluster_client_reads_from_the_replicas_it_sends_readonly() {
    let Some(python) = python_or_skip("cluster-redis_py_replicas") else {
        return;
    };
    let cl = start_cluster_with_replicas();
    run_client(
        Command::new(python)
            .arg(CLUSTER_PY)
            .args(["replicas", &cl.nodes[1].port.to_string()]),
        "the redis-py replica-read script",
        "redis-py RedisCluster replicas: ok",
    );
}

#[test]
fn go_redis_cluster_client_with_readonly_reads_from_the_replicas() {
    let Some(mut go) = go_or_skip("cluster-go_redis_replicas") else {
        return;
    };
    let cl = start_cluster_with_replicas();
    run_client(
        go.args(["replicas", &format!("127.0.0.1:{}", cl.nodes[4].port)]),
        "the go-redis replica-read program",
        "go-redis ClusterClient ReadOnly: ok",
    );
}

/// Polls `raw(node, commands)` until it returns `want` (at most 30 s).
fn eventually(node: &Server, commands: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = raw(node, commands);
        if got == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node on {}: {commands:?} gave {got:?}, want {want:?}",
            node.port
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn cluster_replicas_serve_readonly_reads_and_cluster_failover_moves_their_masters_slots() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ids: Vec<String> = (1..=5).map(|i: u8| format!("{i}").repeat(40)).collect();
    let topology = tmp.path().join("topology");
    let mut nodes: Vec<Server> = (0..5)
        .map(|i| start_node(&tmp.path().join(format!("node{i}")), &topology, &ids[i]))
        .collect();
    // Nodes 0-2 are masters as in start_cluster; 3 replicates 0, and 4 replicates 2.
    let publish =
        |nodes: &[Server], roles: [&str; 5]| publish_topology(&topology, &ids, nodes, &roles);
    let (of0, of2) = (format!("replica {}", ids[0]), format!("replica {}", ids[2]));
    publish(&nodes, [RANGES[0], RANGES[1], RANGES[2], &of0, &of2]);
    let port: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let moved = |slot: u16, to: u16| format!("-MOVED {slot} 127.0.0.1:{to}\r\n");

    // bar (slot 5061) lives on node 0, foo (12182) on node 2; their replicas follow.
    assert_eq!(raw(&nodes[0], "SET bar 1\r\n"), "+OK\r\n");
    assert_eq!(raw(&nodes[2], "SET foo 2\r\n"), "+OK\r\n");
    eventually(&nodes[3], "READONLY\r\nGET bar\r\n", "+OK\r\n$1\r\n1\r\n");
    eventually(&nodes[4], "READONLY\r\nGET foo\r\n", "+OK\r\n$1\r\n2\r\n");
    // Without READONLY a replica redirects; a write always goes to the master;
    // another master's slot is redirected there.
    assert_eq!(raw(&nodes[3], "GET bar\r\n"), moved(5061, port[0]));
    assert_eq!(
        raw(
            &nodes[3],
            "READONLY\r\nSET bar 9\r\nGET foo\r\nREADWRITE\r\nGET bar\r\n"
        ),
        format!(
            "+OK\r\n{}{}+OK\r\n{}",
            moved(5061, port[0]),
            moved(12182, port[2]),
            moved(5061, port[0])
        )
    );

    // The replicas in CLUSTER SLOTS, NODES, REPLICAS and SHARDS.
    let slots = raw(&nodes[1], "CLUSTER SLOTS\r\n");
    assert!(
        slots.starts_with(&format!(
            "*3\r\n*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:{}\r\n$40\r\n{}\r\n*3\r\n$9\r\n127.0.0.1\r\n:{}\r\n$40\r\n{}\r\n*3\r\n",
            port[0], ids[0], port[3], ids[3]
        )),
        "{slots}"
    );
    let line3 = |flags: &str, master: &str| {
        format!(
            "{} 127.0.0.1:{}@{} {flags} {master} 0 0 1 connected\n",
            ids[3],
            port[3],
            u32::from(port[3]) + 10000
        )
    };
    let nodes_text = raw(&nodes[1], "CLUSTER NODES\r\n");
    assert!(
        nodes_text.contains(&line3("slave", &ids[0])),
        "{nodes_text}"
    );
    let mine = raw(&nodes[3], "CLUSTER NODES\r\n");
    assert!(mine.contains(&line3("myself,slave", &ids[0])), "{mine}");
    let replicas = raw(&nodes[1], &format!("CLUSTER REPLICAS {}\r\n", ids[0]));
    let line = line3("slave", &ids[0]);
    let line = line.trim_end();
    assert_eq!(replicas, format!("*1\r\n${}\r\n{line}\r\n", line.len()));
    assert!(raw(&nodes[1], &format!("CLUSTER REPLICAS {}\r\n", ids[3]))
        .starts_with("-ERR The specified node is not a master"));
    let shards = raw(&nodes[1], "HELLO 3\r\nCLUSTER SHARDS\r\n");
    assert!(
        shards.contains(
            "*3\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5460\r\n$5\r\nnodes\r\n*2\r\n%7\r\n"
        ) && shards.contains("$4\r\nrole\r\n$7\r\nreplica\r\n"),
        "{shards}"
    );
    assert!(raw(&nodes[0], "CLUSTER FAILOVER\r\n")
        .starts_with("-ERR You should send CLUSTER FAILOVER to a replica"));
    // A bad option changes nothing: node 3 still replicates and serves bar.
    assert_eq!(
        raw(
            &nodes[3],
            "CLUSTER FAILOVER SOON\r\nREADONLY\r\nGET bar\r\n"
        ),
        "-ERR syntax error\r\n+OK\r\n$1\r\n1\r\n"
    );
    assert_eq!(raw(&nodes[3], "GET bar\r\n"), moved(5061, port[0]));

    // CLUSTER FAILOVER on node 3, its master up: node 3 takes slots 0-5460,
    // node 0 becomes its replica (continuing its history), and every node
    // learns it from the rewritten file.
    assert_eq!(raw(&nodes[3], "CLUSTER FAILOVER\r\n"), "+OK\r\n");
    assert_eq!(
        raw(&nodes[3], "SET bar 3\r\nGET bar\r\n"),
        "+OK\r\n$1\r\n3\r\n"
    );
    for other in [0, 1, 2, 4] {
        eventually(&nodes[other], "GET bar\r\n", &moved(5061, port[3]));
    }
    eventually(&nodes[0], "READONLY\r\nGET bar\r\n", "+OK\r\n$1\r\n3\r\n");
    let info = raw(&nodes[0], "INFO replication\r\n");
    assert!(
        info.contains(&format!("master_port:{}\r\n", port[3]))
            && info.contains("sett_full_syncs:0\r\n")
            && info.contains("sett_partial_syncs:1\r\n"),
        "{info}"
    );
    let file = std::fs::read_to_string(&topology).expect("reading the topology");
    assert!(
        file.contains(&format!(
            "{} 127.0.0.1:{} replica {}\n",
            ids[0], port[0], ids[3]
        )) && file.contains(&format!("{} 127.0.0.1:{} 0-5460\n", ids[3], port[3])),
        "{file}"
    );

    // Node 2 dies: its replica refuses a plain failover, FORCE takes over.
    // The replica asks its master before it takes over, so the refusal does
    // not wait for its replication link to notice the kill.
    nodes[2].kill9();
    assert_eq!(
        raw(&nodes[4], "CLUSTER FAILOVER\r\n"),
        "-ERR Master is down or failed, please use CLUSTER FAILOVER FORCE\r\n"
    );
    assert_eq!(raw(&nodes[4], "CLUSTER FAILOVER FORCE\r\n"), "+OK\r\n");
    assert_eq!(
        raw(&nodes[4], "GET foo\r\nSET foo 4\r\n"),
        "$1\r\n2\r\n+OK\r\n"
    );
    eventually(&nodes[1], "GET foo\r\n", &moved(12182, port[4]));
    // Back (on a new port), node 2 reads the file: it is node 4's replica now.
    nodes[2] = start_node(&tmp.path().join("node2"), &topology, &ids[2]);
    let (to3, to4) = (format!("replica {}", ids[3]), format!("replica {}", ids[4]));
    publish(&nodes, [&to3, RANGES[1], &to4, RANGES[0], RANGES[2]]);
    eventually(&nodes[2], "READONLY\r\nGET foo\r\n", "+OK\r\n$1\r\n4\r\n");
    assert_eq!(raw(&nodes[2], "GET foo\r\n"), moved(12182, port[4]));
}

#[test]
fn replicaof_on_the_command_line_is_refused_in_cluster_mode_and_the_node_does_not_start() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let topology = tmp.path().join("topology");
    std::fs::write(
        &topology,
        format!("{} 127.0.0.1:1 0-16383\n", "1".repeat(40)),
    )
    .expect("writing the topology");
    let dir = tmp.path().join("node");
    let mut child = Command::new(common::BIN)
        .arg("--dir")
        .arg(&dir)
        .args(["--bind", "127.0.0.1", "--port", "0", "--cluster-config"])
        .arg(&topology)
        .args([
            "--cluster-myid",
            &"1".repeat(40),
            "--replicaof",
            "127.0.0.1 6379",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running sett-server");
    // A node that started anyway is stopped by pid, not waited for.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("waiting for sett-server").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sett-server with --replicaof in cluster mode kept running");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child
        .wait_with_output()
        .expect("reading sett-server's output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the node exited well: {stderr}");
    assert!(
        stderr.contains(
            "--replicaof is not allowed in cluster mode: the topology file names replicas"
        ),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
}
