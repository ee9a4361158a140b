//! Every name sett gives a file in its directory, and the parse back from a
//! name to what the file is (LevelDB's db/filename.h). Nothing else in the
//! crate spells a file name.
//!
//! Numbered files share one id space per kind: `NNNNNN.sst` (a table),
//! `NNNNNN.wal` (a write-ahead log), `NNNNNN.vlog` (a value-log file), with at
//! least six digits. core/FORMAT.md describes what each holds.

use std::path::{Path, PathBuf};

/// The durable list of live tables and value-log files.
pub(crate) const MANIFEST: &str = "MANIFEST";
/// A manifest snapshot being written; renamed over `MANIFEST` once synced.
pub(crate) const MANIFEST_TMP: &str = "MANIFEST.tmp";
/// Present while a checkpoint directory is being made: `Db::open` refuses a
/// directory holding it (core/FORMAT.md, "Checkpoint directory").
pub const CHECKPOINT_MARKER: &str = "CHECKPOINT-INCOMPLETE";
/// The directory lock (flock: exclusive for a writer, shared for read-only).
pub(crate) const LOCK: &str = "LOCK";

/// A numbered file sett keeps in its directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Table(u64),
    Wal(u64),
    Vlog(u32),
}

impl FileKind {
    /// The file's name, the inverse of [`parse`].
    pub(crate) fn name(self) -> String {
        match self {
            FileKind::Table(id) => format!("{id:06}.sst"),
            FileKind::Wal(id) => format!("{id:06}.wal"),
            FileKind::Vlog(id) => format!("{id:06}.vlog"),
        }
    }

    /// The file's path in `dir`.
    pub(crate) fn path(self, dir: &Path) -> PathBuf {
        dir.join(self.name())
    }
}

/// The path of table `id` in `dir`.
pub(crate) fn table(dir: &Path, id: u64) -> PathBuf {
    FileKind::Table(id).path(dir)
}

/// The path of write-ahead log `id` in `dir`.
pub(crate) fn wal(dir: &Path, id: u64) -> PathBuf {
    FileKind::Wal(id).path(dir)
}

/// The path of value-log file `id` in `dir`.
pub(crate) fn vlog(dir: &Path, id: u32) -> PathBuf {
    FileKind::Vlog(id).path(dir)
}

/// What the file called `name` is, if it is one of sett's numbered files.
/// Other names (the manifest, the lock, anything a user put there) are `None`.
pub(crate) fn parse(name: &str) -> Option<FileKind> {
    let (stem, ext) = name.split_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match ext {
        "sst" => stem.parse().ok().map(FileKind::Table),
        "wal" => stem.parse().ok().map(FileKind::Wal),
        "vlog" => stem.parse().ok().map(FileKind::Vlog),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_numbered_name_parses_back_to_its_kind() {
        for kind in [
            FileKind::Table(1),
            FileKind::Table(1_234_567),
            FileKind::Wal(42),
            FileKind::Vlog(7),
            FileKind::Vlog(u32::MAX),
        ] {
            assert_eq!(parse(&kind.name()), Some(kind), "{}", kind.name());
        }
        assert_eq!(FileKind::Table(3).name(), "000003.sst");
    }

    #[test]
    fn other_names_are_not_numbered_files() {
        for name in [
            MANIFEST,
            MANIFEST_TMP,
            LOCK,
            CHECKPOINT_MARKER,
            "000001",
            ".sst",
            "00a001.sst",
            "000001.sst.tmp",
            "000001.txt",
            "-00001.wal",
            // A value-log id past u32 is not one sett wrote.
            "4294967296.vlog",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }
}
