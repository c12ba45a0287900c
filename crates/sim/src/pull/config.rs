//! Configuration of the pull simulator, read from TOML (`experiments/draconis*.toml`).
//!
//! Every table rejects unknown keys and every value is checked by
//! [`PullConfig::validate`], which names the offending field in one line.

use serde::{Deserialize, Serialize};

use netsched_core::limits;

use crate::error::ConfigError;
use crate::workload::ServiceDist;

pub use netsched_config::pull::{DraconisSection, PullPolicy, R2p2Section, SparrowSection};

/// `[sweep]`: every (policy, load) combination.
pub type PullSweep = netsched_config::Sweep<PullPolicy>;

/// Worker nodes and executors (§8 "Testbed": 10 nodes × 16 executors).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    pub nodes: u32,
    pub executors_per_node: u32,
    /// Racks the nodes are split into (consecutive blocks of
    /// ceil(nodes / racks) nodes; §8.5 uses 3).
    pub racks: u32,
    /// §8.5 resource groups: nodes split into three consecutive thirds,
    /// G1 = {A}, G2 = {A, B}, G3 = {A, B, C}. Off: every executor has all.
    pub resource_groups: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            nodes: 10,
            executors_per_node: 16,
            racks: 1,
            resource_groups: false,
        }
    }
}

/// Link delays. Every host (client, executor, scheduler server) hangs off
/// the one switch (§8 testbed), so a host→switch message takes `link_ns` and
/// a host→server message `2 · link_ns` (through the switch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// One-way host↔switch delay (NIC, stack, wire), ns.
    pub link_ns: u64,
    /// Latency of one recirculation pass in the switch, ns.
    pub recirc_ns: u64,
    /// Passes (first passes and recirculations) the scheduling switch's
    /// pipeline starts per second; a pass waits for a free slot, FIFO.
    /// Unset: a pass takes no pipeline time (the switch never limits
    /// throughput). Draconis §8.2: the Tofino handles up to 4.7 G packets/s.
    /// Applies to every switch-resident scheduler (Draconis, R2P2, RackSched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_pps: Option<u64>,
    /// Line rate of the switch's recirculation port, Gb/s, shared by every
    /// recirculated pass (R2P2's probes, Draconis' continuations, repairs,
    /// priority and swap passes). Default 100: a Tofino pipe's recirculation
    /// port runs at a front-panel port's 100 Gb/s (docs/draconis.md
    /// "Recirculation port"). 0: unlimited (no port, no drops).
    pub recirc_gbps: f64,
    /// Packets the recirculation port holds, queued or on the wire; one more
    /// is dropped (counted as `overflow`).
    pub recirc_buffer: u32,
}

/// `network.recirc_gbps` by default: a Tofino recirculation port.
pub const TOFINO_RECIRC_GBPS: f64 = 100.0;

/// `network.recirc_buffer` by default (docs/draconis.md "Recirculation port").
pub const DEFAULT_RECIRC_BUFFER: u32 = 128;

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            link_ns: 2_000,
            recirc_ns: 500,
            switch_pps: None,
            recirc_gbps: TOFINO_RECIRC_GBPS,
            recirc_buffer: DEFAULT_RECIRC_BUFFER,
        }
    }
}

/// How jobs arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    /// Poisson job arrivals, `job_tasks` tasks each.
    Poisson,
    /// Google-trace-like batch submissions (docs/draconis.md "Bursty
    /// workload"): Poisson job arrivals; a fraction `burst_fraction` of jobs
    /// are batches of Geometric(mean `burst_mean_tasks`) tasks capped at
    /// `burst_max_tasks`, the rest single tasks.
    Bursty,
    /// A closed loop that offers more than any scheduler can take (Draconis
    /// §8.2, Fig. 5b): the clients submit `outstanding` tasks at time 0 (jobs
    /// of `job_tasks`) and another job each time `job_tasks` of theirs have
    /// resolved, so the scheduler's queue never runs dry. `load` is unused.
    ClosedLoop,
}

