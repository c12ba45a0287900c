//! A client's bookkeeping of its tasks as a sans-IO state machine: which are
//! pending, when each attempt times out, whether a timed-out task is
//! resubmitted or given up, and what a reply means (the first answer, a late
//! one, a duplicate). Drivers own the sockets and the clock and pass `now`
//! in; every decision about retries and timeouts is made here, so the
//! runtime clients and a simulator drive the same logic.
//!
//! A task is named by its sequence number, `0..` in submission order (the
//! lower half of the wire's task id, Horus §3.2). Every submitted task ends
//! in exactly one of completed, failed, timed out (DESIGN.md: nothing
//! accepted is lost silently).
//!
//! Timeouts: attempt `k + 1` of a task (after `k` timeouts) waits
//! `timeout << min(k, max_doublings)`. With `max_doublings = 0` every attempt
//! waits `timeout` (the push client); the pull client doubles, because a
//! fixed timeout below the queueing delay of an overloaded system would
//! resubmit every task again and again (Draconis §8.3 resubmits on timeout).
//!
//! The pull family adds two events the push client does not see (Draconis
//! §4.3): an *acknowledgment* of the current send (the switch queued it, so
//! its timeout no longer counts; the simulator's clients wait for
//! completions only of unacknowledged sends), and a *return* in an error
//! packet (queue full), after which the task is sent again once a backoff
//! passed, `backoff << min(returns - 1, max_backoff_doublings)`.
//!
//! Timers: by default the tracker keeps the deadlines and backoffs and
//! [`TaskTracker::expire`] hands out what came due. A discrete-event
//! simulator keeps its own event queue instead
//! ([`TaskTracker::with_driver_timers`]): it schedules [`TaskTracker::deadline`]
//! and the due time [`TaskTracker::on_returned`] gives, and reports each
//! back when it fires ([`TaskTracker::on_deadline`], [`TaskTracker::retry`]),
//! so the decisions stay here while event order stays the simulator's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::retry_budget::RetryBudget;
use crate::time::Nanos;

/// When attempts time out and how often a task is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The first attempt's timeout.
    pub timeout: Nanos,
    /// Attempts in all before a task times out (at least 1: the first send).
    pub max_attempts: u32,
    /// Doublings of the timeout, one per attempt, at most this many.
    pub max_doublings: u32,
    /// Wait before a task returned in an error packet is sent again.
    pub backoff: Nanos,
    /// Doublings of the backoff, one per return of the same task.
    pub max_backoff_doublings: u32,
}

impl RetryPolicy {
    /// A fixed timeout and `retries` resubmissions after the first send.
    pub fn fixed(timeout: Nanos, retries: u32) -> Self {
        RetryPolicy {
            timeout,
            max_attempts: retries.saturating_add(1),
            max_doublings: 0,
            backoff: Nanos::ZERO,
            max_backoff_doublings: 0,
        }
    }

    /// The backoff after a task's `returns`-th return in an error packet.
    pub fn backoff_after(&self, returns: u32) -> Nanos {
        let doublings = returns.saturating_sub(1).min(self.max_backoff_doublings);
        shl_saturating(self.backoff, doublings)
    }

    /// The timeout of an attempt sent after `timeouts` earlier ones expired.
    pub fn timeout_after(&self, timeouts: u32) -> Nanos {
        shl_saturating(self.timeout, timeouts.min(self.max_doublings))
    }
}

/// `t << k` as `u64::checked_shl` gives it (bits shifted out are lost; a
/// shift of 64 or more is [`Nanos::MAX`]).
fn shl_saturating(t: Nanos, k: u32) -> Nanos {
    Nanos::new(t.get().checked_shl(k).unwrap_or(u64::MAX))
}

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Pending,
    Completed,
    Failed,
    TimedOut,
}

/// What a reply meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyOutcome {
    /// The task's first answer, a success: it is complete.
    Completed,
    /// The task's first answer, a failure: it is failed.
    Failed,
    /// An answer after the task timed out.
    Late,
    /// An answer to a task already answered (a resubmission's, or a copy).
    Duplicate,
    /// No task of this client has that sequence number.
    Unknown,
}

