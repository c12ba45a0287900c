//! Horus leaf and spine schedulers (NSDI'24 §3.3, §3.4, §A.1-A.6).
//!
//! Both roles run the same policy (§3.3): a task goes to an idle node if the
//! scheduler knows one, otherwise to the lighter of two random samples using
//! the lazy drift rule. They differ in what a node is (worker vs rack), in
//! whether picking an idle node removes it (a leaf's worker is busy from then
//! on; a spine's rack may still have idle workers), and in the unit of load
//! (queue length vs rack average in 16.16 fixed point).

use crate::affinity::AffinityTable;
use crate::dataplane::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Notice, Outbox, Resubmit, TaskMeta,
    Upstream,
};
use crate::fixed;
use crate::idle::{AddOutcome, IdleNodes, RemoveFirst, Retrieved};
use crate::pow2::{LazyPow2, Pow2First};
use crate::rng::Rng;
use crate::switch::{Pass, Pipeline, RegisterArray};

/// Connection-table sizing shared by both roles (§A.4).
#[derive(Clone, Copy, Debug)]
pub struct ConnTableConfig {
    pub stages: u32,
    pub slots_per_stage: u32,
    /// Entries disappear after this long ("in the order of 10s of milliseconds").
    pub timeout_ns: u64,
}

impl Default for ConnTableConfig {
    fn default() -> Self {
        ConnTableConfig {
            stages: 2,
            slots_per_stage: 1024,
            timeout_ns: 20_000_000,
        }
    }
}

/// Multi-packet tasks (§A.4): continuation packets follow the first packet's
/// choice; the last packet removes the entry. Returns true if it handled `task`.
fn follow_affinity(
    conn: &mut AffinityTable,
    pass: &Pass,
    now: u64,
    task: TaskMeta,
    out: &mut Outbox,
) -> bool {
    if task.first {
        return false;
    }
    let entry = if task.last {
        conn.remove(pass, task.id)
    } else {
        conn.lookup(pass, now, task.id)
    };
    match entry {
        Some(e) => out.push(Action::Dispatch {
            node: e.node,
            task,
            decision: Decision::Other,
        }),
        None => out.push(Action::Drop(DropReason::NoAffinity)),
    }
    true
}

/// The leaf scheduler of one worker pool in one rack.
#[derive(Clone, Debug)]
pub struct HorusLeaf {
    pipeline: Pipeline,
    rng: Rng,
    idle: IdleNodes,
    pow2: LazyPow2,
    /// 1/w for this rack's workers of the pool (§A.2).
    factor: RegisterArray<u32>,
    /// Rack average queue length, 16.16 (§A.2).
    avg: RegisterArray<u32>,
    /// The spine's view of this rack's average: the value last reported
    /// (§3.4 aggregated updates) plus the 1/w the spine has added for every
    /// task it sent here since (its drift, §A.6).
    spine_view: RegisterArray<u32>,
    conn: AffinityTable,
    workers: u32,
}

impl HorusLeaf {
    /// A leaf over `workers` workers, all idle at start.
    pub fn new(workers: u32, seed: u64, conn: ConnTableConfig) -> Self {
        assert!(workers > 0, "a leaf scheduler needs at least one worker");
        let mut leaf = HorusLeaf {
            pipeline: Pipeline::new(),
            rng: Rng::new(seed),
            // Twice the workers: stale duplicates (see `schedule`) must not
            // crowd an idle worker out of the list before they are popped.
            idle: IdleNodes::new(2 * workers as usize, false),
            pow2: LazyPow2::new(workers, |_| 1),
            factor: RegisterArray::new("leaf.factor", 1, fixed::additive_factor(workers)),
            avg: RegisterArray::new("leaf.avg", 1, 0),
            spine_view: RegisterArray::new("leaf.spine_view", 1, 0),
            conn: AffinityTable::new(conn.stages, conn.slots_per_stage, conn.timeout_ns),
            workers,
        };
        for w in 0..workers {
            let pass = leaf.pipeline.begin();
            leaf.idle.add(&pass, w);
        }
        leaf
    }

