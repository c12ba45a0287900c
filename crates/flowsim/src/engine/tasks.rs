//! Tasks and their flows from arrival to completion: a task's first-stage
//! flows start at its arrival (after their computation delay), each later
//! stage when the flows feeding its gate are done; a flow joins its links
//! (and, under Baraat, its destination port's classifier, §4.3.1) at its
//! start and leaves them at its last byte.

use super::events::Ev;
use super::fabric::Flow;
use super::keys::float_then_id;
use super::{Engine, TaskResult, NONE};
use crate::policy::Policy;
use crate::topology::MAX_HOPS;
use crate::workload::{FlowSpec, TaskSpec, NO_GATE};

/// A live task: its flows' specs and how many are left, overall and per
/// gate (a gate opens the flows `after` it once the flows that `feed` it
/// are done: the stages of partition-aggregate).
#[derive(Clone, Debug)]
pub(super) struct Task {
    pub(super) index: u64,
    pub(super) task_id: u64,
    pub(super) arrival: u64,
    pub(super) total_bytes: u64,
    pub(super) left: u32,
    pub(super) specs: Vec<FlowSpec>,
    /// Flows still feeding each gate.
    pub(super) gate_left: Vec<u32>,
    /// Ports (hosts) where the task has or had flows (Baraat classifier).
    pub(super) ports: Vec<u32>,
    /// STF: ports where the task was admitted, and when (`admission`).
    pub(super) admitted: Vec<(u32, u64)>,
}

/// The live tasks and the finished ones.
#[derive(Clone, Default)]
pub(super) struct TaskTable {
    pub(super) slots: Vec<Option<Task>>,
    pub(super) free: Vec<u32>,
    pub(super) results: Vec<TaskResult>,
}

impl TaskTable {
    fn insert(&mut self, task: Task) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(task);
                s
            }
            None => {
                self.slots.push(Some(task));
                (self.slots.len() - 1) as u32
            }
        }
    }
}

impl Engine {
    pub(super) fn arrive(&mut self, spec: TaskSpec, index: u64) {
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
            admitted: Vec::new(),
        };
        let slot = self.tasks.insert(task);
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
            self.events
                .push(self.events.now + delay, Ev::Start { task, spec });
        }
    }

    pub(super) fn start_flow(&mut self, task: u32, spec: u32) {
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
            order_bits: (bytes as f64 + 0.0).to_bits(),
        };
        let id = self.fabric.insert(f);
        self.stats.flows += 1;
        self.instant.started.push(id);
        for (h, &l) in links[..n].iter().enumerate() {
            let link = &mut self.fabric.links[l as usize];
            self.fabric.flows[id as usize].pos[h] = link.flows.len() as u32;
            link.flows.push(id);
            let key = float_then_id(bytes as f64, id);
            link.keys.push(key);

            link.sum_caps += cap;
            // A switch link that cannot bind now could not before either:
            // no rate depends on it, so it seeds nothing.
            if self.follow(l) {
                self.instant.dirty.push(l);
            }
        }
        if self.opts.policy == Policy::Baraat {
            // A task new at the port changes its classes.
            self.instant.new_at_port |=
                self.baraat
                    .add_flow(dst, task_id, self.opts.heavy_threshold);
        }
    }

    pub(super) fn finish_flow(&mut self, id: u32) {
        let keeps_order = self.keeps_order();
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
            if self.baraat.charge(dst, self.events.now) {
                self.instant.dirty.push(self.topo.host_down(dst));
                self.instant.turned_heavy = true;
            }
            let r = self.rate_of(id);
            self.baraat.rate_add(dst, tid, -r);
        }
        self.group_leave(id);
        for h in 0..n as usize {
            let l = links[h];
            let link = &mut self.fabric.links[l as usize];
            let p = pos[h] as usize;
            link.flows.swap_remove(p);
            let old = link.keys.swap_remove(p);
            if keeps_order {
                let order = &mut self.fabric.orders[l as usize];
                order.forget_key(&mut self.fabric.fronts[l as usize], id, old);
                let len = link.keys.len() as u32;
                if (p as u32) < order.seen && len >= order.seen {
                    // A key the floor did not count moved into its place.
                    order.rest_floor = order.rest_floor.min(link.keys[p]);
                }
                order.seen = order.seen.min(len);
            }
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
            self.baraat.remove_flow(dst, tid);
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
            if self.baraat.forget_task(p, t.task_id) {
                self.instant.dirty.push(self.topo.host_down(p));
            }
        }
        self.tasks.free.push(slot);
    }
}