/// A deadline that passed for a pending task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Send task `seq` again now; `attempt` counts from 1 (the first send).
    Resubmit { seq: u32, attempt: u32 },
    /// Task `seq` used its attempts: it is timed out.
    GaveUp { seq: u32 },
    /// Task `seq` came back in an error packet and its backoff passed: send
    /// it again now (pull family); `attempt` as for `Resubmit`.
    Retry { seq: u32, attempt: u32 },
}

/// Who keeps the timers (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timers {
    Tracker,
    Driver,
}

#[derive(Clone, Copy, Debug)]
struct Task {
    intended: Nanos,
    state: TaskState,
    /// Sends so far; a deadline names the send it belongs to, so one
    /// superseded by a later send (`resend`) is ignored.
    sends: u32,
    timeouts: u32,
    /// When the current send times out.
    due: Nanos,
    /// The current send was acknowledged: its timeout does not count.
    acked: bool,
    /// Returns in error packets so far.
    returns: u32,
}

/// Counts of what happened to a client's tasks and replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub submitted: u64,
    pub completed: u64,
    pub failed: u64,
    pub timed_out: u64,
    /// Resubmissions after a timeout (not extra tasks).
    pub resubmitted: u64,
    /// Sends again after a return in an error packet.
    pub retried: u64,
    pub late: u64,
    pub duplicates: u64,
    /// Resubmissions and retries the retry budget put off (each time one
    /// was due and could not be paid for).
    pub deferred: u64,
}

/// The tasks of one client and their deadlines.
#[derive(Clone, Debug)]
pub struct TaskTracker {
    policy: RetryPolicy,
    tasks: Vec<Task>,
    /// (deadline, seq, send), earliest first. Entries of answered tasks stay
    /// until they come due.
    deadlines: BinaryHeap<Reverse<(Nanos, u32, u32)>>,
    /// (due, seq): returned tasks waiting out their backoff.
    backoffs: BinaryHeap<Reverse<(Nanos, u32)>>,
    timers: Timers,
    tally: Tally,
    /// Paid from by every resubmission and retry when set.
    budget: Option<RetryBudget>,
}

impl TaskTracker {
    /// A tracker expecting about `expected` tasks (capacity only).
    pub fn new(policy: RetryPolicy, expected: usize) -> Self {
        TaskTracker {
            policy,
            tasks: Vec::with_capacity(expected),
            deadlines: BinaryHeap::with_capacity(expected),
            backoffs: BinaryHeap::new(),
            timers: Timers::Tracker,
            tally: Tally::default(),
            budget: None,
        }
    }

    /// Resubmissions and retries must be paid for by `budget`
    /// ([`RetryBudget`]); one it cannot pay for waits until it can (the
    /// send it would replace keeps its chance to complete meanwhile).
    /// Only with the tracker's own timers: [`TaskTracker::expire`] defers.
    pub fn with_retry_budget(mut self, budget: RetryBudget) -> Self {
        assert_eq!(
            self.timers,
            Timers::Tracker,
            "a retry budget needs the tracker's timers"
        );
        self.budget = Some(budget);
        self
    }

    /// A tracker whose driver keeps the timers (module docs): it queues no
    /// deadlines, and [`TaskTracker::expire`] finds nothing.
    pub fn with_driver_timers(policy: RetryPolicy, expected: usize) -> Self {
        TaskTracker {
            timers: Timers::Driver,
            deadlines: BinaryHeap::new(),
            ..TaskTracker::new(policy, expected)
        }
    }

    /// Starts the timeout of task `seq`'s current send, due `at`.
    fn arm(&mut self, seq: u32, at: Nanos) {
        let t = &mut self.tasks[seq as usize];
        t.due = at;
        t.acked = false;
        if self.timers == Timers::Tracker {
            self.deadlines.push(Reverse((at, seq, t.sends)));
        }
    }

