//! Why a Fig. 7 run over UDP failed, naming the thread (switch, server,
//! client) whose step failed.

use std::fmt;
use std::io;

use netsched_core::names::FlowPolicy;
use netsched_core::registry::ParamError;

use crate::netns::NetnsError;

/// The lab's threads, for the error of the one that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Switch,
    Server(usize),
    Client,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Switch => f.write_str("switch"),
            Role::Server(i) => write!(f, "server {i}"),
            Role::Client => f.write_str("client"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Fig7Error {
    /// The link rate, interval or threshold is not one Alg. 1 can run with.
    #[error("flow parameters: {0}")]
    Params(#[from] ParamError),
    /// The mode's flow policy has no switch data plane to put on the port.
    #[error("flow policy {} has no switch data plane", .0.name())]
    NoPlane(FlowPolicy),
    #[error("{role}: {source}")]
    Namespace {
        role: Role,
        #[source]
        source: NetnsError,
    },
    /// Binding, sending or receiving in the thread's namespace.
    #[error("{role}: {source}")]
    Io {
        role: Role,
        #[source]
        source: io::Error,
    },
    #[error("{0} thread panicked")]
    Panicked(Role),
}
