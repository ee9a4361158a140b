//! Sorted string tables: immutable files of internal key → value record.
//!
//! Layout: data blocks (each followed by its crc32), a filter block, an index
//! block (each with crc32), then a 56-byte footer. See `core/FORMAT.md`.
//! Data blocks may be compressed (version 3, `codec`); index and filter never are.
//! What a table keeps in memory for reading is bounded by the database's
//! cache (`crate::cache`, see `reader`).

pub(crate) mod block;
pub(crate) mod bloom;
mod builder;
pub(crate) mod codec;
mod footer;
mod iter;
mod reader;

#[cfg(test)]
pub(crate) use builder::plain as test_builder;
pub(crate) use builder::{TableBuilder, TableMeta};
pub(crate) use codec::Codec;
pub use codec::Compression;
pub(crate) use iter::TableIter;
pub(crate) use reader::{Meta, Table, TableCache};

/// A cache large enough that every table of a test pins its meta.
#[cfg(test)]
pub(crate) fn test_cache() -> std::sync::Arc<TableCache> {
    std::sync::Arc::new(TableCache::new(256 << 20))
}

/// Magic at the end of every table.
pub(crate) const MAGIC: u64 = 0x5345_5454_5353_5431; // "SETTSST1"
/// Format version of tables written without compression. Version 2 may pad
/// between data blocks (see `PAGE`); version 1 tables (blocks back to back)
/// are still read.
pub(crate) const VERSION_UNCOMPRESSED: u32 = 2;
/// Format version of tables written with a codec: as version 2, and every
/// data block ends with a compression type byte (see `codec`).
pub(crate) const VERSION_COMPRESSED: u32 = 3;
/// The newest table version read.
pub(crate) const VERSION: u32 = VERSION_COMPRESSED;
/// The oldest table version read.
pub(crate) const MIN_VERSION: u32 = 1;
/// Data blocks no larger than a page are kept within one page where the
/// padding this costs is at most `MAX_PAD`: a cold point lookup then reads
/// one page from the device, not the two a straddling block needs (RocksDB's
/// `block_align`, bounded).
pub(crate) const PAGE: u64 = 4096;
/// The most padding written before a block to start it on a page.
pub(crate) const MAX_PAD: u64 = PAGE / 8;
