//! Upper schedulers (spines, or the clients of a flat policy): routing a
//! submission to one, feeding it inputs and carrying out what it emits.

use netsched_core::dataplane::{Action, DropReason, Input, Outbox, TaskMeta};
use netsched_core::Nanos;
use netsched_core::{Control, DataPlane, Plane};

use super::events::Ev;
use super::{notice_input, task_of, PoolSim, UpperState};
use crate::metrics::{AbortReason, MessageKind};
use crate::queue::Inbox;

const NONE: u32 = u32::MAX;

impl PoolSim<'_> {
    pub(super) fn choose_upper(&mut self) -> Option<u32> {
        if self.weights_dirty {
            self.recompute_weights();
        }
        let total = *self.cum_weights.last()?;
        if total == 0 {
            return None;
        }
        let x = self.rng_route.below(total);
        Some(self.cum_weights.partition_point(|&c| c <= x) as u32)
    }

    /// Horus §3.2: spines are chosen in proportion to the workers behind
    /// them; other policies' uppers all cover the whole pool (uniform).
    pub(super) fn recompute_weights(&mut self) {
        let mut acc = 0u32;
        self.cum_weights.clear();
        for i in 0..self.uppers.len() {
            if self.uppers[i].routable {
                acc += self.upper_weight(i);
            }
            self.cum_weights.push(acc);
        }
        self.weights_dirty = false;
    }

    pub(super) fn upper_weight(&self, i: usize) -> u32 {
        let u = &self.uppers[i];
        if self.random_idle_link {
            // Its nodes are every rack; its share is its own group's workers.
            return self
                .racks
                .iter()
                .filter(|r| r.link.0 == i as u32)
                .map(|r| r.nodes.len() as u32)
                .sum::<u32>()
                .max(1);
        }
        if self.setup.policy.is_horus() {
            u.nodes
                .iter()
                .map(|&r| self.racks[r as usize].nodes.len() as u32)
                .sum::<u32>()
                .max(1)
        } else {
            1
        }
    }

    pub(super) fn at_upper(&mut self, now: u64, upper: u32, task: u32) {
        if !self.uppers[upper as usize].alive {
            self.abort(task, AbortReason::DeadSpine);
            return;
        }
        self.tasks[task as usize].upper = upper;
        let meta = self.meta(task);
        self.upper_input(now, upper, Input::Task(meta));
    }

    pub(super) fn upper_input(&mut self, now: u64, upper: u32, input: Input) {
        self.settle(upper);
        self.deliver_upper(now, upper, input);
    }

    /// Hands `upper` the held inputs due before the current event, in the
    /// order their events would have run (`RunSetup::eager_state_writes`).
    /// Called before anything else reaches the upper's data plane.
    #[inline]
    pub(super) fn settle(&mut self, upper: u32) {
        let key = self.q.current();
        self.settle_before(upper, key);
    }

    pub(super) fn settle_before(&mut self, upper: u32, key: (u64, u64)) {
        let mut due = std::mem::take(&mut self.due_buf);
        self.uppers[upper as usize].inbox.take_due(key, &mut due);
        // Counted as the events they stand for, so `events` does not depend
        // on whether inputs were held.
        self.q.processed += due.len() as u64;
        for (at, (node, notice)) in due.drain(..) {
            if self.uppers[upper as usize].alive {
                self.deliver_upper(at, upper, notice_input(node, notice));
            }
        }
        self.due_buf = due;
    }

    pub(super) fn settle_all(&mut self, key: (u64, u64)) {
        for u in 0..self.uppers.len() as u32 {
            self.settle_before(u, key);
        }
    }

    pub(super) fn deliver_upper(&mut self, now: u64, upper: u32, input: Input) {
        let carries_task = task_of(&input);
        let first_pass_of_task = matches!(input, Input::Task(_));
        let mut out = self.out.take().unwrap_or_default();
        out.clear();
        self.uppers[upper as usize]
            .sched
            .handle(Nanos::new(now), input, &mut out);
        self.upper_actions(now, upper, &mut out, carries_task, first_pass_of_task);
        self.out = Some(out);
    }

    /// Control plane of an upper scheduler, executing what it emits.
    pub(super) fn upper_set_node(&mut self, now: u64, upper: u32, node: u32, workers: u32) {
        self.settle(upper);
        let mut out = Outbox::new();
        self.uppers[upper as usize]
            .sched
            .add_node(node, workers, Nanos::new(now), &mut out);
        self.upper_actions(now, upper, &mut out, None, false);
    }

    /// `first_pass_of_task`: the input was a task's first pass here, so a
    /// resubmission now makes it a task this switch processes twice (Horus
    /// Fig. 15 counts each such task once per layer).
    pub(super) fn upper_actions(
        &mut self,
        now: u64,
        upper: u32,
        out: &mut Outbox,
        carries_task: Option<u32>,
        first_pass_of_task: bool,
    ) {
        for a in out.drain() {
            match a {
                Action::Dispatch(d) => {
                    let slot = self.count_decision(true, d.task, d.decision);
                    if self.setup.policy.is_flat() {
                        // Flat schedulers pick a worker directly: spine -> leaf -> worker.
                        let (rack, _) = self.node_loc[d.node as usize];
                        let hops = self.spine_leaf_hops(upper, rack) + 1;
                        self.send_task_to_node(now, hops, d.node, slot);
                    } else {
                        let rack = self.uppers[upper as usize].nodes[d.node as usize];
                        let hops = self.spine_leaf_hops(upper, rack);
                        self.metrics.message(MessageKind::Task);
                        if self.lost() {
                            self.abort(slot, AbortReason::Lost);
                            continue;
                        }
                        let delay = self.hop_delay(hops);
                        let meta = TaskMeta {
                            upstream: upper,
                            ..d.task
                        };
                        self.q.after(delay, Ev::AtLower { rack, meta });
                    }
                }
                Action::Resubmit(r) => {
                    self.count_resubmission(true, carries_task, first_pass_of_task);
                    self.q
                        .after(self.setup.resubmit_ns, Ev::UpperResubmit { upper, r });
                }
                Action::Drop(reason) => self.dropped(carries_task, reason, true),
                Action::Notify { .. } | Action::Queued => {}
            }
        }
    }

    pub(super) fn dropped(&mut self, task: Option<u32>, reason: DropReason, upper: bool) {
        self.metrics.drop(reason);
        if let Some(t) = task {
            self.abort(
                t,
                if upper {
                    AbortReason::NoSchedulerChoice
                } else {
                    AbortReason::NoWorker
                },
            );
        }
    }
}