/// §8.5 locality setup: each task's data lives on one node; running it
/// elsewhere adds a storage access time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalityConfig {
    /// Added to a task run on its data node, µs.
    pub local_us: f64,
    /// Added on another node of the data node's rack (§8.5: 20 µs).
    pub rack_us: f64,
    /// Added on another rack (§8.5: 100 µs).
    pub remote_us: f64,
}

impl Default for LocalityConfig {
    fn default() -> Self {
        LocalityConfig {
            local_us: 0.0,
            rack_us: 20.0,
            remote_us: 100.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PullWorkload {
    /// Compute time of a task (the `netsched sim` service distributions).
    pub service: ServiceDist,
    /// Offered load ρ = λ · E[service] / executors.
    pub load: f64,
    /// Tasks submitted in the run.
    pub tasks: u64,
    /// The first tasks submitted are not measured (warm-up). Default: 10 %.
    pub warmup_tasks: Option<u64>,
    pub arrival: Arrival,
    /// Tasks per job for `arrival = "poisson"` and `"closed-loop"`.
    pub job_tasks: u32,
    /// `arrival = "closed-loop"`: tasks the clients keep submitted and not
    /// yet resolved (the window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outstanding: Option<u32>,
    pub burst_fraction: f64,
    pub burst_mean_tasks: f64,
    pub burst_max_tasks: u32,
    /// Weights of priority levels 1.. (1 = highest); empty = all level 1.
    /// §8.6 mix: [1.2, 1.7, 64.6, 32.2].
    pub priority_weights: Vec<f64>,
    /// Tasks of one job share one service time and one priority, drawn for
    /// its first task (`service`, `priority_weights`), instead of one draw
    /// per task. The Draconis authors' client replays the Google trace this
    /// way (§8.4, §8.6; UWASL/Draconis `Draconis_Client.cpp`: a job line
    /// carries one runTime for its numTasks tasks, and its `jobEntry` one
    /// priority; the public client, FCFS only, sets it to 0).
    pub job_attributes: bool,
    /// §8.5 locality setup (data on one uniformly chosen node per task).
    pub locality: Option<LocalityConfig>,
    /// §8.5 resource experiment: the run is cut into three equal phases by
    /// task index (equal in time, arrivals being stationary) in which tasks
    /// need resource A, then B, then C. Needs `cluster.resource_groups`.
    pub resource_phases: bool,
}

impl Default for PullWorkload {
    fn default() -> Self {
        PullWorkload {
            service: ServiceDist::Fixed { value_us: 500.0 },
            load: 0.5,
            tasks: 100_000,
            warmup_tasks: None,
            arrival: Arrival::Poisson,
            job_tasks: 1,
            outstanding: None,
            burst_fraction: 0.05,
            burst_mean_tasks: 100.0,
            burst_max_tasks: 1000,
            priority_weights: vec![],
            job_attributes: false,
            locality: None,
            resource_phases: false,
        }
    }
}

/// Client behaviour: timeouts and resubmission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// Clients submitting jobs round-robin (they also pick Sparrow schedulers).
    pub clients: u32,
    /// A task attempt without its acknowledgment (Draconis) or completion
    /// (R2P2, Sparrow) after this long is resubmitted, µs. 0 = 10 × mean
    /// service (§8.3: "typically 5–10× the task execution time").
    pub timeout_us: f64,
    /// Timeouts after which the client gives up on a task.
    pub max_attempts: u32,
    /// Delay before resubmitting tasks returned in an error packet, µs.
    pub error_backoff_us: f64,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            clients: 4,
            timeout_us: 0.0,
            max_attempts: 10,
            error_backoff_us: 10.0,
        }
    }
}

