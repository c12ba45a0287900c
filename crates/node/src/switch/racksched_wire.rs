//! Child module of `switch`: what the daemon does for RackSched's own wire
//! family, for queueing baselines and for the ideal baselines' zero-delay
//! feed. Still only driving: every choice is the data plane's.
//!
//! * **RackSched family** (OSDI'20 §3.2, Fig. 4b). REQF/REQR become
//!   `Input::Task` with id = REQ_ID and are forwarded byte for byte to the
//!   chosen server (no header field names a destination); a REP at a leaf is
//!   `Input::Reply` with the server's LOAD and the REQ_ID whose ReqTable entry
//!   it frees (Alg. 1 lines 6-8), then goes on to the client; a leaf whose
//!   tasks come in this family sends its rack load to spines as LOAD_REPORTs
//!   (RS-H, Horus §4.1). RackSched requests and replies carry no pool id
//!   (one rack, one application, §3.2), so the instance is chosen by source:
//!   a request goes to the instance whose upstream spines or `clients` list
//!   its sender (else the only open one, see `SwitchDaemon::task_instance`),
//!   a REP to the instance its sender is a downstream node of; a source that
//!   fits several is an `ambiguous_source` drop, one that fits none an
//!   `unregistered_source` drop. LOAD_REPORTs name their pool. The server is
//!   identified by the REP's source address. A failed request
//!   is answered with a REP whose class is [`RS_FAILED_CLASS`] and whose
//!   payload is the reason (the REP header has no status field).
//! * **Parked packets.** A plane that buffers a task (`Action::Queued`,
//!   the central queue) dispatches it later, on another input: the driver
//!   keeps the packet's bytes by task id until then.
//! * **Zero-delay feed.** `jsq` and `pow2-instant` are ideal baselines fed by
//!   `Input::QueueChanged`. This scheduler sees every task it dispatches and
//!   every reply (a spine: the replies its leaves forward), so the number of
//!   tasks outstanding at each node is exact and current; it is fed after
//!   every dispatch and every reply.

use netsched_core::Nanos;
use std::net::SocketAddr;

use netsched_core::{DataPlane, Input, Outbox, TaskMeta, Upstream};
use netsched_proto::{
    task_id, Message, RackSchedLoadReport, RackSchedMessage, RackSchedPacket, ReqId,
};

use super::slots::{TX_FAILED, TX_REPLY};
use super::{Pkt, RuntimeDrop, SwitchDaemon};
use crate::config::Role;
use crate::metrics::{Kind, Registry, Slot};

pub use crate::worker::RS_FAILED_CLASS;

/// Received RackSched datagrams by type.
pub(super) struct RsSlots {
    rx: [Slot; 4],
}

const RS_TYPES: [&str; 4] = [
    "racksched_req_first",
    "racksched_req_rest",
    "racksched_reply",
    "racksched_load_report",
];

/// Registers the RackSched receive counters (called while building the
/// registry).
pub(super) fn register_rs(reg: &mut Registry) -> RsSlots {
    RsSlots {
        rx: RS_TYPES.map(|t| {
            reg.register(
                "netsched_rx_packets_total",
                "Datagrams received, by message type",
                Kind::Counter,
                &[("type", t)],
            )
        }),
    }
}

/// REQ_ID of a RackSched request datagram, as a task id.
pub(super) fn req_id(bytes: &[u8]) -> Option<u64> {
    match Message::decode(bytes).ok()? {
        Message::RackSched(m) => m.packet().map(|p| p.req_id.as_u64()),
        _ => None,
    }
}

impl SwitchDaemon {
    /// The instance a REP from `src` belongs to: the one `src` is a
    /// downstream node of (a leaf's server, a spine's leaf).
    fn rs_reply_instance(&self, src: SocketAddr) -> Result<(usize, usize), RuntimeDrop> {
        let mut found = None;
        for (i, inst) in self.instances.iter().enumerate() {
            if let Some(node) = inst.cfg.downstream.iter().position(|a| *a == src) {
                if found.is_some() {
                    return Err(RuntimeDrop::AmbiguousSource);
                }
                found = Some((i, node));
            }
        }
        found.ok_or(RuntimeDrop::UnregisteredSource)
    }

