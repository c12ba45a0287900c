//! The pool's events and the step that runs one.

use netsched_core::dataplane::{Input, Notice, Resubmit, TaskMeta};
use netsched_core::Control;
use netsched_core::Nanos;

use super::{notice_input, task_of, PoolSim, UpperState};
use crate::metrics::AbortReason;
use crate::nodes::NodeEvent;

#[derive(Clone, Copy, Debug)]
pub(super) enum Ev {
    Arrival,
    UpperResubmit {
        upper: u32,
        r: Resubmit,
    },
    AtLower {
        rack: u32,
        meta: TaskMeta,
    },
    LowerResubmit {
        rack: u32,
        r: Resubmit,
    },
    AtNode {
        node: u32,
        task: u32,
    },
    Node(NodeEvent),
    ReplyAtLower {
        rack: u32,
        local: u32,
        qlen: u32,
        class: u8,
        task: u64,
    },
    ReplyAtUpper {
        upper: u32,
        node: u32,
        qlen: u32,
        class: u8,
        task: u64,
    },
    NoticeAtUpper {
        upper: u32,
        rack: u32,
        notice: Notice,
    },
    Sample,
    /// The schedulers' control-plane timer (soft state, `Control::tick`).
    Refresh,
    Failure {
        index: u32,
    },
    /// The controller's notice of a dead spine reaches the leaf of `rack`.
    SpineFailureKnown {
        upper: u32,
        rack: u32,
    },
    /// Submissions stop going to a dead spine.
    UpperRetired {
        upper: u32,
    },
    /// A pool left without a live upper scheduler gets a replacement.
    ReplaceUpper {
        upper: u32,
    },
    /// Uppers learn a rack is gone (leaf failure).
    RackFailureKnown {
        rack: u32,
    },
    /// A leaf's heartbeat timeout for a dead node expires.
    NodeFailureKnown {
        node: u32,
    },
}

impl PoolSim<'_> {
    pub(super) fn step(&mut self, now: u64, ev: Ev) {
        match ev {
            Ev::Arrival => {
                let task = self.new_task(now);
                self.metrics.submit(self.tasks[task as usize].measured);
                match self.choose_upper() {
                    Some(upper) => self.at_upper(now, upper, task),
                    None => self.abort(task, AbortReason::DeadSpine),
                }
                if let Some(next) = self.arrivals.next_arrival(now, &mut self.rng_work) {
                    if next < self.setup.end_ns {
                        self.q.at(next, Ev::Arrival);
                    }
                }
            }
            Ev::UpperResubmit { upper, r } => {
                if !self.uppers[upper as usize].alive {
                    if let Some(t) = task_of(&Input::Resubmit(r)) {
                        self.abort(t, AbortReason::DeadSpine);
                    }
                    return;
                }
                self.upper_input(now, upper, Input::Resubmit(r));
            }
            Ev::AtLower { rack, meta } => self.at_lower(now, rack, meta),
            Ev::LowerResubmit { rack, r } => {
                if !self.racks[rack as usize].alive {
                    if let Some(t) = task_of(&Input::Resubmit(r)) {
                        self.abort(t, AbortReason::DeadLeaf);
                    }
                    return;
                }
                self.lower_input(now, rack, Input::Resubmit(r));
            }
            Ev::AtNode { node, task } => self.at_node(now, node, task),
            Ev::Node(ne) => self.node_event(now, ne),
            Ev::ReplyAtLower {
                rack,
                local,
                qlen,
                class,
                task,
            } => {
                if self.racks[rack as usize].alive {
                    self.lower_input(
                        now,
                        rack,
                        Input::Reply {
                            node: local,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
            Ev::ReplyAtUpper {
                upper,
                node,
                qlen,
                class,
                task,
            } => {
                if self.uppers[upper as usize].alive {
                    self.upper_input(
                        now,
                        upper,
                        Input::Reply {
                            node,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
            Ev::NoticeAtUpper {
                upper,
                rack,
                notice,
            } => {
                if self.uppers[upper as usize].alive {
                    self.upper_input(now, upper, notice_input(rack, notice));
                }
            }
            Ev::Sample => {
                let (max, mean) = self.nodes.max_mean(0..self.nodes.len());
                self.metrics.imbalance(max, mean);
                if now + self.setup.imbalance_interval_ns < self.setup.end_ns {
                    self.q.after(self.setup.imbalance_interval_ns, Ev::Sample);
                }
            }
            Ev::Refresh => self.refresh(now),
            Ev::Failure { index } => self.failure(now, index),
            Ev::SpineFailureKnown { upper, rack } => self.relink(now, upper, rack),
            Ev::UpperRetired { upper } => {
                self.uppers[upper as usize].routable = false;
                self.weights_dirty = true;
            }
            Ev::ReplaceUpper { upper } => {
                let dead = &self.uppers[upper as usize];
                let sched = crate::build::replacement_upper(
                    self.setup,
                    &dead.nodes,
                    self.nodes.len() as u32,
                    self.uppers.len() as u64,
                );
                let (nodes, spine) = (dead.nodes.clone(), dead.spine);
                self.uppers
                    .push(UpperState::new(sched, nodes, spine, self.racks.len()));
                self.weights_dirty = true;
                let new = (self.uppers.len() - 1) as u32;
                for rack in self.linked_racks(upper) {
                    let local = self.racks[rack as usize].link.1;
                    self.racks[rack as usize].link = (new, local);
                }
            }
            Ev::RackFailureKnown { rack } => {
                self.settle_all(self.q.current());
                for u in &mut self.uppers {
                    if let Some(local) = u.local_of(rack) {
                        u.remove_node(local, now);
                    }
                }
                if self.setup.policy.is_flat() {
                    let nodes = self.racks[rack as usize].nodes.clone();
                    for n in nodes {
                        for u in &mut self.uppers {
                            u.remove_node(n, now);
                        }
                    }
                }
            }
            Ev::NodeFailureKnown { node } => {
                let (rack, local) = self.node_loc[node as usize];
                if self.setup.policy.is_flat() {
                    self.settle_all(self.q.current());
                    for u in &mut self.uppers {
                        u.remove_node(node, now);
                    }
                } else if self.racks[rack as usize].alive {
                    let mut out = self.out.take().unwrap_or_default();
                    if let Some(leaf) = &mut self.leaves[rack as usize] {
                        leaf.remove_node(local, Nanos::new(now), &mut out);
                    }
                    self.lower_actions(now, rack, &mut out, None, false);
                    self.out = Some(out);
                    self.install_rack_weight(now, rack);
                }
            }
        }
    }
}
