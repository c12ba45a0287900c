//! The sans-IO contract between a scheduler data plane and whatever drives it
//! (the simulator, the UDP runtime, tests).
//!
//! A driver feeds one [`Input`] at a time together with the current time; the
//! data plane appends what must happen to an [`Outbox`]. It owns no socket,
//! clock or thread and allocates nothing per input. A [`Action::Resubmit`] is
//! not executed by the data plane itself: the driver feeds it back as
//! [`Input::Resubmit`], which starts a new pass, so other packets can interleave
//! between the passes exactly as they can on a switch.

use crate::outbox::{ActionList, ActionSlots};
use crate::switch::Pipeline;
use crate::time::Nanos;

/// A downstream node of one scheduler instance, numbered locally from 0:
/// a worker for a leaf, a rack (leaf scheduler) for a spine.
pub type NodeId = u32;

/// Horus §3.2: application id (upper 32 bits) concatenated with a sequence
/// number (lower 32 bits). RackSched's REQ_ID <client id, local id> maps the
/// same way.
pub type TaskId = u64;

/// What a scheduler sees of a task packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaskMeta {
    pub id: TaskId,
    /// First packet of the task (`task` / `REQF`) rather than a continuation.
    pub first: bool,
    /// Last packet of the task (Horus `isLastPacket`, §A.4).
    pub last: bool,
    /// Set by a Horus spine when it picked the rack from its idle list; read by
    /// the leaf to detect lost Idle Add/Remove messages (Horus §A.3).
    pub idle_selected: bool,
    /// The upstream scheduler the packet came from (a spine id), kept by a
    /// leaf's connection table (Horus §A.4).
    pub upstream: u32,
    /// Task class for per-type load counters (RackSched §3.3 multi-queue).
    pub class: u8,
}

impl TaskMeta {
    /// Task `id` of one packet (first and last), from no upstream.
    pub fn single(id: TaskId) -> TaskMeta {
        TaskMeta {
            id,
            first: true,
            last: true,
            ..TaskMeta::default()
        }
    }
}

/// A state message from a leaf to spine(s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    IdleAdd,
    IdleRemove,
    /// `horus-tokens`: a worker of the rack owes one task and can take one
    /// more without waiting behind more than the one it runs.
    SlotAdd,
    /// Rack average load in 16.16 fixed point (Horus §A.2) or RS-H rack load.
    LoadUpdate(u32),
}

/// Which upstream schedulers a notice goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upstream {
    /// The one spine this leaf is linked with (Horus §3.4).
    Linked,
    /// Every spine serving the pool (RS-H, Horus §5.2).
    All,
}

/// Why a data plane dropped an input. Every drop is counted by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// An idleRemove found the idleNodes lock held (Horus §3.3); the leaf re-sends later.
    LockHeld,
    /// Idle Add for a node already idle, or Idle Remove for one that is not (duplicates
    /// created by the re-send rule of Horus §A.3 while the original is in flight).
    StaleIdleUpdate,
    /// A message names a node this scheduler does not have.
    UnknownNode,
    /// No downstream node is available (all removed or failed).
    NoNodes,
    /// A continuation packet whose task has no affinity entry (expired or never inserted).
    NoAffinity,
    /// A bounded queue or table is full.
    Overflow,
    /// A task recirculated more often than its budget allows (R2P2 JBSQ).
    RecirculationBudget,
    /// A message this scheduler role never handles (a reply at a spine...).
    Unexpected,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::LockHeld,
        DropReason::StaleIdleUpdate,
        DropReason::UnknownNode,
        DropReason::NoNodes,
        DropReason::NoAffinity,
        DropReason::Overflow,
        DropReason::RecirculationBudget,
        DropReason::Unexpected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::LockHeld => "lock_held",
            DropReason::StaleIdleUpdate => "stale_idle_update",
            DropReason::UnknownNode => "unknown_node",
            DropReason::NoNodes => "no_nodes",
            DropReason::NoAffinity => "no_affinity",
            DropReason::Overflow => "overflow",
            DropReason::RecirculationBudget => "recirculation_budget",
            DropReason::Unexpected => "unexpected",
        }
    }
}

/// How a task's destination was chosen, for the decision-type metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// From an idle list (Horus idleNodes, JIQ).
    Idle,
    /// Power-of-k sampling over loads.
    Sampled,
    /// Any other rule (random, round robin, JSQ, affinity, central queue).
    Other,
}

