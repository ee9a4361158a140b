//! `WriteBatch`: an atomic group of puts and deletes, and its WAL encoding.

use crate::coding::{put_varint, Reader};
use crate::keyspace::{self, Shared};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// Per-entry settings of a put: a user-meta byte returned with the value, and a
/// time to live after which the entry reads as absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Stored with the value and returned in [`crate::Item::user_meta`].
    pub user_meta: u8,
    /// The entry expires this long after it is written (by the Db's clock).
    pub ttl: Option<Duration>,
}

/// One operation of a batch. Its key and small value are spans of the
/// batch's buffer (`WriteBatch::data`).
#[derive(Debug, Clone)]
pub(crate) struct BatchOp {
    pub key: Range<usize>,
    pub value: OpValue,
    pub user_meta: u8,
    pub ttl: Option<Duration>,
    /// Absolute expiry (unix seconds), used instead of `ttl` when non-zero
    /// (restores keep the original expiry).
    pub expires_at: u64,
    /// Which key space `key` is in, for validation.
    pub space: Space,
    /// The keyspace's value threshold, when it has its own.
    pub value_threshold: Option<usize>,
}

/// What a batch op writes at its key.
#[derive(Debug, Clone)]
pub(crate) enum OpValue {
    Delete,
    /// A value in the batch's buffer.
    Here(Range<usize>),
    /// A value of at least `OWN_BUFFER_AT` bytes, in its own buffer: the
    /// value log writes it from there instead of copying it again.
    Own(Vec<u8>),
    /// A range delete of `[key, end)` (an empty end is unbounded).
    RangeEnd(Range<usize>),
    /// A merge operand in the batch's buffer (always stored inline).
    Merge(Range<usize>),
}

impl OpValue {
    /// The length of a put's value; 0 for a delete or a range delete.
    fn value_len(&self) -> usize {
        match self {
            OpValue::Here(v) => v.len(),
            OpValue::Own(v) => v.len(),
            OpValue::Merge(v) => v.len(),
            OpValue::Delete | OpValue::RangeEnd(_) => 0,
        }
    }
}

/// Values at least this long get their own buffer (`OpValue::Own`).
const OWN_BUFFER_AT: usize = 4096;

/// Where a batch op's key lies: what [`crate::Db::write`] checks it against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// A default-keyspace key from a caller: must not start with the
    /// reserved marker.
    User,
    /// A keyspace's storage key (marker, id, user key).
    Keyspace,
    /// A storage key from inside the crate (restore, catalog): any key.
    Storage,
}

