//! Rate allocation: after the events of one instant, the component of
//! flows the changes can affect (grown from the changed links through links
//! that can bind) is re-keyed and water-filled, strict priority between
//! keys and max-min fairness within a key. That is the fixed point of SPC
//! (§4.3): Alg. 1's explicit feedback gives a class full capacity and the
//! leftover to the next class, max-min within a class; Alg. 2 makes a flow
//! bottlenecked elsewhere demand only its bottleneck share, so the leftover
//! goes to lower classes (work conservation). A policy is a choice of key:
//! Baraat's is the FIFO-LM class leader at the flow's port (§3.3, §4.3.1).

use std::collections::BinaryHeap;

use super::keys::pop_key_group;
use super::{Engine, NONE};
use crate::policy::Policy;
use crate::topology::LinkId;

/// The state of the last water-fill.
#[derive(Clone, Default)]
pub(super) struct WaterFill {
    /// Per component link (by `Link::local`): capacity left, and unfrozen
    /// flows of the key group being filled.
    pub(super) residual: Vec<f64>,
    pub(super) count: Vec<u32>,
    /// Flows in freeze order, and the freeze sets as (start in `frozen`,
    /// bottleneck link or NONE, level).
    pub(super) frozen: Vec<u32>,
    pub(super) sets: Vec<(u32, LinkId, f64)>,
    /// The link that stopped the last water-fill, and the flows left then.
    pub(super) stop: Option<LinkId>,
    pub(super) stop_rest: BinaryHeap<u128>,
    pub(super) unfrozen: Vec<u32>,
    pub(super) touched: Vec<u32>,
    pub(super) bkeyed: Vec<u64>,
}

/// Scratch of the recomputation (the component and its key order).
#[derive(Clone, Default)]
pub(super) struct Scratch {
    pub(super) comp_flows: Vec<u32>,
    pub(super) comp_links: Vec<LinkId>,
    pub(super) keyed: Vec<((u64, u64), u32)>,
    pub(super) packed: Vec<u128>,
    pub(super) total: Vec<u32>,
    pub(super) universal: Vec<u32>,
    pub(super) kgroup: Vec<u32>,
    pub(super) xlinks: Vec<LinkId>,
    pub(super) order: super::crossings::OrderScratch,
    /// The flows that left a group in `leave_groups` (pFabric with its
    /// timers: their keys are written after `form_groups`).
    pub(super) left: Vec<u32>,
}

impl Engine {
    /// Can this link limit its flows? Host links always count (see module doc).
    pub(super) fn follow(&self, l: LinkId) -> bool {
        self.topo.is_host_link(l) || self.fabric.links[l as usize].sum_caps > self.topo.capacity(l)
    }

    /// After the events of one instant: departures from one rate group go
    /// through the fast path when its conditions hold and the component of
    /// the other changes (starts, re-classifications) does not reach the
    /// group; everything else is recomputed component by component.
    pub(super) fn recompute(&mut self) {
        let filled = self.recompute_changes();
        if self.opts.policy == Policy::Stf && filled {
            // STF: a water-fill that served a waiting task admitted it, which
            // changes keys: fill again until nothing more is admitted. The
            // fast paths admit no one (a re-level or a start joins tasks
            // already served; promotion is refused for STF).
            while self.admit_served() {
                self.recompute_component();
            }
        }
    }

    /// The fast paths, or the component recomputation. Returns whether a
    /// component was water-filled (its flows are in `scratch.comp_flows`).
    fn recompute_changes(&mut self) -> bool {
        let g = self.instant.departed.first().copied().unwrap_or(NONE);
        if !self.full_recompute
            && g != NONE
            && self.instant.departed.iter().all(|&d| d == g)
            && (self.instant.dirty.is_empty()
                || !self.component_touches(g, self.groups.all[g as usize].bottleneck))
        {
            let shadow = if self.check {
                let mut sh = self.clone();
                sh.instant.dirty.append(&mut sh.instant.dep_dirty);
                Some(sh)
            } else {
                None
            };
            if self.fast_departure() {
                self.instant.dep_dirty.clear();
                self.stats.fast_departures += 1;
                let mut filled = false;
                if !self.instant.dirty.is_empty() && !self.fast_arrival() {
                    self.recompute_component();
                    filled = true;
                }
                if let Some(mut sh) = shadow {
                    sh.recompute_component();
                    self.compare_rates(&sh);
                }
                return filled;
            }
        }
        let mut dep = std::mem::take(&mut self.instant.dep_dirty);
        self.instant.dirty.append(&mut dep);
        self.instant.dep_dirty = dep;
        self.recompute_component();
        true
    }

