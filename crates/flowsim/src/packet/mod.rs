//! Packet against flow: the flow simulator's workloads driven through the
//! SPC state machines themselves (Baraat §4.3.2-4.3.3: Alg. 1 at every port
//! on a flow's path, Alg. 2 at its sender) in simulated time, to check the
//! fluid engine's instant fixed point (`engine/`) against the control loop
//! it stands for.
//!
//! The model is at the granularity of rate updates, not single packets:
//! * Control. Every flow sends one SPC request per RTT (`opts.rtt_ns`),
//!   carrying the demand of [`SpcSender::next_demand`]; the request visits
//!   every port of its path ([`FlowDataPlane::on_request`], Alg. 1 at an
//!   SPC port the flow registry built, [`FlowPlane::build`]) and the feedback
//!   vector reaches the sender one RTT later, which then sends at the
//!   smallest AR ([`SpcSender::on_feedback`]) and makes its next request.
//!   A new flow sends nothing until its first feedback is back (the paper's
//!   "protocol overhead", §5.1). The last byte sent carries the FIN
//!   ([`FlowDataPlane::on_flow_end`]); a task's counters are dropped when its
//!   last flow is delivered ([`FlowDataPlane::on_task_end`]). Every port runs
//!   [`FlowDataPlane::on_interval`] once per RTT with the bytes that arrived in
//!   it and its standing queue (footnote 5's virtual capacity).
//! * Data. Time advances in ticks of `rtt_ns / ticks_per_rtt`. In a tick
//!   each sender injects `rate × tick` bytes; each link, in path order
//!   (host up, ToR up, pod up, pod down, ToR down, host down), forwards up
//!   to its capacity and keeps the rest queued, serving its flows' backlogs
//!   in proportion (a fluid FIFO). Allocations above capacity therefore
//!   become queueing delay, never lost bytes.
//! * Delay. Each hop adds `rtt_ns / 12` of propagation to a flow's
//!   completion (a six-hop path's one-way delay is half the RTT); the
//!   control loop uses one RTT for every path, as RCP uses one average RTT.
//!
//! Under fair sharing every flow carries class 0 (one class: Alg. 1's
//! max-min split, ideal RCP); under Baraat a flow carries its task id and
//! every port classifies with FIFO-LM (§4.3.1), where the fluid engine
//! classifies only at the destination port.
//!
//! Tasks, gates and computation delays follow the same [`TaskSpec`]s as
//! the fluid engine, so the same seed gives the same tasks. Time is integer
//! ns at tick boundaries; a flow's last byte is placed inside its tick and
//! rounded up to the next ns. Everything iterates vectors in index order:
//! runs are deterministic.

mod control;
mod data;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::TaskResult;
use crate::policy::Policy;
use crate::topology::{LinkId, Topology, MAX_HOPS};
use crate::workload::{FlowSpec, TaskSpec, NO_GATE};
use netsched_core::baraat::{FlowDataPlane, FlowParams, FlowPlane, SpcFeedback, SpcSender};
use netsched_core::Nanos;

/// Bytes below this are float residue, not data.
const EPS_BYTES: f64 = 1e-6;

/// A policy the flow registry has no switch data plane for
/// (`FlowPolicy::plane`): only the fluid engine computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("packet mode runs the policies with a switch data plane (fair, baraat), not {}", .0.name())]
pub struct NoSwitchPlane(pub Policy);

/// Parameters of a packet-level run.
#[derive(Clone, Debug)]
pub struct PacketOpts {
    /// `Fair` or `Baraat`: the two policies SPC implements.
    pub policy: Policy,
    /// Baraat's heavy threshold (bytes reserved at a port).
    pub heavy_threshold: f64,
    /// The control loop's round-trip time (ns).
    pub rtt_ns: u64,
    /// Data-plane steps per RTT; flows' request phases spread over them.
    pub ticks_per_rtt: u32,
    /// Alg. 2's δ as a fraction of the NIC rate (§4.3.3: "a small value").
    pub delta_fraction: f64,
}

impl PacketOpts {
    /// 100 µs RTT (a datacenter's; the paper's software testbed had 1 ms,
    /// §5.1), four data steps per RTT, δ = 1 % of the NIC rate (as the UDP
    /// lab).
    pub fn new(policy: Policy, heavy_threshold: f64) -> Self {
        PacketOpts {
            policy,
            heavy_threshold,
            rtt_ns: 100_000,
            ticks_per_rtt: 4,
            delta_fraction: 0.01,
        }
    }
}

