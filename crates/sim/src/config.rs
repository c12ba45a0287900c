//! The simulator's configuration, read from TOML.
//!
//! Every struct denies unknown fields, so a typo is an error naming the field
//! rather than a silently ignored setting. [`SimConfig::validate`] checks the
//! values and names the offending field in a one-line error.

use serde::{Deserialize, Serialize};

use netsched_config::parse::Renamed;

use crate::error::ConfigError;
use crate::topology::{PlacementConfig, TopologyConfig};
use crate::workload::ServiceDist;

/// Which scheduler runs at the spine and leaf layers: the one policy
/// vocabulary of every driver (`netsched_core::registry`).
pub use netsched_core::registry::Policy;

/// A per-hop delay: constant, or exponential around a mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum DelayDist {
    Constant {
        us: f64,
    },
    Exp {
        mean_us: f64,
    },
    /// One of ten intra-pod RTT samples from Pingmesh, scaled to `mean_us`,
    /// each equally likely: the Horus authors' simulator's per-hop delay
    /// (horus-sim, latency_model.py and rtt_results.txt; the ten values at a
    /// 1 µs mean are 0.469 ... 3.310 µs, [`PINGMESH_RTT_AT_MEAN_1`]).
    Pingmesh {
        mean_us: f64,
    },
}

/// The ten per-hop delays of [`DelayDist::Pingmesh`] at a 1 µs mean (they
/// sum to 10), as listed by horus-sim at commit e2ed839.
pub const PINGMESH_RTT_AT_MEAN_1: [f64; 10] = [
    0.469, 0.497, 0.524, 0.552, 0.593, 0.662, 0.745, 0.993, 1.655, 3.310,
];

impl DelayDist {
    pub fn mean_ns(&self) -> u64 {
        match *self {
            DelayDist::Constant { us } => (us * 1e3).round() as u64,
            DelayDist::Exp { mean_us } | DelayDist::Pingmesh { mean_us } => {
                (mean_us * 1e3).round() as u64
            }
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut netsched_core::rng::Rng) -> u64 {
        match *self {
            DelayDist::Constant { us } => (us * 1e3).round() as u64,
            DelayDist::Exp { mean_us } => {
                if mean_us <= 0.0 {
                    0
                } else {
                    crate::ns::round_ns(-rng.unit_open0().ln() * mean_us * 1e3)
                }
            }
            DelayDist::Pingmesh { mean_us } => {
                let v = PINGMESH_RTT_AT_MEAN_1[rng.below(10) as usize];
                crate::ns::round_ns(v * mean_us * 1e3)
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Delay of one switch-to-switch or switch-to-server hop (Horus §5.1: 5 µs mean).
    #[serde(default = "default_hop")]
    pub hop_delay: DelayDist,
    /// Per-packet loss probability (Horus §5.1: 1e-3 % = 1e-5).
    #[serde(default = "default_loss")]
    pub loss: f64,
    /// Extra latency of one resubmission pass through a switch pipeline.
    #[serde(default = "default_resubmit_ns")]
    pub resubmit_ns: u64,
    /// Time for the fabric manager to detect a switch failure before the
    /// controller starts notifying (Horus §C adds only the hop latency of the
    /// notices, i.e. 0 here).
    #[serde(default)]
    pub failure_detection_us: f64,
}

fn default_hop() -> DelayDist {
    DelayDist::Exp { mean_us: 5.0 }
}
fn default_loss() -> f64 {
    1e-5
}
fn default_resubmit_ns() -> u64 {
    500
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            hop_delay: default_hop(),
            loss: default_loss(),
            resubmit_ns: default_resubmit_ns(),
            failure_detection_us: 0.0,
        }
    }
}

impl NetworkConfig {
    /// No delay, no loss: for checks against queueing theory.
    pub fn ideal() -> Self {
        NetworkConfig {
            hop_delay: DelayDist::Constant { us: 0.0 },
            loss: 0.0,
            resubmit_ns: 0,
            failure_detection_us: 0.0,
        }
    }
}

/// How the cores a pool owns execute tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerModel {
    /// Each worker (core) has its own FCFS queue and is a scheduling node (Horus §5.1).
    Fcfs,
    /// A server's cores of the pool share one cFCFS queue; the server is the node (RackSched).
    ServerCfcfs,
    /// A server's cores share processor sharing with a time slice (RackSched).
    ServerPs,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    #[serde(default = "default_worker_model")]
    pub model: WorkerModel,
    /// Processor-sharing time slice (RackSched §2: 25 µs).
    #[serde(default = "default_slice")]
    pub ps_slice_us: f64,
    /// How long a leaf waits for heartbeats before declaring a server dead (Horus §A.3).
    #[serde(default = "default_heartbeat")]
    pub heartbeat_timeout_us: f64,
    /// RackSched §3.6 multi-queue: a server keeps one queue per request type
    /// (the service distribution's classes), a reply reports the queue length
    /// of the completed request's type, and RackSched's ToR keeps a counter
    /// per (server, type). Server models only (`server-cfcfs`, `server-ps`).
    #[serde(default)]
    pub multi_queue: bool,
}

fn default_worker_model() -> WorkerModel {
    WorkerModel::Fcfs
}
fn default_slice() -> f64 {
    25.0
}
fn default_heartbeat() -> f64 {
    1000.0
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            model: default_worker_model(),
            ps_slice_us: default_slice(),
            heartbeat_timeout_us: default_heartbeat(),
            multi_queue: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Samples per decision for RackSched and power-of-k baselines (the k of
    /// power-of-k; RackSched: 2).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// How RackSched's ToR learns server loads (RackSched §4.6, Fig. 16).
    #[serde(default)]
    pub load_tracking: LoadTrackingMode,
    /// INT2 only: one request in this many goes to a random server (the
    /// RackSched artifact's 1 in 4); 0 never explores.
    #[serde(default = "default_int2_random_one_in")]
    pub int2_random_one_in: u32,
    /// Flat policies: independent scheduler instances, each a client that
    /// sends an equal share of the tasks and learns only from the replies to
    /// its own (RackSched §4.5 "Client(100)").
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// `r2p2`: most tasks outstanding at a node (the bound of JBSQ, R2P2 §3.2).
    #[serde(default = "default_jbsq_bound")]
    pub jbsq_bound: u32,
    /// Horus mechanism choices; the defaults are the paper's (docs/fidelity.md).
    #[serde(default)]
    pub horus: HorusConfig,
}

/// `[schedulers.horus]`: Horus's configuration, the same for every driver
/// (`netsched_config::horus`).
pub use netsched_config::horus::{HorusChoices, HorusConfig, HorusPreset};

fn default_samples() -> u32 {
    2
}
fn default_int2_random_one_in() -> u32 {
    4
}
fn default_clients() -> u32 {
    1
}
fn default_jbsq_bound() -> u32 {
    netsched_core::baselines::Jbsq::DEFAULT_BOUND
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            samples: default_samples(),
            clients: default_clients(),
            jbsq_bound: default_jbsq_bound(),
            load_tracking: LoadTrackingMode::default(),
            int2_random_one_in: default_int2_random_one_in(),
            horus: HorusConfig::default(),
        }
    }
}