    pub(super) fn next_stamp(&mut self) -> u32 {
        self.fabric.stamp = self.fabric.stamp.wrapping_add(1);
        if self.fabric.stamp == 0 {
            for l in &mut self.fabric.links {
                l.stamp = 0;
            }
            self.fabric.fstamp.fill(0);
            for g in &mut self.groups.all {
                g.stamp = 0;
            }
            self.fabric.stamp = 1;
        }
        self.fabric.stamp
    }

    /// Does the component grown from the dirty links hold a member of `g`
    /// or the link `bl`?
    fn component_touches(&mut self, g: u32, bl: LinkId) -> bool {
        let stamp = self.next_stamp();
        let mut stack = std::mem::take(&mut self.scratch.comp_links);
        stack.clear();
        let dirty = std::mem::take(&mut self.instant.dirty);
        self.seed_component(&dirty, stamp, &mut stack);
        self.instant.dirty = dirty;
        let hit = self.grow_component(stamp, &mut stack, |_, group| group == g);
        self.scratch.comp_links = stack;
        hit || (bl != NONE && self.fabric.links[bl as usize].stamp == stamp)
    }

    /// Stamps the `seeds` not yet in the component and appends them to `links`.
    fn seed_component(&mut self, seeds: &[LinkId], stamp: u32, links: &mut Vec<LinkId>) {
        for &l in seeds {
            let link = &mut self.fabric.links[l as usize];
            if link.stamp != stamp {
                link.stamp = stamp;
                links.push(l);
            }
        }
    }

    /// Grows the component from `links` (stamped, in visiting order): every
    /// flow on one of its links is stamped and shown to `stop` as (flow,
    /// rate group), then its links that can bind join. Returns whether
    /// `stop` ended the walk early.
    fn grow_component(
        &mut self,
        stamp: u32,
        links: &mut Vec<LinkId>,
        mut stop: impl FnMut(u32, u32) -> bool,
    ) -> bool {
        let mut i = 0;
        while i < links.len() {
            let l = links[i];
            i += 1;
            for k in 0..self.fabric.links[l as usize].flows.len() {
                let fid = self.fabric.links[l as usize].flows[k];
                if self.fabric.fstamp[fid as usize] == stamp {
                    continue;
                }
                self.fabric.fstamp[fid as usize] = stamp;
                let f = &self.fabric.flows[fid as usize];
                if stop(fid, f.group) {
                    return true;
                }
                let (flow_links, n) = (f.links, f.n as usize);
                for &l2 in &flow_links[..n] {
                    if self.fabric.links[l2 as usize].stamp != stamp && self.follow(l2) {
                        self.fabric.links[l2 as usize].stamp = stamp;
                        links.push(l2);
                    }
                }
            }
        }
        false
    }

