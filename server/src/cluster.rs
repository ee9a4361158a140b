//! Redis Cluster key slots and a topology read from a file.
//!
//! The topology file has one node per line: a master is `<40-hex id>
//! <ip>:<port> <ranges>`, ranges like `0-5460` or `5461` separated by spaces,
//! and a replica is `<40-hex id> <ip>:<port> replica <its master's id>`; `#`
//! starts a comment. Every node of the cluster reads the same file and is
//! told its own id; there is no gossip: a slot's owner, and who replicates
//! whom, is whatever the file says. A replica follows its master as
//! `REPLICAOF` would, and serves reads of its master's slots to connections
//! that sent `READONLY`.
//!
//! A node reads the file at start and again on `CLUSTER RELOAD`. If the file does
//! not exist at start, the node serves no slot (every keyed command gets
//! `-CLUSTERDOWN`) until a `CLUSTER RELOAD` finds it: nodes started on `--port 0`
//! learn each other's ports that way, once all of them listen. `CLUSTER
//! FAILOVER` on a replica rewrites the file with the roles swapped
//! ([`Topology::failed_over`]) and has every other node reload it.

use crate::error::{io, Error, Result};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// Number of hash slots, as in Redis Cluster.
pub const SLOTS: usize = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum
/// Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The part of `key` that is hashed: the text between the first `{` and the
/// next `}` if that is not empty, else the whole key.
fn hash_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&c| c == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of `key`.
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_part(key)) & (SLOTS as u16 - 1)
}

/// One node of the topology.
#[derive(Debug, Clone)]
pub struct Node {
    /// 40 lowercase hex characters.
    pub id: String,
    /// The IP clients connect to.
    pub ip: String,
    /// Its client port.
    pub port: u16,
    /// Inclusive slot ranges, sorted; empty for a replica.
    pub ranges: Vec<(u16, u16)>,
    /// For a replica: the index of its master in [`Topology::nodes`].
    pub replica_of: Option<usize>,
}

impl Node {
    /// Its slot ranges as the topology file and CLUSTER NODES write them:
    /// " 0-5460 5461", each with a leading space; empty for a replica.
    pub fn ranges_text(&self) -> String {
        self.ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    format!(" {lo}")
                } else {
                    format!(" {lo}-{hi}")
                }
            })
            .collect()
    }
}

/// The cluster as the topology file describes it, and which node this is.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Every node, in file order.
    pub nodes: Vec<Node>,
    /// Index in `nodes` of this server.
    pub me: usize,
    /// Owner of each slot (index in `nodes`), `None` if no node has it.
    owner: Vec<Option<usize>>,
}

