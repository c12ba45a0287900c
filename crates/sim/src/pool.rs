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

use netsched_core::dataplane::{
    Action, DropReason, Input, Notice, Outbox, Resubmit, TaskMeta, Upstream,
};
use netsched_core::rng::Rng;
use netsched_core::{Control, DataPlane, Plane};

use crate::config::{FailureEvent, LoadTrackingMode, Policy, WorkerModel};
use crate::metrics::{AbortReason, MessageKind, PoolMetrics};
use crate::nodes::{Discipline, NodeEvent, Nodes, Outcome};
use crate::queue::{EventQueue, Inbox};
use crate::workload::ArrivalProcess;

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
    /// The upper scheduler (spine, or client of a flat policy) it was submitted to.
    upper: u32,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrival,
    UpperResubmit {
        upper: u32,
        r: Resubmit,
    },
    AtLower {
        rack: u32,
        meta: TaskMeta,
    },
    LowerResubmit {
        rack: u32,
        r: Resubmit,
    },
    AtNode {
        node: u32,
        task: u32,
    },
    Node(NodeEvent),
    ReplyAtLower {
        rack: u32,
        local: u32,
        qlen: u32,
        class: u8,
        task: u64,
    },
    ReplyAtUpper {
        upper: u32,
        node: u32,
        qlen: u32,
        class: u8,
        task: u64,
    },
    NoticeAtUpper {
        upper: u32,
        rack: u32,
        notice: Notice,
    },
    Sample,
    Failure {
        index: u32,
    },
    /// The controller's notice of a dead spine reaches the leaf of `rack`.
    SpineFailureKnown {
        upper: u32,
        rack: u32,
    },
    /// Submissions stop going to a dead spine.
    UpperRetired {
        upper: u32,
    },
    /// A pool left without a live upper scheduler gets a replacement.
    ReplaceUpper {
        upper: u32,
    },
    /// Uppers learn a rack is gone (leaf failure).
    RackFailureKnown {
        rack: u32,
    },
    /// A leaf's heartbeat timeout for a dead node expires.
    NodeFailureKnown {
        node: u32,
    },
}

struct UpperState {
    sched: Plane,
    /// Local node index -> rack (empty for flat policies, whose nodes are pool nodes).
    nodes: Vec<u32>,
    /// Rack -> local node index, `NONE` where the rack is not a node of this upper.
    local: Vec<u32>,
    /// Global spine id hosting it.
    spine: u32,
    alive: bool,
    /// Submissions may choose it (cleared once clients know it died).
    routable: bool,
    /// State-only inputs on their way here, each under the event key it
    /// would have had (see `RunSetup::eager_state_writes`).
    /// Held as (local rack, notice): a small entry keeps the heap's moves cheap.
    inbox: Inbox<(u32, Notice)>,
}

