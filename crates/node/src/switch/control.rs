//! The scheduler daemon's side of the control protocol
//! (`controller::proto`): status reports to the centralized controller and
//! configuration pushes from it, applied to the data planes through their
//! control-plane interfaces (the switch CPU's role, Horus §3.2, §A.3).
//!
//! A child module of `switch`, so it reaches the instances directly; the
//! data path in `switch/dispatch.rs` only calls [`SwitchDaemon::on_control`] and
//! [`SwitchDaemon::send_status`].

use netsched_core::Nanos;
use std::net::SocketAddr;

use netsched_core::{Control, Notice, Outbox, Upstream};

use super::{Instance, SwitchDaemon};
use crate::config::Role;
use crate::controller::proto::{
    policy_name, ControlMsg, DaemonStatus, InstanceDesired, InstanceStatus, OpenError, Opener,
    RoleName, Sealer,
};
use crate::metrics::{Kind, Registry, Slot};

/// The daemon's half of the sealed control protocol.
pub(super) struct ControlAuth {
    sealer: Sealer,
    opener: Opener,
    local: SocketAddr,
}

impl ControlAuth {
    pub fn epoch(&self) -> u64 {
        self.sealer.epoch()
    }

    pub fn new(key: crate::secret::ClusterKey, local: SocketAddr) -> Self {
        ControlAuth {
            sealer: Sealer::new(key.clone(), local),
            opener: Opener::new(key),
            local,
        }
    }
}

/// Metric slots of the control path.
pub(super) struct ControlSlots {
    pub fault_drops: crate::fault::FaultCounters,
    rx: Slot,
    rejected: [Slot; 7],
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
            rejected: Rejected::ALL.map(|r| {
                reg.register(
                    "netsched_control_rejected_total",
                    "Control datagrams rejected, by reason",
                    Kind::Counter,
                    &[("reason", r.name())],
                )
            }),
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

/// Why an authentic configuration push cannot be applied (logged; counted
/// as `inapplicable`).
#[derive(Debug, thiserror::Error)]
pub(super) enum Inapplicable {
    #[error("pool {pool}: this daemon hosts its spine and its leaf; name the role")]
    RoleNeeded { pool: u16 },
    #[error("pool {pool}: no {role:?} instance here")]
    NoSuchRole { pool: u16, role: RoleName },
    #[error("pool {pool} not hosted here")]
    NotHosted { pool: u16 },
    #[error("enabled needs one entry per downstream node")]
    EnabledLength,
    #[error("pool {pool}: downstream may only grow (node ids are fixed)")]
    DownstreamShrinks { pool: u16 },
    #[error("too many downstream nodes")]
    TooManyNodes,
}

/// Why a control datagram was not applied.
#[derive(Clone, Copy)]
enum Rejected {
    /// Not from the configured controller.
    UnregisteredSource,
    /// No valid MAC under the cluster key (forged, altered, another
    /// cluster's, or the unsealed format).
    BadMac,
    /// Authentic but not newer than the last accepted one (a replay).
    Replayed,
    /// Authentic but sealed for another daemon or by another sender.
    Misaddressed,
    /// Authentic, but not a control message this version knows.
    Undecodable,
    /// A message only a controller receives (a status report).
    UnexpectedType,
    /// Decoded, but not applicable here (pool or role not hosted, a
    /// downstream list that shrinks, …).
    Inapplicable,
}

impl Rejected {
    const ALL: [Rejected; 7] = [
        Rejected::UnregisteredSource,
        Rejected::BadMac,
        Rejected::Replayed,
        Rejected::Misaddressed,
        Rejected::Undecodable,
        Rejected::UnexpectedType,
        Rejected::Inapplicable,
    ];

    fn name(self) -> &'static str {
        match self {
            Rejected::UnregisteredSource => "unregistered_source",
            Rejected::BadMac => "bad_mac",
            Rejected::Replayed => "replayed",
            Rejected::Misaddressed => "misaddressed",
            Rejected::Undecodable => "undecodable",
            Rejected::UnexpectedType => "unexpected_type",
            Rejected::Inapplicable => "inapplicable",
        }
    }
}

impl SwitchDaemon {
    /// A control datagram: only the configured controller may send one, and
    /// only sealed under the cluster key, fresh, and for this daemon.
    pub(super) fn on_control(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let Some(auth) = self
            .control_auth
            .as_mut()
            .filter(|_| self.controller == Some(src))
        else {
            self.reject(Rejected::UnregisteredSource);
            return self.drop_rt(super::RuntimeDrop::UnregisteredSource);
        };
        // Pushes must name this daemon's current epoch: one recorded in an
        // earlier life of this daemon is refused even as its first datagram.
        let mine = Some(auth.sealer.epoch());
        let opened = auth.opener.open(data, src, auth.local, mine);
        // `rx` counts what passed authentication, so a forger cannot move it.
        let msg = match opened {
            Ok(m) => m,
            Err(OpenError::BadMac) => return self.reject(Rejected::BadMac),
            Err(OpenError::Replayed) => return self.reject(Rejected::Replayed),
            Err(OpenError::Misaddressed) => return self.reject(Rejected::Misaddressed),
            Err(OpenError::Undecodable) => return self.reject(Rejected::Undecodable),
        };
        self.registry.inc(self.control_slots.rx);
        match msg {
            ControlMsg::Configure(d) => {
                if let Err(e) = self.apply(d, now) {
                    self.reject(Rejected::Inapplicable);
                    tracing::warn!(target: "switch", error = %e, "configuration rejected");
                }
            }
            // Only a leaf resyncs its spine.
            ControlMsg::Resync { pool } => match self.hosted(pool, Role::Leaf) {
                Some(i) => self.resync(i),
                None => self.reject(Rejected::Inapplicable),
            },
            ControlMsg::Status(_) => self.reject(Rejected::UnexpectedType),
        }
        self.flush();
    }

