//! Fast paths past the recomputation: a departure from a rate group whose
//! bottleneck `L` every flow around it crosses re-levels the group (or, if it
//! emptied, promotes the flows waiting behind it at `L`), and a flow that
//! starts with the key of such a group joins it; the water-fill would give
//! the same rates (docs/flowsim.md, "Engine"; `Engine::check` compares every
//! result with a from-scratch recomputation).

use std::collections::BinaryHeap;

use super::keys::{float_then_id, group_task_inc, pop_key_group};
use super::{Engine, NONE};
use crate::policy::Policy;
use crate::topology::LinkId;

/// What the departure fast path needs to know about a group's links,
/// measured when the group forms ([`Engine::fast_conditions`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct FastPath {
    /// `L`'s capacity left by the flows outside the group.
    pub(super) r_l: f64,
    /// The smallest level at which another link of the group would
    /// saturate (capacity left by the others per member crossing it).
    pub(super) lmax: f64,
    /// The members' smallest NIC rate.
    pub(super) min_cap: f64,
}

impl FastPath {
    /// The level the water-fill gives `members` flows sharing `L`'s `r_l`
    /// evenly, or None if it would not: a member's NIC or another link of
    /// the group may not stop the members first, except by a tie (within
    /// float rounding: they then stop at the same level, e.g. a last member
    /// at its NIC rate, which fills its uplink and `L` at once); a level is
    /// at least 1 bit/s; `L` stays full for the flows behind.
    fn level(&self, members: f64) -> Option<f64> {
        let mut level = self.r_l.max(0.0) / members;
        let bound = self.min_cap.min(self.lmax);
        if bound < level {
            if bound < level * (1.0 - 1e-12) {
                return None;
            }
            level = bound;
        }
        if level < 1.0 || (self.r_l - level * members).abs() >= 0.5 {
            return None;
        }
        Some(level)
    }
}

impl Engine {
    /// The fast path's conditions on a group just formed, cached in it:
    /// every flow on `L` and on the members' other links crosses `L`
    /// (links that cannot bind do not count), and the capacity the flows
    /// outside the group leave on those links. None of this changes while
    /// the group lives except by its own departures (which only relax it):
    /// a flow arriving on one of these links, a re-classification at `L` or
    /// a departure from another group sharing them recomputes the component,
    /// which dissolves the group; and no other group with a positive rate
    /// shares them (it would cross `L`, full behind the group, or be ahead of
    /// it, where the group's flows would have to be at 0 behind its own
    /// bottleneck), so no other group's fast path changes them.
    pub(super) fn fast_conditions(&mut self, g: u32) -> Option<FastPath> {
        let grp = &self.groups.all[g as usize];
        let bl = grp.bottleneck;
        // `L` must be followed by every recomputation that reaches one of
        // its flows (then it reaches the group and dissolves it): a switch
        // link that cannot bind is in a component only as a seed.
        if bl == NONE || !self.follow(bl) {
            return None;
        }
        // Baraat's classifier rates are per port: only when `L` is the
        // port's downlink are all of the port's rate changes on `L`.
        if self.opts.policy == Policy::Baraat {
            let head = &self.fabric.flows[grp.members[grp.head as usize] as usize];
            if self.topo.host_down(head.dst) != bl {
                return None;
            }
        }
        let stamp = self.next_stamp();
        let mut xl = std::mem::take(&mut self.scratch.xlinks);
        xl.clear();
        self.fabric.links[bl as usize].stamp = stamp;
        let mut min_cap = u64::MAX;
        let grp = &self.groups.all[g as usize];
        for &fid in &grp.members {
            let f = &self.fabric.flows[fid as usize];
            min_cap = min_cap.min(f.cap);
            for &l in &f.links[..f.n as usize] {
                let link = &mut self.fabric.links[l as usize];
                if link.stamp != stamp {
                    link.stamp = stamp;
                    if self.topo.is_host_link(l) || link.sum_caps > self.topo.capacity(l) {
                        xl.push(l);
                    }
                }
            }
        }
        let fp = self.fast_measure(g, bl, min_cap, &xl);
        self.scratch.xlinks = xl;
        fp
    }