    /// Registers the next task, meant to be sent at `intended` (latencies
    /// count from there), and returns its sequence number. `sent_at`: when
    /// its first attempt left, which starts its timeout; `None` if the send
    /// failed, which fails the task at once (no deadline).
    pub fn submit(&mut self, intended: Nanos, sent_at: Option<Nanos>) -> u32 {
        let seq = self.tasks.len() as u32;
        self.tally.submitted += 1;
        if let (Some(b), Some(_)) = (&mut self.budget, sent_at) {
            b.deposit();
        }
        let state = if sent_at.is_some() {
            TaskState::Pending
        } else {
            self.tally.failed += 1;
            TaskState::Failed
        };
        self.tasks.push(Task {
            intended,
            state,
            sends: 1,
            timeouts: 0,
            due: Nanos::MAX,
            acked: false,
            returns: 0,
        });
        if let Some(at) = sent_at {
            self.arm(seq, at.saturating_add(self.policy.timeout));
        }
        seq
    }

    /// When pending task `seq`'s current send times out, and that send's
    /// number (for [`TaskTracker::on_deadline`]).
    pub fn deadline(&self, seq: u32) -> Option<(Nanos, u32)> {
        let t = self.tasks.get(seq as usize)?;
        (t.state == TaskState::Pending).then_some((t.due, t.sends))
    }

    /// Sends of task `seq` so far (1 after the first).
    pub fn sends(&self, seq: u32) -> Option<u32> {
        self.tasks.get(seq as usize).map(|t| t.sends)
    }

    /// The scheduler acknowledged send `send` of task `seq` (Draconis §4.3):
    /// it is queued, so its timeout no longer counts. False if that is not
    /// the pending task's current send.
    pub fn acknowledge(&mut self, seq: u32, send: u32) -> bool {
        match self.tasks.get_mut(seq as usize) {
            Some(t) if t.state == TaskState::Pending && t.sends == send => {
                t.acked = true;
                true
            }
            _ => false,
        }
    }

    /// Task `seq` came back in an error packet at `now` (queue full, §4.3).
    /// `send`: the send it belongs to, if the packet tells (a stale copy's
    /// return is ignored). Returns when to send it again; a tracker that
    /// keeps the timers hands it out of [`TaskTracker::expire`] then.
    pub fn on_returned(&mut self, seq: u32, send: Option<u32>, now: Nanos) -> Option<Nanos> {
        let t = self.tasks.get_mut(seq as usize)?;
        if t.state != TaskState::Pending || send.is_some_and(|s| s != t.sends) {
            return None;
        }
        t.returns = t.returns.saturating_add(1);
        let due = now.saturating_add(self.policy.backoff_after(t.returns));
        if self.timers == Timers::Tracker {
            self.backoffs.push(Reverse((due, seq)));
        }
        Some(due)
    }

    /// A returned task's backoff passed at `now`: it is sent again if
    /// still pending (true), its timeout restarting.
    pub fn retry(&mut self, seq: u32, now: Nanos) -> bool {
        let resent = self.resend(seq, now);
        if resent {
            self.tally.retried += 1;
        }
        resent
    }

    /// Send `send` of task `seq` reached its deadline at `now`: what to do
    /// about it, `None` if it no longer counts (answered, acknowledged, or
    /// superseded by a later send).
    pub fn on_deadline(&mut self, seq: u32, send: u32, now: Nanos) -> Option<Expiry> {
        let t = self.tasks.get_mut(seq as usize)?;
        if t.state != TaskState::Pending || t.sends != send || t.acked {
            return None;
        }
        t.timeouts += 1;
        if t.timeouts >= self.policy.max_attempts {
            t.state = TaskState::TimedOut;
            self.tally.timed_out += 1;
            return Some(Expiry::GaveUp { seq });
        }
        t.sends += 1;
        self.tally.resubmitted += 1;
        let timeouts = t.timeouts;
        self.arm(seq, now.saturating_add(self.policy.timeout_after(timeouts)));
        Some(Expiry::Resubmit {
            seq,
            attempt: send + 1,
        })
    }