/// Counters of a packet-level run.
#[derive(Clone, Debug, Default)]
pub struct PacketStats {
    pub ticks: u64,
    pub flows: u64,
    /// SPC requests sent (each visits every port on its flow's path).
    pub requests: u64,
    /// Requests whose demand went back up to the NIC (or data) rate after
    /// Alg. 2 had lowered it to NR + δ (line 3 false: the smallest NR grew
    /// to at least the last demand). For one RTT such a flow's demand
    /// counts in full at every port on its path against the classes behind
    /// it.
    pub demand_reraises: u64,
    /// The largest standing queue seen at any link (bytes).
    pub max_queue_bytes: f64,
    /// Sum over ticks and links of the standing queue (byte-ticks): with
    /// `ticks` it gives how much data waited, not just the worst moment.
    pub queue_byte_ticks: f64,
    /// Link-ticks in which a switch link (ToR or pod, not a host link)
    /// had more to forward than its capacity: switch links binding.
    pub switch_saturated_ticks: u64,
    /// The same for host links.
    pub host_saturated_ticks: u64,
    /// Switch-link capacity (bits) over the control intervals in which
    /// the link carried flows.
    pub switch_active_bits: f64,
    /// Of that, capacity left unused in intervals when the port had handed
    /// out its whole virtual capacity (A ≥ 95 % of it): idle, yet every new
    /// request is told AR ≈ 0 (Alg. 1 line 10) until allocations come back.
    pub switch_booked_idle_bits: f64,
    /// Hand-overs at switch ports: control intervals in which the port's
    /// top class (the leader of the first task with flows there) differs
    /// from the last interval's. Under fair sharing (one class) none.
    pub switch_handovers: u64,
    /// The same at host ports (under Baraat, a client's downlink passing
    /// from one task to the next in FIFO).
    pub host_handovers: u64,
}

/// A flow from its start to its last byte's delivery.
#[derive(Clone, Debug)]
struct Flow {
    task: u32,
    spec: u32,
    /// The task id the SPC header carries (0 for every flow under fair
    /// sharing: one class).
    class_id: u64,
    links: [LinkId; MAX_HOPS],
    n: u8,
    /// Bytes the sender has not sent yet.
    unsent: f64,
    /// Bytes waiting at each hop's queue.
    backlog: [f64; MAX_HOPS],
    /// When the last byte left the sender, then each hop (ns, fractional).
    last_byte: f64,
    sender: SpcSender,
    /// The sending rate: the smallest AR of the last feedback (bits/s).
    rate: f64,
    min_nr: Option<f64>,
    /// What each port holds for this flow (Alg. 1 line 1 returns them).
    held_alloc: [f64; MAX_HOPS],
    held_demand: f64,
    /// The ports have counted the flow (its first request was made).
    counted: bool,
    /// The feedback of the request in flight and the tick it arrives.
    pending: Option<(u64, [SpcFeedback; MAX_HOPS])>,
    /// The FIN went out with the last byte.
    finned: bool,
    alive: bool,
}

/// A live task: its flows' specs, how many are left overall and per gate,
/// and the links it used (where its counters must be dropped).
#[derive(Clone, Debug)]
struct Task {
    index: u64,
    task_id: u64,
    arrival: u64,
    total_bytes: u64,
    left: u32,
    specs: Vec<FlowSpec>,
    gate_left: Vec<u32>,
    links: Vec<LinkId>,
    /// The latest delivery of its flows so far.
    done_ns: u64,
}

