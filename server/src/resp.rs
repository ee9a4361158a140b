//! RESP2 request parsing and RESP2/RESP3 reply encoding.
//!
//! Our own small parser rather than a codec crate: the limits (bulk length,
//! argument count, inline line length) are checked on the headers, before a
//! byte of the payload is buffered, and a request is only ever a flat array of
//! bulk strings (or an inline line), which is all a server needs to read.

use crate::error::{Error, Result};

/// Bounds on what one request may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest bulk string (one argument), in bytes.
    pub max_bulk: usize,
    /// Most arguments in one command, the name included.
    pub max_args: usize,
}

/// Longest inline command line or header line accepted, in bytes.
const MAX_LINE: usize = 64 * 1024;

/// Parses one command from the front of `buf`: `Ok(None)` if more bytes are
/// needed, else the arguments and how many bytes they took.
pub fn parse_command(buf: &[u8], limits: &Limits) -> Result<Option<(Vec<Vec<u8>>, usize)>> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_array(buf, limits),
        Some(_) => parse_inline(buf, limits),
    }
}

/// The line at `buf[from..]` without its CRLF and the offset after it; `Ok(None)` if
/// no CRLF yet. A line longer than `MAX_LINE` is a protocol error.
fn line(buf: &[u8], from: usize) -> Result<Option<(&[u8], usize)>> {
    let rest = &buf[from..];
    match rest.windows(2).position(|w| w == b"\r\n") {
        Some(n) if n <= MAX_LINE => Ok(Some((&rest[..n], from + n + 2))),
        Some(_) => Err(Error::Protocol("header line too long".into())),
        None if rest.len() > MAX_LINE => Err(Error::Protocol("header line too long".into())),
        None => Ok(None),
    }
}

fn parse_len(digits: &[u8], what: &str) -> Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| Error::Protocol(format!("invalid {what} length")))
}

fn parse_array(buf: &[u8], limits: &Limits) -> Result<Option<(Vec<Vec<u8>>, usize)>> {
    let Some((head, mut pos)) = line(buf, 1)? else {
        return Ok(None);
    };
    let n = parse_len(head, "multibulk")?;
    if n > limits.max_args as i64 {
        return Err(Error::Protocol(format!(
            "{n} arguments, more than the limit of {}",
            limits.max_args
        )));
    }
    if n <= 0 {
        // Redis ignores an empty or null array.
        return Ok(Some((Vec::new(), pos)));
    }
    let mut args = Vec::with_capacity(n as usize);
    for _ in 0..n {
        match buf.get(pos) {
            None => return Ok(None),
            Some(b'$') => {}
            Some(c) => {
                return Err(Error::Protocol(format!(
                    "expected '$', got '{}'",
                    char::from(*c).escape_default()
                )))
            }
        }
        let Some((head, start)) = line(buf, pos + 1)? else {
            return Ok(None);
        };
        let len = parse_len(head, "bulk")?;
        if len < 0 {
            return Err(Error::Protocol("invalid bulk length".into()));
        }
        if len as u64 > limits.max_bulk as u64 {
            return Err(Error::Protocol(format!(
                "bulk of {len} bytes, more than the limit of {} (proto-max-bulk-len)",
                limits.max_bulk
            )));
        }
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(Error::Protocol("bulk string not followed by CRLF".into()));
        }
        args.push(buf[start..end].to_vec());
        pos = end + 2;
    }
    Ok(Some((args, pos)))
}

/// A line of space-separated words (telnet, `redis-cli` pipes); no quoting.
fn parse_inline(buf: &[u8], limits: &Limits) -> Result<Option<(Vec<Vec<u8>>, usize)>> {
    let (text, next) = match buf.iter().position(|&c| c == b'\n') {
        Some(n) if n <= MAX_LINE => (&buf[..n], n + 1),
        Some(_) => return Err(Error::Protocol("inline command too long".into())),
        None if buf.len() > MAX_LINE => {
            return Err(Error::Protocol("inline command too long".into()))
        }
        None => return Ok(None),
    };
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let args: Vec<Vec<u8>> = text
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    if args.len() > limits.max_args {
        return Err(Error::Protocol("too many arguments".into()));
    }
    Ok(Some((args, next)))
}

