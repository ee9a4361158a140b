//! The one error type of the server: start-up problems (command line, topology
//! file, opening the Db) and failures of a connection. Errors a client causes
//! become error replies (see `commands`), not this type.

use std::fmt;

/// What failed, and where.
#[derive(Debug)]
pub enum Error {
    /// An I/O call failed; `context` says which and on what.
    Io {
        /// What the server was doing.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The engine failed; `context` says at which step.
    Engine {
        /// What the server was doing.
        context: String,
        /// The engine's error (it names files and offsets itself).
        source: sett::Error,
    },
    /// The command line or a file it names is not acceptable.
    Config(String),
    /// A client sent bytes that are not a RESP command within the limits; the
    /// connection gets this as an error reply and is closed.
    Protocol(String),
    /// A command panicked (a bug); its connection is closed, the server goes on.
    Panic(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Engine { context, source } => write!(f, "{context}: {source}"),
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::Protocol(m) => write!(f, "protocol error: {m}"),
            Error::Panic(m) => write!(f, "a command panicked: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Engine { source, .. } => Some(source),
            Error::Config(_) | Error::Protocol(_) | Error::Panic(_) => None,
        }
    }
}

/// The server's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for an `Error::Io` with its context.
pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}
