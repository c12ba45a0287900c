//! Running passes and executing the data plane's actions: dispatches,
//! notices, failed replies and the send path.

use netsched_core::Nanos;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netsched_core::{
    Action, DataPlane, Decision, DropReason, Input, Notice, Outbox, Resubmit, TaskMeta, Upstream,
};
use netsched_proto::{
    task_id, HorusBody, HorusHeader, HorusMessage, HorusReply, HorusTask, Message, ReplyStatus,
};

use super::racksched_wire;
use super::slots::{TX_FAILED, TX_NOTICE, TX_TASK};
use super::{Pkt, RuntimeDrop, SwitchDaemon, TaskOut};
use crate::config::Role;

impl SwitchDaemon {
    /// Feeds `input` and then every resubmission it causes, in order, before
    /// returning (run to completion).
    pub(super) fn run_passes(&mut self, i: usize, now: u64, input: Input, task: Option<Pkt<'_>>) {
        let mut input = input;
        let mut out = Outbox::new();
        // A task's decision time: its data-plane passes (first and any
        // resubmissions), not the sends that carry it out.
        let new_task = matches!(input, Input::Task(_));
        let mut decision_time = Duration::ZERO;
        loop {
            let carries_task = matches!(
                input,
                Input::Task(_)
                    | Input::Resubmit(Resubmit::Retry { .. })
                    | Input::Resubmit(Resubmit::Pow2 { .. })
            );
            let started = Instant::now();
            self.instances[i]
                .plane
                .handle(Nanos::new(now), input, &mut out);
            if carries_task {
                decision_time += started.elapsed();
            }
            self.execute(i, &mut out, carries_task, task);
            match self.resubmits.pop_front() {
                Some(r) => input = Input::Resubmit(r),
                None => break,
            }
        }
        if new_task {
            self.registry
                .observe(self.instances[i].decision_time, decision_time);
        }
    }

    /// Executes the actions in `out` (resubmissions are queued, not run).
    pub(super) fn execute(
        &mut self,
        i: usize,
        out: &mut Outbox,
        carries_task: bool,
        task: Option<Pkt<'_>>,
    ) {
        for a in out.drain() {
            match a {
                Action::Dispatch(d) => {
                    let kind = match d.decision {
                        Decision::Idle => 0,
                        Decision::Sampled => 1,
                        Decision::Other => 2,
                    };
                    self.registry.inc(self.slots.decisions[kind]);
                    let inst = &mut self.instances[i];
                    if inst.cfg.role == Role::Leaf {
                        let now = self.clock.now_ns();
                        inst.in_flight.dispatched(d.task.id, d.node as u16, now);
                    }
                    self.dispatch(i, d.node, d.task, task);
                    self.oracle_dispatched(i, d.node);
                }
                Action::Resubmit(r) => {
                    self.registry.inc(self.slots.resubmissions);
                    self.resubmits.push_back(r);
                }
                Action::Notify { to, notice } => self.notify(i, to, notice),
                Action::Drop(reason) => {
                    let k = DropReason::ALL.iter().position(|r| *r == reason);
                    self.registry.inc(self.slots.dp_drops[k.unwrap_or(0)]);
                    if carries_task && self.fail_replies {
                        if let Some(m) = task {
                            self.fail_task(i, m, reason);
                        }
                    }
                }
                Action::Queued => {
                    self.registry.inc(self.slots.queued);
                    if let Some(p) = task {
                        self.park(p);
                    }
                }
            }
        }
    }

    /// Forwards the task packet being processed to downstream `node`, with
    /// the header's `dst_id` and the idleSelected mark set by the data plane.
    pub(super) fn dispatch(&mut self, i: usize, node: u32, meta: TaskMeta, task: Option<Pkt<'_>>) {
        let m = match task {
            Some(Pkt::Horus(m)) if m.task_id() == Some(meta.id) => m,
            Some(Pkt::RackSched(bytes)) if racksched_wire::req_id(bytes) == Some(meta.id) => {
                let Some(&dst) = self.instances[i].cfg.downstream.get(node as usize) else {
                    return self.drop_rt(RuntimeDrop::NoPacket);
                };
                return self.send_task(i, TaskOut::Raw(bytes), dst);
            }
            // Not the packet of this pass: one a queueing plane parked.
            _ => return self.dispatch_parked(i, node, meta),
        };
        let t = match m.body {
            HorusBody::TaskFirst(t) | HorusBody::TaskContinuation(t) => t,
            _ => return self.drop_rt(RuntimeDrop::NoPacket),
        };
        let t = HorusTask {
            idle_selected: meta.idle_selected && meta.first,
            ..t
        };
        let body = if meta.first {
            HorusBody::TaskFirst(t)
        } else {
            HorusBody::TaskContinuation(t)
        };
        let out = HorusMessage {
            header: HorusHeader {
                dst_id: node as u16,
                ..m.header
            },
            body,
        };
        let Some(&dst) = self.instances[i].cfg.downstream.get(node as usize) else {
            return self.drop_rt(RuntimeDrop::NoPacket);
        };
        self.send_task(i, TaskOut::Encode(&Message::Horus(out)), dst);
    }

