//! The same commands sent to Debian's redis-server and to sett-server: every
//! reply, byte for byte (errors included), must be the same. redis-server runs
//! on a Unix socket in a temporary directory (`--port 0` means no TCP there),
//! without persistence, and is stopped by pid; sett-server on loopback port 0.
//!
//! Replies that depend on the clock or on how a server lays out its keys are
//! compared after a stated normalisation (KEYS sorted); replies that differ by
//! design (INFO, COMMAND, CONFIG GET *, OBJECT HELP, other databases) are left
//! to tests/commands.rs.

mod common;

use common::{ensure_tool, skip, wait_listening, Helper, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

/// One connection to each server.
struct Pair {
    redis: BufReader<UnixStream>,
    sett: BufReader<std::net::TcpStream>,
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Reads one whole reply (nested ones included) as the bytes sent.
fn read_reply(r: &mut impl BufRead, out: &mut Vec<u8>) {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("reading a reply");
    assert!(line.ends_with(b"\r\n"), "a reply line cut short: {line:?}");
    out.extend_from_slice(&line);
    let head = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let n: i64 = head.parse().unwrap_or(0);
    match line[0] {
        b'$' | b'=' | b'!' if n >= 0 => {
            let mut body = vec![0u8; n as usize + 2];
            r.read_exact(&mut body).expect("reading a bulk reply");
            out.extend_from_slice(&body);
        }
        b'*' | b'~' | b'>' => {
            for _ in 0..n.max(0) {
                read_reply(r, out);
            }
        }
        b'%' => {
            for _ in 0..n.max(0) * 2 {
                read_reply(r, out);
            }
        }
        _ => {}
    }
}

fn ask_buf<S: Read + Write>(r: &mut BufReader<S>, args: &[&[u8]]) -> Vec<u8> {
    r.get_mut()
        .write_all(&encode(args))
        .expect("writing a command");
    let mut out = Vec::new();
    read_reply(r, &mut out);
    out
}

/// How a reply is compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Exact,
    /// An array whose order the server chooses: compared as sorted elements.
    Sorted,
}

fn split_words(cmd: &str) -> Vec<Vec<u8>> {
    // Words separated by spaces; `\s` stands for a space and `\e` for nothing,
    // so that arguments with spaces and empty arguments can be written.
    cmd.split(' ')
        .map(|w| {
            if w == "\\e" {
                Vec::new()
            } else {
                w.replace("\\s", " ").into_bytes()
            }
        })
        .collect()
}

/// The elements of a flat array reply of bulk strings, sorted.
fn sorted(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut r = BufReader::new(reply);
    let mut head = Vec::new();
    r.read_until(b'\n', &mut head).unwrap_or_default();
    let n: usize = String::from_utf8_lossy(
        head.get(1..head.len().saturating_sub(2))
            .unwrap_or_default(),
    )
    .parse()
    .unwrap_or(0);
    let mut items: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let mut one = Vec::new();
            read_reply(&mut r, &mut one);
            one
        })
        .collect();
    items.sort();
    items
}

impl Pair {
    /// Sends `cmd` to both and fails the test if the replies differ.
    fn same(&mut self, cmd: &str) -> Vec<u8> {
        self.check(cmd, Cmp::Exact)
    }

    fn check(&mut self, cmd: &str, how: Cmp) -> Vec<u8> {
        let words = split_words(cmd);
        let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        let want = ask_buf(&mut self.redis, &args);
        let got = ask_buf(&mut self.sett, &args);
        let equal = match how {
            Cmp::Exact => want == got,
            Cmp::Sorted => sorted(&want) == sorted(&got),
        };
        assert!(
            equal,
            "{cmd}\n  redis-server: {:?}\n  sett-server:  {:?}",
            String::from_utf8_lossy(&want),
            String::from_utf8_lossy(&got)
        );
        got
    }
}

/// Starts redis-server in `dir` on a Unix socket; `None` if it cannot be had.
fn redis_server(dir: &std::path::Path) -> Option<(Helper, std::path::PathBuf)> {
    if !ensure_tool("redis-server", "redis-server") {
        return None;
    }
    let sock = dir.join("redis.sock");
    let helper = Helper::spawn(
        Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&sock)
            .arg("--dir")
            .arg(dir),
    );
    wait_listening(&sock).then_some((helper, sock))
}

