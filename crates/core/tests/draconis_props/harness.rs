//! The harness: a switch whose recirculated packets wait in a pool and come back in any order.

use super::*;
use netsched_core::Nanos;

#[derive(Default)]
pub(super) struct Ledger {
    /// Times each task id was assigned.
    pub(super) assigned: HashMap<u64, u32>,
    /// Times each task id came back in an error packet.
    pub(super) returned: HashMap<u64, u32>,
    pub(super) submitted: Vec<TaskInfo>,
    /// Per level: task ids in the order their insert passes succeeded.
    pub(super) accepted_order: Vec<Vec<u64>>,
    /// Acceptance sequence number of each task id (its latest insertion).
    pub(super) seq: HashMap<u64, u64>,
    pub(super) next_seq: u64,
    /// Per level: ids in assignment order.
    pub(super) assign_order: Vec<Vec<u64>>,
    /// Locality violations found.
    pub(super) violations: Vec<String>,
    pub(super) noops: u64,
    pub(super) acks: u64,
    /// Locality: examinations of each task by a non-local executor, counted
    /// here from the packets (a request's or swap's task in hand), not read
    /// from the data plane's skip counter.
    pub(super) non_local_examinations: HashMap<u64, u16>,
    pub(super) coverage: Coverage,
}

/// How often a run reached the paths that matter for conservation: full and
/// empty queue, both repairs and what meets them in flight, pointer
/// wrap-around, swaps and the locality start limits. Summed over a property's
/// cases and asserted non-zero, so a generator that stopped reaching a path
/// fails instead of passing vacuously.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Coverage {
    pub(super) add_repairs: u64,
    pub(super) retrieve_repairs: u64,
    /// Task requests (or a priority walk's next level) arriving while the
    /// level's retrieve repair is in flight (§4.7.2).
    pub(super) requests_during_retrieve_repair: u64,
    /// Submission passes arriving while their level's add repair is in
    /// flight (refused, even if a request freed room meanwhile).
    pub(super) inserts_during_add_repair: u64,
    pub(super) error_packets: u64,
    /// Requests answered with a no-op while the queue held nothing.
    pub(super) noops_on_empty_queue: u64,
    /// A pointer incremented from 2^32 - 1 to 0.
    pub(super) add_ptr_wraps: u64,
    pub(super) retrieve_ptr_wraps: u64,
    /// Swap passes (§5.1) and hands put back at the tail.
    pub(super) swap_passes: u64,
    pub(super) tail_returns: u64,
    /// Locality: remote tasks started after exceeding a start limit.
    pub(super) rack_limit_starts: u64,
    pub(super) global_limit_starts: u64,
}

impl Coverage {
    pub(super) fn add(&mut self, o: &Coverage) {
        self.add_repairs += o.add_repairs;
        self.retrieve_repairs += o.retrieve_repairs;
        self.requests_during_retrieve_repair += o.requests_during_retrieve_repair;
        self.inserts_during_add_repair += o.inserts_during_add_repair;
        self.error_packets += o.error_packets;
        self.noops_on_empty_queue += o.noops_on_empty_queue;
        self.add_ptr_wraps += o.add_ptr_wraps;
        self.retrieve_ptr_wraps += o.retrieve_ptr_wraps;
        self.swap_passes += o.swap_passes;
        self.tail_returns += o.tail_returns;
        self.rack_limit_starts += o.rack_limit_starts;
        self.global_limit_starts += o.global_limit_starts;
    }

    /// The paths every conserving property must reach: both repairs, what
    /// meets them, full (error packets) and empty (no-ops) queues.
    pub(super) fn assert_queue_paths(&self, what: &str) {
        let c = self;
        for (n, path) in [
            (c.add_repairs, "add repairs"),
            (c.retrieve_repairs, "retrieve repairs"),
            (
                c.requests_during_retrieve_repair,
                "requests meeting a retrieve repair",
            ),
            (
                c.inserts_during_add_repair,
                "submissions meeting an add repair",
            ),
            (c.error_packets, "error packets"),
            (c.noops_on_empty_queue, "no-ops on an empty queue"),
        ] {
            assert!(n > 0, "{what}: no {path} in any case: {c:?}");
        }
    }
}

