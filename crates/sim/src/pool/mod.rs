//! The discrete-event simulation of one worker pool.
//!
//! Pools share no scheduler state (Horus keeps per-pool registers), so each
//! pool is simulated on its own with its own event queue and random streams,
//! and a run's results do not depend on how pools are spread over threads.
//!
//! Path of a task (Horus §3.2): it is submitted at a spine scheduler (the
//! response time starts here), which picks a rack; one or more hops later the
//! rack's leaf scheduler picks a worker; one hop later the worker queues it.
//! On completion the worker's reply, carrying its queue length, reaches the
//! leaf one hop later; the leaf's notices reach its spine(s) after the
//! spine-leaf hops. Flat policies schedule at the spine over all workers.

mod events;
mod failures;
mod lower;
mod upper;
mod workers;

use netsched_core::dataplane::{Decision, Input, Notice, Outbox, Resubmit, TaskMeta};
use netsched_core::rng::Rng;
use netsched_core::Plane;

use crate::config::{Policy, WorkerModel};
use crate::metrics::{AbortReason, PoolMetrics};
use crate::nodes::{Discipline, Nodes};
use crate::queue::{EventQueue, Inbox};
use crate::workload::ArrivalProcess;

use events::Ev;

pub use crate::plan::{PoolPlan, RackPlan, RunSetup};

/// Per-task state while a task is in flight, indexed by a slot number that the
/// task's `TaskMeta::id` carries through the data planes.
#[derive(Clone, Copy, Debug, Default)]
struct TaskRec {
    /// In flight (not yet completed or aborted).
    live: bool,
    seq: u64,
    submitted: u64,
    service: u64,
    class: u8,
    measured: bool,
    /// A switch of some layer has processed it more than once (Horus Fig. 15).
    resubmitted: bool,
    /// The upper scheduler (spine, or client of a flat policy) it was submitted to.
    upper: u32,
}

struct UpperState {
    sched: Plane,
    /// Local node index -> rack (empty for flat policies, whose nodes are pool nodes).
    nodes: Vec<u32>,
    /// Rack -> local node index, `NONE` where the rack is not a node of this upper.
    local: Vec<u32>,
    /// Global spine id hosting it.
    spine: u32,
    /// Per rack of the pool, the spine-leaf hops from `spine` to its leaf,
    /// 0 until first asked: read for every task and notice, so looked up
    /// through the topology once rather than each time, and only for the
    /// racks asked about (a pool of ~600 racks can have ~60 spines).
    hops: Vec<u8>,
    alive: bool,
    /// Submissions may choose it (cleared once clients know it died).
    routable: bool,
    /// State-only inputs on their way here, each under the event key it
    /// would have had (see `RunSetup::eager_state_writes`).
    /// Held as (local rack, notice): a small entry keeps the heap's moves cheap.
    inbox: Inbox<(u32, Notice)>,
}

/// A rack's small, often read state; its leaf's data plane, about 1.7 KB,
/// lives in `PoolSim::leaves` so that these stay dense (a pool has a few
/// hundred racks, one or two of its workers each).
struct RackState {
    leaf: u32,
    /// Upper this leaf is linked with and its index there.
    link: (u32, u32),
    /// With `IdleLink::RandomOfPool` on a multi-spine pool: the spine this
    /// leaf's idle state is linked to since its last idleAdd.
    idle_link: Option<u32>,
    /// Local worker index -> pool node index.
    nodes: Vec<u32>,
    alive: bool,
}

pub struct PoolSim<'a> {
    setup: &'a RunSetup<'a>,
    plan: &'a PoolPlan,
    q: EventQueue<Ev>,
    uppers: Vec<UpperState>,
    racks: Vec<RackState>,
    /// Per rack, the leaf's data plane; none where a flat policy's leaf
    /// only forwards.
    leaves: Vec<Option<Plane>>,
    /// Pool node -> (rack, local index in the rack's leaf).
    node_loc: Vec<(u32, u32)>,
    node_server: Vec<u32>,
    node_cores: Vec<u32>,
    nodes: Nodes,
    /// Per pool node, tasks dispatched to it and still on the wire; kept for
    /// the ideal policies only (`Policy::sees_queues_instantly`), whose view
    /// counts them.
    in_flight: Vec<u32>,
    tasks: Vec<TaskRec>,
    free_tasks: Vec<u32>,
    arrivals: ArrivalProcess,
    rng_work: Rng,
    rng_net: Rng,
    rng_route: Rng,
    /// Draws the spine a leaf links its idle state to (`random_idle_link`).
    rng_idle_link: Rng,
    /// horus-sim's idle link to a random spine of the pool, on a pool with
    /// several spines: every spine's nodes are all the pool's racks.
    random_idle_link: bool,
    /// Reused for every input; boxed so that lending it out while its
    /// actions run moves a pointer, not the whole fixed-capacity list.
    out: Option<Box<Outbox>>,
    lost_buf: Vec<u32>,
    /// Scratch for inputs taken from an inbox.
    due_buf: Vec<(u64, (u32, Notice))>,
    /// Cumulative routing weights of the uppers, for weighted spine choice.
    cum_weights: Vec<u32>,
    weights_dirty: bool,
    submitted: u64,
    pub metrics: PoolMetrics,
}

