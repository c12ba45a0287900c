//! Horus power-of-2 over busy nodes with lazy state update (§3.3, §A.1, Alg. 2).
//!
//! Each node's actual queue length is `load + drift`: `load` is the last value
//! a reply or loadUpdate reported, `drift` counts what this scheduler sent it
//! since. Two identical copies of each list live in different stages so one
//! pass can read two random samples. A task is resubmitted only when the drift
//! of the lighter-looking sample exceeds the load difference (Eq. 1 with `d_n`
//! dropped): otherwise the decision is provably right and the drift is simply
//! incremented.
//!
//! Nodes are addressed through slots `0..count` so that the control plane can
//! remove a failed node by moving the last slot into its place while sampling
//! stays uniform over live nodes.
//!
//! Stages (docs/switch-model.md): `slot_of` and `count`; `factor.pre`;
//! `node1`, `load1`, `node2`, `load2`; `factor`; `drift1`; `drift2`. The
//! first pass needs the factor of the sample the loads selected, so `factor`
//! follows the loads; the resubmit pass adds the factor into the load, so it
//! needs it before them: the control plane keeps the same per-slot factors
//! in a second array, `factor.pre`, as it keeps two copies of the lists.
//! Each load copy sits beside its node copy (the slot -> node map, written
//! only by the control plane), so a load cell is a 32-bit load and a 16-bit
//! epoch, one paired register.
//!
//! The resubmit pass folds the selected node's drift into its load (the §A.1
//! text: "the loadList is updated with the new values, and the driftList
//! reset") using atomic adds and subtracts of the carried drift rather than
//! plain writes, so a first pass that touched the same node between the two
//! passes is not overwritten (Alg. 2 increments for the same reason). A reply
//! between the passes is different: it replaced load and drift with a fresh
//! report that already counts the carried drift, so folding it in would count
//! those tasks twice. Each load entry therefore carries an epoch that every
//! report bumps; the resubmit pass folds only if the epoch it read in the
//! first pass is still there, and otherwise counts just this task as drift.

use crate::dataplane::{NodeId, Pow2Samples, Resubmit, TaskMeta};
use crate::rng::Rng;
use crate::switch::{Layout, Pass, RegisterArray, RegisterCell, RegisterDump};

const NO_SLOT: u32 = u32::MAX;

/// Outcome of a first pass over busy nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pow2First {
    Chosen(NodeId),
    Resubmit(Resubmit),
    /// No live node.
    Empty,
}

/// One cell of a load list: the slot's last reported load and the number of
/// reports so far (wrapping; see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LoadCell {
    load: u32,
    epoch: u16,
}

impl RegisterCell for LoadCell {
    const BITS: u32 = 32 + 16;
}

#[derive(Clone, Debug)]
pub struct LazyPow2 {
    slot_of: RegisterArray<u32>,
    count: RegisterArray<u32>,
    /// `factor` again, for the resubmit pass, which needs it before the loads.
    factor_pre: RegisterArray<u32>,
    /// Slot -> node, one copy beside each load list.
    node1: RegisterArray<NodeId>,
    load1: RegisterArray<LoadCell>,
    node2: RegisterArray<NodeId>,
    load2: RegisterArray<LoadCell>,
    /// Per-slot increment: 1 at a leaf (loads are queue lengths), the rack's
    /// additive factor 1/w in 16.16 at a spine (§A.2, §A.6).
    factor: RegisterArray<u32>,
    drift1: RegisterArray<u32>,
    drift2: RegisterArray<u32>,
}

impl LazyPow2 {
    /// `nodes` live nodes numbered `0..nodes`, each with increment `factor(n)`.
    /// Its arrays take six consecutive stages of `layout` (module docs).
    pub fn new(layout: &mut Layout, nodes: u32, factor: impl Fn(NodeId) -> u32) -> Self {
        let n = nodes as usize;
        let (first, pre, loads) = (layout.stage(), layout.stage(), layout.stage());
        let (after, d1, d2) = (layout.stage(), layout.stage(), layout.stage());
        let mut s = LazyPow2 {
            slot_of: layout.array(first, "pow2.slot_of", n, NO_SLOT),
            count: layout.array(first, "pow2.count", 1, 0),
            factor_pre: layout.array(pre, "pow2.factor.pre", n, 0),
            node1: layout.array(loads, "pow2.node1", n, 0),
            load1: layout.array(loads, "pow2.load1", n, LoadCell::default()),
            node2: layout.array(loads, "pow2.node2", n, 0),
            load2: layout.array(loads, "pow2.load2", n, LoadCell::default()),
            factor: layout.array(after, "pow2.factor", n, 0),
            drift1: layout.array(d1, "pow2.drift1", n, 0),
            drift2: layout.array(d2, "pow2.drift2", n, 0),
        };
        for node in 0..nodes {
            s.control_add(node, factor(node));
        }
        s
    }