    /// A reply to task `seq`: `ok` is its status.
    pub fn on_reply(&mut self, seq: u32, ok: bool) -> ReplyOutcome {
        let Some(t) = self.tasks.get_mut(seq as usize) else {
            return ReplyOutcome::Unknown;
        };
        match t.state {
            TaskState::Pending if ok => {
                t.state = TaskState::Completed;
                self.tally.completed += 1;
                ReplyOutcome::Completed
            }
            TaskState::Pending => {
                t.state = TaskState::Failed;
                self.tally.failed += 1;
                ReplyOutcome::Failed
            }
            TaskState::TimedOut => {
                self.tally.late += 1;
                ReplyOutcome::Late
            }
            TaskState::Completed | TaskState::Failed => {
                self.tally.duplicates += 1;
                ReplyOutcome::Duplicate
            }
        }
    }

    /// The next backoff or deadline that passed by `now`, if any, with
    /// what to do about it; call until `None`. Returned tasks come first
    /// (their backoff passed). A resubmitted task's next attempt times out
    /// `timeout_after(timeouts)` from `now`.
    pub fn expire(&mut self, now: Nanos) -> Option<Expiry> {
        while let Some(&Reverse((due, seq))) = self.backoffs.peek() {
            if due > now {
                break;
            }
            self.backoffs.pop();
            if self.state(seq) == Some(TaskState::Pending) && !self.paid(now) {
                let at = self.next_paid_at(now);
                self.backoffs.push(Reverse((at, seq)));
                self.tally.deferred += 1;
                break;
            }
            if self.retry(seq, now) {
                let attempt = self.tasks[seq as usize].sends;
                return Some(Expiry::Retry { seq, attempt });
            }
        }
        while let Some(&Reverse((deadline, seq, send))) = self.deadlines.peek() {
            if deadline > now {
                return None;
            }
            self.deadlines.pop();
            if self.would_resubmit(seq, send) && !self.paid(now) {
                // The send keeps waiting for an answer until a retry is
                // paid for; its timeout does not count yet.
                let at = self.next_paid_at(now);
                self.tasks[seq as usize].due = at;
                self.deadlines.push(Reverse((at, seq, send)));
                self.tally.deferred += 1;
                return None;
            }
            if let Some(expiry) = self.on_deadline(seq, send, now) {
                return Some(expiry);
            }
        }
        None
    }

    /// When the budget pays for the next retry put off at `now`.
    fn next_paid_at(&mut self, now: Nanos) -> Nanos {
        self.budget
            .as_mut()
            .map_or(now, |b| Nanos::new(b.next_token_at(now.get())))
    }

    /// A retry at `now` is paid for (always, without a budget).
    fn paid(&mut self, now: Nanos) -> bool {
        self.budget
            .as_mut()
            .is_none_or(|b| b.try_withdraw(now.get()))
    }

    /// Send `send` of task `seq` timing out now would resubmit it (not
    /// give it up, nor be ignored as answered, acknowledged or superseded).
    fn would_resubmit(&self, seq: u32, send: u32) -> bool {
        self.tasks.get(seq as usize).is_some_and(|t| {
            t.state == TaskState::Pending
                && t.sends == send
                && !t.acked
                && t.timeouts + 1 < self.policy.max_attempts
        })
    }

    /// Task `seq` is sent again at `now` for a reason of the driver's (the
    /// scheduler returned it): its timeout restarts, and the deadline of
    /// the earlier send no longer counts. False if it is not pending.
    pub fn resend(&mut self, seq: u32, now: Nanos) -> bool {
        let Some(t) = self.tasks.get_mut(seq as usize) else {
            return false;
        };
        if t.state != TaskState::Pending {
            return false;
        }
        t.sends += 1;
        let at = now.saturating_add(self.policy.timeout_after(t.timeouts));
        self.arm(seq, at);
        true
    }

    /// When task `seq` was meant to be sent.
    pub fn intended(&self, seq: u32) -> Option<Nanos> {
        self.tasks.get(seq as usize).map(|t| t.intended)
    }