/// Metadata a resubmitted packet carries into its next pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resubmit {
    /// Horus Alg. 1 remove, second pass: move `last_node` into `removed_index`.
    IdleRemove {
        last_node: NodeId,
        removed_index: u32,
    },
    /// Horus Alg. 1 remove that found the node absent: the second pass only releases the lock.
    IdleRemoveRelease,
    /// A Horus leaf popped a stale idle entry: schedule the task again.
    Retry { task: TaskMeta },
    /// A Horus leaf's worker answered every task it was sent, but the last
    /// reply to arrive reported a queue: list the worker as idle again.
    Relist { node: NodeId },
    /// Horus Alg. 2 resubmit path: actual loads (load + drift) of both samples.
    Pow2 {
        task: TaskMeta,
        samples: Pow2Samples,
    },
    /// RackSched Proactive tracking (§3.5), second pass: add one to the
    /// chosen server's counter of `class`, which the first pass could not
    /// write after reading every LoadTable copy.
    CountDispatch { node: NodeId, class: u8 },
}

/// What the first pass of Horus Alg. 2 read of its two samples; the lighter
/// looking one is `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pow2Samples {
    pub first: NodeId,
    pub first_load: u32,
    pub first_drift: u32,
    /// Report count of `first`'s load entry (see `pow2.rs`).
    pub first_epoch: u16,
    pub second: NodeId,
    pub second_load: u32,
    pub second_drift: u32,
    pub second_epoch: u16,
}

/// One thing a data plane asks its driver to do.
///
/// A full-word tag (`repr(u64)`), as [`Input`] has: every payload starts at
/// byte 8 and no padding lies between tag and payload. With the default
/// layout rustc hides the tag in [`Resubmit`]'s niche; with a one-byte tag
/// (`repr(u8)`) it copied a [`Dispatch`] into the outbox as bytes 1..29
/// (padding 1..8 included) through a stack temporary, whose 16-byte reload
/// at byte 1 straddled the task's store at byte 8: a store the store buffer
/// cannot forward, on every dispatch (the hottest instructions of a busy
/// leaf in `bench dataplane`'s profile). The price is 56 bytes, as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Action {
    /// Forward the task to a downstream node.
    Dispatch(Dispatch),
    /// Run another pass with this metadata (feed back as [`Input::Resubmit`]).
    Resubmit(Resubmit),
    /// Send a state message to upstream scheduler(s).
    Notify { to: Upstream, notice: Notice },
    /// The input was dropped.
    Drop(DropReason),
    /// The task was buffered inside the scheduler (central queue baselines).
    Queued,
}

/// A decision to forward `task` to downstream node `node`: one value, so a
/// driver can hand it on (count it, route it, compare it) whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub node: NodeId,
    pub task: TaskMeta,
    pub decision: Decision,
}

impl Action {
    /// [`Action::Dispatch`] of `task` to `node`, decided by `decision`.
    #[inline(always)]
    pub fn dispatch(node: NodeId, task: TaskMeta, decision: Decision) -> Action {
        Action::Dispatch(Dispatch {
            node,
            task,
            decision,
        })
    }
}

/// What a driver feeds a data plane.
///
/// A full-word tag (see [`Action`] for the copy it avoids): with a one-byte
/// tag a driver's `Some(Input::Resubmit(r))` copied bytes 1..56 through a
/// temporary, misaligned against the stores that filled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Input {
    /// A task packet from a client or an upstream scheduler.
    Task(TaskMeta),
    /// A reply from downstream node `node` carrying its queue length (Horus
    /// agent, RackSched LOAD). `class` is the completed task's class; with
    /// RackSched multi-queue (§3.6) `qlen` is the queue length of that class.
    /// `task` is the completed task's id (RackSched REQ_ID: the reply removes
    /// the task's ReqTable entry, §3.2 Alg. 1 line 7).
    Reply {
        node: NodeId,
        qlen: u32,
        class: u8,
        task: TaskId,
    },
    /// Horus: rack `node` has idle workers.
    IdleAdd { node: NodeId },
    /// Horus: rack `node` has no idle workers any more.
    IdleRemove { node: NodeId },
    /// `horus-tokens`: rack `node` has one more worker owing one task.
    SlotAdd { node: NodeId },
    /// A leaf reports its rack load (16.16 fixed point).
    LoadUpdate { node: NodeId, load: u32 },
    /// Second (or later) pass of a packet.
    Resubmit(Resubmit),
    /// Ideal baselines only (JSQ, power-of-k with instant updates): the driver
    /// reports a queue change with zero delay. Not a packet.
    QueueChanged { node: NodeId, qlen: u32 },
}

