//! netsched's discrete-event datacenter simulator: drives the data planes of
//! `netsched-core` over a fat-tree topology with per-hop delay, loss,
//! failures and workers, one event queue per pool.

mod build;
pub mod config;
pub mod floor;
pub mod nodes;
mod plan;
pub mod pool;
pub mod pull;
pub mod queue;
pub mod report;
pub mod run;

pub mod metrics;
pub mod topology;
mod work_queue;

// Shared with the pull simulator, flowsim and the runtime; re-exported so
// paths inside the simulator stay as they were.
pub use netsched_config::{error, ns, workload};
