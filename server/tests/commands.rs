//! Every command through a real client (the `redis` crate) against the binary,
//! and the error cases through raw TCP where a client would not send them.

mod common;

use common::{read_for, send_and_read_all, Server};
use redis::{cmd, Connection, RedisResult, Value};
use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn q<T: redis::FromRedisValue>(c: &mut Connection, args: &[&str]) -> RedisResult<T> {
    let mut command = cmd(args[0]);
    for a in &args[1..] {
        command.arg(*a);
    }
    command.query(c)
}

fn ok(c: &mut Connection, args: &[&str]) -> Value {
    q(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn err(c: &mut Connection, args: &[&str]) -> String {
    match q::<Value>(c, args) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn s(c: &mut Connection, args: &[&str]) -> Option<String> {
    q(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn n(c: &mut Connection, args: &[&str]) -> i64 {
    q(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

#[test]
fn strings_round_trip_through_get_set_mget_mset_del_exists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert_eq!(s(&mut c, &["SET", "a", "1"]).as_deref(), Some("OK"));
    assert_eq!(s(&mut c, &["GET", "a"]).as_deref(), Some("1"));
    assert_eq!(s(&mut c, &["GET", "missing"]), None);
    // An empty key and binary values are fine (sett itself refuses empty keys).
    assert_eq!(s(&mut c, &["SET", "", "empty"]).as_deref(), Some("OK"));
    assert_eq!(s(&mut c, &["GET", ""]).as_deref(), Some("empty"));
    let blob: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let _: () = cmd("SET")
        .arg("bin")
        .arg(&blob)
        .query(&mut c)
        .expect("set bin");
    let back: Vec<u8> = cmd("GET").arg("bin").query(&mut c).expect("get bin");
    assert_eq!(back, blob);
    ok(&mut c, &["MSET", "k1", "v1", "k2", "v2"]);
    let got: Vec<Option<String>> = q(&mut c, &["MGET", "k1", "nope", "k2"]).expect("mget");
    assert_eq!(got, vec![Some("v1".into()), None, Some("v2".into())]);
    assert_eq!(n(&mut c, &["EXISTS", "k1", "k1", "nope"]), 2);
    assert_eq!(n(&mut c, &["DEL", "k1", "nope", "a"]), 2);
    assert_eq!(n(&mut c, &["EXISTS", "k1", "a"]), 0);
    assert_eq!(s(&mut c, &["TYPE", "k2"]).as_deref(), Some("string"));
    assert_eq!(s(&mut c, &["TYPE", "k1"]).as_deref(), Some("none"));
    assert!(err(&mut c, &["MSET", "k1", "v1", "k2"]).contains("wrong number of arguments"));
    // Keys over sett's limit (65000 bytes, of which the server uses 2) are refused by size.
    let long = "k".repeat(70_000);
    let e = err(&mut c, &["SET", &long, "v"]);
    assert!(
        e.contains("key of 70000 bytes is over the limit of 64998"),
        "{e}"
    );
    assert!(err(&mut c, &["GET", &long]).contains("key of 70000 bytes"));
    ok(&mut c, &["SET", &"k".repeat(64_998), "v"]);
}

/// keyspace_hits and keyspace_misses of INFO stats.
fn hits_and_misses(c: &mut Connection) -> (u64, u64) {
    let info = s(c, &["INFO", "stats"]).unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {info}"))
    };
    (field("keyspace_hits:"), field("keyspace_misses:"))
}

#[test]
fn get_and_mget_count_each_key_as_a_keyspace_hit_or_miss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    ok(&mut c, &["MSET", "a", "1", "b", "2"]);
    assert_eq!(hits_and_misses(&mut c), (0, 0));
    assert_eq!(s(&mut c, &["GET", "a"]).as_deref(), Some("1"));
    assert_eq!(s(&mut c, &["GET", "nope"]), None);
    assert_eq!(hits_and_misses(&mut c), (1, 1));
    // As redis-server counts them: per key, not per command.
    ok(&mut c, &["MGET", "a", "b", "nope", "a"]);
    assert_eq!(hits_and_misses(&mut c), (4, 2));
}

#[test]
fn set_options_nx_xx_get_keepttl_and_expiry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert_eq!(
        s(&mut c, &["SET", "k", "v1", "XX"]),
        None,
        "XX on a missing key"
    );
    assert_eq!(s(&mut c, &["GET", "k"]), None);
    assert_eq!(s(&mut c, &["SET", "k", "v1", "NX"]).as_deref(), Some("OK"));
    assert_eq!(
        s(&mut c, &["SET", "k", "v2", "NX"]),
        None,
        "NX on an existing key"
    );
    assert_eq!(
        s(&mut c, &["SET", "k", "v3", "XX", "GET"]).as_deref(),
        Some("v1")
    );
    assert_eq!(s(&mut c, &["GET", "k"]).as_deref(), Some("v3"));
    assert_eq!(
        s(&mut c, &["SET", "k", "v4", "EX", "100"]).as_deref(),
        Some("OK")
    );
    assert!((99..=100).contains(&n(&mut c, &["TTL", "k"])));
    assert_eq!(
        s(&mut c, &["SET", "k", "v5", "KEEPTTL"]).as_deref(),
        Some("OK")
    );
    assert!(
        (98..=100).contains(&n(&mut c, &["TTL", "k"])),
        "KEEPTTL kept it"
    );
    assert_eq!(s(&mut c, &["SET", "k", "v6"]).as_deref(), Some("OK"));
    assert_eq!(n(&mut c, &["TTL", "k"]), -1, "a plain SET clears the TTL");
    assert!(err(&mut c, &["SET", "k", "v", "NX", "XX"]).contains("syntax error"));
    assert!(err(&mut c, &["SET", "k", "v", "EX", "10", "KEEPTTL"]).contains("syntax error"));
    assert!(err(&mut c, &["SET", "k", "v", "EX", "0"]).contains("invalid expire time"));
    assert!(err(&mut c, &["SET", "k", "v", "EX", "ten"]).contains("not an integer"));
    assert!(err(&mut c, &["SET", "k", "v", "EX"]).contains("syntax error"));
    assert_eq!(
        s(&mut c, &["GET", "k"]).as_deref(),
        Some("v6"),
        "refused SETs wrote nothing"
    );
    // An absolute expiry in the past deletes; one in the future sets the TTL.
    ok(&mut c, &["SET", "gone", "x"]);
    assert_eq!(
        s(&mut c, &["SET", "gone", "y", "EXAT", "1000"]).as_deref(),
        Some("OK")
    );
    assert_eq!(s(&mut c, &["GET", "gone"]), None);
    assert_eq!(
        s(&mut c, &["SET", "gone", "z", "PXAT", "1000", "GET"]),
        None
    );
    let at = (SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + 60)
        .to_string();
    ok(&mut c, &["SET", "later", "x", "EXAT", &at]);
    assert!((59..=60).contains(&n(&mut c, &["TTL", "later"])));
    // PX rounds up to sett's whole seconds: gone within about 2 s.
    ok(&mut c, &["SET", "short", "x", "PX", "300"]);
    let t = n(&mut c, &["PTTL", "short"]);
    assert!((1..=1000).contains(&t), "pttl {t}");
    let start = Instant::now();
    while s(&mut c, &["GET", "short"]).is_some() {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "PX 300 key still there after 3 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn expire_ttl_pttl_persist_follow_redis_replies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert_eq!(n(&mut c, &["TTL", "nokey"]), -2);
    assert_eq!(n(&mut c, &["EXPIRE", "nokey", "10"]), 0);
    ok(&mut c, &["SET", "k", "v"]);
    assert_eq!(n(&mut c, &["TTL", "k"]), -1);
    assert_eq!(n(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(n(&mut c, &["EXPIRE", "k", "50"]), 1);
    assert!((49..=50).contains(&n(&mut c, &["TTL", "k"])));
    assert_eq!(
        n(&mut c, &["EXPIRE", "k", "500", "NX"]),
        0,
        "NX: it has a TTL"
    );
    assert_eq!(n(&mut c, &["EXPIRE", "k", "10", "GT"]), 0, "GT: 10 < 50");
    assert_eq!(n(&mut c, &["EXPIRE", "k", "500", "GT"]), 1);
    let pttl = n(&mut c, &["PTTL", "k"]);
    assert!((498_000..=500_000).contains(&pttl), "pttl {pttl}");
    assert_eq!(n(&mut c, &["PEXPIRE", "k", "20000"]), 1);
    assert!((19..=20).contains(&n(&mut c, &["TTL", "k"])));
    assert_eq!(
        s(&mut c, &["GET", "k"]).as_deref(),
        Some("v"),
        "EXPIRE kept the value"
    );
    assert_eq!(n(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(n(&mut c, &["TTL", "k"]), -1);
    assert_eq!(n(&mut c, &["EXPIRE", "k", "0"]), 1, "a past expiry deletes");
    assert_eq!(n(&mut c, &["EXISTS", "k"]), 0);
    assert!(err(&mut c, &["EXPIRE", "k", "soon"]).contains("not an integer"));
    assert!(err(&mut c, &["EXPIRE", "k", "1", "SOMETIMES"]).contains("Unsupported option"));
}

#[test]
fn incr_is_exact_under_concurrent_clients_and_refuses_non_integers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let url = srv.url();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                for _ in 0..150 {
                    let _: i64 = cmd("INCR").arg("counter").query(&mut c).expect("incr");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("incr thread");
    }
    let mut c = srv.client();
    assert_eq!(s(&mut c, &["GET", "counter"]).as_deref(), Some("1200"));
    assert_eq!(n(&mut c, &["INCRBY", "counter", "-200"]), 1000);
    assert_eq!(n(&mut c, &["DECR", "counter"]), 999);
    assert_eq!(n(&mut c, &["DECRBY", "fresh", "5"]), -5);
    ok(&mut c, &["SET", "text", "abc"]);
    assert!(err(&mut c, &["INCR", "text"]).contains("not an integer"));
    assert_eq!(s(&mut c, &["GET", "text"]).as_deref(), Some("abc"));
    ok(&mut c, &["SET", "big", &i64::MAX.to_string()]);
    assert!(err(&mut c, &["INCR", "big"]).contains("overflow"));
    assert!(err(&mut c, &["INCRBY", "counter", "1.5"]).contains("not an integer"));
    ok(&mut c, &["SET", "ttl", "1", "EX", "100"]);
    n(&mut c, &["INCR", "ttl"]);
    assert!(n(&mut c, &["TTL", "ttl"]) > 90, "INCR keeps the TTL");
}

#[test]
fn concurrent_incrs_are_merges_and_each_reply_is_the_value_its_own_increment_made() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let url = srv.url();
    let (clients, each) = (6, 100);
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                let mut c = redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("connect");
                (0..each)
                    .map(|_| cmd("INCR").arg("hits").query::<i64>(&mut c).expect("incr"))
                    .collect::<Vec<i64>>()
            })
        })
        .collect();
    let mut replies: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("incr thread"))
        .collect();
    replies.sort_unstable();
    let want: Vec<i64> = (1..=clients * each).collect();
    assert_eq!(replies, want, "no two INCRs got the same reply");
    let mut c = srv.client();
    assert_eq!(
        s(&mut c, &["GET", "hits"]).as_deref(),
        Some((clients * each).to_string().as_str())
    );
}

#[test]
fn append_replies_the_length_and_a_refused_incr_leaves_the_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert_eq!(n(&mut c, &["APPEND", "s", "ab"]), 2);
    // OBJECT ENCODING as redis-server: a string APPEND created is plain, one
    // it edited is "raw", and INCR makes an integer again.
    assert_eq!(
        s(&mut c, &["OBJECT", "ENCODING", "s"]).as_deref(),
        Some("embstr")
    );
    assert_eq!(n(&mut c, &["APPEND", "s", "cde"]), 5);
    assert_eq!(
        s(&mut c, &["OBJECT", "ENCODING", "s"]).as_deref(),
        Some("raw")
    );
    assert_eq!(s(&mut c, &["GET", "s"]).as_deref(), Some("abcde"));
    assert!(err(&mut c, &["INCR", "s"]).contains("not an integer"));
    assert!(err(&mut c, &["DECRBY", "s", "3"]).contains("not an integer"));
    assert_eq!(s(&mut c, &["GET", "s"]).as_deref(), Some("abcde"));
    assert_eq!(n(&mut c, &["APPEND", "s", "f"]), 6);
    assert_eq!(s(&mut c, &["GET", "s"]).as_deref(), Some("abcdef"));
    ok(&mut c, &["SET", "n", "9"]);
    assert_eq!(n(&mut c, &["APPEND", "n", "1"]), 2);
    assert_eq!(
        s(&mut c, &["OBJECT", "ENCODING", "n"]).as_deref(),
        Some("raw")
    );
    assert_eq!(n(&mut c, &["INCR", "n"]), 92);
    assert_eq!(
        s(&mut c, &["OBJECT", "ENCODING", "n"]).as_deref(),
        Some("int")
    );
    ok(&mut c, &["SET", "big", &(i64::MAX - 1).to_string()]);
    assert_eq!(n(&mut c, &["INCR", "big"]), i64::MAX);
    assert!(err(&mut c, &["INCR", "big"]).contains("overflow"));
    assert_eq!(s(&mut c, &["GET", "big"]), Some(i64::MAX.to_string()));
    assert_eq!(n(&mut c, &["DECR", "big"]), i64::MAX - 1);
}

