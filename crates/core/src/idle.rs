//! Horus idleNodes (§3.3, Fig. 4, Alg. 1): the IDs of idle nodes kept
//! contiguously at the top of `idle_list`, with `idle_index` giving each idle
//! node's slot and `p` pointing at the first non-idle slot.
//!
//! Stage order (one access per array per pass): `lock`, `member`, `p`,
//! `idle_list`, `idle_index`.
//!
//! * add: `member` test-and-set, `p` read-and-increment, `idle_list[p] = n`,
//!   `idle_index[n] = p`. It needs no lock: interleaved with a pending remove it
//!   fills the slot the remove vacated at the top, which the remove's second
//!   pass does not touch.
//! * remove (two passes under the lock): pass 1 takes the lock, clears `member`,
//!   decrements `p` and reads `last_node = idle_list[p]` and
//!   `removed_index = idle_index[n]`; pass 2 writes `idle_list[removed_index] =
//!   last_node`, `idle_index[last_node] = removed_index` and releases the lock.
//!   A remove that finds the lock held is dropped; the leaf re-sends it (§A.3).
//! * retrieve (leaf): reads the lock and, if it is free, decrements `p` and
//!   returns `idle_list[p]`. While a remove is pending the slot below `p` may
//!   be the one being vacated, so a retrieve that sees the lock held reports
//!   "no idle node" and the task takes the busy path instead.
//! * peek (spine): reads `p` and `idle_list[p-1]` without removing it; a
//!   spine removes a rack only on that leaf's idleRemove (§3.3).
//!
//! `member` is our addition. The paper's re-send rule (§A.3) makes duplicate
//! idleAdd/idleRemove messages routine while the original is still in flight;
//! an unguarded second add would store a node twice and an unguarded remove of
//! an absent node would corrupt `p`. A one-bit test-and-set per node in the
//! first stage turns both into counted no-ops. Only a spine needs it: a leaf
//! adds a worker only on that worker's idle reply, which cannot repeat, and a
//! retrieve could not clear the bit, whose stage comes before `idle_list`.

use crate::dataplane::NodeId;
use crate::switch::{Layout, Pass, Pipeline, RegisterArray, RegisterDump};

/// Result of the first pass of a remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoveFirst {
    /// Lock taken, node found: resubmit with this metadata.
    Resubmit {
        last_node: NodeId,
        removed_index: u32,
    },
    /// Lock taken but the node was not idle: resubmit only to release the lock.
    Absent,
    /// The node sat in the top slot and is gone with the decrement of `p`;
    /// resubmit only to release the lock. Moving `last_node` here in a second
    /// pass would be wrong: an add between the passes may have reused the slot.
    RemovedTop,
    /// Lock held by another remove: drop.
    LockHeld,
}

/// Result of a leaf's retrieve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retrieved {
    /// `node` taken off the list; `remaining` idle nodes are left.
    Node { node: NodeId, remaining: u32 },
    /// No idle node.
    Empty,
    /// A remove is between its passes; the task must take the busy path.
    Locked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    /// Added; `previous` idle nodes were listed before (0: the list went
    /// from empty to non-empty).
    Added { previous: u32 },
    /// The node was already idle (spine only).
    Duplicate,
    /// The list is full: only possible at a leaf, whose stale duplicate
    /// entries are discarded lazily by the leaf (see `horus/leaf.rs`).
    Full,
}

#[derive(Clone, Debug)]
pub struct IdleNodes {
    lock: RegisterArray<bool>,
    member: Option<RegisterArray<bool>>,
    p: RegisterArray<u32>,
    idle_list: RegisterArray<NodeId>,
    idle_index: RegisterArray<u32>,
}

impl IdleNodes {
    /// `dedup` adds the membership bit (spines).
    ///
    /// Stages of `layout`: `lock`; `member` (its update depends on the lock);
    /// `p`; `idle_list` and `idle_index` together (both indexed by `p` or the
    /// packet, neither by the other's value).
    pub fn new(layout: &mut Layout, capacity: usize, dedup: bool) -> Self {
        Self::place(layout, capacity, dedup, None)
    }

    /// As [`IdleNodes::new`] without dedup, for a list that one pass needs
    /// before and another after some later stage: its arrays are outside the
    /// stage order (still one access per pass), `because` says why.
    pub fn new_unordered(layout: &mut Layout, capacity: usize, because: &'static str) -> Self {
        Self::place(layout, capacity, false, Some(because))
    }