    /// Dispatch bookkeeping shared by the first and the resubmit pass: the
    /// rack average grows by 1/w and may trigger a loadUpdate.
    fn commit(
        &mut self,
        pass: &Pass,
        now: u64,
        node: NodeId,
        task: TaskMeta,
        decision: Decision,
        out: &mut Outbox,
    ) {
        let factor = self.factor.read(pass, 0);
        let avg = self.avg.update(pass, 0, |a| {
            *a = a.saturating_add(factor);
            *a
        });
        // Every task here came from the linked spine, which added 1/w to its
        // view of the rack when it sent it.
        self.maybe_load_update(pass, avg, factor, out);
        if !task.last {
            self.conn.insert(pass, now, task.id, node, task.upstream);
        }
        out.push(Action::Dispatch {
            node,
            task,
            decision,
        });
    }

    /// §3.4: report the average only when it is at least one task per worker
    /// away from what the spine believes.
    ///
    /// The spine believes the last reported value plus its drift, the 1/w it
    /// adds per task it sends here (§A.6), and resets the drift only when a
    /// report arrives. Comparing against the last reported value alone, as a
    /// literal reading of §3.4 would, lets that drift grow without bound while
    /// the rack sits in a steady state (tasks in = tasks out keeps the average
    /// flat, so nothing is ever reported): the spine then shuns a lightly
    /// loaded rack forever. Mirroring the spine's drift keeps its view within
    /// one task per worker of the truth, at about one report per w tasks
    /// (Horus App. B Fig. 16: < 0.15 load updates per task).
    fn maybe_load_update(&mut self, pass: &Pass, avg: u32, spine_drift: u32, out: &mut Outbox) {
        let send = self.spine_view.update(pass, 0, |view| {
            *view = view.saturating_add(spine_drift);
            if avg.abs_diff(*view) >= fixed::ONE {
                *view = avg;
                true
            } else {
                false
            }
        });
        if send {
            out.push(Action::Notify {
                to: Upstream::Linked,
                notice: Notice::LoadUpdate(avg),
            });
        }
    }

    fn on_task(&mut self, now: u64, task: TaskMeta, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        if follow_affinity(&mut self.conn, &pass, now, task, out) {
            return;
        }
        self.schedule(&pass, now, task, true, out);
    }

    /// Alg. 1 SCHEDULETASKIDLE, else Alg. 2 SCHEDULETASKBUSY.
    ///
    /// A worker's idle reply can cross, on the wire, a task the leaf sent it
    /// by power-of-2 while no worker was idle; the reply then puts a busy
    /// worker on the idle list, possibly twice. A leaf cannot guard the add
    /// the way a spine does (a retrieve could not clear a membership bit whose
    /// stage precedes `idle_list`), so it checks at retrieve time instead: a
    /// popped worker whose load + drift is not 0 is stale, stays popped, and
    /// the task is resubmitted to try again.
    fn schedule(
        &mut self,
        pass: &Pass,
        now: u64,
        task: TaskMeta,
        first_pass: bool,
        out: &mut Outbox,
    ) {
        let retrieved = self.idle.retrieve(pass);
        // The rack turning busy is announced; besides, on the first pass (§A.3)
        // compare the spine's belief (idle_selected) with our state after this
        // task and re-send the Idle Add/Remove it must have missed.
        match retrieved {
            Retrieved::Node {
                now_empty: true, ..
            } => out.push(Action::Notify {
                to: Upstream::Linked,
                notice: Notice::IdleRemove,
            }),
            Retrieved::Node {
                now_empty: false, ..
            } if first_pass && !task.idle_selected => out.push(Action::Notify {
                to: Upstream::Linked,
                notice: Notice::IdleAdd,
            }),
            Retrieved::Empty if first_pass && task.idle_selected => out.push(Action::Notify {
                to: Upstream::Linked,
                notice: Notice::IdleRemove,
            }),
            _ => {}
        }
        match retrieved {
            Retrieved::Node { node, .. } => {
                if self.pow2.claim_idle(pass, node) {
                    self.commit(pass, now, node, task, Decision::Idle, out);
                } else {
                    out.push(Action::Resubmit(Resubmit::Retry { task }));
                }
            }
            Retrieved::Empty | Retrieved::Locked => {
                match self.pow2.schedule(pass, &mut self.rng, task) {
                    Pow2First::Chosen(node) => {
                        self.commit(pass, now, node, task, Decision::Sampled, out)
                    }
                    Pow2First::Resubmit(r) => out.push(Action::Resubmit(r)),
                    Pow2First::Empty => out.push(Action::Drop(DropReason::NoNodes)),
                }
            }
        }
    }

