//! The keys of a pool's pending events in a calendar queue (Brown, CACM
//! 1988): a ring of time buckets a fixed power-of-two width apart, with the
//! events beyond the ring's horizon in a binary heap. Keys are unique and
//! never below the last popped one (the simulation's clock only moves
//! forward), so the queue pops exactly the order of one sorted list of keys:
//! the ring's buckets are visited in time order, the current bucket is kept
//! sorted, and far events enter the ring before its horizon passes them.
//!
//! Against a binary heap over the same keys: a push is one append to its
//! bucket, a pop takes the last of a short sorted run, and the next bucket
//! is found by a bitmap scan, with no comparison chain through ~10 heap
//! levels whose branches mispredict (the heap's pop was ~17 % of a run's
//! CPU, docs/benchmarks.md).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Buckets in the ring: with the pool's width (a 2,048th of a mean service
/// time, rounded up to a power of two) the ring spans two to four mean
/// service times, past which few events are scheduled. Narrow buckets hold
/// a few keys each (about 4 in a Bimodal pool of 685 workers), so sorting
/// one is a short insertion sort rather than a mispredicted quicksort.
const RING: usize = 4096;
const WORDS: usize = RING / 64;
const NIL: u32 = u32::MAX;

/// An event's key: time in the high 64 bits, then an order below it that is
/// unique per queue (see `super::EventQueue`).
pub(super) type Key = u128;

#[inline]
fn time_of(key: Key) -> u64 {
    (key >> 64) as u64
}

pub(super) struct CalendarKeys {
    /// log2 of a bucket's width in ns.
    shift: u32,
    /// Absolute bucket number (time >> shift) of the current bucket.
    cur: u64,
    /// The current bucket's keys, sorted descending (the next key last).
    current: Vec<Key>,
    /// Buckets `cur + 1 .. cur + RING`, unsorted, at index `bucket % RING`:
    /// each a list through `nodes` from its head (`NIL` when empty). One
    /// node array per queue instead of a vector per bucket: a pool's setup
    /// allocated and grew 1,024 of those.
    heads: Box<[u32; RING]>,
    /// (key, next node) of the ring's keys; free nodes form a list too.
    nodes: Vec<(Key, u32)>,
    free: u32,
    /// Non-empty ring buckets, one bit per index.
    occupied: [u64; WORDS],
    /// Keys in the ring's lists (not in `current` or `far`).
    in_ring: usize,
    /// Keys at or beyond bucket `cur + RING`.
    far: BinaryHeap<Reverse<Key>>,
}

impl CalendarKeys {
    /// Buckets `width_ns` wide, rounded up to a power of two.
    pub(super) fn new(width_ns: u64) -> Self {
        CalendarKeys {
            shift: width_ns.max(1).next_power_of_two().trailing_zeros(),
            cur: 0,
            current: Vec::with_capacity(16),
            heads: Box::new([NIL; RING]),
            nodes: Vec::new(),
            free: NIL,
            occupied: [0; WORDS],
            in_ring: 0,
            far: BinaryHeap::new(),
        }
    }

    #[inline]
    fn bucket(&self, key: Key) -> u64 {
        time_of(key) >> self.shift
    }

    pub(super) fn len(&self) -> usize {
        self.current.len() + self.in_ring + self.far.len()
    }

    /// Adds `key`, which must be above the last popped key.
    #[inline]
    pub(super) fn push(&mut self, key: Key) {
        let b = self.bucket(key);
        debug_assert!(b >= self.cur, "key before the current bucket");
        if b == self.cur {
            // Descending: the new key goes after every larger one.
            let at = self.current.partition_point(|&k| k > key);
            self.current.insert(at, key);
        } else if b < self.cur + RING as u64 {
            self.ring_push(b, key);
        } else {
            self.far.push(Reverse(key));
        }
    }

    #[inline]
    fn ring_push(&mut self, b: u64, key: Key) {
        let i = b as usize % RING;
        let next = self.heads[i];
        let node = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].1;
            self.nodes[n as usize] = (key, next);
            n
        } else {
            self.nodes.push((key, next));
            (self.nodes.len() - 1) as u32
        };
        self.heads[i] = node;
        self.occupied[i / 64] |= 1 << (i % 64);
        self.in_ring += 1;
    }

    /// The smallest key if it is in the current bucket (no bucket change).
    #[inline]
    pub(super) fn peek(&self) -> Option<Key> {
        self.current.last().copied()
    }

    /// The key after [`Self::peek`]'s, if it is in the current bucket too.
    #[inline]
    pub(super) fn peek_second(&self) -> Option<Key> {
        let n = self.current.len();
        (n >= 2).then(|| self.current[n - 2])
    }

    /// Removes and returns the smallest key.
    #[inline]
    pub(super) fn pop(&mut self) -> Option<Key> {
        if self.current.is_empty() && !self.advance() {
            return None;
        }
        self.current.pop()
    }

    /// Makes the next non-empty bucket current; false when no key is left.
    #[cold]
    fn advance(&mut self) -> bool {
        let next = match self.next_occupied() {
            Some(b) => b,
            None => match self.far.peek() {
                Some(&Reverse(k)) => self.bucket(k),
                None => return false,
            },
        };
        self.cur = next;
        // The horizon moved to `next + RING`: far keys within it join the
        // ring (all lie beyond `next`, or in it when the ring was empty).
        while let Some(&Reverse(k)) = self.far.peek() {
            let b = self.bucket(k);
            if b >= next + RING as u64 {
                break;
            }
            self.far.pop();
            self.ring_push(b, k);
        }
        let i = next as usize % RING;
        self.occupied[i / 64] &= !(1 << (i % 64));
        let mut n = std::mem::replace(&mut self.heads[i], NIL);
        while n != NIL {
            let (key, next) = self.nodes[n as usize];
            self.current.push(key);
            self.nodes[n as usize].1 = self.free;
            self.free = n;
            n = next;
        }
        self.in_ring -= self.current.len();
        self.current.sort_unstable_by(|a, b| b.cmp(a));
        true
    }

    /// The first occupied ring bucket after `cur`, as an absolute number.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        if self.in_ring == 0 {
            return None;
        }
        let start = (self.cur as usize + 1) % RING;
        let (w0, bit0) = (start / 64, start % 64);
        // The first word from `start`'s bit, the other words in ring
        // order, then the first word's bits below `start`.
        let first = self.occupied[w0] & (!0u64 << bit0);
        let found = if first != 0 {
            Some(w0 * 64 + first.trailing_zeros() as usize)
        } else {
            (1..=WORDS).find_map(|d| {
                let w = (w0 + d) % WORDS;
                let bits = if d == WORDS {
                    self.occupied[w] & !(!0u64 << bit0)
                } else {
                    self.occupied[w]
                };
                (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize)
            })
        };
        let i = found.expect("in_ring > 0 means a bit is set");
        let ahead = (i + RING - start) % RING;
        Some(self.cur + 1 + ahead as u64)
    }
}