    /// Recompute the component grown from the dirty links: re-key and
    /// water-fill every flow in it, and regroup them.
    fn recompute_component(&mut self) {
        self.stats.recomputes += 1;
        let stamp = self.next_stamp();
        let mut comp_flows = std::mem::take(&mut self.scratch.comp_flows);
        let mut comp_links = std::mem::take(&mut self.scratch.comp_links);
        comp_flows.clear();
        comp_links.clear();
        // Seeds are followed even when they cannot bind any more: their
        // flows may have been held back by them until now.
        let mut dirty = std::mem::take(&mut self.instant.dirty);
        if self.full_recompute {
            // The seeds stay: a port whose last flow just left is one, and
            // its task rates must be cleared.
            dirty.extend(
                (0..self.fabric.links.len() as LinkId)
                    .filter(|&l| !self.fabric.links[l as usize].flows.is_empty()),
            );
        }
        self.seed_component(&dirty, stamp, &mut comp_links);
        dirty.clear();
        self.instant.dirty = dirty;
        self.grow_component(stamp, &mut comp_links, |fid, _| {
            comp_flows.push(fid);
            false
        });
        self.stats.flows_recomputed += comp_flows.len() as u64;
        if self.opts.policy == Policy::Baraat {
            // Every flow into a port of the component is in it (host links
            // are always followed): charge the port's counters at the old
            // rates; [`Engine::schedule_crossings`] sets the new ones.
            for &l in &comp_links {
                if let Some(p) = self.topo.port_of_down(l) {
                    self.baraat.charge_and_clear(p, self.events.now);
                }
            }
        }
        self.leave_groups(&comp_flows, stamp);
        // Priority keys.
        let mut keyed = std::mem::take(&mut self.scratch.keyed);
        keyed.clear();
        let mut narrow = true;
        for &fid in &comp_flows {
            let key = self.key_of(fid);
            self.fabric.flows[fid as usize].key = key;
            keyed.push((key, fid));
            narrow &= key.1 <= u32::MAX as u64;
        }
        // Local link indices and residual capacities.
        self.fill.residual.clear();
        self.fill.count.clear();
        for (j, &l) in comp_links.iter().enumerate() {
            self.fabric.links[l as usize].local = j as u32;
            self.fill.residual.push(self.topo.capacity(l) as f64);
            self.fill.count.push(0);
        }
        self.fill.frozen.clear();
        self.fill.sets.clear();
        self.fill.stop = None;
        let k0 = keyed.first().map(|k| k.0);
        if keyed.iter().all(|k| Some(k.0) == k0) {
            // One key (fair sharing): one water-fill, in id order.
            comp_flows.sort_unstable();
            self.fill_key_group(&comp_flows, stamp);
        } else if narrow {
            // Key groups in (key, id) order from a heap, until a link that
            // every flow of the component crosses is full: every flow left
            // then gets 0 whatever its key (the water-fill would freeze it
            // at level 0), so the rest need no ordering.
            let n = comp_flows.len() as u32;
            let mut total = std::mem::take(&mut self.scratch.total);
            total.clear();
            total.resize(comp_links.len(), 0);
            for &fid in &comp_flows {
                let f = &self.fabric.flows[fid as usize];
                for &l in &f.links[..f.n as usize] {
                    let link = &self.fabric.links[l as usize];
                    if link.stamp == stamp {
                        total[link.local as usize] += 1;
                    }
                }
            }
            let mut universal = std::mem::take(&mut self.scratch.universal);
            universal.clear();
            universal.extend((0..total.len() as u32).filter(|&j| total[j as usize] == n));
            self.scratch.total = total;
            let mut packed = std::mem::take(&mut self.scratch.packed);
            packed.clear();
            // Complemented: the max-heap pops the smallest (key, id) first.
            packed.extend(
                keyed
                    .iter()
                    .map(|&((a, b), f)| !((a as u128) << 64 | (b as u128) << 32 | f as u128)),
            );
            let mut heap = BinaryHeap::from(packed);
            let mut kgroup = std::mem::take(&mut self.scratch.kgroup);
            comp_flows.clear();
            while let Some(top) = heap.pop() {
                pop_key_group(&mut heap, top, &mut kgroup);
                self.fill_key_group(&kgroup, stamp);
                comp_flows.extend_from_slice(&kgroup);
                if let Some(&j) = universal
                    .iter()
                    .find(|&&j| self.fill.residual[j as usize] < 1.0)
                {
                    // Kept for a later promotion (see `Group::behind`).
                    if !heap.is_empty() {
                        self.fill.stop = Some(comp_links[j as usize]);
                        self.fill.stop_rest = heap.clone();
                    }
                    for x in heap.drain() {
                        let fid = !x as u32;
                        self.fabric.flows[fid as usize].rate = 0.0;
                        comp_flows.push(fid);
                    }
                    break;
                }
            }
            self.scratch.kgroup = kgroup;
            self.scratch.universal = universal;
            self.scratch.packed = heap.into_vec();
        } else {
            keyed.sort_unstable();
            comp_flows.clear();
            comp_flows.extend(keyed.iter().map(|k| k.1));
            let mut g = 0;
            while g < comp_flows.len() {
                let key = keyed[g].0;
                let mut e = g + 1;
                while e < keyed.len() && keyed[e].0 == key {
                    e += 1;
                }
                self.fill_key_group(&comp_flows[g..e], stamp);
                g = e;
            }
        }
        self.scratch.keyed = keyed;
        // New groups and finish events; Baraat's next threshold crossings.
        self.form_groups();
        // The flows at 0 after leaving their groups (`form_groups` marked
        // those in a new one; the others were at 0 and kept their keys).
        let left = std::mem::take(&mut self.scratch.left);
        for &fid in &left {
            if self.fabric.flows[fid as usize].group == NONE {
                self.mark_order(fid);
            }
        }
        self.scratch.left = left;
        self.keep_behind();
        if self.opts.policy == Policy::Baraat {
            self.schedule_crossings(&comp_flows);
        }
        self.arm_crossings(&comp_links);
        self.scratch.comp_flows = comp_flows;
        self.scratch.comp_links = comp_links;
    }

