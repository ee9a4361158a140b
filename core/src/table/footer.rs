//! The fixed-size footer that ends every table: where the index and filter
//! blocks are, what the table holds, and its format version. Written by the
//! builder and read by the reader from this one definition (LevelDB's
//! table/format.h).

use super::{MAGIC, MIN_VERSION, VERSION};
use crate::coding::Reader;

/// Bytes of the footer.
pub(crate) const LEN: usize = 56;
/// Offset of the crc within the footer (it covers the bytes before it).
const CRC_AT: usize = 44;
/// Offset of the magic within the footer.
const MAGIC_AT: usize = 48;

/// Where a block lies in the file: offset and length (without its crc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handle {
    pub offset: u64,
    pub len: u32,
}

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footer {
    pub index: Handle,
    pub filter: Handle,
    /// Entries (versions) in the table.
    pub entries: u64,
    /// Largest sequence number in the table.
    pub max_seq: u64,
    /// Format version the table was written in.
    pub version: u32,
}

/// Why a footer was refused, with the offset within the footer it concerns.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Bad {
    Unreadable,
    Magic { at: usize },
    Checksum { at: usize },
    Version(u32),
}

impl Footer {
    /// The footer's bytes, in the current format version.
    pub(crate) fn encode(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        let fields: [&[u8]; 7] = [
            &self.index.offset.to_le_bytes(),
            &self.index.len.to_le_bytes(),
            &self.filter.offset.to_le_bytes(),
            &self.filter.len.to_le_bytes(),
            &self.entries.to_le_bytes(),
            &self.max_seq.to_le_bytes(),
            &self.version.to_le_bytes(),
        ];
        let mut at = 0;
        for f in fields {
            out[at..at + f.len()].copy_from_slice(f);
            at += f.len();
        }
        let crc = crc32fast::hash(&out[..CRC_AT]);
        out[CRC_AT..MAGIC_AT].copy_from_slice(&crc.to_le_bytes());
        out[MAGIC_AT..].copy_from_slice(&MAGIC.to_le_bytes());
        out
    }

    /// Parses and checks a footer: magic first (is this a table at all?), then
    /// its crc, then a version this build reads.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer, Bad> {
        if bytes.len() != LEN {
            return Err(Bad::Unreadable);
        }
        let mut r = Reader::new(bytes);
        let mut fields = || {
            let footer = Footer {
                index: Handle {
                    offset: r.u64()?,
                    len: r.u32()?,
                },
                filter: Handle {
                    offset: r.u64()?,
                    len: r.u32()?,
                },
                entries: r.u64()?,
                max_seq: r.u64()?,
                version: r.u32()?,
            };
            Some((footer, r.u32()?, r.u64()?))
        };
        let (footer, crc, magic) = fields().ok_or(Bad::Unreadable)?;
        if magic != MAGIC {
            return Err(Bad::Magic { at: MAGIC_AT });
        }
        if crc != crc32fast::hash(&bytes[..CRC_AT]) {
            return Err(Bad::Checksum { at: CRC_AT });
        }
        if !(MIN_VERSION..=VERSION).contains(&footer.version) {
            return Err(Bad::Version(footer.version));
        }
        Ok(footer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Footer {
        Footer {
            index: Handle {
                offset: 1 << 33,
                len: 77,
            },
            filter: Handle {
                offset: 4096,
                len: 12,
            },
            entries: 5,
            max_seq: u64::MAX - 1,
            version: VERSION,
        }
    }

    #[test]
    fn a_footer_reads_back_as_written() {
        let f = sample();
        assert_eq!(Footer::decode(&f.encode()), Ok(f));
    }

    #[test]
    fn damaged_magic_crc_or_unknown_version_are_refused_each_by_name() {
        let mut b = sample().encode();
        b[MAGIC_AT] ^= 1;
        assert_eq!(Footer::decode(&b), Err(Bad::Magic { at: MAGIC_AT }));
        let mut b = sample().encode();
        b[3] ^= 1;
        assert_eq!(Footer::decode(&b), Err(Bad::Checksum { at: CRC_AT }));
        let newer = Footer {
            version: VERSION + 1,
            ..sample()
        };
        assert_eq!(
            Footer::decode(&newer.encode()),
            Err(Bad::Version(VERSION + 1))
        );
        let v1 = Footer {
            version: 1,
            ..sample()
        };
        assert_eq!(Footer::decode(&v1.encode()), Ok(v1));
        assert_eq!(Footer::decode(&b[1..]), Err(Bad::Unreadable));
    }
}
