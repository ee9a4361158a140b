//! MULTI, EXEC, DISCARD, WATCH and UNWATCH. EXEC runs the queued commands in
//! one sett transaction, so other clients see all of its writes or none, and
//! its reads and writes conflict with concurrent writes as a transaction's do
//! (a conflict runs it again, as `Db::update` does). WATCH records the version
//! of each key; EXEC reads them again inside its transaction and, if one
//! changed (written, deleted or expired), commits nothing and replies nil.
//!
//! As in redis-server, a command refused while queueing (unknown, wrong
//! arity, a bad slot) makes EXEC discard everything, while an error a queued
//! command meets when it runs is that command's reply and the others still
//! run. Commands that cannot be part of one sett transaction (FLUSHDB,
//! FLUSHALL, SHUTDOWN, AUTH, HELLO, FUNCTION) are refused while queueing.

use super::{run, stored, Conn, Ctx, Kv, Res, Spec, Tx};
use crate::resp::Reply;

/// The commands queued since MULTI.
#[derive(Debug, Default)]
pub(super) struct Queued {
    cmds: Vec<(&'static Spec, Vec<Vec<u8>>)>,
    /// A command was refused while queueing: EXEC discards the transaction.
    failed: bool,
}

/// Marks the open transaction (if any) as failed: a command was refused.
pub(super) fn flag_error(conn: &mut Conn) {
    if let Some(q) = &mut conn.multi {
        q.failed = true;
    }
}

/// Queues a command between MULTI and EXEC.
pub(super) fn queue(conn: &mut Conn, spec: &'static Spec, args: Vec<Vec<u8>>) -> Reply {
    if spec.tx == Tx::Refuse {
        flag_error(conn);
        return Reply::err(format!(
            "'{}' cannot be queued in MULTI on sett-server: it cannot run inside a transaction",
            spec.name
        ));
    }
    if let Some(q) = &mut conn.multi {
        q.cmds.push((spec, args));
    }
    Reply::Status("QUEUED")
}

pub(super) fn multi(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    if cx.conn.multi.is_some() {
        return Ok(Reply::err("MULTI calls can not be nested"));
    }
    cx.conn.multi = Some(Queued::default());
    Ok(Reply::Status("OK"))
}

pub(super) fn discard(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    if cx.conn.multi.take().is_none() {
        return Ok(Reply::err("DISCARD without MULTI"));
    }
    cx.conn.watched.clear();
    Ok(Reply::Status("OK"))
}

pub(super) fn watch(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if cx.conn.multi.is_some() {
        return Ok(Reply::err("WATCH inside MULTI is not allowed"));
    }
    for k in &args[1..] {
        let key = stored(k);
        let version = cx.db.get_entry(&key)?.map(|i| i.version);
        cx.conn.watched.push((key, version));
    }
    Ok(Reply::Status("OK"))
}

pub(super) fn unwatch(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    cx.conn.watched.clear();
    Ok(Reply::Status("OK"))
}

pub(super) fn exec(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    let Some(q) = cx.conn.multi.take() else {
        return Ok(Reply::err("EXEC without MULTI"));
    };
    let watched = std::mem::take(&mut cx.conn.watched);
    if q.failed {
        return Ok(Reply::Error(
            "EXECABORT Transaction discarded because of previous errors.".into(),
        ));
    }
    let (sh, db) = (cx.sh, cx.db);
    let conn = &mut *cx.conn;
    let replies = db.update(|txn| {
        for (key, version) in &watched {
            if txn.get_entry(key)?.map(|i| i.version) != *version {
                return Ok(None);
            }
        }
        let mut replies = Vec::with_capacity(q.cmds.len());
        for (spec, args) in &q.cmds {
            replies.push(run(sh, db, conn, Kv::Txn(&mut *txn), spec, args));
        }
        Ok(Some(replies))
    })?;
    Ok(replies.map_or(Reply::NilArray, Reply::Array))
}