    fn fast_measure(&self, g: u32, bl: LinkId, min_cap: u64, xl: &[LinkId]) -> Option<FastPath> {
        let crosses = |fid: u32| {
            let f = &self.fabric.flows[fid as usize];
            f.links[..f.n as usize].contains(&bl)
        };
        // What the water-fill left on `L`, plus the group's own share (the
        // water-fill just ran, every flow on `L` was in it, and `local` still
        // indexes its residuals).
        let grp = &self.groups.all[g as usize];
        let link = &self.fabric.links[bl as usize];
        let r_l = self.fill.residual[link.local as usize] + grp.live as f64 * grp.rate;
        let mut lmax = f64::INFINITY;
        for &l in xl {
            let link = &self.fabric.links[l as usize];
            let mut r = self.topo.capacity(l) as f64;
            let mut c = 0u32;
            for &fid in &link.flows {
                if !crosses(fid) {
                    return None;
                }
                if self.fabric.flows[fid as usize].group == g {
                    c += 1;
                } else {
                    r -= self.rate_of(fid);
                }
            }
            if c > 0 {
                lmax = lmax.min(r / c as f64);
            }
        }
        Some(FastPath {
            r_l,
            lmax,
            min_cap: min_cap as f64,
        })
    }

    /// Departures alone, all from one rate group `S` with bottleneck `L`
    /// whose conditions hold ([`Engine::fast_conditions`]): if `S`'s other
    /// links can carry the new level, the water-fill of the component gives
    /// `S` the level `L`'s capacity left by the flows outside `S`, split
    /// evenly, and leaves every other rate as it is. Why: flows ahead of `S`
    /// (higher priority, or frozen at a lower level of `S`'s key) do not see
    /// the departures (a departed flow was not frozen before `S`, so none of
    /// its links bound them); flows behind `S` that share a link with `S` or
    /// a departed flow cross `L`, which stays full, so they stay at 0; other
    /// flows share no link with `S`. Returns false (nothing changed except
    /// Baraat's byte counters brought up to date) when a condition fails:
    /// the caller recomputes the component.
    pub(super) fn fast_departure(&mut self) -> bool {
        let g = self.instant.departed[0];
        if g == NONE || self.instant.departed.iter().any(|&d| d != g) {
            return false;
        }
        let grp = &self.groups.all[g as usize];
        let Some(fp) = grp.fast else { return false };
        let bl = grp.bottleneck;
        let emptied = grp.live == 0;
        let mut level = 0.0;
        if emptied {
            // Promotion of the flows behind, if they were kept. Not for STF:
            // the promoted would be served without being admitted.
            if grp.behind.is_none() || !self.follow(bl) || self.opts.policy == Policy::Stf {
                return false;
            }
        } else {
            // pFabric's keys (remaining size) change while a group is
            // served, so its members could split apart: re-key them all.
            if self.opts.policy == Policy::Pfabric {
                return false;
            }
            let Some(l) = fp.level(grp.live as f64) else {
                return false;
            };
            level = l;
        }
        // Baraat: the departures charged the port's counters up to now
        // (a task that turned heavy then made `L` dirty, so this path was
        // not taken); `L` is the port's downlink (`fast_conditions`).
        let baraat = self.opts.policy == Policy::Baraat;
        let port = self.topo.port_of_down(bl).unwrap_or(NONE);
        if emptied {
            let behind = self.groups.all[g as usize].behind.take().expect("checked");
            self.promote(bl, fp.r_l, behind);
            if baraat {
                // The promoted flows were at 0: their groups' rates add.
                for k in 0..self.groups.fresh.len() {
                    let h = self.groups.fresh[k];
                    self.group_rates_to_port(h, port, 0.0);
                }
            }
        } else {
            // The group's clock up to now, then the new rate.
            let old = self.groups.all[g as usize].set_rate(level, self.events.now);
            self.group_reschedule(g);
            if baraat {
                self.group_rates_to_port(g, port, old);
            }
        }
        if baraat {
            self.baraat.schedule(port, self.events.now);
        }
        true
    }

