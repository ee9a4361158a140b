//! The replica's side: a thread that connects to the master, syncs, and
//! applies the stream at the master's versions, reconnecting (and resyncing
//! from its last applied version) until REPLICAOF changes or the server stops.

use super::wire::{Frame, FrameReader, WireError};
use super::{install, LinkState, CAPA};
use crate::commands::{Fsync, Shared};
use sett::{Change, SubscribeOptions, WriteBatch};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A master that sends nothing (not even a heartbeat) this long is gone.
const SILENCE: Duration = Duration::from_secs(30);
/// Pause between attempts to reach the master.
const RETRY: Duration = Duration::from_secs(1);

pub(super) fn spawn(sh: Arc<Shared>, host: String, port: u16, gen: u64) {
    let spawned = std::thread::Builder::new()
        .name("sett-replica".into())
        .spawn(move || follow(&sh, &host, port, gen));
    if let Err(e) = spawned {
        eprintln!("sett-server: starting the replica thread: {e}");
    }
}

/// Why a session with the master ended.
enum End {
    /// REPLICAOF changed or the server stops: the thread ends.
    Stop,
    /// The link failed: say why and try again.
    Failed(String),
}

fn current(sh: &Shared, gen: u64) -> bool {
    sh.repl.generation() == gen && !*sh.shutdown.borrow()
}

