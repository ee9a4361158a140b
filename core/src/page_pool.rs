//! Page-sized buffers for the data blocks the cache holds, recycled through a
//! free list instead of going back to the allocator.
//!
//! Why: a block is allocated by the thread that missed it and freed by
//! whichever thread evicts it (or drops the last reader's handle). A host
//! such as Go runs its calls on many OS threads, each with its own glibc
//! arena, and block sizes vary by a few hundred bytes, so the allocator
//! keeps freed blocks resident in arenas and gaps that later blocks do not
//! reuse: as plain allocations, the free heap beside a cache can approach
//! the cache's own size (see docs/memory-budget.md). Every buffer here has the
//! same size and goes back to the pool it came from, so a miss reuses the
//! page an eviction just gave back, whatever thread does either, and the
//! memory of blocks stays what the cache holds plus the free list.
//!
//! The free list keeps at most `keep` buffers (more go back to the
//! allocator): in steady state every miss takes one and the eviction it
//! causes returns one, so it stays short; it only fills when evictions
//! outrun misses (a large index or filter loaded into the cache).

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

/// The size of every pooled buffer: a data block of an uncompressed table
/// and its crc fit in one page (see `table::PAGE`).
pub(crate) const PAGE: usize = 4096;

/// What the allocator spends on a heap buffer beyond its bytes: glibc's
/// chunk header, rounded up to its 16-byte alignment.
pub(crate) const ALLOC_OVERHEAD: usize = 16;

/// A free list of `PAGE`-byte buffers.
pub(crate) struct PagePool {
    free: Mutex<Vec<Vec<u8>>>,
    keep: usize,
}

impl PagePool {
    /// A pool whose free list holds at most `keep` buffers.
    pub(crate) fn new(keep: usize) -> Arc<PagePool> {
        Arc::new(PagePool {
            free: Mutex::new(Vec::new()),
            keep,
        })
    }

    /// A block of `len` bytes, to be filled by the caller: a page from this
    /// pool when `len` fits one (bytes of an earlier block until written:
    /// zeroing a page per miss would cost a memset the read overwrites),
    /// else a zeroed heap buffer of its own.
    pub(crate) fn take(self: &Arc<PagePool>, len: usize) -> Block {
        if len > PAGE {
            return Block::from_vec(vec![0; len]);
        }
        let page = self.lock().pop();
        Block {
            bytes: page.unwrap_or_else(|| vec![0; PAGE]),
            len,
            home: Some(self.clone()),
        }
    }

    /// Buffers on the free list.
    #[cfg(test)]
    pub(crate) fn free_pages(&self) -> usize {
        self.lock().len()
    }

    fn put(&self, page: Vec<u8>) {
        let mut free = self.lock();
        if free.len() < self.keep {
            free.push(page);
            return;
        }
        drop(free);
        drop(page);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A push or pop cannot panic midway: a poisoned list is still whole.
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A data block's bytes: a pooled page, returned to its pool when dropped,
/// or a heap buffer of its own (a block larger than a page, or decompressed).
pub(crate) struct Block {
    /// A pooled page is always `PAGE` bytes long; the block is its first `len`.
    bytes: Vec<u8>,
    len: usize,
    home: Option<Arc<PagePool>>,
}

impl Block {
    /// A block that owns `bytes` and is freed with them.
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Block {
        Block {
            len: bytes.len(),
            bytes,
            home: None,
        }
    }

    /// Keeps the first `len` bytes (the allocation stays).
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The heap bytes this block holds, as the allocator counts them.
    pub(crate) fn footprint(&self) -> usize {
        self.bytes.capacity() + ALLOC_OVERHEAD
    }
}

impl Deref for Block {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl DerefMut for Block {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.len]
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(pool) = self.home.take() {
            pool.put(std::mem::take(&mut self.bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_page_is_reused_by_the_next_take() {
        let pool = PagePool::new(4);
        let mut a = pool.take(100);
        a.fill(7);
        let at = a.as_ptr();
        drop(a);
        assert_eq!(pool.free_pages(), 1);
        let b = pool.take(PAGE);
        assert_eq!(b.as_ptr(), at, "the freed page was reused");
        assert_eq!((b.len(), b.footprint()), (PAGE, PAGE + ALLOC_OVERHEAD));
        assert_eq!(pool.free_pages(), 0);
    }

    #[test]
    fn the_free_list_keeps_at_most_its_bound_and_large_blocks_bypass_it() {
        let pool = PagePool::new(2);
        let pages: Vec<Block> = (0..5).map(|_| pool.take(10)).collect();
        drop(pages);
        assert_eq!(pool.free_pages(), 2);
        let big = pool.take(PAGE + 1);
        assert_eq!(big.len(), PAGE + 1);
        drop(big);
        assert_eq!(pool.free_pages(), 2);
        let mut t = pool.take(50);
        t.truncate(20);
        assert_eq!(t.len(), 20);
        assert!(t.footprint() >= PAGE);
    }
}
