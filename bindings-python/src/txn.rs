//! `Txn`: a transaction, and a context manager (commit on success, discard on
//! an exception). `sett.Db.transaction()` / `view()` begin one in a `with` block.

use crate::convert::bytes_view;
use crate::errors::{to_py, ClosedError};
use crate::iter::{PyIter, Yield};
use crate::keyspace::Keyspace;
use crate::store::{iter_options, put_options};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;
use std::sync::Mutex;

/// A transaction; finished by `commit()` or `discard()`, or by the end of a
/// `with` block (commit if it raised nothing, else discard). Once finished,
/// every use but `discard()` raises ClosedError. One dropped unfinished is discarded.
#[pyclass(module = "sett._sett")]
pub struct Txn {
    txn: Mutex<Option<sett_core::Txn>>,
    update: bool,
}

const ENDED: &str = "transaction already committed or discarded; begin a new one";

impl Txn {
    pub(crate) fn new(t: sett_core::Txn) -> Txn {
        Txn {
            update: t.is_update(),
            txn: Mutex::new(Some(t)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut sett_core::Txn) -> sett_core::Result<T>) -> PyResult<T> {
        let mut g = self.txn.lock().unwrap_or_else(|p| p.into_inner());
        let t = g.as_mut().ok_or_else(|| ClosedError::new_err(ENDED))?;
        f(t).map_err(to_py)
    }
}

#[pymethods]
impl Txn {
    /// The value of `key` (in `keyspace` if given) as this transaction sees
    /// it, or `default`.
    #[pyo3(signature = (key, default=None, *, keyspace=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bytes_view(key, "key")?;
        let got = match keyspace {
            Some(ks) => self.with(|t| t.get_in(&ks.ks, &k))?,
            None => self.with(|t| t.get(&k))?,
        };
        match got {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// (value, user_meta, expires_at, version) of `key` as this transaction
    /// sees it, or None. For a key it wrote itself (not yet committed):
    /// the meta it wrote, and expires_at and version 0 (set at commit).
    fn get_entry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bytes_view(key, "key")?;
        match self.with(|t| t.get_entry(&k))? {
            Some(i) => Ok((
                PyBytes::new(py, &i.value),
                i.user_meta,
                i.expires_at,
                i.version,
            )
                .into_py_any(py)?),
            None => Ok(py.None()),
        }
    }

    /// Buffers a put (applied at commit), into `keyspace` if given.
    #[pyo3(signature = (key, value, *, ttl=None, meta=0, keyspace=None))]
    fn put(
        &self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_view(key, "key")?, bytes_view(value, "value")?);
        let o = put_options(ttl, meta)?;
        match keyspace {
            Some(ks) => self.with(|t| t.set_with_in(&ks.ks, &k, &v, o)),
            None => self.with(|t| t.set_with(&k, &v, o)),
        }
    }

    /// Buffers a merge of `operand` into `key` (see `Db.merge`), in
    /// `keyspace` if given; this transaction's reads see it folded.
    #[pyo3(signature = (key, operand, *, keyspace=None))]
    fn merge(
        &self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let (k, o) = (bytes_view(key, "key")?, bytes_view(operand, "operand")?);
        match keyspace {
            Some(ks) => self.with(|t| t.merge_in(&ks.ks, &k, &o)),
            None => self.with(|t| t.merge(&k, &o)),
        }
    }

    /// Buffers a delete, in `keyspace` if given.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn delete(
        &self,
        key: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        match keyspace {
            Some(ks) => self.with(|t| t.delete_in(&ks.ks, &k)),
            None => self.with(|t| t.delete(&k)),
        }
    }

    /// Buffers a delete of every key in `[start, end)` (of `keyspace` if
    /// given): this transaction's reads stop seeing the range; applied at
    /// commit with its other writes.
    #[pyo3(signature = (start, end, *, keyspace=None))]
    fn delete_range(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let s = bytes_view(start, "start")?;
        let e = bytes_view(end, "end")?;
        match keyspace {
            Some(ks) => self.with(|t| t.delete_range_in(&ks.ks, &s, &e)),
            None => self.with(|t| t.delete_range(&s, &e)),
        }
    }

    /// An iterator over this transaction's view (`prefetch` as in `Db.iter`),
    /// of `keyspace` if given.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false, keys_only=false, *, prefetch=None, keyspace=None))]
    #[allow(clippy::too_many_arguments)]
    fn iter(
        &self,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keys_only: bool,
        prefetch: Option<usize>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<PyIter> {
        let o = iter_options(prefix, start, end, reverse, keys_only, prefetch)?;
        let it = match keyspace {
            Some(ks) => self.with(|t| t.iter_in(&ks.ks, o))?,
            None => self.with(|t| t.iter(o))?,
        };
        let what = if keys_only { Yield::Keys } else { Yield::Items };
        Ok(PyIter::new(it, what, None))
    }

    /// Commits; raises ConflictError if it must be retried.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let t = self
            .txn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ClosedError::new_err(ENDED))?;
        py.detach(|| t.commit()).map_err(to_py)
    }

    /// Drops the buffered writes; safe to call twice.
    fn discard(&self) {
        if let Some(t) = self.txn.lock().unwrap_or_else(|p| p.into_inner()).take() {
            t.discard();
        }
    }

    /// The version it reads at: it sees every write at or below it, none
    /// above (the rescan point for a change-feed subscriber).
    #[getter]
    fn read_ts(&self) -> PyResult<u64> {
        self.with(|t| Ok(t.read_ts()))
    }

    /// True until committed or discarded.
    #[getter]
    fn active(&self) -> bool {
        self.txn.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// True for a read-write transaction.
    #[getter]
    fn write(&self) -> bool {
        self.update
    }

    /// Raises ClosedError if the transaction has already ended.
    fn __enter__(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        if !slf.active() {
            return Err(ClosedError::new_err(ENDED));
        }
        Ok(slf)
    }

    /// Commits a read-write transaction when the block raised nothing (a
    /// ConflictError then propagates); otherwise discards it and lets the
    /// exception propagate. A read-only one just ends. One already finished
    /// inside the block (by commit() or discard()) is left as it is.
    #[pyo3(signature = (exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Some(t) = self.txn.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return Ok(false);
        };
        if exc_type.is_none() && self.update {
            py.detach(|| t.commit()).map_err(to_py)?;
        } else {
            t.discard();
        }
        Ok(false)
    }
}
