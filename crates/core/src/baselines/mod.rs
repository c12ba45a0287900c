//! Baseline schedulers the papers compare against, over a flat set of nodes
//! (all workers of a pool, or the racks under RS-LB's balancer).
//!
//! | type | policy | state updates | switch model |
//! |---|---|---|---|
//! | [`RandomDispatch`] / [`UniformLb`] | uniform per request | none | yes |
//! | [`RoundRobin`] | round robin | none | yes |
//! | [`Jsq`] | join the shortest queue, ties at random | `QueueChanged` (ideal) | no (bound) |
//! | [`PowKInstant`] | power-of-k | `QueueChanged` (ideal) | yes, k copies |
//! | [`pow_k_delayed`] | power-of-k (RackSched, Horus App. C DU) | replies only | yes |
//! | [`Jiq`] | join the idle queue, else random | idle replies | software dispatcher |
//! | [`IdleOnly`] | Horus idle list, else random | idle replies | yes, plus a model shortcut |
//! | [`CentralQueue`] | one FIFO over all workers (M/M/c) | replies | software |
//! | [`Jbsq`] | R2P2's JBSQ(k): a FIFO, at most k outstanding per node | replies | software |
//!
//! Input conventions shared by every type here:
//! * A `Reply` carries information a scheduler may ignore: replies pass every
//!   rack-level scheduler, so one that does not use them takes no action.
//! * `QueueChanged` is the zero-delay oracle feed of the ideal baselines. The
//!   driver must feed the change a dispatch causes before the next task (that
//!   is what "zero delay" means). Any other scheduler drops it as
//!   `Unexpected`, as it does messages of other roles (`IdleAdd`, `IdleRemove`,
//!   `LoadUpdate`, `Resubmit`).
//! * Multi-packet tasks: a continuation follows its first packet through an
//!   [`AffinityTable`] freed by the last packet (Horus §A.4); a miss is
//!   `Drop(NoAffinity)`. Stateless dispatchers hash the task id instead.

/// The control plane of a baseline whose node set (`$set`) reports
/// whether `$add` / `$remove` changed it, and which keeps continuations in
/// an `affinity` table (Horus §A.4): a removed node's entries are forgotten.
/// One body for every such baseline.
macro_rules! membership_with_affinity {
    ($plane:ty, $set:ident, $add:ident, $remove:ident) => {
        impl $plane {
            /// A node joins with an empty queue.
            pub fn control_add_node(&mut self, node: NodeId) {
                self.$set.$add(node);
            }

            pub fn control_remove_node(&mut self, node: NodeId) {
                if self.$set.$remove(node) {
                    self.affinity.control_forget_node(node);
                }
            }
        }
    };
}

/// The switch CPU's sweep of expired `affinity` entries (continuations
/// whose last packet never came), the same for every baseline keeping one.
macro_rules! affinity_sweep {
    ($($plane:ty),* $(,)?) => {$(
        impl $plane {
            /// Frees entries idle since before `now` less the table's
            /// timeout; returns how many.
            pub fn control_sweep(&mut self, now: u64) -> u64 {
                self.affinity.control_sweep(now)
            }
        }
    )*};
}

mod central;
mod idle;
mod jbsq;
mod jsq;
mod powk;

pub use central::CentralQueue;
pub use idle::{IdleFifo, IdleOnly, Jiq};
pub use jbsq::Jbsq;
pub use jsq::{Jsq, MinBuckets};
pub use powk::PowKInstant;

use crate::affinity::{stage_hash, AffinityTable};
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox, TaskMeta};
use crate::racksched::{RackSched, RackSchedConfig, ReqTableConfig};
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray};
use crate::Nanos;

const NO_SLOT: u32 = u32::MAX;

/// Pow-of-2 Delayed Updated (Horus App. C): power-of-2 on loads that only
/// replies change, "as done in RackSched". It is RackSched with k = 2.
pub fn pow2_delayed(nodes: u32, seed: u64) -> RackSched {
    pow_k_delayed(nodes, 2, seed)
}

/// Power-of-k with delayed (reply-only) updates: RackSched drawing
/// `samples` per decision.
pub fn pow_k_delayed(nodes: u32, samples: u32, seed: u64) -> RackSched {
    RackSched::new(
        nodes,
        seed,
        RackSchedConfig {
            samples,
            ..RackSchedConfig::default()
        },
    )
}

/// The pipeline of a baseline whose only register arrays are the affinity
/// table's (its scheduling state is an idealised structure).
pub(crate) fn affinity_only() -> (Pipeline, AffinityTable) {
    let mut layout = Layout::new();
    let affinity = ReqTableConfig::default().build(&mut layout);
    (Pipeline::with_layout(layout), affinity)
}