    fn place(
        layout: &mut Layout,
        capacity: usize,
        dedup: bool,
        unordered: Option<&'static str>,
    ) -> Self {
        fn array<T: crate::switch::RegisterCell>(
            layout: &mut Layout,
            unordered: Option<&'static str>,
            stage: crate::switch::Stage,
            name: &'static str,
            len: usize,
            init: T,
        ) -> RegisterArray<T> {
            match unordered {
                None => layout.array(stage, name, len, init),
                Some(why) => layout.unordered_array(stage, name, len, init, why),
            }
        }
        let lock = layout.stage();
        let lock = array(layout, unordered, lock, "idle.lock", 1, false);
        let member = dedup.then(|| {
            let stage = layout.stage();
            array(layout, unordered, stage, "idle.member", capacity, false)
        });
        let p = layout.stage();
        let p = array(layout, unordered, p, "idle.p", 1, 0);
        let list = layout.stage();
        IdleNodes {
            lock,
            member,
            p,
            idle_list: array(layout, unordered, list, "idle.list", capacity, 0),
            idle_index: array(layout, unordered, list, "idle.index", capacity, 0),
        }
    }

    pub fn capacity(&self) -> usize {
        self.idle_list.len()
    }

    pub fn control_resize(&mut self, capacity: usize) {
        if let Some(m) = &mut self.member {
            m.control_resize(capacity, false);
        }
        self.idle_list.control_resize(capacity, 0);
        self.idle_index.control_resize(capacity, 0);
    }

    /// Alg. 1 ADD.
    #[inline]
    pub fn add(&mut self, pass: &Pass, node: NodeId) -> AddOutcome {
        if let Some(member) = &mut self.member {
            let was = member.update(pass, node as usize, |m| std::mem::replace(m, true));
            if was {
                return AddOutcome::Duplicate;
            }
        }
        let capacity = self.idle_list.len() as u32;
        let slot = self.p.update(pass, 0, |p| {
            let old = *p;
            if old < capacity {
                *p += 1;
            }
            old
        });
        if slot >= capacity {
            return AddOutcome::Full;
        }
        self.idle_list.write(pass, slot as usize, node);
        self.idle_index.write(pass, node as usize, slot);
        AddOutcome::Added { previous: slot }
    }

    /// Alg. 1 SCHEDULETASKIDLE at a leaf: take the top idle node out.
    #[inline]
    pub fn retrieve(&mut self, pass: &Pass) -> Retrieved {
        if self.lock.read(pass, 0) {
            return Retrieved::Locked;
        }
        let top = self.p.update(pass, 0, |p| {
            if *p == 0 {
                None
            } else {
                *p -= 1;
                Some(*p)
            }
        });
        match top {
            None => Retrieved::Empty,
            Some(top) => Retrieved::Node {
                node: self.idle_list.read(pass, top as usize),
                remaining: top,
            },
        }
    }

    /// Alg. 1 SCHEDULETASKIDLE at a spine: read the top idle node, keep it.
    #[inline]
    pub fn peek(&mut self, pass: &Pass) -> Option<NodeId> {
        self.peek_slot(pass, |p| p - 1)
    }

    /// A spine's read of the idle slot `choose(p)` (given `p > 0`), kept in
    /// the list. Between a remove's two passes the slot being vacated still
    /// holds the removed node and `p` already excludes the moved one, so a
    /// peek that sees the lock held reports no idle node, as a leaf's
    /// retrieve does.
    #[inline]
    pub fn peek_slot(&mut self, pass: &Pass, choose: impl FnOnce(u32) -> u32) -> Option<NodeId> {
        if self.lock.read(pass, 0) {
            return None;
        }
        let p = self.p.read(pass, 0);
        if p == 0 {
            return None;
        }
        let slot = choose(p);
        debug_assert!(slot < p, "idle slot {slot} outside 0..{p}");
        Some(self.idle_list.read(pass, slot as usize))
    }

    /// Number of idle nodes, read by the data plane.
    pub fn count(&mut self, pass: &Pass) -> u32 {
        self.p.read(pass, 0)
    }

