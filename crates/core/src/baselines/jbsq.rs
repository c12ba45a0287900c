//! Join-Bounded-Shortest-Queue, JBSQ(k): R2P2's router policy (Kogias et
//! al., ATC'19 §3.2), the R2P2 baseline of RackSched §4.5 (Fig. 14).
//!
//! The router holds one FIFO of requests and sends a request on only to a
//! node with fewer than `k` outstanding requests, the one with the fewest.
//! When every node holds `k`, requests wait in the router until a reply frees
//! a slot; the head then goes to the node that replied. Nodes are served
//! non-preemptively (R2P2 has no intra-server preemption), so a short request
//! behind a long one at a node is blocked: the head-of-line blocking
//! RackSched §4.5 blames for R2P2's tail under high-dispersion service times.
//!
//! `k = 1` is the centralized FCFS queue of RackSched §2 (global cFCFS,
//! M/M/c): [`super::CentralQueue`] is this type with bound 1.
//!
//! This is the queueing variant of the R2P2 router, for the push contract of
//! [`crate::dataplane`]. The in-switch variant that recirculates instead of
//! queueing, with the pull-scheduling messages Draconis compares against, is
//! [`crate::pull::r2p2::R2p2Jbsq`]; it keeps no queue (a waiting request
//! is a packet in flight), so the two share only the bound rule.

use crate::Nanos;
use std::collections::VecDeque;

use super::{affinity_only, follow, remember, IdleFifo};
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox, TaskMeta};
use crate::switch::{Pass, Pipeline};

/// JBSQ(k) over a flat set of nodes, in software (the router's FIFO is
/// unbounded in the paper; here it is allocated once, at `capacity`).
///
/// * Task (first packet): to a node with the fewest outstanding tasks if that
///   is below the bound, the one that has had that count longest (for `k = 1`
///   the longest-idle node); else appended to the buffer (`Queued`), or
///   `Drop(Overflow)` if the buffer is full.
/// * `Reply{node}`: one task of `node` finished. Its count drops by one and,
///   if tasks wait, the buffer's head goes to it at once. A reply from a node
///   with nothing outstanding (a duplicate, or one from before the node was
///   re-added) changes nothing.
/// * Continuations of a dispatched task follow it (its entry is made when the
///   first packet leaves the buffer); one whose first packet is still
///   buffered has nowhere to go and is `Drop(NoAffinity)`.
///
/// Inputs: `Task`, `Reply` (unknown node: `Drop(UnknownNode)`); others
/// `Drop(Unexpected)`.
///
/// Cost: a dispatch scans at most `k` levels; a reply from a node below the
/// bound moves it between two level FIFOs, O(length of its level).
#[derive(Clone, Debug)]
pub struct Jbsq {
    pipeline: Pipeline,
    bound: u32,
    known: Vec<bool>,
    nodes: u32,
    outstanding: Vec<u32>,
    /// `levels[c]`: the known nodes with exactly `c < bound` outstanding
    /// tasks, in the order they reached `c`. Nodes at the bound are in none.
    levels: Vec<IdleFifo>,
    queue: VecDeque<TaskMeta>,
    capacity: usize,
    affinity: AffinityTable,
    /// Tasks refused because the buffer was full.
    pub overflows: u64,
}

impl Jbsq {
    /// A default buffer bound: far above any stable queue, small enough to
    /// allocate per pool.
    pub const DEFAULT_CAPACITY: usize = 1 << 16;

    /// R2P2's bound as Draconis runs it (§8: k = 3). The R2P2 paper sweeps k
    /// and RackSched §4.5 does not state the one it used.
    pub const DEFAULT_BOUND: u32 = 3;

    /// Nodes `0..nodes`, none busy; at most `bound` tasks outstanding per
    /// node and `capacity` buffered.
    pub fn new(nodes: u32, bound: u32, capacity: usize) -> Self {
        if let Err(e) = crate::limits::jbsq_bound(bound) {
            panic!("JBSQ bound: {e}");
        }
        let mut levels: Vec<IdleFifo> = (0..bound).map(|_| IdleFifo::new(nodes as usize)).collect();
        for n in 0..nodes {
            levels[0].push(n);
        }
        let (pipeline, affinity) = affinity_only();
        Jbsq {
            pipeline,
            bound,
            known: vec![true; nodes as usize],
            nodes,
            outstanding: vec![0; nodes as usize],
            levels,
            queue: VecDeque::with_capacity(capacity),
            capacity,
            affinity,
            overflows: 0,
        }
    }

