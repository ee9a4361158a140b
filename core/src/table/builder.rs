//! Writes a table from entries given in internal-key order.

use super::block::BlockBuilder;
use super::codec::{self, Codec, Compression, KeyspaceCodecs};
use super::footer::{self, Footer, Handle};
use super::{bloom, MAX_PAD, PAGE, VERSION_COMPRESSED, VERSION_UNCOMPRESSED};
use crate::coding::put_varint;
use crate::error::{Error, Result};
use crate::fs::{Fs, FsWriter};
use crate::key;
use crate::keyspace::{self, PREFIX_LEN};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What the manifest records about a finished table.
#[derive(Debug, Clone)]
pub(crate) struct TableMeta {
    pub size: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub max_seq: u64,
}

pub(crate) struct TableBuilder {
    out: BufWriter<FsWriter>,
    path: PathBuf,
    offset: u64,
    block: BlockBuilder,
    block_size: usize,
    bits_per_key: usize,
    /// (last key, offset, length) per data block.
    index: Vec<(Vec<u8>, u64, u32)>,
    hashes: Vec<u64>,
    smallest: Option<Vec<u8>>,
    last_user_key: Vec<u8>,
    entries: u64,
    max_seq: u64,
    /// The level's codec: blocks of keys with no keyspace codec use it.
    codec: Codec,
    /// Keyspace id → codec, for keyspaces that chose their own.
    keyspaces: KeyspaceCodecs,
    /// The keyspace prefix (`FF FF FF FF | id`, or empty for the default
    /// keyspace) of the open block's keys, and the codec it is written with.
    block_space: Vec<u8>,
    block_codec: Codec,
    /// Format version written: 3 when some codec compresses, else 2.
    version: u32,
    /// Compressed bytes of the block being written (reused).
    scratch: Vec<u8>,
}

impl TableBuilder {
    pub(crate) fn create(
        fs: &Fs,
        path: &Path,
        block_size: usize,
        bits_per_key: usize,
        codec: Codec,
    ) -> Result<TableBuilder> {
        let file = fs
            .create_new(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        let out = FsWriter {
            fs: fs.clone(),
            file,
            path: path.to_path_buf(),
        };
        Ok(TableBuilder {
            out: BufWriter::with_capacity(256 << 10, out),
            path: path.to_path_buf(),
            offset: 0,
            block: BlockBuilder::new(),
            block_size,
            bits_per_key,
            index: Vec::new(),
            hashes: Vec::new(),
            smallest: None,
            last_user_key: Vec::new(),
            entries: 0,
            max_seq: 0,
            codec,
            keyspaces: KeyspaceCodecs::default(),
            block_space: Vec::new(),
            block_codec: codec,
            version: if codec.compression == Compression::None {
                VERSION_UNCOMPRESSED
            } else {
                VERSION_COMPRESSED
            },
            scratch: Vec::new(),
        })
    }

    /// Gives the codecs of keyspaces that chose their own (before the first
    /// `add`): their keys' blocks use them instead of the level's. The table
    /// is written in version 3 if any of them compresses.
    pub(crate) fn with_keyspace_codecs(mut self, keyspaces: KeyspaceCodecs) -> TableBuilder {
        debug_assert!(
            self.entries == 0,
            "keyspace codecs given after the first add"
        );
        if keyspaces.values().any(|&c| c != Compression::None) {
            self.version = VERSION_COMPRESSED;
        }
        self.keyspaces = keyspaces;
        self
    }

    /// The codec of the block that `uk`'s keyspace prefix starts.
    fn codec_for(&self, space: &[u8]) -> Codec {
        let id = space
            .get(4..PREFIX_LEN)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_be_bytes);
        match id.and_then(|id| self.keyspaces.get(&id)) {
            Some(&compression) => Codec {
                compression,
                zstd_level: self.codec.zstd_level,
            },
            None => self.codec,
        }
    }

