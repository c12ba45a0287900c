//! netsched runtime over UDP: real processes that drive the sans-IO
//! data planes of `netsched-core` with the wire format of `netsched-proto`.
//!
//! * [`switch`]: the scheduler daemon, a software Horus spine and/or leaf (the
//!   paper's deployment without programmable switches, Horus §4.1) for any
//!   number of pools, plus flat baselines; it owns sockets and a clock and is
//!   otherwise only a driver: every decision is the data plane's.
//! * [`worker`]: the worker agent, N executors with a FCFS queue each that run
//!   synthetic tasks and report their queue length in replies (Horus §3.4).
//! * [`client`]: an open-loop Poisson load generator whose latencies are
//!   measured from each task's intended send time.
//! * [`cluster`]: all of the above as threads of one process, on loopback.
//! * [`metrics`]: the Prometheus endpoint (prometheus-client on [`http`]);
//!   [`log`]: tracing setup and signal-driven shutdown.
//!
//! docs/runtime.md describes configs and how to run a local cluster. The
//! lab around the daemons (benchmarks, the nginx comparison, `cluster up`,
//! namespace hosts) is the `netsched-lab` crate.

pub mod client;
pub mod client_net;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod error;
pub mod fault;
pub mod http;
pub mod log;
pub mod metrics;
pub mod net;
pub mod notice_auth;
pub mod pull;
pub mod secret;
pub mod switch;
pub mod task_seal;
pub mod tasks;
pub mod worker;

pub use client::{Client, ClientReport};
pub use config::{ClientConfig, SwitchConfig, WorkerConfig};
pub use error::Error;
pub use switch::SwitchDaemon;
pub use worker::Worker;