    /// Draws two distinct slots (one if only one node is live).
    #[inline]
    fn samples(rng: &mut Rng, count: u32) -> (u32, u32) {
        let a = rng.below(count);
        if count == 1 {
            return (a, a);
        }
        // a + 1 + r < 2 * count, so one subtraction is the `% count` of
        // the original draw without a division (it was 13 % of a busy
        // decision's sampling).
        let b = a + 1 + rng.below(count - 1);
        let b = if b >= count { b - count } else { b };
        (a, b)
    }

    /// Alg. 2 SCHEDULETASKBUSY, first path.
    #[inline(always)]
    pub fn schedule(&mut self, pass: &Pass, rng: &mut Rng, task: TaskMeta) -> Pow2First {
        let count = self.count.read(pass, 0);
        if count == 0 {
            return Pow2First::Empty;
        }
        let (i1, i2) = Self::samples(rng, count);
        let n1 = self.node1.read(pass, i1 as usize);
        let c1 = self.load1.read(pass, i1 as usize);
        let n2 = self.node2.read(pass, i2 as usize);
        let c2 = self.load2.read(pass, i2 as usize);
        // CompareSamples: ties go to the first sample.
        let (sel, n_sel, c_sel, other, n_other, c_other) = if c1.load <= c2.load {
            (i1, n1, c1, i2, n2, c2)
        } else {
            (i2, n2, c2, i1, n1, c1)
        };
        let diff = c_other.load - c_sel.load;
        let inc = self.factor.read(pass, sel as usize);
        // With one live node both samples are that node and a second pass
        // could only choose it again (the P4 skips the resubmission when the
        // samples are equal).
        let only_choice = sel == other;
        // CheckDrift: one atomic read-modify-write on the first drift copy.
        let drift_sel = self.drift1.update(pass, sel as usize, |d| {
            if only_choice || *d <= diff {
                *d = d.saturating_add(inc);
                None
            } else {
                Some(*d)
            }
        });
        match drift_sel {
            None => {
                self.drift2
                    .update(pass, sel as usize, |d| *d = d.saturating_add(inc));
                Pow2First::Chosen(n_sel)
            }
            Some(d_sel) => {
                let d_other = self.drift2.read(pass, other as usize);
                Pow2First::Resubmit(Resubmit::Pow2 {
                    task,
                    samples: Pow2Samples {
                        first: n_sel,
                        first_load: c_sel.load,
                        first_drift: d_sel,
                        first_epoch: c_sel.epoch,
                        second: n_other,
                        second_load: c_other.load,
                        second_drift: d_other,
                        second_epoch: c_other.epoch,
                    },
                })
            }
        }
    }

    /// The node the resubmit path will choose: the lighter of the carried
    /// actual loads, ties to the first sample. Known before any stage, from
    /// the packet's metadata alone.
    #[inline]
    pub fn resubmit_choice(r: &Pow2Samples) -> NodeId {
        let q1 = r.first_load.saturating_add(r.first_drift);
        let q2 = r.second_load.saturating_add(r.second_drift);
        if q1 <= q2 {
            r.first
        } else {
            r.second
        }
    }