fn connect(redis_sock: &std::path::Path, sett: &Server) -> Pair {
    let r = UnixStream::connect(redis_sock).expect("connecting to redis-server");
    r.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    Pair {
        redis: BufReader::new(r),
        sett: BufReader::new(sett.raw()),
    }
}

/// Both servers, or a counted skip when redis-server cannot be installed.
fn servers(test: &str) -> Option<(tempfile::TempDir, Helper, std::path::PathBuf, Server)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis_dir = dir.path().join("redis");
    std::fs::create_dir_all(&redis_dir).expect("redis dir");
    let Some((helper, sock)) = redis_server(&redis_dir) else {
        skip(test, "redis-server is not installed and could not be");
        return None;
    };
    let sett = Server::start(&dir.path().join("sett"), &[]);
    Some((dir, helper, sock, sett))
}

#[test]
fn string_commands_reply_as_redis_server_does() {
    let Some((_dir, _redis, sock, sett)) = servers("string_commands_reply_as_redis_server_does")
    else {
        return;
    };
    let mut p = connect(&sock, &sett);
    for cmd in [
        // SETNX, SETEX, PSETEX, GETSET, GETDEL.
        "SETNX k v",
        "SETNX k w",
        "GET k",
        "SETEX k 100 v2",
        "TTL k",
        "SETEX k 0 v",
        "SETEX k -5 v",
        "SETEX k x v",
        "SETEX k 9223372036854775 v",
        "PSETEX k 100000 v3",
        "TTL k",
        "PSETEX k 0 v",
        "GETSET k v4",
        "TTL k",
        "GETSET nokey v",
        "GETDEL nokey2",
        "GETDEL k",
        "EXISTS k",
        "SETNX",
        "GETSET k",
        // GETEX.
        "SET k hello",
        "GETEX k",
        "GETEX k EX 100",
        "TTL k",
        "GETEX k PERSIST",
        "TTL k",
        "GETEX k EX 0",
        "GETEX k EX x",
        "GETEX k EX 10 PX 10",
        "GETEX k PERSIST PERSIST",
        "GETEX k FOO",
        "GETEX nokey EX 0",
        "GETEX k PXAT 1",
        "EXISTS k",
        // APPEND, STRLEN, GETRANGE, SETRANGE.
        "APPEND k hello",
        "APPEND k \\sworld",
        "STRLEN k",
        "STRLEN nokey",
        "GETRANGE k 0 -1",
        "GETRANGE k 0 4",
        "GETRANGE k -5 -1",
        "GETRANGE k 5 2",
        "GETRANGE k 0 -100",
        "GETRANGE k -100 -100",
        "GETRANGE k -1 -5",
        "GETRANGE k 100 200",
        "GETRANGE k x 1",
        "GETRANGE nokey 0 1",
        "SUBSTR k 0 4",
        "SETRANGE k 6 W",
        "GET k",
        "SETRANGE k -1 x",
        "SETRANGE k x x",
        "SETRANGE k 536870912 x",
        // A refused write leaves the value as it was.
        "GET k",
        "SETRANGE nokey 0 \\e",
        "EXISTS nokey",
        "SETRANGE k 0 \\e",
        "SETRANGE pad 3 ab",
        "GET pad",
        "SET t v EX 100",
        "APPEND t x",
        "TTL t",
        "SETRANGE t 0 y",
        "TTL t",
        // MSETNX.
        "MSETNX a 1 b 2",
        "MSETNX a 1 c 2",
        "MGET a b c",
        "MSETNX a",
        "MSETNX a 1 b",
        // INCRBYFLOAT: long double arithmetic, Redis's printing.
        "SET f 10.5",
        "INCRBYFLOAT f 0.1",
        "INCRBYFLOAT f 5.0e3",
        "INCRBYFLOAT f -5010.6",
        "INCRBYFLOAT f inf",
        "INCRBYFLOAT f nan",
        "INCRBYFLOAT f \\s1",
        "INCRBYFLOAT f 1\\s",
        "INCRBYFLOAT f 0x10",
        "INCRBYFLOAT f 1e400",
        "GET f",
        "INCRBYFLOAT newf 2.5",
        "SET f -0.0",
        "INCRBYFLOAT f 0",
        "SET f abc",
        "INCRBYFLOAT f 1",
        "GET f",
        "SET f 3",
        "EXPIRE f 100",
        "INCRBYFLOAT f 1.5",
        "TTL f",
        // INCR on what Redis does not call an integer.
        "SET z -0",
        "INCR z",
        "SET z 007",
        "INCR z",
        // SETBIT, GETBIT, BITCOUNT.
        "SETBIT bits 7 1",
        "SETBIT bits 7 1",
        "SETBIT bits 100 1",
        "SETBIT bits 7 2",
        "SETBIT bits -1 1",
        "SETBIT bits x 1",
        "SETBIT bits 4294967296 1",
        "STRLEN bits",
        "GETBIT bits 7",
        "GETBIT bits 6",
        "GETBIT bits 100000",
        "GETBIT bits x",
        "GETBIT nokey 3",
        "GET bits",
        "STRLEN bits",
        "BITCOUNT bits",
        "BITCOUNT bits 0 0",
        "BITCOUNT bits 0 -1 BIT",
        "BITCOUNT bits 0 -1 BYTE",
        "BITCOUNT bits 5 100 BIT",
        "BITCOUNT bits -1 -1 BIT",
        "BITCOUNT bits 0",
        "BITCOUNT bits 0 1 FOO",
        "BITCOUNT bits x 1",
        "BITCOUNT nokey",
        "BITCOUNT nokey 0",
        "SET s foobar",
        "BITCOUNT s",
        "BITCOUNT s 1 1",
        "BITCOUNT s 1 -2",
        "BITCOUNT s 5 30 BIT",
        // LCS, the documentation's example and its options.
        "SET s1 ohmytext",
        "SET s2 mynewtext",
        "LCS s1 s2",
        "LCS s1 s2 LEN",
        "LCS s1 s2 IDX",
        "LCS s1 s2 IDX MINMATCHLEN 4",
        "LCS s1 s2 IDX WITHMATCHLEN",
        "LCS s1 s2 IDX MINMATCHLEN 4 WITHMATCHLEN",
        "LCS s1 s2 IDX MINMATCHLEN -3",
        "LCS s1 s2 IDX MINMATCHLEN x",
        "LCS s1 s2 LEN IDX",
        "LCS s1 s2 FOO",
        "LCS s1 nokey",
        "LCS nokey nokey2 IDX",
        "SET r1 aaabbbccc",
        "SET r2 abcabcabc",
        "LCS r1 r2",
        "LCS r1 r2 IDX WITHMATCHLEN",
        "LCS r2 r1 IDX WITHMATCHLEN",
        // SET's options, checked after all are read.
        "SET k v EX 0 NX XX",
        "SET k v NX XX",
        "SET k v EX 10 PX 10",
        "SET k v KEEPTTL EX 10",
        "SET k v GET GET",
        "SET k v EX 9223372036854775",
        "SET k v PXAT 1",
        "EXISTS k",
    ] {
        p.same(cmd);
    }
}

