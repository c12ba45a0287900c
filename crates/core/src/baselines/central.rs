//! One centralized FIFO scheduler over all workers of a pool: the
//! "global-cFCFS" of RackSched §2 (Fig. 2) and the centralized oracle
//! baseline of DESIGN.md. Each worker runs one task at a time; with zero
//! delays and exponential service this is exactly M/M/c.
//!
//! It is JBSQ with bound 1 ([`Jbsq`]): a task goes to the longest-idle
//! worker, or waits in the buffer until a worker's reply frees it.

use super::Jbsq;

/// A centralized FIFO over single-task workers, in software (no switch can
/// hold such a queue; Draconis is the in-switch variant): [`Jbsq`] with
/// bound 1, built by [`Jbsq::central`].
///
/// * Task (first packet): to the longest-idle worker if one is idle, else
///   appended to the buffer (`Queued`), or `Drop(Overflow)` if the buffer is
///   at capacity. The buffer is allocated once, at construction.
/// * `Reply{node}`: the worker finished and is free; it takes the buffer's
///   head at once, or joins the idle FIFO. A reply from an idle worker (a
///   duplicate) changes nothing.
/// * Continuations of a dispatched task follow it (its entry is made when the
///   first packet leaves the buffer); one whose first packet is still
///   buffered has nowhere to go and is `Drop(NoAffinity)`.
///
/// Inputs: `Task`, `Reply` (unknown worker: `Drop(UnknownNode)`); others
/// `Drop(Unexpected)`.
pub type CentralQueue = Jbsq;

impl Jbsq {
    /// Workers `0..workers`, all idle; at most `capacity` buffered tasks.
    pub fn central(workers: u32, capacity: usize) -> Self {
        Jbsq::new(workers, 1, capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::dataplane::{Action, Dispatch, DropReason, Input, Outbox};
    use proptest::prelude::*;

    #[test]
    fn buffered_tasks_leave_in_fifo_order() {
        let mut c = CentralQueue::central(2, 16);
        let a = dispatched(&mut c, 0, Input::Task(task(1)));
        let b = dispatched(&mut c, 0, Input::Task(task(2)));
        assert_ne!(a, b);
        for id in 3..7 {
            assert_eq!(run(&mut c, 0, Input::Task(task(id))), vec![Action::Queued]);
        }
        let mut order = Vec::new();
        for w in [b, a, a, b] {
            match run(&mut c, 0, done(w)).as_slice() {
                [Action::Dispatch(Dispatch { node, task, .. })] => {
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
        let mut c = CentralQueue::central(1, 2);
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
        let mut c = CentralQueue::central(1, 8);
        dispatched(&mut c, 0, Input::Task(task(0)));
        run(&mut c, 0, Input::Task(task(1)));
        let mut out = Outbox::new();
        c.control_add_node(4, 0, &mut out);
        assert!(
            matches!(out.as_slice(), [Action::Dispatch(Dispatch { node: 4, task, .. })] if task.id == 1)
        );
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
            let mut c = CentralQueue::central(workers, 1 << 10);
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
                        Action::Dispatch(Dispatch { node, task, .. }) => {
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
                prop_assert_eq!(idle, c.idle_nodes().len());
            }
            let expected: Vec<u64> = (1..=started.len() as u64).collect();
            prop_assert_eq!(&started, &expected, "FIFO: tasks start in arrival order, each once");
            let waiting: Vec<u64> = c.queued().map(|t| t.id).collect();
            let rest: Vec<u64> = (started.len() as u64 + 1..=submitted).collect();
            prop_assert_eq!(waiting, rest, "the others are buffered, in order");
        }
    }
}
