//! `Db` and `open()`.

use crate::batch::Batch;
use crate::convert::bytes_view;
use crate::errors::to_py;
use crate::extra::{BulkLoader, Sequence};
use crate::keyspace::{keyspace_options, Keyspace};
use crate::store::Store;
use crate::stream::PyStream;
use crate::txn::Txn;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::IntoPyObjectExt;
use sett_core::merge::{self, MergeOperator};
use sett_core::options::{option_spec, OptionBounds, OptionKind, OptionValue, OPTIONS};
use sett_core::{Compression, Encryption, EncryptionKey, GcOutcome, Options};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use zeroize::Zeroize;

/// An open sett database: `sett.Db(path, **options)` or `sett.open(...)`.
#[pyclass(module = "sett._sett", extends = Store, subclass)]
pub struct Db {
    pub(crate) inner: Arc<sett_core::Db>,
}

/// Sets one keyword argument of `open()` through core's table of options
/// (`sett::options::OPTIONS`): an unknown name is a TypeError, a value of the
/// wrong type a TypeError naming the option, a bad codec name a ValueError,
/// and a value outside the option's bounds an InvalidOptionError naming the
/// option and its bounds; `o` is left unchanged by each.
fn set_option(o: &mut Options, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    let spec = option_spec(name).ok_or_else(|| {
        PyTypeError::new_err(format!("unknown option {name:?}: not in sett.OPTIONS"))
    })?;
    let name = spec.name;
    let bad = |e: PyErr| PyTypeError::new_err(format!("option {name}: {e}"));
    let value = match spec.kind {
        OptionKind::Bool => OptionValue::Bool(v.extract().map_err(bad)?),
        OptionKind::U32 | OptionKind::I32 | OptionKind::Usize | OptionKind::U64 => {
            // A Python int of any size: one outside the option's range is
            // refused by its bounds, with them in the message.
            let big: i128 = v.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "option {name}: takes an int ({}), not {}",
                    spec.bounds_text()
                        .unwrap_or_else(|| spec.kind.name().into()),
                    type_name(v)
                ))
            })?;
            OptionValue::Int(big)
        }
        OptionKind::F64 => OptionValue::Float(v.extract().map_err(bad)?),
        OptionKind::Codec => {
            OptionValue::Codec(compression(name, &v.extract::<String>().map_err(bad)?)?)
        }
        OptionKind::CodecList => {
            let names: Vec<String> = v.extract().map_err(bad)?;
            OptionValue::Codecs(
                names
                    .iter()
                    .map(|n| compression(name, n))
                    .collect::<PyResult<_>>()?,
            )
        }
    };
    o.set(name, value).map_err(to_py)
}

/// The `merge_operator` keyword of open(), outside the table of options
/// because core takes code there: a built-in's name, or None for none. A
/// non-string is a TypeError, an unknown name a ValueError naming the
/// built-ins.
fn merge_operator(v: &Bound<'_, PyAny>) -> PyResult<Option<Arc<dyn MergeOperator>>> {
    if v.is_none() {
        return Ok(None);
    }
    let name: String = v.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "option merge_operator: takes a built-in's name (str) or None, not {}",
            type_name(v)
        ))
    })?;
    merge::builtin(&name).map(Some).ok_or_else(|| {
        PyValueError::new_err(format!(
            "option merge_operator: unknown merge operator {name:?}: the built-ins are {:?}, {:?} and {:?}",
            merge::U64_ADD,
            merge::APPEND,
            merge::MAX
        ))
    })
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// `sett.OPTIONS`: core's table of options, one dict per option (name, type,
/// default, min, max, bounds, doc), in the table's order.
pub(crate) fn options_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for spec in OPTIONS {
        let d = PyDict::new(py);
        d.set_item("name", spec.name)?;
        d.set_item("type", spec.kind.name())?;
        d.set_item("default", option_value(py, &spec.default)?)?;
        let (min, max): (Py<PyAny>, Py<PyAny>) = match (spec.bounds, spec.int_range()) {
            (OptionBounds::Float { min, below }, _) => {
                (min.into_py_any(py)?, below.into_py_any(py)?)
            }
            (_, Some((lo, hi))) => (lo.into_py_any(py)?, hi.into_py_any(py)?),
            _ => (py.None(), py.None()),
        };
        d.set_item("min", min)?;
        d.set_item("max", max)?;
        d.set_item("bounds", spec.bounds_text())?;
        d.set_item("doc", spec.doc)?;
        out.append(d)?;
    }
    Ok(out)
}

