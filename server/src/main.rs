//! `sett-server`: a Redis-protocol server over one sett Db.
//!
//! RESP2 (RESP3 after `HELLO 3`), the string commands, TTLs, SCAN, INFO, and
//! durability modes like Redis's `appendfsync`. Optionally one node of a
//! Redis Cluster with a topology file (see `cluster`). Listens on
//! 127.0.0.1 by default. SIGTERM, SIGINT or SHUTDOWN: stop accepting, let
//! running commands reply, close the Db.

// Data from a client or from disk is never unwrapped: it gets an error reply.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod clients;
mod cluster;
mod commands;
mod error;
mod longdouble;
mod replication;
mod resp;
mod server;

use clap::Parser;
use commands::{Counters, Fsync, Settings, Shared};
use error::{io, Error, Result};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// A Redis-protocol server over a sett database.
#[derive(Parser, Debug)]
#[command(name = "sett-server", version)]
struct Args {
    /// Database directory (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Port; 0 picks a free one (printed as "listening on ADDR").
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// When to fsync acknowledged writes.
    #[arg(long, value_enum, default_value_t = Fsync::Everysec)]
    appendfsync: Fsync,
    /// Password clients must give with AUTH (or HELLO ... AUTH).
    #[arg(long)]
    requirepass: Option<String>,
    /// Connections served at once; more are refused with an error.
    #[arg(long, default_value_t = 10_000)]
    maxclients: usize,
    /// Largest argument accepted, in bytes (Redis's proto-max-bulk-len).
    #[arg(long, default_value_t = 512 << 20)]
    max_bulk_len: usize,
    /// Most arguments in one command.
    #[arg(long, default_value_t = 1 << 20)]
    max_args: usize,
    /// Close a connection idle this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Seconds SHUTDOWN/SIGTERM waits for running commands before closing the Db.
    #[arg(long, default_value_t = 10)]
    shutdown_grace: u64,
    /// Shut down when the process with this pid is gone (tests: the test process).
    #[arg(long)]
    parent_pid: Option<u32>,
    /// Cluster mode: the topology file (`<id> <ip:port> <slot ranges>` per line), read
    /// at start if it exists and again on CLUSTER RELOAD.
    #[arg(long, requires = "cluster_myid")]
    cluster_config: Option<PathBuf>,
    /// Cluster mode: this node's id in the topology file.
    #[arg(long, requires = "cluster_config")]
    cluster_myid: Option<String>,
    /// Follow this master from the start ("HOST PORT" or "HOST:PORT"), as
    /// REPLICAOF would; without it a replica follows the master it followed
    /// before a restart (kept in `<dir>.replication`).
    #[arg(long)]
    replicaof: Option<String>,
    /// Bytes of recent changes kept so that a replica that reconnects resumes
    /// without a full sync (Redis's repl-backlog-size).
    #[arg(long, default_value_t = 4 << 20)]
    repl_backlog_size: usize,
}

