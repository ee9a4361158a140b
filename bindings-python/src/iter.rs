//! `Iter`: a Python iterator over a snapshot, filled in chunks with the GIL released.

use crate::errors::to_py;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sett_core::DbIterator;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Items fetched per trip into the engine (the GIL is released meanwhile).
const CHUNK: usize = 256;

/// Iterator of (key, value) tuples, or of keys when `keys_only`. It keeps its
/// database object alive; once that database is closed it raises ClosedError.
#[pyclass(module = "sett._sett", name = "Iter")]
pub struct PyIter {
    it: Mutex<Option<DbIterator>>,
    buf: Mutex<VecDeque<(Vec<u8>, Vec<u8>)>>,
    keys_only: bool,
    _owner: Option<PyObject>,
}

impl PyIter {
    pub(crate) fn new(it: DbIterator, keys_only: bool, owner: Option<PyObject>) -> PyIter {
        PyIter {
            it: Mutex::new(Some(it)),
            buf: Mutex::new(VecDeque::new()),
            keys_only,
            _owner: owner,
        }
    }
}

#[pymethods]
impl PyIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        let mut buf = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        if buf.is_empty() {
            let mut guard = self.it.lock().unwrap_or_else(|p| p.into_inner());
            let Some(it) = guard.as_mut() else {
                return Ok(None);
            };
            let chunk: sett_core::Result<Vec<(Vec<u8>, Vec<u8>)>> =
                py.allow_threads(|| it.by_ref().take(CHUNK).collect());
            let chunk = chunk.map_err(to_py)?;
            if chunk.is_empty() {
                *guard = None; // exhausted: release the snapshot now
                return Ok(None);
            }
            buf.extend(chunk);
        }
        let Some((k, v)) = buf.pop_front() else {
            return Ok(None);
        };
        let key = PyBytes::new_bound(py, &k);
        Ok(Some(if self.keys_only {
            key.into_any().unbind()
        } else {
            (key, PyBytes::new_bound(py, &v)).into_py(py)
        }))
    }

    /// Releases the snapshot early (also done at exhaustion).
    fn close(&self) {
        *self.it.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.buf.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
