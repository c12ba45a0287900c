//! A leaf's tasks in flight: which (task id, worker) pairs it dispatched and
//! has not seen answered, so that a reply is fed to the data plane only if it
//! answers one, a Horus reply or a RackSched REP alike
//! (a REP's LOAD is absolute, so an old copy would roll the server's load
//! back). A duplicated reply, a stale one from before
//! a worker was removed, or one forged with a worker's address and a made-up
//! task id then cannot change the worker's load, its idle state or the rack
//! average; it is still forwarded (the client counts duplicates) and counted
//! (`netsched_stale_replies_total`). Heartbeats reconcile what this leaves
//! behind (`HorusLeaf::control_reconcile_worker`).
//!
//! Keyed by (task id, worker), not task id alone: a client's resubmission
//! reuses the id and may go to another worker, and both copies' replies are
//! genuine. Allocated once; entries whose reply never comes (a killed worker,
//! a lost datagram) are forgotten after [`IN_FLIGHT_TTL_NS`], swept at most
//! once per [`SWEEP_NS`] when the table is full. A dispatch that finds it
//! full even so is not tracked: its reply then counts as stale and the
//! worker's next heartbeat reconciles it.

use std::collections::HashMap;

/// Forget a dispatch after this long without its reply: far above the
/// worker's `max_service_ms` (5 s) plus a full queue's wait.
pub const IN_FLIGHT_TTL_NS: u64 = 60_000_000_000;

const SWEEP_NS: u64 = 100_000_000;

pub struct InFlight {
    /// (task id, node) → dispatch time, ns. Looked up by key only.
    sent: HashMap<(u64, u16), u64>,
    capacity: usize,
    next_sweep_ns: u64,
}

impl InFlight {
    pub fn new(capacity: usize) -> Self {
        InFlight {
            sent: HashMap::with_capacity(capacity),
            capacity,
            next_sweep_ns: 0,
        }
    }

    /// Task `id` went to `node` at `now`; false if it could not be tracked.
    #[inline]
    pub fn dispatched(&mut self, id: u64, node: u16, now: u64) -> bool {
        if self.sent.len() >= self.capacity && !self.sent.contains_key(&(id, node)) {
            if now >= self.next_sweep_ns {
                self.next_sweep_ns = now.saturating_add(SWEEP_NS);
                self.sent
                    .retain(|_, at| now.saturating_sub(*at) <= IN_FLIGHT_TTL_NS);
            }
            if self.sent.len() >= self.capacity {
                return false;
            }
        }
        self.sent.insert((id, node), now);
        true
    }

    /// A reply to `id` from `node`: true if it answers a dispatch (which is
    /// then answered, so a copy of the reply answers nothing).
    #[inline]
    pub fn answer(&mut self, id: u64, node: u16) -> bool {
        self.sent.remove(&(id, node)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answers_its_dispatch_once() {
        let mut f = InFlight::new(4);
        assert!(f.dispatched(1, 0, 0));
        assert!(f.dispatched(1, 1, 0)); // a resubmitted copy elsewhere
        assert!(!f.answer(1, 2));
        assert!(f.answer(1, 0));
        assert!(!f.answer(1, 0));
        assert!(f.answer(1, 1));
    }

    #[test]
    fn full_table_forgets_old_dispatches() {
        let mut f = InFlight::new(2);
        assert!(f.dispatched(1, 0, 0));
        assert!(f.dispatched(2, 0, 0));
        assert!(!f.dispatched(3, 0, 1));
        assert!(f.dispatched(3, 0, IN_FLIGHT_TTL_NS + 1));
        assert!(!f.answer(1, 0));
        assert!(f.answer(3, 0));
    }
}
