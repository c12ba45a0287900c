//! The sender's side of SPC (Baraat §4.3.3, Alg. 2): the demand to announce
//! for the next RTT and the rate to send at.

use super::SpcFeedback;

/// Alg. 2: the sender's demand for the next RTT.
#[derive(Clone, Debug)]
pub struct SpcSender {
    pub nic_bps: f64,
    pub rtt_ns: u64,
    /// δ: a little above the nominal bottleneck share, so the sender notices
    /// when the bottleneck frees up (§4.3.3).
    pub delta_bps: f64,
    demand: f64,
    setup: bool,
    rate: f64,
}

impl SpcSender {
    pub fn new(nic_bps: f64, rtt_ns: u64, delta_bps: f64) -> Self {
        SpcSender {
            nic_bps,
            rtt_ns: rtt_ns.max(1),
            delta_bps,
            demand: 0.0,
            setup: false,
            rate: 0.0,
        }
    }

    /// Alg. 2 lines 2-5: the demand to put in the next packet header, given
    /// the bytes still to send and the smallest NR of the previous RTT.
    pub fn next_demand(&mut self, data_in_buffer: u64, min_nr: Option<f64>) -> f64 {
        let mut d = self
            .nic_bps
            .min(data_in_buffer as f64 * 8e9 / self.rtt_ns as f64);
        if self.setup {
            if let Some(nr) = min_nr {
                if nr < self.demand {
                    d = d.min(nr + self.delta_bps);
                }
            }
        }
        self.setup = true;
        self.demand = d;
        d
    }

    /// The feedback vector came back: send at the smallest AR (§4.3.3).
    pub fn on_feedback(&mut self, fb: &[SpcFeedback]) -> f64 {
        self.rate = fb.iter().map(|f| f.ar).fold(self.nic_bps, f64::min);
        self.rate
    }

    pub fn demand(&self) -> f64 {
        self.demand
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SpcPort, SpcRequest};
    use super::*;

    #[test]
    fn alg2_lowers_demand_to_bottleneck() {
        let mut s = SpcSender::new(1e9, 100_000, 1e6);
        // 1 MB to send: 1 MB per 100 µs is more than the NIC.
        assert_eq!(s.next_demand(1_000_000, None), 1e9);
        assert_eq!(
            s.on_feedback(&[SpcFeedback {
                ar: 0.2e9,
                nr: 0.25e9
            }]),
            0.2e9
        );
        assert_eq!(s.next_demand(1_000_000, Some(0.25e9)), 0.25e9 + 1e6);
        // The bottleneck freed up: NR above the demand lets it grow back.
        assert_eq!(s.next_demand(1_000_000, Some(1e9)), 1e9);
        // Little data left: demand = data / RTT.
        assert_eq!(s.next_demand(1_000, Some(1e9)), 1_000.0 * 8e9 / 100_000.0);
    }

    /// Alg. 1 and Alg. 2 driven together, one packet per flow per RTT,
    /// converge to the allocation the flow simulator computes directly
    /// (its `engine/allocation.rs`): the work-conservation case of its
    /// tests/examples.rs.
    #[test]
    fn spc_rtt_loop_reaches_work_conserving_allocation() {
        let (c, rtt, delta) = (1e9, 100_000u64, 1e6);
        // Switch ports: 0 = h0 uplink, 1 = h1 uplink, 2 = ToR uplink.
        let mut sw: Vec<SpcPort> = (0..3)
            .map(|_| SpcPort::new(c, rtt, f64::INFINITY))
            .collect();
        // (task id, path): a and b (task 1) cross the ToR uplink; c (task 2)
        // shares h0's uplink with a.
        let flows: [(u64, &[usize]); 3] = [(1, &[0, 2]), (1, &[1, 2]), (2, &[0])];
        let mut senders: Vec<SpcSender> = (0..3).map(|_| SpcSender::new(c, rtt, delta)).collect();
        let mut prev_demand = [0.0f64; 3];
        let mut prev_alloc = [[0.0f64; 3]; 3];
        let mut min_nr: [Option<f64>; 3] = [None; 3];
        let mut rates = [0.0; 3];
        for round in 0..200 {
            for (i, (task, path)) in flows.iter().enumerate() {
                let d = senders[i].next_demand(u64::MAX / 16, min_nr[i]);
                let mut fb = Vec::new();
                for &s in path.iter() {
                    let f = sw[s].on_packet(SpcRequest {
                        task_id: *task,
                        demand: d,
                        prev_demand: prev_demand[i],
                        prev_alloc: prev_alloc[i][s],
                        new_flow: round == 0,
                    });
                    prev_alloc[i][s] = f.ar;
                    fb.push(f);
                }
                prev_demand[i] = d;
                min_nr[i] = fb.iter().map(|f| f.nr).reduce(f64::min);
                rates[i] = senders[i].on_feedback(&fb);
            }
        }
        let want = [0.5e9, 0.5e9, 0.5e9];
        for i in 0..3 {
            assert!(
                (rates[i] - want[i]).abs() <= 2.0 * delta,
                "flow {i}: {rates:?}"
            );
        }
        // h0's uplink is not left idle.
        assert!(rates[0] + rates[2] >= c - 2.0 * delta, "{rates:?}");
    }
}