    /// Adds an entry; internal keys must be strictly increasing.
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let (uk, seq) = key::split(ikey);
        if self.smallest.is_none() {
            self.smallest = Some(ikey.to_vec());
        }
        if self.entries == 0 || uk != self.last_user_key.as_slice() {
            self.hashes.push(bloom::hash(uk));
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(uk);
        }
        self.max_seq = self.max_seq.max(seq);
        self.entries += 1;
        // A block holds one keyspace's keys, so that it can use that
        // keyspace's codec: cut where the keyspace prefix changes.
        let space = keyspace::space_of(uk);
        if !self.keyspaces.is_empty() && space != self.block_space.as_slice() {
            self.finish_block()?;
        }
        if self.block.is_empty() && space != self.block_space.as_slice() {
            self.block_codec = self.codec_for(space);
            self.block_space.clear();
            self.block_space.extend_from_slice(space);
        }
        // Blocks that fit a page end before an entry would take them (and
        // their crc) past the block size, so that they can sit in one page.
        // Not when compressing: the stored block is smaller than a page anyway,
        // and one more entry per block compresses better (RocksDB's rule: cut
        // once the block reaches the block size).
        let trailer = usize::from(self.version >= VERSION_COMPRESSED);
        if self.block_codec.compression == Compression::None
            && self.block_size as u64 <= PAGE
            && !self.block.is_empty()
            && self.block.size_with(ikey.len(), value.len()) + 4 + trailer > self.block_size
        {
            self.finish_block()?;
        }
        self.block.add(ikey, value);
        if self.block.estimated_size() >= self.block_size {
            self.finish_block()?;
        }
        Ok(())
    }

    /// Bytes written so far plus the open block.
    pub(crate) fn estimated_size(&self) -> u64 {
        self.offset + self.block.estimated_size() as u64
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    fn write_with_crc(&mut self, data: &[u8]) -> Result<(u64, u32)> {
        self.write_parts_with_crc(&[data])
    }

    /// Writes the concatenation of `parts` as one block, then its crc.
    fn write_parts_with_crc(&mut self, parts: &[&[u8]]) -> Result<(u64, u32)> {
        let at = self.offset;
        let mut crc = crc32fast::Hasher::new();
        let mut len = 0u64;
        let mut written = crate::fault::check(crate::fault::Op::Write);
        for p in parts {
            crc.update(p);
            len += p.len() as u64;
            written = written.and_then(|_| self.out.write_all(p));
        }
        written
            .and_then(|_| self.out.write_all(&crc.finalize().to_le_bytes()))
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
        self.offset += len + 4;
        let len = u32::try_from(len).map_err(|_| {
            Error::io(
                format!("writing {}", self.path.display()),
                std::io::Error::other("block of 4 GiB or more"),
            )
        })?;
        Ok((at, len))
    }

    fn finish_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let last = self.block.last_key().to_vec();
        let data = self.block.finish();
        let mut scratch = std::mem::take(&mut self.scratch);
        let compressed = self.version >= VERSION_COMPRESSED;
        let ty = if compressed {
            codec::compress(self.block_codec, &data, &mut scratch)
        } else {
            0
        };
        let stored: &[u8] = if ty == 0 { &data } else { &scratch };
        let type_byte = [ty];
        let trailer: &[u8] = if compressed { &type_byte } else { &[] };
        let total = (stored.len() + trailer.len()) as u64 + 4;
        let in_page = self.offset % PAGE;
        if total <= PAGE && in_page + total > PAGE && PAGE - in_page <= MAX_PAD {
            let pad = [0u8; MAX_PAD as usize];
            crate::fault::check(crate::fault::Op::Write)
                .and_then(|_| self.out.write_all(&pad[..(PAGE - in_page) as usize]))
                .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))?;
            self.offset += PAGE - in_page;
        }
        let written = self.write_parts_with_crc(&[stored, trailer]);
        self.scratch = scratch;
        let (off, len) = written?;
        self.index.push((last, off, len));
        Ok(())
    }

    /// Writes filter, index and footer, syncs the file and returns its metadata.
    pub(crate) fn finish(mut self) -> Result<TableMeta> {
        self.finish_block()?;
        let filter = bloom::build(&self.hashes, self.bits_per_key);
        let (filter_off, filter_len) = self.write_with_crc(&filter)?;

        let smallest = self.smallest.clone().unwrap_or_default();
        let mut index = Vec::new();
        index.extend_from_slice(&(self.index.len() as u32).to_le_bytes());
        put_varint(&mut index, smallest.len() as u64);
        index.extend_from_slice(&smallest);
        for (k, off, len) in &self.index {
            put_varint(&mut index, k.len() as u64);
            index.extend_from_slice(k);
            index.extend_from_slice(&off.to_le_bytes());
            index.extend_from_slice(&len.to_le_bytes());
        }
        let (index_off, index_len) = self.write_with_crc(&index)?;

        let footer = Footer {
            index: Handle {
                offset: index_off,
                len: index_len,
            },
            filter: Handle {
                offset: filter_off,
                len: filter_len,
            },
            entries: self.entries,
            max_seq: self.max_seq,
            version: self.version,
        }
        .encode();
        let ctx = |e| Error::io(format!("finishing {}", self.path.display()), e);
        self.out.write_all(&footer).map_err(ctx)?;
        self.out.flush().map_err(ctx)?;
        crate::fault::check(crate::fault::Op::Sync)
            .and_then(|_| {
                let w = self.out.get_ref();
                w.fs.sync(&w.file, &w.path)
            })
            .map_err(ctx)?;
        let largest = self
            .index
            .last()
            .map(|(k, _, _)| k.clone())
            .unwrap_or_default();
        Ok(TableMeta {
            size: self.offset + footer::LEN as u64,
            smallest,
            largest,
            max_seq: self.max_seq,
        })
    }
}

/// A builder for tests: the real file system, 10 bloom bits per key, no compression.
#[cfg(test)]
pub(crate) fn plain(path: &std::path::Path, block_size: usize) -> TableBuilder {
    TableBuilder::create(
        &crate::fs::Fs::real(),
        path,
        block_size,
        10,
        crate::table::Codec::NONE,
    )
    .expect("creating a test table")
}
