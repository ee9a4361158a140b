//! CLUSTER, READONLY and READWRITE: what cluster clients ask a node.

use super::{parse_i64, upper, Ctx, Res, Shared};
use crate::cluster::key_slot;
use crate::resp::Reply;
use sett::IterOptions;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// READONLY and READWRITE (cluster mode): whether this connection reads
/// the slots of a replica's master from it or is redirected to the master.
pub(super) fn readonly(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if cx.sh.cluster.is_none() {
        return Ok(Reply::err("This instance has cluster support disabled"));
    }
    cx.conn.readonly = upper(&args[0]) == "READONLY";
    Ok(Reply::Status("OK"))
}

fn node_reply(n: &crate::cluster::Node) -> Reply {
    Reply::Array(vec![
        Reply::text(n.ip.clone()),
        Reply::Int(i64::from(n.port)),
        Reply::text(n.id.clone()),
    ])
}

pub(super) fn cluster(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let sh = cx.sh;
    let sub = upper(&args[1]);
    if sub == "KEYSLOT" && args.len() == 3 {
        return Ok(Reply::Int(i64::from(key_slot(&args[2]))));
    }
    let Some(cl) = &sh.cluster else {
        return Ok(Reply::err("This instance has cluster support disabled"));
    };
    let topo = cl.topology();
    let me = topo.myself();
    Ok(match (sub.as_str(), args.len()) {
        ("MYID", 2) => Reply::text(me.id.clone()),
        // sett's own: puts the topology file's current text in force (how nodes
        // started on --port 0 learn each other's ports); an error keeps the old one.
        ("RELOAD", 2) => match cl.reload() {
            Ok(n) => {
                eprintln!("sett-server: cluster topology reloaded: {n} nodes");
                follow_topology(sh, cx.db.last_version());
                Reply::Status("OK")
            }
            Err(e) => Reply::err(format!("CLUSTER RELOAD: {e}")),
        },
        ("FAILOVER", 2 | 3) => failover(cx, args.get(2))?,
        ("INFO", 2) => {
            let assigned = topo.assigned();
            let serving = topo.nodes.iter().filter(|n| !n.ranges.is_empty()).count();
            Reply::Bulk(
                format!(
                    "cluster_enabled:1\r\ncluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{}\r\ncluster_size:{serving}\r\ncluster_current_epoch:1\r\ncluster_my_epoch:1\r\n",
                    if assigned == crate::cluster::SLOTS { "ok" } else { "fail" },
                    topo.nodes.len(),
                )
                .into_bytes(),
            )
        }
        ("SLOTS", 2) => {
            let mut out = Vec::new();
            for (i, n) in topo.nodes.iter().enumerate() {
                for &(lo, hi) in &n.ranges {
                    let mut range = vec![
                        Reply::Int(i64::from(lo)),
                        Reply::Int(i64::from(hi)),
                        node_reply(n),
                    ];
                    range.extend(topo.replicas(i).map(node_reply));
                    out.push(Reply::Array(range));
                }
            }
            Reply::Array(out)
        }
        ("SHARDS", 2) => {
            let version = cx.db.last_version() as i64;
            let shard_node = |i: usize| {
                let n = &topo.nodes[i];
                let role = if n.replica_of.is_some() {
                    "replica"
                } else {
                    "master"
                };
                // Only this node's own offset is known here (no gossip).
                let offset = if i == topo.me { version } else { 0 };
                Reply::Map(vec![
                    (Reply::text("id"), Reply::text(n.id.clone())),
                    (Reply::text("port"), Reply::Int(i64::from(n.port))),
                    (Reply::text("ip"), Reply::text(n.ip.clone())),
                    (Reply::text("endpoint"), Reply::text(n.ip.clone())),
                    (Reply::text("role"), Reply::text(role)),
                    (Reply::text("replication-offset"), Reply::Int(offset)),
                    (Reply::text("health"), Reply::text("online")),
                ])
            };
            Reply::Array(
                (0..topo.nodes.len())
                    .filter(|&i| topo.nodes[i].replica_of.is_none())
                    .map(|i| {
                        let slots = topo.nodes[i]
                            .ranges
                            .iter()
                            .flat_map(|&(lo, hi)| {
                                [Reply::Int(i64::from(lo)), Reply::Int(i64::from(hi))]
                            })
                            .collect();
                        let mut nodes = vec![shard_node(i)];
                        nodes.extend(
                            (0..topo.nodes.len())
                                .filter(|&r| topo.nodes[r].replica_of == Some(i))
                                .map(shard_node),
                        );
                        Reply::Map(vec![
                            (Reply::text("slots"), Reply::Array(slots)),
                            (Reply::text("nodes"), Reply::Array(nodes)),
                        ])
                    })
                    .collect(),
            )
        }
        ("NODES", 2) => {
            let all: Vec<usize> = (0..topo.nodes.len()).collect();
            Reply::Bulk(nodes_lines(&topo, &all).into_bytes())
        }
        ("REPLICAS" | "SLAVES", 3) => {
            let id = String::from_utf8_lossy(&args[2]);
            match topo.nodes.iter().position(|n| n.id == id) {
                Some(m) if topo.nodes[m].replica_of.is_none() => {
                    let replicas: Vec<usize> = (0..topo.nodes.len())
                        .filter(|&r| topo.nodes[r].replica_of == Some(m))
                        .collect();
                    Reply::Array(
                        nodes_lines(&topo, &replicas)
                            .lines()
                            .map(|l| Reply::text(l.to_string()))
                            .collect(),
                    )
                }
                Some(_) => Reply::err("The specified node is not a master"),
                None => Reply::err(format!("Unknown node {id}")),
            }
        }
        ("COUNTKEYSINSLOT", 3) => {
            match parse_i64(&args[2]).filter(|s| (0..crate::cluster::SLOTS as i64).contains(s)) {
                Some(slot) => {
                    let prefix = (slot as u16).to_be_bytes().to_vec();
                    let it = cx.db.iter(IterOptions {
                        prefix: Some(prefix),
                        keys_only: true,
                        ..Default::default()
                    })?;
                    let mut n = 0;
                    for item in it {
                        item?;
                        n += 1;
                    }
                    Reply::Int(n)
                }
                None => Reply::err("Invalid slot"),
            }
        }
        _ => Reply::err(format!(
            "unknown subcommand or wrong number of arguments for 'cluster|{}'",
            sub.to_ascii_lowercase()
        )),
    })
}