/// A reply, encoded for the connection's protocol version.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`-style status.
    Status(&'static str),
    /// `-ERR ...`: the text after the dash, with its error code first.
    Error(String),
    /// `:n`.
    Int(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// Null bulk (RESP3 `_`).
    Nil,
    /// `*n`.
    Array(Vec<Reply>),
    /// A map: RESP3 `%n`, a flat array of key, value, ... in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// Nothing is sent (SHUTDOWN closes the connection instead of replying).
    Silent,
}

impl Reply {
    /// `-ERR <msg>`.
    pub fn err(msg: impl Into<String>) -> Reply {
        Reply::Error(format!("ERR {}", msg.into()))
    }

    /// A bulk string from text.
    pub fn text(s: impl Into<String>) -> Reply {
        Reply::Bulk(s.into().into_bytes())
    }

    /// Appends the encoding of this reply to `out`; `resp3` picks maps and nulls.
    pub fn encode(&self, out: &mut Vec<u8>, resp3: bool) {
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(s) => {
                out.push(b'-');
                // An error line must not hold a line break.
                out.extend(
                    s.bytes()
                        .map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
                );
                out.extend_from_slice(b"\r\n");
            }
            Reply::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
            Reply::Bulk(b) => {
                out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::Array(items) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for r in items {
                    r.encode(out, resp3);
                }
            }
            Reply::Map(pairs) => {
                let head = if resp3 {
                    format!("%{}\r\n", pairs.len())
                } else {
                    format!("*{}\r\n", pairs.len() * 2)
                };
                out.extend_from_slice(head.as_bytes());
                for (k, v) in pairs {
                    k.encode(out, resp3);
                    v.encode(out, resp3);
                }
            }
            Reply::Silent => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        max_bulk: 16,
        max_args: 4,
    };

    #[test]
    fn a_command_split_anywhere_parses_only_once_complete() {
        let full = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
        for cut in 0..full.len() {
            assert_eq!(
                parse_command(&full[..cut], &L).ok(),
                Some(None),
                "cut {cut}"
            );
        }
        let (args, used) = parse_command(full, &L).ok().flatten().unwrap_or_default();
        assert_eq!(args, vec![b"GET".to_vec(), b"key".to_vec()]);
        assert_eq!(used, full.len());
    }

    #[test]
    fn an_oversize_bulk_is_refused_from_its_header_alone() {
        assert!(parse_command(b"*2\r\n$3\r\nGET\r\n$17\r\n", &L).is_err());
        assert!(parse_command(b"*5\r\n", &L).is_err());
    }

    #[test]
    fn malformed_headers_are_protocol_errors() {
        for bad in [
            &b"*x\r\n"[..],
            b"*1\r\n:3\r\n",
            b"*1\r\n$-3\r\n",
            b"*1\r\n$1\r\nab\r\n",
        ] {
            assert!(parse_command(bad, &L).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn inline_commands_split_on_spaces() {
        let (args, used) = parse_command(b"PING  hi\r\nrest", &L)
            .ok()
            .flatten()
            .unwrap_or_default();
        assert_eq!(args, vec![b"PING".to_vec(), b"hi".to_vec()]);
        assert_eq!(used, 10);
    }

    #[test]
    fn maps_are_flat_arrays_in_resp2_and_nulls_differ_by_version() {
        let m = Reply::Map(vec![(Reply::text("a"), Reply::Int(1))]);
        let (mut two, mut three) = (Vec::new(), Vec::new());
        m.encode(&mut two, false);
        m.encode(&mut three, true);
        assert_eq!(two, b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(three, b"%1\r\n$1\r\na\r\n:1\r\n");
        let (mut n2, mut n3) = (Vec::new(), Vec::new());
        Reply::Nil.encode(&mut n2, false);
        Reply::Nil.encode(&mut n3, true);
        assert_eq!(
            (n2.as_slice(), n3.as_slice()),
            (&b"$-1\r\n"[..], &b"_\r\n"[..])
        );
    }
}
