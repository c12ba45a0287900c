//! The FIFO-LM classifier of one switch port (Baraat §3.3, §4.3.1): per-task
//! counters in task-id order, on-the-fly heavy-task detection, and the map
//! from tasks to priority classes.
//!
//! The counters are two register arrays of the switch model, one row per
//! task at the port, kept in task-id order by the control plane (the switch
//! CPU installs a task's row when its first packet reaches the port and
//! removes it when the task is forgotten; the rows' task ids are written by
//! nothing else, so a data-plane pass may find a task's row by its id, as
//! it would match a table the control plane installed):
//!
//! * `spc.class` (task id, current demand, flows, heavy): what Alg. 1 lines
//!   2-4 sum over every class ahead of the flow's, in one pass
//!   ([`crate::switch::Layout::scanned_array`]);
//! * `spc.booked` (allocation still booked to the task, bytes reserved,
//!   heavy): what line 12 updates once AR is known, after the port's `A`.
//!
//! The flow simulator's fluid engine keeps a standalone classifier per port
//! and charges it with the bytes its flows send ([`FifoLm::reserve`]): a
//! fixed-point model, not a packet, so it reads and writes the rows as the
//! control plane does.

use crate::switch::{Layout, RegisterArray, RegisterCell, Stage};

/// One task's aggregate counters at a switch port (§4.3.1: "we only keep
/// aggregate, per-task counters at the switches").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskCounters {
    pub task_id: u64,
    /// Bytes reserved so far by the task's flows at this port: the proxy for
    /// task size (footnote 4: *all* prior reservations, not the current demand).
    pub bytes_reserved: f64,
    /// Sum of the current demands of the task's flows (bits/s).
    pub demand: f64,
    /// Number of the task's flows currently registered.
    pub flows: u32,
    /// Sum of the task's flows' current allocations AR (bits/s): what is
    /// still booked to the task in the port's A.
    pub allocated: f64,
    /// Marked once `bytes_reserved` exceeds the threshold; sticky.
    pub heavy: bool,
}

/// A task's row of `spc.class`: what the class sums of Alg. 1 read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ClassRow {
    pub(super) task_id: u64,
    pub(super) demand: f64,
    pub(super) flows: u32,
    pub(super) heavy: bool,
}

impl RegisterCell for ClassRow {
    const BITS: u32 = 64 + 64 + 32 + 1;
}

/// A task's row of `spc.booked`: what Alg. 1 line 12 updates with AR.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BookRow {
    pub(super) allocated: f64,
    pub(super) bytes_reserved: f64,
    /// `spc.class`'s flag, seen where the reservation crosses the
    /// threshold (the port copies it there in a resubmitted pass).
    pub(super) heavy: bool,
}

impl RegisterCell for BookRow {
    const BITS: u32 = 64 + 64 + 1;
}

const CLASS_ROW: ClassRow = ClassRow {
    task_id: 0,
    demand: 0.0,
    flows: 0,
    heavy: false,
};
const BOOK_ROW: BookRow = BookRow {
    allocated: 0.0,
    bytes_reserved: 0.0,
    heavy: false,
};

const SCANNED: &str = "Alg. 1 lines 2-4 sum the demand and flows of every class ahead of the flow's (a loop over the port's tasks, as in Baraat's software switch, §4.4)";
const BOOKED_WIDE: &str =
    "allocation and bytes reserved of a task as two f64 (Baraat §4.4's switch uses integer rates)";

/// The §4.3.1 classifier of one switch port: tasks map one-to-one to priority
/// classes in task-id order (FIFO), except that a heavy task shares its class
/// with the task immediately after it (FIFO-LM). A class keeps absorbing the
/// next task while its last member is heavy, so two heavy tasks in a row let
/// a third, small task make progress too.
#[derive(Clone, Debug)]
pub struct FifoLm {
    /// Tasks known at this port, sorted by task id (ascending = priority).
    pub(super) class: RegisterArray<ClassRow>,
    /// Row `i` belongs to the task of `class` row `i`.
    pub(super) booked: RegisterArray<BookRow>,
    /// Heavy threshold in bytes (§3.3: a percentile of historical task sizes).
    threshold: f64,
}

impl Default for FifoLm {
    fn default() -> Self {
        FifoLm::new(0.0)
    }
}

impl FifoLm {
    /// A classifier of its own (the fluid engine's per-port classifier).
    pub fn new(threshold_bytes: f64) -> Self {
        let mut layout = Layout::new();
        let (a, b) = (layout.stage(), layout.stage());
        Self::placed(&mut layout, a, b, threshold_bytes)
    }

