//! Compression of data blocks (table format version 3).
//!
//! A version-3 data block as stored is `payload | type byte`, and the block's
//! crc32 covers both, so damage is found before anything is decompressed.
//! Type 0: the payload is the block itself. Type 1 (LZ4 block format) and 2
//! (zstd frame): the payload is `varint uncompressed length | compressed bytes`.
//! A block that a codec does not shrink by at least an eighth is stored as
//! type 0 (RocksDB's rule): reading it then costs no copy.
//!
//! Reading a compressed block decompresses it into an owned buffer, which the
//! table reader keeps in the block cache (`crate::cache`); uncompressed
//! blocks stay zero-copy slices of the mapping.

use crate::coding::{get_varint, put_varint};
use std::cell::RefCell;

/// How table data blocks are compressed. Index and filter blocks never are.
/// More codecs may be added (hence `non_exhaustive`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Blocks stored as they are (tables keep format version 2). The default.
    #[default]
    None,
    /// LZ4 block format (`lz4_flex`): fast, about 2x on text-like data.
    Lz4,
    /// zstd at `Options::zstd_level`: slower, smaller.
    Zstd,
}

impl Compression {
    /// The type byte stored after a version-3 block's payload.
    pub(crate) fn type_byte(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
            Compression::Zstd => 2,
        }
    }

    /// The codec's name, as options and `sett-bench engine` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses `none`, `lz4` or `zstd`.
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "none" => Some(Compression::None),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Keyspace id → the codec its keys' blocks use (keyspaces that chose one).
pub(crate) type KeyspaceCodecs = std::sync::Arc<std::collections::HashMap<u32, Compression>>;

/// What a table builder compresses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Codec {
    pub compression: Compression,
    pub zstd_level: i32,
}

#[cfg(test)]
impl Codec {
    /// No compression: the table is written in format version 2.
    pub(crate) const NONE: Codec = Codec {
        compression: Compression::None,
        zstd_level: 3,
    };
}

/// The largest decompressed block accepted: far above any block sett writes
/// (block_size ≤ 1 MiB plus one entry of at most a 1 MiB key and an inline
/// value under the 1 MiB threshold), low enough that a forged length cannot
/// ask for an unbounded allocation.
pub(crate) const MAX_BLOCK: usize = 64 << 20;

/// Compresses `raw` into `scratch` (its previous contents are dropped) as the
/// payload of a version-3 block. Returns the type byte to store: 0 when the
/// block is to be stored raw (`scratch` is then unused).
pub(crate) fn compress(codec: Codec, raw: &[u8], scratch: &mut Vec<u8>) -> u8 {
    scratch.clear();
    if codec.compression == Compression::None || raw.len() > MAX_BLOCK {
        return 0;
    }
    put_varint(scratch, raw.len() as u64);
    let head = scratch.len();
    let written = match codec.compression {
        Compression::None => None,
        Compression::Lz4 => {
            scratch.resize(
                head + lz4_flex::block::get_maximum_output_size(raw.len()),
                0,
            );
            lz4_flex::block::compress_into(raw, &mut scratch[head..]).ok()
        }
        Compression::Zstd => zstd_compress(codec.zstd_level, raw, scratch, head),
    };
    match written {
        // RocksDB's rule: keep it only if it saves at least an eighth.
        Some(n) if head + n < raw.len() - raw.len() / 8 => {
            scratch.truncate(head + n);
            codec.compression.type_byte()
        }
        _ => 0,
    }
}

thread_local! {
    static ZSTD_C: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
    static ZSTD_D: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Compresses into `out[head..]` with a per-thread zstd context (a context
/// costs more to set up than a 4 KiB block to compress).
fn zstd_compress(level: i32, raw: &[u8], out: &mut Vec<u8>, head: usize) -> Option<usize> {
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
    let n = ZSTD_C.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_none_or(|(l, _)| *l != level) {
            *c = Some((level, zstd::bulk::Compressor::new(level).ok()?));
        }
        let (_, z) = c.as_mut()?;
        z.compress_to_buffer(raw, &mut frame).ok()
    })?;
    out.truncate(head);
    out.extend_from_slice(&frame[..n]);
    Some(n)
}

/// Why a stored block could not be turned back into its bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Bad {
    /// No type byte, or one this build does not know.
    Type(Option<u8>),
    /// The uncompressed length is missing or above `MAX_BLOCK`.
    Length,
    /// The codec refused the payload, or it did not give the stated length.
    Decompress(&'static str),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Type(None) => write!(f, "empty data block"),
            Bad::Type(Some(t)) => write!(f, "unknown block compression type {t}"),
            Bad::Length => write!(f, "bad uncompressed length of a compressed block"),
            Bad::Decompress(codec) => write!(f, "{codec} block does not decompress"),
        }
    }
}

/// A version-3 block's contents: the block itself when stored raw (a slice
/// of `stored`, no copy), else its decompressed bytes.
pub(crate) enum Contents<'a> {
    Raw(&'a [u8]),
    Owned(Vec<u8>),
    /// Decompressed bytes shared with the block cache.
    Shared(std::sync::Arc<crate::page_pool::Block>),
}

impl std::ops::Deref for Contents<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Contents::Raw(b) => b,
            Contents::Owned(v) => v,
            Contents::Shared(v) => v,
        }
    }
}

