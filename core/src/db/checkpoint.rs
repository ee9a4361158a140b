//! Checkpoints: an openable copy of the Db in another directory, made by
//! hard-linking its tables and sealed value-log files (RocksDB's Checkpoint).
//! Both are immutable once written, so a link is a copy that costs no space
//! until one of the two databases deletes its name for the file.
//!
//! A writable Db, under the GC lock (no value-log GC starts or runs):
//! 1. flushes the memtables, so that every write acknowledged before the call
//!    is in a table;
//! 2. under the write lock (no write runs), seals the head value-log file
//!    (starts a new one) unless it holds nothing, and takes the read state
//!    and the manifest's counters. Every table of that state was written
//!    before the seal, so it points only into sealed files; and the state is
//!    a prefix of the write order (memtables are flushed oldest first);
//! 3. holds the state's value-log files: GC and `drop_all` defer removing a
//!    held file until the hold is released ([`FileHolds`]); tables stay on
//!    disk while the state is alive (a table's file goes when its last
//!    reference drops).
//!
//! Then, with writes and GC going on, the target directory is filled as
//! core/FORMAT.md ("Checkpoint directory") describes: a marker file
//! `CHECKPOINT-INCOMPLETE` made durable first, the links (a copy where the
//! file system cannot link), a MANIFEST listing exactly what was linked,
//! and the marker removed last. [`Db::open`] refuses a directory holding the
//! marker, so a crash anywhere in between leaves a target that opens whole,
//! one that is refused, or none.
//!
//! A read-only Db cannot flush: it links what its MANIFEST lists and copies
//! the WAL files that its open replayed (no writer can change the directory
//! while it is open).

use super::recovery::remove;
use super::*;
use crate::filename;
use crate::fs::sync_dir;
use crate::manifest::{ManifestState, TableRecord};
use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant};

pub use crate::filename::CHECKPOINT_MARKER;

/// What [`Db::checkpoint`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Files hard-linked (tables and sealed value-log files).
    pub files_linked: u64,
    /// Files copied: WAL files of a read-only Db, and files that could not be
    /// linked (the target is on another file system).
    pub files_copied: u64,
    /// Bytes of the linked files (shared with the source, not written again).
    pub bytes_linked: u64,
    /// Bytes written by copies.
    pub bytes_copied: u64,
    /// Wall time of the whole call.
    pub elapsed: Duration,
}

/// Value-log files that must not be removed yet, with the removals deferred
/// until they are released. A checkpoint holds the files of its read state
/// while it links them; GC and `drop_all` remove files through
/// [`DbInner::remove_vlog_file`], which asks here first.
#[derive(Default)]
pub(crate) struct FileHolds {
    /// Held file id → number of holders.
    held: HashMap<u32, usize>,
    /// Removals asked for while held: file id → path.
    deferred: HashMap<u32, PathBuf>,
}

/// Releases its holds when dropped, doing the removals deferred meanwhile.
pub(crate) struct HoldGuard<'a> {
    db: &'a DbInner,
    ids: Vec<u32>,
}

impl Drop for HoldGuard<'_> {
    fn drop(&mut self) {
        let mut due = Vec::new();
        {
            let mut h = lock(&self.db.holds);
            for id in &self.ids {
                let last = match h.held.get_mut(id) {
                    Some(n) => {
                        *n -= 1;
                        *n == 0
                    }
                    None => false,
                };
                if last {
                    h.held.remove(id);
                    if let Some(path) = h.deferred.remove(id) {
                        due.push(path);
                    }
                }
            }
        }
        for path in due {
            // Best effort: the manifest no longer lists the file, and the next
            // open removes value-log files it does not list.
            let _ = remove(&self.db.opts.fs, &path);
        }
    }
}

/// What a checkpoint puts in its target.
struct Plan {
    /// Tables and sealed value-log files, linked.
    link: Vec<PathBuf>,
    /// WAL files (read-only Db), copied.
    copy: Vec<PathBuf>,
    /// The target's MANIFEST.
    manifest: ManifestState,
}

