//! STF as the paper's centralised scheduler runs it (§5.2.1): it "determines
//! the ordering of tasks based on their sizes", knowing every task's total
//! size up front, and a task it has started keeps the link until it is done
//! (non-preemptive). Preempting a task in service for every smaller arrival
//! would make STF shortest-*remaining*-task-first, which the paper's numbers
//! rule out: with the uniform workload, whose task sizes differ by ~9 %,
//! Table 4 has STF within 0-6 % of FIFO (Orchestra) at every percentile,
//! while preemptive size order beats FIFO's median by ~80 % there
//! (docs/flowsim.md, "Baselines").
//!
//! Admission is per port (a flow's destination host, where its task's flows
//! converge): a task is admitted at a port the first time one of its flows
//! there gets a positive rate. Admitted tasks come first, in order of
//! admission (then arrival); the others wait in order of total size (then
//! arrival). Keeping the state per port keeps it inside one component:
//! every flow into a port crosses the port's downlink.

use super::Engine;

/// Keys of waiting tasks sit above every admission time (ns, < 2^62).
const WAITING: u64 = 1 << 62;

impl Engine {
    /// STF's priority key of a flow of task `slot` into `port`.
    pub(super) fn stf_key(&self, slot: u32, port: u32) -> (u64, u64) {
        let t = self.tasks.slots[slot as usize].as_ref().expect("live task");
        match t.admitted.iter().find(|a| a.0 == port) {
            Some(&(_, at_ns)) => (at_ns, t.index),
            None => (WAITING + t.total_bytes, t.index),
        }
    }

    /// Admit every task that the last water-fill gave a positive rate at a
    /// port where it was waiting, and mark those ports dirty. Returns
    /// whether any was admitted: the keys changed, so the component must be
    /// filled again (until no admission is left, a fixed point that a
    /// from-scratch recomputation reaches too).
    pub(super) fn admit_served(&mut self) -> bool {
        let mut any = false;
        for k in 0..self.scratch.comp_flows.len() {
            let fid = self.scratch.comp_flows[k];
            if self.rate_of(fid) <= 0.0 {
                continue;
            }
            let f = &self.fabric.flows[fid as usize];
            let (slot, port) = (f.task, f.dst);
            let now = self.events.now;
            let t = self.tasks.slots[slot as usize].as_mut().expect("live task");
            if t.admitted.iter().all(|a| a.0 != port) {
                t.admitted.push((port, now));
                self.instant.dirty.push(self.topo.host_down(port));
                any = true;
            }
        }
        any
    }
}