#[test]
fn an_append_past_the_bulk_limit_is_refused_and_the_value_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &["--max-bulk-len", "1024"]);
    let mut c = srv.client();
    let part = "x".repeat(600);
    assert_eq!(n(&mut c, &["APPEND", "s", &part]), 600);
    assert!(err(&mut c, &["APPEND", "s", &part]).contains("maximum allowed size"));
    assert_eq!(s(&mut c, &["GET", "s"]), Some(part.clone()));
    assert_eq!(n(&mut c, &["APPEND", "s", "yz"]), 602);
    assert_eq!(n(&mut c, &["STRLEN", "s"]), 602);
}

#[test]
fn an_incr_over_a_key_with_a_ttl_goes_when_the_ttl_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    ok(&mut c, &["SET", "t", "5", "EX", "1"]);
    assert_eq!(n(&mut c, &["INCR", "t"]), 6);
    ok(&mut c, &["SET", "text", "abc", "EX", "1"]);
    assert!(err(&mut c, &["INCR", "text"]).contains("not an integer"));
    assert_eq!(n(&mut c, &["APPEND", "text", "d"]), 4);
    assert!(n(&mut c, &["TTL", "t"]) >= 0, "INCR keeps the TTL");
    std::thread::sleep(Duration::from_millis(2100));
    // Operands over an expired value would read as a new value of their own.
    assert_eq!(s(&mut c, &["GET", "t"]), None);
    assert_eq!(s(&mut c, &["GET", "text"]), None);
    assert_eq!(n(&mut c, &["INCR", "t"]), 1);
}

