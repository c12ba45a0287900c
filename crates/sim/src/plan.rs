//! What one pool's simulation is built from: where its workers are
//! ([`PoolPlan`]) and what every pool of a run shares ([`RunSetup`]). Both
//! the scheduler builder (`build`) and the pool simulation (`pool`) read
//! these; neither imports the other's types for them.

use crate::config::{DelayDist, FailureEvent, LoadTrackingMode, Policy, WorkerModel};
use crate::workload::{RateSchedule, ServiceSampler};

/// Where a pool's workers are: its rack slices and the spines serving it.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    pub pool_id: u32,
    pub racks: Vec<RackPlan>,
    /// Global ids of the spine switches serving the pool.
    pub spines: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct RackPlan {
    /// Global leaf (rack) id.
    pub leaf: u32,
    /// Index into [`PoolPlan::spines`] of the spine this leaf is linked to.
    pub spine: u32,
    /// The pool's cores on each server of the rack: (global server id, cores).
    pub servers: Vec<(u32, u32)>,
}

impl PoolPlan {
    /// The pool as one rack holding every server, under the first rack's
    /// leaf: how the unmodified horus-sim schedules, whose leaves all share
    /// one idle set (`LeafIdleScope::Pool`). Hop counts are unchanged: a
    /// task still crosses spine, leaf and worker links once each.
    pub fn merged_racks(&self) -> PoolPlan {
        let first = self.racks.first().expect("a pool has at least one rack");
        PoolPlan {
            pool_id: self.pool_id,
            racks: vec![RackPlan {
                leaf: first.leaf,
                spine: 0,
                servers: self.racks.iter().flat_map(|r| r.servers.clone()).collect(),
            }],
            // One rack is one leaf linked to one spine; spines with no rack
            // would take a share of the tasks and have nowhere to send them.
            spines: vec![self.spines[first.spine as usize]],
        }
    }

    pub fn workers(&self) -> u64 {
        self.racks
            .iter()
            .flat_map(|r| r.servers.iter())
            .map(|&(_, c)| c as u64)
            .sum()
    }
}

/// Everything about a run that is the same for all pools.
pub struct RunSetup<'a> {
    pub policy: Policy,
    pub seed: u64,
    pub service: &'a ServiceSampler,
    /// Offered load over time, as a fraction of each pool's capacity n / s̄.
    pub schedule: RateSchedule,
    /// Arrivals stop here; the run ends when the last task is done.
    pub end_ns: u64,
    pub warmup_ns: u64,
    pub hop_delay: DelayDist,
    pub loss: f64,
    pub resubmit_ns: u64,
    pub worker_model: WorkerModel,
    pub ps_slice_ns: u64,
    pub heartbeat_timeout_ns: u64,
    /// Switch failure detection time before the controller acts.
    pub failure_detection_ns: u64,
    /// Samples per power-of-k decision.
    pub samples: u32,
    /// RackSched §3.6: one queue per request type at every server.
    pub multi_queue: bool,
    /// RackSched's ToR load tracking (§4.6).
    pub load_tracking: LoadTrackingMode,
    /// INT2's exploration: one request in this many to a random server.
    pub int2_random_one_in: u32,
    /// Horus mechanism choices (`[schedulers.horus]`).
    pub horus: crate::config::HorusChoices,
    /// Flat policies: scheduler instances, one per client (RackSched §4.5).
    pub clients: u32,
    /// `r2p2`: JBSQ bound.
    pub jbsq_bound: u32,
    pub failures: &'a [FailureEvent],
    pub imbalance_interval_ns: u64,
    /// Spine-to-leaf hop count (1 within a pod, 3 across pods in a fat tree).
    pub hops: &'a (dyn Fn(u32, u32) -> u32 + Sync),
    /// Give every input an upper's data plane declares state-only
    /// (`DataPlane::writes_state_only`) its own event instead of holding it
    /// in the upper's inbox. Results are identical either way (tested);
    /// on only in tests ([`crate::run::RunOpts::eager_state_writes`]).
    pub eager_state_writes: bool,
}
