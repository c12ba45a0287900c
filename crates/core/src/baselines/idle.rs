//! Idle-list dispatchers: JIQ (Lu et al., Performance 2011) and the
//! idle-only ablation of Horus (App. C, "Analysis of Horus Components").

use super::NodeSlots;
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox};
use crate::idle::{IdleNodes, RemoveFirst, Retrieved};
use crate::racksched::ReqTableConfig;
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline};
use crate::Nanos;

/// A FIFO of idle nodes, each present at most once, in plain memory. The
/// longest-idle node comes out first.
#[derive(Clone, Debug)]
pub struct IdleFifo {
    ring: Vec<NodeId>,
    head: usize,
    len: usize,
    member: Vec<bool>,
}

impl IdleFifo {
    /// Room for nodes `0..capacity`, none idle.
    pub fn new(capacity: usize) -> Self {
        IdleFifo {
            ring: vec![0; capacity.max(1)],
            head: 0,
            len: 0,
            member: vec![false; capacity],
        }
    }

    /// Control plane: make room for node ids below `capacity`.
    pub fn reserve_nodes(&mut self, capacity: usize) {
        if capacity <= self.member.len() {
            return;
        }
        let mut ring = Vec::with_capacity(capacity);
        ring.extend(self.iter());
        ring.resize(capacity, 0);
        self.ring = ring;
        self.head = 0;
        self.member.resize(capacity, false);
    }

    /// Append `node`; false if it is already idle (a duplicate report).
    #[inline]
    pub fn push(&mut self, node: NodeId) -> bool {
        if self.member[node as usize] {
            return false;
        }
        self.member[node as usize] = true;
        let cap = self.ring.len();
        self.ring[(self.head + self.len) % cap] = node;
        self.len += 1;
        true
    }

    #[inline]
    pub fn pop(&mut self) -> Option<NodeId> {
        if self.len == 0 {
            return None;
        }
        let node = self.ring[self.head];
        self.head = (self.head + 1) % self.ring.len();
        self.len -= 1;
        self.member[node as usize] = false;
        Some(node)
    }

    /// Control plane: take `node` out wherever it is (O(len)).
    pub fn remove(&mut self, node: NodeId) -> bool {
        if !self.contains(node) {
            return false;
        }
        let cap = self.ring.len();
        let mut w = 0;
        for r in 0..self.len {
            let n = self.ring[(self.head + r) % cap];
            if n != node {
                self.ring[(self.head + w) % cap] = n;
                w += 1;
            }
        }
        self.len = w;
        self.member[node as usize] = false;
        true
    }

    pub fn contains(&self, node: NodeId) -> bool {
        self.member.get(node as usize).copied().unwrap_or(false)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Idle nodes, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.len).map(move |i| self.ring[(self.head + i) % self.ring.len()])
    }
}

/// Join-Idle-Queue with one dispatcher per pool (Lu et al. 2011): a worker
/// that finishes with an empty queue (`Reply{qlen: 0}`) joins the
/// dispatcher's I-queue; a task goes to the head of the I-queue, or to a
/// uniformly random worker if it is empty. JIQ's dispatchers are software, so
/// the I-queue is a plain FIFO ([`IdleFifo`]). All workers start idle.
///
/// Inputs: `Task`, `Reply` (unknown node: `Drop(UnknownNode)`); others
/// `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct Jiq {
    pipeline: Pipeline,
    rng: Rng,
    nodes: NodeSlots,
    idle: IdleFifo,
    affinity: AffinityTable,
}

impl Jiq {
    pub fn new(nodes: u32, seed: u64) -> Self {
        let mut idle = IdleFifo::new(nodes as usize);
        for n in 0..nodes {
            idle.push(n);
        }
        // The idle FIFO is idealised; registers: `count`, `nodes`, affinity.
        let mut layout = Layout::new();
        let slots = NodeSlots::new(&mut layout, nodes);
        let affinity = ReqTableConfig::default().build(&mut layout);
        Jiq {
            pipeline: Pipeline::with_layout(layout),
            rng: Rng::new(seed),
            nodes: slots,
            idle,
            affinity,
        }
    }

    /// A worker joins, idle.
    pub fn control_add_node(&mut self, node: NodeId) {
        if self.nodes.control_add(node) {
            self.idle.reserve_nodes(node as usize + 1);
            self.idle.push(node);
        }
    }

    pub fn control_remove_node(&mut self, node: NodeId) {
        if self.nodes.control_remove(node) {
            self.idle.remove(node);
            self.affinity.control_forget_node(node);
        }
    }

    pub fn idle_queue(&self) -> &IdleFifo {
        &self.idle
    }
}

