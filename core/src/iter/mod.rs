//! Iteration: sources (memtable, table, level), their merge, and the Db iterator.

mod db_iter;
mod level;
mod mem;
mod merge;
mod pending;

pub(crate) use db_iter::{bounds, Walk};
pub use db_iter::{DbIterator, IterOptions};
pub(crate) use level::LevelIter;
pub(crate) use mem::MemIter;
pub(crate) use merge::MergeIter;
pub(crate) use pending::{PendingIter, TxnView};

use crate::error::Result;

/// A sorted run of internal-key entries walked in one direction, chosen when the
/// source is made. Forward walks ascend; reverse walks descend.
pub(crate) trait Source: Send {
    /// Forward: first entry ≥ `target`. Reverse: last entry ≤ `target`.
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    /// Forward: the first entry. Reverse: the last entry.
    fn rewind(&mut self) -> Result<()>;
    /// The next entry in the walk's direction.
    fn next(&mut self) -> Result<()>;
    fn valid(&self) -> bool;
    /// The current internal key; only while `valid()`.
    fn key(&self) -> &[u8];
    /// The current value record; only while `valid()`.
    fn value(&self) -> &[u8];
}
