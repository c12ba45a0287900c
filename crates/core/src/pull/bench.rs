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
    shape: Shape,
    next: u64,
    pub decisions: u64,
}

impl Steady {
    /// A switch whose queue(s) hold `backlog` tasks.
    pub fn new(shape: Shape, backlog: u32) -> Self {
        let config = match shape {
            Shape::Fcfs => DraconisConfig::fcfs(4096),
            Shape::Priority => DraconisConfig::priority(4096),
            Shape::Resource => DraconisConfig::resource(4096, 16),
        };
        let mut s = Steady {
            dp: Draconis::new(config),
            out: PullOutbox::new(),
            shape,
            next: 0,
            decisions: 0,
        };
        for _ in 0..backlog {
            s.submit();
        }
        s
    }

    fn run(&mut self, input: PullInput) -> u64 {
        let mut input = input;
        let mut assigned = 0;
        loop {
            self.out.clear();
            self.dp.handle(0, input, &mut self.out);
            let mut again = None;
            for a in self.out.as_slice() {
                match *a {
                    PullAction::Recirculate(r) => again = Some(PullInput::Resubmit(r)),
                    PullAction::AssignTask { .. } => assigned += 1,
                    _ => {}
                }
            }
            match again {
                Some(i) => input = i,
                None => return assigned,
            }
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
