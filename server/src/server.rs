//! The listener and the connection loop: reading requests within the limits,
//! running them on the blocking pool, writing replies, and shutting down.

use crate::commands::{execute, Conn, Shared};
use crate::error::{io, Result};
use crate::resp::{Limits, Parser, Reply};
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// Accepts connections until `shutdown` turns true, then waits (at most
/// `grace`) for every connection to finish the commands it is running.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, grace: Duration) -> Result<()> {
    let mut shutdown = shared.shutdown.subscribe();
    // Each connection holds a sender; recv() returns None once all are gone.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let mut next_id = 0u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: keep serving the others.
                        eprintln!("sett-server: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                next_id += 1;
                let (sh, alive, stop) = (shared.clone(), alive_tx.clone(), shared.shutdown.subscribe());
                let id = next_id;
                tokio::spawn(async move {
                    let reg = sh.clients.register(id, peer.to_string());
                    let result = connection(stream, sh.clone(), id, stop, reg).await;
                    sh.clients.remove(id);
                    if let Err(e) = result {
                        eprintln!("sett-server: client {id} ({peer}): {e}");
                    }
                    drop(alive);
                });
            }
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    drop(listener);
    drop(alive_tx);
    if tokio::time::timeout(grace, alive_rx.recv()).await.is_err() {
        eprintln!(
            "sett-server: some connections were still running after {grace:?}; closing anyway"
        );
    }
    Ok(())
}

async fn connection(
    mut stream: TcpStream,
    sh: Arc<Shared>,
    id: u64,
    mut stop: watch::Receiver<bool>,
    mut reg: crate::clients::Registration,
) -> Result<()> {
    sh.counters.connections.fetch_add(1, Ordering::Relaxed);
    let clients = sh.counters.clients.fetch_add(1, Ordering::Relaxed) + 1;
    // Decrements the count however this function returns.
    struct Count(Arc<Shared>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.counters.clients.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _count = Count(sh.clone());
    if clients > sh.settings.max_clients {
        sh.counters.rejected.fetch_add(1, Ordering::Relaxed);
        let _ = stream
            .write_all(b"-ERR max number of clients reached\r\n")
            .await;
        return Ok(());
    }
    stream
        .set_nodelay(true)
        .map_err(io("setting TCP_NODELAY"))?;
    let limits = Limits {
        max_bulk: sh.settings.max_bulk,
        max_args: sh.settings.max_args,
    };
    let idle =
        (sh.settings.timeout_secs > 0).then(|| Duration::from_secs(sh.settings.timeout_secs));
    let mut conn = Conn::new(id);
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut parser = Parser::default();
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        // Every complete command in the buffer (a pipeline) runs as one job.
        let mut cmds = Vec::new();
        let mut bad = None;
        loop {
            match parser.next(&mut buf, &limits) {
                Ok(Some(args)) => {
                    cmds.push(args);
                    if cmds.len() >= 1024 {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        let nothing_ran = cmds.is_empty();
        if !cmds.is_empty() {
            let sh2 = sh.clone();
            let mut bytes = std::mem::take(&mut out);
            bytes.clear();
            // Each reply is encoded as it is made: HELLO changes the protocol mid-pipeline.
            let (c, bytes) = tokio::task::spawn_blocking(move || {
                for args in cmds {
                    execute(&sh2, &mut conn, args).encode(&mut bytes, conn.resp3);
                    if conn.close {
                        break;
                    }
                }
                (conn, bytes)
            })
            .await
            .map_err(|e| crate::error::Error::Panic(e.to_string()))?;
            conn = c;
            out = bytes;
            stream
                .write_all(&out)
                .await
                .map_err(io("writing replies"))?;
            if conn.close {
                return Ok(());
            }
            if let Some(req) = conn.takeover.take() {
                // PSYNC: the connection is a replica's link from here on, served
                // by a thread of its own with blocking I/O.
                let std = stream
                    .into_std()
                    .map_err(io("taking over a replica's connection"))?;
                std.set_nonblocking(false)
                    .map_err(io("taking over a replica's connection"))?;
                let sh2 = sh.clone();
                std::thread::Builder::new()
                    .name("sett-follower".into())
                    .spawn(move || crate::replication::serve_replica(sh2, std, req))
                    .map_err(io("starting a replica's thread"))?;
                return Ok(());
            }
        }
        if let Some(e) = bad {
            // The stream cannot be resynchronised: say why and close this connection only.
            sh.counters.protocol_errors.fetch_add(1, Ordering::Relaxed);
            out.clear();
            Reply::Error(format!(
                "ERR Protocol error: {}",
                match &e {
                    crate::error::Error::Protocol(m) => m.clone(),
                    other => other.to_string(),
                }
            ))
            .encode(&mut out, conn.resp3);
            let _ = stream.write_all(&out).await;
            return Err(e);
        }
        if !nothing_ran {
            continue;
        }
        if *stop.borrow() {
            return Ok(());
        }
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        // A subscriber waits for messages, not requests: no idle limit.
        let idle = if conn.subscriptions > 0 { None } else { idle };
        // read_buf is cancel-safe: when a message or a kill wins the race,
        // no request bytes are lost.
        let read = async {
            match idle {
                Some(t) => tokio::time::timeout(t, stream.read_buf(&mut buf))
                    .await
                    .ok(),
                None => Some(stream.read_buf(&mut buf).await),
            }
        };
        let message = tokio::select! {
            r = read => match r {
                None => return Ok(()), // idle too long
                Some(Ok(0)) => return Ok(()),
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(io("reading a request")(e)),
            },
            m = reg.inbox.recv() => m,
            _ = reg.kill.notified() => return Ok(()),
            _ = stop.wait_for(|s| *s) => return Ok(()),
        };
        if let Some(first) = message {
            // Everything already waiting goes out in one write.
            out.clear();
            first.encode(&mut out, conn.resp3);
            while let Ok(m) = reg.inbox.try_recv() {
                m.encode(&mut out, conn.resp3);
            }
            stream
                .write_all(&out)
                .await
                .map_err(io("writing pubsub messages"))?;
        }
    }
}