/// Reads a stored version-3 block (`payload | type`), crc already checked.
pub(crate) fn decode(stored: &[u8]) -> Result<Contents<'_>, Bad> {
    let (&ty, payload) = stored.split_last().ok_or(Bad::Type(None))?;
    if ty == 0 {
        return Ok(Contents::Raw(payload));
    }
    if ty > 2 {
        return Err(Bad::Type(Some(ty)));
    }
    let (len, at) = get_varint(payload).ok_or(Bad::Length)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_BLOCK)
        .ok_or(Bad::Length)?;
    let body = &payload[at..];
    if ty == 1 {
        // An LZ4 sequence expands at most about 255-fold: a larger claim is
        // forged, and is refused before it is allocated.
        if len > body.len().saturating_mul(255).saturating_add(16) {
            return Err(Bad::Length);
        }
        let mut out = vec![0u8; len];
        match lz4_flex::block::decompress_into(body, &mut out) {
            Ok(n) if n == len => Ok(Contents::Owned(out)),
            _ => Err(Bad::Decompress("LZ4")),
        }
    } else {
        let mut out = Vec::with_capacity(len);
        let n = ZSTD_D.with(|d| {
            let mut d = d.borrow_mut();
            if d.is_none() {
                *d = Some(zstd::bulk::Decompressor::new().ok()?);
            }
            d.as_mut()?.decompress_to_buffer(body, &mut out).ok()
        });
        match n {
            Some(n) if n == len && out.len() == len => Ok(Contents::Owned(out)),
            _ => Err(Bad::Decompress("zstd")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_like(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0u64;
        while out.len() < n {
            out.extend_from_slice(
                format!(r#"{{"id":{i},"name":"user{i}","active":true,"tags":["a","b"]}}"#)
                    .as_bytes(),
            );
            i += 1;
        }
        out.truncate(n);
        out
    }

    fn codecs() -> [Codec; 2] {
        [
            Codec {
                compression: Compression::Lz4,
                zstd_level: 3,
            },
            Codec {
                compression: Compression::Zstd,
                zstd_level: 3,
            },
        ]
    }

    fn stored(codec: Codec, raw: &[u8]) -> Vec<u8> {
        let mut scratch = Vec::new();
        let ty = compress(codec, raw, &mut scratch);
        let mut s = if ty == 0 { raw.to_vec() } else { scratch };
        s.push(ty);
        s
    }

    #[test]
    fn each_codec_round_trips_a_compressible_block_and_shrinks_it() {
        let raw = json_like(4096);
        for codec in codecs() {
            let s = stored(codec, &raw);
            assert_eq!(*s.last().unwrap(), codec.compression.type_byte());
            assert!(s.len() < raw.len() / 2, "{codec:?}: {} bytes", s.len());
            let back = decode(&s).unwrap();
            assert!(matches!(back, Contents::Owned(_)));
            assert_eq!(&*back, &raw[..], "{codec:?}");
        }
    }

    #[test]
    fn a_block_that_does_not_shrink_by_an_eighth_is_stored_raw_and_read_without_a_copy() {
        // xorshift bytes: incompressible.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let raw: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for codec in codecs() {
            let s = stored(codec, &raw);
            assert_eq!(*s.last().unwrap(), 0, "{codec:?}");
            assert_eq!(s.len(), raw.len() + 1);
            assert!(matches!(decode(&s).unwrap(), Contents::Raw(b) if b == &raw[..]));
        }
        assert_eq!(compress(Codec::NONE, &json_like(4096), &mut Vec::new()), 0);
    }

    #[test]
    fn damaged_or_cut_compressed_payloads_are_errors_never_panics() {
        let raw = json_like(4096);
        for codec in codecs() {
            let good = stored(codec, &raw);
            for i in 0..good.len() - 1 {
                for flip in [0x01, 0x80, 0xff] {
                    let mut bad = good.clone();
                    bad[i] ^= flip;
                    // Either refused or (if the damage hit only literals) a
                    // block of exactly the stated length: the crc, checked
                    // before this, is what catches that case.
                    if let Ok(c) = decode(&bad) {
                        assert_eq!(c.len(), raw.len(), "{codec:?} at {i}");
                    }
                }
            }
            for cut in 0..good.len() - 1 {
                let mut bad = good[..cut].to_vec();
                bad.push(codec.compression.type_byte());
                assert!(decode(&bad).is_err(), "{codec:?} cut at {cut}");
            }
        }
        assert_eq!(decode(&[]).err(), Some(Bad::Type(None)));
        assert_eq!(decode(&[1, 2, 3, 9]).err(), Some(Bad::Type(Some(9))));
    }

    #[test]
    fn a_stated_length_that_differs_from_the_decompressed_one_is_refused() {
        let raw = json_like(4096);
        for codec in codecs() {
            let s = stored(codec, &raw);
            let (len, at) = get_varint(&s).unwrap();
            for wrong in [len - 1, len + 1, len * 2, MAX_BLOCK as u64 + 1] {
                let mut forged = Vec::new();
                put_varint(&mut forged, wrong);
                forged.extend_from_slice(&s[at..]);
                assert!(decode(&forged).is_err(), "{codec:?} claiming {wrong}");
            }
        }
    }
}
