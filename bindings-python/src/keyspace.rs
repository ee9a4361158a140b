//! `Keyspace`: a named, independent ordered map in one database (RocksDB's
//! column family), from `Db.keyspace(name, ...)`. Batches and transactions
//! write into one with their `keyspace=` argument.

use crate::convert::bytes_arg;
use crate::db::{iter_options, put_options, Db};
use crate::errors::to_py;
use crate::iter::{PyIter, Yield};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sett_core::KeyspaceOptions;
use std::time::Duration;

/// A keyspace of an open database: get/put/delete/delete_range and iteration
/// as on `Db` (and `ks[k]`, `ks[k] = v`, `del ks[k]`, `k in ks`), over keys of
/// its own. It keeps its database object alive. After `Db.drop_keyspace` its
/// calls raise InvalidArgumentError.
#[pyclass(module = "sett._sett")]
pub struct Keyspace {
    pub(crate) ks: sett_core::Keyspace,
    _db: Py<Db>,
}

/// Keyspace options from the Python arguments: `default_ttl` in seconds,
/// `compression` a codec name ("none", "lz4", "zstd").
pub(crate) fn keyspace_options(
    value_threshold: Option<usize>,
    default_ttl: Option<f64>,
    compression: Option<&str>,
) -> PyResult<KeyspaceOptions> {
    let default_ttl = match default_ttl {
        None => None,
        Some(s) if s >= 1.0 && s.is_finite() => Some(Duration::from_secs(s.ceil() as u64)),
        Some(s) => {
            return Err(PyValueError::new_err(format!(
                "default_ttl must be at least 1 second, not {s}"
            )))
        }
    };
    Ok(KeyspaceOptions {
        value_threshold,
        default_ttl,
        compression: compression
            .map(|c| crate::db::compression("compression", c))
            .transpose()?,
    })
}

