//! Pull-based scheduling: Draconis (EuroSys'24) and the systems it is compared
//! against that do not fit the push contract of [`crate::dataplane`].
//!
//! * [`Draconis`]: one central task queue in the switch ([`queue`]); executors
//!   pull tasks with task requests. cFCFS (§4.8), priority by queue
//!   replication (§6), resource- and locality-aware scheduling by task
//!   swapping (§5). Written against [`crate::switch`]: every register array is
//!   touched at most once per pass and every extra pass is an explicit
//!   [`PullAction::Recirculate`] the driver feeds back as
//!   [`PullInput::Resubmit`], so other packets can interleave.
//! * [`server::DraconisServer`]: the same state machine run as a software
//!   scheduler (Draconis-DPDK/Socket-Server, §8): recirculations run inline.
//! * [`r2p2::R2p2Jbsq`]: R2P2's JBSQ(k) push scheduler with recirculation.
//! * [`sparrow`]: Sparrow batch sampling with late binding.
//!
//! All of them are driven through one sans-IO contract ([`contract`]:
//! [`PullDataPlane`], [`PullInput`], [`PullAction`], [`PullOutbox`]) and held
//! by drivers as one [`PullPlane`] ([`registry`]), built from validated
//! [`PullParams`].

pub mod bench;
pub mod contract;
pub mod executor;
pub mod policy;
pub mod queue;
pub mod r2p2;
pub mod registry;
pub mod server;
pub mod sparrow;

use crate::dataplane::DropReason;
use crate::switch::{Layout, Pass, Pipeline};
use crate::Nanos;

pub use contract::{PullAction, PullDataPlane, PullInput, PullOutbox};
pub use executor::{Executor, ExecutorWake};
pub use policy::{Constraint, Fit};
pub use queue::{CircularQueue, Repair, Slot};
pub use registry::{PullParams, PullPlane, PullPlaneKind};

/// A client (IP address and port in the paper).
pub type ClientId = u32;
/// An executor: one process pulling tasks, typically one per core (§3.1).
pub type ExecutorId = u32;
/// <UID, JID> of a job (§4.1).
pub type JobId = u64;
/// An index into Sparrow's job table, carried by probes.
pub type JobSlot = u32;
/// A Sparrow worker.
pub type WorkerId = u32;

/// Tasks one job_submission packet carries. The paper bounds it by the MTU
/// and splits larger jobs across packets (§4.3 "Handling Large Jobs").
pub const MAX_TASKS_PER_PACKET: usize = 8;
/// Priority levels of the priority policy unless configured (§6, §7: four on
/// the first-generation Tofino).
pub const DEFAULT_PRIORITY_LEVELS: u8 = 4;

/// TASK_INFO (§4.1, Fig. 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskInfo {
    /// <UID, JID, TID>, unique in the system.
    pub id: u64,
    pub fn_id: u32,
    /// Priority level, 1 = highest (§6.1). Only the priority policy reads it.
    pub priority: u8,
    pub fn_par: u64,
    /// TPROPS: required-resource bitmap (§5.2) or data-local nodes (§5.3).
    pub props: u64,
}

impl TaskInfo {
    pub fn new(id: u64) -> Self {
        TaskInfo {
            id,
            ..TaskInfo::default()
        }
    }
}

/// The task list of one packet: at most [`MAX_TASKS_PER_PACKET`], inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskList {
    len: u8,
    items: [TaskInfo; MAX_TASKS_PER_PACKET],
}

impl Default for TaskList {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskList {
    pub fn new() -> Self {
        TaskList {
            len: 0,
            items: [TaskInfo::default(); MAX_TASKS_PER_PACKET],
        }
    }

    /// `None` if `tasks` does not fit one packet (split the job, §4.3).
    pub fn from_slice(tasks: &[TaskInfo]) -> Option<Self> {
        let mut l = TaskList::new();
        for &t in tasks {
            if !l.push(t) {
                return None;
            }
        }
        Some(l)
    }

