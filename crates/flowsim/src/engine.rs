//! The event-driven flow-level engine.
//!
//! Rates change only when a flow starts or ends (or, under Baraat, when a
//! task crosses the heavy threshold at a port), so the engine jumps from one
//! such event to the next; between events every flow moves at a constant
//! rate. After the events of one instant it recomputes the rates of the
//! *connected component* of flows that the change can affect, not of the
//! whole network: the component is grown from the changed links through
//! links that can bind. A switch link whose capacity is at least the sum of
//! its flows' NIC rates can never be a bottleneck, so it is not followed
//! (otherwise the 600 Gbps pod links would glue every cross-pod flow into one
//! component). Host links are always followed: they are where Baraat's
//! classifier counts a task's bytes.
//!
//! Allocation (`recompute_component`, `fill_group`) is strict priority
//! between priority keys and max-min fairness within a key, computed by
//! water-filling key by key on the capacity the higher keys left: this is
//! the fixed point that SPC's explicit feedback converges to (§4.3.2: full
//! capacity to the top class, leftover to the next, max-min within a class;
//! Alg. 2 makes a flow bottlenecked elsewhere demand only its bottleneck
//! share, so the leftover goes to lower classes: work conservation). Every
//! policy is a choice of key.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::iheap::IndexedHeap;
use crate::policy::Policy;
use crate::spc::FifoLm;
use crate::topology::{LinkId, Topology, MAX_HOPS};
use crate::workload::{FlowSpec, TaskSpec, NO_GATE};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Task arrivals are pulled from the source in order.
    Arrival,
    /// A flow of a task may start (its computation delay elapsed).
    Start { task: u32, spec: u32 },
}

#[derive(Clone, Debug)]
struct Flow {
    task: u32,
    /// The task's Baraat id (§4.1), kept here to spare a lookup.
    tid: u64,
    dst: u32,
    links: [LinkId; MAX_HOPS],
    pos: [u32; MAX_HOPS],
    n: u8,
    cap: u64,
    /// Bytes left (fluid).
    rem: f64,
    /// Bits per second.
    rate: f64,
    /// Time `rem` was last brought up to date.
    last: u64,
    gen: u32,
    key: (u64, u64),
    spec: u32,
    alive: bool,
    /// Rate group ([`Group`]) and index in its `members`, or `NONE`.
    group: u32,
    gpos: u32,
    /// In a group: the group's per-member byte count at which the flow is
    /// done (its bytes left when the group formed).
    target: f64,
}

const NONE: u32 = u32::MAX;

/// A rate group: flows frozen together at one level of one water-fill (so
/// at one rate), with a virtual clock: `served` bytes per member at time
/// `at`, growing at `rate`. A member is done when the clock reaches its
/// `target`, so the members stay in `target` order whatever the rate, a
/// rate change touches neither the members nor more than one heap entry
/// (the finish-time heap holds one entry per group: its first live
/// member's), and a flow's bytes left are `target − served` (its own `rem`,
/// `last` and `rate` are brought up to date only when read).
///
/// Invariants (checked by [`Engine::check_invariants`]): a flow with
/// `group == g` is at `members[gpos]` with `gpos >= head`; `live` counts
/// them; they appear in non-decreasing `target` order; the heap entry of a
/// group with live members is the finish time of `members[head]`, which is
/// live. Entries of flows that left stay in `members` and are skipped.
#[derive(Clone, Debug, Default)]
struct Group {
    members: Vec<u32>,
    head: u32,
    live: u32,
    rate: f64,
    served: f64,
    at: u64,
    /// Component stamp (recomputation bookkeeping).
    stamp: u32,
    /// When the group is the last with a positive rate at its bottleneck
    /// `L`, which every flow of its component crosses: the flows behind it
    /// (all at 0, blocked by `L`), as the water-fill's heap of complemented
    /// packed (key, id). When the group empties they are promoted in key
    /// order without recomputing the component ([`Engine::promote`]).
    behind: Option<BinaryHeap<u128>>,
    /// A link that every member crosses and that the group saturates (its
    /// members froze when it ran out), or `NONE`: the departure fast path
    /// applies only to groups with one.
    bottleneck: LinkId,
    fast: Option<FastPath>,
    /// Baraat: live members per task id, so that a rate change of the group
    /// updates its ports' per-task rates in O(tasks), not O(members).
    tasks: Vec<(u64, u32)>,
}

/// What the departure fast path needs to know about a group's links,
/// measured when the group forms ([`Engine::fast_conditions`]).
#[derive(Clone, Copy, Debug)]
struct FastPath {
    /// `L`'s capacity left by the flows outside the group.
    r_l: f64,
    /// The smallest level at which another link of the group would
    /// saturate (capacity left by the others per member crossing it).
    lmax: f64,
    /// The members' smallest NIC rate.
    min_cap: f64,
}

#[derive(Clone, Debug)]
struct Task {
    index: u64,
    task_id: u64,
    arrival: u64,
    total_bytes: u64,
    left: u32,
    specs: Vec<FlowSpec>,
    /// Flows still feeding each gate.
    gate_left: Vec<u32>,
    /// Ports (hosts) where the task has or had flows (Baraat classifier).
    ports: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
struct Link {
    flows: Vec<u32>,
    sum_caps: u64,
    stamp: u32,
    local: u32,
}

#[derive(Clone, Debug, Default)]
struct Port {
    lm: Option<FifoLm>,
    /// Baraat: the classifier's bytes-reserved counters are charged up to
    /// `at`. Between rate changes a task's bytes into the port grow at the
    /// sum of its flows' rates, kept here per task id (`rates`), so charging
    /// them is O(tasks at the port), not O(flows): the per-task aggregate
    /// counters of §4.3.1. Invariant: `rates` holds, for every task with a
    /// flow moving into the port, the sum of those flows' rates.
    at: u64,
    rates: Vec<(u64, f64)>,
}

/// Parameters of a run beyond the topology and the tasks.
#[derive(Clone, Debug)]
pub struct EngineOpts {
    pub policy: Policy,
    /// Baraat's heavy threshold (bytes reserved at a port).
    pub heavy_threshold: f64,
}

/// One finished task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskResult {
    pub index: u64,
    pub task_id: u64,
    pub arrival_ns: u64,
    pub completion_ns: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    pub events: u64,
    pub recomputes: u64,
    pub flows_recomputed: u64,
    pub flows: u64,
    /// Departures handled by the rate-group fast path (not counted in
    /// `recomputes`).
    pub fast_departures: u64,
    /// Of those, groups emptied whose flows behind were promoted.
    pub promotions: u64,
    /// Flow starts joining a rate group without a recomputation.
    pub fast_arrivals: u64,
}

#[derive(Clone)]
pub struct Engine {
    topo: Topology,
    opts: EngineOpts,
    events: EventQueue,
    instant: InstantChanges,
    fabric: Fabric,
    groups: RateGroups,
    tasks: TaskTable,
    baraat: Classifiers,
    fill: WaterFill,
    scratch: Scratch,
    /// Check the rate groups' invariants after every recomputation, and
    /// every fast-path result against a from-scratch recomputation (tests).
    pub check: bool,
    /// Recompute every active flow at every change (the from-scratch
    /// reference the component recomputation is tested against).
    pub full_recompute: bool,
    pub stats: EngineStats,
}

/// The clock and the pending task arrivals and delayed flow starts (flow
/// finishes are in [`RateGroups::finish`], Baraat's re-classifications in
/// [`Classifiers::reclass`]).
#[derive(Clone, Default)]
struct EventQueue {
    now: u64,
    /// Ties at one instant pop in push order.
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
}

/// What the events of the current instant changed, for the one
/// recomputation after them.
#[derive(Clone, Default)]
struct InstantChanges {
    /// Groups of the flows that finished at this instant.
    departed: Vec<u32>,
    /// Links seeded by this instant's departures (`dirty`: by the rest).
    dep_dirty: Vec<LinkId>,
    dirty: Vec<LinkId>,
    /// Flows started at this instant; whether one of them is its task's
    /// first at its port (Baraat).
    started: Vec<u32>,
    new_at_port: bool,
    /// Baraat: a task turned heavy at a departure of this instant.
    turned_heavy: bool,
}

/// The flows and the links they cross.
#[derive(Clone, Default)]
struct Fabric {
    links: Vec<Link>,
    flows: Vec<Flow>,
    /// Component stamps of the flows, apart from `flows` so that the
    /// component walk (which sees every flow once per link) stays in cache.
    fstamp: Vec<u32>,
    free_flows: Vec<u32>,
    /// The current component stamp (of links, flows and groups).
    stamp: u32,
}

