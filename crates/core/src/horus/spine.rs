//! The Horus spine scheduler of one worker pool (§3.3, §3.4, §A.3, §A.6):
//! its nodes are the racks (leaves) linked to it.

use crate::affinity::AffinityTable;
use crate::dataplane::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox, Resubmit, TaskMeta,
};
use crate::fixed;
use crate::idle::{AddOutcome, IdleNodes, RemoveFirst, Retrieved};
use crate::pow2::{LazyPow2, Pow2First};
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline, RegisterDump};
use crate::Nanos;

use super::{follow_affinity, ConnTableConfig, HorusOptions, RemoveLock, SpineIdlePick};

/// The spine scheduler of one worker pool: its nodes are the racks (leaves)
/// linked to it.
#[derive(Clone, Debug)]
pub struct HorusSpine {
    pipeline: Pipeline,
    rng: Rng,
    options: HorusOptions,
    idle: IdleNodes,
    pow2: LazyPow2,
    conn: AffinityTable,
    /// Racks the control plane removed while a leaf's idleRemove held the
    /// idleNodes lock; taken off the idle list when the lock is released.
    pending_removals: Vec<NodeId>,
    /// Racks outside this spine's group whose idle state may be linked here
    /// (`IdleLink::RandomOfPool`): idle-path targets, never power-of-2 ones.
    /// A control-plane table, like the forwarding entries for those racks.
    idle_only: Vec<bool>,
    /// [`HorusOptions::slot_tokens`]: one token per worker owing one task.
    slots: Option<IdleNodes>,
    /// Soft state ([`HorusOptions::soft_state_ns`]): when each rack's leaf
    /// last sent a notice, and whether its state has expired since. A
    /// control-plane table (the switch CPU learns arrivals from digests),
    /// written only with soft state on.
    heard: Vec<u64>,
    expired: Vec<bool>,
}

impl HorusSpine {
    /// `rack_workers[r]` is the number of pool workers in linked rack `r`. All
    /// racks start idle, as their leaves would announce at start-up.
    pub fn new(rack_workers: &[u32], seed: u64, conn: ConnTableConfig) -> Self {
        Self::with_options(rack_workers, seed, conn, HorusOptions::default())
    }

    /// As [`HorusSpine::new`]; a rack starts on the idle list only if its
    /// leaf would announce itself (more than T idle workers).
    pub fn with_options(
        rack_workers: &[u32],
        seed: u64,
        conn: ConnTableConfig,
        options: HorusOptions,
    ) -> Self {
        let racks = rack_workers.len() as u32;
        // Stages in pass order: idleNodes, the slot-token list, lazy
        // power-of-2, the connection table.
        let mut layout = Layout::new();
        let idle = if options.idle_tokens {
            // Room for two tokens per worker: tokens of workers taken by the
            // busy path stay until a task consumes them.
            let workers: u32 = rack_workers.iter().sum();
            IdleNodes::new(
                &mut layout,
                (2 * workers as usize).max(rack_workers.len()),
                false,
            )
        } else {
            IdleNodes::new(&mut layout, rack_workers.len(), true)
        };
        let slots = (options.idle_tokens && options.slot_tokens).then(|| {
            let workers: u32 = rack_workers.iter().sum();
            IdleNodes::new(
                &mut layout,
                (2 * workers as usize).max(rack_workers.len()),
                false,
            )
        });
        let pow2 = LazyPow2::new(&mut layout, racks, |r| {
            fixed::additive_factor(rack_workers[r as usize])
        });
        let conn = AffinityTable::new(
            &mut layout,
            conn.stages,
            conn.slots_per_stage,
            conn.timeout_ns,
        );
        let mut spine = HorusSpine {
            pipeline: Pipeline::with_layout(layout),
            rng: Rng::new(seed),
            options,
            idle,
            pow2,
            conn,
            pending_removals: Vec::new(),
            idle_only: vec![false; rack_workers.len()],
            slots,
            heard: vec![0; rack_workers.len()],
            expired: vec![false; rack_workers.len()],
        };
        for (r, &w) in rack_workers.iter().enumerate() {
            let tokens = if options.idle_tokens {
                w
            } else {
                u32::from(w > options.leaf_idle_threshold)
            };
            for _ in 0..tokens {
                let pass = spine.pipeline.begin();
                spine.idle.add(&pass, r as NodeId);
            }
        }
        spine
    }

    pub fn options(&self) -> &HorusOptions {
        &self.options
    }

    #[inline]
    fn known(&self, node: NodeId) -> bool {
        self.pow2.contains(node) || self.idle_only.get(node as usize).copied().unwrap_or(false)
    }

