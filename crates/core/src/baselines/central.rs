//! One centralized FIFO scheduler over all workers of a pool: the
//! "global-cFCFS" of RackSched §2 (Fig. 2) and the centralized oracle
//! baseline of DESIGN.md. Each worker runs one task at a time; with zero
//! delays and exponential service this is exactly M/M/c.

use std::collections::VecDeque;

use super::{follow, remember, IdleFifo};
use crate::affinity::AffinityTable;
use crate::dataplane::{Action, DataPlane, Decision, DropReason, Input, NodeId, Outbox, TaskMeta};
use crate::racksched::ReqTableConfig;
use crate::switch::{Pass, Pipeline};

/// A centralized FIFO over single-task workers, in software (no switch can
/// hold such a queue; Draconis is the in-switch variant).
///
/// * Task (first packet): to the longest-idle worker if one is idle, else
///   appended to the buffer (`Queued`), or `Drop(Overflow)` if the buffer is
///   at capacity. The buffer is allocated once, at construction.
/// * `Reply{node, qlen: 0}`: the worker finished and is free; it takes the
///   buffer's head at once, or joins the idle FIFO. A reply with `qlen > 0`
///   means the worker is still busy, so nothing changes.
/// * Continuations of a dispatched task follow it (its entry is made when the
///   first packet leaves the buffer); one whose first packet is still
///   buffered has nowhere to go and is `Drop(NoAffinity)`.
///
/// Inputs: `Task`, `Reply` (unknown worker: `Drop(UnknownNode)`); others
/// `Drop(Unexpected)`.
#[derive(Clone, Debug)]
pub struct CentralQueue {
    pipeline: Pipeline,
    known: Vec<bool>,
    workers: u32,
    idle: IdleFifo,
    queue: VecDeque<TaskMeta>,
    capacity: usize,
    affinity: AffinityTable,
    /// Tasks refused because the buffer was full.
    pub overflows: u64,
}

impl CentralQueue {
    /// A default buffer bound: far above any stable queue, small enough to
    /// allocate per pool.
    pub const DEFAULT_CAPACITY: usize = 1 << 16;

    /// Workers `0..workers`, all idle; at most `capacity` buffered tasks.
    pub fn new(workers: u32, capacity: usize) -> Self {
        let mut idle = IdleFifo::new(workers as usize);
        for w in 0..workers {
            idle.push(w);
        }
        CentralQueue {
            pipeline: Pipeline::new(),
            known: vec![true; workers as usize],
            workers,
            idle,
            queue: VecDeque::with_capacity(capacity),
            capacity,
            affinity: ReqTableConfig::default().build(),
            overflows: 0,
        }
    }

    fn is_known(&self, node: NodeId) -> bool {
        self.known.get(node as usize).copied().unwrap_or(false)
    }

    fn dispatch(&mut self, pass: &Pass, now: u64, node: NodeId, task: TaskMeta, out: &mut Outbox) {
        remember(&mut self.affinity, pass, now, task, node);
        out.push(Action::Dispatch {
            node,
            task,
            decision: Decision::Other,
        });
    }

    /// A worker joins idle; if tasks are waiting it takes the head at once.
    pub fn control_add_node(&mut self, node: NodeId, now: u64, out: &mut Outbox) {
        if self.is_known(node) {
            return;
        }
        if node as usize >= self.known.len() {
            self.known.resize(node as usize + 1, false);
            self.idle.reserve_nodes(node as usize + 1);
        }
        self.known[node as usize] = true;
        self.workers += 1;
        let pass = self.pipeline.begin();
        self.free(&pass, now, node, out);
    }

    /// A worker failed or left. Its running task, if any, is the driver's to
    /// account for; the buffer keeps waiting for the other workers.
    pub fn control_remove_node(&mut self, node: NodeId) {
        if !self.is_known(node) {
            return;
        }
        self.known[node as usize] = false;
        self.workers -= 1;
        self.idle.remove(node);
        self.affinity.control_forget_node(node);
    }

    pub fn control_sweep(&mut self, now: u64) -> u64 {
        self.affinity.control_sweep(now)
    }

    /// `node` can take a task.
    fn free(&mut self, pass: &Pass, now: u64, node: NodeId, out: &mut Outbox) {
        match self.queue.pop_front() {
            Some(task) => self.dispatch(pass, now, node, task, out),
            None => {
                // A second idle report from an idle worker is a no-op.
                self.idle.push(node);
            }
        }
    }

    /// Buffered tasks, oldest first.
    pub fn queued(&self) -> impl Iterator<Item = &TaskMeta> + '_ {
        self.queue.iter()
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn idle_workers(&self) -> &IdleFifo {
        &self.idle
    }

    pub fn workers(&self) -> u32 {
        self.workers
    }
}

