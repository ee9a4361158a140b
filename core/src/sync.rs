//! Locking that survives a panic elsewhere.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, also after a thread panicked holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic on another thread must not make the Db unusable; the state it guards
    // is only changed in steps that leave it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
