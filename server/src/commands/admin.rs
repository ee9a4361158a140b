//! Server commands: COMMAND, INFO, CONFIG, ROLE, TIME, FUNCTION, SHUTDOWN.

use super::connection::REDIS_VERSION;
use super::{find, glob, key_positions, syntax, upper, Ctx, Res, Shared, Spec, COMMANDS};
use crate::resp::Reply;
use sett::IterOptions;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

fn command_info(s: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::text(s.name),
        Reply::Int(i64::from(s.arity)),
        Reply::Array(
            s.flags
                .iter()
                .map(|f| Reply::Bulk(f.as_bytes().to_vec()))
                .collect(),
        ),
        Reply::Int(i64::from(s.first_key)),
        Reply::Int(i64::from(s.last_key)),
        Reply::Int(i64::from(s.step)),
    ])
}

pub(super) fn command(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(command_reply(args))
}

fn command_reply(args: &[Vec<u8>]) -> Reply {
    let Some(sub) = args.get(1) else {
        return Reply::Array(COMMANDS.iter().map(command_info).collect());
    };
    match upper(sub).as_str() {
        "COUNT" => Reply::Int(COMMANDS.len() as i64),
        // Documentation is optional for clients (redis-cli asks for hints); we have none.
        "DOCS" => Reply::Map(Vec::new()),
        "INFO" => Reply::Array(
            args[2..]
                .iter()
                .map(|n| {
                    find(&String::from_utf8_lossy(n).to_ascii_lowercase())
                        .map_or(Reply::Nil, command_info)
                })
                .collect(),
        ),
        "LIST" => Reply::Array(COMMANDS.iter().map(|s| Reply::text(s.name)).collect()),
        "GETKEYS" if args.len() > 2 => {
            let rest = &args[2..];
            let name = String::from_utf8_lossy(&rest[0]).to_ascii_lowercase();
            match find(&name) {
                Some(s) => Reply::Array(
                    key_positions(s, rest.len())
                        .map(|i| Reply::Bulk(rest[i].clone()))
                        .collect(),
                ),
                None => Reply::err("Invalid command specified"),
            }
        }
        _ => Reply::err(format!(
            "unknown subcommand '{}'",
            String::from_utf8_lossy(sub)
        )),
    }
}

fn rss_bytes() -> u64 {
    // Second field of /proc/self/statm: resident pages (4 KiB here).
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |p| p * 4096)
}

pub(super) fn info(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(info_reply(cx.sh, cx.db, args))
}

fn info_reply(sh: &Shared, db: &sett::Db, args: &[Vec<u8>]) -> Reply {
    let wanted: Vec<String> = args[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let st = db.stats();
    let c = &sh.counters;
    let s = &sh.settings;
    let mut out = String::new();
    if want("server") {
        out.push_str(&format!(
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nsett_version:{}\r\nredis_mode:{}\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            if sh.cluster.is_some() { "cluster" } else { "standalone" },
            std::env::consts::OS,
            std::process::id(),
            sh.run_id,
            s.port,
            sh.started.elapsed().as_secs(),
        ));
    }
    if want("clients") {
        out.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            c.clients.load(Ordering::Relaxed),
            s.max_clients
        ));
    }
    if want("memory") {
        out.push_str(&format!(
            "# Memory\r\nused_memory:{rss}\r\nused_memory_rss:{rss}\r\nsett_memtable_bytes:{}\r\nsett_immutable_memtables:{}\r\nsett_index_filter_bytes:{}\r\n\r\n",
            st.memtable_bytes,
            st.immutable_memtables,
            st.index_filter_bytes,
            rss = rss_bytes(),
        ));
    }
    if want("persistence") {
        let levels: Vec<String> = st.levels.iter().map(|(n, b)| format!("{n}/{b}")).collect();
        out.push_str(&format!(
            "# Persistence\r\nloading:0\r\naof_enabled:1\r\nappendfsync:{}\r\nrdb_changes_since_last_save:0\r\nsett_background_syncs:{}\r\nsett_last_seq:{}\r\nsett_batches_written:{}\r\nsett_write_groups:{}\r\nsett_wal_syncs:{}\r\nsett_levels_tables_bytes:{}\r\nsett_table_entries:{}\r\nsett_vlog_files:{}\r\nsett_vlog_bytes:{}\r\nsett_compactions_pending:{}\r\nsett_compactions_running:{}\r\nsett_gc_files_rewritten:{}\r\nsett_gc_files_deleted:{}\r\nsett_gc_bytes_reclaimed:{}\r\n\r\n",
            s.fsync.name(),
            c.background_syncs.load(Ordering::Relaxed),
            st.last_seq,
            st.batches_written,
            st.write_groups,
            st.wal_syncs,
            levels.join(","),
            st.table_entries,
            st.vlog_files,
            st.vlog_bytes,
            st.compactions_pending,
            st.compactions_running,
            st.gc_files_rewritten,
            st.gc_files_deleted,
            st.gc_bytes_reclaimed,
        ));
    }
    if want("stats") {
        out.push_str(&format!(
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\ntotal_error_replies_protocol:{}\r\n\r\n",
            c.connections.load(Ordering::Relaxed),
            c.commands.load(Ordering::Relaxed),
            c.rejected.load(Ordering::Relaxed),
            c.hits.load(Ordering::Relaxed),
            c.misses.load(Ordering::Relaxed),
            c.protocol_errors.load(Ordering::Relaxed),
        ));
    }
    if want("replication") {
        // The replication offset is the engine's version, the number every node agrees on.
        out.push_str(&sh.repl.info(db.last_version()));
    }
    if want("cluster") {
        out.push_str(&format!(
            "# Cluster\r\ncluster_enabled:{}\r\n\r\n",
            u8::from(sh.cluster.is_some())
        ));
    }
    if want("keyspace") {
        // Counting walks the keys; only asked for explicitly or by a plain INFO.
        let mut n = 0u64;
        if let Ok(it) = db.iter(IterOptions {
            keys_only: true,
            ..Default::default()
        }) {
            n = it.filter(Result::is_ok).count() as u64;
        }
        out.push_str("# Keyspace\r\n");
        if n > 0 {
            out.push_str(&format!("db0:keys={n},expires=0,avg_ttl=0\r\n"));
        }
    }
    Reply::Bulk(out.into_bytes())
}

