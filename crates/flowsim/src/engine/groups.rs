//! Rate groups: the flows frozen together at one level of one water-fill
//! share one rate and one virtual clock, so a rate change is O(1) per
//! group and the finish-time heap holds one entry per group.

use std::collections::BinaryHeap;

use super::fabric::Flow;
use super::fast_path::FastPath;
use super::keys::{float_then_id, group_task_inc};
use super::{Engine, NONE};
use crate::iheap::IndexedHeap;
use crate::policy::Policy;
use crate::topology::LinkId;

/// A rate group: flows frozen together at one level of one water-fill (so
/// at one rate), with a virtual clock: `served` bytes per member at time
/// `at`, growing at `rate`. A member is done when the clock reaches its
/// `target`, so the members stay in `target` order whatever the rate, a
/// rate change touches neither the members nor more than one heap entry
/// (the finish-time heap holds one entry per group: its first live
/// member's), and a flow's bytes left are `target − served` (its own `rem`,
/// `last` and `rate` are brought up to date only when read).
///
/// Invariants (checked by [`Engine::check_invariants`]): a flow with
/// `group == g` is at `members[gpos]` with `gpos >= head`; `live` counts
/// them; they appear in non-decreasing `target` order; the heap entry of a
/// group with live members is the finish time of `members[head]`, which is
/// live. Entries of flows that left stay in `members` and are skipped.
#[derive(Clone, Debug, Default)]
pub(super) struct Group {
    pub(super) members: Vec<u32>,
    pub(super) head: u32,
    pub(super) live: u32,
    pub(super) rate: f64,
    pub(super) served: f64,
    pub(super) at: u64,
    /// Component stamp (recomputation bookkeeping).
    pub(super) stamp: u32,
    /// When the group is the last with a positive rate at its bottleneck
    /// `L`, which every flow of its component crosses: the flows behind it
    /// (all at 0, blocked by `L`), as the water-fill's heap of complemented
    /// packed (key, id). When the group empties they are promoted in key
    /// order without recomputing the component ([`Engine::promote`]).
    pub(super) behind: Option<BinaryHeap<u128>>,
    /// A link that every member crosses and that the group saturates (its
    /// members froze when it ran out), or `NONE`: the departure fast path
    /// applies only to groups with one.
    pub(super) bottleneck: LinkId,
    pub(super) fast: Option<FastPath>,
    /// Baraat: live members per task id, so that a rate change of the group
    /// updates its ports' per-task rates in O(tasks), not O(members).
    pub(super) tasks: Vec<(u64, u32)>,
}

impl Group {
    /// The clock brought up to `now` at the old rate, then the new `rate`;
    /// returns the old one.
    pub(super) fn set_rate(&mut self, rate: f64, now: u64) -> f64 {
        self.served += self.rate * (now - self.at) as f64 / 8e9;
        self.at = now;
        std::mem::replace(&mut self.rate, rate)
    }
}

/// The rate groups and their finish times.
#[derive(Clone, Default)]
pub(super) struct RateGroups {
    pub(super) all: Vec<Group>,
    pub(super) free: Vec<u32>,
    /// Finish times of the rate groups' first members, re-keyed in place.
    pub(super) finish: IndexedHeap,
    /// The groups the last water-fill formed (and, while a recomputation
    /// dissolves the old groups, the groups its flows left).
    pub(super) fresh: Vec<u32>,
}

impl RateGroups {
    /// A free group's id (its vectors kept for reuse).
    fn alloc(&mut self) -> u32 {
        match self.free.pop() {
            Some(g) => g,
            None => {
                self.all.push(Group::default());
                (self.all.len() - 1) as u32
            }
        }
    }

    /// Free a group whose last member left.
    pub(super) fn dissolve(&mut self, g: u32) {
        let grp = &mut self.all[g as usize];
        grp.members.clear();
        grp.tasks.clear();
        grp.head = 0;
        self.finish.remove(g);
        self.free.push(g);
    }