/// The rate groups and their finish times.
#[derive(Clone, Default)]
struct RateGroups {
    all: Vec<Group>,
    free: Vec<u32>,
    /// Finish times of the rate groups' first members, re-keyed in place.
    finish: IndexedHeap,
    /// The groups the last water-fill formed (and, while a recomputation
    /// dissolves the old groups, the groups its flows left).
    fresh: Vec<u32>,
}

/// The live tasks and the finished ones.
#[derive(Clone, Default)]
struct TaskTable {
    slots: Vec<Option<Task>>,
    free: Vec<u32>,
    results: Vec<TaskResult>,
}

/// Baraat's per-port classifiers (§4.3.1).
#[derive(Clone, Default)]
struct Classifiers {
    ports: Vec<Port>,
    /// Per port, the next time a task there crosses the heavy threshold at
    /// the current rates (one entry per port, re-keyed in place as the rates
    /// change, instead of a stale event per change).
    reclass: IndexedHeap,
    /// Scratch: (port, task id) and rate of each moving flow.
    crossing: Vec<(u128, f64)>,
}

/// The state of the last water-fill.
#[derive(Clone, Default)]
struct WaterFill {
    /// Per component link (by `Link::local`): capacity left, and unfrozen
    /// flows of the key group being filled.
    residual: Vec<f64>,
    count: Vec<u32>,
    /// Flows in freeze order, and the freeze sets as (start in `frozen`,
    /// bottleneck link or NONE, level).
    frozen: Vec<u32>,
    sets: Vec<(u32, LinkId, f64)>,
    /// The link that stopped the last water-fill, and the flows left then.
    stop: Option<LinkId>,
    stop_rest: BinaryHeap<u128>,
    unfrozen: Vec<u32>,
    touched: Vec<u32>,
    bkeyed: Vec<u64>,
}

/// Scratch of the recomputation (the component and its key order).
#[derive(Clone, Default)]
struct Scratch {
    comp_flows: Vec<u32>,
    comp_links: Vec<LinkId>,
    keyed: Vec<((u64, u64), u32)>,
    packed: Vec<u128>,
    total: Vec<u32>,
    universal: Vec<u32>,
    kgroup: Vec<u32>,
    xlinks: Vec<LinkId>,
}

impl Engine {
    pub fn new(topo: Topology, opts: EngineOpts) -> Self {
        let nl = topo.links() as usize;
        let hosts = topo.hosts as usize;
        Engine {
            topo,
            opts,
            events: EventQueue::default(),
            instant: InstantChanges::default(),
            fabric: Fabric {
                links: vec![Link::default(); nl],
                ..Fabric::default()
            },
            groups: RateGroups::default(),
            tasks: TaskTable::default(),
            baraat: Classifiers {
                ports: vec![Port::default(); hosts],
                ..Classifiers::default()
            },
            fill: WaterFill::default(),
            scratch: Scratch::default(),
            check: false,
            full_recompute: false,
            stats: EngineStats::default(),
        }
    }
    fn push(&mut self, t: u64, ev: Ev) {
        self.events.seq += 1;
        self.events.heap.push(Reverse((t, self.events.seq, ev)));
    }

    /// Run every task of `source` (sorted by arrival) to completion.
    pub fn run(&mut self, source: impl Iterator<Item = TaskSpec>) -> Vec<TaskResult> {
        let mut source = source.peekable();
        let mut index = 0u64;
        if let Some(t) = source.peek() {
            self.push(t.arrival_ns, Ev::Arrival);
        }
        loop {
            let te = self.events.heap.peek().map(|Reverse((t, _, _))| *t);
            let tf = self.groups.finish.peek().map(|(t, _)| t);
            let tr = self.baraat.reclass.peek().map(|(t, _)| t);
            let Some(t) = [te, tf, tr].into_iter().flatten().min() else {
                break;
            };
            self.events.now = t;
            // Every event of this instant, then one recomputation.
            while let Some((t2, g)) = self.groups.finish.peek() {
                if t2 != t {
                    break;
                }
                let grp = &self.groups.all[g as usize];
                let fid = grp.members[grp.head as usize];
                self.stats.events += 1;
                self.finish_flow(fid);
            }
            while let Some(&Reverse((t2, _, ev))) = self.events.heap.peek() {
                if t2 != t {
                    break;
                }
                self.events.heap.pop();
                self.stats.events += 1;
                match ev {
                    Ev::Arrival => {
                        // All tasks arriving at this instant.
                        while source.peek().is_some_and(|s| s.arrival_ns <= t) {
                            let spec = source.next().expect("peeked");
                            self.arrive(spec, index);
                            index += 1;
                        }
                        if let Some(nx) = source.peek() {
                            self.push(nx.arrival_ns, Ev::Arrival);
                        }
                    }
                    Ev::Start { task, spec } => self.start_flow(task, spec),
                }
            }
            // Baraat: a task crossed the heavy threshold at a port; the
            // recomputation there charges the counters and re-keys.
            while let Some((t2, p)) = self.baraat.reclass.peek() {
                if t2 != t {
                    break;
                }
                self.baraat.reclass.remove(p);
                self.stats.events += 1;
                self.instant.dirty.push(self.topo.host_down(p));
            }
            if !self.instant.dirty.is_empty() || !self.instant.dep_dirty.is_empty() {
                self.recompute();
                if self.check {
                    self.check_invariants();
                }
            }
            self.instant.departed.clear();
            self.instant.started.clear();
            self.instant.new_at_port = false;
            self.instant.turned_heavy = false;
        }
        std::mem::take(&mut self.tasks.results)
    }

    fn arrive(&mut self, spec: TaskSpec, index: u64) {
        let total_bytes = spec.total_bytes();
        let gates = spec.gates() as usize;
        let mut gate_left = vec![0u32; gates];
        for f in &spec.flows {
            if f.feeds != NO_GATE {
                gate_left[f.feeds as usize] += 1;
            }
        }
        let task = Task {
            index,
            task_id: spec.task_id,
            arrival: spec.arrival_ns.max(self.events.now),
            total_bytes,
            left: spec.flows.len() as u32,
            specs: spec.flows,
            gate_left,
            ports: Vec::new(),
        };
        let slot = match self.tasks.free.pop() {
            Some(s) => {
                self.tasks.slots[s as usize] = Some(task);
                s
            }
            None => {
                self.tasks.slots.push(Some(task));
                (self.tasks.slots.len() - 1) as u32
            }
        };
        let t = self.tasks.slots[slot as usize].as_ref().expect("just set");
        if t.left == 0 {
            self.complete_task(slot);
            return;
        }
        let ready: Vec<(u32, u64)> = t
            .specs
            .iter()
            .enumerate()
            .filter(|(_, f)| f.after == NO_GATE)
            .map(|(i, f)| (i as u32, f.delay_ns))
            .collect();
        for (i, d) in ready {
            self.ready(slot, i, d);
        }
    }

    fn ready(&mut self, task: u32, spec: u32, delay: u64) {
        if delay == 0 {
            self.start_flow(task, spec);
        } else {
            self.push(self.events.now + delay, Ev::Start { task, spec });
        }
    }

    fn start_flow(&mut self, task: u32, spec: u32) {
        let t = self.tasks.slots[task as usize].as_mut().expect("live task");
        let s = &t.specs[spec as usize];
        let (src, dst, bytes) = (s.src, s.dst, s.bytes);
        if src == dst || bytes == 0 {
            // Nothing crosses the network: done at once.
            self.flow_done(task, spec);
            return;
        }
        let task_id = t.task_id;
        if self.opts.policy == Policy::Baraat && !t.ports.contains(&dst) {
            t.ports.push(dst);
        }
        let (links, n) = self.topo.path(src, dst);
        let cap = links[..n]
            .iter()
            .map(|&l| self.topo.capacity(l))
            .min()
            .expect("path has links");
        let f = Flow {
            task,
            tid: task_id,
            dst,
            links,
            pos: [0; MAX_HOPS],
            n: n as u8,
            cap,
            rem: bytes as f64,
            rate: 0.0,
            last: self.events.now,
            gen: 0,
            key: (0, 0),
            spec,
            alive: true,
            group: NONE,
            gpos: 0,
            target: 0.0,
        };
        let id = match self.fabric.free_flows.pop() {
            Some(i) => {
                let gen = self.fabric.flows[i as usize].gen;
                self.fabric.flows[i as usize] = Flow { gen: gen + 1, ..f };
                i
            }
            None => {
                self.fabric.flows.push(f);
                self.fabric.fstamp.push(0);
                (self.fabric.flows.len() - 1) as u32
            }
        };
        self.stats.flows += 1;
        self.instant.started.push(id);
        for (h, &l) in links[..n].iter().enumerate() {
            let link = &mut self.fabric.links[l as usize];
            self.fabric.flows[id as usize].pos[h] = link.flows.len() as u32;
            link.flows.push(id);
            link.sum_caps += cap;
            // A switch link that cannot bind now could not before either:
            // no rate depends on it, so it seeds nothing.
            if self.follow(l) {
                self.instant.dirty.push(l);
            }
        }
        if self.opts.policy == Policy::Baraat {
            let thr = self.opts.heavy_threshold;
            let lm = self.baraat.ports[dst as usize]
                .lm
                .get_or_insert_with(|| FifoLm::new(thr));
            // A task new at the port changes its classes.
            self.instant.new_at_port |= lm.counters(task_id).is_none();
            lm.add_flow(task_id);
        }
    }

