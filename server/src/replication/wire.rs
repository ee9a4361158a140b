//! The replication stream's frames, master to replica, after the handshake
//! (`+FULLRESYNC` or `+CONTINUE`). Each frame is
//! `len u32 LE | crc32 u32 LE of the payload | payload`, and the payload's
//! first byte says what it is:
//!
//! | kind | payload after the kind byte |
//! |---|---|
//! | 1 changes | `n u32`, then n × (`version u64`, `op u8` (0 put, 1 delete, 2 range delete), `klen u32`, key, `vlen u32`, value, `user_meta u8`, `expires_at u64`) |
//! | 2 heartbeat | `version u64`: the master's newest version |
//! | 3 file | `nlen u16`, name, `size u64`: a checkpoint file follows in chunks |
//! | 4 chunk | the next bytes of the current file |
//! | 5 files end | `count u32`: the checkpoint is complete |
//!
//! Integers are little-endian. A full sync is files, chunks and a files-end
//! frame; then (and from the start of a partial resync) changes and
//! heartbeats. The replica answers with `REPLCONF ACK <version>` commands.

use sett::{Change, ChangeKind};
use std::io::Read;

/// A frame longer than this is damage, not data (a batch is at most the
/// engine's WAL record size, far below it).
pub const MAX_FRAME: u32 = 1 << 31;
/// Checkpoint files travel in chunks of this many bytes.
pub const CHUNK: usize = 1 << 20;

const CHANGES: u8 = 1;
const HEARTBEAT: u8 = 2;
const FILE: u8 = 3;
const FILE_CHUNK: u8 = 4;
const FILES_END: u8 = 5;

/// One frame of the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// Committed changes, in version order.
    Changes(Vec<Change>),
    /// Nothing new; the master is at this version.
    Heartbeat(u64),
    /// A checkpoint file of `size` bytes begins.
    File { name: String, size: u64 },
    /// Bytes of the current file.
    Chunk(Vec<u8>),
    /// The checkpoint's last frame: it had `count` files.
    FilesEnd(u32),
}

/// Why a stream could not be read.
#[derive(Debug)]
pub enum WireError {
    /// The connection failed or closed.
    Io(std::io::Error),
    /// The bytes are not a frame: `at` is the stream offset of the frame.
    Damaged { at: u64, what: String },
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Io(e) => write!(f, "reading the replication stream: {e}"),
            WireError::Damaged { at, what } => {
                write!(f, "replication stream damaged at byte {at}: {what}")
            }
        }
    }
}

/// Appends `frame`, framed, to `out`.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    match frame {
        Frame::Changes(changes) => {
            out.push(CHANGES);
            out.extend_from_slice(&(changes.len() as u32).to_le_bytes());
            for c in changes {
                out.extend_from_slice(&c.version.to_le_bytes());
                out.push(match c.kind {
                    ChangeKind::Put => 0,
                    ChangeKind::DeleteRange => 2,
                    ChangeKind::Merge => 3,
                    _ => 1,
                });
                out.extend_from_slice(&(c.key.len() as u32).to_le_bytes());
                out.extend_from_slice(&c.key);
                out.extend_from_slice(&(c.value.len() as u32).to_le_bytes());
                out.extend_from_slice(&c.value);
                out.push(c.user_meta);
                out.extend_from_slice(&c.expires_at.to_le_bytes());
            }
        }
        Frame::Heartbeat(v) => {
            out.push(HEARTBEAT);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Frame::File { name, size } => {
            out.push(FILE);
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&size.to_le_bytes());
        }
        Frame::Chunk(bytes) => {
            out.push(FILE_CHUNK);
            out.extend_from_slice(bytes);
        }
        Frame::FilesEnd(n) => {
            out.push(FILES_END);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    let payload = &out[start + 8..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Reads frames off a stream, counting its bytes so that damage is named by offset.
pub struct FrameReader<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader { inner, offset: 0 }
    }

    /// The reader underneath (to see what it has buffered).
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The next frame. A length past [`MAX_FRAME`], a checksum mismatch or a
    /// payload that does not parse is [`WireError::Damaged`].
    pub fn next(&mut self) -> Result<Frame, WireError> {
        let at = self.offset;
        let mut head = [0u8; 8];
        self.inner.read_exact(&mut head).map_err(|e| {
            WireError::Io(match e.kind() {
                std::io::ErrorKind::UnexpectedEof => {
                    std::io::Error::new(e.kind(), format!("the link closed at byte {at}"))
                }
                _ => e,
            })
        })?;
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let damaged = |what: String| WireError::Damaged { at, what };
        if len == 0 || len > MAX_FRAME {
            return Err(damaged(format!("frame length {len}")));
        }
        // Read as it arrives: a damaged length must not allocate it all up front.
        let mut payload = Vec::with_capacity((len as usize).min(CHUNK + 64));
        let got = (&mut self.inner)
            .take(u64::from(len))
            .read_to_end(&mut payload)
            .map_err(WireError::Io)?;
        if got != len as usize {
            return Err(WireError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the stream ended inside a frame of {len} bytes at byte {at}"),
            )));
        }
        self.offset += 8 + u64::from(len);
        if crc32fast::hash(&payload) != crc {
            return Err(damaged(format!(
                "checksum mismatch in a frame of {len} bytes"
            )));
        }
        decode(&payload)
            .ok_or_else(|| damaged(format!("frame of kind {} does not parse", payload[0])))
    }
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = self.u32()? as usize;
        self.take(n).map(<[u8]>::to_vec)
    }
}

