//! EXPIRE and its siblings, TTL and its siblings, PERSIST. sett keeps expiries
//! in whole seconds (see the module docs of `commands`).

use super::{lower, not_int, now_ms, parse_i64, stored, upper, Ctx, Res};
use crate::resp::Reply;
use sett::PutOptions;
use std::time::Duration;

/// The condition of EXPIRE's NX|XX|GT|LT options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct When {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn conditions(args: &[Vec<u8>]) -> Result<When, Reply> {
    let mut w = When::default();
    for a in args {
        match upper(a).as_str() {
            "NX" => w.nx = true,
            "XX" => w.xx = true,
            "GT" => w.gt = true,
            "LT" => w.lt = true,
            _ => {
                return Err(Reply::err(format!(
                    "Unsupported option {}",
                    String::from_utf8_lossy(a)
                )))
            }
        }
    }
    if w.nx && (w.xx || w.gt || w.lt) {
        return Err(Reply::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if w.gt && w.lt {
        return Err(Reply::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    Ok(w)
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX|XX|GT|LT].
pub(super) fn expire(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let cmd = lower(&args[0]);
    let Some(t) = parse_i64(&args[2]) else {
        return Ok(not_int());
    };
    let when = match conditions(&args[3..]) {
        Ok(w) => w,
        Err(r) => return Ok(r),
    };
    let invalid = || Reply::err(format!("invalid expire time in '{cmd}' command"));
    let seconds = !cmd.starts_with('p');
    let absolute = cmd.ends_with("at");
    let Some(ms) = (if seconds {
        t.checked_mul(1000)
    } else {
        Some(t)
    }) else {
        return Ok(invalid());
    };
    let now = now_ms() as i64;
    // The new expiry in ms since the epoch.
    let Some(at) = (if absolute {
        Some(ms)
    } else {
        ms.checked_add(now)
    }) else {
        return Ok(invalid());
    };
    let key = stored(&args[1]);
    cx.kv.atomic(|kv| {
        let Some(item) = kv.get_entry(&key)? else {
            return Ok(Reply::Int(0));
        };
        let cur = (item.expires_at != 0).then(|| item.expires_at as i64 * 1000);
        let allowed = if when.nx {
            cur.is_none()
        } else {
            (!when.xx || cur.is_some())
                && (!when.gt || cur.is_some_and(|c| at > c))
                && (!when.lt || cur.is_none_or(|c| at < c))
        };
        if !allowed {
            return Ok(Reply::Int(0));
        }
        if at <= now {
            kv.delete(&key)?;
        } else {
            let ttl = Some(Duration::from_millis((at - now) as u64));
            kv.put_with(
                &key,
                &item.value,
                PutOptions {
                    user_meta: item.user_meta,
                    ttl,
                },
            )?;
        }
        Ok(Reply::Int(1))
    })
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 for a missing key, -1 for one without expiry.
pub(super) fn ttl(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let cmd = lower(&args[0]);
    Ok(match cx.kv.get_entry(&stored(&args[1]))? {
        None => Reply::Int(-2),
        Some(item) if item.expires_at == 0 => Reply::Int(-1),
        Some(item) => {
            let at_ms = item.expires_at.saturating_mul(1000);
            let left = at_ms.saturating_sub(now_ms());
            Reply::Int(match cmd.as_str() {
                "pttl" => left as i64,
                "ttl" => left.div_ceil(1000) as i64,
                "expiretime" => item.expires_at as i64,
                _ => at_ms as i64,
            })
        }
    })
}

pub(super) fn persist(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let key = stored(&args[1]);
    Ok(Reply::Int(cx.kv.atomic(
        |kv| match kv.get_entry(&key)? {
            Some(item) if item.expires_at != 0 => {
                kv.put_with(
                    &key,
                    &item.value,
                    PutOptions {
                        user_meta: item.user_meta,
                        ttl: None,
                    },
                )?;
                Ok(1)
            }
            _ => Ok(0),
        },
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|x| x.as_bytes().to_vec()).collect()
    }

    #[test]
    fn expire_conditions_refuse_what_redis_refuses() {
        assert_eq!(conditions(&args(&["nx", "NX"])).map(|w| w.nx), Ok(true));
        assert!(
            matches!(conditions(&args(&["nx", "xx"])), Err(Reply::Error(e)) if e.contains("NX and XX"))
        );
        assert!(
            matches!(conditions(&args(&["gt", "lt"])), Err(Reply::Error(e)) if e.contains("GT and LT"))
        );
        assert!(
            matches!(conditions(&args(&["foo"])), Err(Reply::Error(e)) if e == "ERR Unsupported option foo")
        );
    }
}