/// Draconis-Server's cost model (docs/draconis.md, "Calibration"): every
/// message is one receive, one scheduling step and one reply on a core that
/// runs it to completion, so what a message costs depends on its kind. The
/// per-kind costs default to `step_ns`, which the derivation from §8.2
/// supports for DPDK (receive and transmit dominate, the queue operation is
/// a few register accesses), so `step_ns` alone stays a complete model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// Cost of every inline step beyond a message's first (the next task of
    /// a multi-task job, a retrieve repair, a priority level walked), and
    /// the default of the per-kind costs below, ns. A one-task job costs a
    /// submission and an assignment: 450 ns each ≈ §8.2's 1.1 M tasks/s for
    /// Draconis-DPDK-Server.
    pub step_ns: u64,
    /// An idle executor's task_request on an empty queue: receive, the
    /// empty check, a no-op reply, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_ns: Option<u64>,
    /// A job_submission: receive, enqueue its first task, acknowledge, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submit_ns: Option<u64>,
    /// A task_request that gets a task: receive, dequeue, send it, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assign_ns: Option<u64>,
    /// Cores serving messages, each run to completion; a message takes the
    /// core that frees first (one shared queue, as the state machine is).
    pub cores: u32,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            step_ns: 450,
            poll_ns: None,
            submit_ns: None,
            assign_ns: None,
            cores: 1,
        }
    }
}

/// What kind of message a Draconis-Server core handled, by its input and
/// its reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerMessage {
    Poll,
    Submit,
    Assign,
    /// Anything else (a completion, an error packet's resubmission): one step.
    Other,
}

impl ServerSection {
    /// Service time of one message that ran `steps` inline steps.
    pub fn cost_ns(&self, kind: ServerMessage, steps: u64) -> u64 {
        let first = match kind {
            ServerMessage::Poll => self.poll_ns,
            ServerMessage::Submit => self.submit_ns,
            ServerMessage::Assign => self.assign_ns,
            ServerMessage::Other => None,
        }
        .unwrap_or(self.step_ns);
        first + steps.saturating_sub(1) * self.step_ns
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RackschedSection {
    /// Servers sampled per decision (power-of-k; RackSched's default 2).
    pub samples: u32,
    /// Intra-node scheduling overhead added to every task at its node, ns
    /// (§8.1: "a small additional overhead (3–4 µs)").
    pub node_overhead_ns: u64,
}

impl Default for RackschedSection {
    fn default() -> Self {
        RackschedSection {
            samples: 2,
            node_overhead_ns: 3_500,
        }
    }
}

/// The whole pull-simulator config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PullConfig {
    pub seed: u64,
    pub policy: PullPolicy,
    pub sweep: Option<PullSweep>,
    pub cluster: ClusterConfig,
    pub network: NetworkConfig,
    pub workload: PullWorkload,
    pub client: ClientConfig,
    pub draconis: DraconisSection,
    pub r2p2: R2p2Section,
    pub sparrow: SparrowSection,
    pub server: ServerSection,
    pub racksched: RackschedSection,
}

impl Default for PullConfig {
    fn default() -> Self {
        PullConfig {
            seed: 1,
            policy: PullPolicy::Draconis,
            sweep: None,
            cluster: ClusterConfig::default(),
            network: NetworkConfig::default(),
            workload: PullWorkload::default(),
            client: ClientConfig::default(),
            draconis: DraconisSection::default(),
            r2p2: R2p2Section::default(),
            sparrow: SparrowSection::default(),
            server: ServerSection::default(),
            racksched: RackschedSection::default(),
        }
    }
}

/// The synthetic suite of Draconis §8 "Workloads", by name.
pub const PAPER_WORKLOADS: [&str; 6] = [
    "fixed100", "fixed250", "fixed500", "bimodal", "trimodal", "exp250",
];

/// A §8 synthetic workload's service distribution: fixed 100/250/500 µs,
/// bimodal (50 % 100, 50 % 500 µs), trimodal (⅓ each of 100/250/500 µs),
/// exponential with mean 250 µs.
pub fn paper_service(name: &str) -> Result<ServiceDist, ConfigError> {
    let mix = |v: &[f64]| ServiceDist::Mix {
        values_us: v.to_vec(),
        weights: vec![1.0; v.len()],
    };
    Ok(match name {
        "fixed100" => ServiceDist::Fixed { value_us: 100.0 },
        "fixed250" => ServiceDist::Fixed { value_us: 250.0 },
        "fixed500" => ServiceDist::Fixed { value_us: 500.0 },
        "bimodal" => mix(&[100.0, 500.0]),
        "trimodal" => mix(&[100.0, 250.0, 500.0]),
        "exp250" => ServiceDist::Exp { mean_us: 250.0 },
        _ => {
            return Err(ConfigError::new(
                "workload",
                format!(
                    "unknown workload '{name}'; known: {}",
                    PAPER_WORKLOADS.join(", ")
                ),
            ))
        }
    })
}

fn non_negative(field: &str, v: f64) -> Result<(), ConfigError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be a finite number >= 0, got {v}"),
        ))
    }
}

