//! What a pull-simulator run measures (definitions: docs/draconis.md
//! "Simulator metrics").
//!
//! *Scheduling latency* of a task: from its first submission by the client
//! to the first time any copy of it starts executing on an executor. It
//! covers the client→scheduler link, the scheduler (queueing, recirculation,
//! a server's service time, Sparrow's probes and late binding), the pull
//! round trip, the scheduler→executor link and any wait in an executor's
//! local queue (R2P2), plus timeouts and resubmissions when a copy was
//! dropped. Warm-up tasks are not measured.

use std::collections::BTreeMap;

use netsched_core::dataplane::DropReason;
use serde::Serialize;

use super::config::PullPolicy;
use crate::metrics::{LatencyHist, LatencyStats};

const NONE: u64 = u64::MAX;

/// Raw counters and histograms of one run.
#[derive(Clone, Debug)]
pub struct PullMetrics {
    pub executors: u32,
    pub offered_tps: f64,
    /// Measured (post-warm-up) tasks submitted / completed / given up.
    pub submitted: u64,
    pub completed: u64,
    pub gave_up: u64,
    /// All tasks (warm-up included) from here on.
    pub timeouts: u64,
    pub resubmissions: u64,
    /// Tasks returned in Draconis error packets (queue full).
    pub error_tasks: u64,
    /// Executions of a task after its first (resubmitted copies that were
    /// not lost after all).
    pub duplicate_executions: u64,
    /// Task starts at executors (task_assignment / dispatch decisions).
    pub decisions: u64,
    pub noops: u64,
    pub resource_violations: u64,
    /// Locality policy: assignments that broke the §5.3 start limits, and
    /// the largest skip counter seen at assignment.
    pub locality_violations: u64,
    pub max_skips: u16,
    pub drops: [u64; DropReason::ALL.len()],
    pub sched: LatencyHist,
    pub response: LatencyHist,
    /// From the task's arrival at the switch (first submission + one client
    /// link) to the first completion of a copy at an executor; no reply path.
    /// The push simulator's response time (Horus §4.1: submission at the
    /// scheduling switch to completion at the worker), so the two simulators
    /// can be compared on one definition.
    pub completion: LatencyHist,
    /// Scheduling latency per priority level (index 0 = level 1).
    pub sched_by_level: Vec<LatencyHist>,
    /// Draconis policies: the get_task() step (an executor's task_request
    /// to the arrival of the task it got), by the task's priority level
    /// (Draconis §8.7, Fig. 13). Requests answered with a no-op are not
    /// counted; the retry that gets a task starts a new step.
    pub get_task_by_level: Vec<LatencyHist>,
    /// First starts on the data node, its rack, another rack (locality).
    pub placement: [u64; 3],
    /// Resource experiment: first starts per (node group, phase).
    pub group_phase: [[u64; 3]; 3],
    pub resource_phases: bool,
    /// Nodes in each resource group.
    pub group_nodes: [u32; 3],
    pub phase_start_ns: [u64; 3],
    pub first_arrival_ns: u64,
    pub last_arrival_ns: u64,
    /// The steady-state window: from the warm-up-th decision (its time and
    /// the decision count then) to the last task's first submission (the
    /// decision count then).
    pub window_start_ns: u64,
    pub window_start_decisions: u64,
    pub window_end_decisions: u64,
    pub end_ns: u64,
    pub busy_ns: u64,
    pub first_passes: u64,
    pub recirculations: u64,
}

impl PullMetrics {
    pub fn new(executors: u32, levels: usize, resource_phases: bool, offered_tps: f64) -> Self {
        PullMetrics {
            executors,
            offered_tps,
            submitted: 0,
            completed: 0,
            gave_up: 0,
            timeouts: 0,
            resubmissions: 0,
            error_tasks: 0,
            duplicate_executions: 0,
            decisions: 0,
            noops: 0,
            resource_violations: 0,
            locality_violations: 0,
            max_skips: 0,
            drops: [0; DropReason::ALL.len()],
            sched: LatencyHist::new(),
            response: LatencyHist::new(),
            completion: LatencyHist::new(),
            sched_by_level: (0..levels.max(1)).map(|_| LatencyHist::new()).collect(),
            get_task_by_level: (0..levels.max(1)).map(|_| LatencyHist::new()).collect(),
            placement: [0; 3],
            group_phase: [[0; 3]; 3],
            resource_phases,
            group_nodes: [0; 3],
            phase_start_ns: [NONE; 3],
            first_arrival_ns: NONE,
            last_arrival_ns: 0,
            window_start_ns: NONE,
            window_start_decisions: 0,
            window_end_decisions: 0,
            end_ns: 0,
            busy_ns: 0,
            first_passes: 0,
            recirculations: 0,
        }
    }