/// Every parameter CONFIG GET reports, with its value.
fn params(sh: &Shared) -> Vec<(&'static str, String)> {
    let s = &sh.settings;
    vec![
        ("maxclients", s.max_clients.to_string()),
        ("timeout", s.timeout_secs.to_string()),
        ("appendonly", "yes".into()),
        ("appendfsync", s.fsync.name().into()),
        ("save", String::new()),
        ("databases", "1".into()),
        ("proto-max-bulk-len", s.max_bulk.to_string()),
        ("port", s.port.to_string()),
        ("bind", s.bind.clone()),
        ("dir", s.dir.clone()),
        (
            "cluster-enabled",
            if sh.cluster.is_some() { "yes" } else { "no" }.into(),
        ),
        ("maxmemory", "0".into()),
    ]
}

/// CONFIG SET param value [param value ...]: sett-server's settings are its
/// command-line options, so a parameter may only be "set" to the value it
/// has (what tools that set defaults send); any other value is refused, and
/// nothing is changed unless every pair is accepted.
fn config_set(sh: &Shared, pairs: &[Vec<u8>]) -> Reply {
    let known = params(sh);
    for kv in pairs.chunks_exact(2) {
        let name = String::from_utf8_lossy(&kv[0]).to_ascii_lowercase();
        let Some((_, cur)) = known.iter().find(|(k, _)| *k == name) else {
            return Reply::err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{name}'"
            ));
        };
        if cur.as_bytes() != kv[1].as_slice() {
            return Reply::err(format!(
                "CONFIG SET failed (possibly related to argument '{name}') - sett-server takes it as a command-line option; it is '{cur}'"
            ));
        }
    }
    Reply::Status("OK")
}

pub(super) fn config(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(config_reply(cx.sh, args))
}

fn config_reply(sh: &Shared, args: &[Vec<u8>]) -> Reply {
    match upper(&args[1]).as_str() {
        "GET" if args.len() >= 3 => {
            let params = params(sh);
            let mut out = Vec::new();
            for (k, v) in params {
                if args[2..]
                    .iter()
                    .any(|p| glob(&p.to_ascii_lowercase(), k.as_bytes()))
                {
                    out.push((Reply::text(k), Reply::text(v)));
                }
            }
            Reply::Map(out)
        }
        "SET" if args.len() >= 4 && args.len().is_multiple_of(2) => config_set(sh, &args[2..]),
        // Settings are the command line; redis-server started without a file says this.
        "REWRITE" if args.len() == 2 => Reply::err("The server is running without a config file"),
        "RESETSTAT" if args.len() == 2 => {
            let c = &sh.counters;
            for x in [
                &c.commands,
                &c.connections,
                &c.rejected,
                &c.hits,
                &c.misses,
                &c.protocol_errors,
            ] {
                x.store(0, Ordering::Relaxed);
            }
            Reply::Status("OK")
        }
        _ => Reply::err(format!(
            "unknown subcommand or wrong number of arguments for 'config|{}'",
            String::from_utf8_lossy(&args[1]).to_ascii_lowercase()
        )),
    }
}

/// ROLE: a master without replicas, at the engine's version.
pub(super) fn role(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    Ok(cx.sh.repl.role(cx.db.last_version()))
}

/// TIME: unix seconds and microseconds, as bulk strings.
pub(super) fn time(_cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Reply::Array(vec![
        Reply::text(d.as_secs().to_string()),
        Reply::text(d.subsec_micros().to_string()),
    ]))
}

/// FUNCTION: sett-server runs no functions, so LIST is empty and FLUSH has
/// nothing to do; loading one is refused.
pub(super) fn function(_cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let sub = upper(&args[1]);
    Ok(match sub.as_str() {
        "LIST" => Reply::Array(Vec::new()),
        "FLUSH" => match args.get(2).map(|a| upper(a)).as_deref() {
            None | Some("ASYNC") | Some("SYNC") if args.len() <= 3 => Reply::Status("OK"),
            _ => syntax(),
        },
        "LOAD" | "DELETE" | "RESTORE" | "DUMP" | "KILL" | "STATS" => Reply::err(format!(
            "FUNCTION {sub} is not supported: sett-server runs no functions"
        )),
        _ => Reply::err(format!(
            "unknown subcommand '{}'. Try FUNCTION HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    })
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: every write is already in the engine.
pub(super) fn shutdown(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    for a in &args[1..] {
        if !["NOSAVE", "SAVE", "NOW", "FORCE"].contains(&upper(a).as_str()) {
            return Ok(syntax());
        }
    }
    cx.conn.close = true;
    cx.sh.shutdown.send_replace(true);
    Ok(Reply::Silent)
}