pub(super) struct Harness {
    pub(super) dp: Draconis,
    pub(super) out: PullOutbox,
    pub(super) pool: Vec<Recirc>,
    pub(super) ledger: Ledger,
    pub(super) next_job: u64,
    pub(super) next_task: u64,
}

impl Harness {
    pub(super) fn new(config: DraconisConfig) -> Self {
        Harness {
            dp: Draconis::new(config),
            out: PullOutbox::new(),
            pool: Vec::new(),
            ledger: Ledger {
                accepted_order: vec![Vec::new(); config.levels as usize],
                assign_order: vec![Vec::new(); config.levels as usize],
                ..Ledger::default()
            },
            next_job: 0,
            next_task: 0,
        }
    }

    pub(super) fn level_of(&self, t: &TaskInfo) -> usize {
        t.priority.clamp(1, self.dp.config().levels) as usize - 1
    }

    /// The task a submission-like pass is about to enqueue, if any.
    pub(super) fn inserting(&self, input: &PullInput) -> Option<TaskInfo> {
        match input {
            PullInput::JobSubmission(j) => j.tasks.as_slice().first().copied(),
            PullInput::Resubmit(Recirc::Submit { job, next, .. }) => {
                job.tasks.as_slice().get(*next as usize).copied()
            }
            PullInput::Resubmit(Recirc::Swap { hand, .. }) => Some(hand.task),
            _ => None,
        }
    }

    /// Coverage of one input, judged on the state it meets (the pointers
    /// and repair flags are control-plane reads, not data-plane accesses).
    pub(super) fn observe_input(&mut self, input: &PullInput) {
        let levels = self.dp.config().levels;
        let level_of_request = match input {
            PullInput::TaskRequest(_) => Some(0),
            PullInput::Resubmit(Recirc::Request { level, .. }) => Some(*level),
            _ => None,
        };
        let cov = &mut self.ledger.coverage;
        if let Some(l) = level_of_request {
            if l < levels && self.dp.queue().pointers(l).2.retrieve.is_some() {
                cov.requests_during_retrieve_repair += 1;
            }
        }
        let submitting = matches!(
            input,
            PullInput::JobSubmission(_) | PullInput::Resubmit(Recirc::Submit { .. })
        );
        if let Some(t) = self.inserting(input).filter(|_| submitting) {
            let l = self.level_of(&t) as u8;
            if self.dp.queue().pointers(l).2.add.is_some() {
                self.ledger.coverage.inserts_during_add_repair += 1;
            }
        }
        let cov = &mut self.ledger.coverage;
        match input {
            PullInput::Resubmit(Recirc::Repair(Repair::Add { .. })) => cov.add_repairs += 1,
            PullInput::Resubmit(Recirc::Repair(Repair::Retrieve { .. })) => {
                cov.retrieve_repairs += 1
            }
            PullInput::Resubmit(Recirc::Swap { .. }) => cov.swap_passes += 1,
            _ => {}
        }
    }

