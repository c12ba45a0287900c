//! Failures and dynamics (Horus §A.3, §C): switches and servers dying, the
//! controller's notices, relinking, and workers joining or leaving.

use netsched_core::dataplane::Notice;
use netsched_core::Nanos;
use netsched_core::{Control, Plane};

use super::events::Ev;
use super::{PoolSim, UpperState};
use crate::config::FailureEvent;
use crate::metrics::AbortReason;

impl PoolSim<'_> {
    pub(super) fn failure_concerns_pool(&self, f: &FailureEvent) -> bool {
        match *f {
            FailureEvent::Spine { id, .. } => self.plan.spines.contains(&id),
            FailureEvent::Leaf { id, .. } => self.plan.racks.iter().any(|r| r.leaf == id),
            FailureEvent::Server { id, .. } => self
                .plan
                .racks
                .iter()
                .any(|r| r.servers.iter().any(|s| s.0 == id)),
            FailureEvent::AddWorkers { pool, .. } | FailureEvent::RemoveWorkers { pool, .. } => {
                pool == self.plan.pool_id
            }
        }
    }

    /// The controller learns of a switch failure after the detection time;
    /// its notices travel hop by hop at the mean per-hop delay (Horus §C).
    pub(super) fn control_delay(&self, hops: u32) -> u64 {
        self.setup.failure_detection_ns + hops as u64 * self.setup.hop_delay.mean_ns()
    }

    pub(super) fn failure(&mut self, now: u64, index: u32) {
        // Whatever reached a scheduler before the failure was handled by it.
        self.settle_all(self.q.current());
        match self.setup.failures[index as usize].clone() {
            FailureEvent::Spine { id, .. } => {
                let dead: Vec<u32> = (0..self.uppers.len() as u32)
                    .filter(|&u| self.uppers[u as usize].spine == id)
                    .collect();
                for &u in &dead {
                    self.uppers[u as usize].alive = false;
                }
                let survivors = self.uppers.iter().any(|u| u.alive);
                for u in dead {
                    // The controller notifies every leaf that used the spine,
                    // each after its hop distance (Horus §C, Fig. 18).
                    let mut last = now;
                    let racks = self.linked_racks(u);
                    for rack in racks {
                        let d = self
                            .control_delay((self.setup.hops)(id, self.racks[rack as usize].leaf));
                        self.metrics.controller_messages += 1;
                        if self.setup.policy.is_horus() {
                            self.q.after(d, Ev::SpineFailureKnown { upper: u, rack });
                        }
                        last = last.max(now + d);
                    }
                    self.q.at(last, Ev::UpperRetired { upper: u });
                    if !self.setup.policy.is_horus() && !survivors {
                        self.q.at(last, Ev::ReplaceUpper { upper: u });
                    }
                }
            }
            FailureEvent::Leaf { id, .. } => {
                for rack in 0..self.racks.len() as u32 {
                    if self.racks[rack as usize].leaf != id {
                        continue;
                    }
                    self.racks[rack as usize].alive = false;
                    for n in self.racks[rack as usize].nodes.clone() {
                        self.fail_node(n);
                    }
                    let hops = self
                        .uppers
                        .iter()
                        .map(|u| (self.setup.hops)(u.spine, id))
                        .max()
                        .unwrap_or(1);
                    self.metrics.controller_messages += self.uppers.len() as u64;
                    self.q
                        .after(self.control_delay(hops), Ev::RackFailureKnown { rack });
                }
            }
            FailureEvent::Server { id, .. } => {
                for n in 0..self.node_server.len() as u32 {
                    if self.node_server[n as usize] == id && self.nodes.alive(n) {
                        self.fail_node(n);
                        let timeout = self.setup.heartbeat_timeout_ns;
                        self.q.after(timeout, Ev::NodeFailureKnown { node: n });
                    }
                }
            }
            FailureEvent::AddWorkers { rack, count, .. } => self.add_workers(now, rack, count),
            FailureEvent::RemoveWorkers { rack, count, .. } => {
                let Some(r) = self.racks.get(rack as usize) else {
                    return;
                };
                let victims: Vec<u32> = r
                    .nodes
                    .iter()
                    .rev()
                    .copied()
                    .filter(|&n| self.nodes.alive(n))
                    .take(count as usize)
                    .collect();
                for n in victims {
                    // Planned removal: the leaf forgets the worker at once; its
                    // queued tasks still finish.
                    self.step(now, Ev::NodeFailureKnown { node: n });
                }
            }
        }
    }

    pub(super) fn fail_node(&mut self, node: u32) {
        let mut lost = std::mem::take(&mut self.lost_buf);
        self.nodes.fail(node, &mut lost);
        for t in lost.drain(..) {
            self.abort(t, AbortReason::DeadWorker);
        }
        self.lost_buf = lost;
    }

    pub(super) fn linked_racks(&self, upper: u32) -> Vec<u32> {
        (0..self.racks.len() as u32)
            .filter(|&r| self.racks[r as usize].link.0 == upper)
            .collect()
    }

    /// Horus §A.3/§C: the controller relinks a leaf whose spine died to a
    /// surviving spine of the pool (or a replacement), which learns the rack's
    /// weight, and the leaf re-announces its idleness and load.
    pub(super) fn relink(&mut self, now: u64, dead: u32, rack: u32) {
        if self.racks[rack as usize].link.0 != dead {
            return;
        }
        let target = (0..self.uppers.len() as u32)
            .filter(|&u| self.uppers[u as usize].alive)
            .min_by_key(|&u| self.linked_racks(u).len());
        let target = match target {
            Some(t) => t,
            None => {
                let new =
                    crate::build::replacement_upper(self.setup, &[], 0, self.uppers.len() as u64);
                let spine = self.uppers[dead as usize].spine;
                self.uppers
                    .push(UpperState::new(new, Vec::new(), spine, self.racks.len()));
                (self.uppers.len() - 1) as u32
            }
        };
        let t = target as usize;
        let local = self.uppers[t].ensure_node(rack);
        self.weights_dirty = true;
        if let Some(w) = self.leaves[rack as usize].as_ref().and_then(Plane::workers) {
            self.upper_set_node(now, target, local, w);
        }
        self.racks[rack as usize].link = (target, local);
        if let Some((idle, load)) = self.leaves[rack as usize].as_mut().and_then(Plane::resync) {
            if idle {
                self.send_notice(rack, target, Notice::IdleAdd);
            }
            self.send_notice(rack, target, Notice::LoadUpdate(load));
        }
    }

    /// Horus §A.2: the controller installs the rack's 1/w at every spine
    /// that schedules over it whenever its worker count changes. A rack
    /// left with no worker keeps its last factor; its spines stop choosing
    /// it only when the rack itself fails.
    pub(super) fn install_rack_weight(&mut self, now: u64, rack: u32) {
        let Some(w) = self.leaves[rack as usize].as_ref().and_then(Plane::workers) else {
            return;
        };
        if w == 0 {
            return;
        }
        for u in 0..self.uppers.len() as u32 {
            if let Some(local) = self.uppers[u as usize].local_of(rack) {
                self.upper_set_node(now, u, local, w);
            }
        }
    }

    pub(super) fn add_workers(&mut self, now: u64, rack: u32, count: u32) {
        if rack as usize >= self.racks.len() || !self.racks[rack as usize].alive {
            return;
        }
        let server = self.plan.racks[rack as usize]
            .servers
            .first()
            .map(|s| s.0)
            .unwrap_or(0);
        for _ in 0..count {
            let node = self.nodes.add_node(1);
            self.in_flight.push(0);
            self.node_cores.push(1);
            self.node_server.push(server);
            let local = self.racks[rack as usize].nodes.len() as u32;
            self.racks[rack as usize].nodes.push(node);
            self.node_loc.push((rack, local));
            if self.setup.policy.is_flat() {
                for u in 0..self.uppers.len() as u32 {
                    self.upper_set_node(now, u, node, 1);
                }
            } else {
                let mut out = self.out.take().unwrap_or_default();
                out.clear();
                if let Some(leaf) = &mut self.leaves[rack as usize] {
                    leaf.add_node(local, 1, Nanos::new(now), &mut out);
                }
                self.lower_actions(now, rack, &mut out, None, false);
                self.out = Some(out);
            }
        }
        if !self.setup.policy.is_flat() {
            self.install_rack_weight(now, rack);
        }
        self.metrics.workers += count as u64;
        self.weights_dirty = true;
    }
}