/// "host port" or "host:port".
fn parse_master(s: &str) -> Result<(String, u16)> {
    let (host, port) = s
        .rsplit_once(' ')
        .or_else(|| s.rsplit_once(':'))
        .ok_or_else(|| Error::Config(format!("--replicaof {s:?}: expected \"HOST PORT\"")))?;
    let port = port
        .trim()
        .parse()
        .map_err(|_| Error::Config(format!("--replicaof {s:?}: {port:?} is not a port")))?;
    Ok((host.trim().to_string(), port))
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sett-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    if args.maxclients == 0 || args.max_args == 0 {
        return Err(Error::Config(
            "--maxclients and --max-args must be at least 1".into(),
        ));
    }
    let mut settings = Settings {
        requirepass: args.requirepass.clone().map(String::into_bytes),
        fsync: args.appendfsync,
        max_clients: args.maxclients,
        max_bulk: args.max_bulk_len,
        max_args: args.max_args,
        timeout_secs: args.timeout,
        bind: args.bind.clone(),
        port: args.port,
        dir: args.dir.display().to_string(),
        repl_backlog: args.repl_backlog_size,
    };
    let given_master = args.replicaof.as_deref().map(parse_master).transpose()?;
    replication::recover_dirs(&args.dir).map_err(io(format!(
        "finishing an interrupted full sync beside {}",
        args.dir.display()
    )))?;
    let (repl, saved_master) = replication::Replication::load(&args.dir, args.repl_backlog_size);
    let db =
        sett::Db::open(settings.engine_options(&args.dir)).map_err(|source| Error::Engine {
            context: format!("opening {}", args.dir.display()),
            source,
        })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("starting the tokio runtime"))?;
    let (tx, _) = tokio::sync::watch::channel(false);
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.bind.as_str(), args.port))
            .await
            .map_err(io(format!("listening on {}:{}", args.bind, args.port)))?;
        let local = listener
            .local_addr()
            .map_err(io("reading the listening address"))?;
        // Read once the port is bound: a node without a topology file shows itself
        // at the address it listens on.
        let cluster = match (&args.cluster_config, &args.cluster_myid) {
            (Some(path), Some(id)) => Some(cluster::Cluster::open(
                path.clone(),
                id,
                &local.ip().to_string(),
                local.port(),
            )?),
            _ => None,
        };
        settings.port = local.port();
        let shared = Arc::new_cyclic(|me| Shared {
            db: RwLock::new(db),
            repl,
            me: me.clone(),
            settings,
            cluster,
            counters: Counters::default(),
            cursors: Mutex::new(Default::default()),
            started: Instant::now(),
            shutdown: tx,
            clients: Default::default(),
            run_id: replication::new_replid(),
        });
        let version = shared.db().last_version();
        if shared.cluster.is_some() {
            // The topology names who replicates whom; what a replica followed
            // before a restart is not kept for it.
            if given_master.is_some() {
                return Err(Error::Config(
                    "--replicaof is not allowed in cluster mode: the topology file names replicas"
                        .into(),
                ));
            }
            commands::follow_topology(&shared, version);
        } else if let Some(master) = given_master.or(saved_master) {
            shared.repl.set_master(&shared, Some(master), version);
        }
        spawn_signal_watch(&shared)?;
        if let Some(pid) = args.parent_pid {
            spawn_parent_watch(&shared, pid);
        }
        if args.appendfsync == Fsync::Everysec {
            spawn_everysec(&shared);
        }
        // Tests and scripts wait for this line (stdout, flushed by println's newline).
        println!("sett-server: listening on {local}");
        server::serve(
            listener,
            shared.clone(),
            Duration::from_secs(args.shutdown_grace),
        )
        .await?;
        Ok::<_, Error>(shared)
    });
    let shared = result?;
    runtime.shutdown_timeout(Duration::from_secs(1));
    shared.db().close().map_err(|source| Error::Engine {
        context: format!("closing {}", args.dir.display()),
        source,
    })?;
    eprintln!("sett-server: shut down, {} closed", args.dir.display());
    Ok(())
}

fn spawn_signal_watch(shared: &Arc<Shared>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(io("installing the SIGTERM handler"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(io("installing the SIGINT handler"))?;
    let sh = shared.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => eprintln!("sett-server: SIGTERM, shutting down"),
            _ = int.recv() => eprintln!("sett-server: SIGINT, shutting down"),
        }
        sh.shutdown.send_replace(true);
    });
    Ok(())
}

fn spawn_parent_watch(shared: &Arc<Shared>, pid: u32) {
    let sh = shared.clone();
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if !proc_dir.exists() {
                eprintln!("sett-server: parent process {pid} is gone, shutting down");
                sh.shutdown.send_replace(true);
                return;
            }
        }
    });
}

/// appendfsync everysec: the Db writes without fsync; this syncs its logs once a second.
fn spawn_everysec(shared: &Arc<Shared>) {
    let sh = shared.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let sh2 = sh.clone();
            let r = tokio::task::spawn_blocking(move || sh2.db().sync()).await;
            match r {
                Ok(Ok(())) => {
                    sh.counters.background_syncs.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(sett::Error::Closed)) => return,
                Ok(Err(e)) => eprintln!("sett-server: background fsync failed: {e}"),
                Err(e) => eprintln!("sett-server: background fsync task failed: {e}"),
            }
        }
    });
}
