//! [`SimFs`]: a file system that records every change and can cut the
//! power at any operation, for the power-loss tests.

use super::FileSystem;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

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
    /// past the last sync read back as zeros (or, in a file written through a
    /// mapping, as they were at the last sync).
    TornLastPage,
    /// Each unsynced 4 KiB page of each file survives or vanishes on its own
    /// (a coin toss from the seed), as the kernel's write-back, which follows
    /// no file order, leaves them: page N+5 may be on the disk and page N+1
    /// not. A vanished page reads as it was at the last sync, or as zeros
    /// past it; the file ends at the end of its last surviving page or at its
    /// synced length, whichever is further.
    ReorderedPages,
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
    /// Files where an unsynced page survived past one that vanished
    /// ([`CutMode::ReorderedPages`]): write-back out of file order.
    pub files_reordered: usize,
}

/// A simulated file system for power-loss tests, in the manner of RocksDB's
/// FaultInjectionTestFS and of LazyFS. It writes the real files (so that the
/// engine's reads see what it wrote, as the page cache would show it) and keeps
/// beside them what the disk holds durably:
///
/// - per file, the length up to which its data was synced; a power cut drops
///   what follows (all of it, or a random prefix with a possibly torn last
///   page: [`CutMode`]);
/// - per file written other than through [`FileSystem::append`] (the WAL
///   written through a mapping: [`SimFs::with_mapped_appends`]), a snapshot
///   of its content at each sync, the zeros allocated ahead included; a power
///   cut puts the snapshot back, with what `CutMode` keeps of the pages that
///   differ from it. Writes through a mapping never reach this layer: the
///   snapshot at the sync is what tells what the sync made durable;
/// - per directory, what each name held at the directory's last sync; a power
///   cut undoes the creations, renames and removals since (a removed file is
///   kept aside until then). A directory created since its parent's last sync
///   disappears with everything in it.
///
/// This is the strict POSIX model: an fsync of a file does not make its
/// directory entry durable, and a rename is not durable before its directory
/// is synced. It models ext4 and XFS with their data journaled or ordered as
/// far as sett relies on them, and not: reordering of writes within synced
/// data (a synced range is taken as fully on disk; [`CutMode::ReorderedPages`]
/// reorders only unsynced pages), metadata-only journaling
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
    /// The file's length as appends through this layer made it (its length
    /// when the simulation first saw it, plus every append since). A file
    /// longer than that was written some other way (`pwrite`, a mapping).
    appended: u64,
    /// For a file written other than by appends, its content at its last
    /// sync (`synced` is then its length): what the disk holds durably.
    image: Option<Vec<u8>>,
}

impl SimFile {
    fn new(path: &Path, synced: u64) -> SimFile {
        SimFile {
            path: path.to_path_buf(),
            synced,
            lost: Vec::new(),
            appended: synced,
            image: None,
        }
    }
}

/// The page the kernel writes back as a unit.
const PAGE: usize = 4096;

struct Plan {
    kind: Option<OpKind>,
    remaining: u64,
    fault: Fault,
}

