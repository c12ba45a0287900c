//! A free-list slab for packets in flight.

/// Packets wider than a few words wait in a slab while in flight, so that
/// heap entries stay small (a job_submission is ~340 bytes).
pub(super) struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Slab<T> {
    pub(super) fn new() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    pub(super) fn put(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = v;
                i
            }
            None => {
                self.items.push(v);
                (self.items.len() - 1) as u32
            }
        }
    }

    pub(super) fn take(&mut self, i: u32) -> T {
        self.free.push(i);
        self.items[i as usize]
    }
}