impl<'a> PoolSim<'a> {
    pub fn new(setup: &'a RunSetup<'a>, plan: &'a PoolPlan) -> Self {
        let pool = plan.pool_id as u64;
        let stream = |k: u64| Rng::derive(setup.seed, pool * 1_000_003 + k);
        // Nodes: a core per node (per-worker FCFS) or a server per node.
        let mut node_loc = Vec::new();
        let mut node_server = Vec::new();
        let mut node_cores = Vec::new();
        let mut rack_nodes: Vec<Vec<u32>> = Vec::new();
        for (r, rack) in plan.racks.iter().enumerate() {
            let mut local = Vec::new();
            for &(server, cores) in &rack.servers {
                let per_node = match setup.worker_model {
                    WorkerModel::Fcfs => vec![1; cores as usize],
                    WorkerModel::ServerCfcfs | WorkerModel::ServerPs => vec![cores],
                };
                for c in per_node {
                    let id = node_cores.len() as u32;
                    node_loc.push((r as u32, local.len() as u32));
                    local.push(id);
                    node_server.push(server);
                    node_cores.push(c);
                }
            }
            rack_nodes.push(local);
        }
        let discipline = match setup.worker_model {
            WorkerModel::ServerPs => Discipline::ProcessorSharing {
                slice_ns: setup.ps_slice_ns,
            },
            _ => Discipline::Fcfs,
        };
        let nodes = if setup.multi_queue {
            Nodes::with_queues(&node_cores, discipline, &setup.service.class_means_ns())
        } else {
            Nodes::new(&node_cores, discipline)
        };
        let mut leaves = SPARE_LEAVES.with(|s| s.take());
        leaves.reserve(plan.racks.len());
        let (uppers, links) =
            crate::build::schedulers(setup, plan, &rack_nodes, &stream, &mut leaves);
        let uppers: Vec<UpperState> = uppers
            .into_iter()
            .map(|b| UpperState::new(b.sched, b.nodes, b.spine, plan.racks.len()))
            .collect();
        let racks = plan
            .racks
            .iter()
            .zip(links)
            .zip(rack_nodes)
            .map(|((rp, link), nodes)| RackState {
                leaf: rp.leaf,
                link,
                idle_link: None,
                nodes,
                alive: true,
            })
            .collect();
        let workers = plan.workers();
        let arrivals =
            ArrivalProcess::new(&setup.schedule, workers as u32, setup.service.mean_ns())
                .expect("schedule validated with the config");
        PoolSim {
            setup,
            plan,
            q: EventQueue::with_bucket_ns(bucket_ns(setup.service.mean_ns())),
            uppers,
            racks,
            leaves,
            node_loc,
            node_server,
            node_cores,
            in_flight: vec![0; nodes.len()],
            nodes,
            tasks: Vec::with_capacity(1024),
            free_tasks: Vec::new(),
            arrivals,
            rng_work: stream(1),
            rng_net: stream(2),
            rng_route: stream(3),
            rng_idle_link: stream(4),
            random_idle_link: setup.policy == Policy::Horus
                && setup.horus.idle_link == netsched_core::horus::IdleLink::RandomOfPool
                && plan.spines.len() > 1,
            out: Some(Box::default()),
            lost_buf: Vec::new(),
            due_buf: Vec::new(),
            cum_weights: Vec::new(),
            weights_dirty: true,
            submitted: 0,
            // Per-class response times (GET vs SCAN, TPC-C transactions) when
            // the workload has classes: one histogram per class per pool.
            metrics: PoolMetrics::with_classes(
                plan.pool_id,
                workers,
                setup.service.classes().max(1),
            ),
        }
    }