/// CLUSTER NODES' lines for the nodes at `which`, as redis-server writes them.
fn nodes_lines(topo: &crate::cluster::Topology, which: &[usize]) -> String {
    let mut out = String::new();
    for &i in which {
        let n = &topo.nodes[i];
        let role = if n.replica_of.is_some() {
            "slave"
        } else {
            "master"
        };
        let flags = if i == topo.me {
            format!("myself,{role}")
        } else {
            role.to_string()
        };
        let master = n
            .replica_of
            .map_or_else(|| "-".to_string(), |m| topo.nodes[m].id.clone());
        out.push_str(&format!(
            "{} {}:{}@{} {flags} {master} 0 0 1 connected",
            n.id,
            n.ip,
            n.port,
            u32::from(n.port) + 10000
        ));
        out.push_str(&n.ranges_text());
        out.push('\n');
    }
    out
}

/// In cluster mode, gives this node the role the topology names: a replica
/// follows its master's address (as REPLICAOF does), a master follows no one.
pub(crate) fn follow_topology(sh: &Shared, version: u64) {
    let (Some(cl), Some(sh)) = (&sh.cluster, sh.arc()) else {
        return;
    };
    let target = cl.topology().my_master().map(|m| (m.ip.clone(), m.port));
    if target.is_some() || sh.repl.is_replica() {
        sh.repl.set_master(&sh, target, version);
    }
}

/// How long CLUSTER FAILOVER (without FORCE) waits for this replica to have
/// applied every version its master announced.
const CATCH_UP: Duration = Duration::from_secs(5);

/// CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica: takes over its master's
/// slots. Without an option the master must be reachable and this replica
/// caught up with it; FORCE and TAKEOVER promote it as it is (the master may
/// be down). The topology file is rewritten with the roles swapped, put in
/// force here, and every other node of it is sent CLUSTER RELOAD; one that
/// does not answer reads the file when it starts.
fn failover(cx: &mut Ctx<'_>, option: Option<&Vec<u8>>) -> Res {
    let sh = cx.sh;
    let Some(cl) = &sh.cluster else {
        return Ok(Reply::err("This instance has cluster support disabled"));
    };
    let force = match option.map(|o| upper(o)) {
        None => false,
        Some(o) if o == "FORCE" || o == "TAKEOVER" => true,
        Some(_) => return Ok(super::syntax()),
    };
    let topo = cl.topology();
    let Some(text) = topo.failed_over() else {
        return Ok(Reply::err("You should send CLUSTER FAILOVER to a replica"));
    };
    if !force {
        // As in Redis, a manual failover needs its master's cooperation: a
        // master that does not answer (any reply, -NOAUTH too, is an answer)
        // is down, even if this replica's link has not noticed it yet.
        let answers = topo
            .my_master()
            .map(|m| ask(&m.ip, m.port, b"*1\r\n$4\r\nPING\r\n", PROBE))
            .is_some_and(|r| r.is_ok_and(|line| !line.is_empty()));
        if !answers {
            return Ok(Reply::err(
                "Master is down or failed, please use CLUSTER FAILOVER FORCE",
            ));
        }
        let deadline = Instant::now() + CATCH_UP;
        loop {
            match sh.repl.following() {
                Some(f) if f.up && cx.db.last_version() >= f.master_version => break,
                Some(f) if f.up && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Some(f) if f.up => {
                    return Ok(Reply::err(format!(
                        "this replica is at version {}, its master at {}: not caught up within {CATCH_UP:?}; use CLUSTER FAILOVER FORCE",
                        cx.db.last_version(),
                        f.master_version
                    )))
                }
                _ => {
                    return Ok(Reply::err(
                        "Master is down or failed, please use CLUSTER FAILOVER FORCE",
                    ))
                }
            }
        }
    }
    if let Err(e) = cl.replace(&text) {
        return Ok(Reply::err(format!("CLUSTER FAILOVER: {e}")));
    }
    eprintln!("sett-server: CLUSTER FAILOVER: this node now serves its former master's slots");
    follow_topology(sh, cx.db.last_version());
    let me = topo.me;
    for (i, n) in topo.nodes.iter().enumerate() {
        if i != me {
            tell_reload(n.ip.clone(), n.port);
        }
    }
    Ok(Reply::Status("OK"))
}

/// How long a node waits for another to accept a connection and answer.
const PROBE: Duration = Duration::from_secs(2);

/// Sends one RESP `command` to `ip:port` and returns the first line of its
/// answer, without the line end.
fn ask(ip: &str, port: u16, command: &[u8], timeout: Duration) -> std::io::Result<String> {
    let addr = (ip, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(command)?;
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line)?;
    Ok(line.trim_end().to_string())
}

/// Sends CLUSTER RELOAD to a node, on a thread of its own; a node that does
/// not answer is only logged (it reads the file when it starts).
fn tell_reload(ip: String, port: u16) {
    let sent = std::thread::Builder::new()
        .name("sett-cluster-reload".into())
        .spawn(move || {
            let reload = b"*2\r\n$7\r\nCLUSTER\r\n$6\r\nRELOAD\r\n";
            match ask(&ip, port, reload, Duration::from_secs(5)) {
                Ok(line) if line == "+OK" => {}
                Ok(line) => eprintln!("sett-server: CLUSTER RELOAD on {ip}:{port}: {line}"),
                Err(e) => eprintln!("sett-server: CLUSTER RELOAD on {ip}:{port}: {e}"),
            }
        });
    if let Err(e) = sent {
        eprintln!("sett-server: starting a thread to reload {port}: {e}");
    }
}
