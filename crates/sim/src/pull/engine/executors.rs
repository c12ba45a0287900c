//! The pull simulator's executors: running tasks, their completions, and
//! the requests (Draconis), completion reports (R2P2), node queues
//! (RackSched) and get-tasks (Sparrow) that follow.

use super::*;

impl Sim<'_> {
    pub(super) fn exec_task(&mut self, now: u64, e: u32, task: TaskInfo) {
        if self.is_draconis() && task.id >= self.warmup {
            // Draconis Fig. 13: the get_task() step, from the task_request
            // that was answered with this task to the task's arrival.
            let sent = self.execs[e as usize].request_sent;
            self.m
                .record_get_task(now.saturating_sub(sent), task.priority);
        }
        let x = &mut self.execs[e as usize];
        if let Some(w) = x.sparrow.as_mut() {
            w.on_assign();
        }
        if x.running.is_some() {
            // R2P2: JBSQ queues up to k − 1 tasks behind the running one.
            debug_assert_eq!(self.policy, PullPolicy::R2p2Recirc);
            x.local.push_back(task);
        } else {
            self.start(now, e, task);
        }
    }

    pub(super) fn start(&mut self, now: u64, e: u32, task: TaskInfo) {
        let x = &mut self.execs[e as usize];
        x.ex.on_task();
        x.running = Some(task);
        x.busy_since = now;
        let node = x.info.node;
        let group = x.group;
        let resources = x.info.resources;
        let id = task.id;
        let t = &mut self.tasks[id as usize];
        self.m.decisions += 1;
        if self.m.decisions == self.warmup.max(1) {
            self.m.window_start_ns = now;
            self.m.window_start_decisions = self.m.decisions;
        }
        if t.props & !resources != 0 && self.cfg.workload.resource_phases {
            self.m.resource_violations += 1;
        }
        let mut access = 0;
        let mut place = None;
        if let Some(l) = &self.cfg.workload.locality {
            let d = t.data_node as u32;
            let (us, p) = if d == node {
                (l.local_us, 0)
            } else if d / self.nodes_per_rack == node / self.nodes_per_rack {
                (l.rack_us, 1)
            } else {
                (l.remote_us, 2)
            };
            access = (us * 1e3).round() as u64;
            place = Some(p);
        }
        if t.first_start == NONE {
            t.first_start = now;
            if id >= self.warmup {
                self.m.record_start(now - t.submit, t.priority, place);
            }
            if self.cfg.workload.resource_phases {
                self.m.group_phase[group as usize][t.phase as usize] += 1;
            }
        } else {
            self.m.duplicate_executions += 1;
        }
        self.q.at(now + t.service + access, Ev::ExecDone(e));
    }

    pub(super) fn exec_done(&mut self, now: u64, e: u32) {
        let x = &mut self.execs[e as usize];
        let task = x.running.take().expect("a running task completes");
        self.m.busy_ns += now - x.busy_since;
        let gave_up = self.tracker.state(task.id as u32) == Some(TaskState::TimedOut);
        let t = &mut self.tasks[task.id as usize];
        if !t.done_at_executor && !gave_up {
            t.done_at_executor = true;
            if task.id >= self.warmup {
                // From the task's arrival at the switch (one client link after
                // its first submission) to this completion at the executor:
                // the push simulator's response time (submission at the first
                // scheduling switch to completion at the worker, Horus §4.1).
                let at_switch = t.submit + self.link;
                self.m.completion.record(now.saturating_sub(at_switch));
            }
        }
        // The reply crosses the switch to the client: two links.
        self.q.at(now + 2 * self.link, Ev::Done(task.id));
        match self.policy {
            PullPolicy::R2p2Recirc => {
                self.send_pull(now + self.link, 0, PullInput::Completion { executor: e });
                if let Some(next) = self.execs[e as usize].local.pop_front() {
                    self.start(now, e, next);
                }
            }
            PullPolicy::Sparrow => {
                if let Some(get) = self.sparrow_worker(e).on_free() {
                    self.send_get_task(now, get);
                }
            }
            PullPolicy::RackschedNodes => {
                // The reply passes the switch with the node's queue length
                // (RackSched LOAD, §3.2), then the node serves its own queue.
                let node = self.execs[e as usize].info.node as usize;
                self.node_load[node] -= 1;
                let reply = Input::Reply {
                    node: node as u32,
                    qlen: self.node_load[node],
                    class: 0,
                    task: rack_id(task.id, task.fn_par as u32),
                };
                self.q.at(now + self.link, Ev::Rack(reply));
                match self.node_queue[node].pop_front() {
                    Some(next) => self.start(now, e, next),
                    None => self.node_idle[node].push(e),
                }
            }
            _ => {
                // The next task_request rides on the completion (§3.1).
                let req = self.execs[e as usize].ex.request();
                self.execs[e as usize].request_sent = now;
                self.send_pull(now + self.sched_link, 0, req);
            }
        }
    }
}
