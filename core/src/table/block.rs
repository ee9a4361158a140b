//! Data blocks: entries with shared-prefix key compression and restart points.
//!
//! Entry: `varint shared | varint unshared | varint vlen | key[shared..] | value`.
//! After the entries: restart offsets (u32 LE each), then their count (u32 LE).
//! An entry at a restart point stores its whole key (shared = 0).

use crate::coding::{get_varint, put_varint, u32_at};
use crate::key;
use std::cmp::Ordering;
use std::ops::Range;

/// Entries between restart points.
const RESTART_INTERVAL: usize = 16;

pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    last_key: Vec<u8>,
    since_restart: usize,
}

impl BlockBuilder {
    pub(crate) fn new() -> BlockBuilder {
        BlockBuilder {
            buf: Vec::with_capacity(8 << 10),
            restarts: Vec::new(),
            last_key: Vec::new(),
            since_restart: 0,
        }
    }

    /// Adds an entry; keys must come in increasing internal order.
    pub(crate) fn add(&mut self, k: &[u8], v: &[u8]) {
        let shared = if self.since_restart == RESTART_INTERVAL || self.buf.is_empty() {
            self.restarts.push(self.buf.len() as u32);
            self.since_restart = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(k)
                .take_while(|(a, b)| a == b)
                .count()
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (k.len() - shared) as u64);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(&k[shared..]);
        self.buf.extend_from_slice(v);
        self.last_key.clear();
        self.last_key.extend_from_slice(k);
        self.since_restart += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// An upper bound on the size after adding an entry of these lengths.
    pub(crate) fn size_with(&self, key_len: usize, value_len: usize) -> usize {
        // Three varints of at most 5 bytes each, and perhaps a restart point.
        self.estimated_size() + 15 + 4 + key_len + value_len
    }

    pub(crate) fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finishes the block and returns its bytes; the builder is reset.
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.last_key.clear();
        self.since_restart = 0;
        self.buf = Vec::with_capacity(out.len());
        out
    }
}

/// A block decoded for iteration: keys rebuilt into one arena, values as ranges
/// of the block's bytes. Decoded whole (`decode_into`) or entry by entry as a
/// forward walk reaches them (`start`, `decode_next`): a short scan that reads
/// a few entries of a block decodes only those.
#[derive(Default)]
pub(crate) struct DecodedBlock {
    keys: Vec<u8>,
    key_ends: Vec<u32>,
    values: Vec<Range<u32>>,
    /// Offset of the first entry not decoded yet.
    next: usize,
    /// Where the entries end (the restart array begins).
    entries_end: usize,
    /// Where the last decoded key starts in `keys`.
    prev_start: usize,
}

impl DecodedBlock {
    /// Decodes every entry; `None` if the block is malformed.
    pub(crate) fn decode(data: &[u8]) -> Option<DecodedBlock> {
        let mut d = DecodedBlock::default();
        d.decode_into(data).then_some(d)
    }

    /// Decodes every entry into this block's buffers, replacing what they
    /// held: an iterator stepping from block to block allocates nothing once
    /// its buffers are large enough. False if the block is malformed (the
    /// block is then empty).
    pub(crate) fn decode_into(&mut self, data: &[u8]) -> bool {
        let ok = self.start(data) && {
            self.keys.reserve(self.entries_end);
            self.decode_rest(data).is_some()
        };
        if !ok {
            self.clear();
        }
        ok
    }

    /// Readies the block for `decode_next` and decodes its first entry. False
    /// if the block's trailer is malformed or it has no entry (the block is
    /// then empty).
    pub(crate) fn start(&mut self, data: &[u8]) -> bool {
        self.clear();
        let Some(end) = entries_end(data) else {
            return false;
        };
        self.entries_end = end;
        // Room for a restart interval's entries at once: a new iterator's
        // first block otherwise grows its buffers by a chain of reallocations.
        self.keys.reserve(end.min(512));
        self.key_ends.reserve(RESTART_INTERVAL);
        self.values.reserve(RESTART_INTERVAL);
        let ok = matches!(self.decode_next(data), Some(true));
        if !ok {
            self.clear();
        }
        ok
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.key_ends.clear();
        self.values.clear();
        self.next = 0;
        self.entries_end = 0;
        self.prev_start = 0;
    }

    /// True once every entry is decoded.
    pub(crate) fn complete(&self) -> bool {
        self.next >= self.entries_end
    }

