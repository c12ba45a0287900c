//! The clock, the queue of task arrivals and delayed flow starts, and what
//! the events of one instant changed. Flow finishes are not queued here:
//! they are the rate groups' finish times ([`super::groups::RateGroups`]),
//! and Baraat's re-classifications are the classifiers' threshold crossings
//! ([`super::classifier::Classifiers`]); the engine's loop takes the earliest
//! of the three.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::topology::LinkId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    /// Task arrivals are pulled from the source in order.
    Arrival,
    /// A flow of a task may start (its computation delay elapsed).
    Start { task: u32, spec: u32 },
}

#[derive(Clone, Default)]
pub(super) struct EventQueue {
    pub(super) now: u64,
    /// Ties at one instant pop in push order.
    seq: u64,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
}

impl EventQueue {
    pub(super) fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    pub(super) fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The next event if it is due at `t`.
    pub(super) fn pop_at(&mut self, t: u64) -> Option<Ev> {
        match self.heap.peek() {
            Some(&Reverse((t2, _, ev))) if t2 == t => {
                self.heap.pop();
                Some(ev)
            }
            _ => None,
        }
    }
}

/// What the events of the current instant changed, for the one
/// recomputation after them.
#[derive(Clone, Default)]
pub(super) struct InstantChanges {
    /// Groups of the flows that finished at this instant.
    pub(super) departed: Vec<u32>,
    /// Links seeded by this instant's departures (`dirty`: by the rest).
    pub(super) dep_dirty: Vec<LinkId>,
    pub(super) dirty: Vec<LinkId>,
    /// Flows started at this instant; whether one of them is its task's
    /// first at its port (Baraat).
    pub(super) started: Vec<u32>,
    pub(super) new_at_port: bool,
    /// Baraat: a task turned heavy at a departure of this instant.
    pub(super) turned_heavy: bool,
}

impl InstantChanges {
    /// The instant is over (the recomputation consumed the dirty links).
    pub(super) fn end(&mut self) {
        self.departed.clear();
        self.started.clear();
        self.new_at_port = false;
        self.turned_heavy = false;
    }
}