#[test]
fn key_and_expiry_commands_reply_as_redis_server_does() {
    let Some((_dir, _redis, sock, sett)) =
        servers("key_and_expiry_commands_reply_as_redis_server_does")
    else {
        return;
    };
    let mut p = connect(&sock, &sett);
    p.same("RANDOMKEY");
    p.check("KEYS *", Cmp::Sorted);
    for cmd in [
        "SET a 1 EX 100",
        // One key: the only one either server can pick.
        "RANDOMKEY",
        "SET user:1 x",
        "SET user:2 y",
        "RENAME a b",
        "TTL b",
        "EXISTS a",
        "RENAME nokey x",
        "RENAME nokey nokey",
        "RENAME b b",
        "RENAMENX b b",
        "SET c 1",
        "RENAMENX b c",
        "RENAMENX b d",
        "TTL d",
        "COPY d e",
        "TTL e",
        "COPY d e",
        "COPY d e REPLACE",
        "COPY d e REPLACE REPLACE",
        "COPY d e DB",
        "COPY d e DB x",
        "COPY d e DB 0 REPLACE",
        "COPY d e DB 16",
        "GET e",
        "TTL e",
        "COPY d e FOO",
        "COPY d d",
        "COPY nokey e2",
        "TOUCH d e nokey",
        "TOUCH",
        "TYPE d",
        "TYPE nokey",
        // OBJECT: the encodings redis-server would give these values.
        "SET i 12",
        "SET neg -5",
        "SET lead 05",
        "SET big 12345678901234567890",
        "SET fl 1.5",
        "SET long 123456789012345678901234567890123456789012345",
        "OBJECT ENCODING i",
        "OBJECT ENCODING neg",
        "OBJECT ENCODING lead",
        "OBJECT ENCODING big",
        "OBJECT ENCODING fl",
        "OBJECT ENCODING long",
        "OBJECT ENCODING nokey",
        "APPEND i 3",
        "OBJECT ENCODING i",
        "INCR i",
        "OBJECT ENCODING i",
        "OBJECT REFCOUNT i",
        "SET w 10000",
        "OBJECT REFCOUNT w",
        "OBJECT REFCOUNT fl",
        "OBJECT REFCOUNT nokey",
        "OBJECT FREQ i",
        "OBJECT FREQ nokey",
        "OBJECT IDLETIME nokey",
        "OBJECT",
        "OBJECT ENCODING",
        "OBJECT ENCODING a b",
        "OBJECT FOO i",
        // Expiry at absolute times, and the conditions.
        "SET k v",
        "EXPIREAT k 9999999999",
        "EXPIRETIME k",
        "PEXPIRETIME k",
        "TTL nokey",
        "EXPIRETIME nokey",
        "PEXPIRETIME nokey",
        "EXPIRETIME user:1",
        "PEXPIREAT k 9999999998000 GT",
        "PEXPIREAT k 9999999998000 LT",
        "EXPIRETIME k",
        "EXPIREAT k 9999999999 NX",
        "EXPIREAT k 9999999999 XX",
        "PEXPIRETIME k",
        "EXPIRE k 100 FOO",
        "EXPIRE k 100 NX XX",
        "EXPIRE k 100 GT LT",
        "EXPIRE k x",
        "EXPIRE k 9223372036854775807",
        "PEXPIRE k 9223372036854775807",
        "EXPIREAT k 9223372036854775807",
        // Refused expiries leave the key and its TTL alone.
        "EXISTS k",
        "EXPIRETIME k",
        "EXPIRE nokey 10 FOO",
        "EXPIRE nokey 1 GT",
        "PERSIST k",
        "PERSIST k",
        "EXPIRE k 100 GT",
        "EXPIRE k 100 LT",
        "TTL k",
        "EXPIRE k 50 GT",
        "EXPIRE k -1 GT",
        "EXISTS k",
        "EXPIREAT k 1",
        "EXISTS k",
        "SET k v",
        "PEXPIREAT k 1000",
        "EXISTS k",
        "DBSIZE",
        "TIME x",
        "FUNCTION FLUSH",
        "FUNCTION LIST",
        "FUNCTION FOO",
    ] {
        p.same(cmd);
    }
    p.check("KEYS *", Cmp::Sorted);
    p.check("KEYS user:*", Cmp::Sorted);
    p.check("KEYS u?er:[12]", Cmp::Sorted);
    p.same("KEYS nomatch*");
    p.same("KEYS");
    // TIME: seconds and microseconds as bulk strings; the seconds agree with
    // redis-server's clock within a second or two.
    let secs = |reply: Vec<u8>| -> Vec<u64> {
        String::from_utf8_lossy(&reply)
            .split("\r\n")
            .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
            .filter_map(|l| l.parse().ok())
            .collect()
    };
    let want = secs(ask_buf(&mut p.redis, &[b"TIME"]));
    let got = secs(ask_buf(&mut p.sett, &[b"TIME"]));
    assert_eq!(
        (want.len(), got.len()),
        (2, 2),
        "TIME replies {want:?} {got:?}"
    );
    assert!(
        want[0].abs_diff(got[0]) <= 2,
        "TIME {want:?} against {got:?}"
    );
    assert!(got[1] < 1_000_000, "microseconds {}", got[1]);
}

