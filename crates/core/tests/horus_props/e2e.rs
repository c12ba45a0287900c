//! 3. `HorusSpine` + `HorusLeaf` end to end through a small sans-IO driver.

use super::*;
use netsched_core::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NoticeMode {
    /// Leaf-to-spine notices are handled as soon as they are emitted.
    Immediate,
    /// In flight, FIFO per leaf, delivered by `DeliverNotice` ops.
    Fifo,
    /// In flight, delivered in any order.
    Reorder,
}

#[derive(Clone, Copy, Debug)]
struct E2eCfg {
    notices: NoticeMode,
    /// `DeliverNotice(_, true)` loses the notice (§A.3).
    loss: bool,
    /// Park Pow2 resubmissions at the spine / at the leaves, so other packets
    /// run between the two passes.
    delay_spine_pow2: bool,
    delay_leaf_pow2: bool,
    /// Park the second pass of the spine's idleRemove (the lock stays held).
    delay_spine_idle_remove: bool,
}

impl E2eCfg {
    const IMMEDIATE: E2eCfg = E2eCfg {
        notices: NoticeMode::Immediate,
        loss: false,
        delay_spine_pow2: false,
        delay_leaf_pow2: false,
        delay_spine_idle_remove: false,
    };

    /// Can the spine's idle view go stale in a way only §A.3 re-sends repair?
    fn may_go_stale(&self) -> bool {
        self.loss || self.notices == NoticeMode::Reorder || self.delay_spine_idle_remove
    }
}

#[derive(Clone, Copy, Debug)]
enum E2eOp {
    Task,
    /// Complete the head task of the `k`-th busy worker.
    Complete(u32),
    DeliverNotice(u32, bool),
    DeliverSpineResubmit(u32),
    DeliverLeafResubmit(u32),
    /// Deliver everything in flight (without loss) and check quiescent state.
    Drain,
}

enum Ev {
    Spine(Input),
    Leaf(usize, Input),
}

struct Cluster {
    cfg: E2eCfg,
    spine: HorusSpine,
    leaves: Vec<HorusLeaf>,
    /// FCFS queue of task ids per worker.
    queues: Vec<Vec<VecDeque<u64>>>,
    notices: VecDeque<(usize, Notice)>,
    spine_parked: Vec<Resubmit>,
    leaf_parked: Vec<(usize, Resubmit)>,
    next_task: u64,
    /// Tasks that reached a worker.
    delivered: HashSet<u64>,
    /// Idle workers whose idle reply found the leaf's list full (of stale
    /// entries) and was not listed; cleared when the worker gets a task.
    add_dropped: Vec<Vec<bool>>,
    full_drops: u64,
    completed: u64,
    /// What each leaf believes its spine believes (§3.4 aggregated updates):
    /// its last LoadUpdate plus 1/w per task it committed since.
    leaf_mirror: Vec<u64>,
    /// 1/w of each rack in 16.16.
    factor: Vec<u32>,
    /// What the spine's load + drift of each rack should be: the last
    /// LoadUpdate it processed plus 1/w per task it sent there since.
    spine_expect_q: Vec<u64>,
    /// Rack of the spine's latest dispatch.
    last_rack: Option<usize>,
    /// Spine Pow2 second passes were ever parked (the over-count they can
    /// cause lasts until the rack's next LoadUpdate).
    spine_may_overcount: bool,
    /// Largest over-count seen, in 16.16.
    max_overcount: u64,
    now: u64,
    // Coverage counters.
    resubmits: u64,
    idle_decisions: u64,
    sampled_decisions: u64,
    load_updates: u64,
    lost: u64,
    lock_held: u64,
}

fn notice_input(rack: usize, notice: Notice) -> Input {
    let node = rack as NodeId;
    match notice {
        Notice::IdleAdd => Input::IdleAdd { node },
        Notice::IdleRemove => Input::IdleRemove { node },
        Notice::LoadUpdate(load) => Input::LoadUpdate { node, load },
        Notice::SlotAdd => Input::SlotAdd { node },
    }
}

