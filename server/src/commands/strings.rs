//! String commands, with redis-server 7's replies and errors. A command that
//! rewrites a value in place (APPEND, SETRANGE, SETBIT, INCR and its family)
//! keeps the key's TTL; one that replaces it (SET, GETSET, SETNX) drops it.

use super::{
    keep_ttl, not_int, parse_i64, stored, string_merge, syntax, upper, wrong_args, Ctx, Kv, Res,
};
use crate::resp::Reply;
use sett::merge::MergeRead;
use sett::{Item, PutOptions};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn too_big() -> Reply {
    Reply::err("string exceeds maximum allowed size (proto-max-bulk-len)")
}

fn invalid_expire(cmd: &str) -> Reply {
    Reply::err(format!("invalid expire time in '{cmd}' command"))
}

/// An expiry option's value as a TTL from now: `Ok(None)` for a time already
/// past (the write deletes the key), `Err` with the reply for a bad number.
fn expiry(opt: &str, arg: &[u8], cmd: &str) -> Result<Option<Duration>, Reply> {
    let n = parse_i64(arg).ok_or_else(not_int)?;
    if n <= 0 {
        return Err(invalid_expire(cmd));
    }
    let n = n as u64;
    let now = super::now_ms();
    let ms = match opt {
        "EX" => n.checked_mul(1000),
        "PX" => Some(n),
        "EXAT" => n.checked_mul(1000).map(|at| at.saturating_sub(now)),
        _ => Some(n.saturating_sub(now)),
    };
    // Redis refuses a time whose milliseconds since the epoch overflow.
    let Some(ms) = ms.filter(|&ms| now.checked_add(ms).is_some_and(|t| t <= i64::MAX as u64))
    else {
        return Err(invalid_expire(cmd));
    };
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

pub(super) fn get(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let c = &cx.sh.counters;
    Ok(match cx.kv.get(&stored(&args[1]))? {
        Some(v) => {
            c.hits.fetch_add(1, Ordering::Relaxed);
            Reply::Bulk(v)
        }
        None => {
            c.misses.fetch_add(1, Ordering::Relaxed);
            Reply::Nil
        }
    })
}

/// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL].
pub(super) fn set(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire: Option<(String, &[u8])> = None;
    let mut i = 3;
    while i < args.len() {
        let opt = upper(&args[i]);
        match opt.as_str() {
            "NX" if !xx => nx = true,
            "XX" if !nx => xx = true,
            "GET" => get = true,
            "KEEPTTL" if expire.is_none() => keepttl = true,
            "EX" | "PX" | "EXAT" | "PXAT" if expire.is_none() && !keepttl => {
                let Some(arg) = args.get(i + 1) else {
                    return Ok(syntax());
                };
                expire = Some((opt, arg));
                i += 1;
            }
            _ => return Ok(syntax()),
        }
        i += 1;
    }
    // The time is checked once every option parsed, as Redis does. Some(None): an
    // expiry already past.
    let ttl: Option<Option<Duration>> = match &expire {
        None => None,
        Some((opt, arg)) => match expiry(opt, arg, "set") {
            Ok(t) => Some(t),
            Err(r) => return Ok(r),
        },
    };
    let key = stored(&args[1]);
    let value = &args[2];
    let now = cx.now();
    if !(nx || xx || get || keepttl) {
        match ttl {
            Some(None) => cx.kv.delete(&key)?,
            Some(t) => cx.kv.put(&key, value, t)?,
            None => cx.kv.put(&key, value, None)?,
        }
        return Ok(Reply::Status("OK"));
    }
    cx.kv.atomic(|kv| {
        let old = kv.get_entry(&key)?;
        let write = !(nx && old.is_some() || xx && old.is_none());
        if write {
            match ttl {
                Some(None) => kv.delete(&key)?,
                Some(t) => kv.put(&key, value, t)?,
                None if keepttl => {
                    let t = old.as_ref().and_then(|o| keep_ttl(o.expires_at, now));
                    kv.put(&key, value, t)?
                }
                None => kv.put(&key, value, None)?,
            }
        }
        Ok(match (get, write) {
            (true, _) => old.map_or(Reply::Nil, |o| Reply::Bulk(o.value)),
            (false, true) => Reply::Status("OK"),
            (false, false) => Reply::Nil,
        })
    })
}

pub(super) fn setnx(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let key = stored(&args[1]);
    cx.kv.atomic(|kv| {
        if kv.get_entry(&key)?.is_some() {
            return Ok(Reply::Int(0));
        }
        kv.put(&key, &args[2], None)?;
        Ok(Reply::Int(1))
    })
}

/// SETEX key seconds value, PSETEX key milliseconds value.
pub(super) fn setex(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let cmd = super::lower(&args[0]);
    let opt = if cmd == "setex" { "EX" } else { "PX" };
    match expiry(opt, &args[2], &cmd) {
        Ok(ttl) => {
            cx.kv.put(&stored(&args[1]), &args[3], ttl)?;
            Ok(Reply::Status("OK"))
        }
        Err(r) => Ok(r),
    }
}

pub(super) fn getset(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let key = stored(&args[1]);
    cx.kv.atomic(|kv| {
        let old = kv.get(&key)?;
        kv.put(&key, &args[2], None)?;
        Ok(old.map_or(Reply::Nil, Reply::Bulk))
    })
}

/// GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST].
pub(super) fn getex(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    // What to do to the TTL: None keeps it, Some(None) persists, Some(Some(arg)) sets.
    let mut change: Option<Option<(String, &[u8])>> = None;
    let mut i = 2;
    while i < args.len() {
        let opt = upper(&args[i]);
        match opt.as_str() {
            // PERSIST may repeat, as in redis-server.
            "PERSIST" if matches!(change, None | Some(None)) => change = Some(None),
            "EX" | "PX" | "EXAT" | "PXAT" if change.is_none() && i + 1 < args.len() => {
                change = Some(Some((opt, &args[i + 1])));
                i += 1;
            }
            _ => return Ok(syntax()),
        }
        i += 1;
    }
    let key = stored(&args[1]);
    cx.kv.atomic(|kv| {
        let Some(item) = kv.get_entry(&key)? else {
            return Ok(Reply::Nil);
        };
        match &change {
            None => {}
            Some(None) if item.expires_at != 0 => {
                kv.put_with(&key, &item.value, meta(item.user_meta, None))?;
            }
            Some(None) => {}
            Some(Some((opt, arg))) => match expiry(opt, arg, "getex") {
                Err(r) => return Ok(r),
                Ok(None) => kv.delete(&key)?,
                Ok(t) => kv.put_with(&key, &item.value, meta(item.user_meta, t))?,
            },
        }
        Ok(Reply::Bulk(item.value))
    })
}

fn meta(user_meta: u8, ttl: Option<Duration>) -> PutOptions {
    PutOptions { user_meta, ttl }
}

pub(super) fn getdel(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let key = stored(&args[1]);
    cx.kv.atomic(|kv| {
        let old = kv.get(&key)?;
        if old.is_some() {
            kv.delete(&key)?;
        }
        Ok(old.map_or(Reply::Nil, Reply::Bulk))
    })
}

/// Rewrites the value of `key` by `f` (given the old value, `None` if absent),
/// keeping its TTL; `f` returns the new value (`None`: write nothing) and the
/// reply, or an error reply. `edited`: the write is an in-place edit (see
/// `EDITED`).
fn rewrite(
    cx: &mut Ctx<'_>,
    key: &[u8],
    edited: bool,
    mut f: impl FnMut(Option<Vec<u8>>) -> Result<(Option<Vec<u8>>, Reply), Reply>,
) -> Res {
    let now = cx.now();
    let user_meta = if edited { super::EDITED } else { 0 };
    cx.kv.atomic(|kv| {
        let old = kv.get_entry(key)?;
        let ttl = old.as_ref().and_then(|o| keep_ttl(o.expires_at, now));
        match f(old.map(|o| o.value)) {
            Err(r) => Ok(r),
            Ok((None, r)) => Ok(r),
            Ok((Some(v), r)) => {
                kv.put_with(key, &v, meta(user_meta, ttl))?;
                Ok(r)
            }
        }
    })
}

/// A merge of `operand` into `key` outside MULTI: the key just below and at
/// the merge's version. `None` inside EXEC, whose transaction the command
/// reads and writes through instead.
fn merge_and_read(cx: &mut Ctx<'_>, key: &[u8], operand: &[u8]) -> sett::Result<Option<MergeRead>> {
    match &cx.kv {
        Kv::Db(db) => db.merge_and_read(key, operand).map(Some),
        Kv::Txn(_) => Ok(None),
    }
}

/// After a merge: rewrites the key as one value, in a transaction, when
/// the merge alone would leave it unlike Redis's. A merged key keeps the
/// user meta and TTL of the value under its operands, so that is needed when
/// that value has a TTL (applied or refused, reads fold operands over an
/// expired value onto nothing: without this the key would come back, without
/// its earlier value, once the TTL passed, where Redis's key is gone), and
/// when an applied merge changes the `EDITED` mark OBJECT ENCODING reads
/// (`user_meta`: `Some` for an applied merge, `None` to keep the mark). A
/// counter only INCRed, or a string only APPENDed to, needs it at most once.
fn settle(
    cx: &mut Ctx<'_>,
    key: &[u8],
    merged_onto: Option<&Item>,
    user_meta: Option<u8>,
) -> sett::Result<()> {
    let had_ttl = merged_onto.is_some_and(|i| i.expires_at != 0);
    let old_meta = merged_onto.map_or(0, |i| i.user_meta);
    if !had_ttl && user_meta.is_none_or(|m| m == old_meta) {
        return Ok(());
    }
    let now = cx.now();
    cx.kv.atomic(|kv| {
        if let Some(e) = kv.get_entry(key)? {
            let ttl = keep_ttl(e.expires_at, now);
            kv.put_with(key, &e.value, meta(user_meta.unwrap_or(e.user_meta), ttl))?;
        }
        Ok(())
    })
}

pub(super) fn append(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let max = cx.sh.settings.max_bulk;
    let add = &args[2];
    let key = stored(&args[1]);
    if add.len() > max {
        return Ok(too_big());
    }
    if let Some(r) = merge_and_read(cx, &key, &string_merge::append(add, max))? {
        let len = r.before.as_ref().map_or(0, |i| i.value.len());
        let applied = len + add.len() <= max;
        // An APPEND that creates the key makes a plain string, as in Redis;
        // one onto a value edits it.
        let mark = if r.before.is_some() { super::EDITED } else { 0 };
        settle(cx, &key, r.before.as_ref(), applied.then_some(mark))?;
        if !applied {
            // The fold left the value as it was.
            return Ok(too_big());
        }
        return Ok(Reply::Int((len + add.len()) as i64));
    }
    rewrite(cx, &key, true, |old| {
        let mut v = old.unwrap_or_default();
        if v.len() + add.len() > max {
            return Err(too_big());
        }
        v.extend_from_slice(add);
        let n = v.len() as i64;
        Ok((Some(v), Reply::Int(n)))
    })
}

pub(super) fn strlen(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(Reply::Int(
        cx.kv.get(&stored(&args[1]))?.map_or(0, |v| v.len() as i64),
    ))
}

/// Redis's range of `len` bytes (or bits) from `start` to `end` inclusive, negative
/// counting from the end; `None` when it is empty.
fn span(start: i64, end: i64, len: i64) -> Option<(usize, usize)> {
    let fix = |x: i64| if x < 0 { (len + x).max(0) } else { x };
    let (s, e) = (fix(start), fix(end).min(len - 1));
    (len > 0 && s <= e).then_some((s as usize, e as usize))
}

/// GETRANGE key start end (and its old name SUBSTR).
pub(super) fn getrange(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return Ok(not_int());
    };
    let v = cx.kv.get(&stored(&args[1]))?.unwrap_or_default();
    // A start and end both negative and the start past the end: empty, as Redis.
    if start < 0 && end < 0 && start > end {
        return Ok(Reply::Bulk(Vec::new()));
    }
    Ok(Reply::Bulk(match span(start, end, v.len() as i64) {
        Some((s, e)) => v[s..=e].to_vec(),
        None => Vec::new(),
    }))
}