/// Both idle-first baselines: the idle node if there is one, else a uniformly
/// random active node, which is not an idle decision.
#[inline]
fn idle_else_random(
    idle: Option<NodeId>,
    nodes: &mut NodeSlots,
    pass: &Pass,
    rng: &mut Rng,
) -> Option<(NodeId, Decision)> {
    match idle {
        Some(n) => Some((n, Decision::Idle)),
        None => nodes.random(pass, rng).map(|n| (n, Decision::Other)),
    }
}

impl DataPlane for Jiq {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                self.affinity
                    .dispatch(&mut self.pipeline, now, task, out, |pass| {
                        idle_else_random(self.idle.pop(), &mut self.nodes, pass, &mut self.rng)
                    });
            }
            Input::Reply { node, qlen, .. } => {
                self.pipeline.begin();
                if !self.nodes.contains(node) {
                    out.push(Action::Drop(DropReason::UnknownNode));
                } else if qlen == 0 {
                    // A repeated idle report (several replies while idle) is a no-op.
                    self.idle.push(node);
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// Horus's idle-node selection alone (App. C: "it schedules tasks to idle
/// nodes, and if there are no idle nodes, it will assign tasks to nodes
/// randomly"): the leaf's idleNodes of Alg. 1 ([`IdleNodes`], a stack whose
/// top is retrieved) with a uniformly random fallback instead of power-of-2.
/// All workers start idle, as at a Horus leaf.
///
/// One model shortcut: an idle reply from a worker already on the list is
/// skipped by a control-plane lookup. It happens when a stale idle report
/// crosses a random dispatch to the same worker; a switch would need the
/// membership bit of `idle.rs`, which a leaf's retrieve cannot clear in the
/// same pass, and without the check the duplicate could outgrow the list.
///
/// Inputs: `Task`, `Reply` (unknown node: `Drop(UnknownNode)`); others
/// `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct IdleOnly {
    pipeline: Pipeline,
    rng: Rng,
    nodes: NodeSlots,
    idle: IdleNodes,
    affinity: AffinityTable,
}

impl IdleOnly {
    pub fn new(nodes: u32, seed: u64) -> Self {
        // Stages: idleNodes, then `count` and `nodes` for the random
        // fallback, then the affinity table.
        let mut layout = Layout::new();
        let idle = IdleNodes::new(&mut layout, nodes as usize, false);
        let slots = NodeSlots::new(&mut layout, nodes);
        let affinity = ReqTableConfig::default().build(&mut layout);
        let mut s = IdleOnly {
            pipeline: Pipeline::with_layout(layout),
            rng: Rng::new(seed),
            nodes: slots,
            idle,
            affinity,
        };
        for n in 0..nodes {
            let pass = s.pipeline.begin();
            s.idle.add(&pass, n);
        }
        s
    }

    /// A worker joins, idle.
    pub fn control_add_node(&mut self, node: NodeId) {
        if !self.nodes.control_add(node) {
            return;
        }
        if node as usize >= self.idle.capacity() {
            self.idle.control_resize(node as usize + 1);
        }
        let pass = self.pipeline.begin();
        self.idle.add(&pass, node);
    }

    pub fn control_remove_node(&mut self, node: NodeId) {
        if !self.nodes.control_remove(node) {
            return;
        }
        self.affinity.control_forget_node(node);
        if self.idle.contains(node) {
            // The switch CPU injects an Alg. 1 remove; nothing else takes the lock here.
            let pass = self.pipeline.begin();
            match self.idle.remove_first(&pass, node) {
                RemoveFirst::Resubmit {
                    last_node,
                    removed_index,
                } => {
                    let pass = self.pipeline.resubmit();
                    self.idle.remove_second(&pass, last_node, removed_index);
                }
                RemoveFirst::Absent | RemoveFirst::RemovedTop | RemoveFirst::LockHeld => {
                    let pass = self.pipeline.resubmit();
                    self.idle.release(&pass);
                }
            }
        }
    }

    pub fn idle_nodes(&self) -> &IdleNodes {
        &self.idle
    }
}

affinity_sweep!(Jiq, IdleOnly);

impl DataPlane for IdleOnly {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                self.affinity
                    .dispatch(&mut self.pipeline, now, task, out, |pass| {
                        let idle = match self.idle.retrieve(pass) {
                            Retrieved::Node { node, .. } => Some(node),
                            Retrieved::Empty | Retrieved::Locked => None,
                        };
                        idle_else_random(idle, &mut self.nodes, pass, &mut self.rng)
                    });
            }
            Input::Reply { node, qlen, .. } => {
                if !self.nodes.contains(node) {
                    out.push(Action::Drop(DropReason::UnknownNode));
                    return;
                }
                let pass = self.pipeline.begin();
                if qlen == 0 && !self.idle.contains(node) {
                    self.idle.add(&pass, node);
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

    fn reply(node: NodeId, qlen: u32) -> Input {
        Input::Reply {
            node,
            qlen,
            class: 0,
            task: 0,
        }
    }

    fn decision_of(acts: &[Action]) -> (NodeId, Decision) {
        match acts {
            [Action::Dispatch(Dispatch { node, decision, .. })] => (*node, *decision),
            other => panic!("expected one dispatch, got {other:?}"),
        }
    }

    #[test]
    fn jiq_worker_reported_idle_gets_the_next_task() {
        let mut j = Jiq::new(6, 1);
        // Drain the start-up idle queue: each worker once, as idle picks.
        let mut first: Vec<NodeId> = (0..6)
            .map(|id| decision_of(&run(&mut j, 0, Input::Task(task(id)))))
            .map(|(n, d)| {
                assert_eq!(d, Decision::Idle);
                n
            })
            .collect();
        first.sort();
        assert_eq!(first, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(
            decision_of(&run(&mut j, 0, Input::Task(task(6)))).1,
            Decision::Other
        );
        // Busy replies do not make a worker idle; idle ones do, in report order.
        run(&mut j, 0, reply(2, 3));
        run(&mut j, 0, reply(4, 0));
        run(&mut j, 0, reply(4, 0));
        run(&mut j, 0, reply(1, 0));
        assert_eq!(
            decision_of(&run(&mut j, 0, Input::Task(task(7)))),
            (4, Decision::Idle)
        );
        assert_eq!(
            decision_of(&run(&mut j, 0, Input::Task(task(8)))),
            (1, Decision::Idle)
        );
        assert_eq!(
            decision_of(&run(&mut j, 0, Input::Task(task(9)))).1,
            Decision::Other,
            "duplicate report must not list 4 twice"
        );
        assert_eq!(
            run(&mut j, 0, reply(17, 0)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
    }

    #[test]
    fn jiq_removed_worker_leaves_the_idle_queue() {
        let mut j = Jiq::new(3, 1);
        j.control_remove_node(0);
        for id in 0..50 {
            assert_ne!(dispatched(&mut j, 0, Input::Task(task(id))), 0);
        }
        j.control_add_node(5);
        run(&mut j, 0, reply(1, 0));
        assert_eq!(j.idle_queue().iter().collect::<Vec<_>>(), vec![5, 1]);
    }

    #[test]
    fn idle_only_prefers_idle_workers_then_random() {
        let mut s = IdleOnly::new(4, 2);
        let mut got: Vec<NodeId> = (0..4)
            .map(|id| {
                let (n, d) = decision_of(&run(&mut s, 0, Input::Task(task(id))));
                assert_eq!(d, Decision::Idle);
                n
            })
            .collect();
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3]);
        let mut rand_seen = [false; 4];
        for id in 4..200 {
            let (n, d) = decision_of(&run(&mut s, 0, Input::Task(task(id))));
            assert_eq!(d, Decision::Other);
            rand_seen[n as usize] = true;
        }
        assert_eq!(rand_seen, [true; 4]);
        run(&mut s, 0, reply(3, 0));
        run(&mut s, 0, reply(3, 0));
        assert_eq!(
            decision_of(&run(&mut s, 0, Input::Task(task(500)))),
            (3, Decision::Idle)
        );
        assert_eq!(
            decision_of(&run(&mut s, 0, Input::Task(task(501)))).1,
            Decision::Other
        );
        s.idle_nodes().check_invariant().unwrap();
    }

    proptest! {
        /// Whatever the interleaving of tasks, idle reports (stale ones
        /// included) and membership changes, the idle list stays a valid
        /// idleNodes, and a task takes the idle path exactly when a listed
        /// worker exists.
        #[test]
        fn idle_only_list_stays_valid(seed in any::<u64>(), ops in proptest::collection::vec((0u8..4, 0u32..6, 0u32..3), 1..200)) {
            let mut s = IdleOnly::new(5, seed);
            for (i, (kind, node, q)) in ops.into_iter().enumerate() {
                match kind {
                    0 | 1 => {
                        let listed = !s.idle_nodes().is_empty();
                        let (n, d) = decision_of(&run(&mut s, 0, Input::Task(task(i as u64))));
                        prop_assert_eq!(d == Decision::Idle, listed);
                        prop_assert!(s.nodes.contains(n));
                    }
                    2 => { run(&mut s, 0, reply(node, q)); }
                    _ => if node % 2 == 0 { s.control_remove_node(node); } else { s.control_add_node(node); },
                }
                if s.nodes.is_empty() { s.control_add_node(0); }
                s.idle_nodes().check_invariant().map_err(TestCaseError::fail)?;
                for &n in s.idle_nodes().idle() {
                    prop_assert!(s.nodes.contains(n), "removed node {} still listed", n);
                }
            }
        }
    }
}