    pub(super) fn key_of(&self, fid: u32) -> (u64, u64) {
        let f = &self.fabric.flows[fid as usize];
        let t = self.tasks.slots[f.task as usize]
            .as_ref()
            .expect("live task");
        match self.opts.policy {
            Policy::Fair => (0, 0),
            // Remaining size, exactly (a non-negative float's bits order
            // as integers): only equal remaining sizes share. The order
            // changes between events are `crossings`.
            Policy::Pfabric => (f.rem.max(0.0).to_bits(), 0),
            Policy::Orchestra => (t.index, 0),
            Policy::Stf => self.stf_key(f.task, f.dst),
            Policy::Baraat => {
                let lm = self.baraat.ports[f.dst as usize].lm.as_ref();
                let leader = lm.and_then(|lm| lm.leader(t.task_id)).unwrap_or(t.task_id);
                (leader, 0)
            }
        }
    }

    /// Water-fill one key group. A flow alone at its key behind a full link
    /// gets 0 without it, as the water-fill would give it (a level under
    /// 1 bit/s is 0).
    pub(super) fn fill_key_group(&mut self, group: &[u32], stamp: u32) {
        if group.len() == 1 && self.blocked(group[0], stamp) {
            self.fabric.flows[group[0] as usize].rate = 0.0;
        } else {
            self.fill_group(group, stamp);
        }
    }

    /// Does the flow cross a component link with less than 1 bit/s left?
    fn blocked(&self, fid: u32, stamp: u32) -> bool {
        let f = &self.fabric.flows[fid as usize];
        f.links[..f.n as usize].iter().any(|&l| {
            let link = &self.fabric.links[l as usize];
            link.stamp == stamp && self.fill.residual[link.local as usize] < 1.0
        })
    }

