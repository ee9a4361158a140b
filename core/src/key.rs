//! Internal keys: user key ++ big-endian (u64::MAX − seq).
//!
//! Newer versions of a key sort first, so a lookup at `read_seq` seeks to
//! `key@read_seq` and the first entry with the same user key is the answer.
//! Ordering compares the user key first and the suffix second; plain byte order
//! would be wrong when one user key is a prefix of another.

use std::cmp::Ordering;

/// Bytes of the version suffix.
pub(crate) const SUFFIX_LEN: usize = 8;
/// The largest sequence number; sorts before every real version of a key.
pub(crate) const MAX_SEQ: u64 = u64::MAX;

/// Encodes `user_key@seq`.
pub(crate) fn encode(user_key: &[u8], seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + SUFFIX_LEN);
    k.extend_from_slice(user_key);
    k.extend_from_slice(&suffix(seq));
    k
}

/// The bytes that follow the user key in `user_key@seq`.
pub(crate) fn suffix(seq: u64) -> [u8; SUFFIX_LEN] {
    (u64::MAX - seq).to_be_bytes()
}

/// Splits an internal key into user key and sequence. Callers only pass keys that
/// were validated to be at least `SUFFIX_LEN` long when they were read.
pub(crate) fn split(ikey: &[u8]) -> (&[u8], u64) {
    let cut = ikey.len().saturating_sub(SUFFIX_LEN);
    let mut suffix = [0u8; SUFFIX_LEN];
    suffix[SUFFIX_LEN - (ikey.len() - cut)..].copy_from_slice(&ikey[cut..]);
    (&ikey[..cut], u64::MAX - u64::from_be_bytes(suffix))
}

/// The user-key part of an internal key.
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(SUFFIX_LEN)]
}

/// The first of `n` internal keys in order (`key_at(i)`) that is not less
/// than `target`, or `n`: a binary search over a block's entries or a table's
/// index without collecting them.
pub(crate) fn lower_bound<'a>(
    n: usize,
    key_at: impl Fn(usize) -> &'a [u8],
    target: &[u8],
) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if compare(key_at(mid), target) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Orders internal keys: user key ascending, then version descending.
pub(crate) fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let (ua, ub) = (user_key(a), user_key(b));
    ua.cmp(ub).then_with(|| a[ua.len()..].cmp(&b[ub.len()..]))
}

/// A borrowed internal key with the internal ordering; lets the memtable be
/// searched without allocating.
#[repr(transparent)]
#[derive(PartialEq, Eq)]
pub(crate) struct KeyRef([u8]);

impl KeyRef {
    pub(crate) fn new(bytes: &[u8]) -> &KeyRef {
        // SAFETY: KeyRef is a repr(transparent) wrapper around [u8], so the two
        // references have the same layout and the lifetime is carried over.
        unsafe { &*(bytes as *const [u8] as *const KeyRef) }
    }
}

impl Ord for KeyRef {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The smallest byte string greater than every string starting with `prefix`,
/// or `None` if there is none (the prefix is all 0xff).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first() {
        assert_eq!(compare(&encode(b"k", 9), &encode(b"k", 3)), Ordering::Less);
        assert_eq!(compare(&encode(b"k", 3), &encode(b"k", 3)), Ordering::Equal);
    }

    #[test]
    fn prefix_user_keys_sort_before_longer_keys_whatever_the_version() {
        // Byte order alone would put "a"@1 (suffix 0xff..fe) after "ab".
        assert_eq!(compare(&encode(b"a", 1), &encode(b"ab", 7)), Ordering::Less);
        assert_eq!(
            compare(&encode(b"ab", 1), &encode(b"a", 7)),
            Ordering::Greater
        );
    }

    #[test]
    fn split_inverts_encode() {
        let k = encode(b"user", 42);
        assert_eq!(split(&k), (&b"user"[..], 42));
        assert_eq!(split(&encode(b"", MAX_SEQ)), (&b""[..], MAX_SEQ));
    }

    #[test]
    fn prefix_successor_handles_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
    }
}