impl Cluster {
    fn new(cfg: E2eCfg, rack_workers: &[u32], seed: u64) -> Self {
        let conn = ConnTableConfig::default();
        Cluster {
            cfg,
            spine: HorusSpine::new(rack_workers, seed, conn),
            leaves: rack_workers
                .iter()
                .enumerate()
                .map(|(r, &w)| {
                    HorusLeaf::new(w, seed ^ (r as u64 + 1).wrapping_mul(0x9E37_79B9), conn)
                })
                .collect(),
            queues: rack_workers
                .iter()
                .map(|&w| vec![VecDeque::new(); w as usize])
                .collect(),
            notices: VecDeque::new(),
            spine_parked: Vec::new(),
            leaf_parked: Vec::new(),
            next_task: 0,
            delivered: HashSet::new(),
            add_dropped: rack_workers
                .iter()
                .map(|&w| vec![false; w as usize])
                .collect(),
            full_drops: 0,
            completed: 0,
            leaf_mirror: vec![0; rack_workers.len()],
            factor: rack_workers
                .iter()
                .map(|&w| fixed::additive_factor(w))
                .collect(),
            spine_expect_q: vec![0; rack_workers.len()],
            last_rack: None,
            spine_may_overcount: cfg.delay_spine_pow2,
            max_overcount: 0,
            now: 0,
            resubmits: 0,
            idle_decisions: 0,
            sampled_decisions: 0,
            load_updates: 0,
            lost: 0,
            lock_held: 0,
        }
    }

    /// Runs one packet and everything it triggers that is not parked.
    fn run(&mut self, first: Ev) -> Result<(), TestCaseError> {
        let mut work = VecDeque::from([first]);
        let mut out = Outbox::new();
        while let Some(ev) = work.pop_front() {
            self.now += 100;
            match ev {
                Ev::Spine(input) => {
                    self.spine.handle(Nanos::new(self.now), input, &mut out);
                    for a in out.drain() {
                        match a {
                            Action::Dispatch(d) => self.spine_dispatched(d, &mut work)?,
                            Action::Resubmit(r) => {
                                let park = match r {
                                    Resubmit::Pow2 { .. } => {
                                        self.resubmits += 1;
                                        self.cfg.delay_spine_pow2
                                    }
                                    _ => self.cfg.delay_spine_idle_remove,
                                };
                                if park {
                                    self.spine_parked.push(r);
                                } else {
                                    work.push_back(Ev::Spine(Input::Resubmit(r)));
                                }
                            }
                            Action::Drop(DropReason::StaleIdleUpdate)
                                if matches!(
                                    input,
                                    Input::IdleAdd { .. } | Input::IdleRemove { .. }
                                ) => {}
                            Action::Drop(DropReason::LockHeld)
                                if matches!(input, Input::IdleRemove { .. }) =>
                            {
                                prop_assert!(
                                    self.cfg.delay_spine_idle_remove,
                                    "lock held although every remove completes at once"
                                );
                                self.lock_held += 1;
                            }
                            other => {
                                prop_assert!(false, "spine: unexpected {:?} for {:?}", other, input)
                            }
                        }
                    }
                    if let Input::LoadUpdate { node, load } = input {
                        prop_assert_eq!(
                            self.spine.busy_nodes().view(node),
                            Some((load, 0)),
                            "Alg. 2 UPDATE"
                        );
                        self.spine_expect_q[node as usize] = load as u64;
                    }
                    for r in 0..self.leaves.len() {
                        let (l, d) = self
                            .spine
                            .busy_nodes()
                            .view(r as NodeId)
                            .expect("rack known");
                        let over = (l as u64 + d as u64).saturating_sub(self.spine_expect_q[r]);
                        self.max_overcount = self.max_overcount.max(over);
                    }
                }
                Ev::Leaf(r, input) => {
                    self.leaves[r].handle(Nanos::new(self.now), input, &mut out);
                    let mut load_update = None;
                    for a in out.drain() {
                        match a {
                            Action::Dispatch(d) => self.leaf_dispatched(r, d)?,
                            Action::Resubmit(rs) => {
                                self.resubmits += 1;
                                if self.cfg.delay_leaf_pow2 {
                                    self.leaf_parked.push((r, rs));
                                } else {
                                    work.push_back(Ev::Leaf(r, Input::Resubmit(rs)));
                                }
                            }
                            Action::Notify { to, notice } => {
                                prop_assert_eq!(to, Upstream::Linked);
                                if let Notice::LoadUpdate(v) = notice {
                                    load_update = Some(v);
                                    self.load_updates += 1;
                                }
                                if self.cfg.notices == NoticeMode::Immediate {
                                    work.push_back(Ev::Spine(notice_input(r, notice)));
                                } else {
                                    self.notices.push_back((r, notice));
                                }
                            }
                            other => prop_assert!(
                                false,
                                "leaf {}: unexpected {:?} for {:?}",
                                r,
                                other,
                                input
                            ),
                        }
                    }
                    // A report replaces the mirrored view, including the task
                    // committed in the same pass.
                    if let Some(v) = load_update {
                        self.leaf_mirror[r] = v as u64;
                    }
                    self.check_leaf(r)?;
                }
            }
        }
        Ok(())
    }