impl Topology {
    /// Reads `text` (the file named by `path`, for messages) as the view of node `myid`.
    pub fn parse(text: &str, path: &str, myid: &str) -> Result<Topology> {
        let bad = |n: usize, why: String| Error::Config(format!("{path}:{n}: {why}"));
        let mut nodes: Vec<Node> = Vec::new();
        let mut owner: Vec<Option<usize>> = vec![None; SLOTS];
        // (line, replica's index, its master's id), resolved once every id is read.
        let mut masters_of: Vec<(usize, usize, String)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(id), Some(addr)) = (words.next(), words.next()) else {
                return Err(bad(n, "expected '<id> <ip:port> <slot ranges>'".into()));
            };
            if id.len() != 40
                || !id
                    .bytes()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
            {
                return Err(bad(
                    n,
                    format!("node id '{id}' is not 40 lowercase hex characters"),
                ));
            }
            if nodes.iter().any(|x| x.id == id) {
                return Err(bad(n, format!("node id '{id}' appears twice")));
            }
            let (ip, port) = addr
                .rsplit_once(':')
                .and_then(|(ip, p)| Some((ip, p.parse::<u16>().ok()?)))
                .filter(|(ip, p)| !ip.is_empty() && *p != 0)
                .ok_or_else(|| bad(n, format!("'{addr}' is not ip:port")))?;
            let index = nodes.len();
            let mut ranges = Vec::new();
            let words: Vec<&str> = words.collect();
            if let ["replica", master] = words.as_slice() {
                masters_of.push((n, index, master.to_string()));
            } else {
                for &r in &words {
                    if r == "replica" {
                        return Err(bad(
                            n,
                            "expected 'replica <master id>' and nothing else".into(),
                        ));
                    }
                    let parse = |s: &str| s.parse::<u16>().ok().filter(|&v| usize::from(v) < SLOTS);
                    let (lo, hi) = match r.split_once('-') {
                        Some((a, b)) => (parse(a), parse(b)),
                        None => (parse(r), parse(r)),
                    };
                    let (Some(lo), Some(hi)) = (lo, hi) else {
                        return Err(bad(
                            n,
                            format!("'{r}' is not a slot or range within 0-16383"),
                        ));
                    };
                    if lo > hi {
                        return Err(bad(n, format!("range '{r}' ends before it starts")));
                    }
                    for s in lo..=hi {
                        let slot = &mut owner[usize::from(s)];
                        if let Some(other) = *slot {
                            return Err(bad(
                                n,
                                format!("slot {s} is already served by {}", nodes[other].id),
                            ));
                        }
                        *slot = Some(index);
                    }
                    ranges.push((lo, hi));
                }
            }
            ranges.sort_unstable();
            nodes.push(Node {
                id: id.to_string(),
                ip: ip.to_string(),
                port,
                ranges,
                replica_of: None,
            });
        }
        // A replica names a master of the file: one that is no replica itself.
        let replicas: Vec<usize> = masters_of.iter().map(|r| r.1).collect();
        for (n, index, master) in masters_of {
            match nodes.iter().position(|x| x.id == master) {
                Some(m) if !replicas.contains(&m) => {
                    nodes[index].replica_of = Some(m);
                }
                _ => {
                    return Err(bad(
                        n,
                        format!("replica of '{master}', which is no master of this file"),
                    ))
                }
            }
        }
        let me = nodes.iter().position(|x| x.id == myid).ok_or_else(|| {
            Error::Config(format!(
                "{path}: no node has the id '{myid}' given by --cluster-myid"
            ))
        })?;
        Ok(Topology { nodes, me, owner })
    }

    /// The node serving `slot`, if any.
    pub fn owner(&self, slot: u16) -> Option<&Node> {
        self.owner
            .get(usize::from(slot))
            .copied()
            .flatten()
            .and_then(|i| self.nodes.get(i))
    }

    /// True if this node serves `slot`.
    pub fn is_mine(&self, slot: u16) -> bool {
        self.owner.get(usize::from(slot)).copied().flatten() == Some(self.me)
    }

    /// This node.
    pub fn myself(&self) -> &Node {
        &self.nodes[self.me]
    }

    /// True if this node is a replica of the node serving `slot`: it may
    /// answer reads of it on a READONLY connection.
    pub fn replicates(&self, slot: u16) -> bool {
        let owner = self.owner.get(usize::from(slot)).copied().flatten();
        owner.is_some() && self.myself().replica_of == owner
    }

    /// The master this node replicates, if the file makes it a replica.
    pub fn my_master(&self) -> Option<&Node> {
        self.myself().replica_of.and_then(|m| self.nodes.get(m))
    }

    /// The replicas of the node at `index`, in file order.
    pub fn replicas(&self, index: usize) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(move |n| n.replica_of == Some(index))
    }

    /// The file's text for this topology (comments are not kept).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for n in &self.nodes {
            out.push_str(&format!("{} {}:{}", n.id, n.ip, n.port));
            match n.replica_of {
                Some(m) => out.push_str(&format!(" replica {}", self.nodes[m].id)),
                None => out.push_str(&n.ranges_text()),
            }
            out.push('\n');
        }
        out
    }

    /// The file's text once this replica takes over its master's slots: it
    /// gets the ranges, and its master and sibling replicas replicate it.
    /// `None` if this node is a master.
    pub fn failed_over(&self) -> Option<String> {
        let old = self.myself().replica_of?;
        let mut next = self.clone();
        next.nodes[self.me].ranges = std::mem::take(&mut next.nodes[old].ranges);
        for (i, n) in next.nodes.iter_mut().enumerate() {
            if i == self.me {
                n.replica_of = None;
            } else if i == old || n.replica_of == Some(old) {
                n.replica_of = Some(self.me);
            }
        }
        Some(next.render())
    }

    /// Slots that some node serves.
    pub fn assigned(&self) -> usize {
        self.owner.iter().filter(|o| o.is_some()).count()
    }

    /// The view of a node that has no topology file yet: itself, serving no slot.
    fn alone(myid: &str, ip: &str, port: u16) -> Topology {
        Topology {
            nodes: vec![Node {
                id: myid.to_string(),
                ip: ip.to_string(),
                port,
                ranges: Vec::new(),
                replica_of: None,
            }],
            me: 0,
            owner: vec![None; SLOTS],
        }
    }
}

