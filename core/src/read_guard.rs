//! Reads through file mappings that fail with an error, not a SIGBUS.
//!
//! Tables and sealed value-log files are read through shared read-only
//! mappings. When the kernel cannot fill a page of a mapping (EIO from the
//! device, or a file cut short under the mapping), the faulting thread gets
//! SIGBUS, whose default action kills the host process. LMDB and Badger die
//! there; RocksDB reads with `pread` and gets EIO back.
//!
//! sett keeps its mappings (a lookup in memory costs no system call) and
//! turns the fault into an error of the read that met it:
//!
//! - Every read of a mapping runs inside [`read`], which marks the thread as
//!   being inside a guarded read (a thread-local counter) and names the file.
//! - A process-wide SIGBUS handler (installed once, chained to whatever
//!   handler was there before) checks that mark. Inside a guarded read it
//!   maps a zero-filled anonymous page over the page that failed, notes the
//!   fault, and returns: the faulting load runs again and reads zeros.
//!   Outside one, the signal goes to the previous handler (or the default
//!   action), as if sett had not been there.
//! - When the guarded read ends, a noted fault throws its result away and
//!   returns `Error::Io` (EIO) naming the file; the file is marked failed, so
//!   every later read of it returns the same error without touching the zero
//!   page. Reopening the database maps the file again.
//! - Another thread reading the same file while that happens could read the
//!   zero page before the file is marked. A process-wide fault counter, read at
//!   the start and the end of every guarded read, catches that: a read that
//!   overlapped a fault waits until the faulting thread has marked its file,
//!   then returns the error if its own file is the one that failed.
//!
//! What stays unguarded: slices an iterator hands out (its current key and
//! value) point into the mapping until the next step. The read that produced
//! them touched their pages inside a guard a moment before; only a page
//! evicted and failing in that window would still raise SIGBUS outside.

use crate::error::{Error, Result};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

const PAGE: usize = 4096;

/// Faults taken inside guarded reads since the process started.
static FAULTS: AtomicUsize = AtomicUsize::new(0);
/// Faults whose file is not yet marked failed.
static PENDING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Depth of guarded reads on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Address of the first fault in this thread's current guarded read, or 0.
    static FAULT_ADDR: Cell<usize> = const { Cell::new(0) };
}

static INSTALL: Once = Once::new();
/// The SIGBUS action in place before ours, for signals that are not ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// A file read through a mapping: `failed` is set once a read of it faulted.
pub(crate) struct Mapped<'a> {
    pub path: &'a Path,
    pub failed: &'a AtomicBool,
}

/// Runs `f`, which reads the mapping of `file`, turning a SIGBUS in it into
/// an I/O error. `f` must only read (it may run on zero-filled pages after a
/// fault, and its result is then discarded) and must not panic on bytes that
/// do not check.
pub(crate) fn read<T>(file: Mapped<'_>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    if file.failed.load(Ordering::Acquire) {
        return Err(failed_error(file.path));
    }
    install();
    let faults_before = FAULTS.load(Ordering::SeqCst);
    let pending_before = PENDING.load(Ordering::SeqCst);
    let outer = DEPTH.with(|d| {
        let depth = d.get();
        d.set(depth + 1);
        depth == 0
    });
    let result = f();
    DEPTH.with(|d| d.set(d.get() - 1));
    let own_fault = if outer {
        FAULT_ADDR.with(|a| a.replace(0))
    } else {
        0
    };
    if own_fault != 0 {
        file.failed.store(true, Ordering::SeqCst);
        PENDING.fetch_sub(1, Ordering::SeqCst);
        return Err(Error::io(
            format!(
                "reading {} through its mapping (the page at address {own_fault:#x} could not be read)",
                file.path.display()
            ),
            std::io::Error::from_raw_os_error(libc::EIO),
        ));
    }
    if FAULTS.load(Ordering::SeqCst) != faults_before || pending_before > 0 {
        // A fault elsewhere overlapped this read: wait until its file is
        // marked, then trust the result only if that file is not this one.
        while PENDING.load(Ordering::SeqCst) > 0 {
            std::thread::yield_now();
        }
        if file.failed.load(Ordering::SeqCst) {
            return Err(failed_error(file.path));
        }
    }
    result
}

fn failed_error(path: &Path) -> Error {
    Error::io(
        format!(
            "reading {}: an earlier read of this file failed (reopen the database to try it again)",
            path.display()
        ),
        std::io::Error::from_raw_os_error(libc::EIO),
    )
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction with a zeroed struct, our handler and an empty
        // mask is the documented way to install a handler; the previous action
        // is saved before ours is installed, so the handler always finds it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                on_sigbus;
            action.sa_sigaction = handler as usize;
            // SA_ONSTACK: Go's runtime requires it of handlers installed
            // after its own (the fault may arrive on a goroutine's stack).
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                return;
            }
            let _ = PREVIOUS.set(previous);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// The SIGBUS handler. Async-signal-safe: atomics, thread-locals without
