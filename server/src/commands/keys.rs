//! Commands on keys whatever they hold: DEL, EXISTS, TYPE, KEYS, SCAN,
//! RANDOMKEY, DBSIZE, RENAME, COPY, OBJECT, FLUSHDB. Every value is a string,
//! so TYPE says "string" or "none".

use super::{glob, lower, not_int, parse_i64, stored, syntax, upper, user_key, Ctx, Res, EDITED};
use crate::resp::Reply;
use sett::{IterOptions, PutOptions};
use std::hash::{BuildHasher, RandomState};

fn keys_only() -> IterOptions {
    IterOptions {
        keys_only: true,
        ..Default::default()
    }
}

/// DEL and UNLINK: the number of keys that existed.
pub(super) fn del(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
    let n = cx.kv.atomic(|kv| {
        let mut n = 0;
        for k in &keys {
            if kv.get_entry(k)?.is_some() {
                kv.delete(k)?;
                n += 1;
            }
        }
        Ok(n)
    })?;
    Ok(Reply::Int(n))
}

/// EXISTS and TOUCH: how many of the keys exist (a key named twice counts twice).
pub(super) fn exists(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let keys: Vec<Vec<u8>> = args[1..].iter().map(|k| stored(k)).collect();
    let found = cx.kv.get_many(&keys)?;
    Ok(Reply::Int(
        found.iter().filter(|v| v.is_some()).count() as i64
    ))
}

pub(super) fn type_(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    Ok(Reply::Status(
        if cx.kv.get_entry(&stored(&args[1]))?.is_some() {
            "string"
        } else {
            "none"
        },
    ))
}

/// KEYS pattern: every key that matches, in key order (slot, then key).
pub(super) fn keys(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let mut it = cx.kv.iter(keys_only())?;
    let mut out = Vec::new();
    while it.valid() {
        let k = user_key(it.key());
        if glob(&args[1], k) {
            out.push(Reply::Bulk(k.to_vec()));
        }
        it.advance()?;
    }
    Ok(Reply::Array(out))
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE t].
pub(super) fn scan(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let sh = cx.sh;
    let start = if args[1] == b"0" {
        None
    } else {
        let id = std::str::from_utf8(&args[1])
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        let cursors = sh.cursors.lock().unwrap_or_else(|p| p.into_inner());
        match id.and_then(|id| cursors.keys.get(&id).cloned()) {
            Some(k) => Some(k),
            None => return Ok(Reply::err("invalid cursor")),
        }
    };
    let (mut pattern, mut count, mut only_strings) = (None, 10usize, true);
    let mut i = 2;
    while i < args.len() {
        let Some(val) = args.get(i + 1) else {
            return Ok(syntax());
        };
        match upper(&args[i]).as_str() {
            "MATCH" => pattern = Some(val.clone()),
            "COUNT" => match parse_i64(val) {
                Some(n) if n >= 1 => count = n.min(100_000) as usize,
                Some(_) => return Ok(syntax()),
                None => return Ok(not_int()),
            },
            "TYPE" => only_strings = upper(val) == "STRING",
            _ => return Ok(syntax()),
        }
        i += 2;
    }
    let mut keys = Vec::new();
    let mut last = None;
    let mut more = false;
    if only_strings {
        let mut it = cx.kv.iter(IterOptions {
            start: start.clone(),
            keys_only: true,
            prefetch: count.min(1024),
            ..Default::default()
        })?;
        let mut seen = 0;
        while it.valid() {
            if seen == count {
                more = true;
                break;
            }
            let k = it.key();
            seen += 1;
            let user = user_key(k);
            if pattern.as_deref().is_none_or(|p| glob(p, user)) {
                keys.push(Reply::Bulk(user.to_vec()));
            }
            last = Some(k.to_vec());
            it.advance()?;
        }
    }
    let cursor = match (more, last) {
        (true, Some(mut k)) => {
            // Resume just after the last key examined.
            k.push(0);
            let mut cursors = sh.cursors.lock().unwrap_or_else(|p| p.into_inner());
            cursors.put(k)
        }
        _ => 0,
    };
    Ok(Reply::Array(vec![
        Reply::text(cursor.to_string()),
        Reply::Array(keys),
    ]))
}

/// RANDOMKEY: the first key at or after a random slot (wrapping around), or nil.
pub(super) fn randomkey(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    let slot = (RandomState::new().hash_one(super::now_ms()) % 16384) as u16;
    let mut it = cx.kv.iter(IterOptions {
        start: Some(slot.to_be_bytes().to_vec()),
        keys_only: true,
        ..Default::default()
    })?;
    if !it.valid() {
        it = cx.kv.iter(keys_only())?;
    }
    Ok(if it.valid() {
        Reply::Bulk(user_key(it.key()).to_vec())
    } else {
        Reply::Nil
    })
}