struct RackState {
    /// The leaf's data plane; none where a flat policy's leaf only forwards.
    sched: Option<Plane>,
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
    /// Pool node -> (rack, local index in the rack's leaf).
    node_loc: Vec<(u32, u32)>,
    node_server: Vec<u32>,
    node_cores: Vec<u32>,
    nodes: Nodes,
    /// Per pool node, tasks dispatched to it and still on the wire; kept for
    /// the ideal policies only (`Policy::sees_queues_instantly`), whose view
    /// counts them (issue 13, item 5).
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
        let (uppers, lowers) = crate::build::schedulers(setup, plan, &rack_nodes, &stream);
        let uppers: Vec<UpperState> = uppers
            .into_iter()
            .map(|b| UpperState::new(b.sched, b.nodes, b.spine, plan.racks.len()))
            .collect();
        let racks = plan
            .racks
            .iter()
            .zip(lowers)
            .zip(rack_nodes)
            .map(|((rp, (sched, link)), nodes)| RackState {
                sched,
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
            q: EventQueue::new(),
            uppers,
            racks,
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
            self.step(now, ev);
            since_report += 1;
            if since_report == 1 << 16 {
                progress(self.metrics.completed_total());
                since_report = 0;
            }
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
        for r in &self.racks {
            let (f, rs) = r.sched.as_ref().map_or((0, 0), Plane::passes);
            self.metrics.add_passes(false, f, rs);
        }
        self.metrics.events = self.q.processed;
        self.metrics
    }

    fn failure_concerns_pool(&self, f: &FailureEvent) -> bool {
        match *f {
            FailureEvent::Spine { id, .. } => self.plan.spines.contains(&id),
            FailureEvent::Leaf { id, .. } => self.plan.racks.iter().any(|r| r.leaf == id),
            FailureEvent::Server { id, .. } => self
                .plan
                .racks
                .iter()
                .any(|r| r.servers.iter().any(|s| s.0 == id)),
            FailureEvent::AddWorkers { pool, .. } | FailureEvent::RemoveWorkers { pool, .. } => {
                pool == self.plan.pool_id
            }
        }
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

    fn spine_leaf_hops(&self, upper: u32, rack: u32) -> u32 {
        (self.setup.hops)(
            self.uppers[upper as usize].spine,
            self.racks[rack as usize].leaf,
        )
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

    fn choose_upper(&mut self) -> Option<u32> {
        if self.weights_dirty {
            self.recompute_weights();
        }
        let total = *self.cum_weights.last()?;
        if total == 0 {
            return None;
        }
        let x = self.rng_route.below(total);
        Some(self.cum_weights.partition_point(|&c| c <= x) as u32)
    }

    /// Horus §3.2: spines are chosen in proportion to the workers behind
    /// them; other policies' uppers all cover the whole pool (uniform).
    fn recompute_weights(&mut self) {
        let mut acc = 0u32;
        self.cum_weights.clear();
        for i in 0..self.uppers.len() {
            if self.uppers[i].routable {
                acc += self.upper_weight(i);
            }
            self.cum_weights.push(acc);
        }
        self.weights_dirty = false;
    }

    fn upper_weight(&self, i: usize) -> u32 {
        let u = &self.uppers[i];
        if self.random_idle_link {
            // Its nodes are every rack; its share is its own group's workers.
            return self
                .racks
                .iter()
                .filter(|r| r.link.0 == i as u32)
                .map(|r| r.nodes.len() as u32)
                .sum::<u32>()
                .max(1);
        }
        if self.setup.policy.is_horus() {
            u.nodes
                .iter()
                .map(|&r| self.racks[r as usize].nodes.len() as u32)
                .sum::<u32>()
                .max(1)
        } else {
            1
        }
    }

    fn step(&mut self, now: u64, ev: Ev) {
        match ev {
            Ev::Arrival => {
                let task = self.new_task(now);
                self.metrics.submit(self.tasks[task as usize].measured);
                match self.choose_upper() {
                    Some(upper) => self.at_upper(now, upper, task),
                    None => self.abort(task, AbortReason::DeadSpine),
                }
                if let Some(next) = self.arrivals.next_arrival(now, &mut self.rng_work) {
                    if next < self.setup.end_ns {
                        self.q.at(next, Ev::Arrival);
                    }
                }
            }
            Ev::UpperResubmit { upper, r } => {
                if !self.uppers[upper as usize].alive {
                    if let Some(t) = task_of(&Input::Resubmit(r)) {
                        self.abort(t, AbortReason::DeadSpine);
                    }
                    return;
                }
                self.upper_input(now, upper, Input::Resubmit(r));
            }
            Ev::AtLower { rack, meta } => self.at_lower(now, rack, meta),
            Ev::LowerResubmit { rack, r } => {
                if !self.racks[rack as usize].alive {
                    if let Some(t) = task_of(&Input::Resubmit(r)) {
                        self.abort(t, AbortReason::DeadLeaf);
                    }
                    return;
                }
                self.lower_input(now, rack, Input::Resubmit(r));
            }
            Ev::AtNode { node, task } => self.at_node(now, node, task),
            Ev::Node(ne) => self.node_event(now, ne),
            Ev::ReplyAtLower {
                rack,
                local,
                qlen,
                class,
                task,
            } => {
                if self.racks[rack as usize].alive {
                    self.lower_input(
                        now,
                        rack,
                        Input::Reply {
                            node: local,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
            Ev::ReplyAtUpper {
                upper,
                node,
                qlen,
                class,
                task,
            } => {
                if self.uppers[upper as usize].alive {
                    self.upper_input(
                        now,
                        upper,
                        Input::Reply {
                            node,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
            Ev::NoticeAtUpper {
                upper,
                rack,
                notice,
            } => {
                if self.uppers[upper as usize].alive {
                    self.upper_input(now, upper, notice_input(rack, notice));
                }
            }
            Ev::Sample => {
                let (max, mean) = self.nodes.max_mean(0..self.nodes.len());
                self.metrics.imbalance(max, mean);
                if now + self.setup.imbalance_interval_ns < self.setup.end_ns {
                    self.q.after(self.setup.imbalance_interval_ns, Ev::Sample);
                }
            }
            Ev::Failure { index } => self.failure(now, index),
            Ev::SpineFailureKnown { upper, rack } => self.relink(now, upper, rack),
            Ev::UpperRetired { upper } => {
                self.uppers[upper as usize].routable = false;
                self.weights_dirty = true;
            }
            Ev::ReplaceUpper { upper } => {
                let dead = &self.uppers[upper as usize];
                let sched = crate::build::replacement_upper(
                    self.setup,
                    &dead.nodes,
                    self.nodes.len() as u32,
                    self.uppers.len() as u64,
                );
                let (nodes, spine) = (dead.nodes.clone(), dead.spine);
                self.uppers
                    .push(UpperState::new(sched, nodes, spine, self.racks.len()));
                self.weights_dirty = true;
                let new = (self.uppers.len() - 1) as u32;
                for rack in self.linked_racks(upper) {
                    let local = self.racks[rack as usize].link.1;
                    self.racks[rack as usize].link = (new, local);
                }
            }
            Ev::RackFailureKnown { rack } => {
                self.settle_all(self.q.current());
                for u in &mut self.uppers {
                    if let Some(local) = u.local_of(rack) {
                        u.remove_node(local, now);
                    }
                }
                if self.setup.policy.is_flat() {
                    let nodes = self.racks[rack as usize].nodes.clone();
                    for n in nodes {
                        for u in &mut self.uppers {
                            u.remove_node(n, now);
                        }
                    }
                }
            }
            Ev::NodeFailureKnown { node } => {
                let (rack, local) = self.node_loc[node as usize];
                if self.setup.policy.is_flat() {
                    self.settle_all(self.q.current());
                    for u in &mut self.uppers {
                        u.remove_node(node, now);
                    }
                } else if self.racks[rack as usize].alive {
                    let mut out = self.out.take().unwrap_or_default();
                    if let Some(leaf) = &mut self.racks[rack as usize].sched {
                        leaf.remove_node(local, now, &mut out);
                    }
                    self.lower_actions(now, rack, &mut out, None, false);
                    self.out = Some(out);
                    self.install_rack_weight(now, rack);
                }
            }
        }
    }

    fn at_upper(&mut self, now: u64, upper: u32, task: u32) {
        if !self.uppers[upper as usize].alive {
            self.abort(task, AbortReason::DeadSpine);
            return;
        }
        self.tasks[task as usize].upper = upper;
        let meta = self.meta(task);
        self.upper_input(now, upper, Input::Task(meta));
    }

    fn upper_input(&mut self, now: u64, upper: u32, input: Input) {
        self.settle(upper);
        self.deliver_upper(now, upper, input);
    }

    /// Hands `upper` the held inputs due before the current event, in the
    /// order their events would have run (`RunSetup::eager_state_writes`).
    /// Called before anything else reaches the upper's data plane.
    #[inline]
    fn settle(&mut self, upper: u32) {
        let key = self.q.current();
        self.settle_before(upper, key);
    }

    fn settle_before(&mut self, upper: u32, key: (u64, u64)) {
        let mut due = std::mem::take(&mut self.due_buf);
        self.uppers[upper as usize].inbox.take_due(key, &mut due);
        // Counted as the events they stand for, so `events` does not depend
        // on whether inputs were held.
        self.q.processed += due.len() as u64;
        for (at, (node, notice)) in due.drain(..) {
            if self.uppers[upper as usize].alive {
                self.deliver_upper(at, upper, notice_input(node, notice));
            }
        }
        self.due_buf = due;
    }

    fn settle_all(&mut self, key: (u64, u64)) {
        for u in 0..self.uppers.len() as u32 {
            self.settle_before(u, key);
        }
    }

    fn deliver_upper(&mut self, now: u64, upper: u32, input: Input) {
        let carries_task = task_of(&input);
        let first_pass_of_task = matches!(input, Input::Task(_));
        let mut out = self.out.take().unwrap_or_default();
        out.clear();
        self.uppers[upper as usize]
            .sched
            .handle(now, input, &mut out);
        self.upper_actions(now, upper, &mut out, carries_task, first_pass_of_task);
        self.out = Some(out);
    }

    /// Control plane of an upper scheduler, executing what it emits.
    fn upper_set_node(&mut self, now: u64, upper: u32, node: u32, workers: u32) {
        self.settle(upper);
        let mut out = Outbox::new();
        self.uppers[upper as usize]
            .sched
            .add_node(node, workers, now, &mut out);
        self.upper_actions(now, upper, &mut out, None, false);
    }

    /// `first_pass_of_task`: the input was a task's first pass here, so a
    /// resubmission now makes it a task this switch processes twice (Horus
    /// Fig. 15 counts each such task once per layer).
    fn upper_actions(
        &mut self,
        now: u64,
        upper: u32,
        out: &mut Outbox,
        carries_task: Option<u32>,
        first_pass_of_task: bool,
    ) {
        for a in out.drain() {
            match a {
                Action::Dispatch {
                    node,
                    task,
                    decision,
                } => {
                    let slot = slot(task.id);
                    let measured = self.tasks[slot as usize].measured;
                    self.metrics.decision(true, decision, measured);
                    if self.setup.policy.is_flat() {
                        // Flat schedulers pick a worker directly: spine -> leaf -> worker.
                        let (rack, _) = self.node_loc[node as usize];
                        let hops = self.spine_leaf_hops(upper, rack) + 1;
                        self.send_task_to_node(now, hops, node, slot);
                    } else {
                        let rack = self.uppers[upper as usize].nodes[node as usize];
                        let hops = self.spine_leaf_hops(upper, rack);
                        self.metrics.message(MessageKind::Task);
                        if self.lost() {
                            self.abort(slot, AbortReason::Lost);
                            continue;
                        }
                        let d = self.hop_delay(hops);
                        let meta = TaskMeta {
                            upstream: upper,
                            ..task
                        };
                        self.q.after(d, Ev::AtLower { rack, meta });
                    }
                }
                Action::Resubmit(r) => {
                    self.metrics
                        .resubmission(true, self.twice_processed(carries_task, first_pass_of_task));
                    self.q
                        .after(self.setup.resubmit_ns, Ev::UpperResubmit { upper, r });
                }
                Action::Drop(reason) => self.dropped(carries_task, reason, true),
                Action::Notify { .. } | Action::Queued => {}
            }
        }
    }

    fn dropped(&mut self, task: Option<u32>, reason: DropReason, upper: bool) {
        self.metrics.drop(reason);
        if let Some(t) = task {
            self.abort(
                t,
                if upper {
                    AbortReason::NoSchedulerChoice
                } else {
                    AbortReason::NoWorker
                },
            );
        }
    }

    fn at_lower(&mut self, now: u64, rack: u32, meta: TaskMeta) {
        if !self.racks[rack as usize].alive {
            self.abort(meta.id as u32, AbortReason::DeadLeaf);
            return;
        }
        self.lower_input(now, rack, Input::Task(meta));
    }

    fn lower_input(&mut self, now: u64, rack: u32, input: Input) {
        let carries_task = task_of(&input);
        let first_pass_of_task = matches!(input, Input::Task(_));
        let mut out = self.out.take().unwrap_or_default();
        out.clear();
        if let Some(leaf) = &mut self.racks[rack as usize].sched {
            leaf.handle(now, input, &mut out);
        }
        self.lower_actions(now, rack, &mut out, carries_task, first_pass_of_task);
        self.out = Some(out);
    }

    /// `first_pass_of_task` as in [`Self::upper_actions`].
    fn lower_actions(
        &mut self,
        now: u64,
        rack: u32,
        out: &mut Outbox,
        carries_task: Option<u32>,
        first_pass_of_task: bool,
    ) {
        for a in out.drain() {
            match a {
                Action::Dispatch {
                    node,
                    task,
                    decision,
                } => {
                    let slot = slot(task.id);
                    let measured = self.tasks[slot as usize].measured;
                    self.metrics.decision(false, decision, measured);
                    let pool_node = self.racks[rack as usize].nodes[node as usize];
                    self.send_task_to_node(now, 1, pool_node, slot);
                }
                Action::Resubmit(r) => {
                    self.metrics.resubmission(
                        false,
                        self.twice_processed(carries_task, first_pass_of_task),
                    );
                    self.q
                        .after(self.setup.resubmit_ns, Ev::LowerResubmit { rack, r });
                }
                Action::Notify { to, notice } => match to {
                    Upstream::Linked => {
                        let upper = self.linked_upper(rack, notice);
                        self.send_notice(rack, upper, notice);
                        // §A.3's re-sent idleRemove is for the spine that
                        // believed the rack idle, which under a random idle
                        // link need not be the one linked now.
                        if let (true, Notice::IdleRemove, Some(t)) =
                            (self.random_idle_link, notice, carries_task)
                        {
                            let sender = self.tasks[t as usize].upper;
                            if sender != upper && self.uppers[sender as usize].alive {
                                self.send_notice(rack, sender, notice);
                            }
                        }
                    }
                    Upstream::All => {
                        for upper in 0..self.uppers.len() as u32 {
                            if self.uppers[upper as usize].alive {
                                self.send_notice(rack, upper, notice);
                            }
                        }
                    }
                },
                Action::Drop(reason) => self.dropped(carries_task, reason, false),
                Action::Queued => {}
            }
        }
    }

    /// For the resubmission metric: `Some(measured)` if this resubmission is
    /// the first repeat pass of a task at this switch, `None` otherwise
    /// (a later pass of the same task, or a pass carrying no task).
    fn twice_processed(&self, task: Option<u32>, first_pass_of_task: bool) -> Option<bool> {
        task.filter(|_| first_pass_of_task)
            .map(|t| self.tasks[t as usize].measured)
    }

    /// The spine a leaf's notice goes to: its group's, except for idle state
    /// under horus-sim's random idle link, where each idleAdd links the leaf
    /// to a spine of the pool drawn at random and the idleRemove follows it.
    fn linked_upper(&mut self, rack: u32, notice: Notice) -> u32 {
        let r = rack as usize;
        if !self.random_idle_link {
            return self.racks[r].link.0;
        }
        match notice {
            Notice::IdleAdd => {
                let alive: u32 = self.uppers.iter().filter(|u| u.alive).count() as u32;
                let mut k = self.rng_idle_link.below(alive.max(1));
                let pick = (0..self.uppers.len() as u32)
                    .find(|&u| {
                        if !self.uppers[u as usize].alive {
                            return false;
                        }
                        if k == 0 {
                            return true;
                        }
                        k -= 1;
                        false
                    })
                    .unwrap_or(self.racks[r].link.0);
                self.racks[r].idle_link = Some(pick);
                pick
            }
            Notice::IdleRemove => self.racks[r]
                .idle_link
                .take()
                .unwrap_or(self.racks[r].link.0),
            Notice::LoadUpdate(_) | Notice::SlotAdd => self.racks[r].link.0,
        }
    }

    fn send_notice(&mut self, rack: u32, upper: u32, notice: Notice) {
        self.metrics.message(match notice {
            Notice::IdleAdd | Notice::SlotAdd => MessageKind::IdleAdd,
            Notice::IdleRemove => MessageKind::IdleRemove,
            Notice::LoadUpdate(_) => MessageKind::LoadUpdate,
        });
        if self.lost() {
            return;
        }
        let Some(local) = self.uppers[upper as usize].local_of(rack) else {
            return;
        };
        let hops = self.spine_leaf_hops(upper, rack);
        let d = self.hop_delay(hops);
        let input = notice_input(local, notice);
        let u = &mut self.uppers[upper as usize];
        if !self.setup.eager_state_writes && u.sched.writes_state_only(&input) {
            u.inbox.push(self.q.reserve_after(d), (local, notice));
        } else {
            self.q.after(
                d,
                Ev::NoticeAtUpper {
                    upper,
                    rack: local,
                    notice,
                },
            );
        }
    }

    fn send_task_to_node(&mut self, now: u64, hops: u32, node: u32, task: u32) {
        self.metrics.message(MessageKind::Task);
        if self.lost() {
            self.abort(task, AbortReason::Lost);
            // An ideal scheduler counted the task at dispatch; the oracle
            // knows it will never arrive.
            self.instant_view(now, node);
            return;
        }
        let d = self.hop_delay(hops);
        self.q.after(d, Ev::AtNode { node, task });
        if self.setup.policy.sees_queues_instantly() {
            // Zero delay means the dispatch is known before the next task,
            // not when the task reaches the worker: counting it only on
            // arrival let every task dispatched within one network delay
            // join the same shortest queue (issue 13, item 5; the contract
            // in netsched_core::baselines).
            self.in_flight[node as usize] += 1;
            self.instant_view(now, node);
        }
    }

    fn at_node(&mut self, now: u64, node: u32, task: u32) {
        if self.setup.policy.sees_queues_instantly() {
            self.in_flight[node as usize] -= 1;
        }
        if !self.nodes.alive(node) {
            self.abort(task, AbortReason::DeadWorker);
            return;
        }
        let TaskRec { service, class, .. } = self.tasks[task as usize];
        if let Some((t, e)) = self.nodes.arrive(now, node, task, service, class) {
            self.q.at(t, Ev::Node(e));
        }
        self.instant_view(now, node);
    }

    /// Ideal policies see every queue change at once (not a packet): the
    /// tasks dispatched to `node` and not finished, queued or in flight.
    fn instant_view(&mut self, now: u64, node: u32) {
        if self.setup.policy.sees_queues_instantly() {
            let qlen = self.nodes.qlen(node) + self.in_flight[node as usize];
            for u in 0..self.uppers.len() as u32 {
                if self.uppers[u as usize].alive {
                    self.upper_input(now, u, Input::QueueChanged { node, qlen });
                }
            }
        }
    }

    fn node_event(&mut self, now: u64, ev: NodeEvent) {
        let mut next = None;
        match self.nodes.on_event(now, ev, &mut next) {
            Outcome::Finished(f) => {
                let rec = self.tasks[f.task as usize];
                debug_assert!(rec.live, "task ended twice");
                self.tasks[f.task as usize].live = false;
                self.free_tasks.push(f.task);
                self.metrics.complete(
                    rec.measured,
                    now - rec.submitted,
                    // Waiting: everything before service starts (network,
                    // scheduler and node queues), so response = waiting + service.
                    f.started.saturating_sub(rec.submitted),
                    rec.class,
                );
                let NodeEvent::SliceEnd { node, .. } = ev;
                self.instant_view(now, node);
                // INT3 (RackSched §4.6): LOAD carries outstanding work in ns.
                let load = match self.setup.load_tracking {
                    LoadTrackingMode::Int3 => f.work.min(u32::MAX as u64) as u32,
                    _ => f.qlen,
                };
                self.reply(
                    node,
                    load,
                    rec.class,
                    rec.seq << 32 | f.task as u64,
                    rec.upper,
                );
            }
            Outcome::Lost { task } => self.abort(task, AbortReason::DeadWorker),
            Outcome::Continue => {}
        }
        if let Some((t, e)) = next {
            self.q.at(t, Ev::Node(e));
        }
    }

    fn reply(&mut self, node: u32, qlen: u32, class: u8, task: u64, upper: u32) {
        self.metrics.message(MessageKind::Reply);
        if self.lost() {
            return;
        }
        let (rack, local) = self.node_loc[node as usize];
        if self.setup.policy.is_flat() {
            // The reply passes the leaf and reaches the flat scheduler that
            // sent the task, at its spine: with several clients, only the
            // task's own client learns from it (RackSched §4.5). If that
            // scheduler died, the reply crosses its live replacement(s).
            let own = self.uppers[upper as usize].alive;
            for u in 0..self.uppers.len() as u32 {
                if (own && u == upper) || (!own && self.uppers[u as usize].alive) {
                    let upper = u;
                    let hops = 1 + self.spine_leaf_hops(upper, rack);
                    let d = self.hop_delay(hops);
                    self.q.after(
                        d,
                        Ev::ReplyAtUpper {
                            upper,
                            node,
                            qlen,
                            class,
                            task,
                        },
                    );
                }
            }
        } else {
            let d = self.hop_delay(1);
            self.q.after(
                d,
                Ev::ReplyAtLower {
                    rack,
                    local,
                    qlen,
                    class,
                    task,
                },
            );
        }
    }

    // ---- failures and dynamics (Horus §A.3, §C) ----

    /// The controller learns of a switch failure after the detection time;
    /// its notices travel hop by hop at the mean per-hop delay (Horus §C).
    fn control_delay(&self, hops: u32) -> u64 {
        self.setup.failure_detection_ns + hops as u64 * self.setup.hop_delay.mean_ns()
    }

    fn failure(&mut self, now: u64, index: u32) {
        // Whatever reached a scheduler before the failure was handled by it.
        self.settle_all(self.q.current());
        match self.setup.failures[index as usize].clone() {
            FailureEvent::Spine { id, .. } => {
                let dead: Vec<u32> = (0..self.uppers.len() as u32)
                    .filter(|&u| self.uppers[u as usize].spine == id)
                    .collect();
                for &u in &dead {
                    self.uppers[u as usize].alive = false;
                }
                let survivors = self.uppers.iter().any(|u| u.alive);
                for u in dead {
                    // The controller notifies every leaf that used the spine,
                    // each after its hop distance (Horus §C, Fig. 18).
                    let mut last = now;
                    let racks = self.linked_racks(u);
                    for rack in racks {
                        let d = self
                            .control_delay((self.setup.hops)(id, self.racks[rack as usize].leaf));
                        self.metrics.controller_messages += 1;
                        if self.setup.policy.is_horus() {
                            self.q.after(d, Ev::SpineFailureKnown { upper: u, rack });
                        }
                        last = last.max(now + d);
                    }
                    self.q.at(last, Ev::UpperRetired { upper: u });
                    if !self.setup.policy.is_horus() && !survivors {
                        self.q.at(last, Ev::ReplaceUpper { upper: u });
                    }
                }
            }
            FailureEvent::Leaf { id, .. } => {
                for rack in 0..self.racks.len() as u32 {
                    if self.racks[rack as usize].leaf != id {
                        continue;
                    }
                    self.racks[rack as usize].alive = false;
                    for n in self.racks[rack as usize].nodes.clone() {
                        self.fail_node(n);
                    }
                    let hops = self
                        .uppers
                        .iter()
                        .map(|u| (self.setup.hops)(u.spine, id))
                        .max()
                        .unwrap_or(1);
                    self.metrics.controller_messages += self.uppers.len() as u64;
                    self.q
                        .after(self.control_delay(hops), Ev::RackFailureKnown { rack });
                }
            }
            FailureEvent::Server { id, .. } => {
                for n in 0..self.node_server.len() as u32 {
                    if self.node_server[n as usize] == id && self.nodes.alive(n) {
                        self.fail_node(n);
                        let timeout = self.setup.heartbeat_timeout_ns;
                        self.q.after(timeout, Ev::NodeFailureKnown { node: n });
                    }
                }
            }
            FailureEvent::AddWorkers { rack, count, .. } => self.add_workers(now, rack, count),
            FailureEvent::RemoveWorkers { rack, count, .. } => {
                let Some(r) = self.racks.get(rack as usize) else {
                    return;
                };
                let victims: Vec<u32> = r
                    .nodes
                    .iter()
                    .rev()
                    .copied()
                    .filter(|&n| self.nodes.alive(n))
                    .take(count as usize)
                    .collect();
                for n in victims {
                    // Planned removal: the leaf forgets the worker at once; its
                    // queued tasks still finish.
                    self.step(now, Ev::NodeFailureKnown { node: n });
                }
            }
        }
    }

    fn fail_node(&mut self, node: u32) {
        let mut lost = std::mem::take(&mut self.lost_buf);
        self.nodes.fail(node, &mut lost);
        for t in lost.drain(..) {
            self.abort(t, AbortReason::DeadWorker);
        }
        self.lost_buf = lost;
    }

    fn linked_racks(&self, upper: u32) -> Vec<u32> {
        (0..self.racks.len() as u32)
            .filter(|&r| self.racks[r as usize].link.0 == upper)
            .collect()
    }

    /// Horus §A.3/§C: the controller relinks a leaf whose spine died to a
    /// surviving spine of the pool (or a replacement), which learns the rack's
    /// weight, and the leaf re-announces its idleness and load.
    fn relink(&mut self, now: u64, dead: u32, rack: u32) {
        if self.racks[rack as usize].link.0 != dead {
            return;
        }
        let target = (0..self.uppers.len() as u32)
            .filter(|&u| self.uppers[u as usize].alive)
            .min_by_key(|&u| self.linked_racks(u).len());
        let target = match target {
            Some(t) => t,
            None => {
                let new =
                    crate::build::replacement_upper(self.setup, &[], 0, self.uppers.len() as u64);
                let spine = self.uppers[dead as usize].spine;
                self.uppers
                    .push(UpperState::new(new, Vec::new(), spine, self.racks.len()));
                (self.uppers.len() - 1) as u32
            }
        };
        let t = target as usize;
        let local = self.uppers[t].ensure_node(rack);
        self.weights_dirty = true;
        if let Some(w) = self.racks[rack as usize]
            .sched
            .as_ref()
            .and_then(Plane::workers)
        {
            self.upper_set_node(now, target, local, w);
        }
        self.racks[rack as usize].link = (target, local);
        if let Some((idle, load)) = self.racks[rack as usize]
            .sched
            .as_mut()
            .and_then(Plane::resync)
        {
            if idle {
                self.send_notice(rack, target, Notice::IdleAdd);
            }
            self.send_notice(rack, target, Notice::LoadUpdate(load));
        }
    }

    /// Horus §A.2: the controller installs the rack's 1/w at every spine
    /// that schedules over it whenever its worker count changes. A rack
    /// left with no worker keeps its last factor; its spines stop choosing
    /// it only when the rack itself fails.
    fn install_rack_weight(&mut self, now: u64, rack: u32) {
        let Some(w) = self.racks[rack as usize]
            .sched
            .as_ref()
            .and_then(Plane::workers)
        else {
            return;
        };
        if w == 0 {
            return;
        }
        for u in 0..self.uppers.len() as u32 {
            if let Some(local) = self.uppers[u as usize].local_of(rack) {
                self.upper_set_node(now, u, local, w);
            }
        }
    }

    fn add_workers(&mut self, now: u64, rack: u32, count: u32) {
        if rack as usize >= self.racks.len() || !self.racks[rack as usize].alive {
            return;
        }
        let server = self.plan.racks[rack as usize]
            .servers
            .first()
            .map(|s| s.0)
            .unwrap_or(0);
        for _ in 0..count {
            let node = self.nodes.add_node(1);
            self.in_flight.push(0);
            self.node_cores.push(1);
            self.node_server.push(server);
            let local = self.racks[rack as usize].nodes.len() as u32;
            self.racks[rack as usize].nodes.push(node);
            self.node_loc.push((rack, local));
            if self.setup.policy.is_flat() {
                for u in 0..self.uppers.len() as u32 {
                    self.upper_set_node(now, u, node, 1);
                }
            } else {
                let mut out = self.out.take().unwrap_or_default();
                out.clear();
                if let Some(leaf) = &mut self.racks[rack as usize].sched {
                    leaf.add_node(local, 1, now, &mut out);
                }
                self.lower_actions(now, rack, &mut out, None, false);
                self.out = Some(out);
            }
        }
        if !self.setup.policy.is_flat() {
            self.install_rack_weight(now, rack);
        }
        self.metrics.workers += count as u64;
        self.weights_dirty = true;
    }
}

const NONE: u32 = u32::MAX;

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

impl UpperState {
    fn new(sched: Plane, nodes: Vec<u32>, spine: u32, racks: usize) -> Self {
        let mut local = vec![NONE; racks];
        for (i, &r) in nodes.iter().enumerate() {
            local[r as usize] = i as u32;
        }
        UpperState {
            sched,
            nodes,
            local,
            spine,
            alive: true,
            routable: true,
            inbox: Inbox::default(),
        }
    }

    /// Control plane: node `node` (a rack, or a worker for flat policies)
    /// is gone. An upper emits nothing when it loses a node.
    fn remove_node(&mut self, node: u32, now: u64) {
        let mut out = Outbox::new();
        self.sched.remove_node(node, now, &mut out);
        debug_assert!(out.is_empty(), "an upper's node removal emitted actions");
    }

    fn local_of(&self, rack: u32) -> Option<u32> {
        self.local
            .get(rack as usize)
            .copied()
            .filter(|&l| l != NONE)
    }

    /// Adds `rack` as a node if it is not one yet; returns its local index.
    fn ensure_node(&mut self, rack: u32) -> u32 {
        if let Some(l) = self.local_of(rack) {
            return l;
        }
        self.nodes.push(rack);
        let l = (self.nodes.len() - 1) as u32;
        self.local[rack as usize] = l;
        l
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