pub(super) fn setrange(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let Some(offset) = parse_i64(&args[2]) else {
        return Ok(not_int());
    };
    if offset < 0 {
        return Ok(Reply::err("offset is out of range"));
    }
    let max = cx.sh.settings.max_bulk;
    let add = &args[3];
    let offset = offset as usize;
    rewrite(cx, &stored(&args[1]), true, |old| {
        let mut v = old.unwrap_or_default();
        if add.is_empty() {
            // Nothing to write: the length as it is, and no key is created.
            return Ok((None, Reply::Int(v.len() as i64)));
        }
        if offset.saturating_add(add.len()) > max {
            return Err(too_big());
        }
        if v.len() < offset + add.len() {
            v.resize(offset + add.len(), 0);
        }
        v[offset..offset + add.len()].copy_from_slice(add);
        let n = v.len() as i64;
        Ok((Some(v), Reply::Int(n)))
    })
}

/// MGET key...: each key counts as a hit or a miss in INFO, as redis-server counts them.
pub(super) fn mget(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
    let values = cx.kv.get_many(&keys)?;
    let hits = values.iter().filter(|v| v.is_some()).count() as u64;
    let c = &cx.sh.counters;
    c.hits.fetch_add(hits, Ordering::Relaxed);
    c.misses
        .fetch_add(values.len() as u64 - hits, Ordering::Relaxed);
    Ok(Reply::Array(
        values
            .into_iter()
            .map(|v| v.map_or(Reply::Nil, Reply::Bulk))
            .collect(),
    ))
}