    /// Alg. 1 REMOVE, first pass.
    pub fn remove_first(&mut self, pass: &Pass, node: NodeId) -> RemoveFirst {
        let held = self.lock.update(pass, 0, |l| std::mem::replace(l, true));
        if held {
            return RemoveFirst::LockHeld;
        }
        if let Some(member) = &mut self.member {
            let was = member.update(pass, node as usize, |m| std::mem::replace(m, false));
            if !was {
                return RemoveFirst::Absent;
            }
        }
        let new_p = self.p.update(pass, 0, |p| {
            debug_assert!(*p > 0, "remove of a member from an empty idle list");
            *p = p.saturating_sub(1);
            *p
        });
        let last_node = self.idle_list.read(pass, new_p as usize);
        let removed_index = self.idle_index.read(pass, node as usize);
        if removed_index == new_p {
            return RemoveFirst::RemovedTop;
        }
        RemoveFirst::Resubmit {
            last_node,
            removed_index,
        }
    }

    /// Alg. 1 REMOVE, resubmit path. Returns whether the list is now empty.
    pub fn remove_second(&mut self, pass: &Pass, last_node: NodeId, removed_index: u32) {
        self.lock.write(pass, 0, false);
        self.idle_list
            .write(pass, removed_index as usize, last_node);
        self.idle_index
            .write(pass, last_node as usize, removed_index);
    }

    /// Both passes of Alg. 1's remove back to back, so nothing interleaves:
    /// the switch CPU's remove of a failed node, or horus-sim's atomic one.
    /// The lock must be free. Returns what the first pass found.
    pub fn remove_now(&mut self, pipeline: &mut Pipeline, node: NodeId) -> RemoveFirst {
        let pass = pipeline.begin();
        let first = self.remove_first(&pass, node);
        let pass = pipeline.resubmit();
        match first {
            RemoveFirst::Resubmit {
                last_node,
                removed_index,
            } => self.remove_second(&pass, last_node, removed_index),
            RemoveFirst::Absent | RemoveFirst::RemovedTop => self.release(&pass),
            RemoveFirst::LockHeld => unreachable!("remove_now with the idleNodes lock held"),
        }
        first
    }

    /// Second pass of a remove that found nothing to remove.
    pub fn release(&mut self, pass: &Pass) {
        self.lock.write(pass, 0, false);
    }

    // ---- control-plane views (no data-plane access) ----

