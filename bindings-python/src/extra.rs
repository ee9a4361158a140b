//! `Sequence` (persisted increasing integers) and `BulkLoader` (sorted data
//! loaded straight into an empty database), as the C ABI's `sett_sequence_*`
//! and `sett_bulk_loader_*` offer them.

use crate::convert::bytes_view;
use crate::errors::{to_py, ClosedError};
use crate::store::put_options;
use pyo3::prelude::*;
use pyo3::types::PyAny;

/// Hands out increasing integers stored under a key, leasing `bandwidth` at a
/// time (`Db.sequence(key, bandwidth)`). `next(seq)` or `seq.next()`; `release()`
/// (also at the end of a `with` block) gives back the unused rest of the lease.
#[pyclass(module = "sett._sett")]
pub struct Sequence {
    seq: sett_core::Sequence,
    /// Keeps the database object alive while the sequence is.
    _db: Py<PyAny>,
}

impl Sequence {
    pub(crate) fn new(seq: sett_core::Sequence, db: Py<PyAny>) -> Sequence {
        Sequence { seq, _db: db }
    }
}

#[pymethods]
impl Sequence {
    /// The next number (may write a new lease).
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        py.detach(|| self.seq.next()).map_err(to_py)
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<u64> {
        self.next(py)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Gives back the unused rest of the lease, so that the next sequence on
    /// this key continues right after the last number handed out.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.seq.release()).map_err(to_py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.release(py)?;
        Ok(false)
    }
}

/// Loads entries given in strictly increasing key order straight into tables
/// of an empty database (`Db.bulk_load()`); other writes fail until it is
/// finished or dropped. `finish()` (also at the end of a `with` block that
/// raised nothing) makes everything durable and visible and returns the count;
/// an exception in the block abandons the load.
#[pyclass(module = "sett._sett")]
pub struct BulkLoader {
    loader: Option<sett_core::BulkLoader>,
    _db: Py<PyAny>,
}

impl BulkLoader {
    pub(crate) fn new(loader: sett_core::BulkLoader, db: Py<PyAny>) -> BulkLoader {
        BulkLoader {
            loader: Some(loader),
            _db: db,
        }
    }

    fn get(&mut self) -> PyResult<&mut sett_core::BulkLoader> {
        self.loader
            .as_mut()
            .ok_or_else(|| ClosedError::new_err("bulk load already finished or abandoned"))
    }
}

#[pymethods]
impl BulkLoader {
    /// Adds the next entry, with a TTL in seconds and a user-meta byte as
    /// `Db.put`; keys must be strictly increasing.
    #[pyo3(signature = (key, value, *, ttl=None, meta=0))]
    fn add(
        &mut self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
    ) -> PyResult<()> {
        let (k, v) = (bytes_view(key, "key")?, bytes_view(value, "value")?);
        let o = put_options(ttl, meta)?;
        let py = key.py();
        let l = self.get()?;
        py.detach(|| l.add_with(&k, &v, o)).map_err(to_py)
    }

    /// Makes everything durable and visible; returns the number of entries loaded.
    fn finish(&mut self, py: Python<'_>) -> PyResult<u64> {
        self.get()?;
        let l = self.loader.take().expect("checked above");
        py.detach(|| l.finish()).map_err(to_py)
    }

    /// Abandons the load (nothing becomes visible; other writes work again).
    fn abandon(&mut self) {
        self.loader = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none() && self.loader.is_some() {
            self.finish(py)?;
        } else {
            self.abandon();
        }
        Ok(false)
    }
}