    pub(super) fn handle_racksched(
        &mut self,
        data: &[u8],
        m: RackSchedMessage<'_>,
        src: SocketAddr,
        now: u64,
    ) {
        self.registry
            .inc(self.rs_slots.rx[m.racksched_type().code() as usize - 1]);
        match m {
            RackSchedMessage::ReqFirst(p) | RackSchedMessage::ReqRest(p) => {
                let app = p.req_id.client_id;
                let Some((i, upstream)) =
                    self.admit_task(None, app, src, now, Pkt::RackSched(data))
                else {
                    return;
                };
                self.instances[i].rs_wire = true;
                let meta = TaskMeta {
                    id: p.req_id.as_u64(),
                    first: matches!(m, RackSchedMessage::ReqFirst(_)),
                    last: p.is_last,
                    idle_selected: false,
                    upstream,
                    class: p.class,
                };
                self.run_passes(i, now, Input::Task(meta), Some(Pkt::RackSched(data)));
            }
            RackSchedMessage::Reply(p) => {
                let (i, node) = match self.rs_reply_instance(src) {
                    Ok(found) => found,
                    Err(r) => return self.drop_rt(r),
                };
                let inst = &self.instances[i];
                match inst.cfg.role {
                    Role::Leaf => {
                        if let Some(&g) = inst.qlen_gauges.get(node) {
                            self.registry.set(g, p.load as u64);
                        }
                        self.heard_from(i, node, now);
                        // A copy of an old REP carries an old LOAD: only a
                        // REP that answers a dispatch reaches the data plane
                        // (in_flight.rs).
                        let id = p.req_id.as_u64();
                        if !self.instances[i].in_flight.answer(id, node as u16) {
                            self.registry.inc(self.slots.stale_replies);
                            return self.forward_reply(i, data, id, TX_REPLY);
                        }
                        // Alg. 1 lines 6-8: free the ReqTable entry, learn LOAD.
                        // Single-queue RackSched (§4.4): loads are of class 0.
                        let input = Input::Reply {
                            node: node as u32,
                            qlen: p.load,
                            class: 0,
                            task: p.req_id.as_u64(),
                        };
                        self.run_passes(i, now, input, None);
                        self.oracle_replied(i, node as u32, now);
                    }
                    Role::Spine => self.oracle_replied(i, node as u32, now),
                }
                self.forward_reply(i, data, p.req_id.as_u64(), TX_REPLY);
            }
            RackSchedMessage::LoadReport(l) => {
                let Some(i) = self.hosted(l.pool_id, Role::Spine) else {
                    let leaf = self.hosted(l.pool_id, Role::Leaf);
                    return self.drop_rt(match leaf {
                        Some(_) => RuntimeDrop::WrongRole,
                        None => RuntimeDrop::UnknownPool,
                    });
                };
                if !self.instances[i].is_node(l.src_id, src) {
                    return self.drop_rt(RuntimeDrop::UnregisteredSource);
                }
                let input = Input::LoadUpdate {
                    node: l.src_id as u32,
                    load: l.load,
                };
                self.run_passes(i, now, input, None);
            }
        }
    }

    /// RS-H: a leaf's rack load to its spine(s) as a LOAD_REPORT, sealed
    /// as Horus notices are (notice_auth.rs).
    pub(super) fn notify_racksched(&mut self, i: usize, to: Upstream, load: u32) {
        let inst = &self.instances[i];
        let msg = Message::RackSched(RackSchedMessage::LoadReport(RackSchedLoadReport {
            src_id: inst.cfg.rack,
            pool_id: inst.cfg.pool,
            load,
        }));
        let n = match to {
            Upstream::Linked => inst.cfg.upstream.len().min(1),
            Upstream::All => inst.cfg.upstream.len(),
        };
        if n == 0 {
            return self.count_unsent_notice(5);
        }
        for k in 0..n {
            let dst = self.instances[i].cfg.upstream[k];
            self.send_sealed(msg, dst, 5);
        }
    }

