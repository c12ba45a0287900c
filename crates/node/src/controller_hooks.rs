//! The scheduler daemon's side of the control protocol
//! (`controller_proto`): status reports to the centralized controller and
//! configuration pushes from it, applied to the data planes through their
//! control-plane interfaces (the switch CPU's role, Horus §3.2, §A.3).
//!
//! A child module of `switch`, so it reaches the instances directly; the
//! data path in `switch.rs` only calls [`SwitchDaemon::on_control`] and
//! [`SwitchDaemon::send_status`].

use std::net::SocketAddr;

use netsched_core::{Notice, Outbox, Upstream};

use super::{Instance, Plane, SwitchDaemon};
use crate::config::Role;
use crate::controller_proto::{
    policy_name, ControlMsg, DaemonStatus, InstanceDesired, InstanceStatus,
};
use crate::metrics::{Kind, Registry, Slot};

/// Metric slots of the control path.
pub(super) struct ControlSlots {
    pub fault_drops: crate::fault::FaultCounters,
    rx: Slot,
    rejected: Slot,
    status_tx: Slot,
    applied: Slot,
    resyncs: Slot,
}

impl ControlSlots {
    pub fn register(reg: &mut Registry) -> Self {
        ControlSlots {
            fault_drops: crate::fault::FaultCounters::register(reg, &[]),
            rx: reg.register(
                "netsched_control_rx_total",
                "Control datagrams received from the controller",
                Kind::Counter,
                &[],
            ),
            rejected: reg.register(
                "netsched_control_rejected_total",
                "Control datagrams rejected (wrong source, undecodable, inapplicable)",
                Kind::Counter,
                &[],
            ),
            status_tx: reg.register(
                "netsched_control_status_tx_total",
                "Status reports sent to the controller",
                Kind::Counter,
                &[],
            ),
            applied: reg.register(
                "netsched_control_changes_total",
                "Data-plane changes made on the controller's behalf (node added, removed, relinked, 1/w)",
                Kind::Counter,
                &[],
            ),
            resyncs: reg.register(
                "netsched_control_resyncs_total",
                "Idle state and load re-sent to the linked spine on the controller's request",
                Kind::Counter,
                &[],
            ),
        }
    }
}

impl Plane {
    /// Spine: admit rack `r` with `w` live workers, or update its 1/w (§A.2).
    fn control_set_rack(&mut self, r: u32, w: u32) {
        match self {
            Plane::HorusSpine(p) => p.control_set_rack(r, w),
            Plane::RackSchedSpine(p) => p.control_add_node(r),
            Plane::Random(p) => p.control_add_node(r),
            Plane::RoundRobin(p) => p.control_add_node(r),
            _ => {}
        }
    }

    /// Spine: leaf or link failure, or the rack was removed (§A.3).
    fn control_drop_rack(&mut self, r: u32) {
        match self {
            Plane::HorusSpine(p) => p.control_remove_rack(r),
            Plane::RackSchedSpine(p) => p.control_remove_node(r),
            Plane::Random(p) => p.control_remove_node(r),
            Plane::RoundRobin(p) => p.control_remove_node(r),
            _ => {}
        }
    }
}

impl SwitchDaemon {
    /// A control datagram: only the configured controller may send one.
    pub(super) fn on_control(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        if self.controller != Some(src) {
            self.registry.inc(self.slots.control.rejected);
            return self.drop_rt(super::RuntimeDrop::UnregisteredSource);
        }
        self.registry.inc(self.slots.control.rx);
        match ControlMsg::decode(data) {
            Ok(ControlMsg::Configure(d)) => {
                if let Err(e) = self.apply(d, now) {
                    self.registry.inc(self.slots.control.rejected);
                    crate::metrics::log(
                        "warn",
                        "switch",
                        "configuration rejected",
                        &[("error", &e)],
                    );
                }
            }
            Ok(ControlMsg::Resync { pool }) => {
                if let Some(i) = self.instance_of(pool) {
                    self.resync(i);
                }
            }
            Ok(ControlMsg::Status(_)) | Err(_) => self.registry.inc(self.slots.control.rejected),
        }
        self.flush();
    }

    fn instance_of(&self, pool: u16) -> Option<usize> {
        match self.pool_index[pool as usize] {
            0 => None,
            i => Some(i as usize - 1),
        }
    }

    /// Reports every instance's state to the controller (also its keep-alive).
    pub(super) fn send_status(&mut self) {
        let Some(ctl) = self.controller else { return };
        let instances = self.instances.iter().map(status_of).collect();
        let msg = ControlMsg::Status(DaemonStatus { instances }).encode();
        // Control traffic is rare; a plain send keeps it out of the batch.
        if self.sock.send_to(&msg, ctl).is_ok() {
            self.registry.inc(self.slots.control.status_tx);
        }
    }

    fn changed(&self) {
        self.registry.inc(self.slots.control.applied);
    }

