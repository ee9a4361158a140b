//! `Txn`: a transaction. `sett.Db.transaction()` / `view()` wrap it as context managers.

use crate::convert::bytes_arg;
use crate::db::{iter_options, put_options};
use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Mutex;

/// A transaction; finished by `commit()` or `discard()`.
#[pyclass(module = "sett._sett")]
pub struct Txn {
    txn: Mutex<Option<sett_core::Txn>>,
}

impl Txn {
    pub(crate) fn new(t: sett_core::Txn) -> Txn {
        Txn {
            txn: Mutex::new(Some(t)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut sett_core::Txn) -> sett_core::Result<T>) -> PyResult<T> {
        let mut g = self.txn.lock().unwrap_or_else(|p| p.into_inner());
        let t = g
            .as_mut()
            .ok_or_else(|| ClosedError::new_err("transaction already committed or discarded"))?;
        f(t).map_err(to_py)
    }
}

#[pymethods]
impl Txn {
    /// The value of `key` as this transaction sees it, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        let k = bytes_arg(key, "key")?;
        match self.with(|t| t.get(&k))? {
            Some(v) => Ok(PyBytes::new_bound(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// Buffers a put (applied at commit).
    #[pyo3(signature = (key, value, *, ttl=None, meta=0))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        let o = put_options(ttl, meta)?;
        self.with(|t| t.set_with(&k, &v, o))
    }

    /// Buffers a delete.
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_arg(key, "key")?;
        self.with(|t| t.delete(&k))
    }

    /// An iterator over this transaction's view.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false, keys_only=false))]
    fn iter(
        &self,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keys_only: bool,
    ) -> PyResult<PyIter> {
        let o = iter_options(prefix, start, end, reverse, keys_only)?;
        let it = self.with(|t| t.iter(o))?;
        Ok(PyIter::new(it, keys_only, None))
    }

    /// Commits; raises ConflictError if it must be retried.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let t = self
            .txn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ClosedError::new_err("transaction already committed or discarded"))?;
        py.allow_threads(|| t.commit()).map_err(to_py)
    }

    /// Drops the buffered writes; safe to call twice.
    fn discard(&self) {
        if let Some(t) = self.txn.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.discard();
        }
    }

    /// True until committed or discarded.
    #[getter]
    fn active(&self) -> bool {
        self.txn.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }
}
