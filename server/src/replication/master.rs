//! The master's side of one replica's link: a thread per replica that owns
//! the connection once PSYNC took it over. It sends a checkpoint when the
//! replica needs a full sync, then the change feed, and reads the replica's
//! acknowledgements on a second thread.

use super::wire::{self, Frame};
use super::{Psync, CAPA};
use crate::commands::Shared;
use crate::resp::{Limits, Parser};
use bytes::BytesMut;
use sett::{Error as DbError, SubscribeOptions, Subscription};
use std::io::{BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often an idle link carries a heartbeat.
const HEARTBEAT: Duration = Duration::from_secs(1);

/// Serves the replica on `stream` until the link or the Db closes.
pub(crate) fn serve(sh: Arc<Shared>, stream: TcpStream, req: Psync) {
    let ip = stream
        .peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let id = sh.repl.add_follower(ip.clone(), req.port);
    let gone = Arc::new(AtomicBool::new(false));
    let acks = match stream.try_clone() {
        Ok(r) => {
            let (sh2, gone2) = (sh.clone(), gone.clone());
            Some(std::thread::spawn(move || read_acks(&sh2, r, id, &gone2)))
        }
        Err(e) => {
            eprintln!("sett-server: replica {ip}:{}: {e}", req.port);
            None
        }
    };
    if acks.is_some() {
        if let Err(e) = stream_to(&sh, &stream, &req, id, &gone) {
            eprintln!("sett-server: replica {ip}:{} dropped: {e}", req.port);
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
    if let Some(t) = acks {
        let _ = t.join();
    }
    sh.repl.remove_follower(id);
}

/// `REPLCONF ACK <version>` commands from the replica, until it closes.
fn read_acks(sh: &Shared, mut r: TcpStream, id: u64, gone: &AtomicBool) {
    let limits = Limits {
        max_bulk: 1024,
        max_args: 8,
    };
    let mut parser = Parser::default();
    let mut buf = BytesMut::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    'read: loop {
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        loop {
            match parser.next(&mut buf, &limits) {
                Ok(Some(args)) => {
                    let ack = match args.as_slice() {
                        [c, a, v]
                            if c.eq_ignore_ascii_case(b"replconf")
                                && a.eq_ignore_ascii_case(b"ack") =>
                        {
                            std::str::from_utf8(v).ok().and_then(|s| s.parse().ok())
                        }
                        _ => None,
                    };
                    match ack {
                        Some(v) => sh.repl.ack(id, v),
                        None => break 'read,
                    }
                }
                Ok(None) => break,
                Err(_) => break 'read,
            }
        }
    }
    gone.store(true, Ordering::Release);
    let _ = r.shutdown(Shutdown::Both);
}

fn stream_to(
    sh: &Shared,
    stream: &TcpStream,
    req: &Psync,
    id: u64,
    gone: &AtomicBool,
) -> Result<(), String> {
    let mut w = BufWriter::with_capacity(256 << 10, stream);
    let feed = |from: Option<u64>| SubscribeOptions {
        prefixes: Vec::new(),
        from,
        max_pending_bytes: sh.repl.backlog().max(1 << 20),
    };
    let replid = sh.repl.replid();
    let (sub, full) = {
        let db = sh.db();
        let newest = db.last_version();
        let resumed = if sh.repl.may_continue(&req.replid, req.version, newest) {
            match db.subscribe(feed(Some(req.version))) {
                Ok(s) => Some(s),
                Err(DbError::FeedHistoryTooShort { .. }) | Err(DbError::InvalidArgument(_)) => None,
                Err(e) => return Err(format!("subscribing to the change feed: {e}")),
            }
        } else {
            None
        };
        match resumed {
            Some(s) => (s, false),
            None => {
                eprintln!(
                    "sett-server: full sync for the replica listening on {}: it asked to continue {} after version {} (this node: {replid}, at version {newest}, port {})",
                    req.port,
                    req.replid, req.version, sh.settings.port
                );
                (
                    db.subscribe(feed(None))
                        .map_err(|e| format!("subscribing to the change feed: {e}"))?,
                    true,
                )
            }
        }
    };
    let mut out = Vec::with_capacity(64 << 10);
    if full {
        sh.repl.set_follower_state(id, "send_bulk", Some(true));
        write!(w, "+FULLRESYNC {replid} {}\r\n", sub.start_version())
            .map_err(|e| format!("writing FULLRESYNC: {e}"))?;
        send_checkpoint(sh, &mut w, id, &mut out)?;
    } else {
        sh.repl.set_follower_state(id, "online", Some(false));
        write!(w, "+CONTINUE {replid}\r\n").map_err(|e| format!("writing CONTINUE: {e}"))?;
    }
    w.flush()
        .map_err(|e| format!("writing to the replica: {e}"))?;
    sh.repl.set_follower_state(id, "online", None);
    follow(sh, sub, &mut w, gone, feed)
}

/// Streams the feed from `sub` on, resuming it from the history when it falls behind.
fn follow(
    sh: &Shared,
    mut sub: Subscription,
    w: &mut BufWriter<&TcpStream>,
    gone: &AtomicBool,
    feed: impl Fn(Option<u64>) -> SubscribeOptions,
) -> Result<(), String> {
    let mut out = Vec::with_capacity(64 << 10);
    loop {
        if gone.load(Ordering::Acquire) {
            return Err("the replica closed the link".into());
        }
        out.clear();
        match sub.next(Some(HEARTBEAT)) {
            Ok(Some(changes)) => wire::encode(&Frame::Changes(changes), &mut out),
            Ok(None) => wire::encode(&Frame::Heartbeat(sh.db().last_version()), &mut out),
            Err(DbError::FellBehind { resume_from }) => {
                drop(sub);
                sub = sh.db().subscribe(feed(Some(resume_from))).map_err(|e| {
                    format!("the replica fell behind at version {resume_from} and cannot resume: {e}; it resyncs")
                })?;
                continue;
            }
            Err(DbError::Closed) => return Ok(()),
            Err(e) => return Err(format!("reading the change feed: {e}")),
        }
        w.write_all(&out)
            .and_then(|()| w.flush())
            .map_err(|e| format!("writing to the replica: {e}"))?;
    }
}

/// Removes the checkpoint directory however sending it ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A checkpoint beside the Db's directory (hard links need the same file
/// system), streamed file by file, then removed.
fn send_checkpoint(
    sh: &Shared,
    w: &mut BufWriter<&TcpStream>,
    id: u64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let path = PathBuf::from(format!(
        "{}.repl-{}-{id}",
        sh.settings.dir,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&path);
    let tmp = TempDir(path);
    sh.db()
        .checkpoint(&tmp.0)
        .map_err(|e| format!("taking a checkpoint for a full sync: {e}"))?;
    let listed: Vec<std::ffi::OsString> = std::fs::read_dir(&tmp.0)
        .and_then(|d| d.map(|e| e.map(|e| e.file_name())).collect())
        .map_err(|e| format!("listing the checkpoint {}: {e}", tmp.0.display()))?;
    let mut names = Vec::with_capacity(listed.len());
    for n in listed {
        names.push(
            n.into_string()
                .map_err(|n| format!("the checkpoint holds a file named {n:?}"))?,
        );
    }
    names.sort();
    for name in &names {
        send_file(&tmp.0.join(name), name, w, out)?;
    }
    out.clear();
    wire::encode(&Frame::FilesEnd(names.len() as u32), out);
    w.write_all(out)
        .map_err(|e| format!("writing to the replica: {e}"))
}

fn send_file(
    path: &Path,
    name: &str,
    w: &mut BufWriter<&TcpStream>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let size = f
        .metadata()
        .map_err(|e| format!("reading {}: {e}", path.display()))?
        .len();
    out.clear();
    wire::encode(
        &Frame::File {
            name: name.to_string(),
            size,
        },
        out,
    );
    w.write_all(out)
        .map_err(|e| format!("writing to the replica: {e}"))?;
    let mut left = size;
    let mut chunk = vec![0u8; wire::CHUNK];
    while left > 0 {
        let n = (left as usize).min(wire::CHUNK);
        f.read_exact(&mut chunk[..n])
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        out.clear();
        wire::encode(&Frame::Chunk(chunk[..n].to_vec()), out);
        w.write_all(out)
            .map_err(|e| format!("writing to the replica: {e}"))?;
        left -= n as u64;
    }
    Ok(())
}

/// Checks a PSYNC request's arguments; `port` and `capa` come from the
/// connection's REPLCONF calls.
pub fn parse_psync(args: &[Vec<u8>], port: Option<u16>, capa: bool) -> Result<Psync, String> {
    // The offset first, as redis-server checks it.
    let version = std::str::from_utf8(&args[2])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| "value is not an integer or out of range".to_string())?;
    if !capa {
        return Err(format!(
            "sett-server streams its own replication format; only a sett-server replica (REPLCONF capa {CAPA}) can follow it"
        ));
    }
    let replid = String::from_utf8_lossy(&args[1]).into_owned();
    Ok(Psync {
        replid,
        version: version.max(0) as u64,
        port: port.unwrap_or(0),
    })
}