/// Whether a failed link means "the file system cannot link these two", so
/// that a copy is the way.
fn cannot_link(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EXDEV | libc::EPERM | libc::EOPNOTSUPP | libc::EMLINK)
    )
}

impl DbInner {
    /// Removes value-log file `id` at `path`, or defers it while a checkpoint
    /// holds the file.
    pub(crate) fn remove_vlog_file(&self, id: u32, path: &Path) -> Result<()> {
        {
            let mut h = lock(&self.holds);
            if h.held.contains_key(&id) {
                h.deferred.insert(id, path.to_path_buf());
                return Ok(());
            }
        }
        remove(&self.opts.fs, path)
    }

    fn hold_vlogs(&self, ids: Vec<u32>) -> HoldGuard<'_> {
        let mut h = lock(&self.holds);
        for &id in &ids {
            *h.held.entry(id).or_insert(0) += 1;
        }
        HoldGuard { db: self, ids }
    }

    /// See [`Db::checkpoint`] and the module's documentation.
    pub(crate) fn checkpoint(&self, target: &Path) -> Result<CheckpointReport> {
        let started = Instant::now();
        self.check_open()?;
        // Refused before anything changes, in the source or on disk.
        if std::fs::symlink_metadata(target).is_ok() {
            return Err(Error::InvalidArgument(format!(
                "checkpoint target {} already exists: a checkpoint goes into a new directory",
                target.display()
            )));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "the parent of checkpoint target {} is not a directory",
                target.display()
            )));
        }
        let fs = &self.opts.fs;
        let marker = target.join(CHECKPOINT_MARKER);
        fs.create_dir_all(target)
            .map_err(|e| Error::io(format!("creating {}", target.display()), e))?;
        // The marker claims the directory: a second checkpoint racing for the
        // same target fails here.
        let made = fs
            .create_new(&marker)
            .map_err(|e| Error::io(format!("creating {}", marker.display()), e))
            .and_then(|f| {
                fs.sync(&f, &marker)
                    .map_err(|e| Error::io(format!("syncing {}", marker.display()), e))
            })
            .and_then(|_| sync_dir(fs, target))
            .and_then(|_| sync_dir(fs, parent));
        if let Err(e) = made {
            match &e {
                // Not ours (a checkpoint racing for the same target): an empty
                // directory is all this call may remove.
                Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_dir(target);
                }
                _ => self.clean_up(target, &[]),
            }
            return Err(e);
        }
        let mut report = CheckpointReport::default();
        let mut placed = Vec::new();
        let filled = if self.opts.read_only {
            self.read_only_plan()
                .and_then(|plan| self.fill(target, &plan, &mut report, &mut placed))
        } else {
            self.live_plan().and_then(|(plan, _state, _holds)| {
                self.fill(target, &plan, &mut report, &mut placed)
            })
        };
        let done = filled.and_then(|_| {
            fs.remove(&marker)
                .map_err(|e| Error::io(format!("removing {}", marker.display()), e))?;
            sync_dir(fs, target)
        });
        if let Err(e) = done {
            self.clean_up(target, &placed);
            return Err(e);
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Steps 1-3 of the module's documentation: the plan, the read state whose
    /// references keep its tables on disk, and the holds on its value-log files.
    fn live_plan(&self) -> Result<(Plan, Arc<ReadState>, HoldGuard<'_>)> {
        let _gc = self.gc.exclusive();
        self.check_writable()?;
        self.flush()?;
        let mut guard = lock(&self.log);
        let log = guard.as_mut().ok_or(Error::Closed)?;
        let head = log.vlog.id();
        let head_used = self
            .read_state()
            .vlogs
            .get(head)
            .map(|f| f.len())
            .transpose()?
            .is_none_or(|len| len > crate::wal::HEADER_LEN as u64);
        if head_used {
            self.rotate_vlog(log).inspect_err(|e| self.poison_with(e))?;
        }
        // Excluded from the checkpoint: the head, empty or just started.
        let head = log.vlog.id();
        let st = self.read_state();
        let source = lock(&self.manifest)
            .as_ref()
            .ok_or(Error::Closed)?
            .state()
            .clone();
        let vlog_ids: Vec<u32> = st
            .vlogs
            .all()
            .map(|f| f.id())
            .filter(|&id| id != head)
            .collect();
        let holds = self.hold_vlogs(vlog_ids.clone());
        drop(guard);

        let mut m = ManifestState::new(self.opts.num_levels);
        let mut link = Vec::new();
        let mut max_id = 0u64;
        for (level, tables) in st.version.levels.iter().enumerate() {
            for t in tables {
                // The source's own record (the manifest and the state change
                // together under the manifest lock), else one from the table.
                let rec = source
                    .levels
                    .get(level)
                    .and_then(|l| l.get(&t.id()))
                    .cloned()
                    .unwrap_or_else(|| TableRecord {
                        id: t.id(),
                        size: t.size(),
                        max_seq: t.max_seq(),
                        smallest: t.smallest().to_vec(),
                        largest: t.largest().to_vec(),
                    });
                m.levels[level].insert(t.id(), rec);
                m.last_seq = m.last_seq.max(t.max_seq());
                max_id = max_id.max(t.id());
                link.push(filename::table(&self.dir, t.id()));
            }
        }
        for &id in &vlog_ids {
            m.vlogs.insert(id);
            max_id = max_id.max(u64::from(id));
            link.push(filename::vlog(&self.dir, id));
            if let Some(&bytes) = source.discard.get(&id) {
                m.discard.insert(id, bytes);
            }
        }
        // The state's range tombstones but those of its memtables (which
        // are not in the checkpoint: their writes after the flush are not).
        let unflushed: Vec<_> = std::iter::once(&st.mem)
            .chain(&st.imm)
            .flat_map(|mem| mem.range_dels())
            .collect();
        m.range_dels = st
            .range_dels
            .iter()
            .filter(|t| !unflushed.contains(t))
            .cloned()
            .collect();
        m.range_dels_retired = source.range_dels_retired;
        m.next_file_id = source.next_file_id.max(max_id + 1);
        // No WAL comes along: every WAL id is below this.
        m.log_number = m.next_file_id;
        m.last_seq = m.last_seq.max(source.last_seq);
        Ok((
            Plan {
                link,
                copy: Vec::new(),
                manifest: m,
            },
            st,
            holds,
        ))
    }

    /// What a read-only Db puts in a checkpoint: its manifest as loaded, every
    /// file it lists, and the WALs its open replayed.
    fn read_only_plan(&self) -> Result<Plan> {
        let (manifest, wals) = self.read_only_recovery.clone().ok_or_else(|| {
            Error::InvalidArgument("no recovered manifest kept for this read-only Db".into())
        })?;
        let mut link = Vec::new();
        for tables in &manifest.levels {
            link.extend(tables.keys().map(|&id| filename::table(&self.dir, id)));
        }
        link.extend(
            manifest
                .vlogs
                .iter()
                .map(|&id| filename::vlog(&self.dir, id)),
        );
        let copy = wals
            .iter()
            .map(|&id| filename::wal(&self.dir, id))
            .collect();
        Ok(Plan {
            link,
            copy,
            manifest,
        })
    }

    /// Links and copies the plan's files into `target`, then writes its
    /// MANIFEST. `placed` collects the names made, for a clean-up on failure.
    fn fill(
        &self,
        target: &Path,
        plan: &Plan,
        report: &mut CheckpointReport,
        placed: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let fs = &self.opts.fs;
        for from in &plan.link {
            let to = target.join(from.file_name().unwrap_or_default());
            match fs.hard_link(from, &to) {
                Ok(()) => {
                    placed.push(to.clone());
                    report.files_linked += 1;
                    report.bytes_linked += std::fs::metadata(&to)
                        .map_err(|e| Error::io(format!("stat {}", to.display()), e))?
                        .len();
                }
                Err(e) if cannot_link(&e) => {
                    report.bytes_copied += self.copy_file(from, &to, placed)?;
                    report.files_copied += 1;
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("linking {} to {}", from.display(), to.display()),
                        e,
                    ))
                }
            }
        }
        for from in &plan.copy {
            let to = target.join(from.file_name().unwrap_or_default());
            report.bytes_copied += self.copy_file(from, &to, placed)?;
            report.files_copied += 1;
        }
        sync_dir(fs, target)?;
        placed.push(target.join(filename::MANIFEST));
        // Written through MANIFEST.tmp and a rename, then the directory synced.
        crate::manifest::Manifest::create(fs, target, plan.manifest.clone())?;
        if let Some(keys) = fs.keys() {
            // Copied after every file it must open (the MANIFEST included):
            // keys are only ever added, so this copy holds each one they name.
            let to = target.join(crate::crypt::REGISTRY);
            report.bytes_copied += self.copy_file(&keys.path(), &to, placed)?;
            report.files_copied += 1;
            sync_dir(fs, target)?;
        }
        Ok(())
    }

    /// Copies `from` to the new file `to` and syncs it; returns the bytes
    /// copied. The bytes are copied as they are on disk: an encrypted file
    /// stays encrypted under the same data key, which the copied registry holds.
    fn copy_file(&self, from: &Path, to: &Path, placed: &mut Vec<PathBuf>) -> Result<u64> {
        let fs = &self.opts.fs.plain();
        let mut src = File::open(from)
            .map_err(|e| Error::io(format!("opening {} to copy it", from.display()), e))?;
        let mut out = fs
            .create_new(to)
            .map_err(|e| Error::io(format!("creating {}", to.display()), e))?;
        placed.push(to.to_path_buf());
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = src
                .read(&mut buf)
                .map_err(|e| Error::io(format!("reading {}", from.display()), e))?;
            if n == 0 {
                break;
            }
            fs.append(&mut out, to, &buf[..n])
                .map_err(|e| Error::io(format!("writing {}", to.display()), e))?;
            total += n as u64;
        }
        fs.sync(&out, to)
            .map_err(|e| Error::io(format!("syncing {}", to.display()), e))?;
        Ok(total)
    }

    /// Best effort after a failure: the names made, then the marker, then the
    /// directory. Whatever stays behind while the marker does is refused by
    /// open; the marker goes only after everything else did.
    fn clean_up(&self, target: &Path, placed: &[PathBuf]) {
        let fs = &self.opts.fs;
        let _ = fs.remove(&target.join(filename::MANIFEST_TMP));
        let mut left = false;
        for p in placed.iter().rev() {
            left |= remove(fs, p).is_err();
        }
        // The removals are durable before the marker's is.
        left |= sync_dir(fs, target).is_err();
        if !left && remove(fs, &target.join(CHECKPOINT_MARKER)).is_ok() {
            let _ = std::fs::remove_dir(target);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_value_log_file_is_removed_only_when_its_last_hold_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Options::new(dir.path())).unwrap();
        let path = dir.path().join("000099.vlog");
        std::fs::write(&path, b"x").unwrap();
        let first = db.inner.hold_vlogs(vec![99]);
        let second = db.inner.hold_vlogs(vec![99, 7]);
        db.inner.remove_vlog_file(99, &path).unwrap();
        assert!(path.exists(), "removed while held");
        drop(first);
        assert!(path.exists(), "removed while still held once");
        drop(second);
        assert!(!path.exists(), "not removed once released");
        assert!(lock(&db.inner.holds).held.is_empty());
    }
}