    pub(super) fn feed(&mut self, input: PullInput) {
        let before = (
            self.dp.stats.tasks_enqueued,
            self.dp.stats.tail_returns,
            self.dp.stats.swaps,
        );
        let candidate = self.inserting(&input);
        self.observe_input(&input);
        let levels = self.dp.config().levels;
        let pointers_before: Vec<(u32, u32)> = (0..levels)
            .map(|l| {
                let (r, a, _) = self.dp.queue().pointers(l);
                (r, a)
            })
            .collect();
        let was_empty = self.dp.queue().is_empty();
        // A swap pass that re-emits the hand it came with (a re-aim) is not
        // a new examination of that task.
        let hand_in = match input {
            PullInput::Resubmit(Recirc::Swap { hand, .. }) => Some(hand.task.id),
            _ => None,
        };
        self.out.clear();
        self.dp.handle(Nanos::ZERO, input, &mut self.out);
        for (l, &(r0, a0)) in pointers_before.iter().enumerate() {
            let (r1, a1, _) = self.dp.queue().pointers(l as u8);
            let cov = &mut self.ledger.coverage;
            if a0 == u32::MAX && a1 == 0 {
                cov.add_ptr_wraps += 1;
            }
            if r0 == u32::MAX && r1 == 0 {
                cov.retrieve_ptr_wraps += 1;
            }
        }
        if self.dp.stats.tail_returns > before.1 {
            self.ledger.coverage.tail_returns += 1;
        }
        let after = (
            self.dp.stats.tasks_enqueued,
            self.dp.stats.tail_returns,
            self.dp.stats.swaps,
        );
        // Record insertions (submission or tail return of a swap hand).
        if let Some(t) = candidate {
            let inserted = after.0 > before.0 || after.1 > before.1;
            if inserted {
                let l = self.level_of(&t);
                self.ledger.accepted_order[l].push(t.id);
                self.ledger.seq.insert(t.id, self.ledger.next_seq);
                self.ledger.next_seq += 1;
            }
        }
        let constraint = self.dp.config().constraint;
        let actions: Vec<PullAction> = self.out.as_slice().to_vec();
        for a in actions {
            match a {
                PullAction::Recirculate(r) => {
                    if let Recirc::Swap { exec, hand, .. } = r {
                        if hand_in != Some(hand.task.id) {
                            // The task was examined by `exec` and skipped.
                            self.examined(constraint, exec.node, &hand.task, None);
                        }
                    }
                    self.pool.push(r)
                }
                PullAction::AssignTask {
                    executor,
                    task,
                    skips,
                    ..
                } => {
                    *self.ledger.assigned.entry(task.id).or_default() += 1;
                    let l = self.level_of(&task);
                    self.ledger.assign_order[l].push(task.id);
                    // Harness: executor id == node id.
                    self.examined(constraint, executor, &task, Some(skips));
                    if let Constraint::Resource = constraint {
                        // Executors in these tests have the resources given by
                        // `exec_resources`.
                        if task.props & !exec_resources(executor) != 0 {
                            self.ledger
                                .violations
                                .push(format!("task {} lacks resources", task.id));
                        }
                    }
                }
                PullAction::ErrorPacket { tasks, .. } => {
                    self.ledger.coverage.error_packets += 1;
                    for t in tasks.as_slice() {
                        *self.ledger.returned.entry(t.id).or_default() += 1;
                    }
                }
                PullAction::NoOp { .. } => {
                    self.ledger.noops += 1;
                    if was_empty {
                        self.ledger.coverage.noops_on_empty_queue += 1;
                    }
                }
                PullAction::Ack { .. } => self.ledger.acks += 1,
                PullAction::Drop(r) => panic!("unexpected drop {r:?}"),
                PullAction::Probe { .. } | PullAction::Reprobe(_) => {
                    panic!("a Draconis switch sent another scheduler's message: {a:?}")
                }
            }
        }
    }

