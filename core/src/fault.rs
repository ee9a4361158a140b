//! Fault injection for the reliability tests: with the `fault-injection`
//! feature, the Nth write or fsync on the write path (WAL, value log, tables,
//! manifest), or the Nth value-log read, fails with EIO or ENOSPC. Without the feature every check is a
//! no-op that the compiler removes.

/// Which calls can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    Sync,
    /// A positional read of the value log.
    Read,
}

#[cfg(feature = "fault-injection")]
mod imp {
    use super::Op;
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

    static COUNT: AtomicU64 = AtomicU64::new(0);
    static FAIL_AT: AtomicU64 = AtomicU64::new(0);
    static ERRNO: AtomicI32 = AtomicI32::new(0);

    /// Fails the `n`th write-path call from now (1-based) with `errno`; 0 disarms.
    pub fn arm(n: u64, errno: i32) {
        COUNT.store(0, Ordering::SeqCst);
        ERRNO.store(errno, Ordering::SeqCst);
        FAIL_AT.store(n, Ordering::SeqCst);
    }

    /// Write-path calls counted since the last `arm`.
    pub fn calls() -> u64 {
        COUNT.load(Ordering::SeqCst)
    }

    pub(crate) fn check(_op: Op) -> std::io::Result<()> {
        let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
        let at = FAIL_AT.load(Ordering::SeqCst);
        if at != 0 && n == at {
            return Err(std::io::Error::from_raw_os_error(
                ERRNO.load(Ordering::SeqCst),
            ));
        }
        Ok(())
    }
}

#[cfg(feature = "fault-injection")]
pub use imp::{arm, calls};

/// Fails the call if the injector says so (always Ok without the feature).
#[inline(always)]
pub(crate) fn check(op: Op) -> std::io::Result<()> {
    #[cfg(feature = "fault-injection")]
    return imp::check(op);
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = op;
        Ok(())
    }
}