/// The active nodes in slots `0..count`, so that a uniform slot is a uniform
/// active node. Removing a node moves the last slot into its place. Stages:
/// `count`, then `nodes` (indexed by a slot drawn below `count`).
#[derive(Clone, Debug)]
pub struct NodeSlots {
    /// Node -> slot; control plane only.
    slot_of: Vec<u32>,
    nodes: RegisterArray<NodeId>,
    count: RegisterArray<u32>,
}

impl NodeSlots {
    /// Nodes `0..n`, all active.
    pub fn new(layout: &mut Layout, n: u32) -> Self {
        Self::with_between(layout, n, |_| ()).0
    }

    /// As [`NodeSlots::new`], with `between` placing the arrays of the stages
    /// between `count` and `nodes` (round robin's cursor).
    pub fn with_between<R>(
        layout: &mut Layout,
        n: u32,
        between: impl FnOnce(&mut Layout) -> R,
    ) -> (Self, R) {
        let count = layout.stage();
        let count = layout.array(count, "slots.count", 1, 0);
        let placed = between(layout);
        let nodes = layout.stage();
        let mut s = NodeSlots {
            slot_of: Vec::with_capacity(n as usize),
            nodes: layout.array(nodes, "slots.nodes", n as usize, 0),
            count,
        };
        for node in 0..n {
            s.control_add(node);
        }
        (s, placed)
    }

    /// Data plane: number of active nodes.
    #[inline]
    pub fn active(&mut self, pass: &Pass) -> u32 {
        self.count.read(pass, 0)
    }

    /// Data plane: the node in `slot` (`slot < active`).
    #[inline]
    pub fn node_at(&mut self, pass: &Pass, slot: u32) -> NodeId {
        self.nodes.read(pass, slot as usize)
    }

    /// Data plane: a uniformly random active node, `None` if there is none.
    #[inline]
    pub fn random(&mut self, pass: &Pass, rng: &mut Rng) -> Option<NodeId> {
        let n = self.active(pass);
        (n > 0).then(|| {
            let slot = rng.below(n);
            self.node_at(pass, slot)
        })
    }

    pub fn control_add(&mut self, node: NodeId) -> bool {
        let n = node as usize;
        if n >= self.slot_of.len() {
            self.slot_of.resize(n + 1, NO_SLOT);
        }
        if self.slot_of[n] != NO_SLOT {
            return false;
        }
        let slot = self.count.peek(0) as usize;
        if slot >= self.nodes.len() {
            self.nodes
                .control_resize((slot + 1).max(self.nodes.len() * 2), 0);
        }
        self.nodes.control_write(slot, node);
        self.slot_of[n] = slot as u32;
        self.count.control_write(0, slot as u32 + 1);
        true
    }

    pub fn control_remove(&mut self, node: NodeId) -> bool {
        if !self.contains(node) {
            return false;
        }
        let slot = self.slot_of[node as usize] as usize;
        let last = self.count.peek(0) as usize - 1;
        if slot != last {
            let moved = self.nodes.peek(last);
            self.nodes.control_write(slot, moved);
            self.slot_of[moved as usize] = slot as u32;
        }
        self.slot_of[node as usize] = NO_SLOT;
        self.count.control_write(0, last as u32);
        true
    }

    pub fn contains(&self, node: NodeId) -> bool {
        self.slot_of
            .get(node as usize)
            .is_some_and(|&s| s != NO_SLOT)
    }