/// A fixed-capacity list of actions: no allocation per input.
pub type Outbox = ActionList<[Action; OUTBOX_CAPACITY]>;

const OUTBOX_CAPACITY: usize = 8;

impl ActionSlots for [Action; OUTBOX_CAPACITY] {
    type Action = Action;
    const EMITTER: &'static str = "a data plane";

    #[inline]
    fn slots(&self) -> &[Action] {
        self
    }

    #[inline]
    fn slots_mut(&mut self) -> &mut [Action] {
        self
    }
}

impl Default for Outbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Outbox {
    pub const CAPACITY: usize = OUTBOX_CAPACITY;

    pub fn new() -> Self {
        Self::from_slots([Action::Queued; Outbox::CAPACITY])
    }
}

/// A scheduler data plane.
pub trait DataPlane {
    /// Process one input at time `now`.
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox);
    /// Pass counters of this instance's switch pipeline.
    fn pipeline(&self) -> &Pipeline;
    /// Whether handling `input` only writes this data plane's registers and
    /// emits nothing that travels or takes time: no dispatch, resubmission or
    /// notice, at most a counted drop. A driver may then deliver it late, as
    /// long as it does so in arrival order and before the data plane's next
    /// input, and the data plane cannot tell. The simulator uses this for
    /// RS-H's load updates, one per completion to every spine of a pool
    /// (Horus §5.2), which would otherwise dominate its event queue.
    fn writes_state_only(&self, _input: &Input) -> bool {
        false
    }
}

/// Handles `input` and, at once, every resubmission it causes (a pipeline
/// without recirculation delay, as the benchmarks drive one), calling
/// `on_dispatch` with each node a task is dispatched to. The other actions
/// are left for the caller to read in `out` only for the last pass.
#[inline]
pub fn handle_resubmitting(
    dp: &mut impl DataPlane,
    now: Nanos,
    input: Input,
    out: &mut Outbox,
    mut on_dispatch: impl FnMut(NodeId),
) {
    // The first pass takes the caller's input as it is: copied into a loop
    // variable first, it was stored as three 16-byte words, and the data
    // plane's 16-byte load of the task at byte 8 straddled two of them, a
    // store the store buffer cannot forward (a fifth of a busy leaf step in
    // `bench dataplane`'s profile).
    out.clear();
    dp.handle(now, input, out);
    loop {
        let mut again = None;
        for action in out.as_slice() {
            match *action {
                Action::Dispatch(Dispatch { node, .. }) => on_dispatch(node),
                Action::Resubmit(r) => again = Some(r),
                _ => {}
            }
        }
        let Some(resubmit) = again else {
            return;
        };
        out.clear();
        dp.handle(now, Input::Resubmit(resubmit), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resubmits each task until its `passes`-th pass, which dispatches it
    /// to node `passes` and drops something beside.
    struct Resubmitting {
        passes: u32,
        pass: u32,
        pipeline: Pipeline,
    }

    impl DataPlane for Resubmitting {
        fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
            assert_eq!(now, Nanos::new(7), "every pass at the input's time");
            let task = match input {
                Input::Task(t) | Input::Resubmit(Resubmit::Retry { task: t }) => t,
                other => panic!("unexpected {other:?}"),
            };
            self.pass += 1;
            if self.pass < self.passes {
                out.push(Action::Resubmit(Resubmit::Retry { task }));
                return;
            }
            out.push(Action::dispatch(self.pass, task, Decision::Other));
            out.push(Action::Drop(DropReason::Overflow));
        }
        fn pipeline(&self) -> &Pipeline {
            &self.pipeline
        }
    }

    #[test]
    fn every_resubmission_is_handled_and_the_last_pass_stays_in_the_outbox() {
        for passes in 1..=4 {
            let mut dp = Resubmitting {
                passes,
                pass: 0,
                pipeline: Pipeline::new(),
            };
            let mut out = Outbox::new();
            let mut dispatched = Vec::new();
            let task = TaskMeta::default();
            handle_resubmitting(&mut dp, Nanos::new(7), Input::Task(task), &mut out, |n| {
                dispatched.push(n)
            });
            assert_eq!(dp.pass, passes);
            assert_eq!(dispatched, vec![passes]);
            assert_eq!(out.len(), 2);
            assert_eq!(out.as_slice()[1], Action::Drop(DropReason::Overflow));
        }
    }
}