fn decode(payload: &[u8]) -> Option<Frame> {
    let mut c = Cursor(payload);
    let frame = match c.u8()? {
        CHANGES => {
            let n = c.u32()? as usize;
            // Each change takes at least 26 bytes: a count past that is damage.
            if n > payload.len() / 26 {
                return None;
            }
            let mut changes = Vec::with_capacity(n);
            for _ in 0..n {
                let version = c.u64()?;
                let kind = match c.u8()? {
                    0 => ChangeKind::Put,
                    1 => ChangeKind::Delete,
                    2 => ChangeKind::DeleteRange,
                    3 => ChangeKind::Merge,
                    _ => return None,
                };
                let key = c.bytes()?;
                let value = c.bytes()?;
                let user_meta = c.u8()?;
                let expires_at = c.u64()?;
                changes.push(Change {
                    kind,
                    key,
                    value,
                    version,
                    user_meta,
                    expires_at,
                });
            }
            if changes.windows(2).any(|w| w[0].version > w[1].version) {
                return None;
            }
            Frame::Changes(changes)
        }
        HEARTBEAT => Frame::Heartbeat(c.u64()?),
        FILE => {
            let n = c.u16()? as usize;
            let name = String::from_utf8(c.take(n)?.to_vec()).ok()?;
            Frame::File {
                name,
                size: c.u64()?,
            }
        }
        FILE_CHUNK => return Some(Frame::Chunk(payload[1..].to_vec())),
        FILES_END => Frame::FilesEnd(c.u32()?),
        _ => return None,
    };
    c.0.is_empty().then_some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(version: u64, kind: ChangeKind, key: &str, value: &str) -> Change {
        Change {
            kind,
            key: key.into(),
            value: value.into(),
            version,
            user_meta: 3,
            expires_at: 1_900_000_000,
        }
    }

    fn frames() -> Vec<Frame> {
        vec![
            Frame::File {
                name: "000001.sst".into(),
                size: 5,
            },
            Frame::Chunk(b"hello".to_vec()),
            Frame::FilesEnd(1),
            Frame::Changes(vec![
                change(7, ChangeKind::Put, "a", "1"),
                change(7, ChangeKind::Delete, "b", ""),
                change(8, ChangeKind::DeleteRange, "c", "d"),
                change(9, ChangeKind::Merge, "e", "op"),
            ]),
            Frame::Heartbeat(8),
        ]
    }

    #[test]
    fn every_frame_reads_back_as_written() {
        let mut buf = Vec::new();
        for f in frames() {
            encode(&f, &mut buf);
        }
        let mut r = FrameReader::new(buf.as_slice());
        for f in frames() {
            assert_eq!(r.next().ok(), Some(f));
        }
        assert!(
            matches!(r.next(), Err(WireError::Io(_))),
            "the end is an I/O error"
        );
    }

    #[test]
    fn a_flipped_byte_anywhere_is_damage_named_by_its_frame_offset() {
        let mut clean = Vec::new();
        for f in frames() {
            encode(&f, &mut clean);
        }
        for i in 0..clean.len() {
            let mut buf = clean.clone();
            buf[i] ^= 0x40;
            let mut r = FrameReader::new(buf.as_slice());
            let outcome = (0..frames().len()).map(|_| r.next()).find(|f| f.is_err());
            match outcome {
                Some(Err(WireError::Damaged { at, .. })) => assert!(at <= i as u64, "byte {i}"),
                // A flipped length byte can also make the stream end early.
                Some(Err(WireError::Io(_))) => {}
                other => panic!("byte {i} flipped was read as {other:?}"),
            }
        }
    }

    #[test]
    fn a_cut_stream_is_an_io_error_not_a_frame() {
        let mut buf = Vec::new();
        encode(&Frame::Heartbeat(9), &mut buf);
        buf.pop();
        assert!(matches!(
            FrameReader::new(buf.as_slice()).next(),
            Err(WireError::Io(_))
        ));
    }
}