#[test]
fn a_directory_written_without_a_merge_operator_opens_and_takes_incr() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = sett::Db::open(sett::Options::new(dir.path())).expect("open plain");
        db.put(b"plain", b"v").expect("put");
        db.close().expect("close");
    }
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert_eq!(n(&mut c, &["INCR", "c"]), 1);
    assert_eq!(n(&mut c, &["INCRBY", "c", "41"]), 42);
    assert_eq!(s(&mut c, &["GET", "c"]).as_deref(), Some("42"));
}

#[test]
fn scan_with_match_and_count_visits_every_key_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    for i in 0..150 {
        ok(&mut c, &["SET", &format!("user:{i}"), "x"]);
        ok(&mut c, &["SET", &format!("other:{i}"), "y"]);
    }
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut rounds = 0;
    loop {
        let (next, keys): (String, Vec<String>) =
            q(&mut c, &["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"]).expect("scan");
        seen.extend(keys);
        rounds += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    seen.sort();
    let mut want: Vec<String> = (0..150).map(|i| format!("user:{i}")).collect();
    want.sort();
    assert_eq!(seen, want);
    assert!(
        rounds >= 300 / 7,
        "COUNT 7 over 300 keys took {rounds} rounds"
    );
    // The client's own iterator (it parses the cursor as an integer).
    let all: Vec<String> = redis::Commands::scan(&mut c).expect("scan iter").collect();
    assert_eq!(all.len(), 300);
    assert_eq!(n(&mut c, &["DBSIZE"]), 300);
    assert!(err(&mut c, &["SCAN", "12345678"]).contains("invalid cursor"));
    assert!(err(&mut c, &["SCAN", "0", "COUNT", "0"]).contains("syntax error"));
    assert_eq!(s(&mut c, &["FLUSHDB"]).as_deref(), Some("OK"));
    assert_eq!(n(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn wrong_arity_and_unknown_commands_get_error_replies_and_the_connection_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    assert!(err(&mut c, &["GET"]).contains("wrong number of arguments for 'get'"));
    assert!(err(&mut c, &["GET", "a", "b"]).contains("wrong number of arguments"));
    assert!(err(&mut c, &["INCR"]).contains("wrong number of arguments"));
    assert!(err(&mut c, &["NOSUCH", "x"]).contains("unknown command 'NOSUCH'"));
    assert!(err(&mut c, &["SELECT", "3"]).contains("out of range"));
    assert!(err(&mut c, &["CLUSTER", "SLOTS"]).contains("cluster support disabled"));
    assert_eq!(s(&mut c, &["PING"]).as_deref(), Some("PONG"));
}

#[test]
fn connection_commands_ping_echo_client_names_command_info_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &["--appendfsync", "always"]);
    let mut c = srv.client();
    assert_eq!(s(&mut c, &["PING", "hi"]).as_deref(), Some("hi"));
    assert_eq!(s(&mut c, &["ECHO", "abc"]).as_deref(), Some("abc"));
    assert_eq!(s(&mut c, &["CLIENT", "GETNAME"]), None);
    ok(&mut c, &["CLIENT", "SETNAME", "worker-1"]);
    assert_eq!(
        s(&mut c, &["CLIENT", "GETNAME"]).as_deref(),
        Some("worker-1")
    );
    assert!(err(&mut c, &["CLIENT", "SETNAME", "has space"]).contains("cannot contain spaces"));
    let count = n(&mut c, &["COMMAND", "COUNT"]);
    let all: Vec<Value> = q(&mut c, &["COMMAND"]).expect("command");
    assert_eq!(all.len() as i64, count);
    let _: Value = q(&mut c, &["COMMAND", "DOCS"]).expect("command docs");
    let keys: Vec<String> =
        q(&mut c, &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]).expect("getkeys");
    assert_eq!(keys, vec!["a", "b"]);
    ok(&mut c, &["SET", "x", "1"]);
    let info = s(&mut c, &["INFO"]).unwrap_or_default();
    for field in [
        "# Server",
        "redis_version:",
        "connected_clients:1",
        "# Memory",
        "used_memory:",
        "appendfsync:always",
        "sett_wal_syncs:",
        "total_commands_processed:",
        "db0:keys=1",
    ] {
        assert!(info.contains(field), "INFO lacks {field}: {info}");
    }
    let syncs: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("sett_wal_syncs:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(syncs >= 1, "appendfsync always fsynced the SET: {syncs}");
    let repl = s(&mut c, &["INFO", "replication"]).unwrap_or_default();
    assert!(repl.contains("role:master\r\nconnected_slaves:0"), "{repl}");
    let role: (String, i64, Vec<String>) = q(&mut c, &["ROLE"]).expect("role");
    assert_eq!((role.0.as_str(), role.2.len()), ("master", 0));
    assert!(
        role.1 >= 1,
        "ROLE's offset is the engine's version: {}",
        role.1
    );
    let mem = s(&mut c, &["INFO", "memory"]).unwrap_or_default();
    assert!(mem.contains("sett_memtable_bytes:") && !mem.contains("# Server"));
    let cfg: Vec<String> = q(&mut c, &["CONFIG", "GET", "append*"]).expect("config get");
    assert_eq!(cfg, vec!["appendonly", "yes", "appendfsync", "always"]);
    // CONFIG SET: a setting may be "set" to the value it has, not changed.
    assert!(err(&mut c, &["CONFIG", "SET", "maxclients", "3"]).contains("command-line option"));
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "appendfsync",
            "always",
            "appendonly",
            "yes",
        ],
    );
    assert!(err(&mut c, &["CONFIG", "SET", "nosuch", "1"]).contains("Unknown option"));
    let every: Vec<String> = q(&mut c, &["CONFIG", "GET", "*"]).expect("config get *");
    for p in [
        "maxclients",
        "timeout",
        "appendfsync",
        "port",
        "dir",
        "databases",
    ] {
        assert!(
            every.iter().any(|e| e == p),
            "CONFIG GET * lacks {p}: {every:?}"
        );
    }
    assert_eq!(every.len() % 2, 0);
}

