//! The lab's end-of-flow and end-of-task messages as reliable ones (Baraat
//! §4.3.3: reliability "similar to TCP": a sender keeps a timer and sends
//! again what is not acknowledged in time).
//!
//! * A server's FIN returns the flow's last demand and allocation to the
//!   switch (Alg. 1's counters); lost, it would leave them there for good.
//!   It is repeated until the client's FIN-ACK comes back, and the switch
//!   applies each flow's FIN once
//!   ([`TaskEnds::on_fin`](super::TaskEnds::on_fin)).
//! * The client's DONE names the task's flow count, without which the
//!   switch never retires the task's counters; lost, a flow counted twice
//!   (a lost first request) would keep its demand booked ahead of every
//!   later task. It is repeated until the switch's DONE-ACK comes back;
//!   a repeat is harmless ([`TaskEnds::on_done`](super::TaskEnds::on_done)).

/// Seconds between repeats of an unacknowledged message: the lab's
/// feedback repeat interval, many times a round trip through the relay.
pub const REPEAT_S: f64 = 0.02;

/// One message from its first sending until its acknowledgement.
#[derive(Clone, Copy, Debug)]
pub struct UntilAcked {
    next_at: f64,
    acked: bool,
}

impl UntilAcked {
    /// The message is due at once, at `now` (seconds).
    pub fn new(now: f64) -> Self {
        UntilAcked {
            next_at: now,
            acked: false,
        }
    }

    /// True when the message is to be sent (again) at `now`; the next
    /// repeat is then due [`REPEAT_S`] later.
    pub fn due(&mut self, now: f64) -> bool {
        if self.acked || now < self.next_at {
            return false;
        }
        self.next_at = now + REPEAT_S;
        true
    }

    /// The receiver acknowledged the message: no more repeats.
    pub fn on_ack(&mut self) {
        self.acked = true;
    }

    pub fn acked(&self) -> bool {
        self.acked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_repeats_until_acknowledged() {
        let mut m = UntilAcked::new(1.0);
        assert!(m.due(1.0));
        assert!(!m.due(1.0 + REPEAT_S / 2.0), "too soon");
        assert!(m.due(1.0 + REPEAT_S), "unacknowledged: again");
        m.on_ack();
        assert!(!m.due(10.0));
        assert!(m.acked());
    }
}