    fn reject(&self, why: Rejected) {
        self.registry.inc(self.control_slots.rejected[why as usize]);
    }

    /// The instance a push is for: by role where given, else the pool's
    /// only one.
    fn instance_of(&self, pool: u16, role: Option<RoleName>) -> Result<usize, Inapplicable> {
        let (spine, leaf) = (
            self.hosted(pool, Role::Spine),
            self.hosted(pool, Role::Leaf),
        );
        match (role, spine, leaf) {
            (Some(RoleName::Spine), Some(i), _) | (Some(RoleName::Leaf), _, Some(i)) => Ok(i),
            (None, Some(i), None) | (None, None, Some(i)) => Ok(i),
            (None, Some(_), Some(_)) => Err(Inapplicable::RoleNeeded { pool }),
            (Some(role), _, _) => Err(Inapplicable::NoSuchRole { pool, role }),
            (None, None, None) => Err(Inapplicable::NotHosted { pool }),
        }
    }

    /// Reports every instance's state to the controller (also its keep-alive).
    pub(super) fn send_status(&mut self) {
        let (Some(ctl), Some(auth)) = (self.controller, self.control_auth.as_mut()) else {
            return;
        };
        let instances = self.instances.iter().map(status_of).collect();
        let peer = auth.opener.epoch_of(ctl).unwrap_or(0);
        let msg = auth
            .sealer
            .seal(&ControlMsg::Status(DaemonStatus { instances }), ctl, peer);
        // Control traffic is rare; a plain send keeps it out of the batch.
        if self.sock.send_to(&msg, ctl).is_ok() {
            self.registry.inc(self.control_slots.status_tx);
        }
    }

    fn changed(&self) {
        self.registry.inc(self.control_slots.applied);
    }

    /// Makes instance `d.pool` match the controller's desired state.
    fn apply(&mut self, d: InstanceDesired, now: u64) -> Result<(), Inapplicable> {
        let i = self.instance_of(d.pool, d.role)?;
        let inst = &self.instances[i];
        if d.enabled.len() != d.downstream.len() {
            return Err(Inapplicable::EnabledLength);
        }
        // Node ids are indices: known ones keep their address, new ones append.
        if d.downstream.len() < inst.cfg.downstream.len()
            || d.downstream[..inst.cfg.downstream.len()] != inst.cfg.downstream[..]
        {
            return Err(Inapplicable::DownstreamShrinks { pool: d.pool });
        }
        if d.downstream.len() > u16::MAX as usize {
            return Err(Inapplicable::TooManyNodes);
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
            // The zero-delay feed (jsq, pow2-instant) counts every node's
            // outstanding tasks; a node it cannot count would look empty.
            inst.outstanding.push(0);
        }
        match inst.cfg.role {
            Role::Leaf => self.apply_leaf(i, &d, now),
            Role::Spine => self.apply_spine(i, &d, now),
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
                inst.plane
                    .remove_node(node as u32, Nanos::new(now), &mut out);
            } else if want && !inst.alive[node] && hb == 0 {
                // No heartbeats to wait for: trust the controller.
                inst.alive[node] = true;
                inst.last_seen[node] = now;
                inst.plane
                    .add_node(node as u32, 1, Nanos::new(now), &mut out);
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
                tracing::info!(
                    target: "switch",
                    pool,
                    from = %addr_list(&inst.cfg.upstream),
                    to = %addr_list(up),
                    "upstream changed"
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

    fn apply_spine(&mut self, i: usize, d: &InstanceDesired, now: u64) {
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
                let mut out = Outbox::new();
                inst.plane.add_node(r as u32, w, Nanos::new(now), &mut out);
                if !inst.alive[r] {
                    tracing::info!(target: "switch", pool, rack = r, workers = w, "rack admitted");
                }
                inst.alive[r] = true;
                inst.rack_w[r] = w;
                self.changed();
                // The central queue's head may leave for the admitted rack.
                self.execute(i, &mut out, false, None);
            } else if !admit && inst.alive[r] {
                // §A.3: a failed or removed leaf is not used for new tasks.
                let mut out = Outbox::new();
                inst.plane.remove_node(r as u32, Nanos::new(now), &mut out);
                inst.alive[r] = false;
                tracing::warn!(target: "switch", pool, rack = r, "rack dropped");
                self.changed();
                self.execute(i, &mut out, false, None);
            }
            if w > 0 {
                self.instances[i].rack_w[r] = w;
            }
        }
    }

    /// Leaf: tells the linked spine the rack's idle state and average load,
    /// so a spine that just (re)admitted it, or a new spine after a relink,
    /// starts from the truth rather than waiting for §A.3's lazy repair.
    pub(super) fn resync(&mut self, i: usize) {
        let inst = &mut self.instances[i];
        if inst.cfg.role != Role::Leaf {
            return;
        }
        let Some((idle, avg)) = inst.plane.resync() else {
            return;
        };
        self.registry.inc(self.control_slots.resyncs);
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
        role: inst.cfg.role,
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

/// Addresses for a log line: `a,b` (empty for none), not Debug's `[a, b]`.
fn addr_list(addrs: &[SocketAddr]) -> String {
    addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