/// destructors, mmap and sigaction. (A thread-local is read without a
/// process-wide counter of guarded reads, which would cost every read a
/// contended atomic write; on a thread that never read through sett, in a
/// library loaded with dlopen, that first read may allocate the thread's
/// block: only a SIGBUS that is not sett's, which was going to end the
/// process or go to its own handler, meets that.)
extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if DEPTH.with(|d| d.get()) > 0 {
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        let page = addr & !(PAGE - 1);
        // SAFETY: the faulting page lies in one of sett's read-only file
        // mappings (this thread is inside a guarded read of one, and only
        // reads it). Replacing that page with a zero-filled private page
        // changes no memory that anything else owns; the file is marked
        // failed before the guarded read returns, so nothing trusts the zeros.
        let mapped = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                PAGE,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped != libc::MAP_FAILED {
            if FAULT_ADDR.with(|a| a.get()) == 0 {
                FAULT_ADDR.with(|a| a.set(addr.max(1)));
                PENDING.fetch_add(1, Ordering::SeqCst);
            }
            FAULTS.fetch_add(1, Ordering::SeqCst);
            return;
        }
    }
    // Not ours: hand the signal on as if this handler were not installed.
    // SAFETY: calling the previous handler with the same arguments is what
    // chaining handlers means (its address came from sigaction, with the
    // signature its SA_SIGINFO flag says); restoring the default action and
    // returning lets the faulting access fault again under it.
    unsafe {
        match PREVIOUS.get() {
            Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    let h: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(p.sa_sigaction);
                    h(sig, info, ctx);
                } else {
                    let h: extern "C" fn(libc::c_int) = std::mem::transmute(p.sa_sigaction);
                    h(sig);
                }
            }
            _ => {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memmap2::Mmap;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn mapped_file(pages: usize) -> (tempfile::TempDir, std::path::PathBuf, Mmap) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; pages * PAGE]).unwrap();
        f.sync_all().unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: test file, truncated on purpose below to make reads fault.
        let map = unsafe { Mmap::map(&f) }.unwrap();
        (dir, path, map)
    }

    #[test]
    fn a_read_past_a_truncated_end_is_an_error_and_the_file_stays_failed() {
        let (_dir, path, map) = mapped_file(4);
        let failed = AtomicBool::new(false);
        let sum = |range: std::ops::Range<usize>| {
            read(
                Mapped {
                    path: &path,
                    failed: &failed,
                },
                || Ok(map[range].iter().map(|&b| u64::from(b)).sum::<u64>()),
            )
        };
        assert_eq!(sum(0..PAGE).unwrap(), 7 * PAGE as u64);
        // Cut the file under the mapping: its last two pages now raise SIGBUS.
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2 * PAGE as u64)
            .unwrap();
        let err = sum(3 * PAGE..4 * PAGE).unwrap_err();
        assert!(err.to_string().contains("could not be read"), "{err}");
        assert!(failed.load(Ordering::SeqCst));
        // Later reads of the file fail without trusting the zero page.
        let err = sum(3 * PAGE..4 * PAGE).unwrap_err();
        assert!(err.to_string().contains("earlier read"), "{err}");
        assert!(sum(0..PAGE).is_err());
        // Another file's reads are unaffected.
        let (_d2, p2, m2) = mapped_file(1);
        let ok = AtomicBool::new(false);
        let v = read(
            Mapped {
                path: &p2,
                failed: &ok,
            },
            || Ok(m2[0]),
        );
        assert_eq!(v.unwrap(), 7);
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// What a guarded read adds to one lookup (run with
    /// `cargo test --release -p sett --lib read_guard::cost -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn guarded_read_cost() {
        let path = Path::new("x");
        let failed = AtomicBool::new(false);
        let data: Vec<u64> = (0..1024).collect();
        let n = 20_000_000u64;
        for round in 0..3 {
            let t = std::time::Instant::now();
            let mut s = 0u64;
            for i in 0..n {
                s = s.wrapping_add(std::hint::black_box(&data)[(i & 1023) as usize]);
            }
            let plain = t.elapsed().as_nanos() as f64 / n as f64;
            let t = std::time::Instant::now();
            let mut g = 0u64;
            for i in 0..n {
                let mapped = Mapped {
                    path,
                    failed: &failed,
                };
                g = g.wrapping_add(
                    read(mapped, || {
                        Ok(std::hint::black_box(&data)[(i & 1023) as usize])
                    })
                    .unwrap_or(0),
                );
            }
            let guarded = t.elapsed().as_nanos() as f64 / n as f64;
            assert_eq!(s, g);
            println!("round {round}: plain {plain:.2} ns, guarded {guarded:.2} ns per read");
        }
    }
}
