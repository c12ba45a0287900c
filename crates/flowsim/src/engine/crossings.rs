//! pFabric's order changes between events. Its key is a flow's remaining
//! size, which moves while the flow is served: on a full link where a flow
//! with more bytes left is served faster than one with fewer (the latter
//! held back by a bottleneck elsewhere), the two swap priority when their
//! remaining sizes meet, with no flow starting or ending then. The first
//! swap on a link is between two flows adjacent in its current order
//! (kinetic sorting: the order holds until two neighbours meet), so each
//! link keeps one timer, the earliest meeting of neighbours at the current
//! rates; when it fires the link's component is recomputed and re-keyed.
//! After a swap the flow now ahead gets at least what it had and the one
//! behind at most, so the pair never meets again.
//!
//! When a timer must be re-armed: after a recomputation, on its links; after
//! a promotion, on the promoted flows' links. Not after a departure: a flow
//! ends with 0 bytes left, at the head of every order it is in, so its
//! leaving makes no new neighbours (a timer it leaves behind at most
//! triggers a recomputation that changes nothing).

use super::fabric::{FRONT, MOVING, MOVING_BITS};
use super::keys::float_then_id;
use super::{Engine, NONE};
use crate::policy::Policy;
use crate::topology::LinkId;

/// Scratch of [`Engine::arm_crossing`].
#[derive(Clone, Default)]
pub(super) struct OrderScratch {
    /// The moving flows: (remaining size bits, id) packed, and rate.
    moving: Vec<(u128, f64)>,
    /// Per moving flow, the closest flow at rate 0 ahead of it (packed).
    still_ahead: Vec<Option<u128>>,
    /// The moving flows' ids in the link's order.
    order: Vec<u32>,
    /// The keys at 0 of a scanned link, then the smallest `FRONT + 1`
    /// ascending.
    smallest: Vec<u128>,
}

fn rem_of(p: u128) -> f64 {
    f64::from_bits((p >> 32) as u64)
}

impl Engine {
    /// Under pFabric with its timers, copy whether `fid` is at rate 0 (and
    /// then its key) into its links' [`Link::keys`](super::fabric::Link).
    /// Called wherever a flow joins a rate group or ends up out of one (a
    /// recomputation marks its flows once, after forming the new groups);
    /// its bytes left do not move out of one.
    #[inline]
    pub(super) fn mark_order(&mut self, fid: u32) {
        if !self.keeps_order() {
            return;
        }
        let f = &self.fabric.flows[fid as usize];
        let bits = if f.group == NONE {
            (f.rem + 0.0).to_bits()
        } else {
            MOVING_BITS
        };
        // Most flows a recomputation marks keep their keys.
        if f.order_bits != bits {
            self.write_order(fid, bits);
        }
    }

    #[inline(never)]
    fn write_order(&mut self, fid: u32, bits: u64) {
        let f = &mut self.fabric.flows[fid as usize];
        f.order_bits = bits;
        let key = if bits == MOVING_BITS {
            MOVING
        } else {
            float_then_id(f.rem, fid)
        };
        let (links, pos, n) = (f.links, f.pos, f.n as usize);
        for h in 0..n {
            let l = links[h] as usize;
            let old = std::mem::replace(&mut self.fabric.links[l].keys[pos[h] as usize], key);
            self.fabric.orders[l].set_key(&mut self.fabric.fronts[l], fid, old, key);
        }
    }

    /// No timer on `l` (most links have none to remove).
    #[inline]
    fn disarm(&mut self, l: LinkId) {
        if self.crossings.get(l).is_some() {
            self.crossings.remove(l);
        }
    }

    /// pFabric with its order-swap timers on.
    pub(super) fn keeps_order(&self) -> bool {
        self.opts.policy == Policy::Pfabric && self.swap_timers
    }

    /// Under pFabric, re-arm the timers of `links` (their rates changed).
    pub(super) fn arm_crossings(&mut self, links: &[LinkId]) {
        if self.keeps_order() {
            for &l in links {
                self.arm_crossing(l);
            }
        }
    }