/// Puts and deletes applied atomically by [`crate::Db::write`]: after a crash,
/// recovery finds all of them or none. A later operation on the same key wins.
///
/// Keys and values are copied into one buffer, as RocksDB's `WriteBatch`
/// keeps its `rep_`: a batch of many small puts costs a few regrowths of
/// that buffer, not an allocation per key and per value.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    /// Keys, small values and range ends, back to back. A range delete
    /// leaves the bytes of the ops it removes here (not counted in `bytes`).
    pub(crate) data: Vec<u8>,
    pub(crate) ops: Vec<BatchOp>,
    bytes: usize,
    /// Keyspaces written: the batch is refused if one was dropped before
    /// its turn (checked where its version is handed out).
    pub(crate) keyspaces: Vec<Arc<Shared>>,
    /// Keyspaces this batch drops: marked dropped when its version is handed out.
    pub(crate) drops: Vec<Arc<Shared>>,
    /// The version to commit at, instead of the next one ([`WriteBatch::set_version`]).
    pub(crate) version: Option<u64>,
    /// Whether its commit fsyncs the logs, instead of the Db's
    /// [`crate::Options::sync_writes`] ([`WriteBatch::set_sync`]).
    pub(crate) sync: Option<bool>,
    /// Whether it holds a merge operand: such a batch is checked against
    /// the Db's merge operator, and ops on one key combined, before it
    /// commits (`DbInner::prepare_merges`).
    pub(crate) has_merge: bool,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Copies `bytes` into the buffer; returns their span.
    fn stash(&mut self, bytes: &[u8]) -> Range<usize> {
        let at = self.data.len();
        self.data.extend_from_slice(bytes);
        at..self.data.len()
    }

    /// Copies `bytes` into the buffer for a value made by the crate (a
    /// merge folded into an earlier op); returns their span.
    pub(crate) fn stash_bytes(&mut self, bytes: &[u8]) -> Range<usize> {
        self.stash(bytes)
    }

    /// The key of `op`, an op of this batch.
    pub(crate) fn key(&self, op: &BatchOp) -> &[u8] {
        &self.data[op.key.clone()]
    }

    /// The value of `op` (`None` for a delete or a range delete).
    pub(crate) fn value<'a>(&'a self, op: &'a BatchOp) -> Option<&'a [u8]> {
        match &op.value {
            OpValue::Here(v) => Some(&self.data[v.clone()]),
            OpValue::Own(v) => Some(v),
            OpValue::Delete | OpValue::RangeEnd(_) | OpValue::Merge(_) => None,
        }
    }

    /// The operand of `op`, if it is a merge.
    pub(crate) fn operand(&self, op: &BatchOp) -> Option<&[u8]> {
        match &op.value {
            OpValue::Merge(v) => Some(&self.data[v.clone()]),
            _ => None,
        }
    }

    /// The end of `op`'s range, if it is a range delete.
    pub(crate) fn range_end(&self, op: &BatchOp) -> Option<&[u8]> {
        match &op.value {
            OpValue::RangeEnd(end) => Some(&self.data[end.clone()]),
            _ => None,
        }
    }

    /// Adds a put (or a delete, `value` `None`) of `key`, already in `space`.
    pub(crate) fn push(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        opts: PutOptions,
        expires_at: u64,
        space: Space,
        value_threshold: Option<usize>,
    ) {
        self.bytes += key.len() + value.map_or(0, <[u8]>::len);
        let key = self.stash(key);
        let value = match value {
            None => OpValue::Delete,
            Some(v) if v.len() >= OWN_BUFFER_AT => OpValue::Own(v.to_vec()),
            Some(v) => OpValue::Here(self.stash(v)),
        };
        self.ops.push(BatchOp {
            key,
            value,
            user_meta: opts.user_meta,
            ttl: opts.ttl,
            expires_at,
            space,
            value_threshold,
        });
    }

    /// Adds a put of `key` → `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        self.put_with(key, value, PutOptions::default())
    }

    /// Adds a put with user meta and/or a time to live.
    pub fn put_with(
        &mut self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        opts: PutOptions,
    ) -> &mut Self {
        self.push(
            key.as_ref(),
            Some(value.as_ref()),
            opts,
            0,
            Space::User,
            None,
        );
        self
    }

    pub(crate) fn note_keyspace(&mut self, ks: &Arc<Shared>) {
        if !self.keyspaces.iter().any(|k| Arc::ptr_eq(k, ks)) {
            self.keyspaces.push(ks.clone());
        }
    }

    /// Adds a put that expires at an absolute time (unix seconds; 0 = never).
    pub(crate) fn put_raw(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        user_meta: u8,
        expires_at: u64,
    ) {
        let opts = PutOptions {
            user_meta,
            ttl: None,
        };
        self.push(key, value, opts, expires_at, Space::Storage, None);
    }

    /// Adds a merge of `operand` into `key` (see [`crate::Db::merge`]): the
    /// Db's merge operator folds it onto the key's value when it is read.
    /// Ops of one batch on one key combine in order, as separate writes
    /// would; [`crate::Db::write`] refuses the batch when the Db has no
    /// merge operator.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> &mut Self {
        self.push_merge(key.as_ref(), operand.as_ref(), Space::User);
        self
    }

    /// Adds a merge of a key already in `space`.
    pub(crate) fn push_merge(&mut self, key: &[u8], operand: &[u8], space: Space) {
        self.bytes += key.len() + operand.len();
        self.has_merge = true;
        let key = self.stash(key);
        let value = OpValue::Merge(self.stash(operand));
        self.ops.push(BatchOp {
            key,
            value,
            user_meta: 0,
            ttl: None,
            expires_at: 0,
            space,
            value_threshold: None,
        });
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.push(
            key.as_ref(),
            None,
            PutOptions::default(),
            0,
            Space::User,
            None,
        );
        self
    }

    /// Adds a delete of every key in `[start, end)` (RocksDB's DeleteRange):
    /// one record, whatever the number of keys. Operations added before it
    /// on keys in the range are removed from the batch (the range delete
    /// wins, as it would in order); later ones are kept. [`crate::Db::write`]
    /// refuses the batch unless `start < end`. It stays in the default
    /// keyspace: an `end` past the keyspaces' reserved prefix (`FF FF FF FF`)
    /// stops there, and a `start` in it is refused.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> &mut Self {
        let end = keyspace::clamp_default_end(end.as_ref().to_vec());
        self.push_range(start.as_ref(), &end, Space::User);
        self
    }

    /// A range delete over storage keys, from inside the crate.
    pub(crate) fn delete_range_raw(&mut self, start: &[u8], end: &[u8]) {
        self.push_range(start, end, Space::Storage);
    }

    /// A put (or delete, `value` `None`) of a key already in `space`.
    pub(crate) fn push_op(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        opts: PutOptions,
        space: Space,
        value_threshold: Option<usize>,
    ) {
        self.push(key, value, opts, 0, space, value_threshold);
    }

    /// A delete of one storage key, from inside the crate.
    pub(crate) fn delete_raw(&mut self, key: &[u8]) {
        self.push(key, None, PutOptions::default(), 0, Space::Storage, None);
    }

    /// Adds a range delete whose bounds are already in `space`.
    pub(crate) fn push_range(&mut self, start: &[u8], end: &[u8], space: Space) {
        let inside = |k: &[u8]| k >= start && (end.is_empty() || k < end);
        let (data, mut removed) = (&self.data, 0);
        self.ops.retain(|op| {
            let keep = matches!(op.value, OpValue::RangeEnd(_)) || !inside(&data[op.key.clone()]);
            if !keep {
                removed += op.key.len() + op.value.value_len();
            }
            keep
        });
        self.bytes -= removed;
        self.bytes += start.len() + end.len();
        let key = self.stash(start);
        let end = self.stash(end);
        self.ops.push(BatchOp {
            key,
            value: OpValue::RangeEnd(end),
            user_meta: 0,
            ttl: None,
            expires_at: 0,
            space,
            value_threshold: None,
        });
    }

    /// True when the batch holds a range delete.
    pub(crate) fn has_range_delete(&self) -> bool {
        self.ops
            .iter()
            .any(|op| matches!(op.value, OpValue::RangeEnd(_)))
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// True when the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Bytes of keys and values held.
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }

    /// Removes every operation (and the version set by [`WriteBatch::set_version`]).
    pub fn clear(&mut self) {
        self.data.clear();
        self.ops.clear();
        self.bytes = 0;
        self.keyspaces.clear();
        self.drops.clear();
        self.version = None;
        self.has_merge = false;
    }

    /// Commits the batch at exactly `version` instead of the Db's next one,
    /// and later writes continue from it: a replica keeps its master's
    /// versions, so that a version names the same state on every copy.
    /// [`crate::Db::write`] refuses the batch ([`crate::Error::InvalidArgument`])
    /// unless `version` is above every version the Db has handed out
    /// ([`crate::Db::last_version`] once writes are idle). Versions skipped
    /// over are never used. An empty batch commits nothing, at any version.
    pub fn set_version(&mut self, version: u64) -> &mut Self {
        self.version = Some(version);
        self
    }

    /// Chooses for this batch alone whether [`crate::Db::write`] fsyncs the
    /// value log and the WAL before it returns, whatever
    /// [`crate::Options::sync_writes`] says (RocksDB's `WriteOptions::sync`).
    /// A batch written without a sync is durable once a later synced write
    /// or [`crate::Db::sync`] returns: both cover every write before them.
    /// A replica applies its master's changes unsynced and syncs once per
    /// read off the socket, before it acknowledges them.
    pub fn set_sync(&mut self, sync: bool) -> &mut Self {
        self.sync = Some(sync);
        self
    }
}