#[test]
fn multi_exec_watch_reply_as_redis_server_does() {
    let Some((_dir, _redis, sock, sett)) = servers("multi_exec_watch_reply_as_redis_server_does")
    else {
        return;
    };
    let mut p = connect(&sock, &sett);
    let mut other = connect(&sock, &sett);
    for cmd in [
        "EXEC",
        "DISCARD",
        "MULTI",
        "MULTI",
        "SET a 1",
        "INCR a",
        "INCR a",
        "GET a",
        "APPEND a x",
        "INCR a",
        "GET a",
        "SET t v EX 100",
        "TTL t",
        "EXEC",
        "GET a",
        // A queueing error discards the whole transaction.
        "MULTI",
        "SET b 1",
        "NOSUCHCOMMAND x",
        "GET",
        "EXEC",
        "EXISTS b",
        // DISCARD drops what was queued.
        "MULTI",
        "SET c 1",
        "DISCARD",
        "EXISTS c",
        "MULTI",
        "WATCH a",
        "EXEC",
    ] {
        p.same(cmd);
    }
    // WATCH: a write by another client in between makes EXEC reply nil and
    // write nothing; without one, EXEC runs.
    p.same("WATCH a");
    other.same("SET a changed");
    p.same("MULTI");
    p.same("SET a mine");
    p.same("EXEC");
    p.same("GET a");
    p.same("WATCH a nokey");
    p.same("MULTI");
    p.same("SET a mine");
    p.same("EXEC");
    p.same("GET a");
    // A watched key that is created, or deleted, also aborts.
    p.same("WATCH fresh");
    other.same("SET fresh 1");
    p.same("MULTI");
    p.same("SET fresh 2");
    p.same("EXEC");
    p.same("GET fresh");
    p.same("WATCH fresh");
    other.same("DEL fresh");
    p.same("MULTI");
    p.same("SET fresh 3");
    p.same("EXEC");
    p.same("EXISTS fresh");
    // UNWATCH forgets.
    p.same("WATCH a");
    other.same("SET a again");
    p.same("UNWATCH");
    p.same("MULTI");
    p.same("SET a last");
    p.same("EXEC");
    p.same("GET a");
    // The client's own write to a watched key aborts too.
    p.same("WATCH a");
    p.same("SET a own");
    p.same("MULTI");
    p.same("GET a");
    p.same("EXEC");
    p.same("UNWATCH x");
}

