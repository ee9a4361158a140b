//! How sett tells the kernel it will read its memory-mapped files.
//!
//! A page fault on a mapping with default advice makes the kernel read a whole
//! read-ahead window around the page (the device's read_ahead_kb, often MiBs):
//! a 1 KiB point read then costs MiBs of I/O and evicts what the next read
//! needs. So tables and sealed value-log files are mapped with MADV_RANDOM (a
//! fault reads only its page), and the readers that do walk a file in order ask
//! for the bytes ahead with MADV_WILLNEED, which starts the reads without
//! waiting for them.

use memmap2::{Advice, Mmap};
use std::ops::Range;

/// Largest window a sequential walk asks for at once.
pub(crate) const MAX_WINDOW: usize = 1 << 20;
/// First window of a walk that may stop soon (an iterator after a seek).
pub(crate) const FIRST_WINDOW: usize = 128 << 10;

/// Faults on `map` read only the page they touch. Best effort: without the
/// advice reads are slower, never wrong.
pub(crate) fn random(map: &Mmap) {
    let _ = map.advise(Advice::Random);
}

/// Reads of `file` through this descriptor fetch only the pages they ask for
/// (POSIX_FADV_RANDOM: no read-ahead window around a miss). Best effort, like
/// [`random`].
pub(crate) fn random_fd(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: plain fadvise on an open descriptor; no memory is involved.
    let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
}

/// Bytes asked for by one WILLNEED call. Linux reads at most one read-ahead
/// window per call (the larger of the device's read-ahead and its largest
/// request, 128 KiB each by default) and drops the rest of the range
/// without saying so; a range asked for in steps of this size is read whole.
const WILL_NEED_STEP: u64 = 128 << 10;

/// Calls `advise(start, len)` over `[off, off + len)` in steps of
/// [`WILL_NEED_STEP`].
fn in_steps(off: u64, len: u64, mut advise: impl FnMut(u64, u64)) {
    let end = off.saturating_add(len);
    let mut at = off;
    while at < end {
        let step = WILL_NEED_STEP.min(end - at);
        advise(at, step);
        at += step;
    }
}

/// Starts reading `len` bytes of `file` at `off` into the page cache
/// (POSIX_FADV_WILLNEED: the kernel submits the reads and returns without
/// waiting for them), so that a positional read of them soon after finds
/// them there or in flight. Best effort, like [`random`].
pub(crate) fn will_need_fd(file: &std::fs::File, off: u64, len: u64) {
    use std::os::fd::AsRawFd;
    #[cfg(test)]
    FD_HINTS.with(|n| n.set(n.get() + 1));
    in_steps(off, len, |off, len| {
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(off), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: plain fadvise on an open descriptor; no memory is involved.
        let _ =
            unsafe { libc::posix_fadvise(file.as_raw_fd(), off, len, libc::POSIX_FADV_WILLNEED) };
    });
}

#[cfg(test)]
thread_local! {
    /// Calls of [`will_need_fd`] on this thread (a test counts a multi-get's).
    pub(crate) static FD_HINTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Starts reading `[start, end)` of `map` into the page cache (asynchronously),
/// clamped to the mapping. Best effort, like [`random`].
pub(crate) fn will_need(map: &Mmap, start: usize, end: usize) {
    let end = end.min(map.len());
    if start < end {
        // (A mapping's WILLNEED is the file's, and is cut the same way.)
        in_steps(start as u64, (end - start) as u64, |off, len| {
            let _ = map.advise_range(Advice::WillNeed, off as usize, len as usize);
        });
    }
}

/// Whether every page holding bytes `[start, end)` of `map` is in the page
/// cache (mincore). False when the range is empty or outside the mapping, or
/// the call fails.
pub(crate) fn range_resident(map: &Mmap, start: usize, end: usize) -> bool {
    let end = end.min(map.len());
    if start >= end {
        return false;
    }
    let first = start - start % 4096;
    let mut vec = vec![0u8; (end - first).div_ceil(4096)];
    // SAFETY: a mapping starts on a page boundary, so `first` is the start of a
    // page inside the live mapping `map`, and `[first, end)` lies within it;
    // `vec` holds one status byte per page of that range, as mincore requires.
    // mincore only reads page tables.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr().add(first).cast_mut().cast(),
            end - first,
            vec.as_mut_ptr(),
        )
    };
    rc == 0 && vec.iter().all(|b| b & 1 == 1)
}