impl UpperState {
    pub(super) fn new(sched: Plane, nodes: Vec<u32>, spine: u32, racks: usize) -> Self {
        let mut local = vec![NONE; racks];
        for (i, &r) in nodes.iter().enumerate() {
            local[r as usize] = i as u32;
        }
        UpperState {
            sched,
            nodes,
            local,
            spine,
            hops: vec![0; racks],
            alive: true,
            routable: true,
            inbox: Inbox::default(),
        }
    }

    /// Control plane: node `node` (a rack, or a worker for flat policies)
    /// is gone. An upper emits nothing when it loses a node.
    pub(super) fn remove_node(&mut self, node: u32, now: u64) {
        let mut out = Outbox::new();
        self.sched.remove_node(node, Nanos::new(now), &mut out);
        debug_assert!(out.is_empty(), "an upper's node removal emitted actions");
    }

    pub(super) fn local_of(&self, rack: u32) -> Option<u32> {
        self.local
            .get(rack as usize)
            .copied()
            .filter(|&l| l != NONE)
    }

    /// Adds `rack` as a node if it is not one yet; returns its local index.
    pub(super) fn ensure_node(&mut self, rack: u32) -> u32 {
        if let Some(l) = self.local_of(rack) {
            return l;
        }
        self.nodes.push(rack);
        let l = (self.nodes.len() - 1) as u32;
        self.local[rack as usize] = l;
        l
    }
}
