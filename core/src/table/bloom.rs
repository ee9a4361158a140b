//! Bloom filter on user keys (without version), one per table.
//!
//! Layout: the bit array, then one byte holding the number of probes `k`.
//! Probes use double hashing of one 64-bit hash. An empty filter matches everything.

/// A 64-bit hash of `data` (our own; stable across builds because filters are stored).
pub(crate) fn hash(data: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (data.len() as u64).wrapping_mul(K) ^ 0x2545_F491_4F6C_DD1D;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ v.wrapping_mul(K)).rotate_left(29).wrapping_mul(K);
    }
    let mut tail = 0u64;
    for (i, &b) in chunks.remainder().iter().enumerate() {
        tail |= u64::from(b) << (8 * i);
    }
    h = (h ^ tail.wrapping_mul(K)).rotate_left(29).wrapping_mul(K);
    // splitmix64 finalizer for avalanche.
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// Builds a filter over key hashes with `bits_per_key` bits each.
pub(crate) fn build(hashes: &[u64], bits_per_key: usize) -> Vec<u8> {
    if bits_per_key == 0 || hashes.is_empty() {
        return Vec::new();
    }
    let k = ((bits_per_key as f64 * 0.69) as usize).clamp(1, 30);
    let nbits = (hashes.len() * bits_per_key).max(64);
    let nbytes = nbits.div_ceil(8);
    let nbits = (nbytes * 8) as u64;
    let mut out = vec![0u8; nbytes + 1];
    for &h in hashes {
        let (mut a, b) = (h, h.rotate_right(33) | 1);
        for _ in 0..k {
            let bit = a % nbits;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
            a = a.wrapping_add(b);
        }
    }
    out[nbytes] = k as u8;
    out
}

/// False only if the key with hash `h` is surely not in the filter.
pub(crate) fn may_contain(filter: &[u8], h: u64) -> bool {
    let Some((&k, bits)) = filter.split_last() else {
        return true;
    };
    if bits.is_empty() || k == 0 || k > 30 {
        // Not a filter this build writes: do not skip the table because of it.
        return true;
    }
    let nbits = (bits.len() * 8) as u64;
    let (mut a, b) = (h, h.rotate_right(33) | 1);
    for _ in 0..k {
        let bit = a % nbits;
        if bits[(bit / 8) as usize] & (1 << (bit % 8)) == 0 {
            return false;
        }
        a = a.wrapping_add(b);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_added_key_matches() {
        let keys: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| format!("key{i}").into_bytes())
            .collect();
        let f = build(&keys.iter().map(|k| hash(k)).collect::<Vec<_>>(), 10);
        assert!(keys.iter().all(|k| may_contain(&f, hash(k))));
    }

    #[test]
    fn false_positive_rate_is_about_one_percent_at_ten_bits() {
        let hashes: Vec<u64> = (0..10_000u32)
            .map(|i| hash(format!("in{i}").as_bytes()))
            .collect();
        let f = build(&hashes, 10);
        let fp = (0..10_000u32)
            .filter(|i| may_contain(&f, hash(format!("out{i}").as_bytes())))
            .count();
        assert!(fp < 250, "false positives: {fp} of 10000");
    }

    #[test]
    fn empty_or_foreign_filter_matches_everything() {
        assert!(may_contain(&[], 42));
        assert!(may_contain(&[0, 0, 0, 99], 42));
    }
}
