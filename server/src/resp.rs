//! RESP2 request parsing and RESP2/RESP3 reply encoding.
//!
//! Our own small parser rather than a codec crate: the limits (bulk length,
//! argument count, inline line length) are checked on the headers, before a
//! byte of the payload is buffered, and a request is only ever a flat array of
//! bulk strings (or an inline line), which is all a server needs to read.

use crate::error::{Error, Result};
use bytes::BytesMut;

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

/// Reads commands off the front of a connection's buffer. Arguments are taken
/// out of the buffer as soon as each is complete, so a large request arriving
/// in many reads is parsed once, not again from its start after each read.
#[derive(Debug, Default)]
pub struct Parser {
    /// A multibulk request begun: arguments still expected, and those read.
    partial: Option<(usize, Vec<Vec<u8>>)>,
}

impl Parser {
    /// The next complete command in `buf` (consumed from it), or `Ok(None)`
    /// if more bytes are needed.
    pub fn next(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<Option<Vec<Vec<u8>>>> {
        let (want, mut args) = match self.partial.take() {
            Some(p) => p,
            None => match buf.first() {
                None => return Ok(None),
                Some(b'*') => {
                    let Some((head, used)) = line(buf, 1)? else {
                        return Ok(None);
                    };
                    let n = parse_len(head, "multibulk")?;
                    if n > limits.max_args as i64 {
                        return Err(Error::Protocol(format!(
                            "{n} arguments, more than the limit of {}",
                            limits.max_args
                        )));
                    }
                    let _ = buf.split_to(used);
                    // Redis ignores an empty or null array.
                    let n = n.max(0) as usize;
                    (n, Vec::with_capacity(n.min(1024)))
                }
                Some(_) => return parse_inline(buf, limits),
            },
        };
        while args.len() < want {
            match bulk(buf, limits)? {
                Some(arg) => args.push(arg),
                None => {
                    self.partial = Some((want, args));
                    return Ok(None);
                }
            }
        }
        Ok(Some(args))
    }
}

/// The line at `buf[from..]` without its CRLF and the offset after it; `Ok(None)` if
/// no CRLF yet. A line longer than `MAX_LINE` is a protocol error.
fn line(buf: &[u8], from: usize) -> Result<Option<(&[u8], usize)>> {
    let rest = buf.get(from..).unwrap_or_default();
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

/// One `$len` bulk string off the front of `buf`, its length checked against
/// the limit before its bytes are waited for.
fn bulk(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Vec<u8>>> {
    match buf.first() {
        None => return Ok(None),
        Some(b'$') => {}
        Some(c) => {
            return Err(Error::Protocol(format!(
                "expected '$', got '{}'",
                char::from(*c).escape_default()
            )))
        }
    }
    let Some((head, start)) = line(buf, 1)? else {
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
        // Room for more of it now (bounded: a header alone must not make us
        // allocate the largest bulk), so that reads fill it in large pieces.
        buf.reserve((end + 2 - buf.len()).min(16 << 20));
        return Ok(None);
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(Error::Protocol("bulk string not followed by CRLF".into()));
    }
    let mut taken = buf.split_to(end + 2);
    taken.truncate(end);
    Ok(Some(taken.split_off(start).to_vec()))
}

/// A line of space-separated words (telnet, `redis-cli` pipes); no quoting.
fn parse_inline(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Vec<Vec<u8>>>> {
    let (len, next) = match buf.iter().position(|&c| c == b'\n') {
        Some(n) if n <= MAX_LINE => (n, n + 1),
        Some(_) => return Err(Error::Protocol("inline command too long".into())),
        None if buf.len() > MAX_LINE => {
            return Err(Error::Protocol("inline command too long".into()))
        }
        None => return Ok(None),
    };
    let text = &buf[..len];
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let args: Vec<Vec<u8>> = text
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    if args.len() > limits.max_args {
        return Err(Error::Protocol("too many arguments".into()));
    }
    let _ = buf.split_to(next);
    Ok(Some(args))
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
    /// Null array (RESP2 `*-1`, RESP3 `_`): EXEC after a WATCHed key changed.
    NilArray,
    /// `*n`.
    Array(Vec<Reply>),
    /// A map: RESP3 `%n`, a flat array of key, value, ... in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// Out-of-band data (a pubsub message or confirmation): RESP3 `>n`, an
    /// array in RESP2.
    Push(Vec<Reply>),
    /// Several replies to one command (SUBSCRIBE answers once per channel).
    Seq(Vec<Reply>),
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
            Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
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
            Reply::Push(items) => {
                let mark = if resp3 { '>' } else { '*' };
                out.extend_from_slice(format!("{mark}{}\r\n", items.len()).as_bytes());
                for r in items {
                    r.encode(out, resp3);
                }
            }
            Reply::Seq(replies) => {
                for r in replies {
                    r.encode(out, resp3);
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

    fn parse_all(bytes: &[u8]) -> Result<Vec<Vec<Vec<u8>>>> {
        let (mut p, mut buf, mut out) = (Parser::default(), BytesMut::from(bytes), Vec::new());
        while let Some(cmd) = p.next(&mut buf, &L)? {
            out.push(cmd);
        }
        Ok(out)
    }

    #[test]
    fn a_command_fed_one_byte_at_a_time_parses_once_complete() {
        let full = b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*1\r\n$4\r\nPING\r\n";
        let (mut p, mut buf, mut got) = (Parser::default(), BytesMut::new(), Vec::new());
        for &b in full {
            buf.extend_from_slice(&[b]);
            while let Ok(Some(cmd)) = p.next(&mut buf, &L) {
                got.push((cmd, buf.len()));
            }
        }
        let want = vec![
            (vec![b"GET".to_vec(), b"key".to_vec()], 0),
            (vec![b"PING".to_vec()], 0),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn an_oversize_bulk_is_refused_from_its_header_alone() {
        assert!(parse_all(b"*2\r\n$3\r\nGET\r\n$17\r\n").is_err());
        assert!(parse_all(b"*5\r\n").is_err());
        assert!(parse_all(b"*2\r\n$3\r\nGET\r\n$16\r\n").is_ok_and(|c| c.is_empty()));
    }

    #[test]
    fn malformed_headers_are_protocol_errors() {
        for bad in [
            &b"*x\r\n"[..],
            b"*1\r\n:3\r\n",
            b"*1\r\n$-3\r\n",
            b"*1\r\n$1\r\nab\r\n",
        ] {
            assert!(parse_all(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn inline_commands_split_on_spaces() {
        let got = parse_all(b"PING  hi\r\nECHO x\n").ok();
        let want = vec![
            vec![b"PING".to_vec(), b"hi".to_vec()],
            vec![b"ECHO".to_vec(), b"x".to_vec()],
        ];
        assert_eq!(got, Some(want));
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
