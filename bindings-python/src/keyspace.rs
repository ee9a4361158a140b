//! `Keyspace`: a named, independent ordered map in one database (RocksDB's
//! column family), from `Db.keyspace(name, ...)`. Batches and transactions
//! write into one with their `keyspace=` argument.

use crate::db::Db;
use crate::errors::to_py;
use crate::store::Store;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::PyClassInitializer;
use sett_core::KeyspaceOptions;
use std::sync::Arc;
use std::time::Duration;

/// A keyspace of an open database: every `Store` operation as on `Db`
/// (get/put/delete/delete_range, get_many, iteration, subscribe, and
/// `ks[k]`, `ks[k] = v`, `del ks[k]`, `k in ks`), over keys of its own. It
/// keeps its database object alive. After `Db.drop_keyspace` its calls
/// raise InvalidArgumentError.
#[pyclass(module = "sett._sett", extends = Store)]
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
    pub(crate) fn open(
        db: &Bound<'_, Db>,
        name: &str,
        o: KeyspaceOptions,
    ) -> PyResult<Py<Keyspace>> {
        let py = db.py();
        let ks = {
            let d = db.borrow();
            let inner = &d.inner;
            py.detach(|| inner.keyspace(name, o)).map_err(to_py)?
        };
        let store = Store::new(Arc::new(ks.clone()));
        let this = Keyspace {
            ks,
            _db: db.clone().unbind(),
        };
        Py::new(py, PyClassInitializer::from(store).add_subclass(this))
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

    fn __repr__(&self) -> String {
        format!("<sett.Keyspace {:?} id {}>", self.ks.name(), self.ks.id())
    }
}
