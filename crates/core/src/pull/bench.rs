//! Steady-state workloads for measuring Draconis data-plane decisions per
//! second (criterion bench `draconis`, or `netsched bench` via [`Steady`]).
//!
//! A step submits one single-task job and serves one task request, feeding
//! every recirculation inline; the queue holds a constant backlog, so every
//! request is a decision (an assignment). Both packets' passes are inside a
//! step, so decisions/s here is "submission + request" pairs per second.

use super::{
    Draconis, DraconisConfig, ExecInfo, JobSubmission, PullAction, PullDataPlane, PullInput,
    PullOutbox, TaskInfo, TaskList,
};
use crate::Nanos;

/// The workload shapes measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// cFCFS (§4.8): every request takes the head.
    Fcfs,
    /// Four priority levels (§6), tasks spread over them round robin; a
    /// request walks RTRV_PRIO down to the first non-empty level.
    Priority,
    /// Resource bitmaps (§5.2): tasks alternately need resource A or B,
    /// requests alternately come from A-only and B-only executors, so the
    /// queue stays an even mix and about half the requests swap once.
    Resource,
}

/// A Draconis switch in steady state under [`Shape`].
pub struct Steady {
    pub dp: Draconis,
    out: PullOutbox,
    /// What the passes fed from `out`'s recirculations emit: one pass can
    /// emit several recirculations (a retrieve repair and the rest of its
    /// job, §4.3 + §4.5), and each must run, in the order emitted.
    next_out: PullOutbox,
    shape: Shape,
    next: u64,
    pub decisions: u64,
}

impl Steady {
    /// Capacity of both outboxes (they swap roles): the actions of all the
    /// passes of one generation, each of at most [`PullOutbox::CAPACITY`]
    /// recirculations emitting at most as many actions.
    const GENERATION_CAPACITY: usize = PullOutbox::CAPACITY * PullOutbox::CAPACITY;

    /// A switch whose queue(s) hold `backlog` tasks.
    pub fn new(shape: Shape, backlog: u32) -> Self {
        let config = match shape {
            Shape::Fcfs => DraconisConfig::fcfs(4096),
            Shape::Priority => DraconisConfig::priority(4096),
            Shape::Resource => DraconisConfig::resource(4096, 16),
        };
        let mut s = Steady {
            dp: Draconis::new(config),
            out: PullOutbox::with_capacity(Self::GENERATION_CAPACITY),
            next_out: PullOutbox::with_capacity(Self::GENERATION_CAPACITY),
            shape,
            next: 0,
            decisions: 0,
        };
        for _ in 0..backlog {
            s.submit();
        }
        s
    }

    /// Runs `input` and every recirculation it causes, inline, in the order
    /// emitted: generation by generation (what the passes of one generation
    /// emit is the next one), which is a FIFO queue of recirculations without
    /// copying each one into and out of a queue (a `Recirc` can hold a whole
    /// job_submission, and every copy is a `memcpy`).
    fn run(&mut self, input: PullInput) -> u64 {
        self.out.clear();
        self.dp.handle(Nanos::ZERO, input, &mut self.out);
        let mut assigned = 0;
        loop {
            self.next_out.clear();
            for action in self.out.as_slice() {
                match action {
                    PullAction::Recirculate(recirc) => self.dp.handle(
                        Nanos::ZERO,
                        PullInput::Resubmit(*recirc),
                        &mut self.next_out,
                    ),
                    PullAction::AssignTask { .. } => assigned += 1,
                    _ => {}
                }
            }
            if self.next_out.is_empty() {
                return assigned;
            }
            std::mem::swap(&mut self.out, &mut self.next_out);
        }
    }

    fn submit(&mut self) {
        let id = self.next;
        self.next += 1;
        let mut t = TaskInfo::new(id);
        match self.shape {
            Shape::Fcfs => {}
            Shape::Priority => t.priority = (id % 4) as u8 + 1,
            Shape::Resource => t.props = 1 << (id % 2),
        }
        let mut tasks = TaskList::new();
        tasks.push(t);
        self.run(PullInput::JobSubmission(JobSubmission {
            client: 0,
            job: id,
            tasks,
        }));
    }

    /// One submission and one request.
    #[inline]
    pub fn step(&mut self) {
        self.submit();
        let exec = ExecInfo {
            id: 1,
            node: 0,
            resources: match self.shape {
                Shape::Resource => 1 << (self.next % 2),
                _ => 0,
            },
        };
        self.decisions += self.run(PullInput::TaskRequest(exec));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass that emits a retrieve repair *and* the rest of its job must
    /// have both run: keeping only the last recirculation loses the repair,
    /// the retrieve flag stays set and every later request gets a no-op.
    #[test]
    fn a_repair_and_a_continuation_from_one_pass_both_run() {
        let mut s = Steady::new(Shape::Fcfs, 0);
        let exec = PullInput::TaskRequest(ExecInfo::default());
        // A request on the empty queue: retrieve_ptr overshoots add_ptr.
        assert_eq!(s.run(exec), 0);
        // Its first pass inserts, repairs retrieve_ptr and recirculates task 2.
        let mut tasks = TaskList::new();
        tasks.push(TaskInfo::new(10));
        tasks.push(TaskInfo::new(11));
        s.run(PullInput::JobSubmission(JobSubmission {
            client: 0,
            job: 0,
            tasks,
        }));
        assert_eq!(s.dp.stats.retrieve_repairs, 1, "the repair ran");
        assert_eq!(s.run(exec), 1);
        assert_eq!(s.run(exec), 1);
        assert_eq!(s.dp.stats.assigned, 2);
    }
}
