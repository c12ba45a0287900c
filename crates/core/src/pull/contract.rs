//! The sans-IO contract of the pull family, the counterpart of
//! [`crate::dataplane`] for the push family.
//!
//! A driver feeds one [`PullInput`] at a time together with the current time
//! (integer ns); the scheduler appends what must happen to a [`PullOutbox`].
//! It owns no socket, clock or thread and allocates nothing per input. A
//! [`PullAction::Recirculate`] (R2P2: [`PullAction::Reprobe`]) is not
//! executed by the scheduler itself: the driver feeds it back as
//! [`PullInput::Resubmit`] ([`PullInput::Reprobe`]), a new pass, so other
//! packets can interleave between the passes as they can on a switch.
//!
//! Pull scheduling needs messages the push contract lacks (job submissions
//! with several tasks, task requests, acknowledgments, error packets, no-ops,
//! Sparrow's probes), hence its own inputs and actions; every pull scheduler
//! (Draconis, Draconis-Server, R2P2 JBSQ, Sparrow) speaks all of them and
//! answers an input its role never receives with
//! `PullAction::Drop(DropReason::Unexpected)`.

use super::{
    ClientId, ExecInfo, ExecutorId, JobId, JobSlot, JobSubmission, Recirc, TaskInfo, TaskList,
    WorkerId,
};
use crate::dataplane::DropReason;
use crate::outbox::{ActionList, ActionSlots};
use crate::switch::Pipeline;
use crate::Nanos;

/// What a recirculated R2P2 request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JbsqProbe {
    pub client: ClientId,
    pub task: TaskInfo,
    /// The executor this pass probes.
    pub next: ExecutorId,
    /// Executors probed at the current bound.
    pub probed: u32,
    /// Current bound, 1..=k.
    pub bound: u32,
    /// Recirculations used so far.
    pub recircs: u32,
}

/// What a driver feeds a pull scheduler.
// Packets are fixed-size `Copy` values (no boxing or allocation per packet,
// DESIGN.md); a job_submission is simply the largest packet.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullInput {
    /// A client's job_submission packet (Draconis §4.1; a Sparrow job).
    JobSubmission(JobSubmission),
    /// One client request (R2P2 schedules tasks one by one, §2.2).
    Request { client: ClientId, task: TaskInfo },
    /// A free executor asks for a task (Draconis §4.6), RTRV_PRIO = 1.
    TaskRequest(ExecInfo),
    /// An executor finished a task (R2P2: its reply passes the switch).
    Completion { executor: ExecutorId },
    /// Sparrow late binding: a worker's reservation for `slot` reached the
    /// head of its queue.
    GetTask { worker: WorkerId, slot: JobSlot },
    /// A later pass of a recirculated packet.
    Resubmit(Recirc),
    /// R2P2 (§2.2): the next pass of a JBSQ probe. Not a `Recirc`: a
    /// driver copies what it feeds back, and a probe is a fifth of the
    /// size of a recirculated job_submission.
    Reprobe(JbsqProbe),
}

/// One thing a pull scheduler asks its driver to do.
// See `PullInput` on the size of packets.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullAction {
    /// task_assignment packet to `executor` (Draconis §4.1; R2P2's dispatch,
    /// Sparrow's answer to a get-task). `skips` is the task's skip_counter
    /// at assignment (Draconis locality, §5.3; 0 otherwise).
    AssignTask {
        executor: ExecutorId,
        client: ClientId,
        task: TaskInfo,
        skips: u16,
    },
    /// No task for this executor: a Draconis executor retries after a while
    /// (§3.1, §4.6); a Sparrow reservation is cancelled.
    NoOp { executor: ExecutorId },
    /// The job_submission packet was processed; `accepted` tasks are queued.
    Ack {
        client: ClientId,
        job: JobId,
        accepted: u8,
    },
    /// error_packet (Draconis §4.3): tasks that did not fit; the client
    /// resubmits them.
    ErrorPacket { client: ClientId, tasks: TaskList },
    /// Sparrow: place a reservation for job `slot` at `worker`.
    Probe { worker: WorkerId, slot: JobSlot },
    /// Run another pass with this metadata (feed back as `Resubmit`).
    Recirculate(Recirc),
    /// R2P2: run the probe's next pass (feed back as `Reprobe`).
    Reprobe(JbsqProbe),
    /// The input was dropped.
    Drop(DropReason),
}

/// A bounded list of actions, allocated once: no allocation per input. The
/// same [`ActionList`] as the push family's [`crate::Outbox`], but its
/// capacity is set when it is made rather than fixed, because two pull schedulers have no
/// small bound (Sparrow emits d·m probes for a job of m tasks; Draconis-Server
/// returns what all the passes of a message emit). Size it with
/// [`PullDataPlane::outbox`].
pub type PullOutbox = ActionList<Box<[PullAction]>>;

impl ActionSlots for Box<[PullAction]> {
    type Action = PullAction;
    const EMITTER: &'static str = "a pull scheduler";

    #[inline]
    fn slots(&self) -> &[PullAction] {
        self
    }

    #[inline]
    fn slots_mut(&mut self) -> &mut [PullAction] {
        self
    }
}

impl Default for PullOutbox {
    fn default() -> Self {
        Self::new()
    }
}

impl PullOutbox {
    /// Most actions one switch pass emits (Draconis: repair + continuation +
    /// ack + error packet), with headroom.
    pub const CAPACITY: usize = 8;

    pub fn new() -> Self {
        Self::with_capacity(Self::CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Self::from_slots(
            vec![PullAction::Drop(DropReason::Unexpected); capacity].into_boxed_slice(),
        )
    }
}

/// A pull scheduler.
pub trait PullDataPlane {
    /// Process one input at time `now` (integer nanoseconds).
    fn handle(&mut self, now: Nanos, input: PullInput, out: &mut PullOutbox);
    /// Pass counters of the switch pipeline; `None` for a software scheduler
    /// with no switch model (Sparrow).
    fn pipeline(&self) -> Option<&Pipeline>;
    /// Most actions one input can produce.
    fn outbox_capacity(&self) -> usize {
        PullOutbox::CAPACITY
    }
    /// An outbox large enough for any input.
    fn outbox(&self) -> PullOutbox {
        PullOutbox::with_capacity(self.outbox_capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbox_holds_its_capacity_and_drains_in_order() {
        let mut out = PullOutbox::with_capacity(2);
        out.push(PullAction::NoOp { executor: 1 });
        out.push(PullAction::NoOp { executor: 2 });
        let got: Vec<_> = out.drain().collect();
        assert_eq!(
            got,
            [
                PullAction::NoOp { executor: 1 },
                PullAction::NoOp { executor: 2 }
            ]
        );
        assert!(out.is_empty());
        out.push(PullAction::NoOp { executor: 3 });
        assert_eq!(out.len(), 1);
    }

    #[test]
    #[should_panic(expected = "outbox overflow")]
    fn outbox_refuses_more_than_its_capacity() {
        let mut out = PullOutbox::with_capacity(1);
        out.push(PullAction::NoOp { executor: 1 });
        out.push(PullAction::NoOp { executor: 2 });
    }
}