    /// The spine sent a task to rack `d.node`: check the §A.3 flag and
    /// hand the task to that leaf.
    fn spine_dispatched(
        &mut self,
        d: Dispatch,
        work: &mut VecDeque<Ev>,
    ) -> Result<(), TestCaseError> {
        let rack = d.node as usize;
        prop_assert!(rack < self.leaves.len(), "spine picked rack {}", rack);
        prop_assert_eq!(
            d.task.idle_selected,
            d.decision == Decision::Idle,
            "§A.3 flag"
        );
        self.spine_expect_q[rack] += self.factor[rack] as u64;
        self.last_rack = Some(rack);
        work.push_back(Ev::Leaf(rack, Input::Task(d.task)));
        Ok(())
    }

    /// Leaf `r` sent a task to worker `d.node`: a task is dispatched once,
    /// and an idle-path decision never picks a busy worker.
    fn leaf_dispatched(&mut self, r: usize, d: Dispatch) -> Result<(), TestCaseError> {
        let w = d.node as usize;
        prop_assert!(w < self.queues[r].len(), "leaf {} picked worker {}", r, w);
        prop_assert!(
            self.delivered.insert(d.task.id),
            "task {} dispatched twice",
            d.task.id
        );
        match d.decision {
            Decision::Idle => {
                // A stale idle entry must never win.
                prop_assert!(
                    self.queues[r][w].is_empty(),
                    "leaf {} sent an idle-path task to busy worker {}",
                    r,
                    w
                );
                self.idle_decisions += 1
            }
            _ => self.sampled_decisions += 1,
        }
        self.queues[r][w].push_back(d.task.id);
        self.add_dropped[r][w] = false;
        self.leaf_mirror[r] += self.factor[r] as u64;
        Ok(())
    }

    fn check_leaf(&self, r: usize) -> Result<(), TestCaseError> {
        let leaf = &self.leaves[r];
        let outstanding: u32 = self.queues[r].iter().map(|q| q.len() as u32).sum();
        // §A.2: the average is a sum of 1/w increments and decrements, exact.
        prop_assert_eq!(
            leaf.average_load(),
            outstanding * leaf.additive_factor(),
            "leaf {} average",
            r
        );
        // §3.4: the leaf reports whenever the spine's view (last report plus
        // 1/w per task sent) is a whole task per worker off the true average.
        prop_assert!(
            (leaf.average_load() as u64).abs_diff(self.leaf_mirror[r]) < fixed::ONE as u64,
            "leaf {} average {:#x} is a task per worker away from the spine's view {:#x}",
            r,
            leaf.average_load(),
            self.leaf_mirror[r]
        );
        Ok(())
    }

    fn new_task(&mut self) -> Result<(), TestCaseError> {
        let t = single_packet_task(self.next_task);
        self.next_task += 1;
        self.run(Ev::Spine(Input::Task(t)))
    }

