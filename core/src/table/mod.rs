//! Sorted string tables: immutable files of internal key → value record.
//!
//! Layout: data blocks (each followed by its crc32), a filter block, an index
//! block (each with crc32), then a 56-byte footer. See `core/FORMAT.md`.

pub(crate) mod block;
pub(crate) mod bloom;
mod builder;
mod iter;
mod reader;

pub(crate) use builder::{TableBuilder, TableMeta};
pub(crate) use iter::TableIter;
pub(crate) use reader::Table;

/// Magic at the end of every table.
pub(crate) const MAGIC: u64 = 0x5345_5454_5353_5431; // "SETTSST1"
/// Format version of tables.
pub(crate) const VERSION: u32 = 1;
/// Bytes of the footer.
pub(crate) const FOOTER_LEN: usize = 56;

/// The file name of table `id`.
pub(crate) fn file_name(id: u64) -> String {
    format!("{id:06}.sst")
}