fn option_value(py: Python<'_>, v: &OptionValue) -> PyResult<Py<PyAny>> {
    match v {
        OptionValue::Bool(b) => b.into_py_any(py),
        OptionValue::Int(i) => i.into_py_any(py),
        OptionValue::Float(f) => f.into_py_any(py),
        OptionValue::Codec(c) => c.name().into_py_any(py),
        OptionValue::Codecs(list) => list
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .into_py_any(py),
    }
}

/// `Options::encryption` from open()'s `encryption_key` (bytes or bytearray
/// of 32 bytes: a str is a TypeError, another length a ValueError that gives
/// the length, never the bytes) and `encryption_key_rotation` (seconds as a
/// number or a `datetime.timedelta`, 0 for never by age; it needs a key).
fn encryption(
    key: Option<&Bound<'_, PyAny>>,
    rotation: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Encryption>> {
    let rotation = match rotation.filter(|r| !r.is_none()) {
        Some(r) => Some(rotation_period(r)?),
        None => None,
    };
    let Some(key) = key.filter(|k| !k.is_none()) else {
        return match rotation {
            Some(_) => Err(PyValueError::new_err(
                "encryption_key_rotation needs an encryption_key",
            )),
            None => Ok(None),
        };
    };
    let raw = bytes_view(key, "encryption_key")?;
    let master = if raw.len() != 32 {
        Err(PyValueError::new_err(format!(
            "encryption_key is {} bytes, not 32",
            raw.len()
        )))
    } else {
        EncryptionKey::from_slice(&raw).map_err(to_py)
    };
    // A bytearray key was copied out of Python's buffer: wipe the copy, as
    // core wipes its own.
    if let std::borrow::Cow::Owned(mut copy) = raw {
        copy.zeroize();
    }
    let master = master?;
    let mut enc = Encryption::new(master);
    if let Some(r) = rotation {
        enc.rotation = r;
    }
    Ok(Some(enc))
}

/// A rotation period from seconds (int or float) or a timedelta; negative,
/// NaN or infinite is a ValueError, another type a TypeError.
fn rotation_period(v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let what = "encryption_key_rotation";
    let secs: f64 = if v.hasattr("total_seconds")? {
        v.call_method0("total_seconds")?.extract()?
    } else if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} takes seconds or a timedelta, not bool"
        )));
    } else {
        v.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "{what} takes seconds or a timedelta, not {}",
                type_name(v)
            ))
        })?
    };
    Duration::try_from_secs_f64(secs).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be a finite number of seconds >= 0, not {secs}"
        ))
    })
}

/// A codec by name ("none", "lz4" or "zstd"); another name is a ValueError
/// naming the option.
pub(crate) fn compression(option: &str, name: &str) -> PyResult<Compression> {
    Compression::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "option {option}: {name:?} is not \"none\", \"lz4\" or \"zstd\""
        ))
    })
}

#[pymethods]
impl Db {
    /// Opens (or creates) the database in directory `path`. Options are keyword
    /// arguments named as in sett's Rust `Options` (value_threshold, sync_writes, ...);
    /// `encryption_key` (32 bytes) and `encryption_key_rotation` (seconds or a
    /// timedelta) are outside that table, as they are in Rust.
    #[new]
    #[pyo3(signature = (path, *, encryption_key=None, encryption_key_rotation=None, **options))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        encryption_key: Option<&Bound<'_, PyAny>>,
        encryption_key_rotation: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Db>> {
        let mut o = Options::new(path);
        if let Some(opts) = options {
            for (k, v) in opts.iter() {
                let name: String = k.extract()?;
                if name == "merge_operator" {
                    o.merge_operator = merge_operator(&v)?;
                } else {
                    set_option(&mut o, &name, &v)?;
                }
            }
        }
        o.encryption = encryption(encryption_key, encryption_key_rotation)?;
        let inner = Arc::new(py.detach(|| sett_core::Db::open(o)).map_err(to_py)?);
        Ok(PyClassInitializer::from(Store::new(inner.clone())).add_subclass(Db { inner }))
    }