impl Keyspace {
    pub(crate) fn open(db: &Bound<'_, Db>, name: &str, o: KeyspaceOptions) -> PyResult<Keyspace> {
        let py = db.py();
        let ks = {
            let d = db.borrow();
            let inner = &d.inner;
            py.allow_threads(|| inner.keyspace(name, o))
                .map_err(to_py)?
        };
        Ok(Keyspace {
            ks,
            _db: db.clone().unbind(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn stream(
        slf: &Bound<'_, Self>,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        what: Yield,
        prefetch: Option<usize>,
    ) -> PyResult<PyIter> {
        let o = iter_options(prefix, start, end, reverse, what == Yield::Keys, prefetch)?;
        let py = slf.py();
        let ks = slf.borrow().ks.clone();
        let it = py.allow_threads(|| ks.iter(o)).map_err(to_py)?;
        Ok(PyIter::new(it, what, Some(slf.clone().into_any().unbind())))
    }
}

#[pymethods]
impl Keyspace {
    /// The keyspace's name.
    #[getter]
    fn name(&self) -> String {
        self.ks.name().to_string()
    }

    /// The keyspace's id (its keys are stored under FF FF FF FF + id).
    #[getter]
    fn id(&self) -> u32 {
        self.ks.id()
    }

    /// Its own value threshold, or None for the database's.
    #[getter]
    fn value_threshold(&self) -> Option<usize> {
        self.ks.options().value_threshold
    }

    /// The TTL in seconds of puts that give none, or None.
    #[getter]
    fn default_ttl(&self) -> Option<f64> {
        self.ks.options().default_ttl.map(|d| d.as_secs_f64())
    }

    /// Its own codec ("none", "lz4" or "zstd"), or None for the database's.
    #[getter]
    fn compression(&self) -> Option<&'static str> {
        self.ks.options().compression.map(|c| c.name())
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<PyObject> {
        let k = bytes_arg(key, "key")?;
        match self.ks.get(&k).map_err(to_py)? {
            Some(v) => Ok(PyBytes::new_bound(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// (value, user_meta, expires_at, version) of `key`, or None.
    fn get_entry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let k = bytes_arg(key, "key")?;
        match self.ks.get_entry(&k).map_err(to_py)? {
            Some(i) => Ok((
                PyBytes::new_bound(py, &i.value),
                i.user_meta,
                i.expires_at,
                i.version,
            )
                .into_py(py)),
            None => Ok(py.None()),
        }
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let k = bytes_arg(key, "key")?;
        match self.ks.get(&k).map_err(to_py)? {
            Some(v) => Ok(PyBytes::new_bound(py, &v).into_any().unbind()),
            None => Err(PyKeyError::new_err(PyBytes::new_bound(py, &k).unbind())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, 0)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key)
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_arg(key, "key")?;
        Ok(self.ks.get(&k).map_err(to_py)?.is_some())
    }

    /// Stores key → value; without `ttl` the keyspace's default TTL applies.
    #[pyo3(signature = (key, value, *, ttl=None, meta=0))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
    ) -> PyResult<()> {
        let (k, v) = (bytes_arg(key, "key")?, bytes_arg(value, "value")?);
        let o = put_options(ttl, meta)?;
        let ks = &self.ks;
        py.allow_threads(|| ks.put_with(&k, &v, o)).map_err(to_py)
    }

    /// Removes `key` (no error if absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_arg(key, "key")?;
        let ks = &self.ks;
        py.allow_threads(|| ks.delete(&k)).map_err(to_py)
    }

    /// Deletes every key of the keyspace in [start, end) with one range
    /// tombstone (b"" end: to the keyspace's end).
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_arg(start, "start")?, bytes_arg(end, "end")?);
        let ks = &self.ks;
        py.allow_threads(|| ks.delete_range(&s, &e)).map_err(to_py)
    }

    /// An iterator over a snapshot of the keyspace taken now, as `Db.iter`.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false, keys_only=false, *, prefetch=None))]
    fn iter(
        slf: &Bound<'_, Self>,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keys_only: bool,
        prefetch: Option<usize>,
    ) -> PyResult<PyIter> {
        let what = if keys_only { Yield::Keys } else { Yield::Items };
        Self::stream(slf, prefix, start, end, reverse, what, prefetch)
    }

    /// The keys, in order, streamed from a snapshot.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false))]
    fn keys(
        slf: &Bound<'_, Self>,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        Self::stream(slf, prefix, start, end, reverse, Yield::Keys, None)
    }

    /// The (key, value) pairs, in key order, streamed from a snapshot.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false))]
    fn items(
        slf: &Bound<'_, Self>,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        Self::stream(slf, prefix, start, end, reverse, Yield::Items, None)
    }

    /// The values, in key order, streamed from a snapshot.
    #[pyo3(signature = (prefix=None, start=None, end=None, reverse=false))]
    fn values(
        slf: &Bound<'_, Self>,
        prefix: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        Self::stream(slf, prefix, start, end, reverse, Yield::Values, None)
    }

    /// Iterating a keyspace yields its keys in order.
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<PyIter> {
        Self::stream(slf, None, None, None, false, Yield::Keys, None)
    }

    /// Committed writes to this keyspace under `prefixes` (its own keys), in
    /// version order, keys as they were put; as `Db.subscribe`. A range
    /// delete's `range_end` is b"" when it is the keyspace's end (a drop
    /// of the keyspace is one range delete from b"" to b"").
    #[pyo3(signature = (prefixes=None, since=None, max_pending_bytes=None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        prefixes: Option<&Bound<'_, PyAny>>,
        since: Option<u64>,
        max_pending_bytes: Option<usize>,
    ) -> PyResult<crate::feed::Subscription> {
        let ks = &self.ks;
        crate::feed::subscribe(py, |o| ks.subscribe(o), prefixes, since, max_pending_bytes)
    }

    fn __repr__(&self) -> String {
        format!("<sett.Keyspace {:?} id {}>", self.ks.name(), self.ks.id())
    }
}