/// RackSched's server-load tracking mechanisms (§4.6, Fig. 16); see
/// [`netsched_core::racksched::LoadTracking`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadTrackingMode {
    /// Per-server queue lengths from replies, power-of-k (RackSched's design).
    #[default]
    Int1,
    /// Only the least loaded server seen in replies.
    Int2,
    /// Per-server outstanding work (summed service times) from replies.
    Int3,
    /// Switch-side counters: +1 per dispatch, -1 per reply.
    Proactive,
}

impl LoadTrackingMode {
    pub fn name(self) -> &'static str {
        match self {
            LoadTrackingMode::Int1 => "int1",
            LoadTrackingMode::Int2 => "int2",
            LoadTrackingMode::Int3 => "int3",
            LoadTrackingMode::Proactive => "proactive",
        }
    }

    /// The data-plane mode; INT3 differs from INT1 only in what servers report.
    pub fn data_plane(self, int2_random_one_in: u32) -> netsched_core::racksched::LoadTracking {
        use netsched_core::racksched::LoadTracking;
        match self {
            LoadTrackingMode::Int1 => LoadTracking::Int1,
            LoadTrackingMode::Int2 => LoadTracking::Int2 {
                random_one_in: int2_random_one_in,
            },
            LoadTrackingMode::Int3 => LoadTracking::Int3,
            LoadTrackingMode::Proactive => LoadTracking::Proactive,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    pub service: ServiceDist,
    /// Offered load as a fraction of λ = n / s̄ per pool (Horus §5.1).
    pub load: f64,
    /// Run length: each pool generates this many tasks per worker on average.
    #[serde(default)]
    pub tasks_per_worker: Option<f64>,
    /// Run length as simulated time instead.
    #[serde(default)]
    pub duration_us: Option<f64>,
    /// Piecewise load over time: `[[start_us, load], ...]`, replacing `load` from each start.
    #[serde(default)]
    pub schedule: Vec<[f64; 2]>,
    /// Tasks submitted before this fraction of the run are not measured.
    #[serde(default = "default_warmup")]
    pub warmup_fraction: f64,
}

fn default_warmup() -> f64 {
    0.1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Queue imbalance sampling interval (Horus §5.2: every 50 µs); 0 disables.
    #[serde(default = "default_imbalance")]
    pub imbalance_interval_us: f64,
    /// Tail-latency target for the throughput metric (Horus §4.1).
    #[serde(default = "default_target")]
    pub p99_target_us: f64,
}

fn default_imbalance() -> f64 {
    50.0
}
fn default_target() -> f64 {
    3000.0
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            imbalance_interval_us: default_imbalance(),
            p99_target_us: default_target(),
        }
    }
}