    fn on_reply(&mut self, node: NodeId, qlen: u32, out: &mut Outbox) {
        if !self.pow2.contains(node) {
            out.push(Action::Drop(DropReason::UnknownNode));
            return;
        }
        let pass = self.pipeline.begin();
        // Alg. 2 UPDATE.
        self.pow2.update(&pass, node, qlen);
        let factor = self.factor.read(&pass, 0);
        let avg = self.avg.update(&pass, 0, |a| {
            *a = a.saturating_sub(factor);
            *a
        });
        self.maybe_load_update(&pass, avg, 0, out);
        // §3.4: an idle worker joins the idle list; the rack turning idle is
        // announced to the linked spine.
        if qlen == 0 {
            if let AddOutcome::Added { was_empty: true } = self.idle.add(&pass, node) {
                out.push(Action::Notify {
                    to: Upstream::Linked,
                    notice: Notice::IdleAdd,
                });
            }
        }
    }

    // ---- control plane (Horus §A.3: the leaf controller) ----

    /// A worker failed or was removed: forget it everywhere.
    pub fn control_remove_worker(&mut self, node: NodeId, out: &mut Outbox) {
        if !self.pow2.contains(node) {
            return;
        }
        self.pow2.control_remove(node);
        self.conn.control_forget_node(node);
        if self.idle.contains(node) {
            // The switch CPU injects a remove; on a leaf no other remove can hold the lock.
            let pass = self.pipeline.begin();
            let first = self.idle.remove_first(&pass, node);
            let pass = self.pipeline.resubmit();
            match first {
                RemoveFirst::Resubmit {
                    last_node,
                    removed_index,
                } => self.idle.remove_second(&pass, last_node, removed_index),
                _ => self.idle.release(&pass),
            }
            if self.idle.is_empty() {
                out.push(Action::Notify {
                    to: Upstream::Linked,
                    notice: Notice::IdleRemove,
                });
            }
        }
        self.workers -= 1;
        self.rescale_factor();
    }

    /// A worker was added (idle): it becomes schedulable at once.
    pub fn control_add_worker(&mut self, node: NodeId, out: &mut Outbox) {
        if self.pow2.contains(node) {
            return;
        }
        if 2 * (node as usize + 1) > self.idle.capacity() {
            self.idle.control_resize(2 * (node as usize + 1));
        }
        self.pow2.control_add(node, 1);
        let pass = self.pipeline.begin();
        if let AddOutcome::Added { was_empty: true } = self.idle.add(&pass, node) {
            out.push(Action::Notify {
                to: Upstream::Linked,
                notice: Notice::IdleAdd,
            });
        }
        self.workers += 1;
        self.rescale_factor();
    }

    /// The controller recomputes 1/w and rescales the running average (§A.2).
    fn rescale_factor(&mut self) {
        let old = self.factor.peek(0);
        let new = if self.workers == 0 {
            0
        } else {
            fixed::additive_factor(self.workers)
        };
        if old > 0 {
            let avg = self.avg.peek(0) as u64 * new as u64 / old as u64;
            self.avg.control_write(0, avg as u32);
        }
        self.factor.control_write(0, new);
    }

    pub fn workers(&self) -> u32 {
        self.workers
    }

    /// 1/w in 16.16, which the controller also installs at the linked spine.
    pub fn additive_factor(&self) -> u32 {
        self.factor.peek(0)
    }

    pub fn average_load(&self) -> u32 {
        self.avg.peek(0)
    }

    /// The controller linked this leaf to a (new) spine, which starts from the
    /// report the leaf sends now: returns (has idle workers, average load).
    pub fn control_resync(&mut self) -> (bool, u32) {
        let avg = self.avg.peek(0);
        self.spine_view.control_write(0, avg);
        (!self.idle.is_empty(), avg)
    }

    pub fn idle_nodes(&self) -> &IdleNodes {
        &self.idle
    }

    pub fn busy_nodes(&self) -> &LazyPow2 {
        &self.pow2
    }