fn check_load(field: &str, v: f64) -> Result<(), ConfigError> {
    // Above 1 the resource experiment's overloaded phase is the point;
    // allow a little overload, never an unbounded one.
    if v.is_finite() && v > 0.0 && v <= 2.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("load must be in (0, 2], got {v}"),
        ))
    }
}

impl PullConfig {
    pub fn from_toml(text: &str) -> Result<PullConfig, ConfigError> {
        let cfg: PullConfig =
            netsched_config::parse::from_toml_renamed(text, &netsched_config::pull::RENAMED_KEYS)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The (policy, load) runs this config asks for, in order.
    pub fn runs(&self) -> Vec<(PullPolicy, f64)> {
        netsched_config::sweep::runs(self.sweep.as_ref(), self.policy, self.workload.load)
    }

    pub fn executors(&self) -> u32 {
        self.cluster.nodes * self.cluster.executors_per_node
    }

    pub fn nodes_per_rack(&self) -> u32 {
        self.cluster.nodes.div_ceil(self.cluster.racks.max(1))
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = &self.cluster;
        if c.nodes == 0 || c.nodes > u16::MAX as u32 - 1 {
            return Err(ConfigError::new(
                "cluster.nodes",
                format!("must be in 1..={}, got {}", u16::MAX - 1, c.nodes),
            ));
        }
        if c.executors_per_node == 0 {
            return Err(ConfigError::new(
                "cluster.executors_per_node",
                "must be >= 1",
            ));
        }
        if c.racks == 0 || c.racks > c.nodes {
            return Err(ConfigError::new(
                "cluster.racks",
                format!("must be in 1..=nodes ({}), got {}", c.nodes, c.racks),
            ));
        }
        if c.resource_groups && c.nodes < 3 {
            return Err(ConfigError::new(
                "cluster.resource_groups",
                "needs at least 3 nodes (one per group)",
            ));
        }
        let w = &self.workload;
        w.service.validate_at("workload.service")?;
        check_load("workload.load", w.load)?;
        if w.tasks == 0 {
            return Err(ConfigError::new("workload.tasks", "must be >= 1"));
        }
        if let Some(wu) = w.warmup_tasks {
            if wu >= w.tasks {
                return Err(ConfigError::new(
                    "workload.warmup_tasks",
                    format!("must be < workload.tasks ({}), got {wu}", w.tasks),
                ));
            }
        }
        if w.job_tasks == 0 {
            return Err(ConfigError::new("workload.job_tasks", "must be >= 1"));
        }
        match (w.arrival, w.outstanding) {
            (Arrival::ClosedLoop, None | Some(0)) => {
                return Err(ConfigError::new(
                    "workload.outstanding",
                    "must be >= 1 for arrival = \"closed-loop\"",
                ))
            }
            (Arrival::ClosedLoop, Some(_)) if self.client.timeout_us == 0.0 => {
                // The default (10 × mean service) ignores the queueing
                // behind a window of outstanding tasks.
                return Err(ConfigError::new(
                    "client.timeout_us",
                    "must be set (> 0) for arrival = \"closed-loop\"",
                ));
            }
            (Arrival::ClosedLoop, Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                return Err(ConfigError::new(
                    "workload.outstanding",
                    "only applies to arrival = \"closed-loop\"",
                ))
            }
        }
        if !(w.burst_fraction.is_finite() && (0.0..=1.0).contains(&w.burst_fraction)) {
            return Err(ConfigError::new(
                "workload.burst_fraction",
                format!("must be in [0, 1], got {}", w.burst_fraction),
            ));
        }
        if !(w.burst_mean_tasks.is_finite() && w.burst_mean_tasks >= 1.0) {
            return Err(ConfigError::new(
                "workload.burst_mean_tasks",
                format!("must be >= 1, got {}", w.burst_mean_tasks),
            ));
        }
        if w.burst_max_tasks == 0 {
            return Err(ConfigError::new("workload.burst_max_tasks", "must be >= 1"));
        }
        if w.priority_weights.len() > 255 {
            return Err(ConfigError::new(
                "workload.priority_weights",
                "at most 255 levels",
            ));
        }
        for (i, &p) in w.priority_weights.iter().enumerate() {
            non_negative(&format!("workload.priority_weights[{i}]"), p)?;
        }
        if !w.priority_weights.is_empty() && w.priority_weights.iter().sum::<f64>() <= 0.0 {
            return Err(ConfigError::new(
                "workload.priority_weights",
                "must sum to more than 0",
            ));
        }
        if let Some(l) = &w.locality {
            non_negative("workload.locality.local_us", l.local_us)?;
            non_negative("workload.locality.rack_us", l.rack_us)?;
            non_negative("workload.locality.remote_us", l.remote_us)?;
        }
        if w.resource_phases && !c.resource_groups {
            return Err(ConfigError::new(
                "workload.resource_phases",
                "needs cluster.resource_groups = true (otherwise every executor has every resource)",
            ));
        }
        let cl = &self.client;
        if cl.clients == 0 {
            return Err(ConfigError::new("client.clients", "must be >= 1"));
        }
        non_negative("client.timeout_us", cl.timeout_us)?;
        non_negative("client.error_backoff_us", cl.error_backoff_us)?;
        if self.network.switch_pps == Some(0) {
            return Err(ConfigError::new("network.switch_pps", "must be >= 1"));
        }
        non_negative("network.recirc_gbps", self.network.recirc_gbps)?;
        if self.network.recirc_buffer == 0 {
            return Err(ConfigError::new("network.recirc_buffer", "must be >= 1"));
        }
        if cl.max_attempts == 0 {
            return Err(ConfigError::new("client.max_attempts", "must be >= 1"));
        }
        if self.server.cores == 0 {
            return Err(ConfigError::new("server.cores", "must be >= 1"));
        }
        self.draconis.validate().map_err(|e| e.within("draconis"))?;
        ConfigError::limit("racksched.samples", limits::samples(self.racksched.samples))?;
        self.r2p2.validate().map_err(|e| e.within("r2p2"))?;
        self.sparrow.validate().map_err(|e| e.within("sparrow"))?;
        // Sparrow schedulers number their jobs in one 32-bit space.
        let s = &self.sparrow;
        if s.schedulers == 0 || s.schedulers > 64 {
            return Err(ConfigError::new(
                "sparrow.schedulers",
                format!("must be in 1..=64, got {}", s.schedulers),
            ));
        }
        if (s.max_jobs as u64) * (s.schedulers as u64) > u32::MAX as u64 {
            return Err(ConfigError::new(
                "sparrow.max_jobs",
                "max_jobs × schedulers must fit in 32 bits",
            ));
        }
        if let Some(sw) = &self.sweep {
            for (i, &l) in sw.loads.iter().enumerate() {
                check_load(&format!("sweep.loads[{i}]"), l)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind costs its own first step; every further inline step (the
    /// next task of a job, a repair) costs `step_ns`; an unset kind costs
    /// `step_ns`.
    #[test]
    fn a_server_message_costs_its_kind_plus_its_further_steps() {
        let server = ServerSection {
            step_ns: 100,
            poll_ns: Some(7),
            submit_ns: Some(300),
            assign_ns: None,
            cores: 1,
        };
        assert_eq!(server.cost_ns(ServerMessage::Poll, 1), 7);
        assert_eq!(server.cost_ns(ServerMessage::Submit, 3), 300 + 2 * 100);
        assert_eq!(server.cost_ns(ServerMessage::Assign, 2), 100 + 100);
        assert_eq!(server.cost_ns(ServerMessage::Other, 1), 100);
    }
}
