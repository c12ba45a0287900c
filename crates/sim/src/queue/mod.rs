//! The event queue of one pool's simulation, ordered by (time, insertion
//! sequence), so simultaneous events run in the order they were scheduled
//! and a run is deterministic.
//!
//! One queue per pool keeps it at a pool's few hundred pending events
//! instead of the whole datacenter's (cache-resident, DESIGN.md
//! "Performance notes"). The keys live in a calendar queue
//! ([`calendar`]), the events in a slab beside it.

mod calendar;

use calendar::{CalendarKeys, Key};

/// Bits of a key's order that hold the payload's slot: up to 16.7M pending
/// events per pool (a pool keeps about one per worker), and 2^40 events per
/// pool run (days of CPU) for the insertion sequence above them.
const SLOT_BITS: u32 = 24;
const MAX_SEQ: u64 = 1 << (64 - SLOT_BITS);

/// Bucket width of [`EventQueue::new`]: a microsecond, about a 512th of the
/// mean service time of the paper's workloads (Bimodal's is 275 µs).
pub const DEFAULT_BUCKET_NS: u64 = 1024;

/// The key of an event at `time` with insertion sequence `seq` in `slot`:
/// time, then the sequence with the slot below it. Sequence numbers are
/// unique, so the slot never decides an order, and the payloads stay put.
#[inline]
fn key(time: u64, seq: u64, slot: u32) -> Key {
    (time as Key) << 64 | (seq << SLOT_BITS | slot as u64) as Key
}

#[inline]
fn parts(key: Key) -> (u64, u64, usize) {
    let order = key as u64;
    (
        (key >> 64) as u64,
        order >> SLOT_BITS,
        (order & ((1 << SLOT_BITS) - 1)) as usize,
    )
}

/// Asks the CPU to bring the cache line at `p` closer: a hint with no
/// effect on results.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault,
    // whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`] of every cache line `v` spans.
#[inline(always)]
pub fn prefetch_value<T>(v: &T) {
    let p = v as *const T as *const u8;
    let size = std::mem::size_of::<T>();
    if size <= 64 {
        // At most two lines.
        prefetch(p);
        prefetch(p.wrapping_add(size.saturating_sub(1)));
    } else {
        let mut off = 0;
        while off < size {
            prefetch(p.wrapping_add(off));
            off += 64;
        }
        prefetch(p.wrapping_add(size - 1));
    }
}

pub struct EventQueue<E> {
    keys: CalendarKeys,
    /// Payloads by slot; a slot is reused once its event is popped.
    events: Vec<E>,
    free_slots: Vec<u32>,
    seq: u64,
    now: u64,
    /// Sequence number of the event being processed (of the last `pop`).
    current_seq: u64,
    pub processed: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        Self::with_bucket_ns(DEFAULT_BUCKET_NS)
    }

    /// A queue whose calendar buckets are `bucket_ns` wide (rounded up to a
    /// power of two). The width changes the speed, never the order: a
    /// bucket a few events wide on average suits it best.
    pub fn with_bucket_ns(bucket_ns: u64) -> Self {
        EventQueue {
            keys: CalendarKeys::new(bucket_ns),
            events: Vec::with_capacity(1024),
            free_slots: Vec::with_capacity(1024),
            seq: 0,
            now: 0,
            current_seq: 0,
            processed: 0,
        }
    }

    /// Schedule `event` at absolute time `time` (never in the past).
    #[inline]
    pub fn at(&mut self, time: u64, event: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        self.seq += 1;
        assert!(self.seq < MAX_SEQ, "more than 2^40 events in one queue");
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.events[slot as usize] = event;
                slot
            }
            None => {
                assert!(
                    self.events.len() < 1 << SLOT_BITS,
                    "more than 2^24 pending events in one queue"
                );
                self.events.push(event);
                (self.events.len() - 1) as u32
            }
        };
        self.keys.push(key(time.max(self.now), self.seq, slot));
    }

    /// Schedule `event` `delay` ns from now.
    #[inline]
    pub fn after(&mut self, delay: u64, event: E) {
        self.at(self.now + delay, event);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let (time, seq, slot) = parts(self.keys.pop()?);
        self.now = time;
        self.current_seq = seq;
        self.processed += 1;
        self.free_slots.push(slot as u32);
        // The next events' payloads were written long ago (a completion a
        // service time back) and have mostly left the cache: fetch them
        // while this one runs (the payload's load was half of the loop's
        // own time). Two ahead, so that the caller can read the next one's
        // payload (`peek_cheap`) to fetch what it will touch.
        for next in [self.keys.peek(), self.keys.peek_second()]
            .into_iter()
            .flatten()
        {
            prefetch_value(&self.events[parts(next).2]);
        }
        Some((time, self.events[slot]))
    }

    /// The event `pop` will return next, when it is already known without
    /// moving to the next calendar bucket.
    #[inline]
    pub fn peek_cheap(&self) -> Option<&E> {
        self.keys.peek().map(|k| &self.events[parts(k).2])
    }

    /// The key, `(time, seq)`, an event scheduled `delay` ns from now would
    /// get, without scheduling one: for an input held in an [`Inbox`]
    /// instead, which then runs exactly where that event would have.
    #[inline]
    pub fn reserve_after(&mut self, delay: u64) -> (u64, u64) {
        self.seq += 1;
        (self.now + delay, self.seq)
    }

    /// The key of the event being processed: inbox items before it are due.
    #[inline]
    pub fn current(&self) -> (u64, u64) {
        (self.now, self.current_seq)
    }

    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Inputs held back from the event queue and delivered late, each under the