    pub fn state(&self, seq: u32) -> Option<TaskState> {
        self.tasks.get(seq as usize).map(|t| t.state)
    }

    /// The earliest deadline or backoff still queued (possibly of an
    /// answered task).
    pub fn next_deadline(&self) -> Option<Nanos> {
        let deadline = self.deadlines.peek().map(|r| r.0 .0);
        let backoff = self.backoffs.peek().map(|r| r.0 .0);
        deadline.into_iter().chain(backoff).min()
    }

    /// Deadlines are still queued: the run is not over before they pass.
    pub fn has_deadlines(&self) -> bool {
        !self.deadlines.is_empty() || !self.backoffs.is_empty()
    }

    /// Tasks not yet completed, failed or timed out.
    pub fn unresolved(&self) -> u64 {
        let t = &self.tally;
        t.submitted - t.completed - t.failed - t.timed_out
    }

    /// Every pending task times out now (a driver that stops waiting).
    pub fn give_up_all(&mut self) {
        for t in self
            .tasks
            .iter_mut()
            .filter(|t| t.state == TaskState::Pending)
        {
            t.state = TaskState::TimedOut;
            self.tally.timed_out += 1;
        }
    }

    /// Tasks submitted so far.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    pub fn tally(&self) -> Tally {
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Nanos {
        Nanos::from_millis(n)
    }

    fn drain(t: &mut TaskTracker, now: Nanos) -> Vec<Expiry> {
        std::iter::from_fn(|| t.expire(now)).collect()
    }

    /// A silent scheduler: without a budget 5 tasks resubmit 3 times each
    /// within 40 ms; with 10 retries a second and a burst of 1, one is paid at 10 ms and the rest wait, each task still ends
    /// exactly once, after the same number of attempts.
    #[test]
    fn a_retry_budget_spreads_resubmissions_and_loses_nothing() {
        let policy = RetryPolicy::fixed(ms(10), 3);
        let resubmits = |e: &[Expiry]| {
            e.iter()
                .filter(|e| matches!(e, Expiry::Resubmit { .. }))
                .count()
        };
        let mut free = TaskTracker::new(policy, 8);
        let mut budgeted =
            TaskTracker::new(policy, 8).with_retry_budget(RetryBudget::new(0.0, 10, 1));
        for t in [&mut free, &mut budgeted] {
            for _ in 0..5 {
                t.submit(Nanos::ZERO, Some(Nanos::ZERO));
            }
        }
        let (mut a, mut b) = (0, 0);
        for now in (1..=45).map(ms) {
            a += resubmits(&drain(&mut free, now));
            b += resubmits(&drain(&mut budgeted, now));
        }
        assert_eq!((a, free.tally().timed_out), (15, 5));
        assert_eq!((b, budgeted.tally().timed_out), (1, 0));
        assert!(budgeted.tally().deferred >= 4);
        for now in (46..=3_000).map(ms) {
            b += resubmits(&drain(&mut budgeted, now));
        }
        assert_eq!(b, 15, "the same attempts, spread out");
        assert_eq!(budgeted.tally().timed_out, 5);
        assert_eq!(budgeted.unresolved(), 0);
    }

