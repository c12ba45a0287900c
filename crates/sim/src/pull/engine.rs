//! The pull simulator's event loop: clients, executors and one scheduler
//! (a Draconis switch, a Draconis server, an R2P2 switch or Sparrow
//! schedulers), all driven through the sans-IO contract of
//! `netsched_core::pull` ([`PullPlane`]; `racksched` through the push
//! registry's [`Plane`]). The driver owns time, links and hosts; every
//! scheduling decision is the data plane's.
//!
//! Time is integer ns; the event queue is the push simulator's
//! ([`crate::queue::EventQueue`], FIFO among equal times), so a run is a
//! function of its config and seed.

use std::collections::VecDeque;
use std::time::Instant;

use netsched_config::pull::pull_params;
use netsched_core::client::{Expiry, ReplyOutcome, RetryPolicy, TaskState, TaskTracker};
use netsched_core::dataplane::{Action, DataPlane, Input, Outbox, TaskMeta};
use netsched_core::pull::sparrow::SparrowWorker;
use netsched_core::pull::PullParams;
use netsched_core::pull::{
    ExecInfo, Executor, JobSubmission, PullAction, PullDataPlane, PullInput, PullOutbox, PullPlane,
    PullPlaneKind, TaskInfo, TaskList, MAX_TASKS_PER_PACKET,
};
use netsched_core::registry::{Layer, Plane, PlaneParams, Policy};
use netsched_core::rng::Rng;
use netsched_core::Nanos;

mod clients;
mod executors;
mod pipeline;
mod schedulers;
mod slab;

use pipeline::{RecirculationPort, SwitchPipeline};
use slab::Slab;

use super::config::{Arrival, PullConfig, PullPolicy};
use super::metrics::{PullMetrics, PullRun};
use crate::error::ConfigError;
use crate::queue::EventQueue;
use crate::workload::ServiceSampler;

/// Seeded streams, one per purpose, so that the task sequence (arrival
/// times, sizes, service times, priorities, data nodes) is identical for
/// every policy at a given seed and load. Public so that a test can replay a
/// run's draws (`Rng::derive(seed, stream::ARRIVAL)`).
pub mod stream {
    pub const ARRIVAL: u64 = 1;
    pub const JOB_SIZE: u64 = 2;
    pub const SERVICE: u64 = 3;
    pub const PRIORITY: u64 = 4;
    pub const DATA_NODE: u64 = 5;
    pub const EXEC_JITTER: u64 = 6;
    pub const RACKSCHED: u64 = 7;
    pub const SPARROW: u64 = 100;
}

const NONE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Task {
    /// First submission by the client.
    submit: u64,
    /// Compute time, ns (locality access time is added where it runs).
    service: u64,
    /// First start of any copy (NONE until then).
    first_start: u64,
    /// A copy has completed at an executor (the `completion` metric counts
    /// the first one only).
    done_at_executor: bool,
    priority: u8,
    data_node: u16,
    props: u64,
    phase: u8,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The next job leaves its client.
    Arrival,
    /// A packet reaches pull scheduler `.0` (index into `planes`; index
    /// into `pkts`).
    Pull(u32, u32),
    /// A packet reaches the RackSched switch.
    Rack(Input),
    /// RackSched: a dispatched task reaches node `.0` (TaskMeta id encodes
    /// task and attempt, see `rack_id`).
    NodeTask(u32, u64),
    /// A task_assignment / dispatch reaches an executor.
    ExecTask(u32, TaskInfo),
    ExecNoOp(u32),
    ExecDone(u32),
    /// A Sparrow probe (slot encoded with its scheduler) reaches a worker.
    Probe(u32, u32),
    SparrowNoOp(u32),
    /// Client side.
    Ack(u64),
    /// Index into `epkts`.
    ErrorPacket(u32),
    Done(u64),
    /// Send `.1` (from 1) of task `.0` reached its timeout.
    Timeout(u64, u32),
    Resubmit(u64),
}

struct Exec {
    info: ExecInfo,
    ex: Executor,
    running: Option<TaskInfo>,
    /// R2P2: tasks queued at the executor (JBSQ, at most k − 1 waiting).
    local: VecDeque<TaskInfo>,
    busy_since: u64,
    /// When this executor last sent a task_request (Draconis policies):
    /// the start of the get_task() step of Draconis Fig. 2 / Fig. 13.
    request_sent: u64,
    group: u8,
    sparrow: Option<SparrowWorker>,
}