fn pairs(args: &[Vec<u8>]) -> Vec<(Vec<u8>, &[u8])> {
    args[1..]
        .chunks_exact(2)
        .map(|kv| (stored(&kv[0]), kv[1].as_slice()))
        .collect()
}

pub(super) fn mset(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if args.len() % 2 != 1 {
        return Ok(wrong_args("mset"));
    }
    cx.kv.put_all(&pairs(args))?;
    Ok(Reply::Status("OK"))
}

pub(super) fn msetnx(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    if args.len() % 2 != 1 {
        return Ok(wrong_args("msetnx"));
    }
    let pairs = pairs(args);
    cx.kv.atomic(|kv| {
        for (k, _) in &pairs {
            if kv.get_entry(k)?.is_some() {
                return Ok(Reply::Int(0));
            }
        }
        for (k, v) in &pairs {
            kv.put(k, v, None)?;
        }
        Ok(Reply::Int(1))
    })
}

/// INCR, DECR, INCRBY, DECRBY.
pub(super) fn incr(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let name = super::lower(&args[0]);
    let by = match args.get(2) {
        None => 1,
        Some(b) => match parse_i64(b) {
            Some(n) => n,
            None => return Ok(not_int()),
        },
    };
    let by = if name.starts_with("decr") {
        match by.checked_neg() {
            Some(n) => n,
            None => return Ok(Reply::err("decrement would overflow")),
        }
    } else {
        by
    };
    let key = stored(&args[1]);
    if let Some(r) = merge_and_read(cx, &key, &string_merge::incr(by))? {
        let before = r.before.as_ref().map(|i| i.value.as_slice());
        let made = string_merge::incremented(before, by);
        settle(cx, &key, r.before.as_ref(), made.map(|_| 0))?;
        // A refused increment: the fold left the value as it was.
        if before.is_some_and(|v| parse_i64(v).is_none()) {
            return Ok(not_int());
        }
        let Some(n) = made else {
            return Ok(Reply::err("increment or decrement would overflow"));
        };
        return Ok(Reply::Int(n));
    }
    rewrite(cx, &key, false, |old| {
        let n = match &old {
            None => 0,
            Some(v) => parse_i64(v).ok_or_else(not_int)?,
        };
        let n = n
            .checked_add(by)
            .ok_or_else(|| Reply::err("increment or decrement would overflow"))?;
        Ok((Some(n.to_string().into_bytes()), Reply::Int(n)))
    })
}

