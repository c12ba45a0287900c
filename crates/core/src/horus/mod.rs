//! Horus leaf and spine schedulers (NSDI'24 §3.3, §3.4, §A.1-A.6).
//!
//! Both roles run the same policy (§3.3): a task goes to an idle node if the
//! scheduler knows one, otherwise to the lighter of two random samples using
//! the lazy drift rule. They differ in what a node is (worker vs rack), in
//! whether picking an idle node removes it (a leaf's worker is busy from then
//! on; a spine's rack may still have idle workers), and in the unit of load
//! (queue length vs rack average in 16.16 fixed point).

// Multi-packet tasks (§A.4) follow the first packet's choice through the
// connection table, as every data plane's do.
pub(crate) use crate::baselines::follow as follow_affinity;

mod leaf;
mod options;
mod spine;

pub use leaf::{HorusLeaf, LeafCounters};
pub use options::{HorusOptions, IdleLink, LeafIdleScope, RemoveLock, SpineIdlePick};
pub use spine::HorusSpine;

/// Connection-table sizing shared by both roles (§A.4).
#[derive(Clone, Copy, Debug)]
pub struct ConnTableConfig {
    pub stages: u32,
    pub slots_per_stage: u32,
    /// Entries disappear after this long ("in the order of 10s of milliseconds").
    pub timeout_ns: u64,
}

impl Default for ConnTableConfig {
    fn default() -> Self {
        ConnTableConfig {
            stages: 2,
            slots_per_stage: 1024,
            timeout_ns: 20_000_000,
        }
    }
}