/// Encodes the batch record of a WAL payload, whose entries already hold their
/// value records: `seq u64 | count u32 | count × (varint klen | key | varint vlen | value record)`.
#[cfg(test)]
pub(crate) fn encode_record(seq: u64, entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_body(&mut buf, seq, entries.iter().copied());
    buf
}

/// Encodes a WAL (version 2 and later) payload, appended to `buf`: `synced
/// u64 |` then the batch record, where `synced` is the WAL offset made
/// durable before this record was written.
pub(crate) fn encode_wal_record_to<'a>(
    buf: &mut Vec<u8>,
    synced: u64,
    seq: u64,
    entries: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    buf.extend_from_slice(&synced.to_le_bytes());
    encode_body(buf, seq, entries);
}

/// The sequence field of a WAL (version 5) payload whose entries carry
/// versions of their own: no batch commits at version 0.
pub(crate) const OWN_VERSIONS: u64 = 0;

/// Encodes a WAL (version 5) payload whose entries carry their own versions,
/// appended to `buf`: `synced u64 | 0 u64 | count u32 | count × (version u64 |
/// varint klen | key | varint vlen | value record)`. One record is replayed
/// whole or not at all, whatever versions it holds.
pub(crate) fn encode_versioned_wal_record_to<'a>(
    buf: &mut Vec<u8>,
    synced: u64,
    entries: impl Iterator<Item = (u64, &'a [u8], &'a [u8])>,
) {
    buf.extend_from_slice(&synced.to_le_bytes());
    encode_entries(buf, OWN_VERSIONS, entries.map(|(v, k, r)| (Some(v), k, r)));
}

