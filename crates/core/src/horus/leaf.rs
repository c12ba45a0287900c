//! The Horus leaf scheduler of one worker pool in one rack (§3.3, §3.4, §A.2, §A.3).
//!
//! Stage order of a pass: connection table, idleNodes (`lock`, `p`,
//! `idle_list`, `idle_index`), `listed`, the power-of-2 lists,
//! `outstanding`, `last_sent`, `factor`, `avg`, `spine_view`.
//!
//! `outstanding` and `last_sent` are our addition. The paper keeps a worker
//! on the idle list on the strength of its own report (`qlen == 0`), and
//! reports cross tasks on the wire: an idle report can arrive while a task is
//! on its way to that worker, and two reports of one worker can arrive out of
//! order. The leaf therefore also counts, per worker, the tasks it sent that
//! have not been answered. A popped entry is used only if that count is 0,
//! and a worker whose count returns to 0 is listed again (a resubmitted
//! pass, `Resubmit::Relist`) if the last report to arrive was an older,
//! non-empty one and no entry of it is left (`listed` counts them). Entries
//! of one worker then never exceed two, so the list of 2w never fills. The same count keeps the
//! rack average exact: it is the sum of the counts times 1/w, so a reply
//! that answers nothing does not lower it, and a worker's lost tasks are
//! forgotten once it reports an empty queue long after its last dispatch.

use crate::affinity::AffinityTable;
use crate::dataplane::{
    Action, DataPlane, Decision, DropReason, Input, NodeId, Notice, Outbox, Resubmit, TaskMeta,
    Upstream,
};
use crate::fixed;
use crate::idle::{AddOutcome, IdleNodes, Retrieved};
use crate::pow2::{LazyPow2, Pow2First};
use crate::rng::Rng;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray, RegisterDump};
use crate::Nanos;

use super::{follow_affinity, ConnTableConfig, HorusOptions};

/// Why `last_sent` is outside the stage order: a reply reads it before the
/// `outstanding` update, which forgets lost tasks only after a quiet period
/// ([`HorusOptions::loss_resync_ns`]), while a dispatch writes it after
/// `outstanding` granted the claim. A switch would recirculate one of them,
/// which changes the pass counts.
const LAST_SENT_UNORDERED: &str = "a reply reads it before `outstanding` (loss resync), a dispatch writes it after the `outstanding` claim";

/// Why the slot list ([`HorusOptions::slot_tokens`]) is outside the stage
/// order: a task pops it before lazy power-of-2 and `outstanding` (the popped
/// worker's drift and claim), while a reply pushes onto it after
/// `outstanding` (a worker owing exactly one task). A switch would
/// recirculate the reply, which changes the pass counts.
const SLOTS_UNORDERED: &str =
    "a task pops it before power-of-2 and `outstanding`, a reply pushes after `outstanding`";

/// Per-leaf counters of what the data plane corrected, for the driver's metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeafCounters {
    /// Popped idle entries whose worker still had tasks outstanding.
    pub stale_idle_entries: u64,
    /// Workers listed again because their outstanding count returned to 0
    /// after a report that was not the last one they sent.
    pub relisted_after_reorder: u64,
    /// Outstanding tasks forgotten as lost (see [`HorusOptions::loss_resync_ns`]).
    pub forgotten_lost: u64,
}

#[derive(Clone, Debug)]
pub struct HorusLeaf {
    pipeline: Pipeline,
    rng: Rng,
    options: HorusOptions,
    idle: IdleNodes,
    pow2: LazyPow2,
    /// Entries each worker has in `idle_list` (a report crossing a task can
    /// list a worker that is already listed).
    listed: RegisterArray<u32>,
    /// Tasks sent to each worker and not yet answered.
    outstanding: RegisterArray<u32>,
    /// When the leaf last sent each worker a task.
    last_sent: RegisterArray<u64>,
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
    counters: LeafCounters,
    /// [`HorusOptions::slot_tokens`]: workers owing exactly one task, one
    /// entry per 2 -> 1 drop of their count (stale entries are skipped).
    slots: Option<IdleNodes>,
    /// When the leaf last refreshed its spine ([`HorusOptions::soft_state_ns`]).
    refreshed_at: u64,
}