    /// A native write batch to fill and commit atomically (a context manager):
    /// `with db.batch() as b: b.put(k, v)`.
    fn batch(slf: &Bound<'_, Self>) -> Batch {
        Batch::new(slf.clone().unbind())
    }

    /// A sequence of increasing integers stored under `key`, leasing `bandwidth`
    /// numbers at a time (a context manager that releases the lease at the end).
    fn sequence(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        bandwidth: u64,
    ) -> PyResult<Sequence> {
        let k = bytes_view(key, "key")?;
        let py = slf.py();
        let db = slf.borrow();
        let inner = &db.inner;
        let seq = py.detach(|| inner.sequence(&k, bandwidth)).map_err(to_py)?;
        Ok(Sequence::new(seq, slf.clone().into_any().unbind()))
    }

    /// Starts a bulk load of sorted entries into this (empty) database.
    fn bulk_load(slf: &Bound<'_, Self>) -> PyResult<BulkLoader> {
        let py = slf.py();
        let db = slf.borrow();
        let inner = &db.inner;
        let l = py.detach(|| inner.bulk_load()).map_err(to_py)?;
        Ok(BulkLoader::new(l, slf.clone().into_any().unbind()))
    }

    /// The newest version visible to reads: what a read begun now sees.
    fn last_version(&self) -> u64 {
        self.inner.last_version()
    }

    /// Starts a transaction: read-write unless `update` (or its alias `write`, as
    /// py-lmdb names it) is False. A context manager: the block's end commits it
    /// (a read-only one just ends), an exception discards it.
    #[pyo3(signature = (update=None, *, write=None))]
    fn begin(&self, py: Python<'_>, update: Option<bool>, write: Option<bool>) -> PyResult<Txn> {
        let update = match (update, write) {
            (Some(_), Some(_)) => {
                return Err(PyTypeError::new_err(
                    "begin() takes update or its alias write, not both",
                ))
            }
            (Some(u), None) | (None, Some(u)) => u,
            (None, None) => true,
        };
        let t = py.detach(|| self.inner.begin(update)).map_err(to_py)?;
        Ok(Txn::new(t))
    }

    /// Opens keyspace `name`, creating it with these options if it does not
    /// exist (`default_ttl` in seconds; `compression`: "none", "lz4" or
    /// "zstd" for every table block of its keys, instead of the database's
    /// per-level codec). For an existing keyspace, no options keep its
    /// recorded ones; others replace them.
    #[pyo3(signature = (name, value_threshold=None, default_ttl=None, compression=None))]
    fn keyspace(
        slf: &Bound<'_, Self>,
        name: &str,
        value_threshold: Option<usize>,
        default_ttl: Option<f64>,
        compression: Option<&str>,
    ) -> PyResult<Py<Keyspace>> {
        let o = keyspace_options(value_threshold, default_ttl, compression)?;
        Keyspace::open(slf, name, o)
    }

    /// The names of the keyspaces, in byte order.
    fn keyspaces(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let inner = &self.inner;
        py.detach(|| inner.keyspaces()).map_err(to_py)
    }

    /// Drops keyspace `name` and all its keys in one atomic write (writers go
    /// on; compaction reclaims the space). NotFoundError if there is none.
    fn drop_keyspace(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let inner = &self.inner;
        py.detach(|| inner.drop_keyspace(name)).map_err(to_py)
    }

