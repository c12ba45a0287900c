//! The sender's FIN as a reliable message (Baraat §4.3.3: reliability
//! "similar to TCP": a sender keeps a timer and sends again what is not
//! acknowledged in time). The FIN returns the flow's last demand and
//! allocation to the switch (Alg. 1's counters); lost, it would leave them
//! there for good, so it is repeated every [`FIN_REPEAT_S`] until the
//! receiver's FIN-ACK comes back. The switch applies each flow's FIN once
//! ([`TaskEnds::on_fin`](super::TaskEnds::on_fin)).

/// Seconds between repeats of an unacknowledged FIN: the lab's feedback
/// repeat interval, many times the FIN's round trip through the relay.
pub const FIN_REPEAT_S: f64 = 0.02;

/// One flow's FIN from its first sending until its acknowledgement.
#[derive(Clone, Copy, Debug)]
pub struct FinOut {
    next_at: f64,
    acked: bool,
}

impl FinOut {
    /// The flow's last byte is acknowledged and its last request answered
    /// at `now` (seconds): the FIN is due at once.
    pub fn new(now: f64) -> Self {
        FinOut {
            next_at: now,
            acked: false,
        }
    }

    /// True when the FIN is to be sent (again) at `now`; the next repeat
    /// is then due [`FIN_REPEAT_S`] later.
    pub fn due(&mut self, now: f64) -> bool {
        if self.acked || now < self.next_at {
            return false;
        }
        self.next_at = now + FIN_REPEAT_S;
        true
    }

    /// The receiver acknowledged the FIN: no more repeats.
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
    fn a_fin_repeats_until_acknowledged() {
        let mut fin = FinOut::new(1.0);
        assert!(fin.due(1.0));
        assert!(!fin.due(1.0 + FIN_REPEAT_S / 2.0), "too soon");
        assert!(fin.due(1.0 + FIN_REPEAT_S), "unacknowledged: again");
        fin.on_ack();
        assert!(!fin.due(10.0));
        assert!(fin.acked());
    }
}