    /// Locality (§5.3), judged from the harness's own count: `task` was
    /// examined by an executor on `node` and started (`reported` = the skip
    /// counter the switch reported) or skipped (`None`). A non-local
    /// examination counts; the task may start only if local, past the
    /// global limit, or past the rack limit on a rack holding its data, and
    /// must start if so (a skip then is a violation too).
    pub(super) fn examined(
        &mut self,
        constraint: Constraint,
        node: u32,
        task: &TaskInfo,
        reported: Option<u16>,
    ) {
        let Constraint::Locality {
            rack_start_limit,
            global_start_limit,
            nodes_per_rack,
        } = constraint
        else {
            return;
        };
        let local: Vec<u16> = task.local_nodes().collect();
        let is_local = local.is_empty() || local.iter().any(|&n| n as u32 == node);
        let count = self
            .ledger
            .non_local_examinations
            .entry(task.id)
            .or_default();
        if !is_local {
            *count += 1;
        }
        let count = *count;
        let same_rack = local
            .iter()
            .any(|&n| n as u32 / nodes_per_rack == node / nodes_per_rack);
        let by_global = count > global_start_limit;
        let by_rack = same_rack && count > rack_start_limit;
        let allowed = is_local || by_global || by_rack;
        let v = &mut self.ledger.violations;
        match reported {
            Some(skips) => {
                if skips != count {
                    v.push(format!(
                        "task {}: switch reports {skips} skips, harness counted {count} non-local examinations",
                        task.id
                    ));
                }
                if !allowed {
                    v.push(format!(
                        "task {} on node {node} after {count} non-local examinations (local {local:?})",
                        task.id
                    ));
                }
                if !is_local {
                    let cov = &mut self.ledger.coverage;
                    if by_rack && !by_global {
                        cov.rack_limit_starts += 1;
                    } else {
                        cov.global_limit_starts += 1;
                    }
                }
            }
            None => {
                if allowed {
                    v.push(format!(
                        "task {} skipped by node {node} though allowed after {count} non-local examinations (local {local:?})",
                        task.id
                    ));
                }
            }
        }
    }

    pub(super) fn submit(&mut self, tasks: &[TaskInfo]) {
        let mut ts = Vec::new();
        for t in tasks {
            let mut t = *t;
            t.id = self.next_task;
            self.next_task += 1;
            ts.push(t);
        }
        self.ledger.submitted.extend_from_slice(&ts);
        let j = self.next_job;
        self.next_job += 1;
        self.feed(job(7, j, &ts));
    }

    pub(super) fn deliver(&mut self, index: usize) {
        if self.pool.is_empty() {
            return;
        }
        let r = self.pool.remove(index % self.pool.len());
        self.feed(PullInput::Resubmit(r));
    }

    pub(super) fn has_swap_in_flight(&self) -> bool {
        self.pool.iter().any(|r| matches!(r, Recirc::Swap { .. }))
    }

    /// Delivers everything, then pulls with a capable executor until empty.
    pub(super) fn drain(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..100_000 {
            if !self.pool.is_empty() {
                self.deliver(0);
            } else if !self.dp.queue().is_empty() {
                self.feed(PullInput::TaskRequest(ExecInfo {
                    id: DRAIN_EXEC,
                    node: DRAIN_EXEC,
                    resources: u64::MAX,
                }));
            } else {
                return Ok(());
            }
        }
        Err(TestCaseError::fail(format!(
            "drain did not finish: {} queued, pointers {:?}",
            self.dp.queue().len(),
            self.dp.queue().pointers(0)
        )))
    }

    /// Every submitted task was assigned or returned, exactly once.
    pub(super) fn check_conservation(&self) -> Result<(), TestCaseError> {
        for t in &self.ledger.submitted {
            let a = self.ledger.assigned.get(&t.id).copied().unwrap_or(0);
            let r = self.ledger.returned.get(&t.id).copied().unwrap_or(0);
            prop_assert_eq!(
                a + r,
                1,
                "task {} assigned {} times, returned {} times",
                t.id,
                a,
                r
            );
        }
        prop_assert_eq!(
            self.ledger.assigned.len() + self.ledger.returned.len(),
            self.ledger.submitted.len()
        );
        Ok(())
    }

    /// Tasks of each level are queued in acceptance order.
    pub(super) fn check_queue_order(&self) -> Result<(), TestCaseError> {
        for l in 0..self.dp.config().levels {
            let contents = self.dp.queue().contents(l);
            let seqs: Vec<u64> = contents
                .iter()
                .map(|s| self.ledger.seq[&s.task.id])
                .collect();
            prop_assert!(
                seqs.windows(2).all(|w| w[0] < w[1]),
                "level {} out of order: {:?}",
                l,
                seqs
            );
            // Every valid entry is reachable by the pointers.
            prop_assert_eq!(self.dp.queue().reachable(l), contents.len());
        }
        Ok(())
    }
}