    pub fn connection_table(&mut self) -> &mut AffinityTable {
        &mut self.conn
    }
}

impl DataPlane for HorusLeaf {
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(t) => self.on_task(now, t, out),
            Input::Reply { node, qlen, .. } => self.on_reply(node, qlen, out),
            Input::Resubmit(Resubmit::Retry { task }) => {
                let pass = self.pipeline.resubmit();
                self.schedule(&pass, now, task, false, out);
            }
            Input::Resubmit(Resubmit::Pow2 {
                task,
                first,
                first_load,
                first_drift,
                second,
                second_load,
                second_drift,
            }) => {
                let pass = self.pipeline.resubmit();
                match self.pow2.schedule_resubmitted(
                    &pass,
                    first,
                    first_load,
                    first_drift,
                    second,
                    second_load,
                    second_drift,
                ) {
                    Some(node) => self.commit(&pass, now, node, task, Decision::Sampled, out),
                    None => out.push(Action::Drop(DropReason::NoNodes)),
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// The spine scheduler of one worker pool: its nodes are the racks (leaves)
/// linked to it.
#[derive(Clone, Debug)]
pub struct HorusSpine {
    pipeline: Pipeline,
    rng: Rng,
    idle: IdleNodes,
    pow2: LazyPow2,
    conn: AffinityTable,
    /// Racks the control plane removed while a leaf's idleRemove held the
    /// idleNodes lock; taken off the idle list when the lock is released.
    pending_removals: Vec<NodeId>,
}

impl HorusSpine {
    /// `rack_workers[r]` is the number of pool workers in linked rack `r`. All
    /// racks start idle, as their leaves would announce at start-up.
    pub fn new(rack_workers: &[u32], seed: u64, conn: ConnTableConfig) -> Self {
        let racks = rack_workers.len() as u32;
        let mut spine = HorusSpine {
            pipeline: Pipeline::new(),
            rng: Rng::new(seed),
            idle: IdleNodes::new(rack_workers.len(), true),
            pow2: LazyPow2::new(racks, |r| fixed::additive_factor(rack_workers[r as usize])),
            conn: AffinityTable::new(conn.stages, conn.slots_per_stage, conn.timeout_ns),
            pending_removals: Vec::new(),
        };
        for r in 0..racks {
            let pass = spine.pipeline.begin();
            spine.idle.add(&pass, r);
        }
        spine
    }

    fn known(&self, node: NodeId) -> bool {
        self.pow2.contains(node)
    }

    fn on_task(&mut self, now: u64, mut task: TaskMeta, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        if follow_affinity(&mut self.conn, &pass, now, task, out) {
            return;
        }
        match self.idle.peek(&pass) {
            Some(rack) => {
                // §A.3: tell the leaf we believe it is idle.
                task.idle_selected = true;
                self.pow2.add_drift(&pass, rack);
                self.dispatch(&pass, now, rack, task, Decision::Idle, out);
            }
            None => match self.pow2.schedule(&pass, &mut self.rng, task) {
                Pow2First::Chosen(rack) => {
                    self.dispatch(&pass, now, rack, task, Decision::Sampled, out)
                }
                Pow2First::Resubmit(r) => out.push(Action::Resubmit(r)),
                Pow2First::Empty => out.push(Action::Drop(DropReason::NoNodes)),
            },
        }
    }

    fn dispatch(
        &mut self,
        pass: &Pass,
        now: u64,
        rack: NodeId,
        mut task: TaskMeta,
        decision: Decision,
        out: &mut Outbox,
    ) {
        if decision != Decision::Idle {
            task.idle_selected = false;
        }
        if !task.last {
            self.conn.insert(pass, now, task.id, rack, 0);
        }
        out.push(Action::Dispatch {
            node: rack,
            task,
            decision,
        });
    }

    // ---- control plane ----

    /// Leaf or link failure: the rack is no longer schedulable (§A.3).
    pub fn control_remove_rack(&mut self, rack: NodeId) {
        self.pow2.control_remove(rack);
        self.conn.control_forget_node(rack);
        self.control_remove_idle(rack);
    }

    /// The switch CPU injects a two-pass remove. If a leaf's idleRemove holds
    /// the lock between its passes, the removal waits for the release: taking
    /// the lock from under it would corrupt the list.
    fn control_remove_idle(&mut self, rack: NodeId) {
        if !self.idle.contains(rack) {
            return;
        }
        if self.idle.is_locked() {
            self.pending_removals.push(rack);
            return;
        }
        let pass = self.pipeline.begin();
        let first = self.idle.remove_first(&pass, rack);
        let pass = self.pipeline.resubmit();
        match first {
            RemoveFirst::Resubmit {
                last_node,
                removed_index,
            } => self.idle.remove_second(&pass, last_node, removed_index),
            RemoveFirst::Absent | RemoveFirst::RemovedTop => self.idle.release(&pass),
            RemoveFirst::LockHeld => unreachable!("the lock was checked above"),
        }
    }

    /// After a second pass released the lock: apply removals that waited for it.
    fn after_unlock(&mut self) {
        while let Some(rack) = self.pending_removals.pop() {
            self.control_remove_idle(rack);
        }
    }

    /// A rack joined (or its worker count changed): install its 1/w.
    pub fn control_set_rack(&mut self, rack: NodeId, workers: u32) {
        if rack as usize >= self.idle.capacity() {
            self.idle.control_resize(rack as usize + 1);
        }
        self.pow2.control_add(rack, fixed::additive_factor(workers));
    }

    pub fn idle_nodes(&self) -> &IdleNodes {
        &self.idle
    }

    pub fn busy_nodes(&self) -> &LazyPow2 {
        &self.pow2
    }
}

impl DataPlane for HorusSpine {
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        match input {
            Input::Task(t) => self.on_task(now, t, out),
            Input::IdleAdd { node } if self.known(node) => {
                let pass = self.pipeline.begin();
                if self.idle.add(&pass, node) == AddOutcome::Duplicate {
                    out.push(Action::Drop(DropReason::StaleIdleUpdate));
                }
            }
            Input::IdleRemove { node } if self.known(node) => {
                let pass = self.pipeline.begin();
                match self.idle.remove_first(&pass, node) {
                    RemoveFirst::Resubmit {
                        last_node,
                        removed_index,
                    } => out.push(Action::Resubmit(Resubmit::IdleRemove {
                        last_node,
                        removed_index,
                    })),
                    RemoveFirst::Absent => {
                        out.push(Action::Drop(DropReason::StaleIdleUpdate));
                        out.push(Action::Resubmit(Resubmit::IdleRemoveRelease));
                    }
                    RemoveFirst::RemovedTop => {
                        out.push(Action::Resubmit(Resubmit::IdleRemoveRelease))
                    }
                    RemoveFirst::LockHeld => out.push(Action::Drop(DropReason::LockHeld)),
                }
            }
            Input::LoadUpdate { node, load } if self.known(node) => {
                let pass = self.pipeline.begin();
                self.pow2.update(&pass, node, load);
            }
            Input::IdleAdd { .. } | Input::IdleRemove { .. } | Input::LoadUpdate { .. } => {
                out.push(Action::Drop(DropReason::UnknownNode))
            }
            Input::Resubmit(Resubmit::IdleRemove {
                last_node,
                removed_index,
            }) => {
                let pass = self.pipeline.resubmit();
                self.idle.remove_second(&pass, last_node, removed_index);
                self.after_unlock();
            }
            Input::Resubmit(Resubmit::IdleRemoveRelease) => {
                let pass = self.pipeline.resubmit();
                self.idle.release(&pass);
                self.after_unlock();
            }
            Input::Resubmit(Resubmit::Pow2 {
                task,
                first,
                first_load,
                first_drift,
                second,
                second_load,
                second_drift,
            }) => {
                let pass = self.pipeline.resubmit();
                match self.pow2.schedule_resubmitted(
                    &pass,
                    first,
                    first_load,
                    first_drift,
                    second,
                    second_load,
                    second_drift,
                ) {
                    Some(rack) => self.dispatch(&pass, now, rack, task, Decision::Sampled, out),
                    None => out.push(Action::Drop(DropReason::NoNodes)),
                }
            }
            Input::Reply { .. }
            | Input::QueueChanged { .. }
            | Input::Resubmit(Resubmit::Retry { .. } | Resubmit::CountDispatch { .. }) => {
                out.push(Action::Drop(DropReason::Unexpected))
            }
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}