    /// One flow `f` started at this instant (with departures elsewhere,
    /// already handled) and nothing else changed: if `f` has the key of a
    /// group `S` at `f`'s destination downlink `L` whose fast-path
    /// conditions hold, every flow on `f`'s other links crosses `L`, and
    /// neither they nor `f`'s NIC stop it below the new level, the
    /// water-fill gives `S` plus `f` the capacity `S` had on `L` split
    /// evenly and leaves every other rate as it is (the departure argument
    /// run backwards: `f` is frozen with `S`). Not pFabric (keys move), nor
    /// Baraat when `f` is its task's first flow at the port (the port's
    /// classes change). The start of a mid aggregator's response to the top
    /// aggregator is this case.
    pub(super) fn fast_arrival(&mut self) -> bool {
        let baraat = self.opts.policy == Policy::Baraat;
        if self.opts.policy == Policy::Pfabric
            || (baraat && self.instant.new_at_port)
            || self.instant.started.len() != 1
        {
            return false;
        }
        let fid = self.instant.started[0];
        let f = &self.fabric.flows[fid as usize];
        let (links, n) = (f.links, f.n as usize);
        if !self.instant.dirty.iter().all(|l| links[..n].contains(l)) {
            return false;
        }
        let bl = links[n - 1];
        let key = self.key_of(fid);
        // The group at `L` with `f`'s key.
        let Some(g) = self.fabric.links[bl as usize].flows.iter().find_map(|&h| {
            let x = &self.fabric.flows[h as usize];
            (h != fid && x.group != NONE && x.key == key).then_some(x.group)
        }) else {
            return false;
        };
        let grp = &self.groups.all[g as usize];
        let Some(mut fp) = grp.fast else { return false };
        if grp.bottleneck != bl {
            return false;
        }
        let live = grp.live as f64 + 1.0;
        let cap = self.fabric.flows[fid as usize].cap as f64;
        fp.min_cap = fp.min_cap.min(cap);
        for &l in &links[..n - 1] {
            if !self.follow(l) {
                continue;
            }
            let mut r = self.topo.capacity(l) as f64;
            let mut c = 1u32;
            for &h in &self.fabric.links[l as usize].flows {
                if h == fid {
                    continue;
                }
                let x = &self.fabric.flows[h as usize];
                if !x.links[..x.n as usize].contains(&bl) {
                    return false;
                }
                if x.group == g {
                    c += 1;
                } else {
                    r -= self.rate_of(h);
                }
            }
            fp.lmax = fp.lmax.min(r / c as f64);
        }
        let Some(level) = fp.level(live) else {
            return false;
        };
        // Flows of `f`'s key on `L` outside `S` keep their rates only if the
        // water-fill freezes them (at their own bottlenecks) before it
        // reaches the new level. One frozen with `S` at its old level but
        // behind another link (a tie split into two groups) would drop to
        // the new level with `S` and `f`.
        let tol = level * 1e-12 + 1.0;
        let outside_above = self.fabric.links[bl as usize].flows.iter().any(|&h| {
            let x = &self.fabric.flows[h as usize];
            h != fid && x.group != g && x.key == key && self.rate_of(h) > level + tol
        });
        if outside_above {
            return false;
        }
        // Baraat: the port's byte counters up to date first; give up if a
        // task turned heavy (now, or at a departure of this instant).
        let port = self.topo.port_of_down(bl).unwrap_or(NONE);
        if baraat && (self.instant.turned_heavy || self.baraat.charge(port, self.events.now)) {
            return false;
        }
        // Apply: the clock up to now, `f` in target order, the new rate.
        let now = self.events.now;
        let grp = &mut self.groups.all[g as usize];
        let old = grp.set_rate(level, now);
        grp.fast = Some(fp);
        let served = grp.served;
        let mut members = std::mem::take(&mut grp.members);
        let head = grp.head as usize;
        let mut packed = std::mem::take(&mut self.scratch.packed);
        packed.clear();
        for (i, &m) in members.iter().enumerate().skip(head) {
            let x = &self.fabric.flows[m as usize];
            if x.group == g && x.gpos == i as u32 {
                packed.push(float_then_id(x.target, m));
            }
        }
        let f = &mut self.fabric.flows[fid as usize];
        f.last = now;
        f.target = served + f.rem;
        packed.push(float_then_id(f.target, fid));
        packed.sort_unstable();
        members.clear();
        members.extend(packed.iter().map(|&p| p as u32));
        self.scratch.packed = packed;
        for (i, &m) in members.iter().enumerate() {
            let x = &mut self.fabric.flows[m as usize];
            x.group = g;
            x.gpos = i as u32;
        }
        // The others were in the group already (their keys say so).
        self.mark_order(fid);
        self.fabric.flows[fid as usize].key = key;
        if baraat {
            // The members' tasks move from `old` to `level`; then `f`'s.
            self.group_rates_to_port(g, port, old);
            let tid = self.fabric.flows[fid as usize].tid;
            self.baraat.rate_add(port, tid, level);
            group_task_inc(&mut self.groups.all[g as usize].tasks, tid);
        }
        let grp = &mut self.groups.all[g as usize];
        grp.live += 1;
        grp.head = 0;
        grp.members = members;
        self.group_reschedule(g);
        if baraat {
            self.baraat.schedule(port, self.events.now);
        }
        self.instant.dirty.clear();
        self.stats.fast_arrivals += 1;
        true
    }