/// A failure or change injected at a given time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FailureEvent {
    /// Spine switch `id` (global index) fails.
    Spine { at_us: f64, id: u32 },
    /// Leaf switch `id` (global rack index) fails; its rack is cut off.
    Leaf { at_us: f64, id: u32 },
    /// Server `id` (global index) fails with all its workers.
    Server { at_us: f64, id: u32 },
    /// `count` idle workers join rack slice `rack` (index within the pool) of pool `pool`.
    AddWorkers {
        at_us: f64,
        pool: u32,
        rack: u32,
        count: u32,
    },
    /// `count` workers leave rack slice `rack` of pool `pool` (they finish their queues).
    RemoveWorkers {
        at_us: f64,
        pool: u32,
        rack: u32,
        count: u32,
    },
}

impl FailureEvent {
    pub fn at_ns(&self) -> u64 {
        let us = match *self {
            FailureEvent::Spine { at_us, .. }
            | FailureEvent::Leaf { at_us, .. }
            | FailureEvent::Server { at_us, .. }
            | FailureEvent::AddWorkers { at_us, .. }
            | FailureEvent::RemoveWorkers { at_us, .. } => at_us,
        };
        (us * 1e3).round() as u64
    }
}

/// Policies × loads run by one invocation.
pub type Sweep = netsched_config::Sweep<Policy>;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_policy")]
    pub policy: Policy,
    #[serde(default)]
    pub sweep: Option<Sweep>,
    pub topology: TopologyConfig,
    #[serde(default)]
    pub placement: PlacementConfig,
    pub workload: WorkloadConfig,
    #[serde(default)]
    pub network: NetworkConfig,
    #[serde(default)]
    pub workers: WorkerConfig,
    #[serde(default)]
    pub schedulers: SchedulerConfig,
    #[serde(default)]
    pub failures: Vec<FailureEvent>,
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Worker threads for pools (0 = all cores). Results do not depend on it.
    #[serde(default)]
    pub threads: usize,
    /// Simulate only these pools (ids as placed; every pool is still placed,
    /// so each keeps its racks and spines). Pools share no state and each has
    /// its own random streams, so a selected pool's results are exactly what
    /// the full run gives it: Horus Fig. 11 plots one pool, App. C's Fig. 17
    /// five. `None` simulates every pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_pools: Option<Vec<u32>>,
}

fn default_seed() -> u64 {
    1
}
fn default_policy() -> Policy {
    Policy::Horus
}

fn err(field: &str, msg: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        msg: msg.into(),
    }
}

/// `k` meant three things: each now has its own key.
const RENAMED_KEYS: [Renamed; 2] = [
    Renamed {
        table: "schedulers",
        key: "k",
        use_instead: "`samples` (samples per power-of-k decision) or `jbsq_bound` (JBSQ's bound)",
    },
    Renamed {
        table: "topology",
        key: "k",
        use_instead: "`radix` (the fat tree's switch radix)",
    },
];