#[test]
fn hello_3_switches_the_connection_to_resp3_maps_and_nulls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut raw = srv.raw();
    raw.write_all(b"GET nokey\r\nHELLO 3\r\nGET nokey\r\nHELLO 4\r\n")
        .expect("write");
    let got = String::from_utf8_lossy(&read_for(&mut raw, Duration::from_millis(500))).into_owned();
    assert!(got.starts_with("$-1\r\n%7\r\n"), "{got:?}");
    assert!(got.contains("$5\r\nproto\r\n:3\r\n"), "{got:?}");
    assert!(
        got.ends_with("_\r\n-NOPROTO unsupported protocol version\r\n"),
        "{got:?}"
    );
}

#[test]
fn a_bad_frame_gets_an_error_and_closes_only_that_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    ok(&mut c, &["SET", "kept", "yes"]);
    for bad in [
        &b"*2\r\n$3\r\nGET\r\n:5\r\n"[..],
        b"*x\r\n",
        b"*1\r\n$3\r\nGETxx\r\n",
    ] {
        let mut raw = srv.raw();
        let got = send_and_read_all(&mut raw, bad);
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("-ERR Protocol error"),
            "{bad:?} -> {text:?}"
        );
    }
    // A valid command before the bad frame in the same write still runs.
    let mut raw = srv.raw();
    let got = send_and_read_all(&mut raw, b"SET before bad\r\n*1\r\n$-5\r\n");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("+OK\r\n-ERR Protocol error"), "{text:?}");
    assert_eq!(
        s(&mut c, &["GET", "kept"]).as_deref(),
        Some("yes"),
        "the other client is unaffected"
    );
    assert_eq!(s(&mut c, &["GET", "before"]).as_deref(), Some("bad"));
}

