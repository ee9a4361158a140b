//! The value stored beside an internal key in the memtable, the WAL and SSTs:
//! a tombstone, an inline value, or a pointer into the value log.

use crate::coding::{put_varint, Reader};

const KIND_DELETE: u8 = 0;
const KIND_INLINE: u8 = 1;
const KIND_POINTER: u8 = 2;
/// A range delete in a WAL batch record: the entry's key is the range's start
/// and the record holds its end. Never in a memtable or a table, so
/// [`decode`] refuses it.
const KIND_RANGE_DELETE: u8 = 3;
/// A merge operand (`Db::merge`): always inline, folded on reads and in
/// compaction onto the value below it.
const KIND_MERGE: u8 = 4;

/// The WAL value record of a range delete ending at `end` (exclusive; empty
/// is unbounded).
pub(crate) fn encode_range_delete(buf: &mut Vec<u8>, end: &[u8]) {
    buf.push(KIND_RANGE_DELETE);
    buf.push(0);
    put_varint(buf, 0);
    buf.extend_from_slice(end);
}

/// The end of a range delete's record, or `None` if `src` is not one.
pub(crate) fn decode_range_delete(src: &[u8]) -> Option<&[u8]> {
    match src {
        [KIND_RANGE_DELETE, 0, 0, end @ ..] => Some(end),
        _ => None,
    }
}

/// Where a separated value lives: file id, offset of its value-log entry, entry length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ValuePointer {
    pub file: u32,
    pub offset: u64,
    pub len: u32,
}

/// The decoded form of a stored value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stored<'a> {
    Delete,
    Inline(&'a [u8]),
    Pointer(ValuePointer),
    /// A merge operand.
    Merge(&'a [u8]),
}

impl Stored<'_> {
    /// True for a merge operand.
    pub(crate) fn is_merge(&self) -> bool {
        matches!(self, Stored::Merge(_))
    }
}

/// True when the encoded record `src` is a merge operand: one byte read,
/// for the paths that only need to know.
pub(crate) fn is_merge(src: &[u8]) -> bool {
    src.first() == Some(&KIND_MERGE)
}

/// A decoded value record: what it is plus the per-entry fields kept for TTL and
/// user meta (written as 0 until those features exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueRecord<'a> {
    pub stored: Stored<'a>,
    pub user_meta: u8,
    pub expires_at: u64,
}

impl ValueRecord<'_> {
    /// Whether the record's time to live has run out at `now` (seconds since
    /// the epoch); 0 is "never expires".
    pub(crate) fn expired(&self, now: u64) -> bool {
        !self.stored.is_merge() && self.expires_at != 0 && self.expires_at <= now
    }

    /// For a merge operand that compaction folded from a run of operands:
    /// the version of the oldest one (the record stands for every version
    /// of its key from there up to its own). 0 otherwise. Operands keep it
    /// in the expiry field, which they do not use.
    pub(crate) fn merge_floor(&self) -> u64 {
        if self.stored.is_merge() {
            self.expires_at
        } else {
            0
        }
    }
}

/// The version below which a read goes on after the record `raw` of a key
/// at `seq`: past the operands a folded operand stands for.
pub(crate) fn next_below(seq: u64, raw: &[u8]) -> u64 {
    match decode(raw).map(|r| r.merge_floor()) {
        Some(floor) if floor > 0 && floor < seq => floor,
        _ => seq,
    }
}

/// Encodes a value record into `buf`.
pub(crate) fn encode(buf: &mut Vec<u8>, stored: &Stored<'_>, user_meta: u8, expires_at: u64) {
    let kind = match stored {
        Stored::Delete => KIND_DELETE,
        Stored::Inline(_) => KIND_INLINE,
        Stored::Pointer(_) => KIND_POINTER,
        Stored::Merge(_) => KIND_MERGE,
    };
    buf.push(kind);
    buf.push(user_meta);
    put_varint(buf, expires_at);
    match stored {
        Stored::Delete => {}
        Stored::Inline(v) | Stored::Merge(v) => buf.extend_from_slice(v),
        Stored::Pointer(p) => {
            buf.extend_from_slice(&p.file.to_le_bytes());
            buf.extend_from_slice(&p.offset.to_le_bytes());
            buf.extend_from_slice(&p.len.to_le_bytes());
        }
    }
}

/// Decodes a value record; `None` if the bytes are not one.
pub(crate) fn decode(src: &[u8]) -> Option<ValueRecord<'_>> {
    let mut r = Reader::new(src);
    let kind = r.u8()?;
    let user_meta = r.u8()?;
    let expires_at = r.varint()?;
    let stored = match kind {
        KIND_DELETE if r.remaining() == 0 => Stored::Delete,
        KIND_INLINE => Stored::Inline(r.bytes(r.remaining())?),
        KIND_POINTER if r.remaining() == 16 => Stored::Pointer(ValuePointer {
            file: r.u32()?,
            offset: r.u64()?,
            len: r.u32()?,
        }),
        KIND_MERGE => Stored::Merge(r.bytes(r.remaining())?),
        _ => return None,
    };
    Some(ValueRecord {
        stored,
        user_meta,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_expires_at_its_second_and_zero_never_expires() {
        let rec = |expires_at| ValueRecord {
            stored: Stored::Delete,
            user_meta: 0,
            expires_at,
        };
        assert!(!rec(0).expired(u64::MAX));
        assert!(!rec(100).expired(99));
        assert!(rec(100).expired(100));
        assert!(rec(100).expired(101));
    }

    #[test]
    fn each_kind_round_trips() {
        let p = ValuePointer {
            file: 7,
            offset: 1 << 40,
            len: 99,
        };
        for s in [
            Stored::Delete,
            Stored::Inline(b"hello"),
            Stored::Inline(b""),
            Stored::Pointer(p),
            Stored::Merge(b"+1"),
        ] {
            let mut buf = Vec::new();
            encode(&mut buf, &s, 3, 12345);
            let d = decode(&buf).unwrap();
            assert_eq!(d.stored, s);
            assert_eq!((d.user_meta, d.expires_at), (3, 12345));
        }
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[9, 0, 0]), None);
        assert_eq!(decode(&[KIND_POINTER, 0, 0, 1, 2]), None);
        assert_eq!(decode(&[KIND_DELETE, 0, 0, 1]), None);
    }
}