    /// One round of value-log GC; True if a file was collected.
    #[pyo3(signature = (discard_ratio=0.5))]
    fn run_value_log_gc(&self, py: Python<'_>, discard_ratio: f64) -> PyResult<bool> {
        let out = py
            .detach(|| self.inner.run_value_log_gc(discard_ratio))
            .map_err(to_py)?;
        Ok(out != GcOutcome::NothingToCollect)
    }

    /// Flushes and compacts everything into the last level.
    fn flatten(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.flatten()).map_err(to_py)
    }

    /// Makes a new data key for an encrypted database and returns its id:
    /// files created from now on are encrypted with it, older ones keep
    /// theirs. InvalidArgumentError on a database opened without a key.
    fn rotate_encryption_key(&self, py: Python<'_>) -> PyResult<u32> {
        py.detach(|| self.inner.rotate_encryption_key())
            .map_err(to_py)
    }

    /// Makes the memtables durable tables.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.flush()).map_err(to_py)
    }

    /// Deletes every key.
    fn drop_all(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.drop_all()).map_err(to_py)
    }

    /// Deletes every key starting with `prefix` (one range delete: atomic,
    /// writers do not wait).
    fn drop_prefix(&self, py: Python<'_>, prefix: &Bound<'_, PyAny>) -> PyResult<()> {
        let p = bytes_view(prefix, "prefix")?;
        py.detach(|| self.inner.drop_prefix(&p)).map_err(to_py)
    }

    /// Writes a backup to `dest`: a path (the file is created or truncated,
    /// then synced) or a binary file object with `write()`, which gets the
    /// stream as it is made (chunks of about 1 MiB). `since` 0: the live
    /// entries; else every version after `since`. Returns the `since` for the
    /// next incremental backup. An exception from `write()` stops the backup
    /// (sett.IOError, caused by it); the database is not changed.
    #[pyo3(signature = (dest, since=0))]
    fn backup(&self, py: Python<'_>, dest: &Bound<'_, PyAny>, since: u64) -> PyResult<u64> {
        if let Ok(path) = dest.extract::<PathBuf>() {
            return py
                .detach(|| -> sett_core::Result<u64> {
                    let io = |e: std::io::Error| sett_core::Error::Io {
                        context: format!("writing backup {}", path.display()),
                        source: e.into(),
                    };
                    let f = std::fs::File::create(&path).map_err(io)?;
                    let mut w = std::io::BufWriter::new(f);
                    let next = self.inner.backup(&mut w, since)?;
                    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
                    f.sync_all().map_err(io)?;
                    Ok(next)
                })
                .map_err(to_py);
        }
        let mut w = PyStream::new(dest, "write", "backup")?;
        let r = py.detach(|| self.inner.backup(&mut w, since));
        w.result(py, r)
    }

    /// Restores a backup from `src`: a path or a binary file object with
    /// `read()` (a full backup needs an empty database). Returns the number of
    /// entries applied. The stream is applied in chunks of about 1 MiB as it is
    /// read: when `read()` raises (sett.IOError, caused by it) or the stream is
    /// damaged (CorruptionError), the entries of the chunks before may be in
    /// the database; `drop_all()` before restoring a full backup again.
    fn restore(&self, py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Ok(path) = src.extract::<PathBuf>() {
            return py
                .detach(|| -> sett_core::Result<u64> {
                    let f = std::fs::File::open(&path).map_err(|e| sett_core::Error::Io {
                        context: format!("opening backup {}", path.display()),
                        source: e.into(),
                    })?;
                    self.inner.load(&mut std::io::BufReader::new(f))
                })
                .map_err(to_py);
        }
        let mut r = PyStream::new(src, "read", "restore")?;
        let n = py.detach(|| self.inner.load(&mut r));
        r.result(py, n)
    }

    /// Checks every checksum: each table block and each value-log entry a live
    /// version points to. Returns the counts as a dict (tables, blocks,
    /// entries, values); the first damage raises CorruptionError naming the
    /// file and offset. The database is not changed.
    fn verify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let r = py.detach(|| self.inner.verify()).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("tables", r.tables)?;
        d.set_item("blocks", r.blocks)?;
        d.set_item("entries", r.entries)?;
        d.set_item("values", r.values)?;
        Ok(d.into_any().unbind())
    }

    /// Makes an openable copy of the database in directory `path`, which must
    /// not exist (its parent must), while other threads keep writing: tables
    /// and sealed value-log files are hard-linked. The copy holds every write
    /// acknowledged before the call; open it with sett.open as a database of
    /// its own. Returns a dict (files_linked, files_copied, bytes_linked,
    /// bytes_copied, elapsed_seconds). An existing `path` raises
    /// InvalidArgumentError and changes nothing; a directory left by an
    /// interrupted checkpoint holds CHECKPOINT-INCOMPLETE, and sett.open
    /// refuses it with CorruptionError. The GIL is released while it runs.
    fn checkpoint(&self, py: Python<'_>, path: PathBuf) -> PyResult<Py<PyAny>> {
        let r = py.detach(|| self.inner.checkpoint(&path)).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("files_linked", r.files_linked)?;
        d.set_item("files_copied", r.files_copied)?;
        d.set_item("bytes_linked", r.bytes_linked)?;
        d.set_item("bytes_copied", r.bytes_copied)?;
        d.set_item("elapsed_seconds", r.elapsed.as_secs_f64())?;
        Ok(d.into_any().unbind())
    }

    /// Counts and sizes as a dict.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.inner.is_closed() {
            return Err(to_py(sett_core::Error::Closed));
        }
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("levels", s.levels)?;
        d.set_item("vlog_files", s.vlog_files)?;
        d.set_item("vlog_bytes", s.vlog_bytes)?;
        d.set_item("memtable_bytes", s.memtable_bytes)?;
        d.set_item("immutable_memtables", s.immutable_memtables)?;
        d.set_item("index_filter_bytes", s.index_filter_bytes)?;
        d.set_item("last_seq", s.last_seq)?;
        d.set_item("table_entries", s.table_entries)?;
        d.set_item("write_groups", s.write_groups)?;
        d.set_item("batches_written", s.batches_written)?;
        d.set_item("wal_syncs", s.wal_syncs)?;
        d.set_item("compactions_pending", s.compactions_pending)?;
        d.set_item("compactions_running", s.compactions_running)?;
        d.set_item("gc_files_rewritten", s.gc_files_rewritten)?;
        d.set_item("gc_files_deleted", s.gc_files_deleted)?;
        d.set_item("gc_bytes_reclaimed", s.gc_bytes_reclaimed)?;
        d.set_item("gc_seconds", s.gc_micros as f64 / 1e6)?;
        d.set_item("gc_pending_files", s.gc_pending_files)?;
        d.set_item("gc_pending_bytes", s.gc_pending_bytes)?;
        d.set_item("cache_capacity", s.cache_capacity)?;
        d.set_item("cache_usage", s.cache_usage)?;
        d.set_item("cache_pinned_bytes", s.cache_pinned_bytes)?;
        d.set_item("cache_index_filter_hits", s.cache_index_filter_hits)?;
        d.set_item("cache_index_filter_misses", s.cache_index_filter_misses)?;
        d.set_item("cache_data_hits", s.cache_data_hits)?;
        d.set_item("cache_data_misses", s.cache_data_misses)?;
        d.set_item("gc_damaged_files", s.gc_damaged_files)?;
        d.set_item("level_bytes_written", s.level_bytes_written)?;
        d.set_item("level_bytes_read", s.level_bytes_read)?;
        d.set_item("wal_bytes_written", s.wal_bytes_written)?;
        d.set_item("gc_bytes_moved", s.gc_bytes_moved)?;
        Ok(d.into_any().unbind())
    }

    /// The database directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Flushes, waits for background work and releases the directory. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.close()).map_err(to_py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "<sett.Db {:?}{}>",
            self.inner.path().display().to_string(),
            if self.inner.is_closed() {
                " closed"
            } else {
                ""
            }
        )
    }
}