    #[test]
    fn a_task_times_out_after_its_retries_at_a_fixed_timeout() {
        let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), 2), 4);
        let s = t.submit(ms(5), Some(ms(5)));
        assert_eq!(s, 0);
        assert_eq!(t.next_deadline(), Some(ms(15)));
        assert!(drain(&mut t, ms(15) - Nanos::new(1)).is_empty());
        assert_eq!(
            drain(&mut t, ms(15)),
            vec![Expiry::Resubmit { seq: 0, attempt: 2 }]
        );
        // The next attempt's timeout runs from the expiry it was sent at.
        assert_eq!(t.next_deadline(), Some(ms(25)));
        assert_eq!(
            drain(&mut t, ms(26)),
            vec![Expiry::Resubmit { seq: 0, attempt: 3 }]
        );
        assert_eq!(t.next_deadline(), Some(ms(36)));
        assert_eq!(drain(&mut t, ms(36)), vec![Expiry::GaveUp { seq: 0 }]);
        assert!(!t.has_deadlines());
        assert_eq!(t.state(0), Some(TaskState::TimedOut));
        assert_eq!(t.on_reply(0, true), ReplyOutcome::Late);
        let tally = t.tally();
        assert_eq!((tally.resubmitted, tally.timed_out, tally.late), (2, 1, 1));
    }

    #[test]
    fn without_retries_the_first_timeout_gives_up() {
        let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), 0), 1);
        t.submit(Nanos::ZERO, Some(Nanos::ZERO));
        assert_eq!(drain(&mut t, ms(10)), vec![Expiry::GaveUp { seq: 0 }]);
    }

    #[test]
    fn the_first_answer_counts_and_later_ones_are_duplicates() {
        let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), 1), 2);
        t.submit(Nanos::ZERO, Some(Nanos::ZERO));
        t.submit(Nanos::new(1), Some(Nanos::new(1)));
        assert_eq!(t.on_reply(0, true), ReplyOutcome::Completed);
        assert_eq!(t.on_reply(1, false), ReplyOutcome::Failed);
        assert_eq!(t.on_reply(0, true), ReplyOutcome::Duplicate);
        assert_eq!(t.on_reply(1, true), ReplyOutcome::Duplicate);
        assert_eq!(t.on_reply(2, true), ReplyOutcome::Unknown);
        // Answered tasks' deadlines pass without a resubmission, but keep
        // the run open until they do.
        assert!(t.has_deadlines());
        assert!(drain(&mut t, ms(20)).is_empty());
        assert!(!t.has_deadlines());
    }

    #[test]
    fn a_failed_send_fails_the_task_without_a_deadline() {
        let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), 3), 1);
        t.submit(Nanos::new(7), None);
        assert_eq!(t.state(0), Some(TaskState::Failed));
        assert!(!t.has_deadlines());
        assert_eq!(t.intended(0), Some(Nanos::new(7)));
        assert_eq!(t.tally().failed, 1);
    }

    #[test]
    fn doubling_timeouts_and_a_resend_supersede_the_old_deadline() {
        let policy = RetryPolicy {
            timeout: ms(10),
            max_attempts: 10,
            max_doublings: 2,
            ..RetryPolicy::fixed(Nanos::ZERO, 0)
        };
        assert_eq!(
            (0..5)
                .map(|k| policy.timeout_after(k).get() / 1_000_000)
                .collect::<Vec<_>>(),
            vec![10, 20, 40, 40, 40]
        );
        let mut t = TaskTracker::new(policy, 1);
        t.submit(Nanos::ZERO, Some(Nanos::ZERO));
        // Returned by the scheduler at 4 ms and sent again: the deadline of
        // the first send (10 ms) no longer counts.
        assert!(t.resend(0, ms(4)));
        assert!(drain(&mut t, ms(10)).is_empty());
        assert_eq!(
            drain(&mut t, ms(14)),
            vec![Expiry::Resubmit { seq: 0, attempt: 3 }]
        );
        assert_eq!(t.next_deadline(), Some(ms(34)), "doubled");
        t.on_reply(0, true);
        assert!(!t.resend(0, ms(40)), "only a pending task is resent");
    }

    #[test]
    fn an_acknowledged_send_does_not_time_out_but_a_resend_does() {
        let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), 3), 1);
        t.submit(Nanos::ZERO, Some(Nanos::ZERO));
        assert!(!t.acknowledge(0, 2), "not the current send");
        assert!(t.acknowledge(0, 1));
        assert!(drain(&mut t, ms(10)).is_empty(), "queued: no timeout");
        // Returned from the queue and sent again: the new send times out.
        assert!(t.resend(0, ms(12)));
        assert_eq!(
            drain(&mut t, ms(22)),
            vec![Expiry::Resubmit { seq: 0, attempt: 3 }]
        );
    }

    #[test]
    fn a_returned_task_is_retried_after_a_doubling_backoff() {
        let policy = RetryPolicy {
            backoff: ms(1),
            max_backoff_doublings: 1,
            ..RetryPolicy::fixed(ms(100), 0)
        };
        assert_eq!(
            (1..4)
                .map(|r| policy.backoff_after(r).get() / 1_000_000)
                .collect::<Vec<_>>(),
            vec![1, 2, 2]
        );
        let mut t = TaskTracker::new(policy, 1);
        t.submit(Nanos::ZERO, Some(Nanos::ZERO));
        assert_eq!(
            t.on_returned(0, Some(2), Nanos::ZERO),
            None,
            "a stale copy's return"
        );
        assert_eq!(t.on_returned(0, Some(1), Nanos::ZERO), Some(ms(1)));
        assert_eq!(t.next_deadline(), Some(ms(1)));
        assert_eq!(
            drain(&mut t, ms(1)),
            vec![Expiry::Retry { seq: 0, attempt: 2 }]
        );
        assert_eq!(t.on_returned(0, None, ms(5)), Some(ms(7)), "doubled");
        t.on_reply(0, true);
        assert!(drain(&mut t, ms(7)).is_empty(), "answered before its retry");
        let tally = t.tally();
        assert_eq!(
            (tally.retried, tally.resubmitted, tally.completed),
            (1, 0, 1)
        );
    }

    #[test]
    fn driver_timers_take_the_same_decisions_as_the_trackers_own() {
        let policy = RetryPolicy {
            max_doublings: 1,
            ..RetryPolicy::fixed(ms(10), 2)
        };
        let mut own = TaskTracker::new(policy, 1);
        let mut driven = TaskTracker::with_driver_timers(policy, 1);
        own.submit(Nanos::ZERO, Some(Nanos::ZERO));
        driven.submit(Nanos::ZERO, Some(Nanos::ZERO));
        assert!(!driven.has_deadlines());
        let mut now = Nanos::ZERO;
        while let Some((at, send)) = driven.deadline(0) {
            assert_eq!(own.next_deadline(), Some(at));
            now = at;
            assert_eq!(driven.on_deadline(0, send, now), own.expire(now));
            assert_eq!(driven.on_deadline(0, send, now), None, "fired once");
        }
        assert_eq!(now, ms(50), "10, then 20 twice");
        assert_eq!(driven.state(0), Some(TaskState::TimedOut));
        assert_eq!(driven.tally(), own.tally());
        assert_eq!(driven.unresolved(), 0);
    }

    proptest! {
        /// Whatever the order of replies and timers, every task ends in
        /// exactly one final state, and the tally agrees.
        #[test]
        fn every_task_is_accounted_for_once(
            retries in 0u32..4,
            events in proptest::collection::vec((0u32..12, any::<bool>(), 0u64..50), 1..200),
        ) {
            let mut t = TaskTracker::new(RetryPolicy::fixed(ms(10), retries), 16);
            let mut now = Nanos::ZERO;
            let mut resubmits = 0u64;
            for (k, (seq, ok, dt)) in events.into_iter().enumerate() {
                now += Nanos::new(dt * 100_000);
                if k % 3 == 0 && t.len() < 12 {
                    t.submit(now, (seq % 5 != 0).then_some(now));
                } else {
                    t.on_reply(seq, ok);
                }
                for e in std::iter::from_fn(|| t.expire(now)) {
                    if let Expiry::Resubmit { attempt, .. } = e {
                        prop_assert!(attempt <= retries + 1);
                        resubmits += 1;
                    }
                }
            }
            // Every deadline passes: retries run out, nothing stays pending.
            while t.expire(Nanos::MAX).is_some() {}
            let tally = t.tally();
            prop_assert!(!t.has_deadlines());
            prop_assert_eq!(tally.completed + tally.failed + tally.timed_out, tally.submitted);
            prop_assert!(tally.resubmitted >= resubmits);
            prop_assert!(tally.resubmitted <= tally.submitted * u64::from(retries));
            for s in 0..t.len() as u32 {
                prop_assert!(t.state(s) != Some(TaskState::Pending));
            }
        }
    }
}