struct Sim<'a> {
    cfg: &'a PullConfig,
    policy: PullPolicy,
    q: EventQueue<Ev>,
    tasks: Vec<Task>,
    /// Draconis job id → the tasks of that job_submission packet.
    packets: Vec<TaskList>,
    sparrow_jobs: u64,
    execs: Vec<Exec>,
    /// The pull scheduler, or Sparrow's scheduler hosts (empty for racksched).
    planes: Vec<PullPlane>,
    /// Software schedulers (Draconis-Server, Sparrow): per plane, per core,
    /// when it finishes the messages it has taken.
    free_at: Vec<Vec<u64>>,
    /// `racksched`: the push family's RackSched ToR data plane.
    rack: Option<Box<Plane>>,
    /// `network.switch_pps` of a switch-resident scheduler.
    pipeline: Option<SwitchPipeline>,
    /// The switch's recirculation port (`network.recirc_gbps`); `None`
    /// when unlimited or the scheduler is not in the switch.
    recirc_port: Option<RecirculationPort>,
    pkts: Slab<PullInput>,
    epkts: Slab<TaskList>,
    out: PullOutbox,
    kout: Outbox,
    /// RackSched: per node, the cFCFS queue and the idle executors.
    node_queue: Vec<VecDeque<TaskInfo>>,
    node_idle: Vec<Vec<u32>>,
    /// RackSched: tasks queued or running at each node (the LOAD a reply carries).
    node_load: Vec<u32>,
    m: PullMetrics,
    sampler: ServiceSampler,
    rng_arrival: Rng,
    rng_size: Rng,
    rng_service: Rng,
    rng_prio: Rng,
    rng_data: Rng,
    prio_cum: Vec<f64>,
    /// Jobs per ns.
    job_rate: f64,
    jobs: u64,
    /// Closed loop: tasks resolved since the last job was submitted.
    closed_loop_resolved: u32,
    warmup: u64,
    resolved: u64,
    link: u64,
    /// Host → scheduler delay: a switch is one link away, a server two.
    sched_link: u64,
    recirc: u64,
    /// Every task's sends, timeouts and returns: the client state machine
    /// the runtime's pull client drives too; this event queue keeps its
    /// timers, so events fire in the order they always did.
    tracker: TaskTracker,
    nodes_per_rack: u32,
}

/// The send of a task a copy belongs to: TASK_INFO's FN_PAR carries the
/// copy's attempt (from 0), so stale copies, acknowledgments and returns
/// are recognised.
fn send_of(task: &TaskInfo) -> u32 {
    task.fn_par as u32 + 1
}

/// RackSched's TaskMeta carries only an id: the copy's attempt rides in its
/// top 24 bits.
fn rack_id(id: u64, attempt: u32) -> u64 {
    id | ((attempt as u64 & 0xFF_FFFF) << 40)
}

fn rack_split(rid: u64) -> (u64, u32) {
    (rid & ((1 << 40) - 1), (rid >> 40) as u32)
}

/// Mean of min(G, max) for G geometric on {1, 2, ...} with mean `mean`.
fn capped_geometric_mean(mean: f64, max: u32) -> f64 {
    if mean <= 1.0 {
        return 1.0;
    }
    let p = 1.0 / mean;
    (1.0 - (1.0 - p).powi(max as i32)) / p
}

/// Mean tasks per job of the configured arrival process.
pub fn mean_job_tasks(cfg: &PullConfig) -> f64 {
    let w = &cfg.workload;
    match w.arrival {
        Arrival::Poisson | Arrival::ClosedLoop => w.job_tasks as f64,
        Arrival::Bursty => {
            (1.0 - w.burst_fraction)
                + w.burst_fraction * capped_geometric_mean(w.burst_mean_tasks, w.burst_max_tasks)
        }
    }
}

/// Runs one (policy, load) of `cfg`.
/// The data plane's parameters for `policy`, validated (`netsched check`
/// and every run go through here).
pub(crate) fn checked_params(
    cfg: &PullConfig,
    policy: PullPolicy,
    levels: u8,
    nodes_per_rack: u32,
) -> Result<PullParams, ConfigError> {
    pull_params(
        policy,
        levels,
        nodes_per_rack,
        &cfg.draconis,
        &cfg.r2p2,
        &cfg.sparrow,
    )
}

