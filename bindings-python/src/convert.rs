//! Arguments from Python: `bytes` or `bytearray` only; `str` and everything
//! else is a TypeError that says what to do. (memoryview needs the buffer
//! protocol, outside the stable ABI before Python 3.11.)

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::borrow::Cow;

/// The bytes of `obj`, copied.
pub fn bytes_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    bytes_view(obj, what).map(Cow::into_owned)
}

/// The bytes of `obj`: borrowed from a `bytes` (immutable, and held by the
/// caller's reference), copied from a `bytearray` (which Python code may
/// resize while we read it).
pub fn bytes_view<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes, not str (encode it, e.g. s.encode())"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes or bytearray, not {}",
        obj.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into())
    )))
}

/// An optional bytes-like argument (None → None).
pub fn opt_bytes_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => bytes_arg(o, what).map(Some),
    }
}