pub(super) fn incrbyfloat(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let by = args[2].clone();
    rewrite(cx, &stored(&args[1]), false, |old| {
        let cur = old.unwrap_or_else(|| b"0".to_vec());
        match crate::longdouble::add(&cur, &by) {
            Ok(v) => Ok((Some(v.clone()), Reply::Bulk(v))),
            Err(crate::longdouble::Refused::NotAFloat) => {
                Err(Reply::err("value is not a valid float"))
            }
            Err(crate::longdouble::Refused::NotFinite) => {
                Err(Reply::err("increment would produce NaN or Infinity"))
            }
        }
    })
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN].
pub(super) fn lcs(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let (mut len, mut idx, mut withlen, mut minlen) = (false, false, false, 0usize);
    let mut i = 3;
    while i < args.len() {
        match upper(&args[i]).as_str() {
            "LEN" => len = true,
            "IDX" => idx = true,
            "WITHMATCHLEN" => withlen = true,
            "MINMATCHLEN" if i + 1 < args.len() => {
                let Some(n) = parse_i64(&args[i + 1]) else {
                    return Ok(not_int());
                };
                minlen = n.max(0) as usize;
                i += 1;
            }
            _ => return Ok(syntax()),
        }
        i += 1;
    }
    if len && idx {
        return Ok(Reply::err(
            "If you want both the length and indexes, please just use IDX.",
        ));
    }
    let a = cx.kv.get(&stored(&args[1]))?.unwrap_or_default();
    let b = cx.kv.get(&stored(&args[2]))?.unwrap_or_default();
    let cells = (a.len() + 1).saturating_mul(b.len() + 1);
    if cells.saturating_mul(4) > cx.sh.settings.max_bulk {
        return Ok(Reply::err(
            "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let found = longest_common(&a, &b);
    if len {
        return Ok(Reply::Int(found.text.len() as i64));
    }
    if !idx {
        return Ok(Reply::Bulk(found.text));
    }
    let matches = found
        .runs
        .iter()
        .filter(|r| minlen == 0 || r.len >= minlen)
        .map(|r| {
            let range = |s: usize| {
                Reply::Array(vec![
                    Reply::Int(s as i64),
                    Reply::Int((s + r.len - 1) as i64),
                ])
            };
            let mut m = vec![range(r.a), range(r.b)];
            if withlen {
                m.push(Reply::Int(r.len as i64));
            }
            Reply::Array(m)
        })
        .collect();
    Ok(Reply::Map(vec![
        (Reply::text("matches"), Reply::Array(matches)),
        (Reply::text("len"), Reply::Int(found.text.len() as i64)),
    ]))
}

/// A run of matching bytes: `a[a..a+len] == b[b..b+len]`.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    a: usize,
    b: usize,
    len: usize,
}

#[derive(Debug)]
struct Common {
    text: Vec<u8>,
    /// The runs that make `text`, last first (the order Redis reports them in).
    runs: Vec<Run>,
}

/// The longest common subsequence by the classic table, walked back from the
/// end; on a tie it steps back in `b`, which picks the same subsequence as
/// redis-server.
fn longest_common(a: &[u8], b: &[u8]) -> Common {
    let w = b.len() + 1;
    let mut t = vec![0u32; (a.len() + 1) * w];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    let (mut i, mut j) = (a.len(), b.len());
    let mut text = Vec::with_capacity(t[i * w + j] as usize);
    let mut runs: Vec<Run> = Vec::new();
    let mut open: Option<Run> = None;
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            text.push(a[i - 1]);
            i -= 1;
            j -= 1;
            match &mut open {
                Some(r) => {
                    r.a = i;
                    r.b = j;
                    r.len += 1;
                }
                None => open = Some(Run { a: i, b: j, len: 1 }),
            }
        } else {
            if let Some(r) = open.take() {
                runs.push(r);
            }
            if t[(i - 1) * w + j] > t[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
        }
    }
    runs.extend(open);
    text.reverse();
    Common { text, runs }
}

/// A bit offset as SETBIT and GETBIT take it: its byte within the longest
/// string a request may carry (`max_bulk`, Redis's proto-max-bulk-len).
fn bit_offset(arg: &[u8], max_bulk: usize) -> Result<u64, Reply> {
    parse_i64(arg)
        .filter(|&n| n >= 0 && ((n as u64) >> 3) < max_bulk as u64)
        .map(|n| n as u64)
        .ok_or_else(|| Reply::err("bit offset is not an integer or out of range"))
}

pub(super) fn setbit(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let off = match bit_offset(&args[2], cx.sh.settings.max_bulk) {
        Ok(o) => o,
        Err(r) => return Ok(r),
    };
    let on = match args[3].as_slice() {
        b"0" => false,
        b"1" => true,
        _ => return Ok(Reply::err("bit is not an integer or out of range")),
    };
    let byte = (off >> 3) as usize;
    let mask = 0x80u8 >> (off & 7);
    rewrite(cx, &stored(&args[1]), true, |old| {
        let mut v = old.unwrap_or_default();
        if v.len() <= byte {
            v.resize(byte + 1, 0);
        }
        let was = i64::from(v[byte] & mask != 0);
        if on {
            v[byte] |= mask;
        } else {
            v[byte] &= !mask;
        }
        Ok((Some(v), Reply::Int(was)))
    })
}

pub(super) fn getbit(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let off = match bit_offset(&args[2], cx.sh.settings.max_bulk) {
        Ok(o) => o,
        Err(r) => return Ok(r),
    };
    let v = cx.kv.get(&stored(&args[1]))?.unwrap_or_default();
    let bit = v
        .get((off >> 3) as usize)
        .is_some_and(|b| b & (0x80 >> (off & 7)) != 0);
    Ok(Reply::Int(i64::from(bit)))
}

/// BITCOUNT key [start end [BYTE|BIT]].
pub(super) fn bitcount(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let Some(v) = cx.kv.get(&stored(&args[1]))? else {
        return Ok(Reply::Int(0));
    };
    let ones = |bytes: &[u8]| bytes.iter().map(|b| i64::from(b.count_ones())).sum::<i64>();
    if args.len() == 2 {
        return Ok(Reply::Int(ones(&v)));
    }
    if args.len() != 4 && args.len() != 5 {
        return Ok(syntax());
    }
    let (Some(start), Some(end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return Ok(not_int());
    };
    let bits = match args.get(4).map(|u| upper(u)).as_deref() {
        None | Some("BYTE") => false,
        Some("BIT") => true,
        Some(_) => return Ok(syntax()),
    };
    let total = v.len() as i64 * if bits { 8 } else { 1 };
    let Some((s, e)) = span(start, end, total) else {
        return Ok(Reply::Int(0));
    };
    if !bits {
        return Ok(Reply::Int(ones(&v[s..=e])));
    }
    let n = (s..=e)
        .filter(|&bit| v[bit >> 3] & (0x80 >> (bit & 7)) != 0)
        .count();
    Ok(Reply::Int(n as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_common_subsequence_and_its_runs_follow_redis_example() {
        // The example of Redis's LCS documentation.
        let c = longest_common(b"ohmytext", b"mynewtext");
        assert_eq!(c.text, b"mytext");
        assert_eq!(
            c.runs,
            vec![Run { a: 4, b: 5, len: 4 }, Run { a: 2, b: 0, len: 2 }]
        );
        assert!(longest_common(b"", b"abc").text.is_empty());
    }

    #[test]
    fn spans_clamp_like_redis() {
        assert_eq!(span(0, -1, 5), Some((0, 4)));
        assert_eq!(span(-3, -1, 8), Some((5, 7)));
        assert_eq!(span(5, 2, 8), None);
        assert_eq!(span(0, -100, 8), Some((0, 0)));
        assert_eq!(span(0, 100, 3), Some((0, 2)));
        assert_eq!(span(0, 0, 0), None);
    }

    #[test]
    fn expiry_options_refuse_zero_negative_and_overflow() {
        assert_eq!(expiry("EX", b"0", "set"), Err(invalid_expire("set")));
        assert_eq!(expiry("EX", b"x", "set"), Err(not_int()));
        assert_eq!(
            expiry("EX", b"9223372036854775", "set"),
            Err(invalid_expire("set"))
        );
        assert_eq!(expiry("EXAT", b"1", "set"), Ok(None));
        assert_eq!(
            expiry("PX", b"1500", "set"),
            Ok(Some(Duration::from_millis(1500)))
        );
    }
}
