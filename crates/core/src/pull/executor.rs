//! The executor side of the pull protocol (Draconis §3.1, §4.6) as a sans-IO
//! state machine: a free executor asks for a task; a no-op makes it ask again
//! `retry_ns` later; and, where messages can be lost (the UDP runtime), an
//! answer that does not come within the request timeout makes it ask again,
//! so an executor never stalls. The driver owns time and sockets: it tells
//! the machine what it sent and received, and asks it what is due.

use super::{ExecInfo, PullInput};
use crate::time::Nanos;

/// What the executor waits for from its scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Awaiting {
    Nothing,
    /// An answer to the request sent at `since`.
    Answer {
        since: Nanos,
    },
    /// A no-op said "nothing now": ask again at this instant.
    RetryAt(Nanos),
}

/// Why [`Executor::poll`] woke the executor; either way the driver sends
/// its request again (or, for a Sparrow get-task, gives the reservation up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutorWake {
    /// The no-op retry delay (§4.6) has passed.
    Retry,
    /// No answer within the request timeout: the request or its answer was
    /// lost, or the scheduler restarted.
    AnswerLost,
}

/// One executor's pull state. Times are on the driver's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Executor {
    pub info: ExecInfo,
    /// The wait after a no-op before asking again (§4.6).
    pub retry: Nanos,
    /// Consecutive no-ops since the last task.
    pub noops: u32,
    /// How long an answer may take before the request counts as lost;
    /// `None` where nothing is lost (the simulator).
    request_timeout: Option<Nanos>,
    awaiting: Awaiting,
}

impl Executor {
    pub fn new(info: ExecInfo, retry: Nanos) -> Self {
        Executor {
            info,
            retry,
            noops: 0,
            request_timeout: None,
            awaiting: Awaiting::Nothing,
        }
    }

    /// Sends a request again when its answer has not come within `timeout`.
    pub fn with_request_timeout(self, timeout: Nanos) -> Self {
        Executor {
            request_timeout: Some(timeout),
            ..self
        }
    }

    /// The task_request to send (on becoming free, piggybacked on the
    /// completion, or on a retry).
    pub fn request(&self) -> PullInput {
        PullInput::TaskRequest(self.info)
    }

    /// The driver sent a request (or a Sparrow get-task) at `now`: wait for
    /// its answer.
    pub fn sent(&mut self, now: Nanos) {
        self.awaiting = Awaiting::Answer { since: now };
    }

    /// Nothing to wait for (a Sparrow worker with no reservation to claim).
    pub fn idle(&mut self) {
        self.awaiting = Awaiting::Nothing;
    }

    /// A no-op arrived at `now`: when to send the next request.
    pub fn on_noop(&mut self, now: Nanos) -> Nanos {
        self.noops += 1;
        let at = now + self.retry;
        self.awaiting = Awaiting::RetryAt(at);
        at
    }

    /// A task arrived; the executor is busy until it completes. It answers
    /// an outstanding request; a pending no-op retry still stands.
    pub fn on_task(&mut self) {
        self.noops = 0;
        if let Awaiting::Answer { .. } = self.awaiting {
            self.awaiting = Awaiting::Nothing;
        }
    }

    /// The next instant [`Executor::poll`] has something to do, if any.
    pub fn deadline(&self) -> Option<Nanos> {
        match self.awaiting {
            Awaiting::Nothing => None,
            Awaiting::RetryAt(at) => Some(at),
            Awaiting::Answer { since } => self.request_timeout.map(|t| since + t),
        }
    }

    /// What is due at `now`. After a wake the executor waits for nothing
    /// until the driver reports its next request with [`Executor::sent`].
    pub fn poll(&mut self, now: Nanos) -> Option<ExecutorWake> {
        self.deadline().filter(|&d| now >= d)?;
        let wake = match self.awaiting {
            Awaiting::RetryAt(_) => ExecutorWake::Retry,
            _ => ExecutorWake::AnswerLost,
        };
        self.awaiting = Awaiting::Nothing;
        Some(wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ns(n: u64) -> Nanos {
        Nanos::new(n)
    }

    fn exec() -> Executor {
        Executor::new(ExecInfo::default(), ns(50)).with_request_timeout(ns(1_000))
    }

    #[test]
    fn a_noop_retries_after_the_retry_delay() {
        let mut e = exec();
        e.sent(ns(0));
        assert_eq!(e.on_noop(ns(100)), ns(150));
        assert_eq!(e.deadline(), Some(ns(150)));
        assert_eq!(e.poll(ns(149)), None);
        assert_eq!(e.poll(ns(150)), Some(ExecutorWake::Retry));
        assert_eq!(e.deadline(), None, "waits for nothing until it sends");
    }

    #[test]
    fn an_unanswered_request_is_lost_after_the_timeout() {
        let mut e = exec();
        e.sent(ns(10));
        assert_eq!(e.poll(ns(1_009)), None);
        assert_eq!(e.poll(ns(1_010)), Some(ExecutorWake::AnswerLost));
        // Without a timeout (the simulator) nothing is ever lost.
        let mut e = Executor::new(ExecInfo::default(), ns(50));
        e.sent(ns(10));
        assert_eq!(e.deadline(), None);
        assert_eq!(e.poll(Nanos::MAX), None);
    }

    #[test]
    fn a_task_answers_the_request_but_not_a_pending_retry() {
        let mut e = exec();
        e.sent(ns(0));
        e.on_task();
        assert_eq!(e.deadline(), None);
        e.on_noop(ns(0));
        e.on_task();
        assert_eq!(e.noops, 0);
        assert_eq!(e.deadline(), Some(ns(50)));
    }
}