    fn is_known(&self, node: NodeId) -> bool {
        self.known.get(node as usize).copied().unwrap_or(false)
    }

    /// The least-loaded node below the bound, taken off its level.
    fn pick(&mut self) -> Option<NodeId> {
        self.levels.iter_mut().find_map(|l| l.pop())
    }

    /// `node` (already off its level) takes `task`.
    fn dispatch(&mut self, pass: &Pass, now: u64, node: NodeId, task: TaskMeta, out: &mut Outbox) {
        let c = &mut self.outstanding[node as usize];
        *c += 1;
        if *c < self.bound {
            self.levels[*c as usize].push(node);
        }
        remember(&mut self.affinity, pass, now, task, node);
        out.push(Action::dispatch(node, task, Decision::Other));
    }

    /// One task of `node` finished.
    fn release(&mut self, pass: &Pass, now: u64, node: NodeId, out: &mut Outbox) {
        let c = self.outstanding[node as usize];
        if c == 0 {
            return;
        }
        if c < self.bound {
            self.levels[c as usize].remove(node);
        }
        self.outstanding[node as usize] = c - 1;
        // Tasks wait only while every node is at the bound, so the node that
        // just dropped below it is the least loaded: the head is its.
        match self.queue.pop_front() {
            Some(task) => self.dispatch(pass, now, node, task, out),
            None => {
                self.levels[c as usize - 1].push(node);
            }
        }
    }

    /// A node joins with nothing outstanding and takes waiting tasks at once,
    /// up to the bound.
    pub fn control_add_node(&mut self, node: NodeId, now: u64, out: &mut Outbox) {
        if self.is_known(node) {
            return;
        }
        let n = node as usize;
        if n >= self.known.len() {
            self.known.resize(n + 1, false);
            self.outstanding.resize(n + 1, 0);
            for l in &mut self.levels {
                l.reserve_nodes(n + 1);
            }
        }
        self.known[n] = true;
        self.outstanding[n] = 0;
        self.nodes += 1;
        let pass = self.pipeline.begin();
        while self.outstanding[n] < self.bound {
            let Some(task) = self.queue.pop_front() else {
                break;
            };
            // `dispatch` takes a node off its level; after the first task
            // this one is on level `outstanding`.
            let c = self.outstanding[n];
            if c > 0 {
                self.levels[c as usize].remove(node);
            }
            self.dispatch(&pass, now, node, task, out);
        }
        if self.outstanding[n] == 0 {
            self.levels[0].push(node);
        }
    }

    /// A node failed or left. Its outstanding tasks are the driver's to
    /// account for; the buffer keeps waiting for the other nodes.
    pub fn control_remove_node(&mut self, node: NodeId) {
        if !self.is_known(node) {
            return;
        }
        let n = node as usize;
        self.known[n] = false;
        self.nodes -= 1;
        let c = self.outstanding[n];
        if c < self.bound {
            self.levels[c as usize].remove(node);
        }
        self.outstanding[n] = 0;
        self.affinity.control_forget_node(node);
    }

    /// The bound k.
    pub fn bound(&self) -> u32 {
        self.bound
    }

    /// Tasks dispatched to `node` and not yet answered.
    pub fn outstanding(&self, node: NodeId) -> u32 {
        self.outstanding.get(node as usize).copied().unwrap_or(0)
    }

    /// Buffered tasks, oldest first.
    pub fn queued(&self) -> impl Iterator<Item = &TaskMeta> + '_ {
        self.queue.iter()
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Nodes with nothing outstanding, longest idle first.
    pub fn idle_nodes(&self) -> &IdleFifo {
        &self.levels[0]
    }

    pub fn nodes(&self) -> u32 {
        self.nodes
    }
}

affinity_sweep!(Jbsq);