fn encode_body<'a>(
    buf: &mut Vec<u8>,
    seq: u64,
    entries: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) {
    encode_entries(buf, seq, entries.map(|(k, v)| (None, k, v)));
}

/// `seq u64 | count u32 | count × ([version u64 |] varint klen | key | varint
/// vlen | value record)`, the version written where an entry has one.
fn encode_entries<'a>(
    buf: &mut Vec<u8>,
    seq: u64,
    entries: impl Iterator<Item = (Option<u64>, &'a [u8], &'a [u8])>,
) {
    buf.extend_from_slice(&seq.to_le_bytes());
    // The count is written once the entries are: the iterator need not know it.
    let at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    let mut n = 0u32;
    for (version, k, v) in entries {
        if let Some(version) = version {
            buf.extend_from_slice(&version.to_le_bytes());
        }
        put_varint(buf, k.len() as u64);
        buf.extend_from_slice(k);
        put_varint(buf, v.len() as u64);
        buf.extend_from_slice(v);
        n += 1;
    }
    buf[at..at + 4].copy_from_slice(&n.to_le_bytes());
}

/// Splits a WAL payload of `version` (1: no synced offset; 2: `synced u64` first)
/// into its synced offset and its batch record.
pub(crate) fn split_wal_payload(version: u32, payload: &[u8]) -> (Option<u64>, &[u8]) {
    if version < 2 {
        return (None, payload);
    }
    match payload.split_first_chunk::<8>() {
        Some((synced, rest)) => (Some(u64::from_le_bytes(*synced)), rest),
        None => (None, payload),
    }
}

/// A decoded WAL record: (version, key, value record) per entry. A batch's
/// entries share its sequence; a versioned record's carry their own.
pub(crate) struct DecodedRecord<'a> {
    /// The batch's sequence; `None` for a versioned record.
    pub seq: Option<u64>,
    pub entries: Vec<(u64, &'a [u8], &'a [u8])>,
}

