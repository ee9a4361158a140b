//! REPLICAOF (SLAVEOF), WAIT, and the replica's handshake commands
//! (REPLCONF, PSYNC); the replication itself is in `crate::replication`.

use super::{parse_i64, upper, Ctx, Res};
use crate::replication::{self, CAPA};
use crate::resp::Reply;
use std::time::Duration;

/// REPLICAOF host port | REPLICAOF NO ONE.
pub(super) fn replicaof(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if cx.sh.cluster.is_some() {
        return Ok(Reply::err("REPLICAOF not allowed in cluster mode."));
    }
    let Some(sh) = cx.sh.arc() else {
        return Ok(Reply::err("the server is shutting down"));
    };
    if upper(&args[1]) == "NO" && upper(&args[2]) == "ONE" {
        sh.repl.set_master(&sh, None, cx.db.last_version());
        return Ok(Reply::Status("OK"));
    }
    // redis-server gives one answer for a port that is not a number and one out of range.
    let port = match parse_i64(&args[2]) {
        Some(p) if (0..=65535).contains(&p) => p as u16,
        _ => return Ok(Reply::err("Invalid master port")),
    };
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    if sh.settings.port == port && (host == sh.settings.bind || host == "localhost") {
        return Ok(Reply::err("a node cannot replicate from itself"));
    }
    sh.repl
        .set_master(&sh, Some((host, port)), cx.db.last_version());
    Ok(Reply::Status("OK"))
}

/// WAIT numreplicas timeout: how many replicas acknowledged every write
/// this node had committed when WAIT began (durably, see `crate::replication`).
pub(super) fn wait(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if cx.sh.repl.is_replica() {
        return Ok(Reply::err(
            "WAIT cannot be used with replica instances: writes are refused on a replica",
        ));
    }
    let Some(n) = parse_i64(&args[1]) else {
        return Ok(super::not_int());
    };
    let timeout = match parse_i64(&args[2]) {
        None => return Ok(Reply::err("timeout is not an integer or out of range")),
        Some(t) if t < 0 => return Ok(Reply::err("timeout is negative")),
        Some(0) => None,
        Some(t) => Some(Duration::from_millis(t as u64)),
    };
    let version = cx.db.last_version();
    let have = cx.sh.repl.wait(n.max(0) as usize, version, timeout);
    Ok(Reply::Int(have as i64))
}

/// REPLCONF, as a replica sends it before PSYNC.
pub(super) fn replconf(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if args.len().is_multiple_of(2) {
        return Ok(super::syntax());
    }
    for pair in args[1..].chunks(2) {
        match upper(&pair[0]).as_str() {
            // Any integer is accepted, as redis-server does; one that is no
            // port leaves the replica's port unknown (0 in INFO).
            "LISTENING-PORT" => match parse_i64(&pair[1]) {
                Some(p) => cx.conn.repl_port = u16::try_from(p).ok(),
                None => return Ok(super::not_int()),
            },
            "CAPA" => {
                if pair[1] == CAPA.as_bytes() {
                    cx.conn.repl_capa = true;
                }
            }
            "IP-ADDRESS" => {}
            // An acknowledgement on a connection that is not a replica's link.
            "ACK" | "GETACK" => return Ok(Reply::Silent),
            _ => {
                return Ok(Reply::err(format!(
                    "Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(&pair[0])
                )))
            }
        }
    }
    Ok(Reply::Status("OK"))
}

/// PSYNC replid version: the connection becomes a replica's link.
pub(super) fn psync(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if cx.conn.multi.is_some() {
        return Ok(Reply::err("Command not allowed inside a transaction"));
    }
    match replication::parse_psync(args, cx.conn.repl_port, cx.conn.repl_capa) {
        Ok(req) => {
            cx.conn.takeover = Some(req);
            Ok(Reply::Silent)
        }
        Err(why) => Ok(Reply::err(why)),
    }
}

/// SYNC: the old full-sync-only handshake, whose RDB stream sett does not make.
pub(super) fn sync(_cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    Ok(Reply::err(format!(
        "sett-server replicas use PSYNC with REPLCONF capa {CAPA}; SYNC's RDB stream is not served"
    )))
}
