//! Self-checks for tests (`Engine::check`): the rate groups' invariants,
//! Baraat's per-task rates against the flows, and fast-path results
//! against a from-scratch recomputation.

use super::groups::group_finish;
use super::keys::group_task_inc;
use super::{Engine, NONE};
use crate::policy::Policy;

impl Engine {
    /// Tests: every flow's rate against a from-scratch recomputation.
    pub(super) fn compare_rates(&self, reference: &Engine) {
        for (fid, a) in self.fabric.flows.iter().enumerate() {
            if !a.alive {
                continue;
            }
            let (a, b) = (self.rate_of(fid as u32), reference.rate_of(fid as u32));
            assert!(
                (a - b).abs() <= 1e-6 * a.max(b) + 2.0,
                "fast path: flow {fid} at {a} bps, from scratch {b} bps (t = {} ns)",
                self.events.now
            );
        }
    }

    /// Panics unless the rate groups' invariants hold (see `Group`, groups.rs).
    pub fn check_invariants(&self) {
        let mut live = vec![0u32; self.groups.all.len()];
        for (fid, f) in self.fabric.flows.iter().enumerate() {
            if !f.alive {
                assert_eq!(f.group, NONE, "finished flow {fid} in a group");
                continue;
            }
            if f.group == NONE {
                assert!(
                    f.rate == 0.0,
                    "flow {fid} at {} bps without a group",
                    f.rate
                );
                continue;
            }
            let grp = &self.groups.all[f.group as usize];
            assert_eq!(grp.members[f.gpos as usize], fid as u32);
            assert!(f.gpos >= grp.head, "flow {fid} before its group's head");
            live[f.group as usize] += 1;
        }
        if self.keeps_order() {
            // The copies pFabric's timers scan (`Link::keys`).
            for (l, link) in self.fabric.links.iter().enumerate() {
                let front = &self.fabric.fronts[l];
                let order = &self.fabric.orders[l];
                assert_eq!(link.keys.len(), link.flows.len(), "link {l}: keys");
                let (mut moving, mut xor) = (0, 0);
                assert!(order.seen as usize <= link.keys.len(), "link {l}: seen");
                for (i, (&fid, &key)) in link.flows.iter().zip(&link.keys).enumerate() {
                    let f = &self.fabric.flows[fid as usize];
                    let want = if f.group == NONE {
                        super::keys::float_then_id(f.rem, fid)
                    } else {
                        super::fabric::MOVING
                    };
                    assert_eq!(key, want, "link {l}: key of flow {fid}");
                    let bits = if f.group == NONE {
                        (f.rem + 0.0).to_bits()
                    } else {
                        super::fabric::MOVING_BITS
                    };
                    assert_eq!(f.order_bits, bits, "flow {fid}: its keys' bits");
                    if key == super::fabric::MOVING {
                        moving += 1;
                        xor ^= fid;
                    } else if i < order.seen as usize {
                        // In the front (perhaps stale entries), or above
                        // the floor of the rest.
                        assert!(
                            key == order.front_min
                                || front.contains(&key)
                                || order.rest_floor <= key,
                            "link {l}: flow {fid} below the floor, out of the front"
                        );
                    }
                }
                assert_eq!(
                    (order.moving, order.moving_xor),
                    (moving, xor),
                    "link {l}: moving"
                );
                assert!(front.len() < super::fabric::FRONT);
                for w in front.windows(2) {
                    assert!(w[0] > w[1], "link {l}: front out of order");
                }
                if let Some(&next) = front.last() {
                    assert!(order.front_min < next, "link {l}: front's smallest");
                }
            }
        }
        for (g, grp) in self.groups.all.iter().enumerate() {
            assert_eq!(grp.live, live[g], "group {g}: live count");
            let entry = self.groups.finish.get(g as u32);
            if grp.live == 0 {
                assert_eq!(entry, None, "empty group {g} in the heap");
                continue;
            }
            let mut last = 0.0;
            let mut first = None;
            for (i, &fid) in grp.members.iter().enumerate().skip(grp.head as usize) {
                let f = &self.fabric.flows[fid as usize];
                if f.group == g as u32 && f.gpos == i as u32 {
                    assert!(f.target >= last, "group {g}: members out of target order");
                    last = f.target;
                    first.get_or_insert(group_finish(grp, f));
                }
            }
            let head = &self.fabric.flows[grp.members[grp.head as usize] as usize];
            assert!(
                head.group == g as u32 && head.gpos == grp.head,
                "group {g}: stale head"
            );
            let first = first.expect("live member");
            match entry {
                None => assert_eq!(first, u64::MAX, "group {g} missing from the heap"),
                Some(t) => assert!(
                    t == first || (first < t && t <= self.events.now),
                    "group {g}: heap entry {t}, first finish {first}"
                ),
            }
        }
        assert_eq!(
            self.groups.finish.len(),
            self.groups
                .all
                .iter()
                .enumerate()
                .filter(|(g, _)| self.groups.finish.get(*g as u32).is_some())
                .count()
        );
        if self.opts.policy == Policy::Baraat {
            self.check_task_rates();
        }
    }

    /// Baraat: each group's per-task member counts and each port's per-task
    /// rates match the flows.
    fn check_task_rates(&self) {
        let sorted = |v: &[(u64, u32)]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        for (g, grp) in self.groups.all.iter().enumerate() {
            let mut want: Vec<(u64, u32)> = Vec::new();
            for (i, &fid) in grp.members.iter().enumerate() {
                let f = &self.fabric.flows[fid as usize];
                if f.group == g as u32 && f.gpos == i as u32 {
                    group_task_inc(&mut want, f.tid);
                }
            }
            assert_eq!(sorted(&grp.tasks), sorted(&want), "group {g}: task counts");
        }
        for (p, port) in self.baraat.ports.iter().enumerate() {
            let mut want: Vec<(u64, f64)> = Vec::new();
            for &fid in &self.fabric.links[self.topo.host_down(p as u32) as usize].flows {
                let (tid, r) = (self.fabric.flows[fid as usize].tid, self.rate_of(fid));
                match want.iter_mut().find(|w| w.0 == tid) {
                    Some(w) => w.1 += r,
                    None => want.push((tid, r)),
                }
            }
            want.retain(|w| w.1 >= 0.5);
            assert_eq!(
                port.rates.len(),
                want.len(),
                "port {p}: task rates {:?}, flows say {want:?}",
                port.rates
            );
            for &(tid, r) in &want {
                let got = port.rates.iter().find(|x| x.0 == tid).map_or(0.0, |x| x.1);
                assert!(
                    (got - r).abs() <= 1e-6 * r + 1.0,
                    "port {p} task {tid}: rate {got}, flows say {r}"
                );
            }
        }
    }
}