    /// Appends `t`; false if the list is full.
    pub fn push(&mut self, t: TaskInfo) -> bool {
        if self.len as usize == MAX_TASKS_PER_PACKET {
            return false;
        }
        self.items[self.len as usize] = t;
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[TaskInfo] {
        &self.items[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A job_submission packet (§4.1, Fig. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSubmission {
    pub client: ClientId,
    pub job: JobId,
    pub tasks: TaskList,
}

/// What a task_request carries about its executor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecInfo {
    pub id: ExecutorId,
    /// The node the executor runs on (§5.3).
    pub node: u32,
    /// EXEC_RSRC bitmap (§5.2).
    pub resources: u64,
}

/// Metadata a recirculated packet carries into its next pass.
// Packets are fixed-size `Copy` values (no boxing or allocation per packet,
// DESIGN.md); a job_submission is simply the largest packet.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recirc {
    /// §4.3: the rest of a job_submission; task `next` is enqueued next.
    /// `rejected` has bit i set for each task i that did not fit.
    Submit {
        job: JobSubmission,
        next: u8,
        accepted: u8,
        rejected: u16,
    },
    /// §4.5: a repair packet.
    Repair(Repair),
    /// §6.1: a task_request moving to the next priority level (RTRV_PRIO + 1).
    Request { exec: ExecInfo, level: u8 },
    /// §5.1: a swap_task packet. `level` is the queue being walked;
    /// `pkt_retrieve_ptr` is the retrieve_ptr its last pass read.
    Swap {
        exec: ExecInfo,
        level: u8,
        hand: Slot,
        swap_indx: u32,
        pkt_retrieve_ptr: u32,
        swaps: u16,
    },
}

/// Switch configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraconisConfig {
    /// Entries per queue (per priority level); a power of two.
    pub capacity: u32,
    /// Priority levels (1 = plain FCFS); one queue each (§6).
    pub levels: u8,
    pub constraint: Constraint,
    /// Most swap passes one task request may make before the task in hand
    /// goes back to the tail (§5.1: "a bounded number of times").
    pub max_swaps: u16,
}

impl Default for DraconisConfig {
    fn default() -> Self {
        Self::fcfs(1 << 17)
    }
}

impl DraconisConfig {
    /// cFCFS (§4.8). 2^17 entries is the power of two nearest the 164K of
    /// the paper's Tofino (§7).
    pub fn fcfs(capacity: u32) -> Self {
        DraconisConfig {
            capacity,
            levels: 1,
            constraint: Constraint::None,
            max_swaps: 16,
        }
    }

    /// Priority with [`DEFAULT_PRIORITY_LEVELS`] queues (§6.1).
    pub fn priority(capacity: u32) -> Self {
        DraconisConfig {
            levels: DEFAULT_PRIORITY_LEVELS,
            ..Self::fcfs(capacity)
        }
    }

    /// Resource-aware (§5.2).
    pub fn resource(capacity: u32, max_swaps: u16) -> Self {
        DraconisConfig {
            constraint: Constraint::Resource,
            max_swaps,
            ..Self::fcfs(capacity)
        }
    }

    /// Locality-aware (§5.3). The swap bound is `global_start_limit + 1`,
    /// enough for one task to reach its global limit (§5.3: "the number of
    /// times a task is recirculated is bounded by the global_start_limit").
    pub fn locality(
        capacity: u32,
        rack_start_limit: u16,
        global_start_limit: u16,
        nodes_per_rack: u32,
    ) -> Self {
        DraconisConfig {
            constraint: Constraint::Locality {
                rack_start_limit,
                global_start_limit,
                nodes_per_rack,
            },
            max_swaps: global_start_limit.saturating_add(1),
            ..Self::fcfs(capacity)
        }
    }
}

/// Counters of one switch (all also derivable from actions; kept for metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DraconisStats {
    pub tasks_enqueued: u64,
    pub tasks_rejected: u64,
    pub assigned: u64,
    pub noops: u64,
    pub add_repairs: u64,
    pub retrieve_repairs: u64,
    pub swaps: u64,
    /// Tasks put back at the tail by a swap walk (end of queue or swap bound).
    pub tail_returns: u64,
}

/// The Draconis switch scheduler.
#[derive(Clone, Debug)]
pub struct Draconis {
    pipeline: Pipeline,
    queue: CircularQueue,
    config: DraconisConfig,
    pub stats: DraconisStats,
}

impl Draconis {
    pub fn new(config: DraconisConfig) -> Self {
        let mut layout = Layout::new();
        let queue = CircularQueue::new(&mut layout, config.capacity, config.levels.max(1));
        Draconis {
            pipeline: Pipeline::with_layout(layout),
            queue,
            config,
            stats: DraconisStats::default(),
        }
    }

    pub fn config(&self) -> &DraconisConfig {
        &self.config
    }

    pub fn queue(&self) -> &CircularQueue {
        &self.queue
    }

