//! Value-log garbage collection.
//!
//! Compactions count, per value-log file, the bytes of entries whose pointers
//! they dropped (recorded in the manifest). GC takes the file with the largest
//! share of garbage, if it is above the ratio asked for; flushes the memtables
//! so that no live WAL points into it; moves each entry that is still the newest
//! version of its key to the head of the log (same version, new pointer, applied
//! by the write leader only if still live then); syncs; and deletes the file.
//! A file with no live entry is deleted without a rewrite. Readers that started
//! before keep the file open through their read state.

use super::recovery::remove;
use super::*;
use crate::manifest::Edit;
use crate::vlog::ENTRY_HEADER_LEN;

/// Moves are handed to the write pipeline in chunks of about this many bytes.
const MOVE_CHUNK: usize = 4 << 20;

/// What one round of value-log GC did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcOutcome {
    /// No file has at least the asked share of garbage.
    NothingToCollect,
    /// A file held no live value and was deleted without a rewrite.
    Deleted {
        /// The value-log file's id.
        file: u32,
        /// Its size, returned to the file system.
        freed_bytes: u64,
    },
    /// A file's live values were moved to the head of the log and the file deleted.
    Rewritten {
        /// The value-log file's id.
        file: u32,
        /// Live values copied to the head of the log.
        moved_values: u64,
        /// Their bytes.
        moved_bytes: u64,
        /// The file's size, returned to the file system.
        freed_bytes: u64,
    },
}

impl DbInner {
    pub(crate) fn run_value_log_gc(self: &Arc<Self>, ratio: f64) -> Result<GcOutcome> {
        if !(ratio > 0.0 && ratio < 1.0) {
            return Err(Error::InvalidArgument(format!(
                "GC discard ratio {ratio} is outside (0, 1)"
            )));
        }
        let _one_at_a_time = lock(&self.gc_lock);
        self.check_writable()?;
        let head = self.head_vlog_id().ok_or(Error::Closed)?;
        let discard = lock(&self.manifest)
            .as_ref()
            .map(|m| m.state().discard.clone())
            .unwrap_or_default();
        let st = self.read_state();
        let mut best: Option<(f64, Arc<crate::vlog::VlogFile>)> = None;
        for f in st.vlogs.all().filter(|f| f.id() != head) {
            let size = f
                .len()?
                .saturating_sub(crate::wal::HEADER_LEN as u64)
                .max(1);
            let share = discard.get(&f.id()).copied().unwrap_or(0) as f64 / size as f64;
            if best.as_ref().is_none_or(|(b, _)| share > *b) {
                best = Some((share, f.clone()));
            }
        }
        let Some((_, file)) = best.filter(|(share, _)| *share >= ratio) else {
            return Ok(GcOutcome::NothingToCollect);
        };
        drop(st);
        // WALs written while this file was the head may point into it: flush them away.
        self.flush()?;

        let file_bytes = file.len()?;
        let mut moved_values = 0u64;
        let mut moved_bytes = 0u64;
        let mut chunk: Vec<Move> = Vec::new();
        let mut chunk_bytes = 0usize;
        file.for_each_entry(|ptr, key, value| {
            let st = self.read_state();
            let Some((version, raw)) = st.lookup(key, crate::key::MAX_SEQ)? else {
                return Ok(());
            };
            let Some(rec) = value::decode(&raw) else {
                return Ok(());
            };
            let expired = rec.expires_at != 0 && rec.expires_at <= self.now();
            if rec.stored != Stored::Pointer(ptr) || expired {
                return Ok(());
            }
            moved_values += 1;
            moved_bytes += (ENTRY_HEADER_LEN + key.len() + value.len()) as u64;
            chunk_bytes += key.len() + value.len();
            chunk.push(Move {
                key: key.to_vec(),
                value: value.to_vec(),
                version,
                user_meta: rec.user_meta,
                expires_at: rec.expires_at,
                old: ptr,
            });
            if chunk_bytes >= MOVE_CHUNK {
                chunk_bytes = 0;
                self.write(WriterKind::Moves(std::mem::take(&mut chunk)), None)?;
            }
            Ok(())
        })?;
        self.write(WriterKind::Moves(chunk), None)?;
        self.sync_logs()?;
        lock(&self.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&[Edit::DeleteVlog(file.id())])
            .inspect_err(|e| self.poison_with(e))?;
        self.update_state(|s| ReadState {
            mem: s.mem.clone(),
            imm: s.imm.clone(),
            version: s.version.clone(),
            vlogs: Arc::new(s.vlogs.without(file.id())),
        });
        remove(&self.opts.fs, file.path())?;
        Ok(if moved_values == 0 {
            GcOutcome::Deleted {
                file: file.id(),
                freed_bytes: file_bytes,
            }
        } else {
            GcOutcome::Rewritten {
                file: file.id(),
                moved_values,
                moved_bytes,
                freed_bytes: file_bytes.saturating_sub(moved_bytes),
            }
        })
    }
}
