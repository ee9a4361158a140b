//! The file-system layer. Every operation that changes what is on disk goes
//! through [`Fs`]: creating a file, appending to it, syncing it, renaming,
//! hard-linking or removing it, syncing a directory, creating a directory. A test can put
//! [`SimFs`] in the place of the real file system ([`RealFs`], the default) and
//! cut the power at any of those operations.
//!
//! Reads do not go through this layer: tables and sealed value-log files are
//! mapped and the head value-log file is read with `pread`, from the real
//! files that every implementation writes. The directory lock (`LOCK`) is
//! taken outside it too: it holds no data.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The write side of a file system. Files are created by [`FileSystem::create_new`]
/// and written only by appending, as every sett file is.
pub trait FileSystem: Send + Sync {
    /// Creates `path`, which must not exist, open for writing.
    fn create_new(&self, path: &Path) -> io::Result<File>;
    /// Appends all of `data` to `file` (at `path`), or fails.
    fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> io::Result<()>;
    /// Appends every slice, in order, or fails.
    fn append_vectored(
        &self,
        file: &mut File,
        path: &Path,
        slices: &mut [IoSlice<'_>],
    ) -> io::Result<()> {
        let data: Vec<u8> = slices.iter().flat_map(|s| s.iter().copied()).collect();
        self.append(file, path, &data)
    }
    /// Makes what was appended to the file durable (`fdatasync`). `file` may be
    /// any handle of the file, a read-only one included.
    fn sync(&self, file: &File, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes `to` (which must not exist) a second name of the file `from`.
    /// Like a creation, the new name is durable only once its directory is
    /// synced. Fails with EXDEV when the two are on different file systems.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes the entries created, renamed and removed in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and any missing parent.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Whether the WAL may be written through a shared mapping of its file
    /// (straight into the kernel's page cache, no call per append) instead of
    /// by [`FileSystem::append`]. Only a file system whose files are the
    /// kernel's can say yes; [`FileSystem::sync`] must then make the mapped
    /// writes durable. Default: no.
    fn maps_appends(&self) -> bool {
        false
    }
}

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        File::options().write(true).create_new(true).open(path)
    }

    fn append(&self, file: &mut File, _path: &Path, data: &[u8]) -> io::Result<()> {
        file.write_all(data)
    }

    fn append_vectored(
        &self,
        file: &mut File,
        _path: &Path,
        slices: &mut [IoSlice<'_>],
    ) -> io::Result<()> {
        write_all_vectored(file, slices)
    }

    fn maps_appends(&self) -> bool {
        cfg!(target_os = "linux")
    }

    fn sync(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
}

/// Writes every slice, in order, with as few `writev` calls as the system allows.
fn write_all_vectored(file: &mut File, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        // Linux takes at most 1024 iovecs per call.
        let n = slices.len().min(1024);
        match file.write_vectored(&slices[..n]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "writev wrote nothing",
                ))
            }
            Ok(written) => IoSlice::advance_slices(&mut slices, written),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The file system a Db writes through ([`crate::Options::fs`]); the real one by default.
#[derive(Clone)]
pub struct Fs(Arc<dyn FileSystem>);

impl Fs {
    /// The operating system's file system.
    pub fn real() -> Fs {
        Fs(Arc::new(RealFs))
    }

    /// Another implementation, such as a [`SimFs`].
    pub fn new(fs: Arc<dyn FileSystem>) -> Fs {
        Fs(fs)
    }

    pub(crate) fn create_new(&self, path: &Path) -> io::Result<File> {
        self.0.create_new(path)
    }

    pub(crate) fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> io::Result<()> {
        self.0.append(file, path, data)
    }

    pub(crate) fn append_vectored(
        &self,
        file: &mut File,
        path: &Path,
        slices: &mut [IoSlice<'_>],
    ) -> io::Result<()> {
        self.0.append_vectored(file, path, slices)
    }

    /// With the `unsafe-skip-fsync` feature (a mutation check for the power-loss
    /// tests, never for use) this does nothing.
    pub(crate) fn sync(&self, file: &File, path: &Path) -> io::Result<()> {
        if cfg!(feature = "unsafe-skip-fsync") {
            return Ok(());
        }
        self.0.sync(file, path)
    }

    pub(crate) fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }

    pub(crate) fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.hard_link(from, to)
    }