#[test]
fn an_oversize_bulk_is_refused_before_it_is_read_and_stores_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &["--max-bulk-len", "1024", "--max-args", "8"]);
    let mut raw = srv.raw();
    let got = send_and_read_all(&mut raw, b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$2000\r\n");
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.contains("bulk of 2000 bytes") && text.contains("1024"),
        "{text}"
    );
    let mut raw = srv.raw();
    let got = send_and_read_all(&mut raw, b"*9\r\n");
    assert!(String::from_utf8_lossy(&got).contains("9 arguments"));
    let mut c = srv.client();
    assert_eq!(s(&mut c, &["GET", "big"]), None);
    ok(&mut c, &["SET", "small", &"x".repeat(1024)]);
}

#[test]
fn requirepass_refuses_commands_until_auth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &["--requirepass", "s3cret"]);
    let mut raw = srv.raw();
    raw.write_all(b"GET a\r\nAUTH wrong\r\nAUTH s3cret\r\nSET a 1\r\nGET a\r\n")
        .expect("write");
    let got = String::from_utf8_lossy(&read_for(&mut raw, Duration::from_millis(500))).into_owned();
    assert_eq!(
        got,
        "-NOAUTH Authentication required.\r\n-WRONGPASS invalid username-password pair or user is disabled.\r\n+OK\r\n+OK\r\n$1\r\n1\r\n"
    );
    // A client that logs in through its URL.
    let mut c = redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}/", srv.port))
        .and_then(|c| c.get_connection())
        .expect("auth via url");
    assert_eq!(s(&mut c, &["GET", "a"]).as_deref(), Some("1"));
    let mut raw = srv.raw();
    raw.write_all(b"HELLO 3 AUTH default s3cret\r\nGET a\r\n")
        .expect("write");
    let got = String::from_utf8_lossy(&read_for(&mut raw, Duration::from_millis(500))).into_owned();
    assert!(
        got.starts_with('%') && got.ends_with("$1\r\n1\r\n"),
        "{got:?}"
    );
}