    /// The classifier's arrays placed in `layout`: `spc.class` in `class`,
    /// `spc.booked` in `booked` (a later stage).
    pub(super) fn placed(
        layout: &mut Layout,
        class: Stage,
        booked: Stage,
        threshold_bytes: f64,
    ) -> Self {
        let class = layout.scanned_array(class, "spc.class", 0, CLASS_ROW, SCANNED);
        layout.installed_rows();
        let booked = layout.wide_array(booked, "spc.booked", 0, BOOK_ROW, BOOKED_WIDE);
        layout.installed_rows();
        FifoLm {
            class,
            booked,
            threshold: threshold_bytes,
        }
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The row of `task_id`, or where it would go. Reads only the task ids,
    /// which the control plane alone writes.
    #[inline]
    pub(super) fn find(&self, task_id: u64) -> Result<usize, usize> {
        self.class
            .as_slice()
            .binary_search_by_key(&task_id, |t| t.task_id)
    }

    /// The row of `task_id`, installed first if the task is new here (the
    /// control plane's job: a packet of an unknown task goes to the switch
    /// CPU before the pipeline).
    #[inline]
    pub(super) fn install(&mut self, task_id: u64) -> usize {
        match self.find(task_id) {
            Ok(i) => i,
            Err(i) => {
                self.class.control_insert(
                    i,
                    ClassRow {
                        task_id,
                        ..CLASS_ROW
                    },
                );
                self.booked.control_insert(i, BOOK_ROW);
                i
            }
        }
    }

    #[inline]
    fn counters_at(&self, i: usize) -> TaskCounters {
        let (c, b) = (self.class.peek(i), self.booked.peek(i));
        TaskCounters {
            task_id: c.task_id,
            bytes_reserved: b.bytes_reserved,
            demand: c.demand,
            flows: c.flows,
            allocated: b.allocated,
            heavy: c.heavy,
        }
    }

    /// A flow of `task_id` appears at this port.
    #[inline]
    pub fn add_flow(&mut self, task_id: u64) {
        let i = self.install(task_id);
        let mut c = self.class.peek(i);
        c.flows += 1;
        self.class.control_write(i, c);
    }

    /// A flow of `task_id` ends. The task's counters stay until
    /// [`FifoLm::forget`]: bytes reserved accumulate over the task's life.
    #[inline]
    pub fn remove_flow(&mut self, task_id: u64) {
        if let Ok(i) = self.find(task_id) {
            let mut c = self.class.peek(i);
            c.flows = c.flows.saturating_sub(1);
            self.class.control_write(i, c);
        }
    }

    /// The task is over (or its state timed out): drop its counters.
    /// Returns true if that changes another task's class: the task after
    /// it had it as its class's leader, or joins the class before it (a
    /// heavy task's). Dropping a light task that leads its own class
    /// changes no other class.
    pub fn forget(&mut self, task_id: u64) -> bool {
        let Ok(i) = self.find(task_id) else {
            return false;
        };
        let next = (i + 1 < self.class.len()).then(|| self.class.peek(i + 1).task_id);
        let before = next.and_then(|n| self.leader(n));
        self.class.control_remove(i);
        self.booked.control_remove(i);
        next.is_some() && next.and_then(|n| self.leader(n)) != before
    }

    /// Account `bytes` reserved by the task; returns true when this makes the
    /// task heavy.
    #[inline]
    pub fn reserve(&mut self, task_id: u64, bytes: f64) -> bool {
        let i = self.install(task_id);
        let mut b = self.booked.peek(i);
        b.bytes_reserved += bytes;
        let crossed = !b.heavy && b.bytes_reserved > self.threshold;
        b.heavy |= crossed;
        self.booked.control_write(i, b);
        if crossed {
            let mut c = self.class.peek(i);
            c.heavy = true;
            self.class.control_write(i, c);
        }
        crossed
    }

    #[inline]
    pub fn counters(&self, task_id: u64) -> Option<TaskCounters> {
        self.find(task_id).ok().map(|i| self.counters_at(i))
    }

    /// Tasks at this port in priority order.
    pub fn tasks(&self) -> Tasks<'_> {
        Tasks { lm: self, next: 0 }
    }

    /// Tasks at this port.
    #[inline]
    pub fn len(&self) -> usize {
        self.class.len()
    }

    pub fn is_empty(&self) -> bool {
        self.class.is_empty()
    }

    /// The class of every task, as (task_id, class index, leader id), in
    /// priority order. Tasks without flows still occupy their place: a task
    /// between stages keeps its position in the FIFO.
    pub fn classes(&self) -> impl Iterator<Item = (u64, usize, u64)> + '_ {
        let mut class = 0usize;
        let mut leader = 0u64;
        let mut prev_heavy = false;
        self.class.as_slice().iter().enumerate().map(move |(i, t)| {
            if i == 0 || !prev_heavy {
                if i > 0 {
                    class += 1;
                }
                leader = t.task_id;
            }
            prev_heavy = t.heavy;
            (t.task_id, class, leader)
        })
    }

    /// The id of the first task in `task_id`'s class: a priority key shared
    /// by every task of the class (lower = served first).
    #[inline]
    pub fn leader(&self, task_id: u64) -> Option<u64> {
        // `classes()` without its class index: the flow simulator asks this
        // for every flow key it computes.
        let mut leader = 0;
        let mut prev_heavy = false;
        for (i, t) in self.class.as_slice().iter().enumerate() {
            if i == 0 || !prev_heavy {
                leader = t.task_id;
            }
            if t.task_id == task_id {
                return Some(leader);
            }
            prev_heavy = t.heavy;
        }
        None
    }

    /// The time in ns until the earliest task not yet heavy crosses the
    /// threshold, if each task's bytes keep growing at `rate_of(task_id)`
    /// bits/s. Used by a fluid driver to schedule the re-classification.
    pub fn next_crossing_ns(&self, mut rate_of: impl FnMut(u64) -> f64) -> Option<f64> {
        let mut best: Option<f64> = None;
        let rows = self.class.as_slice().iter().zip(self.booked.as_slice());
        for (c, b) in rows {
            if c.heavy {
                continue;
            }
            let r = rate_of(c.task_id);
            if r > 0.0 {
                let dt = ((self.threshold - b.bytes_reserved).max(0.0) * 8e9) / r;
                best = Some(best.map_or(dt, |b: f64| b.min(dt)));
            }
        }
        best
    }
}

