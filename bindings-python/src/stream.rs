//! Backup and restore through a Python file object: `Db.backup(f)` calls
//! `f.write(bytes)` and `Db.restore(f)` calls `f.read(n)` as the stream is
//! made or applied. The engine runs without the GIL; each call takes it.

use crate::convert::bytes_arg;
use crate::errors::to_py;
use pyo3::exceptions::{PyException, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::io::{self, Read, Write};

/// A file object as `io::Write` (method "write") or `io::Read` (method "read").
pub struct PyStream {
    obj: Py<PyAny>,
    method: &'static str,
    /// The exception the file object raised, raised again (or as the cause)
    /// once the engine has returned.
    raised: Option<PyErr>,
    /// Bytes that went through, for the error message.
    done: u64,
}

impl PyStream {
    /// `obj` if it has `method`; a TypeError naming `what` (the Db method) else.
    pub fn new(obj: &Bound<'_, PyAny>, method: &'static str, what: &str) -> PyResult<PyStream> {
        if !obj.hasattr(method)? {
            let ty = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into());
            return Err(PyTypeError::new_err(format!(
                "{what} takes a path or a binary file object with {method}(), not {ty}"
            )));
        }
        Ok(PyStream {
            obj: obj.clone().unbind(),
            method,
            raised: None,
            done: 0,
        })
    }

    /// The engine's result as a Python one. When the file object raised: an
    /// Exception comes back as sett.IOError caused by it; anything else
    /// (KeyboardInterrupt, ...) is raised as it was.
    pub fn result<T>(&mut self, py: Python<'_>, r: sett_core::Result<T>) -> PyResult<T> {
        let raised = self.raised.take();
        match (r, raised) {
            (Ok(v), _) => Ok(v),
            (Err(e), Some(cause)) if !cause.is_instance_of::<PyException>(py) => {
                drop(e);
                Err(cause)
            }
            (Err(e), cause) => {
                let err = to_py(e);
                err.set_cause(py, cause);
                Err(err)
            }
        }
    }

    fn failed(&mut self, e: PyErr) -> io::Error {
        self.raised = Some(e);
        io::Error::other(format!(
            "the file object's {}() raised after {} bytes of the stream",
            self.method, self.done
        ))
    }
}

impl Write for PyStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = Python::attach(|py| -> PyResult<usize> {
            let ret = self
                .obj
                .call_method1(py, "write", (PyBytes::new(py, buf),))?;
            // A raw file may take fewer bytes (write_all calls again); None
            // (some file-likes) means all of them.
            if ret.is_none(py) {
                return Ok(buf.len());
            }
            let n: usize = ret.extract(py)?;
            Ok(n.min(buf.len()))
        });
        match r {
            Ok(n) => {
                self.done += n as u64;
                Ok(n)
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let r = Python::attach(|py| -> PyResult<Vec<u8>> {
            let got = self.obj.call_method1(py, "read", (buf.len(),))?;
            let data = bytes_arg(got.bind(py), "the value read() returned")?;
            if data.len() > buf.len() {
                return Err(PyTypeError::new_err(format!(
                    "read({}) returned {} bytes",
                    buf.len(),
                    data.len()
                )));
            }
            Ok(data)
        });
        match r {
            Ok(data) => {
                buf[..data.len()].copy_from_slice(&data);
                self.done += data.len() as u64;
                Ok(data.len())
            }
            Err(e) => Err(self.failed(e)),
        }
    }
}