    /// Bring a flow's remaining bytes up to `now` (Baraat's byte counters
    /// are charged per task and port: [`Engine::charge_port`]).
    #[inline]
    fn advance(&mut self, id: u32) {
        let now = self.events.now;
        let f = &mut self.fabric.flows[id as usize];
        if f.last == now {
            return;
        }
        f.last = now;
        if f.group == NONE {
            // Not moving (a flow with a positive rate is in a group).
            return;
        }
        let g = &self.groups.all[f.group as usize];
        let served = g.served + g.rate * (now - g.at) as f64 / 8e9;
        f.rem = (f.target - served).max(0.0);
    }

    fn finish_flow(&mut self, id: u32) {
        self.advance(id);
        let f = &mut self.fabric.flows[id as usize];
        f.alive = false;
        let (task, tid, spec, dst, n, links, pos, cap) =
            (f.task, f.tid, f.spec, f.dst, f.n, f.links, f.pos, f.cap);
        self.instant.departed.push(f.group);
        if self.opts.policy == Policy::Baraat {
            // The port's counters up to now at the old rates, then the
            // flow's rate leaves its task's. A task that turned heavy
            // changes the port's classes: recompute there.
            if self.charge_port(dst) {
                self.instant.dirty.push(self.topo.host_down(dst));
                self.instant.turned_heavy = true;
            }
            let r = self.rate_of(id);
            self.port_rate_add(dst, tid, -r);
        }
        self.group_leave(id);
        for h in 0..n as usize {
            let l = links[h];
            let link = &mut self.fabric.links[l as usize];
            let p = pos[h] as usize;
            link.flows.swap_remove(p);
            // Seed only a link that could bind before (host links always).
            let seed = self.topo.is_host_link(l) || link.sum_caps > self.topo.capacity(l);
            link.sum_caps -= cap;
            if p < link.flows.len() {
                let moved = link.flows[p];
                let mf = &mut self.fabric.flows[moved as usize];
                let hop = mf.links[..mf.n as usize]
                    .iter()
                    .position(|&x| x == l)
                    .expect("flow is on the link");
                mf.pos[hop] = p as u32;
            }
            if seed {
                self.instant.dep_dirty.push(l);
            }
        }
        self.fabric.free_flows.push(id);
        if self.opts.policy == Policy::Baraat {
            if let Some(lm) = self.baraat.ports[dst as usize].lm.as_mut() {
                lm.remove_flow(tid);
            }
        }
        self.flow_done(task, spec);
    }