#[test]
fn limits_max_clients_and_idle_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &["--maxclients", "2", "--timeout", "1"]);
    let mut a = srv.raw();
    let mut b = srv.raw();
    a.write_all(b"PING\r\n").expect("a");
    b.write_all(b"PING\r\n").expect("b");
    assert_eq!(read_for(&mut a, Duration::from_millis(300)), b"+PONG\r\n");
    let mut third = srv.raw();
    let got = send_and_read_all(&mut third, b"PING\r\n");
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    // Idle for over a second: the server closes both.
    let start = Instant::now();
    let rest = send_and_read_all(&mut b, b"");
    assert_eq!(rest, b"+PONG\r\n");
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn pipelined_commands_get_their_replies_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut raw = srv.raw();
    let mut req = Vec::new();
    for i in 0..500 {
        req.extend_from_slice(
            format!("*3\r\n$3\r\nSET\r\n$4\r\nk{i:03}\r\n$3\r\n{i:03}\r\n").as_bytes(),
        );
    }
    req.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$4\r\nk499\r\n");
    raw.write_all(&req).expect("write");
    let mut got = Vec::new();
    let want_len = 500 * 5 + b"$3\r\n499\r\n".len();
    while got.len() < want_len {
        let more = read_for(&mut raw, Duration::from_millis(500));
        assert!(!more.is_empty(), "got {} of {want_len} bytes", got.len());
        got.extend(more);
    }
    assert!(got.ends_with(b"+OK\r\n$3\r\n499\r\n"));
}