    /// Sends a task packet on to `dst`. A leaf with the notice key seals it
    /// (its downstream are workers, which run only sealed tasks; every
    /// dispatch of a leaf, resubmitted or parked, comes through here);
    /// a spine's go to leaves unsealed, as clients' do.
    pub(super) fn send_task(&mut self, i: usize, task: TaskOut<'_>, dst: SocketAddr) {
        let seals = self.instances[i].cfg.role == Role::Leaf;
        if self.txb.is_full() {
            self.flush();
        }
        let buf = self.txb.next_buf();
        let written = match task {
            TaskOut::Encode(msg) => msg.encode(buf),
            TaskOut::Raw(bytes) => match buf.get_mut(..bytes.len()) {
                Some(b) => {
                    b.copy_from_slice(bytes);
                    Ok(bytes.len())
                }
                None => Err(netsched_proto::EncodeError::BufferTooSmall {
                    needed: bytes.len(),
                    got: buf.len(),
                }),
            },
        };
        let sealed = written.and_then(|n| match &self.notice {
            Some(s) if seals => s.seal_task(buf, n),
            _ => Ok(n),
        });
        match sealed {
            Ok(n) => self.txb.commit(n, dst, TX_TASK as u8),
            Err(_) => self.drop_rt(RuntimeDrop::Encode),
        }
    }

    pub(super) fn notify(&mut self, i: usize, to: Upstream, notice: Notice) {
        let inst = &self.instances[i];
        if let (true, Notice::LoadUpdate(load)) = (inst.rs_wire, notice) {
            return self.notify_racksched(i, to, load);
        }
        let (body, tx) = match notice {
            Notice::IdleAdd => (HorusBody::IdleAdd, 3),
            Notice::IdleRemove => (HorusBody::IdleRemove, 4),
            Notice::LoadUpdate(load) => (HorusBody::LoadUpdate { load }, 5),
            // Only `horus-tokens` with slot tokens emits it, a simulator
            // policy the daemon does not run; the wire has no message for it.
            Notice::SlotAdd => return self.drop_rt(RuntimeDrop::WrongRole),
        };
        let msg = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: inst.cfg.pool,
                src_id: inst.cfg.rack,
                ..Default::default()
            },
            body,
        });
        let n = match to {
            Upstream::Linked => inst.cfg.upstream.len().min(1),
            Upstream::All => inst.cfg.upstream.len(),
        };
        if n == 0 {
            return self.count_unsent_notice(tx);
        }
        for k in 0..n {
            let dst = self.instances[i].cfg.upstream[k];
            self.send_sealed(msg, dst, tx);
        }
    }

    /// As [`Self::send`], sealed when sealing is on (notice_auth.rs).
    pub(super) fn send_sealed(&mut self, msg: Message<'_>, dst: SocketAddr, tx: usize) {
        if self.txb.is_full() {
            self.flush();
        }
        let buf = self.txb.next_buf();
        let sealed = msg.encode(buf).and_then(|n| match &self.notice {
            Some(s) => s.seal(buf, n),
            None => Ok(n),
        });
        match sealed {
            Ok(n) => self.txb.commit(n, dst, tx as u8),
            Err(_) => self.drop_rt(RuntimeDrop::Encode),
        }
    }

    /// A notice of tx type `tx` that a leaf without upstream could not send.
    pub(super) fn count_unsent_notice(&self, tx: usize) {
        self.registry.inc(self.slots.unsent_notices[tx - TX_NOTICE]);
    }

    /// Answers a task the data plane dropped with a failed reply whose
    /// payload names the reason.
    pub(super) fn fail_task(&mut self, i: usize, p: Pkt<'_>, reason: DropReason) {
        let id = match p {
            Pkt::Horus(m) => m.task_id(),
            Pkt::RackSched(bytes) => racksched_wire::req_id(bytes),
        };
        let Some(id) = id else { return };
        let Some(dst) = self.instances[i].routes.get(task_id::app_id(id)) else {
            return self.drop_rt(RuntimeDrop::NoRoute);
        };
        self.send_failed(p, dst, reason.name());
    }

    /// Sends `dst` a failed reply to task packet `p` naming `reason`.
    pub(super) fn send_failed(&mut self, p: Pkt<'_>, dst: SocketAddr, reason: &str) {
        let m = match p {
            Pkt::Horus(m) => m,
            Pkt::RackSched(bytes) => return self.fail_racksched(bytes, dst, reason),
        };
        let Some(id) = m.task_id() else { return };
        let reply = Message::Horus(HorusMessage {
            header: HorusHeader {
                pool_id: m.header.pool_id,
                seq: m.header.seq,
                ..Default::default()
            },
            body: HorusBody::Reply(HorusReply {
                task_id: id,
                status: ReplyStatus::Failed,
                payload: reason.as_bytes(),
            }),
        });
        self.send(reply, dst, TX_FAILED);
    }

    pub(super) fn forward_reply(&mut self, i: usize, data: &[u8], id: u64, tx: usize) {
        let Some(dst) = self.instances[i].routes.get(task_id::app_id(id)) else {
            return self.drop_rt(RuntimeDrop::NoRoute);
        };
        self.send_raw(data, dst, tx);
    }

    pub(super) fn send(&mut self, msg: Message<'_>, dst: SocketAddr, tx: usize) {
        if self.txb.is_full() {
            self.flush();
        }
        match msg.encode(self.txb.next_buf()) {
            Ok(n) => self.txb.commit(n, dst, tx as u8),
            Err(_) => self.drop_rt(RuntimeDrop::Encode),
        }
    }

    pub(super) fn send_raw(&mut self, bytes: &[u8], dst: SocketAddr, tx: usize) {
        if self.txb.is_full() {
            self.flush();
        }
        let buf = self.txb.next_buf();
        match buf.get_mut(..bytes.len()) {
            Some(b) => {
                b.copy_from_slice(bytes);
                self.txb.commit(bytes.len(), dst, tx as u8);
            }
            None => self.drop_rt(RuntimeDrop::Encode),
        }
    }
}