    /// Max-min water-filling of one priority group on the capacity left by
    /// higher groups: raise every unfrozen flow's rate together; when a link
    /// runs out, freeze the flows crossing it; a flow also stops at its NIC
    /// rate.
    fn fill_group(&mut self, group: &[u32], stamp: u32) {
        let mut unfrozen = std::mem::take(&mut self.fill.unfrozen);
        let mut touched = std::mem::take(&mut self.fill.touched);
        unfrozen.clear();
        unfrozen.extend_from_slice(group);
        touched.clear();
        for &fid in group {
            let f = &self.fabric.flows[fid as usize];
            for &l in &f.links[..f.n as usize] {
                let link = &self.fabric.links[l as usize];
                if link.stamp == stamp {
                    let j = link.local as usize;
                    if self.fill.count[j] == 0 {
                        touched.push(j as u32);
                    }
                    self.fill.count[j] += 1;
                }
            }
        }
        let mut level = 0.0f64;
        while !unfrozen.is_empty() {
            let start = self.fill.frozen.len();
            // The level at which the next link saturates, or a flow hits its cap.
            let mut next = f64::INFINITY;
            for &j in &touched {
                let c = self.fill.count[j as usize];
                if c > 0 {
                    next = next.min(self.fill.residual[j as usize].max(0.0) / c as f64);
                }
            }
            for &fid in &unfrozen {
                next = next.min(self.fabric.flows[fid as usize].cap as f64);
            }
            // Float residue of a saturated link (a few µbps) is no capacity:
            // anything under 1 bit/s is zero, or a starved flow would get a
            // finish time centuries away instead of waiting for a recompute.
            if next < 1.0 {
                next = 0.0;
            }
            level = level.max(next);
            // 1 bit/s absolute slack, consistent with the snap to zero above.
            let tol = level * 1e-12 + 1.0;
            let mut k = 0;
            while k < unfrozen.len() {
                let fid = unfrozen[k];
                let f = &self.fabric.flows[fid as usize];
                let mut freeze = f.cap as f64 <= level + tol;
                if !freeze {
                    for &l in &f.links[..f.n as usize] {
                        let link = &self.fabric.links[l as usize];
                        if link.stamp == stamp {
                            let j = link.local as usize;
                            if self.fill.residual[j].max(0.0) / self.fill.count[j] as f64
                                <= level + tol
                            {
                                freeze = true;
                                break;
                            }
                        }
                    }
                }
                if freeze {
                    unfrozen.swap_remove(k);
                    self.set_rate(fid, level, stamp);
                    self.fill.frozen.push(fid);
                } else {
                    k += 1;
                }
            }
            // The freeze set of this level, split by bottleneck: for each
            // member, of the links it filled the one with the most flows
            // (flows at the same level behind different links, e.g. two
            // racks with as many flows, are different groups).
            if self.fill.frozen.len() > start {
                let mut keyed = std::mem::take(&mut self.fill.bkeyed);
                keyed.clear();
                for &fid in &self.fill.frozen[start..] {
                    let f = &self.fabric.flows[fid as usize];
                    let mut sat = NONE;
                    let mut most = 0;
                    for &l in &f.links[..f.n as usize] {
                        let link = &self.fabric.links[l as usize];
                        if link.stamp == stamp
                            && self.fill.residual[link.local as usize] < 1.0 + level * 1e-9
                            && link.flows.len() > most
                        {
                            sat = l;
                            most = link.flows.len();
                        }
                    }
                    keyed.push((sat as u64) << 32 | fid as u64);
                }
                keyed.sort_unstable();
                let mut i = 0;
                while i < keyed.len() {
                    let sat = (keyed[i] >> 32) as u32;
                    self.fill.sets.push(((start + i) as u32, sat, level));
                    while i < keyed.len() && (keyed[i] >> 32) as u32 == sat {
                        self.fill.frozen[start + i] = keyed[i] as u32;
                        i += 1;
                    }
                }
                self.fill.bkeyed = keyed;
            }
        }
        for &j in &touched {
            self.fill.count[j as usize] = 0;
        }
        self.fill.unfrozen = unfrozen;
        self.fill.touched = touched;
    }

    /// Freeze a flow at `rate`: take it from its links' residuals. Freezing
    /// inside the scan above is safe: a saturated link keeps exactly `level`
    /// of residual per remaining unfrozen flow, so its later flows still
    /// pass the saturation test, and an unsaturated link stays above it.
    fn set_rate(&mut self, fid: u32, rate: f64, stamp: u32) {
        let f = &mut self.fabric.flows[fid as usize];
        f.rate = rate;
        let (links, n) = (f.links, f.n as usize);
        for &l in &links[..n] {
            let link = &self.fabric.links[l as usize];
            if link.stamp == stamp {
                let j = link.local as usize;
                self.fill.residual[j] -= rate;
                self.fill.count[j] -= 1;
            }
        }
    }
}
