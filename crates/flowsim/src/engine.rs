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
//! Allocation (`allocate`) is strict priority between priority keys and
//! max-min fairness within a key, computed by water-filling key by key on the
//! capacity the higher keys left: this is the fixed point that SPC's
//! explicit feedback converges to (§4.3.2: full capacity to the top class,
//! leftover to the next, max-min within a class; Alg. 2 makes a flow
//! bottlenecked elsewhere demand only its bottleneck share, so the leftover
//! goes to lower classes: work conservation). Every policy is a choice of key.

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
    /// Baraat: a task may have crossed the heavy threshold at a port.
    Reclass { host: u32, gen: u32 },
}

#[derive(Clone, Debug)]
struct Flow {
    task: u32,
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
    gen: u32,
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
}

pub struct Engine {
    topo: Topology,
    opts: EngineOpts,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Finish times of active flows, re-keyed in place.
    finish: IndexedHeap,
    links: Vec<Link>,
    flows: Vec<Flow>,
    /// Component stamps of the flows, apart from `flows` so that the
    /// component walk (which sees every flow once per link) stays in cache.
    fstamp: Vec<u32>,
    free_flows: Vec<u32>,
    tasks: Vec<Option<Task>>,
    free_tasks: Vec<u32>,
    ports: Vec<Port>,
    stamp: u32,
    dirty: Vec<LinkId>,
    // Scratch for recomputation.
    comp_flows: Vec<u32>,
    comp_links: Vec<LinkId>,
    keyed: Vec<((u64, u64), u32)>,
    unfrozen: Vec<u32>,
    touched: Vec<u32>,
    /// Recompute every active flow at every change (the from-scratch
    /// reference the component recomputation is tested against).
    pub full_recompute: bool,
    residual: Vec<f64>,
    count: Vec<u32>,
    prev_rates: Vec<f64>,
    results: Vec<TaskResult>,
    pub stats: EngineStats,
}

