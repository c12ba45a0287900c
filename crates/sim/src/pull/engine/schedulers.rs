//! The pull simulator's side of the schedulers: it feeds each input to the
//! [`PullPlane`] (or `racksched`'s push [`Plane`]) at the instant the
//! switch pipeline or the software scheduler takes it, and turns the
//! actions into events.

use super::pipeline::{PROBE_FRAME_BYTES, RECIRC_FRAME_BYTES};
use super::*;
use netsched_core::dataplane::{Dispatch, DropReason};
use netsched_core::Nanos;

use crate::pull::config::ServerMessage;

/// A Draconis-Server message's kind: a task_request is an assignment if
/// it got a task and a poll otherwise.
fn server_message(request: bool, submission: bool, out: &PullOutbox) -> ServerMessage {
    let assigned = || {
        out.as_slice()
            .iter()
            .any(|a| matches!(a, PullAction::AssignTask { .. }))
    };
    match (request, submission) {
        (true, _) if assigned() => ServerMessage::Assign,
        (true, _) => ServerMessage::Poll,
        (_, true) => ServerMessage::Submit,
        _ => ServerMessage::Other,
    }
}

impl Sim<'_> {
    pub(super) fn send_pull(&mut self, at: u64, plane: u32, input: PullInput) {
        let i = self.pkts.put(input);
        self.q.at(at, Ev::Pull(plane, i));
    }

    /// One input at pull scheduler `s` and its actions.
    pub(super) fn pull(&mut self, now: u64, s: u32, input: PullInput) {
        let mut out = std::mem::replace(&mut self.out, PullOutbox::with_capacity(0));
        out.clear();
        let plane = &mut self.planes[s as usize];
        let kind = plane.kind();
        // Sparrow has no acknowledgment: a job its scheduler takes (no
        // drop) is accepted, see `accepted`.
        let sparrow_job = match input {
            PullInput::JobSubmission(job) if kind == PullPlaneKind::Sparrow => Some(job.tasks),
            _ => None,
        };
        // The instant the actions leave the scheduler.
        let t = match kind {
            PullPlaneKind::Switch | PullPlaneKind::Jbsq => {
                let pass = self.pipeline.as_mut().map_or(now, |p| p.admit(now));
                plane.handle(Nanos::new(pass), input, &mut out);
                pass
            }
            // A software scheduler: cores that run each message to
            // completion, taken in arrival order by the core that frees
            // first. A Draconis-Server message costs what its kind costs
            // (docs/draconis.md, "Calibration"), a Sparrow message msg_ns.
            // Handling at `start` and releasing the output at `finish` is
            // exact for one core (messages are served in arrival order);
            // with several, the queue is updated in start order, as a lock
            // taken when a core picks a message up would.
            PullPlaneKind::Server | PullPlaneKind::Sparrow => {
                let cores = &mut self.free_at[s as usize];
                let core = (0..cores.len())
                    .min_by_key(|&i| cores[i])
                    .expect("a software scheduler has a core");
                let start = now.max(cores[core]);
                let before = plane.server_steps().unwrap_or(0);
                let request = matches!(input, PullInput::TaskRequest(_));
                let submission = matches!(input, PullInput::JobSubmission(_));
                plane.handle(Nanos::new(start), input, &mut out);
                let finish = match plane.server_steps() {
                    Some(after) => {
                        let kind = server_message(request, submission, &out);
                        start + self.cfg.server.cost_ns(kind, after - before)
                    }
                    None => start + self.cfg.sparrow.msg_ns,
                };
                cores[core] = finish;
                finish
            }
        };
        // A switch is one link from a host, a software scheduler two.
        let at_host = t + self.sched_link;
        let slots = self.cfg.sparrow.max_jobs;
        if let Some(tasks) = sparrow_job {
            if !out
                .as_slice()
                .iter()
                .any(|a| matches!(a, PullAction::Drop(_)))
            {
                for t in tasks.as_slice() {
                    self.accepted(t.id, t.fn_par as u32);
                }
            }
        }
        for a in out.drain() {
            match a {
                PullAction::AssignTask {
                    executor,
                    task,
                    skips,
                    ..
                } => {
                    self.check_locality(executor, &task, skips);
                    self.accepted(task.id, task.fn_par as u32);
                    self.q.at(at_host, Ev::ExecTask(executor, task))
                }
                PullAction::NoOp { executor } => {
                    self.m.noops += 1;
                    let ev = match kind {
                        PullPlaneKind::Sparrow => Ev::SparrowNoOp(executor),
                        _ => Ev::ExecNoOp(executor),
                    };
                    self.q.at(at_host, ev)
                }
                PullAction::Ack { job, .. } => self.q.at(at_host, Ev::Ack(job)),
                PullAction::ErrorPacket { tasks, .. } => {
                    let i = self.epkts.put(tasks);
                    self.q.at(at_host, Ev::ErrorPacket(i))
                }
                // The worker's get-task must find this scheduler again: the
                // slot it carries names both.
                PullAction::Probe { worker, slot } => {
                    self.q.at(at_host, Ev::Probe(worker, s * slots + slot))
                }
                PullAction::Recirculate(r) => {
                    self.recirculate(t, s, PullInput::Resubmit(r), RECIRC_FRAME_BYTES)
                }
                PullAction::Reprobe(p) => {
                    self.recirculate(t, s, PullInput::Reprobe(p), PROBE_FRAME_BYTES)
                }
                PullAction::Drop(reason) => self.m.drop(reason),
            }
        }
        self.out = out;
    }

    /// A pass that ended at `at` recirculates: it waits for the switch's
    /// recirculation port, crosses it and comes back `recirc_ns` later, or
    /// is dropped when the port's buffer is full (Draconis §2.2: a switch
    /// without the capacity to recirculate a packet drops it). R2P2's lost
    /// request is recovered by its client's timeout.
    fn recirculate(&mut self, at: u64, s: u32, input: PullInput, frame_bytes: u64) {
        let left = match self.recirc_port.as_mut() {
            Some(port) => port.send(at, frame_bytes),
            None => Some(at),
        };
        match left {
            Some(t) => self.send_pull(t + self.recirc, s, input),
            None => self.m.drop(DropReason::Overflow),
        }
    }

    /// Copy `attempt` of task `id` is in its scheduler's hands and, nothing
    /// being lost after that in the simulator, will run: the client's timer
    /// (which guards against loss, §8.3) stops. Draconis says so with its
    /// acknowledgment (§4.7 step 6); the push baselines have none, so their
    /// dispatch (R2P2, RackSched) or the scheduler taking the job (Sparrow)
    /// stands for it. Without this every copy queued longer than the timeout
    /// at an executor or node was sent again, adding load.
    pub(super) fn accepted(&mut self, id: u64, attempt: u32) {
        // The tracker numbers sends from 1 (`send_of`).
        self.tracker.acknowledge(id as u32, attempt + 1);
    }

    /// §5.3 limits as the driver sees them: a task runs off its data node
    /// only after more than `rack_start_limit` skips (on its rack) or more
    /// than `global_start_limit` skips (anywhere). Counted, never enforced
    /// here: the data plane decides.
    pub(super) fn check_locality(&mut self, executor: u32, task: &TaskInfo, skips: u16) {
        if self.policy != PullPolicy::DraconisLocality {
            return;
        }
        self.m.max_skips = self.m.max_skips.max(skips);
        let Some(data) = task.local_nodes().next() else {
            return;
        };
        let node = self.execs[executor as usize].info.node;
        let d = &self.cfg.draconis;
        let same_rack = data as u32 / self.nodes_per_rack == node / self.nodes_per_rack;
        let ok = data as u32 == node
            || skips > d.global_start_limit
            || (same_rack && skips > d.rack_start_limit);
        if !ok {
            self.m.locality_violations += 1;
        }
    }

    pub(super) fn rack(&mut self, now: u64, input: Input) {
        let Some(sw) = self.rack.as_mut() else {
            unreachable!("racksched packet without a racksched switch")
        };
        let now = self.pipeline.as_mut().map_or(now, |p| p.admit(now));
        self.kout.clear();
        sw.handle(Nanos::new(now), input, &mut self.kout);
        for i in 0..self.kout.len() {
            match self.kout.as_slice()[i] {
                Action::Dispatch(Dispatch { node, task, .. }) => {
                    let (id, attempt) = rack_split(task.id);
                    self.accepted(id, attempt);
                    self.q.at(
                        now + self.link + self.cfg.racksched.node_overhead_ns,
                        Ev::NodeTask(node, task.id),
                    )
                }
                Action::Resubmit(r) => self.q.at(now + self.recirc, Ev::Rack(Input::Resubmit(r))),
                Action::Drop(reason) => self.m.drop(reason),
                Action::Notify { .. } | Action::Queued => {}
            }
        }
    }

    /// Executor `e`'s Sparrow worker state (policy sparrow only).
    pub(super) fn sparrow_worker(&mut self, e: u32) -> &mut SparrowWorker {
        self.execs[e as usize]
            .sparrow
            .as_mut()
            .expect("sparrow worker")
    }

    /// A worker's late-binding request goes to the scheduler that probed it.
    pub(super) fn send_get_task(&mut self, now: u64, get: PullInput) {
        let PullInput::GetTask { worker, slot } = get else {
            unreachable!("workers only send GetTask")
        };
        let per = self.cfg.sparrow.max_jobs;
        let input = PullInput::GetTask {
            worker,
            slot: slot % per,
        };
        self.send_pull(now + self.sched_link, slot / per, input);
    }

    pub(super) fn collect_dataplane_stats(&mut self) {
        // A server's inline steps beyond the first per message play the
        // part of recirculations; Sparrow has no switch pipeline.
        let (first, resub) = match &self.rack {
            Some(sw) => sw.passes(),
            None => self
                .planes
                .iter()
                .map(PullPlane::passes)
                .fold((0, 0), |a, p| (a.0 + p.0, a.1 + p.1)),
        };
        self.m.first_passes = first;
        self.m.recirculations = resub;
    }
}
