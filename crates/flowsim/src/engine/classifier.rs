//! Baraat's per-port classifiers (§4.3.1) in the fluid model: FIFO-LM
//! (§3.3) maps tasks to priority classes in task-id order, a heavy task
//! sharing its class with the next one; a task is heavy once the bytes its
//! flows reserved at the port exceed the threshold. Here the reservations
//! are exactly the bytes sent, charged from the tasks' rates into the port,
//! and the next threshold crossing at those rates is an event.

use super::Engine;
use crate::iheap::IndexedHeap;
use netsched_core::baraat::FifoLm;

/// One port's classifier (a host's downlink: where a task's flows meet).
#[derive(Clone, Debug, Default)]
pub(super) struct Port {
    pub(super) lm: Option<FifoLm>,
    /// The classifier's bytes-reserved counters are charged up to `at`.
    /// Between rate changes a task's bytes into the port grow at the sum of
    /// its flows' rates, kept here per task id (`rates`), so charging them
    /// is O(tasks at the port), not O(flows): the per-task aggregate
    /// counters of §4.3.1. Invariant: `rates` holds, for every task with a
    /// flow moving into the port, the sum of those flows' rates.
    pub(super) at: u64,
    pub(super) rates: Vec<(u64, f64)>,
}

#[derive(Clone, Default)]
pub(super) struct Classifiers {
    /// Per host.
    pub(super) ports: Vec<Port>,
    /// Per port, the next time a task there crosses the heavy threshold at
    /// the current rates (one entry per port, re-keyed in place as the rates
    /// change, instead of a stale event per change).
    pub(super) reclass: IndexedHeap,
    /// Scratch: (port, task id) and rate of each moving flow.
    crossing: Vec<(u128, f64)>,
}

impl Classifiers {
    pub(super) fn new(hosts: usize) -> Self {
        Classifiers {
            ports: vec![Port::default(); hosts],
            ..Classifiers::default()
        }
    }

    /// A flow of task `tid` starts into `port`. True if the task is new at
    /// the port (its arrival changes the port's classes).
    pub(super) fn add_flow(&mut self, port: u32, tid: u64, heavy_threshold: f64) -> bool {
        let lm = self.ports[port as usize]
            .lm
            .get_or_insert_with(|| FifoLm::new(heavy_threshold));
        let new = lm.counters(tid).is_none();
        lm.add_flow(tid);
        new
    }

    pub(super) fn remove_flow(&mut self, port: u32, tid: u64) {
        if let Some(lm) = self.ports[port as usize].lm.as_mut() {
            lm.remove_flow(tid);
        }
    }

    /// Task `tid`, which had flows into `port`, completed. True if another
    /// task's class changed (the task was heavy, or shared a heavy task's
    /// class): the port must be recomputed.
    pub(super) fn forget_task(&mut self, port: u32, tid: u64) -> bool {
        let port = &mut self.ports[port as usize];
        // Its flows are all done: nothing of it moves any more.
        port.rates.retain(|r| r.0 != tid);
        port.lm.as_mut().is_some_and(|lm| lm.forget(tid))
    }

    /// Charge the byte counters at `port` up to `now` at the tasks' current
    /// rates (the fluid model's reservations are exactly the bytes sent,
    /// §4.3.1). True if a task turned heavy (its class and the next task's
    /// change).
    pub(super) fn charge(&mut self, port: u32, now: u64) -> bool {
        let pt = &mut self.ports[port as usize];
        let dt = now - pt.at;
        pt.at = now;
        let Some(lm) = pt.lm.as_mut() else {
            return false;
        };
        let mut heavy = false;
        if dt > 0 {
            for &(tid, r) in &pt.rates {
                if r > 0.0 {
                    heavy |= lm.reserve(tid, r * dt as f64 / 8e9);
                }
            }
        }
        heavy
    }

    /// A recomputation reaches `port` (every flow into it is in the
    /// component): its counters charged at the old rates, its task rates
    /// and pending threshold crossing dropped until the new rates are set
    /// ([`Engine::schedule_crossings`]).
    pub(super) fn charge_and_clear(&mut self, port: u32, now: u64) {
        self.charge(port, now);
        self.ports[port as usize].rates.clear();
        self.reclass.remove(port);
    }

    /// The flows of task `tid` into `port` changed their summed rate by `d`
    /// bits/s (the port's counters must be charged up to now first).
    pub(super) fn rate_add(&mut self, port: u32, tid: u64, d: f64) {
        let rates = &mut self.ports[port as usize].rates;
        match rates.iter().position(|r| r.0 == tid) {
            Some(i) => {
                rates[i].1 += d;
                // Under 1 bit/s is float residue of a task that stopped (a
                // water-fill level is 0 or at least 1 bit/s).
                if rates[i].1 < 0.5 {
                    rates.swap_remove(i);
                }
            }
            None if d >= 0.5 => rates.push((tid, d)),
            None => {}
        }
    }

    /// The next time a task at `port` crosses the heavy threshold at the
    /// port's current task rates (replacing the port's pending check).
    pub(super) fn schedule(&mut self, port: u32, now: u64) {
        let pt = &self.ports[port as usize];
        let dt = pt.lm.as_ref().and_then(|lm| {
            let rates = &pt.rates;
            lm.next_crossing_ns(|id| rates.iter().find(|r| r.0 == id).map_or(0.0, |r| r.1))
        });
        match dt.filter(|d| *d < 1e18) {
            Some(dt) => self.reclass.set(port, now + dt.ceil().max(1.0) as u64),
            None => self.reclass.remove(port),
        }
    }
}

impl Engine {
    /// Group `g` (every member into `port`) moved from rate `old` to its
    /// current rate: its tasks' rates at the port follow.
    pub(super) fn group_rates_to_port(&mut self, g: u32, port: u32, old: f64) {
        let grp = &self.groups.all[g as usize];
        let d = grp.rate - old;
        for &(tid, c) in &grp.tasks {
            self.baraat.rate_add(port, tid, c as f64 * d);
        }
    }

    /// For every port of `comp_flows` (which must hold every flow into those
    /// ports, charged and cleared by the recomputation), each task's rate
    /// into the port and the next time a task there crosses the heavy
    /// threshold at those rates.
    pub(super) fn schedule_crossings(&mut self, comp_flows: &[u32]) {
        // (port, task id) and the rate of each moving flow, then summed per
        // pair.
        let mut rates = std::mem::take(&mut self.baraat.crossing);
        rates.clear();
        for &fid in comp_flows {
            let r = self.rate_of(fid);
            if r > 0.0 {
                let f = &self.fabric.flows[fid as usize];
                rates.push(((f.dst as u128) << 64 | f.tid as u128, r));
            }
        }
        rates.sort_unstable_by_key(|r| r.0);
        let mut lo = 0;
        while lo < rates.len() {
            let key = rates[lo].0;
            let mut hi = lo;
            let mut sum = 0.0;
            while hi < rates.len() && rates[hi].0 == key {
                sum += rates[hi].1;
                hi += 1;
            }
            let p = (key >> 64) as u32;
            self.baraat.ports[p as usize].rates.push((key as u64, sum));
            lo = hi;
            if hi == rates.len() || (rates[hi].0 >> 64) as u32 != p {
                self.baraat.schedule(p, self.events.now);
            }
        }
        self.baraat.crossing = rates;
    }
}
