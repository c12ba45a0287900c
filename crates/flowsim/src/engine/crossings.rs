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

use super::keys::float_then_id;
use super::Engine;
use crate::policy::Policy;
use crate::topology::LinkId;

/// Scratch of [`Engine::arm_crossing`].
#[derive(Clone, Default)]
pub(super) struct OrderScratch {
    /// The moving flows: (remaining size bits, id) packed, and rate.
    moving: Vec<(u128, f64)>,
    /// Per moving flow, the closest flow at rate 0 ahead of it (packed).
    still_ahead: Vec<Option<u128>>,
}

fn rem_of(p: u128) -> f64 {
    f64::from_bits((p >> 32) as u64)
}

impl Engine {
    /// Under pFabric, re-arm the timers of `links` (their rates changed).
    pub(super) fn arm_crossings(&mut self, links: &[LinkId]) {
        if self.opts.policy == Policy::Pfabric && self.swap_timers {
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
    /// Two scans of the link's flows: the moving ones and the load first,
    /// then, only on a full link, the flows at rate 0, of which only those
    /// ahead of the last moving flow can be a neighbour ahead. A full link
    /// usually holds one moving flow, the head of its order, and hundreds at
    /// 0 behind it (pFabric's strict priority), and is re-armed at every
    /// promotion: the flows at 0 then cost one compare each.
    fn arm_crossing(&mut self, l: LinkId) {
        let link = &self.fabric.links[l as usize];
        if link.flows.len() < 2 || !self.follow(l) {
            self.crossings.remove(l);
            return;
        }
        let mut s = std::mem::take(&mut self.scratch.order);
        s.moving.clear();
        let mut load = 0.0;
        for &fid in &link.flows {
            let group = self.fabric.hot[fid as usize].group;
            if group != super::NONE {
                // Moving (a flow with a positive rate is in a group).
                let rate = self.groups.all[group as usize].rate;
                load += rate;
                s.moving.push((float_then_id(self.rem_now(fid), fid), rate));
            }
        }
        // Full as the water-fill has it: under 1 bit/s left.
        let full = load >= self.topo.capacity(l) as f64 - 1.0;
        let mut soonest = f64::INFINITY;
        if full && !s.moving.is_empty() {
            s.moving.sort_unstable_by_key(|m| m.0);
            s.still_ahead.clear();
            s.still_ahead.resize(s.moving.len(), None);
            let last = s.moving[s.moving.len() - 1].0;
            for &fid in &link.flows {
                if self.fabric.hot[fid as usize].group != super::NONE {
                    continue;
                }
                let p = float_then_id(self.fabric.hot[fid as usize].rem, fid);
                if p > last {
                    // Behind every moving flow: no one's neighbour ahead.
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
        self.scratch.order = s;
        if soonest < (u64::MAX / 4) as f64 {
            // Strictly after the meeting (at least 1 ns): the flow behind is
            // then ahead by a margin far above float noise.
            let at = self.events.now + (soonest.floor() as u64 + 1);
            self.crossings.set(l, at);
        } else {
            self.crossings.remove(l);
        }
    }
}