    /// Runs the pool to completion. `progress` is bumped per completed task batch.
    pub fn run(mut self, progress: &dyn Fn(u64)) -> PoolMetrics {
        self.schedule_start();
        self.run_events(progress);
        self.finish(progress)
    }

    /// The first arrival, the imbalance samples and this pool's failures.
    fn schedule_start(&mut self) {
        if let Some(first) = self.arrivals.next_arrival(0, &mut self.rng_work) {
            if first < self.setup.end_ns {
                self.q.at(first, Ev::Arrival);
            }
        }
        if self.setup.imbalance_interval_ns > 0 {
            self.q.at(self.setup.warmup_ns, Ev::Sample);
        }
        let refresh = self.setup.horus.data_plane.refresh_interval_ns();
        if refresh > 0 && refresh < self.setup.end_ns {
            self.q.at(refresh, Ev::Refresh);
        }
        for (i, f) in self.setup.failures.iter().enumerate() {
            if self.failure_concerns_pool(f) {
                self.q.at(f.at_ns(), Ev::Failure { index: i as u32 });
            }
        }
    }

    /// Every event until the queue is empty.
    fn run_events(&mut self, progress: &dyn Fn(u64)) {
        let mut since_report = 0u64;
        while let Some((now, ev)) = self.q.pop() {
            if let Some(next) = self.q.peek_cheap().copied() {
                self.prefetch_for(&next);
            }
            self.step(now, ev);
            since_report += 1;
            if since_report == 1 << 16 {
                progress(self.metrics.completed_total());
                since_report = 0;
            }
        }
    }

    /// Asks for the cache lines `ev` will touch first, while the event
    /// before it runs: a pool's few hundred leaves (each ~1.7 KB of data
    /// plane) and its task table do not stay in the core's caches between
    /// two visits. A hint only: nothing it reads decides anything.
    #[inline]
    fn prefetch_for(&self, ev: &Ev) {
        use crate::queue::prefetch_value;
        match *ev {
            Ev::AtLower { rack, .. }
            | Ev::ReplyAtLower { rack, .. }
            | Ev::LowerResubmit { rack, .. } => {
                if let Some(r) = self.racks.get(rack as usize) {
                    prefetch_value(r);
                }
                // The `Option`'s first lines, without reading its tag (a
                // load that would wait for the very line being asked for).
                if let Some(leaf) = self.leaves.get(rack as usize) {
                    let p = leaf as *const Option<Plane> as *const u8;
                    for line in 0..LEAF_LINES_PREFETCHED {
                        crate::queue::prefetch(p.wrapping_add(64 * line));
                    }
                }
            }
            Ev::AtNode { task, .. } | Ev::Node(crate::nodes::NodeEvent::SliceEnd { task, .. }) => {
                if let Some(t) = self.tasks.get(task as usize) {
                    prefetch_value(t);
                }
            }
            _ => {}
        }
    }

    fn finish(mut self, progress: &dyn Fn(u64)) -> PoolMetrics {
        // Held inputs that arrive after the last event run last, as their
        // events would have.
        self.settle_all((u64::MAX, u64::MAX));
        progress(self.metrics.completed_total());
        // Nothing accepted is lost silently: whatever is still held by a
        // scheduler when the last event has run is counted.
        for t in 0..self.tasks.len() as u32 {
            if self.tasks[t as usize].live {
                self.abort(t, AbortReason::Stranded);
            }
        }
        for u in &self.uppers {
            let (f, r) = u.sched.passes();
            self.metrics.add_passes(true, f, r);
        }
        for l in &self.leaves {
            let (f, rs) = l.as_ref().map_or((0, 0), Plane::passes);
            self.metrics.add_passes(false, f, rs);
        }
        self.metrics.events = self.q.processed;
        self.metrics.compact();
        // The leaves' vector goes back to the thread, emptied, for its next
        // pool (the larger one kept).
        let mut leaves = std::mem::take(&mut self.leaves);
        leaves.clear();
        SPARE_LEAVES.with(|s| {
            if s.borrow().capacity() < leaves.capacity() {
                *s.borrow_mut() = leaves;
            }
        });
        self.metrics
    }

    // ---- network ----

    #[inline]
    fn hop_delay(&mut self, hops: u32) -> u64 {
        let mut d = 0;
        for _ in 0..hops {
            d += self.setup.hop_delay.sample(&mut self.rng_net);
        }
        d
    }