/// Cluster mode: the topology file, this node's id, and the topology in force.
#[derive(Debug)]
pub struct Cluster {
    path: PathBuf,
    myid: String,
    current: RwLock<Arc<Topology>>,
}

impl Cluster {
    /// Reads `path` as the view of `myid`; a missing file leaves this node alone,
    /// shown at `ip:port` (the address it listens on), until `reload` finds the file.
    pub fn open(path: PathBuf, myid: &str, ip: &str, port: u16) -> Result<Cluster> {
        let valid_id = myid.len() == 40
            && myid
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        if !valid_id {
            return Err(Error::Config(format!(
                "--cluster-myid '{myid}' is not 40 lowercase hex characters"
            )));
        }
        let topology = match read(&path, myid) {
            Ok(t) => t,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                eprintln!(
                    "sett-server: {} does not exist: serving no slot until CLUSTER RELOAD reads it",
                    path.display()
                );
                Topology::alone(myid, ip, port)
            }
            Err(e) => return Err(e),
        };
        Ok(Cluster {
            path,
            myid: myid.to_string(),
            current: RwLock::new(Arc::new(topology)),
        })
    }

    /// The topology in force.
    pub fn topology(&self) -> Arc<Topology> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reads the file again and puts it in force; on an error the topology in
    /// force stays. Returns the number of nodes it names.
    pub fn reload(&self) -> Result<usize> {
        let t = read(&self.path, &self.myid)?;
        let n = t.nodes.len();
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(t);
        Ok(n)
    }
}

impl Cluster {
    /// Writes `text` as the topology file (a new file renamed over the old
    /// one) and puts it in force; text that does not parse changes nothing.
    pub fn replace(&self, text: &str) -> Result<usize> {
        let shown = self.path.display().to_string();
        let t = Topology::parse(text, &shown, &self.myid)?;
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(io(format!("writing {shown}")))?;
        let n = t.nodes.len();
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(t);
        Ok(n)
    }
}