pub fn run_one(
    cfg: &PullConfig,
    sampler: &ServiceSampler,
    policy: PullPolicy,
    load: f64,
) -> Result<PullRun, ConfigError> {
    let wall = Instant::now();
    let mut sim = Sim::new(cfg, sampler.clone(), policy, load)?;
    sim.run();
    let events = sim.q.processed;
    let metrics = sim.m;
    Ok(PullRun {
        policy,
        load,
        metrics,
        events,
        wall_s: wall.elapsed().as_secs_f64(),
    })
}

impl<'a> Sim<'a> {
    fn new(
        cfg: &'a PullConfig,
        sampler: ServiceSampler,
        policy: PullPolicy,
        load: f64,
    ) -> Result<Self, ConfigError> {
        let n_exec = cfg.executors();
        let seed = cfg.seed;
        let groups = cfg.cluster.resource_groups;
        let nodes = cfg.cluster.nodes;
        let retry = (cfg.draconis.retry_us * 1e3).round().max(1.0) as u64;
        let mut execs = Vec::with_capacity(n_exec as usize);
        for id in 0..n_exec {
            let node = id / cfg.cluster.executors_per_node;
            // §8.5: G1 = {A}, G2 = {A, B}, G3 = {A, B, C}, consecutive thirds.
            let group = if groups {
                (node as u64 * 3 / nodes as u64) as u8
            } else {
                0
            };
            let resources = if groups {
                (1u64 << (group + 1)) - 1
            } else {
                u64::MAX
            };
            let info = ExecInfo {
                id,
                node,
                resources,
            };
            execs.push(Exec {
                info,
                ex: Executor::new(info, Nanos::new(retry)),
                running: None,
                local: VecDeque::with_capacity(cfg.r2p2.jbsq_bound as usize),
                busy_since: 0,
                request_sent: 0,
                group,
                sparrow: (policy == PullPolicy::Sparrow).then(|| SparrowWorker::new(id, 64)),
            });
        }
        let levels = cfg.workload.priority_weights.len().clamp(1, 255) as u8;
        let nodes_per_rack = cfg.nodes_per_rack();
        let params = checked_params(cfg, policy, levels, nodes_per_rack)?;
        let planes: Vec<PullPlane> = match policy.plane() {
            // Sparrow runs `schedulers` hosts, each with its own sampling stream.
            Some(kind @ PullPlaneKind::Sparrow) => (0..cfg.sparrow.schedulers)
                .map(|i| {
                    let seed = Rng::derive(seed, stream::SPARROW + i as u64).next_u64();
                    PullPlane::build(kind, n_exec, seed, &params)
                })
                .collect(),
            Some(kind) => vec![PullPlane::build(kind, n_exec, seed, &params)],
            None => Vec::new(),
        };
        // RackSched as Draconis §8 runs it: power-of-k over nodes, each a
        // cFCFS queue (the push registry's `racksched` leaf data plane).
        let rack = (policy == PullPolicy::RackschedNodes).then(|| {
            let rack_params = PlaneParams {
                samples: cfg.racksched.samples,
                ..PlaneParams::default()
            };
            Box::new(Plane::build(
                Policy::Racksched,
                Layer::Leaf,
                &vec![cfg.cluster.executors_per_node; nodes as usize],
                Rng::derive(seed, stream::RACKSCHED).next_u64(),
                &rack_params,
            ))
        });
        let out = PullOutbox::with_capacity(
            planes
                .iter()
                .map(|p| p.outbox_capacity())
                .max()
                .unwrap_or(0),
        );
        let mean = sampler.mean_ns();
        let task_rate = load * n_exec as f64 / mean;
        let job_rate = task_rate / mean_job_tasks(cfg);
        let link = cfg.network.link_ns;
        let sched_link = match policy {
            PullPolicy::DraconisServer | PullPolicy::Sparrow => 2 * link,
            _ => link,
        };
        let timeout = if cfg.client.timeout_us > 0.0 {
            (cfg.client.timeout_us * 1e3).round() as u64
        } else {
            (10.0 * mean).round() as u64
        }
        .max(1);
        let mut prio_cum = Vec::new();
        let total: f64 = cfg.workload.priority_weights.iter().sum();
        let mut acc = 0.0;
        for w in &cfg.workload.priority_weights {
            acc += w / total;
            prio_cum.push(acc);
        }
        if let Some(l) = prio_cum.last_mut() {
            *l = 1.0;
        }
        let tasks_n = cfg.workload.tasks;
        let warmup = cfg.workload.warmup_tasks.unwrap_or(tasks_n / 10);
        let closed_loop = cfg.workload.arrival == Arrival::ClosedLoop;
        let mut m = PullMetrics::new(
            n_exec,
            levels as usize,
            cfg.workload.resource_phases,
            // A closed loop offers whatever the scheduler takes: no rate.
            if closed_loop { 0.0 } else { task_rate * 1e9 },
        );
        let on_switch = rack.is_some()
            || matches!(
                policy.plane(),
                Some(PullPlaneKind::Switch | PullPlaneKind::Jbsq)
            );
        let pipeline = cfg
            .network
            .switch_pps
            .filter(|_| on_switch)
            .map(SwitchPipeline::new);
        let recirc_port = (on_switch && cfg.network.recirc_gbps > 0.0)
            .then(|| RecirculationPort::new(cfg.network.recirc_gbps, cfg.network.recirc_buffer));
        for node in 0..nodes {
            let g = (node as u64 * 3 / nodes as u64) as usize;
            m.group_nodes[g] += 1;
        }
        Ok(Sim {
            cfg,
            policy,
            q: EventQueue::new(),
            tasks: Vec::with_capacity(tasks_n as usize),
            packets: Vec::new(),
            sparrow_jobs: 0,
            execs,
            free_at: planes
                .iter()
                .map(|p| match p.kind() {
                    PullPlaneKind::Server => vec![0; cfg.server.cores as usize],
                    _ => vec![0],
                })
                .collect(),
            planes,
            rack,
            pipeline,
            recirc_port,
            pkts: Slab::new(),
            epkts: Slab::new(),
            out,
            kout: Outbox::new(),
            node_queue: vec![VecDeque::new(); nodes as usize],
            node_idle: (0..nodes)
                .map(|n| {
                    let per = cfg.cluster.executors_per_node;
                    (n * per..(n + 1) * per).rev().collect()
                })
                .collect(),
            node_load: vec![0; nodes as usize],
            m,
            sampler,
            rng_arrival: Rng::derive(seed, stream::ARRIVAL),
            rng_size: Rng::derive(seed, stream::JOB_SIZE),
            rng_service: Rng::derive(seed, stream::SERVICE),
            rng_prio: Rng::derive(seed, stream::PRIORITY),
            rng_data: Rng::derive(seed, stream::DATA_NODE),
            prio_cum,
            job_rate,
            jobs: 0,
            closed_loop_resolved: 0,
            warmup,
            resolved: 0,
            link,
            sched_link,
            recirc: cfg.network.recirc_ns,
            tracker: TaskTracker::with_driver_timers(
                RetryPolicy {
                    timeout: Nanos::new(timeout),
                    max_attempts: cfg.client.max_attempts,
                    max_doublings: 0,
                    backoff: Nanos::new((cfg.client.error_backoff_us * 1e3).round() as u64),
                    max_backoff_doublings: 0,
                },
                cfg.workload.tasks.min(1 << 24) as usize,
            ),
            nodes_per_rack,
        })
    }

