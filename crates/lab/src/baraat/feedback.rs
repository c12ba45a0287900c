//! The client's echo of the switch's feedback (§4.4: the receiver returns
//! the switches' AR and NR to the sender), without its socket.
//!
//! Feedback is soft state: each ACK carries the flow's latest, and the
//! client repeats it at least every [`FEEDBACK_REPEAT_S`] so that a lost
//! ACK delays it rather than losing the allocation it carried. A sender
//! sends its FIN only once the feedback for its last request is back
//! (the FIN returns what the switch holds), so once the client has seen a
//! flow's FIN nothing it could repeat is still awaited: the repeats stop
//! there, not when the run ends.

/// The client repeats a flow's latest feedback at least this often (s).
pub const FEEDBACK_REPEAT_S: f64 = 0.02;

/// One flow's latest switch feedback at the client.
#[derive(Clone, Copy, Debug, Default)]
pub struct FeedbackEcho {
    /// (request number, AR, NR) of the newest request heard of.
    latest: Option<(u32, f64, f64)>,
    acked_at: f64,
    finished: bool,
}

impl FeedbackEcho {
    /// A data packet carried the switch's answer to request `req`; an
    /// older request's answer (reordered) is ignored.
    pub fn on_feedback(&mut self, req: u32, ar: f64, nr: f64) {
        if self.latest.is_none_or(|(r, ..)| req >= r) {
            self.latest = Some((req, ar, nr));
        }
    }

    /// The flow's FIN arrived: its sender has heard its last feedback.
    pub fn on_fin(&mut self) {
        self.finished = true;
    }

    /// An ACK carrying [`FeedbackEcho::latest`] went out at `now` (s).
    pub fn on_ack_sent(&mut self, now: f64) {
        self.acked_at = now;
    }

    /// What an ACK echoes: (request number, AR, NR), if any.
    pub fn latest(&self) -> Option<(u32, f64, f64)> {
        self.latest
    }

    /// True when the feedback should be repeated at `now` (s) although no
    /// data packet asked for an ACK.
    pub fn repeat_due(&self, now: f64) -> bool {
        self.latest.is_some() && !self.finished && now - self.acked_at >= FEEDBACK_REPEAT_S
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 15: the client repeated a flow's feedback every 20 ms until
    /// the whole run ended, long after its task had finished. The repeats
    /// stop at the flow's FIN.
    #[test]
    fn feedback_is_repeated_until_the_flow_ends_and_never_after() {
        let mut fb = FeedbackEcho::default();
        assert!(!fb.repeat_due(1.0), "nothing to repeat yet");
        fb.on_feedback(3, 5e6, 6e6);
        fb.on_feedback(2, 1e6, 1e6);
        assert_eq!(fb.latest(), Some((3, 5e6, 6e6)), "an older answer");
        fb.on_ack_sent(1.0);
        assert!(!fb.repeat_due(1.0 + FEEDBACK_REPEAT_S / 2.0));
        let repeats = |fb: &mut FeedbackEcho, from: f64| {
            (1..=50)
                .map(|i| from + i as f64 * 1.5 * FEEDBACK_REPEAT_S)
                .filter(|&t| {
                    let due = fb.repeat_due(t);
                    if due {
                        fb.on_ack_sent(t);
                    }
                    due
                })
                .count()
        };
        assert_eq!(
            repeats(&mut fb, 1.0),
            50,
            "one per check while live, checks 30 ms apart"
        );
        fb.on_fin();
        assert_eq!(repeats(&mut fb, 3.0), 0, "none after the FIN");
    }
}
