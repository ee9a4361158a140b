//! The change feed: `Db.subscribe()` returns a `Subscription` whose `next()`
//! gives lists of `Change`, in version order; iterating it waits for each
//! list. Waits release the GIL and wake every 100 ms to let Ctrl-C through.

use crate::convert::bytes_arg;
use crate::errors::to_py;
use pyo3::exceptions::{PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use sett_core::{ChangeKind, Error, SubscribeOptions};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One committed write: `key`, `value` (None for a delete), `version` (shared
/// by every write of a batch or transaction), `user_meta`, `expires_at` (unix
/// seconds, 0 = never). A range delete has `key` = its start, `range_end` =
/// its end (b"" = no upper bound), `value` None and `deleted` True.
#[pyclass(module = "sett._sett", frozen)]
pub struct Change {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    range_end: Option<Vec<u8>>,
    /// True for a merge: `value` is the operand written, not the key's new value.
    #[pyo3(get)]
    merged: bool,
    #[pyo3(get)]
    version: u64,
    #[pyo3(get)]
    user_meta: u8,
    #[pyo3(get)]
    expires_at: u64,
}

#[pymethods]
impl Change {
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.key)
    }

    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.value.as_deref().map(|v| PyBytes::new(py, v))
    }

    /// True for a delete (and a range delete).
    #[getter]
    fn deleted(&self) -> bool {
        self.value.is_none()
    }

    /// The end of a range delete (every key in `[key, range_end)` was
    /// deleted; b"" = no upper bound); None for any other change.
    #[getter]
    fn range_end<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.range_end.as_deref().map(|v| PyBytes::new(py, v))
    }

    fn __repr__(&self) -> String {
        if let Some(end) = &self.range_end {
            return format!(
                "Change(range [{:?}, {:?}) deleted, version={})",
                String::from_utf8_lossy(&self.key),
                String::from_utf8_lossy(end),
                self.version
            );
        }
        match &self.value {
            Some(v) => format!(
                "Change(key={:?}, value=<{} bytes>, version={})",
                String::from_utf8_lossy(&self.key),
                v.len(),
                self.version
            ),
            None => format!(
                "Change(key={:?}, deleted, version={})",
                String::from_utf8_lossy(&self.key),
                self.version
            ),
        }
    }
}

/// A live subscription; see `Db.subscribe`. A context manager that closes it.
#[pyclass(module = "sett._sett")]
pub struct Subscription {
    sub: Mutex<Option<Arc<sett_core::Subscription>>>,
}

impl Subscription {
    fn live(&self) -> PyResult<Arc<sett_core::Subscription>> {
        self.sub
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| to_py(Error::Closed))
    }

    /// Waits up to `timeout` (None: until changes come) in slices that let
    /// signals through.
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Vec<Change>>> {
        let sub = self.live()?;
        let deadline = match timeout {
            Some(t) if !(t >= 0.0 && t.is_finite()) => {
                return Err(PyValueError::new_err(format!(
                    "timeout must be a finite number of seconds >= 0, not {t}"
                )))
            }
            Some(t) => Some(Instant::now() + Duration::from_secs_f64(t)),
            None => None,
        };
        let slice = Duration::from_millis(100);
        loop {
            // Closed from another thread while this one waited.
            if self.closed() {
                return Err(to_py(Error::Closed));
            }
            let wait = deadline.map_or(slice, |d| {
                d.saturating_duration_since(Instant::now()).min(slice)
            });
            let got = py.detach(|| sub.next(Some(wait))).map_err(to_py)?;
            if let Some(changes) = got {
                return Ok(Some(changes.into_iter().map(convert).collect()));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            py.check_signals()?;
        }
    }
}

fn convert(c: sett_core::Change) -> Change {
    let (value, range_end) = match c.kind {
        ChangeKind::Delete => (None, None),
        ChangeKind::DeleteRange => (None, Some(c.value)),
        _ => (Some(c.value), None),
    };
    Change {
        merged: c.kind == ChangeKind::Merge,
        key: c.key,
        value,
        range_end,
        version: c.version,
        user_meta: c.user_meta,
        expires_at: c.expires_at,
    }
}

#[pymethods]
impl Subscription {
    /// The changes committed so far (a list, in version order), waiting up to
    /// `timeout` seconds (None: until some come) for the first; None when the
    /// timeout passed. Raises FellBehindError (with `resume_from`) once the
    /// subscriber fell behind, ClosedError once the database is closed and
    /// every change committed before was delivered.
    #[pyo3(signature = (timeout=None))]
    fn next(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Vec<Change>>> {
        self.wait(py, timeout)
    }

    /// The version it started after: changes delivered have higher versions.
    #[getter]
    fn start_version(&self) -> PyResult<u64> {
        Ok(self.live()?.start_version())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Waits for the next list of changes; the iteration ends when the
    /// database closes (or the subscription is closed).
    fn __next__(&self, py: Python<'_>) -> PyResult<Vec<Change>> {
        match self.wait(py, None) {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err(PyStopIteration::new_err(())),
            Err(e) if e.is_instance_of::<crate::errors::ClosedError>(py) => {
                Err(PyStopIteration::new_err(()))
            }
            Err(e) => Err(e),
        }
    }

    /// Unsubscribes; later calls raise ClosedError.
    fn close(&self) {
        self.sub.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.sub.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }
}

/// `Db.subscribe`: see its docstring in db.rs.
pub(crate) fn subscribe(
    py: Python<'_>,
    open: impl FnOnce(SubscribeOptions) -> sett_core::Result<sett_core::Subscription> + Send,
    prefixes: Option<&Bound<'_, PyAny>>,
    since: Option<u64>,
    max_pending_bytes: Option<usize>,
) -> PyResult<Subscription> {
    let mut opts = SubscribeOptions {
        from: since,
        ..SubscribeOptions::default()
    };
    if let Some(p) = prefixes {
        if p.is_instance_of::<PyBytes>() || p.is_instance_of::<pyo3::types::PyByteArray>() {
            return Err(PyValueError::new_err(
                "prefixes is a list of bytes prefixes, not one bytes object: pass [prefix]",
            ));
        }
        for item in p.try_iter()? {
            opts.prefixes.push(bytes_arg(&item?, "prefix")?);
        }
    }
    if let Some(m) = max_pending_bytes {
        opts.max_pending_bytes = m;
    }
    let sub = py.detach(|| open(opts)).map_err(to_py)?;
    Ok(Subscription {
        sub: Mutex::new(Some(Arc::new(sub))),
    })
}
