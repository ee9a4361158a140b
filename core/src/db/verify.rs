//! `Db::verify`: every checksum of the Db read and checked, the way recovery
//! and reads would meet them, without repairing anything.

use super::*;

/// What [`Db::verify`] checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Tables whose every block checksum and format were checked.
    pub tables: usize,
    /// Blocks checked.
    pub blocks: usize,
    /// Entries (all versions) walked in memtables and tables.
    pub entries: u64,
    /// Value-log entries read back and checked through their pointers.
    pub values: u64,
}

impl DbInner {
    /// Checks each table block, and each value-log entry that a live version
    /// points to; the first damage found is [`Error::Corruption`].
    pub(crate) fn verify(&self) -> Result<VerifyReport> {
        self.check_open()?;
        let st = self.read_state();
        // Files started since (a GC move visible to this state may point into one).
        let vlogs = self.vlogs_for(&st.vlogs);
        let mut r = VerifyReport::default();
        for t in st.version.levels.iter().flatten() {
            r.blocks += t.verify()?;
            r.tables += 1;
        }
        let mut merge = MergeIter::new(st.sources(false, None, None), false);
        merge.rewind()?;
        let mut prev_user_key: Vec<u8> = Vec::new();
        while merge.valid() {
            let rec = value::decode(merge.value()).ok_or_else(|| {
                Error::corruption(&self.dir, 0, "undecodable value record met by verify")
            })?;
            let (user_key, seq) = key::split(merge.key());
            // Garbage collection moves only the newest version of a key, so an
            // older version may point into a file that is already gone.
            // Garbage collection also skips expired values, and versions a
            // range tombstone hides (their key reads as absent).
            let shadowed = r.entries > 0 && user_key == prev_user_key.as_slice();
            let expired = rec.expired(self.now());
            let hidden = st.range_dels.hides(user_key, seq, crate::key::MAX_SEQ);
            if let Stored::Pointer(p) = rec.stored {
                if !(shadowed || expired || hidden) || vlogs.get(p.file).is_some() {
                    vlogs.read(p, &self.dir)?;
                    r.values += 1;
                }
            }
            if !shadowed {
                prev_user_key.clear();
                prev_user_key.extend_from_slice(user_key);
            }
            r.entries += 1;
            merge.next()?;
        }
        Ok(r)
    }
}
