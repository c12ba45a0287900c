//! The crate's error type where modules meet (daemon start-up, the CLI):
//! one variant per kind of failure, so a caller can tell a bad config from
//! an unusable address or a missing secret. Messages are one line and name
//! what failed (docs/runtime.md quotes some of them).

use std::fmt::Display;
use std::io;

pub use crate::config::ConfigError;
pub use crate::secret::SecretError;
pub use crate::tasks::RocksError;

/// Why a runtime component could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// An OS call failed on something the message names (an address, a file).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// An OS call failed where there is nothing more to name.
    #[error(transparent)]
    Os(#[from] io::Error),
    #[error(transparent)]
    Rocks(#[from] RocksError),
    /// A JSON document (the controller's state file) that cannot be read
    /// or written, and which.
    #[error("{what}: {source}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    /// A thread of ours panicked (`what` names it).
    #[error("{what} panicked")]
    Panicked { what: &'static str },
    /// A peer (the controller's admin API) answered with something this
    /// crate cannot use.
    #[error("{0}")]
    Protocol(String),
    /// The XDP data path (`datapath = "xdp"`) could not be set up.
    #[error("xdp: {0}")]
    Xdp(#[from] netsched_xdp::XdpError),
}

impl Error {
    /// An OS error on `what` (an address, a path): `what: error`.
    pub fn io(what: impl Display, source: io::Error) -> Self {
        Error::Io {
            what: what.to_string(),
            source,
        }
    }
}

/// Callers that report errors as text (the CLI's `Result<_, String>`).
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
