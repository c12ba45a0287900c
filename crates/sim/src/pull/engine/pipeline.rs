//! The switch pipeline's pass rate and its recirculation port as the
//! simulator models them.

use std::collections::VecDeque;

/// The scheduling switch's pipeline rate (`network.switch_pps`): passes,
/// first ones and recirculations alike, start in arrival order, at most
/// `pps` per second. Slot k of a busy period that began at `busy_start`
/// starts at `busy_start + ceil(k · 10⁹ / pps)` ns: exact in integer ns,
/// without drift, for rates above 1 G passes/s too (Tofino, Draconis §8.2:
/// 4.7 G packets/s).
pub(super) struct SwitchPipeline {
    pps: u64,
    busy_start: u64,
    passes: u64,
}

impl SwitchPipeline {
    pub(super) fn new(pps: u64) -> Self {
        SwitchPipeline {
            pps,
            busy_start: 0,
            passes: 0,
        }
    }

    fn slot(&self, k: u64) -> u64 {
        (k as u128 * 1_000_000_000).div_ceil(self.pps as u128) as u64
    }

    /// The instant the pass of a packet arriving at `now` starts. The pass
    /// itself takes no time beyond its slot (its latency is in `link_ns`).
    pub(super) fn admit(&mut self, now: u64) -> u64 {
        if now >= self.busy_start + self.slot(self.passes) {
            self.busy_start = now;
            self.passes = 0;
        }
        let start = self.busy_start + self.slot(self.passes);
        self.passes += 1;
        start
    }
}

/// Bytes a recirculated packet occupies on the recirculation port's wire:
/// the frame plus Ethernet's preamble and inter-frame gap (20 bytes).
const WIRE_OVERHEAD_BYTES: u64 = 20;

/// An R2P2 request probing the next executor: a minimum-size frame (the
/// R2P2 header and a small RPC payload, docs/draconis.md "Sans-IO contract").
pub(super) const PROBE_FRAME_BYTES: u64 = 64;

/// A recirculated Draconis packet (a job_submission's remaining tasks, a
/// repair, a priority or swap pass): as large as a job_submission, ≈ 300 bytes.
pub(super) const RECIRC_FRAME_BYTES: u64 = 300;

/// The switch's recirculation port (`network.recirc_gbps`,
/// `network.recirc_buffer`): every recirculated pass of every scheduler in
/// the switch leaves through it, one packet at a time at the port's line
/// rate, FIFO. A packet that finds `buffer` packets already queued or on the
/// wire is dropped: the switch has no capacity to recirculate it (Draconis
/// §2.2, §8.3). Time is kept in picoseconds so that a 6.72 ns frame does not
/// round to 7 ns per packet.
pub(super) struct RecirculationPort {
    /// Picoseconds per byte on the wire.
    ps_per_byte: f64,
    buffer: usize,
    /// When each packet in the port finishes leaving it, ps, oldest first.
    leaving_ps: VecDeque<u64>,
}

impl RecirculationPort {
    /// `gbps` > 0; `buffer` ≥ 1 packets.
    pub(super) fn new(gbps: f64, buffer: u32) -> Self {
        RecirculationPort {
            ps_per_byte: 8_000.0 / gbps,
            buffer: buffer.max(1) as usize,
            leaving_ps: VecDeque::with_capacity(buffer.min(1 << 16) as usize),
        }
    }

    /// A `frame_bytes` packet asks to recirculate at `now` (ns): the instant
    /// it has left the port (ns, rounded up), or `None` if the port's buffer
    /// is full and the packet is dropped.
    pub(super) fn send(&mut self, now: u64, frame_bytes: u64) -> Option<u64> {
        let now_ps = now.saturating_mul(1_000);
        while self.leaving_ps.front().is_some_and(|&t| t <= now_ps) {
            self.leaving_ps.pop_front();
        }
        if self.leaving_ps.len() >= self.buffer {
            return None;
        }
        let start = self.leaving_ps.back().map_or(now_ps, |&t| t.max(now_ps));
        let wire = ((frame_bytes + WIRE_OVERHEAD_BYTES) as f64 * self.ps_per_byte).round() as u64;
        let done = start + wire.max(1);
        self.leaving_ps.push_back(done);
        Some(done.div_ceil(1_000))
    }
}

#[cfg(test)]
mod tests {
    use super::{RecirculationPort, SwitchPipeline, PROBE_FRAME_BYTES};

    #[test]
    fn pipeline_slots_are_fifo_and_restart_when_idle() {
        // 1 M passes/s: one pass per µs.
        let mut p = SwitchPipeline::new(1_000_000);
        let starts: Vec<u64> = [0, 0, 0, 500, 5_000].iter().map(|&t| p.admit(t)).collect();
        assert_eq!(starts, [0, 1_000, 2_000, 3_000, 5_000]);
        // 3 G passes/s: slot k starts ceil(k / 3) ns into the busy period, so
        // the millionth of back-to-back passes starts at 333,333 ns (no drift).
        let mut p = SwitchPipeline::new(3_000_000_000);
        let first: Vec<u64> = (0..5).map(|_| p.admit(10)).collect();
        assert_eq!(first, [10, 11, 11, 11, 12]);
        let mut p = SwitchPipeline::new(3_000_000_000);
        let last = (0..1_000_000).map(|_| p.admit(0)).last();
        assert_eq!(last, Some(333_333));
    }

    #[test]
    fn recirculation_port_serialises_at_line_rate_and_drops_when_full() {
        // 100 Gb/s: an 84-byte probe on the wire takes 6.72 ns.
        let mut port = RecirculationPort::new(100.0, 3);
        let sent: Vec<Option<u64>> = (0..4)
            .map(|_| port.send(1_000, PROBE_FRAME_BYTES))
            .collect();
        // 6.72, 13.44, 20.16 ns after 1 µs (rounded up); the fourth finds
        // three packets in the port and is dropped.
        assert_eq!(sent, [Some(1_007), Some(1_014), Some(1_021), None]);
        // Once the first has left, there is room again, behind the others.
        assert_eq!(port.send(1_007, PROBE_FRAME_BYTES), Some(1_027));
        // An idle port sends at once.
        assert_eq!(port.send(5_000, PROBE_FRAME_BYTES), Some(5_007));
        // The millionth back-to-back probe leaves 6.72 ms in: no drift.
        let mut port = RecirculationPort::new(100.0, u32::MAX);
        let last = (0..1_000_000)
            .map(|_| port.send(0, PROBE_FRAME_BYTES))
            .last();
        assert_eq!(last, Some(Some(6_720_000)));
    }
}