impl DataPlane for CentralQueue {
    fn handle(&mut self, now: u64, input: Input, out: &mut Outbox) {
        let pass = self.pipeline.begin();
        match input {
            Input::Task(task) if !task.first => {
                follow(&mut self.affinity, &pass, now, task, out);
            }
            Input::Task(task) => match self.idle.pop() {
                Some(node) => self.dispatch(&pass, now, node, task, out),
                None if self.workers == 0 => out.push(Action::Drop(DropReason::NoNodes)),
                None if self.queue.len() >= self.capacity => {
                    self.overflows += 1;
                    out.push(Action::Drop(DropReason::Overflow));
                }
                None => {
                    self.queue.push_back(task);
                    out.push(Action::Queued);
                }
            },
            Input::Reply { node, qlen, .. } => {
                if !self.is_known(node) {
                    out.push(Action::Drop(DropReason::UnknownNode));
                } else if qlen == 0 {
                    self.free(&pass, now, node, out);
                }
            }
            _ => out.push(Action::Drop(DropReason::Unexpected)),
        }
    }

    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use proptest::prelude::*;

    fn done(node: NodeId) -> Input {
        Input::Reply {
            node,
            qlen: 0,
            class: 0,
            task: 0,
        }
    }

    #[test]
    fn buffered_tasks_leave_in_fifo_order() {
        let mut c = CentralQueue::new(2, 16);
        let a = dispatched(&mut c, 0, Input::Task(task(1)));
        let b = dispatched(&mut c, 0, Input::Task(task(2)));
        assert_ne!(a, b);
        for id in 3..7 {
            assert_eq!(run(&mut c, 0, Input::Task(task(id))), vec![Action::Queued]);
        }
        let mut order = Vec::new();
        for w in [b, a, a, b] {
            match run(&mut c, 0, done(w)).as_slice() {
                [Action::Dispatch { node, task, .. }] => {
                    assert_eq!(*node, w, "the worker that finished takes the head");
                    order.push(task.id);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(order, vec![3, 4, 5, 6]);
        assert!(run(&mut c, 0, done(a)).is_empty());
        assert_eq!(
            dispatched(&mut c, 0, Input::Task(task(9))),
            a,
            "the freed worker is idle again"
        );
    }

    #[test]
    fn bounded_buffer_drops_overflow() {
        let mut c = CentralQueue::new(1, 2);
        dispatched(&mut c, 0, Input::Task(task(0)));
        run(&mut c, 0, Input::Task(task(1)));
        run(&mut c, 0, Input::Task(task(2)));
        assert_eq!(
            run(&mut c, 0, Input::Task(task(3))),
            vec![Action::Drop(DropReason::Overflow)]
        );
        assert_eq!(c.overflows, 1);
        assert_eq!(c.queue_len(), 2);
    }

    #[test]
    fn added_worker_takes_the_head_and_removed_one_gets_nothing() {
        let mut c = CentralQueue::new(1, 8);
        dispatched(&mut c, 0, Input::Task(task(0)));
        run(&mut c, 0, Input::Task(task(1)));
        let mut out = Outbox::new();
        c.control_add_node(4, 0, &mut out);
        assert!(matches!(out.as_slice(), [Action::Dispatch { node: 4, task, .. }] if task.id == 1));
        c.control_remove_node(0);
        assert_eq!(
            run(&mut c, 0, done(0)),
            vec![Action::Drop(DropReason::UnknownNode)]
        );
        assert!(run(&mut c, 0, done(4)).is_empty());
        assert_eq!(dispatched(&mut c, 0, Input::Task(task(2))), 4);
    }

    proptest! {
        /// Random interleavings of arrivals and completions: no task is lost
        /// or duplicated, tasks start in arrival order, a worker never holds
        /// two tasks, and no worker idles while tasks wait.
        #[test]
        fn no_task_lost_or_duplicated(workers in 1u32..6, ops in proptest::collection::vec((any::<bool>(), 0u32..6), 1..300)) {
            let mut c = CentralQueue::new(workers, 1 << 10);
            let mut running: Vec<Option<u64>> = vec![None; workers as usize];
            let mut started = Vec::new();
            let mut submitted = 0u64;
            let mut queued = 0usize;
            for (arrive, w) in ops {
                let acts = if arrive {
                    submitted += 1;
                    run(&mut c, 0, Input::Task(task(submitted)))
                } else {
                    let w = w % workers;
                    // The driver only reports completions of running tasks.
                    if running[w as usize].take().is_none() { continue; }
                    run(&mut c, 0, done(w))
                };
                for a in acts {
                    match a {
                        Action::Dispatch { node, task, .. } => {
                            prop_assert!(running[node as usize].is_none(), "worker {} given two tasks", node);
                            running[node as usize] = Some(task.id);
                            started.push(task.id);
                            if !arrive || task.id != submitted { queued -= 1; }
                        }
                        Action::Queued => queued += 1,
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                }
                prop_assert_eq!(queued, c.queue_len());
                let idle = running.iter().filter(|r| r.is_none()).count();
                prop_assert!(queued == 0 || idle == 0, "work conservation");
                prop_assert_eq!(idle, c.idle_workers().len());
            }
            let expected: Vec<u64> = (1..=started.len() as u64).collect();
            prop_assert_eq!(&started, &expected, "FIFO: tasks start in arrival order, each once");
            let waiting: Vec<u64> = c.queued().map(|t| t.id).collect();
            let rest: Vec<u64> = (started.len() as u64 + 1..=submitted).collect();
            prop_assert_eq!(waiting, rest, "the others are buffered, in order");
        }
    }
}
