//! netsched's flow-level simulator for task-aware flow scheduling: Baraat
//! (Dogar et al., SIGCOMM'14) against fair sharing (ideal RCP), pFabric
//! (shortest flow first), Orchestra (FIFO) and shortest task first, on §5.2's
//! three-level tree. See docs/flowsim.md.

pub mod compare;
pub mod config;
pub mod engine;
pub mod iheap;
pub mod packet;
pub mod policy;
pub mod report;
pub mod run;
pub mod topology;
pub mod workload;

/// Baraat's state machines (task ids, FIFO-LM, SPC Alg. 1 and 2) are the
/// shared data plane of `netsched_core::baraat`.
pub use netsched_core::baraat as spc;

pub use config::FlowConfig;
pub use policy::Policy;
