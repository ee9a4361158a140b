//! `Iter`: a Python iterator over a snapshot, filled in chunks with the GIL released.

use crate::convert::bytes_view;
use crate::errors::{to_py, ClosedError};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use pyo3::IntoPyObjectExt;
use sett_core::DbIterator;
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Items fetched per trip into the engine (the GIL is released meanwhile).
const CHUNK: usize = 256;

/// What each step of an `Iter` yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Yield {
    /// (key, value) tuples.
    Items,
    /// Keys (the engine then never reads a value).
    Keys,
    /// Values.
    Values,
}

struct State {
    /// None once closed, or once exhausted when no `seek`/`rewind` was ever made.
    it: Option<DbIterator>,
    /// Fetched from `it`, not yet handed out.
    buf: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// `seek` or `rewind` was called: exhaustion keeps the snapshot so that it can seek again.
    cursor: bool,
}

/// Iterator of (key, value) tuples, of keys, or of values. It keeps its
/// database object alive; once that database is closed it raises ClosedError.
#[pyclass(module = "sett._sett", name = "Iter")]
pub struct PyIter {
    state: Mutex<State>,
    what: Yield,
    _owner: Option<Py<PyAny>>,
}

impl PyIter {
    pub(crate) fn new(it: DbIterator, what: Yield, owner: Option<Py<PyAny>>) -> PyIter {
        PyIter {
            state: Mutex::new(State {
                it: Some(it),
                buf: VecDeque::new(),
                cursor: false,
            }),
            what,
            _owner: owner,
        }
    }

    /// The state, or a RuntimeError if another thread is inside this iterator
    /// (waiting for it while holding the GIL could deadlock: the other thread
    /// may be waiting for the GIL to return from the engine).
    fn state(&self) -> PyResult<MutexGuard<'_, State>> {
        match self.state.try_lock() {
            Ok(g) => Ok(g),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(TryLockError::WouldBlock) => Err(PyRuntimeError::new_err(
                "this sett.Iter is in use by another thread; give each thread its own iterator",
            )),
        }
    }
}

#[pymethods]
impl PyIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.state()?;
        let st = &mut *guard;
        if st.buf.is_empty() {
            let Some(it) = st.it.as_mut() else {
                return Ok(None);
            };
            let chunk: sett_core::Result<Vec<(Vec<u8>, Vec<u8>)>> =
                py.detach(|| it.by_ref().take(CHUNK).collect());
            let chunk = chunk.map_err(to_py)?;
            if chunk.is_empty() {
                if !st.cursor {
                    st.it = None; // exhausted: release the snapshot now
                }
                return Ok(None);
            }
            st.buf.extend(chunk);
        }
        let Some((k, v)) = st.buf.pop_front() else {
            return Ok(None);
        };
        Ok(Some(match self.what {
            Yield::Keys => PyBytes::new(py, &k).into_any().unbind(),
            Yield::Values => PyBytes::new(py, &v).into_any().unbind(),
            Yield::Items => (PyBytes::new(py, &k), PyBytes::new(py, &v)).into_py_any(py)?,
        }))
    }

    /// Moves to the first key >= `key` (reverse iterators: the last key <= `key`),
    /// staying within the iterator's prefix and bounds; the next item is that
    /// key's. Past the end, iteration stops until a seek back. Can seek again
    /// after running out; raises ClosedError after close() or after the iterator
    /// ran out without ever seeking (the snapshot is released then).
    fn seek(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        let mut guard = self.state()?;
        let st = &mut *guard;
        let Some(it) = st.it.as_mut() else {
            return Err(ClosedError::new_err(
                "iterator closed, or exhausted before any seek (its snapshot is released); \
                 start a new one",
            ));
        };
        st.buf.clear();
        st.cursor = true;
        py.detach(|| it.seek(&k)).map_err(to_py)
    }

    /// Goes back to the first key (reverse iterators: the last) within the
    /// iterator's prefix and bounds; like seek(), it keeps the snapshot so that
    /// the iterator can be walked again. Raises ClosedError as seek() does.
    fn rewind(&self, py: Python<'_>) -> PyResult<()> {
        let mut guard = self.state()?;
        let st = &mut *guard;
        let Some(it) = st.it.as_mut() else {
            return Err(ClosedError::new_err(
                "iterator closed, or exhausted before any seek or rewind (its snapshot is \
                 released); start a new one",
            ));
        };
        st.buf.clear();
        st.cursor = true;
        py.detach(|| it.rewind()).map_err(to_py)
    }

    /// `sett.Iter[bytes]` in annotations evaluated at run time (the stubs make Iter generic).
    #[classmethod]
    fn __class_getitem__(cls: &Bound<'_, PyType>, item: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = cls.py();
        match py.import("types")?.getattr("GenericAlias") {
            Ok(alias) => Ok(alias.call1((cls, item))?.unbind()),
            Err(_) => Ok(cls.clone().into_any().unbind()), // Python 3.8
        }
    }

    /// Releases the snapshot early (also done at exhaustion unless seek() was used).
    fn close(&self) -> PyResult<()> {
        let mut st = self.state()?;
        st.it = None;
        st.buf.clear();
        Ok(())
    }
}
