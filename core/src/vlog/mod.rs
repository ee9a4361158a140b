//! The value log: append-only files holding the values of at least
//! `value_threshold` bytes, each entry written once and pointed to by the tree.
//!
//! An entry is `crc32 (u32 LE) | klen (u32 LE) | vlen (u32 LE) | key | value`,
//! the CRC covering everything after itself. The key is kept so that garbage
//! collection can ask the tree whether the entry is still live.

mod reader;
mod writer;

#[cfg(test)]
pub(crate) use reader::SCAN_READS;
pub(crate) use reader::{ScanAhead, VlogFile, VlogSet, WalkEnd};
pub(crate) use writer::VlogWriter;

/// Magic of a value-log file header.
pub(crate) const MAGIC: &[u8; 8] = b"SETTVLOG";
/// Format version of value-log files.
pub(crate) const VERSION: u32 = 1;
/// Bytes before the key in an entry.
pub(crate) const ENTRY_HEADER_LEN: usize = 12;

/// Appends an entry for `key` → `value` to `buf`.
pub(crate) fn encode_entry(buf: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let start = buf.len();
    buf.extend_from_slice(&[0; 4]);
    buf.extend_from_slice(&(key.len() as u32).to_le_bytes());
    buf.extend_from_slice(&(value.len() as u32).to_le_bytes());
    buf.extend_from_slice(key);
    buf.extend_from_slice(value);
    let crc = crc32fast::hash(&buf[start + 4..]);
    buf[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

/// Checks one entry held whole in `bytes`; returns the lengths of key and value.
/// The error text says what is wrong; callers add file and offset.
pub(crate) fn check_entry(bytes: &[u8]) -> Result<(usize, usize), &'static str> {
    let (Some(crc), Some(klen), Some(vlen)) = (
        crate::coding::u32_at(bytes, 0),
        crate::coding::u32_at(bytes, 4),
        crate::coding::u32_at(bytes, 8),
    ) else {
        return Err("entry shorter than its header");
    };
    let (klen, vlen) = (klen as usize, vlen as usize);
    if ENTRY_HEADER_LEN + klen + vlen != bytes.len() {
        return Err("entry lengths do not match the pointer");
    }
    if crc32fast::hash(&bytes[4..]) != crc {
        return Err("entry checksum mismatch");
    }
    Ok((klen, vlen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips_and_detects_flips() {
        let mut buf = Vec::new();
        encode_entry(&mut buf, b"key", b"value bytes");
        assert_eq!(check_entry(&buf), Ok((3, 11)));
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x10;
            assert!(check_entry(&bad).is_err(), "flip at {i} undetected");
        }
        assert!(check_entry(&buf[..buf.len() - 1]).is_err());
    }

    #[test]
    fn copied_and_handed_over_values_interleave_in_file_order() {
        let dir = std::env::temp_dir().join(format!("sett-vlog-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut w = VlogWriter::create(&crate::fs::Fs::real(), &dir, 1).unwrap();
        let mut written = Vec::new();
        // Sizes on both sides of the hand-over threshold, over two flushes.
        for (i, len) in [10usize, 5000, 20, 70_000, 4096, 4095, 1]
            .into_iter()
            .enumerate()
        {
            let key = format!("k{i}").into_bytes();
            let value: Vec<u8> = (0..len).map(|j| (i * 7 + j) as u8).collect();
            let p = if i % 2 == 0 {
                w.append(&key, &value)
            } else {
                w.append_owned(&key, value.clone())
            };
            written.push((p, value));
            if i == 3 {
                w.flush().unwrap();
            }
        }
        w.sync().unwrap();
        for sealed in [false, true] {
            let path = crate::filename::vlog(&dir, 1);
            let f = if sealed {
                VlogFile::open_sealed(&crate::fs::Fs::real(), &path, 1).unwrap()
            } else {
                VlogFile::open(&crate::fs::Fs::real(), &path, 1).unwrap()
            };
            for (p, value) in &written {
                assert_eq!(
                    &f.read(*p).unwrap(),
                    value,
                    "pointer {p:?}, sealed {sealed}"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