    /// Alg. 2 SCHEDULETASKBUSY, resubmit path: choose on actual loads and fold
    /// the chosen node's drift into its load, unless a report replaced both
    /// since the first pass (its epoch moved on): then only this task is
    /// added, as drift.
    #[inline]
    pub fn schedule_resubmitted(&mut self, pass: &Pass, r: &Pow2Samples) -> Option<NodeId> {
        let node = Self::resubmit_choice(r);
        let (carried, epoch) = if node == r.first {
            (r.first_drift, r.first_epoch)
        } else {
            (r.second_drift, r.second_epoch)
        };
        let slot = self.slot_of.read(pass, node as usize);
        if slot == NO_SLOT {
            // The node was removed by the control plane between the passes.
            return None;
        }
        let slot = slot as usize;
        let inc = self.factor_pre.read(pass, slot);
        let add = carried.saturating_add(inc);
        // The copies sit in one stage, so neither sees the other's outcome:
        // each tests its own epoch, equal because they are written together.
        let fold_epoch = |c: &mut LoadCell| {
            let same = c.epoch == epoch;
            if same {
                c.load = c.load.saturating_add(add);
            }
            same
        };
        let fold = self.load1.update(pass, slot, fold_epoch);
        self.load2.update(pass, slot, fold_epoch);
        let drift = |d: &mut u32| {
            *d = if fold {
                d.saturating_sub(carried)
            } else {
                d.saturating_add(inc)
            }
        };
        self.drift1.update(pass, slot, drift);
        self.drift2.update(pass, slot, drift);
        Some(node)
    }

    /// Alg. 2 UPDATE: a reply or loadUpdate reports `node`'s load.
    /// Returns false if the node is unknown.
    #[inline]
    pub fn update(&mut self, pass: &Pass, node: NodeId, load: u32) -> bool {
        if node as usize >= self.slot_of.len() {
            return false;
        }
        let slot = self.slot_of.read(pass, node as usize);
        if slot == NO_SLOT {
            return false;
        }
        let slot = slot as usize;
        let report = |c: &mut LoadCell| {
            c.load = load;
            c.epoch = c.epoch.wrapping_add(1);
        };
        self.load1.update(pass, slot, report);
        self.load2.update(pass, slot, report);
        self.drift1.write(pass, slot, 0);
        self.drift2.write(pass, slot, 0);
        true
    }

    /// Account for a task sent to `node` by another path (the idle list): the
    /// node's drift grows by its increment. Uses `slot_of`, `factor`, `drift1`,
    /// `drift2` only, so it composes with idleNodes in the same pass.
    /// Returns whether `node` is live.
    #[inline]
    pub fn add_drift(&mut self, pass: &Pass, node: NodeId) -> bool {
        let slot = self.slot_of.read(pass, node as usize);
        if slot == NO_SLOT {
            return false;
        }
        let slot = slot as usize;
        let inc = self.factor.read(pass, slot);
        self.drift1
            .update(pass, slot, |d| *d = d.saturating_add(inc));
        self.drift2
            .update(pass, slot, |d| *d = d.saturating_add(inc));
        true
    }

    // ---- control plane ----

    /// Every array's cells, for installing and checking another
    /// implementation (crates/xdp). A load cell widens to
    /// `load | epoch << 32`, the layout of crates/xdp's `struct load_cell`.
    pub fn registers(&self) -> Vec<RegisterDump> {
        let cell = |c: LoadCell| u64::from(c.load) | u64::from(c.epoch) << 32;
        vec![
            RegisterDump::of(&self.slot_of, u64::from),
            RegisterDump::of(&self.count, u64::from),
            RegisterDump::of(&self.factor_pre, u64::from),
            RegisterDump::of(&self.node1, u64::from),
            RegisterDump::of(&self.load1, cell),
            RegisterDump::of(&self.node2, u64::from),
            RegisterDump::of(&self.load2, cell),
            RegisterDump::of(&self.factor, u64::from),
            RegisterDump::of(&self.drift1, u64::from),
            RegisterDump::of(&self.drift2, u64::from),
        ]
    }

    /// Make `node` live with increment `factor`.
    pub fn control_add(&mut self, node: NodeId, factor: u32) {
        let n = node as usize;
        if n >= self.slot_of.len() {
            self.slot_of.control_resize(n + 1, NO_SLOT);
        }
        if self.slot_of.peek(n) != NO_SLOT {
            let slot = self.slot_of.peek(n) as usize;
            self.factor.control_write(slot, factor);
            self.factor_pre.control_write(slot, factor);
            return;
        }
        let slot = self.count.peek(0) as usize;
        if slot >= self.load1.len() {
            let len = slot + 1;
            self.node1.control_resize(len, 0);
            self.load1.control_resize(len, LoadCell::default());
            self.node2.control_resize(len, 0);
            self.load2.control_resize(len, LoadCell::default());
            self.factor.control_resize(len, 0);
            self.factor_pre.control_resize(len, 0);
            self.drift1.control_resize(len, 0);
            self.drift2.control_resize(len, 0);
        }
        self.slot_of.control_write(n, slot as u32);
        self.node1.control_write(slot, node);
        self.load1.control_write(slot, LoadCell::default());
        self.node2.control_write(slot, node);
        self.load2.control_write(slot, LoadCell::default());
        self.factor.control_write(slot, factor);
        self.factor_pre.control_write(slot, factor);
        self.drift1.control_write(slot, 0);
        self.drift2.control_write(slot, 0);
        self.count.control_write(0, slot as u32 + 1);
    }

