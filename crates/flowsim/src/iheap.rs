//! An indexed binary min-heap of (time, item) with update and removal in
//! place. Flow finish times change at every recomputation of their
//! component (under fair sharing, every departure changes every rate at
//! the bottleneck); re-keying in place keeps the heap at the number of
//! active flows instead of accumulating millions of stale events.

const ABSENT: u32 = u32::MAX;

#[derive(Clone, Debug, Default)]
pub struct IndexedHeap {
    /// (time, item), heap-ordered by (time, item).
    heap: Vec<(u64, u32)>,
    /// Position of each item in `heap`, or ABSENT.
    pos: Vec<u32>,
}

impl IndexedHeap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The time of `item`, if present.
    #[inline]
    pub fn get(&self, item: u32) -> Option<u64> {
        match self.pos.get(item as usize) {
            Some(&p) if p != ABSENT => Some(self.heap[p as usize].0),
            _ => None,
        }
    }

    pub fn peek(&self) -> Option<(u64, u32)> {
        self.heap.first().copied()
    }

    /// Remove and return the earliest item if it is due at `time`.
    pub fn pop_at(&mut self, time: u64) -> Option<u32> {
        match self.peek() {
            Some((t, item)) if t == time => {
                self.remove(item);
                Some(item)
            }
            _ => None,
        }
    }

    /// Insert `item` at `time`, or move it there if present.
    pub fn set(&mut self, item: u32, time: u64) {
        let i = item as usize;
        if i >= self.pos.len() {
            self.pos.resize(i + 1, ABSENT);
        }
        let p = self.pos[i];
        if p == ABSENT {
            self.heap.push((time, item));
            let at = self.heap.len() - 1;
            self.pos[i] = at as u32;
            self.up(at);
        } else {
            let at = p as usize;
            let old = self.heap[at].0;
            self.heap[at].0 = time;
            if time < old {
                self.up(at);
            } else {
                self.down(at);
            }
        }
    }

    #[inline]
    pub fn remove(&mut self, item: u32) {
        let i = item as usize;
        let Some(&p) = self.pos.get(i) else { return };
        if p == ABSENT {
            return;
        }
        let at = p as usize;
        let last = self.heap.len() - 1;
        self.swap(at, last);
        self.heap.pop();
        self.pos[i] = ABSENT;
        if at < self.heap.len() {
            self.down(at);
            self.up(at);
        }
    }

    pub fn pop(&mut self) -> Option<(u64, u32)> {
        let top = self.peek()?;
        self.remove(top.1);
        Some(top)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a].1 as usize] = a as u32;
        self.pos[self.heap[b].1 as usize] = b as u32;
    }

    fn up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] < self.heap[parent] {
                self.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r] < self.heap[l] {
                r
            } else {
                l
            };
            if self.heap[c] < self.heap[i] {
                self.swap(c, i);
                i = c;
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netsched_core::rng::Rng;

    #[test]
    fn pop_at_takes_only_what_is_due_then() {
        let mut h = IndexedHeap::new();
        h.set(3, 10);
        h.set(1, 10);
        h.set(2, 20);
        assert_eq!(h.pop_at(5), None);
        assert_eq!(h.pop_at(10), Some(1));
        assert_eq!(h.pop_at(10), Some(3));
        assert_eq!(h.pop_at(10), None);
        assert_eq!(h.len(), 1);
        assert_eq!(h.pop_at(20), Some(2));
        assert!(h.is_empty());
    }

    #[test]
    fn matches_sorted_order_under_updates() {
        let mut h = IndexedHeap::new();
        let mut model = vec![None; 200];
        let mut rng = Rng::new(9);
        for _ in 0..5_000 {
            let item = rng.below(200);
            match rng.below(3) {
                0 | 1 => {
                    let t = rng.below(1000) as u64;
                    h.set(item, t);
                    model[item as usize] = Some(t);
                }
                _ => {
                    h.remove(item);
                    model[item as usize] = None;
                }
            }
            let want = model
                .iter()
                .enumerate()
                .filter_map(|(i, t)| t.map(|t| (t, i as u32)))
                .min();
            assert_eq!(h.peek(), want);
        }
        let mut last = (0, 0);
        while let Some(x) = h.pop() {
            assert!(x >= last);
            last = x;
        }
    }
}