impl Engine {
    pub fn new(topo: Topology, opts: EngineOpts) -> Self {
        let nl = topo.links() as usize;
        let hosts = topo.hosts as usize;
        Engine {
            topo,
            opts,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            finish: IndexedHeap::new(),
            links: vec![Link::default(); nl],
            flows: Vec::new(),
            fstamp: Vec::new(),
            free_flows: Vec::new(),
            tasks: Vec::new(),
            free_tasks: Vec::new(),
            ports: vec![Port::default(); hosts],
            stamp: 0,
            dirty: Vec::new(),
            comp_flows: Vec::new(),
            comp_links: Vec::new(),
            keyed: Vec::new(),
            unfrozen: Vec::new(),
            touched: Vec::new(),
            full_recompute: false,
            residual: Vec::new(),
            count: Vec::new(),
            prev_rates: Vec::new(),
            results: Vec::new(),
            stats: EngineStats::default(),
        }
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    /// Run every task of `source` (sorted by arrival) to completion.
    pub fn run(&mut self, source: impl Iterator<Item = TaskSpec>) -> Vec<TaskResult> {
        let mut source = source.peekable();
        let mut index = 0u64;
        if let Some(t) = source.peek() {
            self.push(t.arrival_ns, Ev::Arrival);
        }
        loop {
            let te = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let tf = self.finish.peek().map(|(t, _)| t);
            let t = match (te, tf) {
                (None, None) => break,
                (Some(a), None) | (None, Some(a)) => a,
                (Some(a), Some(b)) => a.min(b),
            };
            self.now = t;
            // Every event of this instant, then one recomputation.
            while let Some((t2, fid)) = self.finish.peek() {
                if t2 != t {
                    break;
                }
                self.finish.pop();
                self.stats.events += 1;
                self.finish_flow(fid);
            }
            while let Some(&Reverse((t2, _, ev))) = self.heap.peek() {
                if t2 != t {
                    break;
                }
                self.heap.pop();
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
                    Ev::Reclass { host, gen } => {
                        if self.ports[host as usize].gen == gen {
                            let l = self.topo.host_down(host);
                            self.dirty.push(l);
                        }
                    }
                }
            }
            if !self.dirty.is_empty() {
                self.recompute();
            }
        }
        std::mem::take(&mut self.results)
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
            arrival: spec.arrival_ns.max(self.now),
            total_bytes,
            left: spec.flows.len() as u32,
            specs: spec.flows,
            gate_left,
            ports: Vec::new(),
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
            self.push(self.now + delay, Ev::Start { task, spec });
        }
    }

    fn start_flow(&mut self, task: u32, spec: u32) {
        let t = self.tasks[task as usize].as_mut().expect("live task");
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
            dst,
            links,
            pos: [0; MAX_HOPS],
            n: n as u8,
            cap,
            rem: bytes as f64,
            rate: 0.0,
            last: self.now,
            gen: 0,
            key: (0, 0),
            spec,
            alive: true,
        };
        let id = match self.free_flows.pop() {
            Some(i) => {
                let gen = self.flows[i as usize].gen;
                self.flows[i as usize] = Flow { gen: gen + 1, ..f };
                i
            }
            None => {
                self.flows.push(f);
                self.fstamp.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        self.stats.flows += 1;
        for (h, &l) in links[..n].iter().enumerate() {
            let link = &mut self.links[l as usize];
            self.flows[id as usize].pos[h] = link.flows.len() as u32;
            link.flows.push(id);
            link.sum_caps += cap;
            self.dirty.push(l);
        }
        if self.opts.policy == Policy::Baraat {
            let thr = self.opts.heavy_threshold;
            self.ports[dst as usize]
                .lm
                .get_or_insert_with(|| FifoLm::new(thr))
                .add_flow(task_id);
        }
    }

    /// Bring a flow's remaining bytes up to `now`, charging the bytes to its
    /// task at the destination port (Baraat's bytes-reserved counter: in the
    /// fluid model a reservation is exactly what is sent).
    fn advance(&mut self, id: u32) {
        let now = self.now;
        let f = &mut self.flows[id as usize];
        if f.last == now {
            return;
        }
        let sent = (f.rate * (now - f.last) as f64 / 8e9).min(f.rem);
        f.rem -= sent;
        f.last = now;
        if sent > 0.0 && self.opts.policy == Policy::Baraat {
            let task_id = self.tasks[f.task as usize].as_ref().expect("live").task_id;
            if let Some(lm) = self.ports[f.dst as usize].lm.as_mut() {
                lm.reserve(task_id, sent);
            }
        }
    }

    fn finish_flow(&mut self, id: u32) {
        self.advance(id);
        let f = &mut self.flows[id as usize];
        f.alive = false;
        self.finish.remove(id);
        let (task, spec, dst, n, links, pos, cap) =
            (f.task, f.spec, f.dst, f.n, f.links, f.pos, f.cap);
        for h in 0..n as usize {
            let l = links[h];
            let link = &mut self.links[l as usize];
            let p = pos[h] as usize;
            link.flows.swap_remove(p);
            link.sum_caps -= cap;
            if p < link.flows.len() {
                let moved = link.flows[p];
                let mf = &mut self.flows[moved as usize];
                let hop = mf.links[..mf.n as usize]
                    .iter()
                    .position(|&x| x == l)
                    .expect("flow is on the link");
                mf.pos[hop] = p as u32;
            }
            self.dirty.push(l);
        }
        self.free_flows.push(id);
        if self.opts.policy == Policy::Baraat {
            let task_id = self.tasks[task as usize].as_ref().expect("live").task_id;
            if let Some(lm) = self.ports[dst as usize].lm.as_mut() {
                lm.remove_flow(task_id);
            }
        }
        self.flow_done(task, spec);
    }

    fn flow_done(&mut self, task: u32, spec: u32) {
        let t = self.tasks[task as usize].as_mut().expect("live task");
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
        if self.tasks[task as usize]
            .as_ref()
            .is_some_and(|t| t.left == 0)
        {
            self.complete_task(task);
        }
    }

    fn complete_task(&mut self, slot: u32) {
        let t = self.tasks[slot as usize].take().expect("live task");
        self.results.push(TaskResult {
            index: t.index,
            task_id: t.task_id,
            arrival_ns: t.arrival,
            completion_ns: self.now - t.arrival,
            bytes: t.total_bytes,
        });
        for &p in &t.ports {
            if let Some(lm) = self.ports[p as usize].lm.as_mut() {
                lm.forget(t.task_id);
                // The classes at this port changed: recompute there.
                self.dirty.push(self.topo.host_down(p));
            }
        }
        self.free_tasks.push(slot);
    }

    /// Can this link limit its flows? Host links always count (see module doc).
    fn follow(&self, l: LinkId) -> bool {
        self.topo.is_host_link(l) || self.links[l as usize].sum_caps > self.topo.capacity(l)
    }

    fn recompute(&mut self) {
        self.stats.recomputes += 1;
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            for l in &mut self.links {
                l.stamp = 0;
            }
            self.fstamp.fill(0);
            self.stamp = 1;
        }
        let stamp = self.stamp;
        let mut comp_flows = std::mem::take(&mut self.comp_flows);
        let mut comp_links = std::mem::take(&mut self.comp_links);
        comp_flows.clear();
        comp_links.clear();
        // Seeds are followed even when they cannot bind any more: their
        // flows may have been held back by them until now.
        let mut dirty = std::mem::take(&mut self.dirty);
        if self.full_recompute {
            dirty.clear();
            dirty.extend(
                (0..self.links.len() as LinkId)
                    .filter(|&l| !self.links[l as usize].flows.is_empty()),
            );
        }
        for &l in &dirty {
            let link = &mut self.links[l as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                comp_links.push(l);
            }
        }
        dirty.clear();
        self.dirty = dirty;
        let mut i = 0;
        while i < comp_links.len() {
            let l = comp_links[i];
            i += 1;
            for k in 0..self.links[l as usize].flows.len() {
                let fid = self.links[l as usize].flows[k];
                if self.fstamp[fid as usize] == stamp {
                    continue;
                }
                self.fstamp[fid as usize] = stamp;
                comp_flows.push(fid);
                let f = &self.flows[fid as usize];
                let (links, n) = (f.links, f.n as usize);
                for &l2 in &links[..n] {
                    if self.links[l2 as usize].stamp != stamp && self.follow(l2) {
                        self.links[l2 as usize].stamp = stamp;
                        comp_links.push(l2);
                    }
                }
            }
        }
        self.stats.flows_recomputed += comp_flows.len() as u64;
        for &fid in &comp_flows {
            self.advance(fid);
        }
        // Priority keys, sorted beside the ids (no indirection while sorting).
        let mut keyed = std::mem::take(&mut self.keyed);
        keyed.clear();
        for &fid in &comp_flows {
            let key = self.key_of(fid);
            self.flows[fid as usize].key = key;
            keyed.push((key, fid));
        }
        keyed.sort_unstable();
        comp_flows.clear();
        comp_flows.extend(keyed.iter().map(|k| k.1));
        // Local link indices and residual capacities.
        self.residual.clear();
        self.count.clear();
        for (j, &l) in comp_links.iter().enumerate() {
            self.links[l as usize].local = j as u32;
            self.residual.push(self.topo.capacity(l) as f64);
            self.count.push(0);
        }
        let mut prev = std::mem::take(&mut self.prev_rates);
        prev.clear();
        prev.extend(comp_flows.iter().map(|&f| self.flows[f as usize].rate));
        let mut g = 0;
        while g < comp_flows.len() {
            let key = keyed[g].0;
            let mut e = g + 1;
            while e < keyed.len() && keyed[e].0 == key {
                e += 1;
            }
            self.fill_group(&comp_flows[g..e], stamp);
            g = e;
        }
        self.keyed = keyed;
        // New finish events; Baraat's next threshold crossings.
        for (k, &fid) in comp_flows.iter().enumerate() {
            let f = &mut self.flows[fid as usize];
            // Same rate, same finish time: the pending event stays valid
            // (a flow that just started has rate 0 before and needs one).
            if f.rate == prev[k] && f.rate > 0.0 {
                continue;
            }
            let dt = if f.rate > 0.0 {
                (f.rem * 8e9 / f.rate - 1e-3).ceil().max(0.0)
            } else {
                f64::INFINITY
            };
            if dt < 1e18 {
                self.finish.set(fid, self.now + dt as u64);
            } else {
                self.finish.remove(fid);
            }
        }
        self.prev_rates = prev;
        if self.opts.policy == Policy::Baraat {
            self.schedule_crossings(&comp_flows);
        }
        self.comp_flows = comp_flows;
        self.comp_links = comp_links;
    }

    fn key_of(&self, fid: u32) -> (u64, u64) {
        let f = &self.flows[fid as usize];
        let t = self.tasks[f.task as usize].as_ref().expect("live task");
        match self.opts.policy {
            Policy::Fair => (0, 0),
            // Remaining size, rounded up to whole bytes: flows within a byte
            // of each other share.
            Policy::Pfabric => (f.rem.ceil() as u64, 0),
            Policy::Orchestra => (t.index, 0),
            Policy::Stf => (t.total_bytes, t.index),
            Policy::Baraat => {
                let lm = self.ports[f.dst as usize].lm.as_ref();
                let leader = lm.and_then(|lm| lm.leader(t.task_id)).unwrap_or(t.task_id);
                (leader, 0)
            }
        }
    }

    /// Max-min water-filling of one priority group on the capacity left by
    /// higher groups: raise every unfrozen flow's rate together; when a link
    /// runs out, freeze the flows crossing it; a flow also stops at its NIC
    /// rate.
    fn fill_group(&mut self, group: &[u32], stamp: u32) {
        let mut unfrozen = std::mem::take(&mut self.unfrozen);
        let mut touched = std::mem::take(&mut self.touched);
        unfrozen.clear();
        unfrozen.extend_from_slice(group);
        touched.clear();
        for &fid in group {
            let f = &self.flows[fid as usize];
            for &l in &f.links[..f.n as usize] {
                let link = &self.links[l as usize];
                if link.stamp == stamp {
                    let j = link.local as usize;
                    if self.count[j] == 0 {
                        touched.push(j as u32);
                    }
                    self.count[j] += 1;
                }
            }
        }
        let mut level = 0.0f64;
        while !unfrozen.is_empty() {
            // The level at which the next link saturates, or a flow hits its cap.
            let mut next = f64::INFINITY;
            for &j in &touched {
                let c = self.count[j as usize];
                if c > 0 {
                    next = next.min(self.residual[j as usize].max(0.0) / c as f64);
                }
            }
            for &fid in &unfrozen {
                next = next.min(self.flows[fid as usize].cap as f64);
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
                let f = &self.flows[fid as usize];
                let mut freeze = f.cap as f64 <= level + tol;
                if !freeze {
                    for &l in &f.links[..f.n as usize] {
                        let link = &self.links[l as usize];
                        if link.stamp == stamp {
                            let j = link.local as usize;
                            if self.residual[j].max(0.0) / self.count[j] as f64 <= level + tol {
                                freeze = true;
                                break;
                            }
                        }
                    }
                }
                if freeze {
                    unfrozen.swap_remove(k);
                    self.set_rate(fid, level, stamp);
                } else {
                    k += 1;
                }
            }
        }
        for &j in &touched {
            self.count[j as usize] = 0;
        }
        self.unfrozen = unfrozen;
        self.touched = touched;
    }

    /// Freeze a flow at `rate`: take it from its links' residuals. Freezing
    /// inside the scan above is safe: a saturated link keeps exactly `level`
    /// of residual per remaining unfrozen flow, so its later flows still
    /// pass the saturation test, and an unsaturated link stays above it.
    fn set_rate(&mut self, fid: u32, rate: f64, stamp: u32) {
        let f = &mut self.flows[fid as usize];
        f.rate = rate;
        let (links, n) = (f.links, f.n as usize);
        for &l in &links[..n] {
            let link = &self.links[l as usize];
            if link.stamp == stamp {
                let j = link.local as usize;
                self.residual[j] -= rate;
                self.count[j] -= 1;
            }
        }
    }

    fn schedule_crossings(&mut self, comp_flows: &[u32]) {
        // Ports of the component and each task's aggregate rate into them.
        let mut ports: Vec<u32> = comp_flows
            .iter()
            .map(|&f| self.flows[f as usize].dst)
            .collect();
        ports.sort_unstable();
        ports.dedup();
        let mut rates: Vec<(u32, u64, f64)> = comp_flows
            .iter()
            .map(|&fid| {
                let f = &self.flows[fid as usize];
                let id = self.tasks[f.task as usize].as_ref().expect("live").task_id;
                (f.dst, id, f.rate)
            })
            .collect();
        rates.sort_unstable_by_key(|r| (r.0, r.1));
        for p in ports {
            let lo = rates.partition_point(|r| r.0 < p);
            let hi = rates.partition_point(|r| r.0 <= p);
            let slice = &rates[lo..hi];
            let port = &mut self.ports[p as usize];
            port.gen = port.gen.wrapping_add(1);
            let gen = port.gen;
            let Some(lm) = port.lm.as_ref() else { continue };
            let dt = lm.next_crossing_ns(|id| {
                slice.iter().filter(|r| r.1 == id).map(|r| r.2).sum::<f64>()
            });
            if let Some(dt) = dt.filter(|d| *d < 1e18) {
                let t = self.now + dt.ceil().max(1.0) as u64;
                self.push(t, Ev::Reclass { host: p, gen });
            }
        }
    }

    /// Sum of the current rates (bits/s) of the flows on a link.
    pub fn link_load(&self, l: LinkId) -> f64 {
        self.links[l as usize]
            .flows
            .iter()
            .map(|&f| self.flows[f as usize].rate)
            .sum()
    }

    pub fn topology(&self) -> &Topology {
        &self.topo
    }
}