    fn is_draconis(&self) -> bool {
        self.planes.first().is_some_and(PullPlane::is_draconis)
    }

    fn run(&mut self) {
        // Executors start pulling at random offsets over one poll period
        // (the retry plus the request's round trip) so that their polls are
        // not synchronised (§4.6). Over the retry alone, a 1 ns retry (the
        // calibrated one) would start every executor at once and keep them
        // polling in bursts one round trip apart.
        if self.is_draconis() {
            let mut jitter = Rng::derive(self.cfg.seed, stream::EXEC_JITTER);
            let round_trip = 2 * self.sched_link;
            for i in 0..self.execs.len() {
                let period = self.execs[i].ex.retry.get() + round_trip;
                let t = jitter.next_u64() % period;
                let req = self.execs[i].ex.request();
                self.execs[i].request_sent = t;
                self.send_pull(t + self.sched_link, 0, req);
            }
        }
        let total = self.cfg.workload.tasks;
        if let Some(window) = self.closed_loop_window() {
            let window = window.min(total);
            while (self.tasks.len() as u64) < window {
                let size = (self.job_size() as u64).min(window - self.tasks.len() as u64);
                self.new_job(0, size);
            }
        } else {
            let first = self.interarrival();
            self.q.at(first, Ev::Arrival);
        }
        while let Some((now, ev)) = self.q.pop() {
            self.handle(now, ev);
            if self.tasks.len() as u64 == total && self.resolved == total {
                self.m.end_ns = now;
                break;
            }
        }
        self.collect_dataplane_stats();
    }