#[test]
fn sigterm_shuts_down_cleanly_and_a_restart_finds_every_acknowledged_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut srv = Server::start(dir.path(), &["--appendfsync", "everysec"]);
    let mut c = srv.client();
    for i in 0..500 {
        ok(&mut c, &["SET", &format!("key{i}"), &format!("value{i}")]);
    }
    ok(&mut c, &["SET", "ttl", "x", "EX", "1000"]);
    n(&mut c, &["INCRBY", "counter", "42"]);
    // A client in the middle of a pipeline when SIGTERM arrives still gets its replies.
    let mut raw = srv.raw();
    raw.write_all(b"SET last 1\r\nGET last\r\n").expect("write");
    assert_eq!(
        read_for(&mut raw, Duration::from_millis(300)),
        b"+OK\r\n$1\r\n1\r\n"
    );
    assert!(
        srv.terminate(),
        "sett-server did not exit cleanly after SIGTERM"
    );
    let srv = Server::start(dir.path(), &[]);
    let mut c = srv.client();
    for i in 0..500 {
        assert_eq!(
            s(&mut c, &["GET", &format!("key{i}")]),
            Some(format!("value{i}"))
        );
    }
    assert_eq!(s(&mut c, &["GET", "counter"]).as_deref(), Some("42"));
    assert_eq!(s(&mut c, &["GET", "last"]).as_deref(), Some("1"));
    assert!(
        n(&mut c, &["TTL", "ttl"]) > 900,
        "the TTL survived the restart"
    );
    assert_eq!(n(&mut c, &["DBSIZE"]), 503);
}