pub(super) fn dbsize(cx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> Res {
    let mut n = 0;
    for item in cx.kv.iter(keys_only())? {
        item?;
        n += 1;
    }
    Ok(Reply::Int(n))
}

/// FLUSHDB and FLUSHALL [ASYNC|SYNC]: one database, so both drop everything.
pub(super) fn flush(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    match args.get(1).map(|a| upper(a)).as_deref() {
        None | Some("SYNC") | Some("ASYNC") if args.len() <= 2 => {}
        _ => return Ok(syntax()),
    }
    cx.db.drop_all()?;
    Ok(Reply::Status("OK"))
}

/// RENAME and RENAMENX: the value moves with its TTL.
pub(super) fn rename(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let nx = lower(&args[0]) == "renamenx";
    let (from, to) = (stored(&args[1]), stored(&args[2]));
    let now = cx.now();
    cx.kv.atomic(|kv| {
        let Some(item) = kv.get_entry(&from)? else {
            return Ok(Reply::err("no such key"));
        };
        if from == to {
            return Ok(if nx {
                Reply::Int(0)
            } else {
                Reply::Status("OK")
            });
        }
        if nx && kv.get_entry(&to)?.is_some() {
            return Ok(Reply::Int(0));
        }
        let opts = PutOptions {
            user_meta: item.user_meta,
            ttl: super::keep_ttl(item.expires_at, now),
        };
        kv.put_with(&to, &item.value, opts)?;
        kv.delete(&from)?;
        Ok(if nx {
            Reply::Int(1)
        } else {
            Reply::Status("OK")
        })
    })
}

/// COPY source destination [DB n] [REPLACE]: only database 0 exists.
pub(super) fn copy(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let (mut replace, mut db) = (false, 0i64);
    let mut i = 3;
    while i < args.len() {
        match upper(&args[i]).as_str() {
            "REPLACE" => replace = true,
            "DB" if i + 1 < args.len() => {
                let Some(n) = parse_i64(&args[i + 1]) else {
                    return Ok(not_int());
                };
                db = n;
                i += 1;
            }
            _ => return Ok(syntax()),
        }
        i += 1;
    }
    if db != 0 {
        return Ok(Reply::err("DB index is out of range"));
    }
    let (from, to) = (stored(&args[1]), stored(&args[2]));
    if from == to {
        return Ok(Reply::err("source and destination objects are the same"));
    }
    let now = cx.now();
    cx.kv.atomic(|kv| {
        let Some(item) = kv.get_entry(&from)? else {
            return Ok(Reply::Int(0));
        };
        if !replace && kv.get_entry(&to)?.is_some() {
            return Ok(Reply::Int(0));
        }
        let opts = PutOptions {
            user_meta: item.user_meta,
            ttl: super::keep_ttl(item.expires_at, now),
        };
        kv.put_with(&to, &item.value, opts)?;
        Ok(Reply::Int(1))
    })
}

/// How redis-server would encode a string: "int" for an integer it parses,
/// "embstr" up to 44 bytes, "raw" above that or once edited in place.
fn encoding(value: &[u8], user_meta: u8) -> &'static str {
    if user_meta & EDITED != 0 {
        "raw"
    } else if value.len() <= 20 && parse_i64(value).is_some() {
        "int"
    } else if value.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key, OBJECT HELP.
pub(super) fn object(cx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Res {
    let sub = lower(&args[1]);
    let arity_ok = match sub.as_str() {
        "help" => args.len() == 2,
        "encoding" | "freq" | "idletime" | "refcount" => args.len() == 3,
        _ => {
            return Ok(Reply::err(format!(
                "unknown subcommand '{}'. Try OBJECT HELP.",
                String::from_utf8_lossy(&args[1])
            )))
        }
    };
    if !arity_ok {
        return Ok(super::wrong_args(&format!("object|{sub}")));
    }
    if sub == "help" {
        return Ok(Reply::Array(
            [
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation the key's value would have in redis-server.",
                "FREQ <key>",
                "    Refused: sett-server keeps no access frequencies.",
                "IDLETIME <key>",
                "    0: sett-server does not track access times.",
                "REFCOUNT <key>",
                "    Return the number of references of the value as redis-server would count them.",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|&l| Reply::Status(l))
            .collect(),
        ));
    }
    let Some(item) = cx.kv.get_entry(&stored(&args[2]))? else {
        return Ok(Reply::Nil);
    };
    Ok(match sub.as_str() {
        "encoding" => Reply::text(encoding(&item.value, item.user_meta)),
        "freq" => Reply::err(
            "An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
        "idletime" => Reply::Int(0),
        _ => {
            // redis-server shares the objects of the integers 0..9999.
            let shared = encoding(&item.value, item.user_meta) == "int"
                && parse_i64(&item.value).is_some_and(|n| (0..10_000).contains(&n));
            Reply::Int(if shared { i64::from(i32::MAX) } else { 1 })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_follow_redis_shapes() {
        assert_eq!(encoding(b"12", 0), "int");
        assert_eq!(encoding(b"-5", 0), "int");
        assert_eq!(encoding(b"05", 0), "embstr");
        assert_eq!(encoding(b"12345678901234567890", 0), "embstr");
        assert_eq!(encoding(b"1.5", 0), "embstr");
        assert_eq!(encoding(&[b'x'; 45], 0), "raw");
        assert_eq!(encoding(b"12", EDITED), "raw");
    }
}
