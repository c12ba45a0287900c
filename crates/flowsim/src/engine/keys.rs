//! The packed keys and small counters that the rate groups, the fast path,
//! the water-fill and pFabric's crossings share (kept below all of them so
//! none of those modules depends on another for them).

use std::collections::BinaryHeap;

/// A non-negative float then an id, packed so that integer order is
/// (float, id) order: a non-negative float's bits order as integers (`+ 0.0`
/// folds -0.0 into +0.0).
pub(super) fn float_then_id(x: f64, id: u32) -> u128 {
    ((x + 0.0).to_bits() as u128) << 32 | id as u128
}

/// Baraat: one more live member of task `tid` in a group's per-task counts.
pub(super) fn group_task_inc(tasks: &mut Vec<(u64, u32)>, tid: u64) {
    match tasks.iter_mut().find(|t| t.0 == tid) {
        Some(t) => t.1 += 1,
        None => tasks.push((tid, 1)),
    }
}

/// The flows of `top`'s key: `top` (just popped) and the entries after it
/// with the same key, from the water-fill's heap of complemented packed
/// (key, id), into `kgroup`.
pub(super) fn pop_key_group(heap: &mut BinaryHeap<u128>, top: u128, kgroup: &mut Vec<u32>) {
    let key = !top >> 32;
    kgroup.clear();
    kgroup.push(!top as u32);
    while let Some(&nx) = heap.peek() {
        if !nx >> 32 != key {
            break;
        }
        kgroup.push(!nx as u32);
        heap.pop();
    }
}
