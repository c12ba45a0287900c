//! The switch pipeline's pass rate as the simulator models it.

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

#[cfg(test)]
mod tests {
    use super::SwitchPipeline;

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
}
