//! The lab's error type: a daemon's own ([`netsched_node::Error`]) or one of
//! the lab's tools (nginx, the capacity runner, `cluster up`). The tools'
//! error kinds are defined here, below the tools that return them, so no
//! tool module and this one depend on each other.

use std::fmt::Display;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use netsched_node::config::ConfigError;
use netsched_node::error::{RocksError, SecretError};

/// Why a lab run could not start or complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A daemon, the client or their configuration failed.
    #[error(transparent)]
    Node(#[from] netsched_node::Error),
    #[error(transparent)]
    Nginx(#[from] NginxError),
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// A measurement run (`netsched bench`) whose client completed no task.
    #[error("latency run completed nothing: {summary}")]
    NothingCompleted { summary: String },
}

/// Why nginx could not serve as the baseline proxy.
#[derive(Debug, thiserror::Error)]
pub enum NginxError {
    #[error("{}: not found (Debian: apt-get install -y {packages})", path.display())]
    NotInstalled {
        path: PathBuf,
        packages: &'static str,
    },
    #[error("nginx exited ({status}): {log}")]
    Exited {
        status: std::process::ExitStatus,
        log: String,
    },
    #[error("nginx did not bind its port within 2 s")]
    NoBind,
}

/// Why the scheduler under test could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CapacityError {
    #[error("scheduler daemon exited ({status}) before binding {listen}")]
    DaemonExited {
        status: std::process::ExitStatus,
        listen: SocketAddr,
    },
    #[error("scheduler daemon did not bind {listen} within 5 s")]
    DaemonNoBind { listen: SocketAddr },
    #[error("{path}: no CPU times (unexpected /proc stat format)")]
    Stat { path: String },
}

/// Why a fleet run (`netsched cluster up`) stopped.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// SIGINT or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    #[error("timed out waiting for {what}")]
    TimedOut { what: String },
    /// A daemon of the fleet exited (none may before the run ends).
    #[error("{name} exited early ({status})")]
    ExitedEarly {
        name: String,
        status: std::process::ExitStatus,
    },
    /// A daemon died while the fleet was coming up; its log says why.
    #[error("{source}; see {}", log.display())]
    DaemonDied {
        #[source]
        source: Box<FleetError>,
        log: PathBuf,
    },
    #[error("{name} failed ({status}); see {}", log.display())]
    ClientFailed {
        name: String,
        status: std::process::ExitStatus,
        log: PathBuf,
    },
    #[error("calibration: only {tasks} of {submitted} tasks completed; see {}", log.display())]
    CalibrationFailed {
        tasks: u64,
        submitted: String,
        log: PathBuf,
    },
}

impl Error {
    /// An OS error on `what` (an address, a path): `what: error`.
    pub fn io(what: impl Display, source: io::Error) -> Self {
        Error::Node(netsched_node::Error::io(what, source))
    }
}

/// The node errors a lab function meets through `?`.
macro_rules! via_node {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::Node(e.into())
            }
        }
    )*};
}
via_node!(ConfigError, SecretError, RocksError, io::Error);

/// Callers that report errors as text (the CLI's `Result<_, String>`).
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
