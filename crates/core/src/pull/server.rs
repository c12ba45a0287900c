//! Draconis-Server (§8 "Draconis-Socket-Server", "Draconis-DPDK-Server"): the
//! Draconis protocol served by a software scheduler on a host.
//!
//! A server has no one-access-per-pass restriction, but to compare like with
//! like it runs the very same state machine as the switch ([`Draconis`]):
//! same queue, same policies, same acknowledgments and error packets. What
//! differs is the execution model: a single-threaded event loop finishes one
//! message before reading the next, so every recirculation a message causes
//! (remaining tasks of a job, repairs, priority levels, swaps) runs inline,
//! before the message's [`PullDataPlane::handle`] returns. No other message can interleave
//! between those steps, so the optimistic pointers are always repaired before
//! the next message and a request never meets a pending repair.
//!
//! The cost per message is therefore the switch's passes run back to back;
//! the server's throughput limit (1.1 M tasks/s for DPDK, §8.2) is the
//! driver's to model (per-message service time), not this state machine's.

use crate::Nanos;
use std::collections::VecDeque;

use super::{Draconis, DraconisConfig, PullAction, PullDataPlane, PullInput, PullOutbox, Recirc};
use crate::switch::Pipeline;

/// Draconis as a software scheduler.
#[derive(Clone, Debug)]
pub struct DraconisServer {
    inner: Draconis,
    pending: VecDeque<Recirc>,
    scratch: PullOutbox,
    /// Internal steps (switch passes) run inline, for cost accounting.
    pub steps: u64,
}

impl DraconisServer {
    /// Most external actions one message can produce: an ack and an error
    /// packet for a job, or an assignment/no-op plus one error packet per
    /// priority level for a request.
    pub const OUT_CAPACITY: usize = 8 + 2 * 255;

    pub fn new(config: DraconisConfig) -> Self {
        DraconisServer {
            inner: Draconis::new(config),
            pending: VecDeque::with_capacity(64),
            scratch: PullOutbox::new(),
            steps: 0,
        }
    }

    pub fn scheduler(&self) -> &Draconis {
        &self.inner
    }

    pub fn pipeline(&self) -> &Pipeline {
        self.inner.pipeline()
    }
}

impl PullDataPlane for DraconisServer {
    /// Processes one message to completion. `out` receives only external
    /// actions (never `Recirculate`); size it with [`PullDataPlane::outbox`].
    fn handle(&mut self, now: Nanos, input: PullInput, out: &mut PullOutbox) {
        let mut next = Some(input);
        while let Some(input) = next {
            self.steps += 1;
            self.scratch.clear();
            self.inner.handle(now, input, &mut self.scratch);
            for a in self.scratch.drain() {
                match a {
                    PullAction::Recirculate(r) => self.pending.push_back(r),
                    other => out.push(other),
                }
            }
            next = self.pending.pop_front().map(PullInput::Resubmit);
        }
    }

    fn pipeline(&self) -> Option<&Pipeline> {
        Some(self.inner.pipeline())
    }

    fn outbox_capacity(&self) -> usize {
        Self::OUT_CAPACITY
    }
}
