//! The file-system layer. Every operation that changes what is on disk goes
//! through [`Fs`]: creating a file, appending to it, syncing it, renaming,
//! hard-linking or removing it, syncing a directory, creating a directory. A
//! test can put `SimFs` (feature `testing`) in the place of the real file
//! system ([`RealFs`], the default) and cut the power at any of those
//! operations.
//!
//! Reads do not go through this layer: tables and sealed value-log files are
//! mapped and the head value-log file is read with `pread`, from the real
//! files that every implementation writes (through `crypt::ReadFile`, which
//! decrypts them when the Db is encrypted: then nothing is read through a
//! mapping). The directory lock (`LOCK`) is
//! taken outside it too: it holds no data. Nor do the WAL's writes when the
//! file system says it [maps appends](FileSystem::maps_appends) (Linux): they
//! are copies into a shared mapping, and only the syncs of the file come
//! here, which is what `SimFs` builds its model of those files on.

use std::fs::File;
use std::io::{self, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// Asks the kernel to start writing `[from, to)` of `file` out, without
/// waiting for it (RocksDB's `bytes_per_sync`): a later fsync then has little
/// left to wait for. A hint only, for any file system: durability still
/// comes from a sync, and an error here is ignored as the kernel's own
/// writeback would be.
pub(crate) fn start_writeback(file: &File, from: u64, to: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: sync_file_range only reads its integer arguments; the fd is
        // owned by `file`, open for the duration of the call.
        unsafe {
            libc::sync_file_range(
                file.as_raw_fd(),
                from as libc::off64_t,
                to.saturating_sub(from) as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, from, to);
}

thread_local! {
    /// The encrypted copy of an append's chunk (at most [`WRITE_CHUNK`]
    /// bytes), kept for the thread's next one: a fresh buffer of a MiB
    /// costs a page fault per page each time.
    static SEALED: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest buffer [`SEALED`] keeps between appends.
const SEALED_KEEP: usize = WRITE_CHUNK;

/// The most one write call hands the kernel. A larger write makes Linux
/// fill the page cache with large folios (2 MiB and up), which come from
/// the free blocks a virtual machine with free page reporting has handed
/// back to its host: every page of them is then faulted in again by the
/// host during the copy. On such a machine (Firecracker's default) a 16 MiB
/// write after a few idle seconds measured 40x the system time of the same
/// bytes in 1 MiB writes; on others the cap costs one call per MiB.
pub(crate) const WRITE_CHUNK: usize = 1 << 20;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn create_new(&self, path: &Path) -> io::Result<File> {
        File::options().write(true).create_new(true).open(path)
    }

    fn append(&self, file: &mut File, _path: &Path, data: &[u8]) -> io::Result<()> {
        write_all_chunked(file, data)
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

/// Writes all of `data` in calls of at most [`WRITE_CHUNK`] bytes.
fn write_all_chunked<W: Write>(out: &mut W, data: &[u8]) -> io::Result<()> {
    for chunk in data.chunks(WRITE_CHUNK) {
        out.write_all(chunk)?;
    }
    Ok(())
}

/// Writes every slice, in order, in `writev` calls of at most 1024 slices
/// and [`WRITE_CHUNK`] bytes each.
fn write_all_vectored<W: Write>(out: &mut W, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    // Empty slices first would make a call that writes nothing.
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let written = if slices[0].len() >= WRITE_CHUNK {
            out.write(&slices[0][..WRITE_CHUNK])
        } else {
            // Linux takes at most 1024 iovecs per call.
            let mut n = 0;
            let mut bytes = 0;
            while n < slices.len().min(1024) && bytes + slices[n].len() <= WRITE_CHUNK {
                bytes += slices[n].len();
                n += 1;
            }
            out.write_vectored(&slices[..n])
        };
        match written {
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
/// Under encryption ([`crate::Options::encryption`]), the Db's `Fs` also
/// encrypts: it writes each new file's plaintext prefix and encrypts every
/// append at the file's end (see `crypt`), and never maps appends.
#[derive(Clone)]
pub struct Fs {
    inner: Arc<dyn FileSystem>,
    crypt: Option<Arc<crate::crypt::Writer>>,
}

impl Fs {
    /// The operating system's file system.
    pub fn real() -> Fs {
        Fs::new(Arc::new(RealFs))
    }

    /// Another implementation, such as a `SimFs` (feature `testing`).
    pub fn new(fs: Arc<dyn FileSystem>) -> Fs {
        Fs {
            inner: fs,
            crypt: None,
        }
    }

    /// This file system, encrypting every file created through it with the
    /// keys of `keys`.
    pub(crate) fn encrypted(&self, keys: Arc<crate::crypt::KeyRing>) -> Fs {
        Fs {
            inner: self.inner.clone(),
            crypt: Some(Arc::new(crate::crypt::Writer::new(keys))),
        }
    }

    /// This file system without encryption: writes bytes as they are.
    pub(crate) fn plain(&self) -> Fs {
        Fs::new(self.inner.clone())
    }

    /// The data keys files are encrypted with, if any.
    pub(crate) fn keys(&self) -> Option<&Arc<crate::crypt::KeyRing>> {
        self.crypt.as_ref().map(|c| c.keys())
    }

    pub(crate) fn create_new(&self, path: &Path) -> io::Result<File> {
        let mut file = self.inner.create_new(path)?;
        if let Some(c) = &self.crypt {
            let prefix = c.start(path)?;
            if let Err(e) = self.inner.append(&mut file, path, &prefix) {
                // The caller drops the file; forget its cipher too.
                c.removed(path);
                return Err(e);
            }
        }
        Ok(file)
    }

    pub(crate) fn append(&self, file: &mut File, path: &Path, data: &[u8]) -> io::Result<()> {
        match &self.crypt {
            None => self.inner.append(file, path, data),
            Some(c) => {
                for chunk in data.chunks(WRITE_CHUNK) {
                    self.append_sealed(c, file, path, &[chunk])?;
                }
                Ok(())
            }
        }
    }

    pub(crate) fn append_vectored(
        &self,
        file: &mut File,
        path: &Path,
        slices: &mut [IoSlice<'_>],
    ) -> io::Result<()> {
        let Some(c) = &self.crypt else {
            return self.inner.append_vectored(file, path, slices);
        };
        // Sealed a chunk at a time into one reused buffer of at most
        // `WRITE_CHUNK` bytes: a whole group of large values copied and
        // sealed at once would take two fresh buffers of its size, faulted
        // in page by page.
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut bytes = 0;
        for slice in slices.iter() {
            let mut rest: &[u8] = slice;
            while !rest.is_empty() {
                let take = rest.len().min(WRITE_CHUNK - bytes);
                parts.push(&rest[..take]);
                bytes += take;
                rest = &rest[take..];
                if bytes == WRITE_CHUNK {
                    self.append_sealed(c, file, path, &parts)?;
                    parts.clear();
                    bytes = 0;
                }
            }
        }
        if parts.is_empty() {
            return Ok(());
        }
        self.append_sealed(c, file, path, &parts)
    }

    /// Encrypts `parts`, back to back, for the end of `path`'s file and
    /// appends them in one call.
    fn append_sealed(
        &self,
        c: &crate::crypt::Writer,
        file: &mut File,
        path: &Path,
        parts: &[&[u8]],
    ) -> io::Result<()> {
        SEALED.with(|buf| {
            let mut sealed = buf.take();
            c.seal(path, parts, &mut sealed)?;
            let res = self.inner.append(file, path, &sealed);
            c.commit(path, res.as_ref().ok().map(|_| sealed.len()));
            if sealed.capacity() <= SEALED_KEEP {
                buf.set(sealed);
            }
            res
        })
    }

    /// With the `unsafe-skip-fsync` feature (a mutation check for the power-loss
    /// tests, never for use) this does nothing.
    pub(crate) fn sync(&self, file: &File, path: &Path) -> io::Result<()> {
        if cfg!(feature = "unsafe-skip-fsync") {
            return Ok(());
        }
        self.inner.sync(file, path)
    }

    pub(crate) fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)?;
        if let Some(c) = &self.crypt {
            c.renamed(from, to);
        }
        Ok(())
    }

    pub(crate) fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)
    }

    /// Never under encryption: a mapping would hold plaintext.
    pub(crate) fn maps_appends(&self) -> bool {
        self.crypt.is_none() && self.inner.maps_appends()
    }

    pub(crate) fn remove(&self, path: &Path) -> io::Result<()> {
        if let Some(c) = &self.crypt {
            c.removed(path);
        }
        self.inner.remove(path)
    }

    /// With the `unsafe-skip-dir-sync` feature (a mutation check) this does nothing.
    pub(crate) fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if cfg!(feature = "unsafe-skip-dir-sync") {
            return Ok(());
        }
        self.inner.sync_dir(dir)
    }

    pub(crate) fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
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

// SimFs, the simulated file system of the power-loss tests, is built for
// this crate's tests and for dependents that ask for the `testing` feature,
// never into a release library.
#[cfg(any(test, feature = "testing"))]
mod sim;
#[cfg(any(test, feature = "testing"))]
pub use sim::{CutMode, CutReport, Fault, OpKind, SimFs};

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that records each call's length and takes at most `take`
    /// bytes of it, as a short write would.
    struct Recorder {
        calls: Vec<usize>,
        data: Vec<u8>,
        take: usize,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            assert!(bufs.len() <= 1024, "{} iovecs in one call", bufs.len());
            self.calls.push(bufs.iter().map(|b| b.len()).sum());
            let mut took = 0;
            for b in bufs {
                let n = b.len().min(self.take - took);
                self.data.extend_from_slice(&b[..n]);
                took += n;
            }
            Ok(took)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn a_large_append_reaches_the_kernel_in_calls_of_at_most_a_chunk_and_in_order() {
        // A 16 MiB group of 16 KiB values, a 3.5 MiB value, empty slices and
        // 2000 tiny ones: what the value log's writer hands over.
        let mut parts: Vec<Vec<u8>> = (0..1024).map(|i| bytes(16 << 10, i as u8)).collect();
        parts.insert(3, Vec::new());
        parts.insert(0, Vec::new());
        parts.push(bytes(3 * WRITE_CHUNK + WRITE_CHUNK / 2, 7));
        parts.extend((0..2000).map(|i| bytes(3, i as u8)));
        let want: Vec<u8> = parts.concat();
        for take in [usize::MAX, 300_001] {
            let mut rec = Recorder {
                calls: Vec::new(),
                data: Vec::new(),
                take,
            };
            let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
            write_all_vectored(&mut rec, &mut slices).expect("vectored");
            assert!(rec.data == want, "bytes differ (short writes of {take})");
            let most = rec.calls.iter().max().copied().unwrap_or(0);
            assert!(most <= WRITE_CHUNK, "a call of {most} bytes");

            let mut rec = Recorder {
                calls: Vec::new(),
                data: Vec::new(),
                take,
            };
            write_all_chunked(&mut rec, &want).expect("chunked");
            assert!(rec.data == want, "bytes differ (short writes of {take})");
            let most = rec.calls.iter().max().copied().unwrap_or(0);
            assert!(most <= WRITE_CHUNK, "a call of {most} bytes");
        }
    }

    #[test]
    fn an_encrypted_append_larger_than_a_chunk_reads_back_whole_at_any_offset() {
        let dir = tempfile::tempdir().expect("dir");
        let fs = crate::crypt::test_fs(dir.path());
        let path = dir.path().join("000001.vlog");
        let mut file = fs.create_new(&path).expect("create");
        // A group of values as the value log hands it over, then one plain
        // append: the second must continue the first's keystream.
        let parts: Vec<Vec<u8>> = vec![
            bytes(100, 1),
            Vec::new(),
            bytes(3 * WRITE_CHUNK + 12_345, 2),
            bytes(WRITE_CHUNK - 100, 3),
            bytes(7, 4),
        ];
        let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
        fs.append_vectored(&mut file, &path, &mut slices)
            .expect("vectored");
        let tail = bytes(2 * WRITE_CHUNK + 1, 5);
        fs.append(&mut file, &path, &tail).expect("append");
        let mut want = parts.concat();
        want.extend_from_slice(&tail);

        let raw = std::fs::read(&path).expect("raw");
        assert!(raw.len() > want.len(), "the prefix is there");
        assert!(raw[raw.len() - want.len()..] != want[..], "encrypted");
        let r = crate::crypt::ReadFile::open(&fs, &path).expect("open");
        let mut got = vec![0u8; want.len()];
        r.read_exact_at(&mut got, 0).expect("read");
        assert!(got == want, "decrypted bytes differ");
        for at in [WRITE_CHUNK - 3, 2 * WRITE_CHUNK + 50, want.len() - 9] {
            let mut part = vec![0u8; 9];
            r.read_exact_at(&mut part, at as u64).expect("read part");
            assert_eq!(part, want[at..at + 9], "at {at}");
        }
    }

    #[test]
    fn an_append_of_only_empty_slices_writes_nothing_and_succeeds() {
        let mut rec = Recorder {
            calls: Vec::new(),
            data: Vec::new(),
            take: usize::MAX,
        };
        let mut slices = [IoSlice::new(&[]), IoSlice::new(&[])];
        write_all_vectored(&mut rec, &mut slices).expect("empty");
        assert!(rec.calls.is_empty() && rec.data.is_empty());
    }
}