    pub fn drop(&mut self, reason: DropReason) {
        let i = DropReason::ALL
            .iter()
            .position(|&r| r == reason)
            .expect("DropReason::ALL lists every reason");
        self.drops[i] += 1;
    }

    pub fn dropped(&self) -> u64 {
        self.drops.iter().sum()
    }

    pub fn note_arrival(&mut self, phase: u8, now: u64) {
        if self.first_arrival_ns == NONE {
            self.first_arrival_ns = now;
        }
        let p = &mut self.phase_start_ns[phase as usize];
        if *p == NONE {
            *p = now;
        }
    }

    pub fn record_start(&mut self, delay_ns: u64, priority: u8, place: Option<usize>) {
        self.sched.record(delay_ns);
        let level = (priority.max(1) as usize - 1).min(self.sched_by_level.len() - 1);
        self.sched_by_level[level].record(delay_ns);
        if let Some(p) = place {
            self.placement[p] += 1;
        }
    }

    pub fn record_get_task(&mut self, delay_ns: u64, priority: u8) {
        let level = (priority.max(1) as usize - 1).min(self.get_task_by_level.len() - 1);
        self.get_task_by_level[level].record(delay_ns);
    }

    /// Decisions per second in the steady-state window (see the fields);
    /// 0 when the window is empty (the last submission came before the
    /// warm-up-th decision). Unlike `decisions / span`, it leaves out the
    /// ramp-up (executors' first polls) and the drain after the last
    /// submission, so with a full queue it is the scheduler's throughput
    /// (Draconis Fig. 5b).
    pub fn steady_decisions_per_s(&self) -> f64 {
        if self.window_start_ns == NONE || self.last_arrival_ns <= self.window_start_ns {
            return 0.0;
        }
        let n = self
            .window_end_decisions
            .saturating_sub(self.window_start_decisions);
        n as f64 / ((self.last_arrival_ns - self.window_start_ns) as f64 / 1e9)
    }

    /// Simulated time from the first arrival to the last task resolved.
    pub fn span_ns(&self) -> u64 {
        self.end_ns
            .saturating_sub(self.first_arrival_ns.min(self.end_ns))
            .max(1)
    }
}

/// Throughput of one node group in each phase (§8.5 Fig. 11).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceSummary {
    /// Tasks started per node per second, `[group][phase]`.
    pub tasks_per_node_per_s: [[f64; 3]; 3],
    /// Time from the last submission until the last task completed, µs.
    pub drain_us: f64,
}

/// Everything reported for one run (JSON, CSV, table).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PullSummary {
    pub policy: &'static str,
    pub load: f64,
    pub offered_tps: f64,
    pub submitted: u64,
    pub completed: u64,
    pub gave_up: u64,
    pub timeouts: u64,
    pub resubmissions: u64,
    pub error_tasks: u64,
    pub duplicate_executions: u64,
    pub dropped: u64,
    pub drops: BTreeMap<String, u64>,
    /// Scheduling latency (see module doc).
    pub sched: LatencyStats,
    /// Submission to completion reply at the client.
    pub response: LatencyStats,
    /// Its 66th percentile: Draconis §8.5 (Fig. 10) compares Locality with
    /// FCFS there ("2× better at the 66th percentile").
    pub response_p66_ns: u64,
    /// Arrival at the switch to completion at the executor (see
    /// [`PullMetrics::completion`]).
    pub completion: LatencyStats,
    pub sched_by_level: Vec<LatencyStats>,
    /// The get_task() step per priority level (Draconis policies only).
    pub get_task_by_level: Vec<LatencyStats>,
    pub decisions: u64,
    pub decisions_per_s: f64,
    /// [`PullMetrics::steady_decisions_per_s`].
    pub steady_decisions_per_s: f64,
    pub noops: u64,
    /// Scheduler passes: first passes and recirculations (Draconis, R2P2;
    /// for Draconis-Server, inline steps beyond the first of a message).
    pub first_passes: u64,
    pub recirculations: u64,
    pub recirc_fraction: f64,
    pub utilization: f64,
    /// Fractions of measured tasks run on their data node, rack, elsewhere.
    pub placement: Option<[f64; 3]>,
    pub resource: Option<ResourceSummary>,
    pub resource_violations: u64,
    pub locality_violations: u64,
    pub max_skips: u16,
    pub sim_s: f64,
    pub events: u64,
    pub wall_s: f64,
}

