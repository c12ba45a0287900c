//! Ideal join-the-shortest-queue (Horus §2.1: "an *ideal/theoretical*
//! version of JSQ that immediately updates queue lengths to show the
//! performance bounds"; §4.3 "a hypothetical switch that executes JSQ with
//! zero-delay state updates").

use super::affinity_only;
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox};
use crate::rng::Rng;
use crate::switch::Pipeline;
use crate::Nanos;

const ABSENT: u32 = u32::MAX;

/// Nodes bucketed by queue length, for O(1) minimum queries with uniform tie
/// breaking over pools of 20,000 workers.
///
/// `order` holds the active nodes sorted by queue length: bucket `q` is
/// `order[start[q]..start[q + 1]]`. A queue length moving by one swaps the
/// node to the edge of its bucket and shifts one boundary, so the common
/// ±1 change costs O(1) and a jump of `d` costs O(d). Queue lengths above
/// [`MinBuckets::QLEN_CAP`] are treated as the cap, which bounds memory and
/// changes no decision short of a pool whose every queue exceeds it.
#[derive(Clone, Debug)]
pub struct MinBuckets {
    order: Vec<NodeId>,
    /// Node -> index in `order`, `ABSENT` if not active.
    pos: Vec<u32>,
    /// Node -> (capped) queue length.
    qlen: Vec<u32>,
    /// Bucket boundaries; `start.len() >= 2`, `start[0] == 0`, last == `order.len()`.
    start: Vec<u32>,
    /// Lowest non-empty bucket (0 when empty).
    min: u32,
}

impl MinBuckets {
    pub const QLEN_CAP: u32 = 1 << 20;