struct SimState {
    rng: u64,
    ops: u64,
    dead: bool,
    /// The process crashed ([`SimFs::pause`]); the power is on.
    paused: bool,
    plans: Vec<Plan>,
    next_id: u64,
    files: HashMap<u64, SimFile>,
    ids: HashMap<PathBuf, u64>,
    /// Per directory, the names changed since its last sync and what each held then.
    pending: HashMap<PathBuf, HashMap<OsString, Entry>>,
    trash: PathBuf,
    trash_seq: u64,
    /// What [`FileSystem::maps_appends`] answers.
    maps_appends: bool,
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
        if self.paused {
            return Err(eio("the process crashed"));
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
        self.files.insert(id, SimFile::new(path, len));
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
                paused: false,
                plans: Vec::new(),
                next_id: 1,
                files: HashMap::new(),
                ids: HashMap::new(),
                pending: HashMap::new(),
                trash: trash.into(),
                trash_seq: 0,
                maps_appends: false,
            }),
        }
    }

    /// With `on`, the simulation says yes to [`FileSystem::maps_appends`], so
    /// that the WAL is written through a shared mapping of its file, as on
    /// Linux with the real file system. Those writes bypass this layer; each
    /// sync of such a file snapshots it, and a power cut restores the
    /// snapshot (plus the unsynced pages the cut mode keeps).
    pub fn with_mapped_appends(self, on: bool) -> SimFs {
        self.state().maps_appends = on;
        self
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

    /// Crashes the process, not the machine: every operation fails and
    /// changes nothing until [`SimFs::resume`], as for the threads of a
    /// killed process that have not stopped yet. The files keep what the
    /// page cache holds, and what was not durable still is not (a later
    /// [`SimFs::power_cut`] drops it). False if the power was off already (a
    /// planned cut came first): then `resume` leaves it off.
    pub fn pause(&self) -> bool {
        let mut st = self.state();
        st.paused = true;
        !st.dead
    }

    /// Lets operations go on after [`SimFs::pause`], as a new process of the
    /// same machine; the faults planned and not hit yet are still planned.
    pub fn resume(&self) {
        self.state().paused = false;
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

        let trash_dir = st.trash.clone();
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

        // File contents, in id order: the same seed cuts the same way.
        let mut ids: Vec<u64> = st.files.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let (path, synced, lost, image) = match st.files.get_mut(&id) {
                Some(f) if !path_in(&f.path, &trash_dir) => {
                    (f.path.clone(), f.synced, f.lost.clone(), f.image.take())
                }
                _ => continue,
            };
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            if image.is_some() || mode == CutMode::ReorderedPages {
                cut_pages(&mut st, &path, synced, &lost, image, mode, &mut report)?;
                continue;
            }
            let len = meta.len();
            let keep = if len > synced {
                match mode {
                    // (ReorderedPages cuts page by page, above.)
                    CutMode::DropUnsynced | CutMode::ReorderedPages => synced,
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
        st.paused = false;
        Ok(report)
    }
}

/// Reads the whole file at `path` into `buf`, reusing its memory.
fn read_into(path: &Path, buf: &mut Vec<u8>) -> io::Result<()> {
    use std::io::Read;
    buf.clear();
    File::open(path)?.read_to_end(buf).map(|_| ())
}

fn path_in(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}

/// The file's content as the disk holds it durably: its snapshot at the last
/// sync, or (a file only appended to) the current content up to its synced
/// length. `now` has its lost ranges zeroed already.
fn durable_of(now: &[u8], synced: u64, image: Option<Vec<u8>>) -> Vec<u8> {
    image.unwrap_or_else(|| now[..(synced as usize).min(now.len())].to_vec())
}

/// The byte range of page `p` within a file of `len` bytes.
fn page_range(p: usize, len: usize) -> std::ops::Range<usize> {
    p * PAGE..((p + 1) * PAGE).min(len)
}

/// The pages of `now` that differ from `durable` (or reach past its end):
/// the dirty pages a power cut may or may not have written back.
fn dirty_pages(now: &[u8], durable: &[u8]) -> Vec<usize> {
    (0..now.len().div_ceil(PAGE))
        .filter(|&p| {
            let r = page_range(p, now.len());
            r.end > durable.len() || now[r.clone()] != durable[r]
        })
        .collect()
}

/// Puts back in `r` of `now` what `durable` holds there (zeros past its end).
fn restore(now: &mut [u8], durable: &[u8], r: std::ops::Range<usize>) {
    let held = durable.len().clamp(r.start, r.end);
    now[r.start..held].copy_from_slice(&durable[r.start..held]);
    now[held..r.end].fill(0);
}

/// Copies `src[r]` over `out`, growing it (with zeros) to reach `r.end`.
fn put_range(out: &mut Vec<u8>, src: &[u8], r: std::ops::Range<usize>) {
    static ZERO_PAGE: [u8; PAGE] = [0; PAGE];
    while out.len() < r.end {
        let n = (r.end - out.len()).min(PAGE);
        out.extend_from_slice(&ZERO_PAGE[..n]);
    }
    out[r.clone()].copy_from_slice(&src[r]);
}

/// The cut of one file, page by page: what the disk holds durably, plus the
/// dirty pages `mode` lets survive. Used for files with a snapshot (written
/// through a mapping) and for every file under [`CutMode::ReorderedPages`].
fn cut_pages(
    st: &mut SimState,
    path: &Path,
    synced: u64,
    lost: &[(u64, u64)],
    image: Option<Vec<u8>>,
    mode: CutMode,
    report: &mut CutReport,
) -> io::Result<()> {
    let before = std::fs::read(path)?;
    // Bytes a failed fsync marked clean never reach the disk: the disk keeps
    // what it held (in a snapshot), or zeros (appended bytes).
    let mut now = before.clone();
    let clipped = |&(a, b): &(u64, u64)| (a as usize).min(now.len())..(b as usize).min(now.len());
    let lost: Vec<std::ops::Range<usize>> =
        lost.iter().map(clipped).filter(|r| !r.is_empty()).collect();
    report.ranges_lost += lost.len();
    let durable = match image {
        Some(image) => image,
        None => {
            for r in &lost {
                now[r.clone()].fill(0);
            }
            durable_of(&now, synced, None)
        }
    };
    for r in &lost {
        restore(&mut now, &durable, r.clone());
    }
    let dirty = dirty_pages(&now, &durable);
    let mut out = durable.clone();
    match (mode, dirty.first()) {
        (CutMode::DropUnsynced, _) | (_, None) => {}
        (CutMode::KeepRandomPrefix | CutMode::TornLastPage, Some(&first)) => {
            // The dirty bytes below a random point reached the disk.
            let start = first * PAGE;
            let keep = start + st.below((now.len() - start) as u64 + 1) as usize;
            put_range(&mut out, &now, 0..keep);
            if mode == CutMode::TornLastPage && keep > start {
                // Some sectors of the last page written did not make it.
                let page = (keep - 1) / PAGE * PAGE;
                let mut sector = page.max(start);
                while sector < keep {
                    let end = (sector + 512).min(keep);
                    if st.below(2) == 0 {
                        restore(&mut out, &durable, sector..end);
                    }
                    sector += 512;
                }
            }
        }
        (CutMode::ReorderedPages, Some(_)) => {
            let mut vanished = false;
            let mut reordered = false;
            for &p in &dirty {
                if st.below(2) == 0 {
                    put_range(&mut out, &now, page_range(p, now.len()));
                    reordered |= vanished;
                } else {
                    vanished = true;
                }
            }
            report.files_reordered += usize::from(reordered);
        }
    }
    if out == before {
        return Ok(());
    }
    // Only the pages the cut changed are written (a mapped WAL is mostly
    // zeros allocated ahead, the same before and after).
    use std::os::unix::fs::FileExt;
    let file = File::options().write(true).open(path)?;
    let mut dropped = before.len().saturating_sub(out.len());
    for p in 0..out.len().div_ceil(PAGE) {
        let r = page_range(p, out.len());
        let old = &before[r.start.min(before.len())..r.end.min(before.len())];
        if old != &out[r.start..r.start + old.len()] || old.len() < r.len() {
            dropped += old
                .iter()
                .zip(&out[r.clone()])
                .filter(|(a, b)| a != b)
                .count();
            file.write_all_at(&out[r.clone()], r.start as u64)?;
        }
    }
    file.set_len(out.len() as u64)?;
    report.files_cut += 1;
    report.bytes_dropped += dropped as u64;
    Ok(())
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
        st.files.insert(id, SimFile::new(path, 0));
        st.ids.insert(path.to_path_buf(), id);
        Ok(file)
    }

    fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut st = self.state();
        let fault = st.begin(OpKind::Append)?;
        // A file written before the simulation knew it is durable up to here.
        let id = st.id_of(path)?;
        let (n, res) = match fault {
            Some(Fault::ShortWrite) => {
                let n = st.below(data.len() as u64) as usize;
                (n, file.write_all(&data[..n]).and(Err(eio("short write"))))
            }
            _ => (data.len(), file.write_all(data)),
        };
        if let Some(f) = st.files.get_mut(&id) {
            f.appended += n as u64;
        }
        res
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
        if f.image.is_some() || len != f.appended {
            // Written through a mapping (or `pwrite`): the sync makes the
            // content durable as it stands now, whatever wrote it.
            if fault == Some(Fault::SyncFails) {
                // The dirty pages are clean now and never reach the disk,
                // which keeps what it held of them (zeros past it).
                let now = std::fs::read(path)?;
                let durable = durable_of(&now, f.synced, f.image.take());
                let mut image = now.clone();
                for p in dirty_pages(&now, &durable) {
                    let r = page_range(p, now.len());
                    f.lost.push((r.start as u64, r.end as u64));
                    restore(&mut image, &durable, r);
                }
                f.synced = image.len() as u64;
                f.image = Some(image);
                return Err(eio("fsync failed"));
            }
            if !f.lost.is_empty() {
                // Pages a failed fsync left clean are not written by this
                // one: the disk keeps what it held of them.
                let old = durable_of(&[], f.synced, f.image.take());
                let mut image = std::fs::read(path)?;
                for &(a, b) in &f.lost {
                    let r = (a as usize).min(image.len())..(b as usize).min(image.len());
                    restore(&mut image, &old, r);
                }
                f.synced = image.len() as u64;
                f.image = Some(image);
                return Ok(());
            }
            // The last snapshot's buffer is reused: with `sync_writes` a WAL
            // (1 MiB or more, allocated ahead) is synced at every write.
            let mut image = f.image.take().unwrap_or_default();
            let res = read_into(path, &mut image);
            f.synced = image.len() as u64;
            f.image = Some(image);
            return res;
        }
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
        let (synced, image) = st
            .files
            .get(&source)
            .map_or((0, None), |f| (f.synced, f.image.clone()));
        std::fs::hard_link(from, to)?;
        st.note_change(to, Entry::Absent);
        let id = st.next_id;
        st.next_id += 1;
        let mut link = SimFile::new(to, synced);
        link.appended = std::fs::metadata(to)?.len();
        link.image = image;
        st.files.insert(id, link);
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

    fn maps_appends(&self) -> bool {
        self.state().maps_appends
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
