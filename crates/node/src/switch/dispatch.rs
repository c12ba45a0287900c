//! Datagram dispatch: decodes a datagram, checks its source and picks the
//! instance it is for (module docs of `switch`), then hands it to the data
//! plane.

use std::net::SocketAddr;

use netsched_core::{Input, Outbox, Plane, TaskMeta};
use netsched_proto::{task_id, DecodeError, HorusBody, Message};

use super::instance::role_slot;
use super::reply_routes::RouteRefused;
use super::slots::TX_REPLY;
use super::{Pkt, RuntimeDrop, SwitchDaemon};
use crate::config::Role;

impl SwitchDaemon {
    /// One datagram, run to completion; output stays queued until `flush`.
    pub(super) fn handle_datagram(&mut self, data: &[u8], src: SocketAddr, now: u64) {
        let msg = match Message::decode(data) {
            Ok(Message::Horus(m)) => m,
            Ok(Message::RackSched(m)) => return self.handle_racksched(data, m, src, now),
            // Pull scheduling runs in its own daemon (crate::pull::switch).
            Ok(Message::Draconis(_)) => {
                self.registry.inc(self.slots.rx[7]);
                return self.drop_rt(RuntimeDrop::UnsupportedFamily);
            }
            Err(e) => {
                self.registry.inc(self.slots.rx[7]);
                return self.drop_rt(match e {
                    DecodeError::Truncated { .. } => RuntimeDrop::Truncated,
                    DecodeError::UnknownType(_) => RuntimeDrop::UnknownType,
                    DecodeError::Inconsistent(_) => RuntimeDrop::Inconsistent,
                    DecodeError::TrailingBytes => RuntimeDrop::TrailingBytes,
                });
            }
        };
        self.registry
            .inc(self.slots.rx[msg.body.horus_type().code() as usize - 1]);
        let h = msg.header;
        let pool = h.pool_id;
        if self.pool_index[pool as usize] == [0, 0] {
            return self.drop_rt(RuntimeDrop::UnknownPool);
        }
        match msg.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => {
                let app = task_id::app_id(t.task_id);
                let Some((i, upstream)) =
                    self.admit_task(Some(pool), app, src, now, Pkt::Horus(&msg))
                else {
                    return;
                };
                let meta = TaskMeta {
                    id: t.task_id,
                    first: matches!(msg.body, HorusBody::TaskFirst(_)),
                    last: t.is_last,
                    idle_selected: t.idle_selected,
                    upstream,
                    class: t.class,
                };
                self.run_passes(i, now, Input::Task(meta), Some(Pkt::Horus(&msg)));
            }
            HorusBody::Reply(r) => {
                // A worker's reply belongs to the pool's leaf, a leaf's to
                // the pool's spine: the sender is a downstream node of one.
                let leaf = self.hosted(pool, Role::Leaf);
                let spine = self.hosted(pool, Role::Spine);
                let i = match (leaf, spine) {
                    (Some(l), _) if self.instances[l].is_node(h.src_id, src) => l,
                    (_, Some(s)) if self.instances[s].cfg.downstream.contains(&src) => s,
                    _ => return self.drop_rt(RuntimeDrop::UnregisteredSource),
                };
                let inst = &self.instances[i];
                match inst.cfg.role {
                    Role::Leaf => {
                        if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                            self.registry.set(g, h.qlen as u64);
                        }
                        self.heard_from(i, h.src_id as usize, now);
                        // Only a reply that answers a dispatch may move the
                        // worker's load and idle state (in_flight.rs).
                        let inst = &mut self.instances[i];
                        if !inst.in_flight.answer(r.task_id, h.src_id) {
                            self.registry.inc(self.slots.stale_replies);
                            self.forward_reply(i, data, r.task_id, TX_REPLY);
                            return;
                        }
                        // §3.4: the reply carries the worker's queue length.
                        let input = Input::Reply {
                            node: h.src_id as u32,
                            qlen: h.qlen as u32,
                            class: 0,
                            task: r.task_id,
                        };
                        self.run_passes(i, now, input, None);
                        self.oracle_replied(i, h.src_id as u32, now);
                    }
                    Role::Spine => {
                        // Replies pass through on their way to the client; a
                        // spine's data plane has nothing to learn from them,
                        // except the zero-delay feed of ideal baselines.
                        if let Some(rack) = inst.cfg.downstream.iter().position(|a| *a == src) {
                            self.oracle_replied(i, rack as u32, now);
                        }
                    }
                }
                self.forward_reply(i, data, r.task_id, TX_REPLY);
            }
            HorusBody::IdleAdd | HorusBody::IdleRemove | HorusBody::LoadUpdate { .. } => {
                // Notices go up to a spine (§3.4).
                let Some(i) = self.hosted(pool, Role::Spine) else {
                    return self.drop_rt(RuntimeDrop::WrongRole);
                };
                if !self.instances[i].is_node(h.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                let node = h.src_id as u32;
                let input = match msg.body {
                    HorusBody::IdleAdd => Input::IdleAdd { node },
                    HorusBody::IdleRemove => Input::IdleRemove { node },
                    HorusBody::LoadUpdate { load } => Input::LoadUpdate { node, load },
                    _ => unreachable!(),
                };
                self.run_passes(i, now, input, None);
            }
            HorusBody::KeepAlive => {
                // Heartbeats feed a leaf controller (§A.3).
                let Some(i) = self.hosted(pool, Role::Leaf) else {
                    return self.drop_rt(RuntimeDrop::WrongRole);
                };
                let inst = &self.instances[i];
                if !inst.is_node(h.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                // The failure detector's, and the leaf's reconciliation.
                if let Some(&g) = inst.qlen_gauges.get(h.src_id as usize) {
                    self.registry.set(g, h.qlen as u64);
                }
                self.heard_from(i, h.src_id as usize, now);
                // The heartbeat's queue length is the truth the leaf's
                // counters are reconciled with.
                if let Plane::HorusLeaf(leaf) = &mut self.instances[i].plane {
                    let mut out = Outbox::new();
                    leaf.control_reconcile_worker(h.src_id as u32, h.qlen as u32, now, &mut out);
                    self.execute(i, &mut out, false, None);
                }
            }
        }
    }