    /// Nodes `0..n`, all active with queue length 0.
    pub fn new(n: u32) -> Self {
        MinBuckets {
            order: (0..n).collect(),
            pos: (0..n).collect(),
            qlen: vec![0; n as usize],
            start: vec![0, n],
            min: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn contains(&self, node: NodeId) -> bool {
        self.pos.get(node as usize).is_some_and(|&p| p != ABSENT)
    }

    /// The queue length last set for an active node.
    pub fn qlen(&self, node: NodeId) -> Option<u32> {
        self.contains(node).then(|| self.qlen[node as usize])
    }

    #[inline]
    fn swap(&mut self, i: u32, j: u32) {
        let (a, b) = (self.order[i as usize], self.order[j as usize]);
        self.order.swap(i as usize, j as usize);
        self.pos[a as usize] = j;
        self.pos[b as usize] = i;
    }

    /// One step up: to the end of its bucket, then the boundary moves below it.
    #[inline]
    fn up(&mut self, node: NodeId) {
        let q = self.qlen[node as usize];
        if q as usize + 2 == self.start.len() {
            self.start.push(self.order.len() as u32);
        }
        let end = self.start[q as usize + 1] - 1;
        self.swap(self.pos[node as usize], end);
        self.start[q as usize + 1] = end;
        self.qlen[node as usize] = q + 1;
        if q == self.min && self.start[q as usize] == self.start[q as usize + 1] {
            self.min = q + 1;
        }
    }

    /// One step down: to the front of its bucket, then the boundary moves above it.
    #[inline]
    fn down(&mut self, node: NodeId) {
        let q = self.qlen[node as usize];
        debug_assert!(q > 0);
        let front = self.start[q as usize];
        self.swap(self.pos[node as usize], front);
        self.start[q as usize] = front + 1;
        self.qlen[node as usize] = q - 1;
        if q - 1 < self.min {
            self.min = q - 1;
        }
    }

    /// Set an active node's queue length. Returns false for an inactive node.
    pub fn set(&mut self, node: NodeId, qlen: u32) -> bool {
        if !self.contains(node) {
            return false;
        }
        let target = qlen.min(Self::QLEN_CAP);
        while self.qlen[node as usize] < target {
            self.up(node);
        }
        while self.qlen[node as usize] > target {
            self.down(node);
        }
        true
    }

    /// A uniformly random node among those with the least queue length.
    #[inline]
    pub fn pick_min(&self, rng: &mut Rng) -> Option<NodeId> {
        if self.order.is_empty() {
            return None;
        }
        let lo = self.start[self.min as usize];
        let hi = self.start[self.min as usize + 1];
        debug_assert!(hi > lo);
        Some(self.order[(lo + rng.below(hi - lo)) as usize])
    }

    /// The least queue length, if any node is active.
    pub fn min_qlen(&self) -> Option<u32> {
        (!self.order.is_empty()).then_some(self.min)
    }

    /// Activate `node` with queue length 0. Returns false if it already was.
    pub fn add(&mut self, node: NodeId) -> bool {
        let n = node as usize;
        if n >= self.pos.len() {
            self.pos.resize(n + 1, ABSENT);
            self.qlen.resize(n + 1, 0);
        }
        if self.pos[n] != ABSENT {
            return false;
        }
        // Joins the top bucket at the end of `order`, then walks down to 0.
        let top = self.start.len() as u32 - 2;
        self.order.push(node);
        self.pos[n] = self.order.len() as u32 - 1;
        *self.start.last_mut().unwrap() += 1;
        self.qlen[n] = top;
        if self.order.len() == 1 {
            self.min = top;
        }
        while self.qlen[n] > 0 {
            self.down(node);
        }
        true
    }

    /// Deactivate `node`. Returns false if it was not active.
    pub fn remove(&mut self, node: NodeId) -> bool {
        if !self.contains(node) {
            return false;
        }
        // Walks up to the top bucket, whose last slot is the end of `order`.
        let top = self.start.len() as u32 - 2;
        while self.qlen[node as usize] < top {
            self.up(node);
        }
        let last = self.order.len() as u32 - 1;
        self.swap(self.pos[node as usize], last);
        self.order.pop();
        *self.start.last_mut().unwrap() -= 1;
        self.pos[node as usize] = ABSENT;
        self.qlen[node as usize] = 0;
        self.min = (0..self.start.len() - 1)
            .find(|&q| self.start[q] < self.start[q + 1])
            .unwrap_or(0) as u32;
        true
    }

    /// Every active node sits in its bucket, `pos` and `order` agree, and
    /// `min` is the least non-empty bucket.
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.start.len() < 2
            || self.start[0] != 0
            || *self.start.last().unwrap() as usize != self.order.len()
        {
            return Err(format!(
                "bad bucket bounds {:?}",
                &self.start[..self.start.len().min(8)]
            ));
        }
        for q in 0..self.start.len() - 1 {
            if self.start[q] > self.start[q + 1] {
                return Err(format!("bucket {q} has negative size"));
            }
            for i in self.start[q]..self.start[q + 1] {
                let node = self.order[i as usize];
                if self.pos[node as usize] != i {
                    return Err(format!("pos[{node}] != {i}"));
                }
                if self.qlen[node as usize] as usize != q {
                    return Err(format!(
                        "node {node} with qlen {} in bucket {q}",
                        self.qlen[node as usize]
                    ));
                }
            }
        }
        if let Some(m) = self.min_qlen() {
            let real = self
                .order
                .iter()
                .map(|&n| self.qlen[n as usize])
                .min()
                .unwrap();
            if m != real {
                return Err(format!("min {m} != real min {real}"));
            }
        }
        Ok(())
    }
}

/// Ideal JSQ: each task goes to a node with the shortest queue, chosen
/// uniformly at random among all shortest, on a zero-delay global view fed by
/// `QueueChanged`. A queue counts every task dispatched to the node and not
/// yet finished, including those still in flight: the scheduler counts its
/// own dispatch at once, and the driver reports the count
/// (dispatched-and-unfinished) after every dispatch, arrival and completion.
///
/// This is the theoretical bound the papers plot (Horus §2.1, §4.3; RackSched
/// §2), and it is deliberately *not* restricted by the switch model: a switch
/// cannot find the minimum of thousands of counters in one pass (RackSched
/// §3.3), so the view lives in plain vectors ([`MinBuckets`]). Only the
/// affinity table for multi-packet tasks uses registers.
///
/// Inputs: `Task`, `QueueChanged` (unknown node: `Drop(UnknownNode)`);
/// `Reply` is ignored (the oracle already knows); others `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct Jsq {
    pipeline: Pipeline,
    rng: Rng,
    view: MinBuckets,
    affinity: AffinityTable,
}

impl Jsq {
    /// Nodes `0..nodes`, all with empty queues.
    pub fn new(nodes: u32, seed: u64) -> Self {
        let (pipeline, affinity) = affinity_only();
        Jsq {
            pipeline,
            rng: Rng::new(seed),
            view: MinBuckets::new(nodes),
            affinity,
        }
    }

    pub fn view(&self) -> &MinBuckets {
        &self.view
    }
}

membership_with_affinity!(Jsq, view, add, remove);
affinity_sweep!(Jsq);