    fn decode_rest(&mut self, data: &[u8]) -> Option<()> {
        // At most RESTART_INTERVAL entries per restart point: one allocation
        // each, not a chain of doublings (bounded by what the bytes can hold).
        let n = u32_at(data, data.len().checked_sub(4)?)? as usize;
        let most = n
            .saturating_mul(RESTART_INTERVAL)
            .min(self.entries_end / 3 + 1);
        self.key_ends
            .reserve(most.saturating_sub(self.key_ends.len()));
        self.values.reserve(most.saturating_sub(self.values.len()));
        while self.decode_next(data)? {}
        Some(())
    }

    /// Decodes the next entry of `data` (the bytes given to `start`): true if
    /// there was one, false if every entry is decoded, `None` if it is
    /// malformed.
    pub(crate) fn decode_next(&mut self, data: &[u8]) -> Option<bool> {
        let (entries_end, mut pos) = (self.entries_end, self.next);
        if pos >= entries_end {
            return Some(false);
        }
        let (shared, a) = get_varint(data.get(pos..entries_end)?)?;
        pos += a;
        let (unshared, b) = get_varint(data.get(pos..entries_end)?)?;
        pos += b;
        let (vlen, c) = get_varint(data.get(pos..entries_end)?)?;
        pos += c;
        let (shared, unshared, vlen) = (shared as usize, unshared as usize, vlen as usize);
        let d = self;
        let prev_len = d.keys.len() - d.prev_start;
        if shared > prev_len {
            return None;
        }
        let start = d.keys.len();
        d.keys
            .extend_from_within(d.prev_start..d.prev_start + shared);
        d.keys
            .extend_from_slice(data.get(pos..pos.checked_add(unshared)?)?);
        pos += unshared;
        if d.keys.len() - start < key::SUFFIX_LEN {
            return None;
        }
        let vend = pos.checked_add(vlen)?;
        if vend > entries_end {
            return None;
        }
        d.values.push(pos as u32..vend as u32);
        d.key_ends.push(d.keys.len() as u32);
        d.prev_start = start;
        d.next = vend;
        Some(true)
    }

    /// Decodes entries of `data` until one is ≥ `target` or none is left;
    /// returns the index of the first decoded key ≥ `target` (`len()` if
    /// none), or `None` if the block is malformed.
    pub(crate) fn seek_decoding(&mut self, data: &[u8], target: &[u8]) -> Option<usize> {
        while self
            .len()
            .checked_sub(1)
            .is_none_or(|last| key::compare(self.key(last), target) == Ordering::Less)
        {
            if !self.decode_next(data)? {
                break;
            }
        }
        Some(self.lower_bound(target))
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 {
            0
        } else {
            self.key_ends[i - 1] as usize
        };
        &self.keys[start..self.key_ends[i] as usize]
    }

    pub(crate) fn value_range(&self, i: usize) -> Range<usize> {
        self.values[i].start as usize..self.values[i].end as usize
    }

    /// Index of the first key ≥ `target` (may be `len()`).
    pub(crate) fn lower_bound(&self, target: &[u8]) -> usize {
        key::lower_bound(self.len(), |i| self.key(i), target)
    }
}

/// Where the entries of a block end (its restart array begins), `None` if its
/// trailer is malformed.
fn entries_end(data: &[u8]) -> Option<usize> {
    let n = u32_at(data, data.len().checked_sub(4)?)? as usize;
    data.len().checked_sub(4 + n.checked_mul(4)?)
}

/// Decodes the entry at `pos` into `key` (which holds the previous key);
/// returns the value range and the offset of the next entry.
fn decode_entry(
    data: &[u8],
    entries_end: usize,
    pos: usize,
    key: &mut Vec<u8>,
) -> Option<(Range<usize>, usize)> {
    let mut p = pos;
    let (shared, a) = get_varint(data.get(p..entries_end)?)?;
    p += a;
    let (unshared, b) = get_varint(data.get(p..entries_end)?)?;
    p += b;
    let (vlen, c) = get_varint(data.get(p..entries_end)?)?;
    p += c;
    let (shared, unshared, vlen) = (shared as usize, unshared as usize, vlen as usize);
    if shared > key.len() {
        return None;
    }
    key.truncate(shared);
    key.extend_from_slice(data.get(p..p.checked_add(unshared)?)?);
    p += unshared;
    let vend = p.checked_add(vlen)?;
    if vend > entries_end || key.len() < key::SUFFIX_LEN {
        return None;
    }
    Some((p..vend, vend))
}