    fn busy_workers(&self) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for (r, qs) in self.queues.iter().enumerate() {
            for (w, q) in qs.iter().enumerate() {
                if !q.is_empty() {
                    v.push((r, w));
                }
            }
        }
        v
    }

    fn complete(&mut self, r: usize, w: usize) -> Result<(), TestCaseError> {
        let id = self.queues[r][w].pop_front().expect("busy worker");
        self.completed += 1;
        let qlen = self.queues[r][w].len() as u32;
        self.run(Ev::Leaf(
            r,
            Input::Reply {
                node: w as NodeId,
                qlen,
                class: 0,
                task: id,
            },
        ))?;
        let listed = self.leaves[r].idle_nodes().idle();
        if qlen == 0 && !listed.contains(&(w as NodeId)) {
            // Only a list full of (stale) entries may refuse the add.
            prop_assert_eq!(
                listed.len(),
                self.queues[r].len(),
                "leaf {} did not list idle worker {}: {:?}",
                r,
                w,
                listed
            );
            self.add_dropped[r][w] = true;
            self.full_drops += 1;
        }
        Ok(())
    }

    fn deliver_notice(&mut self, k: u32, lose: bool) -> Result<(), TestCaseError> {
        if self.notices.is_empty() {
            return Ok(());
        }
        let idx = match self.cfg.notices {
            NoticeMode::Reorder => k as usize % self.notices.len(),
            _ => {
                // FIFO per leaf: the oldest notice of the k-th leaf with notices in flight.
                let racks: BTreeSet<usize> = self.notices.iter().map(|&(r, _)| r).collect();
                let rack = *racks.iter().nth(k as usize % racks.len()).unwrap();
                self.notices.iter().position(|&(r, _)| r == rack).unwrap()
            }
        };
        let (r, notice) = self.notices.remove(idx).unwrap();
        if lose && self.cfg.loss {
            self.lost += 1;
            return Ok(());
        }
        self.run(Ev::Spine(notice_input(r, notice)))
    }

    fn in_flight(&self) -> bool {
        !self.notices.is_empty() || !self.spine_parked.is_empty() || !self.leaf_parked.is_empty()
    }

    /// Deliver everything in flight, oldest first, without loss.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while self.in_flight() {
            if !self.spine_parked.is_empty() {
                let r = self.spine_parked.remove(0);
                self.run(Ev::Spine(Input::Resubmit(r)))?;
            } else if !self.leaf_parked.is_empty() {
                let (l, r) = self.leaf_parked.remove(0);
                self.run(Ev::Leaf(l, Input::Resubmit(r)))?;
            } else {
                let (r, notice) = self.notices.pop_front().unwrap();
                self.run(Ev::Spine(notice_input(r, notice)))?;
            }
        }
        Ok(())
    }

    fn apply(&mut self, op: E2eOp) -> Result<(), TestCaseError> {
        match op {
            E2eOp::Task => self.new_task(),
            E2eOp::Complete(k) => {
                let busy = self.busy_workers();
                if busy.is_empty() {
                    return Ok(());
                }
                let (r, w) = busy[k as usize % busy.len()];
                self.complete(r, w)
            }
            E2eOp::DeliverNotice(k, lose) => self.deliver_notice(k, lose),
            E2eOp::DeliverSpineResubmit(k) => {
                if self.spine_parked.is_empty() {
                    return Ok(());
                }
                let r = self
                    .spine_parked
                    .remove(k as usize % self.spine_parked.len());
                self.run(Ev::Spine(Input::Resubmit(r)))
            }
            E2eOp::DeliverLeafResubmit(k) => {
                if self.leaf_parked.is_empty() {
                    return Ok(());
                }
                let (l, r) = self.leaf_parked.remove(k as usize % self.leaf_parked.len());
                self.run(Ev::Leaf(l, Input::Resubmit(r)))
            }
            E2eOp::Drain => {
                self.drain()?;
                self.check_quiescent()
            }
        }
    }

    /// Racks whose leaf knows an idle worker.
    fn racks_with_idle(&self) -> BTreeSet<NodeId> {
        (0..self.leaves.len())
            .filter(|&r| !self.leaves[r].idle_nodes().is_empty())
            .map(|r| r as NodeId)
            .collect()
    }

    fn spine_idle_set(&self) -> Result<BTreeSet<NodeId>, TestCaseError> {
        let list = self.spine.idle_nodes().idle();
        let set: BTreeSet<NodeId> = list.iter().copied().collect();
        prop_assert_eq!(
            set.len(),
            list.len(),
            "duplicate rack in spine idle list {:?}",
            list
        );
        Ok(set)
    }

    /// Holds after every operation.
    fn check_always(&self) -> Result<(), TestCaseError> {
        self.spine
            .busy_nodes()
            .check_copies()
            .map_err(|e| fail(format!("spine pow2: {e}")))?;
        if !self.spine.idle_nodes().is_locked() {
            self.spine.idle_nodes().check_invariant().map_err(|e| {
                fail(format!(
                    "spine idle list {:?}: {e}",
                    self.spine.idle_nodes().idle()
                ))
            })?;
        }
        for (r, leaf) in self.leaves.iter().enumerate() {
            leaf.busy_nodes()
                .check_copies()
                .map_err(|e| fail(format!("leaf {r} pow2: {e}")))?;
            prop_assert!(!leaf.idle_nodes().is_locked(), "leaf {} lock held", r);
            self.check_leaf(r)?;
            let (l, d) = self
                .spine
                .busy_nodes()
                .view(r as NodeId)
                .expect("rack known");
            if self.spine_may_overcount {
                // A LoadUpdate between the passes of a resubmitted task makes the
                // second pass add the carried drift on top of a load that already
                // counts it (pow2.rs: atomic add/sub), so the view may over-count.
                prop_assert!(
                    l as u64 + d as u64 >= self.spine_expect_q[r],
                    "spine view of rack {} under-counts",
                    r
                );
            } else {
                prop_assert_eq!(
                    l as u64 + d as u64,
                    self.spine_expect_q[r],
                    "spine load+drift of rack {}",
                    r
                );
            }
            let listed = leaf.idle_nodes().idle();
            // The leaf's list holds up to 2w entries: stale duplicates wait
            // there until popped (horus/leaf.rs `HorusLeaf::schedule`).
            prop_assert!(
                listed.len() <= 2 * self.queues[r].len(),
                "leaf {} list overflows",
                r
            );
            if !self.cfg.delay_leaf_pow2 {
                // Workers and leaf talk without delay and no leaf pass is
                // parked: the idle list holds each empty worker exactly once.
                leaf.idle_nodes()
                    .check_invariant()
                    .map_err(|e| fail(format!("leaf {r} idle list {listed:?}: {e}")))?;
                for (w, q) in self.queues[r].iter().enumerate() {
                    // Every reply resets the view to the true queue length and
                    // every dispatch adds exactly one.
                    let (l, d) = leaf.busy_nodes().view(w as NodeId).expect("worker known");
                    prop_assert_eq!(
                        l as usize + d as usize,
                        q.len(),
                        "leaf {} load+drift of worker {}",
                        r,
                        w
                    );
                    prop_assert_eq!(
                        leaf.idle_nodes().contains(w as NodeId),
                        q.is_empty(),
                        "leaf {} worker {} (queue {}) vs idle list {:?}",
                        r,
                        w,
                        q.len(),
                        listed
                    );
                }
            } else {
                // A reply between the passes of a parked task can list a worker
                // that the second pass then loads, and list it again when it
                // turns idle: stale and duplicate entries are allowed and
                // discarded at retrieve time (horus/leaf.rs: the outstanding-count claim).
                for (w, q) in self.queues[r].iter().enumerate() {
                    let (l, d) = leaf.busy_nodes().view(w as NodeId).expect("worker known");
                    prop_assert!(
                        l as usize + d as usize >= q.len(),
                        "leaf {} under-counts worker {}",
                        r,
                        w
                    );
                    prop_assert!(
                        !q.is_empty() || listed.contains(&(w as NodeId)) || self.add_dropped[r][w],
                        "leaf {} idle worker {} is not on the idle list {:?}",
                        r,
                        w,
                        listed
                    );
                }
            }
            if self.cfg.notices == NoticeMode::Immediate
                && !self.spine_may_overcount
                && !self.cfg.delay_leaf_pow2
            {
                prop_assert_eq!(
                    self.spine_expect_q[r],
                    self.leaf_mirror[r],
                    "leaf {} mirror of the spine's view",
                    r
                );
            }
        }
        if self.cfg.notices == NoticeMode::Immediate && !self.cfg.may_go_stale() {
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view"
            );
        }
        Ok(())
    }

    /// Nothing in flight.
    fn check_quiescent(&self) -> Result<(), TestCaseError> {
        self.check_always()?;
        prop_assert!(!self.spine.idle_nodes().is_locked());
        if !self.cfg.may_go_stale() {
            // Every empty<->non-empty transition of a leaf's idle list emits a
            // notice stating the new state, and re-sends state the current one,
            // so after in-order delivery the spine holds each leaf's last word.
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view at quiescence"
            );
        }
        let outstanding: usize = self.queues.iter().flatten().map(VecDeque::len).sum();
        prop_assert_eq!(
            self.delivered.len() as u64,
            self.next_task,
            "every task reached exactly one worker"
        );
        prop_assert_eq!(self.completed + outstanding as u64, self.next_task);
        Ok(())
    }

    /// §A.3 healing: with loss over and delivery immediate, tasks alone must
    /// repair every stale entry (flagged task at a busy leaf -> IdleRemove,
    /// unflagged task at a leaf with idle workers -> IdleAdd) until the rack
    /// is full and the spine's view is empty and true.
    fn heal(&mut self) -> Result<(), TestCaseError> {
        self.cfg = E2eCfg {
            delay_leaf_pow2: self.cfg.delay_leaf_pow2,
            ..E2eCfg::IMMEDIATE
        };
        let total: usize = self.queues.iter().map(Vec::len).sum();
        let mut tasks = 0;
        while !(self.racks_with_idle().is_empty() && self.spine.idle_nodes().is_empty()) {
            prop_assert!(
                tasks < 200 * total + 1_000,
                "no convergence after {} tasks: spine {:?}, truth {:?}",
                tasks,
                self.spine.idle_nodes().idle(),
                self.racks_with_idle()
            );
            self.new_task()?;
            tasks += 1;
            // Whatever the spine believed, the task it sent repairs that
            // rack's entry: flagged at a leaf without idle workers -> IdleRemove,
            // unflagged at a leaf with some left -> IdleAdd.
            let r = self.last_rack.expect("task dispatched");
            prop_assert_eq!(
                self.spine.idle_nodes().contains(r as NodeId),
                !self.leaves[r].idle_nodes().is_empty(),
                "rack {} not repaired by a task: spine list {:?}",
                r,
                self.spine.idle_nodes().idle()
            );
        }
        self.check_always()?;
        prop_assert!(self.busy_workers().len() == total);
        Ok(())
    }

    /// Completes everything with immediate delivery, checking the spine view
    /// after every reply, then checks the all-idle end state.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        self.cfg = E2eCfg {
            delay_leaf_pow2: self.cfg.delay_leaf_pow2,
            ..E2eCfg::IMMEDIATE
        };
        let mut k = 0usize;
        loop {
            let busy = self.busy_workers();
            if busy.is_empty() {
                break;
            }
            let (r, w) = busy[k % busy.len()];
            k = k.wrapping_mul(31).wrapping_add(7);
            self.complete(r, w)?;
            self.check_always()?;
            prop_assert_eq!(
                self.spine_idle_set()?,
                self.racks_with_idle(),
                "spine idle view while draining"
            );
        }
        self.check_quiescent()?;
        for (r, leaf) in self.leaves.iter().enumerate() {
            prop_assert_eq!(leaf.average_load(), 0);
            let set: BTreeSet<NodeId> = leaf.idle_nodes().idle().iter().copied().collect();
            let want: BTreeSet<NodeId> = (0..leaf.workers())
                .filter(|&w| !self.add_dropped[r][w as usize])
                .collect();
            prop_assert!(set.is_superset(&want), "leaf {} all idle: {:?}", r, set);
            for w in 0..leaf.workers() {
                // Every reply reset the view exactly; no task is left.
                prop_assert_eq!(leaf.busy_nodes().view(w), Some((0, 0)));
            }
        }
        let all: BTreeSet<NodeId> = (0..self.leaves.len() as NodeId).collect();
        prop_assert_eq!(self.spine_idle_set()?, all);
        prop_assert_eq!(self.completed, self.next_task);
        Ok(())
    }
}