    /// After a water-fill that stopped at a full link `L` crossed by every
    /// flow of the component: the flows left behind go with the last group
    /// formed at `L`.
    pub(super) fn keep_behind(&mut self) {
        let Some(l) = self.fill.stop.take() else {
            return;
        };
        // The last group formed at `L` (one freeze set can be split in
        // groups by bottleneck).
        let at_l = self
            .groups
            .fresh
            .iter()
            .rev()
            .find(|&&g| self.groups.all[g as usize].bottleneck == l);
        if let Some(&g) = at_l {
            if self.groups.all[g as usize].fast.is_some() {
                let rest = std::mem::take(&mut self.fill.stop_rest);
                self.groups.all[g as usize].behind = Some(rest);
            }
        }
    }

    /// The last group with a positive rate at `L` emptied (its fast-path
    /// conditions held): the flows behind it, all crossing `L` and at 0
    /// until now, take `L`'s capacity left by the flows ahead (`r_l`) in key
    /// order. This is the component's water-fill: the flows ahead do not see
    /// the departures (see [`Engine::fast_departure`]), keys of flows at 0
    /// do not change (pFabric's remaining size included), every flow on the
    /// links of a flow behind crosses `L` (the component is `L`'s), and once
    /// `L` is full again every flow left stays at 0.
    fn promote(&mut self, bl: LinkId, r_l: f64, mut heap: BinaryHeap<u128>) {
        self.stats.promotions += 1;
        let stamp = self.next_stamp();
        let mut links = std::mem::take(&mut self.scratch.comp_links);
        links.clear();
        self.fill.residual.clear();
        self.fill.count.clear();
        self.fabric.links[bl as usize].stamp = stamp;
        self.fabric.links[bl as usize].local = 0;
        links.push(bl);
        self.fill.residual.push(r_l);
        self.fill.count.push(0);
        self.fill.frozen.clear();
        self.fill.sets.clear();
        let mut kgroup = std::mem::take(&mut self.scratch.kgroup);
        while self.fill.residual[0] >= 1.0 {
            let Some(top) = heap.pop() else { break };
            pop_key_group(&mut heap, top, &mut kgroup);
            for &fid in &kgroup {
                self.advance(fid);
                let f = &self.fabric.flows[fid as usize];
                let (fl, n) = (f.links, f.n as usize);
                for &l in &fl[..n] {
                    if self.fabric.links[l as usize].stamp == stamp || !self.follow(l) {
                        continue;
                    }
                    let mut r = self.topo.capacity(l) as f64;
                    for &h in &self.fabric.links[l as usize].flows {
                        r -= self.rate_of(h);
                    }
                    let link = &mut self.fabric.links[l as usize];
                    link.stamp = stamp;
                    link.local = links.len() as u32;
                    links.push(l);
                    self.fill.residual.push(r);
                    self.fill.count.push(0);
                }
            }
            self.fill_key_group(&kgroup, stamp);
        }
        self.scratch.kgroup = kgroup;
        self.form_groups();
        self.arm_crossings(&links);
        self.scratch.comp_links = links;
        if !heap.is_empty() && self.fill.residual[0] < 1.0 {
            self.fill.stop_rest = heap;
            self.fill.stop = Some(bl);
            self.keep_behind();
        }
    }
}
