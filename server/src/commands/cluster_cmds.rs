//! CLUSTER, READONLY and READWRITE: what cluster clients ask a node.

use super::{parse_i64, upper, Ctx, Res};
use crate::cluster::key_slot;
use crate::resp::Reply;
use sett::IterOptions;

/// READONLY and READWRITE: accepted in cluster mode (every node serves reads of its slots).
pub(super) fn readonly(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    Ok(if cx.sh.cluster.is_none() {
        Reply::err("This instance has cluster support disabled")
    } else {
        Reply::Status("OK")
    })
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
                Reply::Status("OK")
            }
            Err(e) => Reply::err(format!("CLUSTER RELOAD: {e}")),
        },
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
            for n in &topo.nodes {
                for &(lo, hi) in &n.ranges {
                    out.push(Reply::Array(vec![
                        Reply::Int(i64::from(lo)),
                        Reply::Int(i64::from(hi)),
                        node_reply(n),
                    ]));
                }
            }
            Reply::Array(out)
        }
        ("SHARDS", 2) => Reply::Array(
            topo.nodes
                .iter()
                .map(|n| {
                    let slots = n
                        .ranges
                        .iter()
                        .flat_map(|&(lo, hi)| {
                            [Reply::Int(i64::from(lo)), Reply::Int(i64::from(hi))]
                        })
                        .collect();
                    let node = Reply::Map(vec![
                        (Reply::text("id"), Reply::text(n.id.clone())),
                        (Reply::text("port"), Reply::Int(i64::from(n.port))),
                        (Reply::text("ip"), Reply::text(n.ip.clone())),
                        (Reply::text("endpoint"), Reply::text(n.ip.clone())),
                        (Reply::text("role"), Reply::text("master")),
                        (Reply::text("replication-offset"), Reply::Int(0)),
                        (Reply::text("health"), Reply::text("online")),
                    ]);
                    Reply::Map(vec![
                        (Reply::text("slots"), Reply::Array(slots)),
                        (Reply::text("nodes"), Reply::Array(vec![node])),
                    ])
                })
                .collect(),
        ),
        ("NODES", 2) => {
            let mut out = String::new();
            for (i, n) in topo.nodes.iter().enumerate() {
                let flags = if i == topo.me {
                    "myself,master"
                } else {
                    "master"
                };
                out.push_str(&format!(
                    "{} {}:{}@{} {flags} - 0 0 1 connected",
                    n.id,
                    n.ip,
                    n.port,
                    u32::from(n.port) + 10000
                ));
                for &(lo, hi) in &n.ranges {
                    if lo == hi {
                        out.push_str(&format!(" {lo}"));
                    } else {
                        out.push_str(&format!(" {lo}-{hi}"));
                    }
                }
                out.push('\n');
            }
            Reply::Bulk(out.into_bytes())
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