impl DataPlane for Jsq {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                self.affinity
                    .dispatch(&mut self.pipeline, now, task, out, |_| {
                        let node = self.view.pick_min(&mut self.rng)?;
                        // Zero-delay knowledge includes this task: it is on the
                        // node's queue from now on, even while it is still on
                        // the wire, or the next tasks would join the same queue.
                        // The driver's next `QueueChanged`
                        // for the node replaces the count.
                        let q = self.view.qlen(node).unwrap_or(0);
                        self.view.set(node, q.saturating_add(1));
                        Some((node, Decision::Other))
                    });
            }
            Input::QueueChanged { node, qlen } => {
                if !self.view.set(node, qlen) {
                    out.push(Action::Drop(DropReason::UnknownNode));
                }
            }
            Input::Reply { .. } => {}
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
    use crate::rng::Rng;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Set(u32, u32),
        Remove(u32),
        Add(u32),
        Task,
    }

    fn op(n: u32) -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..n, 0..6u32).prop_map(|(a, b)| Op::Set(a, b)),
            1 => (0..n, 0..40u32).prop_map(|(a, b)| Op::Set(a, b)),
            1 => (0..n).prop_map(Op::Remove),
            1 => (0..n + 3).prop_map(Op::Add),
            4 => Just(Op::Task),
        ]
    }

    proptest! {
        /// JSQ against a brute-force model: every task lands on a true minimum.
        #[test]
        fn jsq_dispatches_to_a_true_minimum(seed in any::<u64>(), ops in proptest::collection::vec(op(12), 1..300)) {
            let mut jsq = Jsq::new(12, seed);
            let mut model: Vec<Option<u32>> = vec![Some(0); 12];
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Set(n, q) => {
                        let acts = run(&mut jsq, 0, Input::QueueChanged { node: n, qlen: q });
                        match model[n as usize] {
                            Some(_) => { model[n as usize] = Some(q); prop_assert!(acts.is_empty()); }
                            None => prop_assert_eq!(acts, vec![Action::Drop(DropReason::UnknownNode)]),
                        }
                    }
                    Op::Remove(n) => { jsq.control_remove_node(n); if (n as usize) < model.len() { model[n as usize] = None; } }
                    Op::Add(n) => {
                        jsq.control_add_node(n);
                        if n as usize >= model.len() { model.resize(n as usize + 1, None); }
                        if model[n as usize].is_none() { model[n as usize] = Some(0); }
                    }
                    Op::Task => {
                        let acts = run(&mut jsq, 0, Input::Task(task(i as u64)));
                        let min = model.iter().flatten().min().copied();
                        match (acts.as_slice(), min) {
                            ([Action::Dispatch(Dispatch { node, .. })], Some(m)) => {
                                prop_assert_eq!(model[*node as usize], Some(m));
                                model[*node as usize] = Some(m + 1);
                            }
                            ([Action::Drop(DropReason::NoNodes)], None) => {}
                            (a, m) => prop_assert!(false, "{:?} with model min {:?}", a, m),
                        }
                    }
                }
                jsq.view.check_invariants().map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn ties_spread_over_all_minimum_nodes() {
        let mut jsq = Jsq::new(16, 3);
        // Nodes 0..4 are busier; the other twelve tie at 1.
        for n in 0..16 {
            run(
                &mut jsq,
                0,
                Input::QueueChanged {
                    node: n,
                    qlen: if n < 4 { 3 } else { 1 },
                },
            );
        }
        let mut seen = [0u32; 16];
        for id in 0..1200 {
            let node = dispatched(&mut jsq, 0, Input::Task(task(id)));
            seen[node as usize] += 1;
            // The task finishes before the next arrives: the tie stays.
            run(&mut jsq, 0, Input::QueueChanged { node, qlen: 1 });
        }
        assert!(seen[..4].iter().all(|&c| c == 0), "{seen:?}");
        assert!(
            seen[4..].iter().all(|&c| (50..150).contains(&c)),
            "ties must spread uniformly: {seen:?}"
        );
    }

    /// Issue 13 item 5: a task counts at its node from its dispatch, before
    /// any `QueueChanged` reports it, so back-to-back tasks never herd onto
    /// one idle node while others are idle.
    #[test]
    fn back_to_back_dispatches_spread_over_idle_nodes() {
        for seed in 0..50 {
            let mut jsq = Jsq::new(8, seed);
            let mut used = [0u32; 8];
            for id in 0..16 {
                used[dispatched(&mut jsq, 0, Input::Task(task(id))) as usize] += 1;
                let most = *used.iter().max().unwrap();
                let least = *used.iter().min().unwrap();
                assert!(most - least <= 1, "seed {seed}, after task {id}: {used:?}");
            }
            assert_eq!(jsq.view().qlen(3), Some(2));
            // The driver's report is the truth: it replaces the count.
            run(&mut jsq, 0, Input::QueueChanged { node: 3, qlen: 0 });
            assert_eq!(dispatched(&mut jsq, 0, Input::Task(task(99))), 3);
        }
    }

    #[test]
    fn large_pool_and_jumps() {
        let mut b = MinBuckets::new(20_000);
        let mut rng = Rng::new(9);
        for n in 0..20_000 {
            b.set(n, 1 + rng.below(5));
        }
        b.set(12_345, 0);
        assert_eq!(b.pick_min(&mut rng), Some(12_345));
        b.set(12_345, 100);
        b.set(7, u32::MAX);
        assert_eq!(b.qlen(7), Some(MinBuckets::QLEN_CAP));
        assert_eq!(b.min_qlen(), Some(1));
        b.check_invariants().unwrap();
    }
}