    pub(crate) fn maps_appends(&self) -> bool {
        self.0.maps_appends()
    }

    pub(crate) fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove(path)
    }

    /// With the `unsafe-skip-dir-sync` feature (a mutation check) this does nothing.
    pub(crate) fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if cfg!(feature = "unsafe-skip-dir-sync") {
            return Ok(());
        }
        self.0.sync_dir(dir)
    }

    pub(crate) fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
}

/// fsyncs a directory so that created, renamed and removed entries are durable.
pub(crate) fn sync_dir(fs: &Fs, dir: &Path) -> crate::Result<()> {
    fs.sync_dir(dir)
        .map_err(|e| crate::Error::io(format!("syncing directory {}", dir.display()), e))
}

impl Default for Fs {
    fn default() -> Fs {
        Fs::real()
    }
}

impl std::fmt::Debug for Fs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fs")
    }
}

/// An `io::Write` over a file written through an [`Fs`] (for `BufWriter`).
pub(crate) struct FsWriter {
    pub(crate) fs: Fs,
    pub(crate) file: File,
    pub(crate) path: PathBuf,
}

impl Write for FsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.fs.append(&mut self.file, &self.path, buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One kind of file-system operation, as [`SimFs`] counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// [`FileSystem::create_new`].
    Create,
    /// [`FileSystem::append`] and `append_vectored`.
    Append,
    /// [`FileSystem::sync`].
    Sync,
    /// [`FileSystem::rename`].
    Rename,
    /// [`FileSystem::hard_link`].
    Link,
    /// [`FileSystem::remove`].
    Remove,
    /// [`FileSystem::sync_dir`].
    SyncDir,
    /// [`FileSystem::create_dir_all`] (only when it creates something).
    CreateDir,
}

/// A fault [`SimFs`] injects at one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The power fails: this operation and every later one fail with EIO and
    /// change nothing, until [`SimFs::power_cut`] applies the cut.
    PowerCut,
    /// An append writes a random part of its data, then fails with EIO.
    ShortWrite,
    /// An fsync fails with EIO after its data reached the page cache. As on
    /// Linux, the pages are then clean: a later fsync succeeds without writing
    /// them, and what they held is lost at the next power cut.
    SyncFails,
    /// The operation fails with EIO and changes nothing.
    Fails,
}

/// What a power cut keeps of the data appended after a file's last sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutMode {
    /// Nothing: every file ends at its last sync.
    DropUnsynced,
    /// A random prefix, cut at a random byte.
    KeepRandomPrefix,
    /// A random prefix whose last page is torn: some of its 512-byte sectors
    /// past the last sync read back as zeros.
    TornLastPage,
}

/// What [`SimFs::power_cut`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CutReport {
    /// Files cut short (to their last sync or a random point past it).
    pub files_cut: usize,
    /// Bytes dropped from those files.
    pub bytes_dropped: u64,
    /// Directory entries put back as they were at their directory's last sync
    /// (creations and renames undone, removals brought back).
    pub entries_reverted: usize,
    /// Byte ranges lost to failed fsyncs and zeroed.
    pub ranges_lost: usize,
}

/// A simulated file system for power-loss tests, in the manner of RocksDB's
/// FaultInjectionTestFS and of LazyFS. It writes the real files (so that the
/// engine's reads see what it wrote, as the page cache would show it) and keeps
/// beside them what the disk holds durably:
///
/// - per file, the length up to which its data was synced; a power cut drops
///   what follows (all of it, or a random prefix with a possibly torn last
///   page: [`CutMode`]);
/// - per directory, what each name held at the directory's last sync; a power
///   cut undoes the creations, renames and removals since (a removed file is
///   kept aside until then). A directory created since its parent's last sync
///   disappears with everything in it.
///
/// This is the strict POSIX model: an fsync of a file does not make its
/// directory entry durable, and a rename is not durable before its directory
/// is synced. It models ext4 and XFS with their data journaled or ordered as
/// far as sett relies on them, and not: reordering of writes within synced
/// data (a synced range is taken as fully on disk), metadata-only journaling
/// that exposes stale blocks, `rename` atomicity failures (a rename either
/// happened or did not), or a device that lies about flushes.
///
/// Faults ([`Fault`]) are planned with [`SimFs::fail`]: the nth operation of a
/// kind (or of any kind) from now.
pub struct SimFs {
    st: Mutex<SimState>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Absent,
    File(u64),
    Dir,
}