    /// `IdleLink::RandomOfPool` (horus-sim): a spine over every rack of its
    /// pool for idle state, whose power-of-2 covers only `in_group`, its own
    /// group's racks (§3.2). Racks of its group start on its idle list (if
    /// they announce, more than T idle workers); the others join when their
    /// leaf links to this spine.
    pub fn with_group(
        rack_workers: &[u32],
        in_group: &[bool],
        seed: u64,
        conn: ConnTableConfig,
        options: HorusOptions,
    ) -> Self {
        assert_eq!(rack_workers.len(), in_group.len());
        let mut spine = Self::with_options(&[], seed, conn, options);
        for (r, (&w, &own)) in rack_workers.iter().zip(in_group).enumerate() {
            let r = r as NodeId;
            spine.control_set_rack(r, w);
            if !own {
                spine.pow2.control_remove(r);
                spine.idle_only[r as usize] = true;
            } else if w > options.leaf_idle_threshold {
                let pass = spine.pipeline.begin();
                spine.idle.add(&pass, r);
            }
        }
        spine
    }

    #[inline]
    fn on_task(&mut self, now: u64, mut task: TaskMeta, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        if follow_affinity(&mut self.conn, &pass, now, task, out) {
            return;
        }
        if self.options.idle_tokens {
            self.schedule_with_tokens(&pass, now, task, out);
            return;
        }
        let rng = &mut self.rng;
        let pick = match self.options.spine_idle_pick {
            SpineIdlePick::Last => self.idle.peek(&pass),
            SpineIdlePick::Random => self.idle.peek_slot(&pass, |p| rng.below(p)),
        };
        match pick {
            Some(rack) => {
                // §A.3: tell the leaf we believe it is idle.
                task.idle_selected = true;
                self.pow2.add_drift(&pass, rack);
                self.dispatch(&pass, now, rack, task, Decision::Idle, out);
            }
            None => self.busy_path(&pass, now, task, out),
        }
    }

    /// Alg. 2 SCHEDULETASKBUSY over the racks.
    #[inline(always)]
    fn busy_path(&mut self, pass: &Pass, now: u64, task: TaskMeta, out: &mut Outbox) {
        match self.pow2.schedule(pass, &mut self.rng, task) {
            Pow2First::Chosen(rack) => self.dispatch(pass, now, rack, task, Decision::Sampled, out),
            Pow2First::Resubmit(r) => out.push(Action::Resubmit(r)),
            Pow2First::Empty => out.push(Action::Drop(DropReason::NoNodes)),
        }
    }

    /// [`HorusOptions::idle_tokens`]: pop one idle token, else power-of-2.
    /// A token of a rack removed since it was sent is discarded; the busy
    /// path then runs in the same pass (it reads no array the pop used).
    fn schedule_with_tokens(
        &mut self,
        pass: &Pass,
        now: u64,
        mut task: TaskMeta,
        out: &mut Outbox,
    ) {
        match self.idle.retrieve(pass) {
            Retrieved::Node { node: rack, .. } => {
                if self.pow2.add_drift(pass, rack) {
                    task.idle_selected = true;
                    self.dispatch(pass, now, rack, task, Decision::Idle, out);
                    return;
                }
            }
            Retrieved::Empty | Retrieved::Locked => {
                // No idle token: a slot token next (its arrays are separate).
                if let Some(slots) = &mut self.slots {
                    if let Retrieved::Node { node: rack, .. } = slots.retrieve(pass) {
                        if self.pow2.add_drift(pass, rack) {
                            self.dispatch(pass, now, rack, task, Decision::Other, out);
                        } else {
                            // A dead rack's slot token; power-of-2 needs
                            // `slot_of`, which this pass has read.
                            out.push(Action::Resubmit(Resubmit::Retry { task }));
                        }
                        return;
                    }
                }
            }
        }
        self.busy_path(pass, now, task, out);
    }

