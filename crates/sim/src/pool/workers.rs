//! Tasks at workers: the last hop, queueing and service, and the reply.

use netsched_core::dataplane::Input;

use super::events::Ev;
use super::{PoolSim, TaskRec};
use crate::config::LoadTrackingMode;
use crate::metrics::{AbortReason, MessageKind};
use crate::nodes::{NodeEvent, Outcome};

impl PoolSim<'_> {
    pub(super) fn send_task_to_node(&mut self, now: u64, hops: u32, node: u32, task: u32) {
        self.metrics.message(MessageKind::Task);
        if self.lost() {
            self.abort(task, AbortReason::Lost);
            // An ideal scheduler counted the task at dispatch; the oracle
            // knows it will never arrive.
            self.instant_view(now, node);
            return;
        }
        let d = self.hop_delay(hops);
        self.q.after(d, Ev::AtNode { node, task });
        if self.setup.policy.sees_queues_instantly() {
            // Zero delay means the dispatch is known before the next task,
            // not when the task reaches the worker: counting it only on
            // arrival let every task dispatched within one network delay
            // join the same shortest queue (the contract
            // in netsched_core::baselines).
            self.in_flight[node as usize] += 1;
            self.instant_view(now, node);
        }
    }

    pub(super) fn at_node(&mut self, now: u64, node: u32, task: u32) {
        if self.setup.policy.sees_queues_instantly() {
            self.in_flight[node as usize] -= 1;
        }
        if !self.nodes.alive(node) {
            self.abort(task, AbortReason::DeadWorker);
            return;
        }
        let TaskRec { service, class, .. } = self.tasks[task as usize];
        if let Some((t, e)) = self.nodes.arrive(now, node, task, service, class) {
            self.q.at(t, Ev::Node(e));
        }
        self.instant_view(now, node);
    }

    /// Ideal policies see every queue change at once (not a packet): the
    /// tasks dispatched to `node` and not finished, queued or in flight.
    pub(super) fn instant_view(&mut self, now: u64, node: u32) {
        if self.setup.policy.sees_queues_instantly() {
            let qlen = self.nodes.qlen(node) + self.in_flight[node as usize];
            for u in 0..self.uppers.len() as u32 {
                if self.uppers[u as usize].alive {
                    self.upper_input(now, u, Input::QueueChanged { node, qlen });
                }
            }
        }
    }

    pub(super) fn node_event(&mut self, now: u64, ev: NodeEvent) {
        let mut next = None;
        match self.nodes.on_event(now, ev, &mut next) {
            Outcome::Finished(f) => {
                let rec = self.tasks[f.task as usize];
                debug_assert!(rec.live, "task ended twice");
                self.tasks[f.task as usize].live = false;
                self.free_tasks.push(f.task);
                self.metrics.complete(
                    rec.measured,
                    now - rec.submitted,
                    // Waiting: everything before service starts (network,
                    // scheduler and node queues), so response = waiting + service.
                    f.started.saturating_sub(rec.submitted),
                    rec.class,
                );
                let NodeEvent::SliceEnd { node, .. } = ev;
                self.instant_view(now, node);
                // INT3 (RackSched §4.6): LOAD carries outstanding work in ns.
                let load = match self.setup.load_tracking {
                    LoadTrackingMode::Int3 => f.work.min(u32::MAX as u64) as u32,
                    _ => f.qlen,
                };
                self.reply(
                    node,
                    load,
                    rec.class,
                    rec.seq << 32 | f.task as u64,
                    rec.upper,
                );
            }
            Outcome::Lost { task } => self.abort(task, AbortReason::DeadWorker),
            Outcome::Continue => {}
        }
        if let Some((t, e)) = next {
            self.q.at(t, Ev::Node(e));
        }
    }

    pub(super) fn reply(&mut self, node: u32, qlen: u32, class: u8, task: u64, upper: u32) {
        self.metrics.message(MessageKind::Reply);
        if self.lost() {
            return;
        }
        let (rack, local) = self.node_loc[node as usize];
        if self.setup.policy.is_flat() {
            // The reply passes the leaf and reaches the flat scheduler that
            // sent the task, at its spine: with several clients, only the
            // task's own client learns from it (RackSched §4.5). If that
            // scheduler died, the reply crosses its live replacement(s).
            let own = self.uppers[upper as usize].alive;
            for u in 0..self.uppers.len() as u32 {
                if (own && u == upper) || (!own && self.uppers[u as usize].alive) {
                    let upper = u;
                    let hops = 1 + self.spine_leaf_hops(upper, rack);
                    let d = self.hop_delay(hops);
                    self.q.after(
                        d,
                        Ev::ReplyAtUpper {
                            upper,
                            node,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
        } else {
            let d = self.hop_delay(1);
            self.q.after(
                d,
                Ev::ReplyAtLower {
                    rack,
                    local,
                    qlen,
                    class,
                    task,
                },
            );
        }
    }
}