#[test]
fn unknown_commands_of_other_types_get_redis_servers_error() {
    let Some((_dir, _redis, sock, sett)) =
        servers("unknown_commands_of_other_types_get_redis_servers_error")
    else {
        return;
    };
    let mut p = connect(&sock, &sett);
    // sett-server serves strings only: hash, list, set and sorted-set commands are
    // unknown to it. redis-server knows them, so only the shape is compared.
    for cmd in ["HSET h f v", "LPUSH l a", "SADD s a", "ZADD z 1 a"] {
        let words = split_words(cmd);
        let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
        let got = String::from_utf8_lossy(&ask_buf(&mut p.sett, &args)).into_owned();
        let name = cmd.split(' ').next().unwrap_or_default();
        assert!(
            got.starts_with(&format!(
                "-ERR unknown command '{name}', with args beginning with: "
            )),
            "{cmd}: {got:?}"
        );
    }
    p.same("PING");
}

#[test]
fn replication_commands_refuse_bad_arguments_as_redis_server_does() {
    let Some((_dir, _redis, sock, sett)) =
        servers("replication_commands_refuse_bad_arguments_as_redis_server_does")
    else {
        return;
    };
    let mut p = connect(&sock, &sett);
    p.same("SET kept v");
    // No valid master is ever named: both stay masters and keep their data.
    for cmd in [
        "REPLICAOF 127.0.0.1 notaport",
        "REPLICAOF 127.0.0.1 -1",
        "REPLICAOF 127.0.0.1 70000",
        "REPLICAOF NO",
        "SLAVEOF 127.0.0.1",
        "REPLICAOF NO ONE",
        "SLAVEOF NO ONE",
        "WAIT x 10",
        "WAIT 1 x",
        "WAIT 1 -5",
        "WAIT 1",
        "WAIT -1 10",
        "WAIT 0 0",
        "WAIT 1 10",
        "REPLCONF",
        "REPLCONF listening-port",
        "REPLCONF listening-port abc",
        "REPLCONF listening-port 70000",
        "REPLCONF listening-port 123 capa",
        "REPLCONF foo bar",
        "REPLCONF ip-address 127.0.0.1",
        "PSYNC",
        "PSYNC ? x",
        "SYNC extra",
        "GET kept",
    ] {
        p.same(cmd);
    }
}