    pub fn len(&self) -> u32 {
        self.count.peek(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Active nodes in slot order.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes.as_slice()[..self.len() as usize]
    }
}

/// Continuation packets follow the first packet (Horus §A.4). Returns true if
/// `task` was a continuation and has been handled.
///
/// The test of `first` is inlined into every data plane's task path; the
/// table lookup stays out of line (the call was 20 of a busy Horus leaf
/// step's 600 instructions, for a single-packet task).
#[inline(always)]
pub(crate) fn follow(
    table: &mut AffinityTable,
    pass: &Pass,
    now: u64,
    task: TaskMeta,
    out: &mut Outbox,
) -> bool {
    if task.first {
        return false;
    }
    follow_continuation(table, pass, now, task, out);
    true
}

fn follow_continuation(
    table: &mut AffinityTable,
    pass: &Pass,
    now: u64,
    task: TaskMeta,
    out: &mut Outbox,
) {
    let entry = if task.last {
        table.remove(pass, task.id)
    } else {
        table.lookup(pass, now, task.id)
    };
    match entry {
        Some(e) => out.push(Action::dispatch(e.node, task, Decision::Other)),
        None => out.push(Action::Drop(DropReason::NoAffinity)),
    }
}

/// Remember where a first packet went, unless it is also the last. An
/// overflow is counted by the table; the continuations then drop.
#[inline]
pub(crate) fn remember(
    table: &mut AffinityTable,
    pass: &Pass,
    now: u64,
    task: TaskMeta,
    node: NodeId,
) {
    if !task.last {
        table.insert(pass, now, task.id, node, 0);
    }
}

impl AffinityTable {
    /// The task path of every baseline that keeps continuations in an
    /// affinity table (Horus §A.4), one pass of `pipeline`: a continuation
    /// follows its first packet; a first packet goes where `choose` says
    /// (`None`: no active node, `Drop(NoNodes)`) and is remembered for its
    /// continuations.
    #[inline(always)]
    pub(crate) fn dispatch(
        &mut self,
        pipeline: &mut Pipeline,
        now: Nanos,
        task: TaskMeta,
        out: &mut Outbox,
        choose: impl FnOnce(&Pass) -> Option<(NodeId, Decision)>,
    ) {
        let pass = pipeline.begin();
        let now = now.get();
        if follow(self, &pass, now, task, out) {
            return;
        }
        let Some((node, decision)) = choose(&pass) else {
            out.push(Action::Drop(DropReason::NoNodes));
            return;
        };
        remember(self, &pass, now, task, node);
        out.push(Action::dispatch(node, task, decision));
    }
}

/// Uniformly random dispatch, stateless: the node is a seeded hash of the
/// task id over the active nodes, as hash-based load balancers do (RackSched
/// §3.3 Fig. 6; Horus §2.1). Distinct ids land uniformly, and every packet
/// of one task lands on the same node without any table.
///
/// Inputs: `Task`; `Reply` is ignored; others are `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct RandomDispatch {
    pipeline: Pipeline,
    salt: u64,
    nodes: NodeSlots,
}

/// RS-LB's upper layer (Horus §2.1, §4.1): "a datacenter load balancer that
/// uniformly (at random) distributes tasks to racks". Its nodes are racks.
pub type UniformLb = RandomDispatch;

impl RandomDispatch {
    pub fn new(nodes: u32, seed: u64) -> Self {
        let mut layout = Layout::new();
        let nodes = NodeSlots::new(&mut layout, nodes);
        RandomDispatch {
            pipeline: Pipeline::with_layout(layout),
            salt: Rng::new(seed).next_u64(),
            nodes,
        }
    }

    pub fn control_add_node(&mut self, node: NodeId) {
        self.nodes.control_add(node);
    }

    pub fn control_remove_node(&mut self, node: NodeId) {
        self.nodes.control_remove(node);
    }

    pub fn nodes(&self) -> &NodeSlots {
        &self.nodes
    }
}

impl DataPlane for RandomDispatch {
    fn handle(&mut self, _now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                let pass = self.pipeline.begin();
                let n = self.nodes.active(&pass);
                if n == 0 {
                    out.push(Action::Drop(DropReason::NoNodes));
                    return;
                }
                let slot = (stage_hash(task.id ^ self.salt, 0) % n as u64) as u32;
                let node = self.nodes.node_at(&pass, slot);
                out.push(Action::dispatch(node, task, Decision::Other));
            }
            Input::Reply { .. } => {}
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// Round robin over the active nodes, per task. Stage order: `count`,
/// `next`, `nodes`, then the affinity stages.
///
/// Inputs: `Task`; `Reply` is ignored; others are `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct RoundRobin {
    pipeline: Pipeline,
    nodes: NodeSlots,
    next: RegisterArray<u32>,
    affinity: AffinityTable,
}

impl RoundRobin {
    /// The seed picks the starting position, so that several dispatchers over
    /// one pool do not move in lockstep.
    pub fn new(nodes: u32, seed: u64) -> Self {
        let start = if nodes > 0 {
            Rng::new(seed).below(nodes)
        } else {
            0
        };
        // Stages: `count`, the cursor (taken modulo `count`), `nodes`, the
        // affinity table.
        let mut layout = Layout::new();
        let (nodes, next) = NodeSlots::with_between(&mut layout, nodes, |layout| {
            let stage = layout.stage();
            layout.array(stage, "rr.next", 1, start)
        });
        let affinity = ReqTableConfig::default().build(&mut layout);
        RoundRobin {
            pipeline: Pipeline::with_layout(layout),
            nodes,
            next,
            affinity,
        }
    }