/// The packet-level simulator of one run.
pub struct PacketEngine {
    topo: Topology,
    opts: PacketOpts,
    tick_ns: u64,
    hop_delay_ns: u64,
    /// One SPC port per directed link (host uplinks included: the NIC
    /// shares its rate among its flows like a switch port).
    ports: Vec<FlowPlane>,
    /// Each link's flows and the hop the link is on their path.
    link_flows: Vec<Vec<(u32, u8)>>,
    /// Standing queue after the last tick, and bytes that arrived since the
    /// port's last interval (bytes).
    queue: Vec<f64>,
    rx: Vec<f64>,
    /// Links with flows, per stage (path order), and membership.
    active: [Vec<LinkId>; MAX_HOPS],
    in_active: Vec<bool>,
    /// Each port's top class at its last control interval.
    top_class: Vec<Option<u64>>,
    flows: Vec<Flow>,
    free_flows: Vec<u32>,
    live_flows: usize,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<u32>,
    /// Flow starts (time, sequence, task slot, spec), earliest first.
    starts: BinaryHeap<Reverse<(u64, u64, u32, u32)>>,
    seq: u64,
    results: Vec<TaskResult>,
    pub stats: PacketStats,
}

impl PacketEngine {
    /// The engine over `topo`, its ports built by the flow registry for
    /// `opts.policy`; a policy without a switch data plane is refused.
    pub fn new(topo: Topology, opts: PacketOpts) -> Result<Self, NoSwitchPlane> {
        let kind = opts.policy.plane().ok_or(NoSwitchPlane(opts.policy))?;
        let nl = topo.links() as usize;
        let k = opts.ticks_per_rtt.max(1) as u64;
        let rtt = opts.rtt_ns.max(k);
        let ports = (0..nl as u32)
            .map(|l| {
                let params = FlowParams {
                    capacity_bps: topo.capacity(l) as f64,
                    interval: Nanos::new(rtt),
                    heavy_threshold_bytes: opts.heavy_threshold,
                };
                FlowPlane::build(kind, &params)
            })
            .collect();
        Ok(PacketEngine {
            tick_ns: rtt / k,
            hop_delay_ns: rtt / (2 * MAX_HOPS as u64),
            ports,
            link_flows: vec![Vec::new(); nl],
            queue: vec![0.0; nl],
            rx: vec![0.0; nl],
            active: Default::default(),
            in_active: vec![false; nl],
            top_class: vec![None; nl],
            flows: Vec::new(),
            free_flows: Vec::new(),
            live_flows: 0,
            tasks: Vec::new(),
            free_tasks: Vec::new(),
            starts: BinaryHeap::new(),
            seq: 0,
            results: Vec::new(),
            stats: PacketStats::default(),
            topo,
            opts: PacketOpts {
                rtt_ns: rtt,
                ..opts
            },
        })
    }

    pub fn opts(&self) -> &PacketOpts {
        &self.opts
    }

    pub fn tick_ns(&self) -> u64 {
        self.tick_ns
    }

    fn ticks_per_rtt(&self) -> u64 {
        self.opts.ticks_per_rtt.max(1) as u64
    }

    /// Run every task of `source` (sorted by arrival) to completion.
    pub fn run(&mut self, source: impl Iterator<Item = TaskSpec>) -> Vec<TaskResult> {
        let mut source = source.peekable();
        let mut index = 0u64;
        let mut tick = 0u64;
        loop {
            let now = tick * self.tick_ns;
            while source.peek().is_some_and(|s| s.arrival_ns <= now) {
                let spec = source.next().expect("peeked");
                self.arrive(spec, index);
                index += 1;
            }
            while let Some(&Reverse((t, _, task, spec))) = self.starts.peek() {
                if t > now {
                    break;
                }
                self.starts.pop();
                self.start_flow(task, spec, t);
            }
            if tick.is_multiple_of(self.ticks_per_rtt()) {
                self.port_intervals();
            }
            self.control(tick);
            self.move_data(now);
            self.stats.ticks += 1;
            if self.live_flows > 0 {
                tick += 1;
                continue;
            }
            // Idle network: jump to the next arrival or flow start.
            let next_arrival = source.peek().map(|s| s.arrival_ns);
            let next_start = self.starts.peek().map(|Reverse((t, ..))| *t);
            match next_arrival.into_iter().chain(next_start).min() {
                Some(t) => tick = (tick + 1).max(t.div_ceil(self.tick_ns)),
                None => break,
            }
        }
        std::mem::take(&mut self.results)
    }