/// Point lookup without decoding the whole block: binary search over the restart
/// points, then a short scan. Returns the first entry with key ≥ `target` as
/// (key, value range), `Some(None)` if every key is smaller, `None` if the block
/// is malformed.
pub(crate) fn seek(data: &[u8], target: &[u8]) -> Option<Option<(Vec<u8>, Range<usize>)>> {
    let n = u32_at(data, data.len().checked_sub(4)?)? as usize;
    let restarts_at = data.len().checked_sub(4 + n.checked_mul(4)?)?;
    if n == 0 {
        return None;
    }
    let restart = |i: usize| -> Option<usize> {
        let off = u32_at(data, restarts_at + 4 * i)? as usize;
        (off < restarts_at).then_some(off)
    };
    let mut key = Vec::with_capacity(target.len() + 16);
    // Last restart point whose key is < target.
    let (mut lo, mut hi) = (0usize, n - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        key.clear();
        decode_entry(data, restarts_at, restart(mid)?, &mut key)?;
        if key::compare(&key, target) == Ordering::Less {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    key.clear();
    let mut pos = restart(lo)?;
    while pos < restarts_at {
        let (value, next) = decode_entry(data, restarts_at, pos, &mut key)?;
        if key::compare(&key, target) != Ordering::Less {
            return Some(Some((key, value)));
        }
        pos = next;
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(n: u32) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut b = BlockBuilder::new();
        let mut keys = Vec::new();
        for i in 0..n {
            let k = key::encode(format!("key{i:05}").as_bytes(), 7);
            b.add(&k, format!("v{i}").as_bytes());
            keys.push(k);
        }
        (b.finish(), keys)
    }

    #[test]
    fn decoded_block_returns_every_entry_with_shared_prefixes() {
        let (data, keys) = build(100);
        let d = DecodedBlock::decode(&data).unwrap();
        assert_eq!(d.len(), 100);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(d.key(i), &k[..]);
            assert_eq!(&data[d.value_range(i)], format!("v{i}").as_bytes());
        }
        assert_eq!(d.lower_bound(&keys[37]), 37);
        assert_eq!(d.lower_bound(&key::encode(b"key00037x", 1)), 38);
        assert_eq!(d.lower_bound(&key::encode(b"zzz", 1)), 100);
        for (i, k) in keys.iter().enumerate() {
            let (got, v) = seek(&data, k).unwrap().unwrap();
            assert_eq!((&got, &data[v]), (k, format!("v{i}").as_bytes()));
        }
        let (got, _) = seek(&data, &key::encode(b"key00037x", 1)).unwrap().unwrap();
        assert_eq!(got, keys[38]);
        assert_eq!(
            seek(&data, &key::encode(b"a", 1)).unwrap().unwrap().0,
            keys[0]
        );
        assert!(seek(&data, &key::encode(b"zzz", 1)).unwrap().is_none());
    }

    #[test]
    fn malformed_blocks_are_rejected_without_panic() {
        let (data, _) = build(40);
        for cut in 0..data.len() {
            let _ = DecodedBlock::decode(&data[..cut]);
        }
        for i in 0..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0xff;
            let _ = DecodedBlock::decode(&bad);
            let _ = seek(&bad, &key::encode(b"key00020", 1));
        }
        assert!(DecodedBlock::decode(&[]).is_none());
        assert!(DecodedBlock::decode(&[0, 0, 0, 0]).is_none());
    }

    #[test]
    fn a_block_decoded_into_reused_buffers_holds_only_its_own_entries() {
        let (big, _) = build(100);
        let (small, keys) = build(3);
        let mut d = DecodedBlock::default();
        assert!(d.decode_into(&big));
        assert!(d.decode_into(&small));
        assert_eq!(d.len(), 3);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(d.key(i), &k[..]);
            assert_eq!(&small[d.value_range(i)], format!("v{i}").as_bytes());
        }
        // A malformed block leaves nothing of the one before it.
        assert!(!d.decode_into(&big[..big.len() / 2]));
        assert_eq!(d.len(), 0);
        assert!(d.decode_into(&big));
        assert_eq!(d.len(), 100);
    }
}