    fn closed_loop_window(&self) -> Option<u64> {
        let w = &self.cfg.workload;
        (w.arrival == Arrival::ClosedLoop).then(|| w.outstanding.unwrap_or(1) as u64)
    }

    /// A task resolved (completed or given up): a closed loop submits its
    /// next job once `job_tasks` have.
    fn on_resolved(&mut self, now: u64) {
        self.resolved += 1;
        if self.closed_loop_window().is_none() {
            return;
        }
        let remaining = self.cfg.workload.tasks - self.tasks.len() as u64;
        if remaining == 0 {
            return;
        }
        self.closed_loop_resolved += 1;
        let size = (self.job_size() as u64).min(remaining);
        if self.closed_loop_resolved as u64 >= size {
            self.closed_loop_resolved -= size as u32;
            self.new_job(now, size);
        }
    }

    fn interarrival(&mut self) -> u64 {
        crate::ns::round_ns(-self.rng_arrival.unit_open0().ln() / self.job_rate)
    }

    fn handle(&mut self, now: u64, ev: Ev) {
        match ev {
            Ev::Arrival => self.arrival(now),
            Ev::Pull(s, i) => {
                let input = self.pkts.take(i);
                self.pull(now, s, input)
            }
            Ev::Rack(input) => self.rack(now, input),
            Ev::NodeTask(node, rid) => {
                let (id, attempt) = rack_split(rid);
                let mut task = self.task_info(id);
                task.fn_par = attempt as u64;
                self.node_load[node as usize] += 1;
                match self.node_idle[node as usize].pop() {
                    Some(e) => self.start(now, e, task),
                    None => self.node_queue[node as usize].push_back(task),
                }
            }
            Ev::ExecTask(e, task) => self.exec_task(now, e, task),
            Ev::ExecNoOp(e) => {
                let x = &mut self.execs[e as usize];
                let at = x.ex.on_noop(Nanos::new(now)).get();
                let req = x.ex.request();
                x.request_sent = at;
                self.send_pull(at + self.sched_link, 0, req);
            }
            Ev::ExecDone(e) => self.exec_done(now, e),
            Ev::Probe(e, slot) => {
                if let Some(get) = self.sparrow_worker(e).on_probe(slot) {
                    self.send_get_task(now, get);
                }
            }
            Ev::SparrowNoOp(e) => {
                if let Some(get) = self.sparrow_worker(e).on_free() {
                    self.send_get_task(now, get);
                }
            }
            Ev::Ack(job) => {
                for t in self.packets[job as usize].as_slice() {
                    self.tracker.acknowledge(t.id as u32, send_of(t));
                }
            }
            Ev::ErrorPacket(i) => {
                let list = self.epkts.take(i);
                for t in list.as_slice() {
                    self.m.error_tasks += 1;
                    let send = Some(send_of(t));
                    if let Some(due) = self.tracker.on_returned(t.id as u32, send, Nanos::new(now))
                    {
                        self.q.at(due.get(), Ev::Resubmit(t.id));
                    }
                }
            }
            Ev::Resubmit(id) => {
                if self.tracker.retry(id as u32, Nanos::new(now)) {
                    self.resubmit(now, id);
                }
            }
            Ev::Timeout(id, send) => {
                match self.tracker.on_deadline(id as u32, send, Nanos::new(now)) {
                    None => {}
                    Some(Expiry::GaveUp { .. }) => {
                        self.m.timeouts += 1;
                        if id >= self.warmup {
                            self.m.gave_up += 1;
                        }
                        self.on_resolved(now);
                    }
                    Some(_) => {
                        self.m.timeouts += 1;
                        self.resubmit(now, id);
                    }
                }
            }
            Ev::Done(id) => {
                if self.tracker.on_reply(id as u32, true) == ReplyOutcome::Completed {
                    if id >= self.warmup {
                        self.m.completed += 1;
                        self.m.response.record(now - self.tasks[id as usize].submit);
                    }
                    self.on_resolved(now);
                }
            }
        }
    }
}