/// The counters of a port's tasks in priority order ([`FifoLm::tasks`]),
/// read row by row from the two task tables.
#[derive(Clone)]
pub struct Tasks<'a> {
    lm: &'a FifoLm,
    next: usize,
}

impl Tasks<'_> {
    /// No task left to visit.
    pub fn is_empty(&self) -> bool {
        self.next >= self.lm.len()
    }
}

impl Iterator for Tasks<'_> {
    type Item = TaskCounters;

    fn next(&mut self) -> Option<TaskCounters> {
        let i = self.next;
        (i < self.lm.len()).then(|| {
            self.next += 1;
            self.lm.counters_at(i)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.lm.len().saturating_sub(self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Tasks<'_> {}

impl std::fmt::Debug for Tasks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.clone()).finish()
    }
}

/// The rows `start..end` of the class that row `i` belongs to: a class
/// starts at row 0 and after every light row (§4.3.1: a heavy task shares
/// its class with the next one).
pub(super) fn class_bounds(rows: &[ClassRow], i: usize) -> (usize, usize) {
    let mut start = i;
    while start > 0 && rows[start - 1].heavy {
        start -= 1;
    }
    let mut end = i + 1;
    while end < rows.len() && rows[end - 1].heavy {
        end += 1;
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_lm_merges_heavy_with_next() {
        let mut c = FifoLm::new(100.0);
        for id in [3, 1, 2, 4] {
            c.add_flow(id);
        }
        let leaders: Vec<u64> = c.classes().map(|x| x.2).collect();
        assert_eq!(leaders, vec![1, 2, 3, 4]);
        assert!(!c.reserve(1, 100.0));
        assert!(c.reserve(1, 1.0));
        assert_eq!(c.leader(2), Some(1));
        assert_eq!(c.leader(3), Some(3));
        c.reserve(2, 500.0);
        assert_eq!(c.leader(3), Some(1));
        assert_eq!(c.leader(4), Some(4));
        c.forget(1);
        assert_eq!(c.leader(3), Some(2));
        assert_eq!(
            c.next_crossing_ns(|id| if id == 3 { 8e9 } else { 0.0 }),
            Some(100.0)
        );
    }

    /// `forget` reports whether another task's class changed, which is when
    /// the flow simulator must recompute the port.
    #[test]
    fn forget_reports_class_changes() {
        let mut c = FifoLm::new(100.0);
        for id in 1..=6 {
            c.add_flow(id);
        }
        // A light task leading its own class: the next one led its own.
        assert!(!c.forget(1));
        assert_eq!(c.leader(2), Some(2));
        c.reserve(2, 200.0);
        assert_eq!(c.leader(3), Some(2));
        // 3 was light but in heavy 2's class: 4 now joins that class.
        assert!(c.forget(3));
        assert_eq!(c.leader(4), Some(2));
        // 2 was heavy and led {2, 4}: 4 leads its own class now.
        assert!(c.forget(2));
        assert_eq!(c.leader(4), Some(4));
        // The last task, and a task not at the port: nothing follows.
        assert!(!c.forget(6));
        assert!(!c.forget(42));
        // A heavy task inside a heavy task's class: the next one stays.
        c.reserve(4, 200.0);
        c.reserve(5, 200.0);
        c.add_flow(7);
        assert_eq!(c.leader(7), Some(4));
        assert!(!c.forget(5));
        assert_eq!(c.leader(7), Some(4));
    }

    /// The bounds the port's scan uses agree with `classes()` for every row
    /// of every heavy pattern of five tasks.
    #[test]
    fn class_bounds_agree_with_classes() {
        for heavy in 0u32..32 {
            let mut c = FifoLm::new(10.0);
            for id in 1..=5u64 {
                c.add_flow(id);
                if heavy >> (id - 1) & 1 == 1 {
                    c.reserve(id, 11.0);
                }
            }
            let classes: Vec<usize> = c.classes().map(|x| x.1).collect();
            for i in 0..5 {
                let (s, e) = class_bounds(c.class.as_slice(), i);
                let want: Vec<usize> = (0..5).filter(|&j| classes[j] == classes[i]).collect();
                assert_eq!(
                    (s..e).collect::<Vec<_>>(),
                    want,
                    "heavy {heavy:05b} row {i}"
                );
            }
        }
    }
}