    fn flow_done(&mut self, task: u32, spec: u32) {
        let t = self.tasks.slots[task as usize].as_mut().expect("live task");
        t.left -= 1;
        let feeds = t.specs[spec as usize].feeds;
        if feeds != NO_GATE {
            t.gate_left[feeds as usize] -= 1;
            if t.gate_left[feeds as usize] == 0 {
                let ready: Vec<(u32, u64)> = t
                    .specs
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.after == feeds)
                    .map(|(i, f)| (i as u32, f.delay_ns))
                    .collect();
                for (i, d) in ready {
                    self.ready(task, i, d);
                }
            }
        }
        // A second-stage flow with nothing to send finishes inside `ready`
        // above and may already have completed the task.
        if self.tasks.slots[task as usize]
            .as_ref()
            .is_some_and(|t| t.left == 0)
        {
            self.complete_task(task);
        }
    }

    fn complete_task(&mut self, slot: u32) {
        let t = self.tasks.slots[slot as usize].take().expect("live task");
        self.tasks.results.push(TaskResult {
            index: t.index,
            task_id: t.task_id,
            arrival_ns: t.arrival,
            completion_ns: self.events.now - t.arrival,
            bytes: t.total_bytes,
        });
        for &p in &t.ports {
            let port = &mut self.baraat.ports[p as usize];
            // Its flows are all done: nothing of it moves any more.
            port.rates.retain(|r| r.0 != t.task_id);
            if let Some(lm) = port.lm.as_mut() {
                // Recompute the port only if another task's class changed
                // (the task was heavy, or shared a heavy task's class).
                if lm.forget(t.task_id) {
                    self.instant.dirty.push(self.topo.host_down(p));
                }
            }
        }
        self.tasks.free.push(slot);
    }

    /// Can this link limit its flows? Host links always count (see module doc).
    fn follow(&self, l: LinkId) -> bool {
        self.topo.is_host_link(l) || self.fabric.links[l as usize].sum_caps > self.topo.capacity(l)
    }

    /// After the events of one instant: departures from one rate group go
    /// through the fast path when its conditions hold and the component of
    /// the other changes (starts, re-classifications) does not reach the
    /// group; everything else is recomputed component by component.
    fn recompute(&mut self) {
        let g = self.instant.departed.first().copied().unwrap_or(NONE);
        if !self.full_recompute
            && g != NONE
            && self.instant.departed.iter().all(|&d| d == g)
            && (self.instant.dirty.is_empty()
                || !self.component_touches(g, self.groups.all[g as usize].bottleneck))
        {
            let shadow = if self.check {
                let mut sh = self.clone();
                sh.instant.dirty.append(&mut sh.instant.dep_dirty);
                Some(sh)
            } else {
                None
            };
            if self.fast_departure() {
                self.instant.dep_dirty.clear();
                self.stats.fast_departures += 1;
                if !self.instant.dirty.is_empty() && !self.fast_arrival() {
                    self.recompute_component();
                }
                if let Some(mut sh) = shadow {
                    sh.recompute_component();
                    self.compare_rates(&sh);
                }
                return;
            }
        }
        let mut dep = std::mem::take(&mut self.instant.dep_dirty);
        self.instant.dirty.append(&mut dep);
        self.instant.dep_dirty = dep;
        self.recompute_component();
    }

    fn next_stamp(&mut self) -> u32 {
        self.fabric.stamp = self.fabric.stamp.wrapping_add(1);
        if self.fabric.stamp == 0 {
            for l in &mut self.fabric.links {
                l.stamp = 0;
            }
            self.fabric.fstamp.fill(0);
            for g in &mut self.groups.all {
                g.stamp = 0;
            }
            self.fabric.stamp = 1;
        }
        self.fabric.stamp
    }

    /// Does the component grown from the dirty links hold a member of `g`
    /// or the link `bl`?
    fn component_touches(&mut self, g: u32, bl: LinkId) -> bool {
        let stamp = self.next_stamp();
        let mut stack = std::mem::take(&mut self.scratch.comp_links);
        stack.clear();
        for &l in &self.instant.dirty {
            let link = &mut self.fabric.links[l as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                stack.push(l);
            }
        }
        let mut hit = false;
        let mut i = 0;
        'walk: while i < stack.len() {
            let l = stack[i];
            i += 1;
            for k in 0..self.fabric.links[l as usize].flows.len() {
                let fid = self.fabric.links[l as usize].flows[k];
                if self.fabric.fstamp[fid as usize] == stamp {
                    continue;
                }
                self.fabric.fstamp[fid as usize] = stamp;
                let f = &self.fabric.flows[fid as usize];
                if f.group == g {
                    hit = true;
                    break 'walk;
                }
                let (links, n) = (f.links, f.n as usize);
                for &l2 in &links[..n] {
                    if self.fabric.links[l2 as usize].stamp != stamp && self.follow(l2) {
                        self.fabric.links[l2 as usize].stamp = stamp;
                        stack.push(l2);
                    }
                }
            }
        }
        self.scratch.comp_links = stack;
        hit || (bl != NONE && self.fabric.links[bl as usize].stamp == stamp)
    }

    /// Recompute the component grown from the dirty links: re-key and
    /// water-fill every flow in it, and regroup them.
    fn recompute_component(&mut self) {
        self.stats.recomputes += 1;
        let stamp = self.next_stamp();
        let mut comp_flows = std::mem::take(&mut self.scratch.comp_flows);
        let mut comp_links = std::mem::take(&mut self.scratch.comp_links);
        comp_flows.clear();
        comp_links.clear();
        // Seeds are followed even when they cannot bind any more: their
        // flows may have been held back by them until now.
        let mut dirty = std::mem::take(&mut self.instant.dirty);
        if self.full_recompute {
            // The seeds stay: a port whose last flow just left is one, and
            // its task rates must be cleared.
            dirty.extend(
                (0..self.fabric.links.len() as LinkId)
                    .filter(|&l| !self.fabric.links[l as usize].flows.is_empty()),
            );
        }
        for &l in &dirty {
            let link = &mut self.fabric.links[l as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                comp_links.push(l);
            }
        }
        dirty.clear();
        self.instant.dirty = dirty;
        let mut i = 0;
        while i < comp_links.len() {
            let l = comp_links[i];
            i += 1;
            for k in 0..self.fabric.links[l as usize].flows.len() {
                let fid = self.fabric.links[l as usize].flows[k];
                if self.fabric.fstamp[fid as usize] == stamp {
                    continue;
                }
                self.fabric.fstamp[fid as usize] = stamp;
                comp_flows.push(fid);
                let f = &self.fabric.flows[fid as usize];
                let (links, n) = (f.links, f.n as usize);
                for &l2 in &links[..n] {
                    if self.fabric.links[l2 as usize].stamp != stamp && self.follow(l2) {
                        self.fabric.links[l2 as usize].stamp = stamp;
                        comp_links.push(l2);
                    }
                }
            }
        }
        self.stats.flows_recomputed += comp_flows.len() as u64;
        if self.opts.policy == Policy::Baraat {
            // Every flow into a port of the component is in it (host links
            // are always followed): charge the port's counters at the old
            // rates; [`Engine::schedule_crossings`] sets the new ones.
            for &l in &comp_links {
                if let Some(p) = self.topo.port_of_down(l) {
                    self.charge_port(p);
                    self.baraat.ports[p as usize].rates.clear();
                    // The pending re-classification check is stale.
                    self.baraat.reclass.remove(p);
                }
            }
        }
        // Every flow leaves its group; the groups are settled after (most
        // dissolve whole: every member of a group crosses its bottleneck).
        let mut left = std::mem::take(&mut self.groups.fresh);
        left.clear();
        for &fid in &comp_flows {
            self.advance(fid);
            let f = &mut self.fabric.flows[fid as usize];
            let g = f.group;
            if g != NONE {
                f.group = NONE;
                let tid = f.tid;
                let grp = &mut self.groups.all[g as usize];
                f.rate = grp.rate;
                if grp.stamp != stamp {
                    grp.stamp = stamp;
                    left.push(g);
                }
                grp.live -= 1;
                group_task_dec(grp, tid);
            }
        }
        for &g in &left {
            let grp = &mut self.groups.all[g as usize];
            if grp.live == 0 {
                grp.members.clear();
                grp.tasks.clear();
                grp.head = 0;
                self.groups.finish.remove(g);
                self.groups.free.push(g);
            } else {
                self.group_reschedule(g);
            }
        }
        self.groups.fresh = left;
        // Priority keys.
        let mut keyed = std::mem::take(&mut self.scratch.keyed);
        keyed.clear();
        let mut narrow = true;
        for &fid in &comp_flows {
            let key = self.key_of(fid);
            self.fabric.flows[fid as usize].key = key;
            keyed.push((key, fid));
            narrow &= key.1 <= u32::MAX as u64;
        }
        // Local link indices and residual capacities.
        self.fill.residual.clear();
        self.fill.count.clear();
        for (j, &l) in comp_links.iter().enumerate() {
            self.fabric.links[l as usize].local = j as u32;
            self.fill.residual.push(self.topo.capacity(l) as f64);
            self.fill.count.push(0);
        }
        self.fill.frozen.clear();
        self.fill.sets.clear();
        self.fill.stop = None;
        let k0 = keyed.first().map(|k| k.0);
        if keyed.iter().all(|k| Some(k.0) == k0) {
            // One key (fair sharing): one water-fill, in id order.
            comp_flows.sort_unstable();
            self.fill_key_group(&comp_flows, stamp);
        } else if narrow {
            // Key groups in (key, id) order from a heap, until a link that
            // every flow of the component crosses is full: every flow left
            // then gets 0 whatever its key (the water-fill would freeze it
            // at level 0), so the rest need no ordering.
            let n = comp_flows.len() as u32;
            let mut total = std::mem::take(&mut self.scratch.total);
            total.clear();
            total.resize(comp_links.len(), 0);
            for &fid in &comp_flows {
                let f = &self.fabric.flows[fid as usize];
                for &l in &f.links[..f.n as usize] {
                    let link = &self.fabric.links[l as usize];
                    if link.stamp == stamp {
                        total[link.local as usize] += 1;
                    }
                }
            }
            let mut universal = std::mem::take(&mut self.scratch.universal);
            universal.clear();
            universal.extend((0..total.len() as u32).filter(|&j| total[j as usize] == n));
            self.scratch.total = total;
            let mut packed = std::mem::take(&mut self.scratch.packed);
            packed.clear();
            // Complemented: the max-heap pops the smallest (key, id) first.
            packed.extend(
                keyed
                    .iter()
                    .map(|&((a, b), f)| !((a as u128) << 64 | (b as u128) << 32 | f as u128)),
            );
            let mut heap = BinaryHeap::from(packed);
            let mut kgroup = std::mem::take(&mut self.scratch.kgroup);
            comp_flows.clear();
            while let Some(top) = heap.pop() {
                let key = !top >> 32;
                kgroup.clear();
                kgroup.push(!top as u32);
                while let Some(&nx) = heap.peek() {
                    if !nx >> 32 != key {
                        break;
                    }
                    kgroup.push(!nx as u32);
                    heap.pop();
                }
                self.fill_key_group(&kgroup, stamp);
                comp_flows.extend_from_slice(&kgroup);
                if let Some(&j) = universal
                    .iter()
                    .find(|&&j| self.fill.residual[j as usize] < 1.0)
                {
                    // Kept for a later promotion (see `Group::behind`).
                    if !heap.is_empty() {
                        self.fill.stop = Some(comp_links[j as usize]);
                        self.fill.stop_rest = heap.clone();
                    }
                    for x in heap.drain() {
                        let fid = !x as u32;
                        self.fabric.flows[fid as usize].rate = 0.0;
                        comp_flows.push(fid);
                    }
                    break;
                }
            }
            self.scratch.kgroup = kgroup;
            self.scratch.universal = universal;
            self.scratch.packed = heap.into_vec();
        } else {
            keyed.sort_unstable();
            comp_flows.clear();
            comp_flows.extend(keyed.iter().map(|k| k.1));
            let mut g = 0;
            while g < comp_flows.len() {
                let key = keyed[g].0;
                let mut e = g + 1;
                while e < keyed.len() && keyed[e].0 == key {
                    e += 1;
                }
                self.fill_key_group(&comp_flows[g..e], stamp);
                g = e;
            }
        }
        self.scratch.keyed = keyed;
        // New groups and finish events; Baraat's next threshold crossings.
        self.form_groups();
        self.keep_behind();
        if self.opts.policy == Policy::Baraat {
            self.schedule_crossings(&comp_flows);
        }
        self.scratch.comp_flows = comp_flows;
        self.scratch.comp_links = comp_links;
    }

    /// Turn the freeze sets of the last water-fill into rate groups (flows
    /// frozen at level 0 get none: they have no finish time).
    fn form_groups(&mut self) {
        let sets = std::mem::take(&mut self.fill.sets);
        let frozen = std::mem::take(&mut self.fill.frozen);
        let mut fresh = std::mem::take(&mut self.groups.fresh);
        fresh.clear();
        for (s, &(start, bottleneck, level)) in sets.iter().enumerate() {
            let end = sets.get(s + 1).map_or(frozen.len(), |x| x.0 as usize);
            let set = &frozen[start as usize..end];
            if level <= 0.0 {
                continue;
            }
            let g = match self.groups.free.pop() {
                Some(g) => g,
                None => {
                    self.groups.all.push(Group::default());
                    (self.groups.all.len() - 1) as u32
                }
            };
            let mut members = std::mem::take(&mut self.groups.all[g as usize].members);
            members.clear();
            members.extend_from_slice(set);
            // Every member was just brought up to `now`. Sorted by target
            // (the bits of a non-negative float order as integers), then id.
            let mut packed = std::mem::take(&mut self.scratch.packed);
            packed.clear();
            for &fid in &members {
                let f = &mut self.fabric.flows[fid as usize];
                f.target = f.rem + 0.0;
                packed.push((f.target.to_bits() as u128) << 32 | fid as u128);
            }
            packed.sort_unstable();
            members.clear();
            members.extend(packed.iter().map(|&p| p as u32));
            self.scratch.packed = packed;
            let mut tasks = std::mem::take(&mut self.groups.all[g as usize].tasks);
            tasks.clear();
            for (i, &fid) in members.iter().enumerate() {
                let f = &mut self.fabric.flows[fid as usize];
                f.group = g;
                f.gpos = i as u32;
                if self.opts.policy == Policy::Baraat {
                    group_task_inc(&mut tasks, f.tid);
                }
            }
            self.groups.all[g as usize] = Group {
                live: members.len() as u32,
                members,
                tasks,
                head: 0,
                rate: level,
                served: 0.0,
                at: self.events.now,
                stamp: 0,
                behind: None,
                bottleneck,
                fast: None,
            };
            self.group_reschedule(g);
            fresh.push(g);
        }
        self.fill.sets = sets;
        self.fill.frozen = frozen;
        // Every rate of the component is final: measure the new groups'
        // fast-path conditions.
        for &g in &fresh {
            self.groups.all[g as usize].fast = self.fast_conditions(g);
        }
        self.groups.fresh = fresh;
    }

    /// A flow leaves its rate group (it finished or is being regrouped).
    fn group_leave(&mut self, fid: u32) {
        let f = &mut self.fabric.flows[fid as usize];
        let g = f.group;
        if g == NONE {
            return;
        }
        f.group = NONE;
        f.rate = self.groups.all[g as usize].rate;
        let was_head = self.groups.all[g as usize].head == f.gpos;
        let tid = f.tid;
        let grp = &mut self.groups.all[g as usize];
        grp.live -= 1;
        group_task_dec(grp, tid);
        if grp.live == 0 {
            grp.members.clear();
            grp.tasks.clear();
            grp.head = 0;
            self.groups.finish.remove(g);
            self.groups.free.push(g);
        } else if was_head {
            self.group_reschedule(g);
        }
    }

    /// Move a group's head to its first live member and its heap entry to
    /// that member's finish time.
    fn group_reschedule(&mut self, g: u32) {
        let grp = &mut self.groups.all[g as usize];
        let mut h = grp.head as usize;
        loop {
            let f = &self.fabric.flows[grp.members[h] as usize];
            if f.group == g && f.gpos == h as u32 {
                break;
            }
            h += 1;
        }
        grp.head = h as u32;
        let t = group_finish(grp, &self.fabric.flows[grp.members[h] as usize]);
        if t == u64::MAX {
            self.groups.finish.remove(g);
        } else {
            self.groups.finish.set(g, t.max(self.events.now));
        }
    }

    /// The fast path's conditions on a group just formed, cached in it:
    /// every flow on `L` and on the members' other links crosses `L`
    /// (links that cannot bind do not count), and the capacity the flows
    /// outside the group leave on those links. None of this changes while
    /// the group lives except by its own departures (which only relax it):
    /// a flow arriving on one of these links, a re-classification at `L` or
    /// a departure from another group sharing them recomputes the component,
    /// which dissolves the group; and no other group with a positive rate
    /// shares them (it would cross `L`, full behind the group, or be ahead of
    /// it, where the group's flows would have to be at 0 behind its own
    /// bottleneck), so no other group's fast path changes them.
    fn fast_conditions(&mut self, g: u32) -> Option<FastPath> {
        let grp = &self.groups.all[g as usize];
        let bl = grp.bottleneck;
        // `L` must be followed by every recomputation that reaches one of
        // its flows (then it reaches the group and dissolves it): a switch
        // link that cannot bind is in a component only as a seed.
        if bl == NONE || !self.follow(bl) {
            return None;
        }
        // Baraat's classifier rates are per port: only when `L` is the
        // port's downlink are all of the port's rate changes on `L`.
        if self.opts.policy == Policy::Baraat {
            let head = &self.fabric.flows[grp.members[grp.head as usize] as usize];
            if self.topo.host_down(head.dst) != bl {
                return None;
            }
        }
        let stamp = self.next_stamp();
        let mut xl = std::mem::take(&mut self.scratch.xlinks);
        xl.clear();
        self.fabric.links[bl as usize].stamp = stamp;
        let mut min_cap = u64::MAX;
        let grp = &self.groups.all[g as usize];
        for &fid in &grp.members {
            let f = &self.fabric.flows[fid as usize];
            min_cap = min_cap.min(f.cap);
            for &l in &f.links[..f.n as usize] {
                let link = &mut self.fabric.links[l as usize];
                if link.stamp != stamp {
                    link.stamp = stamp;
                    if self.topo.is_host_link(l) || link.sum_caps > self.topo.capacity(l) {
                        xl.push(l);
                    }
                }
            }
        }
        let fp = self.fast_measure(g, bl, min_cap, &xl);
        self.scratch.xlinks = xl;
        fp
    }

    fn fast_measure(&self, g: u32, bl: LinkId, min_cap: u64, xl: &[LinkId]) -> Option<FastPath> {
        let crosses = |fid: u32| {
            let f = &self.fabric.flows[fid as usize];
            f.links[..f.n as usize].contains(&bl)
        };
        // What the water-fill left on `L`, plus the group's own share (the
        // water-fill just ran, every flow on `L` was in it, and `local` still
        // indexes its residuals).
        let grp = &self.groups.all[g as usize];
        let link = &self.fabric.links[bl as usize];
        let r_l = self.fill.residual[link.local as usize] + grp.live as f64 * grp.rate;
        let mut lmax = f64::INFINITY;
        for &l in xl {
            let link = &self.fabric.links[l as usize];
            let mut r = self.topo.capacity(l) as f64;
            let mut c = 0u32;
            for &fid in &link.flows {
                if !crosses(fid) {
                    return None;
                }
                if self.fabric.flows[fid as usize].group == g {
                    c += 1;
                } else {
                    r -= self.rate_of(fid);
                }
            }
            if c > 0 {
                lmax = lmax.min(r / c as f64);
            }
        }
        Some(FastPath {
            r_l,
            lmax,
            min_cap: min_cap as f64,
        })
    }

    /// Departures alone, all from one rate group `S` with bottleneck `L`
    /// whose conditions hold ([`Engine::fast_conditions`]): if `S`'s other
    /// links can carry the new level, the water-fill of the component gives
    /// `S` the level `L`'s capacity left by the flows outside `S`, split
    /// evenly, and leaves every other rate as it is. Why: flows ahead of `S`
    /// (higher priority, or frozen at a lower level of `S`'s key) do not see
    /// the departures (a departed flow was not frozen before `S`, so none of
    /// its links bound them); flows behind `S` that share a link with `S` or
    /// a departed flow cross `L`, which stays full, so they stay at 0; other
    /// flows share no link with `S`. Returns false (nothing changed except
    /// Baraat's byte counters brought up to date) when a condition fails:
    /// the caller recomputes the component.
    fn fast_departure(&mut self) -> bool {
        let g = self.instant.departed[0];
        if g == NONE || self.instant.departed.iter().any(|&d| d != g) {
            return false;
        }
        let grp = &self.groups.all[g as usize];
        let Some(fp) = grp.fast else { return false };
        let bl = grp.bottleneck;
        let emptied = grp.live == 0;
        let mut level = 0.0;
        if emptied {
            // Promotion of the flows behind, if they were kept.
            if grp.behind.is_none() || !self.follow(bl) {
                return false;
            }
        } else {
            // pFabric's keys (remaining size) change while a group is
            // served, so its members could split apart: re-key them all.
            if self.opts.policy == Policy::Pfabric {
                return false;
            }
            let n = grp.live as f64;
            level = fp.r_l.max(0.0) / n;
            // As the water-fill: a member's NIC or another link of the group
            // may not stop the members first, except by a tie (within float
            // rounding: they then stop at the same level, e.g. a last member
            // at its NIC rate, which fills its uplink and `L` at once); a
            // level is at least 1 bit/s; `L` stays full for the flows behind.
            let bound = fp.min_cap.min(fp.lmax);
            if bound < level {
                if bound < level * (1.0 - 1e-12) {
                    return false;
                }
                level = bound;
            }
            if level < 1.0 || (fp.r_l - level * n).abs() >= 0.5 {
                return false;
            }
        }
        // Baraat: the departures charged the port's counters up to now
        // (a task that turned heavy then made `L` dirty, so this path was
        // not taken); `L` is the port's downlink (`fast_conditions`).
        let baraat = self.opts.policy == Policy::Baraat;
        let port = self.topo.port_of_down(bl).unwrap_or(NONE);
        if emptied {
            let behind = self.groups.all[g as usize].behind.take().expect("checked");
            self.promote(bl, fp.r_l, behind);
            if baraat {
                // The promoted flows were at 0: their groups' rates add.
                for k in 0..self.groups.fresh.len() {
                    let h = self.groups.fresh[k];
                    self.group_rates_to_port(h, port, 0.0);
                }
            }
        } else {
            // The group's clock up to now, then the new rate.
            let now = self.events.now;
            let grp = &mut self.groups.all[g as usize];
            grp.served += grp.rate * (now - grp.at) as f64 / 8e9;
            grp.at = now;
            let old = grp.rate;
            grp.rate = level;
            self.group_reschedule(g);
            if baraat {
                self.group_rates_to_port(g, port, old);
            }
        }
        if baraat {
            self.schedule_port(port);
        }
        true
    }

    /// Baraat: group `g` (every member into `port`) moved from rate `old` to
    /// its current rate: its tasks' rates at the port follow.
    fn group_rates_to_port(&mut self, g: u32, port: u32, old: f64) {
        let grp = &self.groups.all[g as usize];
        let d = grp.rate - old;
        let tasks = std::mem::take(&mut self.groups.all[g as usize].tasks);
        for &(tid, c) in &tasks {
            self.port_rate_add(port, tid, c as f64 * d);
        }
        self.groups.all[g as usize].tasks = tasks;
    }

    /// Baraat: charge the classifier's byte counters at `port` up to now at
    /// the tasks' current rates (the fluid model's reservations are exactly
    /// the bytes sent, §4.3.1). True if a task turned heavy (its class and
    /// the next task's change).
    fn charge_port(&mut self, port: u32) -> bool {
        let now = self.events.now;
        let pt = &mut self.baraat.ports[port as usize];
        let dt = now - pt.at;
        pt.at = now;
        let Some(lm) = pt.lm.as_mut() else {
            return false;
        };
        let mut heavy = false;
        if dt > 0 {
            for &(tid, r) in &pt.rates {
                if r > 0.0 {
                    heavy |= lm.reserve(tid, r * dt as f64 / 8e9);
                }
            }
        }
        heavy
    }

    /// Baraat: the flows of task `tid` into `port` changed their summed rate
    /// by `d` bits/s (the port's counters must be charged up to now first).
    fn port_rate_add(&mut self, port: u32, tid: u64, d: f64) {
        let rates = &mut self.baraat.ports[port as usize].rates;
        match rates.iter().position(|r| r.0 == tid) {
            Some(i) => {
                rates[i].1 += d;
                // Under 1 bit/s is float residue of a task that stopped (a
                // water-fill level is 0 or at least 1 bit/s).
                if rates[i].1 < 0.5 {
                    rates.swap_remove(i);
                }
            }
            None if d >= 0.5 => rates.push((tid, d)),
            None => {}
        }
    }

    /// One flow `f` started at this instant (with departures elsewhere,
    /// already handled) and nothing else changed: if `f` has the key of a
    /// group `S` at `f`'s destination downlink `L` whose fast-path
    /// conditions hold, every flow on `f`'s other links crosses `L`, and
    /// neither they nor `f`'s NIC stop it below the new level, the
    /// water-fill gives `S` plus `f` the capacity `S` had on `L` split
    /// evenly and leaves every other rate as it is (the departure argument
    /// run backwards: `f` is frozen with `S`). Not pFabric (keys move), nor
    /// Baraat when `f` is its task's first flow at the port (the port's
    /// classes change). The start of a mid aggregator's response to the top
    /// aggregator is this case.
    fn fast_arrival(&mut self) -> bool {
        let baraat = self.opts.policy == Policy::Baraat;
        if self.opts.policy == Policy::Pfabric
            || (baraat && self.instant.new_at_port)
            || self.instant.started.len() != 1
        {
            return false;
        }
        let fid = self.instant.started[0];
        let f = &self.fabric.flows[fid as usize];
        let (links, n) = (f.links, f.n as usize);
        if !self.instant.dirty.iter().all(|l| links[..n].contains(l)) {
            return false;
        }
        let bl = links[n - 1];
        let key = self.key_of(fid);
        // The group at `L` with `f`'s key.
        let Some(g) = self.fabric.links[bl as usize].flows.iter().find_map(|&h| {
            let x = &self.fabric.flows[h as usize];
            (h != fid && x.group != NONE && x.key == key).then_some(x.group)
        }) else {
            return false;
        };
        let grp = &self.groups.all[g as usize];
        let Some(mut fp) = grp.fast else { return false };
        if grp.bottleneck != bl {
            return false;
        }
        let live = grp.live as f64 + 1.0;
        let cap = self.fabric.flows[fid as usize].cap as f64;
        fp.min_cap = fp.min_cap.min(cap);
        for &l in &links[..n - 1] {
            if !self.follow(l) {
                continue;
            }
            let mut r = self.topo.capacity(l) as f64;
            let mut c = 1u32;
            for &h in &self.fabric.links[l as usize].flows {
                if h == fid {
                    continue;
                }
                let x = &self.fabric.flows[h as usize];
                if !x.links[..x.n as usize].contains(&bl) {
                    return false;
                }
                if x.group == g {
                    c += 1;
                } else {
                    r -= self.rate_of(h);
                }
            }
            fp.lmax = fp.lmax.min(r / c as f64);
        }
        let mut level = fp.r_l.max(0.0) / live;
        let bound = fp.min_cap.min(fp.lmax);
        if bound < level {
            if bound < level * (1.0 - 1e-12) {
                return false;
            }
            level = bound;
        }
        if level < 1.0 || (fp.r_l - level * live).abs() >= 0.5 {
            return false;
        }
        // Baraat: the port's byte counters up to date first; give up if a
        // task turned heavy (now, or at a departure of this instant).
        let port = self.topo.port_of_down(bl).unwrap_or(NONE);
        if baraat && (self.instant.turned_heavy || self.charge_port(port)) {
            return false;
        }
        // Apply: the clock up to now, `f` in target order, the new rate.
        let now = self.events.now;
        let grp = &mut self.groups.all[g as usize];
        grp.served += grp.rate * (now - grp.at) as f64 / 8e9;
        grp.at = now;
        let old = grp.rate;
        grp.rate = level;
        grp.fast = Some(fp);
        let served = grp.served;
        let mut members = std::mem::take(&mut grp.members);
        let head = grp.head as usize;
        let mut packed = std::mem::take(&mut self.scratch.packed);
        packed.clear();
        for (i, &m) in members.iter().enumerate().skip(head) {
            let x = &self.fabric.flows[m as usize];
            if x.group == g && x.gpos == i as u32 {
                packed.push(((x.target + 0.0).to_bits() as u128) << 32 | m as u128);
            }
        }
        let f = &mut self.fabric.flows[fid as usize];
        f.last = now;
        f.target = served + f.rem;
        packed.push(((f.target + 0.0).to_bits() as u128) << 32 | fid as u128);
        packed.sort_unstable();
        members.clear();
        members.extend(packed.iter().map(|&p| p as u32));
        self.scratch.packed = packed;
        for (i, &m) in members.iter().enumerate() {
            let x = &mut self.fabric.flows[m as usize];
            x.group = g;
            x.gpos = i as u32;
        }
        self.fabric.flows[fid as usize].key = key;
        if baraat {
            // The members' tasks move from `old` to `level`; then `f`'s.
            self.group_rates_to_port(g, port, old);
            let tid = self.fabric.flows[fid as usize].tid;
            self.port_rate_add(port, tid, level);
            group_task_inc(&mut self.groups.all[g as usize].tasks, tid);
        }
        let grp = &mut self.groups.all[g as usize];
        grp.live += 1;
        grp.head = 0;
        grp.members = members;
        self.group_reschedule(g);
        if baraat {
            self.schedule_port(port);
        }
        self.instant.dirty.clear();
        self.stats.fast_arrivals += 1;
        true
    }

    /// After a water-fill that stopped at a full link `L` crossed by every
    /// flow of the component: the flows left behind go with the last group
    /// formed at `L`.
    fn keep_behind(&mut self) {
        let Some(l) = self.fill.stop.take() else {
            return;
        };
        // The last group formed at `L` (one freeze set can be split in
        // groups by bottleneck).
        let at_l = self
            .groups
            .fresh
            .iter()
            .rev()
            .find(|&&g| self.groups.all[g as usize].bottleneck == l);
        if let Some(&g) = at_l {
            if self.groups.all[g as usize].fast.is_some() {
                let rest = std::mem::take(&mut self.fill.stop_rest);
                self.groups.all[g as usize].behind = Some(rest);
            }
        }
    }

    /// The last group with a positive rate at `L` emptied (its fast-path
    /// conditions held): the flows behind it, all crossing `L` and at 0
    /// until now, take `L`'s capacity left by the flows ahead (`r_l`) in key
    /// order. This is the component's water-fill: the flows ahead do not see
    /// the departures (see [`Engine::fast_departure`]), keys of flows at 0
    /// do not change (pFabric's remaining size included), every flow on the
    /// links of a flow behind crosses `L` (the component is `L`'s), and once
    /// `L` is full again every flow left stays at 0.
    fn promote(&mut self, bl: LinkId, r_l: f64, mut heap: BinaryHeap<u128>) {
        self.stats.promotions += 1;
        let stamp = self.next_stamp();
        let mut links = std::mem::take(&mut self.scratch.comp_links);
        links.clear();
        self.fill.residual.clear();
        self.fill.count.clear();
        self.fabric.links[bl as usize].stamp = stamp;
        self.fabric.links[bl as usize].local = 0;
        links.push(bl);
        self.fill.residual.push(r_l);
        self.fill.count.push(0);
        self.fill.frozen.clear();
        self.fill.sets.clear();
        let mut kgroup = std::mem::take(&mut self.scratch.kgroup);
        while self.fill.residual[0] >= 1.0 {
            let Some(top) = heap.pop() else { break };
            let key = !top >> 32;
            kgroup.clear();
            kgroup.push(!top as u32);
            while let Some(&nx) = heap.peek() {
                if !nx >> 32 != key {
                    break;
                }
                kgroup.push(!nx as u32);
                heap.pop();
            }
            for &fid in &kgroup {
                self.advance(fid);
                let f = &self.fabric.flows[fid as usize];
                let (fl, n) = (f.links, f.n as usize);
                for &l in &fl[..n] {
                    if self.fabric.links[l as usize].stamp == stamp || !self.follow(l) {
                        continue;
                    }
                    let mut r = self.topo.capacity(l) as f64;
                    for &h in &self.fabric.links[l as usize].flows {
                        r -= self.rate_of(h);
                    }
                    let link = &mut self.fabric.links[l as usize];
                    link.stamp = stamp;
                    link.local = links.len() as u32;
                    links.push(l);
                    self.fill.residual.push(r);
                    self.fill.count.push(0);
                }
            }
            self.fill_key_group(&kgroup, stamp);
        }
        self.scratch.kgroup = kgroup;
        self.scratch.comp_links = links;
        self.form_groups();
        if !heap.is_empty() && self.fill.residual[0] < 1.0 {
            self.fill.stop_rest = heap;
            self.fill.stop = Some(bl);
            self.keep_behind();
        }
    }

    /// Tests: every flow's rate against a from-scratch recomputation.
    fn compare_rates(&self, reference: &Engine) {
        for (fid, a) in self.fabric.flows.iter().enumerate() {
            if !a.alive {
                continue;
            }
            let (a, b) = (self.rate_of(fid as u32), reference.rate_of(fid as u32));
            assert!(
                (a - b).abs() <= 1e-6 * a.max(b) + 2.0,
                "fast path: flow {fid} at {a} bps, from scratch {b} bps (t = {} ns)",
                self.events.now
            );
        }
    }

    /// Panics unless the rate groups' invariants hold (see [`Group`]).
    pub fn check_invariants(&self) {
        let mut live = vec![0u32; self.groups.all.len()];
        for (fid, f) in self.fabric.flows.iter().enumerate() {
            if !f.alive {
                assert_eq!(f.group, NONE, "finished flow {fid} in a group");
                continue;
            }
            if f.group == NONE {
                assert!(
                    f.rate == 0.0,
                    "flow {fid} at {} bps without a group",
                    f.rate
                );
                continue;
            }
            let grp = &self.groups.all[f.group as usize];
            assert_eq!(grp.members[f.gpos as usize], fid as u32);
            assert!(f.gpos >= grp.head, "flow {fid} before its group's head");
            live[f.group as usize] += 1;
        }
        for (g, grp) in self.groups.all.iter().enumerate() {
            assert_eq!(grp.live, live[g], "group {g}: live count");
            let entry = self.groups.finish.get(g as u32);
            if grp.live == 0 {
                assert_eq!(entry, None, "empty group {g} in the heap");
                continue;
            }
            let mut last = 0.0;
            let mut first = None;
            for (i, &fid) in grp.members.iter().enumerate().skip(grp.head as usize) {
                let f = &self.fabric.flows[fid as usize];
                if f.group == g as u32 && f.gpos == i as u32 {
                    assert!(f.target >= last, "group {g}: members out of target order");
                    last = f.target;
                    first.get_or_insert(group_finish(grp, f));
                }
            }
            let head = &self.fabric.flows[grp.members[grp.head as usize] as usize];
            assert!(
                head.group == g as u32 && head.gpos == grp.head,
                "group {g}: stale head"
            );
            let first = first.expect("live member");
            match entry {
                None => assert_eq!(first, u64::MAX, "group {g} missing from the heap"),
                Some(t) => assert!(
                    t == first || (first < t && t <= self.events.now),
                    "group {g}: heap entry {t}, first finish {first}"
                ),
            }
        }
        assert_eq!(
            self.groups.finish.len(),
            self.groups
                .all
                .iter()
                .enumerate()
                .filter(|(g, _)| self.groups.finish.get(*g as u32).is_some())
                .count()
        );
        if self.opts.policy == Policy::Baraat {
            self.check_task_rates();
        }
    }

    /// Baraat: each group's per-task member counts and each port's per-task
    /// rates match the flows.
    fn check_task_rates(&self) {
        let sorted = |v: &[(u64, u32)]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        for (g, grp) in self.groups.all.iter().enumerate() {
            let mut want: Vec<(u64, u32)> = Vec::new();
            for (i, &fid) in grp.members.iter().enumerate() {
                let f = &self.fabric.flows[fid as usize];
                if f.group == g as u32 && f.gpos == i as u32 {
                    group_task_inc(&mut want, f.tid);
                }
            }
            assert_eq!(sorted(&grp.tasks), sorted(&want), "group {g}: task counts");
        }
        for (p, port) in self.baraat.ports.iter().enumerate() {
            let mut want: Vec<(u64, f64)> = Vec::new();
            for &fid in &self.fabric.links[self.topo.host_down(p as u32) as usize].flows {
                let (tid, r) = (self.fabric.flows[fid as usize].tid, self.rate_of(fid));
                match want.iter_mut().find(|w| w.0 == tid) {
                    Some(w) => w.1 += r,
                    None => want.push((tid, r)),
                }
            }
            want.retain(|w| w.1 >= 0.5);
            assert_eq!(
                port.rates.len(),
                want.len(),
                "port {p}: task rates {:?}, flows say {want:?}",
                port.rates
            );
            for &(tid, r) in &want {
                let got = port.rates.iter().find(|x| x.0 == tid).map_or(0.0, |x| x.1);
                assert!(
                    (got - r).abs() <= 1e-6 * r + 1.0,
                    "port {p} task {tid}: rate {got}, flows say {r}"
                );
            }
        }
    }

    fn key_of(&self, fid: u32) -> (u64, u64) {
        let f = &self.fabric.flows[fid as usize];
        let t = self.tasks.slots[f.task as usize]
            .as_ref()
            .expect("live task");
        match self.opts.policy {
            Policy::Fair => (0, 0),
            // Remaining size, rounded up to whole bytes: flows within a byte
            // of each other share.
            Policy::Pfabric => (f.rem.ceil() as u64, 0),
            Policy::Orchestra => (t.index, 0),
            Policy::Stf => (t.total_bytes, t.index),
            Policy::Baraat => {
                let lm = self.baraat.ports[f.dst as usize].lm.as_ref();
                let leader = lm.and_then(|lm| lm.leader(t.task_id)).unwrap_or(t.task_id);
                (leader, 0)
            }
        }
    }

    /// Water-fill one key group. A flow alone at its key behind a full link
    /// gets 0 without it, as the water-fill would give it (a level under
    /// 1 bit/s is 0).
    fn fill_key_group(&mut self, group: &[u32], stamp: u32) {
        if group.len() == 1 && self.blocked(group[0], stamp) {
            self.fabric.flows[group[0] as usize].rate = 0.0;
        } else {
            self.fill_group(group, stamp);
        }
    }

    /// Does the flow cross a component link with less than 1 bit/s left?
    fn blocked(&self, fid: u32, stamp: u32) -> bool {
        let f = &self.fabric.flows[fid as usize];
        f.links[..f.n as usize].iter().any(|&l| {
            let link = &self.fabric.links[l as usize];
            link.stamp == stamp && self.fill.residual[link.local as usize] < 1.0
        })
    }

    /// Max-min water-filling of one priority group on the capacity left by
    /// higher groups: raise every unfrozen flow's rate together; when a link
    /// runs out, freeze the flows crossing it; a flow also stops at its NIC
    /// rate.
    fn fill_group(&mut self, group: &[u32], stamp: u32) {
        let mut unfrozen = std::mem::take(&mut self.fill.unfrozen);
        let mut touched = std::mem::take(&mut self.fill.touched);
        unfrozen.clear();
        unfrozen.extend_from_slice(group);
        touched.clear();
        for &fid in group {
            let f = &self.fabric.flows[fid as usize];
            for &l in &f.links[..f.n as usize] {
                let link = &self.fabric.links[l as usize];
                if link.stamp == stamp {
                    let j = link.local as usize;
                    if self.fill.count[j] == 0 {
                        touched.push(j as u32);
                    }
                    self.fill.count[j] += 1;
                }
            }
        }
        let mut level = 0.0f64;
        while !unfrozen.is_empty() {
            let start = self.fill.frozen.len();
            // The level at which the next link saturates, or a flow hits its cap.
            let mut next = f64::INFINITY;
            for &j in &touched {
                let c = self.fill.count[j as usize];
                if c > 0 {
                    next = next.min(self.fill.residual[j as usize].max(0.0) / c as f64);
                }
            }
            for &fid in &unfrozen {
                next = next.min(self.fabric.flows[fid as usize].cap as f64);
            }
            // Float residue of a saturated link (a few µbps) is no capacity:
            // anything under 1 bit/s is zero, or a starved flow would get a
            // finish time centuries away instead of waiting for a recompute.
            if next < 1.0 {
                next = 0.0;
            }
            level = level.max(next);
            // 1 bit/s absolute slack, consistent with the snap to zero above.
            let tol = level * 1e-12 + 1.0;
            let mut k = 0;
            while k < unfrozen.len() {
                let fid = unfrozen[k];
                let f = &self.fabric.flows[fid as usize];
                let mut freeze = f.cap as f64 <= level + tol;
                if !freeze {
                    for &l in &f.links[..f.n as usize] {
                        let link = &self.fabric.links[l as usize];
                        if link.stamp == stamp {
                            let j = link.local as usize;
                            if self.fill.residual[j].max(0.0) / self.fill.count[j] as f64
                                <= level + tol
                            {
                                freeze = true;
                                break;
                            }
                        }
                    }
                }
                if freeze {
                    unfrozen.swap_remove(k);
                    self.set_rate(fid, level, stamp);
                    self.fill.frozen.push(fid);
                } else {
                    k += 1;
                }
            }
            // The freeze set of this level, split by bottleneck: for each
            // member, of the links it filled the one with the most flows
            // (flows at the same level behind different links, e.g. two
            // racks with as many flows, are different groups).
            if self.fill.frozen.len() > start {
                let mut keyed = std::mem::take(&mut self.fill.bkeyed);
                keyed.clear();
                for &fid in &self.fill.frozen[start..] {
                    let f = &self.fabric.flows[fid as usize];
                    let mut sat = NONE;
                    let mut most = 0;
                    for &l in &f.links[..f.n as usize] {
                        let link = &self.fabric.links[l as usize];
                        if link.stamp == stamp
                            && self.fill.residual[link.local as usize] < 1.0 + level * 1e-9
                            && link.flows.len() > most
                        {
                            sat = l;
                            most = link.flows.len();
                        }
                    }
                    keyed.push((sat as u64) << 32 | fid as u64);
                }
                keyed.sort_unstable();
                let mut i = 0;
                while i < keyed.len() {
                    let sat = (keyed[i] >> 32) as u32;
                    self.fill.sets.push(((start + i) as u32, sat, level));
                    while i < keyed.len() && (keyed[i] >> 32) as u32 == sat {
                        self.fill.frozen[start + i] = keyed[i] as u32;
                        i += 1;
                    }
                }
                self.fill.bkeyed = keyed;
            }
        }
        for &j in &touched {
            self.fill.count[j as usize] = 0;
        }
        self.fill.unfrozen = unfrozen;
        self.fill.touched = touched;
    }

    /// Freeze a flow at `rate`: take it from its links' residuals. Freezing
    /// inside the scan above is safe: a saturated link keeps exactly `level`
    /// of residual per remaining unfrozen flow, so its later flows still
    /// pass the saturation test, and an unsaturated link stays above it.
    fn set_rate(&mut self, fid: u32, rate: f64, stamp: u32) {
        let f = &mut self.fabric.flows[fid as usize];
        f.rate = rate;
        let (links, n) = (f.links, f.n as usize);
        for &l in &links[..n] {
            let link = &self.fabric.links[l as usize];
            if link.stamp == stamp {
                let j = link.local as usize;
                self.fill.residual[j] -= rate;
                self.fill.count[j] -= 1;
            }
        }
    }

    /// Baraat: for every port of `comp_flows` (which must hold every flow
    /// into those ports, charged and cleared by the recomputation), each
    /// task's rate into the port and the next time a task there crosses the
    /// heavy threshold at those rates.
    fn schedule_crossings(&mut self, comp_flows: &[u32]) {
        // (port, task id) and the rate of each moving flow, then summed per
        // pair.
        let mut rates = std::mem::take(&mut self.baraat.crossing);
        rates.clear();
        for &fid in comp_flows {
            let r = self.rate_of(fid);
            if r > 0.0 {
                let f = &self.fabric.flows[fid as usize];
                rates.push(((f.dst as u128) << 64 | f.tid as u128, r));
            }
        }
        rates.sort_unstable_by_key(|r| r.0);
        let mut lo = 0;
        while lo < rates.len() {
            let key = rates[lo].0;
            let mut hi = lo;
            let mut sum = 0.0;
            while hi < rates.len() && rates[hi].0 == key {
                sum += rates[hi].1;
                hi += 1;
            }
            let p = (key >> 64) as u32;
            self.baraat.ports[p as usize].rates.push((key as u64, sum));
            lo = hi;
            if hi == rates.len() || (rates[hi].0 >> 64) as u32 != p {
                self.schedule_port(p);
            }
        }
        self.baraat.crossing = rates;
    }

    /// Baraat: the next time a task at `port` crosses the heavy threshold at
    /// the port's current task rates (replacing the port's pending check).
    fn schedule_port(&mut self, port: u32) {
        let pt = &self.baraat.ports[port as usize];
        let dt = pt.lm.as_ref().and_then(|lm| {
            let rates = &pt.rates;
            lm.next_crossing_ns(|id| rates.iter().find(|r| r.0 == id).map_or(0.0, |r| r.1))
        });
        match dt.filter(|d| *d < 1e18) {
            Some(dt) => self
                .baraat
                .reclass
                .set(port, self.events.now + dt.ceil().max(1.0) as u64),
            None => self.baraat.reclass.remove(port),
        }
    }

    /// A flow's current rate (bits/s): its group's, 0 without one.
    fn rate_of(&self, fid: u32) -> f64 {
        match self.fabric.flows[fid as usize].group {
            NONE => self.fabric.flows[fid as usize].rate,
            g => self.groups.all[g as usize].rate,
        }
    }

    /// Sum of the current rates (bits/s) of the flows on a link.
    pub fn link_load(&self, l: LinkId) -> f64 {
        self.fabric.links[l as usize]
            .flows
            .iter()
            .map(|&f| self.rate_of(f))
            .sum()
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
}

