//! The lab around the netsched runtime: tools that start daemons of
//! `netsched-node` (as threads or processes), load them and measure, kept
//! apart so the daemons' crate holds the daemons only.
//!
//! * [`bench`]: `netsched bench latency`, the runtime's scheduling latency
//!   at low load against a direct baseline.
//! * [`capacity`]: `netsched bench capacity`, goodput and tail latency of
//!   the scheduler daemon and of nginx against offered load.
//! * [`nginx`]: the nginx comparison (`netsched bench nginx`): nginx's UDP
//!   stream proxy in front of the same workers.
//! * [`pull_bench`]: `netsched bench pull`, the pull runtime's throughput,
//!   saturation and latency against load.
//! * [`cluster_up`]: `netsched cluster up`, a fleet of daemon processes
//!   (controller, switches, workers, client) started from one config.
//! * [`baraat`]: Baraat's SPC over real UDP in network namespaces
//!   (`netsched flowsim fig7`): a driver of core's SPC and proto's Baraat
//!   messages.
//! * [`netns`]: network namespaces as hosts on a bridge, for tests that need
//!   separate network stacks (failures, control-plane authentication).
//!
//! docs/runtime.md describes the daemons, docs/lab.md this crate's fleet and
//! namespace tests, docs/benchmarks.md the figures.

pub mod baraat;
pub mod bench;
pub mod capacity;
pub mod cluster_up;
pub mod error;
pub mod netns;
pub mod nginx;
pub mod pull_bench;
pub mod xdp_e2e;

pub use error::Error;
