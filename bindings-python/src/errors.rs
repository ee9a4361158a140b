//! The exception hierarchy: everything under `sett.Error`.
// pyo3 0.22's create_exception! tests a cfg (gil-refs) that this crate does not declare.
#![allow(unexpected_cfgs)]

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use sett_core::Error;

create_exception!(
    sett,
    SettError,
    PyException,
    "Base class of every sett error."
);
create_exception!(
    sett,
    ConflictError,
    SettError,
    "A transaction conflicted; retry it."
);
create_exception!(
    sett,
    CorruptionError,
    SettError,
    "Damaged data; the message names file and offset."
);
create_exception!(
    sett,
    ClosedError,
    SettError,
    "The database (or its transaction or iterator) is closed."
);
create_exception!(
    sett,
    TooBigError,
    SettError,
    "A key, value, batch or transaction is over its limit."
);
create_exception!(
    sett,
    LockedError,
    SettError,
    "Another process holds the database directory."
);
create_exception!(
    sett,
    ReadOnlyError,
    SettError,
    "A write to a database opened read-only."
);
create_exception!(
    sett,
    PoisonedError,
    SettError,
    "An earlier write error left the database refusing writes."
);
create_exception!(
    sett,
    InvalidOptionError,
    SettError,
    "An option is out of range."
);
create_exception!(
    sett,
    InvalidArgumentError,
    SettError,
    "An argument sett does not accept (an empty key, say)."
);
create_exception!(sett, IOError, SettError, "An operating-system I/O error.");
create_exception!(
    sett,
    UnsupportedVersionError,
    SettError,
    "A file of a format version this build cannot read."
);

create_exception!(
    sett,
    FellBehindError,
    SettError,
    "A change-feed subscriber fell behind; resubscribe with since=resume_from."
);
create_exception!(
    sett,
    FeedHistoryTooShortError,
    SettError,
    "The change feed's history does not reach back to the version asked; `oldest` is the oldest it holds."
);

create_exception!(
    sett,
    MergeOperatorMissingError,
    SettError,
    "A key holds merge operands (or a merge was asked) but the database has no merge operator."
);
create_exception!(
    sett,
    MergeOperatorMismatchError,
    SettError,
    "open() was given another merge operator than the one the database records."
);
create_exception!(
    sett,
    MergeFailedError,
    SettError,
    "The merge operator refused a key's operands; they stay stored as they were."
);

create_exception!(
    sett,
    NotFoundError,
    SettError,
    "A named object does not exist (a keyspace to drop)."
);

create_exception!(
    sett,
    WrongEncryptionKeyError,
    SettError,
    "The encryption key is not the one the database was encrypted with; nothing was changed."
);
create_exception!(
    sett,
    EncryptionKeyRequiredError,
    SettError,
    "The database is encrypted and no encryption_key was given."
);
create_exception!(
    sett,
    NotEncryptedError,
    SettError,
    "An encryption_key was given for a database that is not encrypted."
);

/// `exc` with attribute `name` set to `v`.
fn with_attr(exc: PyErr, name: &str, v: u64) -> PyErr {
    Python::attach(|py| {
        // Setting an attribute on a fresh exception object does not fail.
        let _ = exc.value(py).setattr(name, v);
    });
    exc
}

/// Converts an engine error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Conflict => ConflictError::new_err(msg),
        Error::Corruption { .. } => CorruptionError::new_err(msg),
        Error::Closed => ClosedError::new_err(msg),
        Error::TooBig { .. } => TooBigError::new_err(msg),
        Error::Locked(_) => LockedError::new_err(msg),
        Error::ReadOnly => ReadOnlyError::new_err(msg),
        Error::Poisoned(_) => PoisonedError::new_err(msg),
        Error::InvalidOption { .. } => InvalidOptionError::new_err(msg),
        Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
        Error::NotFound(_) => NotFoundError::new_err(msg),
        Error::Io { .. } => IOError::new_err(msg),
        Error::UnsupportedVersion { .. } => UnsupportedVersionError::new_err(msg),
        Error::FellBehind { resume_from } => {
            with_attr(FellBehindError::new_err(msg), "resume_from", resume_from)
        }
        Error::FeedHistoryTooShort { oldest, .. } => {
            with_attr(FeedHistoryTooShortError::new_err(msg), "oldest", oldest)
        }
        Error::MergeOperatorMissing { .. } => MergeOperatorMissingError::new_err(msg),
        Error::MergeOperatorMismatch { .. } => MergeOperatorMismatchError::new_err(msg),
        Error::MergeFailed { .. } => MergeFailedError::new_err(msg),
        Error::WrongEncryptionKey(_) => WrongEncryptionKeyError::new_err(msg),
        Error::EncryptionKeyRequired(_) => EncryptionKeyRequiredError::new_err(msg),
        Error::NotEncrypted(_) => NotEncryptedError::new_err(msg),
        // A variant newer than this binding: the base class, with its message.
        _ => SettError::new_err(msg),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<SettError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("TooBigError", py.get_type::<TooBigError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("PoisonedError", py.get_type::<PoisonedError>())?;
    m.add("InvalidOptionError", py.get_type::<InvalidOptionError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("IOError", py.get_type::<IOError>())?;
    m.add(
        "UnsupportedVersionError",
        py.get_type::<UnsupportedVersionError>(),
    )?;
    m.add("FellBehindError", py.get_type::<FellBehindError>())?;
    m.add(
        "MergeOperatorMissingError",
        py.get_type::<MergeOperatorMissingError>(),
    )?;
    m.add(
        "MergeOperatorMismatchError",
        py.get_type::<MergeOperatorMismatchError>(),
    )?;
    m.add("MergeFailedError", py.get_type::<MergeFailedError>())?;
    m.add(
        "FeedHistoryTooShortError",
        py.get_type::<FeedHistoryTooShortError>(),
    )?;
    m.add(
        "WrongEncryptionKeyError",
        py.get_type::<WrongEncryptionKeyError>(),
    )?;
    m.add(
        "EncryptionKeyRequiredError",
        py.get_type::<EncryptionKeyRequiredError>(),
    )?;
    m.add("NotEncryptedError", py.get_type::<NotEncryptedError>())?;
    Ok(())
}
