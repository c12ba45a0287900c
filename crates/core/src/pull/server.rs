//! Draconis-Server (§8 "Draconis-Socket-Server", "Draconis-DPDK-Server"): the
//! Draconis protocol served by a software scheduler on a host.
//!
//! A server has no one-access-per-pass restriction, but to compare like with
//! like it runs the very same state machine as the switch ([`Draconis`]):
//! same queue, same policies, same acknowledgments and error packets. What
//! differs is the execution model: a single-threaded event loop finishes one
//! message before reading the next, so every recirculation a message causes
//! (remaining tasks of a job, repairs, priority levels, swaps) runs inline,
//! before [`DraconisServer::handle`] returns. No other message can interleave
//! between those steps, so the optimistic pointers are always repaired before
//! the next message and a request never meets a pending repair.
//!
//! The cost per message is therefore the switch's passes run back to back;
//! the server's throughput limit (1.1 M tasks/s for DPDK, §8.2) is the
//! driver's to model (per-message service time), not this state machine's.

use std::collections::VecDeque;

use super::{Draconis, DraconisAction, DraconisConfig, DraconisInput, DraconisOutbox, Recirc};
use crate::switch::Pipeline;

/// Draconis as a software scheduler.
#[derive(Clone, Debug)]
pub struct DraconisServer {
    inner: Draconis,
    pending: VecDeque<Recirc>,
    scratch: DraconisOutbox,
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
            scratch: DraconisOutbox::new(),
            steps: 0,
        }
    }

    /// An output buffer large enough for [`DraconisServer::handle`].
    pub fn outbox() -> DraconisOutbox {
        DraconisOutbox::with_capacity(Self::OUT_CAPACITY)
    }

    pub fn scheduler(&self) -> &Draconis {
        &self.inner
    }

    pub fn pipeline(&self) -> &Pipeline {
        self.inner.pipeline()
    }

    /// Processes one message to completion. `out` receives only external
    /// actions (never `Recirculate`); size it with [`DraconisServer::outbox`].
    pub fn handle(&mut self, input: DraconisInput, out: &mut DraconisOutbox) {
        let mut next = Some(input);
        while let Some(input) = next {
            self.steps += 1;
            self.scratch.clear();
            self.inner.handle(input, &mut self.scratch);
            for a in self.scratch.drain() {
                match a {
                    DraconisAction::Recirculate(r) => self.pending.push_back(r),
                    other => out.push(other),
                }
            }
            next = self.pending.pop_front().map(DraconisInput::Resubmit);
        }
    }
}
