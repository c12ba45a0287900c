//! Pull scheduling over UDP (Draconis EuroSys'24, R2P2 JBSQ, Sparrow): the
//! `netsched-core::pull` data planes in real processes, in wire family 3
//! of crates/proto.
//!
//! * [`switch`]: the scheduler daemon (`netsched switch` with a pull policy).
//! * [`executor`]: executors that pull (`netsched worker` with a policy).
//! * [`xdp`]: the same daemon with `datapath = "xdp"`: the Draconis queue
//!   as an XDP program, the daemon sending what it leaves to user space.
//! * [`client`]: an open-loop client that submits jobs of many tasks, with
//!   per-task timeouts and resubmission.
//!
//! docs/runtime.md, "Pull scheduling", has configs and the message flow.

pub mod client;
pub mod config;
pub mod error;
pub mod executor;
mod serve;
pub mod switch;
pub mod xdp;

pub use client::{PullClient, PullReport};
pub use config::{PullClientConfig, PullSwitchConfig, PullWorkerConfig, RetryBudgetConfig};
pub use error::PullError;
pub use executor::PullWorker;
pub use switch::PullDaemon;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Runs a pull scheduler until `stop` is set, with its metrics endpoint:
/// in this process, or with `datapath = "xdp"` as the XDP Draconis queue
/// ([`xdp`]).
pub fn run_config(cfg: &PullSwitchConfig, stop: Arc<AtomicBool>) -> Result<(), PullError> {
    if cfg.datapath == crate::config::Datapath::Xdp {
        return xdp::run_config(cfg, stop);
    }
    switch::run_config(cfg, stop)
}