    pub fn len(&self) -> u32 {
        self.p.peek(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_locked(&self) -> bool {
        self.lock.peek(0)
    }

    /// The idle nodes in list order.
    pub fn idle(&self) -> &[NodeId] {
        &self.idle_list.as_slice()[..self.len() as usize]
    }

    /// Whether `node` is in the idle region (control-plane lookup).
    pub fn contains(&self, node: NodeId) -> bool {
        if node as usize >= self.idle_index.len() {
            return false;
        }
        let i = self.idle_index.peek(node as usize);
        i < self.len() && self.idle_list.peek(i as usize) == node
    }

    /// Every array's cells, for installing and checking another
    /// implementation of the list (crates/xdp). The member bit is a spine's.
    pub fn registers(&self) -> Vec<RegisterDump> {
        let mut dumps = vec![
            RegisterDump::of(&self.lock, u64::from),
            RegisterDump::of(&self.p, u64::from),
            RegisterDump::of(&self.idle_list, u64::from),
            RegisterDump::of(&self.idle_index, u64::from),
        ];
        if let Some(member) = &self.member {
            dumps.push(RegisterDump::of(member, u64::from));
        }
        dumps
    }

    /// Checks the paper's invariant: idle nodes are contiguous at the top of
    /// the list, each appears once, and `idle_index` points back at them.
    /// Valid whenever no remove is between its two passes.
    pub fn check_invariant(&self) -> Result<(), String> {
        let p = self.len() as usize;
        if p > self.capacity() {
            return Err(format!("p={p} exceeds capacity {}", self.capacity()));
        }
        let mut seen = vec![false; self.capacity()];
        for (i, &n) in self.idle().iter().enumerate() {
            let n = n as usize;
            if n >= self.capacity() {
                return Err(format!("slot {i} holds out-of-range node {n}"));
            }
            if seen[n] {
                return Err(format!("node {n} appears twice in the idle region"));
            }
            seen[n] = true;
            let idx = self.idle_index.peek(n) as usize;
            if idx != i {
                return Err(format!("idle_index[{n}]={idx} but node sits in slot {i}"));
            }
        }
        if let Some(member) = &self.member {
            for (n, &m) in member.as_slice().iter().enumerate() {
                if m != seen[n] {
                    return Err(format!("member[{n}]={m} disagrees with idle region"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::Pipeline;

    #[test]
    fn paper_figure_4_remove_moves_last_into_hole() {
        let mut pipe = Pipeline::new();
        let mut idle = IdleNodes::new(&mut Layout::new(), 8, true);
        for n in [4, 3, 6, 7] {
            idle.add(&pipe.begin(), n);
        }
        assert_eq!(idle.idle(), &[4, 3, 6, 7]);
        let RemoveFirst::Resubmit {
            last_node,
            removed_index,
        } = idle.remove_first(&pipe.begin(), 3)
        else {
            panic!("remove of an idle node must resubmit")
        };
        assert_eq!((last_node, removed_index), (7, 1));
        idle.remove_second(&pipe.resubmit(), last_node, removed_index);
        assert_eq!(idle.idle(), &[4, 7, 6]);
        idle.check_invariant().unwrap();
    }

    #[test]
    fn second_remove_while_first_pending_is_dropped() {
        let mut pipe = Pipeline::new();
        let mut idle = IdleNodes::new(&mut Layout::new(), 8, true);
        for n in 0..4 {
            idle.add(&pipe.begin(), n);
        }
        let first = idle.remove_first(&pipe.begin(), 1);
        assert!(matches!(first, RemoveFirst::Resubmit { .. }));
        assert_eq!(idle.remove_first(&pipe.begin(), 2), RemoveFirst::LockHeld);
        assert_eq!(
            idle.retrieve(&pipe.begin()),
            Retrieved::Locked,
            "retrieve must not race a pending remove"
        );
    }

    /// Between a remove's passes the vacated slot still names the removed
    /// node: a spine peeking then would send a task to a rack that just
    /// said it has no idle worker.
    #[test]
    fn spine_peek_while_remove_pending_sees_no_idle_node() {
        let mut pipe = Pipeline::new();
        let mut idle = IdleNodes::new(&mut Layout::new(), 8, true);
        for n in [5, 6] {
            idle.add(&pipe.begin(), n);
        }
        // Removing 5 (slot 0) moves 6 into slot 0 on the second pass; in
        // between p = 1 and idle_list[0] is still 5.
        let first = idle.remove_first(&pipe.begin(), 5);
        assert!(matches!(first, RemoveFirst::Resubmit { .. }));
        assert_eq!(idle.peek(&pipe.begin()), None);
        assert_eq!(idle.peek_slot(&pipe.begin(), |_| 0), None);
        let RemoveFirst::Resubmit {
            last_node,
            removed_index,
        } = first
        else {
            unreachable!()
        };
        idle.remove_second(&pipe.resubmit(), last_node, removed_index);
        assert_eq!(idle.peek(&pipe.begin()), Some(6));
    }

    /// Removing the top node while an add slips in between the passes: the add
    /// reuses the vacated top slot, and the second pass must not overwrite it.
    #[test]
    fn remove_of_top_node_interleaved_with_add_keeps_the_added_node() {
        let mut pipe = Pipeline::new();
        let mut idle = IdleNodes::new(&mut Layout::new(), 8, true);
        for n in [1, 2, 3] {
            idle.add(&pipe.begin(), n);
        }
        assert_eq!(idle.remove_first(&pipe.begin(), 3), RemoveFirst::RemovedTop);
        idle.add(&pipe.begin(), 5);
        idle.release(&pipe.resubmit());
        assert_eq!(idle.idle(), &[1, 2, 5]);
        idle.check_invariant().unwrap();
    }

    #[test]
    fn duplicate_add_and_absent_remove_are_no_ops_on_spine() {
        let mut pipe = Pipeline::new();
        let mut idle = IdleNodes::new(&mut Layout::new(), 4, true);
        assert_eq!(
            idle.add(&pipe.begin(), 2),
            AddOutcome::Added { previous: 0 }
        );
        assert_eq!(idle.add(&pipe.begin(), 2), AddOutcome::Duplicate);
        assert_eq!(idle.remove_first(&pipe.begin(), 1), RemoveFirst::Absent);
        idle.release(&pipe.resubmit());
        assert_eq!(idle.idle(), &[2]);
        idle.check_invariant().unwrap();
    }
}