    /// Move a group's head to its first live member and its heap entry to
    /// that member's finish time.
    pub(super) fn reschedule(&mut self, g: u32, flows: &[Flow], now: u64) {
        let grp = &mut self.all[g as usize];
        let mut h = grp.head as usize;
        loop {
            let f = &flows[grp.members[h] as usize];
            if f.group == g && f.gpos == h as u32 {
                break;
            }
            h += 1;
        }
        grp.head = h as u32;
        let t = group_finish(grp, &flows[grp.members[h] as usize]);
        if t == u64::MAX {
            self.finish.remove(g);
        } else {
            self.finish.set(g, t.max(now));
        }
    }
}

impl Engine {
    /// Bring a flow's remaining bytes up to `now` (Baraat's byte counters
    /// are charged per task and port: [`Classifiers::charge`](super::classifier::Classifiers::charge)).
    #[inline]
    pub(super) fn advance(&mut self, id: u32) {
        let rem = self.rem_now(id);
        let f = &mut self.fabric.flows[id as usize];
        f.last = self.events.now;
        f.rem = rem;
    }

    /// A flow's remaining bytes now, without bringing it up to date.
    #[inline]
    pub(super) fn rem_now(&self, id: u32) -> f64 {
        let f = &self.fabric.flows[id as usize];
        if f.last == self.events.now || f.group == NONE {
            // Up to date, or not moving (a flow with a positive rate is in
            // a group).
            return f.rem;
        }
        let g = &self.groups.all[f.group as usize];
        let served = g.served + g.rate * (self.events.now - g.at) as f64 / 8e9;
        (f.target - served).max(0.0)
    }

    /// A flow's current rate (bits/s): its group's, 0 without one.
    pub(super) fn rate_of(&self, fid: u32) -> f64 {
        match self.fabric.flows[fid as usize].group {
            NONE => self.fabric.flows[fid as usize].rate,
            g => self.groups.all[g as usize].rate,
        }
    }

    /// Turn the freeze sets of the last water-fill into rate groups (flows
    /// frozen at level 0 get none: they have no finish time).
    pub(super) fn form_groups(&mut self) {
        let sets = std::mem::take(&mut self.fill.sets);
        let frozen = std::mem::take(&mut self.fill.frozen);
        let mut fresh = std::mem::take(&mut self.groups.fresh);
        fresh.clear();
        for (s, &(start, bottleneck, level)) in sets.iter().enumerate() {
            let end = sets.get(s + 1).map_or(frozen.len(), |x| x.0 as usize);
            let set = &frozen[start as usize..end];
            if level <= 0.0 {
                continue;
            }
            let g = self.groups.alloc();
            let mut members = std::mem::take(&mut self.groups.all[g as usize].members);
            members.clear();
            members.extend_from_slice(set);
            // Every member was just brought up to `now`. Sorted by target
            // (the bits of a non-negative float order as integers), then id.
            let mut packed = std::mem::take(&mut self.scratch.packed);
            packed.clear();
            for &fid in &members {
                let f = &mut self.fabric.flows[fid as usize];
                f.target = f.rem + 0.0;
                packed.push(float_then_id(f.target, fid));
            }
            packed.sort_unstable();
            members.clear();
            members.extend(packed.iter().map(|&p| p as u32));
            self.scratch.packed = packed;
            let mut tasks = std::mem::take(&mut self.groups.all[g as usize].tasks);
            tasks.clear();
            for (i, &fid) in members.iter().enumerate() {
                let f = &mut self.fabric.flows[fid as usize];
                f.group = g;
                f.gpos = i as u32;
                if self.opts.policy == Policy::Baraat {
                    group_task_inc(&mut tasks, f.tid);
                }
                self.mark_order(fid);
            }
            self.groups.all[g as usize] = Group {
                live: members.len() as u32,
                members,
                tasks,
                head: 0,
                rate: level,
                served: 0.0,
                at: self.events.now,
                stamp: 0,
                behind: None,
                bottleneck,
                fast: None,
            };
            self.group_reschedule(g);
            fresh.push(g);
        }
        self.fill.sets = sets;
        self.fill.frozen = frozen;
        // Every rate of the component is final: measure the new groups'
        // fast-path conditions.
        for &g in &fresh {
            self.groups.all[g as usize].fast = self.fast_conditions(g);
        }
        self.groups.fresh = fresh;
    }