    /// The instance of `pool` in `role`, if this daemon hosts it.
    #[inline]
    pub(super) fn hosted(&self, pool: u16, role: Role) -> Option<usize> {
        match self.pool_index[pool as usize][role_slot(role)] {
            0 => None,
            i => Some(i as usize - 1),
        }
    }

    /// The instance a task from `src` is for, among those of `pool` (Horus
    /// wire) or all of them (RackSched wire, which names no pool): the one
    /// whose upstream spines or clients list `src`; failing that the only
    /// open instance, or the only open entry point (a spine, or a leaf with
    /// no spine) if several are open. Allocation-free: a linear scan over a
    /// handful of instances.
    pub(super) fn task_instance(
        &self,
        pool: Option<u16>,
        src: SocketAddr,
    ) -> Result<usize, RuntimeDrop> {
        let candidates = || {
            self.instances
                .iter()
                .enumerate()
                .filter(move |(_, inst)| pool.is_none_or(|p| inst.cfg.pool == p))
        };
        if let Some(i) = unique(candidates().filter(|(_, inst)| inst.permits(src)))? {
            return Ok(i);
        }
        let open = || candidates().filter(|(_, inst)| inst.is_open());
        match unique(open()) {
            Ok(Some(i)) => Ok(i),
            Ok(None) if candidates().next().is_none() => Err(RuntimeDrop::UnknownPool),
            Ok(None) => Err(RuntimeDrop::UnregisteredSource),
            Err(_) => unique(open().filter(|(_, inst)| inst.is_entry()))?
                .ok_or(RuntimeDrop::AmbiguousSource),
        }
    }

    /// Remembers where `app`'s replies go, if `src` may say so: a closed
    /// instance accepted the task only from a permitted source already.
    /// Every client host is held to its share of the table, and an
    /// application's route stays with the host that taught it while in use
    /// (reply_routes.rs); an upstream spine is trusted with both.
    pub(super) fn learn_route(
        &mut self,
        i: usize,
        app: u32,
        src: SocketAddr,
        now: u64,
    ) -> Result<(), RuntimeDrop> {
        let inst = &mut self.instances[i];
        let trusted = inst.is_upstream(src);
        inst.routes
            .learn(app, src, !trusted, now)
            .map_err(|e| match e {
                RouteRefused::Full => RuntimeDrop::RouteTableFull,
                RouteRefused::SourceLimit => RuntimeDrop::RouteSourceLimit,
                RouteRefused::Owned => RuntimeDrop::RouteOwned,
            })
    }

    /// A task of application `app` from `src` (in `pool`; `None`: the
    /// RackSched wire, which names none): the instance that takes it, with
    /// its reply route learned, and the index of the upstream spine it came
    /// from (§A.4: a leaf's connection table remembers it; 0 from a
    /// client). `None` once it is dropped or refused.
    pub(super) fn admit_task(
        &mut self,
        pool: Option<u16>,
        app: u32,
        src: SocketAddr,
        now: u64,
        p: Pkt<'_>,
    ) -> Option<(usize, u32)> {
        let i = match self.task_instance(pool, src) {
            Ok(i) => i,
            Err(r) => {
                self.drop_rt(r);
                return None;
            }
        };
        if let Err(r) = self.learn_route(i, app, src, now) {
            self.refuse_task(p, src, r);
            return None;
        }
        let upstream = self.instances[i]
            .cfg
            .upstream
            .iter()
            .position(|a| *a == src);
        Some((i, upstream.unwrap_or(0) as u32))
    }

    /// A task whose reply route could not be learned: counted, and answered
    /// with a failed reply straight to its sender (the only address known
    /// for it), so the client learns at once instead of timing out.
    pub(super) fn refuse_task(&mut self, p: Pkt<'_>, src: SocketAddr, r: RuntimeDrop) {
        self.drop_rt(r);
        if self.fail_replies {
            self.send_failed(p, src, r.name());
        }
    }
}

/// The index of the only item, `None` if there is none, or
/// `AmbiguousSource` if there are several.
pub(super) fn unique<'a, T: 'a>(
    mut it: impl Iterator<Item = (usize, &'a T)>,
) -> Result<Option<usize>, RuntimeDrop> {
    match (it.next(), it.next()) {
        (None, _) => Ok(None),
        (Some((i, _)), None) => Ok(Some(i)),
        (Some(_), Some(_)) => Err(RuntimeDrop::AmbiguousSource),
    }
}