/// Baraat: one more live member of task `tid` in a group's per-task counts.
fn group_task_inc(tasks: &mut Vec<(u64, u32)>, tid: u64) {
    match tasks.iter_mut().find(|t| t.0 == tid) {
        Some(t) => t.1 += 1,
        None => tasks.push((tid, 1)),
    }
}

/// Baraat: one live member of task `tid` fewer (other policies keep no
/// per-task counts: nothing to find).
fn group_task_dec(grp: &mut Group, tid: u64) {
    if let Some(i) = grp.tasks.iter().position(|t| t.0 == tid) {
        grp.tasks[i].1 -= 1;
        if grp.tasks[i].1 == 0 {
            grp.tasks.swap_remove(i);
        }
    }
}

/// The finish time of a flow with `rem` bytes left at `rate` bits/s from
/// `now`, rounded up to the next ns; `u64::MAX` if it does not move.
/// When a member's group clock reaches its target.
fn group_finish(g: &Group, f: &Flow) -> u64 {
    finish_time(g.at, f.target - g.served, g.rate)
}

#[inline]
fn finish_time(now: u64, rem: f64, rate: f64) -> u64 {
    if rate <= 0.0 {
        return u64::MAX;
    }
    let x = rem * 8e9 / rate - 1e-3;
    if x <= 0.0 {
        return now;
    }
    if x.is_nan() || x >= 1e18 {
        return u64::MAX;
    }
    // ceil(x) for 0 < x < 1e18, without a libm call.
    let i = x as u64;
    let dt = if (i as f64) < x { i + 1 } else { i };
    if dt < 1_000_000_000_000_000_000 {
        now + dt
    } else {
        u64::MAX
    }
}
