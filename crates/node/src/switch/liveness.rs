//! The leaf controller's failure detector (Horus §A.3 "Server Failures"):
//! workers silent past the heartbeat timeout leave the data plane, and come
//! back when heard from.

use netsched_core::Nanos;
use netsched_core::{Control, Input, Outbox};

use super::SwitchDaemon;

impl SwitchDaemon {
    /// Leaf controller (§A.3): a worker heard from is alive; one that was
    /// removed is added back, idle.
    pub(super) fn heard_from(&mut self, i: usize, node: usize, now: u64) {
        let inst = &mut self.instances[i];
        inst.last_seen[node] = now;
        // A worker the controller removed stays out however alive it is.
        if !inst.alive[node] && inst.enabled[node] {
            inst.alive[node] = true;
            let mut out = Outbox::new();
            inst.plane
                .add_node(node as u32, 1, Nanos::new(now), &mut out);
            let live = inst.alive.iter().filter(|a| **a).count() as u64;
            self.registry.set(inst.live_gauge, live);
            self.registry.inc(self.slots.recovered_workers);
            let pool = inst.cfg.pool;
            tracing::info!(target: "switch", pool, node, "worker back");
            self.execute(i, &mut out, false, None);
            self.flush_resubmits(i, now);
        }
    }

    /// Runs resubmissions a control operation left queued (none today).
    pub(super) fn flush_resubmits(&mut self, i: usize, now: u64) {
        if let Some(r) = self.resubmits.pop_front() {
            self.run_passes(i, now, Input::Resubmit(r), None);
        }
    }

    /// Soft state (`soft_state_ms`, `HorusOptions::soft_state_ns`): each
    /// data plane's control-plane timer. A Horus leaf re-sends its idle
    /// state and load to its spine when due (sealed like every notice), a
    /// spine forgets racks that stopped refreshing. With XDP the state
    /// lives in the program's maps, not in this control view: an XDP spine
    /// gets the clock and expires in the program; an XDP leaf refreshes
    /// from what it reads in the maps.
    pub(super) fn tick_planes(&mut self, now: u64) {
        if self.xdp.is_some() {
            self.xdp_set_clock(now);
            return self.xdp_refresh(now);
        }
        for i in 0..self.instances.len() {
            let mut out = Outbox::new();
            self.instances[i].plane.tick(Nanos::new(now), &mut out);
            if !out.is_empty() {
                self.execute(i, &mut out, false, None);
            }
        }
    }

    /// Leaf controller (§A.3): removes workers silent for longer than the
    /// heartbeat timeout. The rack's new 1/w at its spine is the centralized
    /// controller's to install (controller/reconcile.rs, from the leaf's status).
    pub fn check_liveness(&mut self, now: u64) {
        for i in 0..self.instances.len() {
            let timeout = self.instances[i].cfg.heartbeat_timeout_ms * 1_000_000;
            if timeout == 0 {
                continue;
            }
            for node in 0..self.instances[i].alive.len() {
                let inst = &mut self.instances[i];
                if inst.alive[node] && now.saturating_sub(inst.last_seen[node]) > timeout {
                    inst.alive[node] = false;
                    let mut out = Outbox::new();
                    inst.plane
                        .remove_node(node as u32, Nanos::new(now), &mut out);
                    let live = inst.alive.iter().filter(|a| **a).count() as u64;
                    self.registry.set(inst.live_gauge, live);
                    self.registry.inc(self.slots.failed_workers);
                    let pool = inst.cfg.pool;
                    tracing::warn!(target: "switch", pool, node, "worker failed: heartbeat timeout");
                    self.execute(i, &mut out, false, None);
                    self.flush_resubmits(i, now);
                }
            }
        }
    }
}