fn follow(sh: &Shared, host: &str, port: u16, gen: u64) {
    while current(sh, gen) {
        sh.repl
            .update_link(gen, |l| l.state = LinkState::Connecting);
        match session(sh, host, port, gen) {
            End::Stop => return,
            End::Failed(why) => {
                eprintln!("sett-server: replication from {host}:{port}: {why}");
                sh.repl.update_link(gen, |l| {
                    if l.state == LinkState::Connected {
                        l.down_since = Instant::now();
                    }
                    l.state = LinkState::Connect;
                    l.last_error = Some(why.replace(['\r', '\n'], " "));
                });
            }
        }
        let until = Instant::now() + RETRY;
        while Instant::now() < until && current(sh, gen) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Reads from the master, waking every so often to see whether to stop or
/// whether the master went silent; a timeout never cuts a frame.
struct Patient<'a> {
    stream: &'a TcpStream,
    sh: &'a Shared,
    gen: u64,
    last: Instant,
}

impl Read for Patient<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match (&*self.stream).read(buf) {
                Ok(n) => {
                    self.last = Instant::now();
                    return Ok(n);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if !current(self.sh, self.gen) {
                        return Err(std::io::Error::new(ErrorKind::Interrupted, "stopping"));
                    }
                    if self.last.elapsed() > SILENCE {
                        return Err(std::io::Error::new(
                            ErrorKind::TimedOut,
                            format!("the master sent nothing for {SILENCE:?}"),
                        ));
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn command(stream: &TcpStream, args: &[&str]) -> std::io::Result<()> {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    (&*stream).write_all(out.as_bytes())
}

fn reply_line(r: &mut impl BufRead) -> Result<String, String> {
    let mut line = String::new();
    r.read_line(&mut line)
        .map_err(|e| format!("reading the master's reply: {e}"))?;
    if line.is_empty() {
        return Err("the master closed the connection".into());
    }
    Ok(line.trim_end().to_string())
}

fn expect_ok(r: &mut impl BufRead, what: &str) -> Result<(), String> {
    let line = reply_line(r)?;
    if line.starts_with('+') {
        Ok(())
    } else {
        Err(format!("the master refused {what}: {line}"))
    }
}

fn session(sh: &Shared, host: &str, port: u16, gen: u64) -> End {
    let fail = End::Failed;
    let addr = match (host, port).to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => a,
        Ok(None) => return fail(format!("{host} resolves to no address")),
        Err(e) => return fail(format!("resolving {host}: {e}")),
    };
    let stream = match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
        Ok(s) => s,
        Err(e) => return fail(format!("connecting to {addr}: {e}")),
    };
    let _ = stream.set_nodelay(true);
    if let Err(e) = stream.set_read_timeout(Some(Duration::from_millis(500))) {
        return fail(format!("setting a read timeout: {e}"));
    }
    let mut r = BufReader::with_capacity(
        1 << 20,
        Patient {
            stream: &stream,
            sh,
            gen,
            last: Instant::now(),
        },
    );
    let my_port = sh.settings.port.to_string();
    let version = sh.db().last_version();
    let replid = sh.repl.psync_args();
    let handshake = (|| -> Result<String, String> {
        let io = |e: std::io::Error| format!("writing to the master: {e}");
        command(&stream, &["PING"]).map_err(io)?;
        expect_ok(&mut r, "PING")?;
        command(&stream, &["REPLCONF", "listening-port", &my_port]).map_err(io)?;
        expect_ok(&mut r, "REPLCONF listening-port")?;
        command(&stream, &["REPLCONF", "capa", CAPA]).map_err(io)?;
        expect_ok(&mut r, "REPLCONF capa")?;
        command(&stream, &["PSYNC", &replid, &version.to_string()]).map_err(io)?;
        reply_line(&mut r)
    })();
    let line = match handshake {
        Ok(l) => l,
        Err(_) if !current(sh, gen) => return End::Stop,
        Err(e) => return fail(e),
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["+FULLRESYNC", id, _] => {
            sh.repl.update_link(gen, |l| {
                l.state = LinkState::Sync;
                l.full_syncs += 1;
            });
            let mut frames = FrameReader::new(&mut r);
            if let Err(e) = receive_checkpoint(sh, &mut frames) {
                return if current(sh, gen) { fail(e) } else { End::Stop };
            }
            sh.repl.adopt(id);
        }
        ["+CONTINUE", id] => {
            sh.repl.update_link(gen, |l| l.partial_syncs += 1);
            sh.repl.adopt(id);
        }
        _ => return fail(format!("the master answered PSYNC with {line:?}")),
    }
    sh.repl.update_link(gen, |l| {
        l.state = LinkState::Connected;
        l.last_io = Some(Instant::now());
        l.last_error = None;
    });
    // The feed keeps its history from the first subscription on; a replica
    // starts it before it applies anything, so that once promoted it can
    // resume its former siblings from any version it applied.
    let started = sh.db().subscribe(SubscribeOptions {
        max_pending_bytes: 1,
        ..SubscribeOptions::default()
    });
    if let Err(e) = started {
        return fail(format!("starting the change feed's history: {e}"));
    }
    let mut frames = FrameReader::new(&mut r);
    match apply_stream(sh, &stream, &mut frames, gen) {
        Ok(()) => End::Stop,
        Err(_) if !current(sh, gen) => End::Stop,
        Err(e) => fail(e),
    }
}

/// Receives a checkpoint into `<dir>.sync` and installs it. Anything short
/// of a complete, checked copy leaves the Db as it was.
fn receive_checkpoint<R: Read>(sh: &Shared, frames: &mut FrameReader<R>) -> Result<(), String> {
    let target = PathBuf::from(format!("{}.sync", sh.settings.dir));
    let _ = std::fs::remove_dir_all(&target);
    std::fs::create_dir(&target).map_err(|e| format!("creating {}: {e}", target.display()))?;
    let result = (|| -> Result<(), String> {
        let mut files = 0u32;
        let mut current: Option<(std::fs::File, PathBuf, u64)> = None;
        loop {
            let frame = frames.next().map_err(|e| e.to_string())?;
            match frame {
                Frame::File { name, size } => {
                    if current.as_ref().is_some_and(|c| c.2 > 0) {
                        return Err("a checkpoint file began before the last one ended".into());
                    }
                    finish(current.take())?;
                    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                        return Err(format!("the master sent a file named {name:?}"));
                    }
                    let path = target.join(&name);
                    let f = std::fs::File::create(&path)
                        .map_err(|e| format!("creating {}: {e}", path.display()))?;
                    current = Some((f, path, size));
                    files += 1;
                }
                Frame::Chunk(bytes) => {
                    let Some((f, path, left)) = current.as_mut() else {
                        return Err("file bytes arrived before a file began".into());
                    };
                    if bytes.len() as u64 > *left {
                        return Err(format!("{} got more bytes than announced", path.display()));
                    }
                    f.write_all(&bytes)
                        .map_err(|e| format!("writing {}: {e}", path.display()))?;
                    *left -= bytes.len() as u64;
                }
                Frame::FilesEnd(n) => {
                    if current.as_ref().is_some_and(|c| c.2 > 0) {
                        return Err("the checkpoint ended inside a file".into());
                    }
                    finish(current.take())?;
                    if n != files {
                        return Err(format!("the checkpoint announced {n} files, {files} came"));
                    }
                    std::fs::File::open(&target)
                        .and_then(|d| d.sync_all())
                        .map_err(|e| format!("syncing {}: {e}", target.display()))?;
                    return Ok(());
                }
                other => {
                    return Err(format!(
                        "a {} frame came in the middle of a checkpoint",
                        frame_name(&other)
                    ))
                }
            }
        }
    })();
    let installed = result.and_then(|()| install(sh, &target));
    if installed.is_err() {
        let _ = std::fs::remove_dir_all(&target);
    }
    installed
}

fn finish(f: Option<(std::fs::File, PathBuf, u64)>) -> Result<(), String> {
    if let Some((f, path, _)) = f {
        f.sync_all()
            .map_err(|e| format!("syncing {}: {e}", path.display()))?;
    }
    Ok(())
}

fn frame_name(f: &Frame) -> &'static str {
    match f {
        Frame::Changes(_) => "changes",
        Frame::Heartbeat(_) => "heartbeat",
        Frame::File { .. } => "file",
        Frame::Chunk(_) => "file chunk",
        Frame::FilesEnd(_) => "files-end",
    }
}

