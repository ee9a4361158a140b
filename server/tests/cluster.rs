//! Cluster mode: three sett-server nodes with one topology file, on loopback,
//! checked through raw RESP and with real cluster clients (`redis-cli -c`,
//! `redis-benchmark --cluster`, redis-py's RedisCluster, go-redis's ClusterClient).
//!
//! Each node binds a port of its own choosing (`--port 0`) with no topology file
//! yet; once all listen, the test writes the file with their ports and sends each
//! `CLUSTER RELOAD`.

mod common;

use common::{ensure_tool, read_for, skip, Server};
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
    let tmp = tempfile::tempdir().expect("tempdir");
    let ids: Vec<String> = (1..=3).map(|i: u8| format!("{i}").repeat(40)).collect();
    let topology = tmp.path().join("topology");
    let nodes = (0..3)
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
    /// Writes the topology with the nodes' current ports and has every node reload it.
    fn publish(&self) {
        let mut text = String::from("# id address slots\n");
        for (i, node) in self.nodes.iter().enumerate() {
            text.push_str(&format!(
                "{} 127.0.0.1:{} {}\n",
                self.ids[i], node.port, RANGES[i]
            ));
        }
        std::fs::write(&self.topology, text).expect("writing the topology");
        for node in &self.nodes {
            assert_eq!(
                raw(node, "CLUSTER RELOAD\r\n"),
                "+OK\r\n",
                "node on {}",
                node.port
            );
        }
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

/// A virtualenv with redis-py under target/tmp, made once.
fn redis_py() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-venv");
    let python = venv.join("bin/python");
    let have = |p: &Path| {
        Command::new(p)
            .args(["-c", "import redis.cluster"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if have(&python) {
        return Some(python);
    }
    let made = Command::new("python3")
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success())
        && Command::new(venv.join("bin/pip"))
            .args(["install", "-q", "redis==8.1.0"])
            .status()
            .is_ok_and(|s| s.success());
    (made && have(&python)).then_some(python)
}

#[test]
fn redis_py_cluster_client_reads_and_writes_across_the_nodes() {
    let Some(python) = redis_py() else {
        skip(
            "cluster-redis_py-no_venv",
            "could not make a virtualenv with redis-py (python3 -m venv, pip)",
        );
        return;
    };
    let cl = start_cluster();
    let out = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/cluster_client.py"
        ))
        .arg(cl.nodes[1].port.to_string())
        .output()
        .expect("running the redis-py script");
    assert!(
        out.status.success(),
        "redis-py cluster script failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("redis-py RedisCluster: ok"));
}

#[test]
fn go_redis_cluster_client_routes_pipelines_across_the_nodes() {
    let has_go = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_go {
        skip("cluster-go_redis-no_go", "go is not installed");
        return;
    }
    let cl = start_cluster();
    // -race: the program's own goroutines (ForEachMaster's) are checked too.
    let out = Command::new("go")
        .args(["run", "-race", "."])
        .arg(format!("127.0.0.1:{}", cl.nodes[2].port))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/goredis"))
        .output()
        .expect("running go run");
    assert!(
        out.status.success(),
        "go-redis cluster program failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("go-redis ClusterClient: ok"));
}