    /// Makes instance `d.pool` match the controller's desired state.
    fn apply(&mut self, d: InstanceDesired, now: u64) -> Result<(), String> {
        let i = self
            .instance_of(d.pool)
            .ok_or_else(|| format!("pool {} not hosted here", d.pool))?;
        let inst = &self.instances[i];
        if d.enabled.len() != d.downstream.len() {
            return Err("enabled needs one entry per downstream node".into());
        }
        // Node ids are indices: known ones keep their address, new ones append.
        if d.downstream.len() < inst.cfg.downstream.len()
            || d.downstream[..inst.cfg.downstream.len()] != inst.cfg.downstream[..]
        {
            return Err(format!(
                "pool {}: downstream may only grow (node ids are fixed)",
                d.pool
            ));
        }
        if d.downstream.len() > u16::MAX as usize {
            return Err("too many downstream nodes".into());
        }
        let inst = &mut self.instances[i];
        let old_n = inst.cfg.downstream.len();
        for a in &d.downstream[old_n..] {
            inst.cfg.downstream.push(*a);
            inst.last_seen.push(now);
            // New nodes join through the same path as recovered ones: a leaf
            // admits a worker when it is first heard from; a spine admits a
            // rack below when the controller enables it.
            inst.alive.push(false);
            inst.enabled.push(false);
            inst.rack_w.push(0);
        }
        match inst.cfg.role {
            Role::Leaf => self.apply_leaf(i, &d, now),
            Role::Spine => self.apply_spine(i, &d),
        }
        let inst = &self.instances[i];
        let live = inst.alive.iter().filter(|a| **a).count() as u64;
        self.registry.set(inst.live_gauge, live);
        Ok(())
    }

    fn apply_leaf(&mut self, i: usize, d: &InstanceDesired, now: u64) {
        let hb = self.instances[i].cfg.heartbeat_timeout_ms;
        for node in 0..d.enabled.len() {
            let inst = &mut self.instances[i];
            let want = d.enabled[node];
            inst.enabled[node] = want;
            let mut out = Outbox::new();
            if !want && inst.alive[node] {
                // Removed through the admin API: out of the data plane now.
                inst.alive[node] = false;
                inst.plane.control_remove(node as u32, &mut out);
            } else if want && !inst.alive[node] && hb == 0 {
                // No heartbeats to wait for: trust the controller.
                inst.alive[node] = true;
                inst.last_seen[node] = now;
                inst.plane.control_add(node as u32, &mut out);
            } else {
                continue;
            }
            self.changed();
            self.execute(i, &mut out, false, None);
            self.flush_resubmits(i, now);
        }
        if let Some(up) = &d.upstream {
            let inst = &mut self.instances[i];
            if *up != inst.cfg.upstream {
                let relinked = up.first() != inst.cfg.upstream.first();
                let pool = inst.cfg.pool;
                crate::metrics::log(
                    "info",
                    "switch",
                    "upstream changed",
                    &[
                        ("pool", &pool),
                        ("from", &format!("{:?}", inst.cfg.upstream)),
                        ("to", &format!("{up:?}")),
                    ],
                );
                inst.cfg.upstream = up.clone();
                self.changed();
                if relinked {
                    // §A.3: the new spine starts from the leaf's current state.
                    self.resync(i);
                }
            }
        }
    }

    fn apply_spine(&mut self, i: usize, d: &InstanceDesired) {
        let workers = d.rack_workers.as_ref();
        for r in 0..d.enabled.len() {
            let inst = &mut self.instances[i];
            let w = workers
                .and_then(|w| w.get(r).copied())
                .unwrap_or(inst.rack_w[r]);
            let admit = d.enabled[r] && w > 0;
            inst.enabled[r] = d.enabled[r];
            let pool = inst.cfg.pool;
            if admit && (!inst.alive[r] || inst.rack_w[r] != w) {
                // §A.2: the controller installs 1/w for the rack's live workers.
                inst.plane.control_set_rack(r as u32, w);
                if !inst.alive[r] {
                    crate::metrics::log(
                        "info",
                        "switch",
                        "rack admitted",
                        &[("pool", &pool), ("rack", &r), ("workers", &w)],
                    );
                }
                inst.alive[r] = true;
                inst.rack_w[r] = w;
                self.changed();
            } else if !admit && inst.alive[r] {
                // §A.3: a failed or removed leaf is not used for new tasks.
                inst.plane.control_drop_rack(r as u32);
                inst.alive[r] = false;
                crate::metrics::log(
                    "warn",
                    "switch",
                    "rack dropped",
                    &[("pool", &pool), ("rack", &r)],
                );
                self.changed();
            }
            if w > 0 {
                self.instances[i].rack_w[r] = w;
            }
        }
    }

    /// Leaf: tells the linked spine the rack's idle state and average load,
    /// so a spine that just (re)admitted it, or a new spine after a relink,
    /// starts from the truth rather than waiting for §A.3's lazy repair.
    fn resync(&mut self, i: usize) {
        let inst = &mut self.instances[i];
        if inst.cfg.role != Role::Leaf {
            return;
        }
        let Plane::HorusLeaf(leaf) = &mut inst.plane else {
            return;
        };
        let (idle, avg) = leaf.control_resync();
        self.registry.inc(self.slots.control.resyncs);
        self.notify(
            i,
            Upstream::Linked,
            if idle {
                Notice::IdleAdd
            } else {
                Notice::IdleRemove
            },
        );
        self.notify(i, Upstream::Linked, Notice::LoadUpdate(avg));
        self.flush();
    }
}

fn status_of(inst: &Instance) -> InstanceStatus {
    InstanceStatus {
        pool: inst.cfg.pool,
        role: inst.cfg.role.into(),
        policy: policy_name(inst.cfg.policy),
        rack: inst.cfg.rack,
        downstream: inst.cfg.downstream.clone(),
        enabled: inst.enabled.clone(),
        live: inst.alive.clone(),
        upstream: inst.cfg.upstream.clone(),
        rack_workers: if inst.cfg.role == Role::Spine {
            inst.rack_w.clone()
        } else {
            Vec::new()
        },
        idle: inst.plane.idle_len(),
    }
}
