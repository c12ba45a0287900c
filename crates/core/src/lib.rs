//! netsched data planes: every scheduler as a sans-IO state machine written
//! against a programmable-switch model ([`switch`]).
//!
//! Drivers (the simulator, the UDP runtime, tests) feed [`dataplane::Input`]s
//! and execute the [`dataplane::Action`]s a data plane returns.

pub mod affinity;
pub mod baraat;
pub mod baselines;
pub mod client;
pub mod control;
pub mod dataplane;
pub mod fixed;
pub mod horus;
pub mod idle;
pub mod limits;
pub mod names;
pub mod outbox;
pub mod pow2;
pub mod pull;
pub mod racksched;
pub mod registry;
pub mod retry_budget;
pub mod rng;
pub mod switch;
pub mod time;
pub mod unknown_name;

pub use control::Control;
pub use dataplane::{
    Action, DataPlane, Decision, Dispatch, DropReason, Input, NodeId, Notice, Outbox, Resubmit,
    TaskId, TaskMeta, Upstream,
};
pub use registry::{Layer, Plane, PlaneParams, Policy};
pub use time::Nanos;