/// Read-ahead for a walk through a file in one direction, block by block: asks
/// for a window ahead of the walk, and for the next one (twice as large, up to
/// [`MAX_WINDOW`]) when the walk is half way through what was asked for last.
#[derive(Debug, Clone)]
pub(crate) struct ReadAhead {
    /// Edge of what was asked for so far, in the walk's direction.
    reach: Option<usize>,
    /// Size of the last request (of the first one, before any).
    window: usize,
}

impl ReadAhead {
    pub(crate) fn new(first_window: usize) -> ReadAhead {
        ReadAhead {
            reach: None,
            window: first_window.clamp(1, MAX_WINDOW),
        }
    }

    /// Edge of what was asked for so far, in the walk's direction.
    pub(crate) fn reach(&self) -> Option<usize> {
        self.reach
    }

    /// The range to ask for now that a forward walk is at `pos` of a `len`-byte
    /// file, or `None` if enough ahead of it was asked for already.
    pub(crate) fn forward(&mut self, pos: usize, len: usize) -> Option<Range<usize>> {
        if let Some(r) = self.reach {
            if r >= pos.saturating_add(self.window / 2) {
                return None;
            }
            self.window = (self.window * 2).min(MAX_WINDOW);
        }
        let start = self.reach.map_or(pos, |r| r.max(pos));
        let end = pos.saturating_add(self.window).min(len);
        self.reach = Some(end);
        (start < end).then_some(start..end)
    }