fn run_e2e(
    cfg: E2eCfg,
    rack_workers: &[u32],
    seed: u64,
    ops: &[E2eOp],
) -> Result<Cluster, TestCaseError> {
    let mut c = Cluster::new(cfg, rack_workers, seed);
    c.check_quiescent()?;
    for (step, &op) in ops.iter().enumerate() {
        c.apply(op)
            .and_then(|_| c.check_always())
            .map_err(|e| fail(format!("step {step} {op:?}: {e}")))?;
    }
    c.drain()?;
    c.check_quiescent()?;
    if cfg.may_go_stale() {
        c.heal()?;
    }
    c.finish()?;
    Ok(c)
}

fn e2e_ops() -> impl Strategy<Value = Vec<E2eOp>> {
    let op = prop_oneof![
        8 => Just(E2eOp::Task),
        6 => any::<u32>().prop_map(E2eOp::Complete),
        4 => (any::<u32>(), any::<bool>()).prop_map(|(k, lose)| E2eOp::DeliverNotice(k, lose)),
        2 => any::<u32>().prop_map(E2eOp::DeliverSpineResubmit),
        2 => any::<u32>().prop_map(E2eOp::DeliverLeafResubmit),
        1 => Just(E2eOp::Drain),
    ];
    prop::collection::vec(op, 0..200)
}