    pub fn nodes(&self) -> &NodeSlots {
        &self.nodes
    }
}

membership_with_affinity!(RoundRobin, nodes, control_add, control_remove);
affinity_sweep!(RoundRobin);

impl DataPlane for RoundRobin {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(task) => {
                self.affinity
                    .dispatch(&mut self.pipeline, now, task, out, |pass| {
                        let n = self.nodes.active(pass);
                        if n == 0 {
                            return None;
                        }
                        let slot = self.next.update(pass, 0, |c| {
                            let s = *c % n;
                            *c = (s + 1) % n;
                            s
                        });
                        Some((self.nodes.node_at(pass, slot), Decision::Other))
                    });
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
pub(crate) mod testutil {
    use crate::dataplane::{Action, DataPlane, Dispatch, Input, NodeId, Outbox, TaskMeta};

    pub fn task(id: u64) -> TaskMeta {
        TaskMeta::single(id)
    }

    pub fn run(dp: &mut impl DataPlane, now: u64, input: Input) -> Vec<Action> {
        let mut out = Outbox::new();
        dp.handle(crate::Nanos::new(now), input, &mut out);
        out.drain().collect()
    }

    /// A task's completion reported by `node` (the load-free reply JBSQ and
    /// the central queue count outstanding tasks with).
    pub fn done(node: NodeId) -> Input {
        Input::Reply {
            node,
            qlen: 0,
            class: 0,
            task: 0,
        }
    }

    /// The node of the single Dispatch `input` produced.
    pub fn dispatched(dp: &mut impl DataPlane, now: u64, input: Input) -> NodeId {
        match run(dp, now, input).as_slice() {
            [Action::Dispatch(Dispatch { node, .. })] => *node,
            other => panic!("expected one dispatch, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn random_dispatch_is_uniform_and_keeps_multi_packet_tasks_together() {
        let mut rd = RandomDispatch::new(8, 5);
        let mut counts = [0u32; 8];
        for id in 0..80_000u64 {
            counts[dispatched(&mut rd, 0, Input::Task(task(id))) as usize] += 1;
        }
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        let first = TaskMeta {
            id: 99,
            first: true,
            last: false,
            ..TaskMeta::default()
        };
        let n = dispatched(&mut rd, 0, Input::Task(first));
        for last in [false, true] {
            let cont = TaskMeta {
                first: false,
                last,
                ..first
            };
            assert_eq!(dispatched(&mut rd, 0, Input::Task(cont)), n);
        }
    }

    #[test]
    fn random_dispatch_skips_removed_nodes() {
        let mut lb = UniformLb::new(4, 1);
        lb.control_remove_node(2);
        for id in 0..1000 {
            assert_ne!(dispatched(&mut lb, 0, Input::Task(task(id))), 2);
        }
        for n in [0, 1, 3] {
            lb.control_remove_node(n);
        }
        assert_eq!(
            run(&mut lb, 0, Input::Task(task(1))),
            vec![Action::Drop(DropReason::NoNodes)]
        );
    }

    #[test]
    fn round_robin_cycles_and_follows_affinity() {
        let mut rr = RoundRobin::new(3, 0);
        let seq: Vec<NodeId> = (0..6)
            .map(|id| dispatched(&mut rr, 0, Input::Task(task(id))))
            .collect();
        assert_eq!(&seq[..3], &seq[3..]);
        let mut sorted = seq[..3].to_vec();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2]);
        let first = TaskMeta {
            id: 50,
            first: true,
            last: false,
            ..TaskMeta::default()
        };
        let n = dispatched(&mut rr, 0, Input::Task(first));
        // Other tasks move the pointer; the continuation must not follow it.
        dispatched(&mut rr, 0, Input::Task(task(51)));
        assert_eq!(
            dispatched(
                &mut rr,
                0,
                Input::Task(TaskMeta {
                    first: false,
                    last: true,
                    ..first
                })
            ),
            n
        );
        assert_eq!(
            run(
                &mut rr,
                0,
                Input::Task(TaskMeta {
                    first: false,
                    last: true,
                    ..first
                })
            ),
            vec![Action::Drop(DropReason::NoAffinity)],
            "the last packet freed the entry"
        );
    }

    #[test]
    fn node_slots_remove_and_add_keep_slots_dense() {
        let mut s = NodeSlots::new(&mut Layout::new(), 5);
        s.control_remove(1);
        s.control_remove(4);
        assert!(s.control_add(7));
        let mut nodes = s.nodes().to_vec();
        nodes.sort();
        assert_eq!(nodes, vec![0, 2, 3, 7]);
        assert!(!s.contains(1) && s.contains(7));
    }
}