    /// Remove `node` from sampling by moving the last slot into its place.
    pub fn control_remove(&mut self, node: NodeId) {
        let n = node as usize;
        if n >= self.slot_of.len() || self.slot_of.peek(n) == NO_SLOT {
            return;
        }
        let slot = self.slot_of.peek(n) as usize;
        let last = self.count.peek(0) as usize - 1;
        if slot != last {
            let moved = self.node1.peek(last);
            self.node1.control_write(slot, moved);
            self.node2.control_write(slot, self.node2.peek(last));
            self.load1.control_write(slot, self.load1.peek(last));
            self.load2.control_write(slot, self.load2.peek(last));
            self.factor.control_write(slot, self.factor.peek(last));
            self.factor_pre
                .control_write(slot, self.factor_pre.peek(last));
            self.drift1.control_write(slot, self.drift1.peek(last));
            self.drift2.control_write(slot, self.drift2.peek(last));
            self.slot_of.control_write(moved as usize, slot as u32);
        }
        self.slot_of.control_write(n, NO_SLOT);
        self.count.control_write(0, last as u32);
    }

    #[inline]
    pub fn contains(&self, node: NodeId) -> bool {
        (node as usize) < self.slot_of.len() && self.slot_of.peek(node as usize) != NO_SLOT
    }

    pub fn live(&self) -> u32 {
        self.count.peek(0)
    }

    /// (load, drift) of `node` as the scheduler sees it (control-plane view).
    pub fn view(&self, node: NodeId) -> Option<(u32, u32)> {
        if !self.contains(node) {
            return None;
        }
        let slot = self.slot_of.peek(node as usize) as usize;
        Some((self.load1.peek(slot).load, self.drift1.peek(slot)))
    }

    /// The increment installed for `node` (control-plane view).
    pub fn factor_of(&self, node: NodeId) -> Option<u32> {
        if !self.contains(node) {
            return None;
        }
        Some(self.factor.peek(self.slot_of.peek(node as usize) as usize))
    }