fn e2e_case() -> impl Strategy<Value = (Vec<u32>, u64, Vec<E2eOp>)> {
    (
        prop::collection::vec(1u32..=4, 1..=4),
        any::<u64>(),
        e2e_ops(),
    )
}

proptest! {
    #![proptest_config(quick(512))]

    /// No delay, no loss: after every packet each task went to exactly one
    /// worker, leaf idle lists are exactly the empty workers, leaf averages are
    /// exact, and the spine's idle list is exactly the racks with idle workers.
    #[test]
    fn e2e_immediate_delivery_keeps_every_view_exact((racks, seed, ops) in e2e_case()) {
        run_e2e(E2eCfg::IMMEDIATE, &racks, seed, &ops)?;
    }

    /// Notices delayed (FIFO per leaf) and spine power-of-2 second passes
    /// interleaved with other packets: the spine view is exact at quiescence.
    #[test]
    fn e2e_delayed_notices_converge_at_quiescence((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Fifo, delay_spine_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// Notices reordered and lost (§A.3): once loss stops, tasks alone heal
    /// the spine's idle view, then it stays exact.
    #[test]
    fn e2e_lost_and_reordered_notices_heal((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Reorder, loss: true, delay_spine_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// The spine's idleRemove second pass parked: removes under the lock are
    /// dropped and healed like losses; idle adds overtake second passes.
    #[test]
    fn e2e_spine_idle_remove_interleaved((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg {
            notices: NoticeMode::Reorder,
            delay_spine_pow2: true,
            delay_spine_idle_remove: true,
            ..E2eCfg::IMMEDIATE
        };
        run_e2e(cfg, &racks, seed, &ops)?;
    }

    /// The leaves' power-of-2 second passes parked: replies run between them.
    #[test]
    fn e2e_leaf_pow2_interleaved((racks, seed, ops) in e2e_case()) {
        let cfg = E2eCfg { notices: NoticeMode::Fifo, delay_leaf_pow2: true, ..E2eCfg::IMMEDIATE };
        run_e2e(cfg, &racks, seed, &ops)?;
    }
}

/// The properties above must not hold vacuously: a long fixed run exercises
/// both decision kinds, resubmissions, LoadUpdates, losses and healing.
#[test]
fn e2e_driver_covers_every_path() {
    let mut rng = Rng::new(42);
    let ops: Vec<E2eOp> = (0..20_000)
        .map(|_| match rng.below(23) {
            0..=6 => E2eOp::Task,
            7..=13 => E2eOp::Complete(rng.below(1 << 20)),
            14..=17 => E2eOp::DeliverNotice(rng.below(1 << 20), rng.chance(0.3)),
            18..=19 => E2eOp::DeliverSpineResubmit(rng.below(1 << 20)),
            20..=21 => E2eOp::DeliverLeafResubmit(rng.below(1 << 20)),
            _ => E2eOp::Drain,
        })
        .collect();
    let cfg = E2eCfg {
        notices: NoticeMode::Reorder,
        loss: true,
        delay_spine_pow2: true,
        ..E2eCfg::IMMEDIATE
    };
    let c = run_e2e(cfg, &[3, 1, 4, 2], 7, &ops).unwrap();
    assert!(c.next_task > 5_000);
    assert!(
        c.idle_decisions > 100,
        "idle decisions {}",
        c.idle_decisions
    );
    assert!(
        c.sampled_decisions > 100,
        "sampled decisions {}",
        c.sampled_decisions
    );
    assert!(c.resubmits > 10, "resubmissions {}", c.resubmits);
    assert!(c.load_updates > 10, "load updates {}", c.load_updates);
    assert!(c.lost > 10, "lost notices {}", c.lost);
    println!(
        "tasks {} idle {} sampled {} resubmits {} load updates {} lost {} max spine over-count {:#x}",
        c.next_task, c.idle_decisions, c.sampled_decisions, c.resubmits, c.load_updates, c.lost, c.max_overcount
    );
    // Parked leaf passes: stale entries get discarded, some idle adds are refused.
    let cfg = E2eCfg {
        notices: NoticeMode::Fifo,
        delay_leaf_pow2: true,
        ..E2eCfg::IMMEDIATE
    };
    let c = run_e2e(cfg, &[3, 1, 4, 2], 8, &ops).unwrap();
    assert!(c.resubmits > 10 && c.idle_decisions > 100);
    println!(
        "parked leaf passes: resubmits {} refused idle adds {}",
        c.resubmits, c.full_drops
    );
}