fn read(path: &std::path::Path, myid: &str) -> Result<Topology> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(io(format!("reading {shown}")))?;
    Topology::parse(&text, &shown, myid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slots_match_the_redis_cluster_specification() {
        // The specification's check value for CRC16/XMODEM, and slots that
        // `CLUSTER KEYSLOT` of Redis returns for these keys.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    #[test]
    fn a_topology_file_maps_every_slot_to_its_node() {
        let text = format!(
            "# two nodes\n{A} 127.0.0.1:7001 0-8191\n{B} 127.0.0.1:7002 8192-16000 16383\n"
        );
        let t = Topology::parse(&text, "t", B).ok();
        let t = t.as_ref();
        assert_eq!(t.map(|t| t.me), Some(1));
        assert_eq!(t.and_then(|t| t.owner(100)).map(|n| n.port), Some(7001));
        assert_eq!(t.map(|t| t.is_mine(16383)), Some(true));
        assert!(t.and_then(|t| t.owner(16001)).is_none());
        assert_eq!(t.map(Topology::assigned), Some(8192 + 7809 + 1));
    }

    #[test]
    fn overlapping_ranges_and_unknown_ids_are_refused_with_the_line() {
        let text = format!("{A} 127.0.0.1:7001 0-100\n{B} 127.0.0.1:7002 100-200\n");
        let err = Topology::parse(&text, "topo", A)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("topo:2") && e.contains("slot 100")));
        let text = format!("{A} 127.0.0.1:7001 0-100\n");
        assert!(Topology::parse(&text, "topo", B).is_err());
        assert!(Topology::parse("xyz 127.0.0.1:1 0", "topo", "xyz").is_err());
    }

    const C: &str = "cccccccccccccccccccccccccccccccccccccccc";

    #[test]
    fn replicas_follow_a_master_of_the_file_and_a_failover_swaps_the_roles() {
        let text = format!(
            "{A} 127.0.0.1:7001 0-8191\n{B} 127.0.0.1:7002 8192-16383\n{C} 127.0.0.1:7003 replica {A}\n"
        );
        let Ok(t) = Topology::parse(&text, "t", C) else {
            panic!("a replica line was refused");
        };
        assert_eq!(t.my_master().map(|m| m.port), Some(7001));
        assert!(t.replicates(100) && !t.is_mine(100) && !t.replicates(9000));
        assert_eq!(t.replicas(0).map(|n| n.port).collect::<Vec<_>>(), [7003]);
        assert_eq!(t.render(), text, "the file reads back as written");
        let Some(next) = t.failed_over() else {
            panic!("a replica could not fail over");
        };
        assert_eq!(
            next,
            format!(
                "{A} 127.0.0.1:7001 replica {C}\n{B} 127.0.0.1:7002 8192-16383\n{C} 127.0.0.1:7003 0-8191\n"
            )
        );
        let Ok(after) = Topology::parse(&next, "t", A) else {
            panic!("the failed-over text does not parse");
        };
        assert_eq!(after.my_master().map(|m| m.port), Some(7003));
        assert_eq!(after.owner(100).map(|n| n.port), Some(7003));
        assert!(Topology::parse(&text, "t", A).is_ok_and(|t| t.failed_over().is_none()));
        // A replica of a replica, of an unknown id, or with slots is refused.
        for bad in [
            format!("{A} 127.0.0.1:7001 0-16383\n{B} 127.0.0.1:7002 replica {C}\n{C} 127.0.0.1:7003 replica {A}\n"),
            format!("{A} 127.0.0.1:7001 0-16383\n{B} 127.0.0.1:7002 replica {C}\n"),
            format!("{A} 127.0.0.1:7001 0-100\n{B} 127.0.0.1:7002 101-200 replica {A}\n"),
        ] {
            let err = Topology::parse(&bad, "topo", A).err().map(|e| e.to_string());
            assert!(err.is_some_and(|e| e.contains("topo:2")), "{bad}");
        }
    }

    #[test]
    fn a_missing_file_serves_no_slot_until_a_reload_reads_it_and_a_bad_one_keeps_the_old() {
        let dir = std::env::temp_dir().join(format!("sett-cluster-unit-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("topology");
        let _ = std::fs::remove_file(&path);
        let Ok(c) = Cluster::open(path.clone(), A, "127.0.0.1", 7001) else {
            panic!("a missing topology file was refused");
        };
        let t = c.topology();
        assert_eq!((t.nodes.len(), t.assigned(), t.myself().port), (1, 0, 7001));
        assert!(c.reload().is_err(), "a reload of a missing file succeeded");
        let text = format!("{A} 127.0.0.1:7001 0-8191\n{B} 127.0.0.1:7002 8192-16383\n");
        assert!(std::fs::write(&path, text).is_ok());
        assert_eq!(c.reload().ok(), Some(2));
        assert_eq!(c.topology().assigned(), SLOTS);
        assert!(std::fs::write(&path, "garbage").is_ok());
        assert!(c.reload().is_err());
        assert_eq!(
            c.topology().nodes.len(),
            2,
            "a bad file replaced the topology"
        );
        assert!(Cluster::open(path.clone(), "nothex", "127.0.0.1", 1).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