    fn arrive(&mut self, spec: TaskSpec, index: u64) {
        let total_bytes = spec.total_bytes();
        let mut gate_left = vec![0u32; spec.gates() as usize];
        for f in &spec.flows {
            if f.feeds != NO_GATE {
                gate_left[f.feeds as usize] += 1;
            }
        }
        let arrival = spec.arrival_ns;
        let task = Task {
            index,
            task_id: spec.task_id,
            arrival,
            total_bytes,
            left: spec.flows.len() as u32,
            specs: spec.flows,
            gate_left,
            links: Vec::new(),
            done_ns: arrival,
        };
        let slot = match self.free_tasks.pop() {
            Some(s) => {
                self.tasks[s as usize] = Some(task);
                s
            }
            None => {
                self.tasks.push(Some(task));
                (self.tasks.len() - 1) as u32
            }
        };
        let t = self.tasks[slot as usize].as_ref().expect("just set");
        if t.left == 0 {
            self.complete_task(slot);
            return;
        }
        let ready: Vec<(u32, u64)> = t
            .specs
            .iter()
            .enumerate()
            .filter(|(_, f)| f.after == NO_GATE)
            .map(|(i, f)| (i as u32, arrival + f.delay_ns))
            .collect();
        for (i, at) in ready {
            self.push_start(at, slot, i);
        }
    }

    fn push_start(&mut self, at: u64, task: u32, spec: u32) {
        self.seq += 1;
        self.starts.push(Reverse((at, self.seq, task, spec)));
    }

    fn start_flow(&mut self, task: u32, spec: u32, at: u64) {
        let t = self.tasks[task as usize].as_mut().expect("live task");
        let s = &t.specs[spec as usize];
        let (src, dst, bytes) = (s.src, s.dst, s.bytes);
        if src == dst || bytes == 0 {
            self.flow_done(task, spec, at);
            return;
        }
        let class_id = if self.opts.policy == Policy::Baraat {
            t.task_id
        } else {
            0
        };
        let (links, n) = self.topo.path(src, dst);
        t.links.extend_from_slice(&links[..n]);
        let nic = self.topo.host_bps as f64;
        let flow = Flow {
            task,
            spec,
            class_id,
            links,
            n: n as u8,
            unsent: bytes as f64,
            backlog: [0.0; MAX_HOPS],
            last_byte: 0.0,
            sender: SpcSender::new(nic, self.opts.rtt_ns, nic * self.opts.delta_fraction),
            rate: 0.0,
            min_nr: None,
            held_alloc: [0.0; MAX_HOPS],
            held_demand: 0.0,
            counted: false,
            pending: None,
            finned: false,
            alive: true,
        };
        let id = match self.free_flows.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.stats.flows += 1;
        self.live_flows += 1;
        for (h, &l) in links[..n].iter().enumerate() {
            self.link_flows[l as usize].push((id, h as u8));
            if !self.in_active[l as usize] {
                self.in_active[l as usize] = true;
                self.active[self.topo.stage(l)].push(l);
            }
        }
    }

    /// The flow's last byte reached its destination at `at`.
    fn flow_done(&mut self, task: u32, spec: u32, at: u64) {
        let t = self.tasks[task as usize].as_mut().expect("live task");
        t.left -= 1;
        t.done_ns = t.done_ns.max(at);
        let feeds = t.specs[spec as usize].feeds;
        let mut ready = Vec::new();
        if feeds != NO_GATE {
            t.gate_left[feeds as usize] -= 1;
            if t.gate_left[feeds as usize] == 0 {
                ready.extend(
                    t.specs
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| f.after == feeds)
                        .map(|(i, f)| (i as u32, at + f.delay_ns)),
                );
            }
        }
        let finished = t.left == 0;
        for (i, start) in ready {
            self.push_start(start, task, i);
        }
        if finished {
            self.complete_task(task);
        }
    }

    fn complete_task(&mut self, slot: u32) {
        let mut t = self.tasks[slot as usize].take().expect("live task");
        self.results.push(TaskResult {
            index: t.index,
            task_id: t.task_id,
            arrival_ns: t.arrival,
            completion_ns: t.done_ns - t.arrival,
            bytes: t.total_bytes,
        });
        if self.opts.policy == Policy::Baraat {
            t.links.sort_unstable();
            t.links.dedup();
            for &l in &t.links {
                self.ports[l as usize].on_task_end(t.task_id);
            }
        }
        self.free_tasks.push(slot);
    }

    /// The port state (for tests): the flow data plane of link `l`.
    pub fn port(&self, l: LinkId) -> &FlowPlane {
        &self.ports[l as usize]
    }
}
