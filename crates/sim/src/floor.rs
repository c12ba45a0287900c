//! The floor of the simulator's cost per event: a bare binary-heap
//! event loop, with nothing else to do. Each step pops the earliest event
//! and schedules one successor, so the heap keeps `pending` events, as a
//! pool keeps about one per worker. `netsched bench sim` runs it beside the
//! simulation and prints the ratio of their CPU per event
//! (docs/benchmarks.md).
//!
//! The floor stays a binary heap although the pools' own queue is now a
//! calendar queue (`crate::queue`): the goal is stated against the
//! heap loop, and a floor that moved with the simulator's own queue would
//! hide that queue's gain in the ratio.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use netsched_core::rng::Rng;

/// Runs `events` pops and pushes on a binary heap of `(time, sequence)`
/// keys holding `pending` copies of `payload` (the simulator's own event
/// type) in a slab beside it, as the pools' queue did before the calendar.
/// Successors fall uniformly within `2 * mean_delay_ns` after now, a cheap stand-in for the exponential and
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
    let mut heap = BinaryHeap::with_capacity(pending + 1);
    let mut slab = vec![payload; pending.max(1)];
    let span = (2 * mean_delay_ns).clamp(1, u32::MAX as u64) as u32;
    let mut seq = 0u64;
    for slot in 0..pending.max(1) {
        seq += 1;
        heap.push(Reverse((rng.below(span) as u64, seq << 24 | slot as u64)));
    }
    let mut checksum = 0u64;
    for _ in 0..events {
        let Reverse((now, order)) = heap.pop().expect("the heap never empties");
        let slot = (order & ((1 << 24) - 1)) as usize;
        let e = std::hint::black_box(slab[slot]);
        checksum = checksum.wrapping_add(now);
        seq += 1;
        slab[slot] = e;
        heap.push(Reverse((
            now + rng.below(span) as u64,
            seq << 24 | slot as u64,
        )));
    }
    checksum ^ heap.len() as u64
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