impl SimConfig {
    /// Parse TOML and validate. Errors name the dotted field (`sweep.policies`)
    /// and the line, in one line.
    pub fn from_toml(text: &str) -> Result<SimConfig, ConfigError> {
        let cfg: SimConfig = netsched_config::parse::from_toml_renamed(text, &RENAMED_KEYS)?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        check_load("workload.load", self.workload.load)?;
        for (i, seg) in self.workload.schedule.iter().enumerate() {
            if seg[0] < 0.0 || !seg[0].is_finite() {
                return Err(err(
                    &format!("workload.schedule[{i}]"),
                    "start time must be >= 0",
                ));
            }
            check_load(&format!("workload.schedule[{i}]"), seg[1])?;
            if i > 0 && seg[0] <= self.workload.schedule[i - 1][0] {
                return Err(err(
                    &format!("workload.schedule[{i}]"),
                    "start times must increase",
                ));
            }
        }
        if let Some(sweep) = &self.sweep {
            for (i, &l) in sweep.loads.iter().enumerate() {
                check_load(&format!("sweep.loads[{i}]"), l)?;
            }
        }
        match (self.workload.tasks_per_worker, self.workload.duration_us) {
            (None, None) => {
                return Err(err(
                    "workload.tasks_per_worker",
                    "set tasks_per_worker or duration_us",
                ))
            }
            (Some(t), _) if !(t > 0.0 && t.is_finite()) => {
                return Err(err("workload.tasks_per_worker", "must be > 0"))
            }
            (_, Some(d)) if !(d > 0.0 && d.is_finite()) => {
                return Err(err("workload.duration_us", "must be > 0"))
            }
            _ => {}
        }
        if !(0.0..1.0).contains(&self.workload.warmup_fraction) {
            return Err(err("workload.warmup_fraction", "must be in [0, 1)"));
        }
        if !(0.0..=1.0).contains(&self.network.loss) {
            return Err(err("network.loss", "must be a probability in [0, 1]"));
        }
        match self.network.hop_delay {
            DelayDist::Constant { us } if !(us >= 0.0 && us.is_finite()) => {
                return Err(err("network.hop_delay.us", "must be >= 0"))
            }
            DelayDist::Exp { mean_us } | DelayDist::Pingmesh { mean_us }
                if !(mean_us >= 0.0 && mean_us.is_finite()) =>
            {
                return Err(err("network.hop_delay.mean_us", "must be >= 0"))
            }
            _ => {}
        }
        if !(self.network.failure_detection_us >= 0.0
            && self.network.failure_detection_us.is_finite())
        {
            return Err(err("network.failure_detection_us", "must be >= 0"));
        }
        // The registry's limits, the runtime's too (a data plane would
        // otherwise panic inside a simulation thread), under this file's
        // keys (`schedulers.samples`).
        ConfigError::limit(
            "schedulers.samples",
            netsched_core::limits::samples(self.schedulers.samples),
        )?;
        let params = netsched_core::PlaneParams {
            samples: self.schedulers.samples,
            jbsq_bound: self.schedulers.jbsq_bound,
            ..netsched_core::PlaneParams::default()
        };
        if let Err(e) = params.validate() {
            return Err(err(&format!("schedulers.{}", e.field), e.msg));
        }
        if self.schedulers.load_tracking != LoadTrackingMode::Int1 {
            if let Some((p, _)) = self
                .runs()
                .into_iter()
                .find(|(p, _)| !p.uses_racksched_tor())
            {
                return Err(err(
                    "schedulers.load_tracking",
                    format!(
                        "`{}` tracking applies to RackSched's ToR, which policy `{}` does not use \
                         (racksched, rs-lb, rs-h, pow2-delayed do)",
                        self.schedulers.load_tracking.name(),
                        p.name()
                    ),
                ));
            }
        }
        let policies: Vec<Policy> = self.runs().iter().map(|r| r.0).collect();
        self.schedulers
            .horus
            .check_policies(&policies)
            .map_err(|e| e.within("schedulers.horus"))?;
        if self.schedulers.clients == 0 {
            return Err(err("schedulers.clients", "must be >= 1"));
        }
        if self.schedulers.clients > 1 {
            if let Some(p) = self.runs().iter().map(|r| r.0).find(|p| !p.is_flat()) {
                return Err(err(
                    "schedulers.clients",
                    format!(
                        "client-side scheduling needs a flat policy, not `{}`",
                        p.name()
                    ),
                ));
            }
        }
        if self.workers.multi_queue && self.workers.model == WorkerModel::Fcfs {
            return Err(err(
                "workers.multi_queue",
                "needs a server model (server-cfcfs or server-ps): an fcfs node is one core \
                 with one queue",
            ));
        }
        if self.workers.ps_slice_us.is_nan() || self.workers.ps_slice_us <= 0.0 {
            return Err(err("workers.ps_slice_us", "must be > 0"));
        }
        if let Some(ids) = &self.only_pools {
            if ids.is_empty() {
                return Err(err(
                    "only_pools",
                    "lists no pool: leave it out to simulate every pool",
                ));
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(err("only_pools", format!("pool {} is listed twice", w[0])));
            }
        }
        if self.metrics.imbalance_interval_us < 0.0 {
            return Err(err("metrics.imbalance_interval_us", "must be >= 0"));
        }
        self.workload.service.validate()?;
        let topo = self.topology.build()?;
        self.placement.validate_on(&topo)?;
        Ok(())
    }

    /// The (policy, load) runs this config asks for.
    pub fn runs(&self) -> Vec<(Policy, f64)> {
        netsched_config::sweep::runs(self.sweep.as_ref(), self.policy, self.workload.load)
    }
}

fn check_load(field: &str, load: f64) -> Result<(), ConfigError> {
    if load > 0.0 && load <= 1.0 {
        Ok(())
    } else {
        Err(err(field, format!("load must be in (0, 1], got {load}")))
    }
}