/// Sends `cmd` on both connections and reads `replies` replies from each.
fn both_many(p: &mut Pair, cmd: &str, replies: usize) -> (Vec<u8>, Vec<u8>) {
    let words = split_words(cmd);
    let args: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
    let bytes = encode(&args);
    p.redis.get_mut().write_all(&bytes).expect("writing");
    p.sett.get_mut().write_all(&bytes).expect("writing");
    let (mut want, mut got) = (Vec::new(), Vec::new());
    for _ in 0..replies {
        read_reply(&mut p.redis, &mut want);
        read_reply(&mut p.sett, &mut got);
    }
    (want, got)
}

fn same_many(p: &mut Pair, cmd: &str, replies: usize) {
    let (want, got) = both_many(p, cmd, replies);
    assert_eq!(
        String::from_utf8_lossy(&want),
        String::from_utf8_lossy(&got),
        "{cmd}: redis-server (left) and sett-server (right) differ"
    );
}

#[test]
fn subscribe_publish_and_client_kill_reply_as_redis_server_does() {
    let Some((_dir, _redis, sock, sett)) =
        servers("subscribe_publish_and_client_kill_reply_as_redis_server_does")
    else {
        return;
    };
    let mut publisher = connect(&sock, &sett);
    let mut sub = connect(&sock, &sett);
    publisher.same("PUBLISH news nobody");
    same_many(&mut sub, "SUBSCRIBE news __sentinel__:hello news", 3);
    // Subscribed (RESP2): only the pubsub commands, PING and QUIT.
    same_many(&mut sub, "GET k", 1);
    same_many(&mut sub, "PING", 1);
    same_many(&mut sub, "PING hello", 1);
    publisher.same("PUBLISH news first");
    publisher.same("PUBLISH __sentinel__:hello 127.0.0.1,26379,abc,0");
    publisher.same("PUBLISH other unheard");
    let (want, got) = {
        let (mut w, mut g) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            read_reply(&mut sub.redis, &mut w);
            read_reply(&mut sub.sett, &mut g);
        }
        (w, g)
    };
    assert_eq!(
        String::from_utf8_lossy(&want),
        String::from_utf8_lossy(&got),
        "the messages delivered differ"
    );
    assert!(String::from_utf8_lossy(&got).contains("first"), "{got:?}");
    same_many(&mut sub, "UNSUBSCRIBE news", 1);
    publisher.same("PUBLISH news after");
    same_many(&mut sub, "UNSUBSCRIBE", 1);
    same_many(&mut sub, "UNSUBSCRIBE", 1);
    // Out of pubsub mode: plain commands again.
    sub.same("PING");
    // CLIENT KILL: bad arguments, then TYPE pubsub ends a subscriber's link.
    for cmd in [
        "CLIENT KILL TYPE nosuch",
        "CLIENT KILL ID 0",
        "CLIENT KILL ID x",
        "CLIENT KILL TYPE normal SKIPME maybe",
        "CLIENT KILL 10.0.0.1:1",
        "CLIENT KILL TYPE master",
        "CLIENT KILL TYPE pubsub",
    ] {
        publisher.same(cmd);
    }
    same_many(&mut sub, "SUBSCRIBE ch", 1);
    publisher.same("CLIENT KILL TYPE pubsub");
    let mut rest = Vec::new();
    let n = sub
        .sett
        .read_to_end(&mut rest)
        .expect("reading after the kill");
    assert_eq!(n, 0, "the killed subscriber got {rest:?}");
    publisher.same("PUBLISH ch gone");
    publisher.same("CLIENT KILL TYPE normal");
    publisher.same("PING");
}