    /// A failed REP for a request the data plane dropped.
    pub(super) fn fail_racksched(&mut self, bytes: &[u8], dst: SocketAddr, reason: &str) {
        let Some(id) = req_id(bytes) else { return };
        let reply = Message::RackSched(RackSchedMessage::Reply(RackSchedPacket {
            req_id: ReqId {
                client_id: task_id::app_id(id),
                local_id: task_id::seq(id),
            },
            load: 0,
            is_last: true,
            class: RS_FAILED_CLASS,
            service_time_ns: 0,
            payload: reason.as_bytes(),
        }));
        self.send(reply, dst, TX_FAILED);
    }

    /// Keeps the bytes of a task packet a plane buffered.
    pub(super) fn park(&mut self, p: Pkt<'_>) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        let id = match p {
            Pkt::Horus(m) => {
                buf.resize(netsched_proto::MAX_DATAGRAM, 0);
                match Message::Horus(*m).encode(&mut buf) {
                    Ok(n) => buf.truncate(n),
                    Err(_) => return self.drop_rt(RuntimeDrop::Encode),
                }
                m.task_id()
            }
            Pkt::RackSched(bytes) => {
                buf.extend_from_slice(bytes);
                req_id(bytes)
            }
        };
        if let Some(id) = id {
            if let Some(old) = self.parked.insert(id, buf) {
                self.spare.push(old);
            }
        }
    }

    /// Dispatches a parked packet (a queueing plane took it off its queue).
    pub(super) fn dispatch_parked(&mut self, i: usize, node: u32, meta: TaskMeta) {
        let Some(buf) = self.parked.remove(&meta.id) else {
            return self.drop_rt(RuntimeDrop::NoPacket);
        };
        match Message::decode(&buf) {
            Ok(Message::Horus(m)) => self.dispatch(i, node, meta, Some(Pkt::Horus(&m))),
            Ok(Message::RackSched(_)) => {
                match self.instances[i].cfg.downstream.get(node as usize) {
                    Some(&dst) => self.send_task(i, super::TaskOut::Raw(&buf), dst),
                    None => self.drop_rt(RuntimeDrop::NoPacket),
                }
            }
            Ok(Message::Draconis(_)) | Err(_) => self.drop_rt(RuntimeDrop::NoPacket),
        }
        self.spare.push(buf);
    }

    fn wants_oracle(&self, i: usize) -> bool {
        // The ideal baselines (the registry says which); a spine of theirs
        // would not see its workers' queues.
        self.instances[i].cfg.policy.sees_queues_instantly()
    }

    /// Zero-delay feed after a dispatch to `node`.
    pub(super) fn oracle_dispatched(&mut self, i: usize, node: u32) {
        if self.wants_oracle(i) {
            let now = self.clock.now_ns();
            self.oracle_feed(i, node, now, |o| o + 1);
        }
    }

    /// Zero-delay feed after a reply from `node`.
    pub(super) fn oracle_replied(&mut self, i: usize, node: u32, now: u64) {
        if self.wants_oracle(i) {
            self.oracle_feed(i, node, now, |o| o.saturating_sub(1));
        }
    }

    /// `node`'s outstanding tasks become `change` of them; the plane hears
    /// the new count as its queue length at `now`.
    fn oracle_feed(&mut self, i: usize, node: u32, now: u64, change: impl FnOnce(u32) -> u32) {
        let inst = &mut self.instances[i];
        let Some(o) = inst.outstanding.get_mut(node as usize) else {
            return;
        };
        *o = change(*o);
        let qlen = *o;
        let mut out = Outbox::new();
        inst.plane.handle(
            Nanos::new(now),
            Input::QueueChanged { node, qlen },
            &mut out,
        );
        self.execute(i, &mut out, false, None);
    }
}