struct SimFile {
    path: PathBuf,
    synced: u64,
    /// Ranges a failed fsync lost.
    lost: Vec<(u64, u64)>,
}

struct Plan {
    kind: Option<OpKind>,
    remaining: u64,
    fault: Fault,
}

struct SimState {
    rng: u64,
    ops: u64,
    dead: bool,
    plans: Vec<Plan>,
    next_id: u64,
    files: HashMap<u64, SimFile>,
    ids: HashMap<PathBuf, u64>,
    /// Per directory, the names changed since its last sync and what each held then.
    pending: HashMap<PathBuf, HashMap<OsString, Entry>>,
    trash: PathBuf,
    trash_seq: u64,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("simulated I/O error: {what}"))
}

fn split(path: &Path) -> (PathBuf, OsString) {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path.file_name().map(OsString::from).unwrap_or_default();
    (dir, name)
}

impl SimState {
    fn next_rand(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Below `n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_rand() % n
        }
    }

    /// Counts an operation and returns the fault planned for it, if any.
    fn begin(&mut self, kind: OpKind) -> io::Result<Option<Fault>> {
        if self.dead {
            return Err(eio("the power is off"));
        }
        self.ops += 1;
        let mut hit = None;
        for p in &mut self.plans {
            if p.kind.is_none_or(|k| k == kind) && p.remaining > 0 {
                p.remaining -= 1;
                if p.remaining == 0 && hit.is_none() {
                    hit = Some(p.fault);
                }
            }
        }
        self.plans.retain(|p| p.remaining > 0);
        match hit {
            Some(Fault::PowerCut) => {
                self.dead = true;
                Err(eio("power cut"))
            }
            Some(Fault::Fails) => Err(eio("injected failure")),
            other => Ok(other),
        }
    }

    /// The id of the file at `path`, registering a file the simulation has not
    /// seen as durable as it stands.
    fn id_of(&mut self, path: &Path) -> io::Result<u64> {
        if let Some(&id) = self.ids.get(path) {
            return Ok(id);
        }
        let len = std::fs::metadata(path)?.len();
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(
            id,
            SimFile {
                path: path.to_path_buf(),
                synced: len,
                lost: Vec::new(),
            },
        );
        self.ids.insert(path.to_path_buf(), id);
        Ok(id)
    }

    /// What `path` holds now.
    fn entry_at(&mut self, path: &Path) -> io::Result<Entry> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => Ok(Entry::Dir),
            Ok(_) => Ok(Entry::File(self.id_of(path)?)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Entry::Absent),
            Err(e) => Err(e),
        }
    }

    /// Records that `path` changes; the first change since its directory's
    /// last sync remembers what it held at that sync.
    fn note_change(&mut self, path: &Path, before: Entry) {
        let (dir, name) = split(path);
        self.pending
            .entry(dir)
            .or_default()
            .entry(name)
            .or_insert(before);
    }

    /// Moves the file `id` (now at `from`) aside, out of the namespace.
    fn move_to_trash(&mut self, id: u64, from: &Path) -> io::Result<()> {
        std::fs::create_dir_all(&self.trash)?;
        self.trash_seq += 1;
        let to = self.trash.join(format!("{}", self.trash_seq));
        std::fs::rename(from, &to)?;
        self.ids.remove(from);
        if let Some(f) = self.files.get_mut(&id) {
            f.path = to.clone();
        }
        self.ids.insert(to, id);
        Ok(())
    }

    fn in_trash(&self, path: &Path) -> bool {
        path.starts_with(&self.trash)
    }

    /// Deletes kept-aside files that no pending name can bring back.
    fn purge_trash(&mut self) {
        let wanted: std::collections::HashSet<u64> = self
            .pending
            .values()
            .flat_map(|m| m.values())
            .filter_map(|e| match e {
                Entry::File(id) => Some(*id),
                _ => None,
            })
            .collect();
        let gone: Vec<u64> = self
            .files
            .iter()
            .filter(|(id, f)| self.in_trash(&f.path) && !wanted.contains(id))
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            if let Some(f) = self.files.remove(&id) {
                let _ = std::fs::remove_file(&f.path);
                self.ids.remove(&f.path);
            }
        }
    }
}

impl SimFs {
    /// A simulation over the real files; `trash` is a directory on the same
    /// file system where removed files wait until their removal is durable.
    /// Files that exist already are taken as durable. `seed` drives every
    /// random choice (short writes, cut points), so a run can be repeated.
    pub fn new(trash: impl Into<PathBuf>, seed: u64) -> SimFs {
        SimFs {
            st: Mutex::new(SimState {
                rng: seed,
                ops: 0,
                dead: false,
                plans: Vec::new(),
                next_id: 1,
                files: HashMap::new(),
                ids: HashMap::new(),
                pending: HashMap::new(),
                trash: trash.into(),
                trash_seq: 0,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, SimState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Operations counted so far (every kind; failed ones included).
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    /// Plans `fault` at the `nth` (1-based) operation from now of `kind`, or of
    /// any kind when `kind` is None.
    pub fn fail(&self, kind: Option<OpKind>, nth: u64, fault: Fault) {
        self.state().plans.push(Plan {
            kind,
            remaining: nth.max(1),
            fault,
        });
    }

    /// Turns the power off now: every later operation fails and changes nothing.
    pub fn power_off(&self) {
        self.state().dead = true;
    }

    /// True once the power is off.
    pub fn is_off(&self) -> bool {
        self.state().dead
    }

    /// Applies a power cut to the real files: directory entries go back to
    /// their last sync, files lose what was not synced (as `mode` says), kept-
    /// aside files are deleted. Call it once nothing uses the files (the Db
    /// dropped); the simulation then starts afresh with the power on, every
    /// file durable as it now stands.
    pub fn power_cut(&self, mode: CutMode) -> io::Result<CutReport> {
        let mut st = self.state();
        st.dead = true;
        let mut report = CutReport::default();

        // Directory entries, parents first, so that a directory that goes
        // takes its content with it.
        let mut dirs: Vec<PathBuf> = st.pending.keys().cloned().collect();
        dirs.sort_by_key(|d| d.components().count());
        let pending = std::mem::take(&mut st.pending);
        // Clear every pending name, moving what it holds now aside...
        for dir in &dirs {
            for (name, before) in &pending[dir] {
                let path = dir.join(name);
                match st.entry_at(&path) {
                    Ok(Entry::File(id)) if *before != Entry::File(id) => {
                        st.move_to_trash(id, &path)?;
                        report.entries_reverted += 1;
                    }
                    Ok(Entry::Dir) if *before != Entry::Dir => {
                        std::fs::remove_dir_all(&path)?;
                        report.entries_reverted += 1;
                    }
                    _ => {}
                }
            }
        }
        // ...then put back what each held at its directory's last sync.
        for dir in &dirs {
            for (name, before) in &pending[dir] {
                if let Entry::File(id) = before {
                    let path = dir.join(name);
                    let Some(from) = st.files.get(id).map(|f| f.path.clone()) else {
                        continue;
                    };
                    if from == path || !dir.is_dir() || !from.exists() {
                        continue;
                    }
                    std::fs::rename(&from, &path)?;
                    st.ids.remove(&from);
                    st.ids.insert(path.clone(), *id);
                    if let Some(f) = st.files.get_mut(id) {
                        f.path = path;
                    }
                    report.entries_reverted += 1;
                }
            }
        }

        // File contents.
        let ids: Vec<u64> = st.files.keys().copied().collect();
        for id in ids {
            let (path, synced, lost) = match st.files.get(&id) {
                Some(f) if !st.in_trash(&f.path) => (f.path.clone(), f.synced, f.lost.clone()),
                _ => continue,
            };
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let len = meta.len();
            let keep = if len > synced {
                match mode {
                    CutMode::DropUnsynced => synced,
                    CutMode::KeepRandomPrefix | CutMode::TornLastPage => {
                        synced + st.below(len - synced + 1)
                    }
                }
            } else {
                len
            };
            let file = File::options().write(true).open(&path)?;
            if keep < len {
                file.set_len(keep)?;
                report.files_cut += 1;
                report.bytes_dropped += len - keep;
            }
            if mode == CutMode::TornLastPage && keep > synced {
                let page = (keep - 1) / 4096 * 4096;
                let mut sector = page.max(synced / 512 * 512);
                while sector < keep {
                    let from = sector.max(synced);
                    let to = (sector + 512).min(keep);
                    if st.below(2) == 0 {
                        zero(&file, from, to)?;
                    }
                    sector += 512;
                }
            }
            for (a, b) in lost {
                let (a, b) = (a.min(keep), b.min(keep));
                if a < b {
                    zero(&file, a, b)?;
                    report.ranges_lost += 1;
                }
            }
        }

        // Everything kept aside goes; the survivors are durable from now on.
        let trash = st.trash.clone();
        if trash.exists() {
            std::fs::remove_dir_all(&trash)?;
        }
        st.files.clear();
        st.ids.clear();
        st.plans.clear();
        st.dead = false;
        Ok(report)
    }
}

fn zero(file: &File, from: u64, to: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let zeros = vec![0u8; (to - from) as usize];
    file.write_all_at(&zeros, from)
}

impl FileSystem for SimFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        let mut st = self.state();
        st.begin(OpKind::Create)?;
        let file = File::options().write(true).create_new(true).open(path)?;
        st.note_change(path, Entry::Absent);
        let id = st.next_id;
        st.next_id += 1;
        st.files.insert(
            id,
            SimFile {
                path: path.to_path_buf(),
                synced: 0,
                lost: Vec::new(),
            },
        );
        st.ids.insert(path.to_path_buf(), id);
        Ok(file)
    }

    fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut st = self.state();
        let fault = st.begin(OpKind::Append)?;
        // A file written before the simulation knew it is durable up to here.
        st.id_of(path)?;
        match fault {
            Some(Fault::ShortWrite) => {
                let n = st.below(data.len() as u64) as usize;
                file.write_all(&data[..n])?;
                Err(eio("short write"))
            }
            _ => file.write_all(data),
        }
    }

    fn sync(&self, file: &File, path: &Path) -> io::Result<()> {
        let mut st = self.state();
        let fault = st.begin(OpKind::Sync)?;
        let len = file.metadata()?.len();
        let id = match st.id_of(path) {
            Ok(id) => id,
            // Removed while open (GC deleted a value-log file a flush is
            // syncing): a real fsync of the descriptor succeeds. Should a cut
            // bring the name back, the file keeps what its last sync recorded.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let Some(f) = st.files.get_mut(&id) else {
            return Ok(());
        };
        if fault == Some(Fault::SyncFails) {
            if len > f.synced {
                f.lost.push((f.synced, len));
            }
            f.synced = f.synced.max(len);
            return Err(eio("fsync failed"));
        }
        // No real fsync: the simulation, not the disk, decides what survives.
        f.synced = f.synced.max(len);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.begin(OpKind::Rename)?;
        let id = st.id_of(from)?;
        let occupant = st.entry_at(to)?;
        st.note_change(from, Entry::File(id));
        st.note_change(to, occupant);
        if let Entry::File(old) = occupant {
            st.move_to_trash(old, to)?;
        }
        std::fs::rename(from, to)?;
        st.ids.remove(from);
        st.ids.insert(to.to_path_buf(), id);
        if let Some(f) = st.files.get_mut(&id) {
            f.path = to.to_path_buf();
        }
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.begin(OpKind::Link)?;
        let source = st.id_of(from)?;
        let synced = st.files.get(&source).map_or(0, |f| f.synced);
        std::fs::hard_link(from, to)?;
        st.note_change(to, Entry::Absent);
        let id = st.next_id;
        st.next_id += 1;
        st.files.insert(
            id,
            SimFile {
                path: to.to_path_buf(),
                synced,
                lost: Vec::new(),
            },
        );
        st.ids.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.begin(OpKind::Remove)?;
        let id = st.id_of(path)?;
        st.note_change(path, Entry::File(id));
        st.move_to_trash(id, path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.begin(OpKind::SyncDir)?;
        if !dir.is_dir() {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        st.pending.remove(dir);
        st.purge_trash();
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at {
            if d.as_os_str().is_empty() || d.exists() {
                break;
            }
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        if missing.is_empty() {
            return Ok(());
        }
        let mut st = self.state();
        st.begin(OpKind::CreateDir)?;
        for d in missing.iter().rev() {
            std::fs::create_dir(d)?;
            st.note_change(d, Entry::Absent);
        }
        Ok(())
    }
}