    #[inline(always)]
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
        out.push(Action::dispatch(rack, task, decision));
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
        // A dead rack's tokens are discarded when popped.
        if self.options.idle_tokens || !self.idle.contains(rack) {
            return;
        }
        if self.idle.is_locked() {
            self.pending_removals.push(rack);
            return;
        }
        self.idle.remove_now(&mut self.pipeline, rack);
    }

    /// [`RemoveLock::Off`]: both passes of Alg. 1's remove back to back, so
    /// no other packet sees the list between them (horus-sim's atomic remove).
    fn remove_atomically(&mut self, rack: NodeId, out: &mut Outbox) {
        // With the lock off no remove is ever between its passes.
        if self.idle.remove_now(&mut self.pipeline, rack) == RemoveFirst::Absent {
            out.push(Action::Drop(DropReason::StaleIdleUpdate));
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
        if rack as usize >= self.idle_only.len() {
            self.idle_only.resize(rack as usize + 1, false);
            self.heard.resize(rack as usize + 1, 0);
            self.expired.resize(rack as usize + 1, false);
        }
        let outside_group = self.idle_only[rack as usize];
        let needed = if self.options.idle_tokens {
            self.idle.capacity().max(rack as usize + 1) + 2 * workers as usize
        } else {
            rack as usize + 1
        };
        if needed > self.idle.capacity() {
            self.idle.control_resize(needed);
        }
        if !outside_group {
            self.pow2.control_add(rack, fixed::additive_factor(workers));
        }
    }

    /// A leaf's notice refreshes what the spine holds about its rack.
    #[inline]
    fn refreshed(&mut self, now: u64, rack: NodeId) {
        if self.options.soft_state_ns > 0 {
            if let Some(h) = self.heard.get_mut(rack as usize) {
                *h = now;
                self.expired[rack as usize] = false;
            }
        }
    }

    /// Soft state ([`HorusOptions::soft_state_ns`]): a rack whose leaf sent
    /// nothing for that long is no longer believed idle, and its load is
    /// back to 0, the belief about a rack that just joined (its drift then
    /// rations what it gets, §A.6). Its leaf refreshes every quarter of the
    /// bound, so this fires only when several refreshes in a row are lost
    /// (or the leaf is gone, which the controller handles by removing the
    /// rack). The rack stays schedulable: expiry forgets, it does not fail.
    pub fn control_expire(&mut self, now: u64) {
        let bound = self.options.soft_state_ns;
        if bound == 0 {
            return;
        }
        for r in 0..self.heard.len() {
            let rack = r as NodeId;
            if self.expired[r]
                || self.idle_only[r]
                || !self.pow2.contains(rack)
                || now.saturating_sub(self.heard[r]) < bound
            {
                continue;
            }
            self.expired[r] = true;
            self.control_remove_idle(rack);
            let pass = self.pipeline.begin();
            self.pow2.update(&pass, rack, 0);
        }
    }

    pub fn idle_nodes(&self) -> &IdleNodes {
        &self.idle
    }

    /// Every register array (idleNodes, then lazy power-of-2), a read-only
    /// control-plane view for installing and checking another
    /// implementation of the spine (crates/xdp).
    pub fn registers(&self) -> Vec<RegisterDump> {
        let mut dumps = self.idle.registers();
        dumps.extend(self.pow2.registers());
        dumps
    }

    /// The state of the spine's random stream (read-only), so another
    /// implementation can draw the same samples.
    pub fn rng_state(&self) -> [u64; 4] {
        self.rng.state()
    }

    /// Soft state: how many racks are expired now (forgotten and not
    /// heard from since), a read-only view for checking another
    /// implementation of [`Self::control_expire`] (crates/xdp).
    pub fn expired_racks(&self) -> usize {
        self.expired.iter().filter(|e| **e).count()
    }

    pub fn busy_nodes(&self) -> &LazyPow2 {
        &self.pow2
    }

    /// The connection table (§A.4), read-only (crates/xdp installs it).
    pub fn conn_table(&self) -> &AffinityTable {
        &self.conn
    }
}

impl DataPlane for HorusSpine {
    #[inline]
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let now = now.get();
        match input {
            Input::Task(t) => self.on_task(now, t, out),
            Input::IdleAdd { node } if self.known(node) => {
                self.refreshed(now, node);
                let pass = self.pipeline.begin();
                match self.idle.add(&pass, node) {
                    AddOutcome::Duplicate => out.push(Action::Drop(DropReason::StaleIdleUpdate)),
                    AddOutcome::Full => out.push(Action::Drop(DropReason::Overflow)),
                    AddOutcome::Added { .. } => {}
                }
            }
            Input::IdleRemove { .. } if self.options.idle_tokens => {
                out.push(Action::Drop(DropReason::Unexpected))
            }
            Input::SlotAdd { node } if self.known(node) && self.slots.is_some() => {
                let pass = self.pipeline.begin();
                let slots = self.slots.as_mut().expect("checked");
                if slots.add(&pass, node) == AddOutcome::Full {
                    out.push(Action::Drop(DropReason::Overflow));
                }
            }
            Input::SlotAdd { .. } => out.push(Action::Drop(DropReason::Unexpected)),
            Input::Resubmit(Resubmit::Retry { task }) if self.options.idle_tokens => {
                let pass = self.pipeline.resubmit();
                self.schedule_with_tokens(&pass, now, task, out);
            }
            Input::IdleRemove { node } if self.known(node) => {
                self.refreshed(now, node);
                if self.options.remove_lock == RemoveLock::Off {
                    self.remove_atomically(node, out);
                    return;
                }
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
                self.refreshed(now, node);
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
            Input::Resubmit(Resubmit::Pow2 { task, samples }) => {
                let pass = self.pipeline.resubmit();
                match self.pow2.schedule_resubmitted(&pass, &samples) {
                    Some(rack) => self.dispatch(&pass, now, rack, task, Decision::Sampled, out),
                    None => out.push(Action::Drop(DropReason::NoNodes)),
                }
            }
            Input::Reply { .. }
            | Input::QueueChanged { .. }
            | Input::Resubmit(
                Resubmit::Retry { .. } | Resubmit::Relist { .. } | Resubmit::CountDispatch { .. },
            ) => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// A leaf's idleAdd (or slotAdd) writes the idle list, its LOAD report
    /// one busy-list register (Horus §3.3, Alg. 1-2): nothing is emitted but
    /// a counted drop (duplicate, full, unknown rack). An idleRemove is not:
    /// its first pass resubmits.
    fn writes_state_only(&self, input: &Input) -> bool {
        matches!(
            input,
            Input::IdleAdd { .. } | Input::SlotAdd { .. } | Input::LoadUpdate { .. }
        )
    }
}