    /// Both copies of each list agree (they are always written together).
    pub fn check_copies(&self) -> Result<(), String> {
        for s in 0..self.live() as usize {
            if self.load1.peek(s) != self.load2.peek(s) {
                return Err(format!("load copies differ at slot {s}"));
            }
            if self.drift1.peek(s) != self.drift2.peek(s) {
                return Err(format!("drift copies differ at slot {s}"));
            }
            if self.node1.peek(s) != self.node2.peek(s)
                || self.factor.peek(s) != self.factor_pre.peek(s)
            {
                return Err(format!("node or factor copies differ at slot {s}"));
            }
            let node = self.node1.peek(s) as usize;
            if self.slot_of.peek(node) as usize != s {
                return Err(format!("slot_of[{node}] does not point at slot {s}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::Pipeline;

    /// The worked example of Horus §A.1 (Fig. 13): m=0 with l=3, d=3 and n=2
    /// with l=4, d=1. The first pass resubmits; the second picks n.
    #[test]
    fn appendix_a1_example() {
        let mut pipe = Pipeline::new();
        let mut p2 = LazyPow2::new(&mut Layout::new(), 3, |_| 1);
        p2.update(&pipe.begin(), 0, 3);
        p2.update(&pipe.begin(), 2, 4);
        for _ in 0..3 {
            p2.add_drift(&pipe.begin(), 0);
        }
        p2.add_drift(&pipe.begin(), 2);
        // Find an rng stream that samples {0, 2}.
        let mut seed = 0;
        let (first, mut pipe, resub) = loop {
            let mut rng = Rng::new(seed);
            let mut probe = p2.clone();
            let mut pp = pipe.clone();
            if let Pow2First::Resubmit(r) =
                probe.schedule(&pp.begin(), &mut rng, TaskMeta::default())
            {
                break (probe, pp, r);
            }
            seed += 1;
        };
        let Resubmit::Pow2 { samples, .. } = resub else {
            unreachable!()
        };
        assert_eq!(
            (samples.first, samples.first_load, samples.first_drift),
            (0, 3, 3)
        );
        assert_eq!(
            (samples.second, samples.second_load, samples.second_drift),
            (2, 4, 1)
        );
        let mut p2 = first;
        let chosen = p2.schedule_resubmitted(&pipe.resubmit(), &samples).unwrap();
        assert_eq!(chosen, 2, "actual loads are 6 vs 5: node 2 wins");
        assert_eq!(
            p2.view(2),
            Some((6, 0)),
            "drift folded into load, plus this task"
        );
        assert_eq!(p2.view(0), Some((3, 3)), "the other sample is untouched");
        p2.check_copies().unwrap();
    }

    #[test]
    fn control_remove_keeps_sampling_over_live_nodes() {
        let mut pipe = Pipeline::new();
        let mut p2 = LazyPow2::new(&mut Layout::new(), 4, |_| 1);
        p2.control_remove(1);
        p2.check_copies().unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            match p2.schedule(&pipe.begin(), &mut rng, TaskMeta::default()) {
                Pow2First::Chosen(n) => assert_ne!(n, 1),
                Pow2First::Resubmit(Resubmit::Pow2 { samples, .. }) => {
                    assert_ne!(samples.first, 1);
                    assert_ne!(samples.second, 1);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(
            !p2.update(&pipe.begin(), 1, 5),
            "updates from a removed node are refused"
        );
    }

    /// One live node: both samples are that node, so a resubmission could
    /// only choose it again. Before the fix every busy-path task with drift
    /// above 0 was resubmitted.
    #[test]
    fn one_live_node_never_resubmits() {
        let mut pipe = Pipeline::new();
        let mut p2 = LazyPow2::new(&mut Layout::new(), 1, |_| 1);
        let mut rng = Rng::new(9);
        for i in 0..100 {
            assert_eq!(
                p2.schedule(&pipe.begin(), &mut rng, TaskMeta::default()),
                Pow2First::Chosen(0),
                "task {i}"
            );
        }
        assert_eq!(p2.view(0), Some((0, 100)));
        assert_eq!(pipe.resubmissions, 0);
    }

    /// A reply between a task's two passes reports a load that already
    /// counts the carried drift. Before the fix the resubmit pass added the
    /// carried drift on top of the fresh report (load 5 + 3 + 1).
    #[test]
    fn reply_between_passes_does_not_count_drift_twice() {
        let mut pipe = Pipeline::new();
        let mut p2 = LazyPow2::new(&mut Layout::new(), 2, |_| 1);
        p2.update(&pipe.begin(), 0, 3);
        p2.update(&pipe.begin(), 1, 4);
        for _ in 0..3 {
            p2.add_drift(&pipe.begin(), 0);
            p2.add_drift(&pipe.begin(), 1);
        }
        let mut rng = Rng::new(1);
        // Node 0 looks lighter (3 < 4) but its drift 3 exceeds the difference.
        let Pow2First::Resubmit(Resubmit::Pow2 { samples, .. }) =
            p2.schedule(&pipe.begin(), &mut rng, TaskMeta::default())
        else {
            panic!("drift 3 > load difference 1 must resubmit")
        };
        assert_eq!((samples.first, samples.first_drift), (0, 3));
        let mut undisturbed = p2.clone();
        // Node 0 reports 5 queued between the passes.
        p2.update(&pipe.begin(), 0, 5);
        assert_eq!(p2.schedule_resubmitted(&pipe.resubmit(), &samples), Some(0));
        assert_eq!(p2.view(0), Some((5, 1)), "fresh report plus this task");
        // Without a report in between the drift is folded as Alg. 2 says.
        assert_eq!(
            undisturbed.schedule_resubmitted(&pipe.resubmit(), &samples),
            Some(0)
        );
        assert_eq!(undisturbed.view(0), Some((7, 0)));
        p2.check_copies().unwrap();
        undisturbed.check_copies().unwrap();
    }
}