#[test]
fn shutdown_command_stops_the_server_and_the_directory_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut srv = Server::start(dir.path(), &["--appendfsync", "no"]);
    let mut c = srv.client();
    ok(&mut c, &["SET", "k", "v"]);
    let _ = q::<Value>(&mut c, &["SHUTDOWN"]);
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(st)) = srv.child.try_wait() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "still running after SHUTDOWN"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    let srv = Server::start(dir.path(), &[]);
    assert_eq!(s(&mut srv.client(), &["GET", "k"]).as_deref(), Some("v"));
}

#[test]
fn a_large_value_sent_in_pieces_is_stored_and_its_ttl_can_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let srv = Server::start(dir.path(), &[]);
    let mut raw = srv.raw();
    // 12 MiB: above sett's default transaction limit, which EXPIRE's rewrite must not hit.
    let value: Vec<u8> = (0..12 << 20).map(|i: u32| (i % 251) as u8).collect();
    raw.write_all(format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", value.len()).as_bytes())
        .expect("header");
    for piece in value.chunks(100_000) {
        raw.write_all(piece).expect("piece");
    }
    raw.write_all(b"\r\n").expect("end");
    assert_eq!(read_for(&mut raw, Duration::from_secs(2)), b"+OK\r\n");
    let mut c = srv.client();
    assert_eq!(n(&mut c, &["EXPIRE", "big", "100"]), 1);
    assert!(n(&mut c, &["TTL", "big"]) > 90);
    assert_eq!(n(&mut c, &["PERSIST", "big"]), 1);
    let back: Vec<u8> = cmd("GET").arg("big").query(&mut c).expect("get big");
    assert!(back == value, "the value read back differs");
}

fn info_field(c: &mut Connection, field: &str) -> u64 {
    let info = s(c, &["INFO", "persistence"]).unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO persistence lacks {field}: {info}"))
}

#[test]
fn appendfsync_modes_fsync_per_write_once_a_second_or_never() {
    let modes = [
        ("always", true, false),
        ("everysec", false, true),
        ("no", false, false),
    ];
    let dirs: Vec<_> = modes
        .iter()
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    // All three at once: one wait covers the timer's ticks of each.
    let servers: Vec<Server> = modes
        .iter()
        .zip(&dirs)
        .map(|((mode, _, _), dir)| Server::start(dir.path(), &["--appendfsync", mode]))
        .collect();
    for srv in &servers {
        let mut c = srv.client();
        for i in 0..20 {
            ok(&mut c, &["SET", &format!("k{i}"), "v"]);
        }
    }
    std::thread::sleep(Duration::from_millis(2300));
    for ((mode, per_write, timer), srv) in modes.iter().zip(&servers) {
        let mut c = srv.client();
        let (wal, bg) = (
            info_field(&mut c, "sett_wal_syncs"),
            info_field(&mut c, "sett_background_syncs"),
        );
        assert_eq!(
            wal >= 20,
            *per_write,
            "{mode}: {wal} fsyncs with the writes"
        );
        assert_eq!(bg >= 2, *timer, "{mode}: {bg} fsyncs by the timer");
        if !timer {
            assert_eq!(bg, 0, "{mode}");
        }
    }
}