    /// Every flow of a component about to be water-filled leaves its group;
    /// the groups are settled after (most dissolve whole: every member of a
    /// group crosses its bottleneck).
    pub(super) fn leave_groups(&mut self, comp_flows: &[u32], stamp: u32) {
        let mut left = std::mem::take(&mut self.groups.fresh);
        left.clear();
        let keeps_order = self.keeps_order();
        self.scratch.left.clear();
        for &fid in comp_flows {
            self.advance(fid);
            let f = &mut self.fabric.flows[fid as usize];
            let g = f.group;
            if g != NONE {
                f.group = NONE;
                let tid = f.tid;
                let grp = &mut self.groups.all[g as usize];
                f.rate = grp.rate;
                if grp.stamp != stamp {
                    grp.stamp = stamp;
                    left.push(g);
                }
                grp.live -= 1;
                group_task_dec(grp, tid);
                if keeps_order {
                    // Its key is written once its new group is known
                    // (after `form_groups`, by the recomputation).
                    self.scratch.left.push(fid);
                }
            }
        }
        for &g in &left {
            if self.groups.all[g as usize].live == 0 {
                self.groups.dissolve(g);
            } else {
                self.group_reschedule(g);
            }
        }
        self.groups.fresh = left;
    }

    /// A flow leaves its rate group (it finished or is being regrouped).
    pub(super) fn group_leave(&mut self, fid: u32) {
        let f = &mut self.fabric.flows[fid as usize];
        let g = f.group;
        if g == NONE {
            return;
        }
        f.group = NONE;
        f.rate = self.groups.all[g as usize].rate;
        let was_head = self.groups.all[g as usize].head == f.gpos;
        let tid = f.tid;
        let grp = &mut self.groups.all[g as usize];
        grp.live -= 1;
        group_task_dec(grp, tid);
        if grp.live == 0 {
            self.groups.dissolve(g);
        } else if was_head {
            self.group_reschedule(g);
        }
    }

    pub(super) fn group_reschedule(&mut self, g: u32) {
        self.groups
            .reschedule(g, &self.fabric.flows, self.events.now);
    }
}

/// Baraat: one live member of task `tid` fewer (other policies keep no
/// per-task counts: nothing to find).
pub(super) fn group_task_dec(grp: &mut Group, tid: u64) {
    if let Some(i) = grp.tasks.iter().position(|t| t.0 == tid) {
        grp.tasks[i].1 -= 1;
        if grp.tasks[i].1 == 0 {
            grp.tasks.swap_remove(i);
        }
    }
}

/// When a member's group clock reaches its target.
pub(super) fn group_finish(g: &Group, f: &Flow) -> u64 {
    finish_time(g.at, f.target - g.served, g.rate)
}

/// The finish time of a flow with `rem` bytes left at `rate` bits/s from
/// `now`, rounded up to the next ns; `u64::MAX` if it does not move.
#[inline]
fn finish_time(now: u64, rem: f64, rate: f64) -> u64 {
    if rate <= 0.0 {
        return u64::MAX;
    }
    let x = rem * 8e9 / rate - 1e-3;
    if x <= 0.0 {
        return now;
    }
    if x.is_nan() || x >= 1e18 {
        return u64::MAX;
    }
    // ceil(x) for 0 < x < 1e18, without a libm call.
    let i = x as u64;
    let dt = if (i as f64) < x { i + 1 } else { i };
    if dt < 1_000_000_000_000_000_000 {
        now + dt
    } else {
        u64::MAX
    }
}
