//! netsched's discrete-event datacenter simulator: drives the data planes of
//! `netsched-core` over a fat-tree topology with per-hop delay, loss,
//! failures and workers, one event queue per pool.

mod build;
pub mod config;
pub mod nodes;
pub mod ns;
pub mod pool;
pub mod pull;
pub mod queue;
pub mod report;
pub mod run;

pub mod error;
pub mod metrics;
pub mod topology;
pub mod workload;
