//! Connection commands: PING, ECHO, SELECT, AUTH, HELLO, CLIENT, QUIT.

use super::{not_int, parse_i64, syntax, upper, Conn, Ctx, Res, Shared};
use crate::resp::Reply;

pub(super) fn select(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(match parse_i64(&args[1]) {
        Some(0) => Reply::Status("OK"),
        Some(_) => Reply::err("DB index is out of range"),
        None => not_int(),
    })
}

pub(super) fn ping(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    // A subscribed RESP2 connection gets its pong as a push-shaped array.
    if cx.conn.subscriptions > 0 && !cx.conn.resp3 && args.len() <= 2 {
        let echo = args.get(1).cloned().unwrap_or_default();
        return Ok(Reply::Array(vec![Reply::text("pong"), Reply::Bulk(echo)]));
    }
    Ok(match args.len() {
        1 => Reply::Status("PONG"),
        2 => Reply::Bulk(args[1].clone()),
        _ => super::wrong_args("ping"),
    })
}

pub(super) fn echo(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(Reply::Bulk(args[1].clone()))
}

pub(super) fn quit(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    cx.conn.close = true;
    Ok(Reply::Status("OK"))
}

pub(super) fn auth(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(check_auth(cx.sh, cx.conn, &args[1..]))
}

pub(super) fn hello(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(hello_reply(cx.sh, cx.conn, args))
}

pub(super) fn client(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if upper(&args[1]) == "KILL" {
        return Ok(client_kill(cx, &args[2..]));
    }
    Ok(client_reply(cx.conn, args))
}

/// CLIENT KILL addr, or CLIENT KILL [ID id] [TYPE normal|pubsub|master|replica|slave]
/// [ADDR ip:port] [SKIPME yes|no]. A replica's link to this node and this
/// node's link to its master are not clients here: TYPE master and
/// replica match none.
fn client_kill(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Reply {
    use crate::clients::{KillFilter, Kind};
    if let [addr] = args {
        let f = KillFilter {
            addr: Some(String::from_utf8_lossy(addr).into_owned()),
            ..KillFilter::default()
        };
        return if cx.sh.clients.kill(&f) > 0 {
            Reply::Status("OK")
        } else {
            Reply::err("No such client")
        };
    }
    if args.is_empty() || !args.len().is_multiple_of(2) {
        return syntax();
    }
    let mut f = KillFilter {
        skip: Some(cx.conn.id),
        ..KillFilter::default()
    };
    let mut none = false;
    for pair in args.chunks(2) {
        let v = &pair[1];
        match upper(&pair[0]).as_str() {
            "ID" => match parse_i64(v) {
                Some(id) if id > 0 => f.id = Some(id as u64),
                _ => return Reply::err("client-id should be greater than 0"),
            },
            "TYPE" => match upper(v).as_str() {
                "NORMAL" => f.kind = Some(Kind::Normal),
                "PUBSUB" => f.kind = Some(Kind::PubSub),
                "MASTER" | "REPLICA" | "SLAVE" => none = true,
                _ => {
                    return Reply::err(format!(
                        "Unknown client type '{}'",
                        String::from_utf8_lossy(v)
                    ))
                }
            },
            "ADDR" => f.addr = Some(String::from_utf8_lossy(v).into_owned()),
            "SKIPME" => match upper(v).as_str() {
                "YES" => f.skip = Some(cx.conn.id),
                "NO" => f.skip = None,
                _ => return syntax(),
            },
            _ => return syntax(),
        }
    }
    if none {
        return Reply::Int(0);
    }
    // The caller's own connection ends after this reply is written.
    let my_kind = if cx.conn.subscriptions > 0 {
        Kind::PubSub
    } else {
        Kind::Normal
    };
    let mine = f.skip.is_none()
        && f.addr.is_none()
        && f.id.is_none_or(|id| id == cx.conn.id)
        && f.kind.is_none_or(|k| k == my_kind);
    let killed = cx.sh.clients.kill(&KillFilter {
        skip: Some(cx.conn.id),
        ..f
    });
    if mine {
        cx.conn.close = true;
    }
    Reply::Int((killed + usize::from(mine)) as i64)
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

fn check_auth(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
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
fn hello_reply(sh: &Shared, conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
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
                let r = check_auth(sh, conn, &args[i + 1..i + 3]);
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
pub(super) const REDIS_VERSION: &str = "7.2.0";

fn client_reply(conn: &mut Conn, args: &[Vec<u8>]) -> Reply {
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
