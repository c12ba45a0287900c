//! The floor of the simulator's cost per event: the pool's event queue with
//! nothing else to do. Each step pops the earliest event and schedules one
//! successor, so the queue keeps `pending` events, as a pool keeps about one
//! per worker. `netsched bench sim` runs it beside the simulation and prints
//! the ratio of their CPU per event (issue 17, docs/benchmarks.md).

use netsched_core::rng::Rng;

use crate::queue::EventQueue;

/// Runs `events` pops and pushes on a queue holding `pending` copies of
/// `payload` (the simulator's own event type, so entries move as many bytes
/// as the simulator's do). Successors fall uniformly within
/// `2 * mean_delay_ns` after now, a cheap stand-in for the exponential and
/// bimodal delays of a run. Returns a checksum of the popped times, which
/// keeps the loop from being optimised away.
pub fn floor_loop<E: Copy>(
    pending: usize,
    events: u64,
    mean_delay_ns: u64,
    payload: E,
    seed: u64,
) -> u64 {
    let mut rng = Rng::new(seed);
    let mut q = EventQueue::new();
    let span = (2 * mean_delay_ns).clamp(1, u32::MAX as u64) as u32;
    for _ in 0..pending.max(1) {
        q.at(rng.below(span) as u64, payload);
    }
    let mut checksum = 0u64;
    for _ in 0..events {
        let (now, e) = q.pop().expect("the queue never empties");
        checksum = checksum.wrapping_add(now);
        q.at(now + rng.below(span) as u64, e);
    }
    checksum ^ q.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_its_pending_events_and_moves_time_forward() {
        let a = floor_loop(100, 10_000, 1_000, 0u8, 7);
        assert_eq!(a, floor_loop(100, 10_000, 1_000, 0u8, 7));
        assert_ne!(a, floor_loop(100, 10_000, 1_000, 0u8, 8));
        // Time advances ~1,000 ns per 100 pops, to ~100,000 ns by the last
        // pop: the popped times sum to ~5e8, far above the first 100's 1e5.
        assert!(a > 100_000_000, "{a}");
    }
}
