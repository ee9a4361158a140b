//! `Store`: the base class of `Db` and `Keyspace`, holding every operation
//! the default keyspace and a named one share (sett's Rust `Store` trait),
//! so that each is written once.

use crate::convert::{bytes_view, opt_bytes_arg};
use crate::errors::to_py;
use crate::iter::{PyIter, Yield};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use pyo3::IntoPyObjectExt;
use sett_core::{IterOptions, PutOptions};
use std::sync::Arc;
use std::time::Duration;

/// An ordered map of a database: get/put/delete/delete_range, `get_many`,
/// iteration and the change feed (and `m[k]`, `m[k] = v`, `del m[k]`,
/// `k in m`). `Db` is its default keyspace, `Keyspace` a named one; not
/// made directly.
#[pyclass(module = "sett._sett", subclass)]
pub struct Store {
    target: Arc<dyn sett_core::Store>,
}

impl Store {
    pub(crate) fn new(target: Arc<dyn sett_core::Store>) -> Store {
        Store { target }
    }

    /// An `Iter` over a snapshot taken now, yielding `what`; it keeps `slf`
    /// (the Db or Keyspace object) alive.
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
        let target = slf.borrow().target.clone();
        let it = slf.py().detach(|| target.iter(o)).map_err(to_py)?;
        Ok(PyIter::new(it, what, Some(slf.clone().into_any().unbind())))
    }
}

pub(crate) fn put_options(ttl: Option<f64>, meta: u8) -> PyResult<PutOptions> {
    let ttl = match ttl {
        None => None,
        Some(s) if s > 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return Err(PyValueError::new_err(format!(
                "ttl must be a positive number of seconds, not {s}"
            )))
        }
    };
    Ok(PutOptions {
        user_meta: meta,
        ttl,
    })
}

pub(crate) fn iter_options(
    prefix: Option<&Bound<'_, PyAny>>,
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    reverse: bool,
    keys_only: bool,
    prefetch: Option<usize>,
) -> PyResult<IterOptions> {
    let prefetch = match prefetch {
        None => IterOptions::default().prefetch,
        Some(0) => return Err(PyValueError::new_err("prefetch must be at least 1")),
        Some(n) => n,
    };
    Ok(IterOptions {
        prefix: opt_bytes_arg(prefix, "prefix")?,
        start: opt_bytes_arg(start, "start")?,
        end: opt_bytes_arg(end, "end")?,
        reverse,
        keys_only,
        prefetch,
    })
}