impl DataPlane for Jbsq {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let now = now.get();
        let pass = self.pipeline.begin();
        match input {
            Input::Task(task) if !task.first => {
                follow(&mut self.affinity, &pass, now, task, out);
            }
            Input::Task(task) => match self.pick() {
                Some(node) => self.dispatch(&pass, now, node, task, out),
                None if self.nodes == 0 => out.push(Action::Drop(DropReason::NoNodes)),
                None if self.queue.len() >= self.capacity => {
                    self.overflows += 1;
                    out.push(Action::Drop(DropReason::Overflow));
                }
                None => {
                    self.queue.push_back(task);
                    out.push(Action::Queued);
                }
            },
            Input::Reply { node, .. } => {
                if self.is_known(node) {
                    self.release(&pass, now, node, out);
                } else {
                    out.push(Action::Drop(DropReason::UnknownNode));
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::dataplane::Dispatch;
    use proptest::prelude::*;

    #[test]
    fn fills_the_least_loaded_node_up_to_the_bound_then_queues() {
        let mut j = Jbsq::new(2, 3, 16);
        // Shortest first: the two nodes alternate until both hold 3.
        let nodes: Vec<NodeId> = (0..6)
            .map(|id| dispatched(&mut j, 0, Input::Task(task(id))))
            .collect();
        assert_eq!(nodes, vec![0, 1, 0, 1, 0, 1]);
        assert_eq!((j.outstanding(0), j.outstanding(1)), (3, 3));
        assert_eq!(run(&mut j, 0, Input::Task(task(6))), vec![Action::Queued]);
        assert_eq!(run(&mut j, 0, Input::Task(task(7))), vec![Action::Queued]);
        // A reply frees one slot at node 1, which takes the head at once.
        match run(&mut j, 0, done(1)).as_slice() {
            [Action::Dispatch(Dispatch { node: 1, task, .. })] => assert_eq!(task.id, 6),
            other => panic!("{other:?}"),
        }
        assert_eq!(j.outstanding(1), 3);
        assert_eq!(j.queue_len(), 1);
    }

    #[test]
    fn replies_lower_the_count_and_the_shortest_node_is_chosen() {
        let mut j = Jbsq::new(3, 3, 16);
        for id in 0..6 {
            dispatched(&mut j, 0, Input::Task(task(id)));
        }
        // 2, 2, 2 outstanding; node 2 finishes two tasks, node 0 one.
        for n in [2, 2, 0] {
            assert!(run(&mut j, 0, done(n)).is_empty());
        }
        assert_eq!(dispatched(&mut j, 0, Input::Task(task(10))), 2);
        // Nodes 0 and 2 now hold one each; node 0 has held one longer.
        assert_eq!(dispatched(&mut j, 0, Input::Task(task(11))), 0);
        assert_eq!(dispatched(&mut j, 0, Input::Task(task(12))), 2);
        // All hold two; node 1 has held two longest.
        assert_eq!(dispatched(&mut j, 0, Input::Task(task(13))), 1);
        assert_eq!(
            (j.outstanding(0), j.outstanding(1), j.outstanding(2)),
            (2, 3, 2)
        );
        // A reply from a node with nothing outstanding is ignored.
        let mut k = Jbsq::new(1, 2, 4);
        assert!(run(&mut k, 0, done(0)).is_empty());
        assert_eq!(k.outstanding(0), 0);
    }

    #[test]
    fn bound_one_is_the_central_queue() {
        // CentralQueue is JBSQ(1): the same decisions on the same inputs.
        let mut j = Jbsq::new(2, 1, 16);
        let mut c = super::super::CentralQueue::central(2, 16);
        for (i, input) in [
            Input::Task(task(1)),
            Input::Task(task(2)),
            Input::Task(task(3)),
            done(1),
            Input::Task(task(4)),
            done(0),
            done(1),
            done(0),
            Input::Task(task(5)),
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(run(&mut j, 0, input), run(&mut c, 0, input), "input {i}");
        }
    }

    #[test]
    fn added_node_takes_up_to_the_bound_and_removed_node_is_unknown() {
        let mut j = Jbsq::new(1, 2, 8);
        for id in 0..5 {
            run(&mut j, 0, Input::Task(task(id)));
        }
        assert_eq!(j.queue_len(), 3);
        let mut out = Outbox::new();
        j.control_add_node(4, 0, &mut out);
        let got: Vec<(NodeId, u64)> = out
            .drain()
            .map(|a| match a {
                Action::Dispatch(Dispatch { node, task, .. }) => (node, task.id),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, vec![(4, 2), (4, 3)]);
        j.control_remove_node(0);
        assert_eq!(
            run(&mut j, 0, done(0)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        // Node 4 frees a slot: the last waiting task goes there.
        assert!(matches!(run(&mut j, 0, done(4)).as_slice(),
            [Action::Dispatch(Dispatch { node: 4, task, .. })] if task.id == 4));
        j.control_remove_node(4);
        assert_eq!(
            run(&mut j, 0, Input::Task(task(9))),
            vec![Action::Drop(DropReason::NoNodes)]
        );
    }

    #[test]
    fn full_buffer_drops_and_continuations_follow_their_first_packet() {
        let mut j = Jbsq::new(1, 1, 1);
        let first = TaskMeta {
            id: 7,
            first: true,
            last: false,
            ..TaskMeta::default()
        };
        assert_eq!(dispatched(&mut j, 0, Input::Task(first)), 0);
        run(&mut j, 0, Input::Task(task(8)));
        assert_eq!(
            run(&mut j, 0, Input::Task(task(9))),
            vec![Action::Drop(DropReason::Overflow)]
        );
        assert_eq!(j.overflows, 1);
        let last = TaskMeta {
            first: false,
            last: true,
            ..first
        };
        assert_eq!(dispatched(&mut j, 0, Input::Task(last)), 0);
    }

    proptest! {
        /// Random interleavings of arrivals and completions: never more than
        /// k outstanding at a node, every task dispatched goes to a node with
        /// the fewest outstanding, tasks leave the buffer in arrival order,
        /// tasks wait only while every node is at the bound, and no task is
        /// lost or duplicated.
        #[test]
        fn bound_fifo_and_conservation(
            nodes in 1u32..6,
            bound in 1u32..5,
            ops in proptest::collection::vec((any::<bool>(), 0u32..6), 1..400),
        ) {
            let mut j = Jbsq::new(nodes, bound, 1 << 10);
            // Tasks at each node in the order they were sent (FCFS servers).
            let mut at: Vec<VecDeque<u64>> = vec![VecDeque::new(); nodes as usize];
            let mut started = Vec::new();
            let mut finished = Vec::new();
            let mut submitted = 0u64;
            for (arrive, w) in ops {
                let before: Vec<usize> = at.iter().map(|q| q.len()).collect();
                let acts = if arrive {
                    submitted += 1;
                    run(&mut j, 0, Input::Task(task(submitted)))
                } else {
                    let w = w % nodes;
                    // The driver only reports completions of tasks it holds.
                    match at[w as usize].pop_front() {
                        Some(t) => finished.push(t),
                        None => continue,
                    }
                    run(&mut j, 0, done(w))
                };
                let mut queued = false;
                for a in acts {
                    match a {
                        Action::Dispatch(Dispatch { node, task, .. }) => {
                            if arrive {
                                let least = *before.iter().min().unwrap();
                                prop_assert_eq!(before[node as usize], least, "not the shortest");
                            } else {
                                prop_assert_eq!(node, w % nodes, "the head goes to the node that freed");
                            }
                            at[node as usize].push_back(task.id);
                            started.push(task.id);
                        }
                        Action::Queued => queued = true,
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                }
                if queued {
                    prop_assert!(before.iter().all(|&c| c == bound as usize));
                }
                for (n, q) in at.iter().enumerate() {
                    prop_assert!(q.len() <= bound as usize, "node {} holds {}", n, q.len());
                    prop_assert_eq!(q.len() as u32, j.outstanding(n as NodeId));
                }
                let waiting = j.queue_len();
                prop_assert!(waiting == 0 || at.iter().all(|q| q.len() == bound as usize),
                    "a task waits while a node is below the bound");
            }
            let expected: Vec<u64> = (1..=started.len() as u64).collect();
            prop_assert_eq!(&started, &expected, "FIFO: tasks leave in arrival order, each once");
            let waiting: Vec<u64> = j.queued().map(|t| t.id).collect();
            let rest: Vec<u64> = (started.len() as u64 + 1..=submitted).collect();
            prop_assert_eq!(waiting, rest, "the others are buffered, in order");
            let held: usize = at.iter().map(|q| q.len()).sum();
            prop_assert_eq!(finished.len() + held + j.queue_len(), submitted as usize,
                "every task is finished, at a node or buffered");
        }
    }
}