    #[inline]
    fn lost(&mut self) -> bool {
        self.setup.loss > 0.0 && self.rng_net.chance(self.setup.loss)
    }

    #[inline]
    fn spine_leaf_hops(&mut self, upper: u32, rack: u32) -> u32 {
        let u = &mut self.uppers[upper as usize];
        match u.hops[rack as usize] {
            0 => {
                let h = (self.setup.hops)(u.spine, self.racks[rack as usize].leaf);
                // Kept when it fits (topologies give 1 to 3); else asked again.
                u.hops[rack as usize] = u8::try_from(h).unwrap_or(0);
                h
            }
            h => h as u32,
        }
    }

    // ---- tasks ----

    fn new_task(&mut self, now: u64) -> u32 {
        let (service, class) = self.setup.service.sample(&mut self.rng_work);
        self.submitted += 1;
        let rec = TaskRec {
            live: true,
            seq: self.submitted,
            submitted: now,
            service,
            class,
            measured: now >= self.setup.warmup_ns,
            resubmitted: false,
            upper: 0,
        };
        if let Some(slot) = self.free_tasks.pop() {
            self.tasks[slot as usize] = rec;
            slot
        } else {
            self.tasks.push(rec);
            (self.tasks.len() - 1) as u32
        }
    }

    fn abort(&mut self, task: u32, reason: AbortReason) {
        let rec = &mut self.tasks[task as usize];
        debug_assert!(rec.live, "task ended twice");
        rec.live = false;
        self.metrics.abort(rec.measured, reason);
        self.free_tasks.push(task);
    }

    /// A scheduler's dispatch of `task`, counted by kind of decision at its
    /// layer (`upper`: spine or flat scheduler); returns the task's slot.
    fn count_decision(&mut self, upper: bool, task: TaskMeta, decision: Decision) -> u32 {
        let slot = slot(task.id);
        let measured = self.tasks[slot as usize].measured;
        self.metrics.decision(upper, decision, measured);
        slot
    }

    /// Task ids are unique within the pool (a stateless random dispatcher
    /// hashes them): the submission sequence number above the slot number.
    fn meta(&self, task: u32) -> TaskMeta {
        let rec = &self.tasks[task as usize];
        TaskMeta {
            id: rec.seq << 32 | task as u64,
            first: true,
            last: true,
            class: rec.class,
            ..TaskMeta::default()
        }
    }
}

thread_local! {
    /// An emptied leaves' vector for the thread's next pool: its ~1 MB
    /// (hundreds of ~1.7 KB data planes) was fresh memory for every pool,
    /// faulted in and zeroed by the kernel, then moved by `unzip`.
    static SPARE_LEAVES: std::cell::RefCell<Vec<Option<Plane>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Cache lines of a leaf's data plane fetched ahead (of its ~27).
const LEAF_LINES_PREFETCHED: usize = 4;

/// The pool's calendar bucket width: a 2,048th of the mean service time,
/// rounded up to a power of two by the queue (256 ns for Bimodal's 275 µs),
/// so that a bucket holds a few of the pool's events.
fn bucket_ns(mean_service_ns: f64) -> u64 {
    (mean_service_ns / 2048.0).clamp(1.0, (1u64 << 40) as f64) as u64
}

/// [`crate::floor::floor_loop`] on this simulator's own event type.
pub fn floor_loop(pending: usize, events: u64, mean_delay_ns: u64) -> u64 {
    crate::floor::floor_loop(pending, events, mean_delay_ns, Ev::Arrival, 1)
}

/// The task-table slot a task id carries (its low 32 bits, see `PoolSim::meta`).
#[inline]
fn slot(id: u64) -> u32 {
    id as u32
}

/// What a leaf's notice is on arrival at an upper that knows the rack as `node`.
fn notice_input(node: u32, notice: Notice) -> Input {
    match notice {
        Notice::IdleAdd => Input::IdleAdd { node },
        Notice::SlotAdd => Input::SlotAdd { node },
        Notice::IdleRemove => Input::IdleRemove { node },
        Notice::LoadUpdate(load) => Input::LoadUpdate { node, load },
    }
}

/// The task slot an input carries, if it carries a task.
fn task_of(input: &Input) -> Option<u32> {
    match input {
        Input::Task(t) => Some(slot(t.id)),
        Input::Resubmit(Resubmit::Pow2 { task, .. } | Resubmit::Retry { task }) => {
            Some(slot(task.id))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
