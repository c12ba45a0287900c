//! The pull runtime's error: what can stop a pull daemon, executor set,
//! client or bench from starting. Messages read as before the type existed
//! (`field: msg` for settings, `addr: why` for sockets), since docs and
//! tests quote them.

use std::io;

use netsched_config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// A setting that cannot be used, or a TOML file that does not parse.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The `[fault]` table's refusal (its message names its field).
    #[error("{0}")]
    Fault(String),
    /// An address that cannot be bound.
    #[error("{addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// A socket or thread the runtime could not set up.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The metrics endpoint at `addr` could not be served.
    #[error("{addr}: {source}")]
    Metrics {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// The executors' RocksDB store could not be opened.
    #[error("{0}")]
    Rocks(String),
    /// `netsched bench pull`: the daemon thread did not report its address.
    #[error("pull daemon did not start")]
    DaemonDidNotStart,
    /// `netsched bench pull`: the daemon thread panicked.
    #[error("pull daemon panicked")]
    DaemonPanicked,
    /// `datapath = "xdp"`: the Draconis program could not be loaded,
    /// installed or attached, or its maps read.
    #[error("xdp: {0}")]
    Xdp(#[from] netsched_xdp::XdpError),
}

impl PullError {
    pub(crate) fn bind(addr: impl ToString, source: io::Error) -> Self {
        PullError::Bind {
            addr: addr.to_string(),
            source,
        }
    }
}

/// Callers outside the pull runtime still report errors as text.
impl From<PullError> for String {
    fn from(e: PullError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull::{PullSwitchConfig, PullWorkerConfig};
    use netsched_config::pull::PullPolicy;

    /// Settings errors keep the `field: msg` text the docs quote, and name
    /// their field in the typed value.
    #[test]
    fn refused_settings_name_their_field() {
        let cfg = PullSwitchConfig::new("127.0.0.1:0", PullPolicy::Draconis, vec![]);
        let e = cfg.validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "executors: a pull scheduler needs at least one executor"
        );
        assert!(matches!(e, PullError::Config(ref c) if c.field == "executors"));
        let mut cfg = PullSwitchConfig::new(
            "127.0.0.1:0",
            PullPolicy::R2p2Recirc,
            vec!["127.0.0.1:9".parse().unwrap()],
        );
        cfg.r2p2.jbsq_bound = 0;
        assert_eq!(
            cfg.validate().unwrap_err().to_string(),
            "r2p2.jbsq_bound: must be >= 1, got 0"
        );
        cfg.r2p2.jbsq_bound = 1;
        cfg.fault.drop_rate = 1.5;
        assert_eq!(
            cfg.validate().unwrap_err().to_string(),
            "fault.drop_rate: must be in [0, 1], got 1.5"
        );
        let mut w = PullWorkerConfig::new(
            "127.0.0.1:9".parse().unwrap(),
            PullPolicy::Draconis,
            vec!["127.0.0.1:0".into()],
        );
        w.request_timeout_ms = 0;
        assert_eq!(
            String::from(w.validate().unwrap_err()),
            "request_timeout_ms: must be positive"
        );
    }

    #[test]
    fn a_bind_error_names_the_address() {
        let e = crate::pull::PullDaemon::bind(&PullSwitchConfig::new(
            "256.0.0.1:1",
            PullPolicy::Draconis,
            vec!["127.0.0.1:9".parse().unwrap()],
        ))
        .err()
        .expect("no such address");
        assert!(matches!(e, PullError::Bind { .. }), "{e:?}");
        assert!(e.to_string().starts_with("256.0.0.1:1: "), "{e}");
    }
}