impl HorusLeaf {
    /// A leaf over `workers` workers with the paper's mechanism, all idle at start.
    pub fn new(workers: u32, seed: u64, conn: ConnTableConfig) -> Self {
        Self::with_options(workers, seed, conn, HorusOptions::default())
    }

    pub fn with_options(
        workers: u32,
        seed: u64,
        conn: ConnTableConfig,
        options: HorusOptions,
    ) -> Self {
        assert!(workers > 0, "a leaf scheduler needs at least one worker");
        let n = workers as usize;
        // Stages in pass order (docs/switch-model.md): idleNodes, the slot
        // list, `listed`, lazy power-of-2, `outstanding` with `last_sent`,
        // `factor`, `avg`, `spine_view`, the connection table.
        let mut layout = Layout::new();
        // Twice the workers: a report crossing a task on the wire lists a
        // busy worker, whose entry stays until it is popped and found stale.
        let idle = IdleNodes::new(&mut layout, 2 * n, false);
        let slots = (options.idle_tokens && options.slot_tokens)
            .then(|| IdleNodes::new_unordered(&mut layout, 2 * n, SLOTS_UNORDERED));
        let listed = layout.stage();
        let listed = layout.array(listed, "leaf.listed", n, 0);
        let pow2 = LazyPow2::new(&mut layout, workers, |_| 1);
        let claim = layout.stage();
        let outstanding = layout.array(claim, "leaf.outstanding", n, 0);
        let last_sent = layout.unordered_array(claim, "leaf.last_sent", n, 0, LAST_SENT_UNORDERED);
        let (factor, avg, view) = (layout.stage(), layout.stage(), layout.stage());
        let factor = layout.array(factor, "leaf.factor", 1, fixed::additive_factor(workers));
        let avg = layout.array(avg, "leaf.avg", 1, 0);
        let spine_view = layout.array(view, "leaf.spine_view", 1, 0);
        let conn = AffinityTable::new(
            &mut layout,
            conn.stages,
            conn.slots_per_stage,
            conn.timeout_ns,
        );
        let mut leaf = HorusLeaf {
            pipeline: Pipeline::with_layout(layout),
            rng: Rng::new(seed),
            options,
            idle,
            pow2,
            listed,
            outstanding,
            last_sent,
            factor,
            avg,
            spine_view,
            conn,
            workers,
            counters: LeafCounters::default(),
            slots,
            refreshed_at: 0,
        };
        // The spine starts from the same state, so the start-up notices go nowhere.
        let mut start_up = Outbox::new();
        for w in 0..workers {
            let pass = leaf.pipeline.begin();
            leaf.list_idle(&pass, w, &mut start_up);
            start_up.clear();
        }
        leaf
    }

    fn threshold(&self) -> u32 {
        self.options.leaf_idle_threshold
    }