    /// Control plane access to the queue (tests move the pointers).
    pub fn queue_mut(&mut self) -> &mut CircularQueue {
        &mut self.queue
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The queue index of a task: its priority level, 1-based (§6.1). Out of
    /// range priorities are clamped (0 counts as 1, above the lowest level as
    /// the lowest) rather than refused: a client with a finer priority scale
    /// (Google's 12 levels, §8.6) still gets its tasks run.
    #[inline]
    fn level_of(&self, task: &TaskInfo) -> u8 {
        let levels = self.config.levels.max(1);
        task.priority.clamp(1, levels) - 1
    }

    /// Process one packet (one pass).
    // Called from `PullDataPlane::handle` only: inlined there, so the
    // packet is not copied again on the way in.
    #[inline(always)]
    fn pass(&mut self, input: PullInput, out: &mut PullOutbox) {
        match input {
            PullInput::JobSubmission(job) => {
                let pass = self.pipeline.begin();
                self.submit(&pass, &job, 0, 0, 0, out);
            }
            PullInput::TaskRequest(exec) => {
                let pass = self.pipeline.begin();
                self.request(&pass, exec, 0, out);
            }
            // R2P2's and Sparrow's messages.
            PullInput::Request { .. }
            | PullInput::Completion { .. }
            | PullInput::GetTask { .. }
            | PullInput::Reprobe(_) => out.push(PullAction::Drop(DropReason::Unexpected)),
            PullInput::Resubmit(r) => {
                // Recirculated metadata is this switch's own; a level it does
                // not have can only come from a confused driver.
                let level = match r {
                    Recirc::Submit { .. } => 0,
                    Recirc::Repair(Repair::Add { level, .. })
                    | Recirc::Repair(Repair::Retrieve { level, .. })
                    | Recirc::Request { level, .. }
                    | Recirc::Swap { level, .. } => level,
                };
                if level >= self.queue.levels() {
                    out.push(PullAction::Drop(DropReason::Unexpected));
                    return;
                }
                let pass = self.pipeline.resubmit();
                match r {
                    Recirc::Submit {
                        job,
                        next,
                        accepted,
                        rejected,
                    } => self.submit(&pass, &job, next, accepted, rejected, out),
                    Recirc::Repair(rep) => {
                        match rep {
                            Repair::Add { .. } => self.stats.add_repairs += 1,
                            Repair::Retrieve { .. } => self.stats.retrieve_repairs += 1,
                        }
                        self.queue.repair(&pass, rep);
                    }
                    Recirc::Request { exec, level } => self.request(&pass, exec, level, out),
                    Recirc::Swap {
                        exec,
                        level,
                        hand,
                        swap_indx,
                        pkt_retrieve_ptr,
                        swaps,
                    } => self.swap(
                        &pass,
                        exec,
                        level,
                        hand,
                        swap_indx,
                        pkt_retrieve_ptr,
                        swaps,
                        out,
                    ),
                }
            }
        }
    }

    /// §4.3: enqueue task `next` of the packet, recirculate for the rest.
    fn submit(
        &mut self,
        pass: &Pass,
        job: &JobSubmission,
        next: u8,
        mut accepted: u8,
        mut rejected: u16,
        out: &mut PullOutbox,
    ) {
        let tasks = job.tasks.as_slice();
        if let Some(&task) = tasks.get(next as usize) {
            let level = self.level_of(&task);
            match self.queue.enqueue(pass, level, Slot::new(task, job.client)) {
                queue::Enqueued::Inserted { repair, .. } => {
                    accepted += 1;
                    self.stats.tasks_enqueued += 1;
                    if let Some(rep) = repair {
                        out.push(PullAction::Recirculate(Recirc::Repair(rep)));
                    }
                }
                queue::Enqueued::Full { repair } => {
                    rejected |= 1 << next;
                    self.stats.tasks_rejected += 1;
                    if let Some(rep) = repair {
                        out.push(PullAction::Recirculate(Recirc::Repair(rep)));
                    }
                }
            }
        }
        let next = next + 1;
        if (next as usize) < tasks.len() {
            out.push(PullAction::Recirculate(Recirc::Submit {
                job: *job,
                next,
                accepted,
                rejected,
            }));
            return;
        }
        // The last task is in (§4.7 step 6): acknowledge, and return what did
        // not fit in one error_packet (§4.3).
        out.push(PullAction::Ack {
            client: job.client,
            job: job.job,
            accepted,
        });
        if rejected != 0 {
            let mut back = TaskList::new();
            for (i, &t) in tasks.iter().enumerate() {
                if rejected & (1 << i) != 0 {
                    back.push(t);
                }
            }
            out.push(PullAction::ErrorPacket {
                client: job.client,
                tasks: back,
            });
        }
    }

    /// §4.6 / §6.1: retrieve from queue `level`.
    fn request(&mut self, pass: &Pass, exec: ExecInfo, level: u8, out: &mut PullOutbox) {
        match self.queue.dequeue(pass, level) {
            // §4.7.2: a task request that meets a pending retrieve repair
            // cannot take this level's task yet. With priorities it moves on
            // to the next level (§6.1, RTRV_PRIO + 1), a no-op only past the
            // last: a task is waiting here, but an executor left idle while a
            // lower level holds work would cost a whole retry.
            queue::Dequeued::RepairPending => self.next_level(exec, level, out),
            queue::Dequeued::Empty => self.next_level(exec, level, out),
            queue::Dequeued::Task { slot, pos } => {
                let next = pos.wrapping_add(1);
                self.examine(exec, level, slot, next, next, 0, out)
            }
        }
    }

    /// A task is in hand: run it, or start/continue a swap walk (§5.1).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn examine(
        &mut self,
        exec: ExecInfo,
        level: u8,
        mut slot: Slot,
        swap_indx: u32,
        pkt_retrieve_ptr: u32,
        swaps: u16,
        out: &mut PullOutbox,
    ) {
        match self.config.constraint.check(&exec, &mut slot) {
            Fit::Run => {
                self.stats.assigned += 1;
                out.push(PullAction::AssignTask {
                    executor: exec.id,
                    client: slot.client,
                    task: slot.task,
                    skips: slot.skips,
                });
            }
            Fit::Skip => out.push(PullAction::Recirculate(Recirc::Swap {
                exec,
                level,
                hand: slot,
                swap_indx,
                pkt_retrieve_ptr,
                swaps,
            })),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn swap(
        &mut self,
        pass: &Pass,
        exec: ExecInfo,
        level: u8,
        hand: Slot,
        swap_indx: u32,
        pkt_retrieve_ptr: u32,
        swaps: u16,
        out: &mut PullOutbox,
    ) {
        if swaps >= self.config.max_swaps {
            // §5.1 bound reached: the hand goes back like a submission, at
            // the tail. This is the one place a swap walk reorders tasks.
            let outcome = self.queue.enqueue(pass, level, hand);
            self.tail_return(hand, outcome, out);
            self.next_level(exec, level, out);
            return;
        }
        self.stats.swaps += 1;
        // pkt_retrieve_ptr rides along for tracing; the head rule compares
        // retrieve_ptr with SWAP_INDX (see `CircularQueue::swap`).
        let _ = pkt_retrieve_ptr;
        match self.queue.swap(pass, level, hand, swap_indx) {
            queue::Swapped::Exchanged {
                got,
                at,
                retrieve_ptr,
            } => {
                if got.valid && got.pos == at {
                    self.examine(
                        exec,
                        level,
                        got,
                        at.wrapping_add(1),
                        retrieve_ptr,
                        swaps + 1,
                        out,
                    );
                } else {
                    // Nothing was there: the hand filled the slot.
                    self.next_level(exec, level, out);
                }
            }
            queue::Swapped::Reaim {
                swap_indx,
                retrieve_ptr,
                repair,
            } => {
                if let Some(rep) = repair {
                    out.push(PullAction::Recirculate(Recirc::Repair(rep)));
                }
                out.push(PullAction::Recirculate(Recirc::Swap {
                    exec,
                    level,
                    hand,
                    swap_indx,
                    pkt_retrieve_ptr: retrieve_ptr,
                    swaps: swaps + 1,
                }));
            }
            queue::Swapped::Appended { pos, repair } => {
                self.tail_return(hand, queue::Enqueued::Inserted { pos, repair }, out);
                self.next_level(exec, level, out);
            }
            queue::Swapped::Full { repair } => {
                self.tail_return(hand, queue::Enqueued::Full { repair }, out);
                self.next_level(exec, level, out);
            }
        }
    }

    /// Bookkeeping of a hand put back at the tail.
    fn tail_return(&mut self, hand: Slot, outcome: queue::Enqueued, out: &mut PullOutbox) {
        let repair = match outcome {
            queue::Enqueued::Inserted { repair, .. } => {
                self.stats.tail_returns += 1;
                repair
            }
            queue::Enqueued::Full { repair } => {
                // The queue refilled while the task was out: back to its client
                // like any task that does not fit (§4.3).
                self.stats.tasks_rejected += 1;
                let mut tasks = TaskList::new();
                tasks.push(hand.task);
                out.push(PullAction::ErrorPacket {
                    client: hand.client,
                    tasks,
                });
                repair
            }
        };
        if let Some(rep) = repair {
            out.push(PullAction::Recirculate(Recirc::Repair(rep)));
        }
    }

    /// §6.1: RTRV_PRIO + 1, or a no-op past the last level.
    fn next_level(&mut self, exec: ExecInfo, level: u8, out: &mut PullOutbox) {
        if level + 1 < self.queue.levels() {
            out.push(PullAction::Recirculate(Recirc::Request {
                exec,
                level: level + 1,
            }));
        } else {
            self.noop(exec, out);
        }
    }

    fn noop(&mut self, exec: ExecInfo, out: &mut PullOutbox) {
        self.stats.noops += 1;
        out.push(PullAction::NoOp { executor: exec.id });
    }
}

impl PullDataPlane for Draconis {
    /// One pass; the switch keeps no clock (a pass's time is the driver's).
    #[inline]
    fn handle(&mut self, _now: Nanos, input: PullInput, out: &mut PullOutbox) {
        self.pass(input, out)
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        Some(&self.pipeline)
    }
}
