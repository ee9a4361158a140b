//! The one error type of the engine.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in sett. Each variant says what failed and, where
/// it applies, in which file and at which offset. New variants may come in a
/// minor release: a `match` outside this crate needs a wildcard arm.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed.
    Io {
        /// What sett was doing, with the path involved.
        context: String,
        /// The underlying error (shared, so that a poisoned Db can repeat it).
        source: Arc<std::io::Error>,
    },
    /// Bytes on disk do not match their checksum or their format.
    Corruption {
        /// The file that holds the bad bytes.
        file: PathBuf,
        /// The byte offset in that file where the problem was found.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// A file carries a format version this build cannot read.
    UnsupportedVersion {
        /// The file.
        file: PathBuf,
        /// The version found in it.
        found: u32,
        /// The version this build writes and reads.
        supported: u32,
    },
    /// An option has a value outside its documented range.
    InvalidOption {
        /// The option's name as in [`crate::Options`].
        name: &'static str,
        /// Why the value was refused.
        reason: String,
    },
    /// A caller passed something the API does not accept (an empty key, say).
    InvalidArgument(String),
    /// A named object the call needs does not exist (a keyspace to drop).
    NotFound(String),
    /// A key or value is larger than the configured limit.
    TooBig {
        /// "key" or "value".
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The configured limit in bytes.
        max: usize,
    },
    /// The master key does not open the key registry (`KEYREGISTRY`, the
    /// path given): it is not the key the database was encrypted with.
    /// Nothing was read or changed; open again with the right key.
    WrongEncryptionKey(PathBuf),
    /// The database in this directory is encrypted and no key was given
    /// ([`crate::Options::encryption`]).
    EncryptionKeyRequired(PathBuf),
    /// A key was given but the database in this directory is not encrypted;
    /// sett does not encrypt an existing database in place.
    NotEncrypted(PathBuf),
    /// Another Db (in this process or another) holds the directory lock; open
    /// waits up to 200 ms for it before saying so.
    Locked(PathBuf),
    /// The Db was opened read-only and a write was attempted.
    ReadOnly,
    /// The Db (or the iterator's Db) has been closed.
    Closed,
    /// An earlier write-path I/O error left the Db in an unknown state; writes are refused.
    Poisoned(String),
    /// A transaction read a key that another transaction wrote and committed
    /// after it started; retry it.
    Conflict,
    /// A change-feed subscriber's queue passed its `max_pending_bytes`: its
    /// undelivered changes were dropped. Subscribe again with
    /// `from: Some(resume_from)` to get every change after what it was given.
    FellBehind {
        /// Every change up to this version was delivered to it (or was not
        /// under its prefixes).
        resume_from: u64,
    },
    /// A subscription asked to start from a version older than the change
    /// feed's history holds. Rescan at a snapshot instead (see
    /// `Db::subscribe`).
    FeedHistoryTooShort {
        /// The version asked for.
        from: u64,
        /// The oldest version a subscription can start from now.
        oldest: u64,
    },
    /// A read met merge operands of `key` but the Db was opened without a
    /// merge operator (or a merge was written to such a Db): open it with
    /// the operator its manifest names ([`crate::Options::merge_operator`]).
    MergeOperatorMissing {
        /// The key (a storage key: a keyspace's carries its prefix).
        key: Vec<u8>,
    },
    /// The Db's manifest records merge operands written with another operator
    /// than the one given at open.
    MergeOperatorMismatch {
        /// The name recorded in the manifest.
        stored: String,
        /// The name of the operator given in the options.
        given: String,
    },
    /// The merge operator refused the operands of `key` (a malformed operand,
    /// say). The operands stay stored as they were.
    MergeFailed {
        /// The key (a storage key: a keyspace's carries its prefix).
        key: Vec<u8>,
        /// What the operator said.
        reason: String,
    },
}

/// The result type of sett.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// A corruption found in `file` at `offset`.
    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        offset: u64,
        what: impl Into<String>,
    ) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            what: what.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "I/O error while {context}: {source}"),
            Error::Corruption { file, offset, what } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {what}",
                    file.display()
                )
            }
            Error::UnsupportedVersion {
                file,
                found,
                supported,
            } => write!(
                f,
                "{} has format version {found}, this build reads version {supported}",
                file.display()
            ),
            Error::InvalidOption { name, reason } => write!(f, "invalid option `{name}`: {reason}"),
            Error::InvalidArgument(msg) => write!(f, "invalid argument: {msg}"),
            Error::NotFound(msg) => write!(f, "not found: {msg}"),
            Error::TooBig { what, len, max } => {
                write!(f, "{what} of {len} bytes exceeds the limit of {max} bytes")
            }
            Error::Locked(path) => write!(
                f,
                "database directory {} is locked by another process",
                path.display()
            ),
            Error::WrongEncryptionKey(path) => write!(
                f,
                "the encryption key does not open {}: it is not the key this database was encrypted with",
                path.display()
            ),
            Error::EncryptionKeyRequired(dir) => write!(
                f,
                "the database in {} is encrypted: open it with its encryption key",
                dir.display()
            ),
            Error::NotEncrypted(dir) => write!(
                f,
                "the database in {} is not encrypted: open it without an encryption key",
                dir.display()
            ),
            Error::ReadOnly => write!(f, "database is open read-only"),
            Error::Closed => write!(f, "database is closed"),
            Error::Conflict => write!(
                f,
                "transaction conflict: a key it read was written by a transaction that committed after it started; retry"
            ),
            Error::FellBehind { resume_from } => write!(
                f,
                "change-feed subscriber fell behind (its queue passed max_pending_bytes); resubscribe from version {resume_from}"
            ),
            Error::FeedHistoryTooShort { from, oldest } => write!(
                f,
                "change-feed history no longer holds the changes after version {from}: the oldest version a subscription can start from is {oldest}; rescan at a snapshot and subscribe from its version"
            ),
            Error::MergeOperatorMissing { key } => write!(
                f,
                "key {key:?} holds merge operands but the database was opened without a merge operator"
            ),
            Error::MergeOperatorMismatch { stored, given } => write!(
                f,
                "the database's merge operator is {stored:?}, not {given:?}: open it with {stored:?}"
            ),
            Error::MergeFailed { key, reason } => {
                write!(f, "merging the operands of key {key:?} failed: {reason}")
            }
            Error::Poisoned(cause) => write!(
                f,
                "database refuses writes after an earlier write error: {cause}"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