    /// Dispatch bookkeeping shared by every path: the worker owes one more
    /// reply, and the rack average grows by 1/w and may trigger a loadUpdate.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn commit(
        &mut self,
        pass: &Pass,
        now: u64,
        node: NodeId,
        task: TaskMeta,
        decision: Decision,
        counted: bool,
        out: &mut Outbox,
    ) {
        if !counted {
            self.outstanding
                .update(pass, node as usize, |o| *o = o.saturating_add(1));
        }
        self.last_sent.write(pass, node as usize, now);
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
        out.push(Action::dispatch(node, task, decision));
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
    #[inline]
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

    #[inline]
    fn notify(out: &mut Outbox, notice: Notice) {
        out.push(Action::Notify {
            to: Upstream::Linked,
            notice,
        });
    }

    #[inline]
    fn on_task(&mut self, now: u64, task: TaskMeta, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        if follow_affinity(&mut self.conn, &pass, now, task, out) {
            return;
        }
        self.schedule(&pass, now, task, true, out);
    }

    /// Alg. 1 SCHEDULETASKIDLE, else Alg. 2 SCHEDULETASKBUSY.
    ///
    /// The leaf announces itself idle to its spine while more than T workers
    /// are idle (T = 0 in the paper). A popped worker that still owes replies
    /// is a stale entry (see the module docs): it stays popped and the task
    /// is resubmitted to try again.
    #[inline(always)]
    fn schedule(
        &mut self,
        pass: &Pass,
        now: u64,
        task: TaskMeta,
        first_pass: bool,
        out: &mut Outbox,
    ) {
        let t = self.threshold();
        let retrieved = self.idle.retrieve(pass);
        if self.options.idle_tokens {
            // Tokens are consumed at the spine; nothing to withdraw or re-send.
            if let (Retrieved::Empty | Retrieved::Locked, Some(slots)) =
                (retrieved, &mut self.slots)
            {
                if let Retrieved::Node { node, .. } = slots.retrieve(pass) {
                    self.dispatch_to_slot(pass, now, task, node, out);
                    return;
                }
            }
            self.dispatch_retrieved(pass, now, task, retrieved, out);
            return;
        }
        // The idle count crossing down to T is announced; besides, on the
        // first pass (§A.3) compare the spine's belief (idle_selected) with
        // our state after this task and re-send the Idle Add/Remove it must
        // have missed.
        match retrieved {
            Retrieved::Node { remaining, .. } if remaining == t => {
                Self::notify(out, Notice::IdleRemove)
            }
            Retrieved::Node { remaining, .. }
                if first_pass && remaining > t && !task.idle_selected =>
            {
                Self::notify(out, Notice::IdleAdd)
            }
            Retrieved::Node { remaining, .. }
                if first_pass && remaining < t && task.idle_selected =>
            {
                Self::notify(out, Notice::IdleRemove)
            }
            Retrieved::Empty if first_pass && task.idle_selected => {
                Self::notify(out, Notice::IdleRemove)
            }
            _ => {}
        }
        self.dispatch_retrieved(pass, now, task, retrieved, out);
    }

    /// A worker from the slot list takes the task if it still owes at most
    /// one (its count may have risen since the entry was made).
    fn dispatch_to_slot(
        &mut self,
        pass: &Pass,
        now: u64,
        task: TaskMeta,
        node: NodeId,
        out: &mut Outbox,
    ) {
        let live = self.pow2.add_drift(pass, node);
        let claimed = self.outstanding.update(pass, node as usize, |o| {
            let free = live && *o < 2;
            if free {
                *o += 1;
            }
            free
        });
        if claimed {
            self.commit(pass, now, node, task, Decision::Other, true, out);
        } else {
            self.counters.stale_idle_entries += 1;
            out.push(Action::Resubmit(Resubmit::Retry { task }));
        }
    }

    #[inline(always)]
    fn dispatch_retrieved(
        &mut self,
        pass: &Pass,
        now: u64,
        task: TaskMeta,
        retrieved: Retrieved,
        out: &mut Outbox,
    ) {
        match retrieved {
            Retrieved::Node { node, .. } => {
                self.listed
                    .update(pass, node as usize, |l| *l = l.saturating_sub(1));
                // Counted before the claim is known (the drift lists come
                // first); a stale entry's worker is busy and its next reply
                // resets the drift anyway.
                let live = self.pow2.add_drift(pass, node);
                let claimed = self.outstanding.update(pass, node as usize, |o| {
                    let free = live && *o == 0;
                    if free {
                        *o = 1;
                    }
                    free
                });
                if claimed {
                    self.commit(pass, now, node, task, Decision::Idle, true, out);
                } else {
                    self.counters.stale_idle_entries += 1;
                    out.push(Action::Resubmit(Resubmit::Retry { task }));
                }
            }
            Retrieved::Empty | Retrieved::Locked => {
                match self.pow2.schedule(pass, &mut self.rng, task) {
                    Pow2First::Chosen(node) => {
                        self.commit(pass, now, node, task, Decision::Sampled, false, out)
                    }
                    Pow2First::Resubmit(r) => out.push(Action::Resubmit(r)),
                    Pow2First::Empty => out.push(Action::Drop(DropReason::NoNodes)),
                }
            }
        }
    }

    #[inline]
    fn list_idle(&mut self, pass: &Pass, node: NodeId, out: &mut Outbox) {
        let added = self.idle.add(pass, node);
        if let AddOutcome::Added { .. } = added {
            self.listed
                .update(pass, node as usize, |l| *l = l.saturating_add(1));
        }
        match added {
            // One token per worker that becomes idle.
            AddOutcome::Added { .. } if self.options.idle_tokens => {
                Self::notify(out, Notice::IdleAdd)
            }
            AddOutcome::Added { previous }
                if previous == self.threshold() && self.options.announce_on_reply =>
            {
                Self::notify(out, Notice::IdleAdd)
            }
            AddOutcome::Added { .. } | AddOutcome::Duplicate => {}
            // Only stale entries can fill a list of 2w; the worker is not
            // lost for good (its next empty report lists it), but the drop
            // is counted rather than silent.
            AddOutcome::Full => out.push(Action::Drop(DropReason::Overflow)),
        }
    }

    #[inline]
    fn on_reply(&mut self, now: u64, node: NodeId, qlen: u32, out: &mut Outbox) {
        if !self.pow2.contains(node) {
            out.push(Action::Drop(DropReason::UnknownNode));
            return;
        }
        let pass = self.pipeline.begin();
        // §3.4: an idle worker joins the idle list.
        let listed = if qlen == 0 {
            self.list_idle(&pass, node, out);
            1
        } else {
            self.listed.read(&pass, node as usize)
        };
        // Alg. 2 UPDATE.
        self.pow2.update(&pass, node, qlen);
        let idle_for = now.saturating_sub(self.last_sent.read(&pass, node as usize));
        let lost_after = self.options.loss_resync_ns;
        // (tasks this reply answers, outstanding afterwards)
        let (answered, left) = self.outstanding.update(&pass, node as usize, |o| {
            let answered = if qlen == 0 && *o > 1 && idle_for >= lost_after {
                *o
            } else {
                (*o).min(1)
            };
            *o -= answered;
            (answered, *o)
        });
        if answered > 1 {
            self.counters.forgotten_lost += u64::from(answered - 1);
        }
        let factor = self.factor.read(&pass, 0);
        let avg = self.avg.update(&pass, 0, |a| {
            *a = a.saturating_sub(factor.saturating_mul(answered));
            *a
        });
        self.maybe_load_update(&pass, avg, 0, out);
        if let (true, 1, Some(slots)) = (answered > 0, left, &mut self.slots) {
            match slots.add(&pass, node) {
                AddOutcome::Added { .. } => Self::notify(out, Notice::SlotAdd),
                _ => out.push(Action::Drop(DropReason::Overflow)),
            }
        }
        if answered > 0 && left == 0 && listed == 0 {
            // The last reply to arrive is an older one: the worker answered
            // everything, so it is idle, but its empty report came first and
            // its entry may already have been popped as stale.
            self.counters.relisted_after_reorder += 1;
            out.push(Action::Resubmit(Resubmit::Relist { node }));
        }
    }

    // ---- control plane (Horus §A.3: the leaf controller) ----

    /// A worker failed or was removed: forget it everywhere, including the
    /// tasks the rack average still counts for it.
    pub fn control_remove_worker(&mut self, node: NodeId, out: &mut Outbox) {
        if !self.pow2.contains(node) {
            return;
        }
        self.pow2.control_remove(node);
        self.conn.control_forget_node(node);
        let owed = self.outstanding.peek(node as usize);
        self.outstanding.control_write(node as usize, 0);
        self.listed.control_write(node as usize, 0);
        let avg = self
            .avg
            .peek(0)
            .saturating_sub(self.factor.peek(0).saturating_mul(owed));
        self.avg.control_write(0, avg);
        let was_announced = self.idle.len() > self.threshold();
        while self.idle.contains(node) {
            // The switch CPU injects a remove; on a leaf no other remove can hold the lock.
            self.idle.remove_now(&mut self.pipeline, node);
        }
        if was_announced && self.idle.len() <= self.threshold() {
            Self::notify(out, Notice::IdleRemove);
        }
        self.workers -= 1;
        self.rescale_factor();
    }

    /// A worker was added (idle): it becomes schedulable at once.
    pub fn control_add_worker(&mut self, node: NodeId, out: &mut Outbox) {
        if self.pow2.contains(node) {
            return;
        }
        let n = node as usize;
        if 2 * (n + 1) > self.idle.capacity() {
            self.idle.control_resize(2 * (n + 1));
        }
        if n >= self.outstanding.len() {
            self.outstanding.control_resize(n + 1, 0);
            self.last_sent.control_resize(n + 1, 0);
            self.listed.control_resize(n + 1, 0);
        }
        self.outstanding.control_write(n, 0);
        self.pow2.control_add(node, 1);
        let pass = self.pipeline.begin();
        self.list_idle(&pass, node, out);
        self.workers += 1;
        self.rescale_factor();
    }

    /// The leaf controller reconciles its view of `node` with the queue
    /// length the worker reported in a heartbeat (`qlen`: tasks queued and
    /// running there). Replies alone cannot repair what faults leave behind:
    /// tasks lost with a killed worker or on the wire stay counted in
    /// `outstanding` and the rack average, and a worker whose last reply was
    /// lost is never listed idle again. Applied only when the leaf sent the
    /// worker nothing for `loss_resync_ns`, so no task is on its way there;
    /// a reply still on its way back is then counted as answered here and
    /// answers nothing when it arrives (its worker's next heartbeat agrees).
    /// Idempotent: the same report twice changes nothing more.
    pub fn control_reconcile_worker(
        &mut self,
        node: NodeId,
        qlen: u32,
        now: u64,
        out: &mut Outbox,
    ) {
        if !self.pow2.contains(node) || (node as usize) >= self.outstanding.len() {
            return;
        }
        let n = node as usize;
        if now.saturating_sub(self.last_sent.peek(n)) < self.options.loss_resync_ns {
            return;
        }
        let pass = self.pipeline.begin();
        // The pass visits the idle list, power-of-2 and `spine_view` in stage
        // order; the notices keep the order the controller always sent them in.
        let mut listing = Outbox::new();
        if qlen == 0 && self.listed.peek(n) == 0 {
            self.list_idle(&pass, node, &mut listing);
        }
        self.pow2.update(&pass, node, qlen);
        let old = self.outstanding.peek(n);
        if old != qlen {
            if old > qlen {
                self.counters.forgotten_lost += u64::from(old - qlen);
            }
            self.outstanding.control_write(n, qlen);
            let factor = self.factor.peek(0);
            let avg = self
                .avg
                .peek(0)
                .saturating_sub(factor.saturating_mul(old))
                .saturating_add(factor.saturating_mul(qlen));
            self.avg.control_write(0, avg);
            self.maybe_load_update(&pass, avg, 0, out);
        }
        for action in listing.drain() {
            out.push(action);
        }
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

    pub fn options(&self) -> &HorusOptions {
        &self.options
    }

    /// 1/w in 16.16, which the controller also installs at the linked spine.
    pub fn additive_factor(&self) -> u32 {
        self.factor.peek(0)
    }

    pub fn average_load(&self) -> u32 {
        self.avg.peek(0)
    }

    /// Tasks sent to `node` and not yet answered (control-plane view).
    pub fn outstanding(&self, node: NodeId) -> u32 {
        if (node as usize) < self.outstanding.len() {
            self.outstanding.peek(node as usize)
        } else {
            0
        }
    }

    pub fn counters(&self) -> LeafCounters {
        self.counters
    }

    /// Whether the leaf currently announces idle workers (more than T listed).
    pub fn announces_idle(&self) -> bool {
        self.idle.len() > self.threshold()
    }

    /// The controller linked this leaf to a (new) spine, which starts from the
    /// report the leaf sends now: returns (announces idle workers, average load).
    pub fn control_resync(&mut self) -> (bool, u32) {
        let avg = self.avg.peek(0);
        self.spine_view.control_write(0, avg);
        (self.announces_idle(), avg)
    }

    /// Soft state ([`HorusOptions::soft_state_ns`]): every refresh interval
    /// the leaf controller re-sends the spine its whole view, as
    /// [`Self::control_resync`] does after a relink: the idle listing (add
    /// or remove) and the average load. A lost or forged notice then holds
    /// at most one interval. With idle tokens only the load is re-sent (a
    /// token stands for one idle transition; re-sending it would add one).
    pub fn control_tick(&mut self, now: u64, out: &mut Outbox) {
        if !self.refresh_due(now) {
            return;
        }
        let (idle, avg) = self.control_resync();
        self.refresh(idle, avg, out);
    }

    /// [`Self::control_tick`] for a leaf whose registers live elsewhere
    /// (crates/xdp's maps, read by its daemon): the same refresh, when due,
    /// from the idle list's length and the rack average that `read` returns
    /// (called only then; `None`, unreadable, skips this refresh).
    pub fn control_tick_of(
        &mut self,
        now: u64,
        read: impl FnOnce() -> Option<(u32, u32)>,
        out: &mut Outbox,
    ) {
        if !self.refresh_due(now) {
            return;
        }
        if let Some((idle_listed, avg)) = read() {
            self.refresh(idle_listed > self.threshold(), avg, out);
        }
    }

    /// A refresh interval passed since the last refresh (which is now).
    fn refresh_due(&mut self, now: u64) -> bool {
        let every = self.options.refresh_interval_ns();
        if every == 0 || now.saturating_sub(self.refreshed_at) < every {
            return false;
        }
        self.refreshed_at = now;
        true
    }

    /// The refresh's notices: the idle listing and the average load.
    fn refresh(&self, idle: bool, avg: u32, out: &mut Outbox) {
        if !self.options.idle_tokens {
            Self::notify(
                out,
                if idle {
                    Notice::IdleAdd
                } else {
                    Notice::IdleRemove
                },
            );
        }
        Self::notify(out, Notice::LoadUpdate(avg));
    }

    /// Every register array of the paper's mechanism, in stage order, read
    /// by the control plane: crates/xdp installs these in its maps and checks
    /// them after every packet. The slot list and the connection table are not
    /// included (crates/xdp has no slot list; the table is [`Self::conn_table`]).
    pub fn registers(&self) -> Vec<RegisterDump> {
        let mut dumps = self.idle.registers();
        dumps.push(RegisterDump::of(&self.listed, u64::from));
        dumps.extend(self.pow2.registers());
        dumps.extend([
            RegisterDump::of(&self.outstanding, u64::from),
            RegisterDump::of(&self.last_sent, |t| t),
            RegisterDump::of(&self.factor, u64::from),
            RegisterDump::of(&self.avg, u64::from),
            RegisterDump::of(&self.spine_view, u64::from),
        ]);
        dumps
    }

    /// The state of the leaf's random stream (read-only), so another
    /// implementation can draw the same samples.
    pub fn rng_state(&self) -> [u64; 4] {
        self.rng.state()
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

    /// The connection table (§A.4), read-only (crates/xdp installs it).
    pub fn conn_table(&self) -> &AffinityTable {
        &self.conn
    }
}

impl DataPlane for HorusLeaf {
    #[inline]
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        let now = now.get();
        match input {
            Input::Task(t) => self.on_task(now, t, out),
            Input::Reply { node, qlen, .. } => self.on_reply(now, node, qlen, out),
            Input::Resubmit(Resubmit::Retry { task }) => {
                let pass = self.pipeline.resubmit();
                self.schedule(&pass, now, task, false, out);
            }
            Input::Resubmit(Resubmit::Relist { node }) => {
                let pass = self.pipeline.resubmit();
                if self.pow2.contains(node) {
                    self.list_idle(&pass, node, out);
                }
            }
            Input::Resubmit(Resubmit::Pow2 { task, samples }) => {
                let pass = self.pipeline.resubmit();
                // A worker that turned idle and was listed between the passes
                // is taken from the list instead: sending it this task by the
                // busy path would leave its entry behind and list it a second
                // time when it idles again, without bound while passes wait.
                let choice = LazyPow2::resubmit_choice(&samples);
                if self.listed.read(&pass, choice as usize) > 0 {
                    out.push(Action::Resubmit(Resubmit::Retry { task }));
                    return;
                }
                match self.pow2.schedule_resubmitted(&pass, &samples) {
                    Some(node) => {
                        self.commit(&pass, now, node, task, Decision::Sampled, false, out)
                    }
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