/// Decodes a batch record; with `versioned` (WAL version 5 and later), a
/// record whose sequence is [`OWN_VERSIONS`] holds entries with versions of
/// their own. `None` if it is malformed.
pub(crate) fn decode_record(payload: &[u8], versioned: bool) -> Option<DecodedRecord<'_>> {
    let mut r = Reader::new(payload);
    let seq = r.u64()?;
    let own = versioned && seq == OWN_VERSIONS;
    let count = r.u32()? as usize;
    let mut entries = Vec::with_capacity(count.min(payload.len()));
    for _ in 0..count {
        let version = if own { r.u64()? } else { seq };
        let k = r.len_prefixed()?;
        let v = r.len_prefixed()?;
        entries.push((version, k, v));
    }
    let seq = (!own).then_some(seq);
    (r.remaining() == 0).then_some(DecodedRecord { seq, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips() {
        let e: Vec<(&[u8], &[u8])> = vec![(b"a", b"1"), (b"bb", b""), (b"", b"xyz")];
        let buf = encode_record(77, &e);
        for versioned in [false, true] {
            let d = decode_record(&buf, versioned).unwrap();
            assert_eq!(d.seq, Some(77));
            let want: Vec<_> = e.iter().map(|&(k, v)| (77, k, v)).collect();
            assert_eq!(d.entries, want);
        }
    }

    #[test]
    fn a_versioned_record_round_trips_only_where_the_wal_version_allows_it() {
        let e: Vec<(u64, &[u8], &[u8])> = vec![(9, b"k", b"2"), (4, b"k", b"1"), (7, b"j", b"")];
        let mut buf = Vec::new();
        encode_versioned_wal_record_to(&mut buf, 16, e.iter().copied());
        let (synced, payload) = split_wal_payload(5, &buf);
        assert_eq!(synced, Some(16));
        let d = decode_record(payload, true).unwrap();
        assert_eq!((d.seq, d.entries), (None, e));
        for cut in 0..payload.len() {
            assert!(decode_record(&payload[..cut], true).is_none());
        }
    }

    #[test]
    fn truncated_or_padded_record_is_rejected() {
        let buf = encode_record(1, &[(b"key", b"value")]);
        for cut in 0..buf.len() {
            assert!(decode_record(&buf[..cut], true).is_none());
        }
        let mut long = buf.clone();
        long.push(0);
        assert!(decode_record(&long, true).is_none());
    }

    #[test]
    fn batch_counts_ops_and_bytes() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"vv").delete(b"d");
        assert_eq!((b.len(), b.size_bytes()), (2, 4));
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn a_range_delete_removes_the_batch_s_earlier_writes_in_its_range_only() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1")
            .put(b"b", b"2")
            .delete(b"c")
            .put(b"d", b"4");
        b.delete_range(b"b", b"d");
        b.put(b"b", b"5");
        let keys: Vec<(&[u8], bool)> = b
            .ops
            .iter()
            .map(|o| (b.key(o), b.range_end(o).is_some()))
            .collect();
        assert_eq!(
            keys,
            vec![
                (&b"a"[..], false),
                (b"d", false),
                (b"b", true),
                (b"b", false)
            ]
        );
        assert_eq!(b.size_bytes(), 2 + 2 + 2 + 2);
        assert!(b.has_range_delete());
    }

    #[test]
    fn keys_small_values_and_large_values_read_back_from_one_buffer() {
        let mut b = WriteBatch::new();
        let big = vec![9u8; OWN_BUFFER_AT];
        b.put(b"k1", b"small")
            .put(b"k2", &big)
            .delete(b"k3")
            .delete_range(b"m", b"n");
        type Read<'a> = (&'a [u8], Option<&'a [u8]>, Option<&'a [u8]>);
        let got: Vec<Read<'_>> = b
            .ops
            .iter()
            .map(|o| (b.key(o), b.value(o), b.range_end(o)))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b"k1"[..], Some(&b"small"[..]), None),
                (b"k2", Some(&big[..]), None),
                (b"k3", None, None),
                (b"m", None, Some(&b"n"[..])),
            ]
        );
        assert!(matches!(b.ops[0].value, OpValue::Here(_)));
        assert!(
            matches!(b.ops[1].value, OpValue::Own(_)),
            "a large value keeps its own buffer"
        );
        assert_eq!(
            b.data.len(),
            2 + 5 + 2 + 2 + 1 + 1,
            "keys, the small value and the range end"
        );
        assert_eq!(b.size_bytes(), 2 + 5 + 2 + OWN_BUFFER_AT + 2 + 1 + 1);
        b.clear();
        assert!(b.data.is_empty() && b.is_empty());
    }
}