/// Applies changes, one batch per version, each at its version; those at
/// or below the Db's version are in it already (a full sync's checkpoint).
/// The batches go unsynced whatever appendfsync says: the stream's reader
/// syncs once for all it has read, before it acknowledges (`apply_stream`).
fn apply(sh: &Shared, changes: &[Change]) -> Result<u64, String> {
    let db = sh.db();
    let mut done = db.last_version();
    let mut i = 0;
    while i < changes.len() {
        let v = changes[i].version;
        let mut b = WriteBatch::new();
        while i < changes.len() && changes[i].version == v {
            b.add_change(&changes[i]);
            i += 1;
        }
        if v <= done {
            continue;
        }
        b.set_version(v).set_sync(false);
        db.write(b)
            .map_err(|e| format!("applying the master's version {v}: {e}"))?;
        done = v;
    }
    Ok(done)
}

fn apply_stream<R: Read + BufferedRead>(
    sh: &Shared,
    stream: &TcpStream,
    frames: &mut FrameReader<R>,
    gen: u64,
) -> Result<(), String> {
    loop {
        let frame = match frames.next() {
            Ok(f) => f,
            Err(WireError::Io(e)) if e.kind() == ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(e.to_string()),
        };
        let version = match frame {
            Frame::Changes(changes) => {
                let top = changes.last().map_or(0, |c| c.version);
                let done = apply(sh, &changes)?;
                sh.repl.update_link(gen, |l| {
                    l.last_io = Some(Instant::now());
                    l.master_version = l.master_version.max(top);
                });
                done
            }
            Frame::Heartbeat(v) => {
                sh.repl.update_link(gen, |l| {
                    l.last_io = Some(Instant::now());
                    l.master_version = l.master_version.max(v);
                });
                sh.db().last_version()
            }
            other => {
                return Err(format!(
                    "a {} frame came after the sync",
                    frame_name(&other)
                ))
            }
        };
        // Acknowledge once what has arrived is applied: one fsync covers it all.
        if frames.get_ref().buffered() == 0 {
            if sh.settings.fsync != Fsync::No {
                sh.db()
                    .sync()
                    .map_err(|e| format!("syncing applied changes: {e}"))?;
            }
            command(stream, &["REPLCONF", "ACK", &version.to_string()])
                .map_err(|e| format!("acknowledging to the master: {e}"))?;
        }
    }
}

/// How many bytes a reader holds that were read off the socket but not taken yet.
pub(super) trait BufferedRead {
    fn buffered(&self) -> usize;
}

impl<R: Read> BufferedRead for BufReader<R> {
    fn buffered(&self) -> usize {
        self.buffer().len()
    }
}

impl<T: BufferedRead> BufferedRead for &mut T {
    fn buffered(&self) -> usize {
        (**self).buffered()
    }
}