/// The executor that drains the queue at the end: has every resource and
/// is on a node of its own.
pub(super) const DRAIN_EXEC: u32 = 1000;

/// Resources of executor `e` in the resource tests: bit i set if i+1 divides e+1.
pub(super) fn exec_resources(e: u32) -> u64 {
    if e == DRAIN_EXEC {
        return u64::MAX;
    }
    (0..4u32)
        .filter(|i| (e + 1).is_multiple_of(i + 1))
        .fold(0, |m, i| m | 1 << i)
}

#[derive(Clone, Debug)]
pub(super) enum Op {
    /// A job of these (priority or props, per policy) tasks.
    Submit(Vec<u8>),
    /// A task request from executor `e`.
    Request(u32),
    /// Deliver the `i`-th recirculated packet in the pool.
    Deliver(usize),
}

pub(super) fn ops(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::collection::vec(0u8..16, 1..=MAX_TASKS_PER_PACKET).prop_map(Op::Submit),
            3 => (0u32..8).prop_map(Op::Request),
            5 => (0usize..64).prop_map(Op::Deliver),
        ],
        1..max,
    )
}

pub(super) fn task_for(c: &DraconisConfig, x: u8) -> TaskInfo {
    let mut t = TaskInfo::new(0);
    // Priority is read only with several levels; 0 and 5+ are clamped.
    t.priority = x % 6;
    match c.constraint {
        Constraint::None => t.priority = x % 5, // includes 0, clamped
        Constraint::Resource => t.props = (x % 16) as u64,
        Constraint::Locality { .. } => {
            t = t.with_local_nodes(&[(x % 8) as u16]);
        }
    }
    t
}

pub(super) fn exec_for(c: &DraconisConfig, e: u32) -> ExecInfo {
    ExecInfo {
        id: e,
        node: e,
        resources: match c.constraint {
            Constraint::Resource => exec_resources(e),
            _ => u64::MAX,
        },
    }
}

pub(super) fn run_ops(
    config: DraconisConfig,
    ops: &[Op],
    one_walk: bool,
    check_order_each_step: bool,
) -> Result<Harness, TestCaseError> {
    let mut h = Harness::new(config);
    for op in ops {
        match op {
            Op::Submit(xs) => {
                let ts: Vec<TaskInfo> = xs.iter().map(|&x| task_for(&config, x)).collect();
                h.submit(&ts);
            }
            Op::Request(e) => {
                // With `one_walk`, a request that could start a second walk
                // while one is in flight comes from an executor that runs
                // anything instead: it still moves retrieve_ptr under the walk.
                let e = if one_walk && h.has_swap_in_flight() {
                    DRAIN_EXEC
                } else {
                    *e
                };
                h.feed(PullInput::TaskRequest(exec_for(&config, e)));
            }
            Op::Deliver(i) => h.deliver(*i),
        }
        // Nothing is assigned twice, at any time.
        for (id, n) in &h.ledger.assigned {
            prop_assert!(*n == 1, "task {} assigned {} times", id, n);
        }
        if check_order_each_step {
            h.check_queue_order()?;
        }
    }
    h.drain()?;
    h.check_conservation()?;
    prop_assert!(h.ledger.violations.is_empty(), "{:?}", h.ledger.violations);
    Ok(h)
}

/// One input through a bare queue; what it emitted.
pub(super) fn feed(dp: &mut Draconis, input: PullInput) -> Vec<PullAction> {
    let mut out = PullOutbox::new();
    dp.handle(Nanos::ZERO, input, &mut out);
    out.as_slice().to_vec()
}

/// The repairs among `actions`.
pub(super) fn repairs(actions: &[PullAction]) -> Vec<Repair> {
    actions
        .iter()
        .filter_map(|a| match a {
            PullAction::Recirculate(Recirc::Repair(r)) => Some(*r),
            _ => None,
        })
        .collect()
}

/// The task `actions` assign, if any.
pub(super) fn assigned(actions: &[PullAction]) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        PullAction::AssignTask { task, .. } => Some(task.id),
        _ => None,
    })
}
