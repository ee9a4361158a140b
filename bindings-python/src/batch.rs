//! `Batch`: a native write batch. Each `put`/`delete` copies its key and value
//! straight into a Rust-side `WriteBatch` (no Python tuple or list per entry);
//! `commit()` hands the whole batch to the engine with the GIL released.

use crate::convert::bytes_view;
use crate::db::Db;
use crate::errors::to_py;
use crate::keyspace::Keyspace;
use crate::store::put_options;
use pyo3::prelude::*;
use pyo3::types::PyAny;
use sett_core::{PutOptions, WriteBatch};

/// Puts and deletes applied atomically by `commit()`, or at the end of a `with`
/// block that raised nothing (an exception discards them). After a commit the
/// batch is empty and may be filled again. Made by `Db.batch()`.
#[pyclass(module = "sett._sett")]
pub struct Batch {
    db: Py<Db>,
    ops: WriteBatch,
}

impl Batch {
    pub(crate) fn new(db: Py<Db>) -> Batch {
        Batch {
            db,
            ops: WriteBatch::new(),
        }
    }
}

#[pymethods]
impl Batch {
    /// Adds a put of key → value, optionally with a time to live (seconds) and
    /// a user-meta byte; into `keyspace` if given (its default TTL applies).
    #[pyo3(signature = (key, value, *, ttl=None, meta=0, keyspace=None))]
    fn put(
        &mut self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        let v = bytes_view(value, "value")?;
        let o = if ttl.is_none() && meta == 0 {
            PutOptions::default()
        } else {
            put_options(ttl, meta)?
        };
        match keyspace {
            Some(ks) => self.ops.put_with_in(&ks.ks, k, v, o),
            None => self.ops.put_with(k, v, o),
        };
        Ok(())
    }

    /// Adds a merge of `operand` into `key` (see `Db.merge`), in `keyspace`
    /// if given; merges of one batch on one key combine in order. The commit
    /// raises MergeOperatorMissingError, writing nothing, when the database
    /// has no merge operator.
    #[pyo3(signature = (key, operand, *, keyspace=None))]
    fn merge(
        &mut self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        let o = bytes_view(operand, "operand")?;
        match keyspace {
            Some(ks) => self.ops.merge_in(&ks.ks, k, o),
            None => self.ops.merge(k, o),
        };
        Ok(())
    }

    /// Adds a delete of `key` (no error at commit if it is absent), in
    /// `keyspace` if given.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn delete(
        &mut self,
        key: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        match keyspace {
            Some(ks) => self.ops.delete_in(&ks.ks, k),
            None => self.ops.delete(k),
        };
        Ok(())
    }

    /// Adds a delete of every key in `[start, end)` (of `keyspace` if given,
    /// where b"" end is its end); what the batch put before it in the range
    /// is removed, what it puts after is kept.
    #[pyo3(signature = (start, end, *, keyspace=None))]
    fn delete_range(
        &mut self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        keyspace: Option<PyRef<'_, Keyspace>>,
    ) -> PyResult<()> {
        let s = bytes_view(start, "start")?;
        let e = bytes_view(end, "end")?;
        match keyspace {
            Some(ks) => self.ops.delete_range_in(&ks.ks, s, e),
            None => self.ops.delete_range(s, e),
        };
        Ok(())
    }

    /// Applies every operation added since the last commit, atomically, and
    /// empties the batch (also when the write fails).
    fn commit(&mut self, py: Python<'_>) -> PyResult<()> {
        let ops = std::mem::take(&mut self.ops);
        let db = self.db.bind(py).borrow();
        let inner = &db.inner;
        py.detach(|| inner.write(ops)).map_err(to_py)
    }

    /// Drops every operation added since the last commit.
    fn clear(&mut self) {
        self.ops.clear();
    }

    fn __len__(&self) -> usize {
        self.ops.len()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits if the block raised nothing, else discards; never swallows the exception.
    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_none() {
            self.commit(py)?;
        } else {
            self.ops.clear();
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("<sett.Batch {} ops>", self.ops.len())
    }
}
