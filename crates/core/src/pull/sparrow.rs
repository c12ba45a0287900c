//! Sparrow (SOSP'13) batch sampling with late binding, the distributed
//! scheduler Draconis compares against (§2.3.2, §8.1).
//!
//! * [`SparrowScheduler`]: for a job of `m` tasks it sends `d·m` probes to
//!   distinct workers sampled uniformly (batch sampling). A probe places a
//!   reservation in the worker's queue. When a reservation reaches the head,
//!   the worker asks the scheduler for a task (late binding); the scheduler
//!   answers with the job's next unlaunched task, or a no-op once all `m`
//!   are launched (the reservation is cancelled). Job state is freed when
//!   the last of its probes has been answered.
//! * [`SparrowWorker`]: one executor's reservation queue.
//!
//! Software schedulers: no switch model. State is allocated at construction
//! (job slab, sampling permutation, reservation queues); nothing per message.

use crate::Nanos;
use std::collections::VecDeque;

use super::{
    ClientId, JobSubmission, PullAction, PullDataPlane, PullInput, PullOutbox, TaskList,
    MAX_TASKS_PER_PACKET,
};
use crate::dataplane::DropReason;
use crate::rng::Rng;
use crate::switch::Pipeline;

pub use super::{JobSlot, WorkerId};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparrowConfig {
    /// Probes per task (Sparrow's d; 2 in the Sparrow paper).
    pub probe_ratio: u32,
    /// Jobs with outstanding probes the scheduler can track.
    pub max_jobs: u32,
}

impl Default for SparrowConfig {
    fn default() -> Self {
        SparrowConfig {
            probe_ratio: 2,
            max_jobs: 1 << 14,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Job {
    client: ClientId,
    tasks: TaskList,
    launched: u8,
    probes_out: u32,
    in_use: bool,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SparrowStats {
    pub probes: u64,
    pub assigned: u64,
    pub cancelled: u64,
}

/// One Sparrow scheduler.
#[derive(Clone, Debug)]
pub struct SparrowScheduler {
    config: SparrowConfig,
    rng: Rng,
    /// A permutation of the workers; a partial Fisher-Yates shuffle of its
    /// prefix samples without replacement and leaves it a permutation.
    perm: Vec<WorkerId>,
    jobs: Vec<Job>,
    free: Vec<JobSlot>,
    pub stats: SparrowStats,
}

impl SparrowScheduler {
    pub fn new(workers: u32, config: SparrowConfig, seed: u64) -> Self {
        assert!(workers > 0, "Sparrow needs workers");
        if let Err(e) = crate::limits::sparrow_probe_ratio(config.probe_ratio) {
            panic!("probe_ratio: {e}");
        }
        if let Err(e) = crate::limits::sparrow_max_jobs(config.max_jobs) {
            panic!("max_jobs: {e}");
        }
        SparrowScheduler {
            config,
            rng: Rng::new(seed),
            perm: (0..workers).collect(),
            jobs: vec![Job::default(); config.max_jobs as usize],
            free: (0..config.max_jobs).rev().collect(),
            stats: SparrowStats::default(),
        }
    }

    /// Jobs with outstanding probes.
    pub fn active_jobs(&self) -> usize {
        self.jobs.len() - self.free.len()
    }

    // Called from `PullDataPlane::handle` only: inlined there, so the
    // packet is not copied again on the way in.
    #[inline(always)]
    fn message(&mut self, input: PullInput, out: &mut PullOutbox) {
        match input {
            PullInput::JobSubmission(JobSubmission { client, tasks, .. }) => {
                if tasks.is_empty() {
                    return;
                }
                let Some(slot) = self.free.pop() else {
                    out.push(PullAction::Drop(DropReason::Overflow));
                    return;
                };
                let n = self.perm.len();
                let probes = (self.config.probe_ratio as usize * tasks.len()).min(n);
                // Batch sampling: d·m distinct workers.
                for i in 0..probes {
                    let j = i + self.rng.below((n - i) as u32) as usize;
                    self.perm.swap(i, j);
                    out.push(PullAction::Probe {
                        worker: self.perm[i],
                        slot,
                    });
                }
                self.stats.probes += probes as u64;
                self.jobs[slot as usize] = Job {
                    client,
                    tasks,
                    launched: 0,
                    probes_out: probes as u32,
                    in_use: true,
                };
            }
            PullInput::GetTask { worker, slot } => {
                let Some(job) = self.jobs.get_mut(slot as usize).filter(|j| j.in_use) else {
                    out.push(PullAction::Drop(DropReason::Unexpected));
                    return;
                };
                // Late binding: the task is chosen when a worker is free.
                if (job.launched as usize) < job.tasks.len() {
                    let task = job.tasks.as_slice()[job.launched as usize];
                    job.launched += 1;
                    self.stats.assigned += 1;
                    out.push(PullAction::AssignTask {
                        executor: worker,
                        client: job.client,
                        task,
                        skips: 0,
                    });
                } else {
                    self.stats.cancelled += 1;
                    out.push(PullAction::NoOp { executor: worker });
                }
                job.probes_out -= 1;
                if job.probes_out == 0 {
                    job.in_use = false;
                    self.free.push(slot);
                }
            }
            // Switch messages: a Sparrow scheduler is not a switch.
            PullInput::Request { .. }
            | PullInput::TaskRequest(_)
            | PullInput::Completion { .. }
            | PullInput::Resubmit(_)
            | PullInput::Reprobe(_) => out.push(PullAction::Drop(DropReason::Unexpected)),
        }
    }
}

impl PullDataPlane for SparrowScheduler {
    /// One message; the scheduler keeps no clock (its per-message service
    /// time is the driver's to model).
    #[inline]
    fn handle(&mut self, _now: Nanos, input: PullInput, out: &mut PullOutbox) {
        self.message(input, out)
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        None
    }

    /// A job's probes (d·m) and a drop.
    fn outbox_capacity(&self) -> usize {
        self.config.probe_ratio as usize * MAX_TASKS_PER_PACKET + 1
    }
}

/// A worker's side: reservations wait in FIFO order; the worker asks for a
/// task when it is free and a reservation is at the head.
#[derive(Clone, Debug)]
pub struct SparrowWorker {
    pub id: WorkerId,
    reservations: VecDeque<JobSlot>,
    /// Running a task, or waiting for the answer to a GetTask.
    busy: bool,
}

impl SparrowWorker {
    pub fn new(id: WorkerId, capacity: usize) -> Self {
        SparrowWorker {
            id,
            reservations: VecDeque::with_capacity(capacity),
            busy: false,
        }
    }

    pub fn queued(&self) -> usize {
        self.reservations.len()
    }

    /// A probe arrived; returns the GetTask to send, if any.
    pub fn on_probe(&mut self, slot: JobSlot) -> Option<PullInput> {
        self.reservations.push_back(slot);
        self.next()
    }

    /// The scheduler answered with a task: run it.
    pub fn on_assign(&mut self) {
        self.busy = true;
    }

    /// The scheduler answered no-op, or the running task finished: ask for
    /// the next reservation's task.
    pub fn on_free(&mut self) -> Option<PullInput> {
        self.busy = false;
        self.next()
    }

    fn next(&mut self) -> Option<PullInput> {
        if self.busy {
            return None;
        }
        let slot = self.reservations.pop_front()?;
        self.busy = true;
        Some(PullInput::GetTask {
            worker: self.id,
            slot,
        })
    }
}