    /// As [`forward`](Self::forward) for a walk towards the start of the file,
    /// now at `pos` (the end of the bytes it reads next).
    pub(crate) fn backward(&mut self, pos: usize) -> Option<Range<usize>> {
        if let Some(r) = self.reach {
            if r.saturating_add(self.window / 2) <= pos {
                return None;
            }
            self.window = (self.window * 2).min(MAX_WINDOW);
        }
        let end = self.reach.map_or(pos, |r| r.min(pos));
        let start = pos.saturating_sub(self.window);
        self.reach = Some(start);
        (start < end).then_some(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::test_pages::*;
    use super::*;

    #[test]
    fn forward_walk_asks_once_per_half_window_and_never_twice_for_a_byte() {
        let len = 10 << 20;
        let mut ra = ReadAhead::new(FIRST_WINDOW);
        let mut asked: Vec<Range<usize>> = Vec::new();
        let mut asked_near_start = 0;
        for pos in (0..len).step_by(PAGE) {
            if let Some(r) = ra.forward(pos, len) {
                assert!(r.start >= pos, "{r:?} starts behind the walk at {pos}");
                asked.push(r);
                asked_near_start += usize::from(pos < FIRST_WINDOW / 2);
            }
        }
        // A walk that stops soon after a seek costs one small request.
        assert_eq!(asked_near_start, 1);
        // Contiguous, non-overlapping, covering the whole file.
        assert_eq!(asked[0], 0..FIRST_WINDOW);
        for w in asked.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        assert_eq!(asked.last().map(|r| r.end), Some(len));
        // Ramped up to the largest window: about one request per half window.
        assert!(asked.iter().all(|r| r.len() <= MAX_WINDOW));
        assert!(
            asked.len() <= 2 * len / MAX_WINDOW + 4,
            "{} requests",
            asked.len()
        );
        assert!(asked.len() >= len / MAX_WINDOW, "{} requests", asked.len());
    }

    #[test]
    fn backward_walk_covers_the_file_down_to_its_start() {
        let len = 3 << 20;
        let mut ra = ReadAhead::new(MAX_WINDOW);
        let mut asked: Vec<Range<usize>> = Vec::new();
        for end in (PAGE..=len).rev().step_by(PAGE) {
            if let Some(r) = ra.backward(end) {
                assert!(r.end <= end, "{r:?} lies past the walk at {end}");
                asked.push(r);
            }
        }
        assert_eq!(asked[0], len - MAX_WINDOW..len);
        for w in asked.windows(2) {
            assert_eq!(w[0].start, w[1].end);
        }
        assert_eq!(asked.last().map(|r| r.start), Some(0));
    }

    /// Maps a fresh 4 MiB file whose pages were dropped from the page cache;
    /// `None` where the file system keeps them (tmpfs), which the test cannot use.
    fn evicted_mapping(dir: &std::path::Path) -> Option<Mmap> {
        let path = dir.join("data");
        std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is private to this test and not changed while mapped.
        let map = unsafe { Mmap::map(&f) }.unwrap();
        (evict(&path) && resident(&map).iter().all(|r| !r)).then_some(map)
    }

    #[test]
    fn random_advice_faults_in_only_the_touched_page() {
        let dir = tempfile::tempdir().unwrap();
        let Some(map) = evicted_mapping(dir.path()) else {
            sett_test_skip::skip(
                "core-advice-random_advice-page_cache_kept",
                "the page cache of the temp dir cannot be dropped (tmpfs?)",
            );
            return;
        };
        random(&map);
        let at = 2 << 20;
        assert_eq!(std::hint::black_box(map[at]), 7);
        let r = resident(&map);
        let n = r.iter().filter(|&&x| x).count();
        assert!(r[at / PAGE]);
        // Default advice would have read a read-ahead window (hundreds of pages).
        assert!(n <= 4, "{n} pages resident after one touch");
    }

    #[test]
    fn will_need_reads_the_range_ahead_and_nothing_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let Some(map) = evicted_mapping(dir.path()) else {
            sett_test_skip::skip(
                "core-advice-will_need-page_cache_kept",
                "the page cache of the temp dir cannot be dropped (tmpfs?)",
            );
            return;
        };
        random(&map);
        let range = (1 << 20)..(1 << 20) + (256 << 10);
        will_need(&map, range.start, range.end);
        let pages = range.start / PAGE..range.end / PAGE;
        eventually("range resident", || {
            resident(&map)[pages.clone()].iter().all(|&x| x)
        });
        assert!(
            resident(&map)[..pages.start].iter().all(|&x| !x),
            "read before the range"
        );
    }

    #[test]
    fn will_need_of_a_range_many_read_ahead_windows_long_reads_it_whole() {
        // Linux reads one read-ahead window per WILLNEED call (8 MiB at
        // most on common devices): 32 MiB in one call would come back a
        // quarter read, and a GC round reading a file in key order would
        // then pay a device read per value.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        let len = 32 << 20;
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: the file is private to this test and not changed while mapped.
        let map = unsafe { Mmap::map(&f) }.unwrap();
        if !(evict(&path) && resident(&map).iter().all(|r| !r)) {
            sett_test_skip::skip(
                "core-advice-will_need_fd-page_cache_kept",
                "the page cache of the temp dir cannot be dropped (tmpfs?)",
            );
            return;
        }
        random(&map);
        random_fd(&f);
        will_need_fd(&f, 0, len as u64);
        eventually("the whole file resident", || {
            resident(&map).iter().all(|&x| x)
        });
    }
}

/// Page-cache probes for tests of read advice.
#[cfg(test)]
pub(crate) mod test_pages {
    use std::os::fd::AsRawFd;

    pub(crate) const PAGE: usize = 4096;

    /// Pages of the mapped `bytes` (starting on a page) resident in the page
    /// cache, one bool per page.
    pub(crate) fn resident(bytes: &[u8]) -> Vec<bool> {
        let pages = bytes.len().div_ceil(PAGE);
        let mut v = vec![0u8; pages];
        // SAFETY: the range is a live mapping that starts on a page boundary,
        // and `v` holds one byte per page of it, as mincore requires.
        let rc = unsafe { libc::mincore(bytes.as_ptr() as *mut _, bytes.len(), v.as_mut_ptr()) };
        assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
        v.iter().map(|b| b & 1 == 1).collect()
    }

    /// Writes back and drops the file's pages from the page cache; false if
    /// that failed.
    pub(crate) fn evict(path: &std::path::Path) -> bool {
        let f = std::fs::File::open(path).unwrap();
        f.sync_all().unwrap();
        // SAFETY: plain fadvise on an open descriptor; no memory is involved.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
    }

    /// Waits up to 10 s for `f` to hold (read-ahead completes asynchronously).
    pub(crate) fn eventually(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !f() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: not after 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
