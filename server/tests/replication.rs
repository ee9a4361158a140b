//! Replication between sett-server processes on loopback: full sync, the
//! change feed, read-only replicas, WAIT, and damaged streams from a master.

mod common;

use common::Server;
use redis::{cmd, Connection, RedisResult, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

fn q<T: redis::FromRedisValue>(c: &mut Connection, args: &[&str]) -> RedisResult<T> {
    let mut command = cmd(args[0]);
    for a in &args[1..] {
        command.arg(*a);
    }
    command.query(c)
}

fn ok(c: &mut Connection, args: &[&str]) {
    q::<Value>(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
}

fn info(c: &mut Connection) -> HashMap<String, String> {
    let text: String = q(c, &["INFO", "replication"]).expect("INFO replication");
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

fn field(c: &mut Connection, name: &str) -> String {
    info(c).get(name).cloned().unwrap_or_default()
}

/// Waits until the replica's link is up and it has applied the master's newest version.
fn caught_up(master: &mut Connection, replica: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let want = field(master, "master_repl_offset");
        let r = info(replica);
        if r.get("master_link_status").map(String::as_str) == Some("up")
            && r.get("slave_repl_offset") == Some(&want)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not catch up to {want}: {r:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every key with its value and absolute expiry (EXPIRETIME: -1 for none).
fn digest(c: &mut Connection) -> BTreeMap<Vec<u8>, (Vec<u8>, i64)> {
    let keys: Vec<Vec<u8>> = q(c, &["KEYS", "*"]).expect("KEYS");
    let mut out = BTreeMap::new();
    for k in keys {
        let v: Option<Vec<u8>> = cmd("GET").arg(&k).query(c).expect("GET");
        let t: i64 = cmd("EXPIRETIME").arg(&k).query(c).expect("EXPIRETIME");
        if let Some(v) = v {
            out.insert(k, (v, t));
        }
    }
    out
}

/// Overwrites, deletes, TTLs, counters and a batch, on keys `p:*`.
fn write_mix(c: &mut Connection, p: &str, n: usize) {
    for i in 0..n {
        ok(
            c,
            &[
                "SET",
                &format!("{p}:{i}"),
                &format!("v{i}-{}", "x".repeat(i % 300)),
            ],
        );
    }
    for i in (0..n).step_by(7) {
        ok(c, &["SET", &format!("{p}:{i}"), "overwritten"]);
    }
    for i in (0..n).step_by(5) {
        ok(c, &["DEL", &format!("{p}:{i}")]);
    }
    for i in (1..n).step_by(11) {
        ok(c, &["EXPIRE", &format!("{p}:{i}"), "3600"]);
    }
    ok(c, &["SET", &format!("{p}:ttl"), "soon", "EX", "7200"]);
    ok(c, &["INCRBY", &format!("{p}:counter"), "41"]);
    ok(c, &["INCR", &format!("{p}:counter")]);
    ok(
        c,
        &["MSET", &format!("{p}:m1"), "a", &format!("{p}:m2"), "b"],
    );
    ok(c, &["APPEND", &format!("{p}:m1"), "ppended"]);
}

#[test]
fn a_replica_full_syncs_then_follows_the_feed_and_holds_the_masters_data() {
    let (md, rd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Server::start(&md.path().join("db"), &[]);
    let mut m = master.client();
    write_mix(&mut m, "before", 400);
    let port = master.port.to_string();
    let replica = Server::start(
        &rd.path().join("db"),
        &["--replicaof", &format!("127.0.0.1 {port}")],
    );
    let mut r = replica.client();
    caught_up(&mut m, &mut r);
    let first = digest(&mut m);
    assert!(first.len() > 300, "{} keys", first.len());
    assert_eq!(digest(&mut r), first, "after the full sync");
    assert_eq!(field(&mut r, "sett_full_syncs"), "1");

    // The feed: the same mix after the sync, and WAIT for the replica.
    write_mix(&mut m, "after", 300);
    let acked: i64 = q(&mut m, &["WAIT", "1", "5000"]).unwrap();
    assert_eq!(acked, 1, "WAIT 1 saw no acknowledgement");
    caught_up(&mut m, &mut r);
    assert_eq!(digest(&mut r), digest(&mut m), "after following the feed");
    assert_eq!(field(&mut r, "sett_full_syncs"), "1", "no second full sync");

    // Read-only, and ROLE / INFO as Sentinel and clients read them.
    let refused = q::<Value>(&mut r, &["SET", "x", "1"])
        .unwrap_err()
        .to_string();
    assert!(refused.contains("read only replica"), "{refused}");
    assert!(q::<Value>(&mut r, &["GET", "x"]).is_ok());
    let mi = info(&mut m);
    assert_eq!(mi["role"], "master");
    assert_eq!(mi["connected_slaves"], "1");
    assert!(mi["slave0"].contains("state=online"), "{}", mi["slave0"]);
    assert!(
        mi["slave0"].contains(&format!("port={}", replica.port)),
        "{}",
        mi["slave0"]
    );
    assert_eq!(mi["master_replid"].len(), 40);
    let ri = info(&mut r);
    assert_eq!(ri["role"], "slave");
    assert_eq!(ri["master_port"], port);
    assert_eq!(
        ri["master_replid"], mi["master_replid"],
        "a replica takes its master's ID"
    );
    let role: Vec<Value> = q(&mut r, &["ROLE"]).unwrap();
    assert_eq!(role.len(), 5);
    assert_eq!(role[0], Value::BulkString(b"slave".to_vec()));
    assert_eq!(role[3], Value::BulkString(b"connected".to_vec()));
}

/// A stand-in master that answers the handshake and then sends `stream`.
fn fake_master(reply: &'static str, stream: Vec<u8>) -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        // PING, REPLCONF x2, PSYNC: each a RESP array; answer after each.
        for answer in ["+PONG\r\n", "+OK\r\n", "+OK\r\n", reply] {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let n: usize = line.trim()[1..].parse().unwrap();
            for _ in 0..2 * n {
                line.clear();
                r.read_line(&mut line).unwrap();
            }
            s.write_all(answer.as_bytes()).unwrap();
        }
        s.write_all(&stream).unwrap();
        // Hold the link a moment, then close it.
        std::thread::sleep(Duration::from_millis(500));
    });
    (port, t)
}

fn frame(payload: &[u8], crc_delta: u32) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_le_bytes().to_vec();
    f.extend_from_slice(&(crc32fast::hash(payload) ^ crc_delta).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

#[test]
fn a_damaged_or_cut_stream_is_refused_and_the_replica_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let node = Server::start(&dir.path().join("db"), &[]);
    let mut c = node.client();
    write_mix(&mut c, "kept", 100);
    let before = digest(&mut c);
    let id = "f".repeat(40);

    // A heartbeat frame whose checksum is off by one bit.
    let mut heartbeat = vec![2u8];
    heartbeat.extend_from_slice(&7u64.to_le_bytes());
    let reply: &'static str = Box::leak(format!("+CONTINUE {id}\r\n").into_boxed_str());
    let (port, t) = fake_master(reply, frame(&heartbeat, 1));
    ok(&mut c, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
    t.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let err = loop {
        let e = field(&mut c, "sett_last_link_error");
        if !e.is_empty() {
            break e;
        }
        assert!(Instant::now() < deadline, "no link error shown");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(err.contains("damaged") && err.contains("checksum"), "{err}");
    assert_eq!(digest(&mut c), before, "a damaged stream changed the data");

    // A full sync cut inside its first file: the old Db stays.
    let mut file = vec![3u8];
    file.extend_from_slice(&(8u16).to_le_bytes());
    file.extend_from_slice(b"MANIFEST");
    file.extend_from_slice(&1000u64.to_le_bytes());
    let mut cut = frame(&file, 0);
    let mut chunk = vec![4u8];
    chunk.extend_from_slice(&[0u8; 100]);
    cut.extend(frame(&chunk, 0));
    let reply: &'static str = Box::leak(format!("+FULLRESYNC {id} 9\r\n").into_boxed_str());
    let (port, t) = fake_master(reply, cut);
    ok(&mut c, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
    t.join().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let i = info(&mut c);
        if i["master_port"] == port.to_string() && i["sett_last_link_error"].contains("stream") {
            break;
        }
        assert!(Instant::now() < deadline, "the cut went unnoticed: {i:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(&mut c, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(digest(&mut c), before, "a cut full sync changed the data");
    assert!(
        !dir.path().join("db.sync").exists(),
        "the partial copy was left behind"
    );
    // A Redis replica's handshake (no sett capability) is refused clearly.
    let mut raw = node.raw();
    raw.write_all(b"PSYNC ? -1\r\n").unwrap();
    let mut line = String::new();
    BufReader::new(&mut raw).read_line(&mut line).unwrap();
    assert!(line.contains("only a sett-server replica"), "{line}");
}

/// The `<dir>.replication` file a node keeps beside its directory.
fn saved_state(node: &Server) -> String {
    let path = format!("{}.replication", node.dir.display());
    std::fs::read_to_string(&path).unwrap_or_else(|e| format!("({path}: {e})"))
}

#[test]
fn a_restarted_replica_resumes_by_partial_resync_and_a_promoted_one_keeps_its_siblings() {
    let root = tempfile::tempdir().unwrap();
    let master = Server::start(&root.path().join("m"), &[]);
    let mut m = master.client();
    write_mix(&mut m, "one", 200);
    let of_master = format!("127.0.0.1 {}", master.port);
    let mut a = Server::start(&root.path().join("a"), &["--replicaof", &of_master]);
    let b = Server::start(&root.path().join("b"), &["--replicaof", &of_master]);
    let (mut ac, mut bc) = (a.client(), b.client());
    caught_up(&mut m, &mut ac);
    caught_up(&mut m, &mut bc);
    let ports = format!("master {}, a {}, b {}", master.port, a.port, b.port);

    // A stops; the master goes on; A comes back without --replicaof and
    // continues from where it stopped: no second full sync.
    drop(ac);
    assert!(a.terminate(), "replica A did not stop cleanly ({ports})");
    write_mix(&mut m, "two", 150);
    let a = Server::start(&root.path().join("a"), &[]);
    let ports = format!("{ports}, a restarted on {}", a.port);
    let mut ac = a.client();
    let ai = info(&mut ac);
    assert_eq!(
        (ai["role"].as_str(), ai["master_port"].as_str()),
        ("slave", master.port.to_string().as_str()),
        "{ports}; a's saved state: {}",
        saved_state(&a)
    );
    caught_up(&mut m, &mut ac);
    assert_eq!(digest(&mut ac), digest(&mut m), "after the partial resync");
    let ai = info(&mut ac);
    assert_eq!(
        (
            ai["sett_full_syncs"].as_str(),
            ai["sett_partial_syncs"].as_str()
        ),
        ("0", "1"),
        "{ports}: {ai:?}"
    );
    caught_up(&mut m, &mut bc);

    // The master is gone; A is promoted and B follows it, again without a full sync.
    let old_id = info(&mut m)["master_replid"].clone();
    let at = field(&mut m, "master_repl_offset");
    drop(m);
    drop(master);
    ok(&mut ac, &["REPLICAOF", "NO", "ONE"]);
    let ai = info(&mut ac);
    assert_eq!(ai["role"], "master");
    assert_eq!(ai["master_replid2"], old_id, "{ports}");
    assert_eq!(ai["second_repl_offset"], at, "{ports}");
    ok(&mut bc, &["REPLICAOF", "127.0.0.1", &a.port.to_string()]);
    write_mix(&mut ac, "three", 100);
    caught_up(&mut ac, &mut bc);
    assert_eq!(
        digest(&mut bc),
        digest(&mut ac),
        "after following the new master"
    );
    let bi = info(&mut bc);
    assert_eq!(
        (
            bi["sett_full_syncs"].as_str(),
            bi["sett_partial_syncs"].as_str()
        ),
        ("0", "1"),
        "{ports}: B resynced in full from the promoted A: {bi:?}"
    );
    assert_eq!(bi["master_replid"], field(&mut ac, "master_replid"));
}

/// The entries in `dir`, 0 if it does not exist.
fn entries(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn a_replica_killed_during_its_full_sync_or_while_streaming_converges_after_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let master = Server::start(&root.path().join("m"), &[]);
    let mut m = master.client();
    // 48 MiB of values, so that the copy takes long enough to be cut.
    let big = "b".repeat(256 << 10);
    for i in 0..192 {
        ok(&mut m, &["SET", &format!("big:{i}"), &big]);
    }
    write_mix(&mut m, "mix", 200);
    let of_master = format!("127.0.0.1 {}", master.port);
    let rdir = root.path().join("r");
    let partial = root.path().join("r.sync");

    // kill -9 once the copy has begun to arrive in <dir>.sync.
    let mut r = Server::start(&rdir, &["--replicaof", &of_master]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while entries(&partial) == 0 {
        assert!(
            Instant::now() < deadline,
            "the full sync never began to write {}",
            partial.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    r.kill9();
    // A finished sync renames the copy into place; a cut one stays until the restart.
    assert!(
        entries(&partial) > 0,
        "the kill came after the sync had finished"
    );
    // Back without --replicaof: it follows the master it saved, and syncs again.
    let r = Server::start(&rdir, &[]);
    let mut rc = r.client();
    caught_up(&mut m, &mut rc);
    assert_eq!(
        digest(&mut rc),
        digest(&mut m),
        "after a full sync that was cut"
    );
    assert_eq!(field(&mut rc, "sett_full_syncs"), "1");
    assert!(!partial.exists(), "the cut copy was left behind");

    // kill -9 while the master writes and streams: it resumes where it was.
    let mut r = r;
    let port = master.port;
    let writer = std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .expect("a second connection to the master");
        write_mix(&mut c, "during", 400);
    });
    std::thread::sleep(Duration::from_millis(200));
    drop(rc);
    r.kill9();
    writer.join().expect("the writer thread");
    let r = Server::start(&rdir, &[]);
    let mut rc = r.client();
    caught_up(&mut m, &mut rc);
    assert_eq!(
        digest(&mut rc),
        digest(&mut m),
        "after a kill while streaming"
    );
    let ri = info(&mut rc);
    assert_eq!(
        (
            ri["sett_full_syncs"].as_str(),
            ri["sett_partial_syncs"].as_str()
        ),
        ("0", "1"),
        "{ri:?}"
    );
}