/// key the queue reserved for it ([`EventQueue::reserve_after`]). The
/// simulator holds a data plane's state-only inputs here
/// (`DataPlane::writes_state_only`, e.g. RS-H's per-completion load updates
/// to every spine) and hands over the due ones, in key order, just before the
/// data plane's next input: it sees the same inputs in the same order as
/// with one event each, without a trip through the pool's large heap.
pub struct Inbox<E> {
    /// Unordered pushes; sorted by key when due items are taken.
    items: Vec<(u64, u64, E)>,
    /// The smallest key in `items` (`NOTHING_HELD` when empty): a data
    /// plane takes far more inputs than it is sent held ones (a Horus
    /// spine takes every task, an idleAdd now and then), so most calls
    /// find nothing due without sorting.
    earliest: (u64, u64),
}

const NOTHING_HELD: (u64, u64) = (u64::MAX, u64::MAX);

impl<E> Default for Inbox<E> {
    fn default() -> Self {
        Inbox {
            items: Vec::new(),
            earliest: NOTHING_HELD,
        }
    }
}

impl<E: Copy> Inbox<E> {
    #[inline]
    pub fn push(&mut self, (time, seq): (u64, u64), event: E) {
        self.items.push((time, seq, event));
        self.earliest = self.earliest.min((time, seq));
    }

    /// Moves the held inputs whose key is before `key` into `due`, earliest
    /// first, with their times. A sort of the few held items beats a heap's
    /// per-item sift here (they are mostly due by the next call).
    #[inline]
    pub fn take_due(&mut self, key: (u64, u64), due: &mut Vec<(u64, E)>) {
        if self.earliest >= key {
            return;
        }
        self.items.sort_unstable_by_key(|&(t, s, _)| (t, s));
        let n = self.items.partition_point(|&(t, s, _)| (t, s) < key);
        due.extend(self.items.drain(..n).map(|(t, _, e)| (t, e)));
        self.earliest = self.items.first().map_or(NOTHING_HELD, |&(t, s, _)| (t, s));
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_fifo_among_equal_times() {
        let mut q = EventQueue::new();
        q.at(10, 'a');
        q.at(5, 'b');
        q.at(10, 'c');
        q.at(5, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.now(), 10);
    }

    /// The slab of payloads changes nothing in the order: against a plain
    /// sort by (time, insertion order), over interleaved pushes and pops
    /// with many equal times and reused slots.
    #[test]
    fn pops_in_time_then_insertion_order_with_reused_slots() {
        let mut rng = netsched_core::rng::Rng::new(3);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut pushed = 0u64;
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        for _ in 0..20_000 {
            if rng.below(3) > 0 || q.is_empty() {
                // Few distinct times, so ties are common.
                let t = q.now() + rng.below(4) as u64 * 10;
                pushed += 1;
                q.at(t, pushed);
                reference.insert((t, pushed));
            } else {
                expected.push(reference.pop_first().unwrap());
                popped.push(q.pop().unwrap());
            }
        }
        assert_eq!(popped, expected);
        assert!(popped.len() > 5_000);
    }

    /// Calendar buckets change nothing in the order either: against a plain
    /// sort, with delays of zero (ties), within one bucket, across the ring
    /// and beyond its horizon (the far heap, and the ring's empty jumps to
    /// it), for bucket widths from 1 ns to wider than most delays.
    #[test]
    fn calendar_pops_exactly_the_sorted_order() {
        use proptest::prelude::*;
        let delay = prop_oneof![
            Just(0u64),
            0u64..64,
            0u64..5_000,
            0u64..2_000_000,
            1_000_000u64..50_000_000,
        ];
        let ops = proptest::collection::vec((any::<bool>(), delay), 1..600);
        proptest!(|(ops in ops, width in prop_oneof![Just(1u64), Just(8), Just(1024), Just(1 << 20)])| {
            let mut q = EventQueue::with_bucket_ns(width);
            let mut reference = std::collections::BTreeSet::new();
            let mut pushed = 0u32;
            for &(pop, d) in &ops {
                if pop && !q.is_empty() {
                    let (t, e) = q.pop().unwrap();
                    prop_assert_eq!(Some((t, e)), reference.pop_first());
                } else {
                    pushed += 1;
                    q.after(d, pushed);
                    reference.insert((q.now() + d, pushed));
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            while let Some(got) = q.pop() {
                prop_assert_eq!(Some(got), reference.pop_first());
            }
            prop_assert!(reference.is_empty());
        });
    }

    /// Inputs held in an inbox come out in the order the queue would have
    /// run them, and only once the queue has passed their key.
    #[test]
    fn inbox_items_fall_due_at_their_reserved_keys() {
        let mut q = EventQueue::new();
        let mut inbox = Inbox::default();
        q.at(10, 'a');
        inbox.push(q.reserve_after(10), 'x'); // after 'a' at the same time
        q.at(10, 'b');
        inbox.push(q.reserve_after(5), 'y');
        inbox.push(q.reserve_after(5), 'z');
        let mut order = Vec::new();
        let mut due = Vec::new();
        while let Some((t, e)) = q.pop() {
            inbox.take_due(q.current(), &mut due);
            for (ti, i) in due.drain(..) {
                assert!(ti <= t);
                order.push(i);
            }
            order.push(e);
        }
        inbox.take_due((u64::MAX, u64::MAX), &mut due);
        order.extend(due.drain(..).map(|(_, i)| i));
        assert_eq!(order, vec!['y', 'z', 'a', 'x', 'b']);
        assert!(inbox.is_empty());
    }
}