    /// Re-arm `l`'s timer from its flows' current remaining sizes and rates.
    /// Only a full link's order decides rates (on another, every flow is
    /// held back elsewhere), and only a moving flow can catch up with the
    /// one ahead of it.
    ///
    /// The moving flows are counted beside the link (`LinkOrder::moving`); the
    /// link's keys are scanned only to find several, or on a full link
    /// where a flow at 0 may be ahead of a moving one
    /// (`LinkOrder::still_floor` below the last moving key), to find each
    /// moving flow's closest flow at 0 ahead. A full link usually holds
    /// one moving flow, the head of its order, and hundreds at 0 behind it
    /// (pFabric's strict priority), and is re-armed at every promotion:
    /// then nothing but that flow is read.
    fn arm_crossing(&mut self, l: LinkId) {
        let link = &self.fabric.links[l as usize];
        let order = &mut self.fabric.orders[l as usize];
        let n = link.keys.len() as u32;
        if order.seen < n {
            // Flows started since: their keys are at 0 (a moving one is
            // above all).
            for &k in &link.keys[order.seen as usize..] {
                order.rest_floor = order.rest_floor.min(k);
            }
            order.seen = n;
        }
        let order = &self.fabric.orders[l as usize];
        if order.moving == 0 || link.flows.len() < 2 || !self.follow(l) {
            // No moving flow: no load, nothing catches up.
            self.disarm(l);
            return;
        }
        if order.moving == 1 {
            // The usual case: one moving flow, the head of the order
            // unless a flow at 0 may be ahead (the general path below,
            // which gives the same when nothing is).
            let fid = order.moving_xor;
            let group = self.fabric.flows[fid as usize].group;
            let rate = self.groups.all[group as usize].rate;
            // The load is that one rate (0.0 + rate).
            if rate < self.topo.capacity(l) as f64 - 1.0
                || order.still_floor() >= float_then_id(self.rem_now(fid), fid)
            {
                self.disarm(l);
                return;
            }
        }
        let mut s = std::mem::take(&mut self.scratch.order);
        s.moving.clear();
        let mut load = 0.0;
        s.order.clear();
        if order.moving == 1 {
            s.order.push(order.moving_xor);
        } else {
            // Several (rare): in the link's order, in which the load was
            // always summed.
            for (&fid, &key) in link.flows.iter().zip(&link.keys) {
                if key == MOVING {
                    s.order.push(fid);
                }
            }
        }
        for &fid in &s.order {
            let group = self.fabric.flows[fid as usize].group;
            let rate = self.groups.all[group as usize].rate;
            load += rate;
            s.moving.push((float_then_id(self.rem_now(fid), fid), rate));
        }
        // Full as the water-fill has it: under 1 bit/s left.
        let full = load >= self.topo.capacity(l) as f64 - 1.0;
        let mut soonest = f64::INFINITY;
        // The smallest keys at 0, when the keys were scanned.
        let mut scanned = false;
        if full {
            s.moving.sort_unstable_by_key(|m| m.0);
            s.still_ahead.clear();
            s.still_ahead.resize(s.moving.len(), None);
            let last = s.moving[s.moving.len() - 1].0;
            // Every flow at 0 behind every moving one (the usual case)
            // needs no scan.
            let scan = if order.still_floor() < last {
                scanned = true;
                s.smallest.clear();
                &link.keys[..]
            } else {
                &[]
            };
            for &p in scan {
                if p != MOVING {
                    s.smallest.push(p);
                }
                if p > last {
                    // Moving, or behind every moving flow: no one's
                    // neighbour ahead.
                    continue;
                }
                let behind = s.moving.partition_point(|m| m.0 < p);
                if let Some(slot) = s.still_ahead.get_mut(behind) {
                    *slot = Some(slot.map_or(p, |q| q.max(p)));
                }
            }
            for k in 0..s.moving.len() {
                let (me, rate) = s.moving[k];
                // The neighbour ahead: the closer of the moving one before
                // and the closest flow at rate 0.
                let prev = k.checked_sub(1).map(|j| s.moving[j]);
                let ahead = match (prev, s.still_ahead[k]) {
                    (Some(m), Some(z)) if z > m.0 => (z, 0.0),
                    (Some(m), _) => m,
                    (None, Some(z)) => (z, 0.0),
                    (None, None) => continue,
                };
                if rate > ahead.1 {
                    let gap = rem_of(me) - rem_of(ahead.0);
                    soonest = soonest.min(gap * 8e9 / (rate - ahead.1));
                }
            }
        }
        if scanned {
            if s.smallest.len() > FRONT + 1 {
                s.smallest.select_nth_unstable(FRONT);
                s.smallest.truncate(FRONT + 1);
            }
            s.smallest.sort_unstable();
            // The scan saw every key: the front and the floor of the rest
            // are exact.
            let n = s.smallest.len().min(FRONT);
            let front = &mut self.fabric.fronts[l as usize];
            front.clear();
            front.extend(s.smallest.get(1..n).unwrap_or(&[]).iter().rev());
            let order = &mut self.fabric.orders[l as usize];
            order.front_min = s.smallest.first().copied().unwrap_or(MOVING);
            order.rest_floor = s.smallest.get(FRONT).copied().unwrap_or(MOVING);
            order.seen = self.fabric.links[l as usize].keys.len() as u32;
        }
        self.scratch.order = s;
        if soonest < (u64::MAX / 4) as f64 {
            // Strictly after the meeting (at least 1 ns): the flow behind is
            // then ahead by a margin far above float noise.
            let at = self.events.now + (soonest.floor() as u64 + 1);
            self.crossings.set(l, at);
        } else {
            self.disarm(l);
        }
    }
}