#[pymethods]
impl Store {
    /// The value of `key`, or `default` if it has none.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bytes_view(key, "key")?;
        match self.target.get(&k).map_err(to_py)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }

    /// (value, user_meta, expires_at, version) of `key`, or None.
    fn get_entry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bytes_view(key, "key")?;
        match self.target.get_entry(&k).map_err(to_py)? {
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

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bytes_view(key, "key")?;
        match self.target.get(&k).map_err(to_py)? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Err(PyKeyError::new_err(PyBytes::new(py, &k).unbind())),
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
        let k = bytes_view(key, "key")?;
        Ok(self.target.get(&k).map_err(to_py)?.is_some())
    }

    /// The values of many keys at one consistent point, in the order asked
    /// (None where absent).
    fn get_many<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        // The key objects are held in `objs` so that the slices borrowed
        // from them (bytes are immutable) stay valid while the GIL is released.
        // A plain loop: collect() would ask the iterator for its length
        // hint, a Python-level __length_hint__ call per get_many.
        let mut objs = Vec::new();
        for k in keys.try_iter()? {
            objs.push(k?);
        }
        let views = objs
            .iter()
            .map(|k| bytes_view(k, "key"))
            .collect::<PyResult<Vec<_>>>()?;
        let refs: Vec<&[u8]> = views.iter().map(|k| &**k).collect();
        let target = &self.target;
        let vals = py.detach(|| target.get_many(&refs)).map_err(to_py)?;
        PyList::new(
            py,
            vals.into_iter()
                .map(|v| v.map_or_else(|| py.None(), |v| PyBytes::new(py, &v).into_any().unbind())),
        )
    }

    /// Stores key → value, optionally with a time to live (seconds) and a
    /// user-meta byte; without `ttl`, a keyspace's default TTL applies.
    #[pyo3(signature = (key, value, *, ttl=None, meta=0))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<f64>,
        meta: u8,
    ) -> PyResult<()> {
        let (k, v) = (bytes_view(key, "key")?, bytes_view(value, "value")?);
        let o = put_options(ttl, meta)?;
        let target = &self.target;
        py.detach(|| target.put_with(&k, &v, o)).map_err(to_py)
    }

    /// Merges `operand` into `key` with the database's merge operator (the
    /// `merge_operator` of open()): one write, without reading the key;
    /// reads fold the operands onto its value. MergeOperatorMissingError when
    /// the database has none (nothing is written).
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (k, o) = (bytes_view(key, "key")?, bytes_view(operand, "operand")?);
        let target = &self.target;
        py.detach(|| target.merge(&k, &o)).map_err(to_py)
    }

    /// Removes `key` (no error if absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_view(key, "key")?;
        let target = &self.target;
        py.detach(|| target.delete(&k)).map_err(to_py)
    }

    /// Deletes every key in `[start, end)` with one range tombstone (RocksDB's
    /// DeleteRange): atomic, ordered like any write, writers do not wait.
    /// An empty `end` is the end of the map; else `start < end` is required.
    fn delete_range(
        &self,
        py: Python<'_>,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, e) = (bytes_view(start, "start")?, bytes_view(end, "end")?);
        let target = &self.target;
        py.detach(|| target.delete_range(&s, &e)).map_err(to_py)
    }

    /// An iterator over a snapshot taken now: (key, value) pairs, or keys if
    /// `keys_only`. `prefetch`: how many items ahead values are read (default 256).
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

    /// The keys, in order (like `iter(keys_only=True)`): streamed from a snapshot
    /// taken now, not a list.
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

    /// The (key, value) pairs, in key order (like `iter()`): streamed from a
    /// snapshot taken now, not a list.
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

    /// The values, in key order: streamed from a snapshot taken now, not a list.
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

    /// Iterating yields the keys in order, as iterating a dict does.
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<PyIter> {
        Self::stream(slf, None, None, None, false, Yield::Keys, None)
    }

    /// Subscribes to the change feed: every write to this map committed from
    /// now on (or, with `since`, after that version, out of the in-memory
    /// history of `change_feed_history_bytes`) whose key starts with one of
    /// `prefixes` (None: every key), in version order, each once, after it
    /// became visible. A write never waits on a subscriber: one whose
    /// undelivered changes pass `max_pending_bytes` (default 8 MiB) loses
    /// them and its next() raises FellBehindError; subscribe again with
    /// `since=e.resume_from`. A `since` older than the history raises
    /// FeedHistoryTooShortError (`e.oldest`): then subscribe from now, scan
    /// in a read-only transaction and apply only changes whose version is
    /// above its `read_ts`. A bulk load, drop_all and drop_prefix end live
    /// subscriptions with FellBehindError and cannot be resumed across.
    /// A keyspace's changes carry its own keys; a range delete's
    /// `range_end` is b"" when it is the keyspace's end (a drop of the
    /// keyspace is one range delete from b"" to b"").
    #[pyo3(signature = (prefixes=None, since=None, max_pending_bytes=None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        prefixes: Option<&Bound<'_, PyAny>>,
        since: Option<u64>,
        max_pending_bytes: Option<usize>,
    ) -> PyResult<crate::feed::Subscription> {
        let target = &self.target;
        crate::feed::subscribe(
            py,
            |o| target.subscribe(o),
            prefixes,
            since,
            max_pending_bytes,
        )
    }
}