/// One (policy, load) run's result.
#[derive(Clone, Debug)]
pub struct PullRun {
    pub policy: PullPolicy,
    pub load: f64,
    pub metrics: PullMetrics,
    pub events: u64,
    pub wall_s: f64,
}

impl PullSummary {
    pub fn of(run: &PullRun, locality: bool) -> PullSummary {
        let m = &run.metrics;
        let span = m.span_ns() as f64;
        let passes = m.first_passes + m.recirculations;
        let mut drops = BTreeMap::new();
        for (i, &n) in m.drops.iter().enumerate() {
            if n > 0 {
                drops.insert(DropReason::ALL[i].name().to_string(), n);
            }
        }
        let placed: u64 = m.placement.iter().sum();
        let placement = (locality && placed > 0).then(|| {
            [
                m.placement[0] as f64 / placed as f64,
                m.placement[1] as f64 / placed as f64,
                m.placement[2] as f64 / placed as f64,
            ]
        });
        let resource = m.resource_phases.then(|| {
            let mut out = [[0.0; 3]; 3];
            for (p, &start) in m.phase_start_ns.iter().enumerate() {
                let end = if p < 2 && m.phase_start_ns[p + 1] != NONE {
                    m.phase_start_ns[p + 1]
                } else {
                    m.end_ns
                };
                let dur_s = end.saturating_sub(start).max(1) as f64 / 1e9;
                for (g, row) in out.iter_mut().enumerate() {
                    row[p] = m.group_phase[g][p] as f64 / m.group_nodes[g].max(1) as f64 / dur_s;
                }
            }
            ResourceSummary {
                tasks_per_node_per_s: out,
                drain_us: m.end_ns.saturating_sub(m.last_arrival_ns) as f64 / 1e3,
            }
        });
        PullSummary {
            policy: run.policy.name(),
            load: run.load,
            offered_tps: m.offered_tps,
            submitted: m.submitted,
            completed: m.completed,
            gave_up: m.gave_up,
            timeouts: m.timeouts,
            resubmissions: m.resubmissions,
            error_tasks: m.error_tasks,
            duplicate_executions: m.duplicate_executions,
            dropped: m.dropped(),
            drops,
            sched: LatencyStats::of(&m.sched),
            response: LatencyStats::of(&m.response),
            response_p66_ns: m.response.quantile(0.66),
            completion: LatencyStats::of(&m.completion),
            sched_by_level: m.sched_by_level.iter().map(LatencyStats::of).collect(),
            get_task_by_level: m.get_task_by_level.iter().map(LatencyStats::of).collect(),
            decisions: m.decisions,
            decisions_per_s: m.decisions as f64 / (span / 1e9),
            steady_decisions_per_s: m.steady_decisions_per_s(),
            noops: m.noops,
            first_passes: m.first_passes,
            recirculations: m.recirculations,
            recirc_fraction: if passes == 0 {
                0.0
            } else {
                m.recirculations as f64 / passes as f64
            },
            utilization: m.busy_ns as f64 / (m.executors as f64 * span),
            placement,
            resource,
            resource_violations: m.resource_violations,
            locality_violations: m.locality_violations,
            max_skips: m.max_skips,
            sim_s: span / 1e9,
            events: run.events,
            wall_s: run.wall_s,
        }
    }
}
